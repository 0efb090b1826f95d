"""The command line's interface: help that names every default, -v/-q through logging,
progress as a bar on a terminal and as log lines elsewhere, one name for the technician,
and no raw control character from model text on the screen or in report.md."""
from __future__ import annotations

import argparse
import io
import json
import logging
import re

import pytest

from agents.textsafe import UNSAFE, md_cell, printable
from medsim.cli import build_parser, main

HOSTILE = "\x1b[31mRED\x07\x00\u202eabc"
# anything a terminal or a bidi-aware viewer would act on (tab and newline are layout)
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")


# -- the one escaping function ------------------------------------------------------------
def test_printable_escapes_every_control_visibly():
    assert printable(HOSTILE) == "\\x1b[31mRED\\x07\\x00\\u202eabc"
    for ch in ["\x1b", "\x07", "\x00", "\x7f", "\x85", "\x9b", "\u202a", "\u202e", "\u2066", "\u2069", "\u200e",
               "\u200f", "\u061c", "\u200b", "\u2028", "\u2029", "\ufeff", "\ud800", "\udfff", "\r"]:
        out = printable(f"a{ch}b")
        assert not RAW.search(out) and out.startswith("a\\") and out.endswith("b"), (ch, out)
    assert printable("two\nlines\tand a tab, é, 日本, 🙂") == "two\nlines\tand a tab, é, 日本, 🙂"
    assert printable("dos\r\nline") == "dos\nline"
    assert printable("a\nb\tc", single_line=True) == "a\\nb\\tc"
    assert printable(None) == "None" and printable(3) == "3"


def test_md_cell_keeps_the_row():
    assert md_cell("a|b\nc") == "a\\|b\\nc"
    assert md_cell(None) == "-"
    assert not RAW.search(md_cell(HOSTILE))


def test_html_report_shares_the_character_class():
    from medsim import html_report

    assert html_report._UNSAFE is UNSAFE


# -- help names every default ---------------------------------------------------------------
def _parsers(p: argparse.ArgumentParser, path=("medsim",)):
    yield path, p
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sp in a.choices.items():
                yield from _parsers(sp, (*path, name))


def test_every_option_help_names_its_default():
    missing = []
    for path, p in _parsers(build_parser()):
        for a in p._actions:
            if not a.option_strings or a.help == argparse.SUPPRESS or a.nargs == 0:
                continue  # positionals, hidden aliases, switches (help, version, store_true)
            if "default" not in (a.help or "").lower():
                missing.append(f"{' '.join(path)} {'/'.join(a.option_strings)}")
    assert not missing, "options whose help gives no default:\n  " + "\n  ".join(missing)


# -- one name for the technician ------------------------------------------------------------
def test_technician_flags_with_the_old_names_as_hidden_aliases():
    from medsim.flags import overrides

    p = build_parser()
    for flag in ("--technician-llm", "--measurement-llm"):
        assert overrides(p.parse_args(["bench", flag, "scripted"]), "bench") == {"roles.measurement.backend": "scripted"}
    for flag in ("--technician-model", "--measurement-model"):
        assert overrides(p.parse_args(["consult", flag, "m"]), "consult") == {"roles.measurement.model": "m"}
    for flag in ("--no-technician", "--no-measurement"):
        assert overrides(p.parse_args(["bench", flag]), "bench") == {"protocol.measurement": False}
    assert p.parse_args(["consult", "--as", "technician"]).as_role == "technician"
    assert p.parse_args(["consult", "--as", "measurement"]).as_role == "technician"
    assert p.parse_args(["play", "--as", "measurement"]).as_role == "technician"
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    helps = {name: sp.format_help() for name, sp in sub.choices.items()}
    assert "--technician-llm" in helps["bench"] and "--no-technician" in helps["bench"]
    assert not any("measurement-llm" in h or "no-measurement" in h or "{doctor,patient,measurement}" in h
                   for h in helps.values())


