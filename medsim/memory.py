"""The case memory wired into runs: a ``memory.store.MemoryStore`` behind the engine's
``Recall``/``Memorise`` interfaces, opened from a run spec's ``[memory]`` section, and the
``medsim memory`` command's operations.

Which cell learned what. A run that learns (online, or on a learning split) files each
record with ``meta["learned_by"] = {"run": RUN_ID, "results": FILE, "cell": [case, seed,
condition]}`` (:class:`TaggedMemory`): the run's id (``run.json``'s ``run_id``), the
results file the cell's row goes to (``results.jsonl`` or ``learning/results.jsonl``) and
the cell. A cell's learning commits to the memory before its row is written; a run killed
between the two leaves a record whose cell has no row. ``--resume`` rolls those back
(:func:`unfinished_learning`, then :meth:`StoreMemory.rollback`, which gives their ids
back) before the cell runs again, so the resumed run learns exactly what an uninterrupted
one does, under the same ids. Only this run's records are ever rolled back."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Collection, Mapping, Sequence

from agents.recall import Recollection
from medsim.spec import MemorySpec

__all__ = ["StoreMemory", "TaggedMemory", "open_memory", "embedder_kind", "stored_embedder", "open_existing",
           "run_memory_command", "LEARNED_BY", "learned_by", "unfinished_learning", "parse_record_id"]

LEARNED_BY = "learned_by"  # the meta key of a record a run learned: {"run", "results", "cell"}


def learned_by(run_id: str, results: str, cell: tuple[str, int, str]) -> dict[str, Any]:
    """The ``meta["learned_by"]`` of a record that cell ``cell`` (case id, seed,
    condition) of run ``run_id`` learned, its row going to ``results`` (a path relative
    to the run directory)."""
    return {"run": run_id, "results": results, "cell": [cell[0], int(cell[1]), cell[2]]}


def unfinished_learning(memory: "StoreMemory", run_id: str, finished: Mapping[str, Collection[tuple[str, int, str]]]
                        ) -> list[Any]:
    """The records run ``run_id`` learned in cells that have no row: ``finished`` maps
    each results file (as in :func:`learned_by`) to the cells whose rows it keeps. A
    record from another run, or from before runs tagged their records, is never among
    them."""
    out = []
    for rec in memory.store.find_by_meta(f"{LEARNED_BY}.run", run_id):
        tag = rec.meta.get(LEARNED_BY) or {}
        cell = tag.get("cell")
        try:
            key = (str(cell[0]), int(cell[1]), str(cell[2]))
        except (TypeError, ValueError, IndexError):
            continue  # not a tag this medsim wrote: left alone
        if key not in finished.get(str(tag.get("results")), ()):
            out.append(rec)
    return out


def parse_record_id(text: str) -> tuple[str | None, int]:
    """(buffer or None, id) from a record id as ``medsim memory search`` prints it
    (``records:1``, ``experience:2``) or a bare number (``1``); ValueError, saying what a
    record id looks like, for anything else."""
    from memory.store import BUFFERS

    buffer, sep, num = text.strip().rpartition(":")
    if (sep and buffer not in BUFFERS) or not num.isdigit() or not num.isascii():
        raise ValueError(f"{text!r} is not a record id: give a number, or BUFFER:NUMBER as `medsim memory search` "
                         f"prints it ({', '.join(f'{b}:1' for b in BUFFERS)})")
    return (buffer or None), int(num)


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

    def case_keys(self, *, excluding: Sequence[int] = ()) -> set[str]:
        return self.store.case_keys(excluding=excluding)

    def rollback(self, ids: Sequence[int]) -> list[Any]:
        """Undo the adds of these records (:meth:`memory.store.MemoryStore.rollback`)."""
        if self.read_only:
            raise RuntimeError("this memory is frozen: nothing is rolled back")
        with self._lock:
            return self.store.rollback(ids)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "StoreMemory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TaggedMemory:
    """A :class:`agents.recall.Memorise` that files every record with ``tag`` under
    ``meta["learned_by"]`` (which cell of which run learned it), then passes it on."""

    def __init__(self, memory: Any, tag: Mapping[str, Any]):
        self.memory, self.tag = memory, dict(tag)

    def remember(self, buffer: str, *, meta: dict | None = None, **kw: Any) -> int:
        return self.memory.remember(buffer, meta={**(meta or {}), LEARNED_BY: self.tag}, **kw)

    def has_case(self, case_key: str) -> bool:
        return self.memory.has_case(case_key)


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
    """``medsim memory stats|search TEXT|show ID|delete ID|export|clear``. An ID is a
    number or ``BUFFER:NUMBER`` as ``search`` prints it (:func:`parse_record_id`)."""
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
    if args.action in ("show", "delete"):
        return _one_record(args, d)
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
        elif args.action == "export":
            for rec in m.store.export():
                sys.stdout.write(json.dumps(rec, ensure_ascii=True) + "\n")
    return 0


def _one_record(args: Any, d: Path) -> int:
    """``show ID`` and ``delete ID``: one record, named as ``search`` names it."""
    import json
    import logging

    from agents.textsafe import printable

    logger = logging.getLogger(__name__)
    if len(args.text) != 1:
        logger.error("%s needs one record id (a number, or BUFFER:NUMBER as `medsim memory search` prints it)",
                     args.action)
        return 2
    try:
        buffer, rid = parse_record_id(args.text[0])
    except ValueError as e:
        logger.error("%s", printable(str(e)))
        return 2
    with open_existing(d, read_only=args.action == "show") as m:
        rec = m.store.get(rid)  # RecordNotFound (a RuntimeError) names the id and the directory
        if buffer is not None and rec.buffer != buffer:
            logger.error("record %d in %s is in the %s buffer, not %s (it is %s:%d)", rid, d, rec.buffer, buffer,
                         rec.buffer, rid)
            return 2
        if args.action == "show":
            # ASCII JSON: a record's model text never reaches the terminal raw
            print(json.dumps(rec.to_dict(), indent=2, ensure_ascii=True))
            return 0
        m.store.delete([rid])
        what = rec.diagnosis if rec.buffer == "records" else rec.insight
        print(printable(f"deleted {rec.buffer}:{rid} (case {rec.case_id}: {what}) from {d}; "
                        f"{m.state()['size']} record(s) left", single_line=True))
    return 0
