"""Writing a run's files: a failed write names its file and says what to do, and a file
replaced whole never leaves its temporary copy behind.

``No space left on device`` from the kernel names no file; a run writes a dozen kinds of
file into ``--out``. :func:`write_error` turns the OSError of a failed write into one
that does (``filename``) and adds what to do (``strerror``): free space, another
``--out``, then ``--resume`` where rows were already written. The CLI prints it as
``FILE: what happened; what to do``.
"""
from __future__ import annotations

import errno
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from agents.secrets import known_secrets, scrub_secrets

__all__ = ["write_error", "write_hint", "replace_file", "naming", "RESUME_HINT"]

RESUME_HINT = "then run the same command again with --resume: the rows already written are kept"


def write_hint(e: OSError) -> str:
    """What to do about a failed write, by its errno."""
    n = e.errno
    if n in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return "the disk (or your quota) is full: free some space there, or choose another --out"
    if n == errno.EROFS:
        return "the file system is read-only: choose another --out"
    if n in (errno.EACCES, errno.EPERM):
        return "no permission to write there: choose another --out, or change the directory's permissions"
    if n == errno.EFBIG:
        return "the file is too large for this file system: choose another --out"
    if n == errno.EIO:
        return "an input/output error: check the disk, or choose another --out"
    return "check that the directory is writable and has space, or choose another --out"


def write_error(path: Path | str, e: OSError, *, resume: bool = False) -> OSError:
    """An OSError for a failed write of ``path``: ``e``'s errno, ``path`` as its
    filename and, as its strerror, what went wrong and what to do (``resume``: add that
    ``--resume`` finishes the run afterwards)."""
    what = e.strerror or str(e) or type(e).__name__
    hint = write_hint(e) + (f"; {RESUME_HINT}" if resume else "")
    return OSError(e.errno, f"cannot write it ({what}): {hint}", str(path))


@contextmanager
def naming(path: Path | str, *, resume: bool = False) -> Iterator[None]:
    """A block that writes ``path``: an OSError in it comes out as :func:`write_error`'s,
    naming the file the error names (another file the block wrote, say a plot), else
    ``path`` (a temporary copy of it is named as ``path``)."""
    try:
        yield
    except OSError as e:
        named = str(e.filename) if isinstance(e.filename, (str, os.PathLike)) else ""
        raise write_error(named if named and not named.endswith(".tmp") else path, e, resume=resume) from None


def replace_file(path: Path, data: bytes, *, resume: bool = False) -> None:
    """Replace ``path`` with ``data`` at once: written to ``path``.tmp beside it, then
    renamed over it; a failure (a full disk) removes the .tmp, leaves the old file, and
    raises :func:`write_error`'s OSError naming ``path``."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    if known_secrets():  # the last line of defence: no API key in run.json or summary.json (agents.secrets)
        data = scrub_secrets(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise write_error(path, e, resume=resume) from None
        raise
