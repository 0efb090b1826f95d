"""A reader study in the hospital window (``medsim study --ui window``), driven by real
pygame events (SDL dummy driver: no window opens): every string the window draws is
recorded, and none is an answer key, a verdict or an accuracy until the study ends."""
import os

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"

import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import pygame  # noqa: E402
import pytest  # noqa: E402

from agents.cases.registry import load_cases  # noqa: E402
from agents.events import read_events  # noqa: E402
from agents.participants.human import ask, order  # noqa: E402
from game.control import PlayerIO  # noqa: E402
from game.resources import assets_dir, default_map_path  # noqa: E402
from game.runner import ThreadRunner  # noqa: E402
from game.view.app import SimulationScreen  # noqa: E402
from game.view.screens import PauseScreen, TextBox  # noqa: E402
from medsim.spec import build_spec  # noqa: E402
from medsim.study import Study, StudyOptions, run_study  # noqa: E402
from medsim.study_window import blinded_view, settle, study_world  # noqa: E402

LIMIT = 3
KEYS = [c.diagnosis.lower() for c in load_cases("demo")[0][:LIMIT]]
VERDICTS = ("correct", "wrong", "accuracy", "answer key")


def spec(label="reader-w"):
    return build_spec(None, {"cases": "demo", "limit": LIMIT, "roles.doctor.backend": "human", "study.label": label,
                             "world.arrival_interval_s": 1.0})


class Sitting:
    """One sitting at the window: the study opened, its world, the screen; ``drawn``:
    every string rendered."""

    def __init__(self, out: Path, label: str = "reader-w"):
        self.study = Study.open(spec(label), StudyOptions(out, ui="window"))
        pygame.init()
        self.screen = pygame.display.set_mode((1280, 720))
        self.player, self.runner = PlayerIO(), ThreadRunner(2)
        self.sw = study_world(self.study, player=self.player, runner=self.runner)
        self.ui = SimulationScreen(self.sw.world, default_map_path(), assets_dir(), (1280, 720),
                                   blinded=blinded_view(self.sw))
        self.ui.speed_i = 3
        self.drawn: list[str] = []
        render = self.ui.text.render

        def recording(text, *a, **k):
            self.drawn.append(str(text))
            return render(text, *a, **k)

        self.ui.text.render = recording
        self.ui.take_over("doctor-1")

    def frames(self, n=1):
        for _ in range(n):
            for ev in pygame.event.get():
                self.ui.stack.handle(ev)
            self.ui.stack.update(0.05)
            self.ui.stack.draw(self.screen)

    def until(self, cond, limit_s=60):
        deadline = time.time() + limit_s
        while not cond() and time.time() < deadline:
            self.frames()
            time.sleep(0.001)
        assert cond(), "the window never got there"

    def turn(self):
        self.until(lambda: self.ui.request() is not None)
        return self.ui.request()

    def read_case(self):
        """Two questions, vital signs (through the player), the diagnosis typed in the
        window's own text box (Ctrl+X)."""
        for action in (ask("What brings you in?"), ask("Any fever?"), order("Vital signs")):
            self.player.answer(self.turn().id, action)
        self.turn()
        key(pygame.K_x, pygame.KMOD_CTRL)
        self.frames(2)
        assert isinstance(self.ui.stack.top, TextBox)
        text("Acute gout")
        key(pygame.K_RETURN)
        self.until(lambda: isinstance(self.ui.stack.top, PauseScreen))
        self.frames(2)

    def close(self):
        self.ui.running = False
        self.player.close()
        self.runner.close()
        settle(self.sw)
        pygame.quit()
        self.study.close()


def key(k, mod=0):
    pygame.event.post(pygame.event.Event(pygame.KEYDOWN, key=k, mod=mod, unicode="", scancode=0))


def text(s):
    pygame.event.post(pygame.event.Event(pygame.TEXTINPUT, text=s))


def on_disk(root: Path) -> str:
    return "\n".join(p.read_text("utf-8", "replace") for p in sorted(root.rglob("*")) if p.is_file()).lower()


