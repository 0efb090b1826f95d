"""A person at a terminal (or a screen reader, or a script on standard input) playing
the doctor or the patient: ``medsim consult --as doctor|patient``. Menus are numbered
choices, one answer per line; the same test menu as the game's."""
from __future__ import annotations

import sys
from typing import TextIO

from agents.consultation import LAST_TURN
from agents.participants.base import Observation
from agents.participants.human import InputEnded, MAX_TYPED, ask, clean_typed, diagnose, order
from agents.protocol import DoctorAction
from agents.textsafe import printable
from game.catalogue import MenuGroup

__all__ = ["TerminalIO", "StudyTerminalIO"]


class TerminalIO:
    """``echo``: print every observation the doctor is given, the answers too (``consult``
    prints the answers from the events; a study shows the doctor only its observations)."""

    def __init__(self, menu: list[MenuGroup], *, inp: TextIO | None = None, out: TextIO | None = None,
                 echo: bool = False):
        self.menu = menu
        self.tests = [t for g in menu for t in g.tests]
        self.inp = inp or sys.stdin
        self.out = out or sys.stdout
        self.echo = echo
        self._menu_shown = False

    # -- lines ----------------------------------------------------------------------
    def _say(self, text: str = "") -> None:
        print(printable(text), file=self.out, flush=True)  # model text: never a raw control

    def _read(self, prompt: str) -> str:
        print(prompt, end="", file=self.out, flush=True)
        line = self.inp.readline()
        if line == "":
            self._say()
            raise InputEnded()
        line = line.rstrip("\r\n")
        if len(line) > MAX_TYPED:
            self._say(f"(kept the first {MAX_TYPED} characters of {len(line)})")
        return line

    def _text(self, prompt: str) -> str:
        while True:
            t = clean_typed(self._read(prompt))
            if t:
                return t
            self._say("(please type something)")

    # -- HumanIO --------------------------------------------------------------------
    def doctor_action(self, obs: Observation) -> DoctorAction:
        told = obs.text.replace(LAST_TURN, "").strip()
        if told and self.echo:
            self._say(f"   {told}")
        elif told and not told.startswith(("Patient:", "Technician:")):
            self._say(f"   ({told})")  # the opening, or "not yet" (answers are already shown)
        if obs.final:
            self._say("   This is your last turn: give your diagnosis.")
            return diagnose(self._text("Your diagnosis> "))
        while True:
            choice = self._read("[1] ask the patient  [2] order a test  [3] give your diagnosis > ").strip()
            if choice == "1":
                return ask(self._text("Your question> "))
            if choice == "2":
                test = self._choose_test()
                if test is not None:
                    return order(test)
            elif choice == "3":
                return diagnose(self._text("Your diagnosis> "))
            else:
                self._say("(type 1, 2 or 3)")

    def _show_menu(self) -> None:
        n = 0
        for g in self.menu:
            self._say(f"  {g.label}:")
            for t in g.tests:
                n += 1
                self._say(f"    [{n}] {t}")
        self._say("    [o] another test (type its name)   [b] back   [m] this menu again")
        self._menu_shown = True

    def _choose_test(self) -> str | None:
        if not self._menu_shown:
            self._show_menu()
        while True:
            c = self._read("Test number (m: the menu)> ").strip().lower()
            if c == "m":
                self._show_menu()
                continue
            if c == "b":
                return None
            if c == "o":
                return self._text("Test name> ")
            if c.isdigit() and 1 <= int(c) <= len(self.tests):
                return self.tests[int(c) - 1]
            self._say(f"(a number from 1 to {len(self.tests)}, o, b or m)")

    def reply(self, role: str, obs: Observation) -> str:
        if role == "measurement" and obs.order:  # the technician
            self._say(f"   (ordered: {obs.order})")
        return self._read("Your answer> ")


class StudyTerminalIO(TerminalIO):
    """A reader study in the terminal (``medsim study --ui terminal``; a
    :class:`medsim.study.StudyIO`): the doctor's menus, each turn's observation (what an AI
    doctor is told: the answer, the result) and the study's own lines, nothing else (no
    event of the run is printed, so no rejected reply nor verdict reaches the screen).
    Between cases the person may stop; Ctrl-C or the end of the input while a case is
    read leaves it (the case is recorded as abandoned)."""

    def __init__(self, menu: list[MenuGroup], *, inp: TextIO | None = None, out: TextIO | None = None):
        super().__init__(menu, inp=inp, out=out, echo=True)

    def _read(self, prompt: str) -> str:
        try:
            return super()._read(prompt)
        except KeyboardInterrupt:
            self._say()
            raise InputEnded() from None

    def show(self, text: str) -> None:
        self._say(text)

    def next_case(self, k: int, n: int) -> bool:
        try:
            line = self._read(f"\nCase {k} of {n} next. Enter: begin   q: stop for now > ")
        except InputEnded:
            return False
        return line.strip().lower() not in ("q", "quit", "stop")
