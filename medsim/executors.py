"""Where a benchmark's cells run: threads in this process, or actors on a Ray cluster.

:func:`open_executor` turns a spec's ``executor`` into a :class:`CellExecutors`: a
factory ``(workers) -> concurrent.futures.Executor`` that :func:`medsim.bench._run_cells`
runs its cells with, and ``close()``. Either way a cell is submitted as
``submit(run_cell, plan, unit, path, events_file=...)`` and its future holds the cell's
results row once the cell's event log is at ``path``; the bench appends the rows through
one writer in the order they finish. So a run directory is the same whichever executor
ran it, and ``--resume`` continues a run on either.

Ray (``executor = "ray"``, an optional extra: ``pip install 'medsim[ray]'``): a pool of
``workers`` actors, each holding the run's spec (as :meth:`RunSpec.to_dict`), its units
and its backends, built there (an in-process model loads once per actor). An actor runs
one cell at a time into a file of its own and returns the row and the log's bytes; the
driver writes the log under ``OUT/events``. A cell whose actor fails (an exception, a
crash, a lost node) gets an error row with a log that says why: the run goes on, and
``--resume --retry-errors`` runs it again.
"""
from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
from collections import deque
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from agents.events import CaseError, CaseFinished, ConsultationEnded, EventLog
from agents.llm.base import LLM
from agents.llm.llamacpp import LlamaPool
from agents.suites.contract import Unit, Units
from medsim.assemble import Backends, RunPlan, plan_for
from medsim.errors import BenchError
from medsim.spec import RunSpec

__all__ = ["CellExecutors", "LocalCells", "RayCells", "open_executor", "failed_cell", "RAY_INSTALL"]

logger = logging.getLogger(__name__)

RAY_INSTALL = "pip install 'medsim[ray]'"


class CellExecutors:
    """Makes the executor a batch of cells runs on (``workers`` at once); ``close()``
    releases what :func:`open_executor` took (a Ray instance it started)."""

    def __call__(self, workers: int) -> Executor:
        raise NotImplementedError

    def close(self) -> None:
        pass


class LocalCells(CellExecutors):
    """Threads in this process, sharing the driver's backends."""

    def __call__(self, workers: int) -> Executor:
        return ThreadPoolExecutor(max_workers=workers)


def open_executor(spec: RunSpec, units: Units, *, override: Mapping[str, LLM] | None = None
                  ) -> CellExecutors:
    """The spec's executor, checked and connected: a missing Ray, a run it cannot do, or
    a cluster it cannot reach raise :class:`~medsim.errors.BenchError` before anything is
    written."""
    if spec.executor == "local":
        return LocalCells()
    assert spec.executor == "ray", spec.executor
    return RayCells.connect(spec, units, override=override)


# -- a cell that failed outside run_cell --------------------------------------------------
def failed_cell(plan: RunPlan, unit: Unit, path: Path, *, events_file: str, error: str, wall_s: float = 0.0
                ) -> dict[str, Any]:
    """Write ``path`` as the log of a cell that ended in ``error`` before it could record
    anything itself (its worker raised or died), and return its error row: the same
    events :func:`medsim.bench.run_cell` writes for a cast that cannot be built."""
    events: list[dict[str, Any]] = []
    with EventLog(path, keep=events) as log:
        log.emit(plan.header(unit))
        log.emit(CaseError(turn=0, error=error))
        log.emit(ConsultationEnded(status="error", turns=0, diagnosis=None, tests_requested=[], error=error,
                                   failure=None))
        row = plan.suite.row(unit, events, seed=plan.seed, condition=plan.condition, events_file=events_file,
                       wall_s=wall_s)
        log.emit(CaseFinished(status=row["status"], turns=row["turns"], diagnosis=row.get("diagnosis"),
                              correct=row.get("correct")))
    return row


# -- Ray ----------------------------------------------------------------------------------
def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise BenchError(f"--executor ray needs Ray, which is not installed: {RAY_INSTALL}") from None
    return ray


