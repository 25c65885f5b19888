"""Inputs that can be read only once: stdin (``-``, ``/dev/stdin``), a pipe, a FIFO, bash's
process substitution (``<(cut -f1 x.tsv)``, a ``/dev/fd/N`` pipe), a character device.

Every command reads its inputs more than once: the checks (binary file, UTF-8, line count for
the progress bar, the language check's sample, the checksum of a cache) and then the work. A
second read of a pipe finds nothing, so a command read 0 rows of ``/dev/stdin`` and wrote an
empty result with exit status 0 (issue 72). Here such an input is read exactly once, at its
first use, into a temporary file (a ``bimine-spool-tmp-PID-*`` folder in the temporary folder,
``TMPDIR``), and every later open of the same path in the same job reads that copy. Paths are
not rewritten: messages, reports and manifests keep the name the user gave; :func:`readable_path`
says which file to open. The copies are removed when the job ends (:func:`one_read`; every command and
public job function is one), also on Ctrl-C and SIGTERM, which unwind as exceptions; a run
killed by SIGKILL leaves its folder to the next run's :func:`bimine.cleanup.sweep_leftovers`.

Inputs are told apart by the file they open (device and inode), so ``-``, ``/dev/stdin`` and
``/proc/self/fd/0`` are one stream, read once.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import shutil
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from typing import BinaryIO, ParamSpec, TypeVar

from bimine.cleanup import temp_prefix
from bimine.errors import InputError

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")

_lock = threading.Lock()
_copies: dict[tuple, _Copy] = {}  # the stream's key -> its copy
_state: dict[str, object] = {"dir": None, "owner": None, "depth": 0}


def _stdin_stat() -> os.stat_result | None:
    try:
        return os.fstat(sys.stdin.fileno())
    except (AttributeError, OSError, ValueError):  # no stdin, or one without a file (a notebook, a test runner)
        return None


def _stat(path: str) -> os.stat_result | None:
    if path == "-":
        return _stdin_stat()
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def reads_once(path: str | os.PathLike) -> bool:
    """True when ``path`` cannot be read twice: ``-`` (stdin) or an existing path that is
    neither a regular file nor a folder (a pipe, FIFO, socket or character device). A missing
    path is False: its reader reports it."""
    p = os.fspath(path)
    if p == "-":
        return True
    st = _stat(p)
    return st is not None and not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode))


def readable_path(path: str | os.PathLike) -> str:
    """The file to open to read ``path``: ``path`` itself when it can be read again (a regular
    file; ``-`` when stdin is a redirected regular file: that file), else a copy of its bytes
    made at the first call (the stream read to its end once) and reused by every later call of
    the same job (:func:`one_read`). Safe to call from several threads: the first copies, the
    others wait for it.

    Raises :class:`InputError` when the copy cannot be written (a full disk: the message names
    the temporary folder and ``TMPDIR``)."""
    p = os.fspath(path)
    if not reads_once(p):
        return p
    st = _stat(p)
    if p == "-" and st is not None and stat.S_ISREG(st.st_mode):  # `bimine embed - < file.txt`
        try:
            real = os.readlink(f"/proc/self/fd/{sys.stdin.fileno()}")
            if os.path.isfile(real) and os.path.samestat(os.stat(real), st):
                return real
        except (OSError, ValueError):
            pass
    # a stream is known by the file it opens, so `-`, /dev/stdin and /proc/self/fd/0 are one
    key = (st.st_dev, st.st_ino) if st is not None else ("stdin", id(sys.stdin))
    with _lock:  # held for the bookkeeping only: a slow stream blocks no other input's readers
        entry = _copies.get(key)
        if entry is None:
            entry = _copies[key] = _Copy(os.path.join(_folder(), f"input-{len(_copies)}"))
            entry.source = sys.stdin if p == "-" else None  # held: the id in its key stays this stdin's
    while not entry.lock.acquire(timeout=0.25):  # another thread copies it; Ctrl-C still stops this one
        pass
    try:
        if not entry.done:
            _copy(p, entry.path)
            entry.done = True
    finally:
        entry.lock.release()
    return entry.path


class _Copy:
    """A stream's copy: its path, and whether it is complete (its lock is held while it is made)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.done = False
        self.source: object = None


def _copy(p: str, copy: str) -> None:
    name = "<stdin>" if p == "-" else p
    try:
        with (_stdin_bytes() if p == "-" else open(p, "rb")) as src, open(copy, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 22)
    except OSError as e:
        try:
            os.unlink(copy)
        except OSError:
            pass
        raise InputError(f"{name}: cannot be read once into {os.path.dirname(copy)} ({e.strerror or e}); "
                         "it is a stream (stdin, a pipe) that bimine keeps a copy of, as it reads each "
                         "input more than once: set TMPDIR to a folder with room, or give a file") from None
    log.debug(f"{name}: read once into {copy}")


def _stdin_bytes() -> BinaryIO:
    """Python's stdin as bytes (a notebook's or a test runner's, not only file descriptor 0),
    left open when the copy is done."""
    buf = getattr(sys.stdin, "buffer", sys.stdin)
    return contextlib.nullcontext(buf)  # type: ignore[return-value]


@contextlib.contextmanager
def one_read() -> Iterator[None]:
    """The scope of one job: a stream is copied once within it and its copy removed at its end
    (also when it ends by an exception: Ctrl-C, SIGTERM). Scopes nest (the outermost one removes
    the copies), so each command and each public job function opens one. Outside any scope, a
    copy lives until the process exits.

    Without scopes a long-lived process (a notebook) that reads the named FIFO ``f`` twice would
    get the first job's bytes again: a FIFO keeps its inode."""
    with _lock:
        _state["depth"] = int(_state["depth"]) + 1
    try:
        yield
    finally:
        with _lock:
            _state["depth"] = int(_state["depth"]) - 1
            last = _state["depth"] == 0
        if last:
            remove_copies()


def reading_once(fn: Callable[P, R]) -> Callable[P, R]:
    """Run ``fn`` inside :func:`one_read` (a decorator for the public job functions)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with one_read():
            return fn(*args, **kwargs)

    return wrapper


def spooled() -> dict[tuple, str]:
    """The copies made so far (for tests): stream key -> copy."""
    with _lock:
        return {k: c.path for k, c in _copies.items()}


def _folder() -> str:
    """This process's folder of copies, made on first use; removed at exit. A forked child
    makes its own (its parent's copies, which it inherited, stay valid and stay its parent's)."""
    if _state.get("closed") == os.getpid():
        raise InputError("the process is ending: no input is read any more")
    if _state["dir"] is None or _state["owner"] != os.getpid():  # a forked child makes its own
        _state["dir"] = tempfile.mkdtemp(prefix=temp_prefix("spool"))
        _state["owner"] = os.getpid()
    return str(_state["dir"])


def remove_copies() -> None:
    """Remove this process's copies (at exit; a forked child leaves its parent's alone)."""
    with _lock:
        folder = _state["dir"]
        if folder is not None and _state["owner"] == os.getpid():
            shutil.rmtree(str(folder), ignore_errors=True)
            _state["dir"] = None
            for key in [k for k, c in _copies.items() if os.path.dirname(c.path) == folder]:
                del _copies[key]


def close() -> None:
    """Remove this process's copies and make no more (a process about to end: a thread still
    reading an input would otherwise make a new copy after the last removal)."""
    with _lock:
        _state["closed"] = os.getpid()
    remove_copies()


atexit.register(close)
