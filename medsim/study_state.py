"""Whether a run directory holds a reader study still in progress (``medsim study``).

Until a study ends, no command may show its answer keys, verdicts or accuracy: ``medsim
view``, ``compare``, ``score`` and ``replay`` ask :func:`refuse_in_progress` before they
read a run. Small on purpose (it reads one file and imports nothing of the run loop), so
any command can ask it without an import cycle.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from medsim.errors import BenchError

__all__ = ["STUDY_FILE", "StudyInProgress", "read_study_file", "study_in_progress", "refuse_in_progress"]

STUDY_FILE = "study.json"  # a study's ledger in its run directory (medsim.study)


class StudyInProgress(BenchError):
    """A command that would show what a study in progress keeps from its reader."""


def read_study_file(run_dir: Path) -> dict[str, Any] | None:
    """RUN/study.json as a dict; None when there is none. A file that cannot be read is a
    :class:`~medsim.errors.BenchError` naming it (a study whose ledger is unreadable must
    not be taken for a finished one)."""
    path = Path(run_dir) / STUDY_FILE
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise BenchError(f"{path}: unreadable ({e}); a study's ledger (medsim study)") from None
    if not isinstance(doc, dict):
        raise BenchError(f"{path}: not a study's ledger (a JSON {type(doc).__name__}, not an object)")
    return doc


def study_in_progress(run_dir: Path) -> dict[str, Any] | None:
    """The ledger of the study in ``run_dir`` while it is in progress (not ended); None
    for a finished study or a directory that holds none."""
    doc = read_study_file(run_dir)
    return doc if doc is not None and not doc.get("finished") else None


def refuse_in_progress(run_dir: Path, what: str) -> None:
    """Raise :class:`StudyInProgress` when ``run_dir`` holds a study in progress: ``what``
    (e.g. "comparing it") would show its answer keys or verdicts before it ends."""
    doc = study_in_progress(run_dir)
    if doc is None:
        return
    order = doc.get("order") if isinstance(doc.get("order"), list) else []
    played = doc.get("played") if isinstance(doc.get("played"), dict) else {}
    raise StudyInProgress(f"{run_dir}: a reader study in progress ({len(played)} of {len(order)} cases played); "
                          f"{what} would show its answer keys or verdicts before it ends. It ends when its last case "
                          f"is played, or with `medsim study --out {run_dir} --finish`")
