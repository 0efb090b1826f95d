"""Batched decoding from the run spec to llama.cpp (issue 14): ``batched`` in the spec
(auto by default: on with workers > 1 and an in-process model) and ``--batched`` /
``--no-batched`` on the command line reach the run's :class:`LlamaPool` (checked without
loading a model); the engine copies a shared prefix's KV cells instead of evaluating it
and leaves other cases' conversations alone (SmolLM2); and a SmolLM2 bench with
``--workers 2`` (batched by default) writes the serial run's rows."""
from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

from agents.llm.base import CallContext, GenerateParams, Message
from agents.llm.batched import MIN_SHARE, batch_shape
from agents.llm.llamacpp import LlamaCppLLM, LlamaPool
from medsim.assemble import batched_roles, pool_for
from medsim.spec import RunSpec, SpecError, build_spec


# -- the spec key and the pool (no model loaded) ----------------------------------------
def _files(tmp_path):
    a, b = tmp_path / "doctor.gguf", tmp_path / "others.gguf"  # never opened: nothing is loaded
    return str(a.resolve()), str(b.resolve())


def test_batched_with_workers_gives_each_model_file_a_sequence_per_case_and_role(tmp_path):
    a, b = _files(tmp_path)
    spec = build_spec(None, {"llm": f"gguf:{b}", "roles.doctor.backend": f"gguf:{a}", "workers": 3, "batched": True})
    # the doctor alone on one file; patient, technician and judge on the other (the reflector
    # only when a condition learns; the vision role is off)
    assert batched_roles(spec) == {a: 1, b: 3}
    pool = pool_for(spec)
    assert pool.shape(a) == batch_shape(3, 1, pool.n_ctx) and pool.shape(a)[0] == 3
    assert pool.shape(b) == batch_shape(3, 3, pool.n_ctx) and pool.shape(b)[0] == 9
    llm = LlamaCppLLM(a, pool)  # what the bench's backends are built on
    assert pool.batched(llm.path)
    assert not pool._engines and not pool._contexts  # nothing loaded before a call
    learning = build_spec(None, {"llm": f"gguf:{b}", "workers": 2, "batched": True, "memory.mode": "learn",
                                 "memory.dir": str(tmp_path / "mem")})
    assert batched_roles(learning) == {b: 5}  # doctor, patient, technician, judge, reflector


def test_batched_is_the_default_with_workers_and_an_in_process_model(tmp_path):
    a, b = _files(tmp_path)
    spec = build_spec(None, {"llm": f"gguf:{b}", "workers": 3})
    assert spec.batched is None and spec.decodes_batched  # auto, resolved on
    pool = pool_for(spec)
    assert pool.shape(b) == batch_shape(3, 4, pool.n_ctx) and pool.shape(b)[0] == 12 and pool.batched(b)
    assert not pool._engines and not pool._contexts  # nothing loaded before a call
    # one in-process role among servers is enough (the others are left to their server)
    mixed = build_spec(None, {"llm": "openai:http://127.0.0.1:9/v1", "model": "m", "roles.judge.backend": f"gguf:{a}",
                              "workers": 2})
    assert mixed.decodes_batched and pool_for(mixed).shape(a)[0] == 2
    # ... also when only a condition's role runs one
    grid = build_spec(None, {"llm": "scripted", "workers": 2,
                             "conditions": {"served": {}, "local": {"roles": {"judge": {"backend": f"gguf:{a}"}}}}})
    assert grid.decodes_batched and pool_for(grid).shape(a)[0] == 2


@pytest.mark.parametrize("over", [{"workers": 1}, {"workers": 1, "batched": True}, {"workers": 4, "batched": False},
                                  {"workers": 4, "executor": "ray"}])
def test_one_worker_batched_off_or_ray_is_the_serial_pool(tmp_path, over):
    _, b = _files(tmp_path)
    spec = build_spec(None, {"llm": f"gguf:{b}", **over})
    pool = pool_for(spec)
    assert pool.shape(b)[0] == 1 and not pool.batched(b) and not pool.shapes
    if "batched" not in over:
        assert spec.batched is None and not spec.decodes_batched  # auto, resolved off (no error)


