"""A pause just before a results row is written, for ``benchmarks/kill_trials.py`` only.

With ``MEDSIM_TRIAL_HOLD=CASE_ID`` and ``MEDSIM_TRIAL_HOLD_FILE=PATH`` in the environment,
the run loop, about to write the row of case CASE_ID (any seed, condition or results file), creates PATH and sleeps
(at most :data:`HOLD_S` seconds, then goes on). The trial script waits for PATH and kills
the run with SIGKILL: exactly in the window where the cell has finished (its learning is
committed to the memory) and its row is not on disk. Unset, which it always is but in
that script, it costs one environment lookup per row.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Mapping

__all__ = ["HOLD_ENV", "HOLD_FILE_ENV", "HOLD_S", "hold_before_row"]

HOLD_ENV = "MEDSIM_TRIAL_HOLD"
HOLD_FILE_ENV = "MEDSIM_TRIAL_HOLD_FILE"
HOLD_S = 60.0


def hold_before_row(row: Mapping[str, Any]) -> None:
    """Pause before ``row`` is written when :data:`HOLD_ENV` names its case."""
    case_id = os.environ.get(HOLD_ENV)
    if not case_id or row.get("case_id") != case_id:
        return
    path = os.environ.get(HOLD_FILE_ENV)
    if path:
        Path(path).write_text(f"{os.getpid()}\n", encoding="ascii")
    time.sleep(HOLD_S)
