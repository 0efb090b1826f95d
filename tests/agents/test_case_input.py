"""Every bad case file a person can make (issue 14, "every bad input"): each class of
input is a clear error naming file:line (and the field where known), or is accepted;
never a traceback. A bounded, deterministic fuzz test (hypothesis) checks the same over
random records."""
from __future__ import annotations

import json
import string
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.cases.jsonl import MAX_DEPTH
from agents.cases.model import CaseSetError, image_location, image_outside
from agents.cases.registry import load_cases, resolve_case_path
from agents.names import event_file_name


def _osce(id_="c1", dx="Asthma", history="Short of breath.", **extra) -> dict:
    rec = {"OSCE_Examination": {"Objective_for_Doctor": "Assess the patient.",
                                "Patient_Actor": {"Demographics": "50-year-old man", "History": history},
                                "Test_Results": {"Spirometry": {"FEV1": "60%"}}, "Correct_Diagnosis": dx}, **extra}
    if id_ is not None:
        rec["id"] = id_
    return rec


def _nejm(**extra) -> dict:
    return {"question": "What is the diagnosis?", "patient_info": "A 40-year-old man with a rash.",
            "physical_exams": "Rash.", "answers": [{"text": "Psoriasis", "correct": True},
                                                   {"text": "Eczema", "correct": False}], **extra}


def _line(rec: dict) -> bytes:
    return json.dumps(rec).encode("ascii") + b"\n"


def _refused(tmp_path: Path, data: bytes, *, line: int = 1, field: str, says: str) -> CaseSetError:
    p = tmp_path / "cases.jsonl"
    p.write_bytes(data)
    with pytest.raises(CaseSetError) as e:
        load_cases(str(p))
    text = str(e.value)
    assert f"{p}:{line}: field '{field}'" in text and says in text, text
    return e.value


GOOD = _line(_osce("good"))
DEEP = 200_000
BIG = "9" * 5000
LIMIT = getattr(sys, "get_int_max_str_digits", lambda: 4300)()


# -- what the fuzzing of issue 14 found, one test per class -----------------------------------
@pytest.mark.parametrize("data, field, says", [
    (GOOD + b'{"id": ' + BIG.encode() + b"}\n", "<json>", f"a number with more than {LIMIT} digits"),
    (GOOD + json.dumps(_osce("x"))[:-1].encode() + b', "n": -' + BIG.encode() + b"}\n", "<json>", "more than"),
    (GOOD + b"[" * DEEP + b"]" * DEEP + b"\n", "<json>", "nested too deeply"),
    (GOOD + b'{"a":' * DEEP + b"1" + b"}" * DEEP + b"\n", "<json>", "nested too deeply"),
    (GOOD + json.dumps(_osce("caf\u00e9")).replace("\\u00e9", "\u00e9").encode("latin-1") + b"\n", "<encoding>",
     "not UTF-8 text (byte 0xe9"),
    (GOOD + b'{"id": "\xed\xa0\x80"}\n', "<encoding>", "not UTF-8"),  # a surrogate spelled in bytes
    (GOOD + json.dumps(_osce("x")).encode("utf-16-le") + b"\n", "<json>", "UTF-16"),
    (GOOD + b"\x00\x00\x00\n", "<json>", "NUL"),
    (GOOD + _line(_osce("a\ud800b")), "id", "unpaired surrogate (\\ud800"),
    (GOOD + _line(_osce("x", dx="Gout\udfff")), "OSCE_Examination.Correct_Diagnosis", "unpaired surrogate"),
    (GOOD + _line(_osce("x", history={"k\udc00": "v"})), "OSCE_Examination.Patient_Actor.History", "a key holds"),
    (GOOD + _line(_osce("x", specialty=["\ud83d"])), "specialty[0]", "unpaired surrogate"),
    (GOOD + _line(_osce("x", imaging=[{"test": "CT", "modality": "CT", "image": "a\x00b.png", "report": "r"}])),
     "imaging[0].image", "NUL"),
    (GOOD + (json.dumps(_osce("a")) + "\r" + json.dumps(_osce("b")) + "\r").encode(), "<json>", "CR alone"),
])
def test_a_bad_line_is_named_never_a_traceback(tmp_path, data, field, says):
    _refused(tmp_path, data, line=2, field=field, says=says)


