"""The labelled set that tells whether the fidelity checker can be trusted (issue 21,
item 2): its coverage, the loader's messages, and the evaluation's counting."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from agents.fidelity.pairs import PairsError, evaluate, load_pairs, shipped_pairs


@pytest.fixture(scope="module")
def shipped():
    return shipped_pairs()


def test_the_shipped_set_covers_every_label_with_real_and_written_replies(shipped):
    assert len(shipped) >= 200
    kinds = Counter(i.kind for i in shipped)
    for kind in ("supported", "contradicted", "invented", "third_person", "caregiver", "not_caregiver", "leak",
                 "overshare", "wrong_record", "synthesised", "implausible", "missed_record", "unmarked", "from_case"):
        assert kinds[kind] >= 3, kind
    assert sum(i.source.startswith("embedded:") for i in shipped) >= 20  # from real embedded-model transcripts
    assert {i.split for i in shipped} == {"tuning", "held_out"}
    assert 0.2 <= sum(i.split == "held_out" for i in shipped) / len(shipped) <= 0.4


def test_the_pre_check_agrees_with_the_labels(shipped):
    ev = evaluate(shipped)
    assert ev.checker == "pre-check"
    assert ev.overall.agreement >= 0.9  # measured 0.950 (held out 0.928): see the report of issue 21
    assert ev.by_label["third_person"].false_positives == 0
    assert ev.by_label["wrong_record"].false_positives == 0


def _write(tmp_path, rows):
    p = tmp_path / "pairs.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return p


GOOD = {"id": "x1", "role": "patient", "cases": "demo", "case_id": "demo-007", "question": "Any pain?",
        "reply": "The patient has pain.", "labels": {"voice": "third_person"}}


@pytest.mark.parametrize("change, message", [
    ({"role": "nurse"}, "field 'role'"),
    ({"case_id": "demo-999"}, "field 'case_id'"),
    ({"cases": "no-such-set"}, "field 'cases'"),
    ({"labels": {"voice": "second_person"}}, "field 'labels.voice'"),
    ({"labels": {"verdict": "from_case"}}, "field 'labels.verdict' is not a patient label"),
    ({"labels": {"leak": "yes"}}, "field 'labels.leak'"),
    ({"split": "train"}, "field 'split'"),
    ({"reply": ""}, "field 'reply'"),
])
def test_a_bad_row_is_named_by_file_line_and_field(tmp_path, change, message):
    p = _write(tmp_path, [GOOD, {**GOOD, "id": "x2", **change}])
    with pytest.raises(PairsError) as e:
        load_pairs(p)
    assert f"{p}:2:" in str(e.value) and message in str(e.value)


def test_a_file_of_ones_own_is_scored_label_by_label(tmp_path):
    rows = [GOOD, {**GOOD, "id": "x2", "reply": "I have pain.", "labels": {"voice": "first_person"}},
            {**GOOD, "id": "x3", "reply": "I have pain.", "labels": {"voice": "third_person"}}]  # mislabelled
    ev = evaluate(load_pairs(_write(tmp_path, rows)))
    t = ev.by_label["third_person"]
    assert (t.n, t.agree, t.false_positives, t.false_negatives) == (3, 2, 0, 1)
    dup = _write(tmp_path, [GOOD, GOOD])
    with pytest.raises(PairsError, match="more than once"):
        load_pairs(dup)
