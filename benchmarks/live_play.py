"""The live hospital with the embedded model, as `make run` shows it, under a real X
display (Xvfb), over several shifts: the time to the first judged diagnosis, the time
each consultation takes, the frame time while model calls run, and the longest wait with
nothing new in the dialogue panel: no new line ("quiet max"); no new line nor a new
activity row, the panel's "who walks where, who is thinking" and how far its model call
has got ("news gap"); and the same leaving the model call's progress aside ("step gap":
a new line or a new step only).

    .venv/bin/python benchmarks/live_play.py [--shifts 5] [--seconds 300] [--before DIR]

Each shift (seeds 0, 1, ...) runs in a process of its own, so one shift's model and
caches do not help the next. ``--before DIR``: a checkout of other code (a ``git worktree``
of the revision to compare with) plays each seed too, alternating with this one, so both
run on the same machine in the same state; the table then gives both. Needs Xvfb (Debian:
apt-get install xvfb) unless a DISPLAY is already set. ``--prompt-cache cold`` (the
default) gives each shift an empty prompt cache, as a first ``make run`` has; ``warm``
plays each shift once to fill it, then measures it, as every later ``make run`` is.

Goals (issue 27): the first judged diagnosis within 180 s of the window opening in at
least 4 of 5 shifts and never later than 240 s; frame time p95 <= 16.7 ms while the model
runs.
"""
from __future__ import annotations

import argparse
import inspect
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


def _display() -> subprocess.Popen | None:
    if os.environ.get("DISPLAY"):
        return None
    if not shutil.which("Xvfb"):
        raise SystemExit("no DISPLAY and no Xvfb: install it (apt-get install xvfb) or run under a display")
    proc = subprocess.Popen(["Xvfb", ":97", "-screen", "0", "1280x720x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.environ["DISPLAY"] = ":97"
    time.sleep(1.0)
    return proc


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))] if xs else float("nan")


class _Gap:
    """The longest wait between two pieces of news, counted once a consultation began."""

    def __init__(self, t: float):
        self.last, self.longest = t, 0.0

    def news(self, at: float, counting: bool) -> float | None:
        """News at ``at``; returns when the wait before it began, if it is the longest yet."""
        began, self.last = self.last, at
        if counting and at - began > self.longest:
            self.longest = at - began
            return began
        return None


