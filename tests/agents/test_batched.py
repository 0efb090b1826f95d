"""The batched engine (agents.llm.batched) against the serial llama.cpp path, with
SmolLM2-135M-Instruct: same text at temperature 0 (and with a seed above it), JSON
schemas, prefix reuse, limits, and the pool's wiring."""
from __future__ import annotations

import json
import threading

import pytest

from agents.llm.base import CallContext, GenerateParams, LLMError, Message
from agents.llm.llamacpp import LlamaCppLLM, LlamaPool

pytestmark = pytest.mark.llama

SYSTEM = Message("system", "You are a patient in a clinic. Answer briefly.")
CALLS = [  # prompts of different lengths, different max_tokens and stops
    ([SYSTEM, Message("user", "What brings you in?")], GenerateParams(temperature=0.0, max_tokens=24)),
    ([SYSTEM, Message("user", "Describe your pain: where it is, when it started, what makes it worse, "
                              "and whether it spreads anywhere.")], GenerateParams(temperature=0.0, max_tokens=40)),
    ([Message("user", "Say hi.")], GenerateParams(temperature=0.0, max_tokens=8, stop=(" ",))),
    ([SYSTEM, Message("user", "Do you smoke?")], GenerateParams(temperature=0.0, max_tokens=32, stop=("\n",))),
    ([SYSTEM, Message("user", "Any allergies?")], GenerateParams(temperature=0.7, max_tokens=24, seed=5)),
]
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}, "sure": {"type": "boolean"}},
          "required": ["answer", "sure"]}


# One thread each: on a busy machine two threads spin at llama.cpp's barriers while the
# other waits for a core (a token can take seconds); the thread count changes no logit.
# No drafts on either side: a drafted step's rows round differently and flip SmolLM2's near
# ties (tests/agents/test_jump_forward.py checks drafts, the engine's among them); here the
# engine's batching is what is compared.
@pytest.fixture(scope="module")
def serial(smol):
    pool = LlamaPool(n_ctx=1024, n_threads=1, jump_forward=False)
    yield LlamaCppLLM(smol.path, pool, label="smollm2")
    pool.close()


@pytest.fixture(scope="module")
def engine(smol):
    from agents.llm.batched import BatchedEngine

    e = BatchedEngine(smol.path, n_seq=3, n_ctx_seq=1024, n_threads=1, jump_forward=False)
    yield e
    e.close()


def at_once(engine, calls):
    """Every call from its own thread, all submitted together."""
    outs: list = [None] * len(calls)
    errors: list = []

    def run(i: int) -> None:
        try:
            outs[i] = engine.generate(*calls[i])
        except LLMError as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    return outs


def test_concurrent_calls_give_the_serial_text(serial, engine):
    """Five calls at once on three sequences (two wait for a free one): each reply is the
    serial path's, word for word, with the same finish reason and token counts."""
    ref = [serial.generate(m, p, CallContext(f"r{i}", "c")) for i, (m, p) in enumerate(CALLS)]
    steps = engine.steps
    batched = at_once(engine, CALLS)
    for a, b in zip(ref, batched):
        assert (b.text, b.finish_reason, b.completion_tokens, b.prompt_tokens) == \
            (a.text, a.finish_reason, a.completion_tokens, a.prompt_tokens)
    assert any(o.finish_reason == "length" for o in batched) and any(o.finish_reason == "stop" for o in batched)
    # sequences were decoded together: fewer steps than tokens
    assert engine.steps - steps < sum(o.completion_tokens for o in batched)


def test_json_schema_calls_are_constrained_and_match_serial(serial, engine):
    p = GenerateParams(temperature=0.0, max_tokens=40, response_schema=json.dumps(SCHEMA, sort_keys=True))
    calls = [([SYSTEM, Message("user", "Is the pain sharp? Reply in JSON.")], p), CALLS[0]]
    ref = [serial.generate(m, q, CallContext(f"j{i}", "c")) for i, (m, q) in enumerate(calls)]
    batched = at_once(engine, calls)
    assert [o.text for o in batched] == [o.text for o in ref]
    if batched[0].finish_reason == "stop":  # a reply cut by max_tokens is valid JSON only so far
        assert set(json.loads(batched[0].text)) == {"answer", "sure"}
    assert batched[0].text.lstrip().startswith("{")


