"""What ``medsim compare`` writes: compare.md (also printed), compare.html (one
self-contained file: inline CSS, the chart as an inline PNG, no external reference),
compare.json (every figure and every listed cell) and compare.png (each run's accuracy
with its 95% interval, and the flips each way)."""
from __future__ import annotations

import base64
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from agents.secrets import scrub_secrets
from agents.textsafe import md_cell, md_text, printable
from medsim.compare import CompareReport, Comparison, run_label, run_models
from medsim.compare_measures import gaps_markdown, measures_markdown

__all__ = ["CompareOutputs", "markdown", "write_chart", "write_outputs", "default_out", "MAX_LISTED"]

MAX_LISTED = 50  # excluded cells listed in the md and html (compare.json has them all)


@dataclass(frozen=True)
class CompareOutputs:
    out: Path
    markdown: str
    files: list[Path]


def _pct(x: float | None) -> str:
    return "n/a" if x is None or x != x else f"{x:.1%}"


def _signed(x: float | None) -> str:
    return "n/a" if x is None or x != x else f"{x * 100:+.1f} pts"


def _num(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}x"


def _rate(k: int, n: int, rate: float | None, ci: Any) -> str:
    return "n/a" if rate is None else f"{k}/{n} = {_pct(rate)} ({_pct(ci[0])} to {_pct(ci[1])})"


def _p(p: float) -> str:
    return f"{p:.3g}" if p >= 0.001 else f"{p:.2e}"


def _cell(v: Any) -> str:
    return md_cell(v)


def _title(c: Comparison) -> str:
    if c.condition_a == c.condition_b:
        return f"{c.b} against {c.a}, condition {c.condition_a}"
    return f"{c.b} ({c.condition_b}) against {c.a} ({c.condition_a})"


def _verdict(c: Comparison) -> str:
    if not c.paired:
        return "no paired cells: nothing to compare"
    d = c.only_a_right + c.only_b_right
    if d == 0:
        return "no case flips: the two runs agree on every paired cell"
    if c.only_a_right == c.only_b_right:
        return f"{d} discordant pairs, as many each way: no difference (exact McNemar p = {_p(c.mcnemar_p)})"
    better = c.b if c.only_b_right > c.only_a_right else c.a
    sig = "significant at the 5% level" if c.mcnemar_p < 0.05 else "not significant at the 5% level"
    return (f"{d} discordant pair(s); {better} is right more often ({max(c.only_a_right, c.only_b_right)} "
            f"against {min(c.only_a_right, c.only_b_right)}), {sig} (exact McNemar p = {_p(c.mcnemar_p)})")


