"""``medsim fidelity --pairs FILE|shipped``: how far the simulator-fidelity checker agrees
with a labelled set (:mod:`agents.fidelity.pairs`): the pre-check alone, and with a
checker model (``--judge-llm``) deciding what the pre-check leaves open; per label the
agreement, false positives and false negatives."""
from __future__ import annotations

import argparse
import json
import logging
from typing import Any, Mapping

from agents.fidelity.checker import Checker
from agents.fidelity.pairs import PairsError, evaluate, format_evaluation, load_pairs, shipped_pairs
from agents.llm.calls import RetryPolicy
from agents.llm.llamacpp import LlamaPool
from agents.textsafe import printable
from medsim.assemble import Backends, preflight_roles, role_params
from medsim.spec import RoleSpec

__all__ = ["add_fidelity_parser", "run_fidelity_command"]

logger = logging.getLogger(__name__)


def _checker(table: Mapping[str, Any], pool: LlamaPool) -> Checker:
    d = {k: v for k, v in table.items() if v is not None}
    role = RoleSpec.parse("judge", d, llm=d.pop("backend"), model=d.pop("model", None))
    llm = Backends({}, pool).get("judge", role, 0)
    preflight_roles({"judge": role})
    checker = Checker(llm, role_params("judge", role, 0), RetryPolicy(retries=role.retries, backoff_s=role.backoff_s))
    checker.name = role.describe()
    return checker


def add_fidelity_parser(sub: Any) -> argparse.ArgumentParser:
    """``medsim fidelity``'s arguments (added to the CLI's subcommands)."""
    f = sub.add_parser("fidelity", help="check the simulator-fidelity checker against a labelled set")
    f.add_argument("--pairs", required=True, help="JSONL of labelled patient and technician replies; 'shipped' for "
                                                  "medsim's own set (required, no default)")
    f.add_argument("--judge-llm", default=None, help="the checker model's backend (default: the pre-check alone)")
    f.add_argument("--judge-model", default=None, help="the checker's model name, openai: backends (default: none)")
    f.add_argument("--timeout", type=float, default=None, help="whole-call timeout, seconds (default 120)")
    f.add_argument("--split", choices=("all", "tuning", "held_out"), default="all",
                   help="which part of the set (default: all; held_out: what the pre-check was not tuned on)")
    f.add_argument("--show", choices=("errors", "none"), default="errors", help="list the disagreements (default)")
    f.add_argument("--json", default=None, metavar="FILE",
                   help="also write the figures and every row as JSON (default: none)")
    return f


def run_fidelity_command(args: argparse.Namespace, judge: Mapping[str, Any] | None = None) -> int:
    """``medsim fidelity``; ``judge``: the checker model's role table, or None (the
    pre-check alone)."""
    try:
        items = shipped_pairs() if args.pairs == "shipped" else load_pairs(args.pairs)
    except PairsError as e:
        logger.error("%s", e)
        return 2
    if args.split != "all":
        items = [i for i in items if i.split == args.split]
    where = f"{args.pairs} ({len(items)} labelled replies{'' if args.split == 'all' else ', ' + args.split})"
    runs = [evaluate(items)]
    pool = LlamaPool()
    try:
        if judge:
            from medsim.progress import Progress

            checker = _checker(judge, pool)
            bar = Progress(len(items), unit="reply")
            try:
                runs.append(evaluate(items, checker, on_item=bar.update))
            finally:
                bar.close()
    finally:
        pool.close()
    for ev in runs:
        text = format_evaluation(ev, title=f"{ev.checker} on {where}")
        if args.show == "none":
            text = text.split("\ndisagreements:")[0]
        print(printable(text) + "\n")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump([{**ev.to_dict(), "rows": ev.rows} for ev in runs], fh, ensure_ascii=True, indent=1)
    return 0
