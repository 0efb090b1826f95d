"""``medsim judge``: the diagnosis judge on one (truth, diagnosis) pair or a labelled
JSONL set, with the pre-check alone or with a model judge; where labels exist, the
agreement, false positives and false negatives."""
from __future__ import annotations

import argparse
import json
import logging
from typing import Any, Callable, Mapping

from agents.events import ListSink
from agents.judge import Verdict, judge_diagnosis, precheck
from agents.judge_eval import evaluate, format_evaluation, load_pairs, shipped_pairs
from agents.llm.calls import RetryPolicy
from agents.llm.llamacpp import LlamaPool
from agents.textsafe import printable
from medsim.assemble import Backends, preflight_roles, role_params
from medsim.spec import RoleSpec

__all__ = ["run_judge_command"]

logger = logging.getLogger(__name__)


def _judge_fn(table: Mapping[str, Any] | None, pool: LlamaPool) -> tuple[Callable[[str, str], Verdict], str]:
    if not table:
        return precheck, "pre-check alone"
    d = {k: v for k, v in table.items() if v is not None}
    role = RoleSpec.parse("judge", d, llm=d.pop("backend"), model=d.pop("model", None))
    llm = Backends({}, pool).get("judge", role, 0)
    preflight_roles({"judge": role})
    params = role_params("judge", role, 0)
    policy = RetryPolicy(retries=role.retries, backoff_s=role.backoff_s)

    def fn(diagnosis: str, truth: str) -> Verdict:
        return judge_diagnosis(diagnosis, truth, llm=llm, params=params, case_id="judge", turn=0, sink=ListSink(),
                               policy=policy)
    return fn, f"pre-check + {role.describe()}"


def run_judge_command(args: argparse.Namespace, judge: Mapping[str, Any] | None = None) -> int:
    """``medsim judge``; ``judge``: the model judge's role table (backend, model,
    timeout_s, retries), or None for the pre-check alone."""
    one = args.truth is not None or args.diagnosis is not None
    if one == (args.pairs is not None):
        logger.error("give --truth and --diagnosis, or --pairs FILE (or --pairs shipped)")
        return 2
    if one and (not args.truth or not args.diagnosis):
        logger.error("--truth and --diagnosis go together, both non-empty")
        return 2
    pool = LlamaPool()
    try:
        fn, name = _judge_fn(judge, pool)
        if one:
            v = fn(args.diagnosis, args.truth)
            said = {True: "RIGHT", False: "WRONG", None: "UNDECIDED"}[v.correct]
            print(printable(f"{said} ({name}: {v.method}/{v.rule}): {v.rationale}"))
            if v.correct is None:
                logger.warning("the pre-check cannot decide this pair; pass --judge-llm SPEC to ask a model")
            return 0
        pairs = shipped_pairs() if args.pairs == "shipped" else load_pairs(args.pairs)
        bar = None
        if args.judge_llm:  # a model judge takes a while: a bar on a terminal, log lines elsewhere
            from medsim.progress import Progress

            bar = Progress(len(pairs), unit="pair")

        def counted(diagnosis: str, truth: str) -> Verdict:
            v = fn(diagnosis, truth)
            if bar is not None:
                bar.update()
            return v
        try:
            ev = evaluate(pairs, counted)
        finally:
            if bar is not None:
                bar.close()
        text = format_evaluation(ev, title=f"{name} on {args.pairs} ({len(pairs)} pairs)")
        if args.show == "none":
            text = text.split("\ndisagreements:")[0]
        print(printable(text))
        if args.show == "all":
            for row in ev.rows():  # ASCII JSON: no character of a pair reaches the terminal raw
                print(json.dumps(row, ensure_ascii=True))
        return 0
    finally:
        pool.close()
