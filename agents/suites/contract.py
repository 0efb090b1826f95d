"""The suite contract: what an evaluation suite is, so that one run loop serves them all.

A suite (the diagnostic consultation, AutoMedic's multiple-choice dialogue, OSCE's
treatment persuasion, the next one) is one bundle, registered by name
(:func:`agents.suites.registry.register_suite`):

- its **roles** (the run spec resolves a backend for each) and its generation defaults;
- its **options**: its own section of the run spec (``[osce]``), parsed and validated by
  the suite, and the command-line flags that set them (:class:`Option`);
- its **units**: what a cell runs on (the cases of a case set, OSCE's personas); a cell is
  (unit, seed, condition);
- its **engine**: the steppable conversation of one cell (``start``, ``step``, ``done``,
  ``fail``, ``finish``), writing typed events to the cell's log;
- its **scorers**: pure functions over the finished log (``medsim score`` re-runs them);
- its **row** and **summary**: the results row of a cell, built from its events only, and
  the run's summary over the rows;
- its **report sections**: the Markdown the run's report.md shows after the common header.

The shell (``medsim``: bench, consult, score, the world) builds a cell's plan
(:class:`CellPlan`: the models, generation settings, the spec's view for the cell) and
asks the suite for the rest. A suite never imports the shell. ``check_suite``
(:mod:`agents.suites.conformance`) checks a registration.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping, Protocol, Sequence

from agents.events import EventSink
from agents.llm.base import LLM, GenerateParams
from agents.llm.calls import RetryPolicy
from agents.scorers import Scorer
from agents.settings import SpecError

__all__ = ["Unit", "Units", "Option", "Engine", "CellPlan", "Suite", "SpecError"]


@dataclass(frozen=True)
class Unit:
    """What one cell runs on. ``id`` keys the results row (``case_id``), ``source`` is
    where it came from (a header's ``case_source``), ``item`` is the suite's own object
    (a :class:`~agents.cases.model.Case`, an OSCE persona)."""

    id: str
    source: str
    item: Any


@dataclass(frozen=True)
class Units:
    """A run's units, loaded once: ``units`` (the same for every seed unless ``seeded``
    draws them per seed, as OSCE's personas draw a gender) and the ``invalid`` records
    of the input that were skipped."""

    units: tuple[Unit, ...]
    invalid: tuple[Any, ...] = ()
    seeded: Callable[[int], Sequence[Unit]] | None = None

    def for_seed(self, seed: int) -> list[Unit]:
        return list(self.seeded(seed)) if self.seeded is not None else list(self.units)

    def by_id(self, seed: int) -> dict[str, Unit]:
        return {u.id: u for u in self.for_seed(seed)}


@dataclass(frozen=True)
class Option:
    """A command-line flag that sets a key of the suite's own section.

    Args:
        flag: the flag (``--max-rounds``).
        key: the key in the suite's section (``max_rounds``).
        help: what it does, with its default.
        type: ``str``, ``int`` or ``float`` for a flag with a value; ``bool`` for a switch.
        value: a switch's value when given (``False`` for ``--no-stop-classifier``).
    """

    flag: str
    key: str
    help: str
    type: type = str
    value: Any = True
    metavar: str | None = None


class Engine(Protocol):
    """One cell's conversation, driven by the run loop: ``start()``, then ``step()``
    until ``done``; ``fail(message)`` ends it as an error from outside; ``finish()``
    writes its ``consultation_ended`` event."""

    done: bool

    def start(self) -> None: ...

    def step(self) -> Any: ...

    def fail(self, message: str) -> None: ...

    def finish(self) -> Any: ...


class CellPlan(Protocol):
    """What the shell assembles for one (condition, seed) of a run and hands the suite
    (``medsim.assemble.RunPlan``): the spec's view for that condition (its ``roles``,
    its ``protocol``, ``diagnosis`` and ``memory`` sections, the suite's ``options``),
    the models by role and their settings, and the case memory when there is one."""

    spec: Any
    seed: int
    condition: str
    llms: Mapping[str, LLM]

    def params(self, role: str) -> GenerateParams: ...

    def retry(self, role: str) -> RetryPolicy: ...


class Suite:
    """The contract, with the defaults most suites keep. Subclass, set ``name``, and
    implement :meth:`load`, :meth:`engine`, :meth:`scorers`, :meth:`row` and
    :meth:`summary`."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""  # a line for help texts and report titles
    unit_name: ClassVar[str] = "case"  # what a cell is called in progress bars and messages
    # the top-level sections of the run spec it reads besides the run's own keys (seeds,
    # workers, roles, ...): "cases" (cases, limit, skip_invalid), "protocol", "diagnosis",
    # "memory", "world", "conditions"
    reads: ClassVar[frozenset[str]] = frozenset()
    section: ClassVar[str | None] = None  # its own table in the run spec (None: no options)
    options: ClassVar[tuple[Option, ...]] = ()  # flags that set keys of that table
    # shared spec keys it keeps in its own section instead ({"protocol.guards": "guards"}: a
    # shared flag, --no-guards, then sets that key)
    keeps: ClassVar[Mapping[str, str]] = {}
    people: ClassVar[bool] = False  # a person can play a role (consult --as)
    live: ClassVar[bool] = False  # the hospital world can run its cells (the engine is a Consultation)
    # a run whose every cell failed or errored exits 1 (OSCE: a failed encounter is a finding)
    nothing_scored_fails: ClassVar[bool] = True
    verdict: ClassVar[str] = "correct"  # the row's field `medsim score` compares with the run's, cell by cell

    # -- the spec ------------------------------------------------------------------------
    def role_names(self) -> tuple[str, ...]:
        """The roles its cells use (default: every registered role)."""
        from agents.roles import role_names

        return role_names()

    def role_defaults(self, role: str) -> Mapping[str, Any]:
        """Generation settings of ``role`` in this suite over the role's own defaults."""
        return {}

    def parse_options(self, raw: Mapping[str, Any], *, seeds: Sequence[int]) -> Any:
        """Its section of the run spec, validated (raise :class:`SpecError` naming the
        key); the result is immutable and :meth:`options_dict` gives it back as a dict."""
        if raw:
            raise SpecError(f"{self.section}: the {self.name} suite takes no options", key=self.section)
        return None

    def options_dict(self, options: Any) -> dict[str, Any]:
        return {}

    def upgrade(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        """A spec's dict as an older medsim wrote it for this suite, in today's layout (a
        run made then resumes, replays and re-scores); others are returned as they are."""
        return raw

    def progress(self, rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
        """What a progress line shows so far (``accuracy``, ``correct``, ``scored``,
        ``errors``; None: counts only)."""
        return None

    # -- the cells -----------------------------------------------------------------------
    def load(self, spec: Any) -> Units:
        """The run's units (raise a clear error for input that cannot be read)."""
        raise NotImplementedError

    def scripted(self, units: Units, seed: int) -> LLM | None:
        """The suite's own deterministic fake for the ``scripted`` backend (None: the
        case-playing :class:`~agents.llm.scripted.ScriptedLLM`)."""
        return None

    def engine(self, plan: CellPlan, unit: Unit, sink: EventSink, cast: Mapping[str, Any] | None = None) -> Engine:
        """The cell's engine. ``cast``: participants the caller built (the world wraps
        them so a person can take over); a live suite's engine uses them."""
        raise NotImplementedError

    def cast(self, plan: CellPlan, unit: Unit, sink: EventSink) -> Mapping[str, Any]:
        """The participants of a cell (a live suite's; the world wraps them)."""
        raise NotImplementedError(f"the {self.name} suite builds its participants in its engine")

    def scorers(self, plan: CellPlan) -> list[Scorer]:
        raise NotImplementedError

    # -- results -------------------------------------------------------------------------
    def row(self, unit: Unit, events: Sequence[Mapping[str, Any]], *, seed: int, condition: str, events_file: str,
            wall_s: float) -> dict[str, Any]:
        """The results row of a finished cell, from its events only."""
        raise NotImplementedError

    def summary(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        raise NotImplementedError

    def csv_row(self, row: Mapping[str, Any]) -> Mapping[str, Any]:
        """A row as results.csv holds it (default: as it is)."""
        return row

    def headline(self, summary: Mapping[str, Any]) -> str:
        """The line the command prints when the run is over."""
        return f"{summary.get('cases', 0)} {self.unit_name}s, {summary.get('errors', 0)} errors"

    def describe(self, spec: Any) -> list[str]:
        """The report's lines about how the run was set up (after the git revision)."""
        return [f"- suite {self.name}; seeds: {', '.join(map(str, spec.seeds))}"]

    def report_sections(self, spec: Any, summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                        out: Any = None) -> list[str]:
        """The Markdown of report.md after its header: the suite's sections. Every text
        from a model, a case or the spec goes through :func:`agents.textsafe.md_cell`.
        ``out``: the run's folder (where a chart may be written), or None."""
        return []

    def brief(self, unit: Unit) -> str:
        """The line ``medsim consult`` prints before a cell starts."""
        return f"{self.unit_name.capitalize()} {unit.id}"

    def run_name(self, spec: Any) -> str:
        """The start of a run's default output folder's name (``runs/<this>-<doctor>-s<seed>``)."""
        return self.name

    # -- the live printer ----------------------------------------------------------------
    def live_line(self, event: Any) -> str | None:
        """A line ``medsim consult`` prints for one of the suite's own events (None:
        nothing)."""
        return None
