"""medsim compare beyond accuracy: the measures of the paired cells and the share of the
gap to a static (full-information) run that a run closes, on handmade rows and on real
scripted runs."""
from __future__ import annotations

import json

import pytest

from medsim.cli import main
from medsim.compare import Run, compare_runs
from medsim.compare_measures import measure_rows, oracle_gaps


def rows(correct: list[bool], ranks: list[int] | None = None, recall: list[float] | None = None) -> list[dict]:
    out = []
    for i, c in enumerate(correct):
        r = {"case_id": f"c{i}", "seed": 0, "condition": "base", "status": "diagnosed", "correct": c,
             "diagnosis": "x", "truth": "y"}
        if ranks is not None:
            r["differential"] = {"scored": True, "rank": ranks[i], "top1_confidence": 0.9 if c else 0.2}
        if recall is not None:
            r["elicited"] = {"scored": True, "recall": recall[i]}
        out.append(r)
    return out


def cells(rs: list[dict]) -> dict:
    return {(r["case_id"], 0): r for r in rs}


def test_the_gap_share_is_the_hand_computed_one_with_a_paired_interval():
    base = rows([True, False, False, False, False, False, False, False])  # 1/8
    run = rows([True, True, True, False, False, False, False, False])  # 3/8
    static = rows([True, True, True, True, True, False, False, False])  # 5/8
    (g,) = oracle_gaps(["A", "B", "C"], [cells(base), cells(run), cells(static)], [False, False, True],
                       lambda r: True)
    assert (g.run, g.oracle, g.n) == ("B", "C", 8)
    assert g.share == pytest.approx((3 / 8 - 1 / 8) / (5 / 8 - 1 / 8))
    assert g.ci95[0] <= g.share <= g.ci95[1] and g.ci95[0] < g.ci95[1]
    # without a static run there is no gap to close; a case not scored in one run is left out
    assert oracle_gaps(["A", "B"], [cells(base), cells(run)], [False, False], lambda r: True) == []
    (g2,) = oracle_gaps(["A", "B", "C"], [cells(base), cells(run), cells(static)], [False, False, True],
                        lambda r: r["case_id"] != "c1")
    assert g2.n == 7 and g2.share == pytest.approx((2 / 7 - 1 / 7) / (4 / 7 - 1 / 7), abs=1e-4)


def test_no_gap_gives_no_share():
    same = rows([True, False])
    (g,) = oracle_gaps(["A", "B", "C"], [cells(same), cells(rows([False, False])), cells(same)],
                       [False, False, True], lambda r: True)
    assert g.share is None


def test_paired_top_k_and_recall():
    a = rows([True, False, False, False], ranks=[1, 0, 0, 4], recall=[0.5, 0.5, 0.5, 0.5])
    b = rows([True, True, False, False], ranks=[1, 1, 2, 0], recall=[0.5, 0.75, 1.0, 0.75])
    got = {m.measure: m for m in measure_rows(list(zip(a, b)))}
    assert (got["top-1"].a, got["top-1"].b) == (0.25, 0.5)
    assert (got["top-3"].a, got["top-3"].b) == (0.25, 0.75)
    assert (got["top-5"].a, got["top-5"].b) == (0.5, 0.75)
    assert got["information recall"].difference == pytest.approx(0.25)
    lo, hi = got["information recall"].ci95
    assert 0 < lo <= 0.25 <= hi
    assert got["Brier (top-1)"].n == 4


def test_the_command_reports_the_gap_to_a_static_run(tmp_path, capsys):
    for name, extra in (("base", ["--no-technician"]), ("turns", []), ("static", ["--static"])):
        assert main(["bench", "--cases", "demo", "--llm", "scripted", "--limit", "8", "--no-progress", "--out",
                     str(tmp_path / name), *extra]) == 0
    out = tmp_path / "cmp"
    assert main(["compare", str(tmp_path / "base"), str(tmp_path / "turns"), str(tmp_path / "static"), "--out",
                 str(out)]) == 0
    doc = json.loads((out / "compare.json").read_text())
    (g,) = doc["oracle_gaps"]
    assert (g["run"], g["oracle"], g["n"]) == ("B", "C", 8)
    md = (out / "compare.md").read_text()
    assert "## Oracle gap closed" in md and "### Measures on the paired cells (B - A)" in md
    assert "| information recall |" in md  # the two consultations elicited; the static run is not scored
    assert md.count("| information recall |") == 1


def test_compare_runs_without_a_static_run_lists_no_gap():
    a = Run("a", None, None, rows([True, False]), {}, True)  # type: ignore[arg-type]
    b = Run("b", None, None, rows([False, False]), {"protocol": {"static": False}}, True)  # type: ignore[arg-type]
    assert compare_runs([a, b]).gaps == []


def test_a_runs_own_conditions_close_the_gap_to_its_static_rung():
    from agents.measures.gap import condition_gaps, gaps_table

    def cond(name, correct):
        return [{**r, "condition": name} for r in rows(correct)]

    got = (cond("static", [True, True, True, True]) + cond("baseline", [False, False, False, False])
           + cond("cot", [True, True, False, False]))
    (g,) = condition_gaps(got, ["static", "baseline", "cot"], [True, False, False])
    assert (g.run, g.oracle, g.n, g.share) == ("cot", "static", 4, 0.5)
    assert "| cot | static | 4 | 0.0% | 50.0% | 100.0% | 50.0% |" in "\n".join(gaps_table([g], "baseline"))
    assert condition_gaps(got, ["static", "baseline", "cot"], [False, False, False]) == []
