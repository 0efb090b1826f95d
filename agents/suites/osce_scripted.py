"""A deterministic scripted backend for the OSCE suite (tests, demos, overhead).

The doctor works through a fixed script that touches the rubric's criteria a few at a
time (past its end, a short question naming the round, so the guards see no repeat);
the patient decides by a hash of (seed, persona): accepts with the explicit marker,
leaves for a second opinion in plain words (the phrase rule), or never decides (the
round limit); the judge marks a criterion met when the doctor's words so far hold
its keyword, not relevant before round 3 otherwise, then not met; the stop classifier
says "continue". It never reads the persona's hidden text, so what it says cannot leak
it.
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Sequence

from agents.llm.base import CallContext, GenerateParams, LLMError, Message, Output

__all__ = ["OsceScriptedLLM", "DOCTOR_SCRIPT", "KEYWORDS"]

DOCTOR_SCRIPT = (
    "Hello, I'm one of the surgeons. Before we get into details, how are you feeling about all of this? "
    "What have you been told so far?",
    "Let me put it simply: there is a weak spot, a bit like a thin patch on a tyre, and it can give way again. "
    "Does that make sense so far?",
    "Before we go on, do you have any allergies? Have you had other illnesses or operations, and do you take "
    "a blood thinner or any other medicines?",
    "The options are the operation, watching and waiting, or a smaller procedure. Current guidelines recommend "
    "the operation, but the decision is yours.",
    "The main risks are bleeding, infection and the anaesthetic. If we wait, the problem is likely to come back. "
    "Most people do very well, though I can't promise a perfect result.",
    "I can hear that you're worried, and that's completely understandable. Is there anything you haven't "
    "mentioned yet?",
    "Is there someone at home you'd like to be part of this? You're also welcome to a second opinion.",
    "Could you tell me in your own words what the operation involves? It's keyhole surgery, and most people "
    "go home within a few days.",
    "If you get sudden breathlessness or chest pain, call an ambulance. So the plan is: tests next week, then "
    "surgery. Is anything unclear?",
    "What matters most to you in the coming months? This is the best way back to it.",
)
KEYWORDS = {1: ("how are you feeling",), 2: ("someone at home",), 3: ("one piece at a time",),
            4: ("decision is yours",), 5: ("what matters most",), 6: ("i can hear",), 7: ("your family",),
            8: ("haven't mentioned",), 9: ("went quiet",), 10: ("understandable",), 11: ("simply",),
            12: ("a bit like",), 13: ("guideline",), 14: ("make sense",), 15: ("been told so far",),
            16: ("own words",), 17: ("options",), 18: ("that's a common misunderstanding",), 19: ("keyhole",),
            20: ("best way back",), 21: ("can't promise",), 22: ("main risks",), 23: ("if we wait",),
            24: ("second opinion",), 25: ("allerg",), 26: ("other illnesses",), 27: ("blood thinner",),
            28: ("other medicines",), 29: ("ambulance",), 30: ("the plan is",)}


def _h(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "big")


class OsceScriptedLLM:
    name = "scripted-osce"

    def __init__(self, *, seed: int = 0):
        self.seed = seed

    def plan(self, case_id: str) -> tuple[str, int]:
        """What the scripted patient will do: (accept | leave | undecided, at which round)."""
        h = _h(self.seed, case_id, "plan")
        kind = ("accept", "leave", "undecided")[h % 3]
        return kind, 3 + (h // 3) % 4

    def _out(self, text: str, messages: Sequence[Message]) -> Output:
        n = sum(len(m.content.split()) for m in messages)
        return Output(text=text, model=self.name, prompt_tokens=n, prompt_tokens_evaluated=n,
                      completion_tokens=len(text.split()), latency_s=0.0)

    def _patient(self, case_id: str, rounds_done: int) -> str:
        kind, at = self.plan(case_id)
        r = rounds_done + 1
        if kind == "accept" and r >= at:
            return "Thank you, that helps. All right, I'll go ahead with it. [DECISION: ACCEPT]"
        if kind == "leave" and r >= at:
            return "I appreciate your time, but I'll get a second opinion first."
        return ("I'm still not sure about all this.", "What would that mean for me day to day?",
                "That's a lot to take in.", "I see. Go on.")[r % 4]

    def _judge(self, prompt: str, schema: dict) -> str:
        m = re.search(r"round (\d+) of the discussion", prompt)
        rnd = int(m.group(1)) if m else 1
        said = " ".join(ln[len("Doctor: "):] for ln in prompt.splitlines() if ln.startswith("Doctor: ")).lower()
        out = {}
        for key in schema.get("properties", {}):
            n = int(key[1:])
            if any(k in said for k in KEYWORDS.get(n, ())):
                out[key] = "met"
            else:
                out[key] = "not_relevant" if rnd < 3 else "not_met"
        return json.dumps(out)

    def generate(self, messages: Sequence[Message], params: GenerateParams, ctx: CallContext) -> Output:
        done = sum(1 for m in messages if m.role == "assistant")
        if ctx.role == "doctor":
            # past the script (--max-rounds > 10): a short line of its own, not a repeat the guards reject
            line = (DOCTOR_SCRIPT[done] if done < len(DOCTOR_SCRIPT)
                    else f"Is there anything else on your mind? (round {done + 1})")
            return self._out(line, messages)
        if ctx.role == "patient":
            return self._out(self._patient(ctx.case_id, done), messages)
        if ctx.role == "stop":
            return self._out(json.dumps({"decision": "continue"}), messages)
        if ctx.role == "judge":
            schema = json.loads(params.response_schema) if params.response_schema else {}
            return self._out(self._judge(messages[-1].content, schema), messages)
        raise LLMError(f"no script for role '{ctx.role}'", backend=self.name, transient=False)