@pytest.mark.parametrize("llm", ["scripted", "openai:http://127.0.0.1:9/v1"])
def test_auto_without_an_in_process_model_stays_serial_without_an_error(llm):
    spec = build_spec(None, {"llm": llm, "model": "m", "workers": 4})
    assert spec.batched is None and not spec.decodes_batched
    assert "batched" not in spec.to_dict() and not pool_for(spec).shapes


def test_auto_stays_serial_where_batching_would_do_nothing(tmp_path):
    a, b = _files(tmp_path)
    # online learning runs its cases one at a time
    learning = build_spec(None, {"llm": f"gguf:{b}", "workers": 4, "memory.mode": "learn",
                                 "memory.dir": str(tmp_path / "mem")})
    assert learning.learns_online and not learning.decodes_batched and not pool_for(learning).shapes
    # a learning split first, then frozen cells: those run on the workers, batched
    split = build_spec(None, {"llm": f"gguf:{b}", "workers": 4, "memory.mode": "learn", "memory.dir": str(tmp_path / "m2"),
                              "memory.learn_cases": "demo"})
    assert not split.learns_online and split.decodes_batched
    # a model with an image projector is served by the serial path
    vision = build_spec(None, {"llm": "scripted", "roles.doctor.backend": f"gguf:{a},{b}", "workers": 4})
    assert not vision.decodes_batched and "batched" not in vision.to_dict()


def test_batched_is_stored_resolved_but_not_part_of_the_identity(tmp_path):
    _, b = _files(tmp_path)
    auto = build_spec(None, {"llm": f"gguf:{b}", "workers": 2})
    on = build_spec(None, {"llm": f"gguf:{b}", "workers": 2, "batched": True})
    off = build_spec(None, {"llm": f"gguf:{b}", "workers": 2, "batched": False})
    serial = build_spec(None, {"llm": f"gguf:{b}", "workers": 1})
    assert auto.decodes_batched and on.decodes_batched and not off.decodes_batched and not serial.decodes_batched
    # the resolved value: what runs (config --show, run.json, every log header)
    assert auto.to_dict()["batched"] is True and on.to_dict()["batched"] is True
    assert off.to_dict()["batched"] is False and "batched = false" in off.to_toml()
    assert "batched" not in serial.to_dict()  # a serial one-worker spec reads as before
    assert "batched = true" in auto.to_toml()
    for spec in (auto, on, off, serial):
        again = RunSpec.from_dict(spec.to_dict())
        assert again.decodes_batched == spec.decodes_batched and again.to_dict() == spec.to_dict()
        assert RunSpec.from_dict(again.to_dict()) == again
    assert RunSpec.from_dict(on.to_dict()) == on and RunSpec.from_dict(off.to_dict()) == off
    assert RunSpec.from_dict(serial.to_dict()) == serial
    # --resume may switch it, as it may change --workers
    assert auto.identity() == on.identity() == off.identity() == serial.identity()
    assert "batched" not in auto.identity()


def test_batched_where_it_can_do_nothing_is_an_error():
    with pytest.raises(SpecError, match="batched: .*no role runs one"):
        build_spec(None, {"llm": "scripted", "workers": 2, "batched": True})
    with pytest.raises(SpecError, match="batched: .*executor 'ray'"):
        build_spec(None, {"llm": "smollm2", "workers": 2, "executor": "ray", "batched": True})
    with pytest.raises(SpecError, match="batched: expected true or false"):
        build_spec(None, {"llm": "smollm2", "batched": "on"})
    # turned off, or left to auto, it is no error there
    assert not build_spec(None, {"llm": "scripted", "workers": 2, "batched": False}).decodes_batched
    assert not build_spec(None, {"llm": "smollm2", "workers": 2, "executor": "ray", "batched": False}).decodes_batched
    # a server for some roles, an in-process model for others: batching applies to the latter
    spec = build_spec(None, {"llm": "openai:http://127.0.0.1:9/v1", "model": "m", "roles.judge.backend": "smollm2",
                             "workers": 2, "batched": True})
    assert list(batched_roles(spec).values()) == [1]


