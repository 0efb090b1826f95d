"""The README's command reference runs as written: every ``sh`` block of its
"Command reference" section, in order, in an empty directory that has the checkout's
``.venv`` and ``docs`` (what a fresh clone has after ``make venv``). A flag renamed, an
example that no longer runs or a missing file fails here."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def reference_blocks() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("## Command reference")
    end = text.index("\n## ", start + 1)
    return re.findall(r"^```sh\n(.*?)^```", text[start:end], flags=re.S | re.M)


def test_every_subcommand_has_a_section_with_an_example():
    from medsim.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    text = (REPO / "README.md").read_text(encoding="utf-8")
    ref = text[text.index("## Command reference"):]
    for name in sub.choices:
        assert f"### `medsim {name}`" in ref, f"the README's command reference has no section for `medsim {name}`"
        assert f"medsim {name} " in ref, f"no example of `medsim {name}`"


@pytest.mark.skipif(not (REPO / ".venv" / "bin" / "medsim").exists(), reason="needs the checkout's .venv (make venv)")
def test_the_command_reference_runs_as_written(tmp_path):
    blocks = reference_blocks()
    assert len(blocks) >= 12
    (tmp_path / ".venv").symlink_to(REPO / ".venv")
    (tmp_path / "docs").symlink_to(REPO / "docs")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEDSIM_")}
    env.update(HF_HUB_OFFLINE="1", SDL_VIDEODRIVER="dummy", SDL_AUDIODRIVER="dummy")
    for block in blocks:
        for line in block.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            r = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=300)
            assert r.returncode == 0, f"README example failed (exit {r.returncode}):\n{line}\n{r.stderr[-2000:]}"
    assert (tmp_path / "runs" / "demo" / "report.html").is_file()
    assert (tmp_path / "runs" / "play.png").stat().st_size > 10_000
    assert sys.executable  # the examples ran with the checkout's interpreter, through .venv/bin/medsim
