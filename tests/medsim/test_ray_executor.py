"""``medsim bench --executor ray``: cells on Ray actors write the run directory a local
run writes (rows, event logs, summary, report), resume across executors, and a worker
that fails becomes its cell's error row. Runs on a local Ray instance (2 CPUs)."""
import importlib.util
import json
import os
import sys

import pytest

from agents.cases.registry import load_cases
from agents.events import read_events
from agents.llm.scripted import ScriptedLLM
from agents.results import read_results
from medsim.bench import BenchError, BenchOptions, run_bench
from medsim.cli import main
from medsim.spec import RunSpec, SpecError, build_spec
from tests.helpers import log_bytes

needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                               reason="ray is not installed (pip install 'medsim[ray]')")


@pytest.fixture(scope="module")
def ray_instance():
    import ray

    # "local": a new instance even where `ray start` left one's address behind
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield ray
    ray.shutdown()


def _bench(tmp_path, out, *, executor="local", resume=False, on_row=None, backends=None, **over):
    spec = build_spec(None, {"executor": executor, **over})
    return run_bench(spec, BenchOptions(out=tmp_path / out, progress=False, resume=resume),
                     on_row=on_row, backends=backends)


def _rows(out):
    """results.jsonl's rows by cell, but their wall time."""
    rows = read_results(out / "results.jsonl")
    keyed = {(r["case_id"], r["seed"], r["condition"]): {k: v for k, v in r.items() if k != "wall_s"} for r in rows}
    assert len(keyed) == len(rows), "a cell written twice"
    return keyed


def _same_run(a, b):
    """The two run directories hold the same run (but timings and the invocation's stamp)."""
    assert _rows(a) == _rows(b)
    names = sorted(p.name for p in (a / "events").iterdir())
    assert names == sorted(p.name for p in (b / "events").iterdir())
    for n in names:
        assert log_bytes(a / "events" / n) == log_bytes(b / "events" / n), n
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (a, b))
    assert {k: v for k, v in sa.items() if "wall" not in k} == {k: v for k, v in sb.items() if "wall" not in k}
    assert (a / "report.md").read_text() == (b / "report.md").read_text()
    assert (a / "report.html").is_file() and (b / "report.html").is_file()
    assert sorted(p.name for p in (a / "transcripts").iterdir()) == sorted(p.name for p in (b / "transcripts").iterdir())


# -- the spec and the missing extra (no Ray needed) -----------------------------------------
def test_executor_is_how_a_run_executes_not_what_it_is():
    local, ray_spec = build_spec(None, {}), build_spec(None, {"executor": "ray", "ray_address": "auto"})
    assert "executor" not in local.to_dict()  # a local run's spec, run.json and logs read as before
    assert ray_spec.to_dict()["executor"] == "ray" and ray_spec.to_dict()["ray_address"] == "auto"
    assert RunSpec.from_dict(ray_spec.to_dict()) == ray_spec
    assert local.identity() == ray_spec.identity()  # --resume continues a run on either
    assert "executor" not in ray_spec.to_dict(executor=False)
    with pytest.raises(SpecError, match="executor: must be one of local, ray"):
        build_spec(None, {"executor": "dask"})
    with pytest.raises(SpecError, match="ray_address: only with executor"):
        build_spec(None, {"ray_address": "auto"})