def test_nesting_the_parser_allows_but_no_case_needs_is_named(tmp_path):
    deep: object = "leaf"
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    _refused(tmp_path, GOOD + _line(_osce("x", history=deep)), line=2, field="OSCE_Examination.Patient_Actor.History"
             + "[0]" * (MAX_DEPTH - 2), says=f"nested more than {MAX_DEPTH} levels deep")


def test_a_utf16_file_is_named_once(tmp_path):
    data = "".join(json.dumps(_osce(f"c{i}")) + "\n" for i in range(50)).encode("utf-16")
    e = _refused(tmp_path, data, field="<encoding>", says="the file is UTF-16 text (byte-order mark); save it as UTF-8")
    assert len(e.errors) == 1


def test_a_file_of_many_bad_lines_gives_a_short_message(tmp_path):
    e = _refused(tmp_path, b"{broken\n" * 500, field="<json>", says="... and 480 more")
    assert len(e.errors) == 500 and str(e).count("\n") == 21


@pytest.mark.parametrize("record", [_nejm(image_url="a\x00.png"), _nejm(x=[[[[1]]]]),
                                    _nejm(answers=[{"text": "\ud800", "correct": True}])])
def test_nejm_records_are_checked_alike(tmp_path, record):
    p = tmp_path / "nejm.jsonl"
    p.write_bytes(_line(_nejm()) + _line(record))
    try:
        cases, _ = load_cases(str(p))
    except CaseSetError as e:
        assert f"{p}:2: field '" in str(e)
    else:
        assert len(cases) == 2  # the harmless one (extra nesting) is accepted


def test_nejm_deep_nesting_and_huge_numbers(tmp_path):
    for bad, says in ((b"[" * DEEP + b"]" * DEEP, "nested too deeply"), (BIG.encode(), "digits")):
        data = _line(_nejm()) + json.dumps(_nejm())[:-1].encode() + b', "x": ' + bad + b"}\n"
        _refused(tmp_path, data, line=2, field="<json>", says=says)


# -- what is accepted ---------------------------------------------------------------------------------
@pytest.mark.parametrize("record", [_osce(), _nejm()])
def test_a_utf8_byte_order_mark_is_accepted(tmp_path, record):
    p = tmp_path / "bom.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + _line(record) + _line({**record, "id": "second"}))
    cases, errors = load_cases(str(p))
    assert len(cases) == 2 and not errors


def test_crlf_and_blank_lines_are_accepted(tmp_path):
    p = tmp_path / "crlf.jsonl"
    p.write_bytes(b"\r\n" + json.dumps(_osce("a")).encode() + b"\r\n\r\n" + json.dumps(_osce("b")).encode())
    assert [c.id for c in load_cases(str(p))[0]] == ["a", "b"]


ODD = "\x00\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\r\t\ufeff\U0001f600"


def test_odd_text_is_carried_exactly(tmp_path):
    """NUL and every character str.splitlines breaks at are text: carried, not refused."""
    p = tmp_path / "odd.jsonl"
    ids = [f"id{ODD}", "y" * 300, "\u00e9" * 10_000, "../../x", "/abs/path"]
    p.write_bytes(b"".join(_line(_osce(i, dx=f"Gout{ODD}", history=ODD)) for i in ids))
    cases, _ = load_cases(str(p))
    assert [c.id for c in cases] == [i.strip() for i in ids]
    assert cases[0].diagnosis == f"Gout{ODD}".strip() and cases[0].patient["History"] == ODD
    for c in cases:
        name = event_file_name(c.id)
        assert len(name) <= 40 + 1 + 10 + 6 and "/" not in name and name.isascii()


@pytest.mark.parametrize("name", ["caf\udce9.jsonl", "a\x00b.jsonl", "x\ud800"])
def test_a_case_path_that_is_not_text_is_refused(name):
    with pytest.raises(CaseSetError, match="is not UTF-8 text"):
        resolve_case_path(name)


# -- fuzz: random records through the loader -----------------------------------------------------------
_CHARS = st.one_of(st.characters(), st.characters(categories=["Cs"]), st.sampled_from(list(ODD)))
# (st.text over a union of alphabets drops the surrogates: lists of characters keep them)
_TEXT = st.lists(_CHARS, max_size=12).map("".join)
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), _TEXT)
_JSON = st.recursive(_SCALARS, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(_TEXT, kids, max_size=3),
                     max_leaves=12)
