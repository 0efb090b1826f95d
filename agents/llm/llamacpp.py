"""llama.cpp in process (llama-cpp-python).

One model file may serve several roles. The file is loaded once per pool (its
:class:`~agents.llm.llama_models.ModelStore`), and each role gets its own llama.cpp context
over that one model, so that its conversation stays prefix-stable and the KV cache is
reused from turn to turn (only the new tokens are evaluated); all calls to one model file
are serialised by one lock, since a loaded model is not thread-safe. Contexts are created
lazily and kept by the :class:`LlamaPool`, which the CLI creates once per run. A pool
given several sequences for a file (``n_seq``, or ``shapes`` per file) decodes that file's concurrent calls together
instead (:mod:`agents.llm.batched`; ``medsim bench --workers N`` with an in-process model,
unless ``--no-batched``; built by :func:`medsim.assemble.pool_for`).
"""
from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from agents.llm import progress
from agents.llm.drafts import Drafter, GrammarProbe
from agents.llm.llama_models import ModelStore, captured_completion, common_prefix, sampling_args
from agents.llm.prompt_cache import PromptCache
from agents.llm.base import chat_message, text_message, CallContext, GenerateParams, LLMError, Message, Output

__all__ = ["LlamaPool", "LlamaCppLLM"]


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: ``taskset``, a container's
    cpuset), not every core of the machine: more llama.cpp threads than cores wait at
    every barrier, and two runs pinned to a core each would otherwise thrash."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


