"""What a consultation costs on this machine with the embedded model, for this checkout
and (``--before DIR``) another one, measured in one run, alternating, so the two share the
machine's state.

    .venv/bin/python benchmarks/laptop_cost.py [--before DIR [--before-site DIR]] [--cases 3] [--shift-s 120]

``--before-site`` is a folder put first on the before checkout's ``PYTHONPATH``: another
build of llama-cpp-python there (``pip install --no-deps --target DIR``, or a copy of a
venv's ``site-packages/llama_cpp``) runs the before column on the build it had.

Prints, per checkout:
- peak RSS of ``medsim consult --cases demo --case demo-007 --llm local --max-turns 6``,
  and of ``make run``'s shift (``medsim play --cases demo --llm local``, headless, for
  ``--shift-s`` seconds: both doctors' consultations under way);
- per-role load time (a ``LlamaPool`` context for doctor, patient, technician, judge);
- the doctor's reply tokens decoded one per step and those that came from a kept draft
  (jump-forward decoding, ``drafted_tokens`` of its ``llm_call`` events; a checkout that
  does not record it decodes one per step);
- seconds per doctor turn (the consultation's doctor calls: the first, which evaluates
  the system prompt, and the others), the consultation run a second time too (a checkout
  with a prompt cache finds there what the first run evaluated; each checkout's cache
  starts empty);
- cases per hour of ``medsim bench`` over the first ``--cases`` demo cases at
  ``--workers 1`` and at ``--workers 2`` (batched, the default with an in-process model);
- closeness to the limit: the consultation's model time over (evaluated tokens / prompt
  speed + completion tokens / generation speed), both speeds measured in this run.

The consultation runs greedy (every role at temperature 0, from a run spec written here),
so "identical replies" is a statement about the two codes, not about the dice.

Every figure comes from a child process running the checkout's own code (its ``medsim``
on ``PYTHONPATH``), so the before and after columns are the two codes on one machine.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
CONSULT = ["consult", "--cases", "demo", "--case", "demo-007", "--llm", "local", "--max-turns", "6"]
SITES: dict[Path, Path] = {}  # a checkout -> a folder first on its PYTHONPATH (--before-site)
GREEDY = "".join(f"[roles.{r}]\ntemperature = 0.0\n" for r in ("doctor", "patient", "measurement", "judge"))


def _run(tree: Path, argv: list[str], work: Path, timeout: float | None = None) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in GB, stdout) of ``python argv`` with the tree's code and
    the tree's own prompt cache (under ``work``, empty at the start)."""
    path = os.pathsep.join([*([str(SITES[tree])] if tree in SITES else []), str(tree)])
    env = dict(os.environ, PYTHONPATH=path, SDL_VIDEODRIVER="dummy", SDL_AUDIODRIVER="dummy",
               MEDSIM_PROMPT_CACHE=str(work / "prompts" / tree.name))
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        p = subprocess.Popen([sys.executable, *argv], cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            _, status, ru = os.wait4(p.pid, 0)
        except KeyboardInterrupt:
            p.kill()
            raise
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out.seek(0)
        text = out.read()
    if p.returncode:
        raise SystemExit(f"{argv} in {tree} failed ({p.returncode}):\n{text[-3000:]}")
    return wall, ru.ru_maxrss / 1024 / 1024, text


# prompt and generation speed of the embedded model, 2 threads, one context: a function
# for a child process's code (this script's probe, benchmarks/cpu_build.py's replay)
SPEEDS = r'''
def speeds(path):
    import time
    from llama_cpp import Llama
    llm = Llama(model_path=path, n_ctx=2048, n_batch=256, n_threads=2, n_threads_batch=2, verbose=False)
    toks = llm.tokenize(("A 54-year-old man with two hours of chest pain radiating to the left arm. " * 40).encode())
    llm.eval(toks[:16])  # warm
    llm.reset()
    t0 = time.perf_counter(); llm.eval(toks[:512]); prompt = 512 / (time.perf_counter() - t0)
    n, t0 = 0, time.perf_counter()
    for tok in llm.generate(toks[:512], temp=0.0):
        n += 1
        if n >= 64:
            break
    return {"prompt_tps": prompt, "gen_tps": n / (time.perf_counter() - t0)}
'''

_PROBE = SPEEDS + r'''
import json, sys, time
from agents.llm.local_model import embedded_model_path
from agents.llm.llamacpp import LlamaPool
path = str(embedded_model_path().resolve())
what = sys.argv[1]
if what == "loads":
    pool = LlamaPool()
    out = {}
    for role in ("doctor", "patient", "measurement", "judge"):
        t0 = time.perf_counter(); pool.context(path, role, 0); out[role] = time.perf_counter() - t0
    pool.close()
    print("PROBE " + json.dumps(out))
elif what == "speeds":
    out = speeds(path)
    import llama_cpp, re  # the checkout's own medsim may not name its build (agents.provenance)
    info = llama_cpp.llama_print_system_info().decode()
    out["build"] = " ".join(m for m in re.findall(r"([A-Z0-9_]+) = 1", info) if m.startswith(("AVX512", "AMX"))) or "AVX2"
    print("PROBE " + json.dumps(out))
'''


def _probe(tree: Path, work: Path, *args: str) -> dict:
    _, _, text = _run(tree, ["-c", _PROBE, *args], work)
    return json.loads([ln for ln in text.splitlines() if ln.startswith("PROBE ")][-1][6:])


def _consult(tree: Path, work: Path, run: str = "") -> dict:
    log = work / f"consult{run}-{tree.name}.jsonl"
    config = work / "greedy.toml"
    config.write_text(GREEDY, encoding="utf-8")
    wall, rss, _ = _run(tree, ["-m", "medsim", *CONSULT, "--config", str(config), "--log", str(log)], work)
    from agents.events import read_events  # this checkout's reader: the log format is shared

    calls = [e for e in read_events(log) if e.get("type") == "llm_call"]
    doctor = [c["latency_s"] for c in calls if c["role"] == "doctor"]
    drafted = sum(c.get("drafted_tokens") or 0 for c in calls if c["role"] == "doctor")
    return {"doctor_tokens": sum(c["completion_tokens"] for c in calls if c["role"] == "doctor"),
            "doctor_drafted": drafted,"wall_s": wall, "rss_gb": rss, "log": str(log),
            "model_s": sum(c["latency_s"] for c in calls),
            "evaluated": sum(c.get("prompt_tokens_evaluated") or 0 for c in calls),
            "sent": sum(c["prompt_tokens"] for c in calls),
            "completion": sum(c["completion_tokens"] for c in calls),
            "doctor_turn_s": statistics.mean(doctor), "doctor_first_s": doctor[0],
            "doctor_later_s": statistics.mean(doctor[1:]) if len(doctor) > 1 else float("nan"),
            "outputs": [c["output"] for c in calls]}


def _shift(tree: Path, work: Path, seconds: float) -> float:
    frames = int(seconds * 60)  # the window runs at most 60 frames a second
    _, rss, _ = _run(tree, ["-m", "medsim", "play", "--cases", "demo", "--llm", "local", "--headless",
                            "--frames", str(frames), "--log", str(work / f"shift-{tree.name}.jsonl")], work)
    return rss


def _bench(tree: Path, work: Path, cases: int, workers: int) -> float:
    out = work / f"bench-{tree.name}-w{workers}"
    wall, _, _ = _run(tree, ["-m", "medsim", "bench", "--cases", "demo", "--limit", str(cases), "--llm", "local",
                             "--max-turns", "6", "--workers", str(workers), "--out", str(out)], work)
    return cases / wall * 3600


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, default=None, help="a checkout of the code to compare with")
    ap.add_argument("--cases", type=int, default=3, help="demo cases for cases per hour")
    ap.add_argument("--shift-s", type=float, default=120.0, help="seconds of the headless shift for its peak RSS")
    ap.add_argument("--before-site", type=Path, default=None,
                    help="a folder first on the before checkout's PYTHONPATH (another llama-cpp-python build)")
    args = ap.parse_args()
    trees = [("after", HERE)] + ([("before", args.before.resolve())] if args.before else [])
    if args.before_site:
        if not args.before:
            ap.error("--before-site needs --before")
        SITES[args.before.resolve()] = args.before_site.resolve()
    work = Path(tempfile.mkdtemp(prefix="laptop-cost-"))
    res: dict[str, dict] = {label: {} for label, _ in trees}
    steps = [("speeds", lambda t: _probe(t, work, "speeds")), ("loads", lambda t: _probe(t, work, "loads")),
             ("consult", lambda t: _consult(t, work)), ("consult_again", lambda t: _consult(t, work, "-again")),
             ("shift_rss_gb", lambda t: _shift(t, work, args.shift_s)),
             ("cph_w1", lambda t: _bench(t, work, args.cases, 1)), ("cph_w2", lambda t: _bench(t, work, args.cases, 2))]
    try:
        for i, (name, fn) in enumerate(steps):
            for label, tree in (trees if i % 2 == 0 else trees[::-1]):
                print(f"  {name} {label} ...", file=sys.stderr, flush=True)
                res[label][name] = fn(tree)
    finally:  # the logs stay in work; the prompt caches (hundreds of MB) go
        shutil.rmtree(work / "prompts", ignore_errors=True)
    print(f"\n{os.cpu_count()} cores; embedded model; consult: medsim {' '.join(CONSULT)} (greedy)")
    cols = [label for label, _ in trees]
    rows = []

    def row(name, f):
        rows.append((name, [f(res[c]) for c in cols]))

    row("llama.cpp build (beyond AVX2)", lambda r: r["speeds"].get("build", "?")[:26])
    row("prompt speed (tokens/s, measured)", lambda r: f"{r['speeds']['prompt_tps']:.1f}")
    row("generation speed (tokens/s, measured)", lambda r: f"{r['speeds']['gen_tps']:.1f}")
    row("peak RSS, consult (GB)", lambda r: f"{r['consult']['rss_gb']:.2f}")
    row(f"peak RSS, make run's shift, {args.shift_s:.0f} s (GB)", lambda r: f"{r['shift_rss_gb']:.2f}")
    for role in ("doctor", "patient", "measurement", "judge"):
        row(f"load time, {role} (s)", lambda r, role=role: f"{r['loads'][role]:.2f}")
    row("consult wall (s)", lambda r: f"{r['consult']['wall_s']:.1f}")
    row("consult model time (s)", lambda r: f"{r['consult']['model_s']:.1f}")
    row("prompt tokens sent / evaluated", lambda r: f"{r['consult']['sent']} / {r['consult']['evaluated']}")
    row("completion tokens", lambda r: f"{r['consult']['completion']}")
    row("doctor's reply tokens: one per step / from drafts",
        lambda r: f"{r['consult']['doctor_tokens'] - r['consult']['doctor_drafted']} / {r['consult']['doctor_drafted']}")
    row("seconds per doctor turn (mean)", lambda r: f"{r['consult']['doctor_turn_s']:.2f}")
    row("  first turn / later turns", lambda r: f"{r['consult']['doctor_first_s']:.2f} / {r['consult']['doctor_later_s']:.2f}")
    row("consult again (its prompt cache warm): wall (s)", lambda r: f"{r['consult_again']['wall_s']:.1f}")
    row("  evaluated tokens; s per doctor turn (first / later)",
        lambda r: f"{r['consult_again']['evaluated']}; {r['consult_again']['doctor_turn_s']:.2f} "
                  f"({r['consult_again']['doctor_first_s']:.2f} / {r['consult_again']['doctor_later_s']:.2f})")
    row(f"cases per hour, --workers 1 ({args.cases} cases)", lambda r: f"{r['cph_w1']:.1f}")
    row(f"cases per hour, --workers 2, batched ({args.cases} cases)", lambda r: f"{r['cph_w2']:.1f}")

    def closeness(r):
        c, s = r["consult"], r["speeds"]
        limit = c["evaluated"] / s["prompt_tps"] + c["completion"] / s["gen_tps"]
        return f"{c['model_s'] / limit:.2f} (model time) {c['wall_s'] / limit:.2f} (process wall)"

    row("closeness to the limit", closeness)
    same = len(cols) == 2 and res[cols[0]]["consult"]["outputs"] == res[cols[1]]["consult"]["outputs"]
    w = max(len(n) for n, _ in rows)
    print(f"{'':<{w}}  " + "  ".join(f"{c:>26}" for c in cols))
    for name, vals in rows:
        print(f"{name:<{w}}  " + "  ".join(f"{v:>26}" for v in vals))
    if len(cols) == 2:
        a, b = (res[c]["consult"]["outputs"] for c in cols)
        differ = sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b))
        print(f"the consultation's greedy model outputs are {'identical' if same else 'NOT identical'} before and "
              f"after ({differ} of {max(len(a), len(b))} calls differ)")
    print(f"(logs and bench runs under {work})")


if __name__ == "__main__":
    main()
