"""The roles: a registry with one entry per role, and the built-in ones.

A :class:`Role` says everything medsim needs to know of a role: its generation defaults,
how transcripts and the command line name it, its kind (what it does in a consultation),
whether a person can play it, whether it may be absent, which orders it answers (a staff
role), how its system prompt is built, and how the hospital world shows it. Nothing else
keeps a list of roles: the run spec, the command line's flags, the cast, the scripted
backend, the guards and the world read this registry (PettingZoo's ``possible_agents``
as data).

Adding a role (a nurse who takes vital signs) is one :func:`register_role`::

    register_role(Role("nurse", label="Nurse", kind=STAFF, answers=order_words("vital", "pressure"),
                       priority=10, world=Presence(sprite="technician", home="technician_spawn")))

Kinds: ``doctor`` (asks, orders, diagnoses), ``patient`` (answers questions), ``staff``
(answers the orders it claims from the case's records: the technician, a nurse),
``reader`` (reads returned images), ``scorer`` (the judge) and ``learner`` (the
memory's reflector). The consultation asks the staff role with the highest ``priority``
whose ``answers`` claims an order; the technician (``measurement``, priority 0) claims
every order.
"""
from __future__ import annotations

import difflib
import re
import threading
from dataclasses import dataclass
from typing import Callable

from agents.catalogue import CATALOGUE
from agents.cases.model import Case, format_facts
from agents.findings import tokens
from agents.prompts import render

__all__ = ["Role", "Presence", "RoleDefaults", "DOCTOR", "PATIENT", "STAFF", "READER", "SCORER", "LEARNER",
           "CONSULTATION_KINDS", "register_role", "unregister_role", "get_role", "role_defaults", "role_names",
           "roles_of_kind", "staff_for", "speaker_label", "flag_name", "role_for_flag", "playable_roles",
           "order_words", "doctor_system", "patient_system", "measurement_system", "vision_system", "UnknownRole"]

DOCTOR, PATIENT, STAFF, READER, SCORER, LEARNER = "doctor", "patient", "staff", "reader", "scorer", "learner"
KINDS = (DOCTOR, PATIENT, STAFF, READER, SCORER, LEARNER)
# the kinds that are participants of a consultation (the cast)
CONSULTATION_KINDS = (DOCTOR, PATIENT, STAFF, READER)


class UnknownRole(KeyError):
    """A role name no registration knows (with the nearest known name)."""

    def __init__(self, name: str, near: str | None):
        hint = f" (did you mean '{near}'?)" if near else ""
        super().__init__(f"no role '{name}'{hint}; roles: {', '.join(role_names())}")
        self.name, self.near = name, near

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Presence:
    """How the hospital world shows a role that is not a doctor or a patient: its actor's
    sprite and the map point it waits at (and goes back to)."""

    sprite: str
    home: str  # a point name on the map (technician_spawn)
    actor: str | None = None  # the actor's id (default: the role's flag name)


