import json

import pytest

from agents.condition_thesaurus import ConditionThesaurus
from agents.events import JudgeDecision, ListSink
from agents.judge import (JUDGE_SCHEMA, JudgeUnparsed, Verdict, judge_diagnosis, not_a_diagnosis,
                          parse_verdict, precheck, strip_hedges, strip_lead_in)
from agents.judge_eval import (KINDS, JudgePair, PairsError, evaluate, format_evaluation, load_pairs,
                               shipped_pairs)
from agents.llm.base import GenerateParams, Output
from agents.llm.scripted import ScriptedLLM


@pytest.mark.parametrize("dx,truth,correct,rule", [
    (None, "Gout", False, "no_diagnosis"),
    ("  ", "Gout", False, "no_diagnosis"),
    ("myasthenia gravis.", "Myasthenia gravis", True, "normalised_equal"),
    ("Acute appendicitis", "Appendicitis", True, "core_equal"),
    ("PML", "Progressive multifocal encephalopathy (PML)", True, "abbreviation"),
    ("Progressive multifocal encephalopathy", "Progressive multifocal encephalopathy (PML)", True, "core_equal"),
    ("Tension headache", "Migraine", None, "undecided"),
    ("I'm here to talk about something on my mind", "Migraine", False, "not_a_diagnosis"),
    ("No pulmonary embolism", "Pulmonary embolism", False, "not_a_diagnosis"),
    ("Could it be a migraine?", "Migraine", False, "not_a_diagnosis"),
    ("My diagnosis is a suspected case of migraine", "Migraine", True, "normalised_equal"),
    ("The patient is diagnosed with pain which could be due to causes such as appendicitis, pancreatitis",
     "Acute pancreatitis", False, "not_a_diagnosis"),
    # was left undecided (and the small model judge then said "No"): a more specific form of the key
    ("Acute bilateral pulmonary emboli with small right lower lobe infarct, no CT evidence of right heart strain",
     "Pulmonary embolism", True, "more_specific"),
])
def test_precheck(dx, truth, correct, rule):
    v = precheck(dx, truth)
    assert (v.correct, v.rule) == (correct, rule)


# ---------------------------------------------------------------- regressions (each one failed before)
@pytest.mark.parametrize("dx,truth", [
    ("Inferior ST-elevation myocardial infarction, I think", "Inferior ST-elevation myocardial infarction"),
    ("Graves disease, I think", "Graves disease"),
    ("I'm fairly sure it's Kawasaki disease", "Kawasaki disease"),
    ("Herpes zoster, probably", "Herpes zoster"),
    ("Herpes zoster, most likely", "Herpes zoster"),
    ("Pyelonephritis, I believe", "Acute pyelonephritis"),
    ("Likely myasthenia gravis", "Myasthenia gravis"),
    ("Ruptured ectopic pregnancy (probable)", "Ruptured ectopic pregnancy"),
    ("Presumed bacterial meningitis", "Bacterial meningitis"),
    ("DIAGNOSIS READY: Acute gout, I think", "Acute gout"),
])
def test_a_hedge_does_not_flip_a_right_answer(dx, truth):
    v = precheck(dx, truth)
    assert v.correct is True, v
    assert not_a_diagnosis(dx) is None


def test_strip_hedges_and_lead_in():
    assert strip_hedges("Probably Graves disease, I think.") == "Graves disease"
    assert strip_hedges("**I'm fairly sure it's** Kawasaki disease") == "Kawasaki disease"
    assert strip_hedges("Pulmonary embolism or pneumonia, probably") == "Pulmonary embolism or pneumonia"
    assert strip_lead_in("My diagnosis is a suspected case of AMI") == "AMI"


@pytest.mark.parametrize("dx,truth", [
    ("Acute bilateral pulmonary emboli with small right lower lobe infarct, no CT evidence of right heart strain",
     "Pulmonary embolism"),
    ("Perforated appendicitis with abscess", "Appendicitis"),
    ("Inferior STEMI", "Myocardial infarction"),
    ("Inferior STEMI", "Inferior ST-elevation myocardial infarction"),
    ("Type 1 diabetes mellitus", "Diabetes mellitus"),
    ("Small cell lung carcinoma", "Lung cancer"),
    ("Iron deficiency anaemia due to menorrhagia", "Anemia"),
    ("Left femoral DVT", "Deep vein thrombosis"),
])
def test_a_more_specific_form_is_right(dx, truth):
    v = precheck(dx, truth)
    assert v.correct is True, v


