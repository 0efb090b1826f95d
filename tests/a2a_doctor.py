"""What the A2A doctors built on the reference SDK (tests/a2a_sdk1_agent.py for a2a-sdk
1.x, tests/a2a_sdk03_agent.py for 0.3) say, whatever the SDK: no SDK import here, so
both agents, one in this process and one in another, answer alike.

A doctor with memory counts the turns of its context; a stateless one keeps nothing and
counts the doctor's earlier turns in the conversation medsim sends whole each time
(``You: ...`` lines of the ``[CONVERSATION SO FAR]`` block). Sent only the latest turn,
the stateless doctor says it has lost the thread, which no consultation survives.
"""
from __future__ import annotations

LINES = ("What brings you in today?", "How long have you felt this way, and is there any fever?",
         "DIAGNOSIS READY: Pneumonia")
LOST = "I have no record of this consultation: please tell me everything again."
MODES = ("message", "task", "chunked", "input_required", "streaming", "stateless")


def stateless_reply(text: str) -> str:
    """The reply of a doctor that keeps no history, from the message alone."""
    if "[INSTRUCTIONS]" not in text:
        return LOST
    return LINES[min(text.count("\nYou: ") + text.startswith("You: "), len(LINES) - 1)]


def reply(turn: int) -> str:
    """The reply to the ``turn``-th message of a context (0 first)."""
    return LINES[min(turn, len(LINES) - 1)]


def chunks(text: str, size: int = 7) -> list[str]:
    """``text`` in pieces, as an LLM agent streams it (the marker split across two)."""
    return [text[i:i + size] for i in range(0, len(text), size)]
