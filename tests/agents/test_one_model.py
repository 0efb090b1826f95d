"""One loaded model per model file (agents.llm.llama_models.ModelStore), with SmolLM2.

Loads are counted where llama.cpp is asked for them (``llama_model_load_from_file``), not
by the store's own counter, so a store that loaded again would be caught."""

import pytest

from agents.llm.base import CallContext, GenerateParams, Message
from agents.llm.llamacpp import LlamaCppLLM, LlamaPool


@pytest.fixture
def loads(monkeypatch):
    import llama_cpp.llama_cpp as lc

    seen: list[bytes] = []
    plain = lc.llama_model_load_from_file

    def counted(path, params):
        seen.append(path)
        return plain(path, params)

    monkeypatch.setattr(lc, "llama_model_load_from_file", counted)
    return seen


PATIENT = [Message("system", "You are a patient with a cough. Answer in one sentence."),
           Message("user", "What brings you in today?")]
TECH = [Message("system", "You are a lab technician. Reply RESULTS: normal."), Message("user", "CBC please")]


@pytest.mark.llama
def test_roles_on_one_model_file_load_it_once_and_keep_their_own_context(smol, loads):
    pool = LlamaPool(n_ctx=2048, n_threads=2)
    llm = LlamaCppLLM(smol.path, pool)
    p = GenerateParams(max_tokens=12, temperature=0.0)
    try:
        a = llm.generate(PATIENT, p, CallContext("patient", "c"))
        llm.generate(TECH, p, CallContext("measurement", "c"))
        llm.generate(TECH, p, CallContext("judge", "c"))
        assert len(loads) == 1 and pool.models.loads[llm.path] == 1
        # three contexts over it, each with its own cache: the patient's second turn still
        # finds its conversation after two other roles ran
        again = llm.generate(PATIENT + [Message("assistant", a.text.strip()), Message("user", "Since when?")], p,
                             CallContext("patient", "c"))
        assert again.prompt_tokens_evaluated < again.prompt_tokens / 2
        assert pool.models.contexts[llm.path] == 3  # one per role: a conversation's first call takes no second
    finally:
        pool.close()


@pytest.mark.llama
def test_a_shared_model_gives_the_text_of_a_model_of_its_own(smol, loads):
    """Greedy replies over the shared model equal those of a pool per role (a load each)."""
    p = GenerateParams(max_tokens=24, temperature=0.0)
    shared = LlamaPool(n_ctx=2048, n_threads=2)
    one = LlamaCppLLM(smol.path, shared)
    try:
        together = [one.generate(m, p, CallContext(r, "c")).text for r, m in (("patient", PATIENT), ("measurement", TECH))]
    finally:
        shared.close()
    apart = []
    for r, m in (("patient", PATIENT), ("measurement", TECH)):
        own = LlamaPool(n_ctx=2048, n_threads=2)
        try:
            apart.append(LlamaCppLLM(smol.path, own).generate(m, p, CallContext(r, "c")).text)
        finally:
            own.close()
    assert together == apart and all(together)
    assert len(loads) == 3  # the shared pool's one, and one for each pool of its own


@pytest.mark.llama
def test_the_batched_engine_and_the_serial_contexts_share_the_pools_model(smol, loads):
    path = str(smol.path)
    from pathlib import Path

    resolved = str(Path(path).resolve())
    pool = LlamaPool(n_ctx=2048, n_threads=2, shapes={resolved: (2, 2048)})
    try:
        batched = LlamaCppLLM(path, pool)
        swap = LlamaCppLLM(path, pool, context="swap")  # a serial context of the same file
        p = GenerateParams(max_tokens=8, temperature=0.0)
        batched.generate(TECH, p, CallContext("measurement", "c"))
        swap.generate(PATIENT, p, CallContext("patient", "c"))
        assert len(loads) == 1
    finally:
        pool.close()


def _alternate(pool, smol):
    """Two consultations of one role, in flight together: the evaluated tokens of each later turn."""
    llm = LlamaCppLLM(smol.path, pool)
    p = GenerateParams(max_tokens=6, temperature=0.0)
    talks = {c: [Message("system", "You are a doctor. Ask one short question."),
                 Message("user", f"Patient {c}: I have had {what} for a week.")]
             for c, what in (("a", "a dry cough, a fever of 38.5, night sweats and a weight loss of four kilograms"),
                                 ("b", "pain and swelling in my left knee since I fell from a ladder at work"))}
    evaluated = []
    for turn, order in enumerate(("ab", "ba", "ab", "bb")):  # not only turn about: the last used is not the one
        for c in order:
            msgs = talks[c]
            out = llm.generate(msgs, p, CallContext("doctor", c, turn))
            if turn:
                evaluated.append((out.prompt_tokens_evaluated, out.prompt_tokens))
            msgs += [Message("assistant", out.text.strip() or "Go on."), Message("user", "It is worse at night.")]
    return evaluated


@pytest.mark.llama
def test_two_conversations_of_one_role_keep_their_own_context(smol, loads):
    """Two consultations in flight (the live hospital's two doctors) alternate calls of one
    role: with two contexts each continues its own cache; with one, a call after the other
    consultation's finds that conversation there and evaluates most of its own again."""
    two = LlamaPool(n_ctx=2048, n_threads=2, slots=2)
    one = LlamaPool(n_ctx=2048, n_threads=2, slots=1)
    try:
        kept, evicted = _alternate(two, smol), _alternate(one, smol)
    finally:
        two.close()
        one.close()
    assert all(e < n / 3 for e, n in kept), kept
    # where the other consultation ran in between, one context evaluates most of it again
    assert max(e for e, _ in evicted) > 2 * max(e for e, _ in kept), (evicted, kept)
    assert len(loads) == 2  # a load per pool, whatever the contexts


@pytest.mark.llama
def test_a_roles_second_kind_of_question_keeps_a_context_of_its_own(smol, loads):
    """The judge grades a diagnosis and, in between, checks a patient's reply (another
    system prompt, ``slot="checker"``): the next case's grading still finds the grading
    prompt in its context, where without the slot the check had taken its place."""
    grading = Message("system", "You are a senior physician grading a doctor's diagnosis against the answer key. "
                                "Reply with one word: same, broader, narrower or different.")
    check = Message("system", "You check one reply of a simulated patient against the case: does the patient "
                              "speak in the first person? Reply yes or no.")
    p = GenerateParams(max_tokens=4, temperature=0.0)

    def grade_check_grade(slot):
        pool = LlamaPool(n_ctx=2048, n_threads=2)
        llm = LlamaCppLLM(smol.path, pool)
        try:
            llm.generate([grading, Message("user", "Correct: pneumonia. Doctor: bronchitis.")], p, CallContext("judge", "a"))
            llm.generate([check, Message("user", "Reply: I have a cough.")], p, CallContext("judge", "a", slot=slot))
            return llm.generate([grading, Message("user", "Correct: gout. Doctor: septic arthritis.")], p,
                                CallContext("judge", "b"))
        finally:
            pool.close()

    kept, evicted = grade_check_grade("checker"), grade_check_grade("")
    assert kept.prompt_tokens_evaluated < kept.prompt_tokens / 3, kept
    assert evicted.prompt_tokens_evaluated > 2 * kept.prompt_tokens_evaluated, (evicted, kept)