def test_the_flag_reaches_the_spec():
    from medsim.cli import build_parser, spec_from_args

    from medsim.flags import overrides

    args = build_parser().parse_args(["bench", "--llm", "smollm2", "--workers", "2", "--batched"])
    assert overrides(args, "bench")["batched"] is True and spec_from_args(args).batched is True
    args = build_parser().parse_args(["bench", "--llm", "smollm2", "--workers", "2"])
    assert "batched" not in overrides(args, "bench")
    spec = spec_from_args(args)
    assert spec.batched is None and spec.decodes_batched  # the default: on
    args = build_parser().parse_args(["bench", "--llm", "smollm2", "--workers", "2", "--no-batched"])
    assert overrides(args, "bench")["batched"] is False
    spec = spec_from_args(args)
    assert spec.batched is False and not spec.decodes_batched
    args = build_parser().parse_args(["bench", "--llm", "smollm2", "--workers", "1"])
    assert not spec_from_args(args).decodes_batched
    args = build_parser().parse_args(["bench", "--llm", "scripted", "--workers", "2", "--batched"])
    with pytest.raises(SpecError, match=r"\(--batched\)"):
        spec_from_args(args)
    args = build_parser().parse_args(["bench", "--llm", "scripted", "--workers", "2", "--no-batched"])
    assert spec_from_args(args).batched is False


def test_no_batched_with_workers_warns_and_the_default_does_not(tmp_path, monkeypatch, caplog):
    """The bench's warning about serialised workers names --no-batched, the only way to get them."""
    import medsim.bench as bench
    from medsim.bench import BenchOptions, run_bench

    monkeypatch.setattr(bench, "run_cells", _no_cells)
    _, b = _files(tmp_path)
    for name, over in (("off", {"batched": False}), ("auto", {})):
        spec = build_spec(None, {"llm": f"gguf:{b}", "workers": 2, "preflight": False, "limit": 1, **over})
        pool = pool_for(spec)
        caplog.clear()
        with caplog.at_level("WARNING", logger=bench.logger.name):
            try:
                run_bench(spec, BenchOptions(out=tmp_path / name, progress=False), pool=pool,
                          backends={r: _Unused() for r in spec.roles})
            except _Stop:
                pass
            finally:
                pool.close()
        warned = [r.getMessage() for r in caplog.records if "serialised" in r.getMessage()]
        if name == "off":
            assert len(warned) == 1 and "--no-batched" in warned[0]
        else:
            assert not warned


class _Stop(Exception):
    pass


def _no_cells(*args, **kwargs):  # the warning is logged before the cells run: stop there
    raise _Stop


class _Unused:
    name = "unused"


# -- KV prefix sharing (SmolLM2) ---------------------------------------------------------
SYSTEM = Message("system", "You are a patient at a doctor's appointment. You are a 54-year-old man with chest pain "
                           "that started two hours ago while you were shovelling snow. Answer the doctor's questions "
                           "in the first person, in one or two sentences, using only these facts.")
P = GenerateParams(temperature=0.0, max_tokens=24)
# plain decoding on both sides: these tests are of the engine's placement and copies, and
# a drafted step's rows (tests/agents/test_jump_forward.py) can flip SmolLM2's near ties
# between a sequence decoded alone and two decoded together


@pytest.fixture(scope="module")
def serial(smol):
    pool = LlamaPool(n_ctx=1024, n_threads=1, jump_forward=False)
    yield LlamaCppLLM(smol.path, pool, label="smollm2")
    pool.close()


