"""Loader for AgentClinic OSCE JSONL (MedQA, MedQA-extended, MIMIC-IV format).

Each line is ``{"OSCE_Examination": {"Objective_for_Doctor", "Patient_Actor",
"Physical_Examination_Findings", "Test_Results", "Correct_Diagnosis"}}``. Tolerated:
null ``Vital_Signs``, empty or missing ``Test_Results``, extra keys, no final newline,
blank lines. Optional top-level ``id`` and ``specialty`` (the shipped sets use them);
otherwise the id is ``<file stem>-<line>``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.cases.jsonl import load_records
from agents.cases.model import Case, CaseRecordError, ImagingStudy, image_location, image_outside

__all__ = ["load_agentclinic_jsonl", "parse_record"]

_TOP = "OSCE_Examination"


def _req_str(obj: dict, key: str, where: str, errors: list[str]) -> str:
    v = obj.get(key)
    if not isinstance(v, str) or not v.strip():
        errors.append((f"{where}.{key}", "missing or not a non-empty string"))
        return ""
    return v.strip()


def parse_record(record: Any, path: str, line: int) -> tuple[Case | None, list[CaseRecordError]]:
    """One decoded JSON value -> (Case, []) or (None, errors)."""
    problems: list[tuple[str, str]] = []

    def err() -> tuple[None, list[CaseRecordError]]:
        return None, [CaseRecordError(path, line, f, m) for f, m in problems]

    if not isinstance(record, dict):
        problems.append(("<record>", f"expected a JSON object, got {type(record).__name__}"))
        return err()
    osce = record.get(_TOP)
    if not isinstance(osce, dict):
        problems.append((_TOP, "missing or not an object"))
        return err()
    objective = _req_str(osce, "Objective_for_Doctor", _TOP, problems)
    diagnosis = _req_str(osce, "Correct_Diagnosis", _TOP, problems)
    patient = osce.get("Patient_Actor")
    demographics = ""
    if not isinstance(patient, dict):
        problems.append((f"{_TOP}.Patient_Actor", "missing or not an object"))
    else:
        demographics = _req_str(patient, "Demographics", f"{_TOP}.Patient_Actor", problems)
    exam = osce.get("Physical_Examination_Findings")
    if exam is None:
        exam = {}
    elif not isinstance(exam, dict):
        problems.append((f"{_TOP}.Physical_Examination_Findings", "not an object"))
    tests = osce.get("Test_Results")
    if tests is None:
        tests = {}
    elif not isinstance(tests, dict):
        problems.append((f"{_TOP}.Test_Results", "not an object"))
    case_id = record.get("id")
    if case_id is not None and (not isinstance(case_id, str) or not case_id.strip()):
        problems.append(("id", "present but not a non-empty string"))
    imaging = parse_imaging(record.get("imaging"), path, problems)
    if problems:
        return err()
    if not case_id:
        case_id = f"{Path(path).stem}-{line:03d}"
    known = {"Objective_for_Doctor", "Patient_Actor", "Physical_Examination_Findings",  # noqa: E501
             "Test_Results", "Correct_Diagnosis"}
    extra = {k: v for k, v in osce.items() if k not in known}
    specialty = record.get("specialty") if isinstance(record.get("specialty"), str) else None
    # Vital_Signs: null is tolerated (dropped, the technician then reports "not available").
    exam = {k: v for k, v in exam.items() if v is not None}
    return Case(
        id=case_id.strip(),
        objective=objective,
        demographics=demographics,
        patient=dict(patient),
        exam=exam,
        tests=dict(tests),
        diagnosis=diagnosis,
        source=f"{path}:{line}",
        specialty=specialty,
        extra=extra,
        imaging=imaging,
    ), []


def parse_imaging(value: Any, path: str, problems: list[tuple[str, str]]) -> tuple[ImagingStudy, ...]:
    """A record's ``imaging`` list: [{test, modality, body_part, image, report}]; the image
    path is resolved against the case file's folder (a URL is kept)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        problems.append(("imaging", "not a list of studies"))
        return ()
    out = []
    base = Path(path).parent
    for i, st in enumerate(value):
        where = f"imaging[{i}]"
        if not isinstance(st, dict):
            problems.append((where, "not an object"))
            continue
        vals = {}
        for key in ("test", "modality", "image", "report"):
            v = st.get(key)
            if not isinstance(v, str) or not v.strip():
                problems.append((f"{where}.{key}", "missing or not a non-empty string"))
            vals[key] = v.strip() if isinstance(v, str) else ""
        body = st.get("body_part", "")
        if "\x00" in vals["image"]:
            problems.append((f"{where}.image", "holds a NUL character: not a file name or URL"))
        img = image_location(vals["image"], base) if vals["image"] else ""
        if img and "\x00" not in img and (why := image_outside(img, base)):
            problems.append((f"{where}.image", why))
        out.append(ImagingStudy(vals["test"], vals["modality"], body if isinstance(body, str) else "", img,
                                vals["report"]))
    return tuple(out)


def load_agentclinic_jsonl(path: str | Path) -> tuple[list[Case], list[CaseRecordError]]:
    """Read every record; return the valid cases and one error per invalid record
    (file, line, field). Never raises for bad records; raises OSError for a missing file."""
    return load_records(path, parse_record)
