"""The typed case model."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Case", "ImagingStudy", "CaseRecordError", "CaseSetError", "flatten", "format_facts", "image_location",
           "image_outside", "ALLOW_IMAGES_OUTSIDE"]


@dataclass(frozen=True)
class ImagingStudy:
    """An image a case holds: what it is, the file (a path, resolved against the case file's
    folder, or a URL) and its report. ``test`` names the order it answers ("Chest X-ray")."""

    test: str
    modality: str  # X-ray | CT | MRI | ultrasound | ECG | photo | ...
    body_part: str
    image: str
    report: str

    @property
    def is_url(self) -> bool:
        return self.image.startswith(("http://", "https://"))


def image_location(image: str, folder: str | Path) -> str:
    """A study's image as a case file names it -> a URL as it is, a path resolved (links
    followed) against the case file's ``folder``. A name the system cannot resolve (a
    NUL, a loop of links) is joined to the folder unresolved; the loader reports a NUL,
    and a missing file is found when the image is opened."""
    img = image.strip()
    if img.startswith(("http://", "https://")):
        return img
    try:
        return str((Path(folder) / img).resolve())
    except (OSError, ValueError, RuntimeError):
        return str(Path(folder) / img)


ALLOW_IMAGES_OUTSIDE = "MEDSIM_ALLOW_IMAGES_OUTSIDE"  # =1: a case may name an image anywhere on the machine


def image_outside(location: str, folder: str | Path) -> str | None:
    """Why a study's image (as :func:`image_location` gave it) may not be used, or None.
    An image is a file inside the case set's ``folder`` (or below it), links followed: an
    absolute path, a ``..`` or a symbolic link that leads out of it would show any image
    on the machine in the transcripts and send it to a vision server. The environment
    variable ``MEDSIM_ALLOW_IMAGES_OUTSIDE=1`` allows them (read when the cases load)."""
    if location.startswith(("http://", "https://")) or os.environ.get(ALLOW_IMAGES_OUTSIDE) == "1":
        return None
    try:
        base = Path(folder).resolve()
        real = Path(location).resolve()
    except (OSError, ValueError, RuntimeError):
        return f"'{location}' cannot be resolved to a file"
    if real.is_relative_to(base):
        return None
    return (f"resolves to {real}, outside the case set's folder {base}; put the image in that folder, "
            f"or set {ALLOW_IMAGES_OUTSIDE}=1 to allow images anywhere")


@dataclass(frozen=True)
class Case:
    """One clinical case. ``patient`` is what the patient actor knows, ``exam`` and
    ``tests`` are held only by the measurement technician, ``diagnosis`` only by the
    judge."""

    id: str
    objective: str
    demographics: str
    patient: dict[str, Any]
    exam: dict[str, Any]
    tests: dict[str, Any]
    diagnosis: str
    source: str  # "file:line" it was read from
    specialty: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    imaging: tuple[ImagingStudy, ...] = ()  # images the technician can return with their reports

    def test_names(self) -> list[str]:
        return list(self.tests) + [s.test for s in self.imaging if s.test not in self.tests]

    def records(self) -> dict[str, Any]:
        """The technician's records: test results, plus each imaging study's report (an
        order for the study returns its report and its image)."""
        out = dict(self.tests)
        for s in self.imaging:
            key = s.test if s.test not in out else f"{s.test} ({s.modality})"
            out[key] = {"Report": s.report}
        return out


@dataclass(frozen=True)
class CaseRecordError:
    """A malformed record: names the file, line and field."""

    path: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: field '{self.field}': {self.message}"


class CaseSetError(ValueError):
    """Raised when a case set has invalid records (and they are not to be skipped) or
    cannot be found."""

    SHOWN = 20  # the message lists this many records; ``errors`` holds all of them

    def __init__(self, message: str, errors: list[CaseRecordError] | None = None):
        self.errors = list(errors or [])
        detail = "".join(f"\n  {e}" for e in self.errors[: self.SHOWN])
        if len(self.errors) > self.SHOWN:
            detail += f"\n  ... and {len(self.errors) - self.SHOWN} more"
        super().__init__(message + detail)


def _label(key: str) -> str:
    return re.sub(r"[_]+", " ", str(key)).strip()


def flatten(value: Any, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    """Nested dict/list of findings -> [(path, text)], in document order."""
    if isinstance(value, dict):
        out: list[tuple[tuple[str, ...], str]] = []
        for k, v in value.items():
            out.extend(flatten(v, prefix + (_label(k),)))
        return out
    if isinstance(value, list):
        return [(prefix, ", ".join(str(v) for v in value))] if value else []
    if value is None:
        return []
    return [(prefix, str(value))]


def format_facts(value: Any, indent: str = "") -> str:
    """Findings as short 'Path: value' lines for prompts."""
    lines = []
    for path, text in flatten(value):
        lines.append(f"{indent}{' > '.join(path) or 'Note'}: {text}")
    return "\n".join(lines)
