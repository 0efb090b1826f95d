"""What the hospital can do: the examinations and tests a doctor can order (written for
medsim). The structured doctor chooses from it (a bounded enum in its JSON schema, plus
"other" with a free-text name); the world groups it by the room that does each test; a
person orders from the same list."""
from __future__ import annotations

__all__ = ["CATALOGUE", "OTHER"]

OTHER = "other"

CATALOGUE: tuple[str, ...] = (
    # at the bedside
    "Vital signs", "General physical examination", "Cardiovascular examination", "Respiratory examination",
    "Abdominal examination", "Neurological examination", "Skin examination", "Musculoskeletal examination",
    "Eye examination", "Ear, nose and throat examination", "Pelvic examination", "Rectal examination",
    "Mental state examination",
    # the lab
    "Complete blood count", "Basic metabolic panel", "Liver function tests", "Renal function tests",
    "Coagulation studies", "C-reactive protein", "Erythrocyte sedimentation rate", "Troponin", "D-dimer",
    "Arterial blood gas", "Blood glucose", "HbA1c", "Thyroid function tests", "Lipase", "Lipid panel",
    "Serum electrolytes", "Creatine kinase", "Iron studies", "Vitamin B12 and folate", "Blood cultures",
    "Blood smear", "Autoimmune antibodies", "HIV test", "Hepatitis serology", "Serum calcium",
    "Cortisol level", "Tumour markers", "Urine drug screen", "Urinalysis", "Urine culture", "Pregnancy test",
    "Lumbar puncture", "Stool culture", "Throat swab", "Sputum culture", "Joint fluid analysis", "Skin biopsy",
    "Tissue biopsy",
    # the ECG room
    "12-lead ECG", "Holter monitor",
    # imaging
    "Chest X-ray", "Abdominal X-ray", "Limb X-ray", "Spine X-ray",
    "CT head", "CT chest", "CT abdomen and pelvis", "CT pulmonary angiogram", "MRI brain", "MRI spine",
    "Abdominal ultrasound", "Pelvic ultrasound", "Doppler ultrasound", "Echocardiogram",
)
