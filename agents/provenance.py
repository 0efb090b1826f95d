"""Run provenance for event-log headers: git revision and package versions."""
from __future__ import annotations

import platform
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path

__all__ = ["git_revision", "package_versions"]

_PACKAGES = ("medsim", "llama-cpp-python", "tqdm", "pygame", "pytmx", "faiss-cpu", "open-clip-torch", "torch")


@lru_cache(maxsize=1)
def git_revision() -> str:
    root = Path(__file__).resolve().parent.parent
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
