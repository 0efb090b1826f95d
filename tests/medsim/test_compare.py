"""``medsim compare``: two runs whose flips are known (a real scripted run A, and B made
from A's rows with some verdicts rewritten), checked against hand-computed figures."""
import json
import math
import re
import shutil

import pytest

from agents.stats import wilson_interval
from medsim.cli import main
from medsim.compare import CompareError, Flip, compare_runs, load_run


def _rows(run):
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]


def _write_rows(run, rows):
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A: 12 demo cases, scripted (8 right, 4 wrong). B, from A's rows: one right case turned
    wrong, the four wrong ones turned right, one right case errored, one failed, one missing
    and one case A does not have."""
    root = tmp_path_factory.mktemp("cmp")
    a = root / "A"
    assert main(["bench", "--cases", "demo", "--llm", "scripted", "--limit", "12", "--out", str(a),
                 "--no-progress"]) == 0
    rows = _rows(a)
    right = [r["case_id"] for r in rows if r["correct"]]
    wrong = [r["case_id"] for r in rows if r["correct"] is False]
    assert len(right) == 8 and len(wrong) == 4  # the scripted doctor is right by a hash of seed and case
    b = root / "B"
    shutil.copytree(a, b)
    out = []
    for r in rows:
        r = dict(r)
        cid = r["case_id"]
        if cid == right[0]:
            r.update(correct=False, diagnosis="Tension-type headache")
        elif cid in wrong:
            r.update(correct=True, diagnosis=r["truth"])
        elif cid == right[1]:
            r.update(correct=None, status="error", error="internal error: backend timeout")
        elif cid == right[2]:
            r.update(correct=None, status="failed", failure="role_break")
        elif cid == right[3]:
            continue  # only in A
        r["prompt_tokens"] *= 2
        r["wall_s"] = r["wall_s"] * 3
        if cid == right[4]:
            r["prompt_tokens_evaluated"] = None  # a backend that does not report it
        out.append(r)
    extra = dict(rows[-1], case_id="extra-case")  # only in B
    _write_rows(b, out + [extra])
    return {"A": a, "B": b, "right": right, "wrong": wrong, "rows_a": {r["case_id"]: r for r in rows},
            "rows_b": {r["case_id"]: r for r in out}}


def test_paired_figures_are_the_hand_computed_ones(runs):
    report = compare_runs([load_run(str(runs["A"])), load_run(str(runs["B"]))])
    (c,) = report.comparisons
    right, wrong, ra = runs["right"], runs["wrong"], runs["rows_a"]
    # 12 in A, 12 in B (one missing, one extra): 11 shared, two of them excluded, nine paired
    assert (c.shared, c.only_a, c.only_b) == (11, 1, 1)
    assert sorted((e.case_id, e.a, e.b) for e in c.excluded) == sorted([
        (right[1], "scored", "error: internal error: backend timeout"), (right[2], "scored", "failed: role_break")])
    assert (c.both_right, c.only_a_right, c.only_b_right, c.both_wrong) == (4, 1, 4, 0) and c.paired == 9
    assert c.accuracy_a == pytest.approx(5 / 9) and c.accuracy_b == pytest.approx(8 / 9)
    assert c.ci95_a == wilson_interval(5, 9) and c.ci95_b == wilson_interval(8, 9)
    assert c.difference == pytest.approx(3 / 9)
    # Bonett-Price by hand: (4 + 1) / 11 - (1 + 1) / 11 +- z * sqrt(((5 + 2) / 11 - (3 / 11)^2) / 11)
    half = 1.959963984540054 * math.sqrt((7 / 11 - (3 / 11) ** 2) / 11)
    assert c.difference_ci95 == (pytest.approx(3 / 11 - half), pytest.approx(min(1.0, 3 / 11 + half)))
    # exact McNemar by hand: 1 against 4 discordant, X ~ Binomial(5, 1/2): 2 * (C(5,0) + C(5,1)) / 2^5
    assert c.mcnemar_p == pytest.approx(2 * (1 + 5) / 32) == pytest.approx(0.375)
    # the flips each way, with both diagnoses and the truth
    assert c.flips_a_right == [Flip(right[0], 0, ra[right[0]]["diagnosis"], "Tension-type headache",
                                    ra[right[0]]["truth"])]
    assert [f.case_id for f in c.flips_b_right] == wrong
    assert all(f.diagnosis_b == f.truth == ra[f.case_id]["truth"] and f.diagnosis_a == ra[f.case_id]["diagnosis"]
               for f in c.flips_b_right)
    # ratios B/A per paired cell: tokens sent doubled, wall time tripled, the rest as in A
    ratios = {r.field: r for r in c.ratios}
    assert ratios["prompt_tokens"].ratio == pytest.approx(2.0)
    assert ratios["wall_s"].ratio == pytest.approx(3.0)
    assert ratios["completion_tokens"].ratio == pytest.approx(1.0) and ratios["cost"].ratio == pytest.approx(1.0)
    paired = [*right[:1], *wrong, *right[4:]]
    assert ratios["prompt_tokens"].a_per_cell == pytest.approx(sum(ra[i]["prompt_tokens"] for i in paired) / 9)
    assert ratios["prompt_tokens_evaluated"].ratio is None and "not recorded" in ratios["prompt_tokens_evaluated"].note


def test_the_command_writes_md_html_json_and_the_chart(runs, capsys):
    assert main(["compare", str(runs["A"]), str(runs["B"])]) == 0
    printed = capsys.readouterr().out
    out = runs["A"] / "compare" / "B"  # the default: RUN_A/compare/<the other runs>
    for name in ("compare.md", "compare.html", "compare.json", "compare.png"):
        assert (out / name).is_file(), name
    md = (out / "compare.md").read_text()
    assert md in printed
    assert "Right in A, wrong in B (1)" in md and "Wrong in A, right in B (4)" in md
    assert "p = 0.375" in md and "Excluded cells (2" in md and "only in A: 1, only in B: 1" in md
    assert "| tokens sent |" in md and "2.00x" in md
    html = (out / "compare.html").read_text()
    assert "http://" not in html and "https://" not in html
    assert "<link" not in html and "<script" not in html
    srcs = re.findall(r'src="([^"]*)"', html)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Tension-type headache" in html and "backend timeout" in html
    data = json.loads((out / "compare.json").read_text())
    (c,) = data["comparisons"]
    assert c["mcnemar_p"] == pytest.approx(0.375) and c["paired"] == 9 and len(c["excluded"]) == 2
    assert [f["case_id"] for f in c["flips_b_right"]] == runs["wrong"]
    assert [r["label"] for r in data["runs"]] == ["A", "B"]


def test_each_run_is_compared_with_the_first(runs, tmp_path, capsys):
    c_run = tmp_path / "C"
    shutil.copytree(runs["A"], c_run, ignore=shutil.ignore_patterns("compare"))
    rows = _rows(c_run)
    rows[0]["correct"] = not rows[0]["correct"]
    _write_rows(c_run, rows)
    out = tmp_path / "cmp"
    assert main(["compare", str(runs["A"]), str(runs["B"]), str(c_run), "--out", str(out)]) == 0
    data = json.loads((out / "compare.json").read_text())
    assert [(c["a"], c["b"]) for c in data["comparisons"]] == [("A", "B"), ("A", "C")]
    c = data["comparisons"][1]
    assert (c["shared"], c["only_a"], c["only_b"], c["paired"]) == (12, 0, 0, 12)
    assert len(c["flips_a_right"]) + len(c["flips_b_right"]) == 1 and c["mcnemar_p"] == 1.0


def test_conditions_pair_by_name_or_as_picked(tmp_path, capsys):
    toml = tmp_path / "grid.toml"
    toml.write_text('cases = "demo"\nlimit = 3\nllm = "scripted"\n[conditions.x]\n'
                    '[conditions.y]\nprotocol = { min_gathering = 1 }\n')
    grid, base = tmp_path / "grid", tmp_path / "base"
    assert main(["bench", "--config", str(toml), "--out", str(grid), "--no-progress"]) == 0
    assert main(["bench", "--cases", "demo", "--llm", "scripted", "--limit", "3", "--out", str(base),
                 "--no-progress"]) == 0
    # two conditions of one run
    assert main(["compare", f"{grid}:x", f"{grid}:y", "--out", str(tmp_path / "xy")]) == 0
    c = json.loads((tmp_path / "xy" / "compare.json").read_text())["comparisons"][0]
    assert (c["condition_a"], c["condition_b"], c["paired"]) == ("x", "y", 3)
    # a one-condition run against a picked condition; a grid against itself: condition by condition
    assert main(["compare", str(base), f"{grid}:y", "--out", str(tmp_path / "by")]) == 0
    assert main(["compare", str(grid), str(grid), "--out", str(tmp_path / "gg")]) == 0
    cs = json.loads((tmp_path / "gg" / "compare.json").read_text())["comparisons"]
    assert [(c["condition_a"], c["condition_b"]) for c in cs] == [("x", "x"), ("y", "y")]
    capsys.readouterr()
    # a grid against a run with none of its condition names: pick them
    assert main(["compare", str(base), str(grid)]) == 2
    err = capsys.readouterr().err
    assert "no condition name in common" in err and "RUN:CONDITION" in err and len(err.strip().splitlines()) == 1
    assert main(["compare", str(base), f"{grid}:z"]) == 2
    assert f"{grid}: no condition 'z'" in capsys.readouterr().err


def _error(capsys, *argv):
    assert main(["compare", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("medsim: error: ") and len(err.splitlines()) == 1, err
    return err


def test_clear_errors_name_the_path(runs, tmp_path, capsys):
    a = str(runs["A"])
    # not a run
    empty = tmp_path / "empty"
    empty.mkdir()
    assert f"{empty}: not a medsim bench run" in _error(capsys, a, str(empty))
    assert f"{tmp_path / 'nowhere'}: no such run directory" in _error(capsys, a, str(tmp_path / "nowhere"))
    assert "at least two runs" in _error(capsys, a)
    # runs that share no cells (another seed)
    other = tmp_path / "other"
    shutil.copytree(runs["A"], other, ignore=shutil.ignore_patterns("compare"))
    _write_rows(other, [dict(r, seed=5) for r in _rows(other)])
    err = _error(capsys, a, str(other))
    assert "no cells in common" in err and str(runs["A"]) in err and str(other) in err
    with pytest.raises(CompareError, match="no cells in common"):
        compare_runs([load_run(a), load_run(str(other))])
    # a corrupt row: file and line
    bad = tmp_path / "bad"
    shutil.copytree(runs["A"], bad, ignore=shutil.ignore_patterns("compare"))
    lines = (bad / "results.jsonl").read_text().splitlines(keepends=True)
    (bad / "results.jsonl").write_text("".join(lines[:2] + ['{"case_id": "demo-0\n'] + lines[3:]))
    assert f"{bad / 'results.jsonl'}:3: corrupt results row" in _error(capsys, a, str(bad))
    rows = _rows(runs["A"])
    rows[1]["correct"] = "yes"
    _write_rows(bad, rows)
    err = _error(capsys, a, str(bad))
    assert f"{bad / 'results.jsonl'}:2:" in err and "correct" in err
    rows[1]["correct"], rows[3]["prompt_tokens"] = True, "many"
    _write_rows(bad, rows)
    assert f"{bad / 'results.jsonl'}:4:" in _error(capsys, a, str(bad))
    _write_rows(bad, _rows(runs["A"]) + [_rows(runs["A"])[0]])
    assert f"{bad / 'results.jsonl'}:13: cell" in _error(capsys, a, str(bad))


def test_a_torn_last_line_is_dropped_and_said(runs, tmp_path, capsys):
    torn = tmp_path / "torn"
    shutil.copytree(runs["A"], torn, ignore=shutil.ignore_patterns("compare"))
    with (torn / "results.jsonl").open("a") as fh:
        fh.write('{"case_id": "demo-0')  # a kill mid-write: no newline after it
    assert main(["compare", str(runs["A"]), str(torn), "--out", str(tmp_path / "o")]) == 0
    data = json.loads((tmp_path / "o" / "compare.json").read_text())
    assert data["comparisons"][0]["paired"] == 12
    assert any("torn last line" in n and ":13" in n for n in data["notes"])


def test_a_rescoring_of_a_run_is_compared_as_a_run(runs, tmp_path, capsys):
    """``medsim compare RUN RUN/scores/LABEL``: the run against its re-scoring (medsim score
    writes scores.jsonl beside no run.json of its own)."""
    a = tmp_path / "A"
    shutil.copytree(runs["A"], a)
    assert main(["score", str(a), "--judge-llm", "scripted", "--label", "again"]) == 0
    rescored = a / "scores" / "again"
    assert (rescored / "scores.jsonl").is_file() and not (rescored / "results.jsonl").exists()
    run = load_run(str(rescored))
    assert len(run.rows) == 12
    walls = {r["case_id"]: r["wall_s"] for r in _rows(a)}
    assert all(r["wall_s"] == walls[r["case_id"]] for r in run.rows)  # the consultations' time, not the re-scoring's
    assert main(["compare", str(a), str(rescored), "--out", str(tmp_path / "cmp")]) == 0
    assert "paired cells: 12" in capsys.readouterr().out
