"""Which record answers an order: the identity of a test, written down once.

A doctor orders a test by name ("Blood cultures", "CBC", "CT chest to look for a PE");
a case holds records by name ("Complete_Blood_Count > WBC", "Imaging > Chest_X-Ray").
The technician, the scripted backend, the imaging studies and the synthesised normals
all ask the same question: does this record (or normal value) answer this order? The
rule (written for medsim):

1. **Names become canonical words.** Spelling, plurals and synonyms are folded into one
   word per concept (:data:`PHRASES`): "complete blood count", "full blood count",
   "CBC" and "FBC" are ``cbc``; "X-ray", "radiograph" and "plain film" are ``xray``;
   "chest", "lung", "pulmonary" and "respiratory" are ``respiratory``. Words that say
   nothing about which test it is ("test", "level", "panel", "serum", "please",
   "urgent", "PA and lateral") are dropped (:data:`GENERIC`).
2. **The words are sorted**: *specimens* (blood, urine, stool, CSF, throat, ...),
   *qualifiers* in sibling groups (arterial/venous/capillary, left/right, ...), and the
   *core*: the kind of test (a count, a culture, a smear, an X-ray, a CT, an ECG, an
   examination) and its target (an analyte, an organ, a site).
3. **A record answers an order when** (a) every core word of the order is among the
   record's words (the record may be more specific: "CT chest with contrast" answers
   "CT chest", "Complete blood count > WBC" is part of a CBC); (b) the record names no
   specimen the order rules out (a urine culture is not a blood culture; a record that
   names no specimen is not ruled out); (c) the record names no qualifier whose sibling
   the order names (a venous gas is not an arterial gas); (d) the record names no method
   the order does not (an imaging study, an electrical recording, a procedure or an
   examination: "Liver function tests" is not a liver ultrasound, "Abdomen" is not an
   abdominal CT); but a sign or finding of the physical examination is ordered by its
   own name ("Rovsing sign", "temperature"), so the examination itself is not a method
   an order must name. An order whose core is empty ("blood tests") uses its specimens
   as its core.

So two tests are **different** when one names a kind or target the other lacks, a
specimen the other rules out, a sibling qualifier, or a method the order did not ask
for: blood cultures (culture + blood) are not a complete blood count (cbc), and a blood
smear (smear + blood) is neither. A record group that only gathers others ("Blood
tests", "Imaging") answers an order as vague as itself; a specific order is matched
against the records inside it.

An order with words the tables do not know ("Chest X-ray looking for pneumonia") is
matched with all its words first, then without its unknown words, provided what is left
still names a kind or an analyte (:func:`answers` with ``loose``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from agents.catalogue import CATALOGUE

__all__ = ["TestName", "test_name", "answers", "closeness", "order_parts", "order_tests", "is_examination", "is_whole_examination",
           "PHRASES", "GENERIC",
           "SPECIMENS", "QUALIFIER_GROUPS", "METHODS", "ANALYTES", "PANELS", "panel_parts"]

# -- the tables (written for medsim) ----------------------------------------------------------
# word sequences (lower case, after the spelling fixes of _spell) -> canonical words; the
# longest sequence at a position wins
_PHRASE_LIST: tuple[tuple[str, str], ...] = (
    # blood counts and films
    ("complete blood count", "cbc"), ("full blood count", "cbc"), ("blood count", "cbc"), ("cbc", "cbc"),
    ("fbc", "cbc"), ("hemogram", "cbc"), ("haemogram", "cbc"), ("blood film", "smear blood"),
    ("blood smear", "smear blood"), ("film", "smear"), ("smear", "smear"), ("pap", "smear cervical"),
    # chemistry
    ("c reactive protein", "crp"), ("crp", "crp"), ("erythrocyte sedimentation rate", "esr"),
    ("sedimentation rate", "esr"), ("sed rate", "esr"), ("esr", "esr"), ("basic metabolic", "metabolic"),
    ("comprehensive metabolic", "metabolic comprehensive"), ("metabolic", "metabolic"), ("bmp", "metabolic"),
    ("cmp", "metabolic"), ("chemistry", "metabolic"), ("chemistries", "metabolic"), ("biochemistry", "metabolic"),
    ("biochemical", "metabolic"), ("urea and electrolytes", "metabolic"), ("liver function", "lft"),
    ("liver enzymes", "lft"), ("liver panel", "lft"), ("hepatic function", "lft"), ("lft", "lft"),
    ("lfts", "lft"), ("renal function", "rft"), ("kidney function", "rft"), ("rft", "rft"), ("rfts", "rft"),
    ("thyroid function", "tft"), ("tft", "tft"), ("tfts", "tft"), ("coagulation", "coagulation"),
    ("coag", "coagulation"), ("clotting", "coagulation"), ("pt inr", "coagulation"), ("inr", "coagulation"),
    ("abg", "arterial blood gas"), ("vbg", "venous blood gas"), ("gas", "gas"), ("gases", "gas"),
    ("troponin", "troponin"), ("troponins", "troponin"), ("trop", "troponin"), ("creatine kinase", "ck"),
    ("creatine phosphokinase", "ck"), ("ck", "ck"), ("cpk", "ck"), ("d dimer", "ddimer"), ("ddimer", "ddimer"),
    ("hemoglobin a1c", "hba1c"), ("haemoglobin a1c", "hba1c"), ("glycated hemoglobin", "hba1c"),
    ("glycated haemoglobin", "hba1c"), ("glycosylated hemoglobin", "hba1c"), ("hba1c", "hba1c"), ("a1c", "hba1c"),
    ("blood sugar", "glucose blood"), ("glucose", "glucose"), ("sugar", "glucose"), ("bsl", "glucose"),
    ("lipid", "lipid"), ("lipids", "lipid"), ("cholesterol", "lipid"), ("iron", "iron"), ("ferritin", "iron"),
    ("vitamin b12", "b12"), ("b12", "b12"), ("cobalamin", "b12"), ("folate", "folate"), ("folic acid", "folate"),
    ("autoimmune", "autoimmune"), ("autoantibodies", "autoimmune"), ("autoantibody", "autoimmune"),
    ("ana", "autoimmune"), ("tumour markers", "tumourmarker"), ("tumor markers", "tumourmarker"),
    ("tumour marker", "tumourmarker"), ("tumor marker", "tumourmarker"), ("cea", "cea tumourmarker"),
    ("afp", "afp tumourmarker"), ("alpha fetoprotein", "afp tumourmarker"), ("ca125", "ca125 tumourmarker"),
    ("ca199", "ca199 tumourmarker"), ("psa", "psa tumourmarker"), ("calcium", "calcium"), ("cortisol", "cortisol"),
    ("lipase", "lipase"), ("amylase", "amylase"), ("electrolytes", "electrolyte"), ("electrolyte", "electrolyte"),
    ("lytes", "electrolyte"), ("pregnancy", "pregnancy"), ("hcg", "pregnancy"), ("bhcg", "pregnancy"),
    ("beta hcg", "pregnancy"), ("drug", "drug"), ("drugs", "drug"), ("toxicology", "drug"), ("tox", "drug"),
    ("uds", "urine drug"), ("hiv", "hiv"), ("hepatitis", "hepatitis"), ("urinalysis", "urinalysis urine"),
    ("urine analysis", "urinalysis urine"), ("urine dipstick", "urinalysis urine"),
    ("dipstick", "urinalysis urine"), ("ua", "urinalysis urine"), ("vital signs", "vitals"), ("vitals", "vitals"), ("observations", "vitals"),
    # the parts of the common panels, each one word (a record of a part answers an order of its panel: PANELS)
    ("hemoglobin", "hemoglobin"), ("haemoglobin", "hemoglobin"), ("hb", "hemoglobin"), ("hgb", "hemoglobin"),
    ("hematocrit", "hematocrit"), ("haematocrit", "hematocrit"), ("hct", "hematocrit"), ("pcv", "hematocrit"),
    ("wbc", "wbc"), ("white blood cell", "wbc"), ("white cell", "wbc"), ("white count", "wbc"),
    ("leukocyte", "wbc"), ("leucocyte", "wbc"), ("tlc", "wbc"), ("rbc", "rbc"), ("red blood cell", "rbc"),
    ("red cell", "rbc"), ("erythrocyte count", "rbc"), ("platelet", "platelet"), ("plt", "platelet"),
    ("thrombocyte", "platelet"), ("neutrophil", "neutrophil"), ("lymphocyte", "lymphocyte"),
    ("monocyte", "monocyte"), ("eosinophil", "eosinophil"), ("basophil", "basophil"), ("band", "band"),
    ("mcv", "mcv"), ("mean corpuscular volume", "mcv"), ("mch", "mch"), ("mchc", "mchc"), ("rdw", "rdw"),
    ("sodium", "sodium"), ("na", "sodium"), ("potassium", "potassium"), ("k", "potassium"),
    ("chloride", "chloride"), ("cl", "chloride"), ("bicarbonate", "bicarbonate"), ("hco3", "bicarbonate"),
    ("bicarb", "bicarbonate"), ("urea", "urea"), ("bun", "urea"), ("urea nitrogen", "urea"),
    ("blood urea nitrogen", "urea blood"), ("creatinine", "creatinine"), ("cr", "creatinine"),
    ("egfr", "egfr"), ("gfr", "egfr"), ("glu", "glucose"), ("ca", "calcium"), ("ca2", "calcium"), ("vitamin k", "vitamink"),
    ("alt", "alt"), ("sgpt", "alt"), ("alanine aminotransferase", "alt"), ("alanine transaminase", "alt"),
    ("ast", "ast"), ("sgot", "ast"), ("aspartate aminotransferase", "ast"), ("aspartate transaminase", "ast"),
    ("alp", "alp"), ("alkaline phosphatase", "alp"), ("ggt", "ggt"), ("gamma glutamyl transferase", "ggt"),
    ("bilirubin", "bilirubin"), ("albumin", "albumin"), ("total protein", "protein"),
    ("prothrombin", "prothrombin"), ("ptt", "ptt"), ("aptt", "ptt"), ("fibrinogen", "fibrinogen"),
    ("tsh", "tsh"), ("thyroid stimulating hormone", "tsh"), ("t4", "t4"), ("thyroxine", "t4"), ("t3", "t3"),
    ("ldl", "ldl"), ("hdl", "hdl"), ("triglyceride", "triglyceride"), ("tibc", "tibc"),
    ("transferrin", "transferrin"),
    # microbiology and fluids
    ("culture", "culture"), ("cultures", "culture"), ("swab", "culture"), ("swabs", "culture"), ("mcs", "culture"),
    ("lumbar puncture", "lp"), ("spinal tap", "lp"), ("lp", "lp"), ("csf", "lp"), ("cerebrospinal fluid", "lp"),
    ("joint fluid", "synovial"), ("joint aspirate", "synovial"), ("joint aspiration", "synovial"),
    ("synovial fluid", "synovial"), ("synovial", "synovial"), ("arthrocentesis", "synovial"),
    ("biopsy", "biopsy"), ("biopsies", "biopsy"),
    # electrical recordings and imaging
    ("12 lead ecg", "ecg"), ("ecg", "ecg"), ("ekg", "ecg"), ("electrocardiogram", "ecg"),
    ("electrocardiography", "ecg"), ("holter", "holter"), ("echocardiogram", "echo"), ("echocardiography", "echo"),
    ("echo", "echo"), ("tte", "echo"), ("ultrasound", "ultrasound"), ("ultrasonography", "ultrasound"),
    ("sonography", "ultrasound"), ("sonogram", "ultrasound"), ("usg", "ultrasound"), ("us", "ultrasound"),
    ("doppler", "doppler"), ("ct", "ct"), ("cat scan", "ct"), ("computed tomography", "ct"),
    ("ctpa", "ct respiratory angiogram"), ("cta", "ct angiogram"), ("angiogram", "angiogram"),
    ("angiography", "angiogram"), ("angio", "angiogram"), ("mri", "mri"), ("mr", "mri"),
    ("magnetic resonance", "mri"), ("xray", "xray"), ("radiograph", "xray"), ("radiographs", "xray"),
    ("radiography", "xray"), ("plain film", "xray"), ("cxr", "xray respiratory"), ("axr", "xray abdomen"),
    ("eeg", "eeg"), ("electroencephalogram", "eeg"), ("emg", "emg"), ("electromyography", "emg"),
    ("nerve conduction", "ncs"),
    # examinations and sites
    ("examination", "exam"), ("exam", "exam"), ("examinations", "exam"), ("cardiovascular", "cardiovascular"),
    ("cardiac", "cardiovascular"), ("cvs", "cardiovascular"), ("cardiopulmonary", "cardiovascular respiratory"),
    ("respiratory", "respiratory"), ("pulmonary", "respiratory"), ("lung", "respiratory"),
    ("lungs", "respiratory"), ("chest", "respiratory"), ("abdominal", "abdomen"), ("abdomen", "abdomen"),
    ("abdo", "abdomen"), ("neurological", "neuro"), ("neurologic", "neuro"), ("neuro", "neuro"),
    ("neurology", "neuro"), ("skin", "skin"), ("dermatological", "skin"), ("dermatologic", "skin"),
    ("cutaneous", "skin"), ("musculoskeletal", "msk"), ("msk", "msk"), ("joint", "msk"), ("joints", "msk"),
    ("eye", "eye"), ("eyes", "eye"), ("ophthalmic", "eye"), ("ophthalmologic", "eye"),
    ("ophthalmological", "eye"), ("ocular", "eye"), ("ophthalmoscopy", "eye exam"), ("fundoscopy", "eye exam"),
    ("ear nose and throat", "ent"), ("ear nose throat", "ent"), ("ent", "ent"), ("pelvic", "pelvis"),
    ("pelvis", "pelvis"), ("transvaginal", "pelvis"), ("gynaecological", "pelvis"), ("gynecological", "pelvis"),
    ("rectal", "rectal"), ("digital rectal", "rectal"), ("mental state", "mental"), ("mental status", "mental"),
    ("mse", "mental"), ("psychiatric", "mental"), ("spine", "spine"), ("spinal", "spine"), ("head", "head"),
    ("brain", "head"), ("cranial", "head"), ("limb", "limb msk"), ("limbs", "limb msk"),
    ("extremity", "limb msk"), ("extremities", "limb msk"),
    # specimens spelled another way
    ("faecal", "stool"), ("fecal", "stool"), ("faeces", "stool"), ("feces", "stool"), ("pharyngeal", "throat"),
    ("nasopharyngeal", "nasal"),
)
_LIMB_PARTS = ("knee", "hip", "wrist", "hand", "foot", "ankle", "elbow", "shoulder", "femur", "tibia", "fibula",
               "radius", "ulna", "humerus", "forearm", "arm", "leg", "thigh", "finger", "toe", "clavicle")
PHRASES: dict[tuple[str, ...], tuple[str, ...]] = {
    **{tuple(a.split()): tuple(b.split()) for a, b in _PHRASE_LIST},
    **{(p,): (p, "limb", "msk") for p in _LIMB_PARTS},
    **{(p + "s",): (p, "limb", "msk") for p in _LIMB_PARTS if p not in ("foot",)},
    ("feet",): ("foot", "limb", "msk"),
}
_LONGEST = max(len(k) for k in PHRASES)

# a panel's canonical word -> the words of its parts: a record that names only parts of a panel
# (``Blood work > Hemoglobin``, ``Serum > Na``) answers an order of the panel when no record
# names the panel itself (agents.findings.match_findings). Clinical convention, not any case's
# spelling: a basic metabolic panel is sodium, potassium, chloride, bicarbonate, urea,
# creatinine, glucose and calcium; a comprehensive one adds the liver tests.
PANELS: dict[str, frozenset[str]] = {
    "cbc": frozenset("hemoglobin hematocrit wbc rbc platelet neutrophil lymphocyte monocyte eosinophil basophil "
                     "band mcv mch mchc rdw".split()),
    "metabolic": frozenset("sodium potassium chloride bicarbonate urea creatinine glucose calcium electrolyte "
                           "egfr rft".split()),
    "electrolyte": frozenset("sodium potassium chloride bicarbonate".split()),
    "rft": frozenset("urea creatinine egfr".split()),
    "lft": frozenset("alt ast alp ggt bilirubin albumin protein".split()),
    "coagulation": frozenset("prothrombin ptt fibrinogen".split()),
    "tft": frozenset("tsh t4 t3".split()),
    "lipid": frozenset("ldl hdl triglyceride".split()),
    "iron": frozenset("tibc transferrin".split()),
}
COMPREHENSIVE_METABOLIC = PANELS["metabolic"] | PANELS["lft"]
_PART_WORDS = frozenset().union(*PANELS.values())

# words that say nothing about which test it is
GENERIC = frozenset((
    "test tests testing level levels panel profile study studies analysis analyses result results screen screening "
    "assay assays measurement measurements value values serum plasma laboratory lab labs report reports finding "
    "findings check scan scans investigation investigations workup work series monitor monitoring physical routine "
    "full basic comprehensive urgent repeat baseline stat bedside formal non contrast enhanced noncontrast with "
    "without w wo of the and or a an for to on in at please order ordering request requesting do get me some i "
    "would like need we can could you run perform tissue high sensitivity hs quantitative qualitative rapid point "
    "care poc fasting random x2 x3 two three sets set pa ap lateral view views erect supine portable 12 lead leads "
    "markers marker antibody antibodies titre titer titres single standard simple quick initial additional other "
    "special further more another new follow up concentration concentrations total quantification b c t "
    "differential differentiation diff peripheral bilateral".split()))
SPECIMENS = frozenset("blood urine stool sputum lp throat wound vesicle vesicular cervical vaginal nasal pleural "
                      "ascitic peritoneal semen skin synovial".split())
QUALIFIER_GROUPS: tuple[frozenset[str], ...] = (
    frozenset({"arterial", "venous", "capillary"}), frozenset({"left", "right"}), frozenset({"upper", "lower"}),
    frozenset({"transthoracic", "transoesophageal", "transesophageal"}), frozenset({"anterior", "posterior"}),
    frozenset({"thoracic", "lumbar", "sacral"}),
)
_QUALIFIERS = frozenset().union(*QUALIFIER_GROUPS)
# methods: a record that names one the order does not name answers another test
METHODS = frozenset((
    "xray ct mri ultrasound doppler echo angiogram mammogram mammography fluoroscopy barium pet dexa scintigraphy "
    "photograph photo ecg eeg emg ncs holter audiometry spirometry biopsy lp endoscopy colonoscopy cystoscopy "
    "bronchoscopy anoscopy laparoscopy sigmoidoscopy gastroscopy aspirate exam".split()))
# single words that name a test on their own (an order that keeps one of them is specific)
ANALYTES = frozenset((
    "cbc smear crp esr metabolic lft rft tft coagulation gas troponin ck ddimer hba1c glucose lipid iron b12 folate "
    "autoimmune tumourmarker cea afp ca125 ca199 psa calcium cortisol lipase amylase electrolyte pregnancy drug hiv "
    "hepatitis urinalysis vitals culture synovial serology pcr elisa".split())) | _PART_WORDS - {"band", "protein"}
# (a part's word names a test on its own, but "bands" and "protein" also stand in other tests'
# names: "Oligoclonal bands" is no blood count's bands)
# the sites of the body the tables know: what a bare name after an imaging method is ("CT chest; abdomen")
SITES = frozenset(("respiratory abdomen head spine pelvis limb msk neuro cardiovascular skin eye ent rectal neck "
                   "thorax thoracic lumbar cervical sacral kidney renal liver gallbladder bladder breast thyroid "
                   "heart orbit sinus face jaw shoulder " + " ".join(_LIMB_PARTS)).split())
_GRAMMAR = frozenset("of the and or a an for to on in at with without please me i we you some".split())


def _spell(text: str) -> str:
    s = text.lower().replace("_", " ").replace("\u2019", "'")
    s = re.sub(r"\bx[\s-]?rays?\b", " xray ", s)
    s = re.sub(r"\bca[\s-]?125\b", " ca125 ", s)
    s = re.sub(r"\bca[\s-]?19[\s-]?9\b", " ca199 ", s)
    s = re.sub(r"\bca[\s-]?(?:15[\s.-]?3|27[\s.-]?29|72[\s.-]?4|242|549|50)\b", " tumourmarker ", s)  # not calcium
    s = re.sub(r"\b12[\s-]?lead\b", " 12 lead ", s)
    return s


_BASE = (frozenset(w for k, v in PHRASES.items() for w in (*k, *v)) | GENERIC | SPECIMENS | _QUALIFIERS | METHODS
         | ANALYTES)


def _singular(w: str) -> str:
    if w in _BASE or len(w) <= 3:
        return w
    for suf, rep in (("ies", "y"), ("es", ""), ("s", "")):
        if w.endswith(suf) and (w[: -len(suf)] + rep) in _BASE:
            return w[: -len(suf)] + rep
    return w


@lru_cache(maxsize=65536)
def canonical_words(text: str) -> tuple[str, ...]:
    """A name's canonical words (tables applied, nothing dropped)."""
    words = [_singular(w) for w in re.findall(r"[a-z0-9]+", _spell(text))]
    out: list[str] = []
    i = 0
    while i < len(words):
        for n in range(min(_LONGEST, len(words) - i), 0, -1):
            rep = PHRASES.get(tuple(words[i:i + n]))
            if rep is not None:
                out.extend(rep)
                i += n
                break
        else:
            out.append(words[i])
            i += 1
    return tuple(out)


