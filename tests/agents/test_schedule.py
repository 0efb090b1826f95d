"""The live hospital's model schedule (agents.llm.schedule): the consultation furthest
along gets the model first, and keeps it between its own calls for hold_s."""
import threading
import time

import pytest

from agents.llm.base import CallContext, GenerateParams, Message, Output
from agents.llm.schedule import ModelGate
from tests.helpers import hold_gate


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class Echo:
    name = "echo"

    def generate(self, messages, params, ctx):
        return Output(text=f"{ctx.case_id}:{ctx.turn}", model=self.name)


def _queue_behind_a_held_model(gate, calls):
    """Each call of ``calls`` (case, turn) waits while a third case holds the model; then
    the model is released. Returns the order they were served in."""
    llm = gate.wrap(Echo())
    release = threading.Event()
    hold_gate(gate, CallContext("doctor", "blocker", -1), release, timeout=5)
    threads = []
    for case, turn in calls:
        t = threading.Thread(target=llm.generate, args=([Message("user", "hi")], GenerateParams(),
                                                        CallContext("doctor", case, turn)), daemon=True)
        t.start()
        threads.append(t)
        deadline = time.monotonic() + 5
        while len(gate._waiting) < len(threads) and time.monotonic() < deadline:  # noqa: SLF001
            time.sleep(0.005)
    release.set()
    for t in threads:
        t.join(5)
    after = [c for c, _, _ in gate.served].index("blocker") + 1
    return [(c, turn) for c, _, turn in gate.served[after:]]


def test_the_consultation_further_along_gets_the_model_first():
    gate = ModelGate(hold_s=0.0, clock=Clock())
    # b arrived later and asks first, but a is at its fifth turn
    assert _queue_behind_a_held_model(gate, [("b", 1), ("a", 5)]) == [("a", 5), ("b", 1)]


def test_on_a_tie_the_consultation_that_came_first_goes_first():
    gate = ModelGate(hold_s=0.0, clock=Clock())
    with gate.turn(CallContext("doctor", "a", 0)):
        pass
    with gate.turn(CallContext("doctor", "b", 0)):
        pass
    assert _queue_behind_a_held_model(gate, [("b", 2), ("a", 2)]) == [("a", 2), ("b", 2)]


def test_the_leader_keeps_the_model_between_its_calls_for_hold_s():
    clock = Clock()
    gate = ModelGate(hold_s=4.0, clock=clock, poll_s=0.01)
    llm = gate.wrap(Echo())
    p = GenerateParams()
    llm.generate([Message("user", "hi")], p, CallContext("doctor", "a", 3))  # a's call ends at t=0
    done = threading.Event()
    b = threading.Thread(target=lambda: (llm.generate([Message("user", "hi")], p, CallContext("doctor", "b", 1)),
                                         done.set()), daemon=True)
    b.start()
    assert not done.wait(0.2)  # a is between two calls: b waits
    llm.generate([Message("user", "hi")], p, CallContext("patient", "a", 3))  # a comes back first
    clock.t = 3.9
    assert not done.wait(0.2)
    clock.t = 8.0  # past hold_s after a's last call: b may run
    assert done.wait(2)
    b.join(2)
    assert [(c, t) for c, _, t in gate.served] == [("a", 3), ("a", 3), ("b", 1)]


def test_a_consultation_behind_does_not_hold_the_model():
    clock = Clock()
    gate = ModelGate(hold_s=4.0, clock=clock)
    llm = gate.wrap(Echo())
    llm.generate([Message("user", "hi")], GenerateParams(), CallContext("doctor", "b", 1))
    got = []
    t = threading.Thread(target=lambda: got.append(llm.generate([Message("user", "hi")], GenerateParams(),
                                                                CallContext("doctor", "a", 4))), daemon=True)
    t.start()
    t.join(2)
    assert got and got[0].text == "a:4"  # a, further along, is not held back by b's hold


def test_hold_must_not_be_negative():
    with pytest.raises(ValueError, match="hold_s"):
        ModelGate(hold_s=-1)
