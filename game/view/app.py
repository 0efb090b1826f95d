"""The simulation screen: camera, sprites, speech bubbles, dialogue panel, HUD, popups,
pause and speed. Reads the world; never changes it (beyond stepping it)."""
from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

import pygame

from game.catalogue import test_menu
from game.view.camera import Camera
from game.view.render import ACCENT, INK, PANEL, PANEL_TEXT, PAPER, MapImage, SpriteBank, TextCache, draw_box, draw_bubble, wrap
from game.view.screens import (EndOfShiftScreen, HelpScreen, ImageViewer, MenuItem, MenuScreen, Screen, ScreenStack,
                               TextBox, as_rgb, load_study_image)
from game.world import World

__all__ = ["SimulationScreen", "run_window", "present"]

SPEEDS = (1, 2, 4, 8)
PANEL_W = 380
HUD_H = 34


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


KEYS = (
    ("Watching", (("Space", "pause / go on"), ("1 2 3 4", "speed 1x 2x 4x 8x"), ("Arrows / WASD", "pan"),
                  ("+ / - / wheel", "zoom"), ("Z", "the whole map / every room"), ("M / N", "minimap / name tags"), ("Click / Tab", "select an agent (and follow it)"),
                  ("F", "follow the selected agent or not"), ("PgUp / PgDn", "scroll the dialogue"),
                  ("V", "view the latest image (X-ray, CT, ECG, photo) beside its report"),
                  ("Esc", "deselect; Esc again or Q quits"))),
    ("Playing", (("T", "take over the selected agent (doctor, patient or technician)"),
                 ("Arrows / WASD", "walk your agent (on your turn, or when it has nothing to do)"),
                 ("G", "give the agent back to the AI (it carries on from the same transcript)"),
                 ("Enter", "doctor: ask the patient; patient or technician: answer"),
                 ("O", "doctor: order a test from the hospital's menu"),
                 ("X", "doctor: give the final diagnosis"))),
    ("Replay", (("E", "step one event (pauses)"), ("J", "jump to the next turn"), ("K", "jump to the next case"),)),
    ("Typing", (("Enter / Esc", "send / cancel"), ("Up / Down", "earlier lines"), ("Ctrl+V", "paste"),
                ("Ctrl+U", "clear"))),
    ("", (("F1", "this help"),)),
)


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
                 replay: bool = False):
        self.replay = replay
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
        self.running = True

    # -- input ------------------------------------------------------------------
    def handle(self, ev: pygame.event.Event) -> bool:
        if ev.type == pygame.QUIT:
            self.running = False
        elif ev.type == pygame.KEYDOWN:
            k = ev.key
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
        elif ev.type == pygame.MOUSEBUTTONDOWN and ev.button == 1 and any(
                r.collidepoint(ev.pos) for r in getattr(self, "_panel_links", [])):
            self.open_image()
        elif ev.type == pygame.MOUSEBUTTONDOWN and ev.button == 1:
            if ev.pos[0] < self.cam.view_w and ev.pos[1] > HUD_H:
                if not self._minimap_click(ev.pos[0], ev.pos[1] - HUD_H):
                    self.click(ev.pos[0], ev.pos[1] - HUD_H)
        elif ev.type == pygame.MOUSEWHEEL:
            if pygame.mouse.get_pos()[0] >= self.cam.view_w:
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
        self.say_to_player(f"You are {target} now. F1: the keys")

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

    _DIRS = {pygame.K_LEFT: (-1, 0), pygame.K_a: (-1, 0), pygame.K_RIGHT: (1, 0), pygame.K_d: (1, 0),
             pygame.K_UP: (0, -1), pygame.K_w: (0, -1), pygame.K_DOWN: (0, 1), pygame.K_s: (0, 1)}

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

    def latest_image(self) -> Any:
        """The newest image of the consultation in the panel (else of any)."""
        enc = getattr(self, "_panel_enc", None)
        imgs = [n for n in self.world.notices if n.kind == "image" and (enc is None or n.case_id == enc.case.id)]
        return imgs[-1] if imgs else None

    def open_image(self, notice: Any = None) -> bool:
        n = notice or self.latest_image()
        if n is None or not n.image:
            self.say_to_player("No image yet (an X-ray, CT or photo opens here once it is taken)")
            return False
        self.stack.push(ImageViewer(self.stack, self.text, n.title, n.text, n.image))
        return True

    def _player_key(self, k: int) -> bool:
        if k == pygame.K_v:
            self.open_image()
            return True
        if self.world.controlled and k in self._DIRS:
            self._walk(self._DIRS[k])
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
        other = self._counterpart(req)
        if other is not None and self.world.controlled and not self.world.near(self.world.controlled, other):
            self.say_to_player(f"Walk back to {other} first (next to them)")
            return True
        player = self.world.player
        assert player is not None
        from agents.participants.human import ask, diagnose, order

        if req.kind == "doctor":
            if k == pygame.K_x or req.obs.final:
                if k != pygame.K_x:
                    self.say_to_player("Your last turn: give your diagnosis (X)")
                    return True
                self.stack.push(TextBox(self.stack, self.text, "Your final diagnosis",
                                        lambda t: player.answer(req.id, diagnose(t)), history=self.typed))
            elif k == pygame.K_o:
                self.stack.push(MenuScreen(self.stack, self.text, "Order a test", self.menu_items(),
                                           lambda test: player.answer(req.id, order(test))))
            else:
                self.stack.push(TextBox(self.stack, self.text, "Ask the patient",
                                        lambda t: player.answer(req.id, ask(t)), history=self.typed))
        elif k in (pygame.K_RETURN, pygame.K_KP_ENTER):
            who = "Answer the doctor" if req.role == "patient" else f"The result of: {req.obs.order or ''}"
            self.stack.push(TextBox(self.stack, self.text, who[:60], lambda t: player.answer(req.id, t),
                                    history=self.typed))
        return True

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
        wx, wy = self.cam.to_world(sx, sy)
        best, dist = None, (self.ts * 0.9) ** 2
        for a in self._visible_actors():
            ax, ay = a.render_pos()
            d = ((ax + 0.5) * self.ts - wx) ** 2 + ((ay + 0.4) * self.ts - wy) ** 2
            if d < dist:
                best, dist = a.id, d
        self.select(best)

    def _visible_actors(self) -> list[Any]:
        return sorted((a for a in self.world.actors.values() if a.present), key=lambda a: a.id)

    # -- update -----------------------------------------------------------------
    def update(self, real_dt: float) -> None:
        keys = pygame.key.get_pressed() if pygame.display.get_init() and not self.stack.typing else None
        if keys is not None:
            pan = 600 * real_dt
            dx = (keys[pygame.K_RIGHT] or keys[pygame.K_d]) - (keys[pygame.K_LEFT] or keys[pygame.K_a])
            dy = (keys[pygame.K_DOWN] or keys[pygame.K_s]) - (keys[pygame.K_UP] or keys[pygame.K_w])
            if (dx or dy) and self.world.controlled:
                self.world.step_player(dx, 0 if dx else dy)  # held keys keep walking
            elif dx or dy:
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
        if self.world.done and not self._ended:
            self._ended = True
            self.stack.push(EndOfShiftScreen(self.stack, self.text, self.world.stats(), self.world.finished,
                                             self.case_minutes(), self.quit))
        if self.cam.follow and self.cam.follow in self.world.actors:
            ax, ay = self.world.actors[self.cam.follow].render_pos()
            self.cam.centre_on((ax + 0.5) * self.ts, (ay + 0.5) * self.ts)

    # -- drawing ----------------------------------------------------------------
    def draw(self, screen: pygame.Surface) -> None:
        view_rect = pygame.Rect(0, HUD_H, self.cam.view_w, self.cam.view_h)
        screen.fill((18, 20, 26), view_rect)
        view = screen.subsurface(view_rect)
        self._draw_map(view)
        self._draw_scanners(view)
        self._draw_actors(view)
        self._draw_popups(view)
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
        enc = next((e for e in self.world.encounters if e.patient is a), None)
        short = _short_demographics(enc.case.demographics) if enc else ""
        return f"P{a.id.split('-')[-1]}" + (f" {short}" if short else "")

    def _draw_tag(self, view: pygame.Surface, a: Any, cx: int, bottom: int, role: str) -> None:
        img = self.text.render(self.tag_text(a), 15, (255, 255, 255))
        colour = ACCENT.get(role, INK)
        rect = pygame.Rect(cx - img.get_width() // 2 - 3, bottom - 2, img.get_width() + 6, img.get_height() + 1)
        draw_box(view, rect, tuple(max(0, c - 70) for c in colour), colour, radius=4, alpha=215)  # type: ignore[arg-type]
        view.blit(img, (rect.x + 3, rect.y + 1))

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
                keys = "X: your diagnosis (last turn)" if req.obs.final else "Enter: ask   O: order a test   X: diagnose"
            else:
                keys = "Enter: answer"
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
            text = f"You are {self.world.controlled}.  G: give back to the AI   F1: all keys"
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
                draw_box(view, pygame.Rect(sx + size // 2 - tag.get_width() // 2 - 3, sy - 16, tag.get_width() + 6, 15),
                         (200, 250, 210), (80, 230, 120), radius=4)
                view.blit(tag, (sx + size // 2 - tag.get_width() // 2, sy - 15))
            elif a.id == self.selected:
                pygame.draw.ellipse(view, (255, 230, 80), pygame.Rect(sx + 2, sy + size - size // 4, size - 4, size // 3), 2)
            view.blit(self.sprites.get(a.sprite, a.facing, step, z), (sx, sy))
            role = "measurement" if a.role == "technician" else a.role
            if self.show_tags and a.id != self.world.controlled:
                self._draw_tag(view, a, sx + size // 2, sy + size, role)
            if a.state == "thinking" and a.id != self.world.controlled:  # the person's turn is shown in the bar
                bubbles.append((a, (sx + size // 2, sy), role, True))
            elif a.speech:
                bubbles.append((a, (sx + size // 2, sy), role, False))
        for a, anchor, role, thinking in bubbles:
            draw_bubble(view, self.text, a.speech or "", anchor, ACCENT.get(role, INK), thinking)

    def _draw_popups(self, view: pygame.Surface) -> None:
        recent = [n for n in self.world.notices if self.world.t - n.t < 8.0][-3:]
        y = view.get_height() - 10
        for n in reversed(recent):
            lines = wrap(n.text, 56 if not n.image else 40, 3)
            h = max(26 + 18 * len(lines), 96 if n.image else 0)
            rect = pygame.Rect(10, y - h, 440, h)
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
                view.blit(self.text.render("V: view the image", 16, (40, 80, 150)), (x_text, rect.bottom - 20))
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
        """A machine at work glows: the X-ray, CT/MRI or ECG at a test being done."""
        machines = {"xray_station": "xray_machine", "ct_station": "ct_scanner", "ecg_station": "ecg_machine",
                    "lab_station": "lab_bench"}
        for e in self.world.encounters:
            if e.phase.value != "at_test" or not e.test_station:
                continue
            name = machines.get(e.test_station)
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
        studies = {st.test: st for st in enc.case.imaging}
        shown = {n.title.split(":")[0] for n in self.world.notices if n.kind == "image" and n.case_id == enc.case.id}
        items = []
        for u in enc.sink.utterances:
            line = f"{who.get(u.speaker, u.speaker)}: {u.text}"
            if u.speaker == "measurement" and any(t in shown and t in u.text for t in studies):
                line += "  [image: click or V]"
            items.append((u.speaker, line))
        return f"{enc.case.id}: {enc.case.demographics}", items

    def _panel_header(self) -> tuple[str, str, tuple[int, int, int]]:
        """The room, the doctor and the verdict of the consultation in the panel."""
        enc = getattr(self, "_panel_enc", None)
        if enc is None:
            return "", "", PANEL_TEXT
        where = f"{(enc.room or '-').replace('_', ' ')} · {enc.doctor.id if enc.doctor else '-'} · {enc.patient.id}"
        row = enc.result
        if row is None:
            return where, "", PANEL_TEXT
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
        key = (title, len(items), items[-1] if items else None, self.scroll, self._panel_header(), screen.get_size(),
               sum(1 for n in self.world.notices if n.kind == "image"))
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
        lines: list[tuple[str, str]] = []
        linked: set[int] = set()  # the lines of an item that links an image
        for speaker, text in items:
            for i, line in enumerate(wrap(text, 46)):
                if text.endswith("[image: click or V]"):
                    linked.add(len(lines))
                lines.append((speaker if i == 0 else "", line))
            lines.append(("", ""))
        per = 18
        room = (rect.bottom - top - 6) // per
        end = max(0, len(lines) - self.scroll)
        start = max(0, end - room)
        y = top
        self._panel_links = []
        for j, (speaker, line) in enumerate(lines[start:end], start=start):
            colour = ACCENT.get(speaker, PANEL_TEXT) if speaker else PANEL_TEXT
            if j in linked:
                colour = (255, 220, 120)
                self._panel_links.append(pygame.Rect(x0, y, PANEL_W, per))
            screen.blit(self.text.render(line, 18, colour), (x0 + 12, y))
            y += per


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
               zoom: float | None = None, play_as: str | None = None, replay: bool = False) -> dict[str, Any]:
    """Open the window (or the SDL dummy driver when ``headless``) and run the loop.
    Returns frame-time figures."""
    if headless:
        os.environ["SDL_VIDEODRIVER"] = "dummy"
        os.environ["SDL_AUDIODRIVER"] = "dummy"
    pygame.init()
    try:
        screen = pygame.display.set_mode(size)  # before load_pygame: it converts images
        pygame.display.set_caption(title)
        ui = SimulationScreen(world, map_path, assets, size, title, replay=replay)
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
