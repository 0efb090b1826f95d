"""The live hospital's schedule with two consultations in flight (scripted backend, fake
clock): the one further along gets the model first, even when the other asked first."""
import threading
import time

from agents.llm.base import CallContext
from agents.llm.llamacpp import LlamaPool
from agents.llm.schedule import ModelGate
from game.runner import ThreadRunner
from medsim.play import build_shift
from medsim.spec import build_spec
from tests.helpers import hold_gate

BLOCKER = CallContext("doctor", "blocker", 10**6)  # outranks both: it takes the model when it asks


class Clock:
    t = 0.0

    def __call__(self):
        return self.t


def _in_flight(world):
    return sorted((e for e in world.encounters if e.consultation is not None and not e.consultation.done),
                  key=lambda e: e.started_t)


def _tick(world, clock, n=1):
    for _ in range(n):
        world.step(0.05)
        clock.t += 0.05
        time.sleep(0.001)


def test_the_consultation_further_along_gets_the_model_before_one_that_asked_first():
    clock = Clock()
    gate = ModelGate(hold_s=1.0, clock=clock, poll_s=0.005)
    runner = ThreadRunner(3)
    spec = build_spec(None, {"world.doctors": 2, "world.patients": 2, "world.arrival_interval_s": 6.0})
    release = threading.Event()
    contests = []
    try:
        world = build_shift(spec, runner=runner, log=None, pool=LlamaPool(), gate=gate, gated=lambda kind: True)
        for _ in range(8000):  # until both consultations are in flight
            _tick(world, clock)
            if len(_in_flight(world)) == 2:
                break
        first, second = _in_flight(world)
        for _attempt in range(40):
            if first.consultation.done or second.consultation.done:
                break
            # the model is taken away; the world goes on until both consultations wait for it
            release.clear()
            hold_gate(gate, BLOCKER, release)
            order = []  # the cases in the order they came to the waiting model
            for _ in range(4000):
                for c in sorted(gate._waiting.items()):  # noqa: SLF001 - ticket order is arrival order
                    if c[1].case_id not in order:
                        order.append(c[1].case_id)
                if len(order) == 2 and len(gate._waiting) == 2:  # noqa: SLF001
                    break
                _tick(world, clock)
            waiting = {c.case_id: c for c in gate._waiting.values()}  # noqa: SLF001
            n_before = len(gate.served)
            release.set()
            for _ in range(400):
                if len(gate.served) >= n_before + 1:
                    break
                _tick(world, clock)
            got = gate.served[n_before][0]  # the first served once the blocker let go
            if set(waiting) == {first.case.id, second.case.id} and order[0] == second.case.id:
                contests.append((order, {k: (v.role, v.turn) for k, v in waiting.items()}, got))
                break
            _tick(world, clock, 20)
        assert contests, "the second consultation never asked first: nothing was tested"
        order, waiting, got = contests[0]
        f, s = waiting[first.case.id], waiting[second.case.id]
        assert f[1] > s[1] or (f[1] == s[1] and f[0] != "doctor" and s[0] == "doctor"), waiting  # first is ahead
        assert got == first.case.id, (order, waiting, got)
    finally:
        release.set()
        clock.t += 1e6  # no call is left waiting on a hold
        runner.close()


class _Watch:
    """Wraps every backend of a shift: at each call, whether the actor the world shows
    speaking is the one the call answers (the call started while the bubble showed)."""

    def __init__(self):
        self.world = None
        self.calls = []

    def wrap(self, llm):
        watch = self

        class Watched:
            name = llm.name

            def generate(self, messages, params, ctx):
                enc = next(e for e in watch.world.encounters if e.case.id == ctx.case_id)
                w = watch.world  # a bubble with time left to show (not one ending this tick)
                speaking = {a.id for a in w.actors.values() if a.speech and a.speech_until > w.t + 0.5}
                watch.calls.append((ctx.role, enc.doctor.id in speaking, enc.patient.id in speaking))
                return llm.generate(messages, params, ctx)

        return Watched()


def test_the_next_model_call_starts_while_the_last_reply_is_still_on_screen():
    """The patient's answer is asked for while the doctor's question shows, the doctor's
    next turn while the patient's answer shows: the model's time and the world's overlap."""
    from game.runner import InlineRunner

    watch = _Watch()
    spec = build_spec(None, {"world.doctors": 1, "world.patients": 1})
    world = build_shift(spec, runner=InlineRunner(), log=None, pool=LlamaPool(), gate=watch, gated=lambda kind: True)
    watch.world = world
    world.run(dt=0.25, max_sim_s=5000)
    assert world.done and world.finished
    patient = [doctor_speaks for role, doctor_speaks, _ in watch.calls if role == "patient"]
    doctor = [patient_speaks for role, _, patient_speaks in watch.calls[1:] if role == "doctor"]
    assert patient and all(patient), watch.calls  # while the doctor's question showed
    assert doctor and sum(doctor) >= len(doctor) // 2, watch.calls  # most while the patient's answer showed
