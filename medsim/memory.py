"""The case memory wired into runs: a ``memory.store.MemoryStore`` behind the engine's
``Recall``/``Memorise`` interfaces, opened from a run spec's ``[memory]`` section, and the
``medsim memory`` command's operations."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Sequence

from agents.recall import Recollection
from medsim.spec import MemorySpec

__all__ = ["StoreMemory", "open_memory", "embedder_kind"]


def embedder_kind(name: str) -> tuple[str, str | None]:
    """(kind, clip checkpoint) from a stored embedder name ("minilm:...", "clip:MODEL@PATH",
    "clip:medsim-tiny@random", "hash:256")."""
    prefix = name.split(":", 1)[0]
    if prefix == "clip":
        rest = name.split(":", 1)[1] if ":" in name else ""
        model, _, where = rest.partition("@")
        if "tiny" in model:
            return "clip-tiny", None
        return "clip", where or None
    return prefix, None


class StoreMemory:
    """Both buffers of a store, as the engine sees them."""

    def __init__(self, store: Any, *, read_only: bool = False):
        self.store = store
        self.read_only = read_only
        self._lock = threading.Lock()

    # -- Recall ----------------------------------------------------------------------
    def recall(self, query: str, k: int) -> list[Recollection]:
        out: list[Recollection] = []
        for buffer in ("records", "experience"):
            for rec, score in self.store.search(buffer, query, k):
                out.append(Recollection(buffer, rec.id, float(score), rec.text, rec.diagnosis, rec.insight,
                                        rec.case_key))
        return out

    def state(self) -> dict[str, Any]:
        return self.store.state()

    # -- Memorise --------------------------------------------------------------------
    def remember(self, buffer: str, *, case_id: str, case_key: str, text: str, diagnosis: str | None = None,
                 tests: Sequence[str] = (), insight: str | None = None, meta: dict | None = None) -> int:
        if self.read_only:
            raise RuntimeError("this memory is frozen: nothing is learned")
        with self._lock:
            return self.store.add(buffer, case_id=case_id, case_key=case_key, text=text, diagnosis=diagnosis,
                                  tests=tuple(tests), insight=insight, meta=meta or {})

    def has_case(self, case_key: str) -> bool:
        return self.store.has_case(case_key)

    def case_keys(self) -> set[str]:
        return self.store.case_keys()

    def close(self) -> None:
        self.store.close()


def open_memory(ms: MemorySpec, *, read_only: bool = False) -> StoreMemory:
    """The spec's memory (SQLite + FAISS under ``ms.dir``) with its embedder."""
    from memory.embed import make_embedder
    from memory.store import MemoryStore

    assert ms.dir, "a memory needs a directory"
    embedder = make_embedder(ms.embedder, clip_checkpoint=ms.clip_checkpoint)
    return StoreMemory(MemoryStore(Path(ms.dir), embedder, read_only=read_only), read_only=read_only)
