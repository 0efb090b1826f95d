"""Which page a run's report.html is: the report every suite's runs get
(:func:`medsim.html_report.write_html_report`: summary, conditions, a row per cell and a
transcript page per cell), or the suite's own where it registers one here (OSCE's rounds,
rubric grid and feedback: :func:`medsim.osce_html.write_osce_html`)."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import quote

from agents.textsafe import printable
from medsim.html_report import ReportError, read_run, write_html_report
from medsim.osce_html import write_osce_html
from medsim.study_state import StudyInProgress, refuse_in_progress

__all__ = ["PageWriter", "register_page", "write_report_page", "page_for", "run_view"]

logger = logging.getLogger(__name__)

PageWriter = Callable[..., Path]
_PAGES: dict[str, PageWriter] = {}


def register_page(suite: str, writer: PageWriter) -> None:
    """``writer(out, rows, *, title, run, models, links_to) -> Path`` writes report.html of
    the runs of ``suite`` (and their transcript pages)."""
    _PAGES[suite] = writer


def page_for(suite: str | None) -> PageWriter | None:
    return _PAGES.get(suite or "")


def write_report_page(out: Path, rows: Sequence[Mapping[str, Any]] | None = None, *, title: str | None = None,
                      links_to: Path | None = None, models: Mapping[str, str] | None = None) -> Path:
    """report.html of the run (or re-scoring, ``links_to`` its run) in ``out``, by the page
    its suite registered, else the common one."""
    run = read_run(Path(out) if links_to is None else Path(links_to))
    writer = page_for((run.get("spec") or {}).get("suite"))
    if writer is not None:
        return writer(out, rows, title=title, run=run, models=models, links_to=links_to)
    return write_html_report(out, rows, title=title, links_to=links_to, models=models)


def run_view(args: Any) -> int:
    """``medsim view RUN``: serve the run's (or a re-scoring's) report and transcripts on 127.0.0.1."""
    from medsim.report_server import serve

    run_dir: Path = args.run_dir
    if not run_dir.is_dir():
        logger.error("%s: no such directory", run_dir)
        return 2
    try:
        refuse_in_progress(run_dir, "serving its pages")
    except StudyInProgress as e:
        logger.error("%s", e)
        return 2
    scored = run_dir.resolve()
    if scored.parent.name == "scores" and (scored.parent.parent / "run.json").is_file():
        # a re-scoring (medsim score): its rows link to the run's own transcripts, so the
        # run's folder is served and the scores' page opened
        root, page = scored.parent.parent, f"scores/{quote(scored.name)}/report.html"
        if args.rebuild or not (scored / "report.html").is_file():
            logger.error("%s: a medsim score folder; its report.html is written by medsim score (run it again "
                         "with the same --judge-llm and --label to rewrite it)", run_dir)
            return 2
        try:
            serve(root, args.port, open_browser=args.open_browser, quiet=args.quiet, page=page,
                  on_ready=lambda url: print(printable(f"serving {run_dir} at {url} (Ctrl-C stops)"), flush=True))
        except KeyboardInterrupt:
            logger.info("stopped")
        return 0
    report, results = run_dir / "report.html", run_dir / "results.jsonl"
    stale = not report.is_file() or (results.is_file() and results.stat().st_mtime > report.stat().st_mtime)
    if args.rebuild or stale:
        try:
            write_report_page(run_dir)
        except ReportError as e:
            logger.error("%s", e)
            return 2
        logger.info("wrote %s", report)
    try:
        serve(run_dir, args.port, open_browser=args.open_browser, quiet=args.quiet,
              on_ready=lambda url: print(printable(f"serving {run_dir} at {url} (Ctrl-C stops)"), flush=True))
    except KeyboardInterrupt:
        logger.info("stopped")
    return 0


register_page("osce", write_osce_html)
