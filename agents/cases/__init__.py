"""Typed cases and the loaders for case sets: AgentClinic OSCE JSONL, NEJM image-challenge
JSONL, and the shipped ``demo`` and ``imaging`` sets (by name, ``agents.cases.registry``)."""
from agents.cases.model import Case, CaseRecordError, CaseSetError
from agents.cases.agentclinic import load_agentclinic_jsonl
from agents.cases.registry import load_cases, registered_case_sets

__all__ = [
    "Case",
    "CaseRecordError",
    "CaseSetError",
    "load_agentclinic_jsonl",
    "load_cases",
    "registered_case_sets",
]
