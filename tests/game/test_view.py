"""The pygame view, headless (SDL dummy driver): never opens a window."""
import os
import subprocess
import sys

import pytest

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"

from medsim.cli import main  # noqa: E402
from agents.events import read_events  # noqa: E402
from game.hospital_map import load_map  # noqa: E402
from game.resources import default_map_path  # noqa: E402


def test_shipped_map_loads_and_every_room_is_reachable():
    m = load_map(default_map_path())
    reach = m.reachable_from(m.point("entrance_spawn").tile)
    for word in ("reception", "waiting", "consult", "lab", "ecg", "imaging", "conference", "records"):
        assert m.rooms_like(word), word
    assert len(m.rooms_like("consult")) >= 3
    assert len(m.rooms_like("imaging")) >= 2
    for room in m.rooms.values():
        assert any(c in reach for c in room.rect.cells()), room.name
    assert m.rooms["imaging_xray"].address == "hospital:imaging:xray"


def test_headless_screenshot_shows_the_hospital(tmp_path):
    import pygame

    shot = tmp_path / "shot.png"
    log = tmp_path / "shift.jsonl"
    rc = main(["play", "--llm", "scripted", "--headless", "--frames", "240", "--fixed-dt", "0.05", "--speed", "8",
               "--zoom", "0.5", "--screenshot", str(shot), "--log", str(log), "--patients", "4"])
    assert rc == 0 and shot.is_file()
    pygame.init()
    try:
        pygame.display.set_mode((1280, 720))
        img = pygame.image.load(str(shot))
        assert img.get_size() == (1280, 720)
        # not blank: many colours in the map area
        colours = {tuple(img.get_at((x, y)))[:3] for x in range(0, 900, 7) for y in range(40, 720, 7)}
        assert len(colours) > 60
        # rooms where the map says: the screenshot's map area matches a plain render of the map
        from game.view.app import HUD_H, PANEL_W
        from game.view.camera import Camera
        from game.view.render import MapImage

        m = load_map(default_map_path())
        ref = MapImage(default_map_path())
        cam = Camera(1280 - PANEL_W, 720 - HUD_H, m.width * ref.tile, m.height * ref.tile, zoom_i=0)
        rooms = [r.rect for r in m.rooms.values() if r.name != "entrance"]
        # the view starts centred on the rooms' bounding box (then --zoom 0.5)
        cam.centre_on((min(r.x0 for r in rooms) + max(r.x1 for r in rooms) + 1) / 2 * ref.tile,
                      (min(r.y0 for r in rooms) + max(r.y1 for r in rooms) + 1) / 2 * ref.tile)
        minimap = pygame.Rect(cam.view_w - 198, 72, 190, 130)  # drawn over the map (top right)
        scaled = ref.at(0.5)
        same = total = 0
        for room in m.rooms.values():
            for cell in room.rect.cells()[::5]:
                wx, wy = (cell.x + 0.5) * ref.tile, (cell.y + 0.5) * ref.tile
                sx, sy = cam.to_screen(wx, wy)
                if not (0 <= sx < cam.view_w and 0 <= sy < cam.view_h) or minimap.collidepoint(sx, sy):
                    continue
                total += 1
                a = img.get_at((sx, sy + HUD_H))[:3]
                b = scaled.get_at((int(wx * 0.5), int(wy * 0.5)))[:3]
                same += sum(abs(p - q) for p, q in zip(a, b)) < 30
        assert total > 200 and same / total > 0.8
    finally:
        pygame.quit()
    ev = read_events(log)
    assert ev[0]["type"] == "shift_header" and any(e["type"] == "move" for e in ev)


