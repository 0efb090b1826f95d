"""A person plays in the window, driven by real pygame key and text events (SDL dummy
driver: no window opens)."""
import os

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"

import time  # noqa: E402

import pygame  # noqa: E402
import pytest  # noqa: E402

from agents.events import EventLog, read_events  # noqa: E402
from agents.llm.llamacpp import LlamaPool  # noqa: E402
from game.control import PlayerIO  # noqa: E402
from game.resources import assets_dir, default_map_path  # noqa: E402
from game.runner import ThreadRunner  # noqa: E402
from game.view.app import SimulationScreen  # noqa: E402
from game.view.screens import MenuScreen, TextBox  # noqa: E402
from medsim.play import build_shift  # noqa: E402
from medsim.spec import build_spec  # noqa: E402


@pytest.fixture
def hospital(tmp_path):
    pygame.init()
    screen = pygame.display.set_mode((1280, 720))
    player, runner = PlayerIO(), ThreadRunner(3)
    log = EventLog(tmp_path / "shift.jsonl")
    log.__enter__()
    spec = build_spec(None, {"world.doctors": 1, "world.patients": 1, "world.arrival_interval_s": 1.0})
    world = build_shift(spec, runner=runner, log=log, pool=LlamaPool(), player=player)
    ui = SimulationScreen(world, default_map_path(), assets_dir(), (1280, 720))
    ui.speed_i = 3
    try:
        yield ui, screen, tmp_path / "shift.jsonl"
    finally:
        player.close()
        runner.close()
        log.__exit__(None, None, None)
        pygame.quit()


def key(k, mod=0):
    pygame.event.post(pygame.event.Event(pygame.KEYDOWN, key=k, mod=mod, unicode="", scancode=0))


def text(s):
    pygame.event.post(pygame.event.Event(pygame.TEXTINPUT, text=s))


def frame(ui, screen, n=1):
    for _ in range(n):
        for ev in pygame.event.get():
            ui.stack.handle(ev)
        ui.stack.update(0.05)
        ui.stack.draw(screen)


def wait_for_turn(ui, screen, limit_s=60):
    deadline = time.time() + limit_s
    while ui.request() is None and time.time() < deadline:
        frame(ui, screen)
        time.sleep(0.001)
    assert ui.request() is not None, "the person's turn never came"
    return ui.request()


def test_a_player_plays_a_whole_case_with_the_keyboard(hospital):
    ui, screen, log = hospital
    ui.select("doctor-1")
    key(pygame.K_t)  # take over the selected doctor
    frame(ui, screen)
    assert ui.world.controlled == "doctor-1"
    # walk about the room with the arrow keys and back to the patient before asking
    from game.geometry import Tile

    wait_for_turn(ui, screen)
    me = ui.world.actors["doctor-1"]
    seat = me.tile
    arrows = {(1, 0): pygame.K_RIGHT, (-1, 0): pygame.K_LEFT, (0, 1): pygame.K_DOWN, (0, -1): pygame.K_UP}
    d = next(d for d in arrows if ui.world.map.walkable(Tile(seat.x + d[0], seat.y + d[1])))
    key(arrows[d])
    frame(ui, screen, 8)
    assert me.tile == Tile(seat.x + d[0], seat.y + d[1])
    key(arrows[(-d[0], -d[1])])
    frame(ui, screen, 8)
    assert me.tile == seat
    for question in ("What brings you in today?", "Any medicines or allergies?"):
        wait_for_turn(ui, screen)
        key(pygame.K_RETURN)  # the text box
        text(question)
        key(pygame.K_RETURN)
        frame(ui, screen)
    wait_for_turn(ui, screen)
    key(pygame.K_o, pygame.KMOD_CTRL)  # the test menu (a letter while playing is typing: Ctrl makes it a game key)
    frame(ui, screen)
    menu = ui.stack.top
    assert isinstance(menu, MenuScreen)
    labels = [i.label for i in menu.items if not i.header]
    for _ in range(labels.index("Complete blood count")):
        key(pygame.K_DOWN)
    key(pygame.K_RETURN)
    frame(ui, screen)
    req = wait_for_turn(ui, screen)
    assert req.obs.text.startswith("Technician: RESULTS")  # the result came back
    case = ui.world.encounters[0].case
    key(pygame.K_x, pygame.KMOD_CTRL)
    text(case.diagnosis)
    key(pygame.K_RETURN)
    deadline = time.time() + 60
    while not ui.world.finished and time.time() < deadline:
        frame(ui, screen)
    row = ui.world.finished[0]
    assert row["status"] == "diagnosed" and row["correct"] is True
    assert row["tests_requested"] == ["Complete blood count"] and row["turns"] == 4
    ev = read_events(log)
    doctor = [e for e in ev if e["type"] == "utterance" and e["speaker"] == "doctor"]
    assert [e["source"] for e in doctor] == ["human"] * 4
    assert any(e["type"] == "test_trip" and e["room"] == "lab" for e in ev)


