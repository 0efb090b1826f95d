"""Draw the README's screenshots of a bench run's report.html and one transcript page,
in a headless Chromium at 1280x900 (medsim.headless), served by `medsim view`'s server;
the run is the scripted demo with the ablation ladder, so there are conditions and a
chart.

    .venv/bin/python docs/report_screenshots.py [--out docs]
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


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    for p in shoot(ap.parse_args().out):
        print(p)
