"""Named case sets and the ``--cases PATH_OR_NAME`` resolver."""
from __future__ import annotations

from importlib import resources
from pathlib import Path

import json

from agents.cases.agentclinic import load_agentclinic_jsonl
from agents.cases.nejm import load_nejm_jsonl, looks_like_nejm
from agents.cases.model import Case, CaseRecordError, CaseSetError

__all__ = ["registered_case_sets", "resolve_case_path", "load_cases"]

# name -> file inside the agents package (versioned ids may follow: demo-v1, ...)
_REGISTRY = {"demo": "casesets/demo.jsonl", "imaging": "casesets/imaging.jsonl"}


def registered_case_sets() -> list[str]:
    return sorted(_REGISTRY)


def resolve_case_path(spec: str) -> Path:
    if spec in _REGISTRY:
        return Path(str(resources.files("agents").joinpath(_REGISTRY[spec])))
    if "\x00" in spec or any("\ud800" <= ch <= "\udfff" for ch in spec):
        # a name that is not UTF-8 text (the OS hands its bytes over as surrogates) would end
        # up in every log and report, none of which can hold it: refused before anything runs
        try:
            shown = spec.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            shown = spec.encode("utf-8", "backslashreplace").decode("utf-8")
        raise CaseSetError(f"case set path '{shown}' is not UTF-8 text (or holds a NUL); rename the file")
    p = Path(spec).expanduser()
    if p.is_file():
        return p
    raise CaseSetError(
        f"case set '{spec}' not found: not a registered name ({', '.join(registered_case_sets())}) "
        f"nor an existing file"
    )


def _format(path: Path) -> str:
    """"nejm" when the first record is in the NEJM image-challenge format, else "agentclinic"."""
    try:
        with path.open("rb") as fh:
            for raw in fh:
                if raw.strip():
                    try:
                        return "nejm" if looks_like_nejm(json.loads(raw.decode("utf-8-sig"))) else "agentclinic"
                    except (ValueError, RecursionError):
                        return "agentclinic"  # the loader names the bad line
    except OSError:
        pass
    return "agentclinic"


def load_cases(spec: str, *, skip_invalid: bool = False) -> tuple[list[Case], list[CaseRecordError]]:
    """Load a case set by name or path. Invalid records raise :class:`CaseSetError`
    listing every one of them, unless ``skip_invalid`` (then they are returned)."""
    path = resolve_case_path(spec)
    cases, errors = (load_nejm_jsonl(path) if _format(path) == "nejm" else load_agentclinic_jsonl(path))
    if errors and not skip_invalid:
        raise CaseSetError(
            f"{path}: {len(errors)} invalid record(s); fix them or pass --skip-invalid", errors
        )
    if not cases:
        raise CaseSetError(f"{path}: no valid cases", errors)
    return cases, errors
