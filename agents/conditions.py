"""The comparison an ordered grid of conditions gets in its report: per condition accuracy
with its interval, the paired difference to the previous condition with its interval,
tokens, time and cost per case (:func:`condition_table`), its Markdown and a bar chart.
With several seeds per case, intervals are over cases (each case's mean across seeds), so
repeats do not shrink them as if they were new cases.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from agents.stats import mean_interval, wilson_interval
from agents.textsafe import md_cell

__all__ = ["condition_table", "write_chart", "table_markdown"]


def _by_case(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for r in rows:
        if r.get("error") or r.get("status") == "failed" or r.get("correct") is None:
            continue
        out.setdefault(r["case_id"], []).append(1.0 if r["correct"] else 0.0)
    return out


def condition_table(rows: Sequence[Mapping[str, Any]], order: Sequence[str]) -> list[dict[str, Any]]:
    """One line per condition, in ``order``."""
    out: list[dict[str, Any]] = []
    prev: dict[str, float] | None = None
    for cond in order:
        rs = [r for r in rows if r.get("condition", "base") == cond]
        cases = _by_case(rs)
        per_case = {c: sum(v) / len(v) for c, v in cases.items()}
        repeats = max((len(v) for v in cases.values()), default=1)
        if repeats == 1:
            k = int(sum(per_case.values()))
            acc = k / len(per_case) if per_case else float("nan")
            lo, hi = wilson_interval(k, len(per_case))
        else:
            acc, lo, hi = mean_interval(list(per_case.values()), z=1.96)
        line: dict[str, Any] = {"condition": cond, "n": len(per_case), "repeats": repeats, "accuracy": acc,
                                "ci95": [lo, hi], "failed": sum(1 for r in rs if r.get("status") == "failed"),
                                "errors": sum(1 for r in rs if r.get("error")),
                                "tokens_per_case": _mean([(r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0)
                                                          for r in rs]),
                                "evaluated_per_case": _mean([r["prompt_tokens_evaluated"] for r in rs
                                                             if r.get("prompt_tokens_evaluated") is not None]),
                                "wall_s_per_case": _mean([r.get("wall_s") or 0.0 for r in rs]),
                                "cost_per_case": _mean([r.get("cost") or 0.0 for r in rs])}
        if prev is not None:
            shared = sorted(set(prev) & set(per_case))
            d, dlo, dhi = mean_interval([per_case[c] - prev[c] for c in shared], z=1.96)
            line.update(diff=d, diff_ci95=[dlo, dhi], paired_n=len(shared))
        out.append(line)
        prev = per_case
    return out


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def _pct(x: float) -> str:
    return "-" if x != x else f"{x:.1%}"


def table_markdown(table: Sequence[Mapping[str, Any]]) -> list[str]:
    md = ["| condition | n | accuracy (95% CI) | vs previous (paired, 95% CI) | tokens/case | evaluated/case | "
          "wall s/case | cost/case |", "|---|---|---|---|---|---|---|---|"]
    for t in table:
        acc = f"{_pct(t['accuracy'])} ({_pct(t['ci95'][0])}-{_pct(t['ci95'][1])})"
        diff = (f"{t['diff']:+.1%} ({t['diff_ci95'][0]:+.1%} to {t['diff_ci95'][1]:+.1%}, n={t['paired_n']})"
                if "diff" in t and t["diff"] == t["diff"] and t["diff_ci95"][0] == t["diff_ci95"][0]
                else (f"{t['diff']:+.1%} (n={t['paired_n']})" if "diff" in t and t["diff"] == t["diff"] else "-"))
        n = (f"{t['n']}" + (f" x{t['repeats']}" if t["repeats"] > 1 else "")
             + (f" (+{t['failed']} failed)" if t.get("failed") else ""))  # failed: not in n, not counted wrong
        md.append(f"| {md_cell(t['condition'])} | {n} | {acc} | {diff} | {t['tokens_per_case']:.0f} | "
                  f"{t['evaluated_per_case']:.0f} | {t['wall_s_per_case']:.1f} | {t['cost_per_case']:.0f} |")
    return md


def write_chart(table: Sequence[Mapping[str, Any]], path: Path, title: str = "") -> Path:
    """Accuracy per condition with its 95% interval (a PNG, matplotlib, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [t["condition"] for t in table]
    acc = [0.0 if t["accuracy"] != t["accuracy"] else t["accuracy"] * 100 for t in table]
    lo = [max(0.0, a - (t["ci95"][0] * 100 if t["ci95"][0] == t["ci95"][0] else a)) for a, t in zip(acc, table)]
    hi = [max(0.0, (t["ci95"][1] * 100 if t["ci95"][1] == t["ci95"][1] else a) - a) for a, t in zip(acc, table)]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4), dpi=110, gridspec_kw={"width_ratios": [3, 2]})
    bars = ax.bar(names, acc, yerr=[lo, hi], capsize=5, color="#5a8fd8", edgecolor="#223")
    for b, t in zip(bars, table):
        ax.text(b.get_x() + b.get_width() / 2, 1, f"n={t['n']}", ha="center", va="bottom", fontsize=8, color="white")
    ax.set_ylabel("accuracy (%) with 95% interval")
    ax.set_ylim(0, 100)
    ax.set_title(title or "accuracy by condition")
    ax.tick_params(axis="x", rotation=20)
    cost = [t["cost_per_case"] for t in table]
    ax2.scatter(cost, acc, color="#d8705a", zorder=3)
    spots: dict[tuple[float, float], list[str]] = {}
    for c, a, n in zip(cost, acc, names):  # conditions on one spot share one label
        spots.setdefault((round(c, 2), round(a, 2)), []).append(n)
    mid = (min(cost) + max(cost)) / 2 if cost else 0.0
    for (c, a), ns in spots.items():  # labels point inwards so that none leaves the axes
        right = c > mid
        ax2.annotate(",\n".join(ns) if len(ns) > 2 else ", ".join(ns), (c, a), textcoords="offset points",
                     xytext=(-4 if right else 4, 4), ha="right" if right else "left", fontsize=8)
    ax2.margins(x=0.15)
    front = sorted(zip(cost, acc))
    best, pareto = -1.0, []
    for c, a in front:
        if a > best:
            pareto.append((c, a))
            best = a
    if len(pareto) > 1:
        ax2.plot([p[0] for p in pareto], [p[1] for p in pareto], "--", color="#888", zorder=2, label="Pareto front")
        ax2.legend(fontsize=8)
    ax2.set_ylim(0, 100)
    ax2.set_xlabel("cost per case (USD, agents/costs.toml)")
    ax2.set_ylabel("accuracy (%)")
    ax2.set_title("accuracy against cost")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
