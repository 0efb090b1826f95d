"""One process at a time in a run directory.

Two ``medsim bench --out D --resume`` at once (or a run and its resume) would both append
to ``D/results.jsonl`` and rewrite ``D/run.json``: rows duplicated or torn. :class:`RunLock`
takes an exclusive, non-blocking ``flock`` on ``D/.lock`` for the whole run and writes
this process's pid into it; a second process is refused at once with
:class:`RunLockError`, naming the directory and the holder's pid, before it has touched
anything there.

The kernel drops an ``flock`` when its process dies, however it dies: a run killed with
``kill -9`` leaves at most a ``.lock`` file that nobody holds, and the next run takes it.
A run that ends normally removes the file. (Removing it is safe because a process that
gets the lock checks that the file it locked is still the one at ``D/.lock``, and
otherwise tries again on the new one.)

Where ``fcntl`` is missing (Windows) the lock is not taken, and nothing is checked.
"""
from __future__ import annotations

import errno
import os
from pathlib import Path
from types import TracebackType

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_NAME", "RunLock", "RunLockError"]

LOCK_NAME = ".lock"
_ATTEMPTS = 5  # the file was replaced between opening and locking it this many times: give up


class RunLockError(RuntimeError):
    """The run directory is held by another process (``pid``, or None where it has not
    written it yet), or the lock file cannot be made."""

    def __init__(self, message: str, pid: int | None = None):
        super().__init__(message)
        self.pid = pid


class RunLock:
    """``with RunLock(out): ...`` holds ``out/.lock`` (creating ``out``) for the block;
    ``acquire`` and ``release`` do the same by hand. Not reentrant: a second RunLock on
    the same directory in the same process is refused as another process would be."""

    def __init__(self, out: Path):
        self.out = Path(out)
        self.path = self.out / LOCK_NAME
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock or raise :class:`RunLockError` at once (never waits)."""
        if self._fd is not None:
            raise RunLockError(f"{self.out}: this run already holds its lock")
        if fcntl is None:  # pragma: no cover - Windows
            return
        if self.out.exists() and not self.out.is_dir():
            raise RunLockError(f"--out {self.out}: exists and is not a directory")
        try:
            self.out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise RunLockError(f"--out {self.out}: cannot create the directory ({e.strerror or e})") from None
        for _ in range(_ATTEMPTS):
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
            except OSError as e:
                raise RunLockError(f"{self.path}: cannot open the run's lock file ({e.strerror or e})") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                pid = _read_pid(fd)
                os.close(fd)
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise RunLockError(f"{self.path}: cannot lock the run directory ({e.strerror or e})") from None
                who = f"pid {pid}" if pid is not None else "pid not yet recorded"
                raise RunLockError(f"{self.out} is in use by another medsim process ({who}); wait for it to end "
                                   f"or choose another --out", pid) from None
            if _same_file(fd, self.path):
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
                self._fd = fd
                return
            os.close(fd)  # the holder removed the file as we opened it: lock the new one
        raise RunLockError(f"{self.path}: the lock file keeps being replaced; is another process removing it?")

    def release(self) -> None:
        """Remove the lock file and drop the lock (in that order: a process that locks
        the removed file sees it is gone and locks the new one)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError:  # gone already, or a read-only directory: the lock still goes with the descriptor
            pass
        os.close(fd)

    def __enter__(self) -> "RunLock":
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