def markdown(report: CompareReport, chart: str | None = "compare.png") -> str:
    md = ["# medsim compare", ""]
    for i, r in enumerate(report.runs):
        label = run_label(i)
        models = run_models(r)
        what = f"cases {md_text(r.spec.get('cases', '?'))}, {len(r.rows)} cells"
        if models.get("doctor"):
            what += f", doctor {md_text(models['doctor'])}"
        md.append(f"- **{label}** = {md_text(r.path)}" + (f" condition {md_text(r.condition)}" if r.condition else "")
                  + f" ({what})")
    md += ["", "Each run is compared with A on the cells both hold (same case id and seed, and the same "
               "condition unless one was picked as RUN:CONDITION). Cells that errored, failed or were not scored "
               "in either run are listed and left out of the accuracies, the difference, the test and the ratios.", ""]
    if chart:
        md += [f"![accuracy with 95% intervals, and the flips]({chart})", ""]
    for c in report.comparisons:
        md += [f"## {md_text(_title(c))}", "",
               f"- cells in both: {c.shared}; only in {c.a}: {c.only_a}, only in {c.b}: {c.only_b} (not compared)",
               f"- excluded (errored, failed or not scored in either run): {len(c.excluded)}; paired cells: {c.paired}",
               "", "| run | right | accuracy | 95% CI (Wilson) |", "|---|---|---|---|",
               f"| {c.a} | {c.both_right + c.only_a_right}/{c.paired} | {_pct(c.accuracy_a)} | "
               f"{_pct(c.ci95_a[0])} to {_pct(c.ci95_a[1])} |",
               f"| {c.b} | {c.both_right + c.only_b_right}/{c.paired} | {_pct(c.accuracy_b)} | "
               f"{_pct(c.ci95_b[0])} to {_pct(c.ci95_b[1])} |", "",
               f"- difference {c.b} - {c.a}: {_signed(c.difference)} (95% CI {_signed(c.difference_ci95[0])} to "
               f"{_signed(c.difference_ci95[1])}; Bonett-Price paired interval)",
               f"- right in both {c.both_right}, right in {c.a} only {c.only_a_right}, right in {c.b} only "
               f"{c.only_b_right}, wrong in both {c.both_wrong}",
               f"- exact McNemar test (two-sided binomial on the {c.only_a_right + c.only_b_right} discordant pairs): "
               f"p = {_p(c.mcnemar_p)}",
               f"- {_verdict(c)}"]
        if c.repeated_cases:
            md.append(f"- note: {c.repeated_cases} case(s) are paired under several seeds; the interval and the "
                      "test treat every cell as independent, which overstates the certainty")
        md += ["", f"### Cost per paired cell ({c.b}/{c.a})", "",
               f"| measure | {c.a} per cell | {c.b} per cell | {c.b}/{c.a} |", "|---|---|---|---|"]
        for r in c.ratios:
            md.append(f"| {_cell(r.measure)} | {_num(r.a_per_cell)} | {_num(r.b_per_cell)} | {_ratio(r.ratio)}"
                      f"{' (' + _cell(r.note) + ')' if r.note else ''} |")
        md += measures_markdown(c.measures, c.a, c.b)
        if c.fidelity:
            md += ["", f"### Simulator fidelity on the {c.fidelity_cells} cells both runs checked", "",
                   f"checked by: {c.a} {_cell(c.fidelity_checkers[0])}; {c.b} {_cell(c.fidelity_checkers[1])}", "",
                   f"| role | label | {c.a} (95% CI) | {c.b} (95% CI) | {c.b} - {c.a} |", "|---|---|---|---|---|"]
            md += [f"| {f.role} | {f.label} | {_rate(f.k_a, f.n_a, f.rate_a, f.ci95_a)} | "
                   f"{_rate(f.k_b, f.n_b, f.rate_b, f.ci95_b)} | {_signed(f.difference)} |" for f in c.fidelity]
        for flips, head in ((c.flips_a_right, f"Right in {c.a}, wrong in {c.b}"),
                            (c.flips_b_right, f"Wrong in {c.a}, right in {c.b}")):
            md += ["", f"### {head} ({len(flips)})", ""]
            if flips:
                md += [f"| case | seed | {c.a}'s diagnosis | {c.b}'s diagnosis | truth |", "|---|---|---|---|---|"]
                md += [f"| {_cell(f.case_id)} | {f.seed} | {_cell(f.diagnosis_a)} | {_cell(f.diagnosis_b)} | "
                       f"{_cell(f.truth)} |" for f in flips]
            else:
                md.append("none")
        if c.excluded:
            md += ["", f"### Excluded cells ({len(c.excluded)}: in neither accuracy, the test nor the ratios)", "",
                   f"| case | seed | {c.a} | {c.b} |", "|---|---|---|---|"]
            md += [f"| {_cell(e.case_id)} | {e.seed} | {_cell(e.a)} | {_cell(e.b)} |" for e in c.excluded[:MAX_LISTED]]
            if len(c.excluded) > MAX_LISTED:
                md.append(f"| ... | | {len(c.excluded) - MAX_LISTED} more in compare.json | |")
        md.append("")
    md += gaps_markdown(report.gaps)
    if report.notes:
        md += ["## Notes", ""] + [f"- {md_text(n)}" for n in report.notes] + [""]
    # model, case and run text escaped everywhere on the page, not only in the tables
    return printable("\n".join(md))


