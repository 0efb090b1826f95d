"""The view as a stack of screens (Tuxemon's state stack): the top screen takes input
first, and a modal screen (a text box, a menu, the help) takes every key, so typing and
menus never trigger a game control. Screens below still draw."""
from __future__ import annotations

import io
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import pygame

from agents.image_file import read_image_bytes
from game.view.render import INK, PAPER, TextCache, draw_box, fit_px, wrap, wrap_px

__all__ = ["Screen", "ScreenStack", "TextBox", "MenuScreen", "MenuItem", "HelpScreen", "EndOfShiftScreen",
           "ImageViewer", "PauseScreen", "as_rgb", "MAX_TEXT", "Placed", "draw_placed", "load_study_image"]

MAX_TEXT = 500


class Screen:
    modal = False  # takes every input event while on top

    def handle(self, ev: pygame.event.Event) -> bool:
        """True if the event was used."""
        return False

    def update(self, real_dt: float) -> None:
        pass

    def draw(self, screen: pygame.Surface) -> None:
        pass


class ScreenStack:
    def __init__(self) -> None:
        self.screens: list[Screen] = []

    def push(self, s: Screen) -> Screen:
        self.screens.append(s)
        return s

    def remove(self, s: Screen) -> None:
        if s in self.screens:
            self.screens.remove(s)

    @property
    def top(self) -> Screen | None:
        return self.screens[-1] if self.screens else None

    @property
    def typing(self) -> bool:
        """A modal screen is open: no game control may act (keyboard polling included)."""
        return any(s.modal for s in self.screens)

    def handle(self, ev: pygame.event.Event) -> None:
        for s in reversed(list(self.screens)):
            if s.handle(ev) or s.modal:
                return

    def update(self, real_dt: float) -> None:
        for s in list(self.screens):
            s.update(real_dt)

    def draw(self, screen: pygame.Surface) -> None:
        for s in list(self.screens):
            s.draw(screen)


def _clipboard_text() -> str:
    """The clipboard's text, or "" where there is none (the dummy driver)."""
    try:
        if not pygame.scrap.get_init():
            pygame.scrap.init()
        t = pygame.scrap.get_text()
        return t or ""
    except (pygame.error, AttributeError, NotImplementedError):
        return ""


