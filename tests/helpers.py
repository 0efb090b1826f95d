"""Small builders shared by the tests: a consultation with its scoring, as the bench
runs it, returning the results row and the events as a log holds them."""
from __future__ import annotations

import json
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Iterator

from agents.cases.model import Case
from agents.consultation import ConsultationConfig, run_consultation
from agents.events import DictSink
from agents.llm.base import GenerateParams
from agents.participants import CastConfig, llm_cast
from agents.suites.contract import Unit
from agents.suites.diagnosis import DiagnosisSuite
from agents.roles import get_role, role_names
from agents.scorers import DiagnosisScorer, Transcript, score_case


def roles(llm: Any, **over: Any) -> dict[str, Any]:
    """The same backend for every role (but optional ones, like the vision reader, unless
    given), some replaced."""
    d = {r: llm for r in role_names() if get_role(r).backend is None}
    d.update(over)
    return d


def cast_builder(llms: dict[str, Any], cfg: CastConfig = CastConfig()):
    return lambda case, sink: llm_cast(case, llms, cfg, sink)


def consult(case: Case, llms: dict[str, Any], *, cast: CastConfig = CastConfig(),
            rules: ConsultationConfig = ConsultationConfig(), participants: dict[str, Any] | None = None,
            judge_params: GenerateParams = GenerateParams(temperature=0.0, max_tokens=60)) -> tuple[dict, list[dict]]:
    """Run one consultation and score it; ``participants`` replace cast members."""
    sink = DictSink()
    members = dict(llm_cast(case, llms, cast, sink))
    members.update(participants or {})
    run_consultation(case, members, rules, sink)
    score_case(case, Transcript.from_events(sink.events, case_id=case.id),
               [DiagnosisScorer(llms["judge"], judge_params)], sink)
    row = DiagnosisSuite().row(Unit(case.id, case.source, case), sink.events, seed=0, condition="base", events_file="",
                               wall_s=0.0)
    return row, sink.events


def of(events: list[dict], type_: str, **match: Any) -> list[dict]:
    return [e for e in events if e["type"] == type_ and all(e.get(k) == v for k, v in match.items())]


RUN_STAMP = ("command", "started")  # header fields that differ from one invocation to the next


def log_bytes(path: Path) -> bytes:
    """An event log's bytes with the header's command line and start time taken out:
    what the same spec and seed must reproduce byte for byte."""
    first, _, rest = Path(path).read_bytes().partition(b"\n")
    header = json.loads(first)
    assert all(k in header for k in RUN_STAMP), f"{path}: the header has no {RUN_STAMP}"
    for k in RUN_STAMP:
        header.pop(k)
    return json.dumps(header, sort_keys=True, separators=(",", ":")).encode() + b"\n" + rest


def default_sigint() -> None:
    """``preexec_fn`` for a child that a test stops with SIGINT, as Ctrl-C at a terminal
    would: a suite started in the background (``cmd &`` in a script) inherits SIGINT
    ignored, and Python then installs no KeyboardInterrupt handler in the child."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def medsim_view(folder: Path, page: str = "report.html") -> Iterator[tuple[str, int]]:
    """``medsim view FOLDER`` in its own process on any free port, stopped with SIGINT (as
    Ctrl-C) on exit, which must end it with status 0. Yields the served root's URL
    (``http://127.0.0.1:PORT``) and the port; the first line it prints must name ``page``."""
    import re
    import signal
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-m", "medsim", "view", str(folder), "--port", "0", "--no-browser",
                          "--quiet"], preexec_fn=default_sigint, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        line = p.stdout.readline()
        m = re.search(rf"(http://127\.0\.0\.1:(\d+))/{re.escape(page)}", line)
        assert m, f"no URL of {page} from medsim view: {line!r} {p.stderr.read() if p.poll() is not None else ''}"
        yield m.group(1), int(m.group(2))
    finally:
        p.send_signal(signal.SIGINT)
        try:
            assert p.wait(timeout=20) == 0
        except subprocess.TimeoutExpired:
            p.kill()
            raise


def clean_http_env(monkeypatch: Any, key: str | None = None) -> None:
    """No API key but ``key`` (as MEDSIM_API_KEY) and no proxy from the environment that
    runs the tests: the HTTP clients' tests talk to loopback servers only."""
    for var in ("MEDSIM_API_KEY", "OPENAI_API_KEY", "http_proxy", "https_proxy", "all_proxy", "no_proxy",
                "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    if key is not None:
        monkeypatch.setenv("MEDSIM_API_KEY", key)


def osce_spec(personas: str, *, seeds: Any = (0,), workers: int = 1, roles: dict | None = None, llm: str | None = None,
              preflight: bool = True, **osce: Any):
    """An OSCE run's spec (``suite = "osce"``): ``osce`` keys are the ``[osce]`` section's
    (max_rounds, cases, guards, rubric, stop_classifier)."""
    from medsim.spec import build_spec

    o: dict[str, Any] = {"suite": "osce", "osce.personas": personas, "seeds": list(seeds), "workers": workers,
                         "preflight": preflight}
    o.update({f"osce.{k}": v for k, v in osce.items() if v is not None})
    if llm:
        o["llm"] = llm
    for role, table in (roles or {}).items():
        o.update({f"roles.{role}.{k}": v for k, v in table.items() if v is not None})
    return build_spec(None, o)


class Script:
    """A backend that hands out, per role, the replies given in order, then (``repeat``)
    the last one for ever, or the ``inner`` backend's."""

    name = "script"

    def __init__(self, inner: Any, repeat: bool = True, **per_role: list[str]):
        self.inner, self.repeat, self.per_role = inner, repeat, {k: list(v) for k, v in per_role.items()}

    def generate(self, messages: Any, params: Any, ctx: Any) -> Any:
        from agents.llm.base import Output

        q = self.per_role.get(ctx.role)
        if q:
            return Output(q.pop(0) if len(q) > 1 or not self.repeat else q[0], self.name)
        return self.inner.generate(messages, params, ctx)


def hold_gate(gate: Any, ctx: Any, release: Any, timeout: float = 10.0) -> None:
    """A thread takes ``gate`` (an ``agents.llm.schedule.ModelGate``) for the call ``ctx``
    and keeps it until ``release`` (a ``threading.Event``) is set, or ``timeout`` passes;
    returns once that thread has it."""
    import threading

    held = threading.Event()

    def blocker() -> None:
        with gate.turn(ctx):
            held.set()
            release.wait(timeout)

    threading.Thread(target=blocker, daemon=True).start()
    assert held.wait(5), "the gate was never free"
