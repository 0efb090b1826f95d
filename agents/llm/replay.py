"""Replays a recorded run: each (case, role) gets back the outputs its calls produced,
in order. Used by ``medsim replay`` to play a benchmarked case in the world; a prompt that
differs from the recorded one means the replay diverged, which is an error, not a guess."""
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

    def generate(self, messages: Sequence[Message], params: GenerateParams, ctx: CallContext) -> Output:
        q = self._calls.get((ctx.case_id, ctx.role))
        if not q:
            raise LLMError(f"no recorded {ctx.role} call left for case {ctx.case_id}", backend=self.name, transient=False)
        rec = q.popleft()
        if self.check_prompts and rec["messages"] and messages and rec["messages"][-1]["content"] != messages[-1].content:
            raise LLMError(f"replay diverged for case {ctx.case_id}, role {ctx.role}: the prompt differs from the log",
                           backend=self.name, transient=False)
        return Output(text=rec["output"], model=f"replay:{rec['model']}", prompt_tokens=rec["prompt_tokens"],
                      prompt_tokens_evaluated=rec["prompt_tokens_evaluated"],
                      completion_tokens=rec["completion_tokens"], latency_s=0.0,
                      finish_reason=rec.get("finish_reason", "stop"))
