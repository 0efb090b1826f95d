"""The deterministic pre-check of one technician reply (written for medsim).

The records an order should get are those :func:`agents.findings.match_order` returns
(the rule of :mod:`agents.orders`). A reply is:

- **synthesised** when the log marks it so (a ``synthesised_result`` event for that
  turn); it is *implausible* when its value is not what the policy of that test's kind
  gives (:func:`agents.normal_results.synthesised_result`: "Wells score: Within normal
  limits" is implausible, "No abnormality recorded" never is, a normal value is
  plausible when it is that test's own) and *missed_record* when the case does hold a
  record of that test (a log written before the matching rule);
- **wrong_record** when it quotes a record (its value, or all the numbers of it) that
  does not answer the order, and no record that does hold the same value;
- **from_case** when every record it quotes answers the order;
- **unmarked** when it reports numbers no record of the case holds and no event marks
  it as synthesised (an invented value);
- **not_available** when it says there is no result.

A reply in prose that quotes no record and no number is left to the checker model.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping, Sequence

from agents.cases.model import Case, flatten
from agents.findings import case_records, case_story, match_order
from agents.guards import normalise_line
from agents.normal_results import NO_ABNORMALITY, NORMAL_VALUES, synthesised_result
from agents.orders import answers

__all__ = ["TechnicianCheck", "check_technician", "TECHNICIAN_VERDICTS", "plausible_synthesis"]

TECHNICIAN_VERDICTS = ("from_case", "wrong_record", "synthesised", "unmarked", "not_available")
_NUM = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?!\w|[.,]\d)")
_GENERIC_VALUE = re.compile(r"^(?:normal|negative|positive|none|absent|present|nil|unremarkable|within normal limits|"
                            r"within reference range|not done|intact|clear|no abnormality detected|yes|no)$")
_NOT_AVAILABLE = re.compile(r"\b(?:not\s+available|no\s+(?:such\s+)?(?:record|result|results|data)|not\s+(?:been\s+)?"
                            r"(?:done|performed|recorded)|unavailable|cannot\s+be\s+(?:done|performed))\b", re.I)


@dataclass(frozen=True)
class TechnicianCheck:
    """The pre-check's reading of one technician reply (``verdict`` None: undecided)."""

    test: str
    verdict: str | None  # one of TECHNICIAN_VERDICTS, or None
    plausible: bool | None  # a synthesised value plausible for that test (None: not synthesised)
    missed_record: bool  # synthesised though the case holds a record of that test
    quoted: tuple[str, ...]  # the records the reply quotes
    expected: tuple[str, ...]  # the records that answer the order
    why: str


@lru_cache(maxsize=65536)
def _numbers(text: str) -> frozenset[str]:
    return frozenset(n.replace(",", ".") for n in _NUM.findall(text))


def _quoted(case: Case, reply: str) -> list[tuple[str, str]]:
    low = normalise_line(reply)
    nums = _numbers(reply)
    out = []
    for path, value in case_records(case):
        v = normalise_line(value)
        leaf = normalise_line(path.split(" > ")[-1])
        if len(v) >= 8 and not _GENERIC_VALUE.match(v) and v[:32] in low:
            out.append((path, value))
            continue
        vn = _numbers(value)
        if vn and vn <= nums and (any("." in n for n in vn) or len(vn) >= 2 or (leaf and leaf in low)):
            out.append((path, value))
    return out


def plausible_synthesis(test: str, text: str, demographics: str = "", records: Sequence[tuple[str, str]] = (),
                        story: str = "") -> bool:
    """Whether a synthesised ``text`` for ``test`` is what the policy of its kind allows
    (``records`` and ``story``: the case's, which a made-up value may not contradict)."""
    got = text.split(":", 2)[-1].strip() if text.upper().startswith("RESULTS:") else text.strip()
    expected = synthesised_result(test, demographics, records, story)
    if expected.policy in ("implied_by_case", "known_condition"):  # what the case says decides it: nothing else will do
        return got == expected.text
    if got.lower().startswith(NO_ABNORMALITY.lower()) or got.lower().startswith("not indicated"):
        return True
    if got == expected.text:
        return True
    entry = next((k for k, v in NORMAL_VALUES.items() if v == got), None)
    # another entry's normal value that answers the test, unless the case records what it would make up
    return entry is not None and expected.policy == "normal_value" and not expected.recorded and answers(test, entry)


def check_technician(case: Case, test: str, reply: str, synthesised: Mapping[str, Any] | None = None) -> TechnicianCheck:
    """The pre-check of ``reply`` to an order for ``test`` in ``case``; ``synthesised``:
    the ``synthesised_result`` event of that turn, if the log has one."""
    expected = tuple(p for p, _ in match_order(case, test))
    if synthesised is not None:
        text = str(synthesised.get("text") or reply)
        ok = plausible_synthesis(test, text, case.demographics, case_records(case), case_story(case))
        return TechnicianCheck(test, "synthesised", ok, bool(expected), (), expected,
                               "marked as synthesised" + ("" if ok else ": implausible for this test")
                               + ("; the case holds a record of it" if expected else ""))
    quoted = _quoted(case, reply)
    if quoted:
        good_values = {normalise_line(v) for p, v in case_records(case) if p in expected}
        wrong = [p for p, v in quoted if p not in expected and normalise_line(v) not in good_values]
        if wrong:
            return TechnicianCheck(test, "wrong_record", None, False, tuple(p for p, _ in quoted), expected,
                                   f"reports {wrong[0]}, a record of another test")
        return TechnicianCheck(test, "from_case", None, False, tuple(p for p, _ in quoted), expected,
                               "reports the records of the order")
    # the order's records hold only short values ("Pending", "Positive"): a reply giving
    # just those values reports them (the quote rule above needs a value of 8 letters or more)
    own = {normalise_line(v) for p, v in case_records(case) if p in expected}
    low = normalise_line(reply)
    if own and all(v and len(v) < 8 and re.search(rf"\b{re.escape(v)}\b", low) for v in own):
        return TechnicianCheck(test, "from_case", None, False, expected, expected,
                               "reports the order's records (short values)")
    record_numbers = frozenset().union(*(_numbers(v) for _, v in case_records(case)))
    invented = sorted(_numbers(reply) - record_numbers - _numbers(test))
    if invented:
        return TechnicianCheck(test, "unmarked", None, False, (), expected,
                               f"values no record holds ({', '.join(invented[:4])}), not marked as synthesised")
    if _NOT_AVAILABLE.search(reply):
        return TechnicianCheck(test, "not_available", None, False, (), expected, "no result given")
    return TechnicianCheck(test, None, None, False, (), expected, "quotes no record: needs the checker")
