"""One process at a time in a run directory.

Two ``medsim bench --out D --resume`` at once (or a run and its resume) would both append
to ``D/results.jsonl`` and rewrite ``D/run.json``: rows duplicated or torn. :class:`RunLock`
keeps a second process out for the whole run and refuses it at once with
:class:`RunLockError`, naming the directory and the holder's pid, before it has touched
anything there. How, from the strongest means the file system offers:

1. An exclusive, non-blocking ``flock`` on the directory ``D`` itself and on ``D/.lock``,
   which holds the holder's pid. Removing ``.lock`` while a run holds it lets nobody in:
   the directory's lock stays. (The ``.lock`` file's lock is what a medsim from before
   the directory lock takes, so the two keep each other out too.) The kernel drops an
   ``flock`` when its process dies, however it dies: a run killed with ``kill -9``
   leaves at most a ``.lock`` file that nobody holds, and the next run takes it. A run
   that ends normally removes the file. (Removing it is safe because a process that
   gets the lock checks that the file it locked is still the one at ``D/.lock``, and
   otherwise tries again on the new one.) Where the directory cannot be locked but
   files can (some network file systems lock only files open for writing), ``.lock``
   alone is locked, as before.
2. Where no file lock can be taken (``fcntl`` missing, as on Windows, or ``flock``
   refused with ENOLCK / EOPNOTSUPP, as on some network file systems), a pid file: ``D/.lock``
   created with ``O_EXCL``, so only one process can make it. A ``.lock`` whose pid is
   no longer running (its run was killed) is taken over; one whose pid runs refuses the
   second process, saying that the file can be removed if no medsim runs there. The
   fallback is said in a warning: it cannot tell a live holder from another process that
   got the same pid later.

A lock that had to create ``D`` removes it again on release if nothing was written there
(a refused run leaves nothing behind).
"""
from __future__ import annotations

import errno
import logging
import os
import time
from pathlib import Path
from types import TracebackType

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_NAME", "RunLock", "RunLockError", "NO_FILE_LOCK"]

logger = logging.getLogger(__name__)

LOCK_NAME = ".lock"
_ATTEMPTS = 5  # the file was replaced between opening and locking it this many times: give up
_BUSY = {errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES}
# flock cannot be had here (the file system or the platform): use the pid file
NO_FILE_LOCK = {errno.ENOLCK, errno.EOPNOTSUPP, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)}
_STALE_EMPTY_S = 10.0  # an empty pid file this old was left by a process killed as it made it


class RunLockError(RuntimeError):
    """The run directory is held by another process (``pid``, or None where it has not
    written it yet), or the lock file cannot be made."""

    def __init__(self, message: str, pid: int | None = None):
        super().__init__(message)
        self.pid = pid


