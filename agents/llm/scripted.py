"""A deterministic scripted backend for tests and for measuring framework overhead.

It plays every role from the case itself (it is an oracle, not a model): the doctor asks
a few questions, requests the case's tests, then names the right diagnosis for some cases
and a wrong one for others (chosen by a hash of seed and case id, so both judge paths
run); the patient answers from the patient facts (and plays the behaviours its prompt
names: agents.behaviour_play); the technician returns the matching result; the judge
compares word overlap. Marker spellings vary by case so the parser's variants are
exercised.
"""
from __future__ import annotations

import hashlib
import re
from typing import Mapping, Sequence

from agents.cases.model import Case
from agents.findings import match_order, tokens
from agents.llm.base import CallContext, GenerateParams, LLMError, Message, Output
from agents.behaviour_play import WITHHOLDING_REPLY, play
from agents.behaviours import profile_in
from agents.patient_voice import given_facts, held_back, nothing_given
from agents.roles import READER, STAFF, get_role, role_names

__all__ = ["ScriptedLLM"]

_QUESTIONS = (
    "What brings you in today?",
    "How long has this been going on, and does anything make it better or worse?",
    "Do you have any medical problems, or take any medicines?",
)
_WRONG = ("Viral upper respiratory infection", "Tension-type headache", "Musculoskeletal strain",
          "Generalised anxiety disorder", "Gastro-oesophageal reflux disease")
_DIAG_FORMS = ("DIAGNOSIS READY: {}", "**Diagnosis ready:** {}.", "Diagnosis Ready - [{}]", "DIAGNOSIS READY: {}, I think")
_TEST_FORMS = ("REQUEST TEST: {}", "Request test: [{}]", "**REQUEST TEST:** {}", "request_test: {}")


def _h(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "big")


