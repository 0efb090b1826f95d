"""Drafts for jump-forward decoding of an in-process model.

A reply is decoded one token per ``llama_decode``, and on a CPU a step reads every weight
whatever the number of rows in it: for the embedded Qwen2.5-1.5B Q4_K_M on 2 cores a step
of one row costs ~80 ms and each further row ~28 ms (most of it the row's logits over a
vocabulary of 152k tokens). A :class:`Drafter` proposes the tokens a reply is likely to
continue with; the decoder evaluates the token just sampled and the draft in one step,
with logits at every row, and keeps the draft only as far as the call's own sampler (its
chain, the grammar in it, its seed) picks the drafted token at each row. A reply is
therefore the one the sampler picks token by token; what can differ is float rounding,
since a row's logits in a step of several rows differ a little from the same row decoded
alone (``tests/agents/test_jump_forward.py`` checks that replies differ only at near ties).

A kept drafted token saves ~50 ms and a refused one costs ~28 ms, so drafts are short,
and most often right in replies under a grammar (a JSON schema).
Where a draft comes from, in order:

1. **prompt lookup**: what followed the last two or three tokens the last time they
   occurred in the context (prompt and reply so far), at most :data:`MAX_DRAFT` tokens,
   cut at the first token the grammar refuses (a check of that one token on a copy of the
   grammar). A structured reply repeats the keys of the prompt's example and of the
   role's earlier replies; a test's name is in the hospital's list.
2. **the grammar**: where the grammar allows exactly one next character (a key, the
   punctuation between keys, the rest of an enum value once it is unique), those
   characters, tokenized, at most :data:`MAX_FORCED` tokens. Each character is found by
   asking a copy of the grammar which single-character token it accepts (printable ASCII):
   where two or more are allowed (a free string, an optional space) or the reply may end,
   the forced text ends.

Free text (no grammar) gets a lookup draft only from a match of :data:`FREE_MATCH` tokens,
and none for a while after a draft of which nothing was kept (:meth:`Drafter._free`): a
technician copying its records keeps many (its calls took 0.84 of plain decoding's time
replaying 6 logged bench consultations), a patient talking refuses most and then stops
paying for them (0.96; with every lookup drafted and no wait, the patient's replies took
up to 1.29). ``benchmarks/jump_forward.py`` prints the figures.
"""
from __future__ import annotations

import ctypes
from typing import Any, Sequence

import numpy as np

from agents.llm.llama_models import common_prefix

__all__ = ["Drafter", "FREE_MATCH", "GrammarProbe", "Lookup", "MAX_DRAFT", "MAX_FORCED", "MIN_MATCH"]

MAX_DRAFT = 3  # tokens a lookup draft may hold: a longer one costs more when it is refused early
MIN_MATCH = 2  # the fewest last tokens a lookup must match (one shared token predicts poorly)
FREE_MATCH = 3  # ... in free text, where two shared tokens predict the next ones more poorly still
MAX_FORCED = 15  # tokens of text the grammar forces (refused only where the model splits it otherwise);
# with the token sampled, a step of 16 rows, the batched engine's DRAFT_ROWS: the serial
# path and one sequence of the engine then make the same steps
_NGRAM = 3  # the longest run of last tokens looked up


class Lookup:
    """An index of every run of 1 to :data:`_NGRAM` tokens of a growing token list to
    where it last ended, for :meth:`propose`."""

    def __init__(self, tokens: Sequence[int] = ()):
        self.tokens: list[int] = []
        self._last: dict[tuple[int, ...], int] = {}
        self.extend(tokens)

    def extend(self, tokens: Sequence[int]) -> None:
        for t in tokens:
            i = len(self.tokens)  # the new token's index: the runs ending just before it now have a continuation
            for n in range(1, min(_NGRAM, i) + 1):
                self._last[tuple(self.tokens[i - n:i])] = i
            self.tokens.append(int(t))

    def propose(self, k: int, min_match: int = 1) -> list[int]:
        """Up to ``k`` tokens that followed the longest run (of at least ``min_match``)
        of the last tokens at its most recent earlier occurrence."""
        toks = self.tokens
        for n in range(min(_NGRAM, len(toks)), min_match - 1, -1):
            at = self._last.get(tuple(toks[len(toks) - n:]), -1)
            if at >= 0:
                return toks[at:at + k]
        return []


