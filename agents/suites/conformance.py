"""``check_suite``: what a registration owes the run loop, checked without running it
(the run loop's own test runs each shipped suite end to end; see tests/medsim/).

It checks the name and the run-spec section, that every role the suite names is
registered, that each flag (:class:`~agents.suites.contract.Option`) sets a key its section
takes and that the section's defaults survive a round trip through ``options_dict``, that
the parts a suite must provide are provided, and that a cell which ended in an error (the
log every suite can be handed: a header, ``case_error``, ``consultation_ended``) gives a
row with the fields every report reads, and a summary that counts it.
"""
from __future__ import annotations

from typing import Any

from agents.roles import role_names
from agents.settings import SpecError
from agents.suites.contract import Suite, Unit

__all__ = ["check_suite", "SuiteConformanceError", "ROW_FIELDS", "SUMMARY_FIELDS"]

# what the run loop, results.csv, report.html and `medsim compare` read of every row
ROW_FIELDS = ("case_id", "seed", "condition", "status", "error", "turns", "llm_calls", "prompt_tokens",
              "completion_tokens", "wall_s", "events")
SUMMARY_FIELDS = ("cases", "errors")
REQUIRED = ("load", "engine", "scorers", "row", "summary")


class SuiteConformanceError(AssertionError):
    """What a suite's registration got wrong (every problem found)."""


def _error_log(unit: Unit) -> list[dict[str, Any]]:
    return [{"type": "header", "case_id": unit.id, "seed": 0, "condition": "base"},
            {"type": "case_error", "turn": 0, "error": "internal error: a check"},
            {"type": "consultation_ended", "status": "error", "turns": 0, "diagnosis": None, "tests_requested": [],
             "error": "internal error: a check", "failure": None}]


def check_suite(suite: Suite, unit: Unit) -> None:
    """Raise :class:`SuiteConformanceError` listing every problem of ``suite``'s
    registration. ``unit``: one of its units (from ``suite.load(spec)``), for the row of
    an errored cell."""
    problems: list[str] = []
    if not suite.name or not all(ch.isalnum() or ch in "-_" for ch in suite.name):
        problems.append(f"name {suite.name!r}: letters, digits, '-' and '_'")
    missing = [m for m in REQUIRED if getattr(type(suite), m) is getattr(Suite, m)]
    if missing:
        problems.append(f"does not provide {', '.join(missing)}")
    unknown = [r for r in suite.role_names() if r not in role_names()]
    if unknown:
        problems.append(f"roles {', '.join(unknown)} are not registered (agents.roles.register_role)")
    if suite.options and not suite.section:
        problems.append("has flags (options) but no section of the run spec to set")
    for o in suite.options:
        if not o.flag.startswith("--") or " " in o.flag:
            problems.append(f"flag {o.flag!r}: a long option, '--name'")
    try:
        opts = suite.parse_options({}, seeds=(0,))
        again = suite.parse_options(suite.options_dict(opts), seeds=(0,)) if suite.section else opts
        if suite.options_dict(again) != suite.options_dict(opts):
            problems.append("options_dict does not round-trip through parse_options")
        defaults = suite.options_dict(opts)
        for o in suite.options:  # a flag's key is one its section takes (a value may still be refused)
            value = defaults.get(o.key, o.value if o.type is bool else o.type())
            try:
                suite.parse_options({o.key: value}, seeds=(0,))
            except SpecError as e:
                if "unknown key" in str(e):
                    problems.append(f"flag {o.flag} sets {suite.section}.{o.key}, a key its section does not take")
        try:
            suite.parse_options({"no_such_key_here": 1}, seeds=(0,))
            problems.append("its section takes a key it does not know (misspelt keys must be errors)")
        except SpecError:
            pass
    except SpecError as e:
        problems.append(f"its section's defaults are refused: {e}")
    u = unit
    try:
        row = suite.row(u, _error_log(u), seed=0, condition="base", events_file="events/x.jsonl", wall_s=0.0)
        lacking = [f for f in ROW_FIELDS if f not in row]
        if lacking:
            problems.append(f"its row lacks {', '.join(lacking)}")
        if row.get("status") != "error" or not row.get("error"):
            problems.append("a cell that ended in an error is not an error row")
        summary = suite.summary([row])
        lacking = [f for f in SUMMARY_FIELDS if f not in summary]
        if lacking:
            problems.append(f"its summary lacks {', '.join(lacking)}")
        elif summary["cases"] != 1 or summary["errors"] != 1:
            problems.append(f"its summary of one errored cell says {summary['cases']} cells, {summary['errors']} errors")
        if not isinstance(suite.headline(summary), str):
            problems.append("headline is not a line of text")
    except Exception as e:  # noqa: BLE001 - the finding
        problems.append(f"its row or summary of an errored cell raised {type(e).__name__}: {e}")
    if problems:
        raise SuiteConformanceError(f"suite {suite.name}: " + "; ".join(problems))