def write_chart(report: CompareReport, path: Path) -> Path:
    """Left: each comparison's two accuracies with their Wilson 95% intervals. Right: the
    flips each way (cases right in A only to the left, right in B only to the right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    cs = report.comparisons
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 0.9 + 0.9 * max(2, len(cs))), dpi=110,
                                  gridspec_kw={"width_ratios": [3, 2]})
    labels = []
    for c in cs:
        cond = c.condition_b if c.condition_a == c.condition_b else f"{c.condition_b}/{c.condition_a}"
        labels.append(f"{c.b} vs {c.a}" + ("" if cond == "base" else f"\n{cond}"))
    ys = list(range(len(cs)))
    h = 0.38
    for off, acc, ci, name, color in ((-h / 2, "accuracy_a", "ci95_a", "A", "#5a8fd8"),
                                      (h / 2, "accuracy_b", "ci95_b", "B", "#d8705a")):
        vals = [(getattr(c, acc) or 0.0) * 100 for c in cs]
        lo = [max(0.0, v - getattr(c, ci)[0] * 100) for v, c in zip(vals, cs)]
        hi = [max(0.0, getattr(c, ci)[1] * 100 - v) for v, c in zip(vals, cs)]
        ax.barh([y + off for y in ys], vals, height=h, xerr=[lo, hi], capsize=4, color=color, edgecolor="#223")
        for y, v, up, c in zip(ys, vals, hi, cs):
            label = f"{c.a if name == 'A' else c.b} {v:.0f}%"
            if v >= 20:  # inside the bar
                ax.text(1, y + off, label, va="center", fontsize=8, color="white")
            else:  # a short bar: after its interval, in ink
                ax.text(v + up + 1.5, y + off, label, va="center", fontsize=8, color="#223")
    ax.set_yticks(ys, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("accuracy on the paired cells (%), Wilson 95% interval")
    ax.set_title("accuracy")
    left = [-c.only_a_right for c in cs]
    right = [c.only_b_right for c in cs]
    ax2.barh(ys, left, height=0.5, color="#5a8fd8")
    ax2.barh(ys, right, height=0.5, color="#d8705a")
    m = max([1, *(-v for v in left), *right])
    for y, lv, rv, c in zip(ys, left, right, cs):
        ax2.text(lv, y, f"{c.a}: {-lv} ", va="center", ha="right", fontsize=8)
        ax2.text(rv, y, f" {c.b}: {rv}", va="center", ha="left", fontsize=8)
        ax2.text(0, y - 0.3, f"McNemar p = {_p(c.mcnemar_p)}", ha="center", va="bottom", fontsize=7, color="#444")
    ax2.set_xlim(-m * 1.8, m * 1.8)
    ax2.set_ylim(len(cs) - 0.5, -0.6)
    ax2.axvline(0, color="#444", lw=0.8)
    ax2.set_yticks(ys, [""] * len(ys))
    ax2.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax2.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{abs(v):.0f}"))
    ax2.set_xlabel("cases right in one run only (left: A, right: the other)")
    ax2.set_title("flips")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>medsim compare</title>
<style>
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:70rem;padding:0 1rem;color:#1d2230}
h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:2.2rem;border-bottom:1px solid #ccd;padding-bottom:.2rem}
h3{font-size:1.02rem;margin-top:1.4rem}
table{border-collapse:collapse;margin:.4rem 0 1rem}td,th{border:1px solid #ccd;padding:.25rem .55rem;text-align:left;vertical-align:top}
th{background:#eef1f7}td.n{text-align:right;font-variant-numeric:tabular-nums}
code{background:#f2f3f6;padding:0 .25rem;border-radius:3px}
.verdict{background:#f5f7fb;border-left:4px solid #5a8fd8;padding:.4rem .8rem}
.note{color:#555}img{max-width:100%;height:auto}
</style></head><body>
<h1>medsim compare</h1>
<ul>{% for r in runs %}
<li><b>{{ r.label }}</b> = <code>{{ r.path }}</code>{% if r.condition %} condition <code>{{ r.condition }}</code>{% endif %}
 (cases {{ r.cases }}, {{ r.cells }} cells{% if r.doctor %}, doctor {{ r.doctor }}{% endif %})</li>{% endfor %}
</ul>
<p class="note">Each run is compared with A on the cells both hold (same case id and seed, and the same condition
unless one was picked as RUN:CONDITION). Cells that errored, failed or were not scored in either run are listed and
left out of the accuracies, the difference, the test and the ratios.</p>
{% if chart %}<img alt="accuracy with 95% intervals, and the flips" src="data:image/png;base64,{{ chart }}">{% endif %}
{% for c in comparisons %}
<h2>{{ c.title }}</h2>
<p>Cells in both: {{ c.shared }}; only in {{ c.a }}: {{ c.only_a }}, only in {{ c.b }}: {{ c.only_b }} (not compared).
Excluded (errored, failed or not scored in either run): {{ c.excluded|length }}. Paired cells: {{ c.paired }}.</p>
<table><tr><th>run</th><th>right</th><th>accuracy</th><th>95% CI (Wilson)</th></tr>
{% for row in c.accuracy_rows %}<tr><td>{{ row[0] }}</td><td class="n">{{ row[1] }}</td><td class="n">{{ row[2] }}</td><td>{{ row[3] }}</td></tr>
{% endfor %}</table>
<ul>
<li>difference {{ c.b }} &minus; {{ c.a }}: {{ c.diff }} (95% CI {{ c.diff_lo }} to {{ c.diff_hi }}; Bonett-Price paired interval)</li>
<li>right in both {{ c.both_right }}, right in {{ c.a }} only {{ c.only_a_right }}, right in {{ c.b }} only {{ c.only_b_right }}, wrong in both {{ c.both_wrong }}</li>
<li>exact McNemar test (two-sided binomial on the {{ c.discordant }} discordant pairs): p = {{ c.p }}</li>
{% if c.repeated_cases %}<li class="note">{{ c.repeated_cases }} case(s) are paired under several seeds; the interval and
the test treat every cell as independent, which overstates the certainty</li>{% endif %}
</ul>
<p class="verdict">{{ c.verdict }}</p>
<h3>Cost per paired cell ({{ c.b }}/{{ c.a }})</h3>
<table><tr><th>measure</th><th>{{ c.a }} per cell</th><th>{{ c.b }} per cell</th><th>{{ c.b }}/{{ c.a }}</th></tr>
{% for r in c.ratio_rows %}<tr><td>{{ r[0] }}</td><td class="n">{{ r[1] }}</td><td class="n">{{ r[2] }}</td><td class="n">{{ r[3] }}</td></tr>
{% endfor %}</table>
{% if c.fidelity_rows %}<h3>Simulator fidelity on the {{ c.fidelity_cells }} cells both runs checked</h3>
<p>checked by: {{ c.a }} {{ c.fidelity_checkers[0] }}; {{ c.b }} {{ c.fidelity_checkers[1] }}</p>
<table><tr><th>role</th><th>label</th><th>{{ c.a }} (95% CI)</th><th>{{ c.b }} (95% CI)</th><th>{{ c.b }} &minus; {{ c.a }}</th></tr>
{% for r in c.fidelity_rows %}<tr class="fidelity"><td>{{ r[0] }}</td><td>{{ r[1] }}</td><td class="n">{{ r[2] }}</td><td class="n">{{ r[3] }}</td><td class="n">{{ r[4] }}</td></tr>
{% endfor %}</table>{% endif %}
{% for head, flips in c.flip_tables %}
<h3>{{ head }} ({{ flips|length }})</h3>
{% if flips %}<table><tr><th>case</th><th>seed</th><th>{{ c.a }}'s diagnosis</th><th>{{ c.b }}'s diagnosis</th><th>truth</th></tr>
{% for f in flips %}<tr><td>{{ f.case_id }}</td><td class="n">{{ f.seed }}</td><td>{{ f.diagnosis_a or "-" }}</td><td>{{ f.diagnosis_b or "-" }}</td><td>{{ f.truth or "-" }}</td></tr>
{% endfor %}</table>{% else %}<p>none</p>{% endif %}
{% endfor %}
{% if c.excluded %}<h3>Excluded cells ({{ c.excluded|length }}: in neither accuracy, the test nor the ratios)</h3>
<table><tr><th>case</th><th>seed</th><th>{{ c.a }}</th><th>{{ c.b }}</th></tr>
{% for e in c.excluded[:max_listed] %}<tr><td>{{ e.case_id }}</td><td class="n">{{ e.seed }}</td><td>{{ e.a }}</td><td>{{ e.b }}</td></tr>
{% endfor %}{% if c.excluded|length > max_listed %}<tr><td colspan="4">{{ c.excluded|length - max_listed }} more in compare.json</td></tr>{% endif %}
</table>{% endif %}
{% endfor %}
{% if notes %}<h2>Notes</h2><ul>{% for n in notes %}<li>{{ n }}</li>{% endfor %}</ul>{% endif %}
</body></html>
"""


