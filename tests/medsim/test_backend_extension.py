"""A new backend kind is added in one place, here, with no edit to any other module: it is
registered, passes the conformance check that ships with the package, and a whole bench
runs with it as the doctor's backend (``roles.doctor.backend = "oneshot:DIAGNOSIS"``).

The kind, ``oneshot:DIAGNOSIS``, is a tiny deterministic doctor: whatever it is asked, it
names DIAGNOSIS at once (a JSON turn where a schema asks for one, a marker turn otherwise).
The fixture takes it out of the registry again, so other tests never see it."""
from __future__ import annotations

import json
import time
from typing import Sequence

import pytest

from agents.cases import load_cases
from agents.events import read_events
from agents.llm.backend_kind import BackendKind, BackendSpecError
from agents.llm.base import CallContext, GenerateParams, LLMError, Message, Output
from agents.llm.conformance import BackendConformanceError, check_backend
from agents.llm.registry import find_backend_kind, register_backend, unregister_backend
from agents.protocol import doctor_schema
from agents.results import read_results
from medsim.bench import BenchOptions, run_bench
from medsim.spec import SpecError, build_spec


class OneShotDoctor:
    """The backend: a doctor that diagnoses at once."""

    def __init__(self, diagnosis: str):
        self.diagnosis = diagnosis
        self.name = f"oneshot:{diagnosis}"

    def generate(self, messages: Sequence[Message], params: GenerateParams, ctx: CallContext) -> Output:
        t0 = time.perf_counter()
        if ctx.role != "doctor":
            raise LLMError(f"a one-shot doctor cannot play the {ctx.role}", backend=self.name, transient=False)
        text = (json.dumps({"action": "diagnose", "text": self.diagnosis}) if params.response_schema
                else f"DIAGNOSIS READY: {self.diagnosis}")
        return Output(text=text, model=self.name, prompt_tokens=sum(len(m.content.split()) for m in messages),
                      prompt_tokens_evaluated=None, completion_tokens=len(text.split()),
                      latency_s=time.perf_counter() - t0)


class OneShotKind(BackendKind):
    name = "oneshot"
    takes_argument = True
    usage = "oneshot:DIAGNOSIS"
    help = "a doctor that names DIAGNOSIS at once (a test kind)"
    constrains_json = True  # it answers a schema's request with the doctor's JSON diagnosis

    def check(self, spec: str, model: str | None) -> None:
        if not self.argument(spec).strip():
            raise BackendSpecError("oneshot: needs the diagnosis it gives, e.g. oneshot:Pneumonia")

    def build(self, spec, *, model, cases, seed, pool):
        return OneShotDoctor(self.argument(spec).strip())


@pytest.fixture
def oneshot():
    kind = register_backend(OneShotKind())
    try:
        yield kind
    finally:
        unregister_backend(kind.name)


def test_the_new_kind_passes_the_conformance_check(oneshot):
    assert find_backend_kind("oneshot:Pneumonia") is oneshot
    report = check_backend("oneshot:Pneumonia", schema=doctor_schema())
    assert report.calls == ["output", "output"] and report.kind == "oneshot"
    with pytest.raises(BackendConformanceError, match="needs the diagnosis"):
        check_backend("oneshot: ")  # its own check refuses a spec without one


def test_a_bench_runs_with_the_new_kind_as_the_doctor(oneshot, tmp_path):
    cases, _ = load_cases("demo")
    right = cases[0]
    spec = build_spec(None, {"cases": "demo", "limit": 3, "llm": "scripted",
                             "roles.doctor.backend": f"oneshot:{right.diagnosis}",
                             "protocol.min_gathering": 0})  # nothing to gather before it may diagnose
    assert spec.protocol.doctor_mode == "structured"  # the kind says it holds replies to a schema
    outcome = run_bench(spec, BenchOptions(out=tmp_path / "run", progress=False))
    rows = read_results(tmp_path / "run" / "results.jsonl")
    assert outcome.summary["cases"] == 3 and outcome.summary["errors"] == 0 and len(rows) == 3
    assert all(r["diagnosis"] == right.diagnosis and r["turns"] == 1 and r["error"] is None for r in rows)
    by_id = {r["case_id"]: r for r in rows}
    assert by_id[right.id]["correct"]  # the scripted judge agrees on the case whose diagnosis it names
    header = read_events(tmp_path / "run" / by_id[right.id]["events"])[0]
    assert header["models"]["doctor"] == f"oneshot:{right.diagnosis}"
    assert header["spec"]["roles"]["doctor"]["backend"] == f"oneshot:{right.diagnosis}"


def test_unregistered_the_kind_is_unknown_again():
    assert find_backend_kind("oneshot:Pneumonia") is None
    with pytest.raises(SpecError, match="unknown backend 'oneshot:Pneumonia'"):
        build_spec(None, {"llm": "scripted", "roles.doctor.backend": "oneshot:Pneumonia"})