def _first_logits(engine) -> list:
    """Records the logits each request's first token is sampled from, in the order the
    requests sample (a shim over the engine's sampler; nothing of its own state changes)."""
    import llama_cpp
    import numpy as np

    seen: list = []
    requests: list = []  # kept alive, so that an id is never reused
    inner = engine._sample
    n_vocab = llama_cpp.llama_vocab_n_tokens(engine._vocab)

    def sample(s, idx, upto=None):  # noqa: ANN001, ANN202 - the engine's own signature
        if not any(r is s.request for r in requests):
            requests.append(s.request)
            seen.append(np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(engine._ctx, idx), shape=(n_vocab,)).copy())
        return inner(s, idx, upto)

    engine._sample = sample
    return seen


def _engine(smol, *, share: bool, n_seq: int = 3):
    from agents.llm.batched import BatchedEngine

    return BatchedEngine(smol.path, n_seq=n_seq, n_ctx_seq=1024, n_threads=1, share=share, jump_forward=False)


# case A's conversation holds much more than the system prompt it shares with case B (a
# call sharing at least half of what a sequence holds continues that sequence's conversation)
CASE_A = [SYSTEM, Message("user", "Tell me everything about the pain: where it is, what it feels like, when it "
                                  "started, what you were doing, what makes it better or worse, and whether it "
                                  "spreads to your arm, jaw or back.")]
CASE_B = [SYSTEM, Message("user", "Does the pain spread anywhere?")]


def _conversations(generate):
    """Case A's first two turns, case B's first (sharing A's system prompt), A's third."""
    a1 = generate(CASE_A, "a")
    a2_msgs = CASE_A + [Message("assistant", a1.text), Message("user", "Have you ever had anything like this before, "
                                                                        "and do you take any medicines for it?")]
    a2 = generate(a2_msgs, "a")
    b = generate(CASE_B, "b")
    a3 = generate(a2_msgs + [Message("assistant", a2.text), Message("user", "Do you smoke?")], "a")
    return a1, a2, b, a3


@pytest.mark.llama
def test_a_shared_system_prompt_is_copied_and_the_live_conversation_keeps_its_sequence(smol, serial):
    """Case B's first call shares case A's system prompt: it takes a free sequence and
    copies that prefix's KV cells from A's (the prefix is not evaluated), and A's next turn
    still finds its conversation: A's replies are the serial path's (a context per role).
    Without sharing, the longest idle prefix wins: B takes A's sequence and A's next turn
    evaluates nearly all of it again (and, its logits computed in other chunks, may even
    flip a near tie: with SmolLM2 it does, at the fourth word).

    B's reply is held to the one B gets on A's own sequence (no copy: the same cells,
    evaluated there), not to the serial path's: its suffix is evaluated over cells of
    another stream, and a kernel's sums in another order move SmolLM2's near ties (the
    AVX-512 build flips one at the seventh word; the AVX2 build does not)."""
    ref = _conversations(lambda m, who: serial.generate(m, P, CallContext(who, "ref")))
    runs = {}
    for share in (True, False):
        e = _engine(smol, share=share, n_seq=2)
        firsts = _first_logits(e)
        try:
            runs[share] = (_conversations(lambda m, who: e.generate(m, P)), e.copies, e.copied_tokens, firsts)
        finally:
            e.close()
    (a1, a2, b, a3), copies, copied, firsts = runs[True]
    assert [o.text for o in (a1, a2, a3)] == [o.text for o in (ref[0], ref[1], ref[3])]
    assert copies == 1 and copied >= MIN_SHARE
    assert b.prompt_tokens_evaluated == b.prompt_tokens - copied < b.prompt_tokens / 2
    assert a2.prompt_tokens_evaluated < a2.prompt_tokens / 4 and a3.prompt_tokens_evaluated < a3.prompt_tokens / 4
    (_, _, b_off, a3_off), copies_off, _, firsts_off = runs[False]
    # the copied cells are the cells: B's first token is sampled from the very logits it
    # gets on A's own sequence (its later tokens, decoded in another stream, may round
    # otherwise: the AVX-512 build flips a near tie at the seventh word)
    assert copies_off == 0 and np.array_equal(firsts[2], firsts_off[2])
    assert b_off.prompt_tokens_evaluated == b.prompt_tokens_evaluated  # it took A's sequence, sharing the same prefix
    assert a3_off.prompt_tokens_evaluated > a3_off.prompt_tokens / 2  # ... and A paid for it