def test_a_bad_technician_backend_names_the_technician_flag(capsys):
    assert main(["config", "--technician-llm", "bogus:zz"]) == 2
    assert "--technician-llm" in capsys.readouterr().err


def test_a_person_plays_the_technician(tmp_path, monkeypatch, capsys):
    log = tmp_path / "c.jsonl"
    monkeypatch.setattr("sys.stdin", io.StringIO("WBC 15.4, high\n" * 12))
    rc = main(["consult", "--llm", "scripted", "--case", "demo-007", "--as", "technician", "--log", str(log)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "You are the technician" in out and "Complete Blood Count > WBC" in out and "technician=human" in out
    from agents.events import read_events

    said = [e for e in read_events(log) if e["type"] == "utterance" and e["speaker"] == "measurement"]
    assert said and all(e["source"] == "human" and e["text"] == "WBC 15.4, high" for e in said)


# -- logging: -v / -q ------------------------------------------------------------------------
@pytest.mark.parametrize("argv, shown", [(["cases", "demo"], True), (["-q", "cases", "demo"], False),
                                         (["cases", "demo", "-q"], False), (["cases", "demo", "--verbose"], True)])
def test_status_lines_go_to_stderr_through_logging(argv, shown, capsys):
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "demo-007" in out  # the listing is the command's result: stdout, whatever the level
    assert ("22 valid, 0 invalid" in err) is shown


def test_errors_show_even_with_quiet(tmp_path, capsys):
    assert main(["-q", "view", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.startswith("medsim: error: ")


def test_verbose_logs_each_case_and_quiet_hides_progress(tmp_path, capsys):
    assert main(["bench", "--cases", "demo", "--limit", "2", "--out", str(tmp_path / "v"), "-v"]) == 0
    err = capsys.readouterr().err
    assert "debug: medsim.bench: case demo-001" in err and "case 2/2 (100%)" in err
    assert main(["bench", "--cases", "demo", "--limit", "2", "--out", str(tmp_path / "q"), "-q"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "2 cases" in out


# -- progress: a bar on a terminal, log lines elsewhere ---------------------------------------
class _Stream(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class _Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _summary(correct: int, scored: int, errors: int = 0) -> dict:
    return {"accuracy": correct / scored if scored else None, "correct": correct, "scored": scored, "errors": errors}


def test_progress_on_a_terminal_is_a_bar(caplog):
    from medsim.progress import Progress

    caplog.set_level(logging.INFO, logger="medsim")
    tty = _Stream(True)
    p = Progress(4, stream=tty, unit="case")
    for i in range(4):
        p.update(_summary(i + 1, i + 1))
    p.close()
    assert p.mode == "bar" and "4/4" in tty.getvalue() and "acc=100%" in tty.getvalue()
    assert not [r for r in caplog.records if r.name == "medsim.progress"]


def test_progress_in_a_file_is_periodic_log_lines(caplog):
    from medsim.progress import Progress

    caplog.set_level(logging.INFO, logger="medsim")
    clock, pipe = _Clock(), _Stream(False)
    p = Progress(100, initial=0, stream=pipe, every=10, interval_s=30, clock=clock, unit="case")
    lines = lambda: [r.getMessage() for r in caplog.records if r.name == "medsim.progress"]  # noqa: E731
    for i in range(9):
        clock.t += 1
        p.update(_summary(i // 2, i + 1))
    assert p.mode == "lines" and lines() == [] and pipe.getvalue() == ""
    clock.t += 1
    p.update(_summary(5, 10, errors=1))  # every 10 cases
    assert lines() == ["case 10/100 (10%); accuracy 50% (5/10), 1 errors; elapsed 10s, ETA 1m30s"]
    clock.t += 31
    p.update(_summary(5, 11, errors=1))  # or every 30 s
    assert len(lines()) == 2 and lines()[1].startswith("case 11/100 (11%)") and "elapsed 41s" in lines()[1]
    for i in range(89):
        p.update(_summary(50, 100))
    assert lines()[-1] == "case 100/100 (100%); accuracy 50% (50/100), 0 errors; elapsed 41s, ETA -"
    p.close()
    assert pipe.getvalue() == ""  # nothing but log records: no bar characters in a file


def test_quiet_shows_no_bar_even_on_a_terminal(caplog):
    from medsim.progress import Progress

    caplog.set_level(logging.WARNING, logger="medsim")
    tty = _Stream(True)
    p = Progress(3, stream=tty)
    p.update(_summary(1, 1))
    p.close()
    assert tty.getvalue() == "" and not [r for r in caplog.records if r.name == "medsim.progress"]


def test_bench_in_a_pipe_logs_progress_lines(tmp_path, capsys):
    assert main(["bench", "--cases", "demo", "--limit", "3", "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert "case 3/3 (100%); accuracy" in err and "\r" not in err  # no bar redraws in a file


# -- no raw control character from model text ---------------------------------------------
def _hostile_cases(tmp_path):
    from pathlib import Path

    line = Path("agents/casesets/demo.jsonl").read_text(encoding="utf-8").splitlines()[6]
    d = json.loads(line)
    o = d["OSCE_Examination"]
    o["Patient_Actor"]["Symptoms"]["Primary_Symptom"] = HOSTILE + " pain"  # the patient says it
    o["Correct_Diagnosis"] = "Acute | appendicitis " + HOSTILE  # the judge and the tables show it
    d["id"] = "evil-1"
    f = tmp_path / "evil.jsonl"
    f.write_text(json.dumps(d) + "\n", encoding="utf-8")
    return f


def _clean(text: str) -> None:
    assert not RAW.search(text), [m.group() for m in RAW.finditer(text)]


def test_consult_shows_model_text_escaped(tmp_path, capsys):
    cases = _hostile_cases(tmp_path)
    main(["consult", "--llm", "scripted", "--cases", str(cases), "--log", str(tmp_path / "c.jsonl")])
    out, err = capsys.readouterr()
    _clean(out)
    _clean(err)
    assert "Patient: My main problem is \\x1b[31mRED\\x07\\x00\\u202eabc pain" in out
    assert "Correct:   Acute | appendicitis \\x1b[31mRED" in out
    from agents.events import read_events  # the log is data: it keeps the text as it was said

    assert any(HOSTILE in (e.get("text") or "") for e in read_events(tmp_path / "c.jsonl"))


def test_bench_score_compare_and_report_md_escape_model_text(tmp_path, capsys):
    cases = _hostile_cases(tmp_path)
    a, b = tmp_path / "a", tmp_path / "b"
    for out, turns in ((a, "20"), (b, "12")):
        main(["bench", "--llm", "scripted", "--cases", str(cases), "--max-turns", turns, "--out", str(out)])
    main(["score", str(a), "--judge-llm", "scripted"])
    main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp")])
    main(["cases", str(cases)])
    main(["judge", "--truth", "Acute appendicitis", "--diagnosis", HOSTILE])
    out, err = capsys.readouterr()
    _clean(out)
    _clean(err)
    assert "\\x1b[31mRED" in out  # the compare markdown, the cases listing, the judge's line
    _clean((tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8"))
    for md in (a / "report.md", next((a / "scores").glob("*/report.md"))):
        text = md.read_text(encoding="utf-8")
        _clean(text)
        assert "\\x1b[31mRED\\x07\\x00\\u202eabc" in text, md
    # compare.md: the whole page is escaped, not only its tables (a note here)
    from dataclasses import replace

    from medsim.compare import compare_runs, load_run
    from medsim.compare_report import markdown

    page = markdown(replace(compare_runs([load_run(str(a)), load_run(str(b))]), notes=[HOSTILE]))
    _clean(page)
    assert "- \\x1b[31mRED\\x07\\x00\\u202eabc" in page
    rows = [ln for ln in (a / "report.md").read_text(encoding="utf-8").splitlines() if ln.startswith("| evil-1")]
    assert rows and all(len(re.split(r"(?<!\\)\|", r)) == 11 for r in rows)  # 9 columns: the pipe is escaped