class RunLock:
    """``with RunLock(out): ...`` holds ``out`` (creating it) for the block; ``acquire``
    and ``release`` do the same by hand. Not reentrant: a second RunLock on the same
    directory in the same process is refused as another process would be. ``mode``
    says how it is held: ``flock`` (the directory and ``.lock``), ``flock-file``
    (``.lock`` only), ``pidfile`` or None (not held)."""

    def __init__(self, out: Path):
        self.out = Path(out)
        self.path = self.out / LOCK_NAME
        self._fd: int | None = None
        self._dir_fd: int | None = None
        self._made_dir = False
        self.mode: str | None = None

    @property
    def held(self) -> bool:
        return self.mode is not None

    def acquire(self) -> None:
        """Take the lock or raise :class:`RunLockError` at once (never waits)."""
        if self.held:
            raise RunLockError(f"{self.out}: this run already holds its lock")
        if self.out.exists() and not self.out.is_dir():
            raise RunLockError(f"--out {self.out}: exists and is not a directory")
        try:
            self._made_dir = not self.out.exists()
            self.out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise RunLockError(f"--out {self.out}: cannot create the directory ({e.strerror or e})") from None
        try:
            if fcntl is None:  # pragma: no cover - Windows
                self._pid_file("this platform has no fcntl")
                return
            why = self._lock_directory()
            if why is not None:
                self._pid_file(why)
                return
            why = self._lock_file()
            if why is not None:
                self._unlock_directory()
                self._pid_file(why)
        except BaseException:
            self._unlock_directory()
            self._remove_made_dir()
            raise

    # -- flock ---------------------------------------------------------------------------
    def _lock_directory(self) -> str | None:
        """flock the directory itself; the reason it cannot be had, where flock is not
        supported here at all (None: held, or the directory alone cannot be locked)."""
        try:
            fd = os.open(self.out, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None  # a directory that cannot be opened (Windows-like): the file's lock alone
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in _BUSY:
                pid = _read_pid_file(self.path)
                note = "its .lock file was removed" if pid is None else None
                raise RunLockError(self._busy(pid, note), pid) from None
            if e.errno in NO_FILE_LOCK:
                return f"flock is not supported on this file system ({e.strerror or e})"
            return None  # e.g. EBADF where only files open for writing lock: .lock alone
        self._dir_fd = fd
        return None

    def _unlock_directory(self) -> None:
        fd, self._dir_fd = self._dir_fd, None
        if fd is not None:
            os.close(fd)

    def _lock_file(self) -> str | None:
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
                if e.errno in NO_FILE_LOCK:
                    if pid is None:  # the empty file just opened: the pid file is made anew
                        self.path.unlink(missing_ok=True)
                    return f"flock is not supported on this file system ({e.strerror or e})"
                if e.errno not in _BUSY:
                    raise RunLockError(f"{self.path}: cannot lock the run directory ({e.strerror or e})") from None
                raise RunLockError(self._busy(pid), pid) from None
            if _same_file(fd, self.path):
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
                self._fd = fd
                self.mode = "flock" if self._dir_fd is not None else "flock-file"
                return None
            os.close(fd)  # the holder removed the file as we opened it: lock the new one
        raise RunLockError(f"{self.path}: the lock file keeps being replaced; is another process removing it?")

    def _busy(self, pid: int | None, note: str | None = None) -> str:
        who = f"pid {pid}" if pid is not None else (f"pid unknown: {note}" if note else "pid not yet recorded")
        return f"{self.out} is in use by another medsim process ({who}); wait for it to end or choose another --out"

    # -- the pid file ------------------------------------------------------------------------
    def _pid_file(self, why: str) -> None:
        logger.warning("%s: no file lock can be taken (%s); a second run is kept out by the pid file %s instead",
                       self.out, why, self.path)
        for _ in range(_ATTEMPTS):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
            except FileExistsError:
                self._break_stale()
                continue
            except OSError as e:
                raise RunLockError(f"{self.path}: cannot create the run's pid file ({e.strerror or e})") from None
            try:
                os.write(fd, f"{os.getpid()}\n".encode("ascii"))
            finally:
                os.close(fd)
            self.mode = "pidfile"
            return
        raise RunLockError(f"{self.path}: the pid file keeps coming back; is another process making it?")

    def _break_stale(self) -> None:
        """Remove a pid file whose process is gone; refuse if it runs."""
        try:
            text = self.path.read_text(encoding="ascii", errors="replace").strip()
            age = time.time() - self.path.stat().st_mtime
        except FileNotFoundError:
            return  # removed meanwhile: try again
        except OSError as e:
            raise RunLockError(f"{self.path}: cannot read the run's pid file ({e.strerror or e})") from None
        pid = int(text) if text.isdigit() else None
        if pid is None and age < _STALE_EMPTY_S:
            raise RunLockError(self._busy(None), None)
        if pid is not None and _alive(pid):
            raise RunLockError(f"{self._busy(pid)} (no file lock on this file system: the pid file {self.path} "
                               "keeps it; remove that file if no medsim runs there)", pid)
        # stale: move it aside under a name of our own, and remove it if it is still the one we read
        aside = self.path.with_name(f"{LOCK_NAME}.stale.{os.getpid()}")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return
        try:
            if aside.read_text(encoding="ascii", errors="replace").strip() != text:  # a live one, made meanwhile
                try:
                    os.link(aside, self.path)  # put it back (fails if yet another is there)
                except OSError:
                    pass
                raise RunLockError(self._busy(_read_pid_file(self.path)), None)
        finally:
            aside.unlink(missing_ok=True)
        logger.info("%s: removed the pid file of pid %s, which no longer runs", self.path, pid)

    # -- release -----------------------------------------------------------------------------
    def release(self) -> None:
        """Remove the lock file and drop the lock (in that order: a process that locks
        the removed file sees it is gone and locks the new one)."""
        mode, self.mode = self.mode, None
        if mode is None:
            return
        if mode == "pidfile":
            if _read_pid_file(self.path) == os.getpid():
                self.path.unlink(missing_ok=True)
        else:
            try:
                os.unlink(self.path)
            except OSError:  # gone already, or a read-only directory: the lock still goes with the descriptor
                pass
        self._remove_made_dir()
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
        self._unlock_directory()

    def _remove_made_dir(self) -> None:
        """A directory this lock made, with nothing in it: removed (a refused run leaves
        nothing behind)."""
        if self._made_dir:
            self._made_dir = False
            try:
                self.out.rmdir()  # fails, as it should, when anything is in it
            except OSError:
                pass

    def __enter__(self) -> "RunLock":
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    except OSError:
        return True  # cannot tell: assume it runs
    return True


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _read_pid_file(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
