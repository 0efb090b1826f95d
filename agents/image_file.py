"""Reading an image file, the one way every part of medsim does (the technician's check,
the vision request, transcript thumbnails, the game's image viewer).

An image file is read only if it is a regular file (never a device such as
``/dev/zero``, which reads until memory runs out, nor a FIFO, which blocks for ever, nor
a directory), not a symbolic link (the case loader resolved the links it allows), at most
:data:`MAX_IMAGE_BYTES` long, and read within :data:`IMAGE_READ_TIMEOUT_S`. Which files
a case may name at all is the loader's rule (:func:`agents.cases.model.image_outside`).
"""
from __future__ import annotations

import errno
import os
import stat
import threading
from pathlib import Path

__all__ = ["read_image_bytes", "ImageFileError", "MAX_IMAGE_BYTES", "IMAGE_READ_TIMEOUT_S"]

MAX_IMAGE_BYTES = 32 * 1024 * 1024  # a chest film as PNG is a few MB; a study's image is sent base64 in a prompt
IMAGE_READ_TIMEOUT_S = 10.0


class ImageFileError(OSError):
    """An image file that is refused or cannot be read; the message names the file and why."""


def _read_fd(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    got = 0
    while got < limit:
        b = os.read(fd, min(1 << 20, limit - got))
        if not b:
            break
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def read_image_bytes(path: str | Path, *, max_bytes: int = MAX_IMAGE_BYTES,
                     timeout_s: float = IMAGE_READ_TIMEOUT_S) -> bytes:
    """The bytes of an image file, or :class:`ImageFileError` (an ``OSError``) saying
    why not: missing, a symbolic link, not a regular file, over ``max_bytes``, or not
    read within ``timeout_s`` (a stalled network file system)."""
    p = str(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(p, flags)  # non-blocking: opening a FIFO returns at once instead of waiting for a writer
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ImageFileError(f"{p} is a symbolic link: refused (name the file itself)") from None
        raise ImageFileError(f"cannot read {p} ({e.strerror or e})") from None
    handed_over = False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ImageFileError(f"{p} is not a regular file (a device, a pipe or a directory): refused")
        if st.st_size > max_bytes:
            raise ImageFileError(f"{p} is {st.st_size:,} bytes; an image is at most {max_bytes:,}")
        box: dict[str, object] = {}

        def work() -> None:
            try:
                box["data"] = _read_fd(fd, max_bytes + 1)
            except OSError as e:
                box["error"] = e
            finally:
                if box.get("late"):
                    os.close(fd)

        t = threading.Thread(target=work, name="image-read", daemon=True)
        t.start()
        t.join(timeout_s)
        if t.is_alive():
            box["late"] = True  # the reader closes the file when its read returns
            handed_over = True
            raise ImageFileError(f"reading {p} took more than {timeout_s:g} s: refused")
        if "error" in box:
            e = box["error"]
            assert isinstance(e, OSError)
            raise ImageFileError(f"cannot read {p} ({e.strerror or e})")
        data = box["data"]
        assert isinstance(data, bytes)
        if len(data) > max_bytes:  # it grew while read
            raise ImageFileError(f"{p} is over {max_bytes:,} bytes; an image is at most that")
        return data
    finally:
        if not handed_over:
            os.close(fd)
