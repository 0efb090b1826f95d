"""Prompts are data: template files in ``agents/prompts/`` filled with ``$names``."""
from __future__ import annotations

from functools import lru_cache
from importlib import resources
from string import Template

__all__ = ["render", "template_text"]


@lru_cache(maxsize=None)
def template_text(name: str) -> str:
    return resources.files("agents").joinpath(f"prompts/{name}.txt").read_text(encoding="utf-8").strip()


def render(name: str, **values: object) -> str:
    """Fill a template; a missing value is an error (never a silent '$name' in a prompt)."""
    return Template(template_text(name)).substitute({k: str(v) for k, v in values.items()})
