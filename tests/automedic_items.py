"""Handmade multiple-choice items (written for these tests) for the AutoMedic suite."""
from __future__ import annotations

import json
from pathlib import Path

SUITABLE = [
    {"id": "pyelo", "question": "A 34-year-old woman comes to the emergency department because of fever, chills and "
     "pain in her right flank for 2 days. She has had burning on urination for 4 days. She has no other medical "
     "problems and takes no medicines. She does not smoke and works as a teacher. Her temperature is 39.1°C "
     "(102.4°F), pulse is 112/min, and blood pressure is 118/74 mm Hg. Physical examination shows tenderness at the "
     "right costovertebral angle. Laboratory studies show a leukocyte count of 16,500/mm3. Urinalysis shows many "
     "white blood cells and white cell casts. Which of the following is the most likely diagnosis?",
     "options": {"A": "Acute cystitis", "B": "Acute pyelonephritis", "C": "Renal colic", "D": "Appendicitis"},
     "answer": "Acute pyelonephritis"},
    {"id": "mi", "question": "A 61-year-old man comes to the emergency department because of crushing chest pain that "
     "began 1 hour ago while he was shovelling snow. The pain spreads to his jaw. He has high blood pressure and "
     "smokes 20 cigarettes a day. His pulse is 58/min and blood pressure is 96/60 mm Hg. An ECG shows ST-segment "
     "elevation in leads II, III and aVF. Which of the following is the most likely diagnosis?",
     "options": ["Stable angina", "Aortic dissection", "Inferior myocardial infarction", "Pericarditis"],
     "answer": "C"},
    {"id": "dka", "question": "A 17-year-old boy is brought to the emergency department because of vomiting and "
     "abdominal pain since this morning. Over the past 2 weeks he has been very thirsty and has lost weight. He has "
     "no medical history. His pulse is 124/min and respirations are 30/min and deep. Laboratory studies show a "
     "glucose concentration of 540 mg/dL and a bicarbonate concentration of 8 mEq/L. Urine ketones are strongly "
     "positive. Which of the following is the most likely diagnosis?",
     "options": {"A": "Diabetic ketoacidosis", "B": "Hyperosmolar hyperglycemic state", "C": "Acute gastroenteritis",
                 "D": "Acute pancreatitis"}, "answer": "A"},
    {"id": "gout", "question": "A 58-year-old man comes to the clinic because of sudden, severe pain and swelling of "
     "his right big toe that woke him last night. He drinks 6 beers a day and takes hydrochlorothiazide for high "
     "blood pressure. His temperature is 37.8°C (100°F). Examination shows a red, hot, swollen first "
     "metatarsophalangeal joint. Joint fluid shows needle-shaped, negatively birefringent crystals. Which of the "
     "following is the most likely diagnosis?",
     "options": {"A": "Septic arthritis", "B": "Pseudogout", "C": "Gout", "D": "Cellulitis"}, "answer": "Gout"},
]
UNSUITABLE = [
    ({"id": "trial", "question": "Investigators are studying a new drug for high blood pressure in a randomized trial "
      "of 200 participants. Half receive the drug and half receive placebo. Which of the following best describes "
      "this study design?", "options": ["Cohort study", "Randomized controlled trial", "Case-control study"],
      "answer": "B"}, "research_participants"),
    ({"id": "mech", "question": "A 52-year-old man with high blood pressure is started on a new medication. Two weeks "
      "later he develops a dry cough that keeps him awake at night. He has no fever. Which of the following is the "
      "mechanism of action of the drug most likely responsible?",
      "options": {"A": "Blocks beta-1 receptors", "B": "Inhibits angiotensin-converting enzyme",
                  "C": "Blocks calcium channels"}, "answer": "B"}, "abstract_mechanism"),
    ({"id": "rash", "question": "A 25-year-old man comes to the clinic because of the rash shown in the photograph. "
      "It appeared 3 days ago after a hike in the woods. Which of the following is the most likely diagnosis?",
      "options": {"A": "Contact dermatitis", "B": "Psoriasis", "C": "Tinea corporis"}, "answer": "A"}, "image_dependent"),
    ({"id": "recall", "question": "Deficiency of which vitamin causes scurvy?",
      "options": {"A": "Vitamin A", "B": "Vitamin C", "C": "Vitamin D"}, "answer": "Vitamin C"}, "fact_recall"),
    ({"id": "longopts", "question": "A 45-year-old woman asks about her results. Which of the following is true?",
      "options": {"A": "She is a 45-year-old woman with a fever of 39 C, a cough for 3 weeks, night sweats, weight "
                       "loss of 6 kg and a cavity in the right upper lobe on her chest X-ray",
                  "B": "She is a 45-year-old woman with a fever of 38 C, a productive cough for 2 days, crackles at the "
                       "left base and consolidation of the left lower lobe on her chest X-ray"},
      "answer": "A"}, "key_facts_in_options"),
]
MALFORMED = {"id": "broken", "question": "A 40-year-old man has a cough. What is it?", "options": {"A": "Asthma"},
             "answer": "Z"}


def write_items(path: Path, *, unsuitable: bool = True, malformed: bool = True) -> Path:
    items = list(SUITABLE) + ([u for u, _ in UNSUITABLE] if unsuitable else []) + ([MALFORMED] if malformed else [])
    path.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
    return path