def test_keys_typed_in_the_text_box_move_nothing(hospital):
    ui, screen, _ = hospital
    ui.select("doctor-1")
    key(pygame.K_t)
    wait_for_turn(ui, screen)
    before = (ui.paused, ui.speed_i, ui.selected, ui.world.controlled, ui.cam.x, ui.cam.y, ui.cam.zoom_i, ui.cam.follow)
    key(pygame.K_RETURN)
    frame(ui, screen)
    box = ui.stack.top
    assert isinstance(box, TextBox)
    for k in (pygame.K_SPACE, pygame.K_1, pygame.K_4, pygame.K_t, pygame.K_g, pygame.K_f, pygame.K_TAB, pygame.K_q,
              pygame.K_PLUS, pygame.K_MINUS, pygame.K_o, pygame.K_x, pygame.K_F1, pygame.K_w, pygame.K_a):
        key(k)
    text("t g 1 4 wasd")
    frame(ui, screen, 3)
    after = (ui.paused, ui.speed_i, ui.selected, ui.world.controlled, ui.cam.x, ui.cam.y, ui.cam.zoom_i, ui.cam.follow)
    assert after == before and ui.running and ui.stack.top is box and box.value == "t g 1 4 wasd"


def test_empty_long_and_non_ascii_input(hospital):
    ui, screen, log = hospital
    ui.select("doctor-1")
    key(pygame.K_t)
    wait_for_turn(ui, screen)
    key(pygame.K_RETURN)
    key(pygame.K_RETURN)  # empty: nothing is sent, the box stays open and says why
    frame(ui, screen)
    box = ui.stack.top
    assert isinstance(box, TextBox) and "type something" in box.warning and ui.request() is not None
    text("x" * 700)
    frame(ui, screen)
    assert len(box.value) == 500 and "limit of 500" in box.warning
    key(pygame.K_u, pygame.KMOD_CTRL)  # clear
    text("Ça fait mal depuis hier — où exactement ? 😣")
    key(pygame.K_LEFT)
    key(pygame.K_BACKSPACE)  # the space before the emoji
    key(pygame.K_RETURN)
    frame(ui, screen, 2)
    deadline = time.time() + 30
    said = []
    while not said and time.time() < deadline:
        frame(ui, screen)
        said = [e["text"] for e in read_events(log) if e["type"] == "utterance" and e["speaker"] == "doctor"]
    assert said == ["Ça fait mal depuis hier — où exactement ?😣"]
    # the history brings the line back
    wait_for_turn(ui, screen)
    key(pygame.K_RETURN)
    key(pygame.K_UP)
    frame(ui, screen)
    assert ui.stack.top.value == "Ça fait mal depuis hier — où exactement ?😣"


def test_giving_back_mid_consultation_lets_the_ai_finish(hospital):
    ui, screen, log = hospital
    ui.select("doctor-1")
    key(pygame.K_t)
    wait_for_turn(ui, screen)
    key(pygame.K_RETURN)
    text("Where does it hurt?")
    key(pygame.K_RETURN)
    frame(ui, screen)
    wait_for_turn(ui, screen)
    key(pygame.K_g, pygame.KMOD_CTRL)  # back to the AI, while the world waits for the person's turn
    deadline = time.time() + 60
    while not ui.world.finished and time.time() < deadline:
        frame(ui, screen)
    assert ui.world.finished and ui.world.finished[0]["status"] == "diagnosed"
    doctor = [e for e in read_events(log) if e["type"] == "utterance" and e["speaker"] == "doctor"]
    assert doctor[0]["source"] == "human" and {e["source"] for e in doctor[1:]} == {"llm"}
    assert [e["turn"] for e in doctor] == list(range(1, len(doctor) + 1))