class LlamaPool:
    """Owns loaded llama.cpp contexts: one per (model file, role), over one loaded model per
    file (``models``), and one lock per file."""

    def __init__(self, *, n_ctx: int = 4096, n_threads: int | None = None, n_batch: int = 256, n_seq: int = 1,
                 shapes: Mapping[str, tuple[int, int]] | None = None, slots: int = 1, jump_forward: bool = True,
                 prompt_cache: PromptCache | None = None):
        self.n_ctx = n_ctx
        # the heads of prompts (a role's system message) kept on disk across processes
        # (agents.llm.prompt_cache): consult and play pass one, a benchmark does not
        self.prompt_cache = prompt_cache
        self._namespaces: dict[str, str] = {}
        # drafts evaluated with the token just sampled and kept as far as the sampler agrees
        # (agents.llm.drafts): several tokens of a structured reply per llama_decode
        self.jump_forward = jump_forward
        self._probes: dict[str, GrammarProbe] = {}
        # contexts a role may have (LlamaCppLLM's per_role), each holding one conversation's
        # cache: the live hospital, with a consultation per doctor in flight, asks for one per
        # doctor; a batch of cases one after another keeps one, where the next case's prompt
        # finds the system prompt it shares with the last case's conversation
        self.slots = max(1, slots)
        self.n_threads = n_threads or usable_cores()
        self.n_batch = n_batch
        # n_seq > 1: per_role calls of all threads decode together in one context of n_seq
        # sequences of n_ctx tokens per model file (agents.llm.batched); 1: serial, as above
        self.n_seq = n_seq
        # per model file (its resolved path): (n_seq, n_ctx per sequence), over n_seq and n_ctx
        self.shapes = {str(Path(p).expanduser().resolve()): (int(n), int(c)) for p, (n, c) in (shapes or {}).items()}
        self.models = ModelStore()  # every context and engine of a file shares its one loaded model
        self._engines: dict[str, Any] = {}
        self._contexts: dict[tuple[str, str], list[Any]] = {}
        self._used: dict[int, int] = {}  # id of a context -> when a call last took it
        self._clock = 0
        # for context="swap": which role's state is loaded in a file's one context, and
        # the saved states of the others
        self.owner: dict[str, str | None] = {}
        self.states: dict[tuple[str, str], Any] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def lock_for(self, path: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(path, threading.Lock())

    def context(self, path: str, slot: str, seed: int, projector: str | None = None,
                prompt: Sequence[int] | None = None) -> Any:
        """The context a call of ``slot`` (a role) runs in. A role has up to ``slots``
        contexts, made as needed: a prompt that continues the conversation one of them
        holds (it shares at least half of what that context holds) goes there, so two
        consultations in flight (or a judge's two kinds of question) keep their own
        caches; a new conversation takes an empty context, else one not yet made, else the
        least recently used. Without ``prompt``: the role's first context."""
        key = (path, slot)
        with self._guard:
            have = self._contexts.setdefault(key, [])
            self._clock += 1
            if have and prompt is None:
                return have[0]
            if have and prompt is not None:
                head = list(prompt[:-1])  # as Llama.generate: at least one token is evaluated
                shared = [(common_prefix(llm._input_ids[:llm.n_tokens], head), llm) for llm in have]
                n, best = max(shared, key=lambda x: x[0])
                if n > 0 and 2 * n >= best.n_tokens:
                    self._used[id(best)] = self._clock
                    return best
                empty = [llm for llm in have if llm.n_tokens == 0]
                if empty or len(have) >= self.slots:
                    lru = min(empty or have, key=lambda llm: self._used.get(id(llm), 0))
                    self._used[id(lru)] = self._clock
                    return lru
        llm = self._load(path, seed, projector)
        with self._guard:
            have.append(llm)
            self._used[id(llm)] = self._clock
        return llm

    @staticmethod
    def prompt_tokens(llm: Any, messages: list[Any]) -> list[int]:
        """The tokens ``llm``'s chat format makes of ``messages`` (nothing evaluated)."""
        return list(captured_completion(llm, messages=messages, max_tokens=1).get("prompt") or [])

    def _load(self, path: str, seed: int, projector: str | None) -> Any:
        try:
            import llama_cpp  # noqa: F401 - imported here: nothing heavy at import time
        except ImportError as e:  # pragma: no cover - depends on the install
            raise LLMError(f"llama-cpp-python is not installed: {e}", backend="llama.cpp", transient=False) from e
        if not Path(path).is_file():
            raise LLMError(f"model file not found: {path}", backend="llama.cpp", transient=False)
        handler = None
        if projector is not None:  # a multimodal model: its projector reads the images
            if not Path(projector).is_file():
                raise LLMError(f"projector file not found: {projector}", backend="llama.cpp", transient=False)
            from llama_cpp.llama_chat_format import Llava15ChatHandler

            handler = Llava15ChatHandler(clip_model_path=projector, verbose=False)
        try:
            # n_threads_batch too: left out, llama-cpp-python evaluates prompts on every core
            # whatever n_threads says (a busy machine's threads then wait at each barrier)
            return self.models.llama(path, n_ctx=self.n_ctx, n_threads=self.n_threads, n_threads_batch=self.n_threads,
                                     n_batch=self.n_batch, seed=seed, verbose=False,
                                     **({"chat_handler": handler} if handler is not None else {}))
        except (ValueError, RuntimeError) as e:
            raise LLMError(f"cannot load {path}: {e}", backend="llama.cpp", transient=False) from e

    def restore_head(self, path: str, llm: Any, messages: list[Any], prompt: Sequence[int]) -> int:
        """With a prompt cache, before a call whose context holds less than its prompt's
        head (the first message and the next one's opening): the cache's entry sharing
        most of it is loaded, and a head no entry holds whole is evaluated on its own
        and saved. Nothing when the head is short or the context holds it already.
        Returns the tokens it evaluated."""
        cache = self.prompt_cache
        if cache is None or len(messages) < 2:
            return 0
        have = common_prefix(llm._input_ids[:llm.n_tokens], prompt[:-1])
        if have >= len(prompt) - 1 - cache.min_tokens // 4:
            return 0  # the context holds nearly all of it (a conversation going on)
        renders = [self.prompt_tokens(llm, [messages[0], {"role": "user", "content": tag}])
                   for tag in ("\u2460", "\u2461")]  # two openings of a second message: the head is what they share
        head = list(prompt[:min(common_prefix(*renders), common_prefix(renders[0], prompt), len(prompt) - 1)])
        if len(head) < cache.min_tokens or have >= len(head):
            return 0
        ns = self._namespaces.get(path)
        if ns is None:
            ns = self._namespaces[path] = cache.namespace(llm, path)
        n, name = cache.best(ns, prompt)
        if name is not None and n > have:
            cache.load(llm, ns, name)
        keep = common_prefix(llm._input_ids[:llm.n_tokens], head)
        if keep >= len(head):
            return 0
        llm.n_tokens = keep
        llm.eval(head[keep:])  # Llama.eval removes the cells past keep first
        cache.save(llm, ns)
        return len(head) - keep

    def probe(self, path: str, llm: Any) -> GrammarProbe:
        """The grammar probe of the model file ``path``, made over ``llm`` (a context of
        it) on first use."""
        with self._guard:
            probe = self._probes.get(path)
            if probe is None:
                import llama_cpp

                probe = self._probes[path] = GrammarProbe(
                    llama_cpp, llm._model.vocab, lambda b: llm.tokenize(b, add_bos=False, special=False))
            return probe

    def drafter(self, path: str, llm: Any) -> Drafter:
        """A new call's draft source over ``llm`` (a context of the file ``path``): its
        grammar is the one in the sampler chain ``llm`` builds for that call."""
        return Drafter(self.probe(path, llm), lambda: _chain_grammar(llm))

    def shape(self, path: str) -> tuple[int, int]:
        """``(n_seq, n_ctx per sequence)`` of a model file (its resolved path)."""
        return self.shapes.get(path, (self.n_seq, self.n_ctx))

    def batched(self, path: str) -> bool:
        """Whether the file's per_role calls decode together (several sequences)."""
        return self.shape(path)[0] > 1

    def engine(self, path: str, seed: int) -> Any:
        """The file's :class:`~agents.llm.batched.BatchedEngine`, loaded on first use."""
        with self._guard:
            if path not in self._engines:
                from agents.llm.batched import BatchedEngine

                n_seq, n_ctx = self.shape(path)
                self._engines[path] = BatchedEngine(path, n_seq=n_seq, n_ctx_seq=n_ctx, n_threads=self.n_threads,
                                                    n_batch=self.n_batch, seed=seed, models=self.models,
                                                    jump_forward=self.jump_forward)
            return self._engines[path]

    def close(self) -> None:
        with self._guard:
            for engine in self._engines.values():
                engine.close()
            self._engines.clear()
            self._contexts.clear()
            self._used.clear()
            self.models.close()  # the contexts, then the models under them


class _Deadline:
    """A llama.cpp stopping criterion that turns true once ``timeout_s`` has passed."""

    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self.at = time.monotonic() + timeout_s
        self.hit = False

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        if time.monotonic() >= self.at:
            self.hit = True
        return self.hit


@contextmanager
def _stopping_at(llm: Any, deadline: _Deadline) -> Iterator[None]:
    """Adds ``deadline`` to the stopping criteria of ``llm``'s completions for one call.

    llama-cpp-python 0.3.16's ``Llama.create_chat_completion`` takes no
    ``stopping_criteria``, and a ``logits_processor`` runs inside a C sampler callback
    whose exceptions are swallowed (and forcing end-of-text there fights a JSON grammar).
    Its chat handler does pass ``stopping_criteria`` (its own, usually None) to
    ``llm.create_completion``, so that method is shadowed on this instance while the call
    holds the model's lock, and removed afterwards."""
    from llama_cpp import StoppingCriteriaList

    plain = llm.create_completion

    def create_completion(*args: Any, stopping_criteria: Any = None, **kwargs: Any) -> Any:
        criteria = StoppingCriteriaList([deadline, *(stopping_criteria or [])])
        return plain(*args, stopping_criteria=criteria, **kwargs)

    llm.create_completion = create_completion
    try:
        yield
    finally:
        del llm.create_completion


def _chain_grammar(llm: Any) -> Any:
    """The grammar sampler in the chain of ``llm``'s call in progress (None: no grammar)."""
    import llama_cpp

    chain = getattr(llm._sampler, "sampler", None)
    if not chain:
        return None
    for i in range(llama_cpp.llama_sampler_chain_n(chain)):
        s = llama_cpp.llama_sampler_chain_get(chain, i)
        if llama_cpp.llama_sampler_name(s) == b"grammar":
            return s
    return None


# A watched call (agents.llm.progress: the live hospital) evaluates a long prompt in pieces
# of this many tokens and says how far it got after each: about 2 s apart on the one core
# the window leaves the model. The reply is the same (each piece extends the KV cache as
# one long evaluation would; only the last token's logits are read).
PROGRESS_CHUNK = 64


@contextmanager
def _reporting(llm: Any) -> Iterator[None]:
    """While a watch follows the calling thread: ``llm``'s prompt evaluations in pieces,
    each reported. Nothing changes for an unwatched call."""
    if progress.watching() is None:
        yield
        return
    plain_eval = llm.eval

    def eval(tokens: Sequence[int]) -> None:  # noqa: A001 - Llama's method name
        if len(tokens) <= PROGRESS_CHUNK:
            return plain_eval(tokens)
        for i in range(0, len(tokens), PROGRESS_CHUNK):
            plain_eval(tokens[i:i + PROGRESS_CHUNK])
            progress.reading(min(len(tokens), i + PROGRESS_CHUNK), len(tokens))
        return None

    llm.eval = eval
    try:
        yield
    finally:
        del llm.eval


class _Steps:
    """What one call decoded: ``evals`` (llama_decode calls of Llama.eval) and
    ``samples`` (tokens sampled); ``samples - evals`` tokens came from kept drafts.
    ``grammar_full``: tokens the grammar refused at the chain's first pick (picked again under it)."""

    def __init__(self) -> None:
        self.evals = 0
        self.samples = 0
        self.grammar_full = 0


@contextmanager
def _jump_forward(llm: Any, drafter: Drafter | None, steps: _Steps, probe: GrammarProbe | None = None) -> Iterator[None]:
    """Jump-forward decoding for one call, through llama-cpp-python 0.3.16's own
    speculative loop (``Llama.generate`` with a ``draft_model``): after each sampled token
    it asks the draft model for tokens, evaluates them with the sampled one, samples at
    each position with the call's own sampler and keeps the draft as far as the sampled
    token equals the drafted one (the rest is removed from the KV cache). That loop needs
    the logits of every drafted position, which ``Llama.eval`` gives only with
    ``logits_all`` (a row of logits for every prompt token, and an array of ``n_ctx`` rows):
    here only a drafted step computes them, into the context's own output buffer, which
    the sampler reads. Without ``drafter``: counts only.

    With ``probe``, a call under a grammar (a JSON schema) applies it lazily
    (:meth:`GrammarProbe.pick`, as llama.cpp's common sampler and the batched engine do):
    the call's chain is built a second time without its grammar, that chain picks from the
    whole vocabulary, and the grammar is asked about that one token; only a refused token
    pays the grammar over the 152k tokens (~15 ms). Greedy, the tokens are the grammar-first
    chain's; sampled, a seed draws other tokens than grammar-first did. The chain's
    penalties are llama-cpp-python's neutral defaults here (no call sets them)."""
    import llama_cpp

    plain_eval, plain_sample, plain_init = llm.eval, llm.sample, llm._init_sampler
    armed = False
    free: Any = None  # the call's chain without its grammar (a LlamaSampler), once generate has built the chain

    def init_sampler(*args: Any, **kwargs: Any) -> Any:
        nonlocal free
        chain = plain_init(*args, **kwargs)
        if probe is not None and kwargs.get("grammar") is not None and not args:
            free = plain_init(**{**kwargs, "grammar": None, "logits_processor": None})
        return chain

    def draft_model(input_ids: Any) -> Any:
        nonlocal armed
        out = drafter(input_ids) if drafter is not None else []
        armed = len(out) > 0
        return out

    def eval(tokens: Sequence[int]) -> None:  # noqa: A001 - Llama's method name
        nonlocal armed
        steps.evals += 1
        if not armed:
            return plain_eval(tokens)
        armed = False
        n_past = llm.n_tokens
        llm._ctx.kv_cache_seq_rm(-1, n_past, -1)
        llm._batch.set_batch(batch=tokens, n_past=n_past, logits_all=True)
        llm._ctx.decode(llm._batch)
        llm.input_ids[n_past:n_past + len(tokens)] = tokens
        llm.n_tokens += len(tokens)
        return None

    def sample(*args: Any, idx: int | None = None, **kwargs: Any) -> int:
        steps.samples += 1
        progress.writing(steps.samples)
        grammar = _chain_grammar(llm) if free is not None else None
        if grammar is None:
            return plain_sample(*args, idx=idx, **kwargs)
        ridx = idx - llm.n_tokens if idx is not None else -1
        token, refused = probe.pick(llm._ctx.ctx, ridx, free.sampler, grammar)
        steps.grammar_full += refused
        llama_cpp.llama_sampler_accept(llm._sampler.sampler, token)  # the grammar in the chain moves on
        return token

    own = {k: llm.__dict__[k] for k in ("eval", "sample") if k in llm.__dict__}  # a wrapper already there (_reporting)
    llm.eval, llm.sample, llm._init_sampler = eval, sample, init_sampler
    if drafter is not None:
        llm.draft_model = draft_model
    try:
        yield
    finally:
        del llm.eval, llm.sample, llm._init_sampler
        llm.__dict__.update(own)
        llm.draft_model = None
        if free is not None:
            free.close()


class LlamaCppLLM:
    """A GGUF model through llama.cpp.

    ``context``: ``"per_role"`` (default) gives each role its own llama.cpp context, so
    each role's prefix stays in its KV cache; ``"swap"`` uses one context and saves /
    restores each role's state around its calls (less memory, a copy per switch);
    ``"shared"`` uses one context with no swapping (roles evict each other's prefix;
    for comparison). ``benchmarks/kv_cache.py --context`` measures them.

    What bounds a call: ``params.max_tokens`` caps the decode, and ``params.timeout_s``,
    counted from the start of generation (after the model's lock is taken and the context
    is loaded), is checked after every sampled token: past it, decoding stops and a
    transient :class:`LLMError` says the timeout was hit (the context stays consistent;
    the next call reuses its KV cache as usual). The prompt evaluation cannot be cut:
    llama.cpp evaluates the new prompt tokens in ``n_batch``-token decodes that Python
    cannot interrupt, so a call with a long new prompt may overrun ``timeout_s`` by that
    evaluation's time before the first check."""

    def __init__(self, path: str | Path, pool: LlamaPool, *, label: str | None = None, context: str = "per_role",
                 projector: str | Path | None = None):
        if context not in ("per_role", "swap", "shared"):
            raise ValueError(f"context must be per_role, swap or shared, got {context!r}")
        self.path = str(Path(path).expanduser().resolve())
        # a multimodal model's projector (llama.cpp's Llava-style chat handler); without one,
        # images in a message are dropped and the call's note says so
        self.projector = str(Path(projector).expanduser().resolve()) if projector else None
        self.pool = pool
        self.name = label or f"gguf:{Path(self.path).name}"
        self.context = context

    def _swap_to(self, llm: Any, role: str) -> None:
        pool, path = self.pool, self.path
        owner = pool.owner.get(path)
        if owner == role:
            return
        if owner is not None:
            pool.states[(path, owner)] = llm.save_state()
        state = pool.states.get((path, role))
        if state is not None:
            llm.load_state(state)
        else:
            llm.reset()
        pool.owner[path] = role

    def generate(self, messages: Sequence[Message], params: GenerateParams, ctx: CallContext) -> Output:
        if self.pool.batched(self.path) and self.context == "per_role" and self.projector is None:
            # concurrent calls decode together; same prompt, sampler and stop rules as below
            return self.pool.engine(self.path, params.seed).generate(messages, params, label=self.name)
        slot = (ctx.slot or ctx.role) if self.context == "per_role" else "one"
        sent = [chat_message(m) if self.projector else text_message(m) for m in messages]
        with self.pool.lock_for(self.path):
            llm = self.pool.context(self.path, slot, params.seed, self.projector)
            cached = self.pool.prompt_cache is not None and self.context == "per_role" and self.projector is None
            prompt = (self.pool.prompt_tokens(llm, sent) if cached or (self.context == "per_role" and self.pool.slots > 1)
                      else None)
            if self.context == "per_role" and self.pool.slots > 1:  # the context holding this conversation
                llm = self.pool.context(self.path, slot, params.seed, self.projector, prompt=prompt)
            if self.context == "swap":
                self._swap_to(llm, ctx.slot or ctx.role)
            t0 = time.perf_counter()
            head_evaluated = 0  # prompt tokens the prompt cache's step evaluated (the head, on its own)
            progress.running(ctx)  # a watcher (the live hospital) sees it read, then write
            try:
                with _reporting(llm):
                    if cached and prompt is not None:
                        try:
                            head_evaluated = self.pool.restore_head(self.path, llm, sent, prompt)
                        except (ValueError, RuntimeError, OSError):
                            pass  # the cache is an optimisation: the call evaluates its whole prompt as it would without
                    before = list(llm._input_ids)
                    deadline = _Deadline(params.timeout_s)
                    steps = _Steps()
                    jump = self.pool.jump_forward and self.projector is None
                    drafter = self.pool.drafter(self.path, llm) if jump else None
                    try:
                        with _stopping_at(llm, deadline), _jump_forward(
                                llm, drafter, steps, probe=self.pool.probe(self.path, llm) if self.projector is None else None):
                            r = llm.create_chat_completion(messages=sent, **sampling_args(params))
                    except ValueError as e:  # e.g. prompt longer than the context window
                        raise LLMError(str(e), backend=self.name, transient=False) from e
            finally:
                progress.ended()
            latency = time.perf_counter() - t0
            if deadline.hit:
                done = int((r.get("usage") or {}).get("completion_tokens", 0))
                raise LLMError(f"timeout of {deadline.timeout_s} s hit: generation stopped after {latency:.2f} s "
                               f"and {done} tokens, reply incomplete", backend=self.name)
            usage = r.get("usage") or {}
            pt = int(usage.get("prompt_tokens", 0))
            after = list(llm._input_ids)
            # llama-cpp-python evaluates only the part of the prompt that differs from the
            # tokens already in the context (it re-evaluates at least one token).
            reused = common_prefix(before, after[:pt])
            evaluated = max(1, pt - reused) + head_evaluated if pt else 0
        choice = r["choices"][0]
        return Output(
            text=choice["message"].get("content") or "",
            model=self.name,
            prompt_tokens=pt,
            prompt_tokens_evaluated=evaluated,
            completion_tokens=int(usage.get("completion_tokens", 0)),
            drafted_tokens=max(0, steps.samples - steps.evals),
            latency_s=latency,
            finish_reason=choice.get("finish_reason") or "stop",
            note=("" if self.projector or not any(m.images for m in messages)
                  else "this model has no image projector: the images were not sent, the text went alone"),
        )
