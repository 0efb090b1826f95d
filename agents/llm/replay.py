"""Replays a recorded run: each (case, role) gets back the outputs its calls produced,
in order. Used by ``medsim replay`` to play a benchmarked case in the world. The whole
prompt of each call must equal the recorded one: a difference means the replay diverged
(the run was not rebuilt exactly), which is an error naming the role, the turn and the
first message that differs, never a guess."""
from __future__ import annotations

from collections import defaultdict, deque
from typing import Any, Iterable, Sequence

from agents.llm.base import CallContext, GenerateParams, LLMError, Message, Output

__all__ = ["ReplayLLM"]


class ReplayLLM:
    name = "replay"

    def __init__(self, events_by_case: dict[str, Iterable[dict[str, Any]]], *, check_prompts: bool = True):
        self._calls: dict[tuple[str, str], deque[dict[str, Any]]] = defaultdict(deque)
        for case_id, events in events_by_case.items():
            for e in events:
                if e.get("type") == "llm_call":
                    self._calls[(case_id, e["role"])].append(e)
        self.check_prompts = check_prompts

    def roles_with_calls(self, case_id: str) -> set[str]:
        return {role for (cid, role), q in self._calls.items() if cid == case_id and q}

    def generate(self, messages: Sequence[Message], params: GenerateParams, ctx: CallContext) -> Output:
        q = self._calls.get((ctx.case_id, ctx.role))
        if not q:
            raise LLMError(f"no recorded {ctx.role} call left for case {ctx.case_id} (turn {ctx.turn})",
                           backend=self.name, transient=False)
        rec = q.popleft()
        if self.check_prompts:
            got = [m.to_dict() for m in messages]
            want = rec["messages"]
            if got != want:
                i = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
                what = (f"message {i} ({(want[i] if i < len(want) else got[i])['role']}) differs"
                        if i < min(len(got), len(want)) else f"{len(got)} messages sent, {len(want)} recorded")
                raise LLMError(f"replay diverged for case {ctx.case_id}, role {ctx.role}, turn {ctx.turn}: "
                               f"the prompt differs from the log ({what})", backend=self.name, transient=False)
        return Output(text=rec["output"], model=f"replay:{rec['model']}", prompt_tokens=rec["prompt_tokens"],
                      prompt_tokens_evaluated=rec["prompt_tokens_evaluated"],
                      completion_tokens=rec["completion_tokens"], latency_s=0.0,
                      finish_reason=rec.get("finish_reason", "stop"))
