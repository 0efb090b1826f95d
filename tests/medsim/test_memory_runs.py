"""Memory in runs, with scripted participants and the hashing embedder: learning grows
the right buffer, retrieval puts the expected past case before the doctor's diagnosis,
the leakage guard fires, an insight that names the answer is rejected."""
import json

import pytest

from agents.cases import load_cases
from agents.events import read_events
from agents.learning import Learner
from agents.llm.base import GenerateParams, Output
from agents.llm.scripted import ScriptedLLM
from agents.recall import case_key
from agents.results import read_results
from medsim.bench import BenchError, BenchOptions, run_bench
from medsim.memory import open_memory
from medsim.spec import MemorySpec, build_spec

pytest.importorskip("faiss")


def _run(tmp_path, out, **over):
    spec = build_spec(None, {"memory.embedder": "hash", "memory.dir": str(tmp_path / "mem"), **over})
    return run_bench(spec, BenchOptions(out=tmp_path / out, progress=False))


def _events(out, row):
    return read_events(out / row["events"])


def test_learning_grows_the_right_buffer(tmp_path):
    o = _run(tmp_path, "learn", limit=14, **{"memory.mode": "learn"})
    rows = read_results(o.out / "results.jsonl")
    cases, _ = load_cases("demo")
    oracle = ScriptedLLM({c.id: c for c in cases})
    filed = stored = 0
    for r in rows:
        ev = _events(o.out, r)
        learned = [e for e in ev if e["type"] == "memory_learned"][-1]
        if r["correct"]:
            assert learned["action"] == "filed" and learned["buffer"] == "records"
            filed += 1
        else:
            refl = [e for e in ev if e["type"] == "reflection"]
            second = [e for e in ev if e["type"] == "second_attempt"]
            assert refl and refl[-1]["accepted"] and second
            assert second[0]["correct"] == oracle.lesson_helps(r["case_id"])
            if second[0]["correct"]:
                assert learned["action"] == "insight_stored" and learned["buffer"] == "experience"
                stored += 1
            else:
                assert learned["action"] == "nothing"
        assert r["learned"] == learned["action"]
    assert filed >= 2 and stored >= 1
    with open_memory(MemorySpec(mode="frozen", dir=str(tmp_path / "mem"), embedder="hash"), read_only=True) as m:
        assert m.state()["records"] == filed and m.state()["experience"] == stored
    # the scored rows say what memory each case consulted
    assert all("memory" in r for r in rows[1:])


def test_retrieval_puts_the_expected_past_case_into_the_doctors_prompt(tmp_path):
    cases, _ = load_cases("demo")
    base = next(c for c in cases if ScriptedLLM({c.id: c for c in cases}).diagnoses_correctly(c.id))
    learn, score = tmp_path / "learn.jsonl", tmp_path / "score.jsonl"
    src = [json.loads(line) for line in (load_cases.__globals__["resolve_case_path"]("demo")).read_text().splitlines()]
    rec = next(r for r in src if r["id"] == base.id)
    variant = json.loads(json.dumps(rec))
    variant["id"] = base.id + "-again"
    variant["OSCE_Examination"]["Patient_Actor"]["Demographics"] += " (seen again)"
    others = [r for r in src if r["id"] != base.id][:3]
    learn.write_text("\n".join(json.dumps(r) for r in [rec, *others]) + "\n")
    score.write_text(json.dumps(variant) + "\n")
    o = _run(tmp_path, "run", cases=str(score), **{"memory.learn_cases": str(learn)})
    lrows = read_results(o.out / "learning" / "results.jsonl")
    assert {r["case_id"] for r in lrows} == {r["id"] for r in [rec, *others]}
    row = read_results(o.out / "results.jsonl")[0]
    ev = _events(o.out, row)
    got = [e for e in ev if e["type"] == "memory_retrieved"][0]
    top = got["hits"][0]
    assert top["buffer"] == "records" and top["diagnosis"] == base.diagnosis and top["score"] > 0.5
    assert got["memory"]["records"] >= 1
    recall_prompt = [e for e in ev if e["type"] == "llm_call" and e["role"] == "doctor"][-1]["messages"][-1]["content"]
    assert "Past cases that were diagnosed correctly" in recall_prompt and f"diagnosis: {base.diagnosis}" in recall_prompt
    # frozen: the scored split taught the memory nothing
    assert not [e for e in ev if e["type"] in ("memory_learned", "reflection")]
    assert row["memory"]["size"] == json.loads((o.out / "learning" / "summary.json").read_text())["memory"]["size"]