def test_a_study_in_the_window_never_draws_a_key_nor_a_verdict_and_goes_on_where_it_stopped(tmp_path):
    out = tmp_path / "study"
    s = Sitting(out)
    try:
        s.read_case()
        assert s.ui.paused and "Case 1 of 3 recorded" in s.drawn
        assert any(d.startswith("STUDY reader-w   case 1 of 3") for d in s.drawn)
        assert any(d.startswith("Your task: ") for d in s.drawn)  # what an AI doctor is told first
        assert any("doctor-1 waits for you" in d for d in s.drawn)  # the activity row on the person's turn
        notice = [n for n in s.sw.world.notices if n.kind == "diagnosis"][0]
        assert notice.title.endswith(": recorded") and "key" not in notice.text
        key(pygame.K_RETURN)  # the next patient
        s.frames(2)
        assert not s.ui.paused
        assert any(d.startswith("STUDY reader-w   case 2 of 3") for d in s.drawn)
        s.read_case()
        key(pygame.K_ESCAPE)  # stop for now
        s.frames()
        assert not s.ui.running
    finally:
        s.close()
    drawn = "\n".join(s.drawn).lower()
    assert not [k for k in KEYS if k in drawn], "an answer key was drawn"
    assert not [v for v in VERDICTS if v in drawn], "a verdict or an accuracy was drawn"
    assert not [k for k in KEYS if k in on_disk(out)], "an answer key in the run directory"
    ledger = json.loads((out / "study.json").read_text())
    assert [v["status"] for v in ledger["played"].values()] == ["played", "played"]
    assert {v["ui"] for v in ledger["played"].values()} == {"window"}
    assert len(list((out / "events").glob("*.jsonl"))) == 2  # stopped between cases: the third was not begun
    # the same command again: the last case, then the study ends and is scored
    s = Sitting(out)
    try:
        assert s.sw.world.config.patients == 1  # the case still to read
        s.read_case()
        assert "Case 3 of 3 recorded" in s.drawn and any("Every case of the study is read" in d for d in s.drawn)
        key(pygame.K_RETURN)
        s.frames()
        assert not s.ui.running
    finally:
        s.close()
    assert not [k for k in KEYS if k in "\n".join(s.drawn).lower()]
    outcome = run_study(spec(), StudyOptions(out, ui="window"))  # every case read: it ends (nothing to play)
    assert outcome.finished and outcome.played == LIMIT
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == LIMIT and all(r["diagnosis"] == "Acute gout" and r["correct"] is False for r in rows)
    ev = read_events(out / rows[0]["events"])
    assert [e["source"] for e in ev if e["type"] == "utterance" and e["speaker"] == "doctor"] == ["human"] * 4
    assert not [e for e in ev if e["type"] in ("spawned", "move_started")]  # the case's log, not the world's


@pytest.mark.parametrize("when", ["on their turn", "while the patient answers"])
def test_closing_the_window_mid_case_leaves_the_case_abandoned(tmp_path, when):
    out = tmp_path / "study"
    s = Sitting(out)
    try:
        s.player.answer(s.turn().id, ask("What brings you in?"))
        if when == "on their turn":
            s.turn()  # the person's second turn: they close the window instead
        else:  # the question is asked and its answer not yet shown: no turn of theirs is waiting
            enc = s.sw.world.encounters[0]
            deadline = time.time() + 30
            while enc.consultation.pending is None and time.time() < deadline:
                time.sleep(0.01)
            assert enc.consultation.pending is not None and not s.player.pending()
    finally:
        s.close()
    ledger = json.loads((out / "study.json").read_text())
    (case_id, entry), = ledger["played"].items()
    assert entry["status"] == "abandoned"
    ev = read_events(next((out / "events").glob(f"{case_id}-*.jsonl")))
    assert ev[-1]["type"] == "consultation_ended" and ev[-1]["status"] == "failed"


def test_the_study_holds_the_doctor_to_the_person(tmp_path):
    s = Sitting(tmp_path / "study")
    try:
        s.turn()
        s.frames(2)
        s.ui.select("patient-1")
        key(pygame.K_t, pygame.KMOD_CTRL)  # take over another agent: not in a study
        s.frames()
        assert s.ui.world.controlled == "doctor-1" and "throughout" in s.ui.flash
        s.ui.flash = ""
        key(pygame.K_g, pygame.KMOD_CTRL)  # give the doctor to the AI: not in a study
        s.frames()
        assert s.ui.world.controlled == "doctor-1" and "throughout" in s.ui.flash
    finally:
        s.close()
