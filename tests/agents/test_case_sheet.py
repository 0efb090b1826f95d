"""The case sheet of the role a person plays: one text for the terminal and the window."""
import pytest

from agents.case_sheet import case_sheet
from agents.cases.model import Case
from agents.roles import STAFF, Role, order_words, register_role, unregister_role

CASE = Case(id="c1", objective="Find out why.", demographics="40-year-old woman",
            patient={"Demographics": "40-year-old woman", "History": "Cough for a week",
                     "Symptoms": {"Primary_Symptom": "Cough", "Secondary_Symptoms": ["Fever", "Chills"]}},
            exam={"Vital_Signs": {"Temperature": "38.9 C"}}, tests={}, diagnosis="Pneumonia", source="x:1")


def test_the_patient_knows_their_story_and_not_the_diagnosis():
    sheet = case_sheet(CASE, "patient")
    assert sheet.text() == ("You are the patient: a 40-year-old woman. What you know about yourself:\n"
                            "  History: Cough for a week\n"
                            "  Symptoms > Primary Symptom: Cough\n"
                            "  Symptoms > Secondary Symptoms: Fever, Chills")
    assert "Pneumonia" not in sheet.text() and "38.9" not in sheet.text()


def test_staff_roles_read_the_records_and_the_doctor_has_no_sheet():
    assert case_sheet(CASE, "measurement").text() == (
        "You are the technician for a 40-year-old woman; answer each order from the records:\n"
        " Examination:\n  Vital Signs > Temperature: 38.9 C\n Tests:\n  none recorded")
    assert case_sheet(CASE, "doctor") is None and case_sheet(CASE, "judge") is None
    register_role(Role("nurse", kind=STAFF, answers=order_words("vital")))
    try:
        assert case_sheet(CASE, "nurse").heading.startswith("You are the nurse for a 40-year-old woman")
    finally:
        unregister_role("nurse")
    with pytest.raises(KeyError, match="did you mean 'patient'"):
        case_sheet(CASE, "patiant")
