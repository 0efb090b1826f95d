"""The keys of the window, and the rule that keeps typing apart from game keys.

While a person plays an agent, the keys that write a character (letters, digits, space,
punctuation) are words, never game keys: on the person's turn the first one opens their
text box with it (type to talk); when it is not their turn nothing happens but a notice
saying so. A game key that is such a key is pressed with Ctrl while playing (Ctrl+G gives
the agent back, Ctrl+Space pauses, Ctrl+O orders a test). Keys that write nothing (Enter,
Esc, Tab, the arrows, F1, PgUp/PgDn) keep their meaning. Watching (nobody played), every
key is a game key, Ctrl or not."""
from __future__ import annotations

from typing import Any

import pygame

__all__ = ["KEYS", "is_typing", "game_key"]

KEYS = (
    ("Watching", (("Space", "pause / go on"), ("1 2 3 4", "speed 1x 2x 4x 8x"), ("Arrows / WASD", "pan"),
                  ("+ / - / wheel", "zoom"), ("Z", "the whole map / every room"), ("M / N", "minimap / name tags"),
                  ("Click / Tab", "select an agent (and follow it)"), ("F", "follow the selected agent or not"),
                  ("PgUp / PgDn", "scroll the dialogue"),
                  ("V", "view the image the popup offers (else the panel's latest) beside its report"),
                  ("Esc", "deselect; Esc again or Q quits"))),
    ("Playing", (("T", "take over the selected agent (doctor, patient or technician)"),
                 ("Typing", "while you play, keys you type are words: on your turn they open your text box, "
                            "otherwise they do nothing"),
                 ("Ctrl + a key", "that game key while you play (Ctrl+Space pause, Ctrl+V image, Ctrl+T ...)"),
                 ("Arrows", "walk your agent (on your turn, or when it has nothing to do)"),
                 ("Enter", "doctor: ask the patient; patient or technician: answer"),
                 ("Ctrl+O", "doctor: order a test from the hospital's menu"),
                 ("Ctrl+X", "doctor: give the final diagnosis"),
                 ("Ctrl+G", "give the agent back to the AI (it carries on from the same transcript)"),
                 ("F2", "patient or technician: your case sheet on / off (the wheel scrolls it)"))),
    ("Replay", (("E", "step one event (pauses)"), ("J", "jump to the next turn"), ("K", "jump to the next case"))),
    ("Typing", (("Enter / Esc", "send / cancel"), ("Up / Down", "earlier lines"), ("Ctrl+V", "paste"),
                ("Ctrl+U", "clear"))),
    ("", (("F1", "this help"),)),
)


def game_key(ev: Any) -> bool:
    """The key is held with Ctrl (Cmd on a Mac): a game key even while playing. Ctrl with
    Alt is AltGr on some keyboards (it types ``@`` or ``{``), so it is typing."""
    mods = getattr(ev, "mod", 0)
    return bool(mods & pygame.KMOD_META or (mods & pygame.KMOD_CTRL and not mods & pygame.KMOD_ALT))


def is_typing(ev: Any) -> bool:
    """A KEYDOWN that writes a character (a letter, digit, space or punctuation, with or
    without Shift) and is not held with Ctrl."""
    if game_key(ev):
        return False
    ch = getattr(ev, "unicode", "") or ""
    if ch:
        return ch.isprintable()
    return 32 <= ev.key < 127  # a key SDL names by its character ("a", "1", " ", "-")
