"""The case memory wired into runs: a ``memory.store.MemoryStore`` behind the engine's
``Recall``/``Memorise`` interfaces, opened from a run spec's ``[memory]`` section, and the
``medsim memory`` command's operations."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Sequence

from agents.recall import Recollection
from medsim.spec import MemorySpec

__all__ = ["StoreMemory", "open_memory", "embedder_kind", "stored_embedder", "open_existing", "run_memory_command"]


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
                 tests: Sequence[str] = (), insight: str | None = None, images: Sequence[str] = (),
                 meta: dict | None = None) -> int:
        if self.read_only:
            raise RuntimeError("this memory is frozen: nothing is learned")
        with self._lock:
            return self.store.add(buffer, case_id=case_id, case_key=case_key, text=text, diagnosis=diagnosis,
                                  tests=tuple(tests), insight=insight, images=tuple(images), meta=meta or {})

    def has_case(self, case_key: str) -> bool:
        return self.store.has_case(case_key)

    def case_keys(self) -> set[str]:
        return self.store.case_keys()

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "StoreMemory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_memory(ms: MemorySpec, *, read_only: bool = False) -> StoreMemory:
    """The spec's memory (SQLite + FAISS under ``ms.dir``) with its embedder."""
    from memory.embed import make_embedder
    from memory.store import MemoryStore

    assert ms.dir, "a memory needs a directory"
    embedder = make_embedder(ms.embedder, clip_checkpoint=ms.clip_checkpoint)
    return StoreMemory(MemoryStore(Path(ms.dir), embedder, read_only=read_only), read_only=read_only)


def stored_embedder(directory: Path) -> str | None:
    """The embedder a memory directory was written with (None: no memory there)."""
    import sqlite3
    from urllib.parse import quote

    from memory.store import DB_NAME

    db = Path(directory) / DB_NAME
    if not db.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{quote(str(db.resolve()))}?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key='embedder'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise RuntimeError(f"{db}: not a readable medsim memory ({e})") from None
    return row[0] if row else None


def open_existing(directory: Path, *, read_only: bool = True) -> StoreMemory:
    """A memory directory opened with the embedder it was written with."""
    from memory.embed import make_embedder
    from memory.store import MemoryStore

    name = stored_embedder(directory)
    if name is None:
        raise RuntimeError(f"no medsim memory in {directory}")
    kind, ckpt = embedder_kind(name)
    return StoreMemory(MemoryStore(Path(directory), make_embedder(kind, clip_checkpoint=ckpt), read_only=read_only),
                       read_only=read_only)


def run_memory_command(args: Any) -> int:
    """``medsim memory stats|search TEXT|show ID|export|clear``."""
    import json
    import logging
    import sys

    from agents.textsafe import printable

    logger = logging.getLogger(__name__)
    d = Path(args.memory_dir)
    if args.action == "clear":
        if not args.yes:
            logger.error("clearing %s deletes every record; add --yes", d)
            return 2
        with open_existing(d, read_only=False) as m:
            n = m.state()["size"]
            m.store.clear()
        print(printable(f"cleared {n} record(s) from {d}"))
        return 0
    with open_existing(d) as m:
        if args.action == "stats":
            st = m.state()
            print(printable(f"memory {d}: {st['size']} record(s): {st['records']} in records, {st['experience']} in "
                  f"experience; embedder {st['embedder']} (dim {st['dim']}); hash {st['hash'][:16]}"))
        elif args.action == "search":
            if not args.text:
                logger.error("search needs the text to look for")
                return 2
            for h in m.recall(" ".join(args.text), args.k):
                what = h.diagnosis if h.buffer == "records" else h.insight
                cells = (f"{h.buffer}:{h.id}", f"{h.score:.3f}", what, " ".join(h.text.split())[:100])
                print("\t".join(printable(c, single_line=True) for c in cells))
        elif args.action == "show":
            if not args.text or not args.text[0].isdigit():
                logger.error("show needs a record id (a number)")
                return 2
            # ASCII JSON: a record's model text never reaches the terminal raw
            print(json.dumps(m.store.get(int(args.text[0])).to_dict(), indent=2, ensure_ascii=True))
        elif args.action == "export":
            for rec in m.store.export():
                sys.stdout.write(json.dumps(rec, ensure_ascii=True) + "\n")
    return 0