def _html(report: CompareReport, chart_png: bytes | None) -> str:
    import jinja2

    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    runs = []
    for i, r in enumerate(report.runs):
        models = run_models(r)
        runs.append({"label": run_label(i), "path": str(r.path),
                     "condition": r.condition, "cases": r.spec.get("cases", "?"), "cells": len(r.rows),
                     "doctor": models.get("doctor")})
    comps = []
    for c in report.comparisons:
        comps.append({
            "title": _title(c), "a": c.a, "b": c.b, "shared": c.shared, "only_a": c.only_a, "only_b": c.only_b,
            "excluded": c.excluded, "paired": c.paired, "both_right": c.both_right, "only_a_right": c.only_a_right,
            "only_b_right": c.only_b_right, "both_wrong": c.both_wrong,
            "discordant": c.only_a_right + c.only_b_right, "p": _p(c.mcnemar_p), "verdict": _verdict(c),
            "repeated_cases": c.repeated_cases, "diff": _signed(c.difference),
            "diff_lo": _signed(c.difference_ci95[0]), "diff_hi": _signed(c.difference_ci95[1]),
            "accuracy_rows": [(c.a, f"{c.both_right + c.only_a_right}/{c.paired}", _pct(c.accuracy_a),
                               f"{_pct(c.ci95_a[0])} to {_pct(c.ci95_a[1])}"),
                              (c.b, f"{c.both_right + c.only_b_right}/{c.paired}", _pct(c.accuracy_b),
                               f"{_pct(c.ci95_b[0])} to {_pct(c.ci95_b[1])}")],
            "ratio_rows": [(r.measure, _num(r.a_per_cell), _num(r.b_per_cell),
                            _ratio(r.ratio) + (f" ({r.note})" if r.note else "")) for r in c.ratios],
            "fidelity_cells": c.fidelity_cells, "fidelity_checkers": c.fidelity_checkers,
            "fidelity_rows": [(f.role, f.label, _rate(f.k_a, f.n_a, f.rate_a, f.ci95_a),
                               _rate(f.k_b, f.n_b, f.rate_b, f.ci95_b), _signed(f.difference)) for f in c.fidelity],
            "flip_tables": [(f"Right in {c.a}, wrong in {c.b}", c.flips_a_right),
                            (f"Wrong in {c.a}, right in {c.b}", c.flips_b_right)]})
    chart = base64.b64encode(chart_png).decode("ascii") if chart_png else None
    return env.from_string(_HTML).render(runs=runs, comparisons=comps, notes=report.notes, chart=chart,
                                         max_listed=MAX_LISTED)


