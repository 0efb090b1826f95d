"""Registrations from outside medsim: a suite, a backend kind, a role of your own, loaded
before the command line is read (their flags then exist).

Two ways, both read by :func:`load_plugins`:

- the environment: ``MEDSIM_PLUGINS="mypkg.suites,mypkg.roles:register"``, modules to import
  (their import registers) or ``module:function`` (called with no argument);
- an installed package's entry point in the group ``medsim.plugins`` (``[project.entry-points
  "medsim.plugins"] my = "mypkg.medsim:register"`` in its pyproject.toml).

A plugin that cannot be loaded stops the command with a message naming it.
"""
from __future__ import annotations

import importlib
import os
from importlib import metadata

__all__ = ["load_plugins", "PluginError", "ENV", "GROUP"]

ENV = "MEDSIM_PLUGINS"
GROUP = "medsim.plugins"
_loaded: set[str] = set()


class PluginError(RuntimeError):
    """A plugin named in MEDSIM_PLUGINS or an entry point that cannot be loaded."""


def _load(target: str, where: str) -> None:
    if target in _loaded:
        return
    module, _, func = target.partition(":")
    try:
        mod = importlib.import_module(module.strip())
        if func:
            getattr(mod, func.strip())()
    except Exception as e:  # noqa: BLE001 - said with the plugin's name, the command stops
        raise PluginError(f"{where}: cannot load the plugin '{target}': {type(e).__name__}: {e}") from None
    _loaded.add(target)


def load_plugins(environ: dict[str, str] | None = None) -> list[str]:
    """Import every plugin the environment and the installed entry points name; returns
    what was loaded (each at most once per process)."""
    env = os.environ if environ is None else environ
    names = [t.strip() for t in env.get(ENV, "").split(",") if t.strip()]
    for target in names:
        _load(target, ENV)
    for ep in metadata.entry_points(group=GROUP):
        _load(ep.value, f"entry point '{ep.name}' ({GROUP})")
    return sorted(_loaded)
