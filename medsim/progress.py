"""Progress of a batch (bench cases, re-scored logs, judged pairs): a tqdm bar when
standard error is a terminal; in a file or a pipe, a log line every ``every`` items or
``interval_s`` seconds, and one at the end (done/total, accuracy so far, errors,
elapsed, ETA). Neither with ``-q`` (the log level above INFO)."""
from __future__ import annotations

import logging
import math
import sys
import time
from typing import Any, Callable, Mapping, TextIO

__all__ = ["Progress", "is_terminal"]

log = logging.getLogger(__name__)


def is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


def _duration(s: float) -> str:
    s = max(0, int(round(s)))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"{h}h{m:02d}m{sec:02d}s" if h else f"{m}m{sec:02d}s" if m else f"{sec}s"


class Progress:
    """``update(summary)`` after each item, with :func:`agents.results.summarise` of the
    rows so far (None: no accuracy, or no news of it); ``close()`` at the end."""

    def __init__(self, total: int, *, initial: int = 0, unit: str = "case", stream: TextIO | None = None,
                 every: int | None = None, interval_s: float = 30.0, clock: Callable[[], float] = time.monotonic,
                 logger: logging.Logger | None = None):
        self.total, self.done, self.unit = total, initial, unit
        self.initial = initial
        self.stream = stream if stream is not None else sys.stderr
        self.every = every or max(1, math.ceil(total / 10))
        self.interval_s, self.clock = interval_s, clock
        self.log = logger or log
        self.t0 = self.last_t = clock()
        self.last_done = initial
        self.summary: Mapping[str, Any] | None = None
        self.bar = None
        if self.log.isEnabledFor(logging.INFO) and is_terminal(self.stream):
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=initial, unit=unit, file=self.stream, dynamic_ncols=True)
        self.mode = "bar" if self.bar is not None else "lines"

    def update(self, summary: Mapping[str, Any] | None = None, n: int = 1) -> None:
        self.done += n
        if summary is not None:
            self.summary = summary
        if self.bar is not None:
            if summary is not None:
                acc = "n/a" if summary.get("accuracy") is None else f"{summary['accuracy']:.0%}"
                self.bar.set_postfix(acc=acc, errors=summary.get("errors", 0), refresh=False)
            self.bar.update(n)
            return
        now = self.clock()
        if self.done >= self.total or self.done - self.last_done >= self.every or now - self.last_t >= self.interval_s:
            self.log.info(self.line(now))
            self.last_done, self.last_t = self.done, now

    def line(self, now: float | None = None) -> str:
        now = self.clock() if now is None else now
        elapsed = now - self.t0
        pct = f" ({self.done / self.total:.0%})" if self.total else ""
        parts = [f"{self.unit} {self.done}/{self.total}{pct}"]
        s = self.summary
        if s is not None:
            acc = "n/a" if s.get("accuracy") is None else f"{s['accuracy']:.0%}"
            parts.append(f"accuracy {acc} ({s.get('correct', 0)}/{s.get('scored', 0)}), {s.get('errors', 0)} errors")
        ran = self.done - self.initial
        eta = "-" if ran <= 0 or self.done >= self.total else _duration(elapsed / ran * (self.total - self.done))
        parts.append(f"elapsed {_duration(elapsed)}, ETA {eta}")
        return "; ".join(parts)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