_KNOWN = (frozenset(w for v in PHRASES.values() for w in v) | GENERIC | SPECIMENS | _QUALIFIERS | METHODS | ANALYTES
          | frozenset(w for t in CATALOGUE for w in canonical_words(t)))


@dataclass(frozen=True)
class TestName:
    """A test's name sorted into its parts (see the module's docstring)."""

    core: frozenset[str]
    specimens: frozenset[str]
    qualifiers: frozenset[str]
    methods: frozenset[str]  # the methods it names (a subset of its core)
    words: frozenset[str]  # every word but the generic ones
    examination: bool = False  # a record of the physical examination
    plain: frozenset[str] = frozenset()  # every word but grammar (for names made of generic words only)

    @property
    def unknown(self) -> frozenset[str]:
        """Core words none of the tables know."""
        return frozenset(w for w in self.core if w not in _KNOWN and not w.isdigit())


@lru_cache(maxsize=65536)
def test_name(text: str, *, examination: bool = False) -> TestName:
    """``text`` as a :class:`TestName`. ``examination``: a record of the physical
    examination (its words include ``exam``, though it is not named as a method)."""
    canon = canonical_words(text)
    words = [w for w in canon if w not in GENERIC]
    specimens = frozenset(w for w in words if w in SPECIMENS)
    qualifiers = frozenset(w for w in words if w in _QUALIFIERS)
    core = frozenset(w for w in words if w not in SPECIMENS and w not in _QUALIFIERS)
    methods = frozenset(w for w in core if w in METHODS)
    every = frozenset(words) | ({"exam"} if examination else frozenset())
    return TestName(core, specimens, qualifiers, methods, every, examination,
                    frozenset(w for w in canon if w not in _GRAMMAR))


