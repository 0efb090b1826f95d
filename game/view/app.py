"""The simulation screen: camera, sprites, speech bubbles, dialogue panel, HUD, popups,
pause and speed. Reads the world; never changes it (beyond stepping it)."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import pygame

from agents.case_sheet import CaseSheet, case_sheet
from agents.textsafe import printable
from game.catalogue import test_menu
from game.view.camera import Camera, check_zoom
from game.view.display import prepare_display
from game.view.keys import KEYS, is_typing
from game.view.layout import place_labels
from game.view.render import (ACCENT, INK, PANEL, PANEL_TEXT, PAPER, MapImage, SpriteBank, TextCache, draw_box, draw_bubble,
                              wrap, wrap_px)
from game.view.screens import (EndOfShiftScreen, HelpScreen, ImageViewer, MenuItem, MenuScreen, PauseScreen, Screen,
                               ScreenStack, TextBox, as_rgb, load_study_image)
from game.world import Notice, World

__all__ = ["SimulationScreen", "Blinded", "run_window", "present", "check_size", "MIN_SIZE", "PANEL_W", "HUD_H"]

SPEEDS = (1, 2, 4, 8)
PANEL_W = 380
HUD_H = 34
MIN_SIZE = (1024, 600)  # the smallest window the view lays out (the panel, the map, the help sheet)
POPUP_S = 8.0  # sim seconds a popup stays
ARROWS = {pygame.K_LEFT: (-1, 0), pygame.K_RIGHT: (1, 0), pygame.K_UP: (0, -1), pygame.K_DOWN: (0, 1)}


@dataclass(frozen=True)
class Blinded:
    """A reader study in the window (``medsim study --ui window``). The bar shows
    ``banner()`` (the study's label, the case in hand of how many) where a shift shows its
    accuracy; no verdict, answer key nor accuracy is drawn anywhere; the person keeps the
    agent they play (T and Ctrl+G do nothing). When a case's consultation is recorded the
    world pauses on a box, ``between(row, last)`` -> (title, lines): Enter goes on (the
    next patient), Esc stops (the window closes); after the last case both close it."""

    banner: Callable[[], str]
    between: Callable[[Mapping[str, Any], bool], tuple[str, list[str]]]


def check_size(size: tuple[int, int]) -> None:
    """A window size the view can lay out (at least :data:`MIN_SIZE`); else ValueError."""
    if len(size) != 2 or size[0] < MIN_SIZE[0] or size[1] < MIN_SIZE[1]:
        raise ValueError(f"window size {size[0]}x{size[1]}: the smallest is {MIN_SIZE[0]}x{MIN_SIZE[1]}")


def _short_demographics(text: str) -> str:
    """'19-year-old woman' -> '19F', '6-month-old boy' -> '6moM'."""
    import re

    t = text.lower()
    age = re.search(r"(\d+)[\s-]*(year|yr|month|week|day)", t)
    sex = "F" if re.search(r"\b(woman|female|girl|lady|mother)\b", t) else \
        "M" if re.search(r"\b(man|male|boy|gentleman|father)\b", t) else ""
    if not age:
        return sex
    unit = {"year": "", "yr": "", "month": "mo", "week": "wk", "day": "d"}[age.group(2)]
    return f"{age.group(1)}{unit}{sex}"


def _clock_text(t: float) -> str:
    minutes = int(t // 60)
    return f"{8 + minutes // 60:02d}:{minutes % 60:02d}:{int(t % 60):02d}"


class _Seen:
    """Counts the world's events (the view's replay controls step until the next one)."""

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner
        self.events: list[Any] = []

    def emit(self, event: Any) -> None:
        self.events.append(event)
        if len(self.events) > 20000:
            del self.events[:10000]
        if self.inner is not None:
            self.inner.emit(event)


class SimulationScreen(Screen):
    """The hospital: the bottom of the screen stack."""

    def __init__(self, world: World, map_path: Path, assets: Path, size: tuple[int, int], title: str = "medsim",
                 replay: bool = False, blinded: Blinded | None = None):
        self.replay = replay
        self.blinded = blinded
        self._recorded = 0  # consultations recorded so far (a study pauses after each)
        self.seen = _Seen(world.extra_sink)
        world.extra_sink = self.seen
        self.stack = ScreenStack()
        self.stack.push(self)
        self.typed: list[str] = []  # the person's earlier lines (text box history)
        self.flash = ""  # a one-line message to the person
        self.flash_until = 0.0
        self._menu_items: list[MenuItem] | None = None
        self.world = world
        self.size = size
        self.title = title
        self.map_img = MapImage(map_path)
        self.sprites = SpriteBank(assets / "sprites")
        self.text = TextCache()
        ts = self.map_img.tile
        self.ts = ts
        self.cam = Camera(size[0] - PANEL_W, size[1] - HUD_H, world.map.width * ts, world.map.height * ts)
        # start with every room in view: the rooms' bounding box, entrance forecourt aside
        rooms = [r.rect for r in world.map.rooms.values() if r.name != "entrance"] or [r.rect for r in world.map.rooms.values()]
        self.building = (min(r.x0 for r in rooms) * ts, min(r.y0 for r in rooms) * ts,
                         (max(r.x1 for r in rooms) + 1) * ts, (max(r.y1 for r in rooms) + 1) * ts)
        self.cam.fit(*self.building)
        self.show_minimap = True
        self.show_tags = True
        self._minimap: pygame.Surface | None = None
        self._ended = False
        self.paused = False
        self.speed_i = 1
        self.selected: str | None = None
        self.scroll = 0  # dialogue lines scrolled up from the bottom
        self._status_since: tuple[str, float] | None = None  # the panel's activity line and when it began
        self.show_sheet = True  # the case sheet of the patient or technician a person plays (F2)
        self.sheet_scroll = 0  # its lines scrolled down from the top
        self.sheet_drawn: list[str] = []  # the sheet's lines on screen in the last frame
        self._sheet_rect: pygame.Rect | None = None
        self._offered: Notice | None = None  # the image the popups on screen offer (V opens it)
        self._popups: list[tuple[pygame.Rect, Notice]] = []  # screen rectangles of the popups drawn
        self._panel_links: list[tuple[pygame.Rect, Notice]] = []  # panel lines that link an image
        self._line_images: dict[int, Notice] = {}  # dialogue item -> the image it names
        self.tags_drawn: dict[str, pygame.Rect] = {}  # agent -> its name tag drawn in the last frame (view pixels)
        self.running = True

    # -- input ------------------------------------------------------------------
    def handle(self, ev: pygame.event.Event) -> bool:
        if ev.type == pygame.QUIT:
            self.running = False
        elif ev.type == pygame.KEYDOWN:
            k = ev.key
            if self.world.controlled and is_typing(ev):
                self._typed(ev)  # a person playing types words, never game keys (game.view.keys)
                return True
            if self._player_key(k):
                return True
            if k in (pygame.K_ESCAPE, pygame.K_q):
                if self.selected and k == pygame.K_ESCAPE:
                    self.selected, self.cam.follow = None, None
                else:
                    self.running = False
            elif k == pygame.K_SPACE:
                self.paused = not self.paused
            elif k in (pygame.K_1, pygame.K_2, pygame.K_3, pygame.K_4):
                self.speed_i = k - pygame.K_1
            elif k in (pygame.K_PLUS, pygame.K_EQUALS, pygame.K_KP_PLUS):
                self.cam.zoom_by(1)
            elif k in (pygame.K_MINUS, pygame.K_KP_MINUS):
                self.cam.zoom_by(-1)
            elif k == pygame.K_z:
                whole = (0, 0, self.cam.world_w, self.cam.world_h)
                fit_all = min(self.cam.view_w / self.cam.world_w, self.cam.view_h / self.cam.world_h)
                if abs(self.cam.zoom - round(fit_all * 0.98, 3)) < 1e-6:
                    self.cam.fit(*self.building)
                else:
                    self.cam.fit(*whole)
            elif k == pygame.K_m:
                self.show_minimap = not self.show_minimap
            elif k == pygame.K_n:
                self.show_tags = not self.show_tags
            elif k == pygame.K_TAB:
                ids = [a.id for a in self._visible_actors()]
                if ids:
                    i = (ids.index(self.selected) + 1) % len(ids) if self.selected in ids else 0
                    self.select(ids[i])
            elif k == pygame.K_f and self.selected:
                self.cam.follow = None if self.cam.follow else self.selected
            elif k == pygame.K_PAGEUP:
                self.scroll += 5
            elif k == pygame.K_PAGEDOWN:
                self.scroll = max(0, self.scroll - 5)
        elif ev.type == pygame.MOUSEBUTTONDOWN and ev.button == 1 and self._image_at(ev.pos) is not None:
            self.open_image(self._image_at(ev.pos))
        elif ev.type == pygame.MOUSEBUTTONDOWN and ev.button == 1:
            if ev.pos[0] < self.cam.view_w and ev.pos[1] > HUD_H:
                if not self._minimap_click(ev.pos[0], ev.pos[1] - HUD_H):
                    self.click(ev.pos[0], ev.pos[1] - HUD_H)
        elif ev.type == pygame.MOUSEWHEEL:
            at = pygame.mouse.get_pos()
            if self._sheet_rect is not None and self._sheet_rect.collidepoint(at):
                self.sheet_scroll = max(0, self.sheet_scroll - ev.y * 2)
            elif at[0] >= self.cam.view_w:
                self.scroll = max(0, self.scroll + ev.y * 2)
            else:
                self.cam.zoom_by(1 if ev.y > 0 else -1)
        return True

    def quit(self) -> None:
        self.running = False

    def case_minutes(self) -> dict[str, float]:
        """Sim minutes from the start of each consultation to its verdict (where the world
        recorded both)."""
        out = {}
        for e in self.world.encounters:
            t0, t1 = getattr(e, "started_t", None), getattr(e, "judged_t", None)
            if t0 is not None and t1 is not None:
                out[e.case.id] = (t1 - t0) / 60.0
        return out

    # -- the person ---------------------------------------------------------------
    def say_to_player(self, text: str, seconds: float = 4.0) -> None:
        self.flash, self.flash_until = text, time.monotonic() + seconds

    def request(self) -> Any:
        """The turn the world waits for the person to take, if any."""
        reqs = self.world.requests_for_player()
        return reqs[0] if reqs else None

    def take_over(self, actor_id: str | None = None) -> None:
        if self.blinded is not None and self.world.controlled:
            self.say_to_player(f"In this study you are {self.world.controlled} throughout")
            return
        target = actor_id or self.selected
        if target is None:
            self.say_to_player("Select an agent first (click it, or Tab), then T")
            return
        if self.world.player is None:
            self.say_to_player("This run has no player")
            return
        try:
            self.world.take_control(target)
        except ValueError as e:
            self.say_to_player(str(e))
            return
        if target in self.world.actors:
            self.select(target)
        if pygame.display.get_init():
            pygame.key.start_text_input()  # a person playing types: keys come with their text (game.view.keys)
        self.say_to_player(f"You are {target} now: type on your turn; Ctrl+key for a game key. F1: the keys", 6.0)

    def advance_until(self, what: str, max_sim_s: float = 1800.0) -> int:
        """Replay: step the world until the next ``what`` (event | turn | case) and pause.
        Returns how many events went by."""
        self.paused = True
        start = len(self.seen.events)
        end_t = self.world.t + max_sim_s
        want = {"event": None, "turn": ("utterance",), "case": ("encounter_started", "case_filed")}[what]
        while not self.world.done and self.world.t < end_t:
            self.world.step(0.1)
            new = self.seen.events[start:]
            if new and (want is None or any(e.type in want for e in new)):
                break
        return len(self.seen.events) - start

    def _walk(self, d: tuple[int, int]) -> None:
        if not self.world.step_player(*d) and not self.world.free_to_walk(self.world.controlled or ""):
            a = self.world.actors.get(self.world.controlled or "")
            if a is not None and not a.moving:
                self.say_to_player("The hospital needs you here now (it walks you where you are needed)")

    def _counterpart(self, req: Any) -> str | None:
        """Who the person must stand next to for this turn: the doctor's patient, the
        patient's doctor (None: no need)."""
        if req.role == "doctor":
            return self.world.actor_for(req.case_id, "patient")
        if req.role == "patient":
            return self.world.actor_for(req.case_id, "doctor")
        return None

    def latest_image(self) -> Notice | None:
        """The newest image of the consultation in the panel (else of any)."""
        enc = getattr(self, "_panel_enc", None)
        imgs = [n for n in self.world.notices if n.kind == "image" and (enc is None or n.case_id == enc.case.id)]
        return imgs[-1] if imgs else None

    def offered_image(self) -> Notice | None:
        """The study V opens: the one the image popup on screen names (it says "V: view
        the image"), else the newest of the consultation in the panel."""
        return self._offered or self.latest_image()

    def _image_at(self, pos: tuple[int, int]) -> Notice | None:
        """The image a click at ``pos`` (screen pixels) opens: an image popup's, or the
        study a panel line names."""
        for rect, n in [*self._popups, *self._panel_links]:
            if n.image and rect.collidepoint(pos):
                return n
        return None

    def open_image(self, notice: Notice | None = None) -> bool:
        """Open ``notice``'s image (default: :meth:`offered_image`) in the viewer."""
        n = notice or self.offered_image()
        if n is None or not n.image:
            self.say_to_player("No image yet (an X-ray, CT or photo opens here once it is taken)")
            return False
        self.stack.push(ImageViewer(self.stack, self.text, n.title, n.text, n.image))
        return True

    def _typed(self, ev: pygame.event.Event) -> None:
        """A key that writes a character, while the person plays: on their turn it opens
        their text box with it (the doctor asks; on the last turn only Ctrl+X answers);
        otherwise it does nothing, and the bar says why."""
        req = self.request()
        if req is None:
            self.say_to_player("Not your turn yet: what you type is not sent (your turn shows in a bar here). "
                               "Ctrl+key: a game key", 5.0)
            return
        if req.kind == "doctor" and req.obs.final:
            self.say_to_player("Your last turn: give your diagnosis (Ctrl+X)")
            return
        self._turn(req, pygame.K_RETURN, initial=ev.unicode if (ev.unicode or "").isprintable() else "")

    def case_sheet(self) -> CaseSheet | None:
        """The case sheet of the role the person plays now (the patient's facts, the
        technician's records; agents.case_sheet): of the turn the world waits for, else of
        the case the agent is in. None: no person, the doctor, or no case yet."""
        me = self.world.controlled
        a = self.world.actors.get(me or "")
        if me is None or a is None:
            return None
        req = self.request()
        if req is not None:
            case_id, role = req.case_id, req.role
        elif a.case_id:
            case_id = a.case_id
            role = next((r for r in ("patient", *self.world.staff) if self.world.actor_for(case_id, r) == me), None)
        else:
            return None
        enc = next((e for e in self.world.encounters if e.case.id == case_id), None)
        if enc is None or role is None:
            return None
        return case_sheet(enc.case, role)

    def _player_key(self, k: int) -> bool:
        if k == pygame.K_v:
            self.open_image()
            return True
        if self.world.controlled and k in ARROWS:
            self._walk(ARROWS[k])
            return True
        if k == pygame.K_F2:
            if self.case_sheet() is None:
                self.say_to_player("No case sheet: it is for a person playing a patient or the technician, in a case")
            else:
                self.show_sheet = not self.show_sheet
            return True
        if self.replay and k in (pygame.K_e, pygame.K_j, pygame.K_k):
            what = {pygame.K_e: "event", pygame.K_j: "turn", pygame.K_k: "case"}[k]
            n = self.advance_until(what)
            last = self.seen.events[-1] if self.seen.events else None
            self.say_to_player(f"{what}: {getattr(last, 'type', '-')} ({n} event(s) on; paused - Space goes on)")
            return True
        if k == pygame.K_F1:
            self.stack.push(HelpScreen(self.stack, self.text, KEYS))
            return True
        if k == pygame.K_t:
            self.take_over()
            return True
        if k == pygame.K_g and self.world.controlled and self.blinded is not None:
            self.say_to_player(f"In this study you are {self.world.controlled} throughout")
            return True
        if k == pygame.K_g and self.world.controlled:
            who = self.world.controlled
            self.world.release_control()
            self.say_to_player(f"{who} is the AI's again")
            return True
        if not self.world.controlled or k not in (pygame.K_RETURN, pygame.K_KP_ENTER, pygame.K_o, pygame.K_x):
            return False
        req = self.request()
        if req is None:
            self.say_to_player("Not your turn yet")
            return True
        self._turn(req, k)
        return True

    def _turn(self, req: Any, k: int, initial: str = "") -> None:
        """The person takes the turn ``req`` with key ``k`` (Enter: talk; O: order, X:
        diagnose, for the doctor); ``initial``: the text box's first character."""
        other = self._counterpart(req)
        if other is not None and self.world.controlled and not self.world.near(self.world.controlled, other):
            self.say_to_player(f"Walk back to {other} first (next to them)")
            return
        player = self.world.player
        assert player is not None
        from agents.participants.human import ask, diagnose, order

        if req.kind == "doctor":
            if k == pygame.K_x or req.obs.final:
                if k != pygame.K_x:
                    self.say_to_player("Your last turn: give your diagnosis (Ctrl+X)")
                    return
                self.stack.push(TextBox(self.stack, self.text, "Your final diagnosis",
                                        lambda t: player.answer(req.id, diagnose(t)), history=self.typed,
                                        initial=initial, keep_text_input=True))
            elif k == pygame.K_o:
                self.stack.push(MenuScreen(self.stack, self.text, "Order a test", self.menu_items(),
                                           lambda test: player.answer(req.id, order(test))))
            else:
                self.stack.push(TextBox(self.stack, self.text, "Ask the patient",
                                        lambda t: player.answer(req.id, ask(t)), history=self.typed,
                                        initial=initial, keep_text_input=True))
        elif k in (pygame.K_RETURN, pygame.K_KP_ENTER):
            who = "Answer the doctor" if req.role == "patient" else f"The result of: {req.obs.order or ''}"
            self.stack.push(TextBox(self.stack, self.text, who[:60], lambda t: player.answer(req.id, t),
                                    history=self.typed, initial=initial, keep_text_input=True))

    def menu_items(self) -> list[MenuItem]:
        """The hospital's test menu, grouped by room (from the map and the order routing)."""
        if self._menu_items is None:
            items: list[MenuItem] = []
            for g in test_menu(self.world.map):
                items.append(MenuItem(g.label, header=True))
                items += [MenuItem(t, t) for t in g.tests]
            self._menu_items = items
        return self._menu_items

    def select(self, actor_id: str | None) -> None:
        self.selected = actor_id
        self.cam.follow = actor_id
        self.scroll = 0

    def click(self, sx: int, sy: int) -> None:
        self.select(self._actor_at(sx, sy))

    def _actor_at(self, sx: int, sy: int) -> str | None:
        """The agent nearest the map-view pixel (sx, sy), within about a tile."""
        wx, wy = self.cam.to_world(sx, sy)
        best, dist = None, (self.ts * 0.9) ** 2
        for a in self._visible_actors():
            ax, ay = a.render_pos()
            d = ((ax + 0.5) * self.ts - wx) ** 2 + ((ay + 0.4) * self.ts - wy) ** 2
            if d < dist:
                best, dist = a.id, d
        return best

    def map_area(self) -> pygame.Rect:
        """The map view, in screen pixels (below the bar, left of the panel)."""
        return pygame.Rect(0, HUD_H, self.cam.view_w, self.cam.view_h)

    def panel_rect(self) -> pygame.Rect:
        """The dialogue panel, in screen pixels; its header (case, room, doctor, verdict)
        is at its top."""
        return pygame.Rect(self.size[0] - PANEL_W, HUD_H, PANEL_W, self.size[1] - HUD_H)

    def _visible_actors(self) -> list[Any]:
        return sorted((a for a in self.world.actors.values() if a.present), key=lambda a: a.id)

    # -- update -----------------------------------------------------------------
    def update(self, real_dt: float) -> None:
        keys = pygame.key.get_pressed() if pygame.display.get_init() and not self.stack.typing else None
        if keys is not None and self.world.controlled:  # held arrows keep walking (WASD type: game.view.keys)
            dx = keys[pygame.K_RIGHT] - keys[pygame.K_LEFT]
            dy = keys[pygame.K_DOWN] - keys[pygame.K_UP]
            if dx or dy:
                self.world.step_player(dx, 0 if dx else dy)
        elif keys is not None:
            pan = 600 * real_dt
            dx = (keys[pygame.K_RIGHT] or keys[pygame.K_d]) - (keys[pygame.K_LEFT] or keys[pygame.K_a])
            dy = (keys[pygame.K_DOWN] or keys[pygame.K_s]) - (keys[pygame.K_UP] or keys[pygame.K_w])
            if dx or dy:
                self.cam.pan(dx * pan, dy * pan)
        if not self.paused:
            sim_dt = min(real_dt, 0.1) * SPEEDS[self.speed_i]
            # sub-steps keep walking smooth at 8x
            n = max(1, int(sim_dt / 0.1 + 0.999))
            for _ in range(n):
                self.world.step(sim_dt / n)
        me = self.world.actors.get(self.world.controlled or "")
        room = self.world.map.room_at(me.tile) if me is not None else None
        name = room.name if room is not None else None
        if me is not None and name != getattr(self, "_my_room", None):
            if name is not None and getattr(self, "_my_room", "") != "":
                self.say_to_player(f"{name.replace('_', ' ').title()} ({room.address})", 3.0)
            self._my_room = name
        if self.blinded is not None and len(self.world.finished) > self._recorded:
            self._recorded = len(self.world.finished)
            self._between(self.world.finished[-1], self._recorded >= self.world.config.patients)
        elif self.world.done and not self._ended and self.blinded is None:
            self._ended = True
            self.stack.push(EndOfShiftScreen(self.stack, self.text, self.world.stats(), self.world.finished,
                                             self.case_minutes(), self.quit, area=self.map_area()))
        if self.cam.follow and self.cam.follow in self.world.actors:
            ax, ay = self.world.actors[self.cam.follow].render_pos()
            self.cam.centre_on((ax + 0.5) * self.ts, (ay + 0.5) * self.ts)

    def _between(self, row: Mapping[str, Any], last: bool) -> None:
        """A study's pause after a recorded case: the world holds until the person goes on."""
        assert self.blinded is not None
        title, lines = self.blinded.between(row, last)
        self.paused = True

        def go() -> None:
            self.paused = False

        self.stack.push(PauseScreen(self.stack, self.text, title, lines, self.quit if last else go, self.quit,
                                    area=self.map_area()))

    # -- drawing ----------------------------------------------------------------
    def draw(self, screen: pygame.Surface) -> None:
        view_rect = pygame.Rect(0, HUD_H, self.cam.view_w, self.cam.view_h)
        screen.fill((18, 20, 26), view_rect)
        view = screen.subsurface(view_rect)
        self._draw_map(view)
        self._draw_scanners(view)
        self._draw_actors(view)
        self._draw_popups(view)
        if not self.stack.typing:  # a text box or menu covers the bottom of the view: no card under it
            self._draw_selected_info(view)
        if self.show_minimap and not self._all_in_view():
            self._draw_minimap(view)
        self._draw_hud(screen)
        self._draw_panel(screen)
        self._draw_player_bar(view)

    def tag_text(self, a: Any) -> str:
        """Who is who: "Dr 1", "Tech", "P3 19F"."""
        if a.role == "doctor":
            return "Dr " + a.id.split("-")[-1]
        if a.role == "technician":
            return "Tech"
        if a.role not in ("doctor", "patient"):  # another staff member (a nurse)
            return a.role.replace("_", " ").title()
        enc = next((e for e in self.world.encounters if e.patient is a), None)
        short = _short_demographics(enc.case.demographics) if enc else ""
        return f"P{a.id.split('-')[-1]}" + (f" {short}" if short else "")

    def _minimap_rect(self) -> pygame.Rect:
        w = 190
        h = int(w * self.cam.world_h / self.cam.world_w)
        return pygame.Rect(self.cam.view_w - w - 8, 72, w, h)

    def _all_in_view(self) -> bool:
        """Every room is on screen (the minimap would add nothing and hide a room)."""
        x0, y0 = self.cam.to_world(0, 0)
        x1, y1 = self.cam.to_world(self.cam.view_w, self.cam.view_h)
        bx0, by0, bx1, by1 = self.building
        slack = self.ts  # a tile: the rooms' walls may touch the edge
        return x0 <= bx0 + slack and y0 <= by0 + slack and x1 >= bx1 - slack and y1 >= by1 - slack

    def _minimap_click(self, sx: int, sy: int) -> bool:
        if not self.show_minimap or self._all_in_view():
            return False
        r = self._minimap_rect()
        if not r.collidepoint(sx, sy):
            return False
        self.cam.follow = None
        self.cam.centre_on((sx - r.x) / r.w * self.cam.world_w, (sy - r.y) / r.h * self.cam.world_h)
        return True

    def _draw_minimap(self, view: pygame.Surface) -> None:
        r = self._minimap_rect()
        if self._minimap is None or self._minimap.get_size() != r.size:
            self._minimap = pygame.transform.smoothscale(self.map_img.surface, r.size)
        view.blit(self._minimap, r.topleft)
        pygame.draw.rect(view, (240, 240, 250), r, 2)
        sx, sy = r.w / self.cam.world_w, r.h / self.cam.world_h
        for a in self._visible_actors():
            ax, ay = a.render_pos()
            role = "measurement" if a.role == "technician" else a.role
            colour = (80, 230, 120) if a.id == self.world.controlled else ACCENT.get(role, INK)
            pygame.draw.circle(view, colour, (r.x + int((ax + 0.5) * self.ts * sx), r.y + int((ay + 0.5) * self.ts * sy)), 3)
        x0, y0 = self.cam.to_world(0, 0)
        x1, y1 = self.cam.to_world(self.cam.view_w, self.cam.view_h)
        box = pygame.Rect(r.x + int(max(0, x0) * sx), r.y + int(max(0, y0) * sy),
                          int((min(self.cam.world_w, x1) - max(0, x0)) * sx), int((min(self.cam.world_h, y1) - max(0, y0)) * sy))
        pygame.draw.rect(view, (255, 230, 80), box.clip(r), 2)

    def _draw_player_bar(self, view: pygame.Surface) -> None:
        """The help line, and what the world waits for when the person controls an agent."""
        req = self.request() if self.world.controlled else None
        if req is not None:
            if req.kind == "doctor":
                keys = ("Ctrl+X: your diagnosis (last turn)" if req.obs.final
                        else "type (or Enter) to ask   Ctrl+O: order a test   Ctrl+X: diagnose")
            else:
                keys = "type (or Enter) to answer" + ("   F2: your case sheet" if self.case_sheet() else "")
            told = req.obs.text.split("\n")[0]
            line = f"Your turn ({self.world.controlled}): {keys}"
            rect = pygame.Rect(8, 8, view.get_width() - 16, 56)
            draw_box(view, rect, (255, 246, 200), (80, 230, 120), radius=8, alpha=240)
            view.blit(self.text.render(line, 20, INK), (rect.x + 10, rect.y + 6))
            view.blit(self.text.render(wrap(told, 100, 1)[0] if told else "", 18, (70, 70, 80)), (rect.x + 10, rect.y + 30))
            return
        if self.flash and time.monotonic() < self.flash_until:
            text = self.flash
        elif self.world.controlled:
            text = (f"You are {self.world.controlled}; not your turn yet (typing does nothing until it is).  "
                    f"Ctrl+G: give back to the AI   F1: all keys")
        elif self.replay:
            text = "Replay: E next event   J next turn   K next case   Space pause   1-4 speed   F1: all keys"
        else:
            text = "T: take over the selected agent   F1: all keys"
        img = self.text.render(text, 18, (240, 242, 248))
        rect = pygame.Rect(8, 6, img.get_width() + 12, 20)
        draw_box(view, rect, (40, 50, 70), (40, 50, 70), radius=4, alpha=180)
        view.blit(img, (rect.x + 6, rect.y + 2))

    def _draw_map(self, view: pygame.Surface) -> None:
        z = self.cam.zoom
        img = self.map_img.at(z)
        left, top = self.cam.to_world(0, 0)
        view.blit(img, (0, 0), pygame.Rect(int(left * z), int(top * z), self.cam.view_w, self.cam.view_h))
        if z >= 0.4:
            size = 16 if z >= 0.75 else 14 if z >= 0.5 else 13
            for room in self.world.map.rooms.values():
                if room.name.startswith("corridor") or room.name == "entrance":
                    continue
                sx, sy = self.cam.to_screen(room.rect.x0 * self.ts + 4, room.rect.y0 * self.ts + 2)
                if -200 < sx < self.cam.view_w and -20 < sy < self.cam.view_h:
                    label = self.text.render(room.name.replace("_", " ").upper(), size, (255, 255, 255))
                    bg = pygame.Rect(sx - 2, sy - 1, label.get_width() + 4, label.get_height() + 2)
                    draw_box(view, bg, (40, 50, 70), (40, 50, 70), radius=3, alpha=170)
                    view.blit(label, (sx, sy))

    def _draw_actors(self, view: pygame.Surface) -> None:
        z = self.cam.zoom
        ts = self.ts
        bubbles = []
        tags: list[tuple[Any, int, int, int, str]] = []  # (actor, sprite x, y, size, role)
        you: list[pygame.Rect] = []
        for a in sorted(self._visible_actors(), key=lambda a: a.render_pos()[1]):
            ax, ay = a.render_pos()
            sx, sy = self.cam.to_screen(ax * ts, ay * ts)
            size = int(ts * z)
            if sx < -size or sy < -size or sx > self.cam.view_w + size or sy > self.cam.view_h + size:
                continue
            step = 0
            if a.moving:
                step = 1 + int((a.walked + a.progress) * 2) % 2
            if a.id == self.world.controlled:
                pygame.draw.ellipse(view, (80, 230, 120), pygame.Rect(sx, sy + size - size // 3, size, size // 2), 3)
                tag = self.text.render("YOU", 16, (20, 90, 40))
                you.append(pygame.Rect(sx + size // 2 - tag.get_width() // 2 - 3, sy - 16, tag.get_width() + 6, 15))
                draw_box(view, you[-1], (200, 250, 210), (80, 230, 120), radius=4)
                view.blit(tag, (sx + size // 2 - tag.get_width() // 2, sy - 15))
            elif a.id == self.selected:
                pygame.draw.ellipse(view, (255, 230, 80), pygame.Rect(sx + 2, sy + size - size // 4, size - 4, size // 3), 2)
            view.blit(self.sprites.get(a.sprite, a.facing, step, z), (sx, sy))
            role = "measurement" if a.role == "technician" else a.role
            if self.show_tags and a.id != self.world.controlled:
                tags.append((a, sx, sy, size, role))
            if a.state == "thinking" and a.id != self.world.controlled:  # the person's turn is shown in the bar
                bubbles.append((a, (sx + size // 2, sy), role, True))
            elif a.speech:
                bubbles.append((a, (sx + size // 2, sy), role, False))
        self._draw_tags(view, tags, you)
        for a, anchor, role, thinking in bubbles:
            draw_bubble(view, self.text, a.speech or "", anchor, ACCENT.get(role, INK), thinking)

    def _hovered(self) -> str | None:
        """The agent under the mouse pointer, if it is over the map."""
        if not pygame.display.get_init() or not pygame.mouse.get_focused():
            return None
        mx, my = pygame.mouse.get_pos()
        if mx >= self.cam.view_w or my < HUD_H:
            return None
        return self._actor_at(mx, my - HUD_H)

    def _draw_tags(self, view: pygame.Surface, tags: list[tuple[Any, int, int, int, str]],
                   taken: list[pygame.Rect]) -> None:
        """Name tags that never cover one another (game.view.layout): each goes below its
        agent, else above it, beside it or a row further; the selected and the hovered
        agent's first. A tag with no free place is left out (a crowded waiting room shows
        what fits; select or point at an agent to see its tag)."""
        first = {self.selected, self._hovered()} - {None}
        tags = sorted(tags, key=lambda t: (t[0].id not in first, t[2], t[1]))
        imgs = [self.text.render(self.tag_text(a), 15, (255, 255, 255)) for a, *_ in tags]
        wanted = []
        for (a, sx, sy, size, _), img in zip(tags, imgs):
            w, h = img.get_width() + 6, img.get_height() + 1
            cx = sx + size // 2
            wanted.append([pygame.Rect(cx - w // 2, sy + size - 2, w, h),  # below the feet
                           pygame.Rect(cx - w // 2, sy - h, w, h),  # above the head
                           pygame.Rect(sx + size, sy + size // 2 - h // 2, w, h),  # to the right
                           pygame.Rect(sx - w, sy + size // 2 - h // 2, w, h),  # to the left
                           pygame.Rect(cx - w // 2, sy + size - 2 + h, w, h),  # a row further down
                           pygame.Rect(cx - w // 2, sy - 2 * h, w, h)])  # a row further up
        self.tags_drawn = {}
        for (a, _, _, _, role), img, rect in zip(tags, imgs, place_labels(wanted, taken)):
            if rect is None:
                continue
            colour = ACCENT.get(role, INK)
            draw_box(view, rect, tuple(max(0, c - 70) for c in colour), colour, radius=4, alpha=215)  # type: ignore[arg-type]
            view.blit(img, (rect.x + 3, rect.y + 1))
            self.tags_drawn[a.id] = rect

    def _draw_popups(self, view: pygame.Surface) -> None:
        """Test results, images and verdicts of the last seconds, the newest at the bottom.
        The newest image popup says "V: view the image" and is the one V opens; any image
        popup opens with a click."""
        recent = [n for n in self.world.notices if self.world.t - n.t < POPUP_S][-3:]
        images = [n for n in recent if n.image]
        self._offered = images[-1] if images else None
        self._popups = []
        y = view.get_height() - 10
        for n in reversed(recent):
            lines = wrap(n.text, 56 if not n.image else 40, 3)
            h = max(26 + 18 * len(lines), 96 if n.image else 0)
            rect = pygame.Rect(10, y - h, 440, h)
            self._popups.append((rect.move(0, HUD_H), n))
            colour = (110, 200, 120) if "correct" in n.title else (230, 120, 100) if n.kind == "diagnosis" else (120, 170, 240)
            draw_box(view, rect, PAPER, colour, radius=8, alpha=235)
            x_text = rect.x + 10
            if n.image:
                thumb = self._thumb(n.image)
                if thumb is not None:
                    view.blit(thumb, (rect.x + 6, rect.y + (h - thumb.get_height()) // 2))
                    x_text = rect.x + 14 + thumb.get_width()
            view.blit(self.text.render(n.title[:44], 20, INK), (x_text, rect.y + 6))
            for i, line in enumerate(lines):
                view.blit(self.text.render(line, 18, (60, 60, 70)), (x_text, rect.y + 26 + i * 18))
            if n.image:
                v = "Ctrl+V" if self.world.controlled else "V"
                hint = f"{v}: view the image" if n is self._offered else "click: view the image"
                view.blit(self.text.render(hint, 16, (40, 80, 150)), (x_text, rect.bottom - 20))
            y -= h + 8

    def _thumb(self, path: str) -> Any:
        cache = self.__dict__.setdefault("_thumbs", {})
        if path not in cache:
            try:
                img = as_rgb(load_study_image(path))
                k = 84 / max(img.get_size())
                cache[path] = pygame.transform.smoothscale(img, (max(1, int(img.get_width() * k)),
                                                                 max(1, int(img.get_height() * k))))
            except (pygame.error, OSError):
                cache[path] = None
        return cache[path]

    def _draw_scanners(self, view: pygame.Surface) -> None:
        """A machine at work glows: the equipment a test station declares (its
        ``equipment`` property in the map) while a test is done there."""
        for e in self.world.encounters:
            if e.phase.value != "at_test" or not e.test_station:
                continue
            station = self.world.map.test_station(e.test_station)
            name = station.machine if station else None
            if name is None or name not in self.world.map.points:
                continue
            tile = self.world.map.point(name).tile
            sx, sy = self.cam.to_screen((tile.x + 0.5) * self.ts, (tile.y + 0.5) * self.ts)
            pulse = 0.5 + 0.5 * math.sin(time.monotonic() * 6)
            r = int(self.ts * self.cam.zoom * (0.9 + 0.3 * pulse))
            glow = pygame.Surface((2 * r, 2 * r), pygame.SRCALPHA)
            pygame.draw.circle(glow, (120, 220, 255, int(60 + 80 * pulse)), (r, r), r)
            pygame.draw.circle(glow, (200, 245, 255, 200), (r, r), r, 2)
            view.blit(glow, (sx - r, sy - r))

    def _draw_selected_info(self, view: pygame.Surface) -> None:
        a = self.world.actors.get(self.selected) if self.selected else None
        if a is None:
            return
        enc = next((e for e in self.world.encounters if e.case.id == a.case_id), None)
        state = "your turn" if a.id == self.world.controlled and self.request() is not None else a.state
        who = f"{a.id} ({a.role}{', you' if a.id == self.world.controlled else ''})"
        lines = [who, f"state: {state}", f"doing: {a.purpose or '-'}"]
        if a.case_id:
            lines.append(f"case: {a.case_id}")
        if enc is not None:
            lines.append(f"{enc.case.demographics}")
            lines.append(f"phase: {enc.phase.value}")
        rect = pygame.Rect(view.get_width() - 290, view.get_height() - 20 - 20 * len(lines), 280, 20 * len(lines) + 10)
        draw_box(view, rect, PAPER, (255, 230, 80), radius=8, alpha=235)
        for i, line in enumerate(lines):
            view.blit(self.text.render(line[:40], 19, INK), (rect.x + 10, rect.y + 6 + 20 * i))

    def _draw_hud(self, screen: pygame.Surface) -> None:
        pygame.draw.rect(screen, (36, 42, 58), pygame.Rect(0, 0, screen.get_width(), HUD_H))
        s = self.world.stats()
        acc = "-" if s["accuracy"] is None else f"{s['accuracy']:.0%}"
        state = "PAUSED" if self.paused else f"{SPEEDS[self.speed_i]}x"
        thinking = sum(1 for a in self.world.actors.values() if a.state == "thinking")
        if self.blinded is not None:  # a study: where the person is in it, never how they do
            text = f"{self.blinded.banner()}   {_clock_text(self.world.t)}   {state}"
            screen.blit(self.text.render(text, 22, (255, 226, 140)), (10, 9))
            return
        text = (f"{self.title}   {_clock_text(self.world.t)}   {state}   patients {s['patients']}/"
                f"{self.world.config.patients}   seen {s['seen']}   correct {s['correct']}   accuracy {acc}   "
                f"thinking {thinking}")
        screen.blit(self.text.render(text, 22, (235, 238, 245)), (10, 9))

    def _dialogue(self) -> tuple[str, list[tuple[str, str]]]:
        enc = None
        a = self.world.actors.get(self.selected) if self.selected else None
        if a is not None and a.case_id:
            enc = next((e for e in self.world.encounters if e.case.id == a.case_id), None)
        if enc is None or enc.sink is None:
            started = [e for e in self.world.encounters if e.sink is not None]
            enc = started[-1] if started else None
        if enc is None or enc.sink is None:
            return "Dialogue", []
        who = {"doctor": "Doctor", "patient": "Patient", "measurement": "Technician"}
        self._panel_enc = enc
        studies = [st.test for st in enc.case.imaging]
        shown = {n.title.split(":")[0]: n for n in self.world.notices if n.kind == "image" and n.case_id == enc.case.id}
        items = []
        self._line_images = {}
        me = self.world.controlled
        if me is not None and self.world.actor_for(enc.case.id, "doctor") == me:
            # what a doctor starts with (an AI doctor has it in its prompt): the demographics and the task
            items.append(("", f"Your task: {printable(enc.case.objective, single_line=True)}"))
        for u in enc.sink.utterances:
            line = f"{who.get(u.speaker, u.speaker)}: {printable(u.text, single_line=True)}"
            named = [t for t in studies if t in shown and t in u.text] if u.speaker == "measurement" else []
            if named:
                line += "  [image: click or V]"
                self._line_images[len(items)] = shown[named[0]]  # the study this line names
            items.append((u.speaker, line))
        return f"{enc.case.id}: {enc.case.demographics}", items

    def _status(self) -> str:
        """The panel's consultation's activity (``World.activity``, with its model call's
        progress) and the seconds its step has lasted on this screen; "" when a line of it
        is being said."""
        enc = getattr(self, "_panel_enc", None)
        step = self.world.activity(enc, progress=False) if enc is not None else None
        if not step:
            self._status_since = None
            return ""
        since = self._status_since
        if since is None or since[0] != step:  # the seconds count the step, not each progress report
            self._status_since = since = (step, time.monotonic())
        waited = int(time.monotonic() - since[1])
        now = self.world.activity(enc) or step
        return f"… {now}" + (f" ({waited} s)" if waited >= 2 else "")

    def _panel_header(self) -> tuple[str, str, tuple[int, int, int]]:
        """The room, the doctor and the verdict of the consultation in the panel."""
        enc = getattr(self, "_panel_enc", None)
        if enc is None:
            return "", "", PANEL_TEXT
        where = f"{(enc.room or '-').replace('_', ' ')} · {enc.doctor.id if enc.doctor else '-'} · {enc.patient.id}"
        row = enc.result
        if row is None:
            return where, "", PANEL_TEXT
        if self.blinded is not None or row.get("correct") is None and not row["error"] and row["status"] != "failed":
            return where, f"Recorded: {row.get('diagnosis') or 'no diagnosis'} (not judged here)", PANEL_TEXT
        if row["error"]:
            return where, f"Error: {row['error'][:60]}", (240, 150, 90)
        if row["status"] == "failed":
            return where, "Failed consultation (not scored)", (240, 150, 90)
        ok = bool(row["correct"])
        return where, (f"{'CORRECT' if ok else 'WRONG'}: {row['diagnosis'] or 'no diagnosis'}"
                       + ("" if ok else f" (key: {row['truth']})")), ((120, 220, 130) if ok else (240, 120, 110))

    def dirty_rects(self, screen: pygame.Surface) -> list[pygame.Rect] | None:
        """What changed in the last draw: the map view and the HUD, plus the panel when
        its text changed; None: the whole screen (a screen above this one drew too)."""
        if self.stack.top is not self:
            self._panel_key = None  # redraw the panel under whatever closes next
            return None
        rects = [pygame.Rect(0, 0, screen.get_width(), HUD_H), pygame.Rect(0, HUD_H, self.cam.view_w, self.cam.view_h)]
        if self._panel_drawn:
            rects.append(pygame.Rect(screen.get_width() - PANEL_W, HUD_H, PANEL_W, screen.get_height() - HUD_H))
        return rects

    def _draw_panel(self, screen: pygame.Surface) -> None:
        self._panel_enc = None
        title, items = self._dialogue()
        sheet = self.case_sheet()
        if sheet is not None and (sheet.case_id, sheet.role) != getattr(self, "_sheet_for", None):
            self._sheet_for, self.sheet_scroll = (sheet.case_id, sheet.role), 0  # another case: from its top
        status = self._status()
        key = (title, len(items), items[-1] if items else None, self.scroll, self._panel_header(), screen.get_size(), status,
               sum(1 for n in self.world.notices if n.kind == "image"), sheet, self.show_sheet, self.sheet_scroll,
               getattr(self.request(), "id", None) if sheet is not None else None)
        self._panel_drawn = key != getattr(self, "_panel_key", None)
        if not self._panel_drawn:
            return  # the same text: what is on screen stays (see dirty_rects)
        self._panel_key = key
        x0 = screen.get_width() - PANEL_W
        rect = pygame.Rect(x0, HUD_H, PANEL_W, screen.get_height() - HUD_H)
        pygame.draw.rect(screen, PANEL, rect)
        screen.blit(self.text.render(title[:44], 21, (255, 255, 255)), (x0 + 12, HUD_H + 10))
        where, verdict, vcol = self._panel_header()
        top = HUD_H + 38
        if where:
            screen.blit(self.text.render(where[:52], 17, (170, 176, 190)), (x0 + 12, HUD_H + 30))
            top += 8
        if verdict:
            for i, line in enumerate(wrap(verdict, 44, 2)):
                screen.blit(self.text.render(line, 18, vcol), (x0 + 12, top + 18 * i))
            top += 18 * len(wrap(verdict, 44, 2)) + 6
        lines: list[tuple[str, str, int]] = []  # (speaker of an item's first line, text, item)
        for n, (speaker, text) in enumerate(items):
            for i, line in enumerate(wrap(text, 46)):
                lines.append((speaker if i == 0 else "", line, n))
            lines.append(("", "", -1))
        per = 18
        # the sheet takes what the dialogue does not need yet, at least half the panel, and
        # leaves the dialogue at least four lines
        avail = rect.bottom - top
        budget = min(avail - 4 * per, max(avail // 2, avail - per * len(lines) - 16))
        top = self._draw_sheet(screen, sheet, x0, top, budget)
        said = wrap(status, 50, 3) if status else ()  # the step, then how far its model call has got
        room = (rect.bottom - top - 6 - (per * len(said) + 4 if said else 0)) // per
        end = max(0, len(lines) - self.scroll)
        start = max(0, end - room)
        y = top
        self._panel_links = []
        for speaker, line, n in lines[start:end]:
            colour = ACCENT.get(speaker, PANEL_TEXT) if speaker else PANEL_TEXT
            if n in self._line_images:  # the lines of an item that links an image
                colour = (255, 220, 120)
                self._panel_links.append((pygame.Rect(x0, y, PANEL_W, per), self._line_images[n]))
            screen.blit(self.text.render(line, 18, colour), (x0 + 12, y))
            y += per
        if said and not self.scroll:  # under the last line (rows are kept for it): what the consultation does until the next
            y = min(y, rect.bottom - per * len(said) - 4)
            for i, line in enumerate(said):
                screen.blit(self.text.render(line, 17, (150, 190, 240)), (x0 + 12, y + per * i))

    def _draw_sheet(self, screen: pygame.Surface, sheet: CaseSheet | None, x0: int, top: int, budget: int) -> int:
        """The case sheet of the role the person plays (the patient's facts, the
        technician's records), at the panel's top in at most ``budget`` pixels (the wheel
        scrolls it); every line escaped. Returns where the dialogue starts."""
        self.sheet_drawn, self._sheet_rect = [], None
        if sheet is None:
            return top
        if not self.show_sheet:
            screen.blit(self.text.render("F2: your case sheet (what you know)", 17, (255, 220, 120)), (x0 + 12, top))
            return top + 22
        font, per, width = self.text.font(16), 16, PANEL_W - 36
        req = self.request()
        order = (req.obs.order or "").lower() if req is not None and req.kind == "reply" else ""
        rows: list[tuple[str, int, tuple[int, int, int]]] = []  # text, indent (px), colour
        for line in wrap_px(font, printable(sheet.heading, single_line=True), width):
            rows.append((line, 0, (255, 220, 120)))
        first_match = None
        for raw in sheet.lines()[1:]:
            depth = (len(raw) - len(raw.lstrip(" "))) * 6
            ordered = bool(order) and raw.strip().lower().startswith(order)  # the records of the order asked
            if ordered and first_match is None:
                first_match = len(rows)
            colour = (140, 230, 150) if ordered else (170, 200, 240) if raw.endswith(":") else PANEL_TEXT
            for i, piece in enumerate(wrap_px(font, printable(raw.strip(), single_line=True), width - depth - 12)):
                rows.append((piece, depth + (12 if i else 0), colour))
        fit = max(3, (budget - 42) // per)
        if req is not None and req.id != getattr(self, "_sheet_req", None):
            self._sheet_req = req.id  # a new order: the sheet scrolls to its records
            if first_match is not None:
                self.sheet_scroll = max(0, first_match - 1)
        self.sheet_scroll = max(0, min(self.sheet_scroll, len(rows) - fit))
        shown = rows[self.sheet_scroll: self.sheet_scroll + fit]
        box = pygame.Rect(x0 + 6, top, PANEL_W - 12, 26 + per * len(shown) + 6)
        pygame.draw.rect(screen, (44, 50, 68), box, border_radius=6)
        more = len(rows) > fit
        head = "YOUR CASE SHEET   F2 hides" + (f"   wheel: more ({self.sheet_scroll + len(shown)}/{len(rows)})"
                                                if more else "")
        screen.blit(self.text.render(head, 15, (150, 160, 180)), (box.x + 8, box.y + 6))
        y = box.y + 26
        for text, indent, colour in shown:
            screen.blit(self.text.render(text, 16, colour), (box.x + 8 + indent, y))
            y += per
        self.sheet_drawn = [text for text, _, _ in shown]
        self._sheet_rect = box
        return box.bottom + 10


def present(ui: SimulationScreen, screen: pygame.Surface) -> None:
    """Draw the screen stack and put on the display what changed."""
    ui.stack.draw(screen)
    rects = ui.dirty_rects(screen)
    if rects is None:
        pygame.display.flip()
    else:
        pygame.display.update(rects)


def run_window(world: World, map_path: Path, assets: Path, *, headless: bool = False, frames: int | None = None,
               screenshot: Path | None = None, size: tuple[int, int] = (1280, 720), speed: int = 2,
               select: str | None = None, title: str = "medsim", fixed_dt: float | None = None,
               zoom: float | None = None, play_as: str | None = None, replay: bool = False,
               blinded: Blinded | None = None) -> dict[str, Any]:
    """Open the window (or the SDL dummy driver when ``headless``) and run the loop.
    Returns frame-time figures.

    Raises:
        ValueError: ``zoom`` is not one of :data:`game.view.camera.ZOOMS`, or ``size`` is
            below :data:`MIN_SIZE`.
        NoDisplay: not ``headless`` and there is no display (game.view.display).
    """
    if zoom is not None:
        check_zoom(zoom)
    check_size(size)
    prepare_display(headless)
    pygame.display.init()  # and fonts; no audio: the game has no sound
    pygame.font.init()
    try:
        screen = pygame.display.set_mode(size)  # before load_pygame: it converts images
        pygame.display.set_caption(title)
        ui = SimulationScreen(world, map_path, assets, size, title, replay=replay, blinded=blinded)
        ui.speed_i = SPEEDS.index(speed) if speed in SPEEDS else 1
        if zoom is not None:
            ui.cam.set_zoom(zoom)
        if select:
            ui.select(select)
        if play_as:
            ui.take_over({"doctor": "doctor-1", "patient": "patient-1", "technician": "technician"}.get(play_as, play_as))
        clock = pygame.time.Clock()
        times: list[float] = []
        n = 0
        while ui.running and (frames is None or n < frames):
            real_dt = fixed_dt if fixed_dt is not None else (clock.tick(60) / 1000.0)
            t0 = time.perf_counter()
            for ev in pygame.event.get():
                ui.stack.handle(ev)
            ui.stack.update(real_dt)
            present(ui, screen)
            times.append(time.perf_counter() - t0)
            n += 1
        if screenshot:
            Path(screenshot).parent.mkdir(parents=True, exist_ok=True)
            pygame.image.save(screen, str(screenshot))
        times.sort()
        return {"frames": n, "p50_ms": 1000 * times[len(times) // 2] if times else 0.0,
                "p95_ms": 1000 * times[int(len(times) * 0.95)] if times else 0.0}
    finally:
        pygame.quit()
