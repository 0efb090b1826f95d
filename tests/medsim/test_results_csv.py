"""results.csv beside results.jsonl: one line per cell, the rows' scalar fields."""
import csv

from agents.results import CSV_COLUMNS, read_results
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