# words a record of a panel's part may carry beside the part ("Leukocyte count", "Bilirubin direct")
_PART_NEUTRAL = frozenset("count direct indirect conjugated unconjugated free absolute percent percentage ionized "
                          "ionised corrected ratio".split())


def panel_parts(order: str | TestName) -> frozenset[str]:
    """The words of the parts of the panel an order names ("CBC": hemoglobin, WBC,
    platelets, ...; :data:`PANELS`); empty when it names no panel, names something beside
    it, or a specimen other than blood ("Urine electrolytes")."""
    o = order if isinstance(order, TestName) else test_name(order)
    panels = o.core & PANELS.keys()
    if not panels or o.core - panels - {"count"} or o.specimens - {"blood"}:
        return frozenset()
    parts = frozenset().union(*(PANELS[p] for p in panels))
    return parts | COMPREHENSIVE_METABOLIC if "metabolic" in panels and "comprehensive" in o.plain else parts


def part_of_panel(order: str | TestName, path: tuple[str, ...] | list[str]) -> bool:
    """Whether a record at ``path`` ("Blood work", "Hemoglobin") is a part of the panel an
    order names: its name is a part (:func:`panel_parts`), no name on its path names a
    method, a specimen other than blood or another test ("Urinalysis > Glucose" is not a
    part of a metabolic panel), though a group's name may be words the tables do not know."""
    parts = panel_parts(order)
    if not parts or not path:
        return False
    o = order if isinstance(order, TestName) else test_name(order)
    names = [test_name(x) for x in path]
    leaf = names[-1].core - _PART_NEUTRAL
    if not leaf or not leaf <= parts:
        return False
    allowed = parts | o.core | _PART_NEUTRAL
    return not any(n.methods or n.specimens - {"blood"} or n.core - allowed - n.unknown for n in names[:-1])


