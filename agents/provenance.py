"""Run provenance for event-log headers and run.json: git revision, package versions,
and what a run was started from: the command line, the start time, the case file's
SHA-256, each in-process model file's SHA-256 (a server model is named by its id in
the header's ``models``) and the instruction sets llama.cpp was built with (two builds
round a near tie otherwise, so one model file can give other greedy replies on them)."""
from __future__ import annotations

import hashlib
import os
import platform
import re
import subprocess
import sys
import threading
from datetime import datetime, timezone
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping, Sequence

from agents.llm.url_secrets import redact_urls

__all__ = ["git_revision", "package_versions", "utc_now", "file_sha256", "model_hashes", "llama_cpp_build",
           "run_provenance"]

_PACKAGES = ("medsim", "llama-cpp-python", "tqdm", "pygame", "pytmx", "faiss-cpu", "open-clip-torch", "torch")


@lru_cache(maxsize=1)
def git_revision() -> str:
    """The checkout's commit (``-dirty`` with uncommitted changes to tracked files), or
    "unknown": an installed copy is no checkout, even inside another repository."""
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():  # a directory, or a file in a worktree
        return "unknown"
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        if rev.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10)
        return rev.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@lru_cache(maxsize=1)
def _versions() -> tuple[tuple[str, str], ...]:
    out = [("python", platform.python_version())]
    for name in _PACKAGES:
        try:
            out.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            continue
    return tuple(out)


def package_versions() -> dict[str, str]:
    return dict(_versions())


def utc_now() -> str:
    """Now, UTC, ISO 8601 to the second: ``2025-01-31T14:05:09Z``."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


_hashes: dict[tuple[str, int, int], str] = {}
_hash_lock = threading.Lock()


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file, computed once per process per (file, size, modification time):
    a 1 GB model is read once however many cells, roles and runs name it. The embedded
    model's assembled file takes the checksum verified when it was assembled."""
    from agents.llm.local_model import embedded_sha256

    p = Path(path).expanduser().resolve()
    st = p.stat()
    key = (str(p), st.st_size, st.st_mtime_ns)
    with _hash_lock:  # one thread hashes; another asking for the same file waits for it
        if key not in _hashes:
            known = embedded_sha256(p)
            if known is None:
                h = hashlib.sha256()
                with p.open("rb") as fh:
                    while chunk := fh.read(1 << 22):
                        h.update(chunk)
                known = h.hexdigest()
            _hashes[key] = known
        return _hashes[key]


def model_hashes(models: Mapping[str, str], llms: Mapping[str, Any]) -> dict[str, str]:
    """SHA-256 of each in-process model file (and a multimodal model's projector), keyed
    by the model as ``models`` names it (role -> description, as in a log header); a
    server, scripted or replayed backend has no file and no entry."""
    from agents.llm.llamacpp import LlamaCppLLM

    out: dict[str, str] = {}
    for role, llm in llms.items():
        llm = getattr(llm, "inner", llm)  # a gated backend (agents.llm.schedule.Gated): the model under it
        if not isinstance(llm, LlamaCppLLM):
            continue
        name = models.get(role, role)
        out[name] = file_sha256(llm.path)
        if llm.projector:
            out[f"{name} (projector)"] = file_sha256(llm.projector)
    return dict(sorted(out.items()))


@lru_cache(maxsize=1)
def llama_cpp_build() -> str | None:
    """The CPU features llama.cpp (llama-cpp-python's library) was built with, as it
    reports them (``"AVX AVX2 AVX512 AVX512_VNNI ... REPACK"``), or None when it does not
    import. The Makefile builds it for the CPU it is built on (``GGML_CPU_ARGS``)."""
    try:
        import llama_cpp
    except ImportError:
        return None
    info = llama_cpp.llama_print_system_info()
    info = info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info)
    return " ".join(m.group(1) for m in re.finditer(r"([A-Z0-9_]+) = 1", info)) or info.strip()


def run_provenance(*, cases_file: str | Path | None, models: Mapping[str, str], llms: Mapping[str, Any],
                   command: Sequence[str] | None = None, started: str | None = None) -> dict[str, Any]:
    """What a header (and run.json) records beyond the spec, the git revision and the
    package versions: ``command`` (the command line; this process's argv when not
    given), ``started`` (UTC, ISO 8601), ``cases_sha256`` (the case file) and
    ``model_sha256`` (:func:`model_hashes`). The first two differ from one invocation to
    the next; everything else in a log is the same for the same spec and seed. A URL's
    secrets in the command line (a key in its query string) are redacted.
    ``llama_cpp_build`` (:func:`llama_cpp_build`) is there when a model runs in process."""
    hashes = model_hashes(models, llms)
    return {"command": [redact_urls(str(a)) for a in (command or sys.argv)], "started": started or utc_now(),
            "cases_sha256": file_sha256(cases_file) if cases_file is not None and os.path.isfile(cases_file) else None,
            "model_sha256": hashes, "llama_cpp_build": llama_cpp_build() if hashes else None}
