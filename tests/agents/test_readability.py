"""Flesch reading ease and the Flesch-Kincaid grade on sentences whose counts are known."""
from __future__ import annotations

import pytest

from agents.readability import TextCounts, flesch_kincaid_grade, flesch_reading_ease, syllables, text_counts


@pytest.mark.parametrize("word,n", [("cat", 1), ("the", 1), ("table", 2), ("little", 2), ("make", 1), ("makes", 1),
                                    ("jumped", 1), ("wanted", 2), ("boxes", 2), ("free", 1), ("hospital", 3),
                                    ("beautiful", 3), ("medication", 4), ("abdominal", 4), ("temperature", 4),
                                    ("light-headed", 3), ("yesterday", 3), ("20", 1)])
def test_syllables(word, n):
    assert syllables(word) == n


def test_the_cat_sat_on_the_mat():
    # the textbook example: 6 words, 1 sentence, 6 syllables
    c = text_counts("The cat sat on the mat.")
    assert c == TextCounts(6, 1, 6)
    assert flesch_reading_ease(c) == pytest.approx(116.145)
    assert flesch_kincaid_grade(c) == pytest.approx(-1.45)


def test_a_harder_text_by_hand():
    # 2 sentences, 14 words; syllables: the(1) patient(2) reports(2) intermittent(4) abdominal(4) discomfort(3) = 16,
    # medication(4) has(1) not(1) relieved(2) her(1) persistent(3) symptoms(2) today(2) = 16
    text = "The patient reports intermittent abdominal discomfort. Medication has not relieved her persistent symptoms today!"
    c = text_counts(text)
    assert c == TextCounts(14, 2, 32)
    assert flesch_kincaid_grade(c) == pytest.approx(0.39 * 7 + 11.8 * 32 / 14 - 15.59)
    assert flesch_reading_ease(c) == pytest.approx(206.835 - 1.015 * 7 - 84.6 * 32 / 14)
    plain = text_counts("My belly hurts. The pills do not help.")
    assert flesch_kincaid_grade(plain) < flesch_kincaid_grade(c)  # plainer words, shorter sentences: a lower grade


def test_no_words_no_figure_and_a_sentence_without_an_end_mark():
    assert flesch_kincaid_grade(text_counts("...")) is None and flesch_reading_ease(TextCounts()) is None
    assert text_counts("pain here") == TextCounts(2, 1, 2)
    assert text_counts("Pain. Here") == TextCounts(2, 2, 2)
