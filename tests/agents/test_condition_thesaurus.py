"""medsim's thesaurus as the judge's pre-check reads it (agents.condition_thesaurus): names
of one line are one condition, a condition beneath another along '<' is a more specific
form of it, an ambiguous name says nothing, and nothing is ever said to differ."""
from __future__ import annotations

from pathlib import Path

import pytest

import agents.judge as judge
from agents.condition_thesaurus import ConditionThesaurus, ThesaurusError, data_file, parse
from agents.events import ListSink
from agents.judge import _words, judge_diagnosis, precheck
from agents.llm.base import GenerateParams, Output


def key(name: str) -> str:
    return " ".join(_words(name))


TEXT = """# a handmade thesaurus
Hereditary hemorrhagic telangiectasia | Osler-Weber-Rendu syndrome | Rendu-Osler-Weber disease
Inflammatory bowel disease | IBD
Ulcerative colitis < Inflammatory bowel disease
Pancolitis < Ulcerative colitis
Crohn disease | Regional enteritis < Inflammatory bowel disease
Peptic ulcer disease
Duodenal ulcer < Peptic ulcer disease
Glioblastoma | Glioblastoma multiforme < Brain tumor   # the family has no line of its own
Lumbago | Low back pain
Lumbago | Sciatica
Influenza | Flu
Viral gastroenteritis | Stomach flu
Testicular torsion | Torsion of the testis
Restless legs syndrome | RLS | Willis-Ekbom disease
Melanoma < Skin cancer
Uveal melanoma | Choroidal melanoma < Eye cancer
Delirium | Acute confusional state
Drug reaction with eosinophilia and systemic symptoms | DRESS syndrome
Total anomalous pulmonary venous return | TAPVR
"""


@pytest.fixture()
def thesaurus(tmp_path: Path) -> ConditionThesaurus:
    path = tmp_path / "thesaurus.txt"
    path.write_text(TEXT, encoding="utf-8")
    return ConditionThesaurus(key, path)


def test_names_of_one_line_are_the_same_condition(thesaurus):
    how, mine, theirs = thesaurus.relation("Osler-Weber-Rendu syndrome", "Hereditary haemorrhagic telangiectasia")
    assert how == "same" and mine == theirs == 2
    assert thesaurus.relation("Rendu-Osler-Weber disease", "Osler-Weber-Rendu syndrome")[0] == "same"
    assert thesaurus.relation("Regional enteritis", "Crohn's disease")[0] == "same"


def test_a_condition_beneath_another_is_more_specific_at_any_depth(thesaurus):
    assert thesaurus.relation("Ulcerative colitis", "Inflammatory bowel disease")[0] == "more_specific"
    assert thesaurus.relation("Pancolitis", "IBD")[0] == "more_specific"  # two levels down, the family by another name
    assert thesaurus.relation("Glioblastoma multiforme", "Brain tumour")[0] == "more_specific"  # a family only after '<'


def test_never_broader_never_different_and_never_a_sibling(thesaurus):
    assert thesaurus.relation("Inflammatory bowel disease", "Ulcerative colitis") is None  # broader
    assert thesaurus.relation("Crohn disease", "Ulcerative colitis") is None  # siblings
    assert thesaurus.relation("Duodenal ulcer", "Crohn disease") is None  # unrelated
    assert thesaurus.relation("Appendicitis", "Crohn disease") is None  # unknown
    assert thesaurus.relation("Crohn disease", "Crohn disease") is None  # the same words are not the thesaurus's to say


def test_an_ambiguous_name_says_nothing(thesaurus):
    assert thesaurus.conditions("Lumbago") and len(thesaurus.conditions("Lumbago")) == 2
    assert thesaurus.relation("Lumbago", "Low back pain") is None
    assert thesaurus.relation("Sciatica", "Lumbago") is None
    assert list(thesaurus.narrower("Lumbago")) == []