def test_help_and_take_over_without_a_selection(hospital):
    ui, screen, _ = hospital
    key(pygame.K_t)
    frame(ui, screen)
    assert ui.world.controlled is None and "Select an agent first" in ui.flash
    key(pygame.K_F1)
    frame(ui, screen)
    assert type(ui.stack.top).__name__ == "HelpScreen"
    key(pygame.K_SPACE)  # the help is modal too
    frame(ui, screen)
    assert not ui.paused
    key(pygame.K_F1)
    frame(ui, screen)
    assert ui.stack.top is ui


def test_the_view_shows_who_is_who_and_the_end_of_the_shift(tmp_path):
    """Name tags, the panel's room/doctor/verdict, the whole-map zoom and the end-of-shift
    screen, on a short scripted shift."""
    from game.runner import InlineRunner
    from game.view.app import _short_demographics
    from game.view.screens import EndOfShiftScreen

    assert [_short_demographics(d) for d in ("19-year-old woman", "A 58-year-old man", "6-month-old boy",
                                              "newborn girl", "adult")] == ["19F", "58M", "6moM", "F", ""]
    pygame.init()
    screen = pygame.display.set_mode((1280, 720))
    try:
        spec = build_spec(None, {"world.doctors": 1, "world.patients": 2, "world.arrival_interval_s": 1.0})
        world = build_shift(spec, runner=InlineRunner(), log=None, pool=LlamaPool())
        ui = SimulationScreen(world, default_map_path(), assets_dir(), (1280, 720))
        ui.speed_i = 3
        # the default view shows every room
        for room in world.map.rooms.values():
            sx, sy = ui.cam.to_screen(room.rect.x0 * ui.ts, room.rect.y0 * ui.ts)
            ex, ey = ui.cam.to_screen((room.rect.x1 + 1) * ui.ts, (room.rect.y1 + 1) * ui.ts)
            if room.name != "entrance":
                assert sx >= 0 and sy >= 0 and ex <= ui.cam.view_w and ey <= ui.cam.view_h, room.name
        frame(ui, screen, 400)
        tags = {ui.tag_text(a) for a in world.actors.values() if a.present}
        assert "Dr 1" in tags and "Tech" in tags and any(t.startswith("P1 ") for t in tags)
        key(pygame.K_z)  # the whole map
        frame(ui, screen)
        assert ui._all_in_view()
        deadline = time.time() + 60
        while not isinstance(ui.stack.top, EndOfShiftScreen) and time.time() < deadline:
            frame(ui, screen)
        end = ui.stack.top
        assert isinstance(end, EndOfShiftScreen)
        box = end.layout(screen.get_size())[0]
        assert not box.colliderect(ui.panel_rect()) and ui.map_area().contains(box)  # the panel's header stays in sight
        text_lines = [line for line, _ in end.lines()]
        assert text_lines[0].startswith("Cases seen: 2") and "Accuracy:" in text_lines[1]
        assert sum(1 for line in text_lines if line.startswith(("demo-",))) == 2
        assert "sim-minutes per case" in text_lines[2] and all(m > 0 for m in ui.case_minutes().values())
        assert len(ui.case_minutes()) == 2
        ui.select("doctor-1")
        where, verdict, _ = (ui._dialogue(), ui._panel_header())[1]
        assert "doctor-1" in where and verdict.startswith(("CORRECT", "WRONG"))
        key(pygame.K_RETURN)  # back to the hospital
        frame(ui, screen)
        assert ui.stack.top is ui
    finally:
        pygame.quit()


