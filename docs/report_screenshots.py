"""Draw the screenshots of a bench run's report.html and one transcript page
(docs/outputs.md; README.md shows the first), in a headless Chromium at 1280x900
(medsim.headless), served by `medsim view`'s server; the run is the scripted demo with
the ablation ladder, so there are conditions and a chart. With ``--compare RUN_A RUN_B``
it also draws ``compare-html.png``: the page `medsim compare RUN_A RUN_B` writes
(docs/outputs.md's is from two real runs of the embedded model: the memory experiment's
"off" and "frozen" arms).

    .venv/bin/python docs/report_screenshots.py [--out docs] [--compare RUN_A RUN_B] [--measures RUN] [--behaviours [RUN]]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from agents.results import read_results
from medsim.headless import chromium
from medsim.html_report import transcript_href
from medsim.report_server import make_server, url_of

WIDTH, HEIGHT = 1280, 900
TRANSCRIPT = ("demo-013", "measurement")  # questions, a test result and a wrong verdict in one screen


def shoot(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="medsim-shots-") as d:
        run = Path(d) / "demo-ladder"
        # a process of its own, so that the report shows this command line
        subprocess.run([sys.executable, "-m", "medsim", "bench", "--cases", "demo", "--llm", "scripted", "--ladder",
                        "--out", str(run), "--no-progress"], check=True)
        row = next(r for r in read_results(run / "results.jsonl")
                   if (r["case_id"], r["condition"]) == TRANSCRIPT)
        server = make_server(run, 0, quiet=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = url_of(server).rsplit("/", 1)[0]
        shots = [out / "report-html.png", out / "report-transcript.png"]
        try:
            with chromium(WIDTH, HEIGHT) as browser:
                browser.get(f"{base}/report.html")
                browser.save_screenshot(str(shots[0]))
                browser.get(f"{base}/{transcript_href(row)}")
                browser.save_screenshot(str(shots[1]))
        finally:
            server.shutdown()
            server.server_close()
    return shots


def shoot_measures(out: Path, run: str) -> Path:
    """The measures section of RUN's report.html (top-k, the reliability diagram,
    information elicited, tests ordered): ``report-measures.png``. docs/outputs.md's is
    from a real run of the embedded model with the focused doctor."""
    shot = out / "report-measures.png"
    page = Path(run) / "report.html"
    if not page.is_file():
        raise SystemExit(f"{page}: no report (run `medsim bench ... --out {run}` first)")
    with chromium(WIDTH, 1500) as browser:
        browser.get(page.resolve().as_uri() + "#measures")
        browser.execute_script("document.getElementById('measures').scrollIntoView()")
        browser.save_screenshot(str(shot))
    return shot


def shoot_behaviours(out: Path, run: str | None = None) -> Path:
    """The behaviour table of a report.html (``report-behaviours.png``): RUN's, or (none
    given) a scripted demo run over ``--behaviour-grid all`` made for the shot."""
    shot = out / "report-behaviours.png"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="medsim-behaviours-") as d:
        if run is None:
            run = str(Path(d) / "demo-behaviours")
            subprocess.run([sys.executable, "-m", "medsim", "bench", "--cases", "demo", "--llm", "scripted",
                            "--behaviour-grid", "all", "--out", run, "--no-progress"], check=True)
        page = Path(run) / "report.html"
        with chromium(WIDTH, HEIGHT) as browser:
            browser.get(page.resolve().as_uri() + "#behaviours")
            section = browser.find_element("id", "behaviours")
            height = browser.execute_script("return arguments[0].getBoundingClientRect().height", section)
            browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": WIDTH, "height": int(height) + 40,
                                                                          "deviceScaleFactor": 1, "mobile": False})
            if not section.screenshot(str(shot)):
                raise SystemExit(f"{shot}: the browser wrote no screenshot")
    from PIL import Image  # a table is a few flat colours: 64 keep it sharp at a third of the size

    Image.open(shot).convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(shot, optimize=True)
    return shot


def shoot_compare(out: Path, run_a: str, run_b: str) -> Path:
    """compare.html of two runs, written to a temporary folder and shot from a file URL
    (the page is self-contained)."""
    shot = out / "compare-html.png"
    with tempfile.TemporaryDirectory(prefix="medsim-cmp-") as d:
        subprocess.run([sys.executable, "-m", "medsim", "-q", "compare", run_a, run_b, "--out", d], check=True)
        with chromium(WIDTH, HEIGHT) as browser:
            browser.get((Path(d) / "compare.html").resolve().as_uri())
            browser.save_screenshot(str(shot))
    return shot


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent,
                    help="where the PNGs go (default: docs/)")
    ap.add_argument("--compare", nargs=2, metavar=("RUN_A", "RUN_B"),
                    help="also draw compare-html.png from these two runs (default: not drawn)")
    ap.add_argument("--only-compare", action="store_true", help="draw compare-html.png alone")
    ap.add_argument("--measures", metavar="RUN", help="draw report-measures.png alone, from RUN's report.html")
    ap.add_argument("--behaviours", nargs="?", const="", metavar="RUN",
                    help="draw report-behaviours.png alone: RUN's behaviour table (default: a scripted demo run over "
                         "--behaviour-grid all)")
    a = ap.parse_args()
    if a.behaviours is not None:
        print(shoot_behaviours(a.out, a.behaviours or None))
        raise SystemExit(0)
    if a.measures:
        print(shoot_measures(a.out, a.measures))
        raise SystemExit(0)
    if not a.only_compare:
        for p in shoot(a.out):
            print(p)
    if a.compare:
        print(shoot_compare(a.out, *a.compare))