def _qualifier_conflict(order: TestName, record: TestName) -> bool:
    for g in QUALIFIER_GROUPS:
        want, have = order.qualifiers & g, record.qualifiers & g
        if want and have and not want & have:
            return True
    return False


def answers(order: str | TestName, record: str | TestName, *, loose: bool = False) -> bool:
    """Whether a record named ``record`` answers an order for ``order`` (the rule of the
    module's docstring). ``loose``: the order's unknown words may be missing from the
    record, when what is left still names a kind of test or an analyte."""
    o = order if isinstance(order, TestName) else test_name(order)
    r = record if isinstance(record, TestName) else test_name(record)
    if not o.core and not o.specimens:  # a name of generic words only ("Lab results"): the same words
        return not loose and bool(o.plain) and not r.core and o.plain <= r.plain
    core = o.core or o.specimens
    if core <= METHODS:  # "Throat examination": the method alone names no test, the site is needed too
        core = core | o.specimens
    if loose:
        core = core - o.unknown
        if not (core & ANALYTES or core & METHODS and len(core) >= 2):
            return False
    if not core or not core <= r.words:
        return False
    if o.specimens and r.specimens and not o.specimens & r.specimens:
        return False
    if _qualifier_conflict(o, r):
        return False
    methods = r.methods - {"exam"} if r.examination and not o.methods else r.methods
    return methods <= o.core