class ScriptedLLM:
    name = "scripted"

    def __init__(self, cases: Mapping[str, Case], *, seed: int = 0, tests_per_case: int = 4):
        self.cases = dict(cases)
        self.seed = seed
        self.tests_per_case = tests_per_case

    # -- helpers -------------------------------------------------------------
    def _case(self, ctx: CallContext) -> Case:
        try:
            return self.cases[ctx.case_id]
        except KeyError:
            raise LLMError(f"no script for case '{ctx.case_id}'", backend=self.name, transient=False) from None

    def diagnoses_correctly(self, case_id: str) -> bool:
        """About two thirds of cases are diagnosed correctly, by seed."""
        return _h(self.seed, case_id, "correct") % 3 != 0

    def _output(self, text: str, messages: Sequence[Message]) -> Output:
        prompt = sum(len(m.content.split()) for m in messages)
        return Output(text=text, model=self.name, prompt_tokens=prompt, prompt_tokens_evaluated=prompt,
                      completion_tokens=len(text.split()), latency_s=0.0)

    # -- roles ---------------------------------------------------------------
    def _doctor(self, case: Case, messages: Sequence[Message]) -> str:
        done = sum(1 for m in messages if m.role == "assistant")
        last = messages[-1].content if messages else ""
        tests = case.test_names()[: self.tests_per_case]
        form = _h(self.seed, case.id, "form") % 4
        if done < len(_QUESTIONS) and "last turn" not in last:
            return _QUESTIONS[done]
        k = done - len(_QUESTIONS)
        if k < len(tests) and "last turn" not in last:
            return _TEST_FORMS[(form + k) % 4].format(tests[k].replace("_", " "))
        if self.diagnoses_correctly(case.id):
            dx = case.diagnosis
        else:
            dx = next(w for w in _WRONG[_h(self.seed, case.id) % len(_WRONG):] + _WRONG
                      if w.lower() not in case.diagnosis.lower())
        return _DIAG_FORMS[form].format(dx)

    def _patient(self, case: Case, question: str, said: frozenset[str] = frozenset()) -> str:
        """The case's answer to a question it recognises; otherwise (or when that answer was
        already given: a person asks in their own words) the next fact not yet said, so the
        patient never repeats itself."""
        given = given_facts(question)
        if held_back(question):  # a withholding patient keeps what answers it to itself
            return WITHHOLDING_REPLY
        if given:  # a grounded patient: the facts it was given, the ones not yet said first
            fresh = [g for g in given if not any(g in s for s in said)]
            return " ".join((fresh or given)[:2])
        if nothing_given(question):
            return "I haven't noticed anything like that."
        p = case.patient
        q = question.lower()
        sym = p.get("Symptoms") or {}
        primary = sym.get("Primary_Symptom", "") if isinstance(sym, dict) else str(sym)
        sec = sym.get("Secondary_Symptoms", []) if isinstance(sym, dict) else []
        history = str(p.get("History", "I'm not sure."))
        past = str(p.get("Past_Medical_History", "Nothing I know of."))
        social = str(p.get("Social_History", "Nothing special."))
        if "brings you" in q:
            answer = f"{primary}. {p.get('History', '')}".strip()
        elif "how long" in q or "better or worse" in q:
            answer = history
        elif "medical" in q or "medicine" in q:
            answer = past
        elif any(w in q for w in ("smoke", "drink", "work", "live")):
            answer = social
        else:
            answer = ("I have also noticed: " + ", ".join(map(str, sec)) + ".") if sec else "Nothing else I've noticed."
        if answer not in said:
            return answer
        for fact in (history, past, social, "Nothing else I've noticed.", "I think I have told you everything I know."):
            if fact not in said:
                return fact
        return f"I don't know what else to say, doctor (that was question {len(said) + 1})."

    def _measurement(self, case: Case, order: str) -> str:
        request = order.splitlines()[0].split(":", 1)[-1] if order else ""
        hits = match_order(case, request)
        if not hits:
            return "RESULTS: not available"
        return "RESULTS: " + "; ".join(f"{path}: {value}" for path, value in hits)

    def _judge(self, case_id: str, prompt: str) -> str:
        m_truth = re.search(r"Correct diagnosis:\s*(.+)", prompt)
        m_dx = re.search(r"Doctor's diagnosis:\s*(.+)", prompt)
        if not (m_truth and m_dx):
            return "I cannot tell."
        a, b = set(tokens(m_truth.group(1))), set(tokens(m_dx.group(1)))
        same = bool(a) and len(a & b) / len(a | b) >= 0.5
        phr = _h(self.seed, case_id, "judge") % 2
        if same:
            return ("Yes.", "yes, they match: same condition.")[phr]
        return ("No. These are different conditions.", "no - they do not match.")[phr]

    @staticmethod
    def _as_json(marker_text: str) -> str:
        """The same decision as a structured (JSON) doctor turn."""
        import json

        from agents.protocol import parse_doctor_turn

        from agents.catalogue import CATALOGUE

        a = parse_doctor_turn(marker_text)
        action = {"ask": "ask_patient", "test": "order_test", "diagnose": "diagnose"}[a.kind]
        if a.kind == "test":
            named = next((t for t in CATALOGUE if t.lower() == a.text.lower()), None)
            return json.dumps({"action": action, "test": named} if named else
                              {"action": action, "test": "other", "text": a.text})
        return json.dumps({"action": action, "text": a.text})

    def _reflect(self, case: Case) -> str:
        """A general lesson that never names the diagnosis."""
        import json

        return json.dumps({"insight": "Before settling on the first idea, weigh the test results that tell similar "
                                      "conditions apart and ask about the timing of the symptoms."})

    def lesson_helps(self, case_id: str) -> bool:
        """Whether a reflection's lesson turns this case's wrong diagnosis right (by seed)."""
        return _h("lesson", case_id, self.seed) % 4 != 0  # three cases in four

    def _focused_next(self, case: Case, record: str) -> dict:
        """The focused doctor's next step: the scripted doctor's questions, then its tests,
        counted from the record it was shown."""
        done = record.count("- You asked: ")
        if done < len(_QUESTIONS):
            return {"action": "ask_patient", "text": _QUESTIONS[done]}
        tests = case.test_names()[: self.tests_per_case]
        k = record.count("- You ordered: ")
        name = tests[k].replace("_", " ") if k < len(tests) else "Vital signs"
        return {"action": "order_test", "test": "other", "text": name}

    def _deliberate(self, case: Case, schema: dict, last: str) -> str | None:
        """The doctor's diagnosis step (a differential, a panel member's vote, a role's
        say, reasoning): answered from the case like the rest of the fake."""
        import json

        props = schema.get("properties", {}) if isinstance(schema, dict) else {}
        right = self.diagnoses_correctly(case.id)
        dx = case.diagnosis if right else _WRONG[_h(self.seed, case.id) % len(_WRONG)]
        diff = props.get("differential") or {}
        if isinstance(diff.get("items"), dict) and diff["items"].get("type") == "object":
            # the focused doctor: a ranked differential with confidences, and its next step
            ranked = [{"diagnosis": dx, "confidence": 70},
                      *({"diagnosis": w, "confidence": 15} for w in _WRONG if w != dx)]
            out: dict = {"differential": ranked[: diff.get("maxItems", 3)]}
            if "next" in props:
                out["next"] = self._focused_next(case, last)
            return json.dumps(out)
        if "differential" in props:
            return json.dumps({"differential": [dx, *[w for w in _WRONG if w != dx][:2]]})
        if "reasoning" in props:
            member = re.search(r"You are doctor (\d+) of a panel of (\d+)", last)
            k = int(member.group(1)) if member else 1
            vote = dx if k % 3 != 0 else _WRONG[(k + _h(case.id)) % len(_WRONG)]  # two members in three agree
            return json.dumps({"reasoning": f"The findings fit {vote} best.", "diagnosis": vote})
        if "test" in props and "why" in props:
            return json.dumps({"test": "Complete blood count", "why": "it tells the leading conditions apart"})
        if "text" in props and "action" not in props:
            return json.dumps({"text": f"The leading condition is {dx}."})
        return None

    def generate(self, messages: Sequence[Message], params: GenerateParams, ctx: CallContext) -> Output:
        if ctx.role == "judge":
            return self._output(self._judge(ctx.case_id, messages[-1].content), messages)
        if ctx.role == "reflector":
            return self._output(self._reflect(self._case(ctx)), messages)
        kind = get_role(ctx.role).kind if ctx.role in role_names() else None
        if kind == READER:  # reads an image: says what its study's report says (an oracle)
            case = self._case(ctx)
            shown = messages[-1].images if messages else ()
            st = next((s for s in case.imaging if s.image in shown), None)
            return self._output(f"The image shows: {st.report}" if st else "I cannot see an image.", messages)
        case = self._case(ctx)
        last = messages[-1].content if messages else ""
        if ctx.role == "doctor" and params.response_schema:
            import json

            said = self._deliberate(case, json.loads(params.response_schema), last)
            if said is not None:
                return self._output(said, messages)
        if ctx.role == "doctor" and "think it through" in last and not params.response_schema:
            return self._output("Key findings point one way; the differential is narrow; the most likely fits best.",
                                messages)
        if ctx.role == "doctor":
            text = self._doctor(case, messages)
            if "left a lesson" in last and self.lesson_helps(case.id):
                text = f"DIAGNOSIS READY: {case.diagnosis}"  # the second attempt, helped by the lesson
            if params.response_schema:
                text = self._as_json(text)
        elif ctx.role == "patient":
            said = [m.content for m in messages if m.role == "assistant"]
            text = self._patient(case, last, frozenset(said))
            levels = profile_in(messages[0].content) if messages and messages[0].role == "system" else {}
            text = play(text, levels, len(said), said, case)  # the patient's behaviours, if any
        elif kind == STAFF:  # the technician, or another staff role (a nurse): the records the order matches
            text = self._measurement(case, last)
        else:
            raise LLMError(f"unknown role '{ctx.role}'", backend=self.name, transient=False)
        return self._output(text, messages)