@dataclass(frozen=True)
class Role:
    """One role. ``answers(order) -> bool`` (staff roles): whether it answers an order;
    ``system(case, style, hinted) -> str``: its system prompt in a consultation (staff and
    reader roles; the doctor's and the patient's are built by the cast from the protocol);
    ``corrections``: what the guards tell it for each problem (None: its kind's)."""

    name: str
    label: str = ""
    kind: str = STAFF
    temperature: float = 0.2
    max_tokens: int = 200
    stop: tuple[str, ...] = ()
    backend: str | None = None  # a default backend of its own ("none": absent unless configured)
    flag: str | None = None  # its name on the command line and on screen (default: its name)
    playable: bool = False  # a person can play it (consult --as, play --as)
    optional: bool = False  # its backend may be "none" (the consultation goes on without it)
    answers: Callable[[str], bool] | None = None
    priority: int = 0
    system: Callable[[Case, str, bool], str] | None = None
    corrections: dict[str, str] | None = None
    world: Presence | None = None

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "").isalnum():
            raise ValueError(f"a role name is letters, digits and '_', got {self.name!r}")
        if self.kind not in KINDS:
            raise ValueError(f"role {self.name}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.kind == STAFF and self.answers is None:
            raise ValueError(f"role {self.name}: a staff role says which orders it answers (answers=...)")
        if not self.label:
            object.__setattr__(self, "label", self.name.replace("_", " ").title())

    @property
    def flag_name(self) -> str:
        return self.flag or self.name

    @property
    def speaker_words(self) -> frozenset[str]:
        """The words a transcript line of this role starts with ("Technician:")."""
        return frozenset({*re.findall(r"[a-z0-9]+", self.label.lower()), self.flag_name, self.name})


RoleDefaults = Role  # what role_defaults() returns (temperature, max_tokens, stop, label, backend)

_LOCK = threading.Lock()
_ROLES: dict[str, Role] = {}


def register_role(role: Role, *, replace_existing: bool = False) -> Role:
    """Add ``role`` to the registry (a name registered twice is an error unless
    ``replace_existing``). Returns it."""
    with _LOCK:
        if role.name in _ROLES and not replace_existing:
            raise ValueError(f"role '{role.name}' is already registered")
        flags = {r.flag_name: r.name for r in _ROLES.values() if r.name != role.name}
        if role.flag_name in flags or role.flag_name in _ROLES and role.flag_name != role.name:
            raise ValueError(f"role '{role.name}': the name '{role.flag_name}' is taken by role "
                             f"'{flags.get(role.flag_name, role.flag_name)}'")
        _ROLES[role.name] = role
    return role


def unregister_role(name: str) -> None:
    """Remove a role (tests that register one take it away again)."""
    with _LOCK:
        _ROLES.pop(name, None)


def role_names() -> tuple[str, ...]:
    """Every registered role, in registration order."""
    return tuple(_ROLES)


def get_role(name: str) -> Role:
    """The registered role ``name``; :class:`UnknownRole` (a KeyError naming the nearest
    role) otherwise."""
    try:
        return _ROLES[name]
    except KeyError:
        near = difflib.get_close_matches(name, [*_ROLES, *(r.flag_name for r in _ROLES.values())], n=1)
        raise UnknownRole(name, near[0] if near else None) from None


def role_defaults(role: str) -> Role:
    """A role's defaults: its registration, or neutral ones for a name no one registered."""
    return _ROLES.get(role) or Role(role, kind=SCORER)


def roles_of_kind(*kinds: str) -> tuple[Role, ...]:
    return tuple(r for r in _ROLES.values() if r.kind in kinds)


def playable_roles() -> tuple[Role, ...]:
    return tuple(r for r in _ROLES.values() if r.playable)


def staff_for(order: str, present: "Callable[[str], bool] | None" = None) -> Role | None:
    """The staff role that answers ``order``: the highest priority that claims it (among
    those ``present`` accepts, e.g. the ones in a cast); None when none does."""
    staff = sorted((r for r in _ROLES.values() if r.kind == STAFF and (present is None or present(r.name))),
                   key=lambda r: -r.priority)
    return next((r for r in staff if r.answers is not None and r.answers(order)), None)


def speaker_label(role: str) -> str:
    """How transcripts name a speaker ("Technician" for ``measurement``)."""
    r = _ROLES.get(role)
    return r.label if r is not None else role.replace("_", " ").title()


def flag_name(role: str) -> str:
    """A role's name on the command line and on screen (``technician`` for ``measurement``)."""
    r = _ROLES.get(role)
    return r.flag_name if r is not None else role


def role_for_flag(name: str) -> str:
    """The role a command-line name stands for (``technician`` -> ``measurement``)."""
    return next((r.name for r in _ROLES.values() if r.flag_name == name), name)


def order_words(*words: str) -> Callable[[str], bool]:
    """An ``answers`` rule: an order that names one of ``words`` (whole words; a word of
    several, like "blood pressure", is matched as a phrase)."""
    keys = tuple(" ".join(tokens(w)) for w in words)

    def answers(order: str) -> bool:
        said = f" {' '.join(tokens(order))} "
        return any(k and f" {k} " in said for k in keys)

    answers.__doc__ = f"orders naming any of: {', '.join(words)}"
    return answers


def _any_order(order: str) -> bool:
    return True


# -- the built-in roles' prompts ----------------------------------------------------------
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


def patient_system(case: Case, *, style: str = "medsim", grounded: bool = False) -> str:
    """The patient's system prompt: every fact of the case (medsim's or AgentClinic's
    wording), or, ``grounded``, only who speaks and what brought them, the facts coming
    with each question (:mod:`agents.participants.grounded`)."""
    if grounded and style != "agentclinic":
        from agents.patient_voice import speaker_brief  # the fidelity analysis loads only for a grounded patient

        return render("patient_grounded", **speaker_brief(case))
    facts = {k: v for k, v in case.patient.items() if k != "Demographics"}
    name = "patient_agentclinic" if style == "agentclinic" else "patient"
    return render(name, demographics=case.demographics, facts=format_facts(facts, indent="- "))


def measurement_system(case: Case, style: str = "medsim", hinted: bool = False) -> str:
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


def vision_system(case: Case | None = None, style: str = "medsim", hinted: bool = False) -> str:
    return render("vision")


# -- the built-in roles ---------------------------------------------------------------------
for _role in (
    Role("doctor", "Doctor", DOCTOR, 0.2, 120, ("\nPatient:", "\nTechnician:"), playable=True),
    Role("patient", "Patient", PATIENT, 0.2, 100, ("\nDoctor:",), playable=True),
    Role("measurement", "Technician", STAFF, 0.0, 160, ("\nDoctor:",), flag="technician", playable=True,
         answers=_any_order, priority=0, system=measurement_system,
         world=Presence(sprite="technician", home="technician_spawn", actor="technician")),
    Role("judge", "Judge", SCORER, 0.0, 60),
    # reflects on a wrong diagnosis and writes a general insight (the memory's learning loop)
    Role("reflector", "Reflector", LEARNER, 0.2, 160),
    # reads returned images for the doctor (a vision model; none unless one is configured)
    Role("vision", "Radiologist", READER, 0.0, 160, backend="none", optional=True, system=vision_system),
):
    register_role(_role)
del _role