def closeness(order: str | TestName, record: str | TestName) -> float:
    """How much of the record's name the order covers (1.0: the same words); ranks the
    records that answer an order."""
    o = order if isinstance(order, TestName) else test_name(order)
    r = record if isinstance(record, TestName) else test_name(record)
    mine = r.core | r.specimens
    return len((o.core | o.specimens) & mine) / max(1, len(mine))


_PURPOSE = re.compile(r"\s(?:to|for|because|looking|given|in\s+order|r/o|rule\s+out|ruling\s+out|to\s+exclude|"
                      r"to\s+check|to\s+assess|to\s+evaluate|to\s+look)\s.*$|\s*[(\[].*$|\s+[-–—]\s.*$",
                      re.IGNORECASE)


def is_examination(order: str) -> bool:
    """Whether an order is of the physical examination by its name (an examination, vital
    signs), not a test: what the doctor's record and the tests-ordered scorer file apart."""
    o = order.lower()
    return "examination" in o or o.startswith("vital") or "exam" in canonical_words(order)


# words that ask for all of the physical examination, not a part of it ("a complete physical
# examination", "head-to-toe exam"). Not "general": the catalogue's "General physical
# examination" is the general part (appearance, pallor, jaundice), beside the systems'
_WHOLE_EXAM = frozenset("complete clinical thorough entire whole systemic systematic routine detailed "
                        "physical full comprehensive bedside".split())
