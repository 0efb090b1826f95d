"""Batched decoding for an in-process model: many concurrent calls, one llama.cpp context.

On a CPU, llama.cpp decodes a token of several sequences in one ``llama_decode`` for
little more than the cost of one (the weights are read once per step, not once per
sequence). :class:`BatchedEngine` holds one context with ``n_seq`` sequences (one KV
stream each, ``kv_unified`` off, so a sequence attends over its own cells only) and a
scheduler thread: worker threads submit calls and wait; the scheduler evaluates each new
prompt's new tokens (one ``llama_decode`` per prompt chunk, as the serial path does),
then decodes the next token of every generating sequence in one ``llama_decode`` per step.

A call keeps its prefix: a call that continues a conversation (its prompt covers at
least half of what an idle sequence holds) takes that sequence, so a role's growing
conversation is found in its own sequence and only the new tokens are evaluated, as with
:class:`~agents.llm.llamacpp.LlamaCppLLM`'s per-role contexts. A new conversation takes
the least recently used idle sequence (an empty one first) instead of the one sharing the
longest prefix: that one is usually another case's live conversation of the same role,
sharing its system prompt's opening, and taking it would make that case re-evaluate its
whole conversation on its next turn (and take yet another's). What it shares with any
sequence, idle or busy (a system prompt common to every case: the judge's, the
technician's, the patient's opening), is copied from that sequence's KV cells
(``llama_memory_seq_cp``) instead of evaluated, when it is at least :data:`MIN_SHARE`
tokens longer than what the sequence taken already shares. The llama.cpp of
llama-cpp-python 0.3.16 copies between streams (``kv_unified`` off) whole streams only
(a part aborts the process: ``GGML_ASSERT(is_full)``), so the whole stream is copied
(a memory copy of ``n_ctx_seq`` cells at the next decode, some 115 MB for Qwen2.5-1.5B at
4096 cells) and the cells past the shared prefix are removed
(``llama_memory_seq_rm``). The copied cells give the logits of the cells they were copied
from (checked with SmolLM2: the same greedy text as the serial path,
``tests/agents/test_batched_wiring.py``). ``share=False`` is the placement without
copies: the idle sequence sharing the longest prefix (least recently used on a tie).

Same text as the serial path: the prompt, stop strings, ``max_tokens`` clipping, the
sampler chain (penalties, grammar, greedy or top-k/top-p/min-p/temperature with the
call's seed) and the finish rules are those of llama-cpp-python 0.3.16's
``create_chat_completion``: the chat handler is run on a loaded ``Llama`` whose
``create_completion`` is shadowed to capture its arguments (nothing is evaluated there),
and each sequence's sampler is built by that ``Llama``'s own ``_init_sampler``. A JSON
schema therefore works here too (llama.cpp's grammar sampler in the chain). What can
differ is float rounding: a token's logits come from a batch of other rows (and, for a
prompt chunk, llama.cpp may pick another matrix kernel), which can move a near tie;
``tests/agents/test_batched.py`` checks equal text at temperature 0 with SmolLM2 (Q4_1).
With the embedded Qwen2.5-1.5B (Q4_K_M), one sequence at a time gives the serial text,
but 4 or 16 at once changed 3 and 6 of 16 greedy replies after a few identical words
(``benchmarks/batched_decode.py``): the logits of a row depend a little on the batch.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from agents.llm.base import GenerateParams, LLMError, Message, Output, text_message
from agents.llm.drafts import Drafter, GrammarProbe
from agents.llm.llama_models import ModelStore, captured_completion, common_prefix, sampling_args
from agents.llm.native_log import quiet_native

__all__ = ["BatchedEngine", "batch_shape", "KV_CELLS", "MIN_SHARE", "DRAFT_ROWS"]

# the fewest tokens a KV copy must save over what the sequence taken already holds: a copy
# moves a whole stream (n_ctx_seq cells) in memory, which is cheap next to evaluating tokens
# on a CPU, but not free
MIN_SHARE = 16

# the most rows a decode step gets by adding drafts (jump-forward; agents.llm.drafts). A
# drafted row costs about a third of a step of one row on a CPU (its logits, mostly), so
# drafts pay only in a step of one generating sequence: with two or more, the step's rows
# already cost what the rows of a draft would, and a refused draft's rows are paid in full
DRAFT_ROWS = 16


@dataclass
class _Request:
    prompt: list[int]
    sampler: Any  # llama_cpp._internals.LlamaSampler: the chain, without the grammar
    grammar: Any  # the grammar sampler (llama_sampler_p) checked after the chain, or None
    max_tokens: int
    stops: list[bytes]
    criteria: Any  # the chat format's stopping criteria (llama-cpp-python's), or None
    timeout_s: float
    done: threading.Event = field(default_factory=threading.Event)
    completion: list[int] = field(default_factory=list)
    text: bytes = b""
    finish_reason: str = "length"
    evaluated: int = 0
    started: float = 0.0
    deadline: float = 0.0
    latency_s: float = 0.0
    multibyte_fix: int = 0
    error: LLMError | None = None
    drafter: Drafter | None = None
    drafted: int = 0  # completion tokens sampled at a drafted row (no decode of their own)

    def close(self) -> None:
        self.sampler.close()
        if self.grammar is not None:
            import llama_cpp

            llama_cpp.llama_sampler_free(self.grammar)
            self.grammar = None


@dataclass
class _Seq:
    seq_id: int
    tokens: list[int] = field(default_factory=list)  # what this sequence's KV cells hold, in order
    request: _Request | None = None
    pending: list[int] = field(default_factory=list)  # tokens to evaluate next
    draft: list[int] = field(default_factory=list)  # drafted tokens evaluated after pending's one
    last_used: int = 0


class BatchedEngine:
    """One model file, one llama.cpp context of ``n_seq`` sequences of ``n_ctx_seq``
    tokens each, and the scheduler thread that decodes them together.

    ``generate`` is called from any thread and blocks until its reply is done. The model
    is loaded on construction (call it lazily); :meth:`close` stops the thread and frees
    the context."""

    def __init__(self, path: str | Path, *, n_seq: int, n_ctx_seq: int = 4096, n_threads: int = 1,
                 n_batch: int = 256, seed: int = 0, name: str | None = None, share: bool = True,
                 models: ModelStore | None = None, jump_forward: bool = True):
        try:
            import llama_cpp
        except ImportError as e:  # pragma: no cover - depends on the install
            raise LLMError(f"llama-cpp-python is not installed: {e}", backend="llama.cpp", transient=False) from e
        if n_seq < 1:
            raise ValueError(f"n_seq must be >= 1, got {n_seq}")
        self.path = str(Path(path).expanduser().resolve())
        if not Path(self.path).is_file():
            raise LLMError(f"model file not found: {self.path}", backend="llama.cpp", transient=False)
        self.name = name or f"gguf:{Path(self.path).name}"
        self.n_seq, self.n_batch, self.share = n_seq, n_batch, share
        self.n_ctx_seq = -(-n_ctx_seq // 256) * 256  # llama.cpp pads a stream to 256 cells
        self._lc = llama_cpp
        # The loaded model (the store's: one per file, shared with the pool's other
        # contexts), its tokenizer, chat format and sampler factory; its own context is tiny
        # and never decodes.
        self._own_models = models is None
        self._models = ModelStore() if models is None else models
        try:
            self._fmt = self._models.llama(self.path, n_ctx=256, n_batch=256, n_threads=n_threads, seed=seed,
                                           verbose=False)
        except (ValueError, RuntimeError) as e:
            raise LLMError(f"cannot load {self.path}: {e}", backend=self.name, transient=False) from e
        self._fmt_lock = threading.Lock()  # the capture shadows a method of, and _init_sampler seeds, _fmt
        cp = llama_cpp.llama_context_default_params()
        cp.n_ctx = self.n_ctx_seq * n_seq
        cp.n_batch = max(n_batch, n_seq)
        cp.n_ubatch = min(cp.n_batch, 512)
        cp.n_seq_max = n_seq
        cp.n_threads = cp.n_threads_batch = n_threads
        cp.kv_unified = False  # one KV stream per sequence: attention over its own cells only
        cp.flash_attn = self._fmt.context_params.flash_attn  # as the serial path's contexts
        cp.offload_kqv = self._fmt.context_params.offload_kqv
        with quiet_native():
            self._ctx = llama_cpp.llama_init_from_model(self._fmt._model.model, cp)
        if not self._ctx:
            raise LLMError(f"cannot create a context of {n_seq} sequences x {self.n_ctx_seq} tokens",
                           backend=self.name, transient=False)
        self._mem = llama_cpp.llama_get_memory(self._ctx)
        self._vocab = self._fmt._model.vocab
        self._batch = llama_cpp.llama_batch_init(cp.n_batch, 0, 1)
        self.grammar_resamples = 0  # tokens the chain chose and the grammar refused (resampled)
        self.jump_forward = jump_forward
        self._probe = GrammarProbe(llama_cpp, self._vocab,
                                   lambda b: self._fmt.tokenize(b, add_bos=False, special=False))
        self._max_rows = cp.n_batch  # the llama_batch's capacity
        self._seqs = [_Seq(i) for i in range(n_seq)]
        self._queue: list[_Request] = []
        self._cv = threading.Condition()
        self._closed = False
        self._broken: str | None = None
        self._clock = 0
        self.steps = 0  # decode steps (one llama_decode over every generating sequence)
        self.step_tokens = 0  # tokens decoded in those steps
        self.copies = 0  # KV copies of a shared prefix from another sequence
        self.copied_tokens = 0  # prompt tokens those copies saved evaluating
        self.drafted_rows = 0  # drafted tokens evaluated in steps
        self.drafted_kept = 0  # of those, the ones the sampler picked
        self._thread = threading.Thread(target=self._run, name=f"batched:{Path(self.path).name}", daemon=True)
        self._thread.start()

    # -- the caller's side -------------------------------------------------------------

    def generate(self, messages: Sequence[Message], params: GenerateParams, *, label: str | None = None) -> Output:
        req = self._request(messages, params)
        with self._cv:
            if self._closed or self._broken:
                req.close()
                raise LLMError(self._broken or "the batched engine is closed", backend=label or self.name,
                               transient=False)
            self._queue.append(req)
            self._cv.notify_all()
        req.done.wait()
        req.close()
        if req.error is not None:
            raise LLMError(str(req.error).split("] ", 1)[-1], backend=label or self.name,
                           transient=req.error.transient)
        return Output(
            text=req.text.decode("utf-8", errors="ignore"),
            model=label or self.name,
            prompt_tokens=len(req.prompt),
            prompt_tokens_evaluated=req.evaluated,
            completion_tokens=len(req.completion),
            drafted_tokens=req.drafted,
            latency_s=req.latency_s,
            finish_reason=req.finish_reason,
            note=("" if not any(m.images for m in messages)
                  else "this model has no image projector: the images were not sent, the text went alone"),
        )

    def _request(self, messages: Sequence[Message], params: GenerateParams) -> _Request:
        """The serial path's call, down to the tokens and the sampler, without decoding."""
        llm = self._fmt
        with self._fmt_lock:
            try:
                got = captured_completion(llm, messages=[text_message(m) for m in messages], **sampling_args(params))
            except ValueError as e:
                raise LLMError(str(e), backend=self.name, transient=False) from e
            if not got:
                raise LLMError("the chat handler did not call create_completion", backend=self.name, transient=False)
            if got.get("logits_processor") is not None or got.get("logit_bias") or got.get("mirostat_mode"):
                raise LLMError("logits processors, logit bias and mirostat are not batched", backend=self.name,
                               transient=False)
            prompt = list(got["prompt"])
            # _create_completion's checks and clipping, against one sequence's context
            if len(prompt) >= self.n_ctx_seq:
                raise LLMError(f"Requested tokens ({len(prompt)}) exceed context window of {self.n_ctx_seq}",
                               backend=self.name, transient=False)
            max_tokens = got.get("max_tokens")
            if max_tokens is None or max_tokens <= 0:
                max_tokens = self.n_ctx_seq - len(prompt)
            max_tokens = min(max_tokens, self.n_ctx_seq - len(prompt))
            stop = got.get("stop") or []
            stop = stop if isinstance(stop, list) else [stop]
            llm.set_seed(got["seed"] if got.get("seed") is not None else params.seed)
            sampler = llm._init_sampler(
                top_k=got["top_k"], top_p=got["top_p"], min_p=got["min_p"], typical_p=got["typical_p"],
                temp=got["temperature"], repeat_penalty=got["repeat_penalty"],
                frequency_penalty=got["frequency_penalty"], presence_penalty=got["presence_penalty"],
                tfs_z=got["tfs_z"], grammar=None)
            g = got.get("grammar")
            grammar = None if g is None else self._lc.llama_sampler_init_grammar(
                self._vocab, g._grammar.encode("utf-8"), g._root.encode("utf-8"))
        req = _Request(prompt=prompt, sampler=sampler, grammar=grammar, max_tokens=max_tokens,
                       stops=[s.encode("utf-8") for s in stop], criteria=got.get("stopping_criteria"),
                       timeout_s=params.timeout_s)
        if self.jump_forward:
            req.drafter = Drafter(self._probe, lambda: req.grammar)
        return req

    def close(self) -> None:
        with self._cv:
            if self._closed:
                return
            self._closed = True
            self._cv.notify_all()
        self._thread.join()
        self._lc.llama_batch_free(self._batch)
        self._lc.llama_free(self._ctx)
        self._ctx = None
        self._fmt.close()  # its context; the model is the store's
        if self._own_models:
            self._models.close()

    # -- the scheduler's side ----------------------------------------------------------

    def _run(self) -> None:
        try:
            while True:
                with self._cv:
                    while not self._closed and not self._queue and not self._active():
                        self._cv.wait()
                    if self._closed:
                        self._fail_all("the batched engine was closed")
                        return
                    self._admit()
                for s in [s for s in self._seqs if s.request is not None and len(s.pending) > 1]:
                    self._prompt_chunk(s)  # one chunk per prompt per round: generation goes on meanwhile
                gen = [s for s in self._seqs if s.request is not None and len(s.pending) == 1]
                if gen:
                    self._step(gen)
        except BaseException as e:  # noqa: BLE001 - the thread must not die with callers waiting
            with self._cv:
                self._broken = f"the batched engine stopped: {type(e).__name__}: {e}"
                self._fail_all(self._broken)
            raise

    def _active(self) -> bool:
        return any(s.request is not None for s in self._seqs)

    def _fail_all(self, why: str) -> None:
        for r in self._queue:
            r.error = LLMError(why, backend=self.name, transient=False)
            r.done.set()
        self._queue.clear()
        for s in self._seqs:
            if s.request is not None:
                s.request.error = LLMError(why, backend=self.name, transient=False)
                s.request.done.set()
                s.request = None

    def _admit(self) -> None:
        """Queued requests -> idle sequences (:meth:`_place`); the rest wait for a
        sequence to finish."""
        while self._queue:
            idle = [s for s in self._seqs if s.request is None]
            if not idle:
                return
            req = self._queue.pop(0)
            head = req.prompt[:-1]  # as Llama.generate: at least one token is evaluated
            s, keep, donor = self._place(idle, head)
            if donor is not None:
                # a cross-stream copy is of the whole stream (a part aborts llama.cpp); it is
                # done at the next llama_decode, before that batch's cells are written, so a
                # busy donor's new tokens are not in it
                self._lc.llama_memory_seq_cp(self._mem, donor.seq_id, s.seq_id, -1, -1)
                self.copies += 1
                self.copied_tokens += keep - common_prefix(s.tokens, head)
                s.tokens = donor.tokens[:keep]
            self._lc.llama_memory_seq_rm(self._mem, s.seq_id, keep, -1)
            del s.tokens[keep:]
            s.pending = req.prompt[keep:]
            req.evaluated = len(s.pending)
            self._clock += 1
            s.last_used = self._clock
            s.request = req
            req.started = time.perf_counter()
            req.deadline = time.monotonic() + req.timeout_s

    def _place(self, idle: Sequence[_Seq], head: Sequence[int]) -> tuple[_Seq, int, _Seq | None]:
        """The sequence a prompt (less its last token) goes to, the prefix it keeps, and
        the sequence to copy that prefix from (None: its own cells hold it)."""
        shared = {s.seq_id: common_prefix(s.tokens, head) for s in self._seqs}
        best = max(idle, key=lambda s: (shared[s.seq_id], -s.last_used))
        if not self.share or (shared[best.seq_id] > 0 and 2 * shared[best.seq_id] >= len(best.tokens)):
            return best, shared[best.seq_id], None  # its own conversation, continued (or no sharing)
        # a new conversation: the sequence least likely to be wanted again
        s = min(idle, key=lambda s: (len(s.tokens) > 0, s.last_used))
        donor = max((d for d in self._seqs if d is not s), key=lambda d: shared[d.seq_id], default=None)
        if donor is not None and shared[donor.seq_id] >= shared[s.seq_id] + MIN_SHARE:
            return s, shared[donor.seq_id], donor
        return s, shared[s.seq_id], None

    def _fill(self, items: Sequence[tuple[int, int, int, bool]]) -> None:
        b = self._batch
        for i, (token, pos, seq, logits) in enumerate(items):
            b.token[i] = token
            b.pos[i] = pos
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = seq
            b.logits[i] = 1 if logits else 0
        b.n_tokens = len(items)

    def _decode(self, seqs: Sequence[_Seq]) -> bool:
        rc = self._lc.llama_decode(self._ctx, self._batch)
        if rc == 0:
            return True
        why = f"llama_decode failed ({rc}{': no room in the KV cache' if rc == 1 else ''})"
        for s in seqs:
            self._finish(s, LLMError(why, backend=self.name, transient=False))
            # the sequence's cells are unknown after a failed decode: start it afresh
            self._lc.llama_memory_seq_rm(self._mem, s.seq_id, -1, -1)
            s.tokens.clear()
        return False

    def _prompt_chunk(self, s: _Seq) -> None:
        chunk = s.pending[:self.n_batch]
        last = len(chunk) == len(s.pending)
        n0 = len(s.tokens)
        self._fill([(t, n0 + i, s.seq_id, last and i == len(chunk) - 1) for i, t in enumerate(chunk)])
        if not self._decode([s]):
            return
        s.tokens.extend(chunk)
        del s.pending[:len(chunk)]
        if last:
            self._sample(s, len(chunk) - 1)

    def _step(self, seqs: Sequence[_Seq]) -> None:
        """One decode of every generating sequence's next token and, with jump-forward,
        its draft (:meth:`_drafts`); the sampler then reads each sequence's rows in turn
        and keeps the draft as far as it picks the drafted token."""
        self._drafts(seqs)
        items, rows = [], []
        for s in seqs:
            n0 = len(s.tokens)
            rows.append((s, len(items), [s.pending[0], *s.draft]))
            items += [(t, n0 + i, s.seq_id, True) for i, t in enumerate([s.pending[0], *s.draft])]
        self._fill(items)
        if not self._decode(seqs):
            return
        self.steps += 1
        self.step_tokens += len(seqs)
        self.drafted_rows += len(items) - len(seqs)
        for s, idx, toks in rows:
            n0 = len(s.tokens)
            s.pending = []
            s.tokens.extend(toks)
            s.draft = []
            for j in range(len(toks)):
                req = s.request
                if j:
                    req.drafted += 1
                    self.drafted_kept += 1
                self._sample(s, idx + j, upto=n0 + j + 1)
                if s.request is None:
                    break  # finished (its cells past the reply hold tokens of it: consistent)
                if j + 1 < len(toks) and s.pending != [toks[j + 1]]:
                    # the draft is refused from row j+1: its cells go, the sampled token is next
                    self._lc.llama_memory_seq_rm(self._mem, s.seq_id, n0 + j + 1, -1)
                    del s.tokens[n0 + j + 1:]
                    break
                if j + 1 < len(toks):
                    s.pending = []  # the drafted token is already in its cell
            # all kept: pending holds the token sampled at the last row

    def _drafts(self, seqs: Sequence[_Seq]) -> None:
        """The draft of a step's one generating sequence (its request's drafter, over the
        prompt and the reply so far), within :data:`DRAFT_ROWS` rows and the batch's and
        the sequence's room; with several generating, none."""
        for s in seqs:
            s.draft = []
        if len(seqs) != 1:
            return
        room = min(self._max_rows, DRAFT_ROWS) - 1
        for s in seqs:
            req = s.request
            if req is None or req.drafter is None or room <= 0 or req.multibyte_fix:
                continue
            left = min(room, self.n_ctx_seq - len(s.tokens) - 1, req.max_tokens - len(req.completion))
            if left <= 0:
                continue
            s.draft = req.drafter.draft([*s.tokens, s.pending[0]])[:left]
            room -= len(s.draft)

    def _sample(self, s: _Seq, idx: int, upto: int | None = None) -> None:
        """Llama.generate's and Llama._create_completion's rules for one sampled token;
        ``upto``: how many of the sequence's tokens precede it (all, by default)."""
        req = s.request
        assert req is not None
        if req.grammar is None:
            token = self._lc.llama_sampler_sample(req.sampler.sampler, self._ctx, idx)
        else:  # the grammar applied lazily, as the serial path does (GrammarProbe.pick)
            token, refused = self._probe.pick(self._ctx, idx, req.sampler.sampler, req.grammar)
            self.grammar_resamples += refused
            self._lc.llama_sampler_accept(req.grammar, token)
        if req.criteria is not None:
            if req.criteria(np.asarray(s.tokens[:upto], dtype=np.intc), None):
                req.text = self._fmt.detokenize(req.completion)
                req.finish_reason = "stop"
                return self._finish(s)
        if time.monotonic() >= req.deadline:
            return self._finish(s, LLMError(
                f"timeout of {req.timeout_s} s hit: generation stopped after "
                f"{time.perf_counter() - req.started:.2f} s and {len(req.completion)} tokens, reply incomplete",
                backend=self.name))
        if self._lc.llama_vocab_is_eog(self._vocab, token):
            req.text = self._fmt.detokenize(req.completion)
            req.finish_reason = "stop"
            return self._finish(s)
        req.completion.append(token)
        all_text = self._fmt.detokenize(req.completion)
        for k, char in enumerate(all_text[-3:]):  # an incomplete UTF-8 character: wait for its end
            k = 3 - k
            for num, pattern in [(2, 192), (3, 224), (4, 240)]:
                if num > k and pattern & char == pattern:
                    req.multibyte_fix = num - k
        if req.multibyte_fix > 0:
            req.multibyte_fix -= 1
            s.pending = [token]
            return None
        hits = [x for x in req.stops if x in all_text]
        if hits:
            req.text = all_text[:all_text.index(hits[0])]
            req.finish_reason = "stop"
            return self._finish(s)
        if len(req.completion) >= req.max_tokens:
            req.text = all_text
            req.finish_reason = "length"
            return self._finish(s)
        s.pending = [token]
        return None

    def _finish(self, s: _Seq, error: LLMError | None = None) -> None:
        req = s.request
        assert req is not None
        req.error = error
        req.latency_s = time.perf_counter() - req.started
        s.request = None
        s.pending = []
        req.done.set()



KV_CELLS = 65536  # all sequences' KV cells together (Qwen2.5-1.5B f16: 28 KB a cell, so 1.8 GB)


def batch_shape(workers: int, roles: int, n_ctx: int) -> tuple[int, int]:
    """``(n_seq, n_ctx_seq)`` for ``workers`` cases at once, each calling ``roles`` roles of
    one model: a sequence per (case, role), so each role's conversation keeps its prefix
    (at most 64), of ``n_ctx`` tokens where :data:`KV_CELLS` allows, never below 2048."""
    n_seq = max(1, min(64, workers * roles))
    return n_seq, max(2048, min(n_ctx, KV_CELLS // n_seq // 256 * 256))