class TextBox(Screen):
    """One line of text: any Unicode (TEXTINPUT events), editing keys (Backspace,
    Delete, Left/Right, Home/End, Ctrl+U clears), paste (Ctrl+V), a visible length limit,
    history (Up/Down). Enter submits a non-empty line, Esc cancels.

    ``initial``: the character whose key opened the box (type to talk) is its first; SDL
    may also send it as text right after the key, and that copy is dropped.
    ``keep_text_input``: closing leaves SDL's text input on (a person playing types the next
    line straight away; SDL makes text of keys only while it is on, when it reads them)."""

    modal = True

    def __init__(self, stack: ScreenStack, text: TextCache, title: str, on_submit: Callable[[str], None],
                 *, on_cancel: Callable[[], None] | None = None, history: list[str] | None = None,
                 max_len: int = MAX_TEXT, hint: str = "Enter: send   Esc: cancel   Up: earlier lines",
                 initial: str = "", keep_text_input: bool = False):
        self.stack, self.text, self.title = stack, text, title
        self.on_submit, self.on_cancel = on_submit, on_cancel
        self.history = history if history is not None else []
        self.max_len, self.hint = max_len, hint
        self.value, self.cursor = "", 0
        self._hist_i = len(self.history)
        self.warning = ""
        self.keep_text_input = keep_text_input
        self._echo = ""  # the opening key's character, if SDL sends it as text as well
        if initial:
            self._insert(initial)
            self._echo = initial
        pygame.key.start_text_input()

    def _insert(self, s: str) -> None:
        s = "".join(ch for ch in s if ch.isprintable())
        room = self.max_len - len(self.value)
        if len(s) > room:
            self.warning = f"limit of {self.max_len} characters reached"
            s = s[:max(0, room)]
        self.value = self.value[: self.cursor] + s + self.value[self.cursor:]
        self.cursor += len(s)

    def close(self) -> None:
        if not self.keep_text_input:
            pygame.key.stop_text_input()
        self.stack.remove(self)

    def handle(self, ev: pygame.event.Event) -> bool:
        echo, self._echo = self._echo, ""
        if ev.type == pygame.TEXTINPUT:
            if not (echo and ev.text == echo):
                self._insert(ev.text)
            return True
        if ev.type != pygame.KEYDOWN:
            return ev.type in (pygame.KEYUP, pygame.TEXTEDITING)
        k, mods = ev.key, getattr(ev, "mod", 0)
        ctrl = bool(mods & pygame.KMOD_CTRL)
        self.warning = ""
        if k in (pygame.K_RETURN, pygame.K_KP_ENTER):
            line = " ".join(self.value.split())
            if not line:
                self.warning = "type something first (Esc cancels)"
                return True
            self.history.append(line)
            self.close()
            self.on_submit(line)
        elif k == pygame.K_ESCAPE:
            self.close()
            if self.on_cancel:
                self.on_cancel()
        elif k == pygame.K_BACKSPACE:
            if self.cursor:
                self.value = self.value[: self.cursor - 1] + self.value[self.cursor:]
                self.cursor -= 1
        elif k == pygame.K_DELETE:
            self.value = self.value[: self.cursor] + self.value[self.cursor + 1:]
        elif k == pygame.K_LEFT:
            self.cursor = max(0, self.cursor - 1)
        elif k == pygame.K_RIGHT:
            self.cursor = min(len(self.value), self.cursor + 1)
        elif k == pygame.K_HOME:
            self.cursor = 0
        elif k == pygame.K_END:
            self.cursor = len(self.value)
        elif k == pygame.K_UP and self.history:
            self._hist_i = max(0, self._hist_i - 1)
            self.value = self.history[self._hist_i]
            self.cursor = len(self.value)
        elif k == pygame.K_DOWN and self.history:
            self._hist_i = min(len(self.history), self._hist_i + 1)
            self.value = self.history[self._hist_i] if self._hist_i < len(self.history) else ""
            self.cursor = len(self.value)
        elif ctrl and k == pygame.K_v:
            self._insert(" ".join(_clipboard_text().split()))
        elif ctrl and k == pygame.K_u:
            self.value, self.cursor = "", 0
        return True  # modal: every key is the text box's

    def draw(self, screen: pygame.Surface) -> None:
        w = min(820, screen.get_width() - 40)
        lines = wrap(self.value[: self.cursor] + "|" + self.value[self.cursor:], 88) or ("|",)
        lines = lines[-4:]
        h = 70 + 20 * len(lines)
        rect = pygame.Rect((screen.get_width() - w) // 2, screen.get_height() - h - 40, w, h)
        draw_box(screen, rect, PAPER, (255, 200, 60), radius=10, alpha=245)
        screen.blit(self.text.render(self.title, 22, INK), (rect.x + 12, rect.y + 8))
        count = self.text.render(f"{len(self.value)}/{self.max_len}", 18,
                                 (190, 60, 50) if len(self.value) >= self.max_len else (110, 110, 120))
        screen.blit(count, (rect.right - count.get_width() - 12, rect.y + 10))
        for i, line in enumerate(lines):
            screen.blit(self.text.render(line, 20, INK), (rect.x + 12, rect.y + 32 + 20 * i))
        foot = self.warning or self.hint
        screen.blit(self.text.render(foot, 17, (190, 60, 50) if self.warning else (110, 110, 120)),
                    (rect.x + 12, rect.bottom - 22))


@dataclass(frozen=True)
class MenuItem:
    label: str
    value: Any = None
    header: bool = False  # a group title, not choosable


class MenuScreen(Screen):
    """A list to choose from: Up/Down (PageUp/PageDown, Home/End), Enter chooses, Esc
    cancels; a digit jumps to that item of the visible page."""

    modal = True

    def __init__(self, stack: ScreenStack, text: TextCache, title: str, items: Sequence[MenuItem],
                 on_choose: Callable[[Any], None], *, on_cancel: Callable[[], None] | None = None):
        self.stack, self.text, self.title, self.items = stack, text, title, list(items)
        self.on_choose, self.on_cancel = on_choose, on_cancel
        self.choosable = [i for i, it in enumerate(self.items) if not it.header]
        if not self.choosable:
            raise ValueError("a menu needs at least one item to choose")
        self.at = 0  # index into choosable
        self.rows = 18

    def move(self, d: int) -> None:
        self.at = max(0, min(len(self.choosable) - 1, self.at + d))

    def select_label(self, label: str) -> None:
        for j, i in enumerate(self.choosable):
            if self.items[i].label == label:
                self.at = j
                return
        raise KeyError(label)

    def handle(self, ev: pygame.event.Event) -> bool:
        if ev.type != pygame.KEYDOWN:
            return ev.type in (pygame.KEYUP, pygame.TEXTINPUT, pygame.TEXTEDITING)
        k = ev.key
        if k in (pygame.K_DOWN, pygame.K_s):
            self.move(1)
        elif k in (pygame.K_UP, pygame.K_w):
            self.move(-1)
        elif k == pygame.K_PAGEDOWN:
            self.move(10)
        elif k == pygame.K_PAGEUP:
            self.move(-10)
        elif k == pygame.K_HOME:
            self.at = 0
        elif k == pygame.K_END:
            self.at = len(self.choosable) - 1
        elif k in (pygame.K_RETURN, pygame.K_KP_ENTER):
            item = self.items[self.choosable[self.at]]
            self.stack.remove(self)
            self.on_choose(item.value)
        elif k == pygame.K_ESCAPE:
            self.stack.remove(self)
            if self.on_cancel:
                self.on_cancel()
        return True

    def draw(self, screen: pygame.Surface) -> None:
        w, row = 460, 22
        sel = self.choosable[self.at]
        first = max(0, min(sel - self.rows // 2, len(self.items) - self.rows))
        shown = self.items[first: first + self.rows]
        h = 64 + row * len(shown)
        rect = pygame.Rect((screen.get_width() - w) // 2 - 150, 60, w, h)
        draw_box(screen, rect, PAPER, (90, 160, 255), radius=10, alpha=245)
        screen.blit(self.text.render(self.title, 22, INK), (rect.x + 12, rect.y + 8))
        for j, it in enumerate(shown):
            y = rect.y + 36 + row * j
            if first + j == sel:
                pygame.draw.rect(screen, (255, 226, 120), pygame.Rect(rect.x + 6, y - 2, w - 12, row), border_radius=4)
            colour = (40, 80, 150) if it.header else INK
            screen.blit(self.text.render(it.label if it.header else f"   {it.label}", 19, colour), (rect.x + 12, y))
        screen.blit(self.text.render("Up/Down choose   Enter order   Esc cancel", 17, (110, 110, 120)),
                    (rect.x + 12, rect.bottom - 22))


Placed = tuple[str, int, tuple[int, int, int], tuple[int, int]]  # text, font size, colour, where


def draw_placed(screen: pygame.Surface, text: TextCache, rect: pygame.Rect, placed: Sequence[Placed], *,
                border: tuple[int, int, int], radius: int, alpha: int) -> None:
    """A box laid out by a screen's ``layout``: its paper, then each placed line."""
    draw_box(screen, rect, PAPER, border, radius=radius, alpha=alpha)
    for line, size, colour, at in placed:
        screen.blit(text.render(line, size, colour), at)


def _columns(heights: Sequence[int], n: int) -> list[list[int]]:
    """Blocks (in order) split into ``n`` columns of consecutive blocks, the tallest column
    as short as it can be (a handful of blocks: every split is tried)."""
    best: list[list[int]] = [list(range(len(heights)))]
    best_h = sum(heights)
    for cuts in itertools.combinations(range(1, len(heights)), n - 1):
        bounds = (0, *cuts, len(heights))
        cols = [list(range(a, b)) for a, b in zip(bounds, bounds[1:])]
        h = max(sum(heights[i] for i in c) for c in cols)
        if h < best_h:
            best, best_h = cols, h
    return best


@dataclass
class HelpScreen(Screen):
    """Every key, grouped; F1 or Esc closes it. The sheet fits the window: in columns,
    and in smaller type where the columns are not enough."""

    stack: ScreenStack
    text: TextCache
    groups: Sequence[tuple[str, Sequence[tuple[str, str]]]] = field(default_factory=tuple)
    modal = True
    MARGIN = 16  # from the window's edges

    def handle(self, ev: pygame.event.Event) -> bool:
        if ev.type == pygame.KEYDOWN and ev.key in (pygame.K_F1, pygame.K_ESCAPE):
            self.stack.remove(self)
        return True

    def layout(self, size: tuple[int, int]) -> tuple[pygame.Rect, list[Placed]]:
        """The sheet's rectangle and every line on it, for a window of ``size``: the
        largest type (then the fewest columns) at which every key fits inside the window."""
        for scale in (1.0, 0.9, 0.8, 0.72, 0.64, 0.56):
            for ncols in (1, 2, 3):
                got = self._try(size, scale, ncols)
                if got is not None:
                    return got
        got = self._try(size, 0.56, 3, force=True)
        assert got is not None
        return got

    def _try(self, size: tuple[int, int], scale: float, ncols: int,
             force: bool = False) -> tuple[pygame.Rect, list[Placed]] | None:
        title_size, row_size = max(12, round(21 * scale)), max(11, round(19 * scale))
        row_h, gap, pad = round(20 * scale), round(14 * scale), round(14 * scale)
        title_font, row_font = self.text.font(title_size), self.text.font(row_size)
        avail_w, avail_h = size[0] - 2 * self.MARGIN, size[1] - 2 * self.MARGIN
        key_w = max(row_font.size(k)[0] for _, keys in self.groups for k, _ in keys) + round(16 * scale)
        col_w = (avail_w - pad * (ncols + 1)) // ncols
        what_w = col_w - key_w - round(10 * scale)
        if what_w < 140 and not force:
            return None
        blocks: list[list[tuple[str, str, int]]] = []  # per group: (kind, text, x offset) rows
        for title, keys in self.groups:
            rows: list[tuple[str, str, int]] = [("title", title, 0)] if title else []
            for key, what in keys:
                for i, line in enumerate(wrap_px(row_font, what, what_w) or [""]):
                    if i == 0:
                        rows.append(("key", key, 0))
                    rows.append(("what", line, key_w))
            blocks.append(rows)

        def height(rows: list[tuple[str, str, int]]) -> int:
            return sum(row_h + (2 if kind == "title" else 0) for kind, _, _ in rows if kind != "key") + gap

        heights = [height(b) for b in blocks]
        cols = _columns(heights, ncols) if ncols > 1 else [list(range(len(blocks)))]
        foot_h = row_h + pad
        box_h = pad + max(sum(heights[i] for i in c) for c in cols) + foot_h
        box_w = pad + ncols * col_w + (ncols - 1) * pad + pad
        # as narrow as the widest column needs
        used = max(key_w + max((row_font.size(t)[0] for b in blocks for k, t, _ in b if k == "what"), default=0),
                   max((title_font.size(t)[0] for b in blocks for k, t, _ in b if k == "title"), default=0))
        col_w = min(col_w, used + round(10 * scale))
        box_w = pad + ncols * col_w + (ncols - 1) * pad + pad
        if box_h > avail_h and not force:
            return None
        rect = pygame.Rect(0, 0, min(box_w, avail_w), min(box_h, avail_h))
        rect.center = (size[0] // 2, size[1] // 2)
        placed: list[Placed] = []
        for ci, col in enumerate(cols):
            x0 = rect.x + pad + ci * (col_w + pad)
            y = rect.y + pad
            for bi in col:
                for kind, line, dx in blocks[bi]:
                    if kind == "title":
                        placed.append((line, title_size, (40, 80, 150), (x0, y)))
                        y += row_h + 2
                    elif kind == "key":
                        placed.append((line, row_size, INK, (x0 + round(10 * scale), y)))
                    else:
                        placed.append((line, row_size, (60, 60, 70), (x0 + dx, y)))
                        y += row_h
                y += gap
        placed.append(("F1 or Esc: close", row_size, (110, 110, 120), (rect.x + pad, rect.bottom - foot_h + 2)))
        return rect, placed

    def draw(self, screen: pygame.Surface) -> None:
        draw_placed(screen, self.text, *self.layout(screen.get_size()), border=(255, 200, 60), radius=10, alpha=245)


class EndOfShiftScreen(Screen):
    """The shift is over: cases seen, verdicts, accuracy with its interval, time per
    case. Enter or Esc goes back to the hospital; Q quits. The box stays inside ``area``
    (the map view: the dialogue panel and its header stay in sight), its rows cut to fit;
    cases that do not fit are counted on a last line."""

    modal = True
    CELLS = (0, 150, 230, 310)  # x of a case row's cells: case, verdict, time, diagnosis
    ROW = 21

    def __init__(self, stack: ScreenStack, text: TextCache, stats: dict[str, Any], rows: Sequence[dict[str, Any]],
                 minutes: dict[str, float], on_quit: Callable[[], None], area: pygame.Rect | None = None):
        self.stack, self.text, self.stats, self.rows = stack, text, stats, list(rows)
        self.minutes, self.on_quit = minutes, on_quit
        self.area = area

    def handle(self, ev: pygame.event.Event) -> bool:
        if ev.type == pygame.KEYDOWN:
            if ev.key in (pygame.K_RETURN, pygame.K_KP_ENTER, pygame.K_ESCAPE):
                self.stack.remove(self)
            elif ev.key == pygame.K_q:
                self.on_quit()
        return True

    def lines(self) -> list[tuple[str, tuple[int, int, int]]]:
        s = self.stats
        acc = ("-" if s["accuracy"] is None
               else f"{s['accuracy']:.0%} (95% CI {s['ci95'][0]:.0%}-{s['ci95'][1]:.0%}, Wilson)")
        mins = [m for m in self.minutes.values() if m is not None]
        per = f"{sum(mins) / len(mins):.1f} sim-minutes per case" if mins else "-"
        out = [(f"Cases seen: {s['seen']}   correct {s['correct']} of {s['scored']} scored   failed {s['failed']}   "
                f"errors {s['errors']}", INK),
               (f"Accuracy: {acc}", INK),
               (f"Mean turns {s['mean_turns']}, mean tests {s['mean_tests']}; time: {per}", INK), ("", INK)]
        for r in self.rows:
            if r.get("error"):
                verdict, col = "error", (190, 90, 40)
            elif r.get("status") == "failed":
                verdict, col = "failed", (190, 90, 40)
            else:
                verdict, col = ("correct", (40, 140, 60)) if r.get("correct") else ("wrong", (190, 60, 50))
            m = self.minutes.get(r["case_id"])
            t = f"{m:.1f} min" if m is not None else ""
            out.append(("\t".join((r["case_id"][:16], verdict, t, (r.get("diagnosis") or "no diagnosis")[:60])), col))
        return out

    def layout(self, size: tuple[int, int]) -> tuple[pygame.Rect, list[Placed]]:
        """The box and every cell on it, for a window of ``size``."""
        area = self.area or pygame.Rect(0, 0, *size)
        margin = 20
        lines = self.lines()
        room = max(1, (area.height - 2 * margin - 70) // self.ROW)  # the rows that fit
        if len(lines) > room:
            hidden = len(lines) - (room - 1)
            lines = lines[: room - 1] + [(f"... and {hidden} more (the shift log has every case)", (110, 110, 120))]
        rect = pygame.Rect(area.x + margin, area.y + margin, min(880, area.width - 2 * margin), 70 + self.ROW * len(lines))
        font = self.text.font(19)
        placed: list[Placed] = [("End of the shift", 26, (40, 80, 150), (rect.x + 16, rect.y + 12))]
        for i, (line, col) in enumerate(lines):
            cells = line.split("\t")  # table rows are tab-separated cells
            xs = self.CELLS if len(cells) > 1 else (0,)
            for j, (cell, x) in enumerate(zip(cells, xs)):
                width = rect.width - 32 - x if j == len(cells) - 1 else xs[j + 1] - x - 8
                placed.append((fit_px(font, cell, width), 19, col,
                               (rect.x + 16 + x, rect.y + 44 + self.ROW * i)))
        placed.append(("Enter: back to the hospital   Q: quit", 17, (110, 110, 120), (rect.x + 16, rect.bottom - 24)))
        return rect, placed

    def draw(self, screen: pygame.Surface) -> None:
        draw_placed(screen, self.text, *self.layout(screen.get_size()), border=(90, 160, 255), radius=12, alpha=248)

class PauseScreen(Screen):
    """A box over the map (``area``) that holds the game between two steps of a reader
    study: ``title``, ``lines``, and two ways on. Enter calls ``on_go``, Esc or Q
    ``on_stop``; either closes the box."""

    modal = True

    def __init__(self, stack: ScreenStack, text: TextCache, title: str, lines: Sequence[str],
                 on_go: Callable[[], None], on_stop: Callable[[], None], area: pygame.Rect | None = None):
        self.stack, self.text, self.title, self.lines = stack, text, title, list(lines)
        self.on_go, self.on_stop, self.area = on_go, on_stop, area

    def handle(self, ev: pygame.event.Event) -> bool:
        if ev.type == pygame.KEYDOWN and ev.key in (pygame.K_RETURN, pygame.K_KP_ENTER):
            self.stack.remove(self)
            self.on_go()
        elif ev.type == pygame.KEYDOWN and ev.key in (pygame.K_ESCAPE, pygame.K_q):
            self.stack.remove(self)
            self.on_stop()
        return True

    def layout(self, size: tuple[int, int]) -> tuple[pygame.Rect, list[Placed]]:
        area = self.area or pygame.Rect(0, 0, *size)
        width = min(720, area.width - 40)
        font = self.text.font(19)
        rows = [piece for line in self.lines for piece in (wrap_px(font, line, width - 32) or [""])]
        rect = pygame.Rect(area.x + (area.width - width) // 2, area.y + 60, width, 62 + 24 * len(rows))
        placed: list[Placed] = [(self.title, 26, (40, 80, 150), (rect.x + 16, rect.y + 12))]
        placed += [(line, 19, INK, (rect.x + 16, rect.y + 48 + 24 * i)) for i, line in enumerate(rows)]
        return rect, placed

    def draw(self, screen: pygame.Surface) -> None:
        draw_placed(screen, self.text, *self.layout(screen.get_size()), border=(90, 160, 255), radius=12, alpha=248)


def as_rgb(img: pygame.Surface) -> pygame.Surface:
    """A 24-bit copy of an 8-bit (greyscale, palette) image, so it can be smoothly scaled."""
    if img.get_bitsize() >= 24:
        return img
    out = pygame.Surface(img.get_size(), 0, 24)
    out.blit(img, (0, 0))
    return out


def load_study_image(path: str) -> "pygame.Surface":
    """A study's image as a surface, read by :func:`agents.image_file.read_image_bytes`
    (a regular file, size-capped, timed: never a device or a FIFO); ``OSError`` or
    ``pygame.error`` when it cannot be shown."""
    return pygame.image.load(io.BytesIO(read_image_bytes(path)), path)


class ImageViewer(Screen):
    """An imaging study's image beside its report. Esc, Enter or V closes it."""

    modal = True

    def __init__(self, stack: ScreenStack, text: TextCache, title: str, report: str, image: str):
        self.stack, self.text, self.title, self.report = stack, text, title, report
        self.image = image
        try:
            self.surface = as_rgb(load_study_image(image))
            self.error = ""
        except (pygame.error, FileNotFoundError, OSError) as e:
            self.surface, self.error = None, f"cannot show {image}: {e}"

    def handle(self, ev: pygame.event.Event) -> bool:
        if ev.type == pygame.KEYDOWN and ev.key in (pygame.K_ESCAPE, pygame.K_RETURN, pygame.K_KP_ENTER, pygame.K_v):
            self.stack.remove(self)
        return True

    def draw(self, screen: pygame.Surface) -> None:
        rect = pygame.Rect(40, 60, min(1100, screen.get_width() - 80), min(560, screen.get_height() - 100))
        draw_box(screen, rect, (20, 22, 28), (255, 200, 60), radius=10, alpha=250)
        screen.blit(self.text.render(self.title, 23, (255, 255, 255)), (rect.x + 14, rect.y + 10))
        box = pygame.Rect(rect.x + 14, rect.y + 40, int(rect.width * 0.55), rect.height - 70)
        if self.surface is not None:
            w, h = self.surface.get_size()
            k = min(box.width / w, box.height / h)
            img = pygame.transform.smoothscale(self.surface, (max(1, int(w * k)), max(1, int(h * k))))
            screen.blit(img, (box.x + (box.width - img.get_width()) // 2, box.y + (box.height - img.get_height()) // 2))
        else:
            screen.blit(self.text.render(self.error[:80], 18, (240, 150, 90)), (box.x, box.y))
        x = box.right + 16
        screen.blit(self.text.render("Report", 21, (255, 220, 120)), (x, box.y))
        for i, line in enumerate(wrap(self.report, 40, 20)):
            screen.blit(self.text.render(line, 19, (230, 232, 238)), (x, box.y + 28 + 20 * i))
        screen.blit(self.text.render("Esc: close", 17, (160, 160, 170)), (rect.x + 14, rect.bottom - 24))
