"""AgentClinic's bias conditions: cognitive and implicit biases given to the doctor or
the patient.

A bias is a short text (``agents/bias_data/biases.toml``, written for medsim)
appended to that role's system prompt only: the other roles' prompts are unchanged, and
the log's ``llm_call`` events show the text in that role's system message. The doctor
has 12 biases, the patient 11 (no confirmation or status quo bias; self-diagnosis
added). A run names one bias per role (``protocol.doctor_bias`` / ``protocol.patient_bias``)
or, with several, a grid of conditions (:func:`bias_conditions`), so the report's
condition table breaks accuracy down by bias.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, ClassVar, Mapping, Sequence

from agents.events import Event

__all__ = ["DOCTOR_BIASES", "PATIENT_BIASES", "BIAS_ROLES", "BiasError", "biases_for", "bias_text", "with_bias",
           "parse_bias_list", "bias_conditions", "NO_BIAS", "BiasApplied", "bias_fields"]

DOCTOR_BIASES = ("recency", "frequency", "false_consensus", "confirmation", "status_quo", "gender", "race",
                 "sexual_orientation", "cultural", "education", "religion", "socioeconomic")
PATIENT_BIASES = ("recency", "frequency", "false_consensus", "self_diagnosis", "gender", "race",
                  "sexual_orientation", "cultural", "education", "religion", "socioeconomic")
BIAS_ROLES = ("doctor", "patient")
NO_BIAS = "none"


class BiasError(ValueError):
    """An unknown bias name (names the role and the known ones)."""


@lru_cache(maxsize=1)
def _texts() -> dict[str, dict[str, str]]:
    raw = resources.files("agents").joinpath("bias_data/biases.toml").read_text(encoding="utf-8")
    data = tomllib.loads(raw)
    return {role: {k: " ".join(str(v).split()) for k, v in data.get(role, {}).items()} for role in BIAS_ROLES}


def biases_for(role: str) -> tuple[str, ...]:
    if role == "doctor":
        return DOCTOR_BIASES
    if role == "patient":
        return PATIENT_BIASES
    raise BiasError(f"only the doctor and the patient take a bias, not the {role}")


def _norm(name: str) -> str:
    return name.strip().lower().replace("-", "_").replace(" ", "_")


def bias_text(role: str, name: str) -> str:
    """The text of ``role``'s bias ``name``."""
    known = biases_for(role)
    key = _norm(name)
    if key not in known:
        raise BiasError(f"unknown {role} bias '{name}' (known: {', '.join(known)})")
    return _texts()[role][key]


def with_bias(system: str, role: str, name: str | None) -> str:
    """``system`` with the bias appended (unchanged when ``name`` is None or "none")."""
    if not name or _norm(name) == NO_BIAS:
        return system
    return f"{system.rstrip()}\n\n{bias_text(role, name)}"


def parse_bias_list(role: str, text: str | Sequence[str]) -> list[str]:
    """``"recency,gender"`` / ``"all"`` / ``"none"`` -> checked names ("none" kept: the
    unbiased condition of a grid)."""
    items = [text] if isinstance(text, str) else list(text)
    out: list[str] = []
    for item in items:
        for part in str(item).split(","):
            key = _norm(part)
            if not key:
                continue
            names = list(biases_for(role)) if key == "all" else [key]
            for n in names:
                if n != NO_BIAS:
                    bias_text(role, n)  # raises for an unknown name
                if n not in out:
                    out.append(n)
    if not out:
        raise BiasError(f"no {role} bias named in {text!r}")
    return out


def bias_conditions(doctor: Sequence[str] = (), patient: Sequence[str] = (), *,
                    base: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """A grid (run-spec ``conditions`` input): an unbiased condition first, then one
    condition per doctor bias (``doctor-<name>``) and per patient bias
    (``patient-<name>``), each over ``base`` (another condition's overrides, or none)."""
    conds: dict[str, dict[str, Any]] = {"unbiased": {"protocol": {"doctor_bias": NO_BIAS, "patient_bias": NO_BIAS}}}
    for role, names in (("doctor", doctor), ("patient", patient)):
        for n in names:
            if n == NO_BIAS:
                continue
            bias_text(role, n)
            conds[f"{role}-{n}"] = {"protocol": {"doctor_bias": n if role == "doctor" else NO_BIAS,
                                                 "patient_bias": n if role == "patient" else NO_BIAS}}
    if base:
        for c in conds.values():
            for k, v in base.items():
                if isinstance(v, Mapping):
                    c[k] = {**v, **c.get(k, {})}
                else:
                    c.setdefault(k, v)
    return conds


@dataclass(frozen=True)
class BiasApplied(Event):
    """A bias text appended to a role's system prompt (the first events of a case; the
    results row carries ``doctor_bias`` / ``patient_bias`` from it)."""

    type: ClassVar[str] = "bias_applied"
    role: str
    bias: str
    text: str



def bias_fields(events: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """``{"doctor_bias": ..., "patient_bias": ...}`` for the biases a case's log applied."""
    return {f"{e['role']}_bias": e["bias"] for e in events if e.get("type") == BiasApplied.type}