def test_narrower_gives_the_keys_other_names_then_the_conditions_beneath_nearest_first(thesaurus):
    assert list(thesaurus.narrower("Regional enteritis")) == [("Crohn disease", "same", 6)]
    got = list(thesaurus.narrower("IBD"))  # its other name folds to the same words: not given again
    names = [n for n, _, _ in got]
    assert names.index("Ulcerative colitis") < names.index("Pancolitis")
    assert {"Crohn disease", "Regional enteritis"} <= set(names)
    assert all(how == "more_specific" for _, how, _ in got)


def test_the_pre_check_reads_it_whole_and_through_its_word_rules(thesaurus, monkeypatch):
    monkeypatch.setattr(judge, "_THESAURUS", thesaurus)
    v = precheck("Osler-Weber-Rendu syndrome", "Hereditary hemorrhagic telangiectasia")
    assert v.correct is True and v.rule == "thesaurus_same" and "line 2" in v.rationale
    v = precheck("Most likely ulcerative colitis.", "Inflammatory bowel disease")
    assert v.correct is True and v.rule == "thesaurus_more_specific"
    # a more specific form of a name beneath the key, by the pre-check's own word rules
    v = precheck("Bleeding duodenal ulcer", "Peptic ulcer disease")
    assert v.correct is True and v.rule == "thesaurus_more_specific" and "Duodenal ulcer" in v.rationale
    # nothing said the other way, for siblings, or for a name the thesaurus does not hold
    assert precheck("Inflammatory bowel disease", "Ulcerative colitis").rule != "thesaurus_same"
    assert precheck("Inflammatory bowel disease", "Ulcerative colitis").correct is not True
    assert precheck("Crohn disease", "Ulcerative colitis").correct is not True
    assert precheck("Lumbago", "Sciatica").correct is not True
    assert precheck("Chronic lumbago", "Sciatica").correct is not True  # not read through an ambiguous name
    # a name held whole as a condition of its own is not a more specific form of a name it contains
    assert precheck("Stomach flu", "Influenza").correct is not True
    assert precheck("Nodular melanoma", "Skin cancer").correct is True  # through 'Melanoma', beneath the key
    assert precheck("Choroidal melanoma", "Skin cancer").correct is not True  # held whole, under another family
    # the key's other name only with a side or the like; words of its own may name another organ
    assert precheck("Left torsion of the testis", "Testicular torsion").correct is True
    assert precheck("Torsion of the appendix testis", "Testicular torsion").correct is not True
    assert precheck("Torsion of the testis in an adolescent", "Testicular torsion").correct is True  # then where


def test_the_keys_other_name_then_what_caused_it_is_right(thesaurus, monkeypatch):
    """A name whole, then its cause or setting, names that condition, even where the name
    holds linking words of its own ("... with eosinophilia and ..."); a second condition
    after it, or words put inside the name, do not."""
    monkeypatch.setattr(judge, "_THESAURUS", thesaurus)
    for dx in ("Acute confusional state secondary to a urinary tract infection",
               "Acute confusional state due to hyponatraemia", "Acute confusional state following surgery"):
        v = precheck(dx, "Delirium")
        assert v.correct is True and v.rule.startswith("thesaurus_"), dx
    v = precheck("Drug reaction with eosinophilia and systemic symptoms secondary to allopurinol", "DRESS syndrome")
    assert v.correct is True and v.rule.startswith("thesaurus_")
    assert precheck("Drug reaction with eosinophilia and systemic symptoms", "DRESS syndrome").rule == "thesaurus_same"
    v = precheck("Acute confusional state with agitation", "Delirium")  # a later clause qualifies
    assert v.correct is True and v.rule == "thesaurus_same"
    assert precheck("Acute confusional state or dementia", "Delirium").correct is not True
    assert precheck("Acute confusional state and sepsis", "Delirium").correct is not True
    assert precheck("Drug reaction with eosinophilia", "DRESS syndrome").correct is not True


def test_words_added_to_the_keys_other_name_may_not_contradict_the_keys_own(thesaurus, monkeypatch):
    monkeypatch.setattr(judge, "_THESAURUS", thesaurus)
    assert precheck("Supracardiac TAPVR", "Total anomalous pulmonary venous return").correct is True
    assert precheck("Partial TAPVR", "Total anomalous pulmonary venous return").correct is not True


