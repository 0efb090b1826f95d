"""Loader for the NEJM image-challenge format (AgentClinic's NEJM / NEJM-extended files):
one JSON object per line with ``image_url``, ``question``, ``patient_info``,
``physical_exams`` and ``answers`` ([{"text", "correct"}], exactly one correct).

A record becomes a case: the doctor's objective is the question; the patient knows the
history (``patient_info``); the technician holds the examination (``physical_exams``) and
the image, as an imaging study answering an order for imaging; the answer key is the
correct choice (the choices are kept in ``extra``). AgentClinic never passes the image to
the doctor; here the technician returns it, and a vision model reads it when configured.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agents.cases.jsonl import load_records
from agents.cases.model import Case, CaseRecordError, ImagingStudy, image_location, image_outside

__all__ = ["load_nejm_jsonl", "parse_nejm_record", "looks_like_nejm"]

_DEMOGRAPHICS = re.compile(r"\b(\d{1,3})[- ](year|month|week|day)s?[- ]old\s+(man|woman|boy|girl|male|female|infant|child|"
                           r"patient|person)\b", re.IGNORECASE)


def looks_like_nejm(record: Any) -> bool:
    return isinstance(record, dict) and "answers" in record and ("image_url" in record or "question" in record)


def parse_nejm_record(record: Any, path: str, line: int) -> tuple[Case | None, list[CaseRecordError]]:
    problems: list[tuple[str, str]] = []
    if not isinstance(record, dict):
        return None, [CaseRecordError(path, line, "<record>", f"expected a JSON object, got {type(record).__name__}")]
    for key in ("question", "patient_info"):
        if not isinstance(record.get(key), str) or not record[key].strip():
            problems.append((key, "missing or not a non-empty string"))
    exams = record.get("physical_exams", "")
    if exams is not None and not isinstance(exams, str):
        problems.append(("physical_exams", "not a string"))
    image = record.get("image_url")
    if image is not None and (not isinstance(image, str) or not image.strip()):
        problems.append(("image_url", "present but not a non-empty string"))
    elif isinstance(image, str) and "\x00" in image:
        problems.append(("image_url", "holds a NUL character: not a file name or URL"))
    elif isinstance(image, str) and (why := image_outside(image_location(image, Path(path).parent), Path(path).parent)):
        problems.append(("image_url", why))
    answers = record.get("answers")
    correct: list[str] = []
    if not isinstance(answers, list) or not answers:
        problems.append(("answers", "missing or not a non-empty list of {text, correct}"))
    else:
        for i, a in enumerate(answers):
            if not isinstance(a, dict) or not isinstance(a.get("text"), str) or not isinstance(a.get("correct"), bool):
                problems.append((f"answers[{i}]", "expected {\"text\": string, \"correct\": true|false}"))
            elif a["correct"]:
                correct.append(a["text"].strip())
        if answers and len(correct) != 1 and not any(f.startswith("answers[") for f, _ in problems):
            problems.append(("answers", f"exactly one answer must be correct, found {len(correct)}"))
    case_id = record.get("id")
    if case_id is not None and (not isinstance(case_id, str) or not case_id.strip()):
        problems.append(("id", "present but not a non-empty string"))
    if problems:
        return None, [CaseRecordError(path, line, f, m) for f, m in problems]
    info = record["patient_info"].strip()
    m = _DEMOGRAPHICS.search(info)
    demographics = f"{m.group(1)}-{m.group(2).lower()}-old {m.group(3).lower()}" if m else "adult patient"
    studies: tuple[ImagingStudy, ...] = ()
    if image:
        studies = (ImagingStudy(test="Imaging", modality="image", body_part="",
                                image=image_location(image, Path(path).parent),
                                report="The image was taken; it has no written report."),)
    return Case(
        id=(case_id or f"{Path(path).stem}-{line:03d}").strip(),
        objective=f"Evaluate the patient and answer: {record['question'].strip()}",
        demographics=demographics,
        patient={"Demographics": demographics, "History": info},
        exam={"Physical_Examination": exams.strip()} if isinstance(exams, str) and exams.strip() else {},
        tests={},
        diagnosis=correct[0],
        source=f"{path}:{line}",
        extra={"format": "nejm", "answers": [a["text"] for a in answers], "question": record["question"]},
        imaging=studies,
    ), []


def load_nejm_jsonl(path: str | Path) -> tuple[list[Case], list[CaseRecordError]]:
    return load_records(path, parse_nejm_record)