@pytest.mark.parametrize("dx,truth", [
    ("Migraine with aura", "Migraine"), ("Pneumonia, community-acquired", "Pneumonia"),
    ("Diabetes mellitus type 2", "Diabetes mellitus"), ("Hepatitis C virus infection", "Hepatitis C"),
    ("Asthma exacerbation", "Asthma"), ("Pulmonary embolism, bilateral", "Pulmonary embolism"),
    ("Meningitis due to Streptococcus pneumoniae", "Meningitis"),
])
def test_what_follows_the_keys_noun_may_say_cause_place_side_or_type(dx, truth):
    assert precheck(dx, truth).correct is True


@pytest.mark.parametrize("dx,truth", [
    ("Bronchiolitis obliterans", "Bronchiolitis"), ("Purpura fulminans", "Purpura"),
    ("Keratosis pilaris", "Keratosis"), ("Erythema nodosum", "Erythema"),
])
def test_a_name_going_on_past_the_keys_noun_is_for_the_judge(dx, truth):
    """'Bronchiolitis obliterans' holds every word of 'Bronchiolitis' and is another disease:
    a word after the key's noun, in the same phrase, that is no cause, place, side or type
    leaves the pair to the model."""
    v = precheck(dx, truth)
    assert (v.correct, v.rule) == (None, "undecided"), v


@pytest.mark.parametrize("dx,truth", [
    ("Type 1 diabetes", "Type 2 diabetes mellitus"),
    ("Hyperthyroidism", "Hypothyroidism"),
    ("Hepatitis C", "Hepatitis B"),
    ("Hemophilia B", "Hemophilia A"),
    ("Chronic pancreatitis", "Acute pancreatitis"),
    ("Chronic myeloid leukemia", "Acute myeloid leukemia"),
    ("NSTEMI", "Inferior ST-elevation myocardial infarction"),
    ("Non-Hodgkin lymphoma", "Hodgkin lymphoma"),
    ("Chronic myelogenous leukemia", "Chronic lymphocytic leukemia"),  # the cell line
    ("CML", "Chronic lymphocytic leukemia"),  # an abbreviation's expansion is checked too
    ("Acute myeloid leukemia", "Acute lymphoblastic leukemia"),
    ("SCLC", "Non-small cell lung cancer"),  # the initialism of what the key negates
    ("HL", "Non-Hodgkin lymphoma"),
])
def test_a_sibling_is_wrong(dx, truth):
    v = precheck(dx, truth)
    assert (v.correct, v.rule) == (False, "sibling"), v


@pytest.mark.parametrize("dx,truth", [
    ("Chronic myelogenous leukemia", "Chronic myeloid leukemia"),  # myelogenous is myeloid
    ("NSCLC", "Non-small cell lung cancer"), ("NHL", "Non-Hodgkin lymphoma"),
])
def test_the_same_cell_line_or_the_negated_initialism_itself_is_right(dx, truth):
    assert precheck(dx, truth).correct is True


@pytest.mark.parametrize("dx,truth", [
    ("Cushing syndrome", "Cushing disease"),  # the model decides, the token rule must not accept
    ("Interstitial lung disease (ILD)", "Silicosis"),
    ("Leukemia", "Chronic lymphocytic leukemia"),
    ("Hemophilia", "Hemophilia A"),
    ("Myelogenous leukemia", "Acute myelogenous leukemia"),
    ("Pneumonia with pulmonary embolism", "Pulmonary embolism"),
    ("Diabetes insipidus", "Diabetes mellitus"),
    ("Pulmonary hypertension", "Hypertension"),
    ("Cardiac asthma", "Asthma"),
    ("Breast cancer metastatic to lung", "Lung cancer"),
    ("Pulmonary embolism, possibly pneumonia", "Pulmonary embolism"),
    ("Pulmonary embolism/pneumonia", "Pulmonary embolism"),
])
def test_broader_or_another_main_diagnosis_is_never_accepted_by_the_precheck(dx, truth):
    assert precheck(dx, truth).correct is not True


def test_broader_class_goes_to_the_judge_and_its_no_stands():
    reply = '{"relation": "broader", "why": "ILD is a class"}'
    v, _ = _judge("Interstitial lung disease (ILD)", "Silicosis", Canned(reply))
    assert v.correct is False and v.method == "llm"


@pytest.mark.parametrize("dx,truth", [
    ("No pulmonary embolism", "Pulmonary embolism"),
    ("Pneumonia; pulmonary embolism ruled out", "Pulmonary embolism"),
    ("Pulmonary embolism excluded", "Pulmonary embolism"),
    ("DVT unlikely, cellulitis", "Deep vein thrombosis"),
    ("Negative for tuberculosis", "Tuberculosis"),
    ("Pneumonia without pleural effusion", "Pleural effusion"),
    ("History of pulmonary embolism", "Pulmonary embolism"),
])
def test_a_negated_or_excluded_mention_is_wrong(dx, truth):
    assert precheck(dx, truth).correct is False


