"""The focused doctor's diagnosis again, on the records it gathered, as today's code makes it.

The focused doctor diagnoses in a call of its own from a summarised record
(``agents/prompts/focused_final.txt``), then orders the answer
(:func:`agents.participants.focused.demote_known`: a condition the patient said they
already have goes last). This script takes a finished focused run and, for each case:

- reads what its doctor learned from the log (the questions and orders routed, each with
  its reply: :func:`~agents.participants.focused.learned_from_events`) and renders it as
  today's doctor does (:func:`~agents.participants.focused.record_vignette`);
  ``--logged-record``: the logged call's record, with today's instruction in place of the
  logged one;
- asks the embedded model again with the logged parameters (temperature, seed, schema);
- orders the answer as today's doctor does (:func:`~agents.participants.focused.final_order`:
  pooled with the last running differential the log holds, the conditions a result
  concludes first, the known conditions last);
- judges it and the run's own final differential (the log's ``differential`` event) with
  one judge (the pre-check, then the embedded model; a verdict is asked once per name).

It prints top-1 and top-5 before and after on the same records, paired (Bonett-Price
intervals, McNemar's exact p). ``--logged``: no model call; today's pooling and ordering of
the logged answer. The consultation before the diagnosis call does not read the record's
rendering, so what the doctor gathered is held fixed and the figures are the diagnosis's alone.

    .venv/bin/python benchmarks/focused_final_replay.py RUN_DIR [--limit N] [--logged | --logged-record]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.events import ListSink, read_events  # noqa: E402
from agents.judge import JudgeUnparsed, judge_diagnosis  # noqa: E402
from agents.llm.base import CallContext, GenerateParams, Message  # noqa: E402
from agents.llm.llamacpp import LlamaCppLLM, LlamaPool  # noqa: E402
from agents.llm.local_model import embedded_model_path  # noqa: E402
from agents.cases.registry import load_cases  # noqa: E402
from agents.participants.focused import (CHECKLIST, FocusedConfig, final_order, final_schema,  # noqa: E402
                                         learned_from_events, ranked, record_vignette, reply_json)
from agents.prompts import template_text  # noqa: E402
from agents.stats import mcnemar_exact, paired_difference_interval, wilson_interval  # noqa: E402

_MARK = "\nReply with JSON"


def _final_call(events: list[dict]) -> dict | None:
    """The doctor's diagnosis call: the one asked for the final differential's schema (as
    the focused doctor writes it)."""
    final = json.dumps(final_schema(FocusedConfig().final), sort_keys=True)
    calls = [e for e in events if e.get("type") == "llm_call" and e.get("role") == "doctor"
             and (e.get("params") or {}).get("response_schema") == final]
    return calls[-1] if calls else None


def _known(events: list[dict]) -> str:
    """What the patient answered to the checklist's question about conditions and medicines."""
    turns = {e.get("turn") for e in events if e.get("type") == "utterance" and e.get("speaker") == "doctor"
             and e.get("text") == CHECKLIST[3]}
    return " ".join(str(e.get("text") or "") for e in events if e.get("type") == "utterance"
                    and e.get("speaker") == "patient" and e.get("turn") in turns)


def _working(events: list[dict]) -> list[tuple[str, float | None]]:
    """The last running differential the doctor logged (``differential`` with final false)."""
    work = [e for e in events if e.get("type") == "differential" and not e.get("final")]
    return [(i["diagnosis"], i.get("confidence")) for i in work[-1]["items"]] if work else []


def _instruction() -> str:
    text = template_text("focused_final")
    return text[text.index(_MARK):]


