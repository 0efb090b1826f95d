"""The scripted backend's AutoMedic parts (tests, demos, overhead), deterministic.

:class:`AutomedicScriptedLLM` wraps the scripted fake (``agents.llm.scripted``) and
answers what only this suite asks; everything else goes to the fake:

- the tagged doctor asks three ``<patient>`` questions and up to two ``<clinical>``
  requests, then ``</end>``; one case in five (by seed and case) ends after two turns, so
  the robustness check has something to catch;
- the question after the dialogue: the answer letter for the cases the fake diagnoses
  correctly, another letter otherwise; one case in seven names no option at all;
- the static baseline: right for three cases in four (by seed and case);
- the patient's empathy rating: 1-5 by seed and case;
- the converter (role ``converter``): the screen is the rule-based pre-filter's verdict,
  the extraction the rule-based splitter's (:func:`agents.suites.automedic_convert.rule_extract`);
- the case generator (role ``generator``): a case from a small built-in set.
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Sequence

from agents.llm.base import LLM, CallContext, GenerateParams, LLMError, Message, Output

__all__ = ["AutomedicScriptedLLM", "for_automedic"]

_QUESTIONS = ("<patient> What brings you in today, and how long has it been going on?",
              "<patient> Do you have any other medical problems, or take any medicines?",
              "<patient> Do you smoke or drink, and what do you do for work?")
_CLINICAL = ("<clinical> Please give me the vital signs and the examination findings.",
             "<clinical> What do the laboratory results and imaging show?")


def _h(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "big")


def for_automedic(llm: LLM) -> LLM:
    """``llm`` itself, or the scripted fake wrapped to play this suite."""
    if getattr(llm, "name", "") == "scripted" and not isinstance(llm, AutomedicScriptedLLM):
        return AutomedicScriptedLLM(llm)
    return llm


class AutomedicScriptedLLM:
    name = "scripted"

    def __init__(self, inner: Any = None, *, seed: int | None = None):
        self.inner = inner
        self.seed = seed if seed is not None else getattr(inner, "seed", 0)

    def _output(self, text: str, messages: Sequence[Message]) -> Output:
        prompt = sum(len(m.content.split()) for m in messages)
        return Output(text=text, model=self.name, prompt_tokens=prompt, prompt_tokens_evaluated=prompt,
                      completion_tokens=len(text.split()), latency_s=0.0)

    def _correct(self, case_id: str) -> bool:
        f = getattr(self.inner, "diagnoses_correctly", None)
        return f(case_id) if f else _h(self.seed, case_id, "correct") % 3 != 0

    @staticmethod
    def _letters(schema: dict) -> list[str]:
        return list(((schema.get("properties") or {}).get("answer") or {}).get("enum") or [])

    def _answer_key(self, ctx: CallContext) -> str | None:
        cases = getattr(self.inner, "cases", {}) or {}
        case = cases.get(ctx.case_id)
        d = case.extra.get("AutoMedic") if case is not None else None
        return d.get("answer_letter") if isinstance(d, dict) else None

    def generate(self, messages: Sequence[Message], params: GenerateParams, ctx: CallContext) -> Output:
        system = messages[0].content if messages and messages[0].role == "system" else ""
        last = messages[-1].content if messages else ""
        schema = json.loads(params.response_schema) if params.response_schema else {}
        props = schema.get("properties") or {}
        if ctx.role == "converter":
            return self._output(self._convert(system, last), messages)
        if ctx.role == "generator":
            from agents.suites.generate import scripted_case

            m = re.search(r"Case (\d+) of", last)
            return self._output(json.dumps(scripted_case(int(m.group(1)) if m else 1, self.seed)), messages)
        if ctx.role == "patient" and "rating" in props:
            return self._output(json.dumps({"rating": 1 + _h(self.seed, ctx.case_id, "empathy") % 5}), messages)
        if ctx.role == "doctor" and "answer" in props:
            letters = self._letters(schema)
            key = self._answer_key(ctx)
            static = "multiple-choice question about a patient" in system
            if not static and _h(self.seed, ctx.case_id, "off-list") % 7 == 0:
                return self._output("I am not sure; it could be several of these.", messages)
            right = (_h(self.seed, ctx.case_id, "static") % 4 != 0) if static else self._correct(ctx.case_id)
            wrong = [x for x in letters if x != key]
            letter = key if (right and key) else (wrong[_h(self.seed, ctx.case_id) % len(wrong)] if wrong else key)
            return self._output(json.dumps({"answer": letter}), messages)
        if ctx.role == "doctor" and "<clinical>" in system:
            done = sum(1 for m in messages if m.role == "assistant")
            short = _h(self.seed, ctx.case_id, "short") % 5 == 0
            script = (_QUESTIONS[:2] if short else _QUESTIONS + _CLINICAL)
            return self._output(script[done] if done < len(script) else "Thank you, that is all I need. </end>",
                                messages)
        if self.inner is None:
            raise LLMError(f"no script for role '{ctx.role}'", backend=self.name, transient=False)
        return self.inner.generate(messages, params, ctx)

    @staticmethod
    def _convert(system: str, last: str) -> str:
        from agents.suites.automedic_convert import prefilter_text, rule_extract

        q = re.search(r"QUESTION:\n(.*?)\nOPTIONS:\n(.*?)(?:\nANSWER: (.*))?$", last, re.DOTALL)
        question = q.group(1) if q else last
        options = q.group(2) if q else ""
        if "You screen" in system:
            reason = prefilter_text(question, options)
            return json.dumps({"suitable": reason is None, "reason": reason or "suitable",
                               "note": "scripted screen: the rule-based verdict"})
        return json.dumps(rule_extract(question, (q.group(3) or "") if q else ""))
