"""Draw the screenshots of playing in docs/world.md (no window: SDL dummy driver, scripted
models): the doctor's text box, the test menu in use, the whole map with name tags,
the end-of-shift screen, the patient's case sheet, the imaging popup and viewer.

    .venv/bin/python docs/screenshots.py [--out docs]
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import pygame  # noqa: E402

from agents.llm.llamacpp import LlamaPool  # noqa: E402
from game.control import PlayerIO  # noqa: E402
from game.resources import assets_dir, default_map_path  # noqa: E402
from game.runner import ThreadRunner  # noqa: E402
from game.view.app import SimulationScreen  # noqa: E402
from game.view.screens import EndOfShiftScreen, MenuScreen  # noqa: E402
from medsim.play import build_shift  # noqa: E402
from medsim.spec import build_spec  # noqa: E402


def post_key(k: int, mod: int = 0) -> None:
    pygame.event.post(pygame.event.Event(pygame.KEYDOWN, key=k, mod=mod, unicode="", scancode=0))


def post_text(s: str) -> None:
    pygame.event.post(pygame.event.Event(pygame.TEXTINPUT, text=s))


def frames(ui: SimulationScreen, screen: pygame.Surface, n: int = 1) -> None:
    for _ in range(n):
        for ev in pygame.event.get():
            ui.stack.handle(ev)
        ui.stack.update(0.05)
        ui.stack.draw(screen)


def until(ui: SimulationScreen, screen: pygame.Surface, cond, limit_s: float = 120.0) -> None:
    deadline = time.time() + limit_s
    while not cond() and time.time() < deadline:
        frames(ui, screen)
        time.sleep(0.001)
    if not cond():
        raise SystemExit("the shift did not get there in time")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = ap.parse_args()
    pygame.init()
    screen = pygame.display.set_mode((1280, 720))
    player, runner = PlayerIO(), ThreadRunner(3)
    spec = build_spec(None, {"world.doctors": 2, "world.patients": 5, "world.arrival_interval_s": 2.0, "seed": 3})
    world = build_shift(spec, runner=runner, log=None, pool=LlamaPool(), player=player)
    ui = SimulationScreen(world, default_map_path(), assets_dir(), (1280, 720))
    ui.speed_i = 3
    try:
        ui.select("doctor-1")
        post_key(pygame.K_t)  # the person plays doctor-1 from its first turn
        frames(ui, screen, 120)
        ui.cam.fit(*ui.building)
        frames(ui, screen)
        pygame.image.save(screen, str(args.out / "play-map-tags.png"))  # every room, name tags
        post_key(pygame.K_PLUS, pygame.KMOD_CTRL)  # zoom in (Ctrl: "+" is typing while playing)
        post_key(pygame.K_PLUS, pygame.KMOD_CTRL)
        until(ui, screen, lambda: ui.request() is not None)
        post_key(pygame.K_RETURN)
        post_text("Where exactly is the pain, and does it spread anywhere?")
        frames(ui, screen, 2)
        pygame.image.save(screen, str(args.out / "play-textbox.png"))
        post_key(pygame.K_RETURN)
        frames(ui, screen)
        until(ui, screen, lambda: ui.request() is not None)
        post_key(pygame.K_o, pygame.KMOD_CTRL)  # while playing, game keys that are letters take Ctrl
        frames(ui, screen)
        menu = ui.stack.top
        assert isinstance(menu, MenuScreen)
        menu.select_label("Urinalysis")
        frames(ui, screen, 2)
        pygame.image.save(screen, str(args.out / "play-test-menu.png"))
        post_key(pygame.K_RETURN)
        frames(ui, screen)
        post_key(pygame.K_g, pygame.KMOD_CTRL)  # the AI carries on
        until(ui, screen, lambda: isinstance(ui.stack.top, EndOfShiftScreen), 300)
        frames(ui, screen, 2)
        pygame.image.save(screen, str(args.out / "play-end-of-shift.png"))
    finally:
        player.close()
        runner.close()
        pygame.quit()
    patient_sheet(args.out)
    imaging_viewer(args.out)
    print(f"screenshots in {args.out}")


def patient_sheet(out: Path) -> None:
    """A person plays the patient: their case sheet beside the dialogue, the answer typed."""
    pygame.init()
    screen = pygame.display.set_mode((1280, 720))
    player, runner = PlayerIO(), ThreadRunner(3)
    spec = build_spec(None, {"world.doctors": 1, "world.patients": 1, "world.arrival_interval_s": 1.0, "seed": 3})
    world = build_shift(spec, runner=runner, log=None, pool=LlamaPool(), player=player)
    ui = SimulationScreen(world, default_map_path(), assets_dir(), (1280, 720))
    ui.speed_i = 3
    try:
        ui.take_over("patient-1")
        until(ui, screen, lambda: ui.request() is not None)
        for ch in "It started two days ago":
            pygame.event.post(pygame.event.Event(pygame.KEYDOWN, key=ord(ch.lower()), mod=0, unicode=ch, scancode=0))
            post_text(ch)
        frames(ui, screen, 2)
        pygame.image.save(screen, str(out / "play-patient-sheet.png"))
    finally:
        player.close()
        runner.close()
        pygame.quit()


def imaging_viewer(out: Path) -> None:
    """An imaging case: the technician has returned the chest film; V opens the viewer."""
    from game.runner import InlineRunner
    from game.view.screens import ImageViewer

    pygame.init()
    screen = pygame.display.set_mode((1280, 720))
    try:
        spec = build_spec(None, {"cases": "imaging", "world.doctors": 1, "world.patients": 1,
                                 "world.arrival_interval_s": 1.0})
        world = build_shift(spec, runner=InlineRunner(), log=None, pool=LlamaPool())
        ui = SimulationScreen(world, default_map_path(), assets_dir(), (1280, 720))
        ui.speed_i = 3
        until(ui, screen, lambda: any(n.kind == "image" for n in world.notices))
        ui.select(world.encounters[0].doctor.id)
        frames(ui, screen, 3)
        pygame.image.save(screen, str(out / "imaging-popup.png"))
        post_key(pygame.K_v)
        frames(ui, screen, 2)
        assert isinstance(ui.stack.top, ImageViewer)
        pygame.image.save(screen, str(out / "imaging-viewer.png"))
    finally:
        pygame.quit()


if __name__ == "__main__":
    main()
