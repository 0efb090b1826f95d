"""benchmarks/measures_runs.py (issue 22's table from nothing): each run a bench of its own,
resumed when the folder holds it, then the table over them."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_runs_and_their_table(tmp_path):
    cmd = [sys.executable, str(ROOT / "benchmarks" / "measures_runs.py"), "--cases", "demo", "--limit", "2", "--llm",
           "scripted", "--only", "agentclinic,focused", "--cores", "1", "--out", str(tmp_path)]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["agentclinic", "focused"]
    def table(text):  # the first table's rows: label, n, ...
        return [x for x in text.splitlines() if x.startswith("| ") and x.split("|")[2].strip() == "2"]

    rows = table(out.stdout)
    assert [r.split("|")[1].strip() for r in rows] == ["agentclinic", "focused"], out.stdout
    # again: both runs are found finished, nothing is run twice, the same table
    again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and table(again.stdout) == rows
    assert all(len((tmp_path / x / "results.jsonl").read_text().splitlines()) == 2 for x in ("agentclinic", "focused"))
    bad = subprocess.run([*cmd[:-2], "--only", "nonsense", "--out", str(tmp_path)], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and "unknown run(s) nonsense" in bad.stderr
