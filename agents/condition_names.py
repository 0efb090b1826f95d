"""What names a condition: the rule the diagnosis guard applies to a doctor's final answer.

A final diagnosis must name one condition. :func:`not_a_condition_name` says it does not
for (written for medsim):

- **a non-answer**: a question, a list of possibilities, a sentence about oneself, a
  negation (the judge's :func:`agents.judge.not_a_diagnosis`), or a sentence about the
  symptoms;
- **no disease at all**: "Normal", "Healthy", "No diagnosis", "Nothing wrong", "No
  abnormality", "Unremarkable", "Normal ECG", "Normal examination": *normal*, *healthy*
  and their kin with nothing after them but a test, a finding or a body part. A name
  that goes on ("Normal pressure hydrocephalus", "Normal behavior", "Physiological
  neonatal jaundice") is left alone: it names something;
- **a symptom or a finding**: a head word that names a complaint, a sign or a result
  (:data:`SYMPTOM_HEADS`: pain, weakness, loss, symptoms, mass, fever, jaundice,
  seizure, ...) or a finding adjective ("elevated", "raised", "abnormal", "low") with
  nothing else but body sites, organ systems, sides, time course and severity
  (:data:`SITE_WORDS`): "Visual acuity loss", "Gastrointestinal symptoms", "Chest pain",
  "Elevated liver enzymes", "Fever, cough and weight loss". A condition named after a
  sign always carries a word outside those lists ("Scarlet fever", "Tension headache",
  "Breast milk jaundice", "Situational syncope", "Sensorineural hearing loss"), so it
  is never refused;
- **a test's name**: a catalogue entry, or words ending in a test's kind with no word
  that names a condition ("Tissue biopsy", "Lead poisoning screen").

The doctor's diagnosis is re-asked for any of these, and a panel member's vote is set
aside for them.
"""
from __future__ import annotations

import re

from agents.catalogue import CATALOGUE
from agents.guards import normalise_line
from agents.judge import not_a_diagnosis, strip_hedges, strip_lead_in
from agents.medicines import names_a_medicine

__all__ = ["not_a_condition_name", "no_condition", "symptom_or_finding", "names_a_test", "names_a_medicine", "SYMPTOM_HEADS", "SITE_WORDS",
           "FINDING_ADJECTIVES"]

# -- no disease -------------------------------------------------------------------------------
_NORMAL_WORD = r"(?:normal|healthy|within\s+normal\s+limits|unremarkable|well|fine|negative|nothing|physiologically\s+normal|no\s+" \
               r"(?:diagnosis|disease|abnormalit(?:y|ies)|pathology|illness|condition|problems?|findings?|" \
               r"significant\s+\w+|acute\s+\w+|obvious\s+\w+|specific\s+\w+|medical\s+\w+))"
# what may follow "normal" and still say that nothing is wrong
_NOTHING_AFTER = (
    "findings finding examination exam study studies results result test tests ecg ekg xray x-ray scan imaging "
    "labs bloodwork workup patient person individual child infant baby newborn adult man woman boy girl state "
    "condition health limits range variation appearance anatomy function heart lungs lung brain kidneys kidney "
    "liver abdomen chest skin eyes eye ears blood pressure vital signs physical mental wrong found detected "
    "identified abnormal at all the this is with for in on of and here present seen today unusual remarkable "
    "significant concerning serious special worrying else note").split()
_NO_CONDITION = re.compile(
    rf"^\s*(?:(?:completely|entirely|essentially|basically|totally|perfectly|clinically|otherwise|a|an|the|it\s+is|"
    rf"its|it's|(?:the\s+)?patient\s+is|(?:the\s+)?patient\s+has)\s+)*{_NORMAL_WORD}(?:\s+(?:{'|'.join(map(re.escape, _NOTHING_AFTER))}))*\s*[.!]?\s*$",
    re.IGNORECASE)


