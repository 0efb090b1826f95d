"""One loaded model per model file, whatever number of llama.cpp contexts use it.

``llama_cpp.Llama(...)`` loads the weights of its file every time it is constructed (and
on a CPU repacks them into llama.cpp's interleaved layout, some 0.8 GB of anonymous memory
for the embedded Qwen2.5-1.5B), though a llama.cpp model can serve any number of contexts.
:class:`ModelStore` loads a file's model once and builds every ``Llama`` of that file over
it: each keeps its own context (its own KV cache, so a role's conversation stays
prefix-stable), its tokenizer and chat format, and the one model under them all.

llama-cpp-python 0.3.16 has no argument for an already loaded model: ``Llama.__init__``
builds its ``_internals.LlamaModel`` itself. While a borrowing ``Llama`` is built, that
name is bound to a factory returning a ``LlamaModel`` over the loaded pointer whose
``close`` frees nothing (the store frees the model once, after every context built over
it); builds are serialised by a lock of this module, so no other build sees the factory.

The model is read into memory (``use_mmap=False``) rather than mapped: on a CPU most of
its weights are repacked into buffers of their own at load, and a mapping would keep the
file's pages resident beside them (1.1 GB more resident memory for the embedded model,
the same text).
"""
from __future__ import annotations

import json
import threading
from collections import Counter
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from agents.llm.native_log import quiet_native

__all__ = ["ModelStore", "captured_completion", "common_prefix", "sampling_args"]

_BUILD = threading.Lock()  # process-wide: the factory below is bound on llama_cpp's module while it is held


@contextmanager
def _borrowing(model: Any) -> Iterator[None]:
    """While held, ``Llama(...)`` gets ``model`` (a loaded ``LlamaModel``) instead of loading."""
    import llama_cpp.llama as ll

    plain = ll.internals.LlamaModel

    def borrowed(*, path_model: str, params: Any, verbose: bool = True) -> Any:
        m = plain.__new__(plain)
        m.path_model, m.params, m.verbose = path_model, model.params, verbose
        m.model, m.vocab, m.sampler = model.model, model.vocab, None
        m._exit_stack = ExitStack()  # nothing to free: the owner frees the model
        return m

    ll.internals.LlamaModel = borrowed
    try:
        yield
    finally:
        ll.internals.LlamaModel = plain


class ModelStore:
    """A process's loaded models, one per file (its resolved path); ``loads`` counts the
    loads per file, ``contexts`` the contexts built over them. :meth:`llama` returns a new
    ``Llama`` (a context of its own) over the file's model; :meth:`close` frees every
    ``Llama`` it built, then the models."""

    def __init__(self) -> None:
        self._owners: dict[str, Any] = {}  # path -> the Llama whose LlamaModel the others borrow
        self._built: list[Any] = []
        self.loads: Counter[str] = Counter()
        self.contexts: Counter[str] = Counter()  # contexts built over each file's model

    def llama(self, path: str, **kwargs: Any) -> Any:
        """``Llama(model_path=path, **kwargs)``, over the file's one loaded model. Raises
        what ``Llama`` raises (``ValueError`` for a file it cannot load)."""
        from llama_cpp import Llama

        path = str(Path(path).expanduser().resolve())
        with _BUILD:
            owner = self._owners.get(path)
            if owner is None:
                with quiet_native():  # the owner: a tiny context that never decodes
                    owner = Llama(model_path=path, n_ctx=256, n_batch=256, n_threads=1, verbose=False,
                                  use_mmap=False)
                self.loads[path] += 1
                self._owners[path] = owner
            with _borrowing(owner._model), quiet_native():
                llm = Llama(model_path=path, **kwargs)
            self._built.append(llm)
            self.contexts[path] += 1
            return llm

    def close(self) -> None:
        with _BUILD:
            for llm in self._built:  # contexts first: the model they use is freed after them
                llm.close()
            self._built.clear()
            for owner in self._owners.values():
                owner.close()
            self._owners.clear()


def sampling_args(params: Any) -> dict[str, Any]:
    """``Llama.create_chat_completion``'s arguments for a call's ``GenerateParams``, the
    same in the serial path and the batched engine: a JSON schema becomes a llama.cpp
    grammar, so the reply cannot leave it."""
    return {"temperature": params.temperature, "max_tokens": params.max_tokens, "stop": list(params.stop) or None,
            "seed": params.seed,
            "response_format": ({"type": "json_object", "schema": json.loads(params.response_schema)}
                                if params.response_schema else None)}


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many tokens two token lists share from the start."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class _Captured(Exception):
    """Raised by the shadowed ``create_completion``: the arguments are captured, nothing runs."""


def captured_completion(llm: Any, **chat: Any) -> dict[str, Any]:
    """The arguments ``llm.create_chat_completion(**chat)`` passes to ``create_completion``
    (the prompt's tokens, the grammar, the sampler settings), with nothing evaluated: the
    chat handler runs with that method shadowed on the instance. The caller serialises
    calls on one ``llm``. Raises the handler's ``ValueError``."""
    got: dict[str, Any] = {}

    def capture(**kwargs: Any) -> Any:
        got.update(kwargs)
        raise _Captured

    llm.create_completion = capture
    try:
        llm.create_chat_completion(**chat)
    except _Captured:
        pass
    finally:
        del llm.create_completion
    return got
