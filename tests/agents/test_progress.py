"""A model call in progress as a watcher sees it (agents.llm.progress): in line behind the
call that has the model (named), reading its prompt in pieces, writing; nothing for an
unwatched call; and, through llama.cpp (SmolLM2), the same reply watched or not."""
from __future__ import annotations

import threading
import time

import pytest

from agents.llm import progress
from agents.llm.base import CallContext, GenerateParams, Message, Output
from agents.llm.llamacpp import PROGRESS_CHUNK, LlamaCppLLM, LlamaPool
from agents.llm.schedule import ModelGate
from tests.helpers import hold_gate


class Stepped:
    """A backend that reports as llama.cpp does, one step each time the test says go."""
    name = "stepped"

    def __init__(self):
        self.go, self.at = threading.Semaphore(0), threading.Semaphore(0)

    def generate(self, messages, params, ctx):
        progress.running(ctx)
        for done in (64, 128, 200):
            progress.reading(done, 200)
            self.at.release()
            self.go.acquire()
        for n in (1, 2, 3):
            progress.writing(n)
            self.at.release()
            self.go.acquire()
        progress.ended()
        return Output(text="ok", model=self.name)


def _until(cond, timeout=5.0):
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.002)


def test_a_watched_call_is_seen_in_line_then_reading_then_writing():
    gate = ModelGate(hold_s=0.0)
    backend = Stepped()
    llm = gate.wrap(backend)
    watch = progress.CallWatch()
    holder = CallContext("judge", "case-b", 6)
    release = threading.Event()
    hold_gate(gate, holder, release, timeout=5)
    ctx = CallContext("doctor", "case-a", 3)
    call = threading.Thread(target=progress.watched(watch, lambda: llm.generate([Message("user", "hi")],
                                                                                 GenerateParams(), ctx)), daemon=True)
    call.start()
    _until(lambda: watch.snapshot()["state"] == "waiting")
    s = watch.snapshot()
    assert s["holder"] == holder and s["role"] == "doctor" and s["calls"] == 0
    release.set()
    seen = []
    for _ in range(6):
        assert backend.at.acquire(timeout=5)
        s = watch.snapshot()
        seen.append((s["state"], s["done"], s["total"], s["tokens"], s["calls"]))
        backend.go.release()
    call.join(5)
    assert seen == [("reading", 64, 200, 0, 1), ("reading", 128, 200, 0, 1), ("reading", 200, 200, 0, 1),
                    ("writing", 200, 200, 1, 1), ("writing", 200, 200, 2, 1), ("writing", 200, 200, 3, 1)]
    assert watch.snapshot()["state"] is None  # over


def test_a_second_call_under_one_watch_is_counted_and_a_new_task_starts_at_zero():
    watch = progress.CallWatch()

    class Quick:
        name = "quick"

        def generate(self, messages, params, ctx):
            progress.running(ctx)
            progress.writing(1)
            progress.ended()
            return Output(text="x", model="quick")

    llm = ModelGate(hold_s=0.0).wrap(Quick())
    two = lambda: [llm.generate([Message("user", "hi")], GenerateParams(), CallContext("patient", "c", 1))  # noqa: E731
                   for _ in range(2)]
    progress.watched(watch, two)()
    assert watch.calls == 2 and watch.state is None
    progress.watched(watch, lambda: None)()
    assert watch.calls == 0


def test_unwatched_calls_report_to_no_one():
    assert progress.watching() is None
    progress.running(CallContext("doctor", "c", 1))  # no watch: nothing happens, nothing fails
    progress.reading(1, 2)
    progress.writing(3)
    progress.ended()
    seen = []
    progress.watched(progress.CallWatch(), lambda: seen.append(progress.watching()))()
    assert seen[0] is not None and progress.watching() is None  # set only inside, and only in that thread


@pytest.mark.llama
def test_llama_cpp_reports_its_prompt_in_pieces_and_its_tokens_and_replies_the_same(smol):
    prompt = [Message("system", "You are a doctor in clinic. " * 30), Message("user", "What brings you in today?")]
    params = GenerateParams(temperature=0.0, max_tokens=12)
    pools = [LlamaPool(n_ctx=1024, n_threads=2) for _ in range(2)]
    try:
        plain = LlamaCppLLM(smol.path, pools[0], label="smollm2").generate(prompt, params, CallContext("doctor", "c"))
        watch, seen = progress.CallWatch(), []
        watched_llm = LlamaCppLLM(smol.path, pools[1], label="smollm2")
        real_reading, real_writing = progress.reading, progress.writing

        def spy_reading(done, total):
            seen.append(("reading", done, total))
            real_reading(done, total)

        def spy_writing(n):
            seen.append(("writing", n))
            real_writing(n)

        progress.reading, progress.writing = spy_reading, spy_writing
        try:
            out = progress.watched(watch, lambda: watched_llm.generate(prompt, params, CallContext("doctor", "c")))()
        finally:
            progress.reading, progress.writing = real_reading, real_writing
    finally:
        for p in pools:
            p.close()
    assert out.text == plain.text and out.completion_tokens == plain.completion_tokens
    reads = [(d, t) for kind, *rest in seen if kind == "reading" for d, t in [rest]]
    total = reads[-1][1]
    assert total >= out.prompt_tokens_evaluated - 1 > 2 * PROGRESS_CHUNK  # the whole prompt, read in pieces
    assert [d for d, _ in reads] == [min(total, i) for i in range(PROGRESS_CHUNK, total + PROGRESS_CHUNK, PROGRESS_CHUNK)]
    writes = [rest[0] for kind, *rest in seen if kind == "writing"]
    assert writes == list(range(1, len(writes) + 1)) and len(writes) >= out.completion_tokens - 1
    assert watch.calls == 1 and watch.state is None
