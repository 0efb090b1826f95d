"""The structure the code keeps: no import cycle inside the project's packages (an import
inside a function counts: hiding one there does not break the cycle), no private name
imported from another module, and the shell's command module small enough to read."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agents", "game", "memory", "medsim")
# what may import the packages' modules and is held to "private means private" too
OTHERS = ("benchmarks", "docs", "assets")


def _modules(root: Path = ROOT) -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for f in (root / pkg).rglob("*.py"):
            mod = ".".join(f.relative_to(root).with_suffix("").parts)
            out[mod.removesuffix(".__init__")] = f
    return out


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _imports(path: Path, mod: str, known: dict[str, Path]) -> list[tuple[str, str | None]]:
    """(module imported, name taken from it) for every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_pkg = path.name == "__init__.py"
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if (t := _resolve(a.name, known)) is not None:
                    out.append((t, None))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = mod.split(".")
                keep = len(parts) - node.level + (1 if is_pkg else 0)
                base = ".".join(parts[:keep] + ([base] if base else []))
            for a in node.names:
                sub = f"{base}.{a.name}" if base else a.name
                if sub in known:
                    out.append((sub, None))
                elif (t := _resolve(base, known)) is not None:
                    out.append((t, a.name))
    return out


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    known = _modules(root)
    graph: dict[str, set[str]] = {m: set() for m in known}
    for mod, path in known.items():
        for target, _ in _imports(path, mod, known):
            # a package's __init__ re-exporting its own children is not a cycle
            if target != mod and not (known[target].name == "__init__.py" and mod.startswith(target + ".")):
                graph[mod].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def private_imports(root: Path = ROOT) -> list[str]:
    known = _modules(root)
    files = dict(known)
    for other in OTHERS:
        for f in (root / other).rglob("*.py"):
            files[".".join(f.relative_to(root).with_suffix("").parts)] = f
    out = []
    for mod, path in sorted(files.items()):
        for target, name in _imports(path, mod, known):
            if name and name.startswith("_") and not name.startswith("__") and target != mod:
                out.append(f"{path.relative_to(root)}: from {target} import {name}")
    return out


def test_no_import_cycle_inside_the_packages():
    assert cycles(import_graph()) == []


def test_no_private_name_is_imported_from_another_module():
    assert private_imports() == []


def test_the_checks_find_a_cycle_and_a_private_import(tmp_path):
    """The two checks above can fail: a hidden cycle (one import inside a function) and a
    private name taken across modules, in a throwaway tree."""
    pkg = tmp_path / "medsim"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from medsim.b import _helper\n")
    (pkg / "b.py").write_text("def _helper():\n    from medsim import a\n    return a\n")
    for other in PACKAGES[:-1]:
        (tmp_path / other).mkdir()
    assert cycles(import_graph(tmp_path)) == [["medsim.a", "medsim.b"]]
    assert private_imports(tmp_path) == [f"{Path('medsim/a.py')}: from medsim.b import _helper"]


def test_the_command_module_stays_small():
    assert len((ROOT / "medsim" / "cli.py").read_text(encoding="utf-8").splitlines()) <= 450
