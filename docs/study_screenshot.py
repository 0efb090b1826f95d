"""Draw docs/study-window.png: a reader study in progress (``medsim study --ui window``) in
a real window on an X display, played as a person plays it (keys typed with xdotool, the
scripted patient and technician), and grabbed from the display.

    xvfb-run -a -s "-screen 0 1280x720x24" .venv/bin/python docs/study_screenshot.py [--out docs]

Needs Xvfb and xdotool (Debian: apt-get install xvfb xdotool). The study runs in a
temporary directory; the person reads the first case to its diagnosis, goes on to the
second, asks a question and is typing the next one when the display is grabbed.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def xdotool(*args: str, check: bool = True) -> str:
    return subprocess.run(["xdotool", *args], check=check, capture_output=True, text=True).stdout.strip()


def find_window(title: str, limit_s: float = 60.0) -> str:
    """The id of the window whose name starts with ``title`` (``search --name`` misses the
    name SDL sets on some X servers; each window's name is read instead)."""
    deadline = time.time() + limit_s
    while time.time() < deadline:
        for wid in xdotool("search", "--class", ".", check=False).split():
            if xdotool("getwindowname", wid, check=False).startswith(title):
                return wid
        time.sleep(0.3)
    raise SystemExit(f"no window named {title!r}")


def utterances(study: Path, case: int) -> list[dict]:
    """The utterances of the ``case``-th log the study opened (1-based, by its time)."""
    logs = sorted((study / "events").glob("*.jsonl"), key=lambda p: p.stat().st_mtime) if (study / "events").is_dir() else []
    if len(logs) < case:
        return []
    out = []
    for line in logs[case - 1].read_text(encoding="utf-8").splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("type") == "utterance":
            out.append(e)
    return out


def logs(study: Path) -> int:
    """How many cases the study has opened (a case's log is opened with its consultation)."""
    return len(list((study / "events").glob("*.jsonl"))) if (study / "events").is_dir() else 0


def wait(cond, what: str, limit_s: float = 60.0) -> None:
    print(f"waiting for {what}", flush=True)
    deadline = time.time() + limit_s
    while not cond():
        if time.time() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.2)


def say(text: str, enter: bool = True) -> None:
    xdotool("type", "--delay", "30", text)
    if enter:
        xdotool("key", "Return")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = ap.parse_args()
    if not os.environ.get("DISPLAY"):
        raise SystemExit("no DISPLAY: run it under xvfb-run (see the docstring)")
    from PIL import ImageGrab

    with tempfile.TemporaryDirectory() as tmp:
        study = Path(tmp) / "study"
        env = {**os.environ, "SDL_VIDEODRIVER": "x11", "PYTHONPATH": f"{REPO}:{os.environ.get('PYTHONPATH', '')}"}
        cmd = [sys.executable, "-m", "medsim", "study", "--cases", "demo", "--limit", "6", "--seed", "3",
               "--label", "reader-1", "--ui", "window", "--speed", "8", "--out", str(study)]
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            win = find_window("medsim study")
            xdotool("mousemove", "640", "360")  # no window manager: the keys go to the window under the pointer
            xdotool("windowfocus", win)  # (no --sync: with no window manager it never returns)
            # case 1: three questions, then the diagnosis
            for i, q in enumerate(["What brings you in today?", "When did it start, and has it changed?",
                                   "Any fever, cough or breathlessness?"], 1):
                wait(lambda i=i: logs(study) >= 1 and len(utterances(study, 1)) == 2 * (i - 1), f"turn {i}")
                time.sleep(2.0 if i == 1 else 1.5)  # the answer's bubble, then the turn
                say(q)
            wait(lambda: len([u for u in utterances(study, 1) if u["speaker"] == "patient"]) == 3, "the third answer")
            time.sleep(1.5)
            xdotool("key", "ctrl+x")
            time.sleep(0.5)
            say("Musculoskeletal chest wall pain")
            time.sleep(2.0)  # the case is recorded: the box between cases
            xdotool("key", "Return")  # the next patient
            wait(lambda: logs(study) == 2, "the second case", 90)
            time.sleep(2.0)
            say("What brings you in today?")
            wait(lambda: len([u for u in utterances(study, 2) if u["speaker"] == "patient"]) == 1, "the answer")
            time.sleep(1.5)
            say("Does anything make the pain better or worse", enter=False)
            time.sleep(1.0)
            img = ImageGrab.grab(xdisplay=os.environ["DISPLAY"])
            args.out.mkdir(parents=True, exist_ok=True)
            img.crop((0, 0, 1280, 720)).save(args.out / "study-window.png")
            print(f"wrote {args.out / 'study-window.png'}")
        finally:
            proc.terminate()
            try:
                out, _ = proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            print(out[-2000:])


if __name__ == "__main__":
    main()