def test_walking_with_the_keys_collides_and_talking_needs_the_patient_near(hospital):
    from game.geometry import Tile

    ui, screen, _ = hospital
    ui.select("doctor-1")
    key(pygame.K_t)
    req = wait_for_turn(ui, screen)
    world = ui.world
    me = world.actors["doctor-1"]
    patient = world.actor_for(req.case_id, "patient")
    # walls block: a step into a wall leaves the doctor where it is
    wall = next(d for d in ((1, 0), (-1, 0), (0, 1), (0, -1))
                if not world.map.walkable(Tile(me.tile.x + d[0], me.tile.y + d[1])))
    start = me.tile
    assert world.step_player(*wall) is False and me.tile == start
    # walk away from the patient with the arrow keys, step by step
    moves = []
    keys = {(1, 0): pygame.K_RIGHT, (-1, 0): pygame.K_LEFT, (0, 1): pygame.K_DOWN, (0, -1): pygame.K_UP}
    for _ in range(40):
        if not world.near("doctor-1", patient):
            break
        here = me.tile
        d = next(d for d in ((0, -1), (1, 0), (-1, 0), (0, 1))
                 if world.map.walkable(Tile(here.x + d[0], here.y + d[1]))
                 and max(abs(here.x + d[0] - world.actors[patient].tile.x),
                         abs(here.y + d[1] - world.actors[patient].tile.y))
                 >= max(abs(here.x - world.actors[patient].tile.x), abs(here.y - world.actors[patient].tile.y)))
        key(keys[d])
        frame(ui, screen, 8)  # the step is walked
        if me.tile != here:
            moves.append(d)
    assert not world.near("doctor-1", patient) and moves
    key(pygame.K_RETURN)
    frame(ui, screen)
    assert ui.stack.top is ui and "Walk back to" in ui.flash  # no text box far from the patient
    for d in reversed(moves):
        key(keys[(-d[0], -d[1])])
        frame(ui, screen, 8)
    assert world.near("doctor-1", patient)
    key(pygame.K_RETURN)
    frame(ui, screen)
    assert isinstance(ui.stack.top, TextBox)


def test_the_image_viewer_opens_beside_the_report(tmp_path):
    """An imaging shift: when the technician returns an X-ray, a popup shows it, the
    panel's line links it, V opens the viewer (headless screenshot)."""
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
        saw_scanner = False
        deadline = time.time() + 60
        while not [n for n in world.notices if n.kind == "image"] and time.time() < deadline:
            frame(ui, screen)
            saw_scanner |= any(e.phase.value == "at_test" and e.test_station in ("xray_station", "ct_station")
                               for e in world.encounters)
        notice = [n for n in world.notices if n.kind == "image"][0]
        assert notice.image.endswith(".png") and notice.text
        frame(ui, screen, 2)
        ui.select(world.encounters[0].doctor.id)
        frame(ui, screen, 2)
        assert any("[image: click or V]" in line for _, line in ui._dialogue()[1])
        assert ui._panel_links  # the panel line links the image
        before = pygame.image.tostring(screen, "RGB")
        key(pygame.K_v)
        frame(ui, screen, 2)
        viewer = ui.stack.top
        assert isinstance(viewer, ImageViewer) and viewer.surface is not None and viewer.report == notice.text
        assert pygame.image.tostring(screen, "RGB") != before
        shot = tmp_path / "viewer.png"
        pygame.image.save(screen, str(shot))
        assert shot.stat().st_size > 10000
        assert saw_scanner or notice.title.startswith(("12-lead ECG", "Skin photograph"))
        key(pygame.K_ESCAPE)
        frame(ui, screen)
        assert ui.stack.top is ui
    finally:
        pygame.quit()


def test_the_machine_that_glows_is_the_one_the_test_station_declares():
    """While a test is done at a station, the view lights the machine the map declares
    for it (the station's ``equipment`` property), not a machine named in the code."""
    import dataclasses

    from game.actors import Actor
    from game.runner import InlineRunner
    from game.world import Encounter, Phase

    pygame.init()
    pygame.display.set_mode((1280, 720))
    try:
        world = build_shift(build_spec(None, {"world.doctors": 1, "world.patients": 1}), runner=InlineRunner(),
                            log=None, pool=LlamaPool())
        ui = SimulationScreen(world, default_map_path(), assets_dir(), (1280, 720))
        patient = Actor("patient-x", "patient", "patient_f_adult_1", world.map.point("xray_station").tile)
        world.encounters.append(Encounter(world.cases[0], patient, phase=Phase.AT_TEST, test_station="xray_station"))

        def lit():
            view = pygame.Surface((ui.cam.view_w, ui.cam.view_h), pygame.SRCALPHA)
            ui._draw_scanners(view)
            out = set()
            for name in ("xray_machine", "ct_scanner", "ecg_machine", "lab_bench"):
                t = world.map.point(name).tile
                sx, sy = ui.cam.to_screen((t.x + 0.5) * ui.ts, (t.y + 0.5) * ui.ts)
                if view.get_at((sx, sy)).a > 0:
                    out.add(name)
            return out
        assert lit() == {"xray_machine"}
        world.map.test_stations = tuple(dataclasses.replace(s, machine="ct_scanner") if s.name == "xray_station" else s
                                        for s in world.map.test_stations)
        assert lit() == {"ct_scanner"}
    finally:
        pygame.quit()