_WITH_VITALS = frozenset("vitals including include includes incl plus".split())  # the whole examination holds them
_HEAD_TO_TOE = re.compile(r"\bhead[\s-]+to[\s-]+toe\b", re.IGNORECASE)


def is_whole_examination(order: str) -> bool:
    """Whether an order asks for the physical examination as a whole, naming no system,
    site or sign beside the vital signs it holds ("Physical examination", "Complete physical
    exam", "Examination", "Physical exam including vitals"): all
    of the examination's findings answer it, not the one part whose name happens to be
    closest."""
    head = _HEAD_TO_TOE.sub(" ", _PURPOSE.sub("", order.strip()).strip() or order.strip())
    words = {w for w in canonical_words(head) if w not in _GRAMMAR}
    rest = words - {"exam"}  # vital signs named beside a whole-examination word, never alone ("Exam of vitals")
    return "exam" in words and rest <= _WHOLE_EXAM | _WITH_VITALS and (not rest or bool(rest - _WITH_VITALS))


def order_parts(order: str) -> list[str]:
    """The names an order holds: the order itself with its stated purpose cut off ("CT
    chest to look for a PE" -> "CT chest"), then, for an order of several tests ("CBC,
    chest X-ray and a CT"), each of them; a part that names no method takes the one
    before it ("CT abdomen and pelvis" -> "CT abdomen", "CT pelvis"). A catalogue name
    is one test, never split ("Ear, nose and throat examination")."""
    head = _PURPOSE.sub("", order.strip()).strip() or order.strip()
    if head.lower() in _CATALOGUE_LOWER:
        return [head]
    parts: list[str] = []
    method, named_in = "", -1
    for g, group in enumerate(head.split(";")):  # a semicolon ends a test; a comma or "and" may list sites
        for p in _pieces(group):
            named = [w for w in canonical_words(p) if w in METHODS]
            name = test_name(p)
            if named:
                method, named_in = " ".join(dict.fromkeys(named)), g
            elif (method and name.core and not name.core & ANALYTES and not name.specimens
                  and p.lower() not in _CATALOGUE_LOWER and (named_in == g or name.core <= SITES)):
                p = f"{method} {p}"  # a site after a method ("pelvis"), not a test ("vitamin B12", "blood pressure")
            parts.append(p)
    return [head] + [p for p in parts if p != head]


