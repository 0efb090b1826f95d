"""Jump-forward decoding (agents.llm.drafts): drafts of what a reply continues with,
evaluated with the token just sampled in one llama_decode and kept as far as the call's
own sampler agrees. With SmolLM2-135M-Instruct through llama.cpp: greedy replies over the
doctor's and the panel's schemas equal plain decoding, token for token, in the serial
path and in the batched engine, while most of their tokens come from drafts; a reply the
grammar forces entirely needs no decode of its own after the prompt's.

"Equal" has one exception, which the tests check rather than hide: llama.cpp's CPU
kernels give a row of a step of several rows logits a little different from the same row
decoded alone (up to 0.75 for SmolLM2, 0.6 for the embedded Qwen; every step of two rows
or more agrees with the others), so where plain decoding's two best tokens are that close
a drafted step can pick the other, and SmolLM2's degenerate text is full of such ties. A
reply that differs must differ first at a near tie of plain decoding (:func:`_near_tie`); a
mistake of the mechanism (a row misread, a refused draft kept) would not. The batched
engine, making the same steps as the serial path, must give its text exactly."""
from __future__ import annotations

import json

import numpy as np
import pytest

from agents.deliberation import ROLE_PANEL
from agents.llm.base import CallContext, GenerateParams, Message, Output
from agents.llm.drafts import Drafter, Lookup
from agents.llm.llamacpp import LlamaCppLLM, LlamaPool
from agents.protocol import DIAGNOSE_SCHEMA, doctor_schema

DOCTOR = Message("system", "You are a doctor in clinic. A 24-year-old man has abdominal pain. Each turn reply with "
                           'JSON: {"action": "ask_patient", "text": a question}, {"action": "order_test", "test": a '
                           'test}, or {"action": "diagnose", "text": a diagnosis}.')
TURNS = ["The patient sits down. Begin.", "Patient: it started yesterday around my navel and moved to the right.",
         "RESULTS: Complete blood count: white cells 15.2 x10^9/L."]
PANEL = Message("system", "You are one of a panel of doctors reviewing a consultation. Reply with JSON only.")
SCHEMAS = {"doctor": doctor_schema(True), "doctor without tests": doctor_schema(False), "diagnosis": DIAGNOSE_SCHEMA,
           **{f"panel: {role}": schema for role, _, schema in ROLE_PANEL}}


def _conversations():
    """(schema name, messages) pairs: the doctor's growing conversation under its
    schemas, a panel member's question under each role's schema."""
    out = []
    for name in ("doctor", "doctor without tests", "diagnosis"):
        history = [DOCTOR]
        for turn in TURNS:
            history = [*history, Message("user", turn)]
            out.append((name, history))
    for role, task, _ in ROLE_PANEL:
        out.append((f"panel: {role}", [PANEL, Message("user", f"Case: a 24-year-old man, right lower abdominal "
                                                              f"pain, fever, raised white cells. {task}")]))
    return out


NEAR = 1.5  # logits: twice the largest difference between a row decoded alone and in a step seen for SmolLM2


def _reply_tokens(llm: LlamaCppLLM, out: Output) -> list[int]:
    """The tokens of the reply ``out`` the role's context just made (its KV cache holds
    them after the prompt; the last may not have been evaluated)."""
    ctx = llm.pool.context(llm.path, "doctor", 0)
    return [int(t) for t in ctx.input_ids[out.prompt_tokens:out.prompt_tokens + out.completion_tokens - 1]]


def _near_tie(plain: LlamaCppLLM, a: list[int], b: list[int], messages: list[Message]) -> float:
    """Where reply tokens ``a`` (plain decoding's) and ``b`` first differ, the gap
    between plain decoding's logits of their two tokens there: the prompt and the shared
    tokens evaluated one token at a time, as plain decoding does."""
    from agents.llm.base import text_message

    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    assert k is not None, "the texts differ but not their evaluated tokens"
    ctx = plain.pool.context(plain.path, "near-tie", 0)
    ctx.reset()
    ctx.eval(LlamaPool.prompt_tokens(ctx, [text_message(m) for m in messages]))
    for t in a[:k]:
        ctx.eval([t])
    logits = np.ctypeslib.as_array(ctx._ctx.get_logits_ith(-1), shape=(ctx.n_vocab(),))
    return abs(float(logits[a[k]]) - float(logits[b[k]]))


def _params(name: str) -> GenerateParams:
    return GenerateParams(temperature=0.0, max_tokens=48, response_schema=json.dumps(SCHEMAS[name], sort_keys=True))


@pytest.fixture(scope="module")
def llms(smol):
    pools = {jf: LlamaPool(n_ctx=1024, n_threads=1, jump_forward=jf) for jf in (False, True)}
    yield {jf: LlamaCppLLM(smol.path, pool, label="smollm2") for jf, pool in pools.items()}
    for pool in pools.values():
        pool.close()


