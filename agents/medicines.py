"""A medicine's name, known by its stem (written for medsim): what the judge refuses as a
diagnosis and what the fidelity check counts as a medicine the patient takes. No imports
beyond ``re``: the check of a case's facts and the condition names both read it.
"""
from __future__ import annotations

import re

__all__ = ["names_a_medicine"]

# the endings of medicines' names (international nonproprietary names' stems): one such word
# is a medicine the patient takes, not a condition ("Natalizumab", "Metformin")
_MEDICINE = re.compile(
    r"^[a-z]{3,}(mab|nib|pril|sartan|olol|statin|cillin|mycin|floxacin|cycline|prazole|tidine|dipine|parin|"
    r"xaban|gatran|triptan|profen|oxetine|azepam|azolam|formin|glitazone|gliptin|gliflozin|semide|thiazide|"
    r"olone|vudine|ciclovir|clovir|navir|tegravir|buvir)$", re.IGNORECASE)


def names_a_medicine(text: str) -> bool:
    """One word that is a medicine's name by its stem ("Natalizumab", "Ramipril",
    "Metformin"), not a condition (a condition caused by one names more: "Natalizumab-
    associated PML")."""
    return bool(_MEDICINE.match(text.strip(" .")))
