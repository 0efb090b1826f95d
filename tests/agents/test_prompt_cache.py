"""The prompt cache on disk (agents.llm.prompt_cache), with SmolLM2 through llama.cpp: a
second process's first call of a role loads its system message's cells instead of
evaluating them, with the same reply; another case whose system message opens with the
same instructions loads the shared part; a broken entry is dropped and the call goes on;
entries are capped; consult and play use the cache, a benchmark's pool does not."""
from __future__ import annotations

import pytest

from agents.llm.base import CallContext, GenerateParams, Message
from agents.llm.llamacpp import LlamaCppLLM, LlamaPool
from agents.llm.prompt_cache import MIN_TOKENS, PromptCache, default_prompt_cache

RULES = ("You are a senior physician grading a doctor's final diagnosis against the answer key. Classify how the "
         "doctor's diagnosis relates to the correct one: the same condition or a synonym, a subtype, a broader "
         "category, another type of the same family, or a different condition. A list of possibilities is not one "
         "diagnosis. Reply with one word and a short reason, nothing else.")


def _judge(case: str) -> list[Message]:
    return [Message("system", f"{RULES}\nThe case: {case}"), Message("user", "Doctor's diagnosis: Pneumonia.")]


P = GenerateParams(temperature=0.0, max_tokens=12)


def _process(smol, cache_dir, **cache) -> tuple[LlamaCppLLM, PromptCache]:
    """A new pool (as a new process has) over the cache folder."""
    pc = PromptCache(cache_dir, **cache)
    return LlamaCppLLM(smol.path, LlamaPool(n_ctx=1024, n_threads=1, prompt_cache=pc), label="smollm2"), pc


@pytest.mark.llama
def test_a_second_process_loads_the_system_message_and_says_the_same(smol, tmp_path):
    first, pc1 = _process(smol, tmp_path)
    a = first.generate(_judge("a 24-year-old man with pain in the right lower abdomen"), P, CallContext("judge", "c"))
    assert pc1.saves == 1 and pc1.loads == 0
    assert a.prompt_tokens_evaluated == a.prompt_tokens  # cold: all of it
    second, pc2 = _process(smol, tmp_path)
    b = second.generate(_judge("a 24-year-old man with pain in the right lower abdomen"), P, CallContext("judge", "c"))
    assert pc2.loads == 1 and pc2.saves == 0 and pc2.loaded_tokens >= MIN_TOKENS
    assert b.text == a.text  # the same cells: the same reply
    assert b.prompt_tokens_evaluated == b.prompt_tokens - pc2.loaded_tokens < a.prompt_tokens_evaluated / 3
    # the same role's next turn in that process goes on from its context, as before
    c = second.generate(_judge("a 24-year-old man with pain in the right lower abdomen")
                        + [Message("assistant", b.text), Message("user", "And Appendicitis?")], P,
                        CallContext("judge", "c"))
    assert pc2.loads == 1 and c.prompt_tokens_evaluated < 30


@pytest.mark.llama
def test_another_case_loads_the_instructions_it_shares(smol, tmp_path):
    first, _ = _process(smol, tmp_path)
    first.generate(_judge("a 24-year-old man with pain in the right lower abdomen"), P, CallContext("judge", "c"))
    other, pc = _process(smol, tmp_path)
    out = other.generate(_judge("a 67-year-old woman short of breath for two days"), P, CallContext("judge", "d"))
    assert pc.loads == 1 and pc.loaded_tokens >= MIN_TOKENS
    # the rules came from the entry, the case's own words were evaluated
    assert out.prompt_tokens - pc.loaded_tokens < out.prompt_tokens_evaluated < out.prompt_tokens - MIN_TOKENS
    assert pc.saves == 1  # this case's head is its own entry too
    assert len(pc._index(next(p.name for p in tmp_path.iterdir() if p.is_dir()))) == 2  # noqa: SLF001


@pytest.mark.llama
def test_a_broken_entry_is_dropped_and_the_call_goes_on(smol, tmp_path):
    first, _ = _process(smol, tmp_path)
    a = first.generate(_judge("a child with a barking cough"), P, CallContext("judge", "c"))
    for f in tmp_path.rglob("*.state"):
        f.write_bytes(b"not a state")
    second, pc = _process(smol, tmp_path)
    b = second.generate(_judge("a child with a barking cough"), P, CallContext("judge", "c"))
    assert pc.loads == 0 and pc.saves == 1  # dropped, evaluated, written again
    assert b.text == a.text and b.prompt_tokens_evaluated == b.prompt_tokens


