"""A role's system prompt opens with what every case shares and ends with the case.

A llama.cpp context keeps the tokens of the last call and evaluates only what differs
from them, so a batch's next case (and the prompt cache of ``medsim consult`` and
``medsim play``) reuses a system prompt exactly as far as it is the same for every case.
With the case's task and demographics on the doctor's second line, each case evaluated
~490 of the doctor's ~510 first-call tokens again (9 s of a 37 s case on 2 cores)."""
from __future__ import annotations

import os
import re

import pytest

from agents.catalogue import CATALOGUE
from agents.cases.registry import load_cases
from agents.participants.focused import focused_system
from agents.prompts import template_text
from agents.roles import doctor_system, measurement_system, patient_system


@pytest.fixture(scope="module")
def cases():
    cases, _ = load_cases("demo")
    return cases


def _prompts(case):
    """Each role's system prompt for ``case``, by the name of its template."""
    out = {f"doctor_structured{'' if m else '_notests'}": doctor_system(case, 8, mode="structured", measurement=m)
           for m in (True, False)}
    out["doctor"] = doctor_system(case, 8, mode="markers")
    out["focused_system"] = focused_system(case)
    out["patient"] = patient_system(case)
    out["patient_grounded"] = patient_system(case, grounded=True)
    out["measurement_hinted"] = measurement_system(case, hinted=True)
    return out


def _shared(a: str, b: str) -> int:
    return len(os.path.commonprefix([a, b]))


def test_every_case_shares_the_system_prompts_up_to_its_own_lines(cases):
    """For each role, two cases' system prompts are the same for all but at most a
    sentence of the template's own text: every instruction (the reply format, the
    hospital's tests, how to speak) comes before the first value of the case (its task,
    who the patient is, what brought them, its facts)."""
    by_case = [_prompts(c) for c in cases]
    for name in by_case[0]:
        # the template's own text: what a run holds constant (the hospital's tests, the turns) in,
        # the case's values out
        run = template_text(name).replace("$catalogue", "; ".join(CATALOGUE)).replace("$max_turns", "8")
        own_text = len(re.sub(r"\$\{?\w+\}?", "", run))
        for i in range(len(cases) - 1):
            a, b = by_case[i][name], by_case[i + 1][name]
            if a == b or cases[i].demographics == cases[i + 1].demographics:
                continue  # (two 19-year-old women share the line that says who the patient is)
            assert _shared(a, b) >= own_text - 120, (name, _shared(a, b), own_text)


def test_the_doctors_first_call_differs_between_cases_only_in_its_last_lines(cases):
    """The doctor's structured prompt (the default doctor's on a JSON-capable model) is at
    at least 85% the same for any two demo cases (the rest: its task and who the patient is)."""
    a, b = (doctor_system(c, 8, mode="structured") for c in cases[:2])
    assert _shared(a, b) >= 0.85 * min(len(a), len(b))
