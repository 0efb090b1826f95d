from agents.bench import BenchConfig, run_bench
from agents.events import EventLog, read_events
from game.runner import InlineRunner
from game.shift import build_replay
from tests.game.tmx import small_hospital


def test_replay_of_a_bench_log_reaches_the_same_end_state(tmp_path):
    out = tmp_path / "run"
    run_bench(BenchConfig(cases="demo", out=out, limit=4, seed=2, progress=False))
    with EventLog(tmp_path / "replay.jsonl") as log:
        world, rows = build_replay(out, None, map_path=small_hospital(tmp_path), runner=InlineRunner(), log=log)
        world.run(dt=0.25, max_sim_s=20000)
    assert world.done and len(rows) == 4
    got = {r.case_id: (r.diagnosis, r.correct, r.turns, r.tests_requested) for r in world.finished}
    want = {r["case_id"]: (r["diagnosis"], r["correct"], r["turns"], r["tests_requested"]) for r in rows}
    assert got == want
    # the replayed utterances are the logged ones, in order
    for cid in want:
        logged = [e["text"] for e in read_events(out / "events" / f"{cid}.jsonl") if e["type"] == "utterance"]
        replayed = [e["text"] for e in read_events(tmp_path / "replay.jsonl")
                    if e["type"] == "utterance" and e.get("case_id") == cid]
        assert replayed == logged


def test_replay_of_one_case(tmp_path):
    out = tmp_path / "run"
    run_bench(BenchConfig(cases="demo", out=out, limit=3, progress=False))
    world, rows = build_replay(out, "demo-002", map_path=small_hospital(tmp_path), runner=InlineRunner(), log=None)
    world.run(dt=0.5, max_sim_s=20000)
    assert [r.case_id for r in world.finished] == ["demo-002"] == [r["case_id"] for r in rows]
    assert world.finished[0].diagnosis == rows[0]["diagnosis"]