def test_core_never_imports_pygame(tmp_path):
    code = (
        "import sys\n"
        "from medsim.bench import BenchOptions, run_bench\n"
        "from medsim.spec import build_spec\n"
        "from game.hospital_map import load_map\n"
        "from game.resources import default_map_path\n"
        "import game.world, medsim.play, medsim.cli, medsim.score\n"
        f"run_bench(build_spec(None, {{'limit': 2}}), BenchOptions(out=__import__('pathlib').Path(r'{tmp_path}') / 'r', progress=False))\n"
        "load_map(default_map_path())\n"
        "assert 'pygame' not in sys.modules, 'pygame imported by the core'\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def _medsim(args, env, cwd):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**env, "PYTHONPATH": root}
    return subprocess.run([sys.executable, "-m", "medsim", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


def _bare_env():
    """This environment without a display, an SDL driver or pygame's greeting switch."""
    return {k: v for k, v in os.environ.items()
            if k not in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER", "SDL_AUDIODRIVER",
                         "PYGAME_HIDE_SUPPORT_PROMPT")}


def test_game_commands_print_no_pygame_banner_nor_alsa_errors(tmp_path):
    """No "Hello from the pygame community" on a game command; no audio device opened (the
    game has no sound), so no ALSA errors where there is no sound card."""
    r = _medsim(["play", "--llm", "scripted", "--headless", "--frames", "3", "--patients", "1", "--log",
                 str(tmp_path / "a.jsonl")], _bare_env(), tmp_path)
    assert r.returncode == 0, r.stderr
    assert "pygame community" not in r.stdout + r.stderr and "ALSA" not in r.stderr
    # a window on a driver the user chose (here the dummy one): no audio either
    r = _medsim(["play", "--llm", "scripted", "--frames", "3", "--patients", "1", "--log", str(tmp_path / "b.jsonl")],
                {**_bare_env(), "SDL_VIDEODRIVER": "dummy"}, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "pygame community" not in r.stdout + r.stderr and "ALSA" not in r.stderr, r.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SDL finds a display through DISPLAY on Linux")
def test_play_with_no_display_says_so_and_writes_nothing(tmp_path):
    log = tmp_path / "shift.jsonl"
    r = _medsim(["play", "--llm", "scripted", "--frames", "3", "--patients", "1", "--log", str(log)], _bare_env(),
                tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "no display: use --headless, or run under Xvfb" in r.stderr
    assert "ALSA" not in r.stderr and "Traceback" not in r.stderr and not log.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SDL finds a display through DISPLAY on Linux")
def test_the_view_refuses_a_display_sdl_cannot_open(monkeypatch):
    """DISPLAY names no X server: SDL falls back to a driver that shows nothing; that is no
    display either. A driver asked for by name is taken as asked."""
    from game.view.display import NoDisplay, prepare_display

    for k in ("WAYLAND_DISPLAY", "SDL_VIDEODRIVER", "DISPLAY"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(NoDisplay, match="DISPLAY and WAYLAND_DISPLAY are not set"):
        prepare_display(False)
    monkeypatch.setenv("DISPLAY", ":97")  # no X server there
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/nonexistent")
    with pytest.raises(NoDisplay, match="fell back"):
        prepare_display(False)
    monkeypatch.setenv("SDL_VIDEODRIVER", "offscreen")
    assert prepare_display(False) == "offscreen"
    assert prepare_display(True) == "dummy" and os.environ["SDL_VIDEODRIVER"] == "dummy"


def test_zoom_outside_its_levels_is_refused(tmp_path, capsys):
    from game.resources import assets_dir
    from game.runner import InlineRunner
    from game.view.app import run_window
    from agents.llm.llamacpp import LlamaPool
    from medsim.play import build_shift
    from medsim.spec import build_spec

    with pytest.raises(SystemExit) as e:
        main(["play", "--llm", "scripted", "--headless", "--zoom", "3", "--frames", "1", "--log",
              str(tmp_path / "s.jsonl")])
    assert e.value.code == 2 and "--zoom: invalid choice: 3.0" in capsys.readouterr().err
    assert not (tmp_path / "s.jsonl").exists()
    assert main(["play", "--llm", "scripted", "--headless", "--zoom", "1", "--frames", "1", "--patients", "1",
                 "--log", str(tmp_path / "ok.jsonl")]) == 0
    world = build_shift(build_spec(None, {"world.patients": 1}), runner=InlineRunner(), log=None, pool=LlamaPool())
    with pytest.raises(ValueError, match=r"zoom 3 is not one of 0.5, 0.75, 1, 1.5, 2"):
        run_window(world, default_map_path(), assets_dir(), headless=True, zoom=3, frames=1)
