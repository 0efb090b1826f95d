"""The documentation holds: its commands run as written and its links lead somewhere.

- docs/commands.md's "Command reference" runs as written: every ``sh`` block, in order, in
  an empty directory that has the checkout's ``.venv`` and ``docs`` (what a fresh clone has
  after ``make venv``). A flag renamed, an example that no longer runs or a missing file
  fails here. Every subcommand has a section there with an example.
- README.md is the front door: at most 200 lines, and every ``medsim`` command in it parses.
- Every relative link in README.md and docs/*.md points to a file that exists, and a link
  to ``#anchor`` to a heading of that page; docs/index.md lists every page of docs/.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
COMMANDS = DOCS / "commands.md"
README_MAX_LINES = 200


def reference_section() -> str:
    """docs/commands.md from its "## Command reference" heading to the next level-2
    heading (or the end of the page)."""
    text = COMMANDS.read_text(encoding="utf-8")
    start = text.index("## Command reference")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def reference_blocks() -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", reference_section(), flags=re.S | re.M)


def pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but ``-`` and ``_``
    dropped, spaces to hyphens (a repeated heading gets ``-1``, ``-2``: see anchors)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def strip_code_blocks(text: str) -> str:
    """The page without its fenced blocks (a ``#`` line in a shell block is no heading)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def strip_code(text: str) -> str:
    """The page without fenced blocks and inline code (a link shown as code is no link)."""
    return re.sub(r"`[^`\n]*`", "", strip_code_blocks(text))


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", strip_code_blocks(page.read_text(encoding="utf-8")), flags=re.M):
        s = github_slug(heading)
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def relative_links(page: Path) -> list[str]:
    targets = re.findall(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", strip_code(page.read_text(encoding="utf-8")))
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t, flags=re.I)]


def test_every_subcommand_has_a_section_with_an_example():
    from medsim.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    ref = reference_section()
    for name in sub.choices:
        assert f"### `medsim {name}`" in ref, f"docs/commands.md's command reference has no section for `medsim {name}`"
        assert f"medsim {name} " in ref, f"docs/commands.md: no example of `medsim {name}`"


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
            assert r.returncode == 0, f"docs/commands.md example failed (exit {r.returncode}):\n{line}\n{r.stderr[-2000:]}"
    assert (tmp_path / "runs" / "demo" / "report.html").is_file()
    assert (tmp_path / "runs" / "play.png").stat().st_size > 10_000
    assert sys.executable  # the examples ran with the checkout's interpreter, through .venv/bin/medsim


def test_the_readme_is_at_most_200_lines():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= README_MAX_LINES, (f"README.md has {n} lines (at most {README_MAX_LINES}): "
                                   "move the detail to a page under docs/ and link to it")


def readme_commands() -> list[tuple[int, list[str]]]:
    """(line number, arguments after ``medsim``) of every command line in README.md's code
    blocks (``medsim ...`` or ``.venv/bin/medsim ...``), its trailing comment removed."""
    out = []
    lines = README.read_text(encoding="utf-8").splitlines()
    fenced = False
    for n, line in enumerate(lines, 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        m = re.match(r"(?:\.venv/bin/)?medsim\s+(.*)$", line.strip()) if fenced else None
        if m:
            out.append((n, shlex.split(m.group(1), comments=True)))
    return out


def test_every_readme_command_parses():
    from medsim.cli import build_parser

    commands = readme_commands()
    assert {args[0] for _, args in commands} >= {"play", "consult", "bench", "score", "compare", "view"}
    for n, args in commands:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                build_parser().parse_args(args)
            except SystemExit as e:
                pytest.fail(f"README.md line {n}: `medsim {shlex.join(args)}` does not parse (exit {e.code}):\n"
                            f"{err.getvalue()}")


def test_every_relative_link_resolves():
    problems = []
    for page in pages():
        for target in relative_links(page):
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(REPO)}: ({target})"
            if not dest.exists():
                problems.append(f"{where}: no file {dest.relative_to(REPO) if dest.is_relative_to(REPO) else dest}")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{where}: no heading with the anchor #{anchor} in {dest.relative_to(REPO)}")
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_the_index_and_the_readme_link_every_page():
    index = {(DOCS / t.partition("#")[0]).resolve() for t in relative_links(DOCS / "index.md")}
    readme = {(REPO / t.partition("#")[0]).resolve() for t in relative_links(README)}
    for page in sorted(DOCS.glob("*.md")):
        if page.name != "index.md":
            assert page.resolve() in index, f"docs/index.md does not list docs/{page.name}"
            assert page.resolve() in readme, f"README.md does not link docs/{page.name}"
