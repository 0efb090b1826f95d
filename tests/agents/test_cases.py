import json
from pathlib import Path

import pytest

from agents.cases import CaseSetError, load_agentclinic_jsonl, load_cases, registered_case_sets

IMAGING = ("x-ray", "xray", "ct", "mri", "ultrasound")


def test_demo_set_is_registered_and_rich():
    assert "demo" in registered_case_sets()
    cases, errors = load_cases("demo")
    assert errors == []
    assert len(cases) >= 20
    assert len({c.specialty for c in cases}) >= 10
    assert len({c.diagnosis.lower() for c in cases}) == len(cases)
    for c in cases:
        assert c.patient.get("History") and c.exam and len(c.tests) >= 3, c.id
        # the patient does not know the diagnosis
        assert c.diagnosis.lower() not in json.dumps(c.patient).lower(), c.id
    with_imaging = [c for c in cases if any(m in k.lower().replace("_", " ").split() or m in k.lower() for k in c.tests for m in IMAGING)]
    assert len(with_imaging) >= 10


def test_agentclinic_file_loads_all_107(agentclinic_path):
    cases, errors = load_agentclinic_jsonl(agentclinic_path)
    assert errors == []
    assert len(cases) == 107
    assert len({c.id for c in cases}) == 107
    assert cases[0].diagnosis == "Myasthenia gravis"
    assert cases[0].id == "agentclinic_medqa-001"
    # quirks: some cases have null vital signs or no test results
    assert any(not c.tests for c in cases)
    assert all("Vital_Signs" not in c.exam or c.exam["Vital_Signs"] is not None for c in cases)


def _write(tmp_path: Path, lines: list[str], name="bad.jsonl", final_newline=True) -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + ("\n" if final_newline else ""), encoding="utf-8")
    return p


def _rec(**over):
    osce = {
        "Objective_for_Doctor": "Assess the patient.",
        "Patient_Actor": {"Demographics": "40-year-old man", "History": "Cough."},
        "Physical_Examination_Findings": {"Vital_Signs": None},
        "Test_Results": {},
        "Correct_Diagnosis": "Pneumonia",
    }
    osce.update(over)
    return json.dumps({"OSCE_Examination": osce})


def test_tolerates_quirks(tmp_path):
    p = _write(tmp_path, [_rec(), "", _rec(Extra_Key="x", Test_Results=None)], final_newline=False)
    cases, errors = load_agentclinic_jsonl(p)
    assert errors == [] and len(cases) == 2
    assert cases[0].exam == {} and cases[1].tests == {} and cases[1].extra == {"Extra_Key": "x"}
    assert cases[1].id == "bad-003"


def test_malformed_records_name_file_line_and_field(tmp_path):
    p = _write(tmp_path, [
        _rec(),
        "{not json",
        _rec(Correct_Diagnosis=""),
        json.dumps({"OSCE_Examination": {"Objective_for_Doctor": "x", "Patient_Actor": "oops", "Correct_Diagnosis": "y"}}),
        json.dumps([1, 2]),
        _rec(Test_Results="none"),
    ])
    cases, errors = load_agentclinic_jsonl(p)
    assert len(cases) == 1
    got = {(e.line, e.field) for e in errors}
    assert (2, "<json>") in got
    assert (3, "OSCE_Examination.Correct_Diagnosis") in got
    assert (4, "OSCE_Examination.Patient_Actor") in got
    assert (5, "<record>") in got
    assert (6, "OSCE_Examination.Test_Results") in got
    assert all(str(p) in str(e) for e in errors)
    with pytest.raises(CaseSetError) as ei:
        load_cases(str(p))
    msg = str(ei.value)
    for line in (2, 3, 4, 5, 6):
        assert f"{p}:{line}:" in msg
    cases, errors = load_cases(str(p), skip_invalid=True)
    assert len(cases) == 1 and len(errors) == 5


def test_duplicate_ids_and_unknown_set(tmp_path):
    a = json.dumps({"id": "x1", **json.loads(_rec())})
    p = _write(tmp_path, [a, a])
    cases, errors = load_agentclinic_jsonl(p)
    assert len(cases) == 1 and errors[0].field == "id" and errors[0].line == 2
    with pytest.raises(CaseSetError, match="not found"):
        load_cases("no-such-set")
