"""AgentClinic's bias conditions: the text reaches the right role's system prompt only."""
from __future__ import annotations

import pytest

from agents.cases.registry import load_cases
from agents.llm.scripted import ScriptedLLM
from agents.participants import CastConfig
from agents.biases import (DOCTOR_BIASES, PATIENT_BIASES, BiasError, bias_conditions, bias_text,
                                  parse_bias_list, with_bias)
from tests.helpers import consult, roles


def _systems(events, role):
    return [e["messages"][0]["content"] for e in events if e["type"] == "llm_call" and e["role"] == role]


def test_every_bias_has_a_text():
    # AgentClinic's 12 doctor and 11 patient biases, as a run spec's "all" asks for them
    assert len(parse_bias_list("doctor", "all")) == 12 and len(parse_bias_list("patient", "all")) == 11
    # which role takes which bias: asked of bias_text, not read back from its own tables
    assert bias_text("patient", "self_diagnosis") and bias_text("doctor", "status_quo")
    with pytest.raises(BiasError, match="unknown patient bias"):
        bias_text("patient", "status_quo")
    texts = [bias_text("doctor", b) for b in DOCTOR_BIASES] + [bias_text("patient", b) for b in PATIENT_BIASES]
    assert all(len(t) > 40 for t in texts) and len(set(texts)) == len(texts)
    with pytest.raises(BiasError, match="unknown patient bias"):
        bias_text("patient", "confirmation")
    assert with_bias("S", "doctor", None) == "S" and with_bias("S", "doctor", "none") == "S"
    assert parse_bias_list("doctor", "all") == list(DOCTOR_BIASES)
    assert parse_bias_list("patient", "Self-Diagnosis, gender") == ["self_diagnosis", "gender"]


@pytest.mark.parametrize("role,other,bias", [("doctor", "patient", "confirmation"),
                                             ("patient", "doctor", "self_diagnosis")])
def test_a_bias_reaches_its_role_only(role, other, bias):
    cases, _ = load_cases("demo")
    case = cases[0]
    llm = ScriptedLLM({case.id: case})
    row, events = consult(case, roles(llm), cast=CastConfig(**{f"{role}_bias": bias}))
    text = bias_text(role, bias)
    mine, theirs = _systems(events, role), _systems(events, other) + _systems(events, "measurement")
    assert mine and all(s.endswith(text) for s in mine)
    assert theirs and not any(text in s for s in theirs)
    assert row[f"{role}_bias"] == bias and f"{other}_bias" not in row
    assert [e["role"] for e in events if e["type"] == "bias_applied"] == [role]
    # and without a bias the prompt is the plain one
    plain, ev2 = consult(case, roles(llm))
    assert _systems(ev2, role)[0] + "\n\n" + text == mine[0] and "doctor_bias" not in plain


def test_bias_grid_and_spec():
    from medsim.spec import SpecError, build_spec

    conds = bias_conditions(["recency", "gender"], ["self_diagnosis"])
    assert list(conds) == ["unbiased", "doctor-recency", "doctor-gender", "patient-self_diagnosis"]
    spec = build_spec(None, {"conditions": conds})
    assert spec.for_condition("doctor-gender").protocol.doctor_bias == "gender"
    assert spec.for_condition("unbiased").protocol.doctor_bias is None
    assert "doctor_bias" not in build_spec(None, {}).to_dict()["protocol"]  # old runs' identity unchanged
    with pytest.raises(SpecError, match="protocol.doctor_bias"):
        build_spec(None, {"protocol.doctor_bias": "astrology"})
