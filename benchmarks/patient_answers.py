"""The simulated patient's answers in finished runs, side by side: how often the guard asked
again and why, how often the case's facts had to stand in for the patient (the fallback),
and what today's checks make of the answers that reached the doctor (the fidelity
pre-check's verdict and voice; the guard's detectors: the instruction said back, "the fact
given ...", the patient as "you", a role break).

    .venv/bin/python benchmarks/patient_answers.py LABEL=RUN_DIR [LABEL=RUN_DIR ...]

To see a change to the patient alone, give it the same questions on both sides: the focused
doctor's first turns are its history checklist, asked without a model call, so

    medsim bench --cases FILE --limit 40 --llm local --doctor-llm scripted --judge-llm scripted \\
        --doctor-strategy focused --max-turns 6 --out runs/patient-after

(and the same from the other checkout) puts the same five questions to the embedded
patient in every case; only the patient's model is called. Every figure is per answer
that reached the doctor, with its n and a Wilson 95% interval; the checks are today's on
both sides, so a run made before a check existed is measured by it too.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.cases.registry import load_cases  # noqa: E402
from agents.events import read_events  # noqa: E402
from agents.fidelity.patient import check_patient  # noqa: E402
from agents.guards import check_reply  # noqa: E402
from agents.stats import wilson_interval  # noqa: E402
from medsim.compare import load_run  # noqa: E402


def _rate(k: int, n: int) -> str:
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} = {k / n:.1%} ({lo:.0%}-{hi:.0%})" if n else "n/a"


def measure(run) -> dict:
    cases = {c.id: c for c in load_cases(run.spec["cases"])[0]}
    base = run.path
    answers, rejected, fallbacks, calls = 0, Counter(), 0, 0
    verdicts, voices, detected = Counter(), Counter(), Counter()
    for r in run.rows:
        if not r.get("events") or r["case_id"] not in cases:
            continue
        case = cases[r["case_id"]]
        events = read_events(base / r["events"])
        asked = {}  # turn -> what the doctor said to the patient
        for e in events:
            t = e.get("type")
            if t == "utterance" and e.get("speaker") == "doctor" and e.get("addressee") == "patient":
                asked[e.get("turn")] = e.get("text", "")
            elif t == "llm_call" and e.get("role") == "patient":
                calls += 1
            elif t == "reply_rejected" and e.get("role") == "patient":
                rejected[e.get("problem")] += 1
            elif t == "fallback_reply" and e.get("role") == "patient":
                fallbacks += 1
            elif t == "utterance" and e.get("speaker") == "patient":
                answers += 1
                question, text = asked.get(e.get("turn"), ""), e.get("text", "")
                c = check_patient(case, question, text)
                verdicts[c.claim_verdict or "undecided"] += 1
                voices[c.voice or "undecided"] += 1
                problem = check_reply("patient", text, [], question)
                if problem:
                    detected[problem] += 1
    return {"answers": answers, "calls": calls, "rejected": rejected, "fallbacks": fallbacks, "verdicts": verdicts,
            "voices": voices, "detected": detected}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", metavar="LABEL=RUN_DIR")
    a = ap.parse_args()
    for arg in a.runs:
        label, _, path = arg.partition("=")
        run = load_run(path or label)
        m = measure(run)
        n = m["answers"]
        print(f"## {label if path else Path(label).name} ({run.path}; {len(run.rows)} cases)")
        print(f"- answers that reached the doctor: {n}; patient model calls: {m['calls']} "
              f"({m['calls'] / n:.2f} an answer)" if n else "- no patient answers")
        if not n:
            continue
        print(f"- asked again by the guard: {sum(m['rejected'].values())} times "
              f"({', '.join(f'{k} {v}' for k, v in m['rejected'].most_common()) or 'never'})")
        print(f"- the case's facts stood in for the patient (fallback): {_rate(m['fallbacks'], n)}")
        for v in ("supported", "contradicted", "unsupported", "no_claim", "undecided"):
            print(f"- today's pre-check, claims {v}: {_rate(m['verdicts'][v], n)}")
        print(f"- today's pre-check, voice not first person or caregiver's: "
              f"{_rate(m['voices']['third_person'] + m['voices']['not_caregiver'], n)}")
        for p in ("echo", "second_person", "role_break", "refusal"):
            print(f"- today's guard would ask again ({p}): {_rate(m['detected'][p], n)}")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
