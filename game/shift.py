"""Building a world for a shift (play) or a replay, shared by the CLI, the view, tests
and benchmarks. No pygame."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from agents.cases.model import Case
from agents.cases.registry import load_cases
from agents.consultation import ConsultationConfig, RoleModels
from agents.events import read_events
from agents.llm.llamacpp import LlamaPool
from agents.llm.replay import ReplayLLM
from agents.llm.spec import build_role_backends, describe_spec
from agents.provenance import git_revision, package_versions
from game.events import ShiftHeader
from game.hospital_map import MapError, load_map
from game.runner import Runner
from game.world import World, WorldConfig

__all__ = ["default_map_path", "assets_dir", "build_shift", "build_replay", "ROLES"]

ROLES = ("doctor", "patient", "measurement", "judge")


def _root() -> Path:
    return Path(__file__).resolve().parent.parent


def default_map_path() -> Path:
    return _root() / "maps" / "hospital.tmx"


def assets_dir() -> Path:
    return _root() / "assets"


def build_shift(*, cases: str, llm: dict[str, str], model: str | None, doctors: int, patients: int, seed: int,
                map_path: Path | None, runner: Runner, log: Any, pool: LlamaPool,
                config: WorldConfig | None = None) -> World:
    case_list, _ = load_cases(cases)
    by_id = {c.id: c for c in case_list}
    backends = build_role_backends(llm, model=model, cases=by_id, seed=seed, pool=pool)
    wc = config or WorldConfig()
    wc = replace(wc, doctors=doctors, patients=patients, consultation=wc.consultation.with_seed(seed))
    hmap = load_map(map_path or default_map_path())
    world = World(hmap, case_list, RoleModels(**{r: backends[r] for r in ROLES}), wc, runner=runner, log=log)
    if log is not None:
        log.emit(ShiftHeader(map=str(hmap.path), seed=seed, config={"cases": cases, "doctors": doctors,
                                                                       "patients": patients},
                             models={r: describe_spec(s, model) for r, s in llm.items()},
                             git_revision=git_revision(), packages=package_versions()), t=0.0)
    world.reset(seed)
    return world


def build_replay(run_dir: Path, case_id: str | None, *, map_path: Path | None, runner: Runner, log: Any,
                 doctors: int = 2) -> tuple[World, list[dict[str, Any]]]:
    """A world that plays the cases of a ``medsim bench`` run from their event logs: the
    same consultation engine, fed the recorded model outputs. Returns the world and the
    recorded results rows it should reproduce."""
    run_dir = Path(run_dir)
    ev_dir = run_dir / "events"
    if not ev_dir.is_dir():
        raise MapError(f"{run_dir}: not a medsim bench run (no events/ folder)")
    files = [ev_dir / f"{case_id}.jsonl"] if case_id else sorted(ev_dir.glob("*.jsonl"))
    if case_id and not files[0].is_file():
        raise MapError(f"{run_dir}: no event log for case '{case_id}'")
    logs = {f.stem: read_events(f) for f in files}
    header = next(iter(logs.values()))[0]
    cfg = header["config"]
    cases_spec = cfg["cases"]
    case_list, _ = load_cases(cases_spec, skip_invalid=True)
    wanted = [c for c in case_list if c.id in logs]
    if not wanted:
        raise MapError(f"{run_dir}: none of the logged cases are in '{cases_spec}'")
    cc = cfg["consultation"]
    consult = ConsultationConfig(max_turns=cc["max_turns"], min_gathering=cc.get("min_gathering", 0)).with_seed(header["seed"])
    llm = ReplayLLM(logs)
    wc = WorldConfig(doctors=min(doctors, len(wanted)), patients=len(wanted), consultation=consult)
    world = World(load_map(map_path or default_map_path()), wanted, RoleModels(llm, llm, llm, llm), wc,
                  runner=runner, log=log)
    world.reset(header["seed"], case_order=list(range(len(wanted))))
    from agents.bench import read_results

    rows = [r for r in read_results(run_dir / "results.jsonl") if r["case_id"] in logs]
    return world, rows