class GrammarProbe:
    """Questions to a llama.cpp grammar sampler, asked of copies so the sampler itself is
    untouched: which of a draft's tokens it accepts in turn, and what text it forces."""

    def __init__(self, llama_cpp: Any, vocab: Any, tokenize: Any):
        """``vocab``: the model's ``llama_vocab`` pointer; ``tokenize``: bytes -> token ids
        (no BOS, special tokens as text)."""
        self._lc = llama_cpp
        self._vocab = vocab
        self._tokenize = tokenize
        self._eos = int(llama_cpp.llama_vocab_eos(vocab))
        dt = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)
        self._one = np.zeros(1, dtype=dt)
        self._arr = llama_cpp.llama_token_data_array(
            data=self._one.ctypes.data_as(llama_cpp.llama_token_data_p), size=1, selected=-1, sorted=False)
        self._cand: Any = None  # the whole vocabulary's candidates, for pick's second pass
        self._cand_arr: Any = None
        self._ids: Any = None
        self._chars: list[tuple[str, int]] = []  # printable ASCII characters that are one token each
        for code in range(32, 127):
            ids = tokenize(chr(code).encode("utf-8"))
            if len(ids) == 1:
                self._chars.append((chr(code), int(ids[0])))

    def pick(self, ctx: Any, idx: int, chain: Any, grammar: Any) -> tuple[int, bool]:
        """A token for row ``idx`` of ``ctx``'s logits by ``chain`` (a sampler chain with
        no grammar: penalties, then greedy or top-k/p, min-p, temperature and the seeded
        draw), with ``grammar`` applied lazily, as llama.cpp's common sampler does: the
        token the chain picks from the whole vocabulary is kept if the grammar allows it
        (a check of one token); only when it does not is the grammar applied to every
        token (some 150k for Qwen: ~15 ms on a CPU core, which every token paid when the
        grammar came first in the chain) and the chain run again on what it left.

        Greedy, the token is the one the grammar-first chain picks (the first of the
        highest logits the grammar allows). Sampled, a kept token is drawn from the
        chain's distribution over all tokens and a refused one is drawn again from the
        grammar's share of it: another order than grammar-first, so a seed draws other
        tokens, and the same order as the batched engine's. Returns ``(token, whether
        the grammar refused the first pick)``; the caller accepts the token into the
        grammar (the chain has seen it)."""
        lc = self._lc
        token = int(lc.llama_sampler_sample(chain, ctx, idx))
        if self.allows(grammar, token):
            return token, False
        if self._cand is None:
            n = int(lc.llama_vocab_n_tokens(self._vocab))
            self._ids = np.arange(n, dtype=np.intc)
            self._cand = np.zeros(n, dtype=self._one.dtype)
            self._cand_arr = lc.llama_token_data_array(
                data=self._cand.ctypes.data_as(lc.llama_token_data_p), size=n, selected=-1, sorted=False)
        cand, arr = self._cand, self._cand_arr
        n = len(cand)
        cand["id"] = self._ids  # again each time: a sampler sorts the array in place
        cand["logit"] = np.ctypeslib.as_array(lc.llama_get_logits_ith(ctx, idx), shape=(n,))
        cand["p"] = 0.0
        arr.data = cand.ctypes.data_as(lc.llama_token_data_p)
        arr.size, arr.selected, arr.sorted = n, -1, False
        lc.llama_sampler_apply(grammar, ctypes.byref(arr))
        lc.llama_sampler_apply(chain, ctypes.byref(arr))
        return int(arr.data[arr.selected].id), True  # through the array's pointer: a sampler may have moved it

    def allows(self, grammar: Any, token: int) -> bool:
        """Whether ``grammar`` (in its current state) accepts ``token`` next."""
        self._one[0] = (token, 0.0, 0.0)
        self._arr.size, self._arr.selected, self._arr.sorted = 1, -1, False
        self._lc.llama_sampler_apply(grammar, ctypes.byref(self._arr))
        return bool(self._one[0]["logit"] != float("-inf"))

    def accepted(self, grammar: Any, draft: Sequence[int]) -> list[int]:
        """The draft's tokens up to the first one the grammar refuses (or an end of
        generation: nothing after it is decoded)."""
        g = self._lc.llama_sampler_clone(grammar)
        out: list[int] = []
        try:
            for t in draft:
                if self._lc.llama_vocab_is_eog(self._vocab, t) or not self.allows(g, t):
                    break
                out.append(int(t))
                self._lc.llama_sampler_accept(g, t)
        finally:
            self._lc.llama_sampler_free(g)
        return out

    def before_end(self, draft: Sequence[int]) -> list[int]:
        """A draft's tokens up to the first end of generation (nothing after it is decoded)."""
        out = []
        for t in draft:
            if self._lc.llama_vocab_is_eog(self._vocab, t):
                break
            out.append(int(t))
        return out

    def forced(self, grammar: Any, limit: int = 4 * MAX_FORCED) -> str:
        """The characters the grammar allows as the only continuation, at most ``limit``."""
        g = self._lc.llama_sampler_clone(grammar)
        text = ""
        try:
            while len(text) < limit:
                if self.allows(g, self._eos):  # the reply may end here
                    break
                ok = [(c, t) for c, t in self._chars if self.allows(g, t)]
                if len(ok) != 1:
                    break
                text += ok[0][0]
                self._lc.llama_sampler_accept(g, ok[0][1])
        finally:
            self._lc.llama_sampler_free(g)
        return text

    def forced_tokens(self, grammar: Any, k: int) -> list[int]:
        text = self.forced(grammar)
        return self.accepted(grammar, self._tokenize(text.encode("utf-8"))[:k]) if text else []