def test_the_grammar_is_checked_lazily_and_refuses_what_it_must(serial, engine):
    """The chain picks a token first; the grammar checks that one token and, when it
    refuses it ("Hello" where the schema wants "{"), is applied to the whole vocabulary
    and the chain picks again: greedy, that is the serial path's grammar-first text; sampled, the reply
    still obeys the schema."""
    schema = json.dumps({"type": "object", "properties": {"mood": {"type": "string", "enum": ["calm", "worried"]}},
                         "required": ["mood"]}, sort_keys=True)
    msgs = [Message("user", "Say hello to the doctor.")]
    greedy = GenerateParams(temperature=0.0, max_tokens=24, response_schema=schema)
    ref = serial.generate(msgs, greedy, CallContext("g", "c"))
    before = engine.grammar_resamples
    got = engine.generate(msgs, greedy)
    assert engine.grammar_resamples > before  # the unconstrained pick was refused at least once
    assert got.text == ref.text and json.loads(got.text)["mood"] in ("calm", "worried")
    for seed in (1, 2, 3):
        out = engine.generate(msgs, GenerateParams(temperature=0.9, max_tokens=24, seed=seed, response_schema=schema))
        assert json.loads(out.text)["mood"] in ("calm", "worried")


def test_sampled_calls_under_a_grammar_draw_the_same_tokens_serial_and_batched(smol):
    """Above temperature 0 both paths take the grammar lazily in one order (the chain
    picks from every token; the grammar, asked about that one, sends a refused pick back
    through the chain over what it allows), so a seed draws the same reply in either.
    The serial path's grammar-first chain drew other tokens for the same seed. (Each
    path on its own context of one conversation, both drafting: the same steps, so the
    same floats; a prompt cached in another split rounds differently.)"""
    from agents.llm.batched import BatchedEngine

    p = [GenerateParams(temperature=t, max_tokens=40, seed=seed, response_schema=json.dumps(SCHEMA, sort_keys=True))
         for t, seed in ((0.7, 1), (0.7, 2), (1.2, 3), (1.2, 4))]
    asks = ["How bad is the pain", "Where is the pain", "Does anything ease the pain", "When did the pain start"]
    calls = [([SYSTEM, Message("user", f"{a}, and are you sure? Reply in JSON.")], q) for a, q in zip(asks, p)]
    ref, got = [], []
    for msgs, q in calls:
        pool = LlamaPool(n_ctx=1024, n_threads=1)
        engine = BatchedEngine(smol.path, n_seq=1, n_ctx_seq=1024, n_threads=1)
        try:
            ref.append(LlamaCppLLM(smol.path, pool).generate(msgs, q, CallContext("patient", "c")))
            got.append(engine.generate(msgs, q))
        finally:
            engine.close()
            pool.close()
    assert [o.text for o in got] == [o.text for o in ref]
    assert len({o.text for o in ref}) > 1  # the seeds drew different replies: sampled, not greedy
    for o in ref:
        if o.finish_reason == "stop":
            assert set(json.loads(o.text)) == {"answer", "sure"}


def test_a_growing_conversation_evaluates_only_its_new_tokens(engine):
    """The next call of a conversation finds its earlier tokens in a sequence, even
    after another call took a sequence in between."""
    p = GenerateParams(temperature=0.0, max_tokens=12)
    first = [SYSTEM, Message("user", "What brings you in today? Tell me everything that has happened.")]
    out = engine.generate(first, p)
    engine.generate([Message("user", "Something else entirely, to take another sequence.")], p)
    again = engine.generate(first + [Message("assistant", out.text), Message("user", "How long has it lasted?")], p)
    assert again.prompt_tokens_evaluated < again.prompt_tokens / 2


def test_limits_are_errors_as_on_the_serial_path(engine):
    with pytest.raises(LLMError, match="timeout of 0.0 s hit") as e:
        engine.generate([SYSTEM, Message("user", "Tell me a story.")], GenerateParams(max_tokens=20, timeout_s=0.0))
    assert e.value.transient
    with pytest.raises(LLMError, match="exceed context window") as e:
        engine.generate([Message("user", "word " * 1100)], GenerateParams(max_tokens=4))
    assert not e.value.transient
    # the engine goes on after both
    assert engine.generate(*CALLS[2]).text


def test_a_pool_with_several_sequences_routes_role_calls_through_the_engine(smol, serial):
    pool = LlamaPool(n_ctx=1024, n_threads=1, n_seq=2)
    llm = LlamaCppLLM(smol.path, pool, label="smollm2")
    try:
        messages, params = CALLS[0]
        out = llm.generate(messages, params, CallContext("doctor", "c"))
        assert out.model == "smollm2" and out.text == serial.generate(messages, params, CallContext("x", "c")).text
        assert list(pool._engines) == [llm.path] and not pool._contexts  # no serial context was loaded
    finally:
        pool.close()
    assert not pool._engines


def test_batch_shape_gives_each_case_role_a_sequence_within_the_kv_budget():
    from agents.llm.batched import KV_CELLS, batch_shape

    assert batch_shape(4, 4, 4096) == (16, 4096)
    n_seq, n_ctx = batch_shape(16, 4, 4096)
    assert n_seq == 64 and n_ctx == 2048 and n_seq * n_ctx <= 2 * KV_CELLS
    assert batch_shape(1, 1, 4096) == (1, 4096)

