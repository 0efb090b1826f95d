"""ICD-10-CM as the judge's pre-check reads it (agents.condition_codes): synonyms from
titles, bracketed names and inclusion terms; a more specific form by the code's
hierarchy; never a verdict that two names differ."""
from __future__ import annotations

from pathlib import Path

import pytest

from agents.condition_codes import ConditionCodes, data_file
from agents.judge import _words, precheck


def key(name: str) -> str:
    return " ".join(_words(name))


TABULAR = """<?xml version="1.0" encoding="utf-8"?>
<ICD10CM.tabular>
  <chapter><name>1</name><desc>Some infections</desc>
    <section id="B00-B09"><desc>Viral infections</desc>
      <diag><name>B08</name><desc>Other viral infections of skin</desc>
        <diag><name>B08.3</name><desc>Erythema infectiosum [fifth disease]</desc></diag>
        <diag><name>B08.8</name><desc>Other specified viral infections characterized by skin lesions</desc>
          <inclusionTerm><note>Foot-and-mouth disease</note><note>Tanapox</note></inclusionTerm>
        </diag>
      </diag>
    </section>
    <section id="E00-E07"><desc>Thyroid</desc>
      <diag><name>E05</name><desc>Thyrotoxicosis [hyperthyroidism]</desc>
        <diag><name>E05.0</name><desc>Thyrotoxicosis with diffuse goiter</desc>
          <inclusionTerm><note>Exophthalmic or toxic goiter NOS</note><note>Graves' disease</note></inclusionTerm>
          <diag><name>E05.00</name><desc>Thyrotoxicosis with diffuse goiter without thyrotoxic crisis or storm</desc></diag>
        </diag>
        <diag><name>E05.1</name><desc>Thyrotoxicosis with toxic single thyroid nodule</desc></diag>
      </diag>
    </section>
    <section id="E20-E35"><desc>Other endocrine glands</desc>
      <diag><name>E23</name><desc>Hypofunction and other disorders of the pituitary gland</desc>
        <diag><name>E23.0</name><desc>Hypopituitarism</desc>
          <inclusionTerm><note>Kallmann syndrome</note><note>Hypogonadotropic hypogonadism</note></inclusionTerm>
        </diag>
      </diag>
    </section>
    <section id="J30-J39"><desc>Upper airway</desc>
      <diag><name>J36</name><desc>Peritonsillar abscess</desc>
        <includes><note>abscess of tonsil</note><note>quinsy</note></includes>
      </diag>
      <diag><name>J45</name><desc>Asthma</desc>
        <diag><name>J45.909</name><desc>Unspecified asthma, uncomplicated</desc></diag>
      </diag>
    </section>
  </chapter>
</ICD10CM.tabular>
"""


@pytest.fixture()
def small(tmp_path: Path) -> ConditionCodes:
    (tmp_path / "tabular.xml").write_text(TABULAR, encoding="utf-8")
    return ConditionCodes(key, tmp_path / "tabular.xml")


def test_titles_bracketed_names_and_inclusion_terms_are_names_of_their_code(small):
    assert small.codes("Fifth disease") == {"B08.3"} == small.codes("erythema infectiosum")
    assert small.codes("Quinsy") == {"J36"} and small.codes("Graves disease") == {"E05.0"}
    assert small.codes("Exophthalmic goiter") == set()  # shares the title's "goiter": a neighbour, not a name
    assert small.codes("Hyperthyroidism") == {"E05"} == small.codes("Thyrotoxicosis")


def test_one_code_is_the_same_and_a_code_beneath_is_more_specific(small):
    assert small.relation("Quinsy", "Peritonsillar abscess") == ("same", "J36", "J36")
    assert small.relation("Graves' disease", "Hyperthyroidism") == ("more_specific", "E05.0", "E05")


