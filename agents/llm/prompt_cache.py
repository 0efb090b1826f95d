"""A prompt cache on disk for in-process models: the KV cache of a role's system message,
kept across processes, so a new process's first call of a role does not evaluate again
what an earlier process evaluated.

On 2 cores the first call of each role is most of a short consultation's time: the
embedded model evaluates some 55 prompt tokens a second, so the judge's system message
(~330 tokens, the same for every case) costs ~6 s in every ``medsim consult``, and the
doctor's (~500 tokens, its case's) ~10 s, ~20 s on the one core the live hospital leaves
the model. A :class:`PromptCache` keeps, per model file and context shape, the state of a
context holding exactly a prompt's *head* (its first message and the next message's
opening, the part any conversation that starts with that message shares), in llama.cpp's
own sequence-state files. A call whose context holds less of its prompt than an entry
shares with it loads that entry; llama-cpp-python's prefix match then evaluates only what
follows the shared part (an entry of another case still serves the instructions its
patient's system message opens with). A call that evaluates a head no entry holds
evaluates the head on its own first, saves it, and goes on.

The cache is an interactive tool's: ``medsim consult`` and ``medsim play`` use it, a
benchmark does not (a warm entry computes the shared tokens in other chunks than a cold
run, and a row's logits depend a little on its chunk, so a near tie could fall otherwise
between two runs of one spec). Entries are capped in bytes, least recently used first out.
Where: ``MEDSIM_PROMPT_CACHE`` (a folder, or ``off``), else ``<medsim's cache>/prompts``.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from agents.llm.llama_models import common_prefix

__all__ = ["PromptCache", "default_prompt_cache", "MIN_TOKENS", "MAX_BYTES"]

MIN_TOKENS = 64  # a shorter shared head is cheaper to evaluate than to load
MAX_BYTES = 512 * 1024 * 1024  # all entries of all namespaces together
_INDEX = "index.json"


class PromptCache:
    """Sequence states of prompt heads under ``root``, one folder per namespace (a model
    file and the context's shape: :meth:`namespace`). Safe across threads of a process;
    across processes, an index written by another process is read again on each lookup,
    and a file that fails to load is dropped."""

    def __init__(self, root: str | Path, *, max_bytes: int = MAX_BYTES, min_tokens: int = MIN_TOKENS):
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.min_tokens = min_tokens
        self._lock = threading.Lock()
        self.loads = 0  # entries loaded into a context
        self.saves = 0  # entries written
        self.loaded_tokens = 0  # prompt tokens those loads held

    @staticmethod
    def namespace(llm: Any, model_path: str) -> str:
        """What a state depends on: the model file (path, size, modification time), the
        context's cells, batch and KV types, llama-cpp-python's version."""
        import llama_cpp

        st = Path(model_path).stat()
        cp = llm.context_params
        key = json.dumps([str(Path(model_path).resolve()), st.st_size, st.st_mtime_ns, llm.n_ctx(), cp.n_batch,
                          cp.n_ubatch, int(cp.type_k), int(cp.type_v), bool(getattr(cp, "flash_attn", False)),
                          llama_cpp.__version__])
        return hashlib.sha256(key.encode()).hexdigest()[:24]

    # -- the index ---------------------------------------------------------------------
    def _index(self, ns: str) -> dict[str, dict]:
        try:
            data = json.loads((self.root / ns / _INDEX).read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def _write_index(self, ns: str, index: dict[str, dict]) -> None:
        folder = self.root / ns
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"{_INDEX}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(index), encoding="utf-8")
        os.replace(tmp, folder / _INDEX)

    def best(self, ns: str, prompt: Sequence[int]) -> tuple[int, str | None]:
        """``(tokens shared, entry name)`` of the entry sharing the longest head with
        ``prompt`` (at least :data:`MIN_TOKENS`), or ``(0, None)``."""
        head = list(prompt[:-1])  # as Llama.generate: the prompt's last token is always evaluated
        best_n, best_name = 0, None
        for name, entry in self._index(ns).items():
            n = common_prefix(entry.get("tokens") or [], head)
            if n > best_n:
                best_n, best_name = n, name
        return (best_n, best_name) if best_n >= self.min_tokens else (0, None)

    # -- a context's state ---------------------------------------------------------------
    def load(self, llm: Any, ns: str, name: str) -> int:
        """Puts entry ``name`` into ``llm``'s context (sequence 0, what it held removed);
        the tokens it holds, or 0 when the file is gone or does not load (then dropped)."""
        import ctypes

        import llama_cpp

        with self._lock:
            index = self._index(ns)
            entry = index.get(name)
            path = self.root / ns / name
            if entry is None or not path.is_file():
                return 0
            llm._ctx.kv_cache_seq_rm(-1, -1, -1)
            cap = len(entry["tokens"]) + 1
            tokens = (llama_cpp.llama_token * cap)()
            count = ctypes.c_size_t(0)
            read = llama_cpp.llama_state_seq_load_file(llm._ctx.ctx, str(path).encode(), 0, tokens, cap,
                                                       ctypes.byref(count))
            n = int(count.value)
            if not read or n != len(entry["tokens"]) or list(tokens[:n]) != entry["tokens"]:
                llm._ctx.kv_cache_seq_rm(-1, -1, -1)
                llm.n_tokens = 0
                index.pop(name, None)
                path.unlink(missing_ok=True)
                self._write_index(ns, index)
                return 0
            llm.input_ids[:n] = entry["tokens"]
            llm.n_tokens = n
            entry["used"] = time.time()
            self._write_index(ns, index)
            self.loads += 1
            self.loaded_tokens += n
            return n

    def save(self, llm: Any, ns: str) -> str | None:
        """Writes ``llm``'s context (its tokens and their cells) as an entry; its name, or
        None when an entry holds these tokens already or the write failed."""
        import llama_cpp

        n = llm.n_tokens
        tokens = [int(t) for t in llm.input_ids[:n]]
        name = hashlib.sha256(json.dumps(tokens).encode()).hexdigest()[:32] + ".state"
        with self._lock:
            index = self._index(ns)
            if name in index:
                return None
            folder = self.root / ns
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f"{name}.{os.getpid()}.tmp"
            arr = (llama_cpp.llama_token * n)(*tokens)
            wrote = llama_cpp.llama_state_seq_save_file(llm._ctx.ctx, str(tmp).encode(), 0, arr, n)
            if not wrote:
                tmp.unlink(missing_ok=True)
                return None
            os.replace(tmp, folder / name)
            index[name] = {"tokens": tokens, "bytes": int(wrote), "used": time.time()}
            self._write_index(ns, index)
            self.saves += 1
            self._evict(keep=(ns, name))
            return name

    def _evict(self, keep: tuple[str, str]) -> None:
        """Least recently used entries out until all namespaces fit :attr:`max_bytes`
        (the entry just written, ``keep``, stays whatever its size)."""
        entries = []
        for folder in (p for p in self.root.iterdir() if p.is_dir()) if self.root.is_dir() else ():
            index = self._index(folder.name)
            for name, e in index.items():
                entries.append((e.get("used", 0.0), folder.name, name, int(e.get("bytes", 0))))
            for orphan in folder.glob("*.state"):  # two processes wrote the index at once: one entry lost
                try:
                    if orphan.name not in index and time.time() - orphan.stat().st_mtime > 600:
                        orphan.unlink()
                except OSError:
                    pass
        total = sum(b for *_, b in entries)
        for _, ns, name, size in sorted(entries):
            if total <= self.max_bytes:
                break
            if (ns, name) == keep:
                continue
            index = self._index(ns)
            index.pop(name, None)
            (self.root / ns / name).unlink(missing_ok=True)
            self._write_index(ns, index)
            total -= size


def default_prompt_cache() -> PromptCache | None:
    """The cache ``medsim consult`` and ``medsim play`` use: ``MEDSIM_PROMPT_CACHE`` (a
    folder; ``off``: none), else ``prompts`` under medsim's cache folder."""
    from agents.llm.local_model import cache_dir

    where = os.environ.get("MEDSIM_PROMPT_CACHE", "").strip()
    if where.lower() in ("off", "0", "none", "false"):
        return None
    return PromptCache(where or cache_dir() / "prompts")
