"""The diagnosis guard (issue 21, item 5): "Normal", "No diagnosis", symptoms and findings
are not a final diagnosis; no known truth, and no condition named after a sign, is refused."""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from agents.cases.registry import load_cases
from agents.condition_names import no_condition, not_a_condition_name, symptom_or_finding

AGENTCLINIC = Path(__file__).resolve().parents[3] / "shared" / "data" / "agentclinic"


def _truths() -> set[str]:
    sets = ["demo", "imaging"] + [str(p) for p in sorted(AGENTCLINIC.glob("*.jsonl"))]
    out = set()
    for s in sets:
        cases, _ = load_cases(s, skip_invalid=True)
        out |= {c.diagnosis for c in cases}
    pairs = resources.files("agents").joinpath("judge_pairs.jsonl").read_text(encoding="utf-8").splitlines()
    out |= {json.loads(line)["truth"] for line in pairs if line.strip()}
    return out


def test_no_known_truth_is_refused():
    truths = _truths()
    assert len(truths) >= 100
    refused = sorted(t for t in truths if not_a_condition_name(t))
    assert not refused, refused


@pytest.mark.parametrize("text", [
    # no disease at all
    "Normal", "normal.", "Healthy", "No diagnosis", "Nothing wrong", "No abnormality", "No abnormality detected",
    "Normal ECG", "Normal examination", "Normal findings", "Unremarkable", "Within normal limits",
    "The patient is healthy", "No acute findings", "No significant pathology", "Completely normal",
    "Nothing unusual", "Nothing significant", "Nothing of note",  # (a live run's "diagnosis")
    # symptoms and findings (the quoted two, and the class around them)
    "Visual acuity loss", "Visual Acuity Loss", "Gastrointestinal symptoms", "Urinary symptoms",
    "Respiratory symptoms", "Neurological deficit", "Abdominal mass", "Breast lump", "Hearing loss", "Memory loss",
    "Loss of vision", "Elevated liver enzymes", "Raised CRP", "Abnormal liver function tests", "Chest pain",
    "Weight loss", "Fever", "Jaundice", "Chronic cough", "Skin rash", "Syncope", "Seizures",
    "Fever, cough and weight loss", "Right upper quadrant pain", "Altered mental status", "Vaginal discharge",
    "Shortness of breath on exertion", "Lower limb swelling", "Blood in urine",
    # a symptom with what brings it on, a visual symptom, a medicine (a v3 run's differentials)
    "Pain with urination", "Difficulty climbing stairs", "Pain on swallowing", "Double vision", "Blurred vision",
    "Diplopia", "Natalizumab", "Metformin", "Ramipril", "Atorvastatin",
])
def test_no_disease_symptoms_and_findings_are_refused(text):
    assert not_a_condition_name(text), text


@pytest.mark.parametrize("text", [
    "Normal pressure hydrocephalus", "Normal behavior", "Normal pregnancy", "Physiological neonatal jaundice",
    "Breast milk jaundice", "Situational syncope", "Vasovagal syncope", "Sensorineural hearing loss",
    "Scarlet fever", "Whooping cough", "Tension headache", "Cluster headache", "Diaper rash", "Febrile seizure",
    "Complex partial seizure", "Essential tremor", "Orthostatic hypotension", "Supraventricular tachycardia",
    "Functional dyspepsia", "Acute abdomen", "Abnormal uterine bleeding", "High blood pressure",
    "Hand, foot and mouth disease", "Chronic pain syndrome", "Generalized anxiety disorder", "Pleural effusion",
    "Iron deficiency anaemia", "Hypokalaemia", "Acute confusional state", "Uterine rupture",
    "Impaired erythropoietin production", "Dengue fever", "Restless legs syndrome",
    "Natalizumab-associated progressive multifocal leukoencephalopathy", "Exercise-induced asthma",
    "Statin-induced myopathy",
])
def test_conditions_named_after_a_sign_are_not_refused(text):
    assert not not_a_condition_name(text), text


def test_the_parts_say_which_class_refused_it():
    assert no_condition("Normal") and not symptom_or_finding("Normal")
    assert symptom_or_finding("Visual acuity loss") and not no_condition("Visual acuity loss")
    assert not no_condition("Normal behavior") and not symptom_or_finding("Sensorineural hearing loss")
