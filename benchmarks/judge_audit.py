"""What the diagnosis judge decided in finished runs, for a person to check: every distinct
(answer, key) pair it judged, by who decided (the deterministic pre-check or the model) and
the verdict, and a list of the "right" verdicts the model gave (where its errors hide: in
issue 22's five bench runs, 9 of the 27 pairs judged right were wrong on reading, all of
them the model's).

    .venv/bin/python benchmarks/judge_audit.py RUN_DIR [RUN_DIR ...] [--all] [--template FILE] [--labels FILE]

A run directory may be a re-scoring (``RUN/scores/LABEL``, written by ``medsim score``).
``--template FILE`` writes the model's pairs as JSONL for labelling (``"label": null``; fill
in true or false); ``--labels FILE`` reads such a file back (rows with a boolean label) and
prints the judge's agreement with it: the share of its "right" verdicts that are right
(precision) and of the labelled-right pairs it called right (recall), each with n and a
Wilson 95% interval, then every disagreement. Labels of pairs from third-party cases stay
out of the repository.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.events import read_events  # noqa: E402
from agents.stats import wilson_interval  # noqa: E402


class AuditError(ValueError):
    pass


def judged_pairs(run_dirs: list[Path]) -> tuple[dict[tuple[str, str], dict], set[str]]:
    """Each distinct (diagnosis, truth) pair the judge decided in the runs' event logs:
    its verdict, method, rule and reason (the last decision logged), and the runs and
    times it was met; and the judges the runs' diagnosis scorer names."""
    pairs: dict[tuple[str, str], dict] = {}
    judges: set[str] = set()
    for run in run_dirs:
        events = run / "events"
        if not events.is_dir():
            raise AuditError(f"{run}: no events folder (not a run directory, nor a re-scoring)")
        for path in sorted(events.glob("*.jsonl")):
            for e in read_events(path):
                if e.get("type") == "scored" and e.get("scorer") == "diagnosis":
                    judges.add(str((e.get("details") or {}).get("judge") or "?"))
                if e.get("type") != "judge" or not e.get("diagnosis"):
                    continue
                key = (e["diagnosis"], e["truth"])
                row = pairs.setdefault(key, {"diagnosis": key[0], "truth": key[1], "times": 0, "runs": set()})
                row.update(correct=bool(e.get("correct")), method=e.get("method", "?"), rule=e.get("rule", ""),
                           rationale=" ".join(str(e.get("rationale", "")).split()))
                row["times"] += 1
                row["runs"].add(run.name if run.parent.name != "scores" else f"{run.parent.parent.name}/{run.name}")
    return pairs, judges


def read_labels(path: Path) -> dict[tuple[str, str], bool]:
    labels: dict[tuple[str, str], bool] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            label, key = row.get("label"), (row["diagnosis"], row["truth"])
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise AuditError(f"{path}:{n}: not a {{\"diagnosis\", \"truth\", \"label\"}} object ({e})") from None
        if label is None:
            continue  # not labelled yet
        if not isinstance(label, bool):
            raise AuditError(f"{path}:{n}: 'label' must be true, false or null, got {label!r}")
        labels[key] = label
    return labels


def _rate(k: int, n: int) -> str:
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} = {k / n:.3f} ({lo:.3f}-{hi:.3f})" if n else "n/a (n=0)"


def agreement(pairs: dict[tuple[str, str], dict], labels: dict[tuple[str, str], bool]) -> dict:
    """The judge against the labels, on the pairs both hold."""
    both = [(pairs[k], labels[k]) for k in pairs if k in labels]
    said_right = [lab for p, lab in both if p["correct"]]
    truly_right = [p["correct"] for p, lab in both if lab]
    return {"n": len(both), "agree": sum(p["correct"] == lab for p, lab in both),
            "precision": (sum(said_right), len(said_right)), "recall": (sum(truly_right), len(truly_right)),
            "disagreements": [p for p, lab in both if p["correct"] != lab]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR")
    ap.add_argument("--all", action="store_true", help="list every pair judged right, the pre-check's too")
    ap.add_argument("--template", type=Path, help="write the model's pairs as JSONL to label")
    ap.add_argument("--labels", type=Path, help="a labelled JSONL file: the judge's agreement with it")
    a = ap.parse_args(argv)
    try:
        pairs, judges = judged_pairs(a.runs)
        labels = read_labels(a.labels) if a.labels else None
    except (AuditError, OSError) as e:
        print(f"judge_audit: {e}", file=sys.stderr)
        return 2
    print(f"{len(pairs)} distinct (answer, key) pairs judged in {len(a.runs)} run(s); judge: "
          f"{', '.join(sorted(judges)) or 'not named in the logs'}")
    by = Counter((p["method"], p["correct"]) for p in pairs.values())
    for method in sorted({m for m, _ in by}):
        print(f"  {method:9} right {by[(method, True)]:5}   wrong {by[(method, False)]:5}")
    listed = [p for p in pairs.values() if p["correct"] and (a.all or p["method"] != "precheck")]
    print(f"\njudged right{'' if a.all else ' by the model'} ({len(listed)}): read these")
    for p in sorted(listed, key=lambda p: (p["truth"].lower(), p["diagnosis"].lower())):
        print(f"  {p['diagnosis'][:70]!r} for {p['truth'][:50]!r} [{p['method']}/{p['rule']}; "
              f"{p['times']}x in {', '.join(sorted(p['runs']))}]: {p['rationale'][:160]}")
    if a.template:
        model = [p for p in pairs.values() if p["method"] != "precheck"]
        with a.template.open("w", encoding="utf-8") as f:
            for p in sorted(model, key=lambda p: (not p["correct"], p["truth"].lower(), p["diagnosis"].lower())):
                f.write(json.dumps({"truth": p["truth"], "diagnosis": p["diagnosis"], "label": None,
                                    "judged": p["correct"], "rule": p["rule"]}, ensure_ascii=False) + "\n")
        print(f"\n{len(model)} pairs the model decided written to {a.template} (label: null; fill in true/false)")
    if labels is not None:
        ag = agreement(pairs, labels)
        print(f"\nagainst {a.labels} ({len(labels)} labelled, {ag['n']} of them judged in these runs)")
        print(f"  agreement            {_rate(ag['agree'], ag['n'])}")
        print(f"  precision of 'right' {_rate(*ag['precision'])}")
        print(f"  recall of 'right'    {_rate(*ag['recall'])}")
        for p in ag["disagreements"]:
            print(f"  [{'false_positive' if p['correct'] else 'false_negative'}] {p['diagnosis'][:70]!r} for "
                  f"{p['truth'][:50]!r} ({p['method']}/{p['rule']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