def test_an_exclusion_beside_the_right_answer_does_not_flip_it():
    assert precheck("Pneumonia; pulmonary embolism ruled out", "Pneumonia").correct is True
    assert precheck("Pneumonia, no pleural effusion", "Community-acquired pneumonia").correct is not False


@pytest.mark.parametrize("dx,truth", [
    ("Pulmonary embolism or pneumonia", "Pulmonary embolism"),
    ("Appendicitis vs ovarian torsion", "Appendicitis"),
    ("Migraine versus tension headache", "Migraine"),
    ("Either acute cholecystitis or biliary colic", "Acute cholecystitis"),
    ("Differential includes myocardial infarction, aortic dissection", "Myocardial infarction"),
    ("Rule out pulmonary embolism", "Pulmonary embolism"),
    ("Pulmonary embolism, cannot be ruled out", "Pulmonary embolism"),
    ("Gout, pseudogout or septic arthritis, I think", "Gout"),
])
def test_a_hedged_list_is_wrong(dx, truth):
    v = precheck(dx, truth)
    assert (v.correct, v.rule) == (False, "not_a_diagnosis")


def test_a_normal_key_leaves_a_negative_answer_to_the_judge():
    assert precheck("No abnormality", "Normal behavior").correct is None


@pytest.mark.parametrize("dx,truth", [
    ("Haemorrhoids", "Hemorrhoids"), ("Legg-Calve-Perthes disease", "Legg-Calvé-Perthes disease (LCPD)"),
    ("Hirschsprungs disease", "Hirschsprung’s disease"), ("Type II DM", "Type 2 diabetes mellitus"),
    ("Heart attack", "Myocardial infarction"), ("C diff colitis", "C. difficile colitis"),
    ("Renal colic", "Ureteric stone (renal colic)"), ("Steven Johnson syndrome", "Steven-Johnson syndrome"),
])
def test_spellings_synonyms_and_abbreviations(dx, truth):
    assert precheck(dx, truth).correct is True


# ---------------------------------------------------------------- parsing the judge's reply
@pytest.mark.parametrize("reply,verdict", [
    ("Yes.", True), ("yes, they match", True), ("**Yes** - same condition", True), ("YES", True),
    ("Correct: both describe PE.", True), ("No.", False), ("no, they differ", False),
    ("Not the same: one is viral.", False), ("The diagnoses do not match.", False),
    ("They match; the same condition.", True), ("Hmm, hard to say.", None),
    ('{"relation": "same", "why": "synonym"}', True),
    ('{"relation": "more_specific", "why": "a subtype"}', True),
    ('{"relation": "broader", "why": "a class"}', False),
    ('{"relation": "sibling", "why": "type 1 is not type 2"}', False),
    ('{"relation": "not_one_diagnosis", "why": "a list"}', False),
    ('{"why": "ILD is a class of diseases that is correct", "relation": "broader"}', False),
    ('{"relation": "sibling", "why": "Type 1 is an autoimm', False),  # cut off by max_tokens
    ('```json\n{"relation": "same", "why": "x"}\n```', True),
    ('{"correct": true}', True), ('{"verdict": "No"}', False),
    ('{"relation": "maybe", "why": "x"}', None), ('{"why": "they are the same condition"}', None),
])
def test_parse_verdict(reply, verdict):
    assert parse_verdict(reply)[0] is verdict


def test_schema_relations_all_map_to_a_verdict():
    """Every relation the grammar lets the model answer is read as a verdict, and only
    "same" and "more specific" count as right."""
    right = set()
    for rel in JUDGE_SCHEMA["properties"]["relation"]["enum"]:
        verdict, rule = parse_verdict(json.dumps({"relation": rel, "why": "x"}))
        assert rule == "json_relation" and verdict is not None, rel
        right |= {rel} if verdict else set()
    assert right == {"same", "more_specific"}


# ---------------------------------------------------------------- the judge with a model
class Canned:
    name = "canned"

    def __init__(self, *replies):
        self.replies = list(replies)
        self.calls = 0
        self.seen = []

    def generate(self, messages, params, ctx):
        self.calls += 1
        self.seen.append((list(messages), params))
        return Output(text=self.replies.pop(0), model=self.name)


