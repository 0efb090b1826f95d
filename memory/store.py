"""The case memory's store: SQLite is the truth, FAISS the search index.

Two buffers (MedAgentSim's): ``records`` (correctly diagnosed cases: summary, tests,
diagnosis, images) and ``experience`` (insights from reflections that turned a wrong
diagnosis into a right one).

SQLite (``memory.sqlite3``) holds every record with its vector (float32 bytes), in WAL
mode, one transaction per :meth:`MemoryStore.add`, ``synchronous=FULL``. FULL because
with WAL a committed record then survives power loss or an OS crash too, not only a
killed process (NORMAL guarantees only the latter); the cost is one fsync per add
(measured here: 0.35 ms per add against 0.11 ms with NORMAL), paid once per consultation,
and once per batch by bulk loads (:meth:`MemoryStore.add_many`). A ``meta`` table
records the embedder's name and dimension: a store is opened only with the embedder that
wrote it, so vectors of different models are never mixed.

FAISS, per buffer: an exact ``IndexFlatIP`` in an ``IndexIDMap2`` while the buffer holds
fewer than ``approx_threshold`` vectors (one exact query at 20k x 384 takes ~1 ms here, on
one thread; at 100k ~6.5 ms, over the 5 ms goal), and past it an approximate
``IndexHNSWFlat`` (inner product, M=32, efConstruction=40) in an ``IndexIDMap2``, searched
with efSearch = max(128, 2k). Measured against exact search at 100k x 384, k=3
(``benchmarks/memory_retrieval.py``, two cores): on embedding-like vectors (a
32-dimensional latent structure plus noise, as sentence embeddings have) recall@3 = 1.000
(0.965 at efSearch 64), retrieval p95 1.1 ms; on uniformly random unit vectors, the worst
case for any approximate index (a query's "nearest" neighbours are barely nearer than any
other vector), recall@3 = 0.235 at the same efSearch (0.57 at efSearch 512, p95 5.3 ms).
The add that takes a buffer to the threshold builds the approximate index from SQLite
there and then (~2.5 s at 20k random vectors, ~25 s at 100k, on two cores) and saves
it. Vectors are unit length and scores are inner products, i.e. cosine similarities.

Index files (``<buffer>.faiss``) are written next to the database with a sidecar
(``<buffer>.faiss.json``: kind, count, max id, sha256 of the ids and of the file), on
:meth:`close`, :meth:`checkpoint` and after an approximate index is built. On open, an
index that is missing, corrupt or disagrees with SQLite is rebuilt from SQLite; one
that is only behind (records added after it was saved, e.g. before a crash) is caught up
with the missing records. Writes by other connections (another process) are noticed
through SQLite's ``data_version`` before every search and add, and the index is caught
up the same way.

Records are deleted one by one with :meth:`MemoryStore.delete` (``medsim memory delete``;
SQLite first, in one transaction, then the index, saved at once) and adds are undone with
:meth:`MemoryStore.rollback` (a run taking back what a cell it never finished learned:
``medsim.memory``). Another connection that had the store open notices the removal and
rebuilds its index from SQLite.

One lock serialises the store's operations (bench workers share one store); query texts
are embedded outside it. A search runs FAISS on one OpenMP thread (a team would spin idle
and take CPU from the model threads, and is no faster for one query); building an index
uses every thread.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence
from urllib.parse import quote

import numpy as np

from memory.embed import Embedder

__all__ = ["BUFFERS", "MemoryRecord", "MemoryStore", "MemoryStoreError", "RecordNotFound", "DB_NAME",
           "SCHEMA_VERSION"]

log = logging.getLogger(__name__)

BUFFERS = ("records", "experience")
DB_NAME = "memory.sqlite3"
SCHEMA_VERSION = "1"
_SYNCHRONOUS = "FULL"
_SIDECAR_FORMAT = 1
_EXPORT_PAGE = 1000


class MemoryStoreError(RuntimeError):
    """The memory store cannot be opened, read or written as asked."""


class RecordNotFound(MemoryStoreError, KeyError):
    """No record with that id (a KeyError too)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return RuntimeError.__str__(self)


