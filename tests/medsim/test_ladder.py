"""The ablation ladder: its conditions run on the same cases and seeds, and the report
gets the condition table (paired differences, tokens, time, cost) and the chart."""
import json
import math

from medsim.cli import main
from agents.conditions import condition_table
from medsim.ladder import LADDER, ladder_conditions


def _rows(cond, correct, seed=0):
    return [{"case_id": f"c{i}", "seed": seed, "condition": cond, "status": "diagnosed", "correct": bool(v),
             "prompt_tokens": 100, "completion_tokens": 10, "prompt_tokens_evaluated": 40, "wall_s": 1.0,
             "cost": 300.0} for i, v in enumerate(correct)]


def test_the_condition_table_pairs_by_case():
    rows = _rows("a", [0, 0, 1, 0, 1, 0]) + _rows("b", [1, 1, 1, 0, 1, 1])
    a, b = condition_table(rows, ["a", "b"])
    assert (a["n"], round(a["accuracy"], 4)) == (6, round(2 / 6, 4)) and "diff" not in a
    assert b["paired_n"] == 6 and math.isclose(b["diff"], 3 / 6)
    lo, hi = b["diff_ci95"]
    assert lo < 0.5 < hi and hi - lo < 1.0
    # repeats: a case's seeds are averaged, so n stays the number of cases
    rep = _rows("a", [1, 0, 1], seed=0) + _rows("a", [1, 1, 0], seed=1)
    (t,) = condition_table(rep, ["a"])
    assert (t["n"], t["repeats"]) == (3, 2) and math.isclose(t["accuracy"], 4 / 6)
    # failed consultations and errors are not counted wrong
    bad = _rows("a", [1, 0]) + [{"case_id": "c9", "condition": "a", "status": "failed", "correct": None}]
    (t,) = condition_table(bad, ["a"])
    assert (t["n"], t["failed"]) == (2, 1)


def test_the_ladder_writes_its_table_and_chart(tmp_path):
    out = tmp_path / "ladder"
    assert main(["bench", "--cases", "demo", "--limit", "3", "--llm", "scripted", "--ladder", "--out", str(out),
                 "--repeats", "2"]) == 0
    spec = json.loads((out / "run.json").read_text())["spec"]
    assert list(spec["conditions"]) == [c for c in LADDER if c != "memory"]
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    cells = {(r["case_id"], r["seed"], r["condition"]) for r in rows}
    assert len(cells) == len(rows) == 3 * 2 * 6  # the same cases and seeds in every rung
    report = (out / "report.md").read_text()
    table = [ln for ln in report.splitlines() if ln.startswith("| ") and " x2 |" in ln]
    assert [ln.split(" | ")[0][2:] for ln in table] == ["static", "baseline", "measurement", "cot", "ensemble",
                                                        "panel"]
    assert "vs previous (paired, 95% CI)" in report and "conditions.png" in report
    tokens = {ln.split(" | ")[0][2:]: float(ln.split(" | ")[4]) for ln in table}
    assert tokens["static"] < tokens["baseline"] < tokens["measurement"] < tokens["cot"] < tokens["ensemble"]
    png = (out / "conditions.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    # each rung's switches are in its rows' events
    kinds = {}
    for r in rows:
        evs = [json.loads(x) for x in (out / r["events"]).read_text().splitlines()]
        kinds.setdefault(r["condition"], set()).update(e["type"] for e in evs)
    assert "reasoning" in kinds["cot"] and "panel_vote" in kinds["ensemble"] and "panel_step" in kinds["panel"]
    assert "test_refused" in kinds["baseline"] and "test_refused" not in kinds["measurement"]
    assert not ({"reasoning", "panel_vote", "panel_step"} & (kinds["static"] | kinds["measurement"]))


def test_with_a_learning_split_the_memory_rung_is_in_the_ladder():
    rungs = ladder_conditions(memory=True)
    assert list(rungs) == list(LADDER)
    assert rungs["memory"]["memory"] == {"mode": "frozen"} and rungs["baseline"]["memory"] == {"mode": "off"}
    assert all(rungs[r]["memory"] == {"mode": "frozen"} for r in ("cot", "ensemble", "panel"))
