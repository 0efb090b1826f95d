"""medsim as an installed package: a wheel built from this checkout carries everything
read at run time (the map and its tileset image, the sprites, prompts, case sets and
their images, the judge's labelled pairs, the price table, the report templates), and
``medsim`` installed from it works from a directory that is not the checkout.

The wheel goes into a fresh virtual environment made in ``tmp_path`` by the same
interpreter. Its heavy dependencies (torch, pygame, ...) are not installed again: a
``.pth`` file appends this environment's site-packages to the new one's path, after
the new one's own, and only as plain directories (the ``.pth`` files there, such as the
checkout's editable-install finder, are not run), so ``agents``, ``game``, ``medsim``
and ``memory`` are the wheel's; the test checks where each was imported from."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOP_PACKAGES = ("agents", "game", "medsim", "memory")
TIMEOUT = 180  # seconds per step; the whole test takes about 10 s on two cores


def _setuptools_config() -> tuple[dict, dict[str, str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    tool = project["tool"]["setuptools"]
    return project, dict(tool.get("package-dir", {}))


def _source_packages() -> set[str]:
    return {".".join(init.parent.relative_to(ROOT).parts)
            for top in TOP_PACKAGES for init in (ROOT / top).rglob("__init__.py") if "__pycache__" not in init.parts}


def test_every_package_of_the_source_tree_is_listed_in_pyproject():
    project, package_dir = _setuptools_config()
    listed = set(project["tool"]["setuptools"]["packages"])
    assert _source_packages() - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
    # the rest of the list are data directories mapped into the game package, and they exist
    assert listed - _source_packages() == set(package_dir)
    assert all((ROOT / d).is_dir() for d in package_dir.values())


def test_version_flag_without_package_metadata(monkeypatch, capsys):
    from importlib import metadata

    from medsim.cli import build_parser

    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith("medsim unknown")


def _data_files() -> dict[Path, str]:
    """Every non-Python file in the package trees (prompts, case sets and images, the
    judge's pairs, prices, templates, suite data) and in the directories mapped into the
    game package (the map, the art) -> where the wheel must hold it."""
    _, package_dir = _setuptools_config()
    out: dict[Path, str] = {}
    for package, src in package_dir.items():
        for f in (ROOT / src).iterdir():
            if f.is_file() and f.suffix != ".py":
                out[f] = "/".join((*package.split("."), f.name))
    for top in TOP_PACKAGES:
        for f in (ROOT / top).rglob("*"):
            if f.is_file() and f.suffix not in (".py", ".pyc") and "__pycache__" not in f.parts:
                out[f] = f.relative_to(ROOT).as_posix()
    return out


def _copy_sources(dest: Path) -> None:
    """The files a build reads, copied, so the build's own build/ and egg-info stay out of
    the checkout."""
    project, package_dir = _setuptools_config()
    dest.mkdir()
    shutil.copy2(ROOT / "pyproject.toml", dest)
    shutil.copy2(ROOT / project["project"]["readme"], dest)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for d in sorted({*TOP_PACKAGES, *package_dir.values()}):
        shutil.copytree(ROOT / d, dest / d, ignore=ignore)


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, **kw)
    assert r.returncode == 0, f"{cmd} exited {r.returncode}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
    return r


# In the fresh environment: where everything is imported and read from.
_PROBE = r"""
import json, sys
from importlib import metadata
import agents, game, medsim, memory
from agents.cases.registry import load_cases
from agents.costs import price_table
from agents.judge_eval import shipped_pairs
from agents.prompts import template_text
from agents.provenance import git_revision
from game.hospital_map import load_map
from game.resources import assets_dir, default_map_path

names = json.loads(sys.argv[1])
cases, _ = load_cases("imaging")
images = [s.image for c in cases for s in c.imaging]
load_map(default_map_path())  # MapError when the map or a required room is missing
print(json.dumps({
    "modules": {m.__name__: m.__file__ for m in (agents, game, medsim, memory)},
    "map": str(default_map_path()), "assets": str(assets_dir()),
    "sprites": sorted(p.name for p in (assets_dir() / "sprites").glob("*.png")),
    "prompts": {n: len(template_text(n)) for n in names},
    "images": images, "pairs": len(shipped_pairs()), "currency": price_table().currency,
    "git": git_revision(), "version": metadata.version("medsim"),
}))
"""


def test_the_wheel_installs_and_runs_outside_the_checkout(tmp_path):
    project, _ = _setuptools_config()
    version = project["project"]["version"]

    # build
    src = tmp_path / "src"
    _copy_sources(src)
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--quiet",
          "-w", str(dist), str(src)])
    (wheel,) = dist.glob("medsim-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    missing = {str(f.relative_to(ROOT)): inside for f, inside in _data_files().items() if inside not in names}
    assert missing == {}, "data files the wheel lacks (pyproject.toml's package-data)"
    assert {n.split("/")[0] for n in names} == {*TOP_PACKAGES, f"medsim-{version}.dist-info"}

    # a fresh environment, the wheel installed before the dependencies are made visible;
    # inside another repository with a commit, which is not medsim's revision
    _run(["git", "init", "--quiet", str(tmp_path)])
    _run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "--quiet",
          "--allow-empty", "-m", "another project"])
    env = tmp_path / "env"
    _run([sys.executable, "-m", "venv", "--without-pip", str(env)])
    python = env / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "--quiet",
          str(wheel)])
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    deps = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (site / "zz_medsim_test_dependencies.pth").write_text("".join(f"{d}\n" for d in deps), encoding="utf-8")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    environ.update(PATH=f"{env / 'bin'}{os.pathsep}{environ.get('PATH', '')}", VIRTUAL_ENV=str(env),
                   SDL_VIDEODRIVER="dummy", SDL_AUDIODRIVER="dummy", MEDSIM_CACHE=str(tmp_path / "cache"))
    medsim = str(env / "bin" / "medsim")

    def run(*cmd: str) -> subprocess.CompletedProcess:
        return _run(list(cmd), cwd=elsewhere, env=environ)

    # the wheel's code and files, not the checkout's
    prompts = sorted(p.stem for p in (ROOT / "agents" / "prompts").glob("*.txt"))
    probe = json.loads(run(str(python), "-c", _PROBE, json.dumps(prompts)).stdout)
    site = site.resolve()
    for name, file in probe["modules"].items():
        assert Path(file).resolve().is_relative_to(site), f"{name} imported from {file}, not from the wheel"
    assert Path(probe["map"]) == site / "game" / "maps" / "hospital.tmx"
    assert Path(probe["assets"]) == site / "game" / "assets"
    assert probe["sprites"] == sorted(p.name for p in (ROOT / "assets" / "sprites").glob("*.png"))
    assert probe["prompts"] and all(probe["prompts"].values())
    assert probe["images"] and all(Path(i).resolve().is_relative_to(site) and Path(i).is_file() for i in probe["images"])
    assert probe["pairs"] > 0 and probe["currency"]
    assert probe["git"] == "unknown"  # an installed copy is no checkout, even inside a repository
    assert probe["version"] == version

    assert run(medsim, "--version").stdout.strip() == f"medsim {version}"

    # the hospital: the map (with its tileset image by relative path) and the sprites, drawn
    log, shot = tmp_path / "shift.jsonl", tmp_path / "shift.png"
    r = run(medsim, "play", "--llm", "scripted", "--headless", "--frames", "120", "--fixed-dt", "0.05",
            "--speed", "8", "--log", str(log), "--screenshot", str(shot))
    assert "shift:" in r.stdout and "0 errors" in r.stdout
    assert log.stat().st_size > 0 and shot.stat().st_size > 10_000

    # the benchmark: case set, prompts, price table, report templates
    out = tmp_path / "bench"
    r = run(medsim, "bench", "--llm", "scripted", "--cases", "demo", "--out", str(out), "--no-progress")
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines() if line]
    demo = (ROOT / "agents" / "casesets" / "demo.jsonl").read_text(encoding="utf-8").split("\n")
    assert len(rows) == sum(1 for line in demo if line.strip()) and not any(row["error"] for row in rows)
    assert any(row["correct"] for row in rows)
    run_json = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run_json["git_revision"] == "unknown" and run_json["packages"]["medsim"] == version
    assert "<html" in (out / "report.html").read_text(encoding="utf-8").lower()
    assert not (elsewhere / "runs").exists()  # everything went where it was told
