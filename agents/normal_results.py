"""Plausible normal results for tests a case has no record of (written for medsim).

A technician that answered "not available" would tell the doctor the test was off target;
instead it reports a normal result, and the log marks it as synthesised (SDBench's
gatekeeper does the same). Values are typical adult reference values."""
from __future__ import annotations

import re

from agents.findings import tokens

__all__ = ["normal_result"]

_NORMAL: dict[str, str] = {
    "Vital signs": "Temperature 36.8 °C; heart rate 78/min, regular; blood pressure 124/78 mmHg; respiratory rate 14/min; SpO2 98% on room air",
    "General physical examination": "Alert and oriented, well perfused, no pallor, jaundice, cyanosis or lymphadenopathy",
    "Cardiovascular examination": "Heart sounds I and II, no murmurs; peripheral pulses present and equal; no oedema",
    "Respiratory examination": "Chest expands equally; vesicular breath sounds throughout, no added sounds",
    "Abdominal examination": "Soft, non-tender, no masses or organomegaly; bowel sounds present",
    "Neurological examination": "Cranial nerves intact; normal tone, power, reflexes and sensation; gait normal",
    "Skin examination": "No rash, lesions or discolouration",
    "Musculoskeletal examination": "Full range of movement of all joints, no swelling or tenderness",
    "Eye examination": "Pupils equal and reactive, visual acuity 6/6, fundi normal",
    "Ear, nose and throat examination": "Ear canals and tympanic membranes normal, throat not inflamed",
    "Pelvic examination": "No adnexal or cervical motion tenderness, no masses",
    "Rectal examination": "Normal tone, no masses, no blood",
    "Mental state examination": "Euthymic, coherent, no perceptual disturbance, cognition intact",
    "Complete blood count": "Hemoglobin 14.0 g/dL; WBC 7.2 x10^9/L; platelets 250 x10^9/L",
    "Basic metabolic panel": "Sodium 140 mmol/L; potassium 4.2 mmol/L; chloride 102 mmol/L; bicarbonate 25 mmol/L; urea 5.0 mmol/L; creatinine 80 µmol/L; glucose 5.2 mmol/L",
    "Liver function tests": "ALT 25 U/L; AST 22 U/L; ALP 80 U/L; bilirubin 10 µmol/L; albumin 42 g/L",
    "Renal function tests": "Urea 5.0 mmol/L; creatinine 80 µmol/L; eGFR > 90 mL/min",
    "Coagulation studies": "PT 12 s; INR 1.0; APTT 30 s",
    "C-reactive protein": "CRP 3 mg/L (normal < 5)",
    "Erythrocyte sedimentation rate": "ESR 8 mm/h",
    "Troponin": "High-sensitivity troponin T 6 ng/L (normal < 14)",
    "D-dimer": "D-dimer 0.3 mg/L FEU (normal < 0.5)",
    "Arterial blood gas": "pH 7.40; PaO2 12.5 kPa; PaCO2 5.2 kPa; bicarbonate 24 mmol/L",
    "Blood glucose": "Glucose 5.1 mmol/L",
    "HbA1c": "HbA1c 36 mmol/mol (5.4%)",
    "Thyroid function tests": "TSH 1.8 mU/L; free T4 15 pmol/L",
    "Lipase": "Lipase 30 U/L",
    "Lipid panel": "Total cholesterol 4.6 mmol/L; LDL 2.6 mmol/L; HDL 1.4 mmol/L; triglycerides 1.2 mmol/L",
    "Serum electrolytes": "Sodium 140 mmol/L; potassium 4.2 mmol/L; chloride 102 mmol/L",
    "Creatine kinase": "CK 110 U/L",
    "Iron studies": "Ferritin 80 µg/L; transferrin saturation 30%",
    "Vitamin B12 and folate": "Vitamin B12 400 ng/L; folate 8 µg/L",
    "Blood cultures": "No growth after 48 hours",
    "Blood smear": "Normal red cell, white cell and platelet morphology",
    "Autoimmune antibodies": "ANA negative; rheumatoid factor negative",
    "HIV test": "HIV antigen/antibody negative",
    "Hepatitis serology": "HBsAg negative; anti-HCV negative",
    "Serum calcium": "Adjusted calcium 2.35 mmol/L",
    "Cortisol level": "9 am cortisol 350 nmol/L",
    "Tumour markers": "Within reference ranges",
    "Urine drug screen": "Negative",
    "Urinalysis": "No blood, protein, leukocytes, nitrites or glucose",
    "Urine culture": "No significant growth",
    "Pregnancy test": "Negative",
    "Lumbar puncture": "Clear CSF; white cells 2/µL; protein 0.3 g/L; glucose 3.5 mmol/L",
    "Stool culture": "No pathogens isolated",
    "Throat swab": "Normal flora",
    "Sputum culture": "Normal flora",
    "Joint fluid analysis": "Clear, white cells 150/µL, no crystals, Gram stain negative",
    "Skin biopsy": "Normal skin",
    "Tissue biopsy": "No abnormality detected",
    "12-lead ECG": "Sinus rhythm at 76/min, normal axis, normal intervals, no ST or T-wave changes",
    "Holter monitor": "Sinus rhythm throughout, no arrhythmia",
    "Chest X-ray": "Clear lung fields, normal heart size, no effusion or pneumothorax",
    "Abdominal X-ray": "Normal bowel gas pattern, no free air",
    "Limb X-ray": "No fracture or dislocation",
    "Spine X-ray": "Normal alignment, no fracture",
    "CT head": "No intracranial haemorrhage, mass or infarct",
    "CT chest": "Lungs clear, no mass, no pulmonary embolus",
    "CT abdomen and pelvis": "No acute abnormality",
    "CT pulmonary angiogram": "No pulmonary embolus",
    "MRI brain": "No abnormality",
    "MRI spine": "No cord compression or disc prolapse",
    "Abdominal ultrasound": "Normal liver, gallbladder, kidneys and spleen",
    "Pelvic ultrasound": "Normal uterus and ovaries",
    "Doppler ultrasound": "Veins compressible with normal flow, no thrombus",
    "Echocardiogram": "Normal chamber sizes and function, ejection fraction 60%, no valve disease",
}
_BY_WORDS = {frozenset(tokens(k)): k for k in _NORMAL}


def normal_result(test: str, demographics: str = "") -> str:
    """A normal result for ``test`` (a catalogue name, or any name: matched by words),
    consistent with who the patient is where that matters."""
    low = test.lower()
    if "pregnan" in low and re.search(r"\b(man|male|boy)\b", demographics.lower()):
        return "Not indicated (male patient)"
    key = next((k for k in _NORMAL if k.lower() == low), None)
    if key is None:
        want = set(tokens(test))
        best = max(_BY_WORDS, key=lambda ws: len(ws & want) / max(1, len(ws)), default=None)
        if best is not None and want and len(best & want) / max(1, len(best)) >= 0.5:
            key = _BY_WORDS[best]
    return _NORMAL[key] if key else "Within normal limits"