def type_keys(s, text_input=True):
    """Keys as a keyboard sends them: per character a KEYDOWN that carries it, the text
    SDL derives from it (when text input is on), a KEYUP; "\n" is Enter."""
    for ch in s:
        if ch == "\n":
            key(pygame.K_RETURN)
            continue
        k = ord(ch.lower()) if ord(ch) < 128 else 0
        mod = pygame.KMOD_SHIFT if ch.isupper() else 0
        pygame.event.post(pygame.event.Event(pygame.KEYDOWN, key=k, mod=mod, unicode=ch, scancode=0))
        if text_input:
            text(ch)
        pygame.event.post(pygame.event.Event(pygame.KEYUP, key=k, mod=mod, unicode=ch, scancode=0))


def test_a_sentence_typed_when_it_is_not_your_turn_neither_pauses_nor_orders(hospital):
    """While a person plays an agent, keys that write characters are words: off their turn
    nothing happens (the bar says so); on their turn they open the text box, so a typed
    line is said, never taken as game keys (Space pausing, O ordering, G giving back, Q
    quitting)."""
    ui, screen, log = hospital
    ui.take_over("doctor-1")  # at the shift's start: nobody is in a consultation yet
    frame(ui, screen)
    assert ui.world.controlled == "doctor-1" and ui.request() is None
    before = (ui.paused, ui.speed_i, ui.show_minimap, ui.show_tags, ui.cam.zoom_i, ui.selected, ui.world.controlled)
    type_keys("Pneumonia. Order a chest x-ray, then 1 2 3 4 zoom + - quit? gives back: T V F")
    frame(ui, screen)
    after = (ui.paused, ui.speed_i, ui.show_minimap, ui.show_tags, ui.cam.zoom_i, ui.selected, ui.world.controlled)
    assert after == before and ui.running and ui.stack.top is ui
    assert "Not your turn yet" in ui.flash
    # on the turn, a typed line opens the text box with it and is asked, not ordered
    wait_for_turn(ui, screen)
    type_keys("okay, order the x-ray?\n")
    frame(ui, screen, 3)
    deadline = time.time() + 30
    said = []
    while not said and time.time() < deadline:
        frame(ui, screen)
        said = [e for e in read_events(log) if e["type"] == "utterance" and e["speaker"] == "doctor"]
    assert [e["text"] for e in said] == ["okay, order the x-ray?"] and said[0]["source"] == "human"
    assert not [e for e in read_events(log) if e["type"] == "test_requested"]
    # the next turn: with text input off (after a text box closed SDL sends no text), the
    # first key still starts the line, once
    wait_for_turn(ui, screen)
    pygame.key.stop_text_input()
    type_keys("W", text_input=False)
    frame(ui, screen)
    box = ui.stack.top
    assert isinstance(box, TextBox) and box.value == "W"
    type_keys("here?")
    frame(ui, screen)
    assert box.value == "Where?"
    # a game key while playing takes Ctrl: Ctrl+Space pauses
    key(pygame.K_ESCAPE)
    key(pygame.K_SPACE, pygame.KMOD_CTRL)
    frame(ui, screen)
    assert ui.paused


def test_a_person_playing_the_patient_sees_their_case_sheet(hospital):
    """The window shows the patient a person plays what the terminal's `consult --as
    patient` prints ("What you know about yourself"), escaped, beside the dialogue; F2
    hides it; the diagnosis is not on it."""
    import dataclasses

    ui, screen, _ = hospital
    ui.take_over("patient-1")
    wait_for_turn(ui, screen)
    enc = next(e for e in ui.world.encounters if e.patient.id == "patient-1")
    enc.case = dataclasses.replace(enc.case, patient={**enc.case.patient,
                                                      "History": "Began \x1b[31mred\u202e at noon. " + enc.case.patient["History"]})
    frame(ui, screen)
    shown = ui.sheet_drawn
    assert shown[0].startswith(f"You are the patient: a {enc.case.demographics}")
    assert "What you know about yourself" in " ".join(shown)
    assert any(line.startswith("History: Began \\x1b[31mred\\u202e at noon.") for line in shown)
    assert not any(ch in line for line in shown for ch in "\x1b\u202e")
    assert enc.case.diagnosis.lower() not in " ".join(shown).lower()
    assert screen.get_at((ui._sheet_rect.x + 3, ui._sheet_rect.bottom - 3))[:3] == (44, 50, 68)
    key(pygame.K_RETURN)  # answering: the sheet stays in sight beside the text box
    frame(ui, screen, 2)
    assert isinstance(ui.stack.top, TextBox) and ui.sheet_drawn == shown
    key(pygame.K_ESCAPE)
    key(pygame.K_F2)
    frame(ui, screen)
    assert ui.sheet_drawn == [] and not ui.show_sheet
    key(pygame.K_F2)
    frame(ui, screen)
    assert ui.sheet_drawn == shown