@pytest.fixture()
def without_thesaurus(monkeypatch, tmp_path):
    """The judge without medsim's thesaurus: for tests of the model's path on pairs the
    thesaurus now decides in the pre-check (agents.condition_thesaurus)."""
    import agents.judge as judge
    monkeypatch.setattr(judge, "_THESAURUS", ConditionThesaurus(judge._vocab_key, tmp_path / "none.txt"))


def _judge(dx, truth, llm, **kw):
    sink = ListSink()
    v = judge_diagnosis(dx, truth, llm=llm, params=GenerateParams(max_tokens=60), case_id="c", turn=3, sink=sink, **kw)
    return v, sink


def test_no_diagnosis_never_correct_even_if_judge_says_yes():
    llm = Canned("Yes.")
    v, sink = _judge(None, "Gout", llm)
    assert v.correct is False and llm.calls == 0
    assert [e for e in sink.events if isinstance(e, JudgeDecision)][0].correct is False


def test_llm_judge_rationale_is_logged_and_retry_on_garbage():
    llm = Canned("Well...", "Yes, they match: both are PE.")
    v, sink = _judge("Lung clot", "Pulmonary embolism", llm)
    assert v.correct is True and v.method == "llm" and llm.calls == 2
    dec = [e for e in sink.events if isinstance(e, JudgeDecision)][0]
    assert "both are PE" in dec.rationale


def test_unparseable_judge_raises():
    with pytest.raises(JudgeUnparsed):
        _judge("Lung clot", "Pulmonary embolism", Canned("Hmm", "Perhaps"))


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_judge_prompt_keeps_the_two_lines_and_asks_for_the_format(fmt):
    llm = Canned(*(['{"relation": "same", "why": "a lay name"}'] * 2 if fmt == "json" else ["Yes."]))
    v, _ = _judge("Lung clot", "Pulmonary embolism", llm, reply_format=fmt)
    assert v.correct is True
    messages, params = llm.seen[0]
    user = messages[-1].content
    assert "Correct diagnosis: Pulmonary embolism\n" in user and "Doctor's diagnosis: Lung clot" in user
    system = messages[0].content.lower()
    for word in ("synonym", "abbreviation", "more specific", "broader", "sibling", "different", "list"):
        assert word in system, word
    if fmt == "json":
        schema = json.loads(params.response_schema)
        assert schema == json.loads(json.dumps(JUDGE_SCHEMA, sort_keys=True))
        assert schema["properties"]["why"]["maxLength"] <= 200 and params.max_tokens >= 80
    else:
        assert params.response_schema is None and params.max_tokens == 60


# ---------------------------------------------------------------- a "same" asked the other way round
SAME = '{"relation": "same", "why": "another name"}'


def _swapped_question(llm):
    """The diagnosis and the key of the second call."""
    user = llm.seen[1][0][-1].content
    return user.split("Doctor's diagnosis: ")[1].split("\n")[0], user.split("Correct diagnosis: ")[1].split("\n")[0]


def test_a_same_that_is_a_more_specific_form_the_other_way_round_is_a_broader_name():
    llm = Canned(SAME, '{"relation": "more_specific", "why": "a kind of it"}')
    v, sink = _judge("Lymphoma", "Chronic lymphocytic leukemia", llm)
    assert v.correct is False and v.rule == "swapped_broader" and llm.calls == 2
    assert _swapped_question(llm) == ("Chronic lymphocytic leukemia", "Lymphoma")
    dec = [e for e in sink.events if isinstance(e, JudgeDecision)]
    assert len(dec) == 1 and dec[0].correct is False and "other way round" in dec[0].rationale


def test_the_pre_check_answers_the_other_way_round_when_it_can():
    # ICD-10-CM files Graves disease under hyperthyroidism: no second model call
    llm = Canned(SAME)
    v, _ = _judge("Hyperthyroidism", "Graves disease", llm)
    assert v.correct is False and v.rule == "swapped_broader" and llm.calls == 1


def test_a_same_that_is_a_different_condition_the_other_way_round_in_one_family_is_a_neighbour():
    llm = Canned(SAME, '{"relation": "different", "why": "a different condition"}')
    v, _ = _judge("Rheumatoid arthritis", "Reactive arthritis", llm)
    assert v.correct is False and v.rule == "swapped_neighbour" and "arthritis" in v.rationale


@pytest.mark.usefixtures("without_thesaurus")
@pytest.mark.parametrize("dx,truth", [("Slapped cheek syndrome", "Erythema infectiosum"),  # no shared word
                                      ("Cushing syndrome", "Cushing disease")])  # asked back: same