@pytest.mark.llama
def test_entries_are_capped_least_recently_used_first_out(smol, tmp_path):
    cases = ("a child with a barking cough", "an old man with a tremor", "a woman with a rash on her cheeks")
    for case in cases[:2]:  # entries A and B, each written by a process of its own
        llm, pc = _process(smol, tmp_path)
        llm.generate(_judge(case), P, CallContext("judge", "c"))
        llm.pool.close()
    ns = next(p.name for p in tmp_path.iterdir() if p.is_dir())
    sizes = [e["bytes"] for e in pc._index(ns).values()]  # noqa: SLF001
    llm, pc = _process(smol, tmp_path)
    llm.generate(_judge(cases[0]), P, CallContext("judge", "c"))  # A used again: B is now the oldest
    assert pc.loads == 1
    llm.pool.close()
    llm, pc = _process(smol, tmp_path, max_bytes=sum(sizes) + max(sizes) // 2)  # room for two
    llm.generate(_judge(cases[2]), P, CallContext("judge", "c"))  # C written: one must go
    kept = [e["tokens"] for e in pc._index(ns).values()]  # noqa: SLF001
    assert pc.saves == 1 and len(kept) == 2 and len(list(tmp_path.rglob("*.state"))) == 2
    prompts = {case: LlamaPool.prompt_tokens(llm.pool.context(llm.path, "judge", 0),
                                             [{"role": m.role, "content": m.content} for m in _judge(case)])
               for case in cases}
    held = {case for case in cases for t in kept if prompts[case][:len(t)] == t}
    assert held == {cases[0], cases[2]}  # B, least recently used, went
    llm, pc = _process(smol, tmp_path, max_bytes=1)
    llm.generate(_judge("a man with a cough"), P, CallContext("judge", "c"))
    assert len(list(tmp_path.rglob("*.state"))) == 1  # a tiny cap keeps only what was just written


@pytest.mark.llama
def test_a_short_head_or_a_single_message_is_not_cached(smol, tmp_path):
    llm, pc = _process(smol, tmp_path)
    llm.generate([Message("system", "Be brief."), Message("user", "Hi.")], P, CallContext("doctor", "c"))
    llm.generate([Message("user", RULES)], P, CallContext("patient", "c"))
    assert pc.saves == 0 and not list(tmp_path.rglob("*.state"))


def test_the_cache_folder_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDSIM_PROMPT_CACHE", "off")
    assert default_prompt_cache() is None
    monkeypatch.setenv("MEDSIM_PROMPT_CACHE", str(tmp_path / "here"))
    assert default_prompt_cache().root == tmp_path / "here"
    monkeypatch.delenv("MEDSIM_PROMPT_CACHE")
    monkeypatch.setenv("MEDSIM_CACHE", str(tmp_path / "medsim"))
    assert default_prompt_cache().root == tmp_path / "medsim" / "prompts"


def test_a_benchmark_pool_has_no_prompt_cache():
    """A warm entry computes the shared tokens in other chunks than a cold run: a
    benchmark's replies must not depend on what ran before it on the machine."""
    from medsim.assemble import pool_for
    from medsim.spec import build_spec

    assert pool_for(build_spec(None, {"llm": "smollm2"})).prompt_cache is None
    assert pool_for(build_spec(None, {"llm": "smollm2", "workers": 2})).prompt_cache is None


@pytest.mark.llama
def test_a_second_medsim_consult_loads_what_the_first_evaluated(smol, tmp_path, monkeypatch):
    from agents.events import read_events
    from medsim.cli import main

    monkeypatch.setenv("MEDSIM_PROMPT_CACHE", str(tmp_path / "cache"))
    greedy = tmp_path / "greedy.toml"  # greedy: the grammar taken lazily, a short test
    greedy.write_text("".join(f"[roles.{r}]\ntemperature = 0.0\n" for r in ("doctor", "judge")), encoding="utf-8")
    evaluated = []
    for run in ("first", "second"):
        log = tmp_path / f"{run}.jsonl"
        assert main(["consult", "--cases", "demo", "--case", "demo-007", "--llm", "smollm2", "--max-turns", "1",
                     "--config", str(greedy), "--log", str(log)]) == 0
        calls = [e for e in read_events(log) if e.get("type") == "llm_call"]
        evaluated.append({e["role"]: e["prompt_tokens_evaluated"] for e in reversed(calls)})  # each role's first
    assert list(tmp_path.joinpath("cache").rglob("*.state"))
    for role in ("doctor", "judge"):
        assert evaluated[1][role] < evaluated[0][role] / 2, (role, evaluated)


@pytest.mark.llama
def test_a_state_file_no_index_names_goes_once_it_is_old(smol, tmp_path):
    """Two processes writing one index at once lose one's entry: its file is removed when
    it is ten minutes old (a younger one may be another process's write in progress)."""
    import os
    import time

    llm, pc = _process(smol, tmp_path)
    llm.generate(_judge("a child with a barking cough"), P, CallContext("judge", "c"))
    folder = next(p for p in tmp_path.iterdir() if p.is_dir())
    old, young = folder / "lost.state", folder / "writing.state"
    for f in (old, young):
        f.write_bytes(b"x")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    llm2, _ = _process(smol, tmp_path)
    llm2.generate(_judge("an old man with a tremor"), P, CallContext("judge", "c"))  # a save: the tidy runs
    assert not old.exists() and young.exists()