def test_a_person_playing_the_technician_sees_the_records(hospital):
    """The technician's sheet: the case's examination and test records, opened at the
    records of the order asked."""
    ui, screen, _ = hospital
    ui.take_over("technician")
    req = wait_for_turn(ui, screen)
    frame(ui, screen, 2)
    case = next(e.case for e in ui.world.encounters if e.case.id == req.case_id)
    sheet = ui.case_sheet()
    assert req.role == "measurement" and req.obs.order and (sheet.case_id, sheet.role) == (case.id, "measurement")
    assert sheet.heading == f"You are the technician for a {case.demographics}; answer each order from the records:"
    assert " Examination:" in sheet.lines() and " Tests:" in sheet.lines()
    assert any(line.lower().startswith(req.obs.order.lower()) for line in ui.sheet_drawn), (req.obs.order, ui.sheet_drawn)


def test_v_opens_the_study_the_popup_on_screen_names(tmp_path):
    """The panel shows one consultation, a popup another's image: V (and a click on the
    popup) opens the popup's study; a click on a panel line opens the study that line
    names."""
    import dataclasses

    from agents.cases.registry import load_cases
    from game.runner import InlineRunner
    from game.view.screens import ImageViewer
    from game.world import Notice

    pygame.init()
    screen = pygame.display.set_mode((1280, 720))
    try:
        spec = build_spec(None, {"cases": "imaging", "world.doctors": 1, "world.patients": 1,
                                 "world.arrival_interval_s": 1.0})
        world = build_shift(spec, runner=InlineRunner(), log=None, pool=LlamaPool())
        ui = SimulationScreen(world, default_map_path(), assets_dir(), (1280, 720))
        ui.speed_i = 3
        deadline = time.time() + 60
        while not [n for n in world.notices if n.kind == "image"] and time.time() < deadline:
            frame(ui, screen)
        mine = next(n for n in world.notices if n.kind == "image")
        ui.select(world.encounters[0].doctor.id)  # the panel: this consultation
        ui.paused = True
        # another case's study, in a popup now; this case's popup has gone
        other_case = next(c for c in load_cases("imaging")[0] if c.id != mine.case_id and c.imaging
                          and not c.imaging[0].is_url)
        st = other_case.imaging[0]
        other = Notice(world.t, "image", other_case.id, f"{st.test}: {st.body_part or st.modality}", st.report, st.image)
        world.notices[world.notices.index(mine)] = mine = dataclasses.replace(mine, t=world.t - 30)
        world.notices.append(other)
        frame(ui, screen, 2)
        assert ui.latest_image() == mine  # the panel's newest study is another than the popup's
        key(pygame.K_v)
        frame(ui, screen)
        viewer = ui.stack.top
        assert isinstance(viewer, ImageViewer) and viewer.title == other.title and viewer.report == other.text
        assert ui.offered_image() is other
        key(pygame.K_ESCAPE)
        frame(ui, screen)
        # both popups up: V opens the newest (the one saying "V: view the image"); a click
        # opens the popup clicked, and a panel line the study it names
        world.notices[world.notices.index(mine)] = mine = dataclasses.replace(mine, t=world.t - 1)
        frame(ui, screen)
        assert ui.offered_image() is other
        rect = next(r for r, n in ui._popups if n is mine)
        pygame.event.post(pygame.event.Event(pygame.MOUSEBUTTONDOWN, button=1, pos=rect.center))
        frame(ui, screen)
        assert isinstance(ui.stack.top, ImageViewer) and ui.stack.top.title == mine.title
        key(pygame.K_ESCAPE)
        frame(ui, screen)
        line_rect, named = ui._panel_links[0]
        assert (named.case_id, named.title) == (mine.case_id, mine.title)
        pygame.event.post(pygame.event.Event(pygame.MOUSEBUTTONDOWN, button=1, pos=line_rect.center))
        frame(ui, screen)
        assert isinstance(ui.stack.top, ImageViewer) and ui.stack.top.title == mine.title
    finally:
        pygame.quit()