@pytest.mark.llama
def test_greedy_replies_equal_plain_decoding_over_the_doctors_and_the_panels_schemas(llms):
    completion = drafted = 0
    differ: list[str] = []
    for name, messages in _conversations():
        ctx = CallContext("doctor", "jf", 1)
        plain = llms[False].generate(messages, _params(name), ctx)
        fast = llms[True].generate(messages, _params(name), ctx)
        if fast.text != plain.text:
            differ.append(name)
            gap = _near_tie(llms[False], _reply_tokens(llms[False], plain), _reply_tokens(llms[True], fast), messages)
            assert gap < NEAR, (name, gap, plain.text, fast.text)
        assert plain.drafted_tokens == 0  # plain decoding: one decode per token
        completion += fast.completion_tokens
        drafted += fast.drafted_tokens
    assert len(differ) < len(_conversations()), differ
    # jump-forward did the work: a good share of the replies' tokens came from drafts
    assert drafted >= 0.25 * completion, (drafted, completion)


@pytest.mark.llama
def test_a_free_text_copy_of_the_prompt_is_drafted_with_plain_decodings_text(llms):
    """A technician copying its records (free text, no grammar): drafts from the prompt
    are kept, and the reply is plain decoding's but at a near tie."""
    records = ("- Chest X-Ray > Findings: Normal heart size. Clear lung fields. No pleural effusion.\n"
               "- Blood Work > Hemoglobin: 13.2 g/dL; White cell count: 14.8 x10^9/L; Platelets: 310 x10^9/L")
    messages = [Message("system", "You are a lab technician. Copy the records you are given, word for word, "
                                  "after RESULTS:."),
                Message("user", f"The doctor orders: chest X-ray and blood count\nRecords:\n{records}")]
    p = GenerateParams(temperature=0.0, max_tokens=60)
    ctx = CallContext("doctor", "copy", 1)
    plain = llms[False].generate(messages, p, ctx)
    fast = llms[True].generate(messages, p, ctx)
    assert plain.drafted_tokens == 0 and fast.drafted_tokens > 0, (fast, plain)
    if fast.text != plain.text:
        gap = _near_tie(llms[False], _reply_tokens(llms[False], plain), _reply_tokens(llms[True], fast), messages)
        assert gap < NEAR, (gap, plain.text, fast.text)


@pytest.mark.llama
def test_the_batched_engine_drafts_the_same_steps_as_the_serial_path(smol, llms):
    """One sequence of the engine makes the serial path's steps (the same rows at the
    same positions), so its replies are the serial path's, with drafts and without."""
    from agents.llm.batched import BatchedEngine

    engines = {jf: BatchedEngine(smol.path, n_seq=1, n_ctx_seq=1024, n_threads=1, jump_forward=jf)
               for jf in (False, True)}
    try:
        drafted = completion = 0
        for name, messages in _conversations():
            for jf, engine in engines.items():
                serial = llms[jf].generate(messages, _params(name), CallContext("doctor", "jf", 1))
                out = engine.generate(messages, _params(name))
                assert out.text == serial.text, (name, jf)
                assert out.drafted_tokens == serial.drafted_tokens, (name, jf)
            drafted += out.drafted_tokens
            completion += out.completion_tokens
        assert drafted >= 0.25 * completion, (drafted, completion)
        assert engines[True].drafted_kept == drafted and engines[False].drafted_kept == 0
        assert engines[True].drafted_rows >= drafted
    finally:
        for e in engines.values():
            e.close()


@pytest.mark.llama
@pytest.mark.parametrize("key", ["Pneumonia", "pulmonary embolism"])
def test_a_reply_the_grammar_forces_entirely_needs_no_decode_of_its_own(llms, smol, key):
    """Only one text is allowed: its first token comes from the prompt's evaluation,
    every other one from one drafted step (no token decoded alone). The draft is the
    forced text as the tokenizer splits it; a model that writes it in other pieces keeps
    its own (SmolLM2 writes "Acute appendicitis" nearly letter by letter under this
    grammar: the same text, from more steps)."""
    from agents.llm.batched import BatchedEngine

    params = GenerateParams(temperature=0.0, max_tokens=48, response_schema=json.dumps({"enum": [key]}))
    messages = [DOCTOR, Message("user", "Give the diagnosis.")]
    plain = llms[False].generate(messages, params, CallContext("doctor", "jf", 1))
    out = llms[True].generate(messages, params, CallContext("doctor", "jf", 1))
    assert out.text == plain.text == json.dumps(key)
    assert out.completion_tokens >= 3
    assert out.drafted_tokens == out.completion_tokens - 1
    engine = BatchedEngine(smol.path, n_seq=1, n_ctx_seq=1024, n_threads=1)
    try:
        steps = engine.steps
        out = engine.generate(messages, params)
        assert out.text == json.dumps(key) and out.drafted_tokens == out.completion_tokens - 1
        assert engine.steps - steps == 1  # one generation step after the prompt
    finally:
        engine.close()


