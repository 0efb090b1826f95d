"""Layers point one way: the engine (agents/) imports nothing from the world (game/) or
the application shell (medsim/); the world imports nothing from the shell; neither the
engine nor the memory imports pygame."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {"agents": {"game", "medsim", "pygame", "pytmx"}, "memory": {"game", "medsim", "pygame"},
             "game": {"medsim", "pygame"}}
# the world's view draws with pygame; the rest of game/ (the simulation core) never imports it
VIEW_MAY = {"pygame"}


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_import_direction(package):
    bad = []
    for f in sorted((ROOT / package).rglob("*.py")):
        forbidden = FORBIDDEN[package]
        if package == "game" and "view" in f.relative_to(ROOT / package).parts:
            forbidden = forbidden - VIEW_MAY
        hits = imported_roots(f) & forbidden
        bad += [f"{f.relative_to(ROOT)} imports {h}" for h in sorted(hits)]
    assert bad == []


def test_the_check_sees_imports_inside_functions(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from game.world import World\n    import medsim.cli\n")
    assert imported_roots(f) == {"game", "medsim"}


def test_importing_the_engine_loads_neither_world_nor_shell():
    code = ("import sys, pkgutil, importlib, agents\n"
            "for m in pkgutil.walk_packages(agents.__path__, 'agents.'):\n"
            "    importlib.import_module(m.name)\n"
            "bad = sorted(k for k in sys.modules if k.split('.')[0] in ('game', 'medsim', 'pygame'))\n"
            "assert not bad, bad\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