def test_a_same_stands_when_the_other_way_round_agrees_or_shares_no_family(dx, truth):
    back = SAME if dx.startswith("Cushing") else '{"relation": "different", "why": "a different condition"}'
    llm = Canned(SAME, back)
    v, _ = _judge(dx, truth, llm)
    assert v.correct is True and v.rule == "json_relation" and llm.calls == 2


def test_with_the_thesaurus_the_pre_check_answers_the_other_way_round():
    # Cushing disease is a kind of Cushing syndrome in medsim's thesaurus: the model's "same"
    # for the broader name is turned wrong by the pre-check asked the other way round
    llm = Canned(SAME)
    v, _ = _judge("Cushing syndrome", "Cushing disease", llm)
    assert v.correct is False and v.rule == "swapped_broader" and llm.calls == 1 and "thesaurus" in v.rationale


@pytest.mark.usefixtures("without_thesaurus")
def test_the_generic_words_make_no_family():
    llm = Canned(SAME, '{"relation": "sibling", "why": "x"}')
    v, _ = _judge("Addison disease", "Primary adrenal insufficiency disease", llm)
    assert v.correct is True and llm.calls == 2


@pytest.mark.parametrize("first", ['{"relation": "more_specific", "why": "a subtype"}',
                                   '{"relation": "different", "why": "x"}'])
def test_only_a_same_is_asked_the_other_way_round(first):
    llm = Canned(first)
    _judge("Rheumatoid arthritis", "Reactive arthritis", llm)
    assert llm.calls == 1


@pytest.mark.usefixtures("without_thesaurus")
def test_the_text_format_is_not_asked_the_other_way_round():
    llm = Canned("Yes.")
    v, _ = _judge("Rheumatoid arthritis", "Reactive arthritis", llm, reply_format="text")
    assert v.correct is True and llm.calls == 1


@pytest.mark.parametrize("dx,truth", [("Respiratory distress due to hypoxemia", "Respiratory distress syndrome"),
                                      ("Bilateral arthritis with tendinitis", "Reactive arthritis"),
                                      ("Hodgkin", "Hodgkin lymphoma")])
@pytest.mark.parametrize("fmt,reply", [("json", '{"relation": "more_specific", "why": "a subtype"}'),
                                       ("text", "Yes, a more specific form.")])
def test_a_part_of_the_key_is_no_kind_of_it_whatever_the_model_says(dx, truth, fmt, reply):
    llm = Canned(reply)
    v, _ = _judge(dx, truth, llm, reply_format=fmt)
    assert v.correct is False and v.rule == "part_of_key" and llm.calls == 1


@pytest.mark.parametrize("dx,truth", [("Acute promyelocytic leukemia", "Acute myeloid leukemia"),  # a word of its own
                                      ("Hodgkin disease", "Hodgkin lymphoma")])  # a noun of its own
def test_a_name_with_a_word_of_its_own_is_no_part_of_the_key(dx, truth):
    llm = Canned("Yes.")
    v, _ = _judge(dx, truth, llm, reply_format="text")
    assert v.correct is True


def test_json_judge_accepts_a_plain_text_reply_from_a_server_that_ignores_the_schema():
    v, _ = _judge("Lung clot", "Pulmonary embolism", Canned("**No** - different"), reply_format="json")
    assert v.correct is False and v.rule == "leading_no"


def test_unknown_reply_format_is_an_error():
    with pytest.raises(ValueError):
        _judge("Lung clot", "Pulmonary embolism", Canned("Yes."), reply_format="xml")


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_scripted_judge_reads_both_prompts(fmt):
    llm = ScriptedLLM({})
    assert _judge("Tension headache", "Migraine", llm, reply_format=fmt)[0].correct is False
    assert _judge("Migraine headache disorder", "Migraine headache", llm, reply_format=fmt)[0].correct is True


# ---------------------------------------------------------------- the labelled set and its evaluation
def test_shipped_pairs_cover_every_kind_and_the_precheck_makes_no_false_positive():
    pairs = shipped_pairs()
    assert len(pairs) >= 80
    by_kind = {k: [p for p in pairs if p.kind == k] for k in KINDS}
    assert all(len(v) >= 3 for v in by_kind.values()), {k: len(v) for k, v in by_kind.items()}
    assert len({(p.truth, p.diagnosis) for p in pairs}) == len(pairs)
    assert {p.label for p in pairs} == {True, False}
    ev = evaluate(pairs, precheck)
    assert ev.totals.false_positives == 0, format_evaluation(ev)
    # and it decides most of them: wrong only where it declines to decide
    assert ev.totals.false_negatives == sum(1 for r in ev.results if r.pair.label and r.verdict.correct is None)