def test_a_neighbour_of_a_code_beneath_is_more_specific_and_never_the_same(small):
    """An inclusion term sharing its title's words is a condition the code counts, not a
    name of it: classified under the code's parents, so more specific than they are."""
    assert small.neighbour_codes("Exophthalmic or toxic goiter") == {"E05.0"}
    assert small.relation("Exophthalmic or toxic goiter", "Hyperthyroidism") == ("more_specific", "E05.0", "E05")
    assert small.relation("Exophthalmic or toxic goiter", "Thyrotoxicosis with diffuse goiter") is None  # its own code's title
    assert small.relation("Abscess of tonsil", "Peritonsillar abscess") is None  # a neighbour of J36, not J36
    assert small.relation("Tanapox", "Other viral infections of skin") == ("more_specific", "B08.8", "B08")
    assert small.relation("Hyperthyroidism", "Exophthalmic or toxic goiter") is None  # the other way is not said


def test_it_never_says_two_names_differ_nor_that_one_is_broader(small):
    assert small.relation("Hyperthyroidism", "Graves disease") is None  # broader: not its to say
    assert small.relation("Thyrotoxicosis with toxic single thyroid nodule", "Graves disease") is None  # siblings
    assert small.relation("Asthma", "Quinsy") is None
    assert small.relation("Foot-and-mouth disease", "Tanapox") is None  # an "Other ..." code lists conditions
    assert small.relation("Lockjaw", "Tetanus") is None  # a name it does not hold says nothing
    assert small.relation("Peritonsillar", "Peritonsillar abscess") is None  # no partial matching


def test_only_a_code_the_truth_titles_speaks_for_it(small):
    """An inclusion term is one of the conditions its code counts: another name of the
    title's condition or a kind of it. The title's terms given for the title are right; the
    title, or another term, given for a term may be broader or a neighbour: not said."""
    assert small.codes("Kallmann syndrome") == {"E23.0"} == small.codes("Hypogonadotropic hypogonadism")
    assert small.relation("Kallmann syndrome", "Hypopituitarism") == ("same", "E23.0", "E23.0")
    assert small.relation("Hypopituitarism", "Kallmann syndrome") is None  # broader
    assert small.relation("Hypogonadotropic hypogonadism", "Kallmann syndrome") is None  # broader, one code
    assert small.relation("Kallmann syndrome", "Hypogonadotropic hypogonadism") is None
    assert small.relation("Peritonsillar abscess", "Quinsy") is None
    assert small.relation("Erythema infectiosum", "Fifth disease") == ("same", "B08.3", "B08.3")  # the title's own
    assert small.relation("Tanapox", "Foot-and-mouth disease") is None


def test_no_data_file_means_no_names(tmp_path):
    assert ConditionCodes(key, tmp_path / "missing.xml").relation("Quinsy", "Peritonsillar abscess") is None


@pytest.mark.skipif(data_file() is None, reason="simple-icd-10-cm is not installed")
@pytest.mark.parametrize("diagnosis, truth, rule", [
    ("Quinsy", "Peritonsillar abscess", "icd10cm_same"),
    ("Hansen disease", "Leprosy", "icd10cm_same"),
    ("Scarlatina", "Scarlet fever", "icd10cm_same"),
    ("Probably Athlete's foot", "Tinea pedis", "icd10cm_same"),  # a hedge is no obstacle
    ("Graves disease", "Hyperthyroidism", "icd10cm_more_specific"),
    ("Pernicious anemia", "Vitamin B12 deficiency anemia", "icd10cm_more_specific"),  # a neighbour of D51.0
])
def test_the_pre_check_names_icd_10_cm_beside_its_verdict(diagnosis, truth, rule):
    v = precheck(diagnosis, truth)
    assert (v.correct, v.method, v.rule) == (True, "precheck", rule) and "ICD-10-CM" in v.rationale


@pytest.mark.skipif(data_file() is None, reason="simple-icd-10-cm is not installed")
@pytest.mark.parametrize("diagnosis, truth", [
    ("Crohn disease", "Ulcerative colitis"), ("Hyperthyroidism", "Graves disease"), ("Diabetes insipidus",
                                                                                     "Diabetes mellitus"),
    ("Cushing syndrome", "Cushing disease"), ("Peritonsillar cellulitis", "Quinsy"), ("Not quinsy", "Quinsy"),
    ("Pneumonia and sepsis", "Pneumonia"), ("Quinsy or epiglottitis", "Peritonsillar abscess"),
])
def test_what_icd_10_cm_groups_or_a_negation_is_not_called_right(diagnosis, truth):
    assert precheck(diagnosis, truth).correct is not True
