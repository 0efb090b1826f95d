"""The case sheet a person reads when they play a role: the patient's facts about
themselves, or the records a staff role (the technician, a nurse) answers orders from.

One text for every shell: ``medsim consult --as patient`` prints it before the first turn
and the hospital window shows it beside the dialogue. The doctor has no sheet: it starts
with the objective and the demographics only (the information asymmetry of the seeds).
The text is the case's own; each shell escapes it for its medium
(:func:`agents.textsafe.printable`).
"""
from __future__ import annotations

from dataclasses import dataclass

from agents.cases.model import Case, flatten
from agents.roles import PATIENT, STAFF, get_role

__all__ = ["CaseSheet", "case_sheet"]


@dataclass(frozen=True)
class CaseSheet:
    """``heading`` (who you are), then ``sections``: (title, facts), each fact a
    ``Path > to: value`` line; a section title may be "" (the patient's one section)."""

    case_id: str
    role: str
    heading: str
    sections: tuple[tuple[str, tuple[str, ...]], ...]

    def lines(self, fact_indent: str = "  ", title_indent: str = " ") -> list[str]:
        """The sheet as text lines: the heading, then each section's title and its facts
        (an empty section under a title says "none recorded")."""
        out = [self.heading]
        for title, facts in self.sections:
            if title:
                out.append(f"{title_indent}{title}:")
            out += [f"{fact_indent}{f}" for f in facts] or ([f"{fact_indent}none recorded"] if title else [])
        return out

    def text(self) -> str:
        """The sheet as the terminal prints it."""
        return "\n".join(self.lines())


def _facts(value: object) -> tuple[str, ...]:
    return tuple(f"{' > '.join(path) or 'Note'}: {text}" for path, text in flatten(value))


def case_sheet(case: Case, role: str) -> CaseSheet | None:
    """The sheet of ``role`` (a registered role's name: ``patient``, ``measurement``) for
    ``case``; None for a role that has none (the doctor, the judge).

    Args:
        case: the consultation's case.
        role: the role a person plays (its spec name; the technician is ``measurement``).

    Returns:
        The sheet, or None.
    """
    kind = get_role(role).kind
    if kind == PATIENT:
        facts = {k: v for k, v in case.patient.items() if k != "Demographics"}
        return CaseSheet(case.id, role, f"You are the patient: a {case.demographics}. What you know about yourself:",
                         (("", _facts(facts)),))
    if kind == STAFF:
        label = get_role(role).label.lower()
        return CaseSheet(case.id, role,
                         f"You are the {label} for a {case.demographics}; answer each order from the records:",
                         (("Examination", _facts(case.exam)), ("Tests", _facts(case.records()))))
    return None
