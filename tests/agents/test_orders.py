"""The technician answers what was ordered (issue 21, item 4): order-to-record matching
never maps one test onto another, and a test the case has no record of gets the
documented policy of its kind."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from agents.cases.model import flatten
from agents.cases.registry import load_cases
from agents.catalogue import CATALOGUE
from agents.findings import match_order
from agents.normal_results import POLICIES, synthesised_result
from agents.orders import is_examination, is_whole_examination

AGENTCLINIC = Path(__file__).resolve().parents[3] / "shared" / "data" / "agentclinic"

# The oracle, written apart from the matcher: a record answers a catalogue test when its
# name path (lower case, "_" as a space) matches every pattern of ``need`` and none of
# ``never``: it names that test, a part of it (an item under its record), or a more
# specific form of it. Anything else the matcher returns is a record of a different test.
_XRAY, _CT, _MRI, _US = r"x-? ?rays?|radiograph", r"\bct\b|computed tomography", r"\bmri\b|magnetic", r"ultrasound|sonograph|\bus\b"
ORACLE: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "Vital signs": ((r"vital|temperature|blood pressure|heart rate|pulse|respiratory rate|saturation",), ()),
    "General physical examination": ((r"\bgeneral\b|appearance",), ()),
    "Cardiovascular examination": ((r"cardio|cardiac",), ()),
    "Respiratory examination": ((r"respirat|pulmon|lung|chest|cardiopulmonary",), ()),
    "Abdominal examination": ((r"abdom",), ()),
    "Neurological examination": ((r"neuro",), ()),
    "Skin examination": ((r"skin|dermat",), ()),
    "Musculoskeletal examination": ((r"musculoskeletal|joint|knee|hip|shoulder|hand|wrist|ankle|foot|elbow|limb|"
                                     r"extremit|leg\b|arm\b",), ()),
    "Eye examination": ((r"\beyes?\b|ophthalm|ocular|fundo",), ()),
    "Ear, nose and throat examination": ((r"\bent\b|\bear\b|nose|throat",), ()),
    "Pelvic examination": ((r"pelvi|gyn",), ()),
    "Rectal examination": ((r"rectal",), ()),
    "Mental state examination": ((r"mental|psychiatr",), ()),
    "Complete blood count": ((r"complete blood count|\bcbc\b|full blood count|blood count",), ()),
    "Basic metabolic panel": ((r"metabolic|chemistr|biochem",), ()),
    "Liver function tests": ((r"liver function|liver enzymes|\blfts?\b|hepatic function",), ()),
    "Renal function tests": ((r"renal function|kidney function",), ()),
    "Coagulation studies": ((r"coag|clotting|\binr\b",), ()),
    "C-reactive protein": ((r"c-? ?reactive|\bcrp\b",), ()),
    "Erythrocyte sedimentation rate": ((r"sedimentation|\besr\b",), ()),
    "Troponin": ((r"troponin",), ()),
    "D-dimer": ((r"d-? ?dimer",), ()),
    "Arterial blood gas": ((r"blood gas|\babg\b",), (r"venous", r"capillary")),
    "Blood glucose": ((r"glucose|sugar|> glu$",), (r"urine",)),
    "HbA1c": ((r"a1c|glycated",), ()),
    "Thyroid function tests": ((r"thyroid function|\btfts?\b",), ()),
    "Lipase": ((r"lipase",), ()),
    "Lipid panel": ((r"lipid|cholesterol",), ()),
    "Serum electrolytes": ((r"electrolyte",), ()),
    "Creatine kinase": ((r"creatine|\bck\b|\bcpk\b",), ()),
    "Iron studies": ((r"\biron\b|ferritin",), ()),
    "Vitamin B12 and folate": ((r"b12|folate|folic",), ()),
    "Blood cultures": ((r"cultur",), (r"urine|stool|sputum|throat|wound|csf|lumbar",)),
    "Blood smear": ((r"smear|\bfilm\b",), (r"\bpap\b|cervical",)),
    "Autoimmune antibodies": ((r"autoimmun|autoantibod|\bana\b",), ()),
    "HIV test": ((r"\bhiv\b",), ()),
    "Hepatitis serology": ((r"hepatitis",), ()),
    "Serum calcium": ((r"calcium|> ca2?$",), ()),
    "Cortisol level": ((r"cortisol",), ()),
    "Tumour markers": ((r"tumou?r markers?|\bcea\b|\bafp\b|ca-? ?125|ca 19|\bpsa\b",), ()),
    "Urine drug screen": ((r"drug|toxicolog",), ()),
    "Urinalysis": ((r"urinalysis|urine analysis|dipstick",), ()),
    "Urine culture": ((r"urin", r"cultur"), ()),
    "Pregnancy test": ((r"pregnan|hcg",), ()),
    "Lumbar puncture": ((r"lumbar puncture|\bcsf\b|spinal tap|cerebrospinal",), ()),
    "Stool culture": ((r"stool|faec|fec", r"cultur"), ()),
    "Throat swab": ((r"throat|pharyn",), ()),
    "Sputum culture": ((r"sputum", r"cultur"), ()),
    "Joint fluid analysis": ((r"joint fluid|joint aspirat|arthrocentesis|synovial",), ()),
    "Skin biopsy": ((r"skin", r"biops"), ()),
    "Tissue biopsy": ((r"biops",), ()),
    "12-lead ECG": ((r"\becg\b|\bekg\b|electrocardiogra",), ()),
    "Holter monitor": ((r"holter",), ()),
    "Chest X-ray": ((_XRAY + r"|\bcxr\b", r"chest|lung|thora|\bcxr\b"), ()),
    "Abdominal X-ray": ((_XRAY, r"abdom"), ()),
    "Limb X-ray": ((_XRAY, r"limb|knee|hip|wrist|hand|foot|ankle|elbow|shoulder|femur|tibia|radius|arm|leg|"
                           r"finger|toe|extremit"), ()),
    "Spine X-ray": ((_XRAY, r"spin"), ()),
    "CT head": ((_CT, r"head|brain|cranial"), (r"angio",)),
    "CT chest": ((_CT, r"chest|thora|lung|pulmon"), (r"angio",)),
    "CT abdomen and pelvis": ((_CT, r"abdom|pelvi"), ()),
    "CT pulmonary angiogram": ((_CT, r"pulmonary", r"angio"), ()),
    "MRI brain": ((_MRI, r"brain|head"), ()),
    "MRI spine": ((_MRI, r"spin"), ()),
    "Abdominal ultrasound": ((_US, r"abdom"), ()),
    "Pelvic ultrasound": ((_US, r"pelvi|transvaginal"), ()),
    "Doppler ultrasound": ((r"doppler",), ()),
    "Echocardiogram": ((r"echocardio|\becho\b",), ()),
}


# a record of one part of a panel answers an order of the panel (agents.orders.PANELS): the
# leaf names a part, and nothing on its path names another specimen
_CBC = (r"hemoglobin|haemoglobin|hb|hgb|hematocrit|haematocrit|hct|wbc|white (?:blood )?cells?|le[uc]k?ocytes?|"
        r"leucocytes?|platelets?|plt|neutrophils?|lymphocytes?|monocytes?|eosinophils?|basophils?|bands?|mcv|mch|"
        r"mchc|rdw|rbc|red (?:blood )?cells?")
_LYTES = r"sodium|na|potassium|k|chloride|cl|bicarbonate|hco3"
_RENAL = r"bun|urea|(?:blood )?urea nitrogen|creatinine|cr|e?gfr"
_LIVER = r"alt|sgpt|ast|sgot|alp|alkaline phosphatase|ggt|bilirubin|albumin|total protein"
PARTS = {
    "Complete blood count": _CBC,
    "Basic metabolic panel": rf"{_LYTES}|{_RENAL}|glucose|glu|calcium|ca2?|electrolytes?",
    "Serum electrolytes": _LYTES,
    "Renal function tests": _RENAL,
    "Liver function tests": _LIVER,
    "Coagulation studies": r"prothrombin(?: time)?|a?ptt|fibrinogen",
    "Thyroid function tests": r"tsh|(?:free )?t[34]|thyroxine",
    "Lipid panel": r"ldl|hdl|triglycerides?",
    "Iron studies": r"tibc|transferrin",
}
_MOD = r"serum|plasma|blood|capillary|venous|total|direct|indirect|free|absolute|fasting|random|corrected|ioni[sz]ed"
_PART_LEAF = rf"(?:^|> )(?:(?:{_MOD}) )*(?:{{}})(?: (?:count|level|{_MOD}))*$"
_OTHER_SPECIMEN = r"urin|csf|cerebrospinal|stool|pleural|ascit|synovial|fluid|sputum"


def _case_sets():
    sets = ["demo", "imaging"] + [str(p) for p in sorted(AGENTCLINIC.glob("*.jsonl"))]
    out = []
    for s in sets:
        cases, _ = load_cases(s, skip_invalid=True)
        out.extend(cases)
    return out


@pytest.fixture(scope="module")
def all_cases():
    return _case_sets()


def _answers_per_oracle(test: str, path: str) -> bool:
    need, never = ORACLE[test]
    low = " ".join(path.lower().replace("_", " ").split())
    part = test in PARTS and re.search(_PART_LEAF.format(PARTS[test]), low) and not re.search(_OTHER_SPECIMEN, low)
    return bool(part) or all(re.search(p, low) for p in need) and not any(re.search(p, low) for p in never)


def test_the_oracle_covers_the_whole_catalogue():
    assert set(ORACLE) == set(CATALOGUE)


def test_no_catalogue_order_ever_gets_a_record_of_another_test(all_cases):
    """Every catalogue test ordered on every shipped case and every AgentClinic case
    (skipped where /work/shared/data is absent) returns records of that test only."""
    assert len(all_cases) >= 27
    wrong = []
    answered = 0
    for case in all_cases:
        for test in CATALOGUE:
            hits = match_order(case, test)
            answered += bool(hits)
            wrong += [f"{case.id}: {test} -> {path}" for path, _ in hits if not _answers_per_oracle(test, path)]
    assert not wrong, "\n".join(wrong[:40])
    assert answered >= len(all_cases)  # and it still finds what is there (vital signs at least, almost everywhere)


def test_blood_cultures_and_a_smear_are_not_a_complete_blood_count(all_cases):
    demo7 = next(c for c in all_cases if c.id == "demo-007")
    assert match_order(demo7, "Blood cultures") == [] and match_order(demo7, "Blood smear") == []
    assert [p for p, _ in match_order(demo7, "CBC")][0].startswith("Complete Blood Count")
    assert [p for p, _ in match_order(demo7, "Blood cultures and a CBC")][0].startswith("Complete Blood Count")


@pytest.mark.parametrize("order", ["Physical examination", "Complete physical exam", "Full clinical examination",
                                   "Head-to-toe examination", "Examination", "a thorough physical examination",
                                   "Physical examination to look for signs of heart failure",
                                   "Physical exam including vitals", "Vital signs and a full physical examination"])
def test_an_order_for_the_whole_examination_gets_every_finding_of_it_on_every_case(all_cases, order):
    """Not the one section whose name comes closest, and never a made-up normal examination
    where the case records findings."""
    for case in all_cases:
        exam = {" > ".join(p) for p, _ in flatten(case.exam)}
        assert {p for p, _ in match_order(case, order)} == exam, case.id
        assert is_examination(order) and is_whole_examination(order)


@pytest.mark.parametrize("order", ["General physical examination", "Abdominal examination", "Examination of the abdomen",
                                   "Neurological exam", "Vital signs", "Rovsing sign", "Breast examination",
                                   "Physical examination of the chest", "CT abdomen", "Examination of vitals"])
def test_an_examination_of_a_part_is_not_the_whole(all_cases, order):
    assert not is_whole_examination(order)
    demo2 = next(c for c in all_cases if c.id == "demo-002")
    assert len(match_order(demo2, order)) < len(flatten(demo2.exam))


def test_each_record_a_case_holds_is_found_by_its_own_name(all_cases):
    missed = []
    for case in all_cases:
        for key, value in list(case.records().items()) + list(case.exam.items()):
            if not flatten({key: value}):
                continue  # an empty record holds nothing to find
            hits = match_order(case, key.replace("_", " "))
            if not hits:
                missed.append(f"{case.id}: {key}")
    assert not missed, missed


@pytest.mark.parametrize("order, kind", [
    ("Wells score", "no_abnormality_recorded"), ("Tumour markers", "no_abnormality_recorded"),
    ("CA-125", "no_abnormality_recorded"), ("Chest X-ray", "no_abnormality_recorded"),
    ("CT head", "no_abnormality_recorded"), ("Tissue biopsy", "no_abnormality_recorded"),
    ("Colonoscopy", "no_abnormality_recorded"), ("CURB-65", "no_abnormality_recorded"),
    ("Serum magnesium", "no_abnormality_recorded"), ("Blood cultures", "normal_value"),
    ("CBC", "normal_value"), ("Troponin I", "normal_value"), ("Vital signs", "normal_value"),
    ("12-lead ECG", "normal_value"), ("Glasgow Coma Scale", "no_abnormality_recorded"),
])
def test_a_test_with_no_record_gets_the_policy_of_its_kind(order, kind):
    s = synthesised_result(order, "45-year-old woman")
    assert s.policy == kind and s.policy in POLICIES
    assert "Within normal limits" not in s.text and "Within reference ranges" not in s.text
    if kind == "no_abnormality_recorded":
        assert s.text == "No abnormality recorded"


def test_every_catalogue_test_has_a_policy_and_normal_values_are_its_own():
    for test in CATALOGUE:
        s = synthesised_result(test, "30-year-old man")
        assert s.policy in POLICIES, test
        if s.policy == "normal_value":
            assert s.entry == test, (test, s.entry)  # the entry of that test, never another's
    assert synthesised_result("Pregnancy test", "30-year-old man").policy == "not_indicated"


@pytest.mark.parametrize("order, tests", [
    ("CBC, chest X-ray and a CT", ["CBC", "chest X-ray", "a CT"]),
    ("CT abdomen and pelvis", ["CT abdomen and pelvis"]),  # a catalogue name is one test
    ("CT chest and abdomen", ["CT chest", "ct abdomen"]),  # a site after a method takes the method
    ("MRI brain; Vitamin B12 and folate; Ear, nose and throat examination",
     ["MRI brain", "Vitamin B12 and folate", "Ear, nose and throat examination"]),  # catalogue names kept whole
    ("MRI brain; troponin", ["MRI brain", "troponin"]),  # an analyte is a test of its own, not an MRI
    ("CT head, serum amylase and a lipid profile", ["CT head", "serum amylase", "a lipid profile"]),
    ("CT chest to look for a PE", ["CT chest"]),
    ("CT chest; abdomen", ["CT chest", "ct abdomen"]),  # a site after a semicolon still takes the method
    # a semicolon ends a test: what follows an imaging method without a site of its own is not imaged
    ("X-ray; Blood pressure", ["X-ray", "Blood pressure"]),
    ("Blood glucose; CT head; Temperature", ["Blood glucose", "CT head", "Temperature"]),
    ("X-ray; Blood uric acid level", ["X-ray", "Blood uric acid level"]),
    ("Ultrasound of liver and gallbladder", ["Ultrasound of liver", "ultrasound gallbladder"]),
])
def test_an_order_names_its_tests(order, tests):
    from agents.orders import order_tests

    assert order_tests(order) == tests



def _panel_case():
    from agents.cases.model import Case

    return Case(
        id="panels", objective="Assess.", demographics="50-year-old woman", patient={}, exam={},
        tests={"Blood_Work": {"Hemoglobin": "9.1 g/dL", "Leukocyte_Count": "84,000/mm3", "Platelet_Count": "110,000/mm3",
                              "Na": "128 mEq/L", "K": "3.1 mEq/L", "Cr": "1.9 mg/dL", "Alkaline_Phosphatase": "480 U/L",
                              "ALT": "62 U/L", "Bilirubin_Direct": "2.1 mg/dL"},
               "Urinalysis": {"Glucose": "negative", "Na": "40 mEq/L"},
               "Hematology": {"Ferritin": "12 ng/mL", "MCV": "71 fL"}},
        diagnosis="x", source="test:1")


@pytest.mark.parametrize("order, leaves", [
    ("Complete blood count", {"Hemoglobin", "Leukocyte Count", "Platelet Count", "MCV"}),  # a group of parts too
    ("Basic metabolic panel", {"Na", "K", "Cr"}),  # serum parts only: the urine's sodium and glucose are not
    ("Serum electrolytes", {"Na", "K"}),
    ("Renal function tests", {"Cr"}),
    ("Liver function tests", {"Alkaline Phosphatase", "ALT", "Bilirubin Direct"}),
    ("Comprehensive metabolic panel", {"Na", "K", "Cr", "Alkaline Phosphatase", "ALT", "Bilirubin Direct"}),
    ("Serum sodium", {"Na"}),  # a part by its own name, spelled another way
    ("Urine electrolytes", set()),  # never the blood's
    ("Blood cultures", set()),
    ("Coagulation studies", set()),
])
def test_a_panel_is_answered_by_the_records_of_its_parts(order, leaves):
    """A case that records a panel's parts one by one ("Blood work > Hemoglobin", "... >
    Na") answers an order of the panel with them, and only with them (a made-up normal
    panel would contradict the record); the tests-ordered scorer counts the hits."""
    from agents.measures.ordered import order_scores

    case = _panel_case()
    hits = match_order(case, order)
    assert {p.split(" > ")[-1] for p, _ in hits} == leaves, hits
    if leaves:
        assert all(p.startswith(("Blood Work", "Hematology > MCV")) for p, _ in hits)
        assert order_scores(case, [order])["hits"] == 1


def test_a_parts_word_that_stands_in_other_tests_names_finds_no_blood_count():
    from agents.orders import answers, canonical_words

    # "bands" of a blood count are not oligoclonal bands; CA 15-3 is a tumour marker, not calcium
    assert not answers("Oligoclonal bands", "Blood Work > Bands", loose=True)
    assert "calcium" not in canonical_words("CA 15-3") and "calcium" in canonical_words("Serum Ca")
    assert canonical_words("CA-125") == ("ca125", "tumourmarker")
