"""report.md: the page every run and re-scoring writes beside its rows. A common header
(title, git revision, how the run was set up, the models), then the suite's own sections
(:meth:`agents.suites.contract.Suite.report_sections`), then the errors. Every text from a
model, a case or the spec is escaped for Markdown (:func:`agents.textsafe.md_text`,
:func:`agents.textsafe.md_cell` in the cells: no tag, link or image) and then for the
terminal (:func:`agents.textsafe.printable`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from agents.provenance import git_revision
from agents.secrets import scrub_secrets
from agents.textsafe import md_cell, md_text, printable

__all__ = ["write_report", "report_markdown"]


def report_markdown(spec: Any, summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                    models: Mapping[str, str], *, title: str | None = None, out: Path | None = None) -> str:
    suite = spec.suite
    default = f"medsim bench: {spec.cases}" if "cases" in suite.reads else f"medsim {suite.name}: {suite.title}"
    md = [f"# {md_text(title or default)}", "", f"- git revision: `{git_revision()}`", *suite.describe(spec),
          "- models: " + ", ".join(f"{md_text(r)}={md_text(m)}" for r, m in models.items()), ""]
    md += suite.report_sections(spec, summary, rows, out)
    if summary.get("errors"):
        md += ["", "## Errors", ""] + [f"- {md_cell(k)}: {md_cell(v)}"
                                       for k, v in (summary.get("error_cases") or {}).items()]
    # a last pass over the whole page: the title, condition names and anything not a cell
    return scrub_secrets(printable("\n".join(md))) + "\n"  # and no API key (agents.secrets)


def write_report(out: Path, spec: Any, summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                 models: Mapping[str, str], *, title: str | None = None) -> Path:
    """Write ``out``/report.md; returns its path."""
    path = Path(out) / "report.md"
    path.write_text(report_markdown(spec, summary, rows, models, title=title, out=Path(out)), encoding="utf-8")
    return path