def _write(tmp_path, content: bytes, name="pairs.jsonl"):
    p = tmp_path / name
    p.write_bytes(content)
    return p


GOOD = b'{"truth": "Gout", "diagnosis": "Gout", "label": true, "kind": "exact"}\n'


@pytest.mark.parametrize("bad,words", [
    (b'{"diagnosis": "Gout", "label": true}\n', ["line 2", "'truth'", "missing"]),
    (b'{"truth": "Gout", "label": true}\n', ["line 2", "'diagnosis'", "missing"]),
    (b'{"truth": "Gout", "diagnosis": "  ", "label": true}\n', ["line 2", "'diagnosis'", "non-empty string"]),
    (b'{"truth": "Gout", "diagnosis": "Gout", "label": "yes"}\n', ["line 2", "'label'", "true or false"]),
    (b'{"truth": "Gout", "diagnosis": "Gout", "label": 1}\n', ["line 2", "'label'", "true or false"]),
    (b'{"truth": "Gout", "diagnosis": "Gout", "label": true, "kind": "guess"}\n', ["line 2", "'kind'"]),
    (b'{"truth": "Gout", "diagnosis": "Gout", "label": true\n', ["line 2", "invalid JSON"]),
    (b'["Gout", "Gout", true]\n', ["line 2", "JSON object"]),
    (b'{"truth": "Gicht \xff", "diagnosis": "Gout", "label": true}\n', ["line 2", "UTF-8"]),
])
def test_load_pairs_names_file_line_and_field(tmp_path, bad, words):
    p = _write(tmp_path, GOOD + bad)
    with pytest.raises(PairsError) as e:
        load_pairs(p)
    msg = str(e.value).replace(":2:", " line 2:")
    assert str(p) in msg
    for w in words:
        assert w in msg.replace(f"{p}:2", "line 2"), msg


def test_load_pairs_skips_blank_lines_and_missing_file(tmp_path):
    p = _write(tmp_path, GOOD + b"\n  \n" + GOOD.replace(b'"exact"', b'"hedge"'))
    pairs = load_pairs(p)
    assert [(x.kind, x.line) for x in pairs] == [("exact", 1), ("hedge", 4)]
    with pytest.raises(PairsError, match="cannot read"):
        load_pairs(tmp_path / "absent.jsonl")


def test_evaluate_totals_with_a_fake_judge():
    pairs = [JudgePair("Gout", "Gout", True, "exact"),                 # judged right: agree
             JudgePair("Gout", "Pseudogout", False, "different"),      # judged right: false positive
             JudgePair("Gout", "Podagra", True, "synonym"),            # undecided: false negative
             JudgePair("Gout", "Cellulitis", False, "different"),      # undecided: agree (not correct)
             JudgePair("Gout", "No gout", False, "negated")]           # judged wrong: agree
    said = {"Gout": True, "Pseudogout": True, "Podagra": None, "Cellulitis": None, "No gout": False}
    ev = evaluate(pairs, lambda d, t: Verdict(said[d], "fake", "r", ""))
    t = ev.totals
    assert (t.n, t.agree, t.false_positives, t.false_negatives, t.undecided) == (5, 3, 1, 1, 2)
    assert t.agreement == pytest.approx(0.6)
    assert list(ev.by_kind) == ["exact", "synonym", "negated", "different"]
    d = ev.by_kind["different"]
    assert (d.n, d.agree, d.false_positives, d.undecided) == (2, 1, 1, 1)
    assert [r["outcome"] for r in ev.rows()] == ["agree", "false_positive", "false_negative", "agree", "agree"]
    text = format_evaluation(ev, "fake")
    assert "'Pseudogout' for 'Gout'" in text and "false_positive" in text
    assert t.to_dict()["agreement"] == pytest.approx(0.6)


def test_unlabelled_pairs_are_judged_but_not_scored(tmp_path):
    from agents.judge_eval import evaluate, format_evaluation, load_pairs

    p = tmp_path / "mixed.jsonl"
    p.write_text('{"truth": "Gout", "diagnosis": "gout"}\n{"truth": "Gout", "diagnosis": "Pseudogout", "label": false}\n')
    pairs = load_pairs(p)
    assert [x.label for x in pairs] == [None, False]
    ev = evaluate(pairs, precheck)
    assert ev.totals.n == 1 and ev.results[0].outcome == "unlabelled"
    assert "verdicts (unlabelled pairs)" in format_evaluation(ev)