@pytest.mark.llama
def test_a_prefix_is_copied_from_a_sequence_that_is_generating(smol, serial):
    """The copy is made at the next decode, before that step writes the generating
    sequence's new token: the story is the serial one, and B's reply the one B gets on the
    story's own sequence once the story is done (the same cells, not copied: see above)."""
    long = GenerateParams(temperature=0.0, max_tokens=64)
    story = [SYSTEM, Message("user", "Tell me your whole story, from this morning until now, in detail.")]
    # a fresh context (a role of its own): a serial reply after a cached prompt may differ
    # too, its last token's logits computed in another chunk
    want_long = serial.generate(story, long, CallContext("story", "busy"))
    alone = _engine(smol, share=False, n_seq=1)
    want = _first_logits(alone)
    try:
        assert alone.generate(story, long).text == want_long.text
        alone.generate(CASE_B, P)  # on the story's sequence: its prefix's cells, evaluated there
    finally:
        alone.close()
    assert want_long.completion_tokens > 8  # long enough to be generating when the second call comes
    e = _engine(smol, share=True, n_seq=2)
    got = _first_logits(e)
    try:
        out: dict[str, object] = {}
        steps = e.steps
        t = threading.Thread(target=lambda: out.update(long=e.generate(story, long)))
        t.start()
        deadline = time.monotonic() + 300
        while e.steps == steps and time.monotonic() < deadline:  # its prompt is in, it is generating
            time.sleep(0.002)
        b = e.generate(CASE_B, P)
        t.join()
        assert np.array_equal(got[1], want[1]) and out["long"].text == want_long.text
        assert e.copies == 1 and b.prompt_tokens_evaluated == b.prompt_tokens - e.copied_tokens
    finally:
        e.close()


# -- the bench, end to end (SmolLM2) -------------------------------------------------------
@pytest.mark.llama
def test_a_batched_bench_with_two_workers_writes_the_serial_runs_rows(smol, tmp_path, monkeypatch):
    import medsim.bench as bench
    from medsim.bench import BenchOptions, run_bench

    pools: list[tuple[RunSpec, LlamaPool, list]] = []
    real = bench.pool_for

    def recording(spec):  # the run's own pool, one thread each (a busy machine spins at barriers)
        pool = real(spec, n_threads=1)
        engines: list = []
        close = pool.close

        def closing() -> None:
            engines.extend(pool._engines.values())
            close()

        pool.close = closing
        pools.append((spec, pool, engines))
        return pool

    monkeypatch.setattr(bench, "pool_for", recording)
    over = {"llm": "smollm2", "limit": 2, "protocol.max_turns": 2, "preflight": False}
    serial_out = run_bench(build_spec(None, {**over, "workers": 1}), BenchOptions(out=tmp_path / "serial", progress=False))
    batched_out = run_bench(build_spec(None, {**over, "workers": 2}),  # batched: the default here
                            BenchOptions(out=tmp_path / "batched", progress=False))
    (s_spec, s_pool, s_engines), (b_spec, b_pool, b_engines) = pools
    assert not s_engines and not s_pool.shapes  # serial: a context per role, one call at a time
    n_seq = batch_shape(2, 4, b_pool.n_ctx)[0]
    assert [e.n_seq for e in b_engines] == [n_seq] and b_engines[0].steps > 0  # the calls went through the engine
    rows = {}
    for name, outcome in (("serial", serial_out), ("batched", batched_out)):
        rs = [json.loads(line) for line in (outcome.out / "results.jsonl").read_text().splitlines()]
        rows[name] = sorted(rs, key=lambda r: r["case_id"])
        s = outcome.summary
        assert s["cases"] == 2 and s["scored"] == 2 and s["errors"] == 0
    assert [r["case_id"] for r in rows["serial"]] == [r["case_id"] for r in rows["batched"]]
    run = json.loads((batched_out.out / "run.json").read_text())
    assert run["spec"]["batched"] is True and "batched" not in run["identity"]
