"""The report page's measures section: the differential's top-k and calibration with a
reliability diagram, information elicited per category, tests ordered (from the rows'
blocks, :mod:`agents.measures`)."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from agents.measures.differential import differential_summary
from agents.measures.elicited import elicited_summary
from agents.measures.ordered import orders_summary

__all__ = ["measures_context", "reliability_figure"]


def reliability_figure(plt: Any, cal: Mapping[str, Any], judge: str) -> Any:
    """The reliability diagram (a matplotlib figure, drawn with ``plt``): each bin's
    share right against its mean stated confidence (the point's area is its number of
    cases), the diagonal of perfect calibration, and under it the histogram of
    confidences."""
    bins = cal["bins"]
    fig, (ax, hx) = plt.subplots(2, 1, figsize=(5.2, 5.6), dpi=100, gridspec_kw={"height_ratios": [3, 1]}, sharex=True)
    ax.plot([0, 1], [0, 1], linestyle="--", color="#888", linewidth=1, label="perfectly calibrated")
    xs = [b["confidence"] for b in bins]
    ys = [b["accuracy"] for b in bins]
    ax.plot(xs, ys, color="#5a8fd8", linewidth=1.2)
    ax.scatter(xs, ys, s=[30 + 25 * b["n"] for b in bins], color="#5a8fd8", edgecolor="#223", zorder=3,
               label="bins (area: cases)")
    for b in bins:
        ax.annotate(str(b["n"]), (b["confidence"], b["accuracy"]), textcoords="offset points", xytext=(6, 6), fontsize=7)
    ax.set_xlim(-0.02, 1.04)  # a bin at 1.0 is drawn whole, not cut at the frame
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("top-1 right (share of the bin)")
    ax.set_title(f"Reliability of the top-1 confidence (n={cal['n']})\nBrier {cal['brier']:.3f}, ECE {cal['ece']:.3f}; "
                 f"judge {judge}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=7, markerscale=0.4)
    edges = [i / cal["bin_count"] for i in range(cal["bin_count"] + 1)]
    hx.bar([(b["lo"] + b["hi"]) / 2 for b in bins], [b["n"] for b in bins], width=1 / cal["bin_count"] * 0.9,
           color="#d8a65a", edgecolor="#223")
    hx.set_xticks(edges[::2])
    hx.set_xlabel("stated confidence of the top-1 diagnosis")
    hx.set_ylabel("cases")
    hx.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def measures_context(rows: Sequence[Mapping[str, Any]], plot: Callable[[Any], Any] | None = None,
                     plt: Any = None) -> dict[str, Any]:
    """What the template's measures section shows (empty: no row carries a measure).
    ``plot(figure)`` turns the reliability diagram into the page's plot (drawn with
    ``plt``, matplotlib's pyplot; none without them)."""
    d = differential_summary(rows).get("differential")
    out: dict[str, Any] = {"differential": d, "elicited": elicited_summary(rows).get("elicited"),
                           "orders": orders_summary(rows).get("orders"), "reliability": None}
    if d and d["calibration"]["n"] and plot is not None and plt is not None:
        out["reliability"] = plot(reliability_figure(plt, d["calibration"], d["judge"]))
    return out if any(out[k] for k in ("differential", "elicited", "orders")) else {}