def test_an_insight_naming_the_distinctive_word_of_a_tumour_names_it():
    """A reflection on the embedded model wrote "…strongly suggests a phyllodes瘤" for a
    phyllodes tumour: the distinctive word alone gives the answer away; the head noun
    (tumour, cancer, carcinoma) alone does not."""
    from agents.judge import names_condition

    assert names_condition("the description strongly suggests a phyllodes\u7624", "Phyllodes tumor")
    assert names_condition("think of a Phyllodes lesion", "Phyllodes tumour")
    assert not names_condition("weigh the tumour type and the imaging", "Phyllodes tumor")
    assert not names_condition("a malignant tumour of the skin", "Malignant melanoma")
    assert names_condition("an adenocarcinoma of the lung", "Lung adenocarcinoma")
    assert not names_condition("pulmonary causes of breathlessness", "Pulmonary embolism")


@pytest.mark.parametrize("dx,truth,right", [
    ("RLS", "Restless legs syndrome", True),
    ("GBS", "Guillain-Barre syndrome", True),  # hyphenated parts are words
    ("ToF", "Tetralogy of Fallot", True),  # the little words may be kept (or left out: "TF")
    ("Restless legs syndrome", "RLS", True),  # either way round
    ("MG", "Multiple sclerosis", False),
    ("PSC", "Primary biliary cholangitis", False),
    ("rls", "Restless legs syndrome", False),  # a word, not an initialism: left to the judge
])
def test_an_initialism_of_the_keys_own_words_is_the_key(dx, truth, right):
    from agents.judge import precheck

    from agents.judge import initialism_of

    v = precheck(dx, truth)
    assert (v.correct is True) == right and initialism_of(dx, truth) | initialism_of(truth, dx) == right, v


@pytest.mark.parametrize("dx,truth,right", [
    ("Synovitis, acne, pustulosis, hyperostosis and osteitis syndrome", "SAPHO syndrome", True),  # not a list
    ("Chronic recurrent multifocal osteomyelitis", "CRMO", True),
    ("Supracardiac TAPVR", "Total anomalous pulmonary venous return", True),  # the initialism with its own words
    ("Partial TAPVR", "Total anomalous pulmonary venous return", False),  # words that contradict the name's
    ("Synovitis, acne, pustulosis", "SAPHO syndrome", False),  # not all of it: a list
    ("Acne, pustulosis, synovitis, hyperostosis and osteitis syndrome", "SAPHO syndrome", False),
])
def test_the_keys_initialism_spelt_out_or_qualified_is_the_key(dx, truth, right, without_thesaurus):
    from agents.judge import precheck

    v = precheck(dx, truth)
    assert (v.correct is True) == right, v


def test_the_walls_of_the_heart_exclude_each_other_only_for_an_infarction(without_thesaurus):
    from agents.judge import precheck

    assert precheck("Anterior myocardial infarction", "Inferior myocardial infarction").rule == "sibling"
    assert precheck("Lateral STEMI", "Anterior STEMI").rule == "sibling"
    v = precheck("Anterior talofibular ligament sprain of the right ankle", "Lateral ankle sprain")
    assert v.rule != "sibling", v  # the ligament of a lateral sprain: for the judge, not a sibling
    assert precheck("Anterior uveitis", "Posterior uveitis").rule == "sibling"  # anterior/posterior still are


def test_a_held_out_split_is_counted_apart(tmp_path):
    from agents.judge_eval import PairsError, evaluate, load_pairs, shipped_pairs
    from agents.judge import precheck

    p = tmp_path / "p.jsonl"
    p.write_text('{"truth": "Gout", "diagnosis": "Gout", "label": true}\n'
                 '{"truth": "Gout", "diagnosis": "Pseudogout", "label": true, "split": "held_out"}\n')
    ev = evaluate(load_pairs(p), precheck)
    assert ev.by_split["tuning"].agree == 1 and ev.by_split["held_out"].n == 1 and ev.by_split["held_out"].agree == 0
    p.write_text('{"truth": "Gout", "diagnosis": "Gout", "label": true, "split": "test"}\n')
    with pytest.raises(PairsError, match="field 'split'"):
        load_pairs(p)
    shipped = shipped_pairs()
    held = [x for x in shipped if x.split == "held_out"]
    assert len(held) >= 40 and len(shipped) - len(held) >= 150


# ------------------------------------------- a "different" whose reason names a subtype, asked back
def _subtype_reply(dx, truth):
    return json.dumps({"relation": "different", "why": f"{dx} is a subtype of {truth}"})