def test_an_abbreviation_in_capitals_is_read_only_in_capitals(thesaurus, monkeypatch):
    assert thesaurus.conditions("RLS") and not thesaurus.conditions("rls")
    assert thesaurus.relation("RLS", "Willis-Ekbom disease")[0] == "same"
    assert thesaurus.relation("rls", "Willis-Ekbom disease") is None
    monkeypatch.setattr(judge, "_THESAURUS", thesaurus)
    assert precheck("Severe RLS", "Willis-Ekbom disease").correct is True
    assert precheck("severe rls", "Willis-Ekbom disease").correct is not True


def test_the_pre_checks_word_rule_gives_way_where_the_thesaurus_holds_the_names_apart(thesaurus, monkeypatch):
    # the word rule alone calls "Otitis media with effusion" a form of acute otitis media (acuity is optional)
    monkeypatch.setattr(judge, "_THESAURUS", thesaurus)
    assert precheck("Duodenal ulcer", "Ulcer").correct is True  # the key unknown: the word rule stands
    path = thesaurus.path.parent / "more.txt"
    path.write_text(TEXT + "Acute otitis media < Otitis media\nOtitis media with effusion | OME < Otitis media\n")
    monkeypatch.setattr(judge, "_THESAURUS", ConditionThesaurus(key, path))
    v = precheck("Acute otitis media with effusion", "Acute otitis media")
    assert v.correct is True and v.rule == "more_specific"  # unknown whole: the word rule stands
    v = precheck("Otitis media with effusion", "Acute otitis media")
    assert v.correct is None and "apart" in v.rationale
    # a diagnosis that holds the key whole is a form of it, a missing link in the thesaurus notwithstanding
    path.write_text(TEXT + "Otitis media < Ear disease\nChronic suppurative otitis media | CSOM < Ear disease\n")
    monkeypatch.setattr(judge, "_THESAURUS", ConditionThesaurus(key, path))
    v = precheck("Chronic suppurative otitis media", "Otitis media")
    assert v.correct is True and v.rule == "more_specific"


def test_the_other_vocabularies_give_way_where_the_thesaurus_holds_two_conditions_apart(tmp_path, monkeypatch):
    # ICD-10-CM files Stevens-Johnson syndrome (L51.1) under erythema multiforme (L51); WordNet
    # names consumption as pulmonary tuberculosis
    monkeypatch.setattr(judge, "_THESAURUS", ConditionThesaurus(key, tmp_path / "none.txt"))
    assert precheck("Stevens-Johnson syndrome", "Erythema multiforme").rule.startswith("icd10cm")
    assert precheck("Consumption", "Pulmonary tuberculosis").correct is True
    path = tmp_path / "t.txt"
    path.write_text("Erythema multiforme < Skin disease\nStevens-Johnson syndrome < Skin disease\n"
                    "Tuberculosis | Consumption\nPulmonary tuberculosis < Tuberculosis\n")
    monkeypatch.setattr(judge, "_THESAURUS", ConditionThesaurus(key, path))
    v = precheck("Stevens-Johnson syndrome", "Erythema multiforme")
    assert v.correct is None and "apart" in v.rationale
    # only two conditions apart: a name the thesaurus puts one level up (a lay name on the family's line) does not
    assert precheck("Consumption", "Pulmonary tuberculosis").correct is True


def test_a_malformed_line_is_named(tmp_path: Path):
    with pytest.raises(ThesaurusError, match=r"x\.txt, line 2: an empty name"):
        list(parse(["Measles | Rubeola", "Mumps | | Epidemic parotitis"], "x.txt"))
    with pytest.raises(ThesaurusError, match="line 1: a condition listed as a kind of itself"):
        list(parse(["Measles < measles"], "x.txt"))
    with pytest.raises(ThesaurusError, match="line 1: an empty name"):
        list(parse(["< Infection"], "x.txt"))


