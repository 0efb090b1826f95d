"""A new evaluation suite from this file alone (no edit anywhere else in medsim): a triage
suite, registered with one call, runs through ``medsim bench`` (2 workers, killed with
SIGKILL and resumed), ``medsim score`` and the HTML report, exactly as the suites medsim
ships do. The subprocess runs find it through ``MEDSIM_PLUGINS=<this module>:register``.

The suite: the doctor reads the case's opening (demographics, objective, presenting
complaint) and says how urgently it must be seen (one of the ``[triage]`` section's
levels); a deterministic scorer compares that with the level the case's diagnosis calls
for (a small keyword rule written for this test).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import pytest

from agents.cases.registry import load_cases
from agents.events import CaseStarted, ConsultationEnded, EventSink, Scored, Utterance
from agents.llm.base import CallContext, GenerateParams, LLMError, Message, Output
from agents.llm.calls import generate_logged
from agents.results import call_totals, read_results, row_key
from agents.scorers import Score, Transcript
from agents.settings import SpecError, check_keys
from agents.stats import wilson_interval
from agents.suites.contract import Option, Suite, Unit, Units
from agents.suites.registry import register_suite, suite_names, unregister_suite
from agents.textsafe import md_cell

REPO = Path(__file__).resolve().parents[2]
LEVELS = ("emergency", "urgent", "routine")
EMERGENCY = ("infarction", "embolism", "stroke", "sepsis", "pneumothorax", "appendicitis", "dissection", "meningitis")
URGENT = ("fracture", "pneumonia", "pyelonephritis", "cellulitis", "diabetic", "cholecystitis")


def expected_level(diagnosis: str) -> str:
    d = diagnosis.lower()
    return "emergency" if any(w in d for w in EMERGENCY) else "urgent" if any(w in d for w in URGENT) else "routine"


@dataclass(frozen=True)
class TriageOptions:
    levels: tuple[str, ...] = LEVELS


class TriageEngine:
    """One turn: the doctor reads the opening and names a level."""

    def __init__(self, plan: Any, unit: Unit, sink: EventSink):
        self.plan, self.unit, self.sink = plan, unit, sink
        self.done, self.level, self.error = False, None, None

    def start(self) -> None:
        c = self.unit.item
        self.sink.emit(CaseStarted(case_id=c.id, objective=c.objective, demographics=c.demographics))

    def step(self) -> None:
        c, levels = self.unit.item, self.plan.spec.options.levels
        complaint = (c.patient.get("Symptoms") or {}).get("Primary_Symptom", "") if isinstance(
            c.patient.get("Symptoms"), dict) else ""
        question = (f"A {c.demographics}: {c.objective} Presenting complaint: {complaint}. How urgently must they be "
                    f"seen? Answer with one word: {', '.join(levels)}.")
        self.sink.emit(Utterance(turn=1, speaker="patient", addressee="doctor", text=question))
        try:
            out = generate_logged(self.plan.llms["doctor"], [Message("user", question)], self.plan.params("doctor"),
                                  CallContext("doctor", c.id, 1), self.sink, self.plan.retry("doctor"))
            said = out.text.strip().lower()
            self.level = next((lv for lv in levels if lv in said), None)
            self.sink.emit(Utterance(turn=1, speaker="doctor", addressee="patient", text=out.text.strip()))
        except LLMError as e:
            self.error = str(e)
        self.done = True

    def fail(self, message: str) -> None:
        self.error, self.done = message, True

    def finish(self) -> None:
        status = "error" if self.error else "diagnosed" if self.level else "no_diagnosis"
        self.sink.emit(ConsultationEnded(status=status, turns=1, diagnosis=self.level, tests_requested=[],
                                         error=self.error, failure=None))


class TriageScorer:
    name = "triage"

    def __call__(self, case: Any, transcript: Transcript, sink: EventSink) -> Score:
        if transcript.status == "error":
            return Score(self.name, None, {"skipped": "error"})
        want = expected_level(case.diagnosis)
        return Score(self.name, transcript.diagnosis == want, {"expected": want})


class TriageFake:
    """The suite's own scripted doctor: a level by a hash of the case and seed (a little
    slow, so a run can be killed half-way)."""

    name = "scripted-triage"

    def __init__(self, seed: int, delay_s: float):
        self.seed, self.delay_s = seed, delay_s

    def generate(self, messages: Sequence[Message], params: GenerateParams, ctx: CallContext) -> Output:
        time.sleep(self.delay_s)
        text = LEVELS[sum(map(ord, f"{ctx.case_id}{self.seed}")) % 3].capitalize() + "."
        n = sum(len(m.content.split()) for m in messages)
        return Output(text=text, model=self.name, prompt_tokens=n, prompt_tokens_evaluated=n, completion_tokens=1,
                      latency_s=self.delay_s)


class TriageSuite(Suite):
    name = "triage"
    title = "triage: how urgently the case must be seen"
    reads = frozenset({"cases"})
    section = "triage"
    options = (Option("--triage-levels", "levels", "the levels, comma-separated (default: emergency,urgent,routine)",
                      metavar="LEVELS"),)

    def role_names(self) -> tuple[str, ...]:
        return ("doctor", "judge")

    def parse_options(self, raw: Mapping[str, Any], *, seeds: Sequence[int]) -> TriageOptions:
        check_keys(raw, ("levels",), "triage.")
        levels = raw.get("levels", LEVELS)
        levels = tuple(x.strip() for x in levels.split(",")) if isinstance(levels, str) else tuple(levels)
        if len(levels) < 2 or not all(levels):
            raise SpecError(f"triage.levels: at least two levels, got {levels!r}", key="triage.levels")
        return TriageOptions(levels)

    def options_dict(self, o: TriageOptions) -> dict[str, Any]:
        return {"levels": list(o.levels)}

    def load(self, spec: Any) -> Units:
        cases, invalid = load_cases(spec.cases, skip_invalid=spec.skip_invalid)
        return Units(tuple(Unit(c.id, c.source, c) for c in cases[: spec.limit]), tuple(invalid))

    def scripted(self, units: Units, seed: int) -> Any:
        return TriageFake(seed, float(os.environ.get("TRIAGE_DELAY_S", "0")))

    def engine(self, plan: Any, unit: Unit, sink: EventSink, cast: Any = None) -> TriageEngine:
        return TriageEngine(plan, unit, sink)

    def scorers(self, plan: Any) -> list[Any]:
        return [TriageScorer()]

    def row(self, unit: Unit, events: Sequence[Mapping[str, Any]], *, seed: int, condition: str, events_file: str,
            wall_s: float) -> dict[str, Any]:
        t = Transcript.from_events(events, case_id=unit.id)
        scored = next((e for e in events if e.get("type") == "scored" and e.get("scorer") == "triage"), {})
        return {"case_id": unit.id, "seed": seed, "condition": condition, "status": t.status, "error": t.error,
                "failure": None, "turns": t.turns, "diagnosis": t.diagnosis, "truth": unit.item.diagnosis,
                "expected": (scored.get("details") or {}).get("expected"), "correct": scored.get("value"),
                **call_totals(events), "wall_s": round(wall_s, 4), "events": events_file}

    def summary(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        scored = [r for r in rows if not r.get("error")]
        right = sum(1 for r in scored if r.get("correct"))
        lo, hi = wilson_interval(right, len(scored))
        return {"cases": len(rows), "scored": len(scored), "correct": right,
                "accuracy": right / len(scored) if scored else None, "ci95": [round(lo, 4), round(hi, 4)],
                "errors": len(rows) - len(scored), "error_cases": {r["case_id"]: r["error"] for r in rows if r.get("error")}}

    def headline(self, s: Mapping[str, Any]) -> str:
        return f"{s['cases']} cases triaged: {s['correct']}/{s['scored']} at the right level, {s['errors']} errors"

    def report_sections(self, spec: Any, summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                        out: Any = None) -> list[str]:
        md = ["## Triage", "", f"- right level: {summary['correct']}/{summary['scored']}", "",
              "| case | said | expected |", "|---|---|---|"]
        return md + [f"| {md_cell(r['case_id'])} | {md_cell(r['diagnosis'])} | {md_cell(r['expected'])} |" for r in rows]


def register() -> None:
    """The plugin entry: ``MEDSIM_PLUGINS=tests.medsim.test_suite_extension:register``."""
    if "triage" not in suite_names():
        register_suite(TriageSuite())


@pytest.fixture
def triage():
    register()
    yield
    unregister_suite("triage")


def _bench(out: Path, *extra: str, delay: float = 0.0, **kw: Any) -> subprocess.Popen:
    env = {**os.environ, "MEDSIM_PLUGINS": f"{__name__}:register", "TRIAGE_DELAY_S": str(delay),
           "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.Popen([sys.executable, "-m", "medsim", "bench", "--suite", "triage", "--cases", "demo",
                             "--workers", "2", "--no-progress", "--out", str(out), *extra], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _rows(path: Path) -> dict:
    return {row_key(r): {k: v for k, v in r.items() if k not in ("wall_s", "model_latency_s")} for r in read_results(path)}


def test_a_suite_from_this_file_runs_killed_resumed_scored_and_reported(tmp_path, triage):
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    p = _bench(whole)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert "22 cases triaged" in out
    # killed with SIGKILL once some cells are done, then resumed: the same rows as the whole run
    p = _bench(killed, delay=0.15)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(read_results(killed / "results.jsonl")) < 6:
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)
    p.communicate(timeout=30)
    kept = read_results(killed / "results.jsonl")
    assert 6 <= len(kept) < 22
    stamps = {r["events"]: (killed / r["events"]).stat().st_mtime_ns for r in kept}
    p = _bench(killed, "--resume")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert _rows(killed / "results.jsonl") == _rows(whole / "results.jsonl") and len(_rows(whole / "results.jsonl")) == 22
    assert {f: (killed / f).stat().st_mtime_ns for f in stamps} == stamps  # finished cells were not run again
    run = json.loads((killed / "run.json").read_text())
    assert run["spec"]["suite"] == "triage" and run["spec"]["triage"] == {"levels": list(LEVELS)}
    assert "protocol" not in run["spec"] and set(run["spec"]["roles"]) == {"doctor", "judge"}
    rows = read_results(whole / "results.jsonl")
    assert {r["expected"] for r in rows} <= set(LEVELS) and any(r["correct"] for r in rows)
    assert all(r["correct"] == (r["diagnosis"] == expected_level(r["truth"])) for r in rows)
    # report.md has the suite's section; report.html a row and a transcript page per cell
    md = (whole / "report.md").read_text()
    assert "## Triage" in md and "| demo-001 |" in md
    html = (whole / "report.html").read_text()
    pages = sorted((whole / "transcripts").glob("*.html"))
    assert len(pages) == 22 and all(f"transcripts/{pg.name}" in html for pg in pages)
    assert "How urgently must they be seen" in pages[0].read_text()
    # medsim score runs the suite's scorers again over the logs
    env = {**os.environ, "MEDSIM_PLUGINS": f"{__name__}:register"}
    r = subprocess.run([sys.executable, "-m", "medsim", "score", str(whole), "--judge-llm", "scripted"], cwd=REPO,
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "re-scored 22 cases" in r.stdout
    again = _rows(whole / "scores" / "scripted" / "scores.jsonl")
    assert {k: v["correct"] for k, v in again.items()} == {k: v["correct"] for k, v in _rows(whole / "results.jsonl").items()}
    assert (whole / "scores" / "scripted" / "report.html").is_file()


def test_the_suite_passes_check_suite(triage):
    from agents.suites.conformance import check_suite
    from medsim.spec import build_spec

    spec = build_spec(None, {"suite": "triage"})
    check_suite(spec.suite, spec.suite.load(spec).units[0])


def test_the_suites_flags_and_section_are_checked(tmp_path, triage, capsys):
    from medsim.cli import main

    assert main(["bench", "--suite", "triage", "--triage-levels", "now", "--out", str(tmp_path / "a")]) == 2
    assert "triage.levels: at least two levels" in capsys.readouterr().err
    assert main(["bench", "--suite", "triage", "--max-turns", "3", "--out", str(tmp_path / "b")]) == 2
    assert "--max-turns: not used by the triage suite" in capsys.readouterr().err
    assert main(["bench", "--suite", "triag", "--out", str(tmp_path / "c")]) == 2
    assert "did you mean 'triage'" in capsys.readouterr().err
    assert main(["bench", "--triage-levels", "a,b", "--out", str(tmp_path / "d")]) == 2
    assert "--triage-levels: only with --protocol triage" in capsys.readouterr().err
    assert not any((tmp_path / x).exists() for x in "abcd")


def test_a_plugin_that_cannot_be_loaded_is_named(capsys):
    from medsim.cli import main

    os.environ["MEDSIM_PLUGINS"] = "no_such_module_here"
    try:
        assert main(["cases"]) == 2
    finally:
        del os.environ["MEDSIM_PLUGINS"]
    assert "cannot load the plugin 'no_such_module_here'" in capsys.readouterr().err