_O, _P = "OSCE_Examination", "Patient_Actor"
# the places a value is put: every field either format reads, and a few it does not
_PLACES = [("id",), ("specialty",), ("imaging",), ("imaging", 0), ("imaging", 0, "image"), ("imaging", 0, "test"),
           ("imaging", 0, "body_part"), (_O,), (_O, "Objective_for_Doctor"), (_O, "Correct_Diagnosis"), (_O, _P),
           (_O, _P, "Demographics"), (_O, _P, "History"), (_O, "Test_Results"), (_O, "Test_Results", "Spirometry"),
           (_O, "Physical_Examination_Findings"), (_O, "Extra"), ("question",), ("patient_info",), ("answers",),
           ("answers", 0), ("answers", 0, "text"), ("answers", 1, "correct"), ("image_url",), ("physical_exams",),
           ("unknown",)]


@st.composite
def _record_line(draw) -> bytes:
    """One line of a case file: a valid record with some values replaced, or a random JSON
    value, serialised one way or another, sometimes with its bytes damaged."""
    base = draw(st.sampled_from([_osce(), _nejm(), _osce(imaging=[{"test": "CT", "modality": "CT", "image": "x.png",
                                                                    "report": "r"}])]))
    rec = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(0, 3))):  # replace or add values, text most often
        *parents, last = draw(st.sampled_from(_PLACES))
        target = rec
        for k in parents:
            target = target[k] if isinstance(target, dict) and k in target or (
                isinstance(target, list) and isinstance(k, int) and k < len(target)) else None
        if isinstance(target, dict) or (isinstance(target, list) and isinstance(last, int) and last < len(target)):
            target[last] = draw(st.one_of(_TEXT, _TEXT.map(lambda t: "Gout " + t), _JSON))
    value = draw(st.one_of(st.just(rec), _JSON)) if draw(st.integers(0, 4)) == 0 else rec
    text = json.dumps(value, ensure_ascii=draw(st.booleans()))
    data = text.encode("utf-8", "surrogatepass")
    how = draw(st.integers(0, 9))
    if how == 0:  # damage the bytes
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=4)) + data[at:]
    elif how == 1:  # nest it absurdly
        n = draw(st.sampled_from([MAX_DEPTH + 1, 900, 5000, 100_000]))
        data = b"[" * n + data + b"]" * n
    elif how == 2:  # another encoding
        data = text.encode(draw(st.sampled_from(["utf-16", "utf-16-le", "latin-1", "utf-32"])), "replace")
    elif how == 3:  # huge numbers in place of values (hypothesis cannot show such integers: made here)
        data = data.replace(b'"Asthma"', b"1" * 5000, 1).replace(b"true", b"-" + b"2" * 4301, 1)
        data = data.replace(b": 0", b": " + b"3" * draw(st.sampled_from([4300, 4301, 20_000])))
    return data


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow,
                                                                                  HealthCheck.data_too_large])
@given(lines=st.lists(_record_line(), min_size=1, max_size=3), bom=st.booleans(), eol=st.sampled_from([b"\n", b"\r\n"]))
def test_fuzzed_case_files_load_or_name_the_line(lines, bom, eol):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "fuzz.jsonl"
        p.write_bytes((b"\xef\xbb\xbf" if bom else b"") + eol.join(lines) + eol)
        for skip in (False, True):
            try:
                cases, errors = load_cases(str(p), skip_invalid=skip)
            except CaseSetError as e:
                assert all(f"{p}:{err.line}: field '" in str(err) for err in e.errors)
                assert all(err.line in range(1, len(lines) + 2) for err in e.errors)
                continue
            for c in cases:  # what is loaded can be written everywhere: no surrogate, a safe file name
                json.dumps([c.id, c.diagnosis, c.patient, c.exam, c.tests, c.extra], ensure_ascii=False,
                           default=str).encode("utf-8")
                assert c.source.startswith(f"{p}:") and c.id and c.diagnosis
                assert set(event_file_name(c.id)) <= set(string.ascii_letters + string.digits + "._-")
            assert all(f"{p}:{err.line}: field '" in str(err) for err in errors)


_SURROGATE_TEXT = st.lists(_CHARS, min_size=1, max_size=12).map("".join)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(id_=_SURROGATE_TEXT, dx=_SURROGATE_TEXT, history=_SURROGATE_TEXT, image=_SURROGATE_TEXT,
       ascii_only=st.booleans())