@pytest.mark.usefixtures("without_thesaurus")
def test_a_different_whose_reason_names_a_subtype_and_broader_the_other_way_round_is_right():
    llm = Canned(_subtype_reply("Glioblastoma", "brain tumor"), '{"relation": "broader", "why": "a class"}')
    v, sink = _judge("Glioblastoma", "Brain tumor", llm)
    assert v.correct is True and v.rule == "subtype_both_ways" and llm.calls == 2
    assert _swapped_question(llm) == ("Brain tumor", "Glioblastoma")
    dec = [e for e in sink.events if isinstance(e, JudgeDecision)]
    assert len(dec) == 1 and dec[0].correct is True and "other way round" in dec[0].rationale


@pytest.mark.parametrize("back", ['{"relation": "sibling", "why": "x"}', '{"relation": "different", "why": "x"}',
                                  '{"relation": "more_specific", "why": "x"}', '{"relation": "same", "why": "x"}'])
def test_a_subtype_reason_the_other_way_round_does_not_confirm_keeps_the_verdict(back):
    llm = Canned(_subtype_reply("Vascular dementia", "Alzheimer disease"), back)
    v, _ = _judge("Vascular dementia", "Alzheimer disease", llm)
    assert v.correct is False and v.rule == "json_relation" and llm.calls == 2


@pytest.mark.usefixtures("without_thesaurus")
@pytest.mark.parametrize("reply", [
    '{"relation": "different", "why": "Brain tumor is a subtype of glioblastoma"}',  # the key named the subtype
    '{"relation": "different", "why": "Glioma is a subtype of brain tumor"}',  # another name than the one asked
    '{"relation": "different", "why": "a different condition"}',
    '{"relation": "different", "why": "Glioblastoma is not a subtype of brain tumor"}',
    'No, different.',
])
def test_only_a_reason_naming_the_diagnosis_a_subtype_of_the_key_is_asked_back(reply):
    llm = Canned(reply)
    v, _ = _judge("Glioblastoma", "Brain tumor", llm, reply_format="json" if reply.startswith("{") else "text")
    assert v.correct is False and llm.calls == 1


def test_a_pair_the_pre_check_decides_the_other_way_round_keeps_its_verdict():
    # undecided forward (a word past the key's noun), "broader" backward only by word overlap:
    # not evidence of a subtype ("Tumor lysis syndrome" is no tumor); no second call
    llm = Canned(_subtype_reply("Tumor lysis syndrome", "tumor"))
    v, _ = _judge("Tumor lysis syndrome", "Tumor", llm)
    assert v.correct is False and llm.calls == 1 and "not confirmed" in v.rationale


@pytest.mark.parametrize("relation", ["same", "more_specific"])
def test_a_right_whose_reason_calls_the_key_the_subtype_is_a_broader_name(relation):
    reply = json.dumps({"relation": relation, "why": "Hyperkalemia is a subtype of electrolyte disturbance"})
    llm = Canned(reply, SAME)
    v, _ = _judge("Electrolyte disturbance", "Hyperkalemia", llm)
    assert v.correct is False and v.rule == "reason_says_broader" and llm.calls == 1


@pytest.mark.usefixtures("without_thesaurus")
def test_a_right_whose_reason_calls_the_diagnosis_the_subtype_stands():
    llm = Canned(json.dumps({"relation": "more_specific", "why": "Glioblastoma is a subtype of brain tumor"}))
    v, _ = _judge("Glioblastoma", "Brain tumor", llm)
    assert v.correct is True and llm.calls == 1


@pytest.mark.parametrize("dx, truth", [
    ("Hay fever, severe", "Allergic rhinitis"),
    ("Granulomatosis with polyangiitis, severe", "Vasculitis"),
    ("Idiopathic pulmonary arterial hypertension, severe", "Pulmonary hypertension"),
    ("Molar pregnancy, stage II", "Hydatidiform mole"),
    ("Posterior subcapsular cataract, right eye", "Cataract"),
    ("Chronic hepatitis C, genotype 1a", "Hepatitis C"),
])
def test_a_diagnosis_right_without_what_only_qualifies_it_is_right_with_it(dx, truth):
    v = precheck(dx, truth)
    assert v.correct is True and v.method == "precheck", v


@pytest.mark.parametrize("dx, truth", [
    ("Pseudotumour cerebri", "Idiopathic intracranial hypertension"),  # a British spelling inside a word
    ("Paracetamol poisoning", "Acetaminophen toxicity"),  # a drug's toxicity is its poisoning
])
def test_spellings_inside_words_and_toxicity_for_poisoning(dx, truth):
    assert precheck(dx, truth).correct is True
