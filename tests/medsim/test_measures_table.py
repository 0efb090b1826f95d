"""benchmarks/measures_table.py: issue 22's table over finished runs and their re-scorings."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from medsim.bench import BenchOptions, run_bench
from medsim.cli import main
from medsim.spec import build_spec

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "measures_table.py"


def test_a_re_scoring_is_tabled_with_the_measures_read_from_the_runs_own_logs(tmp_path):
    """A re-scoring's own logs hold its scoring only: --rescore computes information
    elicited and tests ordered from the consultation in the run's log of the same name."""
    run = tmp_path / "run"
    run_bench(build_spec(None, {"limit": 3}), BenchOptions(out=run, progress=False))
    assert main(["score", str(run), "--judge-llm", "scripted", "--scorers", "diagnosis,differential",
                 "--label", "again"]) == 0
    r = subprocess.run([sys.executable, str(SCRIPT), "--rescore", f"base={run}", f"again={run / 'scores' / 'again'}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows: dict[str, list[str]] = {}
    for line in r.stdout.splitlines():  # the main table's rows (the first with each label)
        if line.startswith(("| base |", "| again |")):
            rows.setdefault(line.split("|")[1].strip(), [c.strip() for c in line.split("|")[2:]])
    assert set(rows) == {"base", "again"}
    # the same consultations: n, top-k, information recall and tests F1 alike (the wall time is not)
    assert rows["again"][0] == "3" and rows["again"][:7] == rows["base"][:7]
    assert rows["again"][5] not in ("-", "")  # information recall, read from the run's logs