def test_ray_missing_is_a_clear_error(tmp_path, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(BenchError, match=r"pip install 'medsim\[ray\]'"):
        _bench(tmp_path, "run", executor="ray", limit=2)
    assert not (tmp_path / "run").exists()  # nothing written
    rc = main(["bench", "--executor", "ray", "--limit", "2", "--out", str(tmp_path / "cli"), "--no-progress"])
    assert rc == 2 and "pip install 'medsim[ray]'" in caplog.text and not (tmp_path / "cli").exists()


@needs_ray
def test_memory_runs_stay_local(tmp_path):
    with pytest.raises(BenchError, match="does not run a case memory"):
        _bench(tmp_path, "m", executor="ray", limit=2, **{"memory.mode": "frozen", "memory.dir": str(tmp_path / "mem")})
    assert not (tmp_path / "m").exists()


# -- on a local Ray instance ----------------------------------------------------------------
@needs_ray
def test_a_run_starts_and_ends_its_own_ray_instance(tmp_path):
    import ray

    if ray.is_initialized():  # (another test's instance is up: this run would join it)
        pytest.skip("a Ray instance is already up in this process")
    o = _bench(tmp_path, "own", executor="ray", limit=2, workers=2)
    assert o.summary["cases"] == 2 and o.exit_code == 0 and not ray.is_initialized()


@needs_ray
def test_ray_run_writes_what_a_local_run_writes(tmp_path, ray_instance, caplog):
    over = {"limit": 5, "seeds": [0, 1], "workers": 3}
    r = _bench(tmp_path, "ray", executor="ray", **over)
    assert "the Ray cluster has 2 CPU(s): running 2 workers, not 3" in caplog.text
    loc = _bench(tmp_path, "local", **over)
    assert r.summary["cases"] == 10 and r.summary["errors"] == 0 and r.exit_code == 0
    _same_run(r.out, loc.out)
    run = json.loads((r.out / "run.json").read_text())
    assert run["spec"]["executor"] == "ray" and run["identity"] == json.loads((loc.out / "run.json").read_text())["identity"]
    assert "executor" not in read_events(r.out / "events" / sorted((r.out / "events").iterdir())[0].name)[0]["spec"]


def _stop_after(n, seen):
    def on_row(row):
        seen.append(row["case_id"])
        if len(seen) == n:
            raise KeyboardInterrupt  # as if the run were stopped
    return on_row


@needs_ray
@pytest.mark.parametrize("first,then", [("local", "ray"), ("ray", "local")])
def test_resume_across_executors_repeats_and_loses_nothing(tmp_path, ray_instance, first, then):
    over = {"limit": 8, "workers": 2}
    before = []
    with pytest.raises(KeyboardInterrupt):
        _bench(tmp_path, "run", executor=first, on_row=_stop_after(3, before), **over)
    kept = read_results(tmp_path / "run" / "results.jsonl")
    assert [r["case_id"] for r in kept] == before
    after = []
    o = _bench(tmp_path, "run", executor=then, resume=True, on_row=lambda r: after.append(r["case_id"]), **over)
    assert o.summary["cases"] == 8 and o.exit_code == 0
    assert not set(after) & set(before) and len(after) == 5  # nothing repeated
    assert read_results(tmp_path / "run" / "results.jsonl")[:3] == kept
    _same_run(tmp_path / "run", _bench(tmp_path, "straight", **over).out)  # nothing lost


class _WorkerFault(BaseException):
    """Not an Exception: run_case does not catch it, so it leaves the worker's cell."""


class _FaultyDoctor:
    """The scripted doctor, but on a Ray worker (another process than the test's) it
    crashes the process for one case and raises out of the cell for another."""

    name = "scripted"

    def __init__(self, cases, driver_pid, crash, fault):
        self.inner, self.driver_pid, self.crash, self.fault = ScriptedLLM(cases), driver_pid, crash, fault

    def generate(self, messages, params, ctx):
        if os.getpid() != self.driver_pid:  # never the test process
            if ctx.case_id == self.crash:
                os._exit(3)
            if ctx.case_id == self.fault:
                raise _WorkerFault("the worker broke")
        return self.inner.generate(messages, params, ctx)


@needs_ray
def test_a_failing_worker_is_its_cells_error_row(tmp_path, ray_instance):
    ray_instance.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers need not import tests/
    cases = {c.id: c for c in load_cases("demo")[0][:6]}
    ids = list(cases)
    doctor = _FaultyDoctor(cases, os.getpid(), crash=ids[1], fault=ids[3])
    o = _bench(tmp_path, "run", executor="ray", limit=6, workers=2, backends={"doctor": doctor})
    rows = {r["case_id"]: r for r in read_results(tmp_path / "run" / "results.jsonl")}
    assert sorted(rows) == ids and o.summary["errors"] == 2 and o.exit_code == 1  # the run went on
    for cid in (ids[1], ids[3]):
        r = rows[cid]
        assert r["status"] == "error" and "Ray worker" in r["error"], r
        ev = read_events(tmp_path / "run" / r["events"])
        assert [e["type"] for e in ev] == ["header", "case_error", "consultation_ended", "case_finished"]
    assert "_WorkerFault: the worker broke" in rows[ids[3]]["error"]
    assert all(rows[c]["status"] != "error" for c in ids if c not in (ids[1], ids[3]))
    # the same cells run locally (the test's own process: no fault) are the run's other rows
    loc = _rows(_bench(tmp_path, "local", limit=6, workers=2, backends={"doctor": doctor}).out)
    ray_rows = _rows(tmp_path / "run")
    assert all(ray_rows[k] == loc[k] for k in loc if k[0] not in (ids[1], ids[3]))
    # --resume --retry-errors runs the two again (here the faults strike again, and are rows again)
    o2 = run_bench(build_spec(None, {"executor": "ray", "limit": 6, "workers": 2}),
                   BenchOptions(out=tmp_path / "run", progress=False, resume=True, retry_errors=True),
                   backends={"doctor": ScriptedLLM(cases)})
    assert o2.summary["errors"] == 0 and len(read_results(tmp_path / "run" / "results.jsonl")) == 6
