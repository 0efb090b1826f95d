"""Order sets by presenting complaint: the imaging (or the one test) a clinician sends for
the part of the body, or the system, a patient's complaint is about, whatever the cause
(written for medsim, from general clinical convention: the painful knee is X-rayed, the
breast lump has a mammogram, the new neurological deficit an MRI of the brain).

Hospitals keep such sets beside the doctor's own choices (a "chief complaint order set"):
the focused doctor (:mod:`agents.participants.focused`) adds the set of its patient's
complaint to the work-up its running differential chooses, because a small model, asked
for the test that would confirm each of its candidates, names a blood test from the
hospital's list for every one of them (seen: a urine drug screen for each of four
candidates of a newborn's distended abdomen; lipase and an arterial blood gas for knee
pain) and seldom the imaging of the part that hurts.

A set is chosen by the words of what the doctor knows of the complaint (the task it is
given and what the patient said of it), outside a negation ("no chest pain" asks for no
chest X-ray), in the order they are first said; at most ``limit`` sets.
"""
from __future__ import annotations

from typing import Sequence

from agents.suites.negation import concepts, stem

__all__ = ["ORDER_SETS", "order_set_tests"]

# (name, the words that point to it, the tests it orders)
ORDER_SETS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("knee", ("knee", "knees", "patella", "kneecap"), ("X-ray of the knee", "MRI of the knee")),
    ("hip", ("hip", "hips"), ("X-ray of the hip and pelvis", "MRI of the hip")),
    ("shoulder", ("shoulder", "shoulders"), ("X-ray of the shoulder", "MRI of the shoulder")),
    ("elbow", ("elbow", "elbows"), ("X-ray of the elbow",)),
    ("hand", ("hand", "hands", "wrist", "wrists", "finger", "fingers", "thumb"),
     ("X-ray of the hand and wrist", "MRI of the hand")),
    ("foot", ("foot", "feet", "ankle", "ankles", "toe", "toes", "heel"), ("X-ray of the foot and ankle",)),
    ("spine", ("back", "spine", "spinal", "lumbar", "sciatica"), ("MRI of the spine",)),
    ("breast", ("breast", "breasts", "nipple", "nipples"), ("Mammography", "Breast biopsy")),
    ("chest", ("chest", "breath", "breathing", "breathless", "cough", "coughing", "wheeze", "wheezing", "sputum"),
     ("Chest X-ray",)),
    ("heart", ("palpitations", "fainting", "fainted", "faint", "syncope"), ("12-lead ECG", "Echocardiogram")),
    ("abdomen", ("abdomen", "abdominal", "belly", "tummy", "stomach", "vomiting", "jaundice", "constipation",
                 "bowel", "bowels", "diarrhea", "diarrhoea"), ("Abdominal ultrasound", "Abdominal X-ray")),
    ("pelvis", ("pelvic", "pelvis", "vaginal", "menstrual", "period", "periods", "uterus", "ovary", "ovaries"),
     ("Pelvic ultrasound",)),
    ("urinary", ("urine", "urinary", "urination", "urinating", "bladder", "kidney", "kidneys", "flank"),
     ("Urinalysis", "Renal ultrasound")),
    ("scrotum", ("testicle", "testicles", "testicular", "scrotum", "scrotal"), ("Scrotal ultrasound",)),
    ("skin", ("skin", "rash", "rashes", "lesion", "lesions", "mole", "moles", "ulcer", "ulcers", "blister",
              "blisters"), ("Skin biopsy",)),
    ("brain", ("headache", "headaches", "seizure", "seizures", "convulsions", "confusion", "confused", "diplopia",
               "numbness", "gait", "ataxia", "tremor", "vertigo", "memory"), ("MRI brain",)),
    ("neck", ("neck", "swallowing"), ("Ultrasound of the neck",)),
)
_BY_STEM: dict[str, int] = {}
for _i, (_, _words, _) in enumerate(ORDER_SETS):
    for _w in _words:
        _BY_STEM.setdefault(stem(_w), _i)


def order_set_tests(texts: Sequence[str], limit: int = 2) -> list[str]:
    """The tests of the order sets (at most ``limit`` sets) that the words of ``texts``
    point to, in the order the words are first said outside a negation."""
    picked: list[int] = []
    for text in texts:
        for _word, st, negated, _ in concepts(text):
            i = _BY_STEM.get(st)
            if i is not None and not negated and i not in picked:
                picked.append(i)
    return [t for i in picked[:limit] for t in ORDER_SETS[i][2]]