def one_shift(args: argparse.Namespace) -> dict:
    """One shift in this process (the code on sys.path: this checkout, or --before's)."""
    import pygame

    from agents.llm.llamacpp import LlamaPool
    from game.control import PlayerIO
    from game.resources import assets_dir, default_map_path
    from game.runner import ThreadRunner
    from game.view.app import SimulationScreen, present
    from medsim.play import build_shift
    from medsim.spec import build_spec

    spec = build_spec(None, {"llm": args.llm, "seed": args.shift, "world.doctors": args.doctors,
                             "world.patients": args.patients}, default_llm="local")
    runner = ThreadRunner(max(2, args.doctors + 1), nice=args.nice)
    # as medsim play: a core for the view, and (where the code has it) a context per role and doctor
    slots = {"slots": max(2, args.doctors)} if "slots" in inspect.signature(LlamaPool).parameters else {}
    if "prompt_cache" in inspect.signature(LlamaPool).parameters:  # as medsim play, where the code has one
        from agents.llm.prompt_cache import default_prompt_cache

        slots["prompt_cache"] = default_prompt_cache()
    pool = LlamaPool(n_threads=max(1, (os.cpu_count() or 2) - 1), **slots)
    player = PlayerIO()
    extra = {}
    if "gate" in inspect.signature(build_shift).parameters:  # as medsim play does, where the code has one
        from agents.llm.schedule import ModelGate

        extra["gate"] = ModelGate()
    out: dict = {"seed": args.shift, "scheduled": bool(extra)}
    try:
        world = build_shift(spec, runner=runner, log=None, pool=pool, player=player, **extra)
        pygame.init()
        screen = pygame.display.set_mode((1280, 720))
        ui = SimulationScreen(world, default_map_path(), assets_dir(), (1280, 720))
        ui.speed_i = [1, 2, 4, 8].index(args.speed)
        clock = pygame.time.Clock()
        busy, idle = [], []
        started: dict[str, float] = {}
        took: list[float] = []
        said: dict[str, str | None] = {}
        last_new = t_open = time.perf_counter()
        quiet = 0.0
        activity = getattr(world, "activity", None)  # the panel's activity row, where the code has one
        doing: dict[str, str | None] = {}
        # the panel's rows with and (where the code reports it) without a model call's progress
        stepwise = activity is not None and "progress" in inspect.signature(activity).parameters
        steps: dict[str, str | None] = {}
        gaps = _Gap(last_new), _Gap(last_new)  # a new line or row; a new line or step (progress reports aside)
        gap_where: dict = {}  # the longest gap: when it began, and the activity rows shown all along it

        def news(at: float) -> None:
            began = gaps[0].news(at, bool(started))
            if began is not None:
                gap_where.update(from_s=round(began - t_open, 1), rows=sorted(w for w in doing.values() if w))

        def step_news(at: float) -> None:
            gaps[1].news(at, bool(started))

        first = None
        while time.perf_counter() - t_open < args.seconds and not world.done:
            dt = clock.tick(60) / 1000.0
            t0 = time.perf_counter()
            for ev in pygame.event.get():
                ui.stack.handle(ev)
            ui.stack.update(dt)
            present(ui, screen)
            now = time.perf_counter()
            ft = (now - t0) * 1000
            running = any(e.task is not None and not e.task.done() for e in world.encounters)
            (busy if running else idle).append(ft)
            for e in world.encounters:
                if e.consultation is not None and e.case.id not in started:
                    started[e.case.id] = now
                if e.result is not None and e.case.id in started and started[e.case.id] > 0:
                    took.append(now - started[e.case.id])
                    started[e.case.id] = -1.0
            for a in world.actors.values():  # a new line in the dialogue (a bubble)
                if a.speech and said.get(a.id) != a.speech:
                    quiet = max(quiet, now - last_new) if started else quiet
                    last_new = now
                said[a.id] = a.speech
            if last_new == now:
                news(now)
                step_news(now)
            for e in world.encounters if activity else ():  # or a new activity row (who walks, who thinks)
                what = activity(e) if e.sink is not None else None
                if what and doing.get(e.case.id) != what:
                    news(now)
                doing[e.case.id] = what
                step = (activity(e, progress=False) if stepwise else what) if e.sink is not None else None
                if step and steps.get(e.case.id) != step:
                    step_news(now)
                steps[e.case.id] = step
            if first is None and world.finished:
                first = now - t_open
                print(f"  seed {args.shift}: first judged diagnosis after {first:.1f} s "
                      f"({world.finished[0]['case_id']}, {world.finished[0]['status']})", file=sys.stderr, flush=True)
                if args.stop_at_first:
                    break
        s = world.stats()
        out.update(first_s=first, consult_s=took, frames_busy=len(busy), p95_busy_ms=pct(busy, 0.95),
                   p50_busy_ms=pct(busy, 0.5), p95_idle_ms=pct(idle, 0.95), quiet_max_s=quiet,
                   news_gap_s=gaps[0].longest if activity else None, news_gap_at=gap_where if activity else None,
                   step_gap_s=gaps[1].longest if activity else None,
                   wall_s=time.perf_counter() - t_open, seen=s["seen"], patients=s["patients"])
    finally:
        player.close()
        runner.close()
        pool.close()
        pygame.quit()
    return out


def _child(tree: Path, seed: int, args: argparse.Namespace, cache: Path) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--shift", str(seed), "--seconds", str(args.seconds),
           "--doctors", str(args.doctors), "--patients", str(args.patients), "--speed", str(args.speed),
           "--llm", args.llm, "--nice", str(args.nice)] + (["--stop-at-first"] if args.stop_at_first else [])
    env = dict(os.environ, PYTHONPATH=str(tree), MEDSIM_PROMPT_CACHE=str(cache))
    p = subprocess.run(cmd, cwd=tree, env=env, stdout=subprocess.PIPE, text=True)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode or not lines:
        return {"seed": seed, "error": f"exit {p.returncode}"}
    return json.loads(lines[-1][len("RESULT "):])