def no_condition(text: str) -> bool:
    """An answer that says nothing is wrong ("Normal", "Healthy", "No diagnosis",
    "Normal examination"), not a condition."""
    return bool(_NO_CONDITION.match(text))


# -- symptoms and findings --------------------------------------------------------------------
SYMPTOM_HEADS = frozenset((
    "symptom symptoms sign signs complaint complaints problem problems issue issues finding findings pain pains ache "
    "aches discomfort weakness fatigue tiredness lethargy numbness tingling paraesthesia paresthesia dizziness "
    "lightheadedness palpitations nausea vomiting malaise swelling breathlessness dyspnoea dyspnea loss gain deficit "
    "deficits disturbance disturbances mass masses lump lumps nodule nodules enlargement elevation elevations "
    "change changes abnormality abnormalities distress difficulty difficulties tenderness stiffness cramps cramping "
    "lesion lesions fever fevers pyrexia headache headaches cough coughing rash rashes jaundice vertigo diarrhoea "
    "diarrhea constipation seizure seizures fits tremor tremors itching pruritus haematuria hematuria proteinuria "
    "polyuria dysuria oliguria anuria frequency urgency haemoptysis hemoptysis haematemesis hematemesis melaena "
    "melena dysphagia odynophagia dyspepsia indigestion heartburn bloating tachycardia bradycardia hypotension "
    "wheeze wheezing stridor confusion drowsiness collapse fainting blackout blackouts bruising discharge "
    "sweats sweating chills rigors insomnia anxiety agitation hallucinations hoarseness syncope diplopia "
    "photophobia").split())
_SYMPTOM_PHRASES = ("shortness of breath", "short of breath", "loss of consciousness", "altered mental status",
                    "altered consciousness", "chest tightness", "night sweats", "weight loss", "weight gain",
                    "blood in", "double vision", "blurred vision", "blurry vision")
SITE_WORDS = frozenset((
    # body sites and systems
    "head neck face facial eye eyes ocular visual vision acuity ear ears nasal nose throat mouth oral dental jaw "
    "chest thoracic breast breasts abdominal abdomen belly pelvic pelvis back lumbar spinal spine limb limbs arm "
    "arms leg legs hand hands foot feet knee knees hip hips shoulder shoulders elbow wrist ankle joint joints "
    "muscle muscles muscular skin cutaneous scalp genital vaginal penile scrotal testicular urinary bladder bowel "
    "rectal anal gastrointestinal gi stomach epigastric flank groin inguinal umbilical periumbilical renal kidney "
    "liver hepatic cardiac heart respiratory pulmonary lung lungs airway neurological neurologic cognitive memory "
    "speech sensory motor hearing weight appetite sleep mood behavioural behavioral bodily body thyroid lymph node "
    "nodes gland glands cervical axillary uterine menstrual rectum stool urine blood breath "
    "consciousness mental status"
    # side, extent, time course, severity and other plain descriptors
    " right left bilateral unilateral upper lower central peripheral lateral medial anterior posterior quadrant "
    "sided side general systemic constitutional multiple various nonspecific non specific "
    "vague unexplained unintentional intentional acute chronic sudden recurrent intermittent persistent "
    "progressive worsening new onset episodic transient mild moderate severe significant sharp dull ongoing "
    "painful painless diffuse localised localized widespread isolated minor exertion exertional rest movement "
    "walking eating night nocturnal morning postprandial"
    # what brings a symptom on ("Pain with urination", "Difficulty climbing stairs")
    " urination micturition voiding defecation swallowing breathing climbing stairs standing sitting lying "
    "bending lifting exercise activity activities"
    # lab and vital-sign nouns a finding adjective may qualify
    " enzymes lfts transaminases crp esr inflammatory markers white cell cells count wbc rate "
    "temperature glucose sugar troponin dimer platelets platelet hemoglobin haemoglobin "
    "creatinine urea levels level ferritin iron oxygen saturation tests test results").split())
FINDING_ADJECTIVES = frozenset("elevated raised high low abnormal increased decreased reduced deranged positive "
                               "high-grade".split())
_GRAMMAR = frozenset("of and or in the a an with on at to".split())


def symptom_or_finding(text: str) -> bool:
    """A symptom, a sign or a result, or a list of them, not a condition (see the
    module's docstring): "Visual acuity loss", "Gastrointestinal symptoms", "Elevated
    liver enzymes"; never "Scarlet fever" or "Sensorineural hearing loss"."""
    low = " " + re.sub(r"[^a-z' ]+", " ", text.lower().replace("-", " ")) + " "
    for p in _SYMPTOM_PHRASES:
        low = low.replace(f" {p} ", f" {p.split()[0]}_sym ")
    words = [w.strip("'") for w in low.split()]
    words = [w for w in words if w and w not in _GRAMMAR]
    if not words:
        return False
    heads = [w for w in words if w in SYMPTOM_HEADS or w.endswith("_sym")]
    finding = words[0] in FINDING_ADJECTIVES and len(words) > 1
    if not heads and not finding:
        return False
    rest = [w for w in words if w not in SYMPTOM_HEADS and not w.endswith("_sym") and w not in FINDING_ADJECTIVES]
    return all(w in SITE_WORDS for w in rest)


# -- sentences and test names -------------------------------------------------------------------
_VERB = re.compile(r"\b(is|are|was|were|has|have|had|seems?|appears?|suggests?|indicates?|shows?|could|may|might|"
                   r"would|should|can)\b", re.IGNORECASE)
_CONDITION_WORD = re.compile(
    r"(itis|osis|oma|emia|aemia|pathy|plasia|iasis|ectasis|ism)\b|\b(disease|syndrome|disorder|infection|fracture|"
    r"infarction|failure|cancer|carcinoma|deficiency|injury|tumou?r|embolism|thrombosis|stenosis|palsy|"
    r"abscess|ulcer|hernia|aneurysm|dissection|sepsis|shock|poisoning|overdose|toxicity|pregnancy|attack)\b",
    re.IGNORECASE)
_TEST_HEAD = re.compile(
    r"\b(biopsy|scan|x-?ray|radiograph|ct|mri|ultrasound|ultrasonography|echocardiogram|echo|ecg|ekg|"
    r"electrocardiogram|angiogram|angiography|endoscopy|colonoscopy|bronchoscopy|panel|tests?|count|cultures?|"
    r"smear|serology|puncture|examination|exam|levels?|studies|analysis|screen|swab|workup|work-up)\W*$",
    re.IGNORECASE)
_CATALOGUE_NAMES = frozenset(normalise_line(t) for t in CATALOGUE)


def _sentence(text: str) -> bool:
    """A clause with a verb, not a name: 'symptoms are not directly related to ...'."""
    return len(text.split()) > 6 and bool(_VERB.search(text))


def names_a_test(text: str) -> bool:
    """The name of a test, not of a condition ('Tissue biopsy', the embedded model's
    'diagnosis' after ordering one): a catalogue entry, or words ending in a test's kind
    with no word that names a condition ('Lead poisoning screen' is still a screen, so
    a condition word lets it through: 'Culture-negative endocarditis')."""
    if normalise_line(text) in _CATALOGUE_NAMES:
        return True
    return bool(_TEST_HEAD.search(text.strip())) and not _CONDITION_WORD.search(text)


def not_a_condition_name(text: str) -> bool:
    """Whether ``text`` fails to name one condition (the module's docstring): a
    non-answer, no disease at all, a symptom or finding or a list of them, a test's
    name, or a medicine's. Lead-ins and hedges are ignored ("X, I think" names X)."""
    text = strip_hedges(strip_lead_in(text) or text) or text
    return bool(not_a_diagnosis(text) or no_condition(text) or _sentence(text) or symptom_or_finding(text)
                or names_a_test(text) or names_a_medicine(text))
