"""benchmarks/judge_audit.py: the judge's decisions in finished runs, for a person to check."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "judge_audit.py"


def _judge(dx, truth, correct, method="llm", rule="json_relation"):
    return {"type": "judge", "diagnosis": dx, "truth": truth, "correct": correct, "method": method, "rule": rule,
            "rationale": '{"relation": "same", "why": "another name"}' if correct else "x"}


def _run(tmp_path, name, *cases):
    run = tmp_path / name
    (run / "events").mkdir(parents=True)
    for i, events in enumerate(cases):
        events = [*events, {"type": "scored", "scorer": "diagnosis", "value": False, "details": {"judge": "fake:j1"}}]
        (run / "events" / f"c{i}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return run


def _audit(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


def test_the_model_s_right_verdicts_are_listed_and_scored_against_labels(tmp_path):
    a = _run(tmp_path, "a", [_judge("Rheumatoid arthritis", "Reactive arthritis", True),
                             _judge("Gout", "Reactive arthritis", False)],
             [_judge("Lockjaw", "Tetanus", True, "precheck", "wordnet_same")])
    b = _run(tmp_path, "b", [_judge("Rheumatoid arthritis", "Reactive arthritis", True)],
             [_judge("Hay fever", "Allergic rhinitis", True)], [_judge("Quinsy", "Peritonsillar abscess", False)])
    template = tmp_path / "t.jsonl"
    out = _audit(a, b, "--template", template)
    assert out.returncode == 0, out.stderr
    assert "5 distinct (answer, key) pairs judged in 2 run(s); judge: fake:j1" in out.stdout
    assert "llm       right     2   wrong     2" in out.stdout and "precheck  right     1   wrong     0" in out.stdout
    listed = [x for x in out.stdout.splitlines() if x.startswith("  '")]
    assert len(listed) == 2 and "2x in a, b" in listed[1] and "Lockjaw" not in out.stdout  # the pre-check's: --all
    assert "Lockjaw" in _audit(a, b, "--all").stdout
    rows = [json.loads(x) for x in template.read_text().splitlines()]
    assert len(rows) == 4 and all(r["label"] is None for r in rows)  # the model's four pairs
    # a person labels three of them; the judge: one false "right", one false "wrong"
    labels = {("Rheumatoid arthritis", "Reactive arthritis"): False, ("Hay fever", "Allergic rhinitis"): True,
              ("Quinsy", "Peritonsillar abscess"): True}
    for r in rows:
        r["label"] = labels.get((r["diagnosis"], r["truth"]))
    template.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = _audit(a, b, "--labels", template)
    assert out.returncode == 0, out.stderr
    assert "agreement            1/3 = 0.333" in out.stdout
    assert "precision of 'right' 1/2 = 0.500" in out.stdout and "recall of 'right'    1/2 = 0.500" in out.stdout
    assert "[false_positive] 'Rheumatoid arthritis'" in out.stdout and "[false_negative] 'Quinsy'" in out.stdout


def test_bad_input_is_a_clear_error(tmp_path):
    out = _audit(tmp_path)
    assert out.returncode == 2 and "no events folder" in out.stderr
    run = _run(tmp_path, "r", [_judge("Gout", "Gout", True)])
    bad = tmp_path / "labels.jsonl"
    bad.write_text('{"truth": "Gout", "diagnosis": "Gout", "label": "yes"}\n')
    out = _audit(run, "--labels", bad)
    assert out.returncode == 2 and "labels.jsonl:1: 'label' must be true, false or null" in out.stderr
