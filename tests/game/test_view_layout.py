"""Where the window puts things: name tags that never cover one another, the F1 sheet and
the end-of-shift box inside the window (and off the dialogue panel), text escaped. Headless
(SDL dummy driver)."""
import itertools
import os
import re

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"

import pygame  # noqa: E402
import pytest  # noqa: E402

from agents.llm.llamacpp import LlamaPool  # noqa: E402
from game.resources import assets_dir, default_map_path  # noqa: E402
from game.runner import InlineRunner  # noqa: E402
from game.view.app import MIN_SIZE, SimulationScreen  # noqa: E402
from game.view.keys import KEYS  # noqa: E402
from game.view.layout import place_labels  # noqa: E402
from game.view.render import TextCache  # noqa: E402
from game.view.screens import EndOfShiftScreen, HelpScreen, ScreenStack  # noqa: E402
from game.world import Phase  # noqa: E402
from medsim.play import build_shift  # noqa: E402
from medsim.spec import build_spec  # noqa: E402

SIZES = [(1280, 720), MIN_SIZE]


@pytest.fixture
def display():
    pygame.init()
    yield
    pygame.quit()


def shift(size, **world):
    spec = build_spec(None, {"world.doctors": 1, "world.patients": 2, "world.arrival_interval_s": 1.0,
                             **{f"world.{k}": v for k, v in world.items()}})
    w = build_shift(spec, runner=InlineRunner(), log=None, pool=LlamaPool())
    return w, SimulationScreen(w, default_map_path(), assets_dir(), size)


def text_rects(text, placed):
    return [pygame.Rect(at, text.font(size).size(line)) for line, size, _, at in placed if line]


def test_place_labels_takes_the_first_free_place_or_none():
    a, b, c = pygame.Rect(0, 0, 10, 10), pygame.Rect(5, 5, 10, 10), pygame.Rect(20, 0, 10, 10)
    assert place_labels([[a], [b, c], [b]]) == [a, c, None]
    assert place_labels([[a, c]], taken=[a]) == [c]


@pytest.mark.parametrize("zoom", [None, 1.0])
def test_name_tags_never_overlap_in_a_crowded_waiting_room(display, zoom):
    screen = pygame.display.set_mode((1280, 720))
    world, ui = shift((1280, 720), patients=14, arrival_interval_s=0.3)
    while sum(e.phase is Phase.WAITING for e in world.encounters) < 9 and world.t < 600:
        world.step(0.2)
    waiting = [e.patient for e in world.encounters if e.phase is Phase.WAITING]
    assert len(waiting) >= 9
    room = world.map.room_at(waiting[0].tile)
    assert room is not None and "waiting" in room.name
    ui.select(waiting[-1].id)
    if zoom:
        ui.cam.set_zoom(zoom)
        t = waiting[0].tile
        ui.cam.centre_on(t.x * ui.ts, t.y * ui.ts)
        ui.cam.follow = None
    ui.paused = True
    ui.stack.draw(screen)
    drawn = ui.tags_drawn
    assert len(drawn) >= 4 and waiting[-1].id in drawn  # the selected agent's tag always finds room
    for (a, ra), (b, rb) in itertools.combinations(drawn.items(), 2):
        assert not ra.colliderect(rb), (a, ra, b, rb)
    # every waiting patient whose tag is left out has a neighbour's in its places
    assert {p.id for p in waiting} & set(drawn)


@pytest.mark.parametrize("size", SIZES)
def test_the_help_sheet_fits_the_window(display, size):
    pygame.display.set_mode(size)
    text = TextCache()
    help_screen = HelpScreen(ScreenStack(), text, KEYS)
    rect, placed = help_screen.layout(size)
    assert pygame.Rect(0, 0, *size).contains(rect), (rect, size)
    rects = text_rects(text, placed)
    for r in rects:
        assert rect.contains(r), (r, rect)
    for r, s in itertools.combinations(rects, 2):
        assert not r.colliderect(s), (r, s)
    lines = {line for line, *_ in placed}
    assert {k for _, keys in KEYS for k, _ in keys} <= lines  # every key is on it
    assert {t for t, _ in KEYS if t} <= lines