@pytest.mark.llama
def test_greedy_tokens_take_the_grammar_lazily_with_the_same_text(llms, monkeypatch):
    """Greedy, the serial path keeps the best token of the whole vocabulary when the
    grammar accepts it and runs the chain (the grammar over every token) only when it does
    not: the same tokens exactly (no draft here, so no step of several rows), and the
    chain asked for few of them."""
    import llama_cpp.llama_cpp as lc

    monkeypatch.setattr(Drafter, "draft", lambda self, context: [])
    chain_samples = 0
    plain_sample = lc.llama_sampler_sample

    def counting(*args):
        nonlocal chain_samples
        chain_samples += 1
        return plain_sample(*args)

    completion = 0
    for name, messages in _conversations():
        plain = llms[False].generate(messages, _params(name), CallContext("doctor", "lazy", 1))
        monkeypatch.setattr(lc, "llama_sampler_sample", counting)
        lazy = llms[True].generate(messages, _params(name), CallContext("doctor", "lazy", 1))
        monkeypatch.setattr(lc, "llama_sampler_sample", plain_sample)
        assert lazy.text == plain.text and lazy.completion_tokens == plain.completion_tokens, name
        assert lazy.drafted_tokens == 0
        completion += lazy.completion_tokens + 1  # and the end of generation
    assert chain_samples < completion / 3, (chain_samples, completion)


def test_lookup_proposes_what_followed_the_longest_recent_run():
    lk = Lookup([1, 2, 3, 4, 9, 2, 3, 5, 6, 7, 2, 3])
    # "2 3" last occurred before the end at index 5 (followed by 5 6 7); "1 2 3" never ends the list
    assert lk.propose(3) == [5, 6, 7]
    lk.extend([4])  # "2 3 4" occurred at the start: followed by 9
    assert lk.propose(2) == [9, 2]
    assert Lookup([1, 2, 3]).propose(4) == []  # nothing repeats
    assert Lookup([5, 1, 5]).propose(2, min_match=2) == []  # a one-token match is not enough for free text
    assert Lookup([5, 1, 5]).propose(2) == [1, 5]


class _NoEnd:
    """A probe for free text: no token of these tests ends generation (but 0)."""

    def before_end(self, draft):
        return list(draft[:draft.index(0)] if 0 in draft else draft)


def test_free_text_drafts_a_long_match_and_waits_after_a_refused_draft():
    """Free text (no grammar): a lookup of three matching tokens is drafted (two are not
    enough), never past an end of generation; after a draft of which nothing was kept no
    draft for 4 calls, then 8 after another refused one; a kept draft ends the wait."""
    d = Drafter(_NoEnd())
    ctx = [7, 8, 9, 1, 2, 3, 4, 7, 8, 9]
    assert d.draft(ctx) == [1, 2, 3]  # what followed 7 8 9 the last time
    assert Drafter(_NoEnd()).draft([7, 8, 1, 2, 3, 7, 8]) == []  # a two-token match: not in free text
    assert Drafter(_NoEnd()).draft([7, 8, 9, 1, 0, 5, 7, 8, 9]) == [1]  # cut at the end of generation

    def skipped_until_a_draft(ctx):
        n = 0
        while True:
            ctx = ctx + [7, 8, 9]  # each call's context ends with what the lookup matches
            got = d.draft(ctx)
            if got:
                return n, ctx, got
            n += 1

    n, ctx, got = skipped_until_a_draft(ctx + [5])  # refused: the model sampled 5, not 1
    assert n == 4
    n, ctx, got = skipped_until_a_draft(ctx + [6])  # refused again: the wait doubles
    assert n == 8
    n, _, _ = skipped_until_a_draft(ctx + got + [4])  # kept whole: no wait after it
    assert n == 0


def test_jump_forward_is_on_by_default_recorded_when_off_and_not_part_of_the_identity(tmp_path):
    from medsim.assemble import pool_for
    from medsim.cli import build_parser, spec_from_args
    from medsim.spec import RunSpec, SpecError, build_spec

    on = build_spec(None, {"llm": "smollm2"})
    off = build_spec(None, {"llm": "smollm2", "jump_forward": False})
    assert on.jump_forward and not off.jump_forward
    assert "jump_forward" not in on.to_dict()  # a spec with it on reads as before
    assert off.to_dict()["jump_forward"] is False and RunSpec.from_dict(off.to_dict()).jump_forward is False
    assert on.identity() == off.identity()  # --resume may change it
    assert pool_for(on).jump_forward and not pool_for(off).jump_forward
    batched = build_spec(None, {"llm": "smollm2", "workers": 2, "jump_forward": False})
    assert batched.decodes_batched and not pool_for(batched).jump_forward  # its engine is built with it
    args = build_parser().parse_args(["bench", "--llm", "smollm2", "--no-jump-forward"])
    assert spec_from_args(args).jump_forward is False
    assert spec_from_args(build_parser().parse_args(["consult", "--llm", "smollm2"])).jump_forward is True
    with pytest.raises(SpecError, match="jump_forward"):
        build_spec(None, {"llm": "smollm2", "jump_forward": "yes"})