class Drafter:
    """The draft source of one call: ``drafter(context) -> tokens``, where ``context`` is
    the prompt and the reply so far (the last token sampled included) and ``grammar`` (a
    callable returning the call's grammar sampler in its current state, or None) is asked
    at each draft; a call without a grammar gets no draft. ``proposed`` counts the tokens
    drafted (the decoder counts what it kept)."""

    def __init__(self, probe: GrammarProbe | None, grammar: Any = None, *, max_draft: int = MAX_DRAFT,
                 min_match: int = MIN_MATCH, max_forced: int = MAX_FORCED):
        self.probe = probe
        self.grammar = grammar
        self.max_draft = max_draft
        self.min_match = min_match
        self.max_forced = max_forced
        self._lookup: Lookup | None = None
        self.proposed = 0
        self._last: tuple[int, list[int]] | None = None  # a free-text draft: where it went, what it was
        self._wait = 0  # free-text drafts to skip
        self._backoff = 0  # the last wait after a refused free-text draft

    def __call__(self, context: Sequence[int]) -> np.ndarray:
        return np.asarray(self.draft(context), dtype=np.intc)

    def draft(self, context: Sequence[int]) -> list[int]:
        if self.probe is None:
            return []
        g = self.grammar() if self.grammar is not None else None
        known = self._lookup.tokens if self._lookup is not None else []
        if not known or len(context) < len(known) or int(context[len(known) - 1]) != known[-1]:
            self._lookup = Lookup(context)  # a new context (the first draft of a call)
            self._last, self._wait, self._backoff = None, 0, 0
        else:
            self._lookup.extend(context[len(known):])
        if g is None:
            return self._free(context)
        out = self.probe.accepted(g, self._lookup.propose(self.max_draft, min_match=self.min_match))
        if not out:
            out = self.probe.forced_tokens(g, self.max_forced)
        self.proposed += len(out)
        return out

    def _free(self, context: Sequence[int]) -> list[int]:
        """A free-text reply's draft: a lookup of at least :data:`FREE_MATCH` tokens, cut
        at an end of generation, and none for a while after a draft of which nothing was
        kept (the wait doubles, from 4 to 32 drafts, while they keep failing). Copying
        text from the prompt (a technician's records) keeps nearly every draft; talking
        (a patient's reply) refuses most, and then stops paying for them."""
        if self._last is not None:
            at, prev = self._last
            self._last = None
            if common_prefix([int(t) for t in context[at:at + len(prev)]], prev) == 0:
                self._backoff = min(32, max(4, 2 * self._backoff))
                self._wait = self._backoff
            else:
                self._backoff = 0
        if self._wait > 0:
            self._wait -= 1
            return []
        out = self.probe.before_end(self._lookup.propose(self.max_draft, min_match=FREE_MATCH))
        if out:
            self._last = (len(context), out)
        self.proposed += len(out)
        return out