def _clean(obj: Any) -> Any:
    """JSON without NaN or infinities (a strict reader refuses them)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def _write(path: Path, text: str) -> Path:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(scrub_secrets(text), encoding="utf-8")  # no API key in a comparison (agents.secrets)
    os.replace(tmp, path)
    return path


def write_outputs(report: CompareReport, out: Path) -> CompareOutputs:
    """compare.md, compare.html, compare.json and compare.png into ``out``. Without
    matplotlib the chart is left out and the reports say so."""
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    png: bytes | None = None
    chart_note = None
    try:
        files.append(write_chart(report, out / "compare.png"))
        png = (out / "compare.png").read_bytes()
    except ImportError as e:  # matplotlib missing: the tables still stand
        chart_note = f"no chart: {e}"
    if chart_note:
        report = CompareReport(report.runs, report.comparisons, [*report.notes, chart_note])
    md = markdown(report, chart="compare.png" if png else None)
    files.append(_write(out / "compare.md", md))
    files.append(_write(out / "compare.html", _html(report, png)))
    files.append(_write(out / "compare.json", json.dumps(_clean(report.to_dict()), indent=2, ensure_ascii=False,
                                                         allow_nan=False) + "\n"))
    return CompareOutputs(out, md, files)


def default_out(runs: Sequence[Any]) -> Path:
    """``RUN_A/compare/<the other runs' names>/``: beside the first run's own files (as
    ``medsim score`` writes ``RUN/scores/<judge>/``), one folder per comparison."""
    from agents.names import slug

    names = [slug(r.path.name + (f"-{r.condition}" if r.condition else ""), 40) for r in runs[1:]]
    first = runs[0]
    sub = "_".join(names) + (f"-from-{slug(first.condition, 30)}" if first.condition else "")
    return first.path / "compare" / slug(sub, 120)
