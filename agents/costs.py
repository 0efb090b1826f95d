"""What a diagnosis costs (SDBench scores accuracy and cost together): a price table
(``agents/costs.toml``, data with its source stated, editable), the price of an order,
and the cost of a finished consultation from its events."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Sequence

from agents.findings import tokens
from agents.orders import order_tests

__all__ = ["PriceTable", "price_table", "case_cost"]


@dataclass(frozen=True)
class PriceTable:
    tests: Mapping[str, float]
    visit: float = 300.0
    question: float = 0.0
    free_questions: int = 0
    other_test: float = 100.0
    currency: str = "USD"
    _by_words: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_words", {frozenset(tokens(k)): k for k in self.tests})

    def test_price(self, test: str) -> tuple[float, str]:
        """(price, the table entry it was priced as: a name, or "other")."""
        low = test.lower().strip()
        for name, price in self.tests.items():
            if name.lower() == low:
                return price, name
        want = set(tokens(test))
        best, score = None, (0.0, 0.0)
        for ws, name in self._by_words.items():
            inter = len(ws & want)
            sc = (inter / max(1, min(len(ws), len(want))), inter / max(1, len(ws | want)))  # coverage, then Jaccard
            if sc > score:
                best, score = name, sc
        if best is not None and score[0] >= 0.5:
            return self.tests[best], best
        return self.other_test, "other"


def _load(text: str, source: str) -> PriceTable:
    try:
        d = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{source}: invalid TOML: {e}") from None
    except RecursionError:
        raise ValueError(f"{source}: invalid TOML: nested too deeply to parse") from None
    tests = d.get("tests") or {}
    v = d.get("visits") or {}
    bad = [k for k, p in tests.items() if isinstance(p, bool) or not isinstance(p, (int, float)) or p < 0]
    if bad:
        raise ValueError(f"{source}: tests.{bad[0]}: a price is a number >= 0")
    return PriceTable(tests={k: float(p) for k, p in tests.items()}, visit=float(v.get("visit", 300.0)),
                      question=float(v.get("question", 0.0)), free_questions=int(v.get("free_questions", 0)),
                      other_test=float(v.get("other_test", 100.0)), currency=str(d.get("currency", "USD")))


@lru_cache(maxsize=8)
def price_table(path: str | None = None) -> PriceTable:
    """The shipped table, or one from ``path``."""
    if path:
        return _load(Path(path).read_text(encoding="utf-8"), path)
    return _load(resources.files("agents").joinpath("costs.toml").read_text(encoding="utf-8"), "agents/costs.toml")


def case_cost(events: Sequence[Mapping[str, Any]], table: PriceTable | None = None) -> dict[str, Any]:
    """The consultation's cost from its events: the visit, questions, and each test done
    (an order refused for the budget costs nothing)."""
    t = table or price_table()
    refused = {(e["turn"], e["test"]) for e in events if e.get("type") in ("budget_refused", "test_refused")}
    tests = [(e["turn"], e["test"]) for e in events if e.get("type") == "test_requested"]
    questions = sum(1 for e in events if e.get("type") == "route" and e.get("route") == "patient")
    # an order of several tests ("CBC; chest X-ray") costs each of them
    test_cost = sum(t.test_price(part)[0] for turn, name in tests if (turn, name) not in refused
                    for part in order_tests(name))
    q_cost = max(0, questions - t.free_questions) * t.question
    started = any(e.get("type") == "case_started" for e in events)
    total = (t.visit if started else 0.0) + q_cost + test_cost
    return {"cost": round(total, 2), "cost_tests": round(test_cost, 2), "currency": t.currency}
