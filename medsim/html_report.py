"""``report.html``: a bench run as one self-contained page a researcher can read and
share, with a transcript page per (case, seed, condition).

It reads the run directory only (``run.json``, ``results.jsonl``, ``events/``), so it
can be written at the end of a run, on ``--resume`` and afterwards (``medsim view``).
Every page is one file: CSS inline, plots and image thumbnails as base64 PNG, no
script and nothing fetched from the network (a Content-Security-Policy says so to the
browser too). Model and case text is data: autoescaped by jinja2, and control
characters, bidi overrides and lone surrogates are shown as visible marks instead of
being passed to the browser.

Layout written under OUT: ``report.html`` and ``transcripts/<events stem>.html``.
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import math
import os
import re
import shlex
import stat
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from markupsafe import Markup, escape

from agents.behaviour_checks import behaviour_table, format_check
from agents.events import expand_prompts
from agents.fidelity.scorer import PATIENT_LABELS, TECHNICIAN_LABELS, fidelity_summary
from agents.image_file import read_image_bytes
from agents.results import read_results, summarise
from agents.secrets import scrub_secrets
from agents.roles import STAFF, get_role, role_names, speaker_label
from agents.textsafe import UNSAFE
from medsim.measures_html import measures_context

__all__ = ["write_html_report", "neutralise", "transcript_href", "rescored_links", "ReportError"]

TRANSCRIPTS = "transcripts"
# events files are named by agents.names.event_file_name: a slug and a hash, nothing else
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,120}$")
# shown as a visible mark, never passed to the browser: the characters the terminal and
# report.md escape too (agents.textsafe: C0/C1 controls but tab and newline, DEL, bidi
# controls, zero-width and line/paragraph separators, BOM, lone surrogates)
_UNSAFE = UNSAFE
_THUMB_PX = 360
# what the pages read from a results row (rows of older runs may lack some)
_ROW_DEFAULTS: dict[str, Any] = {"seed": 0, "condition": "base", "specialty": None, "status": "-", "diagnosis": None,
                                 "truth": None, "correct": None, "error": None, "turns": 0, "n_tests": 0, "llm_calls": 0,
                                 "prompt_tokens": 0, "completion_tokens": 0, "wall_s": None}


class ReportError(RuntimeError):
    """The directory is not a bench run that a report can be written for."""


# -- text that is data ---------------------------------------------------------------------
def _mark(ch: str) -> str:
    cp = ord(ch)
    if 0xD800 <= cp <= 0xDFFF:
        label = "\ufffd"
    elif cp == 0x1B:
        label = "ESC"
    elif cp < 0x20 or 0x7F <= cp <= 0x9F:
        label = f"\\x{cp:02x}"
    else:
        label = f"U+{cp:04X}"
    return f'<span class="ctl" title="U+{cp:04X}">{label}</span>'


def neutralise(value: Any) -> Markup:
    """Text for an HTML page: escaped, with every control, bidi or invisible character
    shown as a visible mark (``ESC``, ``U+202E``) instead of being passed on. Markup
    (what a template built itself) is returned as it is."""
    if isinstance(value, Markup):
        return value
    text = value if isinstance(value, str) else str(value)
    text = text.replace("\r\n", "\n")
    out, last = [], 0
    for m in _UNSAFE.finditer(text):
        out.append(str(escape(text[last:m.start()])))
        out.append(_mark(m.group()))
        last = m.end()
    out.append(str(escape(text[last:])))
    return Markup("".join(out))


def _finalize(value: Any) -> Any:
    if value is None:
        return "-"
    return value if isinstance(value, Markup) else neutralise(value)


@lru_cache(maxsize=1)
def _environment():
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("medsim", "templates"), autoescape=True,
                             finalize=_finalize, undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True)
    env.filters["pct"] = _pct
    env.filters["num"] = _num
    return env


def render_page(template: str, **ctx: Any) -> str:
    env = _environment()
    css = env.loader.get_source(env, "style.css")[0]
    return env.get_template(template).render(css=Markup(css), **ctx)


def _pct(x: Any) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1%}"


def _num(x: Any, digits: int = 0) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:,.{digits}f}"


def write_page(path: Path, text: str) -> None:
    """A page replaced whole (a reader never sees half of one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(scrub_secrets(text), encoding="utf-8", errors="surrogateescape")  # no API key on a page
    os.replace(tmp, path)


# -- the run's files ------------------------------------------------------------------------
def _events_name(row: Mapping[str, Any]) -> str | None:
    """The stem of a row's events file when it is one of the run's own (events/NAME.jsonl)."""
    ev = row.get("events")
    if not isinstance(ev, str):
        return None
    parts = ev.split("/")
    if len(parts) != 2 or parts[0] != "events" or not parts[1].endswith(".jsonl"):
        return None
    stem = parts[1][: -len(".jsonl")]
    return stem if _SAFE_NAME.match(stem) else None


def transcript_href(row: Mapping[str, Any]) -> str | None:
    """The transcript page of a results row, relative to report.html (None: the row
    names no events file of this run)."""
    stem = _events_name(row)
    return f"{TRANSCRIPTS}/{stem}.html" if stem else None


def read_events(path: Path) -> list[dict[str, Any]]:
    out = []
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return out
    for line in lines:
        if not line.strip():
            continue
        try:
            e = json.loads(line)
        except ValueError:
            continue  # a torn last line
        if isinstance(e, dict):
            out.append(e)
    return expand_prompts(out, strict=False)  # prompts logged as deltas, whole again


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _find_case_hash(obj: Any, path: str = "") -> tuple[str, str] | None:
    """A recorded SHA-256 of the case file: a key naming both the cases and sha256."""
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            here = f"{path}.{k}" if path else str(k)
            if isinstance(v, str) and "sha256" in here.lower() and "case" in here.lower() and re.fullmatch(r"[0-9a-f]{64}", v):
                return here, v
            found = _find_case_hash(v, here)
            if found:
                return found
    return None


def _case_file(run: Mapping[str, Any], header: Mapping[str, Any] | None) -> dict[str, Any]:
    """The case file and its hash: recorded in run.json or the headers if the run did,
    else computed now (and said so: the file may have changed since)."""
    spec = run.get("spec") or {}
    name = spec.get("cases") or (header or {}).get("spec", {}).get("cases")
    recorded = _find_case_hash({k: v for k, v in run.items() if k not in ("spec", "identity")})
    if recorded is None and header:
        recorded = _find_case_hash({k: v for k, v in header.items() if k != "spec"})
    if recorded:
        return {"name": name, "sha256": recorded[1], "how": f"recorded in the run ({recorded[0]})"}
    if not name:
        return {"name": None, "sha256": None, "how": "no case set recorded"}
    from agents.cases.model import CaseSetError
    from agents.cases.registry import resolve_case_path

    try:
        p = resolve_case_path(str(name))
        return {"name": name, "sha256": _sha256(p), "how": f"computed when this report was written, from {p}"}
    except (CaseSetError, OSError) as e:
        return {"name": name, "sha256": None, "how": f"not recorded, and the file cannot be read now ({e})"}


def run_command(run: Mapping[str, Any]) -> str | None:
    argv = run.get("argv") or run.get("command")
    if isinstance(argv, list) and argv:
        return shlex.join(str(a) for a in argv)
    return argv if isinstance(argv, str) and argv else None


# -- numbers -------------------------------------------------------------------------------
def _condition_order(run: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> list[str]:
    order = list((run.get("spec") or {}).get("conditions") or {}) or ["base"]
    for r in rows:
        c = r.get("condition", "base")
        if c not in order:
            order.append(c)
    return [c for c in order if any(r.get("condition", "base") == c for r in rows)] or ["base"]


def _sorted_rows(rows: Sequence[Mapping[str, Any]], conditions: Sequence[str]) -> list[Mapping[str, Any]]:
    first: dict[str, int] = {}
    for r in rows:
        first.setdefault(str(r.get("case_id")), len(first))
    idx = {c: i for i, c in enumerate(conditions)}
    return sorted(rows, key=lambda r: (idx.get(r.get("condition", "base"), len(idx)), int(r.get("seed", 0)),
                                       first[str(r.get("case_id"))]))


def _acc_cell(s: Mapping[str, Any]) -> dict[str, Any]:
    return {"accuracy": s["accuracy"], "lo": s["ci95"][0], "hi": s["ci95"][1], "correct": s["correct"],
            "scored": s["scored"], "failed": s["failed"], "errors": s["errors"]}


def _specialties(rows: Sequence[Mapping[str, Any]], conditions: Sequence[str]) -> list[dict[str, Any]]:
    names = sorted({r.get("specialty") or "unspecified" for r in rows})
    out = []
    for name in names:
        mine = [r for r in rows if (r.get("specialty") or "unspecified") == name]
        out.append({"specialty": name, "cells": [_acc_cell(summarise([r for r in mine if r.get("condition", "base") == c]))
                                                 for c in conditions]})
    return out


# -- plots ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plot:
    title: str
    alt: str
    data_uri: str


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png_uri(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def fig_uri(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    pyplot().close(fig)
    return _png_uri(buf.getvalue())


def _condition_plot(table: Sequence[Mapping[str, Any]], title: str) -> Plot:
    from agents.conditions import write_chart

    with tempfile.TemporaryDirectory(prefix="medsim-report-") as d:
        path = write_chart(table, Path(d) / "conditions.png", title=title)
        data = path.read_bytes()
    return Plot("Accuracy by condition", "accuracy per condition with 95% intervals, and against cost per case",
                _png_uri(data))


def _group_plot(groups: Sequence[tuple[str, Mapping[str, Any]]], title: str) -> Plot:
    plt = pyplot()
    names = [g for g, _ in groups]
    acc = [0.0 if s["accuracy"] is None else s["accuracy"] * 100 for _, s in groups]
    lo = [a - s["ci95"][0] * 100 if s["accuracy"] is not None else 0.0 for a, (_, s) in zip(acc, groups)]
    hi = [s["ci95"][1] * 100 - a if s["accuracy"] is not None else 0.0 for a, (_, s) in zip(acc, groups)]
    fig, ax = plt.subplots(figsize=(10, 0.32 * len(names) + 1.2), dpi=100)
    y = list(range(len(names)))
    ax.barh(y, acc, xerr=[[max(0.0, v) for v in lo], [max(0.0, v) for v in hi]], capsize=3, color="#5a8fd8",
            edgecolor="#223", height=0.6)
    ax.set_yticks(y, [f"{n} (n={s['scored']})" for n, (_, s) in zip(names, groups)], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("accuracy (%) with 95% Wilson interval")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return Plot(title, f"{title}: bars with 95% intervals", fig_uri(fig))


def _distribution_plot(rows: Sequence[Mapping[str, Any]]) -> Plot:
    plt = pyplot()
    turns = [r.get("turns") or 0 for r in rows]
    tests = [r.get("n_tests") or 0 for r in rows]
    tokens = [(r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0) for r in rows]
    wall = [r.get("wall_s") or 0.0 for r in rows]
    fig, axes = plt.subplots(1, 4, figsize=(12, 2.8), dpi=100)

    def ints(ax: Any, values: Sequence[int], label: str, color: str) -> None:
        top = max(values, default=0)
        ax.hist(values, bins=[b - 0.5 for b in range(0, top + 2)], color=color, edgecolor="#223")
        ax.set_xlabel(label)
        ax.xaxis.get_major_locator().set_params(integer=True)

    ints(axes[0], turns, "turns per case", "#5a8fd8")
    ints(axes[1], tests, "tests per case", "#7bb36a")
    axes[2].hist(tokens, bins=min(20, max(1, len(set(tokens)))), color="#d8a65a", edgecolor="#223")
    axes[2].set_xlabel("tokens per case (prompt + completion)")
    axes[3].hist(wall, bins=min(20, max(1, len(set(wall)))), color="#d8705a", edgecolor="#223")
    axes[3].set_xlabel("wall time per case (s)")
    for ax in axes:
        ax.set_ylabel("cases")
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return Plot(f"Per case ({len(rows)} cells)", "histograms of turns, tests, tokens and wall time per case", fig_uri(fig))


# -- transcripts ------------------------------------------------------------------------------
def _thumbnail(image: str) -> str | None:
    """A local image as a small inline PNG; None for a URL, a file that is not here, or
    one :func:`agents.image_file.read_image_bytes` refuses (not a regular file, too big,
    too slow: never a device or a FIFO)."""
    if not image or "://" in image:
        return None
    p = Path(image)
    try:
        st = p.lstat()
    except OSError:
        return None
    return _thumbnail_of(str(p), st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


@lru_cache(maxsize=64)  # one study's image is returned in many cells of a grid
def _thumbnail_of(path: str, size: int, mtime_ns: int) -> str | None:
    try:
        from PIL import Image

        with Image.open(io.BytesIO(read_image_bytes(path))) as im:
            im.thumbnail((_THUMB_PX, _THUMB_PX))
            buf = io.BytesIO()
            (im if im.mode in ("L", "RGB", "RGBA") else im.convert("RGBA")).save(buf, format="PNG")
        return _png_uri(buf.getvalue())
    except Exception:  # noqa: BLE001 - an unreadable image is shown as its path
        return None


def _css_speaker(role: str) -> str:
    """A speaker's bubble style: the doctor's, the patient's, a staff role's, or other."""
    if role in ("doctor", "patient"):
        return role
    return "measurement" if role in role_names() and get_role(role).kind == STAFF else "other"


def transcript_items(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The events of one cell as what a page shows, in order: ``say`` (an utterance;
    a technician's with the test it answers), ``note``, ``guard`` (a rejected or
    replaced reply), ``error``, ``image``, ``thought`` (reasoning, panels, reflection),
    ``verdict`` (diagnosis, judge)."""
    items: list[dict[str, Any]] = []
    pending_result: dict[str, Any] | None = None
    for e in events:
        t = e.get("type")
        turn = e.get("turn")
        if t == "utterance":
            speaker = str(e.get("speaker"))
            if pending_result is not None and e.get("text") == pending_result["text"]:
                # the staff role's bubble (the technician's, a nurse's) is already there, titled
                pending_result.update(who=speaker_label(speaker), speaker=_css_speaker(speaker))
                pending_result = None
                continue
            items.append({"kind": "say", "speaker": _css_speaker(speaker),
                          "who": speaker_label(speaker), "to": e.get("addressee"), "turn": turn,
                          "text": e.get("text", ""), "source": e.get("source", "llm"), "title": None})
        elif t == "test_requested":
            items.append({"kind": "note", "turn": turn, "label": "test ordered", "text": e.get("test")})
        elif t == "test_result":
            pending_result = {"kind": "say", "speaker": "measurement", "who": speaker_label("measurement"),
                              "to": "doctor", "turn": turn, "text": e.get("result", ""), "source": "result",
                              "title": f"Result: {e.get('test')}"}
            items.append(pending_result)
            continue
        elif t == "synthesised_result":
            how = {"no_abnormality_recorded": "no abnormality recorded", "not_indicated": "not indicated",
                   "implied_by_case": "the result the case implies",
                   "known_condition": "no value: not assumed normal for a known condition"}.get(str(e.get("policy")), "a normal result")
            items.append({"kind": "guard", "turn": turn, "label": f"no record of {e.get('test')}: {how} "
                          "was synthesised", "text": e.get("text")})
        elif t in ("test_refused", "budget_refused"):
            why = e.get("reason") or f"price {e.get('price')}, spent {e.get('spent')} of {e.get('budget')}"
            items.append({"kind": "note", "turn": turn, "label": f"test refused: {e.get('test')}", "text": why})
        elif t == "reply_rejected":
            items.append({"kind": "guard", "turn": turn, "label": f"{e.get('role')} reply rejected "
                          f"({e.get('problem')}, attempt {e.get('attempt')})", "text": e.get("text")})
        elif t == "fallback_reply":
            items.append({"kind": "guard", "turn": turn, "label": f"{e.get('role')} reply replaced: {e.get('reason')}",
                          "text": e.get("text")})
        elif t == "llm_retry":
            items.append({"kind": "guard", "turn": turn, "label": f"{e.get('role')} call retried "
                          f"(attempt {e.get('attempt')})", "text": e.get("error")})
        elif t == "premature_diagnosis":
            items.append({"kind": "guard", "turn": turn, "label": "premature diagnosis",
                          "text": f"{e.get('diagnosis')} after {e.get('gathered')} of {e.get('required')} "
                                  "questions/tests: the doctor was told to go on"})
        elif t == "turn_limit":
            items.append({"kind": "guard", "turn": turn, "label": "turn limit reached", "text": f"max {e.get('max_turns')}"})
        elif t in ("case_error", "consultation_failed", "image_error"):
            label = {"case_error": "error", "consultation_failed": f"consultation failed ({e.get('role')}, "
                     f"{e.get('problem')})", "image_error": f"image error: {e.get('study')}"}[t]
            items.append({"kind": "error", "turn": turn, "label": label,
                          "text": e.get("error") or e.get("reason") or ""})
        elif t == "image_returned":
            image = str(e.get("image") or "")
            items.append({"kind": "image", "turn": turn, "study": e.get("study"), "modality": e.get("modality"),
                          "body_part": e.get("body_part"), "path": image, "sha256": e.get("sha256"),
                          "thumb": _thumbnail(image)})
        elif t == "image_read":
            items.append({"kind": "note", "turn": turn, "label": f"image read ({e.get('study')}, {e.get('source')})",
                          "text": e.get("text")})
        elif t == "image_not_read":
            items.append({"kind": "note", "turn": turn, "label": f"image not read ({e.get('study')})",
                          "text": e.get("reason")})
        elif t == "route" and e.get("note"):
            items.append({"kind": "note", "turn": turn, "label": f"parsed ({e.get('rule')})", "text": e.get("note")})
        elif t == "memory_retrieved":
            hits = "\n".join(f"{h.get('buffer')}:{h.get('id')} (similarity {h.get('score', h.get('similarity', ''))}): "
                              f"{' '.join(str(h.get('text') or h.get('insight') or '').split())[:300]}"
                              + (f" [diagnosis: {h.get('diagnosis')}]" if h.get("diagnosis") else "")
                              for h in e.get("hits") or [])
            items.append({"kind": "note", "turn": turn, "label": "memory retrieved", "text": hits or "no hits"})
        elif t == "memory_learned":
            items.append({"kind": "note", "turn": None, "label": f"memory: {e.get('action')}", "text": e.get("reason")})
        elif t == "reasoning":
            items.append({"kind": "thought", "turn": turn, "label": f"reasoning ({e.get('strategy')}, member "
                          f"{e.get('member')})", "text": e.get("text")})
        elif t == "differential":
            rows = "\n".join(f"{i}. {d.get('diagnosis')}" + ("" if d.get("confidence") is None
                                                             else f" ({float(d['confidence']):.0%})")
                             for i, d in enumerate(e.get("items") or [], 1))
            items.append({"kind": "thought", "turn": turn, "label": "final differential" if e.get("final", True)
                          else "working differential (the doctor's own, not shown to the patient)", "text": rows})
        elif t == "panel_step":
            items.append({"kind": "thought", "turn": turn, "label": f"panel: {e.get('role')}", "text": e.get("text")})
        elif t == "panel_vote":
            votes = "\n".join(f"- {v.get('diagnosis', v)}" for v in e.get("votes") or [])
            items.append({"kind": "thought", "turn": turn, "label": f"panel vote: {e.get('decision')}"
                          + (" (tie, the chair decided)" if e.get("tie") else ""), "text": votes})
        elif t == "reflection":
            items.append({"kind": "thought", "turn": None, "label": "reflection" + ("" if e.get("accepted") else
                          f" (not accepted: {e.get('problem')})"), "text": e.get("insight")})
        elif t == "second_attempt":
            items.append({"kind": "thought", "turn": None, "label": f"second attempt ({e.get('method')}): "
                          f"{'correct' if e.get('correct') else 'wrong'}", "text": e.get("diagnosis")})
        elif t == "diagnosis":
            items.append({"kind": "verdict", "turn": turn, "label": "diagnosis", "text": e.get("diagnosis"),
                          "correct": None})
        elif t == "judge":
            items.append({"kind": "verdict", "turn": None, "label": f"judge ({e.get('method')}, {e.get('rule')}): "
                          f"{'correct' if e.get('correct') else 'wrong'}", "text": e.get("rationale"),
                          "correct": bool(e.get("correct"))})
        elif t == "scored" and (e.get("details") or {}).get("error"):
            items.append({"kind": "error", "turn": None, "label": f"scoring failed ({e.get('scorer')})",
                          "text": e["details"]["error"]})
        elif t == "consultation_ended" and e.get("error"):
            items.append({"kind": "error", "turn": e.get("turns"), "label": f"consultation ended: {e.get('status')}",
                          "text": e.get("error")})
        pending_result = None
    return items


def call_rows(events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{"role": e.get("role"), "turn": e.get("turn"), "model": e.get("model"),
             "prompt": e.get("prompt_tokens"), "evaluated": e.get("prompt_tokens_evaluated"),
             "completion": e.get("completion_tokens"), "latency": e.get("latency_s"),
             "finish": e.get("finish_reason"), "messages": len(e.get("messages") or []), "output": e.get("output", "")}
            for e in events if e.get("type") == "llm_call"]


def _write_transcript(out: Path, row: Mapping[str, Any], stem: str, title: str) -> None:
    events = read_events(out / "events" / f"{stem}.jsonl")
    header = next((e for e in events if e.get("type") == "header"), {})
    started = next((e for e in events if e.get("type") == "case_started"), {})
    html = render_page("transcript.html.j2", title=title, row=row, header=header, started=started,
                   items=transcript_items(events), calls=call_rows(events), events_href=f"../events/{stem}.jsonl",
                   n_events=len(events))
    write_page(out / TRANSCRIPTS / f"{stem}.html", html)


# -- the report ----------------------------------------------------------------------------
def row_stem(row: Mapping[str, Any]) -> str | None:
    """The stem of a row's events file: ``events/NAME.jsonl`` in a run, or
    ``scores/<label>/events/NAME.jsonl`` in a re-scoring (whose log of the judge's
    events has the name of the run's log of the consultation)."""
    stem = _events_name(row)
    if stem:
        return stem
    ev = row.get("events")
    if not isinstance(ev, str) or not ev.endswith(".jsonl"):
        return None
    parts = ev.split("/")
    if len(parts) == 4 and parts[0] == "scores" and parts[2] == "events" and _SAFE_NAME.match(parts[1]):
        stem = parts[3][: -len(".jsonl")]
        return stem if _SAFE_NAME.match(stem) else None
    return None


def rescored_links(out: Path, run_dir: Path, stem: str | None) -> tuple[str | None, str | None]:
    """A re-scoring's links for one row, relative to ``out`` (RUN_DIR/scores/<label>):
    the run's own transcript page (the run's event log where the run has no page) and
    the re-scoring's log of the judge's events; None where there is no such file."""
    if not stem:
        return None, None
    page, log = run_dir / TRANSCRIPTS / f"{stem}.html", run_dir / "events" / f"{stem}.jsonl"
    target = page if page.is_file() else log if log.is_file() else None
    href = Path(os.path.relpath(target, out)).as_posix() if target is not None else None
    return href, (f"events/{stem}.jsonl" if (out / "events" / f"{stem}.jsonl").is_file() else None)


def read_run(run_dir: Path) -> dict[str, Any]:
    run_file = run_dir / "run.json"
    if not run_file.is_file():
        return {}
    try:
        run = json.loads(run_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ReportError(f"{run_file}: unreadable ({e})") from None
    return run if isinstance(run, dict) else {}


def write_html_report(out: Path, rows: Sequence[Mapping[str, Any]] | None = None, *,
                      title: str | None = None, links_to: Path | None = None,
                      models: Mapping[str, str] | None = None) -> Path:
    """Write ``out``/report.html and a transcript page per row; returns the report's
    path. ``rows``: the run's results rows (default: read from results.jsonl): the page
    every suite's runs get unless the suite has its own (:mod:`medsim.pages`). ``links_to``: ``out``
    is a re-scoring (RUN_DIR/scores/<label>) of the run ``links_to``, whose transcript
    pages the rows link to (none is written; ``models``: the roles that scored)."""
    out = Path(out)
    run = read_run(out if links_to is None else Path(links_to))
    if rows is None:
        if not (out / "results.jsonl").is_file():
            raise ReportError(f"{out}: not a medsim bench run (no results.jsonl)")
        rows = read_results(out / "results.jsonl")
    rows = [{**_ROW_DEFAULTS, **r} for r in rows]
    spec = run.get("spec") or {}
    conditions = _condition_order(run, rows)
    rows = _sorted_rows(rows, conditions)
    summary = summarise(rows)
    src = out if links_to is None else Path(links_to)  # where the consultations' logs are
    first = next((src / "events" / f"{s}.jsonl" for r in rows for s in [row_stem(r)] if s), None)
    header = next(iter(read_events(first)), None) if first is not None else None
    title = title or f"medsim bench: {spec.get('cases') or out.name}"

    plots: dict[str, Plot] = {}  # by section: conditions, specialties, cases
    cond_table: list[dict[str, Any]] = []
    by_condition = [(c, _acc_cell(summarise([r for r in rows if r.get("condition", "base") == c]))) for c in conditions]
    if len(conditions) > 1:
        from agents.conditions import condition_table

        cond_table = condition_table(rows, conditions)
        plots["conditions"] = _condition_plot(cond_table, str(spec.get("cases") or ""))
    specialties = _specialties(rows, conditions)
    if rows and len(specialties) > 1:
        groups = [(s["specialty"], summarise([r for r in rows if (r.get("specialty") or "unspecified") == s["specialty"]]))
                  for s in specialties]
        plots["specialties"] = _group_plot(groups, "Accuracy by specialty"
                                           + (" (all conditions pooled)" if len(conditions) > 1 else ""))
    if rows:
        plots["cases"] = _distribution_plot(rows)

    cases = []
    for r in rows:
        href = judge_href = None
        if links_to is not None:
            href, judge_href = rescored_links(out, Path(links_to), row_stem(r))
        elif (stem := _events_name(r)) and (out / "events" / f"{stem}.jsonl").is_file():
            label = f"{r.get('case_id')} (seed {r.get('seed', 0)}, {r.get('condition', 'base')})"
            _write_transcript(out, r, stem, f"{label}: {title}")
            href = f"{TRANSCRIPTS}/{stem}.html"
        cases.append({"row": r, "href": href, "judge_href": judge_href,
                      "tokens": (r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0)})

    header = header or {}
    try:
        plt = pyplot() if rows else None
    except ImportError:  # no matplotlib: the tables still stand
        plt = None
    measures = measures_context(rows, lambda fig: Plot("Reliability diagram", "top-1 confidence against the share "
                                                       "right, per bin", fig_uri(fig)), plt)
    judged_by = models or header.get("models") or {}
    behaviours = behaviour_table(rows, conditions, judge=str(judged_by.get("judge") or "the run's judge"))
    html = render_page("report.html.j2", measures=measures, behaviours=behaviours, check=format_check, title=title, run=run, spec=spec, command=run_command(run) or run_command(header),
                   started=run.get("started") or header.get("started"), case_file=_case_file(run, header),
                   models=models or header.get("models") or {}, rescored_from=links_to is not None,
                   model_sha256=run.get("model_sha256") or header.get("model_sha256") or {},
                   llama_cpp_build=run.get("llama_cpp_build") or header.get("llama_cpp_build"),
                   git_revision=run.get("git_revision") or header.get("git_revision"),
                   spec_json=json.dumps(spec, indent=2, ensure_ascii=False), summary=summary,
                   conditions=conditions, by_condition=by_condition, cond_table=cond_table, specialties=specialties,
                   plots=plots, cases=cases, seeds=summary.get("seeds") or spec.get("seeds") or [],
                   fidelity=fidelity_summary(rows).get("fidelity"),
                   fidelity_labels=(("patient", PATIENT_LABELS), ("technician", TECHNICIAN_LABELS)))
    path = out / "report.html"
    write_page(path, html)
    return path
