"""Frame time of the pygame view (software rendering, SDL dummy driver) with ~30 agents
walking on the full hospital map while real model calls run on worker threads, and A*
time on the full map.

    .venv/bin/python benchmarks/frame_time.py [--llm smollm2] [--patients 27] [--frames 600]

Goal: frame time p95 <= 16.7 ms on 2 cores while model calls run.
"""
from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

from agents.events import ListSink, LLMCall  # noqa: E402
from agents.llm.llamacpp import LlamaPool  # noqa: E402
from game.hospital_map import load_map  # noqa: E402
from game.pathfinding import astar  # noqa: E402
from game.runner import ThreadRunner  # noqa: E402
from game.resources import assets_dir, default_map_path  # noqa: E402
from medsim.play import build_shift  # noqa: E402
from medsim.spec import build_spec  # noqa: E402


def astar_figures() -> None:
    m = load_map(default_map_path())
    pts = [p.tile for p in m.points.values() if m.walkable(p.tile)]
    times, lengths = [], []
    for a, b in itertools.permutations(pts, 2):
        t0 = time.perf_counter()
        path = astar(a, b, m.walkable)
        times.append((time.perf_counter() - t0) * 1000)
        lengths.append(len(path) - 1)
    times.sort()
    print(f"A* on the full map ({m.width}x{m.height}, {len(m.walkable_cells)} walkable cells): {len(times)} queries "
          f"between named points, path length median {statistics.median(lengths)} max {max(lengths)}; "
          f"time median {statistics.median(times):.3f} ms, p95 {times[int(len(times) * 0.95)]:.3f} ms, max {times[-1]:.3f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llm", default="smollm2")
    ap.add_argument("--patients", type=int, default=6, help="patients of the real shift (model calls)")
    ap.add_argument("--walkers", type=int, default=30, help="agents walking at once, counting visitors")
    ap.add_argument("--doctors", type=int, default=2)
    ap.add_argument("--frames", type=int, default=600)
    ap.add_argument("--speed", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: cores - 1, as medsim play)")
    args = ap.parse_args()
    astar_figures()
    import pygame

    from game.view.app import SimulationScreen, present

    sink = ListSink()
    runner = ThreadRunner(args.doctors, nice=10)
    pool = LlamaPool(n_threads=args.threads or max(1, (os.cpu_count() or 2) - 1))
    spec = build_spec(None, {"llm": args.llm, "world.doctors": args.doctors, "world.patients": args.patients,
                             "world.arrival_interval_s": 0.5})
    world = build_shift(spec, runner=runner, log=None, pool=pool)
    world.extra_sink = sink
    pygame.init()
    screen = pygame.display.set_mode((1280, 720))
    ui = SimulationScreen(world, default_map_path(), assets_dir(), (1280, 720))
    ui.cam.zoom_i = 0
    ui.cam.clamp()
    ui.speed_i = [1, 2, 4, 8].index(args.speed)
    # Visitors: extra people who walk between random rooms for the whole run, so that
    # about --walkers agents are walking while the shift's consultations call the model.
    import random

    from game.actors import Actor
    from game.world import PATIENT_SPRITES

    rng = random.Random(0)
    cells = sorted(world.map.reachable_from(world.map.point("entrance_spawn").tile))
    inside = [c for c in cells if world.map.room_at(c) is not None and world.map.room_at(c).name != "entrance"]
    visitors = []
    for i in range(max(0, args.walkers - len(world.actors))):
        a = Actor(f"visitor-{i + 1}", "patient", PATIENT_SPRITES[i % len(PATIENT_SPRITES)], rng.choice(inside))
        world.actors[a.id] = a
        visitors.append(a)

    def keep_walking() -> None:
        for a in visitors:
            if not a.moving:
                world.walk(a, rng.choice(inside), "wander")

    keep_walking()
    # fast-forward (no frames) until both doctors are in consultations, so model calls
    # run during the measured frames
    for _ in range(4000):
        if sum(1 for e in world.encounters if e.consultation is not None) >= min(2, args.doctors):
            break
        world.step(0.25)
        keep_walking()
    frame_ms, walking = [], []
    clock = pygame.time.Clock()
    t_start = time.perf_counter()
    for _ in range(args.frames):
        dt = clock.tick(60) / 1000.0
        t0 = time.perf_counter()
        for ev in pygame.event.get():
            ui.stack.handle(ev)
        ui.stack.update(dt)
        keep_walking()
        present(ui, screen)
        frame_ms.append((time.perf_counter() - t0) * 1000)
        walking.append(sum(1 for a in world.actors.values() if a.present and a.moving))
    wall = time.perf_counter() - t_start
    calls = [e for e in sink.events if isinstance(e, LLMCall)]
    if calls:
        lat = sorted(c.latency_s for c in calls)
        print(f"model call latency: median {statistics.median(lat):.2f} s, max {lat[-1]:.2f} s, "
              f"completion tokens median {statistics.median(c.completion_tokens for c in calls)}")
    frame_ms.sort()
    present = sum(1 for a in world.actors.values() if a.present)
    print(f"view: {args.frames} frames at 1280x720 (software), {present} agents present, "
          f"walking per frame mean {statistics.mean(walking):.1f} max {max(walking)}; "
          f"{len(calls)} model calls ({args.llm}) completed during the run ({wall:.1f} s)")
    p95 = frame_ms[int(len(frame_ms) * 0.95)]
    print(f"frame time (input+update+draw+flip): p50 {statistics.median(frame_ms):.2f} ms, p95 {p95:.2f} ms, "
          f"max {frame_ms[-1]:.2f} ms -> goal p95 <= 16.7 ms: {'met' if p95 <= 16.7 else 'NOT met'}")
    pygame.quit()
    runner.close()
    pool.close()


if __name__ == "__main__":
    main()