@pytest.mark.parametrize("size", SIZES)
def test_the_end_of_shift_box_leaves_the_panel_and_its_header_in_sight(display, size):
    pygame.display.set_mode(size)
    world, ui = shift(size)
    rows = [{"case_id": f"case-{i:03d}", "status": "diagnosed", "correct": i % 2 == 0, "error": None,
             "diagnosis": "Acute inferior ST-elevation myocardial infarction with right ventricular involvement"}
            for i in range(40)]
    stats = {"seen": 40, "correct": 20, "scored": 40, "failed": 0, "errors": 0, "accuracy": 0.5,
             "ci95": (0.35, 0.65), "mean_turns": 8.0, "mean_tests": 3.5}
    end = EndOfShiftScreen(ui.stack, ui.text, stats, rows, {r["case_id"]: 3.0 for r in rows}, ui.quit,
                           area=ui.map_area())
    rect, placed = end.layout(size)
    assert not rect.colliderect(ui.panel_rect()) and ui.map_area().contains(rect), (rect, ui.panel_rect())
    for r in text_rects(ui.text, placed):
        assert rect.contains(r), (r, rect)
    assert any(line.startswith("... and ") for line, *_ in placed)  # the cases that do not fit are counted


def test_the_window_checks_its_size_and_escapes_text(display):
    from game.view.app import check_size

    check_size(MIN_SIZE)
    with pytest.raises(ValueError, match="smallest is 1024x600"):
        check_size((800, 600))
    pygame.display.set_mode((1280, 720))
    text = TextCache()
    shown = text.render("a\x1b[31m\u202eb", 18)
    assert shown.get_size() == text.render("a\\x1b[31m\\u202eb", 18).get_size()


def test_the_panel_says_what_its_consultation_does_between_lines(display):
    screen = pygame.display.set_mode((1280, 720))
    w, ui = shift((1280, 720))
    seen = set()
    for _ in range(20000):
        ui.stack.update(0.05)
        ui.stack.draw(screen)
        enc = ui._panel_enc  # noqa: SLF001 - the consultation the panel shows
        if enc is None:
            continue
        status = ui._status()  # noqa: SLF001
        now = w.activity(enc)
        if now is None:
            assert status == "", status  # a line is being said: no row
        else:
            assert re.fullmatch(re.escape(f"… {now}") + r"( \(\d+ s\))?", status), (status, now)
        if enc.phase is Phase.TO_TEST:
            assert enc.order in status, status
        seen.add(enc.phase if status else None)
        if w.done:
            break
    assert {Phase.GATHERING, Phase.TO_TEST, Phase.FROM_TEST, Phase.FILING} <= seen, seen


def test_the_selected_agents_card_is_not_drawn_under_a_text_box(display, monkeypatch):
    """While a person types (a text box or a menu is open at the bottom of the view), the
    selected agent's card, drawn in the view's bottom right, would show through the box."""
    from game.view.screens import TextBox

    screen = pygame.display.set_mode((1280, 720))
    w, ui = shift((1280, 720))
    ui.selected = next(a.id for a in w.actors.values() if a.role == "doctor")
    drawn: list[str] = []
    plain = ui._draw_selected_info  # noqa: SLF001

    def record(view):
        drawn.append(ui.selected)
        plain(view)

    monkeypatch.setattr(ui, "_draw_selected_info", record)
    ui.stack.draw(screen)
    assert drawn  # no box: the card is drawn
    drawn.clear()
    ui.stack.push(TextBox(ui.stack, ui.text, "Ask the patient", lambda t: None))
    ui.stack.draw(screen)
    assert not drawn
