"""Where the world's files are: the shipped map and the art.

In a source checkout (or an editable install) they are ``maps/`` and ``assets/`` at the
top of the checkout; an installed wheel carries them inside this package as
``game/maps`` and ``game/assets`` (pyproject.toml's ``package-dir``), with the same
relative path from the tileset file to its image."""
from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["default_map_path", "assets_dir"]


def _data_dir(name: str) -> Path:
    # a wheel installs as plain files, so the package's Traversable is a real directory
    package = Path(str(resources.files("game")))
    inside = package / name
    return inside if inside.is_dir() else package.parent / name


def default_map_path() -> Path:
    return _data_dir("maps") / "hospital.tmx"


def assets_dir() -> Path:
    return _data_dir("assets")