def test_no_file_says_nothing(tmp_path: Path):
    t = ConditionThesaurus(key, tmp_path / "missing.txt")
    assert t.relation("Osler-Weber-Rendu syndrome", "Hereditary hemorrhagic telangiectasia") is None


def test_the_shipped_thesaurus_parses_and_names_no_condition_as_its_own_kind():
    path = data_file()
    with path.open(encoding="utf-8") as fh:
        rows = list(parse(fh, str(path)))
    assert len(rows) > 500
    t = ConditionThesaurus(key)
    for number, names, _ in rows:  # ancestors() leaves a condition out of its own: a cycle shows as two above each other
        above = [a for a in t.ancestors(number) if number in t.ancestors(a)]
        assert not above, f"line {number} ({names[0]}) is beneath itself, through line(s) {sorted(above)}"


def test_a_broader_name_in_capitals_names_the_line_that_holds_it(tmp_path: Path):
    path = tmp_path / "thesaurus.txt"
    path.write_text("Coronavirus disease 2019 | COVID-19\n"
                    "COVID-19 pneumonia | SARS-CoV-2 pneumonia < Viral pneumonia ; COVID-19\n"
                    "Spastic colon < IBS\n", encoding="utf-8")
    t = ConditionThesaurus(key, path)
    assert t.relation("SARS-CoV-2 pneumonia", "Coronavirus disease 2019") == ("more_specific", 2, 1)
    assert t.apart("SARS-CoV-2 pneumonia", "COVID-19") is None
    # a family named only in capitals after '<' is a family of its own, read only in capitals, as a name is
    assert t.relation("Spastic colon", "IBS")[0] == "more_specific"
    assert t.relation("Spastic colon", "ibs") is None


def test_every_broader_name_of_the_shipped_thesaurus_that_a_line_holds_links_to_that_line():
    path = data_file()
    with path.open(encoding="utf-8") as fh:
        rows = list(parse(fh, str(path)))
    t = ConditionThesaurus(key)
    lines: dict[str, set[int]] = {}
    for number, names, _ in rows:
        for n in names:
            lines.setdefault(n.lower(), set()).add(number)
    for number, names, broader in rows:
        for b in broader:
            held = lines.get(b.lower(), set())
            assert held <= t.ancestors(number), f"line {number} ({names[0]}) is not beneath {b!r}, line(s) {held}"


class Says:
    """A model judge that gives one reply to every question."""
    name = "says"

    def __init__(self, reply: str):
        self.reply, self.calls = reply, 0

    def generate(self, messages, params, ctx):
        self.calls += 1
        return Output(text=self.reply, model=self.name)


def _judged(dx: str, truth: str, reply: str):
    return judge_diagnosis(dx, truth, llm=Says(reply), params=GenerateParams(max_tokens=60), case_id="c", turn=0,
                           sink=ListSink())


MORE = '{"relation": "more_specific", "why": "a kind of it"}'


def test_a_models_right_is_overruled_where_the_thesaurus_holds_the_names_apart(thesaurus, monkeypatch):
    monkeypatch.setattr(judge, "_THESAURUS", thesaurus)
    # the pre-check itself never says "different" from the thesaurus
    assert precheck("Crohn disease", "Ulcerative colitis").correct is None
    v = _judged("Crohn disease", "Ulcerative colitis", MORE)  # siblings
    assert v.correct is False and v.rule == "thesaurus_apart" and "line 6" in v.rationale
    v = _judged("Likely IBD.", "Pancolitis", MORE)  # the key two levels beneath the diagnosis
    assert v.correct is False and v.rule == "thesaurus_broader"
    v = _judged("Duodenal ulcer", "Regional enteritis", "Yes.")  # unrelated, the text format too
    assert v.correct is False and v.rule == "thesaurus_apart"