@dataclass(frozen=True)
class MemoryRecord:
    id: int
    buffer: str
    case_id: str
    case_key: str
    text: str
    diagnosis: str | None
    tests: tuple[str, ...]
    insight: str | None
    images: tuple[str, ...]
    meta: dict = field(hash=False)
    created: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (no vector)."""
        return {"id": self.id, "buffer": self.buffer, "case_id": self.case_id, "case_key": self.case_key,
                "text": self.text, "diagnosis": self.diagnosis, "tests": list(self.tests), "insight": self.insight,
                "images": list(self.images), "meta": self.meta, "created": self.created}


_COLUMNS = "id, buffer, case_id, case_key, text, diagnosis, tests, insight, images, meta, created"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused (after clear() or delete()), but by rollback()
    buffer TEXT NOT NULL CHECK (buffer IN ('records', 'experience')),
    case_id TEXT NOT NULL,
    case_key TEXT NOT NULL,
    text TEXT NOT NULL,
    diagnosis TEXT,
    tests TEXT NOT NULL,   -- JSON list
    insight TEXT,
    images TEXT NOT NULL,  -- JSON list
    meta TEXT NOT NULL,    -- JSON object
    created REAL NOT NULL,
    vector BLOB NOT NULL   -- float32 little-endian, unit length
);
CREATE INDEX IF NOT EXISTS records_buffer_id ON records (buffer, id);
CREATE INDEX IF NOT EXISTS records_case_key ON records (case_key);
"""


def _row_record(r: Sequence[Any]) -> MemoryRecord:
    return MemoryRecord(id=int(r[0]), buffer=r[1], case_id=r[2], case_key=r[3], text=r[4], diagnosis=r[5],
                        tests=tuple(json.loads(r[6])), insight=r[7], images=tuple(json.loads(r[8])),
                        meta=json.loads(r[9]), created=float(r[10]))


_OMP_DEFAULT: int | None = None


def _faiss() -> Any:
    global _OMP_DEFAULT
    try:
        import faiss
    except ImportError as e:
        raise MemoryStoreError(f"the memory index needs faiss ({e}): pip install faiss-cpu") from e
    if _OMP_DEFAULT is None:
        _OMP_DEFAULT = max(1, int(faiss.omp_get_max_threads()))
    return faiss


def _omp_threads(n: int | None) -> None:
    """OpenMP threads for the faiss calls this thread makes next (an OpenMP setting is
    per calling thread). One query runs on one thread: a team of threads would not make
    it faster (measured: slower for the exact index) and its idle threads spin, taking
    CPU from the model threads. Building an index uses them all."""
    faiss = _faiss()
    faiss.omp_set_num_threads(n or _OMP_DEFAULT)


def _ids_sha(ids: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(ids, dtype="<i8").tobytes()).hexdigest()


def _state_line(id_: int, case_key: str) -> bytes:
    return f"{id_}\t{case_key}\n".encode("utf-8")


class _BufferIndex:
    """One buffer's FAISS index and what it holds."""

    def __init__(self, index: Any, kind: str):
        self.index, self.kind = index, kind
        self._hnsw: Any = None
        self.dirty = False  # differs from the saved file

    @property
    def ntotal(self) -> int:
        return int(self.index.ntotal)

    def ids(self) -> np.ndarray:
        return np.sort(_faiss().vector_to_array(self.index.id_map).astype(np.int64))

    @property
    def hnsw(self) -> Any:
        """The HNSW graph's parameters (efSearch), for an approximate index."""
        if self._hnsw is None:
            self._hnsw = _faiss().downcast_index(self.index.index).hnsw
        return self._hnsw

    @property
    def max_id(self) -> int | None:
        if self.ntotal == 0:
            return None
        return int(_faiss().vector_to_array(self.index.id_map).max())


