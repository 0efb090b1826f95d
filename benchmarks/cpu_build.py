"""What llama.cpp's CPU build costs: the same logged calls replayed greedy through two
builds of llama-cpp-python (this checkout's code on both sides), each in a process of its
own, so every call is the same prompt on the same code and only the build differs.

    .venv/bin/python benchmarks/cpu_build.py --build A=DIR --build B=DIR [--tree A=CHECKOUT] [LOG.jsonl ...] [--rounds 2]

A build is a folder holding a ``llama_cpp`` package (``pip install --no-deps --target DIR
llama-cpp-python==0.3.16`` with the build's ``CMAKE_ARGS``); ``venv`` names the one this
interpreter imports. ``--tree NAME=CHECKOUT`` replays that build's side with another
checkout's code (an older medsim, whose ``LlamaCppLLM`` takes the same calls): the same
prompts through the old code on the old build against this code on this build, which is
"seconds per doctor call at identical greedy replies" across a change. Without logs it first runs ``medsim consult --cases demo --case
demo-007 --llm local --max-turns 6`` greedy with the first build and replays its calls.

Prints, per build: its instruction sets (``llama_print_system_info``), prompt and
generation speed (tokens/s, one 512-token prompt, 64 generated), and per role the calls'
seconds; then the seconds per doctor call over the calls both builds answered alike (the
first doctor call, which evaluates the system prompt, apart), and how many replies differ.
A reply that differs is a near tie the builds' kernels round otherwise (their sums run
in other orders), not a decoding difference: each build gives the same reply every time.
The calls replay in their logged order in one pool, so a role's prompt reuse is the
consultation's. Rounds alternate the builds' order; each call's figure is its fastest.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from laptop_cost import SPEEDS  # the speed probe, beside this script

HERE = Path(__file__).resolve().parents[1]
GREEDY = "".join(f"[roles.{r}]\ntemperature = 0.0\n" for r in ("doctor", "patient", "measurement", "judge"))

_CHILD = SPEEDS + r'''
import json, sys
import llama_cpp
from agents.events import read_events
from agents.llm.base import CallContext, GenerateParams, Message
from agents.llm.llamacpp import LlamaCppLLM, LlamaPool
from agents.llm.local_model import embedded_model_path

path = str(embedded_model_path().resolve())
out = {"system": llama_cpp.llama_print_system_info().decode().strip(), "calls": [], **speeds(path)}
llm = LlamaCppLLM(path, LlamaPool(), label="local")
calls = [e for f in sys.argv[1:] for e in read_events(f) if e.get("type") == "llm_call"]
for e in calls:
    p = e["params"]
    params = GenerateParams(temperature=0.0, max_tokens=p.get("max_tokens", 256), seed=p.get("seed", 0), timeout_s=600.0,
                            response_schema=p.get("response_schema"), stop=tuple(p.get("stop") or ()))
    o = llm.generate([Message(m["role"], m["content"]) for m in e["messages"]], params,
                     CallContext(e["role"], e.get("case_id") or "replay", e.get("turn", 0)))
    out["calls"].append({"role": e["role"], "s": o.latency_s, "text": o.text, "completion": o.completion_tokens,
                         "evaluated": getattr(o, "prompt_tokens_evaluated", None)})
    print(f"  {e['role']:<12}{o.latency_s:7.2f} s", file=sys.stderr, flush=True)
print("RESULT " + json.dumps(out))
'''


TREES: dict[str, Path] = {}  # a build's name -> the checkout whose code replays it (--tree)


def _env(site: str, tree: Path = HERE) -> dict[str, str]:
    parts = [str(tree)] if site == "venv" else [str(Path(site).resolve()), str(tree)]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(parts), MEDSIM_PROMPT_CACHE="off", HF_HUB_OFFLINE="1")


def _consult_log(site: str, work: Path) -> Path:
    config, log = work / "greedy.toml", work / "consult.jsonl"
    config.write_text(GREEDY, encoding="utf-8")
    subprocess.run([sys.executable, "-m", "medsim", "consult", "--cases", "demo", "--case", "demo-007", "--llm", "local",
                    "--max-turns", "6", "--config", str(config), "--log", str(log)], cwd=HERE, check=True,
                   env=_env(site), stdout=subprocess.DEVNULL)
    return log


def _replay(name: str, site: str, logs: list[Path]) -> dict:
    tree = TREES.get(name, HERE)
    p = subprocess.run([sys.executable, "-c", _CHILD, *map(str, logs)], cwd=tree, env=_env(site, tree),
                       stdout=subprocess.PIPE, text=True)
    if p.returncode:
        raise SystemExit(f"the replay with {site} failed ({p.returncode})")
    return json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")][-1][7:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="*", type=Path, help="event logs whose llm_call events are replayed")
    ap.add_argument("--build", action="append", required=True, metavar="NAME=DIR",
                    help="a build: a folder with a llama_cpp package, or 'venv' (twice)")
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=CHECKOUT",
                    help="replay build NAME with this checkout's code (default: this one)")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    builds = [tuple(b.split("=", 1)) for b in args.build]
    if len(builds) != 2 or any(len(b) != 2 for b in builds):
        ap.error("--build NAME=DIR, twice")
    for t in args.tree:
        name, _, tree = t.partition("=")
        if name not in dict(builds) or not tree:
            ap.error(f"--tree {t}: NAME=CHECKOUT, NAME one of the builds")
        TREES[name] = Path(tree).resolve()
    logs = args.logs or [_consult_log(builds[0][1], Path(tempfile.mkdtemp(prefix="cpu-build-")))]
    runs: dict[str, list[dict]] = {name: [] for name, _ in builds}
    for r in range(args.rounds):
        for name, site in (builds if r % 2 == 0 else builds[::-1]):
            print(f"round {r + 1}: {name} ...", file=sys.stderr, flush=True)
            runs[name].append(_replay(name, site, logs))
    (a, _), (b, _) = builds
    best = {n: [min(run["calls"][i]["s"] for run in rs) for i in range(len(rs[0]["calls"]))] for n, rs in runs.items()}
    calls = {n: rs[0]["calls"] for n, rs in runs.items()}
    stable = {n: all(run["calls"][i]["text"] == rs[0]["calls"][i]["text"] for run in rs for i in range(len(rs[0]["calls"])))
              for n, rs in runs.items()}
    print(f"\n{len(calls[a])} calls from {', '.join(map(str, logs))}; embedded model, greedy, {os.cpu_count()} cores, "
          f"{args.rounds} rounds")
    for n, rs in runs.items():
        print(f"{n}: {TREES.get(n, HERE)}; {rs[0]['system']}")
    w = 46
    print(f"\n{'':<{w}}{a:>14}{b:>14}{'ratio':>8}")

    def row(label, fa, fb, fmt="{:.2f}"):
        print(f"{label:<{w}}{fmt.format(fa):>14}{fmt.format(fb):>14}{fb / fa if fa else float('nan'):>8.2f}")

    row("prompt speed (tokens/s)", max(r["prompt_tps"] for r in runs[a]), max(r["prompt_tps"] for r in runs[b]), "{:.1f}")
    row("generation speed (tokens/s)", max(r["gen_tps"] for r in runs[a]), max(r["gen_tps"] for r in runs[b]), "{:.1f}")
    for role in dict.fromkeys(c["role"] for c in calls[a]):
        idx = [i for i, c in enumerate(calls[a]) if c["role"] == role]
        row(f"{role}: {len(idx)} calls (s)", sum(best[a][i] for i in idx), sum(best[b][i] for i in idx), "{:.1f}")
    row("all calls (s)", sum(best[a]), sum(best[b]), "{:.1f}")
    same = [i for i in range(len(calls[a])) if calls[a][i]["text"] == calls[b][i]["text"]]
    doctor = [i for i, c in enumerate(calls[a]) if c["role"] == "doctor"]
    later = [i for i in doctor[1:] if i in same]
    if doctor and doctor[0] in same:
        row("first doctor call (s)", best[a][doctor[0]], best[b][doctor[0]])
    if later:
        row(f"later doctor calls answered alike: {len(later)} (s each)",
            statistics.mean(best[a][i] for i in later), statistics.mean(best[b][i] for i in later))
    alike = [i for i in doctor if i in same]
    if alike:
        row(f"every doctor call answered alike: {len(alike)} (s each)",
            statistics.mean(best[a][i] for i in alike), statistics.mean(best[b][i] for i in alike))
    print(f"\nreplies that differ between the builds: {len(calls[a]) - len(same)} of {len(calls[a])} "
          f"(doctor {sum(i not in same for i in doctor)} of {len(doctor)}); each build the same in every round: "
          + ", ".join(f"{n} {'yes' if s else 'NO'}" for n, s in stable.items()))


if __name__ == "__main__":
    main()
