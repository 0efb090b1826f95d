"""Which display the window goes to, decided before anything is drawn or written: the SDL
dummy driver when headless, else a real one. Where there is none (no ``DISPLAY`` nor
``WAYLAND_DISPLAY`` on Linux, or SDL falling back to a driver that shows nothing),
:class:`NoDisplay` says so instead of a silent run with no window. The game has no sound,
so SDL never opens an audio device (no ALSA messages on a machine without one)."""
from __future__ import annotations

import os
import sys

import pygame

__all__ = ["NoDisplay", "NO_DISPLAY", "prepare_display"]

NO_DISPLAY = "no display: use --headless, or run under Xvfb (xvfb-run -a medsim play ...)"
# SDL drivers that show nothing: chosen only when asked for (headless, tests), else there is no display
_INVISIBLE = ("dummy", "offscreen")


class NoDisplay(OSError):
    """There is no display to open the window on (an environment problem, like a missing
    device: the command line reports it and exits 2)."""


def _x11_or_wayland() -> bool:
    """SDL finds its display through DISPLAY / WAYLAND_DISPLAY here (not macOS, Windows)."""
    return not sys.platform.startswith(("darwin", "win32", "cygwin", "emscripten"))


def prepare_display(headless: bool) -> str:
    """Choose the video and audio drivers before the window opens.

    Args:
        headless: no window (the SDL dummy driver).

    Returns:
        The SDL video driver the window will use.

    Raises:
        NoDisplay: not headless and there is no display.
    """
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")  # no sound in the game: never probe a sound card
    if headless:
        os.environ["SDL_VIDEODRIVER"] = "dummy"
        return "dummy"
    asked = os.environ.get("SDL_VIDEODRIVER", "")
    if not asked and _x11_or_wayland() and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise NoDisplay(f"{NO_DISPLAY}; DISPLAY and WAYLAND_DISPLAY are not set")
    was_on = pygame.display.get_init()
    try:
        pygame.display.init()
        driver = pygame.display.get_driver()
    except pygame.error as e:
        raise NoDisplay(f"{NO_DISPLAY}; SDL: {e}") from e
    finally:
        if not was_on:
            pygame.display.quit()
    if driver in _INVISIBLE and asked != driver:
        raise NoDisplay(f"{NO_DISPLAY}; SDL found no display (it fell back to its '{driver}' driver)")
    return driver
