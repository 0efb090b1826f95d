"""The pygame shell: renders a :class:`game.world.World` (or a replayed log) and takes
input. The only place in medsim that imports pygame.

Importing this package tells pygame not to print its greeting ("Hello from the pygame
community") on every game command: the modules below import pygame, which prints it at
import time unless ``PYGAME_HIDE_SUPPORT_PROMPT`` is set first. That one environment
variable is the package's only import-time effect (the core never imports the view)."""
import os

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
