"""The live hospital's panel follows a model call as it goes (World.activity with
agents.llm.progress): the consultation whose call waits names the call that has the model;
the one whose call runs says how much of its prompt it has read, then how many tokens it
has written. The step's own row (progress=False) stays the same all along."""
from __future__ import annotations

import threading
import time

from agents.llm import progress
from agents.llm.llamacpp import LlamaPool
from agents.llm.schedule import ModelGate
from game.runner import ThreadRunner
from medsim.play import build_shift
from medsim.spec import build_spec


class Parking:
    """Wraps the shift's backends behind a gate; the first call of the first case to call
    reports as llama.cpp does and stops at each report until the test lets it go."""

    def __init__(self, gate: ModelGate):
        self.gate = gate
        self.case = None
        self.at, self.go = threading.Semaphore(0), threading.Semaphore(0)

    def wrap(self, llm):
        me = self

        class Reporting:
            name = llm.name

            def generate(self, messages, params, ctx):
                progress.running(ctx)
                if me.case is None:
                    me.case = ctx.case_id
                    progress.reading(64, 200)
                    me.at.release()
                    me.go.acquire()
                    progress.writing(5)
                    me.at.release()
                    me.go.acquire()
                try:
                    return llm.generate(messages, params, ctx)
                finally:
                    progress.ended()

        return self.gate.wrap(Reporting())


def _tick_until(world, cond, n=20000):
    for _ in range(n):
        if cond():
            return
        world.step(0.05)
        time.sleep(0.0005)
    raise AssertionError("the world never got there")


def test_the_panel_says_who_has_the_model_and_how_far_its_call_has_got():
    gate = Parking(ModelGate(hold_s=0.0))
    runner = ThreadRunner(3)
    spec = build_spec(None, {"world.doctors": 2, "world.patients": 2, "world.arrival_interval_s": 2.0})
    try:
        world = build_shift(spec, runner=runner, log=None, pool=LlamaPool(), gate=gate, gated=lambda kind: True)
        _tick_until(world, lambda: gate.at.acquire(blocking=False))  # the first call has read 64 tokens, and stops
        a = next(e for e in world.encounters if e.case.id == gate.case)
        step = world.activity(a, progress=False)
        assert step and world.activity(a) == f"{step}: reading 64 of 200 tokens"
        # the other consultation's call is in line behind it: the panel names who has the model
        others = lambda: [e for e in world.encounters if e is not a and e.sink is not None]  # noqa: E731
        _tick_until(world, lambda: any("in line" in (world.activity(e) or "") for e in others()))
        b = others()[0]
        assert world.activity(b) == f"{world.activity(b, progress=False)}: in line for the model, which answers for {a.doctor.id}"
        gate.go.release()
        assert gate.at.acquire(timeout=5)
        assert world.activity(a) == f"{world.activity(a, progress=False)}: writing, 5 tokens"
        gate.go.release()
        _tick_until(world, lambda: world.finished)  # the shift goes on as ever
    finally:
        for _ in range(4):
            gate.go.release()
        runner.close()