def test_the_leakage_guard_fires(tmp_path):
    _run(tmp_path, "learn", limit=4, **{"memory.mode": "learn"})
    # the same cases scored against the memory that learned them: stopped before anything runs
    with pytest.raises(BenchError, match="are in the memory") as e:
        _run(tmp_path, "frozen", limit=4, **{"memory.mode": "frozen"})
    assert "demo-00" in str(e.value) and not (tmp_path / "frozen" / "results.jsonl").exists()
    # a learning split that shares a case with the scored cases
    with pytest.raises(BenchError, match="share"):
        _run(tmp_path, "split", limit=2, **{"memory.learn_cases": "demo", "memory.dir": str(tmp_path / "m2")})
    # and at retrieval time, where a case slipped past the check: the case is an error, named
    from agents.events import DictSink
    from agents.deliberation import Remembering
    from agents.recall import MemoryLeak, Recollection
    from tests.helpers import consult, roles

    cases, _ = load_cases("demo")
    case = cases[0]

    class Leaky:
        def recall(self, query, k):
            return [Recollection("records", 7, 0.99, "x", case.diagnosis, None, case_key(case))]

        def state(self):
            return {"size": 1}
    sink = DictSink()
    from agents.participants import CastConfig, llm_cast
    from agents.consultation import ConsultationConfig, run_consultation

    cast = llm_cast(case, roles(ScriptedLLM({c.id: c for c in cases})), CastConfig(), sink)
    cast["doctor"] = Remembering(cast["doctor"], Leaky(), case, sink)
    out = run_consultation(case, cast, ConsultationConfig(), sink)
    assert out.status == "error" and "must never be in memory" in out.error
    _ = (MemoryLeak, consult)


class Canned:
    name = "canned"

    def __init__(self, *replies):
        self.replies = list(replies)

    def generate(self, messages, params, ctx):
        return Output(self.replies.pop(0) if len(self.replies) > 1 else self.replies[0], self.name)


class Memo:
    def __init__(self):
        self.rows = []

    def remember(self, buffer, **kw):
        self.rows.append((buffer, kw))
        return len(self.rows)

    def has_case(self, key):
        return False


def _wrong_case_events(case):
    from tests.helpers import consult, roles
    from agents.participants import ScriptedParticipant

    _, events = consult(case, roles(ScriptedLLM({case.id: case})), participants={
        "doctor": ScriptedParticipant("doctor", ["What brings you in?", "REQUEST TEST: ECG", "Any pain?",
                                                 "DIAGNOSIS READY: Tension headache"])})
    return events


def test_an_insight_that_names_the_diagnosis_is_rejected():
    from agents.events import DictSink

    cases, _ = load_cases("demo")
    case = next(c for c in cases if c.id == "demo-001")  # Inferior ST-elevation myocardial infarction
    events = _wrong_case_events(case)
    naming = json.dumps({"insight": "Chest pain with sweating in a smoker is a myocardial infarction until proven otherwise."})
    abbrev = json.dumps({"insight": "Think of a STEMI first when the chest pain is crushing."})
    memo = Memo()
    learner = Learner(memo, Canned(naming, abbrev, naming), GenerateParams(), ScriptedLLM({case.id: case}),
                      ScriptedLLM({case.id: case}), GenerateParams(temperature=0.0, max_tokens=60), retries=2)
    sink = DictSink()
    out = learner.learn(case, events, sink)
    refl = [e for e in sink.events if e["type"] == "reflection"]
    assert [e["accepted"] for e in refl] == [False, False, False]
    assert all(e["problem"] == "names the diagnosis" for e in refl)
    assert out.action == "nothing" and memo.rows == []
    # a clean lesson is accepted (and the scripted doctor, helped, is stored or not by its oracle)
    clean = json.dumps({"insight": "Read the ECG early when chest pain comes with sweating; look at leads II, III, aVF."})
    learner.reflector = Canned(naming, clean)
    sink = DictSink()
    out = learner.learn(case, events, sink)
    assert [e["accepted"] for e in sink.events if e["type"] == "reflection"] == [False, True]
    assert out.action in ("insight_stored", "nothing") and [e for e in sink.events if e["type"] == "second_attempt"]