def _rank(items: list[str], truth: str, judge) -> int | None:
    """The rank of the first item the judge calls right (None: none)."""
    for i, dx in enumerate(items, 1):
        if judge(dx, truth):
            return i
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--logged", action="store_true", help="no model call: today's ordering of the logged answer")
    ap.add_argument("--logged-record", action="store_true",
                    help="the logged call's record with today's instruction (default: the record rendered as today's "
                         "doctor renders it)")
    args = ap.parse_args()
    run = json.loads((args.run / "run.json").read_text())
    cases = {c.id: c for c in load_cases(run["spec"]["cases"], skip_invalid=True)[0]}
    rows = [json.loads(x) for x in (args.run / "results.jsonl").read_text().splitlines() if x.strip()]
    rows = [r for r in rows if r.get("status") == "diagnosed"][: args.limit]
    pool = LlamaPool()
    llm = LlamaCppLLM(embedded_model_path(), pool, label="local")
    judge_params = GenerateParams(temperature=0.0, max_tokens=60)
    sink = ListSink()

    verdicts: dict[tuple[str, str], bool] = {}

    def judge(dx: str, truth: str) -> bool:
        if (dx, truth) not in verdicts:
            try:
                verdicts[dx, truth] = bool(judge_diagnosis(dx, truth, llm=llm, params=judge_params, case_id="replay",
                                                           turn=0, sink=sink, reply_format="json").correct)
            except JudgeUnparsed:
                verdicts[dx, truth] = False
        return verdicts[dx, truth]

    new_tail = _instruction()
    pairs: list[tuple[int | None, int | None]] = []
    t0 = time.perf_counter()
    try:
        for r in rows:
            log = next((args.run / "events").glob(f"{r['case_id']}-*.jsonl"), None)
            events = read_events(log) if log else []
            call = _final_call(events)
            if call is None:
                continue
            prompt = call["messages"][-1]["content"]
            if _MARK not in prompt:
                continue
            logged = ranked(reply_json(call["output"]), 5)
            learned = learned_from_events(events)
            reported = [e for e in events if e.get("type") == "differential" and e.get("final")]
            before = [i["diagnosis"] for i in reported[-1]["items"]] if reported else [d for d, _ in logged]
            if args.logged:
                answer = logged
            else:
                p = call["params"]
                params = GenerateParams(temperature=p["temperature"], max_tokens=p["max_tokens"],
                                        seed=p.get("seed", 0), response_schema=p["response_schema"])
                if args.logged_record:
                    prompt = prompt[:prompt.index(_MARK)] + new_tail
                else:
                    prompt = record_vignette(cases[r["case_id"]], learned)
                out = llm.generate([Message("user", prompt)], params, CallContext("doctor", r["case_id"], 0))
                answer = ranked(reply_json(out.text), 5)
            truth = r["truth"]
            after = [d for d, _ in final_order(answer, _working(events), _known(events), learned)]
            pairs.append((_rank(before, truth, judge), _rank(after, truth, judge)))
            print(f"{r['case_id']}: truth {truth!r}\n  before {before} -> rank {pairs[-1][0]}\n"
                  f"  after  {after} -> rank {pairs[-1][1]}", flush=True)
    finally:
        pool.close()
    n = len(pairs)
    print(f"\n{n} cases, {time.perf_counter() - t0:.0f} s; judge: pre-check + {llm.name}")
    for k in (1, 5):
        a = [b is not None and b <= k for b, _ in pairs]
        b = [x is not None and x <= k for _, x in pairs]
        both = sum(x and y for x, y in zip(a, b))
        only_a = sum(x and not y for x, y in zip(a, b))
        only_b = sum(y and not x for x, y in zip(a, b))
        lo, hi = paired_difference_interval(both, only_a, only_b, n - both - only_a - only_b)
        wa, wb = wilson_interval(sum(a), n), wilson_interval(sum(b), n)
        print(f"top-{k}: before {sum(a)}/{n} ({wa[0]:.0%}-{wa[1]:.0%}), after {sum(b)}/{n} ({wb[0]:.0%}-{wb[1]:.0%}); "
              f"difference {(sum(b) - sum(a)) / n:+.1%} (95% CI {lo:+.1%} to {hi:+.1%}), "
              f"discordant {only_a} before only / {only_b} after only, McNemar p {mcnemar_exact(only_a, only_b):.2f}")


if __name__ == "__main__":
    main()