class CellWorker:
    """A Ray actor's state: the run's spec, cases and backends (built here, once), and a
    plan per (condition, seed). Runs one cell at a time into its own folder."""

    def __init__(self, spec: Mapping[str, Any], units: Units, override: Mapping[str, LLM] | None):
        self.spec = RunSpec.from_dict(spec)
        self.pool = LlamaPool(jump_forward=self.spec.jump_forward)
        self.backends = Backends.for_run(self.spec, units, self.pool, override=override)
        self.plans: dict[tuple[str, int], RunPlan] = {}
        self._tmp = tempfile.TemporaryDirectory(prefix="medsim-cell-")
        self.tmp = Path(self._tmp.name)

    def ready(self) -> bool:
        return True

    def run(self, fn: Callable[..., dict[str, Any]], condition: str, seed: int, provenance: Mapping[str, Any],
            unit: Unit, events_file: str) -> tuple[dict[str, Any], bytes]:
        """``fn(plan, unit, path, events_file=...)`` (medsim.bench.run_cell) on this
        worker; the row and the bytes of the log it wrote."""
        plan = self.plans.get((condition, seed))
        if plan is None:
            plan = plan_for(self.spec, condition, seed, self.backends)
            plan.provenance = dict(provenance)  # the driver's: the run's command, start, files
            self.plans[(condition, seed)] = plan
        path = self.tmp / Path(events_file).name
        try:
            row = fn(plan, unit, path, events_file=events_file)
            return row, path.read_bytes()
        finally:
            path.unlink(missing_ok=True)


def _worker_error(ray: Any, e: BaseException) -> str:
    """A short line for a cell whose worker failed (a task error's cause, not its traceback)."""
    cause = e
    if isinstance(e, ray.exceptions.RayTaskError) and getattr(e, "cause", None) is not None:
        cause = e.cause
    text = str(cause).strip().splitlines()
    first = text[0] if text else ""
    return f"internal error on a Ray worker: {type(cause).__name__}: {first[:300]}"


@dataclass
class _Cell:
    future: Future
    fn: Callable[..., dict[str, Any]]
    plan: RunPlan
    unit: Unit
    path: Path
    events_file: str
    started: float = 0.0


class _RayPool(Executor):
    """Actors, one cell each at a time: a thread hands queued cells to idle actors and
    settles each finished one (writes its log, resolves its future). An actor that died
    (its process crashed, its node was lost) is replaced by ``new_actor()`` for the next
    cell. ``shutdown`` drops the cells not yet finished (their rows are never written, so
    ``--resume`` runs them) and ends the actors."""

    def __init__(self, ray: Any, actors: list[Any], new_actor: Callable[[], Any]):
        self.ray = ray
        self.actors = actors
        self.new_actor = new_actor
        self.idle = list(actors)
        self.queue: deque[_Cell] = deque()
        self.running: dict[Any, tuple[Any, _Cell]] = {}  # ref -> (actor, cell)
        self.cv = threading.Condition()
        self.closed = False
        self.thread = threading.Thread(target=self._pump, name="medsim-ray-cells", daemon=True)
        self.thread.start()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:  # type: ignore[override]
        plan, unit, path = args
        cell = _Cell(Future(), fn, plan, unit, Path(path), kwargs["events_file"])
        with self.cv:
            if self.closed:
                raise RuntimeError("cannot submit a cell after shutdown")
            self.queue.append(cell)
            self.cv.notify()
        return cell.future

    def _dispatch(self) -> None:  # holding self.cv
        while self.idle and self.queue:
            cell = self.queue.popleft()
            if not cell.future.set_running_or_notify_cancel():
                continue
            actor = self.idle.pop()
            cell.started = time.perf_counter()
            ref = actor.run.remote(cell.fn, cell.plan.condition, cell.plan.seed, cell.plan.provenance, cell.unit,
                                   cell.events_file)
            self.running[ref] = (actor, cell)

    def _pump(self) -> None:
        try:
            self._loop()
        except BaseException as e:  # noqa: BLE001 - Ray itself failed (shut down, lost): no cell waits forever
            with self.cv:
                self.closed = True
                cells = [*self.queue, *(c for _, c in self.running.values())]
                self.queue.clear()
                self.running.clear()
            for cell in cells:
                if not cell.future.done():
                    cell.future.set_exception(e)

    def _loop(self) -> None:
        while True:
            with self.cv:
                self._dispatch()
                while not self.running and not self.closed:
                    self.cv.wait()
                    self._dispatch()
                if self.closed:
                    return
                refs = list(self.running)
            done, _ = self.ray.wait(refs, num_returns=1, timeout=0.5)
            for ref in done:
                with self.cv:
                    if self.closed:
                        return
                    actor, cell = self.running.pop(ref)
                replace = not self._settle(ref, cell)
                with self.cv:
                    if replace:
                        actor = self.new_actor()
                        self.actors.append(actor)
                    self.idle.append(actor)

    def _settle(self, ref: Any, cell: _Cell) -> bool:
        """Write the cell's log and resolve its future; False when its actor died."""
        alive = True
        try:
            try:
                row, data = self.ray.get(ref)
            except Exception as e:  # noqa: BLE001 - a worker's failure is its cell's error, never the run's
                alive = not isinstance(e, self.ray.exceptions.RayActorError)
                error = _worker_error(self.ray, e)
                logger.warning("case %s (seed %s, %s): %s", cell.unit.id, cell.plan.seed, cell.plan.condition, error)
                row = failed_cell(cell.plan, cell.unit, cell.path, events_file=cell.events_file, error=error,
                                  wall_s=time.perf_counter() - cell.started)
            else:
                cell.path.write_bytes(data)
        except BaseException as e:  # noqa: BLE001 - the driver's own failure (a full disk): raised by result()
            cell.future.set_exception(e)
        else:
            cell.future.set_result(row)
        return alive

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self.cv:
            if self.closed:
                return
            self.closed = True
            for cell in self.queue:
                cell.future.cancel()
            for _, cell in self.running.values():  # running: cannot be cancelled, and never settled now
                cell.future.set_exception(RuntimeError(f"case {cell.unit.id}: stopped before it finished"))
            self.queue.clear()
            self.running.clear()
            self.cv.notify_all()
        self.thread.join(timeout=10)
        for actor in self.actors:
            try:
                self.ray.kill(actor)
            except Exception as e:  # noqa: BLE001 - already gone with its node; nothing left to end
                logger.debug("ray.kill: %s", e)