def test_a_diagnosis_unknown_whole_is_held_apart_by_its_name_without_parentheses_or_side(tmp_path, monkeypatch):
    path = tmp_path / "thesaurus.txt"
    path.write_text("Hydrocele\nVaricocele\nHypertension | High blood pressure\nPulmonary hypertension\n"
                    "Crohn disease\nUlcerative colitis\nInflammatory bowel disease\nPancolitis < Ulcerative colitis\n",
                    encoding="utf-8")
    monkeypatch.setattr(judge, "_THESAURUS", ConditionThesaurus(key, path))
    for dx, truth, name in (("Left hydrocele", "Varicocele", "hydrocele"),
                            ("Crohn disease (given the fistulas)", "Ulcerative colitis", "Crohn disease"),
                            ("Bilateral hydrocele (communicating)", "Varicocele", "hydrocele")):
        v = _judged(dx, truth, MORE)
        assert v.correct is False and v.rule == "thesaurus_apart" and f"holds '{name}'" in v.rationale, (dx, v)
    # what the parentheses hold may be the condition: a name the thesaurus does not hold apart
    assert _judged("Crohn disease (inflammatory bowel disease)", "Inflammatory bowel disease", MORE).correct is True
    # broader once its parentheses are off: what they hold may narrow it to the key
    assert _judged("Ulcerative colitis (extensive)", "Pancolitis", MORE).correct is True
    # unknown once its parentheses are off, or nothing taken off: the model's "right" stands
    assert _judged("Hydrocele of the cord (left)", "Varicocele", MORE).correct is True
    assert _judged("Left spermatic cord hydrocele", "Varicocele", MORE).correct is True


QUALIFIERS = (", severe", ", left eye", ", right hand", ", stage II", ", HLA-B27-associated", " (left)")


def test_what_only_qualifies_a_diagnosis_changes_no_verdict_of_the_pre_check(tmp_path, monkeypatch):
    path = tmp_path / "thesaurus.txt"
    path.write_text("Otitis media < Ear infection\nAcute otitis media < Otitis media\n"
                    "Otitis media with effusion | Glue ear < Otitis media\nLung cancer\n"
                    "Non-small cell lung cancer | NSCLC < Lung cancer\n"
                    "Squamous cell lung cancer < Non-small cell lung cancer\n"
                    "Small cell lung cancer | SCLC < Lung cancer\nCentral serous chorioretinopathy | CSCR\n",
                    encoding="utf-8")
    monkeypatch.setattr(judge, "_THESAURUS", ConditionThesaurus(key, path))
    for q in QUALIFIERS:
        # right without it, right with it: the key's other name, a kind of the key
        assert precheck("CSCR" + q, "Central serous chorioretinopathy").correct is True, q
        assert precheck("Glue ear" + q, "Otitis media").correct is True, q
        # two conditions the thesaurus holds apart stay apart however qualified ("Otitis media with effusion"
        # holds the words of acute otitis media; "SCLC" is not "Squamous cell lung cancer" written short)
        assert precheck("Otitis media with effusion" + q, "Acute otitis media").correct is not True, q
        assert precheck("SCLC" + q, "Non-small cell lung cancer").correct is not True, q
        assert precheck("SCLC" + q, "Squamous cell lung cancer").correct is not True, q


def test_apart_is_two_conditions_neither_beneath_or_the_key_beneath(thesaurus):
    assert thesaurus.apart("Crohn disease", "Ulcerative colitis")[0] == "apart"
    assert thesaurus.apart("IBD", "Pancolitis")[0] == "broader"
    assert thesaurus.apart("Pancolitis", "IBD") is None  # beneath: the diagnosis is more specific
    assert thesaurus.apart("Regional enteritis", "Crohn disease") is None  # one condition
    assert thesaurus.apart("Lumbago", "Crohn disease") is None and thesaurus.apart("Appendicitis", "IBD") is None


def test_a_models_right_stands_where_the_thesaurus_does_not_know_both_names(thesaurus, monkeypatch):
    monkeypatch.setattr(judge, "_THESAURUS", thesaurus)
    assert _judged("Microscopic colitis", "Ulcerative colitis", MORE).correct is True  # one name unknown
    assert _judged("Lumbago", "Crohn disease", MORE).correct is True  # one name ambiguous
    assert _judged("Crohn disease", "Ulcerative colitis", '{"relation": "different", "why": "x"}').correct is False