def _table(label: str, rs: list[dict]) -> None:
    ok = [r for r in rs if "error" not in r]
    firsts = [r["first_s"] for r in ok]
    got = [f for f in firsts if f is not None]
    consult = [c for r in ok for c in r["consult_s"]]
    print(f"\n{label}: {len(rs)} shifts ({len(rs) - len(ok)} failed to run)")
    print("  seed  first diagnosis  consultations (s)         frame p95 busy  quiet max  news gap  step gap  seen")
    for r in rs:
        if "error" in r:
            print(f"  {r['seed']:>4}  {r['error']}")
            continue
        f = f"{r['first_s']:.1f} s" if r["first_s"] is not None else "none"
        c = ", ".join(f"{x:.0f}" for x in r["consult_s"]) or "-"
        news = f"{r['news_gap_s']:.1f} s" if r.get("news_gap_s") is not None else "-"
        step = f"{r['step_gap_s']:.1f} s" if r.get("step_gap_s") is not None else "-"
        print(f"  {r['seed']:>4}  {f:>15}  {c:<24}  {r['p95_busy_ms']:>11.1f} ms  {r['quiet_max_s']:>7.1f} s  "
              f"{news:>8}  {step:>8}  {r['seen']}/{r['patients']}")
    for r in ok:  # where each shift's longest gap fell, and what the panel said all along it
        where = r.get("news_gap_at")
        if where:
            print(f"  seed {r['seed']}: news gap of {r['news_gap_s']:.1f} s from {where['from_s']:.1f} s; "
                  f"rows shown: {'; '.join(where['rows']) or 'none'}")
    if got:
        print(f"  first diagnosis: median {statistics.median(got):.1f} s, min {min(got):.1f}, max {max(got):.1f}; "
              f"within 180 s in {sum(f <= 180 for f in got)}/{len(firsts)}, later than 240 s or none in "
              f"{sum(f > 240 for f in got) + len(firsts) - len(got)}/{len(firsts)}")
    if consult:
        print(f"  consultation: median {statistics.median(consult):.1f} s, min {min(consult):.1f}, "
              f"max {max(consult):.1f} (n {len(consult)})")
    p95 = [r["p95_busy_ms"] for r in ok if r["frames_busy"]]
    if p95:
        print(f"  frame p95 while the model runs: worst shift {max(p95):.1f} ms (goal <= 16.7: "
              f"{'met' if max(p95) <= 16.7 else 'NOT met'})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llm", default="local")
    ap.add_argument("--shifts", type=int, default=5, help="shifts (seeds 0..N-1)")
    ap.add_argument("--seconds", type=float, default=300.0, help="the longest a shift runs")
    ap.add_argument("--doctors", type=int, default=2)
    ap.add_argument("--patients", type=int, default=6)
    ap.add_argument("--speed", type=int, default=2, choices=(1, 2, 4, 8))
    ap.add_argument("--stop-at-first", action="store_true", help="end each shift at its first judged diagnosis")
    ap.add_argument("--nice", type=int, default=10, help="model threads' priority below the window's (0: the same)")
    ap.add_argument("--before", type=Path, default=None, help="a checkout of the code to compare with")
    ap.add_argument("--prompt-cache", choices=("cold", "warm"), default="cold",
                    help="cold: each shift starts with an empty prompt cache (a first make run); warm: each shift is "
                         "played once first to fill it, then measured (every later make run)")
    ap.add_argument("--shift", type=int, default=None, help=argparse.SUPPRESS)  # a child: one shift
    args = ap.parse_args()
    xvfb = _display()
    os.environ.pop("SDL_VIDEODRIVER", None)
    try:
        if args.shift is not None:
            print("RESULT " + json.dumps(one_shift(args)), flush=True)
            return
        print(f"display {os.environ.get('DISPLAY')}; model {args.llm}; {os.cpu_count()} cores; {args.shifts} shifts "
              f"of {args.doctors} doctors and {args.patients} patients at speed {args.speed}x, at most "
              f"{args.seconds:.0f} s each; prompt cache {args.prompt_cache}", flush=True)
        trees = [("after (this checkout)", HERE)] + ([("before (" + str(args.before) + ")", args.before.resolve())]
                                                    if args.before else [])
        results: dict[str, list[dict]] = {label: [] for label, _ in trees}
        caches = Path(tempfile.mkdtemp(prefix="live-play-cache-"))
        try:
            for seed in range(args.shifts):
                for label, tree in (trees if seed % 2 == 0 else trees[::-1]):  # alternate who goes first
                    cache = caches / f"{len(results[label])}-{label.split(' ')[0]}"  # a folder of its own
                    if args.prompt_cache == "warm":
                        _child(tree, seed, args, cache)  # the same shift once, filling the cache
                    r = _child(tree, seed, args, cache)
                    results[label].append(r)
                    print(f"  {label.split(' ')[0]} seed {seed}: first {r.get('first_s')}", flush=True)
        finally:  # the shifts' prompt caches: some 50 MB a shift
            shutil.rmtree(caches, ignore_errors=True)
        for label, rs in results.items():
            _table(label, rs)
    finally:
        if xvfb is not None:
            xvfb.terminate()


if __name__ == "__main__":
    main()
