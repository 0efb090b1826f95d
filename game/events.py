"""World events (movement, arrivals, the shift's bookkeeping). Consultation events from
``agents.events`` are logged alongside them, tagged with ``case_id`` and sim time ``t``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from agents.events import Event

__all__ = ["ShiftHeader", "ControlChanged", "Spawned", "MoveStarted", "Arrived", "EncounterStarted", "TestTrip",
           "CaseFiled", "PatientLeft", "ShiftFinished"]


@dataclass(frozen=True)
class ShiftHeader(Event):
    """The first line of a shift log: the map, the whole run spec, the models and the
    provenance a bench log's header has (``agents.events.Header``)."""

    type: ClassVar[str] = "shift_header"
    map: str
    seed: int
    spec: dict
    models: dict
    git_revision: str
    packages: dict
    command: list = field(default_factory=list)
    started: str | None = None  # UTC, ISO 8601
    cases_sha256: str | None = None
    model_sha256: dict = field(default_factory=dict)
    llama_cpp_build: str | None = None  # the CPU features of an in-process model's llama.cpp


@dataclass(frozen=True)
class ControlChanged(Event):
    """A person took an agent over (``controller`` "human") or handed it back ("ai")."""

    type: ClassVar[str] = "control"
    actor: str
    controller: str


@dataclass(frozen=True)
class Spawned(Event):
    type: ClassVar[str] = "spawned"
    actor: str
    role: str
    sprite: str
    x: int
    y: int


@dataclass(frozen=True)
class MoveStarted(Event):
    type: ClassVar[str] = "move"
    actor: str
    purpose: str
    x: int
    y: int
    to_x: int
    to_y: int
    to_room: str | None
    steps: int


@dataclass(frozen=True)
class Arrived(Event):
    type: ClassVar[str] = "arrived"
    actor: str
    purpose: str
    x: int
    y: int
    room: str | None
    address: str | None


@dataclass(frozen=True)
class EncounterStarted(Event):
    type: ClassVar[str] = "encounter_started"
    doctor: str
    patient: str
    room: str


@dataclass(frozen=True)
class TestTrip(Event):
    """A requested test sends the patient (with the technician) or the technician alone
    to the room that does it."""

    type: ClassVar[str] = "test_trip"
    test: str
    room: str
    station: str
    bedside: bool


@dataclass(frozen=True)
class CaseFiled(Event):
    type: ClassVar[str] = "case_filed"
    doctor: str
    room: str


@dataclass(frozen=True)
class PatientLeft(Event):
    type: ClassVar[str] = "patient_left"
    patient: str


@dataclass(frozen=True)
class ShiftFinished(Event):
    type: ClassVar[str] = "shift_finished"
    patients: int
    diagnosed: int
    correct: int
    errors: int
    failed: int = 0
