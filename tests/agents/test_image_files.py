"""Images stay inside the case set's folder and are read safely (issue 23): a case naming
an image by an absolute path, ``..`` or a symbolic link leading out of its folder is
refused at load time (naming file, line and field) unless ``MEDSIM_ALLOW_IMAGES_OUTSIDE=1``;
a device (``/dev/zero`` reads until memory runs out), a FIFO (blocks for ever) or a
directory is never read, a file over the size cap is refused, and a stalled read times out
(the technician's check, the vision request, transcript thumbnails)."""
from __future__ import annotations

import json
import os
import shutil
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from agents import image_file
from agents.cases import load_cases
from agents.cases.model import ALLOW_IMAGES_OUTSIDE, CaseSetError
from agents.cases.registry import resolve_case_path
from agents.image_file import ImageFileError, read_image_bytes
from agents.imaging import inspect_image
from agents.llm.base import Message, chat_message
from agents.llm.scripted import ScriptedLLM
from medsim.html_report import transcript_items
from tests.helpers import consult, of, roles

PNG = resolve_case_path("imaging").parent / "images" / "photo_skin_lesion.png"


def _case_line(image: str) -> str:
    rec = json.loads(resolve_case_path("imaging").read_text(encoding="utf-8").splitlines()[0])
    rec["imaging"][0]["image"] = image
    return json.dumps(rec)


def _nejm_line(image: str) -> str:
    return json.dumps({"image_url": image, "question": "Diagnosis?", "patient_info": "A 40-year-old man.",
                       "answers": [{"text": "Melanoma", "correct": True}, {"text": "Nevus", "correct": False}]})


@pytest.fixture
def layout(tmp_path, monkeypatch):
    """cases/ holding images/inside.png and a link to it, a link to a file outside, and
    an image outside the folder."""
    monkeypatch.delenv(ALLOW_IMAGES_OUTSIDE, raising=False)
    cases = tmp_path / "cases"
    (cases / "images").mkdir(parents=True)
    shutil.copy(PNG, cases / "images" / "inside.png")
    shutil.copy(PNG, tmp_path / "outside.png")
    os.symlink(cases / "images" / "inside.png", cases / "images" / "link_in.png")
    os.symlink(tmp_path / "outside.png", cases / "images" / "link_out.png")
    return cases


@pytest.mark.parametrize("fmt", ["osce", "nejm"])
def test_an_image_outside_the_case_folder_is_refused_naming_file_line_and_field(layout, fmt):
    line, field = (_case_line, "imaging[0].image") if fmt == "osce" else (_nejm_line, "image_url")
    outside = ["../outside.png", str(layout.parent / "outside.png"), "images/link_out.png", "/etc/hostname",
               "images/../../outside.png"]
    p = layout / "set.jsonl"
    p.write_text("\n".join(line(x) for x in outside) + "\n", encoding="utf-8")
    with pytest.raises(CaseSetError) as e:
        load_cases(str(p))
    errs = e.value.errors
    assert [x.line for x in errs] == list(range(1, len(outside) + 1))
    assert all(x.field == field and "outside the case set's folder" in x.message and ALLOW_IMAGES_OUTSIDE in x.message
               for x in errs), errs
    assert f"{p}:1: field '{field}'" in str(e.value)


@pytest.mark.parametrize("fmt", ["osce", "nejm"])
def test_images_inside_the_folder_load_and_the_environment_can_allow_the_rest(layout, fmt, monkeypatch):
    line = _case_line if fmt == "osce" else _nejm_line
    p = layout / "set.jsonl"
    inside = ["images/inside.png", str(layout / "images" / "inside.png"), "images/link_in.png",
              "https://example.org/x.png"]
    p.write_text("\n".join(line(x).replace('"img-001"', f'"c{i}"') for i, x in enumerate(inside)) + "\n")
    cases, _ = load_cases(str(p))
    got = [c.imaging[0].image for c in cases]
    assert got[:3] == [str((layout / "images" / "inside.png").resolve())] * 3 and got[3] == inside[3]
    p.write_text(line("../outside.png") + "\n")
    monkeypatch.setenv(ALLOW_IMAGES_OUTSIDE, "1")
    (c,) = load_cases(str(p))[0]
    assert c.imaging[0].image == str((layout.parent / "outside.png").resolve())


def _in_time(fn, timeout_s: float = 20.0):
    """``fn()``'s result or exception, failing the test (not hanging it) past ``timeout_s``."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout_s)
    assert not t.is_alive(), f"still reading after {timeout_s} s: it would hang the bench"
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.fixture
def fifo(tmp_path):
    p = tmp_path / "study.png"
    os.mkfifo(p)
    return p


def test_a_fifo_a_device_and_a_directory_are_never_read(fifo, tmp_path):
    for p in (fifo, Path("/dev/null"), tmp_path):
        with pytest.raises(ImageFileError, match="not a regular file"):
            _in_time(lambda: read_image_bytes(p))
        sha, why = _in_time(lambda: inspect_image(str(p)))
        assert sha is None and "not a regular file" in why
        with pytest.raises(OSError, match="not a regular file"):
            _in_time(lambda: chat_message(Message("user", "Read this.", images=(str(p),))))
        items = _in_time(lambda: transcript_items([{"type": "image_returned", "turn": 1, "image": str(p),
                                                    "study": "X-ray"}]))
        assert items[0]["thumb"] is None


def test_dev_zero_is_refused_at_once():
    """On main this read until MemoryError (all of the machine's memory first)."""
    t0 = time.monotonic()
    sha, why = _in_time(lambda: inspect_image("/dev/zero"))
    assert sha is None and "not a regular file" in why and time.monotonic() - t0 < 5


def test_a_file_over_the_cap_is_refused_and_a_stalled_read_times_out(tmp_path, monkeypatch):
    big = tmp_path / "big.png"
    big.write_bytes(PNG.read_bytes() + b"\0" * 2000)
    with pytest.raises(ImageFileError, match="at most 100"):
        read_image_bytes(big, max_bytes=100)
    assert read_image_bytes(PNG) == PNG.read_bytes()

    def stalled(fd, limit):
        time.sleep(5)
        return b""

    monkeypatch.setattr(image_file, "_read_fd", stalled)
    t0 = time.monotonic()
    with pytest.raises(ImageFileError, match="took more than 0.2 s"):
        read_image_bytes(PNG, timeout_s=0.2)
    assert time.monotonic() - t0 < 2


def test_a_symbolic_link_named_at_read_time_is_refused(tmp_path):
    link = tmp_path / "link.png"
    os.symlink(PNG, link)
    with pytest.raises(ImageFileError, match="symbolic link"):
        read_image_bytes(link)


def test_a_fifo_in_a_case_is_an_image_error_and_the_consultation_goes_on(fifo):
    cases, _ = load_cases("imaging")
    case = next(c for c in cases if c.id == "img-003")
    c = replace(case, imaging=(replace(case.imaging[0], image=str(fifo)),))
    llm = ScriptedLLM({c.id: c})
    row, ev = _in_time(lambda: consult(c, roles(llm, vision=llm)), 60)
    assert "not a regular file" in of(ev, "image_error")[0]["error"] and not of(ev, "image_read")
    assert row["status"] == "diagnosed"
