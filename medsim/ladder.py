"""MedAgentSim's ablation ladder as a grid of conditions (its report's comparison of the
rungs is :mod:`agents.conditions`'s, as any ordered grid's).

Rungs: static QA (the doctor reads the whole case at once: AutoMedic's static baseline),
baseline (no technician), +measurement, +memory (frozen, after a learning split), +CoT,
+ensemble, and a role-split panel (MAI-DxO's) beside the voting one. With several seeds per case (``--repeats``), intervals are over cases (each
case's mean across seeds), so repeats do not shrink them as if they were new cases.
"""
from __future__ import annotations

from typing import Any

__all__ = ["ladder_conditions", "LADDER"]

LADDER = ("static", "baseline", "measurement", "memory", "cot", "ensemble", "panel")


def ladder_conditions(*, memory: bool, ensemble: int = 5) -> dict[str, dict[str, Any]]:
    """The ladder's conditions (run-spec ``conditions`` input). Without a memory (no
    learning split) the memory rung is left out and the later rungs go on without it."""
    mem_on = {"mode": "frozen"} if memory else {"mode": "off"}
    off = {"mode": "off"}
    rungs: dict[str, dict[str, Any]] = {
        "static": {"protocol": {"static": True}, "memory": off, "diagnosis": {"cot": False, "ensemble": 0}},
        "baseline": {"protocol": {"measurement": False}, "memory": off, "diagnosis": {"cot": False, "ensemble": 0}},
        "measurement": {"protocol": {"measurement": True}, "memory": off, "diagnosis": {"cot": False, "ensemble": 0}},
    }
    if memory:
        rungs["memory"] = {"protocol": {"measurement": True}, "memory": mem_on, "diagnosis": {"cot": False, "ensemble": 0}}
    rungs["cot"] = {"protocol": {"measurement": True}, "memory": mem_on, "diagnosis": {"cot": True, "ensemble": 0}}
    rungs["ensemble"] = {"protocol": {"measurement": True}, "memory": mem_on,
                         "diagnosis": {"cot": True, "ensemble": ensemble}}
    # MAI-DxO's role-split panel beside the voting one (compared with the rung before it)
    rungs["panel"] = {"protocol": {"measurement": True}, "memory": mem_on,
                      "diagnosis": {"cot": True, "ensemble": 0, "panel": "roles"}}
    return rungs