def test_fuzzed_text_is_carried_exactly_or_its_field_named(id_, dx, history, image, ascii_only):
    """Any text in any field: loaded exactly as written, or refused naming that field
    (an unpaired surrogate anywhere; a NUL in an image's file name)."""
    rec = _osce(id_, dx=dx, history=history, imaging=[{"test": "CT", "modality": "CT", "image": image, "report": "r"}])
    data = json.dumps(rec, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass") + b"\n"
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "text.jsonl"
        p.write_bytes(data)
        try:
            cases, _ = load_cases(str(p))
        except CaseSetError as e:
            err = e.errors[0]
            assert all(f"{p}:1: field '" in str(x) for x in e.errors)
            if not ascii_only and any("\ud800" <= ch <= "\udfff" for ch in json.dumps(rec, ensure_ascii=False)):
                assert err.field == "<encoding>"  # written as UTF-8 bytes, a surrogate is no UTF-8
                return
            bad = {f: v for f, v in [("id", id_), ("OSCE_Examination.Correct_Diagnosis", dx),
                                     ("OSCE_Examination.Patient_Actor.History", history), ("imaging[0].image", image)]
                   if any("\ud800" <= ch <= "\udfff" for ch in v) or not v.strip()
                   or (f.startswith("imaging") and ("\x00" in v or image_outside(image_location(v, d), d)))}
            assert all(x.field in bad for x in e.errors), (e.errors, bad)
            return
    (c,) = cases
    assert (c.id, c.diagnosis, c.patient["History"]) == (id_.strip(), dx.strip(), history)
    assert not any("\ud800" <= ch <= "\udfff" for ch in c.id + c.diagnosis + history + c.imaging[0].image)


# -- what a case field can cost (issue 23: a 20 MB field made 261 MB of output for one cell) ---------------
def test_a_case_field_over_the_cap_is_refused_naming_file_line_and_field(tmp_path):
    from agents.cases.jsonl import MAX_FIELD_CHARS

    huge = "x" * (MAX_FIELD_CHARS + 1)
    _refused(tmp_path, GOOD + _line(_osce("big", history=huge)), line=2,
             field="OSCE_Examination.Patient_Actor.History", says=f"{MAX_FIELD_CHARS + 1:,} characters long")
    _refused(tmp_path, GOOD + _line(_osce("big", notes={huge: "a"})), line=2, field="notes",
             says="a key is")
    _refused(tmp_path, GOOD + _line(_nejm(question="y" * 20_000_000)), line=2, field="question",
             says=f"at most {MAX_FIELD_CHARS:,}")
    p = tmp_path / "ok.jsonl"
    p.write_bytes(GOOD + _line(_osce("long", history="x" * MAX_FIELD_CHARS)))  # at the cap: a case
    assert [c.id for c in load_cases(str(p))[0]] == ["good", "long"]


def test_the_cap_is_far_above_every_real_case_field():
    """The longest field of the shipped sets (and of AgentClinic's MedQA, where present)
    is under a hundredth of the cap."""
    from agents.cases.jsonl import MAX_FIELD_CHARS, read_json_lines
    from agents.cases.registry import registered_case_sets
    from tests.conftest import AGENTCLINIC

    files = [resolve_case_path(n) for n in registered_case_sets()] + ([AGENTCLINIC] if AGENTCLINIC.is_file() else [])
    longest = 0
    for f in files:
        for _, rec in read_json_lines(f):
            stack = [rec]
            while stack:
                v = stack.pop()
                if isinstance(v, str):
                    longest = max(longest, len(v))
                elif isinstance(v, dict):
                    stack.extend([*v.keys(), *v.values()])
                elif isinstance(v, list):
                    stack.extend(v)
    assert 0 < longest < MAX_FIELD_CHARS / 50


def test_an_osce_case_field_over_the_cap_is_refused_naming_file_and_field(tmp_path):
    from agents.cases.jsonl import MAX_FIELD_CHARS
    from agents.suites.osce_personas import PersonaError, load_osce_cases

    src = Path(str(resolve_case_path("demo").parent.parent / "suites" / "osce_data" / "cases" / "pneumo.toml"))
    text = src.read_text(encoding="utf-8")
    (tmp_path / "pneumo.toml").write_text(text.replace('situation = "', 'situation = "' + "x" * MAX_FIELD_CHARS, 1),
                                          encoding="utf-8")
    with pytest.raises(PersonaError, match=r"pneumo\.toml: situation: is [\d,]+ characters long"):
        load_osce_cases(tmp_path)
