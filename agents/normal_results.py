"""What the technician reports for a test the case has no record of (written for medsim).

A technician that answered "not available" would tell the doctor the test was off target,
so it reports a result and the log marks it as synthesised (SDBench's gatekeeper does the
same: a ``synthesised_result`` event with its ``policy``). The policy, by kind of test:

- **a normal value** (``normal_value``) where the test has one: a typical adult reference
  value or a normal finding from :data:`NORMAL_VALUES` (laboratory tests, cultures,
  films, the ECG, bedside examinations and vital signs), looked up by the rule of
  :mod:`agents.orders` (the entry of that test, never another's: blood cultures never
  get a blood count); one analyte of a panel ("TSH", "Serum sodium") gets that part of
  the panel's normal value;
- **"No abnormality recorded"** (``no_abnormality_recorded``) for scores and scales
  (Wells, CURB-65, the Glasgow Coma Scale), tumour markers, imaging (X-ray, CT, MRI,
  ultrasound, echocardiography), biopsies and endoscopies, and any test with no known
  normal value: these have no value that is normal for everyone, and an invented normal
  report could contradict the case;
- **"Not indicated"** (``not_indicated``) where the test cannot apply to the patient (a
  pregnancy test for a man, a newborn or a child).

A pregnancy test for a patient the case says is pregnant ("at 38 weeks' gestation",
"gravida 2", "she is pregnant") is "Positive" (``implied_by_case``), never "Negative".

A test that measures a condition the case says the patient has (an HbA1c or a glucose for a
known diabetic, an HIV test for a patient living with HIV, thyroid function for one on
levothyroxine, a urine drug screen for one who uses cocaine: :data:`KNOWN_CONDITIONS`, in
the patient's own account, negated and family-history sentences aside) gets no made-up
normal value, which would contradict the case, and no made-up abnormal one, which would
invent a fact: "No value recorded; not assumed normal, as the patient has known ..."
(``known_condition``).

A normal value never contradicts what the case records: a part of it whose analyte the
case measured in blood under another test (an arterial blood gas ordered where a venous
one is recorded: pH, bicarbonate, PCO2) is not made up but given as recorded, named with
the test it was recorded under; the parts the case does not measure keep their normal
value (:func:`synthesised_result` with the case's ``records``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from agents.orders import METHODS, answers, closeness, test_name
from agents.suites.negation import about_someone_else, concepts

__all__ = ["NORMAL_VALUES", "POLICIES", "NO_ABNORMALITY", "KNOWN_CONDITIONS", "Synthesised", "synthesised_result",
           "normal_result", "analyte"]

POLICIES = ("normal_value", "no_abnormality_recorded", "not_indicated", "implied_by_case", "known_condition")
NO_ABNORMALITY = "No abnormality recorded"

NORMAL_VALUES: dict[str, str] = {
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
    "Urine drug screen": "Negative",
    "Urinalysis": "No blood, protein, leukocytes, nitrites or glucose",
    "Urine culture": "No significant growth",
    "Pregnancy test": "Negative",
    "Lumbar puncture": "Clear CSF; white cells 2/µL; protein 0.3 g/L; glucose 3.5 mmol/L",
    "Stool culture": "No pathogens isolated",
    "Throat swab": "Normal flora",
    "Sputum culture": "Normal flora",
    "Joint fluid analysis": "Clear, white cells 150/µL, no crystals, Gram stain negative",
    "12-lead ECG": "Sinus rhythm at 76/min, normal axis, normal intervals, no ST or T-wave changes",
    "Holter monitor": "Sinus rhythm throughout, no arrhythmia",
}
# tests with no value that is normal for everyone (the module's docstring)
_SCORE = re.compile(
    r"\b(?:scores?|scales?|scoring|criteria|questionnaires?|grades?|grading|classifications?|staging|wells|curb|"
    r"curb65|crb65|gcs|glasgow|apgar|phq\d*|gad\d*|mmse|moca|nihss|centor|chads\w*|cha2ds2\w*|has\W?bled|qsofa|sofa|"
    r"apache|alvarado|bishop|timi|grace|ottawa|perc|pugh|meld|ranson|blatchford|rockall|abcd2|audit|cage|epworth|"
    r"braden|waterlow|news2?|mews|geneva|hscore|sirs)\b", re.IGNORECASE)
_IMAGING_OR_PROCEDURE = METHODS - {"ecg", "holter", "exam", "lp", "aspirate"}


# Normal values measured in blood: a part of one whose analyte the case records in blood
# under another test takes the recorded value (a CSF or urine glucose is another thing)
_BLOOD = frozenset({
    "Complete blood count", "Basic metabolic panel", "Liver function tests", "Renal function tests",
    "Coagulation studies", "C-reactive protein", "Erythrocyte sedimentation rate", "Troponin", "D-dimer",
    "Arterial blood gas", "Blood glucose", "HbA1c", "Thyroid function tests", "Lipase", "Lipid panel",
    "Serum electrolytes", "Creatine kinase", "Iron studies", "Vitamin B12 and folate", "Serum calcium",
    "Cortisol level"})
_NOT_BLOOD = re.compile(r"urin|csf|cerebrospinal|lumbar|spinal fluid|synovial|joint|pleural|ascit|peritoneal|stool|"
                        r"faec|fecal|sputum|swab|saliva|sweat|amniotic|semen|tear|breath", re.IGNORECASE)
# one name for each analyte a normal value states (lower case, specimen words dropped)
_ANALYTE = {"paco2": "pco2", "pco2": "pco2", "pao2": "po2", "po2": "po2", "hco3": "bicarbonate",
            "bicarb": "bicarbonate", "bicarbonate": "bicarbonate", "hemoglobin": "haemoglobin",
            "haemoglobin": "haemoglobin", "hb": "haemoglobin", "hgb": "haemoglobin", "wbc": "white cells",
            "white cells": "white cells", "white cell count": "white cells", "white blood cells": "white cells",
            "white blood cell count": "white cells", "leukocytes": "white cells", "leucocytes": "white cells",
            "platelets": "platelets", "platelet count": "platelets", "plt": "platelets", "na": "sodium",
            "k": "potassium", "cl": "chloride", "bun": "urea", "blood urea nitrogen": "urea", "cr": "creatinine",
            "glucose": "glucose", "crp": "crp", "c-reactive protein": "crp", "c reactive protein": "crp",
            "esr": "esr", "inr": "inr", "pt": "pt", "prothrombin time": "pt", "aptt": "aptt", "ptt": "aptt",
            "alt": "alt", "ast": "ast", "alp": "alp", "alkaline phosphatase": "alp", "bilirubin": "bilirubin",
            "total bilirubin": "bilirubin", "albumin": "albumin", "tsh": "tsh", "free t4": "free t4",
            "ft4": "free t4", "t4": "free t4", "troponin": "troponin", "troponin t": "troponin",
            "troponin i": "troponin", "ck": "ck", "creatine kinase": "ck", "cpk": "ck", "lipase": "lipase",
            "ferritin": "ferritin", "calcium": "calcium", "adjusted calcium": "calcium",
            "corrected calcium": "calcium", "cortisol": "cortisol", "hba1c": "hba1c", "d-dimer": "d-dimer",
            "ldl": "ldl", "hdl": "hdl", "triglycerides": "triglycerides", "total cholesterol": "cholesterol",
            "cholesterol": "cholesterol"}
_SPECIMEN_WORDS = re.compile(r"\b(?:serum|plasma|blood|venous|arterial|capillary|random|fasting|high[- ]sensitivity|"
                             r"hs|9 am|level|concentration|count)\b", re.IGNORECASE)


def analyte(label: str) -> str:
    """One name for the analyte ``label`` names ("PaCO2" and "PCO2" are one; "Serum
    potassium" and "K" are one); a label it does not know stays itself (lower case)."""
    low = re.sub(r"[_]+", " ", label).strip().lower()
    if low in _ANALYTE:
        return _ANALYTE[low]
    low = re.sub(r"\s+", " ", _SPECIMEN_WORDS.sub(" ", low)).strip(" ,:-")
    return _ANALYTE.get(low, low)


def _parts(normal: str) -> list[tuple[str, str]]:
    """The parts of a normal value that state an analyte and its number: (label, part)."""
    out = []
    for part in normal.split(";"):
        m = re.match(r"\s*([A-Za-z][A-Za-z0-9 ,.\-]*?)\s+[<>]?\s*\d", part)
        if m:
            out.append((m.group(1).strip(), part.strip()))
    return out


def _recorded_in_blood(records: Sequence[tuple[str, str]]) -> dict[str, tuple[str, str, str]]:
    """Analyte -> (the record's test, its label, its value), for the case's records of
    blood (the first record of each analyte)."""
    out: dict[str, tuple[str, str, str]] = {}
    for path, value in records:
        steps = [p.strip() for p in path.split(" > ") if p.strip()]
        if len(steps) < 2 or _NOT_BLOOD.search(path) or not re.search(r"\d", value):
            continue
        out.setdefault(analyte(steps[-1]), (" > ".join(steps[:-1]), steps[-1], value))
    return out


def _keep_to_records(entry: str, normal: str, records: Sequence[tuple[str, str]]) -> tuple[str, tuple[str, ...]]:
    """``normal`` with each part whose analyte the case records in blood given as
    recorded (with the test it was recorded under); and the paths so given."""
    if entry not in _BLOOD or not records:
        return normal, ()
    have = _recorded_in_blood(records)
    kept: list[str] = []
    given: dict[str, list[str]] = {}
    used: list[str] = []
    for part in (p.strip() for p in normal.split(";") if p.strip()):
        parsed = _parts(part)
        hit = have.get(analyte(parsed[0][0])) if parsed else None
        if hit is None:
            kept.append(part)
        else:
            given.setdefault(hit[0], []).append(f"{hit[1]} {hit[2]}")
            used.append(f"{hit[0]} > {hit[1]}")
    if not given:
        return normal, ()
    said = [f"as recorded under {test}: {', '.join(values)}" for test, values in given.items()]
    return "; ".join(kept + said), tuple(used)


@dataclass(frozen=True)
class Synthesised:
    """What the technician reports for ``test``: ``text``, the ``policy`` it follows
    (one of :data:`POLICIES`), the kind of test that decided it and the
    :data:`NORMAL_VALUES` entry used (None when none)."""

    text: str
    policy: str
    kind: str  # score | marker | imaging_or_procedure | normal_value | unknown | not_indicated
    entry: str | None = None
    recorded: tuple[str, ...] = ()  # the case's records given in place of a normal part (their paths)


def _entry(test: str) -> str | None:
    """The :data:`NORMAL_VALUES` entry of ``test``: its own name, else the entry it
    answers most closely (never an entry of another test, nor a guess from a vague
    order such as "blood tests")."""
    low = test.strip().lower()
    exact = next((k for k in NORMAL_VALUES if k.lower() == low), None)
    if exact is not None:
        return exact
    order = test_name(test)
    if not order.core:
        return None
    for loose in (False, True):
        scored = [(closeness(order, k), k) for k in NORMAL_VALUES if answers(order, k, loose=loose)]
        # a loose match (the order's unknown words left out) must name all of the entry: "Lymphoma
        # serology" is not "Hepatitis serology", whose normal value would be another test's record
        scored = [(c, k) for c, k in scored if c >= (1.0 if loose else 0.5)]
        # nor may the entry be more specific than the order: a vague "Serology" or "Ultrasound"
        # is no particular test's, and "Hepatitis serology"'s normal value would answer for it
        scored = [(c, k) for c, k in scored if test_name(k).core <= order.words]
        if scored:
            return max(scored, key=lambda ck: ck[0])[1]
    return None


# who a pregnancy test cannot apply to, and a case that says its patient is pregnant
_MALE = re.compile(r"\b(?:man|male|boy)\b", re.IGNORECASE)
_YOUNG = re.compile(r"\b(?:day|week|month)s?[- ]old\b|\b(?:newborn|neonate|neonatal|infant|baby|toddler|"
                    r"premature|preterm)\b|\b(?:[1-9])[- ]years?[- ]old\b|\b(?:[1-9])[- ]?(?:yo|y/o)\b",
                    re.IGNORECASE)
_PREGNANT_LINE = re.compile(r"\bweeks?'?\s*(?:of\s+)?gestation|\bweeks?\s+pregnant|\bpregnant\b|"
                            r"\b(?:primi|multi)?gravida\b|\bG\d+\s*P\d+", re.IGNORECASE)
_PREGNANT_SAID = re.compile(r"\b(?:she|the\s+patient)\s+is\s+(?:currently\s+|now\s+)?(?:\d+\s+weeks?\s+)?pregnant\b|"
                            r"\b(?:she|the\s+patient)\s+is\s+(?:currently\s+|now\s+)?at\s+(?:her\s+)?\d+\s*"
                            r"(?:st|nd|rd|th)?\s+weeks?\b", re.IGNORECASE)


def _pregnancy(demographics: str, story: str) -> Synthesised | None:
    """A pregnancy test's result where who the patient is decides it: not indicated for
    a male, a newborn or a child under ten; positive for a patient the case says is
    pregnant (her demographics line, or "she is pregnant" in her story). None: neither."""
    if _MALE.search(demographics):
        return Synthesised("Not indicated (male patient)", "not_indicated", "not_indicated")
    if _YOUNG.search(demographics):  # "Newborn, born at 33 weeks of gestation" is the baby's birth
        return Synthesised("Not indicated (a child)", "not_indicated", "not_indicated")
    said = [s for s in re.split(r"(?<=[.;])\s+", story) if _PREGNANT_SAID.search(s)
            and not re.search(r"\bnot\b|\bno\b|\bnever\b|\bdenies\b", s, re.IGNORECASE)]
    if _PREGNANT_LINE.search(demographics) or said:
        return Synthesised("Positive", "implied_by_case", "implied_by_case")
    return None


# the NORMAL_VALUES entries that measure a condition, and how a patient's account names it
# (written for medsim): a normal value would contradict a patient known to have it
_DIABETES = r"diabet\w*|\bDKA\b|\bT[12]DM\b|\bN?IDDM\b|insulin[- ]dependent|on insulin|metformin"
KNOWN_CONDITIONS: dict[str, str] = {
    "HbA1c": _DIABETES,
    "Blood glucose": _DIABETES,
    "Thyroid function tests": r"hypothyroid\w*|hyperthyroid\w*|thyrotoxic\w*|graves'?\s+disease|hashimoto\w*(?: thyroiditis)?|"
                              r"thyroiditis|levothyroxine|carbimazole|methimazole|propylthiouracil",
    "Renal function tests": r"chronic kidney disease|\bCKD\b|(?:renal|kidney) (?:failure|insufficiency|impairment)|"
                            r"dialysis|diabetic nephropathy",
    "Liver function tests": r"cirrhosis|chronic hepatitis|(?:chronic )?liver (?:disease|failure)",
    "Coagulation studies": r"warfarin|ha?emophilia|von willebrand\w*|anticoagula\w*",
    "Lipid panel": r"hyperlipid\w*|hypercholesterol\w*|dyslipid\w*",
    "HIV test": r"\bHIV\b(?!-? ?negative)|\bAIDS\b",
    "Hepatitis serology": r"hepatitis [BC]\b|\bHBV\b|\bHCV\b",
    "Iron studies": r"ha?emochromatosis|iron[- ]deficiency",
    "Vitamin B12 and folate": r"pernicious an\w*|B12 deficiency|folate deficiency",
    "Complete blood count": r"sickle[- ]cell (?:disease|an\w*)|thalass\w*|leuk\w*mia|myeloma",
    "Urine drug screen": r"cocaine|heroin|methamphetamine|amphetamines?|cannabis|marijuana|illicit drugs?|"
                         r"(?:intravenous|injection) drug use|uses? (?:recreational )?drugs",
    "Autoimmune antibodies": r"(?:systemic )?lupus|\bSLE\b|rheumatoid arthritis",
    "Cortisol level": r"cushing\w*|addison\w*|adrenal insufficiency",
    "Serum calcium": r"hyperparathyroid\w*|hypoparathyroid\w*|hypercalc\w*|hypocalc\w*",
}
_NEGATIVE_AFTER = re.compile(r"[\s-]*(?:negative|excluded|ruled out)\b", re.IGNORECASE)  # "hepatitis C negative"


def _negated(sentence: str, m: re.Match) -> bool:
    """Whether the words ``m`` matched sit in a negated scope of ``sentence`` (NegEx-like:
    :func:`agents.suites.negation.concepts`; "No pain. AIDS, on efavirenz" negates the pain
    only), or are followed by "negative"."""
    if _NEGATIVE_AFTER.match(sentence, m.end()):
        return True
    return any(neg and m.start() <= at < m.end() for _, _, neg, at in concepts(sentence))


def _known_condition(entry: str, story: str) -> str | None:
    """The words of the patient's account that say the patient has what ``entry``
    measures (None: it does not say so, or says so only negated or of a relative)."""
    pattern = KNOWN_CONDITIONS.get(entry)
    if pattern is None:
        return None
    for sentence in re.split(r"(?<=[.;])\s+|\n", story):  # a case's fields are lines (agents.findings.case_story)
        for m in re.finditer(pattern, sentence, re.IGNORECASE):
            if not _negated(sentence, m) and not about_someone_else(sentence):
                return m.group(0)
    return None


def synthesised_result(test: str, demographics: str = "", records: Sequence[tuple[str, str]] = (),
                       story: str = "") -> Synthesised:
    """The result reported for ``test`` when the case has no record of it, by the policy
    of the module's docstring; consistent with who the patient is where that matters, and
    with what the case records (``records``: its (path, value) pairs, paths joined with
    " > "; ``story``: the patient's own account, where the case says she is pregnant)."""
    low = test.lower()
    if "pregnan" in low or re.search(r"\b(?:beta[- ]?)?hcg\b", low):
        found = _pregnancy(demographics, story)
        if found is not None:
            return found
    name = test_name(test)
    if _SCORE.search(test):
        return Synthesised(NO_ABNORMALITY, "no_abnormality_recorded", "score")
    if "tumourmarker" in name.core:
        return Synthesised(NO_ABNORMALITY, "no_abnormality_recorded", "marker")
    if name.methods & _IMAGING_OR_PROCEDURE:
        return Synthesised(NO_ABNORMALITY, "no_abnormality_recorded", "imaging_or_procedure")
    entry = _entry(test)
    # else one analyte of a panel ("TSH", "Serum sodium"): that part of the panel's normal value
    entry, normal = (entry, NORMAL_VALUES[entry]) if entry is not None else _panel_part(test) or (None, "")
    known = _known_condition(entry, story) if entry is not None else None
    if known is not None:
        return Synthesised(f"No value recorded; not assumed normal, as the patient has known {known}",
                           "known_condition", "known_condition", entry)
    if entry is not None:
        text, used = _keep_to_records(entry, normal, records)
        return Synthesised(text, "normal_value", "normal_value", entry, used)
    return Synthesised(NO_ABNORMALITY, "no_abnormality_recorded", "unknown")


def _panel_part(test: str) -> tuple[str, str] | None:
    """The entry and the part of its normal value that ``test`` names when it names one
    analyte of a panel ("TSH" -> "Thyroid function tests", "TSH 1.8 mU/L"); None else."""
    want = analyte(test)
    for entry, normal in NORMAL_VALUES.items():
        for label, text in _parts(normal):
            if analyte(label) == want:
                return entry, text
    return None


def normal_result(test: str, demographics: str = "") -> str:
    """The text of :func:`synthesised_result`."""
    return synthesised_result(test, demographics).text