class MemoryStore:
    """Records and experience buffers: SQLite the truth, FAISS the index. Thread-safe."""

    def __init__(self, directory: Path, embedder: Embedder, *, approx_threshold: int = 20_000,
                 read_only: bool = False, ef_search: int = 128, hnsw_m: int = 32, ef_construction: int = 40):
        if approx_threshold < 1:
            raise MemoryStoreError(f"approx_threshold must be >= 1, got {approx_threshold}")
        self.directory = Path(directory).expanduser()
        self.embedder = embedder
        self.read_only = bool(read_only)
        self.approx_threshold = int(approx_threshold)
        self.ef_search, self.hnsw_m, self.ef_construction = int(ef_search), int(hnsw_m), int(ef_construction)
        self.db_path = self.directory / DB_NAME
        self.index_status: dict[str, str] = {}  # per buffer: how its index was obtained at open (and since)
        self._lock = threading.RLock()
        self._closed = True
        self._name, self._dim = str(embedder.name), int(embedder.dim)
        self._prepare_directory()
        self._conn = self._connect()
        self._closed = False
        try:
            self._init_schema()
            self._data_version = self._pragma_data_version()
            self._hasher: Any = None  # running sha256 of (id, case_key) lines in id order; None = recompute
            self._hashed_max = 0
            self._indexes: dict[str, _BufferIndex] = {}
            for b in BUFFERS:
                self._indexes[b] = self._open_index(b)
        except sqlite3.DatabaseError as e:
            self._conn.close()
            self._closed = True
            raise self._corrupt(e) from e
        except BaseException:
            self._conn.close()
            self._closed = True
            raise

    # ------------------------------------------------------------------ opening

    def _prepare_directory(self) -> None:
        d = self.directory
        if self.read_only:
            if not self.db_path.is_file():
                raise MemoryStoreError(f"no memory store at {d} (no {DB_NAME}); nothing to open read-only")
            return
        if d.exists() and not d.is_dir():
            raise MemoryStoreError(f"the memory directory {d} is not a directory")
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise MemoryStoreError(f"cannot create the memory directory {d}: {e.strerror or e}") from e
        if not d.is_dir():
            raise MemoryStoreError(f"the memory directory {d} is not a directory")
        if not os.access(d, os.W_OK | os.X_OK):
            raise MemoryStoreError(f"the memory directory {d} is not writable")

    def _connect(self) -> sqlite3.Connection:
        try:
            if self.read_only:
                uri = f"file:{quote(str(self.db_path.resolve()))}?mode=ro"
                conn = sqlite3.connect(uri, uri=True, timeout=30, check_same_thread=False, isolation_level=None)
            else:
                conn = sqlite3.connect(str(self.db_path), timeout=30, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as e:
            raise MemoryStoreError(f"cannot open the memory database {self.db_path}: {e}") from e
        return conn

    def _corrupt(self, e: Exception) -> MemoryStoreError:
        return MemoryStoreError(f"the memory database {self.db_path} is corrupt or not a medsim memory ({e}); "
                                "move it away or use another memory directory")

    def _init_schema(self) -> None:
        c = self._conn
        try:
            if not self.read_only:
                mode = c.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise MemoryStoreError(f"{self.db_path}: cannot switch to WAL journal (got {mode})")
            c.execute(f"PRAGMA synchronous={_SYNCHRONOUS}")
            tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not {"meta", "records"} <= tables:
                if self.read_only:
                    raise MemoryStoreError(f"{self.db_path} is not a medsim memory (no records table)")
                if tables - {"sqlite_sequence"}:
                    raise MemoryStoreError(f"{self.db_path} is an SQLite database but not a medsim memory "
                                           f"(tables: {', '.join(sorted(tables))})")
                with self._transaction():  # DDL is transactional in SQLite; OR IGNORE: another process may race us
                    for stmt in _SCHEMA.split(";"):
                        if stmt.strip():
                            c.execute(stmt)
                    c.executemany("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
                                  [("schema", SCHEMA_VERSION), ("embedder", self._name), ("dim", str(self._dim)),
                                   ("created", repr(time.time()))])
            meta = dict(c.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as e:
            raise self._corrupt(e) from e
        if meta.get("schema") != SCHEMA_VERSION:
            raise MemoryStoreError(f"{self.db_path} has memory schema {meta.get('schema')!r}; this medsim reads "
                                   f"{SCHEMA_VERSION!r}")
        if meta.get("embedder") != self._name or meta.get("dim") != str(self._dim):
            raise MemoryStoreError(
                f"the memory at {self.directory} was written with embedder {meta.get('embedder')} "
                f"(dim {meta.get('dim')}); it cannot be opened with {self._name} (dim {self._dim}): vectors of "
                "different models are never mixed. Use the same embedder, or another memory directory.")

    class _Tx:
        def __init__(self, conn: sqlite3.Connection):
            self.conn = conn

        def __enter__(self) -> sqlite3.Connection:
            self.conn.execute("BEGIN IMMEDIATE")
            return self.conn

        def __exit__(self, et, ev, tb) -> None:
            if et is None:
                try:
                    self.conn.execute("COMMIT")
                    return
                except BaseException:
                    self._rollback()
                    raise
            self._rollback()

        def _rollback(self) -> None:
            if self.conn.in_transaction:
                try:
                    self.conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass

    def _transaction(self) -> "MemoryStore._Tx":
        return MemoryStore._Tx(self._conn)

    def _pragma_data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    # ------------------------------------------------------------------ index files

    def _index_paths(self, buffer: str) -> tuple[Path, Path]:
        p = self.directory / f"{buffer}.faiss"
        return p, p.with_name(p.name + ".json")

    def _kind_for(self, count: int) -> str:
        return "hnsw" if count >= self.approx_threshold else "flat"

    def _sqlite_ids(self, buffer: str) -> np.ndarray:
        rows = self._conn.execute("SELECT id FROM records WHERE buffer = ? ORDER BY id", (buffer,)).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def _vectors(self, buffer: str, after: int | None = None, ids: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
        """(ids, vectors) of a buffer from SQLite, in id order: all, those after an id, or given ids."""
        if ids is not None:
            out_ids, blobs = [], []
            for s in range(0, len(ids), 500):
                part = [int(i) for i in ids[s:s + 500]]
                q = f"SELECT id, vector FROM records WHERE id IN ({','.join('?' * len(part))}) ORDER BY id"
                for i, v in self._conn.execute(q, part):
                    out_ids.append(i)
                    blobs.append(v)
        else:
            cur = self._conn.execute("SELECT id, vector FROM records WHERE buffer = ? AND id > ? ORDER BY id",
                                     (buffer, after or 0))
            out_ids, blobs = [], []
            while True:
                rows = cur.fetchmany(10_000)
                if not rows:
                    break
                for i, v in rows:
                    out_ids.append(i)
                    blobs.append(v)
        width = self._dim * 4
        bad = [i for i, b in zip(out_ids, blobs) if len(b) != width]
        if bad:
            raise MemoryStoreError(f"{self.db_path}: record {bad[0]} has a vector of {len(blobs[out_ids.index(bad[0])])} "
                                   f"bytes, expected {width} (dim {self._dim})")
        vecs = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(out_ids), self._dim)
        return np.asarray(out_ids, dtype=np.int64), np.ascontiguousarray(vecs, dtype=np.float32)

    def _new_index(self, kind: str) -> Any:
        faiss = _faiss()
        if kind == "flat":
            inner = faiss.IndexFlatIP(self._dim)
        else:
            inner = faiss.IndexHNSWFlat(self._dim, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            inner.hnsw.efConstruction = self.ef_construction
            inner.hnsw.efSearch = self.ef_search
        return faiss.IndexIDMap2(inner)

    def _build(self, buffer: str, reason: str) -> _BufferIndex:
        t0 = time.perf_counter()
        ids, vecs = self._vectors(buffer)
        kind = self._kind_for(len(ids))
        index = self._new_index(kind)
        if len(ids):
            _omp_threads(None)
            index.add_with_ids(vecs, ids)
        bi = _BufferIndex(index, kind)
        bi.dirty = True
        dt = time.perf_counter() - t0
        self.index_status[buffer] = f"rebuilt from SQLite ({reason}): {kind}, {len(ids)} vectors, {dt:.2f} s"
        if len(ids):
            log.info("memory %s: %s", buffer, self.index_status[buffer])
        if kind == "hnsw" and not self.read_only:
            self._save(buffer, bi)  # an approximate index is expensive to rebuild: keep it now
        return bi

    def _open_index(self, buffer: str) -> _BufferIndex:
        faiss = _faiss()
        ipath, spath = self._index_paths(buffer)
        sq_ids = self._sqlite_ids(buffer)
        if not ipath.is_file() or not spath.is_file():
            if not len(sq_ids):
                self.index_status[buffer] = "new (empty)"
                bi = _BufferIndex(self._new_index("flat"), "flat")
                bi.dirty = True
                return bi
            return self._build(buffer, "index file missing")
        try:
            side = json.loads(spath.read_text(encoding="utf-8"))
            if not isinstance(side, dict) or side.get("format") != _SIDECAR_FORMAT:
                raise ValueError("unknown sidecar format")
            data = ipath.read_bytes()
        except (OSError, ValueError) as e:
            return self._build(buffer, f"sidecar unreadable: {e}")
        if side.get("embedder") != self._name or side.get("dim") != self._dim:
            return self._build(buffer, "index written by another embedder")
        if hashlib.sha256(data).hexdigest() != side.get("file_sha256"):
            return self._build(buffer, "index file does not match its checksum (corrupt or half-written)")
        try:
            index = faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))
            ix_ids = np.sort(faiss.vector_to_array(index.id_map).astype(np.int64))
        except (RuntimeError, AttributeError, TypeError, ValueError) as e:
            return self._build(buffer, f"index file unreadable: {e}")
        if int(index.d) != self._dim or int(index.ntotal) != side.get("count") or _ids_sha(ix_ids) != side.get("ids_sha256"):
            return self._build(buffer, "index disagrees with its sidecar")
        saved_max = int(ix_ids[-1]) if len(ix_ids) else 0
        head = sq_ids[sq_ids <= saved_max]
        if len(head) != len(ix_ids) or not np.array_equal(head, ix_ids):
            return self._build(buffer, "index disagrees with SQLite")
        kind = side.get("kind")
        if kind != self._kind_for(len(sq_ids)):
            return self._build(buffer, f"{kind} index, {self._kind_for(len(sq_ids))} needed at {len(sq_ids)} vectors")
        bi = _BufferIndex(index, kind)
        missing = len(sq_ids) - len(ix_ids)
        if missing:
            ids, vecs = self._vectors(buffer, after=saved_max)
            _omp_threads(None)
            index.add_with_ids(vecs, ids)
            bi.dirty = True
            self.index_status[buffer] = f"loaded, caught up with {missing} records from SQLite"
            log.info("memory %s: %s", buffer, self.index_status[buffer])
        else:
            self.index_status[buffer] = "loaded"
        return bi

    def _save(self, buffer: str, bi: _BufferIndex) -> None:
        faiss = _faiss()
        ipath, spath = self._index_paths(buffer)
        data = faiss.serialize_index(bi.index).tobytes()
        ids = bi.ids()
        side = {"format": _SIDECAR_FORMAT, "buffer": buffer, "kind": bi.kind, "count": bi.ntotal,
                "max_id": int(ids[-1]) if len(ids) else 0, "ids_sha256": _ids_sha(ids),
                "file_sha256": hashlib.sha256(data).hexdigest(), "embedder": self._name, "dim": self._dim,
                "params": {"hnsw_m": self.hnsw_m, "ef_construction": self.ef_construction}}
        try:
            _atomic_write(ipath, data)
            _atomic_write(spath, json.dumps(side, indent=1).encode("utf-8"))
        except OSError as e:
            raise MemoryStoreError(f"cannot write the memory index {ipath}: {e}") from e
        bi.dirty = False

    # ------------------------------------------------------------------ keeping in step

    def _check_open(self) -> None:
        if self._closed:
            raise MemoryStoreError(f"the memory store at {self.directory} is closed")

    def _check_writable(self) -> None:
        self._check_open()
        if self.read_only:
            raise MemoryStoreError(f"the memory store at {self.directory} is open read-only")

    def _sync(self) -> None:
        """Catch up with writes made through other connections (other processes)."""
        dv = self._pragma_data_version()
        if dv == self._data_version:
            return
        self._data_version = dv
        self._hasher = None
        for b in BUFFERS:
            bi = self._indexes[b]
            cnt, mx = self._conn.execute("SELECT count(*), max(id) FROM records WHERE buffer = ?", (b,)).fetchone()
            if cnt == bi.ntotal and mx == bi.max_id:
                continue
            sq_ids, ix_ids = self._sqlite_ids(b), bi.ids()
            if len(ix_ids) and not np.all(np.isin(ix_ids, sq_ids)):
                self._indexes[b] = self._build(b, "records removed by another connection")
                continue
            new = np.setdiff1d(sq_ids, ix_ids, assume_unique=True)
            if bi.kind != self._kind_for(len(sq_ids)):
                self._indexes[b] = self._build(b, f"{len(sq_ids)} vectors need a {self._kind_for(len(sq_ids))} index")
                continue
            ids, vecs = self._vectors(b, ids=new)
            _omp_threads(None)
            bi.index.add_with_ids(vecs, ids)
            bi.dirty = True
            self.index_status[b] = f"caught up with {len(ids)} records written by another connection"
            log.info("memory %s: %s", b, self.index_status[b])

    def _after_insert(self, buffer: str, ids: np.ndarray, vecs: np.ndarray, keys: Sequence[str]) -> None:
        bi = self._indexes[buffer]
        total = bi.ntotal + len(ids)
        if bi.kind != self._kind_for(total):
            self._indexes[buffer] = self._build(buffer, f"{total} vectors reach the approximate threshold "
                                                        f"{self.approx_threshold}")
        else:
            _omp_threads(1 if len(ids) == 1 else None)
            bi.index.add_with_ids(vecs, ids)
            bi.dirty = True
        if self._hasher is not None:
            if len(ids) and int(ids.min()) > self._hashed_max:
                for i, k in sorted(zip(ids.tolist(), keys)):
                    self._hasher.update(_state_line(i, k))
                self._hashed_max = int(ids.max())
            else:
                self._hasher = None
        # Our own commit does not change data_version for this connection, so a write by
        # someone else is still noticed next time.

    # ------------------------------------------------------------------ writing

    def _vector(self, v: Any, what: str) -> np.ndarray:
        a = np.asarray(v, dtype=np.float32)
        if a.ndim == 2 and a.shape[0] == 1:
            a = a[0]
        if a.shape != (self._dim,):
            raise MemoryStoreError(f"{what}: a vector of shape {a.shape}, expected ({self._dim},) for {self._name}")
        n = float(np.linalg.norm(a))
        if not math.isfinite(n) or n == 0.0:
            raise MemoryStoreError(f"{what}: the vector is zero or not finite")
        return (a / n).astype(np.float32)

    @staticmethod
    def _row(buffer: str, *, case_id: str, case_key: str, text: str, diagnosis: str | None = None,
             tests: Sequence[str] = (), insight: str | None = None, images: Sequence[str] = (),
             meta: dict | None = None, vector: Any = None) -> dict[str, Any]:
        if buffer not in BUFFERS:
            raise MemoryStoreError(f"unknown buffer {buffer!r} (one of: {', '.join(BUFFERS)})")
        for name, val in (("case_id", case_id), ("case_key", case_key), ("text", text)):
            if not isinstance(val, str):
                raise MemoryStoreError(f"{name} must be a string, got {type(val).__name__}")
        for name, val in (("diagnosis", diagnosis), ("insight", insight)):
            if val is not None and not isinstance(val, str):
                raise MemoryStoreError(f"{name} must be a string or None, got {type(val).__name__}")
        for name, seq in (("tests", tests), ("images", images)):
            if isinstance(seq, (str, bytes)) or not all(isinstance(x, str) for x in seq):
                raise MemoryStoreError(f"{name} must be a sequence of strings")
        try:
            meta_json = json.dumps(dict(meta or {}), ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError) as e:
            raise MemoryStoreError(f"meta must be JSON-serialisable: {e}") from e
        return {"buffer": buffer, "case_id": case_id, "case_key": case_key, "text": text, "diagnosis": diagnosis,
                "tests": json.dumps([str(x) for x in tests], ensure_ascii=False), "insight": insight,
                "images": json.dumps([str(x) for x in images], ensure_ascii=False), "meta": meta_json,
                "vector": vector}

    def add(self, buffer: str, *, case_id: str, case_key: str, text: str, diagnosis: str | None = None,
            tests: Sequence[str] = (), insight: str | None = None, images: Sequence[str] = (),
            meta: dict | None = None, vector: np.ndarray | None = None) -> int:
        """Store one record (one transaction); embeds ``text`` unless a vector is given.
        Returns its id."""
        return self.add_many([dict(buffer=buffer, case_id=case_id, case_key=case_key, text=text, diagnosis=diagnosis,
                                   tests=tests, insight=insight, images=images, meta=meta, vector=vector)])[0]

    def add_many(self, rows: Sequence[dict]) -> list[int]:
        """Store many records in one transaction (bulk loads, benchmarks). Each row has
        :meth:`add`'s keyword arguments plus ``buffer``. All or none are stored."""
        self._check_writable()
        prepared = []
        for i, r in enumerate(rows):
            r = dict(r)
            try:
                buffer = r.pop("buffer")
            except KeyError:
                raise MemoryStoreError(f"row {i}: no buffer") from None
            try:
                prepared.append(self._row(buffer, **r))
            except TypeError as e:
                raise MemoryStoreError(f"row {i}: {e}") from e
        if not prepared:
            return []
        todo = [i for i, p in enumerate(prepared) if p["vector"] is None]
        if todo:  # outside the lock: a model call must not hold up searches
            embedded = self.embedder.embed_texts([prepared[i]["text"] for i in todo])
            for i, v in zip(todo, embedded):
                prepared[i]["vector"] = v
            if getattr(self.embedder, "embeds_images", False):
                self._add_images(prepared, todo, rows)
        vecs = np.stack([self._vector(p["vector"], f"row {i}") for i, p in enumerate(prepared)])
        now = time.time()
        with self._lock:
            self._check_writable()
            self._sync()
            ids: list[int] = []
            try:
                with self._transaction() as c:
                    for p, v in zip(prepared, vecs):
                        cur = c.execute(
                            "INSERT INTO records (buffer, case_id, case_key, text, diagnosis, tests, insight, images, "
                            "meta, created, vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (p["buffer"], p["case_id"], p["case_key"], p["text"], p["diagnosis"], p["tests"],
                             p["insight"], p["images"], p["meta"], now, v.astype("<f4").tobytes()))
                        ids.append(int(cur.lastrowid))
            except sqlite3.DatabaseError as e:
                raise MemoryStoreError(f"cannot write to the memory database {self.db_path}: {e}") from e
            id_arr = np.asarray(ids, dtype=np.int64)
            for b in BUFFERS:
                sel = [j for j, p in enumerate(prepared) if p["buffer"] == b]
                if sel:
                    self._after_insert(b, id_arr[sel], vecs[sel], [prepared[j]["case_key"] for j in sel])
            return ids

    def _add_images(self, prepared: list[dict], todo: list[int], rows: Sequence[dict]) -> None:
        """CLIP: a record's images go into its vector (:func:`memory.embed.with_images`).
        An image that cannot be read fails the whole call, naming the row and the file."""
        from memory.embed import EmbedderError, with_images

        for i in todo:
            paths = list(rows[i].get("images") or ())
            if not paths:
                continue
            try:
                image_vecs = self.embedder.embed_images(paths)
            except EmbedderError as e:
                raise MemoryStoreError(f"row {i}: {e}") from e
            prepared[i]["vector"] = with_images(prepared[i]["vector"], image_vecs)

    def clear(self) -> None:
        """Delete every record of both buffers (ids are not reused afterwards)."""
        with self._lock:
            self._check_writable()
            try:
                with self._transaction() as c:
                    c.execute("DELETE FROM records")
            except sqlite3.DatabaseError as e:
                raise MemoryStoreError(f"cannot clear the memory database {self.db_path}: {e}") from e
            for b in BUFFERS:
                bi = _BufferIndex(self._new_index("flat"), "flat")
                self._indexes[b] = bi
                self._save(b, bi)
                self.index_status[b] = "cleared"
            self._hasher = None

    def delete(self, ids: Sequence[int]) -> list[MemoryRecord]:
        """Delete records by id from SQLite and their buffer's index (one transaction;
        the index files are saved at once, so both stay in step). Their ids are never
        given out again. Returns the deleted records; :class:`RecordNotFound` names an id
        that is not there (and nothing is deleted)."""
        return self._remove(ids, rewind=False)

    def rollback(self, ids: Sequence[int]) -> list[MemoryRecord]:
        """Undo the adds of these records, as if they had never been made: deleted like
        :meth:`delete`, and where they are the newest records the store has ever held
        (nothing was added after them, and every id from the lowest of them up is among
        them) the next adds get their ids again. A run that rolls back what a cell it
        never finished learned, and runs the cell again, so gets the same ids (and
        state hash) as a run that was never interrupted."""
        return self._remove(ids, rewind=True)

    def _remove(self, ids: Sequence[int], *, rewind: bool) -> list[MemoryRecord]:
        want = sorted({int(i) for i in ids})
        if not want:
            return []
        with self._lock:
            self._check_writable()
            self._sync()
            try:
                with self._transaction() as c:
                    recs = self._records(want)
                    missing = [i for i in want if i not in recs]
                    if missing:
                        raise RecordNotFound(f"no memory record {missing[0]} in {self.directory}")
                    for s in range(0, len(want), 500):
                        part = want[s:s + 500]
                        c.execute(f"DELETE FROM records WHERE id IN ({','.join('?' * len(part))})", part)
                    if rewind:
                        seq = c.execute("SELECT seq FROM sqlite_sequence WHERE name = 'records'").fetchone()
                        top = want[0] - 1
                        later = c.execute("SELECT 1 FROM records WHERE id > ? LIMIT 1", (top,)).fetchone()
                        if seq is not None and int(seq[0]) == want[-1] and want == list(range(want[0], want[-1] + 1)) \
                                and later is None:
                            c.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'records'", (top,))
            except sqlite3.DatabaseError as e:
                raise MemoryStoreError(f"cannot delete from the memory database {self.db_path}: {e}") from e
            for b in BUFFERS:
                gone = np.asarray([i for i in want if recs[i].buffer == b], dtype=np.int64)
                if not len(gone):
                    continue
                bi = self._indexes[b]
                left = bi.ntotal - len(gone)
                if bi.kind == "hnsw" or bi.kind != self._kind_for(left):  # HNSW cannot remove a vector
                    self._indexes[b] = self._build(b, f"{len(gone)} record(s) deleted")
                else:
                    bi.index.remove_ids(gone)
                    bi.dirty = True
                    self.index_status[b] = f"{len(gone)} record(s) deleted"
                self._save(b, self._indexes[b])
            self._hasher = None
            return [recs[i] for i in want]

    def find_by_meta(self, key: str, value: str) -> list[MemoryRecord]:
        """The records whose ``meta`` holds ``value`` at ``key`` (a JSON path below the
        meta object, e.g. ``learned_by.run``), in id order."""
        if not key.replace("_", "").replace(".", "").isalnum():
            raise MemoryStoreError(f"not a meta key: {key!r}")
        with self._lock:
            self._check_open()
            try:
                rows = self._conn.execute(f"SELECT {_COLUMNS} FROM records WHERE json_extract(meta, ?) = ? ORDER BY id",
                                          (f"$.{key}", value)).fetchall()
            except sqlite3.DatabaseError as e:
                raise self._corrupt(e) from e
        return [_row_record(r) for r in rows]

    def checkpoint(self) -> None:
        """Write the indexes that changed since they were last saved (close() does too)."""
        with self._lock:
            self._check_writable()
            for b in BUFFERS:
                if self._indexes[b].dirty:
                    self._save(b, self._indexes[b])

    # ------------------------------------------------------------------ reading

    def _query_vector(self, query: str | np.ndarray) -> np.ndarray:
        if isinstance(query, str):
            return self._vector(self.embedder.embed_texts([query])[0], "query")
        return self._vector(query, "query")

    def search(self, buffer: str, query: str | np.ndarray, k: int = 3) -> list[tuple[MemoryRecord, float]]:
        """The k nearest records of a buffer to a text or vector, best first, with their
        cosine similarity."""
        if buffer not in BUFFERS:
            raise MemoryStoreError(f"unknown buffer {buffer!r} (one of: {', '.join(BUFFERS)})")
        self._check_open()
        if k <= 0:
            return []
        q = self._query_vector(query)[None, :]
        with self._lock:
            self._check_open()
            self._sync()
            bi = self._indexes[buffer]
            if bi.ntotal == 0:
                return []
            k_eff = min(k, bi.ntotal)
            if bi.kind == "hnsw":
                bi.hnsw.efSearch = max(self.ef_search, 2 * k_eff)
            _omp_threads(1)
            scores, ids = bi.index.search(q, k_eff)
            hits = [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i >= 0]
            if not hits:
                return []
            recs = self._records([i for i, _ in hits])
        return [(recs[i], s) for i, s in hits if i in recs]

    def _records(self, ids: Sequence[int]) -> dict[int, MemoryRecord]:
        q = f"SELECT {_COLUMNS} FROM records WHERE id IN ({','.join('?' * len(ids))})"
        try:
            return {int(r[0]): _row_record(r) for r in self._conn.execute(q, [int(i) for i in ids])}
        except sqlite3.DatabaseError as e:
            raise self._corrupt(e) from e

    def get(self, id: int) -> MemoryRecord:
        with self._lock:
            self._check_open()
            recs = self._records([int(id)])
        if int(id) not in recs:
            raise RecordNotFound(f"no memory record {id} in {self.directory}")
        return recs[int(id)]

    def count(self, buffer: str | None = None) -> int:
        if buffer is not None and buffer not in BUFFERS:
            raise MemoryStoreError(f"unknown buffer {buffer!r} (one of: {', '.join(BUFFERS)})")
        with self._lock:
            self._check_open()
            if buffer is None:
                return int(self._conn.execute("SELECT count(*) FROM records").fetchone()[0])
            return int(self._conn.execute("SELECT count(*) FROM records WHERE buffer = ?", (buffer,)).fetchone()[0])

    def has_case(self, case_key: str) -> bool:
        with self._lock:
            self._check_open()
            return self._conn.execute("SELECT 1 FROM records WHERE case_key = ? LIMIT 1", (case_key,)).fetchone() is not None

    def case_keys(self, *, excluding: Sequence[int] = ()) -> set[str]:
        """The case keys of every record (but those with an id in ``excluding``)."""
        skip = {int(i) for i in excluding}
        with self._lock:
            self._check_open()
            if not skip:
                return {r[0] for r in self._conn.execute("SELECT DISTINCT case_key FROM records")}
            return {k for i, k in self._conn.execute("SELECT id, case_key FROM records") if i not in skip}

    def index_kind(self, buffer: str) -> str:
        """``flat`` (exact) or ``hnsw`` (approximate): the buffer's index now."""
        if buffer not in BUFFERS:
            raise MemoryStoreError(f"unknown buffer {buffer!r} (one of: {', '.join(BUFFERS)})")
        with self._lock:
            self._check_open()
            self._sync()
            return self._indexes[buffer].kind

    def state(self) -> dict[str, Any]:
        """Size per buffer, a stable hash of the contents (sha256 over ids and case keys in
        id order), the embedder and its dimension."""
        with self._lock:
            self._check_open()
            self._sync()
            if self._hasher is None:
                h, mx = hashlib.sha256(), 0
                for i, k in self._conn.execute("SELECT id, case_key FROM records ORDER BY id"):
                    h.update(_state_line(i, k))
                    mx = i
                self._hasher, self._hashed_max = h, mx
            counts = dict(self._conn.execute("SELECT buffer, count(*) FROM records GROUP BY buffer").fetchall())
            n_rec, n_exp = int(counts.get("records", 0)), int(counts.get("experience", 0))
            return {"size": n_rec + n_exp, "records": n_rec, "experience": n_exp,
                    "hash": self._hasher.hexdigest(), "embedder": self._name, "dim": self._dim}

    def export(self) -> Iterator[dict]:
        """Every record as a JSON-ready dict (no vectors), in id order."""
        last = 0
        while True:
            with self._lock:
                self._check_open()
                rows = self._conn.execute(f"SELECT {_COLUMNS} FROM records WHERE id > ? ORDER BY id LIMIT ?",
                                          (last, _EXPORT_PAGE)).fetchall()
            if not rows:
                return
            for r in rows:
                yield _row_record(r).to_dict()
            last = int(rows[-1][0])

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                if not self.read_only:
                    for b in BUFFERS:
                        if self._indexes[b].dirty:
                            try:
                                self._save(b, self._indexes[b])
                            except MemoryStoreError as e:  # SQLite holds everything; the index is rebuilt next time
                                log.warning("memory %s: index not saved: %s", b, e)
            finally:
                self._conn.close()
                self._closed = True

    def __enter__(self) -> "MemoryStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryStore({str(self.directory)!r}, {self._name}{', read-only' if self.read_only else ''})"


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    try:  # make the rename durable too
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass
