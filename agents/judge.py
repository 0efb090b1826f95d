"""Diagnosis scoring: a deterministic normalised pre-check, then an LLM judge with
tolerant parsing. The judge never counts a missing diagnosis as correct.

The pre-check is conservative: it says right only when the diagnosis is the key (after
normalising case, punctuation, British/American spelling, plurals, a small curated table
of abbreviations and synonyms, lead-ins and hedges) or a more specific form of it (every
core word of the key in the *head* of the diagnosis, the part before "with", "due to",
a comma ...); it says wrong only for no diagnosis, a question, a list of possibilities,
a sentence about oneself, a negation or exclusion of the key, a sibling (type 1 for
type 2, hyper- for hypo-, chronic for acute, B for C, ...) and a broader class made of
fewer of the key's words ("Leukemia" for "Chronic lymphocytic leukemia"). Everything else (synonyms
outside the table, most broader classes, different conditions) is left to the LLM judge.

The diagnosis is written by the model under test, so it is read as data, never as words
to the judge: it is cleaned first (NFKC, so full-width letters are plain ones; zero-width
and bidi characters out); the pre-check says wrong for one longer than
:data:`MAX_DIAGNOSIS_CHARS`, for one holding text addressed to a grader (instructions, a
claimed verdict or answer key, JSON, chat-role markers) and for a list of four or more
conditions, and never says right for one of several conditions (that is the judge's to
decide); the judge gets it as one line of its own, cut at the cap
(:func:`diagnosis_for_judge`).
"""
from __future__ import annotations

import dataclasses
import json
import re
from functools import lru_cache
import unicodedata
from dataclasses import dataclass

from agents.condition_codes import ConditionCodes
from agents.condition_lexicon import ConditionLexicon
from agents.condition_phenotypes import ConditionPhenotypes
from agents.condition_thesaurus import ConditionThesaurus, written_in
from agents.events import EventSink, JudgeDecision
from agents.llm.base import LLM, CallContext, GenerateParams, Message
from agents.llm.calls import RetryPolicy, generate_logged
from agents.prompts import render
from agents.textsafe import UNSAFE

__all__ = ["normalise", "not_a_diagnosis", "strip_lead_in", "strip_hedges", "precheck", "parse_verdict", "Verdict",
           "judge_diagnosis", "judge_messages", "JudgeUnparsed", "RELATIONS", "JUDGE_SCHEMA", "REPLY_FORMATS",
           "DEFAULT_REPLY_FORMAT", "names_condition", "MAX_DIAGNOSIS_CHARS", "clean_diagnosis", "diagnosis_for_judge",
           "addressed_to_judge", "condition_items"]


# --------------------------------------------------------------------------- tables
# Written for this project. Abbreviations that are also English words ("all", "cap",
# "odd", ...) are expanded only when written in capitals; ambiguous ones (MS: multiple
# sclerosis or mitral stenosis; AS; GBS: Guillain-Barre or group B strep; PD) are left out.
_ABBREVIATIONS: dict[str, str] = {
    "mi": "myocardial infarction", "ami": "acute myocardial infarction",
    "stemi": "st elevation myocardial infarction", "nstemi": "non st elevation myocardial infarction",
    "acs": "acute coronary syndrome", "cad": "coronary artery disease", "ihd": "ischemic heart disease",
    "chf": "congestive heart failure", "ccf": "congestive heart failure", "hf": "heart failure",
    "af": "atrial fibrillation", "afib": "atrial fibrillation", "svt": "supraventricular tachycardia",
    "vt": "ventricular tachycardia", "pe": "pulmonary embolism", "dvt": "deep vein thrombosis",
    "vte": "venous thromboembolism", "copd": "chronic obstructive pulmonary disease",
    "ards": "acute respiratory distress syndrome", "rds": "respiratory distress syndrome",
    "nrds": "neonatal respiratory distress syndrome", "ild": "interstitial lung disease",
    "ipf": "idiopathic pulmonary fibrosis", "osa": "obstructive sleep apnea",
    "cap": "community acquired pneumonia", "tb": "tuberculosis", "uti": "urinary tract infection",
    "urti": "upper respiratory tract infection", "pid": "pelvic inflammatory disease",
    "dka": "diabetic ketoacidosis", "hhs": "hyperosmolar hyperglycemic state", "dm": "diabetes mellitus",
    "t1dm": "type 1 diabetes mellitus", "t2dm": "type 2 diabetes mellitus", "htn": "hypertension",
    "sle": "systemic lupus erythematosus", "ra": "rheumatoid arthritis", "oa": "osteoarthritis",
    "jia": "juvenile idiopathic arthritis", "gca": "giant cell arteritis", "pmr": "polymyalgia rheumatica",
    "ibs": "irritable bowel syndrome", "ibd": "inflammatory bowel disease", "uc": "ulcerative colitis",
    "gerd": "gastroesophageal reflux disease", "gord": "gastroesophageal reflux disease",
    "pud": "peptic ulcer disease", "sbo": "small bowel obstruction", "nec": "necrotizing enterocolitis",
    "ckd": "chronic kidney disease", "aki": "acute kidney injury", "esrd": "end stage renal disease",
    "all": "acute lymphoblastic leukemia", "aml": "acute myeloid leukemia", "cml": "chronic myeloid leukemia",
    "cll": "chronic lymphocytic leukemia", "dlbcl": "diffuse large b cell lymphoma", "nhl": "non hodgkin lymphoma",
    "itp": "immune thrombocytopenic purpura", "ttp": "thrombotic thrombocytopenic purpura",
    "hus": "hemolytic uremic syndrome", "dic": "disseminated intravascular coagulation",
    "hiv": "human immunodeficiency virus", "aids": "acquired immunodeficiency syndrome",
    "cmv": "cytomegalovirus", "ebv": "epstein barr virus", "hsv": "herpes simplex virus",
    "vzv": "varicella zoster virus", "rsv": "respiratory syncytial virus", "hpv": "human papillomavirus",
    "hav": "hepatitis a virus", "hbv": "hepatitis b virus", "hcv": "hepatitis c virus",
    "als": "amyotrophic lateral sclerosis", "mg": "myasthenia gravis", "tia": "transient ischemic attack",
    "cva": "cerebrovascular accident", "sah": "subarachnoid hemorrhage", "ich": "intracerebral hemorrhage",
    "ivh": "intraventricular hemorrhage", "sdh": "subdural hematoma",
    "bppv": "benign paroxysmal positional vertigo", "pml": "progressive multifocal leukoencephalopathy",
    "psc": "primary sclerosing cholangitis", "pbc": "primary biliary cholangitis",
    "nafld": "non alcoholic fatty liver disease", "hcc": "hepatocellular carcinoma", "rcc": "renal cell carcinoma",
    "bcc": "basal cell carcinoma", "scc": "squamous cell carcinoma", "bph": "benign prostatic hyperplasia",
    "aaa": "abdominal aortic aneurysm", "asd": "atrial septal defect", "vsd": "ventricular septal defect",
    "pda": "patent ductus arteriosus", "tof": "tetralogy of fallot", "hcm": "hypertrophic cardiomyopathy",
    "hocm": "hypertrophic obstructive cardiomyopathy", "dcm": "dilated cardiomyopathy",
    "pah": "pulmonary arterial hypertension", "pcos": "polycystic ovary syndrome",
    "siadh": "syndrome of inappropriate antidiuretic hormone secretion", "cah": "congenital adrenal hyperplasia",
    "adhd": "attention deficit hyperactivity disorder", "ocd": "obsessive compulsive disorder",
    "ptsd": "post traumatic stress disorder", "gad": "generalized anxiety disorder",
    "mdd": "major depressive disorder", "odd": "oppositional defiant disorder",
    "nms": "neuroleptic malignant syndrome", "sjs": "stevens johnson syndrome", "ten": "toxic epidermal necrolysis",
    "ftd": "frontotemporal dementia", "scfe": "slipped capital femoral epiphysis",
    "ddh": "developmental dysplasia of the hip", "lcpd": "legg calve perthes disease", "cf": "cystic fibrosis",
    "aom": "acute otitis media", "hsp": "henoch schonlein purpura", "cts": "carpal tunnel syndrome",
    "bv": "bacterial vaginosis", "sti": "sexually transmitted infection", "acl": "anterior cruciate ligament",
    "gi": "gastrointestinal", "cns": "central nervous system", "lrti": "lower respiratory tract infection",
}
# expanded only when written in capitals (also ordinary words)
_CAPS_ONLY = {"all", "cap", "odd", "ten", "mg", "pe", "ra", "uc", "hf", "af", "cf", "bv", "gi"}

# word sequences -> canonical words (both sides); lay names and spellings
_PHRASES: tuple[tuple[str, str], ...] = (
    ("heart attack", "myocardial infarction"), ("diabetes mellitus", "diabetes"),
    ("st segment elevation", "st elevation"), ("shingles", "herpes zoster"),
    ("chicken pox", "varicella"), ("chickenpox", "varicella"), ("whooping cough", "pertussis"),
    ("german measles", "rubella"), ("glandular fever", "infectious mononucleosis"),
    ("frozen shoulder", "adhesive capsulitis"), ("nephrolithiasis", "kidney stone"),
    ("clostridium difficile", "c difficile"), ("clostridioides difficile", "c difficile"), ("c diff", "c difficile"),
    ("deep venous thrombosis", "deep vein thrombosis"), ("gastro esophageal", "gastroesophageal"),
    ("cardiac failure", "heart failure"),
)
# single words -> canonical word (both sides), after spelling
_WORDS = {
    "emboli": "embol", "embolus": "embol", "embolism": "embol", "embolic": "embol", "embolisms": "embol",
    "thrombus": "thrombosis", "thrombi": "thrombosis", "infarct": "infarction", "infarcts": "infarction",
    "calculus": "stone", "calculi": "stone", "tumour": "tumor", "renal": "kidney", "ureteral": "ureteric",
    "myelogenous": "myeloid", "myelocytic": "myeloid", "toxicity": "poisoning",  # "Acetaminophen toxicity"
}
# British spellings inside a word ("pseudotumour", "discolouration")
_OUR = re.compile(r"(tum|col|hum|behavi|lab|od|vap)our")
# a diagnosis word that satisfies a key word (is-a): "small cell lung carcinoma" is a "lung cancer"
_SATISFIES = {"cancer": {"carcinoma", "adenocarcinoma"}}

# Mutually exclusive qualifiers: a diagnosis with one where the key has another is a sibling.
_EXCLUSIVE = (
    frozenset({"acute", "chronic", "subacute"}), frozenset({"benign", "malignant"}),
    frozenset({"primary", "secondary"}), frozenset({"anterior", "posterior"}),
    frozenset({"superior", "inferior"}), frozenset({"medial", "lateral"}),
    frozenset({"upper", "lower"}), frozenset({"proximal", "distal"}), frozenset({"internal", "external"}),
    frozenset({"ischemic", "hemorrhagic"}), frozenset({"viral", "bacterial", "fungal", "parasitic"}),
    frozenset({"congenital", "acquired"}), frozenset({"complete", "incomplete", "partial"}),
    frozenset({"simple", "complex"}), frozenset({"focal", "generalized", "partial"}),
    frozenset({"systolic", "diastolic"}), frozenset({"open", "closed"}),
    frozenset({"obstructive", "central"}),
    frozenset({"myeloid", "lymphocytic", "lymphoblastic"}),  # a leukemia's or lymphoma's cell line
)
_EXTENT = frozenset({"partial", "total"})  # exclusive beside a name that holds the other ("Partial TAPVR")
# the walls of the heart an infarction is named by: exclusive for an infarction only ("Anterior
# talofibular ligament sprain" is a lateral ankle sprain)
_INFARCT_WALLS = frozenset({"anterior", "inferior", "lateral", "posterior", "septal"})
# qualifiers that only block acceptance (the model decides): side, extent, severity
_BLOCKING = (frozenset({"left", "right"}), frozenset({"unilateral", "bilateral"}),
             frozenset({"mild", "moderate", "severe"}))
_PREFIX_PAIRS = (("hyper", "hypo"), ("intra", "extra"), ("supra", "infra"), ("pre", "post"))
# "key word: modifiers that make another condition": "pulmonary hypertension" is not a hypertension
_FALSE_FRIENDS = {
    "hypertension": {"pulmonary", "portal", "intracranial", "ocular"}, "stroke": {"heat", "sun"},
    "asthma": {"cardiac", "heart"}, "diabetes": {"insipidus"}, "pregnancy": {"ectopic", "molar", "phantom"},
    "colic": {"kidney", "biliary", "ureteric"}, "edema": {"pulmonary", "cerebral", "macular", "angioneurotic"},
    "depression": {"respiratory"}, "shock": {"spinal"},
    "fever": {"rheumatic", "scarlet", "yellow", "dengue", "q", "typhoid", "hay", "lassa", "glandular"},
}
# Class nouns: a diagnosis made of fewer words of the key, keeping the key's last class
# noun, is a broader class ("Leukemia" for "Chronic lymphocytic leukemia", "Dementia" for
# "Frontotemporal dementia") ...
_CLASS_NOUNS = {
    "leukemia", "lymphoma", "dementia", "hemophilia", "anemia", "arthritis", "dermatitis", "hepatitis", "cancer",
    "carcinoma", "tumor", "neoplasm", "malignancy", "infection", "seizure", "epilepsy", "stroke", "vasculitis",
    "cardiomyopathy", "neuropathy", "nephropathy", "myopathy", "encephalopathy", "encephalitis", "thyroiditis",
    "colitis", "gastroenteritis", "pneumonitis", "dystrophy", "ataxia", "disorder", "deficiency", "fracture",
    "dislocation", "hernia", "cyst", "ulcer", "hemorrhage", "thrombosis", "embolism", "infarction", "psychosis",
    "anxiety", "dysplasia", "fibrosis", "nephritis", "glomerulonephritis", "diabetes", "thrombocytopenia",
    "neutropenia", "vertigo", "headache",
}
# ... unless the key words it lacks only say acuity, side, severity or the like
_NON_SPECIFYING = {
    "acute", "chronic", "subacute", "active", "congestive", "idiopathic", "essential", "infection", "disease",
    "left", "right", "bilateral", "unilateral", "mild", "moderate", "severe", "recurrent", "uncomplicated",
    "complicated", "typical", "classic", "true", "clinical", "anterior", "posterior", "inferior", "superior",
    "lateral", "medial", "septal", "upper", "lower", "proximal", "distal",
}
# words that make the head something other than the key ("appendicitis-like", "mimicking")
_BLOCKERS = {"like", "mimic", "mimicking", "mimics", "resembling", "simulating", "mimicker", "screening", "vaccine",
             "vaccination", "prophylaxis", "risk", "history", "exposure", "contact", "carrier"}
_STOP = {"the", "an", "of", "in", "on", "at", "its", "to", "and", "for", "by", "is", "has", "case",
         "diagnosis", "final", "working", "provisional", "suspected", "presumed", "presumptive", "probable",
         "possible", "likely", "probably", "query", "clinical"}
# key words a diagnosis may leave out without becoming broader (only for equality)
_OPTIONAL = {"acute", "infection"}
# ... unless acuity names the entity (acute vs chronic leukaemia)
_ACUITY_NAMES = {"leukemia", "stress"}
_MERGE_PREFIXES = {"non", "pre", "post", "pseudo", "anti", "para", "re"}  # "re-entrant" is "reentrant"
_ROMAN = {"i": "1", "ii": "2", "iii": "3", "iv": "4", "v": "5", "vi": "6"}
# an article "a" is kept as a letter ("hemophilia A", "type A") unless it follows one of these
_FUNCTION = {"is", "of", "with", "has", "have", "had", "be", "been", "was", "as", "and", "to", "by", "from", "for",
             "in", "on", "at", "or", "like", "likely", "probably", "suspected", "presumed", "possible", "probable",
             "diagnosis", "it", "this", "that", "s", "not", "no", "without", "also", "plus", "due", "secondary",
             "caused", "complicated", "following", "after", "either", "versus", "vs", "maybe", "perhaps",
             "just", "still", "into", "than", "but", "suggests", "suggesting", "indicates", "think", "consistent"}


# --------------------------------------------------------------------------- text
def _fold(text: str) -> str:
    """Lower case, accents and typographic quotes folded, 'Crohn's' -> 'Crohn'."""
    t = unicodedata.normalize("NFKD", text)
    t = "".join(c for c in t if not unicodedata.combining(c)).replace("’", "'").replace("‘", "'")
    t = re.sub(r"\b(type|stage|grade|class|phase|degree|mobitz|factor|bipolar)[\s-]+(i{1,3}|iv|vi?)\b",
               lambda m: f"{m.group(1)} {_ROMAN[m.group(2).lower()]}", t, flags=re.IGNORECASE)
    t = re.sub(r"'s\b", "", t)
    return t


def normalise(text: str) -> str:
    """Case, accents, punctuation and articles folded: "The Crohn's disease." -> "crohn disease".
    A single "a" after a word is kept as a letter ("Hemophilia A")."""
    words = re.sub(r"[^a-z0-9]+", " ", _fold(text).lower()).split()
    out: list[str] = []
    for i, w in enumerate(words):
        if w in ("the", "an"):
            continue
        if w == "a" and (i == 0 or words[i - 1] in _FUNCTION):
            continue
        out.append(w)
    return " ".join(out)


@lru_cache(maxsize=65536)
def _spell(w: str) -> str:
    """British -> American spelling and light stemming, one word."""
    if w in _WORDS:
        return _WORDS[w]
    if len(w) > 3:
        w = _OUR.sub(r"\1or", w.replace("ae", "e").replace("oe", "e"))
        w = re.sub(r"(?<=...)is(e|ed|es|ing|ation)$", r"iz\1", w)
    if w in _WORDS:
        return _WORDS[w]
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 4 and w.endswith("s") and not w.endswith(("ss", "us", "is", "as", "os")):
        w = w[:-1]
    return _WORDS.get(w, w)


# the tables in canonical spelling ("diabetes" -> "diabete")
_FALSE_FRIENDS_CANON = {_spell(k): {_spell(w) for w in v} for k, v in _FALSE_FRIENDS.items()}
_CLASS_CANON = {_spell(w) for w in _CLASS_NOUNS}
_NON_SPECIFYING_CANON = {_spell(w) for w in _NON_SPECIFYING}


def _words(text: str, *, expand: bool = True) -> list[str]:
    """Canonical words of a phrase: normalised, prefixes merged ("non-Hodgkin" ->
    "nonhodgkin"), abbreviations expanded, phrase synonyms and spellings applied."""
    return list(_words_cached(text, expand))


@lru_cache(maxsize=16384)
def _words_cached(text: str, expand: bool) -> tuple[str, ...]:
    raw = re.sub(r"[^A-Za-z0-9]+", " ", _fold(text)).split()
    caps = {w.lower() for w in raw if w.isupper() and len(w) > 1}
    words = normalise(text).split()
    if expand:
        out: list[str] = []
        for w in words:
            if w in _ABBREVIATIONS and (w not in _CAPS_ONLY or w in caps):
                out.extend(normalise(_ABBREVIATIONS[w]).split())
            else:
                out.append(w)
        words = out
    merged: list[str] = []
    for w in words:
        if merged and merged[-1] in _MERGE_PREFIXES:
            merged[-1] += w
        else:
            merged.append(w)
    s = " " + " ".join(_spell(w) for w in merged) + " "
    for a, b in _phrases_canon():
        if a in s:
            s = s.replace(a, b)
    return tuple(s.split())


@lru_cache(maxsize=1)
def _phrases_canon() -> tuple[tuple[str, str], ...]:
    """The phrase table in canonical spelling, padded with spaces for whole-word
    replacement (computed once)."""
    return tuple((" " + " ".join(_spell(x) for x in a.split()) + " ", " " + " ".join(_spell(x) for x in b.split()) + " ")
                 for a, b in _PHRASES)


def _core(words: list[str]) -> frozenset[str]:
    return frozenset(w for w in words if w not in _STOP)


# --------------------------------------------------------------------------- lead-ins, hedges
_LEAD_IN = re.compile(
    r"^\s*(?:"
    r"(?:(?:my|the|our)\s+)?(?:final\s+|working\s+|provisional\s+|most\s+likely\s+|likely\s+|probable\s+|leading\s+"
    r"|preliminary\s+)?(?:diagnosis|dx|impression|assessment)(?:\s+is\b|\s*[:=\-])"
    r"|(?:diagnosis\s+ready|final\s+answer|answer)\s*[:=\-]"
    r"|the\s+patient\s+(?:is\s+diagnosed\s+with|is\s+suffering\s+from|suffers\s+from|(?:most\s+likely\s+|likely\s+"
    r"|probably\s+)?has)\b"
    r"|i\s+(?:think|believe|suspect|guess|reckon|feel)\b(?:\s+that\b)?"
    r"|i(?:'m|\s+am)\s+(?:fairly\s+|pretty\s+|quite\s+|reasonably\s+|very\s+|almost\s+|mostly\s+)?"
    r"(?:sure|confident|certain|convinced)\b(?:\s+(?:that|of|it's)\b)?"
    r"|i(?:'d|\s+would)\s+(?:say|go\s+with|diagnose|suggest)\b(?:\s+that\b)?"
    r"|my\s+(?:best\s+)?guess\s+is\b|best\s+guess\s*:"
    r"|(?:it|this|that)(?:'s|\s+is|\s+looks\s+like|\s+seems\s+to\s+be|\s+appears\s+to\s+be|\s+sounds\s+like)\b"
    r"|(?:the\s+)?(?:findings|presentation|picture|symptoms)\s+(?:are|is)\s+(?:most\s+)?(?:consistent\s+with"
    r"|suggestive\s+of|compatible\s+with|typical\s+of)"
    r"|(?:most|more|very)\s+likely\b|likely\b|probably\b|probable\b|presumably\b|presumed\b|presumptive\b"
    r"|suspected\b|possibly\b|possible\b|clinically\b|query\b|\?(?=\s*\w)|almost\s+certainly\b|definitely\b"
    r"|certainly\b|in\s+all\s+likelihood\b|consistent\s+with\b|compatible\s+with\b|suggestive\s+of\b"
    r"|(?:an?\s+)?(?:suspected\s+|probable\s+|likely\s+)?case\s+of\b"
    r"|(?:an?|the)\s+(?=\w)"
    r")[\s,:;\-]*",
    re.IGNORECASE,
)
_TRAIL = re.compile(
    r"(?:^|[\s,;:(\[\-–—]+)(?:"
    r"i\s+(?:think|believe|suspect|guess|reckon)|i(?:'d|\s+would)\s+say|probably|(?:is\s+|are\s+)?(?:the\s+)?"
    r"(?:most|more|very)\s+likely(?:\s+diagnosis)?|(?:is\s+|seems\s+|appears\s+)?likely|presumably|presumed"
    r"|suspected|probable|possible|possibly|provisional(?:ly)?|at\s+this\s+(?:point|stage|time)|for\s+now"
    r"|in\s+my\s+(?:opinion|view)|(?:(?:but|though|although)\s+)?i(?:'m|\s+am)\s+not\s+(?:entirely\s+|completely\s+"
    r"|100%\s+)?(?:sure|certain)|is\s+my\s+(?:best\s+guess|(?:final\s+|working\s+)?diagnosis)"
    r"|(?:working|provisional|presumptive)\s+diagnosis)[\s.!)\]]*$",
    re.IGNORECASE,
)
_MID_HEDGE = re.compile(r",?\s*\bi\s+(?:think|believe|suspect|guess|reckon)\b\s*,?", re.IGNORECASE)


def strip_lead_in(text: str) -> str:
    """'My diagnosis is a suspected case of AMI' -> 'AMI'; "I'm fairly sure it's X" -> 'X'."""
    t = text.strip()
    for _ in range(8):
        new = _LEAD_IN.sub("", t, count=1).strip()
        if new == t or not new:
            break
        t = new
    return t


def strip_hedges(text: str) -> str:
    """Lead-ins and hedges around one diagnosis removed: 'Probably X, I think' -> 'X'.
    Markdown emphasis and a wrapping [..] go too. A list of alternatives stays a list."""
    t = re.sub(r"[*_`#]+", "", text).strip().strip("\"'")
    if re.fullmatch(r"\[[^\]]*\]\.?", t):
        t = t.strip(".")[1:-1]
    t = t.strip().rstrip(".!;,: ")
    for _ in range(8):
        old = t
        t = strip_lead_in(t)
        t = _TRAIL.sub("", t).strip().rstrip(".!;,: ")
        if t == old:
            break
    return _MID_HEDGE.sub(",", t).strip(" ,")


# --------------------------------------------------------------------------- clauses
_LINK = re.compile(
    r"(;|,|:|\s[-–—]\s|\bassociated\s+with\b|\bwithout\b|\bwith\b|\bdue\s+to\b|\bsecondary\s+to\b|\bcaused\s+by\b"
    r"|\bcomplicated\s+by\b|\bresulting\s+in\b|\bleading\s+to\b|\bin\s+the\s+(?:setting|context)\s+of\b"
    r"|\bon\s+(?:a\s+)?background\s+of\b|\bon\s+top\s+of\b|\bfollowing\b|\bafter\b|\band\b|\bplus\b|\bbut\b"
    r"|\balong\s+with\b|\bas\s+well\s+as\b|\bfrom\b|\bmetastatic\s+to\b|\bmetastas[ie]s\s+to\b|\bspread\s+to\b"
    r"|\bin\s+(?:a|an|the)\s+(?:patient|setting|context)\b|\bwhich\b|\bthat\b|\bincluding\b|\bprobably\b"
    r"|\blikely\b|\bpossibly\b|\bversus\b|\bvs\b\.?|\bor\b|\bexcept\b)",
    re.IGNORECASE,
)
_NEG_PRE = re.compile(
    r"^\s*(?:no|not|without|negative\s+for|absence\s+of|absent|free\s+of|excluding|excluded|exclude|ruled\s+out"
    r"|unlikely(?:\s+to\s+be)?|not\s+consistent\s+with|no\s+evidence\s+of|no\s+signs?\s+of|history\s+of|h/o"
    r"|(?:past|family)\s+history\s+of|previous|prior|resolved|old|risk\s+(?:of|for)|at\s+risk\s+(?:of|for)"
    r"|exposure\s+to|screening\s+for|prophylaxis\s+(?:for|against)|vaccinated\s+against|denies|denied)\b",
    re.IGNORECASE)
_NEG_POST = re.compile(
    r"\b(?:excluded|ruled\s+out|unlikely|negative|not\s+likely|less\s+likely|absent|not\s+present|not\s+seen"
    r"|not\s+found|not\s+supported|not\s+confirmed|resolved)\s*$", re.IGNORECASE)
_NEG_WORD = re.compile(r"\b(?:no|not|never|cannot|nor)\b|n't\b", re.IGNORECASE)
_NEG_ONLY = re.compile(r"^\s*(?:(?:is|was|has\s+been|been|now|also)\s+)?(?:excluded|ruled\s+out|unlikely|negative"
                       r"|not\s+likely|less\s+likely|absent|not\s+present|resolved)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class _Clause:
    text: str
    negated: bool  # a clear negation or exclusion: "no X", "X ruled out", "without X"
    link: str = ""  # the linking word before it ("with", "due to", ",", ...)
    unsure: bool = False  # a negation word elsewhere in it: "X is not ...", "X does not fit"


def _clauses(text: str) -> list[_Clause]:
    """Split a diagnosis at linking words and punctuation; parenthesised parts become
    clauses of their own. Each clause knows whether it is negated."""
    parens = re.findall(r"[(\[]([^)\]]*)[)\]]", text)
    main = re.sub(r"[(\[][^)\]]*[)\]]", " ", text)
    out: list[_Clause] = []
    for part in [main, *parens]:
        pieces = _LINK.split(part)
        link = ""
        for i, p in enumerate(pieces):
            if i % 2:
                link = p.strip().lower()
                continue
            p = p.strip(" .")
            if not p:
                continue
            if _NEG_ONLY.match(p) and out:
                out[-1] = dataclasses.replace(out[-1], negated=True)
                continue
            neg = link == "without" or bool(_NEG_PRE.match(p) or _NEG_POST.search(p))
            out.append(_Clause(p, neg, link, unsure=bool(_NEG_WORD.search(p))))
    return out


def _head(text: str) -> tuple[_Clause | None, list[_Clause]]:
    """The first clause that is not negated (the main diagnosis), and all clauses."""
    cl = _clauses(text)
    return next((c for c in cl if not c.negated), None), cl


# --------------------------------------------------------------------------- model text as data
MAX_DIAGNOSIS_CHARS = 300  # a diagnosis names a condition; the shipped pairs' longest is 105 characters
_INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
# letters of other scripts that look like Latin ones ("Тhе аnswеr"), folded for the check alone
_HOMOGLYPHS = str.maketrans("аеорсухіјѕԁһӏвкмнтгԛԝοαεικνρτυχ", "aeopcyxijsdhlbkmhtrqwoaeikvptux")


def clean_diagnosis(text: str) -> str:
    """A diagnosis as the pre-check and the judge read it: NFKC (full-width and other
    compatibility forms are plain letters), zero-width, soft-hyphen and bidi characters
    removed, every other control (newlines included) a space, spaces collapsed."""
    t = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    return " ".join(UNSAFE.sub(" ", t).split())


def diagnosis_for_judge(text: str) -> str:
    """The diagnosis for the judge's prompt: :func:`clean_diagnosis` (one line: a newline
    in it cannot start a line of the prompt, "Correct diagnosis: ..." among them), cut at
    :data:`MAX_DIAGNOSIS_CHARS` (marked "[cut]").

    It is delimited by its line, not by quotes, and the prompt keeps the words the
    labelled set was measured with: on the embedded 1.5B judge, quoting it (as a JSON
    string or in guillemets) or telling the judge that it is data made 1 to 8 more of the
    44 labelled pairs the pre-check leaves to it come out wrong, and the judge still
    followed 4 or 5 of 5 injections put to it directly. What stops injections is the
    pre-check, which refuses text addressed to the judge (:func:`addressed_to_judge`)."""
    t = clean_diagnosis(text)
    if len(t) > MAX_DIAGNOSIS_CHARS:
        t = t[:MAX_DIAGNOSIS_CHARS].rstrip() + " [cut]"
    return t


_ADDRESSED = re.compile(
    r"[{}]|<\s*/?\s*[a-z|!]|<\|"  # JSON, tags, chat-template tokens
    r"|\b(?:ignore|disregard|overrid(?:e|ing)|overrule)\b"
    r"|\b(?:judge|judges|grader|graders|grading|evaluator|assistant|verdict|rubric|instructions?|system\s+prompt"
    r"|prompt\s+injection)\b"
    r"|\b(?:answer\s+key|correct\s+(?:diagnosis|answer)|right\s+answer|true\s+diagnosis|reference\s+(?:diagnosis"
    r"|answer)|doctor'?s\s+diagnosis)\b"
    r"|\b(?:reply|respond|output|answer|say|print|return|mark|grade|classify|label|score)\b"
    r"(?:\s+(?:it|this|that|with|as))*\s*[\"'“]?\s*(?:yes|same|correct|true|right|more[\s_]specific|match(?:es)?)\b"
    r"|\bis\s+correct\b|\bthe\s+same\s+(?:condition|diagnosis|disease|thing)\s+as\b|\brelation\s*[:=]"
    r"|(?:^|[.!?]\s)\s*(?:system|user|assistant|human)\s*:",
    re.IGNORECASE)


def addressed_to_judge(text: str) -> bool:
    """Whether ``text`` holds words for whoever grades it (instructions, a claimed verdict
    or answer key, JSON, a chat role), homoglyphs and invisible characters folded first.
    No diagnosis holds them: a doctor model that writes them is talking to the judge."""
    return bool(_ADDRESSED.search(clean_diagnosis(text).lower().translate(_HOMOGLYPHS)))


_PARENTHESIS = re.compile(r"\s*\(([^()]*)\)")
_SIDE = re.compile(r"^(?:left|right|bilateral|unilateral|(?:left|right)[- ]sided)\s+", re.IGNORECASE)
_ITEM_SEP = re.compile(r"[,;\n]|\s[-–—/]\s|\s(?:and|&|\+)\s|(?<=[A-Za-z]{3})[.!?]\s+(?=\S)|(?:^|\s)(?:\d+[.)]|[-*•])\s+")


# words of a part that only qualifies the condition before it ("pneumonia, right lower lobe, community-acquired")
_QUALIFIER_WORDS = {"lobe", "lobar", "lung", "side", "sided", "community", "acquired", "hospital", "nosocomial", "onset",
                    "early", "late", "new", "stage", "grade", "type", "apical", "basal", "middle", "partial", "total",
                    "confirmed", "poorly", "well", "controlled", "unspecified", "both", "one", "genotype", "serotype",
                    "subtype", "episode", "single",
                    # where on the body ("Cellulitis, right hand", "Posterior subcapsular cataract, left eye")
                    "eye", "eyes", "ear", "ears", "hand", "hands", "foot", "feet", "arm", "arms", "forearm", "leg",
                    "legs", "thigh", "calf", "knee", "knees", "hip", "hips", "shoulder", "elbow", "wrist", "ankle",
                    "heel", "finger", "fingers", "thumb", "toe", "toes", "limb", "limbs", "extremity", "extremities"}
_QUALIFIER_CANON = _NON_SPECIFYING_CANON | {_spell(w) for w in _QUALIFIER_WORDS}
_NUMBERING = re.compile(r"\d+[a-z]?|[ivx]{1,4}")  # "genotype 1a", "stage II"
# a part naming a marker the condition carries ("HLA-B27-associated", "JAK2 V617F positive"), not a condition
_MARKER_PART = re.compile(r"^[\w/+.-]+(?:[\s-][\w/+.-]+){0,2}[\s-](?:positive|negative|associated|mutated|deficient)$",
                          re.IGNORECASE)


def condition_items(text: str) -> int:
    """How many conditions ``text`` lists: its parts between commas, semicolons, lines,
    "and", bullets and sentence ends, less the negated ones ("no effusion", "PE ruled
    out"), the ones that only qualify ("bilateral", "right lower lobe") and empty ones.
    "Pneumonia with effusion, right lower lobe" is one; "Asthma, COPD, pneumonia" three."""
    n = 0
    for part in _ITEM_SEP.split(strip_hedges(text)):
        p = part.strip(" .")
        if not normalise(p) or _NEG_ONLY.match(p) or _NEG_PRE.match(p) or _NEG_POST.search(p):
            continue
        if _only_qualifies(p, after=n > 0):
            continue
        n += 1
    return max(n, 1) if normalise(text) else 0


def _only_qualifies(part: str, *, after: bool = True) -> bool:
    """Whether a part of a diagnosis only qualifies the condition named before it: a side, a
    site, a stage, a course ("right lower lobe", "left eye", "genotype 1a"), or, after a
    condition, a marker it carries ("HLA-B27-associated")."""
    words = _core(_words(part))
    if words and all(w in _QUALIFIER_CANON or _NUMBERING.fullmatch(w) for w in words):
        return True
    return after and _MARKER_PART.match(part.strip(" .")) is not None


def _bare(dx: str) -> str:
    """The condition a diagnosis names without what only qualifies it: a leading side, parts
    after a comma or semicolon and parentheses that only qualify ("Left hydrocele",
    "Otitis media with effusion, severe", "Uveitis (HLA-B27-associated)"); ``dx`` itself where
    a part names something else."""
    t = _PARENTHESIS.sub(lambda m: " " if _only_qualifies(m.group(1)) else m.group(0), dx)
    head, *rest = re.split(r"\s*[,;]\s*", t)
    if rest and not all(_only_qualifies(p) for p in rest if p.strip(" .")):
        return dx
    return _SIDE.sub("", " ".join(head.split())).strip(" .") or dx


# --------------------------------------------------------------------------- checks
_FIRST_PERSON = re.compile(
    r"\b(?:i(?:'m|'d|'ve|'ll)|i\s+(?:am|think|believe|suspect|guess|would|will|have|need|can|cannot|can't|don't|do"
    r"|feel|was|say|recommend|suggest|want|see|agree|wonder|could|should|must|hope)|my|mine|we|our|you|your)\b",
    re.IGNORECASE)
_LIST = re.compile(
    r"\b(?:or|either|vs|versus|differentials?|ddx|rule\s+out|r/o|such\s+as|a\s+variety\s+of|variety\s+of\s+causes"
    r"|could\s+be\s+due\s+to|may\s+be\s+due\s+to|might\s+be\s+due\s+to|possible\s+causes|one\s+of|possibilities"
    r"|cannot\s+distinguish|and/or|(?:cannot|can't|can\s+not)\s+(?:be\s+)?(?:ruled\s+out|rule\s+out|excluded?)"
    r"|not\s+(?:yet\s+)?(?:been\s+)?(?:ruled\s+out|excluded))\b|\sv\.\s", re.IGNORECASE)
_NON_ANSWER = re.compile(
    r"^\s*(?:none|unknown|unsure|uncertain|cannot|can't|unclear|undetermined|undiagnosed|indeterminate|n/?a|idk"
    r"|need\s+more|more\s+(?:tests|information|info|data)|insufficient|pending|tbd|to\s+be\s+determined"
    r"|not\s+sure|no\s+diagnosis|no\s+idea|don't\s+know|hard\s+to\s+say)\b",
    re.IGNORECASE)


def not_a_diagnosis(text: str) -> str | None:
    """Why ``text`` cannot be one diagnosis (a question, a list of possibilities, a
    sentence about oneself, a negation or non-answer), or None. Keeps a lenient model
    judge from saying "Yes" to a line that names no single condition. Lead-ins ("My
    diagnosis is") and hedges ("probably", ", I think") are ignored."""
    t = strip_hedges(text)
    if not normalise(t):
        return "empty"
    if "?" in t:
        return "a question"
    if _LIST.search(t):
        return "a hedge or a list of possibilities, not one diagnosis"
    if _FIRST_PERSON.search(t):
        return "a sentence in the first or second person"
    if _NON_ANSWER.match(t):
        return "a negation or non-answer"
    if _head(t)[0] is None:
        return "a negation or non-answer"
    return None


@dataclass(frozen=True)
class Verdict:
    correct: bool | None  # None: the pre-check could not decide
    method: str  # precheck | llm
    rule: str
    rationale: str


def _key_forms(truth: str) -> tuple[str, list[str]]:
    """The key without parentheses, and the parenthesised aliases: 'Ureteric stone
    (renal colic)' -> ('Ureteric stone', ['renal colic'])."""
    aliases = [a.strip() for a in re.findall(r"\(([^)]*)\)", truth) if a.strip()]
    main = re.sub(r"\([^)]*\)", " ", truth).strip() or truth
    return main, aliases


# what may follow a key's last word in a more specific form of it ("Migraine with aura",
# "Meningitis due to ...", "Diabetes mellitus type 2", "Hepatitis C virus infection")
_TRAILING_OK = {"of", "with", "without", "due", "to", "in", "on", "at", "from", "by", "and", "secondary", "caused",
                "after", "following", "complicating", "involving", "affecting", "type", "stage", "grade", "class",
                "virus", "disease", "syndrome", "form", "variant", "subtype", "exacerbation", "flare", "episode"}


def _trailing_word(head: str, key_words: list[str]) -> str | None:
    """A word written right after the key's last word, in the same phrase, that says
    nothing of place, cause, side, acuity or type: English names a kind of a condition
    before its noun ("pneumococcal pneumonia"), and a name that goes on past the noun is
    often another condition ("bronchiolitis obliterans", "erythema multiforme" for
    erythema): the judge decides those. A comma, a bracket or a colon ends the phrase
    ("Pneumonia, community-acquired")."""
    last = key_words[-1] if key_words else None
    for part in re.split(r"[,;:()\[\]]", head):
        words = _words(part)
        if last not in words:
            continue
        i = len(words) - 1 - words[::-1].index(last)
        after = words[i + 1] if i + 1 < len(words) else None
        if after and after not in _TRAILING_OK and after not in _NON_SPECIFYING_CANON \
                and not re.fullmatch(r"[a-z]|\d+|[ivx]+", after):
            return after
    return None


def _satisfied(key: frozenset[str], words: frozenset[str]) -> bool:
    return all(k in words or _SATISFIES.get(k, set()) & words for k in key)


def _conflicts(key: frozenset[str], dx: frozenset[str], groups, *, named: bool = False
               ) -> tuple[set[str], set[str], bool]:
    """Words of the key and of the diagnosis that exclude each other; and whether a
    prefix pair (hyper-/hypo-) is among them. ``named``: also the walls of an infarction
    and the letters and numbers that name a type (hepatitis B / C, type 1 / 2)."""
    ka, da, prefix = set(), set(), False
    for g in groups:
        kg, dg = (key & g) - dx, (dx & g) - key
        if kg and dg:
            ka |= kg
            da |= dg
    for a, b in _PREFIX_PAIRS:
        for k in key - dx:
            for p, q in ((a, b), (b, a)):
                if k.startswith(p) and len(k) - len(p) >= 3 and q + k[len(p):] in dx:
                    ka.add(k), da.add(q + k[len(p):])
                    prefix = True
    for k in key - dx:
        if "non" + k in dx:
            ka.add(k), da.add("non" + k)
            prefix = True
        if k.startswith("non") and k[3:] in dx:
            ka.add(k), da.add(k[3:])
            prefix = True
    if named and "infarction" in key | dx:
        kg, dg = (key & _INFARCT_WALLS) - dx, (dx & _INFARCT_WALLS) - key
        if kg and dg:
            ka |= kg
            da |= dg
    if named:  # letters and numbers naming a type: hepatitis B / C, type 1 / 2
        kid = {w for w in key - dx if re.fullmatch(r"[a-e]|\d{1,2}", w)}
        did = {w for w in dx - key if re.fullmatch(r"[a-e]|\d{1,2}", w)}
        if kid and did:
            ka |= kid
            da |= did
    return ka, da, prefix


def _equal(d: str, truth: str, expand: bool) -> bool:
    """The diagnosis (without its parentheses) equals the key, or with ``expand`` one of
    the key's parenthesised aliases, word for word after canonicalisation."""
    main, aliases = _key_forms(truth)
    dm = re.sub(r"\([^)]*\)", " ", d).strip() or d
    dw = _core(_words(dm, expand=expand))
    if not dw:
        return False
    for form in [main, *aliases] if expand else [main]:
        kw = _core(_words(form, expand=expand))
        optional = _OPTIONAL - ({"acute"} if kw & _ACUITY_NAMES else set())
        if kw and (dw == kw or dw - optional == kw - optional and dw - optional):
            return True
    return False


_NORMAL_KEY = re.compile(r"\b(?:normal|physiologic(?:al)?|healthy|no\s+(?:disease|abnormality|pathology))\b",
                         re.IGNORECASE)
# a later clause that offers another possibility: "X, possibly Y" is not plainly X
_UNSURE_LINKS = {"probably", "likely", "possibly"}


_INITIAL_SKIP = {"of", "the", "and", "with", "to", "due", "in", "a", "an", "or", "on"}


def _initials(text: str) -> set[str]:
    """The initialisms a name's own words spell: each word's first letter, with and
    without the little words ("of", "the", ...), hyphenated parts counted as words too
    ("Gastro-esophageal reflux disease": GERD and GRD)."""
    plain = re.sub(r"\([^)]*\)", " ", text)
    out: set[str] = set()
    for split in (r"[\s/]+", r"[\s/\-]+"):
        words = [w for w in re.split(split, plain.lower()) if re.match(r"[a-z0-9]", w)]
        for keep in (words, [w for w in words if w not in _INITIAL_SKIP]):
            if len(keep) >= 2:
                out.add("".join(w[0] for w in keep))
    return out


def initialism_of(short: str, name: str) -> bool:
    """Whether ``short`` (one token of 2-7 letters, written as an initialism: capitals)
    is the initialism of ``name``'s own words ("SLE" of "Systemic lupus erythematosus")."""
    s = short.strip().strip(".")
    if not re.fullmatch(r"[A-Z][A-Za-z]{1,6}", s) or sum(ch.isupper() for ch in s) < 2 or len(name.split()) < 2:
        return False
    return s.lower() in _initials(name)


def _names_another(short: str, name: str) -> bool:
    """Whether medsim's thesaurus holds the initialism ``short`` as the name of a condition
    that ``name`` does not name: "SCLC" is small cell lung cancer, not the squamous cell
    lung cancer its letters also spell."""
    said = _THESAURUS.conditions(short)
    return bool(said) and not said & _THESAURUS.conditions(name)


def _expand_initialism(dx: str, name: str) -> str | None:
    """``dx`` with the one word that is ``name``'s initialism ("TAPVR") written out, when
    it has other words too ("Supracardiac TAPVR"), else None."""
    tokens = dx.split()
    if len(tokens) < 2:
        return None
    hits = [i for i, t in enumerate(tokens) if initialism_of(t.strip(",.;:()"), name)]
    if len(hits) != 1 or _names_another(tokens[hits[0]].strip(",.;:()"), name):
        return None  # none, several, or the initialism of another condition too ("SCLC")
    added = _core(_words(" ".join(t for i, t in enumerate(tokens) if i != hits[0])))
    if _conflicts(_core(_words(name)), added, _EXCLUSIVE + (_EXTENT,))[0]:
        return None  # words of its own that contradict the name's: "Partial TAPVR" (total anomalous ...)
    tokens[hits[0]] = name
    return " ".join(tokens)


_ENDING = re.compile(r"\s+(syndrome|disease|disorder)\s*$", re.IGNORECASE)


def _spelt_out(dx: str, truth: str) -> bool:
    """Whether ``dx`` is the key's initialism spelt out: the key one word in capitals and
    perhaps a head noun ("SAPHO syndrome"), the diagnosis the words it stands for with the
    same noun ("Synovitis, acne, pustulosis, hyperostosis and osteitis syndrome")."""
    short, long = _ENDING.sub("", truth).strip(), _ENDING.sub("", dx).strip()
    if _ENDING.search(truth) and (not _ENDING.search(dx) or _ENDING.search(truth).group(1).lower()
                                  != _ENDING.search(dx).group(1).lower()):
        return False
    if len(short.split()) != 1 or len(long.split()) < 2:
        return False
    return initialism_of(short, re.sub(r"[,;]", " ", long))


_NON_KEY = re.compile(r"^\s*non[\s-]+", re.IGNORECASE)  # a key that is the other kind: "Non-Hodgkin lymphoma"


def _vocab_key(name: str) -> str:
    """A name as the pre-check's vocabularies look it up: its canonical words, joined."""
    return " ".join(_words(name))


_CODES = ConditionCodes(_vocab_key)
_LEXICON = ConditionLexicon(_vocab_key, codes=_CODES.codes)
_PHENOTYPES = ConditionPhenotypes(_vocab_key, codes=_CODES.codes)
_THESAURUS = ConditionThesaurus(_vocab_key)


def precheck(diagnosis: str | None, truth: str) -> Verdict:
    """Decide the clear cases without a model: no diagnosis, a question, a list, a
    negation or a sibling is wrong; the key (ignoring case, punctuation, spelling,
    articles, hedges, the key's parenthesised aliases, known abbreviations and synonyms)
    or a more specific form of it is right; then, of what is left, a name ICD-10-CM holds
    under the key's code or a code beneath it is right (:mod:`agents.condition_codes`:
    "Quinsy" for "Peritonsillar abscess", "Graves disease" for "Hyperthyroidism"), a lay
    or old name WordNet holds in the key's synset (:mod:`agents.condition_lexicon`) or a
    name the HPO gives as the key's term or one beneath it (:mod:`agents.condition_phenotypes`:
    "Clubfoot" for "Talipes equinovarus") or medsim's thesaurus puts on the key's line or
    beneath it (:mod:`agents.condition_thesaurus`: "Glue ear" for "Otitis media with effusion")
    is right, and where the thesaurus holds the two names as two conditions the others give
    way to the model judge; anything else is undecided. A diagnosis left undecided is read
    again without what only qualifies it (:func:`_bare`: "CSCR, left eye", "Consumption,
    severe"): what is right without it is right with it."""
    v = _precheck_whole(diagnosis, truth)
    if v.correct is None and diagnosis is not None:
        dx = _answer_and_keys(diagnosis, truth)[0]
        bare = _bare(dx)
        if bare != dx:
            w = _precheck_whole(bare, truth)
            if w.correct:
                return Verdict(True, "precheck", w.rule, f"'{dx[:80]}' is '{bare[:80]}' with what only qualifies it: "
                               f"{w.rationale}")
    return v


def _precheck_whole(diagnosis: str | None, truth: str) -> Verdict:
    """:func:`precheck` of the diagnosis as it is written."""
    v = _precheck(diagnosis, truth)
    if diagnosis is None or not (v.correct is None and v.rule == "undecided" or v.rule == "more_specific"):
        return v
    dx, keys = _answer_and_keys(diagnosis, truth)
    bare = _bare(dx)  # what only qualifies it cannot make it another condition: "Otitis media with effusion, severe"
    apart = held_apart(dx, keys) or (held_apart(bare, keys) if bare != dx else None)  # medsim's thesaurus knows
    # both as two conditions: the others give way
    if v.correct:  # the key's words and more, unless the diagnosis holds the key whole ("Autoimmune hepatitis")
        if apart is None or any(_holds_whole(dx, t) for t in keys):
            return v
        return Verdict(None, "precheck", "undecided", f"'{dx[:80]}' holds the words of '{truth[:80]}', but medsim's "
                       f"thesaurus holds them apart (lines {apart[1]} and {apart[2]}: {apart[0]}); needs the judge")
    if apart is not None and apart[0] == "apart":  # a classification groups for counting (SJS under L51)
        return Verdict(None, "precheck", "undecided", f"medsim's thesaurus holds '{dx[:80]}' and '{truth[:80]}' "
                       f"apart (lines {apart[1]} and {apart[2]}: {apart[0]}); needs the judge")
    for t in keys:
        got = _CODES.relation(dx, t)
        if got:
            how, mine, theirs = got
            said = (f"ICD-10-CM holds '{dx[:80]}' and '{t}' under one code ({mine})" if how == "same" else
                    f"ICD-10-CM holds '{dx[:80]}' ({mine}) under '{t}' ({theirs})")
            return Verdict(True, "precheck", f"icd10cm_{how}", said)
    for t in keys:
        got = _LEXICON.relation(dx, t)
        if got:
            _, offset, names = got
            return Verdict(True, "precheck", "wordnet_same", f"WordNet 3.0 names '{dx[:80]}' and '{t}' as one "
                           f"condition ({', '.join(names[:5])}; synset {offset})")
    for t in keys:
        got = _PHENOTYPES.relation(dx, t)
        if got:
            how, mine, theirs = got
            said = (f"the HPO names '{dx[:80]}' and '{t}' as one term ({mine} {_PHENOTYPES.label(mine)})"
                    if how == "same" else f"the HPO holds '{dx[:80]}' ({mine} {_PHENOTYPES.label(mine)}) under "
                    f"'{t}' ({theirs} {_PHENOTYPES.label(theirs)})")
            return Verdict(True, "precheck", f"hpo_{how}", said)
    return _thesaurus_verdict(dx, keys) or v


def _answer_and_keys(diagnosis: str, truth: str) -> tuple[str, tuple[str, ...]]:
    """The answer as the vocabularies look it up (cleaned, hedges stripped, whole: "Pneumonia
    and sepsis" is not pneumonia's name) and the key's forms (itself, its main name, its
    parenthesised aliases)."""
    raw = clean_diagnosis(diagnosis[: 4 * MAX_DIAGNOSIS_CHARS])
    main, aliases = _key_forms(truth)
    return strip_hedges(raw) or raw, tuple(dict.fromkeys((truth, main, *aliases)))


_HEAD_NOUNS = {_spell(w) for w in ("disease", "syndrome", "disorder", "condition")}  # add nothing to a name


def _thesaurus_verdict(dx: str, keys: tuple[str, ...]) -> Verdict | None:
    """medsim's thesaurus (:mod:`agents.condition_thesaurus`): the diagnosis a name of the
    key's condition or of one beneath it ("Glue ear" for otitis media with effusion,
    "Ulcerative colitis" for inflammatory bowel disease), or, by the pre-check's own word
    rules, a more specific form of such a name ("Bleeding duodenal ulcer" for peptic ulcer
    disease, through "Duodenal ulcer"; of the key's other names, only with a side, an acuity or
    the like, or followed by where it is: "Right CRAO" for central retinal artery occlusion,
    "Pseudogout of the right knee" for acute calcium pyrophosphate crystal arthritis), unless
    the thesaurus holds the diagnosis whole as a condition of its own ("Stomach flu" holds
    "flu" but is viral gastroenteritis, not influenza). Right or nothing, never wrong."""
    for t in keys:
        got = _THESAURUS.relation(dx, t)
        if got:
            how, mine, theirs = got
            said = (f"medsim's thesaurus names '{dx[:80]}' and '{t}' as one condition (line {mine})" if how == "same"
                    else f"medsim's thesaurus holds '{dx[:80]}' (line {mine}) beneath '{t}' (line {theirs})")
            return Verdict(True, "precheck", f"thesaurus_{how}", said)
    if _THESAURUS.conditions(dx):  # a condition of its own there, not the key's nor beneath it ("Stomach flu")
        return None
    for t in keys:
        for name, how, line in _THESAURUS.narrower(t):
            if not written_in(name, dx):
                continue
            w = _precheck(dx, name)
            if not w.correct and _then_where(dx, name):  # a name with its own linking words, then a cause:
                w = Verdict(True, "precheck", "more_specific", f"'{dx[:80]}' is '{name}' and where it is or "
                            "what caused it")  # "Drug reaction with eosinophilia ... secondary to allopurinol"
            if not w.correct:
                continue
            head = _head(dx)[0]  # what the diagnosis adds to the name, in its main clause: what a later
            extra = _core(_words(head.text if head else dx)) - _core(_words(name))  # one adds ("..., right hand") qualifies
            if how == "same" and w.rule == "more_specific" and extra - _QUALIFIER_CANON and not _then_where(dx, name):
                continue  # the key's other name with words of its own: "Torsion of the appendix testis", not the testis
            if _conflicts(_core(_words(t)), extra, _EXCLUSIVE + (_EXTENT,))[0]:
                continue  # words that contradict the key's own: "Partial TAPVR" for total anomalous ...
            plain = w.rule != "more_specific" or not extra - _HEAD_NOUNS
            rel = "same" if how == "same" and plain else "more_specific"
            where = "another name of" if how == "same" else "a kind of"
            return Verdict(True, "precheck", f"thesaurus_{rel}", f"medsim's thesaurus holds '{name}' as {where} "
                           f"'{t}' (line {line}), and '{dx[:80]}' names it ({w.rule}: {w.rationale[:120]})")
    return None


def _precheck(diagnosis: str | None, truth: str) -> Verdict:
    """:func:`precheck` without ICD-10-CM."""
    if diagnosis is None or not normalise(diagnosis):
        return Verdict(False, "precheck", "no_diagnosis", "no diagnosis was given")
    raw = clean_diagnosis(diagnosis[: 4 * MAX_DIAGNOSIS_CHARS])  # past that it is too long whatever it holds
    dx = strip_hedges(raw) or raw
    short = dx[:80]
    if len(raw) > MAX_DIAGNOSIS_CHARS:
        return Verdict(False, "precheck", "too_long", f"a diagnosis of {len(diagnosis)} characters names no single "
                       f"condition (at most {MAX_DIAGNOSIS_CHARS})")
    if normalise(dx) == normalise(truth) or normalise(raw) == normalise(truth):
        return Verdict(True, "precheck", "normalised_equal", f"'{short}' equals '{truth}' after normalisation")
    if addressed_to_judge(raw) and not addressed_to_judge(truth):
        return Verdict(False, "precheck", "addressed_to_judge", f"'{short}' holds words for the judge (instructions, "
                       "a verdict, an answer key or JSON), not one diagnosis")
    if _spelt_out(dx, truth):  # before the list rule: "Synovitis, acne, pustulosis, ... syndrome" for SAPHO
        return Verdict(True, "precheck", "initialism", f"'{short}' spells out the initialism of '{truth}'")
    items = condition_items(dx) - max(0, condition_items(truth) - 1)  # the key's own commas ("Hand, foot and mouth")
    if items >= 4:
        return Verdict(False, "precheck", "not_a_diagnosis", f"'{short}' lists {items} conditions, not one diagnosis")
    why = not_a_diagnosis(dx)
    if why:
        if not_a_diagnosis(truth) or _NORMAL_KEY.search(truth):  # "Normal behavior": "No abnormality" may match
            return Verdict(None, "precheck", "undecided", f"'{short}' {why}, but so is the key; needs the judge")
        return Verdict(False, "precheck", "not_a_diagnosis", f"'{short}' names no single condition ({why})")
    if _equal(dx, truth, expand=False):
        return Verdict(True, "precheck", "core_equal", f"'{short}' equals '{truth}' without qualifiers")
    main, aliases = _key_forms(truth)
    if any(normalise(dx) == normalise(a) for a in aliases) or _equal(dx, truth, expand=True):
        return Verdict(True, "precheck", "abbreviation",
                       f"'{short}' is '{truth}' written with an abbreviation or synonym")
    if (initialism_of(dx, main) and not _names_another(dx, main)) or (initialism_of(main, dx)
                                                                       and not _names_another(main, dx)):
        return Verdict(True, "precheck", "initialism", f"'{short}' and '{truth}': one is the initialism of the "
                       "other's words")
    spelt = _expand_initialism(dx, main)
    if spelt is not None:  # "Supracardiac TAPVR": the key's initialism with words of its own
        v = _precheck(spelt, truth)
        if v.correct:
            return Verdict(True, "precheck", v.rule, f"'{short}' writes '{truth}' as its initialism: {v.rationale}")
    negated_key = _NON_KEY.sub("", main)
    if negated_key != main and initialism_of(dx, negated_key):  # "SCLC" for "Non-small cell lung cancer"
        return Verdict(False, "precheck", "sibling", f"'{short}' spells '{negated_key}', which the key "
                       f"'{truth}' negates")

    head_clause, clauses = _head(dx)
    if head_clause is None:  # defensive: not_a_diagnosis already rejects an all-negated text
        return Verdict(False, "precheck", "not_a_diagnosis", f"'{short}' only negates")
    head = head_clause.text
    key_words = _words(main)
    key = _core(key_words)
    hw = _core(_words(head))
    if not key or not hw:
        return Verdict(None, "precheck", "undecided", "needs the judge")
    # sibling: a mutually exclusive qualifier, the rest nested one way or the other
    ka, da, prefix = _conflicts(key, hw, _EXCLUSIVE, named=True)
    if ka:
        k_rest, d_rest = key - ka, hw - da
        if (k_rest <= hw or d_rest <= key) and (k_rest & hw or prefix):
            return Verdict(False, "precheck", "sibling",
                           f"'{head}' is a sibling of '{truth}' ({'/'.join(sorted(da))} where the key has "
                           f"{'/'.join(sorted(ka))})")
    optional = {"acute"} if not key & _ACUITY_NAMES else set()
    # broader: fewer of the key's words, with the key's class noun ("Leukemia" for "Chronic
    # lymphocytic leukemia"; not "Iron deficiency" for "Iron deficiency anemia")
    class_noun = next((w for w in reversed(key_words) if w in _CLASS_CANON), None)
    if hw - optional < key - optional and class_noun in hw and (key - hw - optional) - _NON_SPECIFYING_CANON \
            and "/" not in dx:
        lacks = ", ".join(sorted(key - hw - optional))
        return Verdict(False, "precheck", "broader", f"'{head}' is a broader class than '{truth}' (it lacks {lacks})")
    # more specific: every core word of the key in the head, nothing that changes the condition
    need = key - optional if key - optional else key
    if _satisfied(need, hw):
        if items > 1:  # the key among other conditions ("Pneumonia, asthma, COPD"): the judge decides
            return Verdict(None, "precheck", "undecided", f"'{short}' names {items} conditions; needs the judge")
        blocked = _conflicts(key, hw, _BLOCKING)[0] or hw & _BLOCKERS or any(
            hw & _FALSE_FRIENDS_CANON.get(k, set()) for k in key) or "/" in dx or head_clause.unsure or any(
            c.link in _UNSURE_LINKS and not c.negated for c in clauses) or _trailing_word(head, key_words)
        if not blocked:
            return Verdict(True, "precheck", "more_specific",
                           f"'{head}' names '{truth}' (or a more specific form of it)")
        return Verdict(None, "precheck", "undecided", f"'{head}' contains the key with a qualifier that may change it")
    # negated or excluded mention of the key
    for c in clauses:
        if c.negated and _satisfied(key, _core(_words(c.text))):
            return Verdict(False, "precheck", "negated", f"'{c.text}': the key is negated or excluded")
    return Verdict(None, "precheck", "undecided", "needs the judge")


# --------------------------------------------------------------------------- the model judge
RELATIONS = {"same": True, "more_specific": True, "broader": False, "sibling": False, "different": False,
             "not_one_diagnosis": False}
# the judge's structured reply: the relation, then a short reason (a bounded enum and a short reason
# keep a small model's JSON valid). Measured on the shipped pairs with the embedded model (issue 22):
# asking the reason first made its reasons echo the prompt's "different condition" and agreement fell
# (0.863 tuning, 0.878 held out, against 0.912 and 0.902); letting a reason that says "X is a subtype
# of Y" overrule the relation alone gained as many false positives (siblings it misnamed subtypes) as
# it removed false negatives: neither is used. Such a reason is now only a cause to ask the other way
# round (_subtype_both_ways), or, naming the key the subtype, a veto on a "right" (docs/suites.md).
# A second look at a "different" or "sibling" relation
# (each name put to the model alone for its standard medical name, then the pre-check on the
# names it gave) turned as many verdicts wrong as right: 0.905 before and after on all 201
# pairs (held out 0.902 both), 2 false negatives fewer, 2 false positives more ("Neuromuscular
# disorder" named myasthenia gravis; "Lockjaw" named a myoclonus); not used.
JUDGE_SCHEMA = {
    "type": "object",
    "properties": {
        "relation": {"type": "string", "enum": list(RELATIONS)},
        "why": {"type": "string", "maxLength": 80},
    },
    "required": ["relation", "why"],
    "additionalProperties": False,
}
REPLY_FORMATS = ("text", "json")
DEFAULT_REPLY_FORMAT = "json"  # measured better on the labelled set (benchmarks/judge_pairs.py)
_JSON_MIN_TOKENS = 80  # enough for the bounded object above

_RELATION_WORDS = {**{k.replace("_", " "): v for k, v in RELATIONS.items()}, "synonym": True, "equivalent": True,
                   "exact": True, "subtype": True, "more specific": True, "less specific": False, "unrelated": False,
                   "list": False, "yes": True, "no": False, "true": True, "false": False, "correct": True,
                   "incorrect": False}

_YES = re.compile(r"^\W*(yes|correct|same|match(?:es)?|true)\b", re.IGNORECASE)
_NO = re.compile(r"^\W*(no|incorrect|different|not|false|wrong)\b", re.IGNORECASE)
_YES_ANY = re.compile(r"\b(they match|the same (?:condition|diagnosis)|is correct|are equivalent)\b", re.IGNORECASE)
_NO_ANY = re.compile(r"\b(do(?:es)? not match|not the same|different (?:condition|diagnos[ie]s)|is incorrect|are not equivalent)\b", re.IGNORECASE)
_JSON_FIELD = re.compile(r'"(relation|verdict|answer|correct|same|match)"\s*:\s*("([^"]*)"|true|false)', re.IGNORECASE)


def _parse_json(text: str) -> tuple[bool | None, str]:
    """A JSON reply, whole or cut off after its first field."""
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    if isinstance(obj, dict):
        for name in ("relation", "verdict", "answer", "correct", "same", "match"):
            v = obj.get(name)
            if isinstance(v, bool):
                return v, f"json_{name}"
            if isinstance(v, str):
                got = _RELATION_WORDS.get(v.strip().lower().replace("-", " ").replace("_", " "))
                if got is not None:
                    return got, f"json_{name}"
        return None, "unparsed"
    for m in _JSON_FIELD.finditer(text):
        if m.group(3) is None:
            return m.group(2).lower() == "true", f"json_{m.group(1).lower()}"
        got = _RELATION_WORDS.get(m.group(3).strip().lower().replace("-", " ").replace("_", " "))
        if got is not None:
            return got, f"json_{m.group(1).lower()}"
    return None, "unparsed"


def parse_verdict(reply: str) -> tuple[bool | None, str]:
    """'Yes.', 'yes, they match', '**No** - different', '{"relation": "sibling", ...}'
    ... -> (verdict, rule). Plain text is always accepted: servers and fakes may ignore
    the schema."""
    text = reply.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    if text.startswith("{"):
        return _parse_json(text)
    text = re.sub(r"[*_`#]+", "", text).strip()
    if _YES.search(text):
        return True, "leading_yes"
    if _NO.search(text):
        return False, "leading_no"
    no_any, yes_any = bool(_NO_ANY.search(text)), bool(_YES_ANY.search(text))
    if no_any and not yes_any:
        return False, "phrase_no"
    if yes_any and not no_any:
        return True, "phrase_yes"
    return None, "unparsed"


class JudgeUnparsed(RuntimeError):
    pass


def judge_messages(diagnosis: str, truth: str, reply_format: str = DEFAULT_REPLY_FORMAT) -> list[Message]:
    """The judge's prompt (system and user messages) for one reply format; the diagnosis
    one cleaned line, capped (:func:`diagnosis_for_judge`)."""
    if reply_format not in REPLY_FORMATS:
        raise ValueError(f"reply_format must be one of {REPLY_FORMATS}, got {reply_format!r}")
    suffix = "" if reply_format == "text" else "_json"
    return [Message("system", render("judge" + suffix)),
            Message("user", render("judge_user" + suffix, truth=clean_diagnosis(truth),
                                   diagnosis=diagnosis_for_judge(diagnosis)))]


def judge_diagnosis(
    diagnosis: str | None,
    truth: str,
    *,
    llm: LLM,
    params: GenerateParams,
    case_id: str,
    turn: int,
    sink: EventSink,
    policy: RetryPolicy = RetryPolicy(),
    attempts: int = 2,
    reply_format: str = DEFAULT_REPLY_FORMAT,
) -> Verdict:
    """Pre-check, then the LLM judge; the decision and its rationale become an event.
    ``reply_format="json"`` asks for a bounded JSON object (a schema the backend may
    enforce); the reply is parsed leniently either way. Raises :class:`JudgeUnparsed`
    if the judge's reply cannot be read ``attempts`` times."""
    v = precheck(diagnosis, truth)
    if v.correct is None:
        assert diagnosis is not None
        messages = judge_messages(diagnosis, truth, reply_format)
        nudge = "Please answer with Yes or No first."
        if reply_format == "json":
            params = dataclasses.replace(params, response_schema=json.dumps(JUDGE_SCHEMA, sort_keys=True),
                                         max_tokens=max(params.max_tokens, _JSON_MIN_TOKENS))
            nudge = 'Please reply with the JSON object only, e.g. {"relation": "same", "why": "..."}.'
        verdict, rule, reply = None, "unparsed", ""
        for _ in range(attempts):
            out = generate_logged(llm, messages, params, CallContext("judge", case_id, turn), sink, policy)
            reply = out.text.strip()
            verdict, rule = parse_verdict(reply)
            if verdict is not None:
                break
            messages = messages + [Message("assistant", reply), Message("user", nudge)]
        if verdict is None:
            raise JudgeUnparsed(f"judge reply could not be parsed: {reply[:200]!r}")
        v = Verdict(verdict, "llm", rule, reply)
        part = part_of_key(diagnosis, truth) if verdict else None
        subtype = subtype_in_reason(reply, diagnosis, truth) if reply_format == "json" else None
        if verdict and subtype == "key":
            v = Verdict(False, "llm", "reason_says_broader", f"{reply} | its reason calls the key '{truth[:80]}' a "
                        "subtype of the diagnosis: the diagnosis is the broader name, whatever the relation says")
        elif part:
            v = Verdict(False, "llm", "part_of_key", f"{reply} | '{part[0][:80]}' is a part of the key '{truth[:80]}' "
                        f"without {', '.join(part[1])}: a broader name, not the key nor a kind of it")
        elif verdict and reply_format == "json" and reply_relation(reply) == "same":
            v = _swapped(v, diagnosis, truth, llm=llm, params=params, ctx=CallContext("judge", case_id, turn),
                         sink=sink, policy=policy)
        elif not verdict and subtype == "diagnosis":
            v = _subtype_both_ways(v, diagnosis, truth, llm=llm, params=params,
                                   ctx=CallContext("judge", case_id, turn), sink=sink, policy=policy)
        if v.correct:
            v = _thesaurus_veto(v, diagnosis, truth)
    sink.emit(JudgeDecision(method=v.method, correct=bool(v.correct), diagnosis=diagnosis,
                            truth=truth, rationale=v.rationale, rule=v.rule))
    return v


def _holds_whole(dx: str, key: str) -> bool:
    """Whether the key's words stand in the diagnosis together and in order ("Autoimmune
    hepatitis" holds "Hepatitis"; "Atrioventricular nodal reentrant tachycardia" does not
    hold "Atrioventricular reentrant tachycardia", nor "Otitis media with effusion" "Acute
    otitis media")."""
    d, k = _words(dx), _words(key)
    return bool(k) and any(d[i:i + len(k)] == k for i in range(len(d) - len(k) + 1))


_WHERE = {"of", "in", "at", "on", "involving", "affecting"}
# what may follow a condition's whole name and still leave it the condition named: its cause,
# its setting, what it came after ("Extradural haematoma secondary to a skull fracture"); not
# a second condition ("and", "or", "versus") nor a doubt ("probably")
_THEN_CAUSE = re.compile(r"(?:secondary|due|related|attributable) to|caused by|induced by|triggered by|following|after"
                         r"|from|in (?:the )?(?:setting|context) of|on (?:a )?background of|complicating")


def _then_where(dx: str, name: str) -> bool:
    """Whether ``dx`` is ``name`` whole followed by where it is ("Pseudogout of the right
    knee") or by what caused it ("Acute confusional state secondary to a urinary tract
    infection"), not ``name`` with words put inside it ("Torsion of the appendix testis")."""
    d, n = ([_spell(w) for w in normalise(x).split()] for x in (dx, name))  # "haematoma" is "hematoma"
    if len(d) <= len(n) + 1 or d[:len(n)] != n:
        return False
    rest = d[len(n):]
    return rest[0] in _WHERE or _THEN_CAUSE.match(" ".join(rest)) is not None


def held_apart(dx: str, keys: tuple[str, ...]) -> tuple[str, int, int] | None:
    """What medsim's thesaurus says of a diagnosis (looked up whole) against the key's forms
    (:meth:`ConditionThesaurus.apart`) when it holds it apart from every form it knows, else
    None (it knows none of them, or one is the diagnosis's condition or above it)."""
    known = [t for t in keys if _THESAURUS.known(t)]
    said = [_THESAURUS.apart(dx, t) for t in known]
    if not known or any(x is None for x in said):
        return None
    return said[0]


def _unqualified_apart(dx: str, keys: tuple[str, ...]) -> tuple[str, str, int, int] | None:
    """For a diagnosis the thesaurus does not know whole: the name left when its parentheses
    and a leading side are taken off ("Post-traumatic stress disorder (given the trauma
    exposure)", "Left hydrocele"), with what the thesaurus says of it (:func:`held_apart`),
    when it holds that name and the key as two conditions, neither beneath the other (not
    "broader": what was taken off may have narrowed it). None where what was in parentheses,
    alone or before the name ("Hypertension (pulmonary)"), is a name the thesaurus does not
    hold apart from the key: the words taken off may be the condition."""
    if _THESAURUS.known(dx):
        return None
    inner = [m.strip() for m in _PARENTHESIS.findall(dx) if m.strip()]
    name = _bare(" ".join(_PARENTHESIS.sub(" ", dx).split()).strip(" ,;"))
    if not name or name == dx or not _THESAURUS.known(name):
        return None
    said = held_apart(name, keys)
    if said is None or said[0] != "apart":
        return None
    for other in (*inner, *(f"{i} {name}" for i in inner)):
        if _THESAURUS.known(other) and held_apart(other, keys) is None:
            return None
    return (name, *said)


def _thesaurus_veto(v: Verdict, diagnosis: str, truth: str) -> Verdict:
    """A model's "right" where medsim's thesaurus knows both names and holds them apart:
    two conditions, neither beneath the other ("Chronic myelomonocytic leukemia" for chronic
    myeloid leukemia), or the key beneath the diagnosis (the broader name: "Viral hepatitis"
    for hepatitis A); for a diagnosis it does not know whole, the name left without its
    parentheses and side, when that is two conditions with the key (:func:`_unqualified_apart`).
    The model's "right" on the pairs the pre-check leaves is little better than chance
    (docs/suites.md); the thesaurus held no labelled-right pair apart."""
    dx, keys = _answer_and_keys(diagnosis, truth)
    apart = held_apart(dx, keys)
    if apart is None:
        bare = _unqualified_apart(dx, keys)
        if bare is None:
            return v
        dx, apart = bare[0], bare[1:]
    how, mine, theirs = apart
    why = ("two conditions, neither beneath the other" if how == "apart" else "the key is a kind of the diagnosis: "
           "the diagnosis is the broader name")
    return Verdict(False, "llm", f"thesaurus_{how}", f"{v.rationale} | medsim's thesaurus holds '{dx[:80]}' (line "
                   f"{mine}) and '{truth[:80]}' (line {theirs}) apart: {why}")


def reply_relation(reply: str) -> str | None:
    """The relation a JSON reply names ("same", "broader", ...), or None."""
    m = _JSON_FIELD.search(reply)
    if m is None or m.group(1).lower() != "relation" or m.group(3) is None:
        return None
    rel = m.group(3).strip().lower().replace("-", "_").replace(" ", "_")
    return rel if rel in RELATIONS else None


_NOUN_CANON = {_spell(w) for w in ("disease", "infection")}


def part_of_key(diagnosis: str, truth: str) -> tuple[str, list[str]] | None:
    """(the diagnosis's main clause, the key's words it lacks) when that clause is made of
    fewer of the key's words, side and acuity aside, and lacks one that specifies it:
    "Respiratory distress (due to hypoxemia)" of "Respiratory distress syndrome",
    "Bilateral arthritis (with tendinitis)" of "Reactive arthritis", "Bursitis" of "Pes
    anserine bursitis". Such a name is not the key nor a kind of it, whatever a model says
    (in issue 22's bench runs the embedded judge called such names "more specific" or
    "another name"). A name that adds a word of its own ("Acute promyelocytic leukemia" for
    acute myeloid leukemia) is not a part of the key."""
    raw = clean_diagnosis(diagnosis[: 4 * MAX_DIAGNOSIS_CHARS])
    head, _ = _head(strip_hedges(raw) or raw)
    if head is None:
        return None
    words = _core(_words(head.text))
    own = words - (_NON_SPECIFYING_CANON - _NOUN_CANON) or words  # "Hodgkin disease" has a noun of its own
    main, aliases = _key_forms(truth)
    for t in (main, *aliases):
        key = _core(_words(t))
        lacks = (key - own) - _NON_SPECIFYING_CANON
        if own and own < key and lacks:
            return head.text, sorted(lacks)
    return None


# a family's words: shared by two names, they say nothing about whether the names are one condition
_FAMILY_FREE = {_spell(w) for w in ("disease", "syndrome", "disorder", "condition", "acute", "chronic", "primary",
                                     "secondary", "type", "left", "right", "bilateral", "infection")}


def _swapped(v: Verdict, diagnosis: str, truth: str, *, llm: LLM, params: GenerateParams, ctx: CallContext,
             sink: EventSink, policy: RetryPolicy) -> Verdict:
    """A model's "same" asked the other way round (the key as the diagnosis, the
    diagnosis as the key; the pre-check first). Another name is another name both ways;
    a model that calls "Bursitis" the same as "Pes anserine bursitis" calls the latter a
    more specific form of the former when asked so, and one that calls "Rheumatoid
    arthritis" the same as "Reactive arthritis" calls them different conditions. So:
    the key a more specific form of the diagnosis -> the diagnosis is broader, wrong; a
    different condition or a sibling while the two names share a word beyond the generic
    ones (their family: "arthritis") -> a neighbour in that family, wrong;
    otherwise the first verdict stands (a lay name or an eponym shares no word, and the
    small model often fails to recognise it from the other side). Measured in issue 22:
    figures in docs/suites.md."""
    back = precheck(truth, diagnosis)
    if back.correct is not None:
        relation = ("more_specific" if "more_specific" in back.rule else "same" if back.correct else
                    "broader" if back.rule == "broader" else "different")
        said = f"pre-check {back.rule}: {back.rationale}"
    else:
        messages = judge_messages(truth, diagnosis, "json")
        out = generate_logged(llm, messages, params, ctx, sink, policy)
        said = out.text.strip()
        relation = reply_relation(said)
    note = f"{v.rationale} | asked the other way round ('{truth[:80]}' for '{diagnosis[:80]}'): {said[:200]}"
    if relation == "more_specific":
        return Verdict(False, "llm", "swapped_broader", note + " -> the diagnosis is the broader name")
    shared = (_core(_words(diagnosis)) & _core(_words(truth))) - _FAMILY_FREE
    if relation in ("different", "sibling") and shared:
        return Verdict(False, "llm", "swapped_neighbour", note + f" -> another member of the family "
                       f"'{' '.join(sorted(shared))}'")
    return Verdict(v.correct, v.method, v.rule, note)


_SUBTYPE_REASON = re.compile(
    r"^\s*(?:the\s+)?(?P<a>.+?)\s+is\s+(?:a|an)\s+(?:(?:specific|more specific|particular|rare|common)\s+)?"
    r"(?:subtype|sub-type|type|form|kind|variant|subset|cause)\s+of\s+(?:the\s+|an?\s+)?(?P<b>.+?)\s*(?:[,.;:]|\s+but\b|\s+and\b|$)",
    re.IGNORECASE)


def subtype_in_reason(reply: str, diagnosis: str, truth: str) -> str | None:
    """Which of the two names a JSON reply's reason calls, in so many words, a subtype (a
    type, form, kind, variant) of the other: "diagnosis" for "Glioblastoma is a subtype of
    brain tumor" (key: brain tumor), "key" for "Hyperkalemia is a subtype of electrolyte
    disturbance" (diagnosis: electrolyte disturbance), else None. Both names must be the
    ones asked about, after the judge's folding."""
    try:
        why = json.loads(reply).get("why", "")
    except (ValueError, AttributeError):
        return None
    m = _SUBTYPE_REASON.match(why if isinstance(why, str) else "")
    if m is None:
        return None
    raw = clean_diagnosis(diagnosis[: 4 * MAX_DIAGNOSIS_CHARS])
    mine = {_vocab_key(strip_hedges(raw) or raw), _vocab_key(raw)}
    main, aliases = _key_forms(truth)
    keys = {_vocab_key(t) for t in (truth, main, *aliases)}
    a, b = _vocab_key(m.group("a")), _vocab_key(m.group("b"))
    return "diagnosis" if a in mine and b in keys else "key" if a in keys and b in mine else None


def _subtype_both_ways(v: Verdict, diagnosis: str, truth: str, *, llm: LLM, params: GenerateParams,
                       ctx: CallContext, sink: EventSink, policy: RetryPolicy) -> Verdict:
    """A "different" whose own reason calls the diagnosis a subtype of the key, asked the
    other way round by the model (the key as the diagnosis): a subtype is a subtype from
    both sides, so if the key then comes out broader than the diagnosis the diagnosis is a
    more specific form of the key, right; anything else keeps the verdict (a sibling the
    model misnamed a subtype is not broader from the other side). A pair the pre-check
    decides the other way round keeps it too: there the pre-check's "broader" is only the
    word overlap it declined to call "more specific" ("Tumor lysis syndrome", "Tumor").
    Issue 22 names the class (the reason contradicts the relation); letting the reason alone
    overrule the relation was measured to add as many false positives as it removed."""
    back = precheck(truth, diagnosis)
    if back.correct is not None:  # its "broader" is the word overlap the pre-check declined the other way
        return Verdict(v.correct, v.method, v.rule, f"{v.rationale} | asked the other way round, pre-check "
                       f"{back.rule}: not confirmed by the model")
    out = generate_logged(llm, judge_messages(truth, diagnosis, "json"), params, ctx, sink, policy)
    said = out.text.strip()
    relation = reply_relation(said)
    note = f"{v.rationale} | asked the other way round ('{truth[:80]}' for '{diagnosis[:80]}'): {said[:200]}"
    if relation == "broader":
        return Verdict(True, "llm", "subtype_both_ways", note + " -> the diagnosis is a more specific form of the key")
    return Verdict(v.correct, v.method, v.rule, note)


# words of a condition that do not name it on their own: qualifiers and head nouns
# ("phyllodes" names "phyllodes tumor"; "tumor" does not)
_GENERIC = {"disease", "syndrome", "disorder", "acute", "chronic", "primary", "secondary", "infection", "type",
            "left", "right", "bilateral", "condition", "deficiency", "injury", "failure", "tumor", "tumour",
            "cancer", "carcinoma", "neoplasm", "mass", "lesion", "benign", "malignant", "active", "stage"}


def names_condition(text: str, condition: str) -> bool:
    """Whether ``text`` names ``condition``: the same canonical words in a row (spelling
    variants, abbreviations and plurals included: "MI" names "myocardial infarction"),
    or every distinctive word of the condition anywhere in the text. Used to keep an
    answer out of text that must not give it away (a reflection's insight)."""
    cond = [w for w in _words(re.sub(r"\([^)]*\)", " ", condition)) if w not in _STOP]
    words = _words(text)
    if not cond:
        return False
    n = len(cond)
    if any(words[i:i + n] == cond for i in range(len(words) - n + 1)):
        return True
    distinctive = {w for w in cond if w not in _GENERIC and len(w) > 2}
    if distinctive and distinctive <= set(words):
        return True
    # two of its words in a row ("myocardial infarction" of "inferior ST-elevation MI")
    pairs = {(a, b) for a, b in zip(cond, cond[1:]) if not ({a, b} <= _GENERIC)}
    if pairs & set(zip(words, words[1:])):
        return True
    abbrevs = {a.lower() for a in re.findall(r"\(([A-Za-z0-9]{2,10})\)", condition)}
    return bool(abbrevs & set(normalise(text).split()))
