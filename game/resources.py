"""Where the world's files are: the shipped map and the art."""
from __future__ import annotations

from pathlib import Path

__all__ = ["default_map_path", "assets_dir"]


def _root() -> Path:
    return Path(__file__).resolve().parent.parent


def default_map_path() -> Path:
    return _root() / "maps" / "hospital.tmx"


def assets_dir() -> Path:
    return _root() / "assets"