def _pieces(head: str) -> list[str]:
    """``head`` cut at its separators (commas, semicolons, "and", "+", "/"), a catalogue
    name kept whole ("CBC; Vitamin B12 and folate" -> "CBC", "Vitamin B12 and folate")."""
    bits = re.split(r"(\s*(?:,|;|\band\b|\+|/)\s*)", head)
    words, seps = [b.strip() for b in bits[::2]], bits[1::2]

    def joined(i: int, j: int) -> str:  # words i..j-1 with the separators between them
        return " ".join("".join(words[k] + (seps[k] if k < j - 1 else "") for k in range(i, j)).split())

    out: list[str] = []
    i = 0
    while i < len(words):
        j = next((j for j in range(min(len(words), i + 4), i + 1, -1) if joined(i, j).lower() in _CATALOGUE_LOWER),
                 i + 1)
        if text := joined(i, j):
            out.append(text)
        i = j
    return out


def order_tests(order: str) -> list[str]:
    """The tests an order asks for, each once: its parts when it names several ("CBC;
    chest X-ray" -> "CBC", "chest X-ray"), else the order itself (its stated purpose cut
    off). What a price or a precision counts: an order of four tests is four tests."""
    parts = order_parts(order)
    return list(dict.fromkeys(parts[1:] or parts[:1]))


_CATALOGUE_LOWER = frozenset(t.lower() for t in CATALOGUE)