class RayCells(CellExecutors):
    """Cells on Ray actors (see the module's docstring). Started with
    :meth:`connect`: joins the Ray instance this process already has, the cluster at
    ``spec.ray_address`` ("auto": the one running here), or starts a local instance
    (shut down again by :meth:`close`)."""

    def __init__(self, ray: Any, spec: RunSpec, units: Units, override: Mapping[str, LLM] | None,
                 started: bool):
        self.ray, self.spec, self.started = ray, spec, started
        self.units_ref = ray.put(units)
        try:
            self.override_ref = ray.put(dict(override or {}))
        except Exception as e:  # noqa: BLE001 - an injected backend that cannot travel to a worker
            self.close()
            raise BenchError(f"--executor ray: the injected backends cannot be sent to Ray workers ({e})") from None

    @classmethod
    def connect(cls, spec: RunSpec, units: Units, *, override: Mapping[str, LLM] | None = None
                ) -> "RayCells":
        ray = _import_ray()
        modes = {spec.for_condition(c).memory.mode for c in spec.condition_names()}
        if modes != {"off"} or spec.memory.learn_cases:
            raise BenchError("--executor ray does not run a case memory (memory.mode / --memory): the memory is "
                             "one directory on this machine; use --executor local")
        started = False
        if not ray.is_initialized():
            address = spec.ray_address
            kw: dict[str, Any] = {"logging_level": logging.WARNING}
            if address is None:  # a new local instance for this run (never one `ray start` left): a CPU a worker
                kw.update(num_cpus=max(spec.workers, os.cpu_count() or 1), include_dashboard=False)
            try:
                ray.init(address=address or "local", **kw)
            except Exception as e:  # noqa: BLE001 - no cluster there, a version mismatch: said, nothing written
                where = f"the Ray cluster at {address}" if address else "a local Ray instance"
                raise BenchError(f"--executor ray: cannot start or join {where}: {type(e).__name__}: {e}") from None
            started = True
        elif spec.ray_address is not None:
            logger.info("Ray is already initialised in this process; --ray-address %s is not used", spec.ray_address)
        return cls(ray, spec, units, override, started)

    def __call__(self, workers: int) -> Executor:
        ray = self.ray
        cpus = int(ray.cluster_resources().get("CPU", 0))
        n = workers
        if 0 < cpus < workers:
            logger.warning("the Ray cluster has %d CPU(s): running %d workers, not %d", cpus, cpus, workers)
            n = cpus
        # one CPU each; an actor that dies is replaced by the pool (its cell is an error row)
        worker = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(CellWorker)
        spec = self.spec.to_dict(secrets=True)  # the workers build the backends: a URL's key is needed there

        def new_actor() -> Any:
            return worker.remote(spec, self.units_ref, self.override_ref)

        actors = [new_actor() for _ in range(max(1, n))]
        try:  # a worker that cannot even start (medsim missing on a node) stops the run, not each cell
            ray.get([a.ready.remote() for a in actors])
        except Exception as e:  # noqa: BLE001 - said with its cause
            for a in actors:
                ray.kill(a)
            raise BenchError(f"--executor ray: a worker could not start: {_worker_error(ray, e)}") from None
        return _RayPool(ray, actors, new_actor)

    def close(self) -> None:
        if self.started and self.ray.is_initialized():
            self.ray.shutdown()
        self.started = False
