"""The roles of a consultation, their default generation settings and their system
prompts.

Role names are open: a role is a name with defaults registered here (or given in a run
spec). ``CONSULTATION_ROLES`` are the participants a consultation asks for turns;
``judge`` is the diagnosis scorer's model. The three consultation roles are also spelled
out where a cast is checked or built (``agents.consultation``, ``game.world``) and where
the shell names who may be played or shown (``medsim.cli``, ``medsim.html_report``).
"""
from __future__ import annotations

from dataclasses import dataclass

from agents.catalogue import CATALOGUE
from agents.cases.model import Case, format_facts
from agents.prompts import render

__all__ = ["RoleDefaults", "ROLE_DEFAULTS", "CONSULTATION_ROLES", "OPTIONAL_ROLES", "vision_system", "SPEAKER_LABELS", "role_defaults",
           "doctor_system", "patient_system", "measurement_system"]


@dataclass(frozen=True)
class RoleDefaults:
    """A role's generation defaults (what a run spec starts from) and how it is named
    in transcripts."""

    temperature: float
    max_tokens: int
    stop: tuple[str, ...] = ()
    label: str = ""
    backend: str | None = None  # a default backend of its own ("none": not there unless configured)


ROLE_DEFAULTS: dict[str, RoleDefaults] = {
    "doctor": RoleDefaults(0.2, 120, ("\nPatient:", "\nTechnician:"), "Doctor"),
    "patient": RoleDefaults(0.2, 100, ("\nDoctor:",), "Patient"),
    "measurement": RoleDefaults(0.0, 160, ("\nDoctor:",), "Technician"),
    "judge": RoleDefaults(0.0, 60, (), "Judge"),
    # reflects on a wrong diagnosis and writes a general insight (the memory's learning loop)
    "reflector": RoleDefaults(0.2, 160, (), "Reflector"),
    # reads returned images for the doctor (a vision model; none unless one is configured)
    "vision": RoleDefaults(0.0, 160, (), "Radiologist", backend="none"),
}
# who takes turns in a consultation (the judge scores it afterwards)
CONSULTATION_ROLES = ("doctor", "patient", "measurement")
OPTIONAL_ROLES = ("vision",)  # may be "none": the consultation goes on without them
SPEAKER_LABELS = {name: d.label for name, d in ROLE_DEFAULTS.items()}


def role_defaults(role: str) -> RoleDefaults:
    """Defaults of a registered role; an unregistered role gets neutral ones."""
    return ROLE_DEFAULTS.get(role) or RoleDefaults(0.2, 200, (), role.replace("_", " ").title())


def doctor_system(case: Case, max_turns: int, *, mode: str = "markers", style: str = "medsim",
                  measurement: bool = True, static: bool = False) -> str:
    """The doctor's system prompt: ``mode`` structured (JSON actions) or markers
    (REQUEST TEST / DIAGNOSIS READY); ``style`` medsim or agentclinic (markers only);
    ``measurement`` False: no technician (no tests offered); ``static``: the whole case at
    once (static QA, one answer)."""
    if static:
        return render("doctor_static", objective=case.objective, demographics=case.demographics,
                      facts=format_facts({k: v for k, v in case.patient.items() if k != "Demographics"}, indent="- "),
                      exam=format_facts(case.exam, indent="- ") or "- none recorded",
                      tests=format_facts(case.tests, indent="- ") or "- none recorded")
    name = "doctor_agentclinic" if style == "agentclinic" else "doctor_structured" if mode == "structured" else "doctor"
    if name == "doctor_structured" and not measurement:
        name = "doctor_structured_notests"
    return render(name, objective=case.objective, demographics=case.demographics, max_turns=max_turns,
                  catalogue="; ".join(CATALOGUE))


def patient_system(case: Case, *, style: str = "medsim") -> str:
    facts = {k: v for k, v in case.patient.items() if k != "Demographics"}
    name = "patient_agentclinic" if style == "agentclinic" else "patient"
    return render(name, demographics=case.demographics, facts=format_facts(facts, indent="- "))


def measurement_system(case: Case, *, style: str = "medsim", hinted: bool = False) -> str:
    """With ``hinted`` the records come with each order (only the matching ones), so the
    system prompt does not carry all of them: fewer tokens evaluated per case."""
    if hinted and style != "agentclinic":
        return render("measurement_hinted", demographics=case.demographics)
    return render(
        "measurement_agentclinic" if style == "agentclinic" else "measurement",
        demographics=case.demographics,
        exam=format_facts(case.exam, indent="- ") or "- none recorded",
        tests=format_facts(case.records(), indent="- ") or "- none recorded",
    )


def vision_system() -> str:
    return render("vision")
