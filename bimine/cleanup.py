"""Leaving nothing behind: temporaries of killed runs are swept, SIGTERM cleans up like Ctrl-C.

Every output is written under a temporary name holding the writer's process id
(``pairs.tsv.tmp-PID``, ``bimine-mine-tmp-PID-...``) and renamed when complete. A run
stopped by SIGTERM unwinds normally (its ``finally`` blocks remove its temporaries); one
killed by SIGKILL cannot, so the next run removes temporaries whose process is gone.
"""

from __future__ import annotations

import ctypes
import glob
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)


def sweep_stale_temporaries(folder: str | os.PathLike, pattern: str) -> int:
    """Remove the ``pattern`` files/folders in ``folder`` named ``...tmp-PID...`` whose process
    no longer exists. Temporaries of live processes (another run writing now) are kept.
    Returns how many were removed."""
    removed = 0
    folder = Path(folder)
    if not folder.is_dir():
        return 0
    try:
        found = list(folder.glob(pattern))
    except OSError:  # an unreadable folder: nothing of ours can be there to remove
        return 0
    for p in found:
        m = re.search(r"tmp-?(\d+)", p.name)
        if not m or pid_alive(int(m.group(1))):
            continue
        try:
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink()
            removed += 1
            log.info(f"removed {p}, left by a run that was killed")
        except OSError:
            pass
    return removed


TEMP_PREFIX = "bimine-{what}-tmp-{pid}-"  # the name of every temporary folder a command makes


def temp_prefix(what: str) -> str:
    """The prefix of a temporary folder of command ``what`` (``bimine-filter-tmp-PID-``): every
    command names its temporaries this way, so :func:`sweep_leftovers` finds them all."""
    return TEMP_PREFIX.format(what=what, pid=os.getpid())


@contextmanager
def work_folder(work_dir: str | os.PathLike | None, what: str, sweep: str | None = None,
                wait: bool = True) -> Iterator[Path]:
    """The folder a command keeps its intermediate files in: ``work_dir`` when given (made if
    missing; locked for this run, :func:`folder_lock`; with ``sweep``, the temporaries of killed
    runs matching it removed first), else a temporary folder of command ``what``
    (:func:`temp_prefix`), removed at the end."""
    if work_dir:
        work = Path(work_dir)
        work.mkdir(parents=True, exist_ok=True)
        with folder_lock(work, "work folder", wait=wait):
            if sweep:
                sweep_stale_temporaries(work, sweep)
            yield work
        return
    with tempfile.TemporaryDirectory(prefix=temp_prefix(what)) as tmp:
        yield Path(tmp)


@contextmanager
def folder_lock(folder: str | os.PathLike, what: str, *, wait: bool = True) -> Iterator[None]:
    """Hold ``folder`` (a store or work folder) for this run: an advisory lock (``flock``) on the
    folder itself, which the system releases when the process ends, however it ends, so a run
    killed by SIGKILL leaves no stale lock (and the folder no extra file). Two runs on one
    folder raced: one ended with a ``FileNotFoundError`` traceback on ``progress.json`` and
    wrote nothing (issue 72 §3). A second run now waits for the first, saying so in one line,
    or with ``wait=False`` is refused in one line (:class:`~bimine.errors.ConfigError`). A file
    system without ``flock`` on folders runs unlocked, as before (said at debug level)."""
    import errno
    import fcntl

    from bimine.errors import ConfigError

    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                raise ConfigError(f"{folder}: this {what} is in use by another bimine run; wait for it to end, "
                                  "or use another folder") from None
            log.warning(f"{folder}: this {what} is in use by another bimine run; waiting for it to end "
                        "(--no-wait refuses instead)")
            fcntl.flock(fd, fcntl.LOCK_EX)  # Ctrl-C still stops the wait (the handler's exception ends it)
        except OSError as e:
            if e.errno not in (errno.ENOLCK, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF):
                raise
            log.debug(f"{folder}: cannot be locked ({e.strerror}); running unlocked")
        yield
    finally:
        os.close(fd)  # the lock goes with it


def sweep_leftovers(*outputs: str | os.PathLike | None) -> int:
    """Remove what runs killed by SIGKILL left behind, before a command writes: beside each
    output, its ``NAME.tmp-PID`` files and the ``bimine-*-tmp-PID-*`` folders of any command;
    in the temporary folder (TMPDIR), every ``bimine-*-tmp-PID-*``. Only temporaries whose
    process is gone are touched. Every command that makes temporaries calls this. Returns how
    many were removed."""
    removed = 0
    for out in outputs:
        if out is None or str(out) == "-":
            continue
        out = Path(out).absolute()
        # glob.escape: an output may be called a[1].tsv
        removed += sweep_stale_temporaries(out.parent, f"{glob.escape(out.name)}.tmp-*")
        removed += sweep_stale_temporaries(out.parent, "bimine-*-tmp-*")
    removed += sweep_stale_temporaries(tempfile.gettempdir(), "bimine-*-tmp-*")
    return removed


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (ours counts as alive)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Terminated(SystemExit):
    """Raised in the main thread on SIGTERM, so ``finally`` blocks and context managers run."""


def exit_cleanly_on_sigterm() -> None:
    """Turn SIGTERM into an exception (exit status 143) instead of an immediate death."""

    def handler(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM kills at once
        raise Terminated(128 + signum)

    signal.signal(signal.SIGTERM, handler)


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent_pid: int) -> None:
    """In a forked worker process: end it as soon as its parent ``parent_pid`` is gone, however the
    parent died (``kill -9`` included; a worker blocked on its task pipe would otherwise wait for
    ever, since its siblings hold the pipe open).

    On Linux the kernel sends SIGKILL when the parent dies (``PR_SET_PDEATHSIG``); everywhere, a
    daemon thread checks once a second that the parent is still this process's parent (this also
    covers a parent that died before the first line ran). Pass the parent's pid as read in the
    parent, before the fork. A worker holds no temporaries of its own, so nothing is left behind."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # no prctl: the watching thread alone
            pass
    if os.getppid() != parent_pid:
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="bimine-watch-parent", daemon=True).start()


def worker_init(parent_pid: int) -> None:
    """The initializer of every forked worker pool: Ctrl-C is the parent's to handle (the whole
    process group gets SIGINT; a worker that took it would print its own ``KeyboardInterrupt``
    traceback), SIGTERM (a pool's terminate) ends it at once, and the worker ends with its parent
    (:func:`die_with_parent`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent(parent_pid)


def stop_workers(pool) -> None:
    """End the worker processes of a :class:`concurrent.futures.ProcessPoolExecutor` now (SIGTERM;
    :func:`worker_init` makes that immediate; SIGKILL for one still alive after 5 s), so that a
    Ctrl-C or an error does not wait for the blocks already queued to them, and return once they
    are gone."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for proc in procs:
        try:
            proc.terminate()
        except (OSError, AttributeError):
            pass
    for proc in procs:
        proc.join(5)
        if proc.exitcode is None:
            proc.kill()
            proc.join()


_FORK_STATE: list = []  # in a worker of a ForkPool: the state it was started with (never set in the parent)
_ONE_THREAD = [False]  # in a worker of a ForkPool(one_thread=True)


def _start_fork_worker(state, parent_pid: int, one_thread: bool) -> None:
    worker_init(parent_pid)
    _FORK_STATE[:] = [state]
    _ONE_THREAD[0] = one_thread


def one_thread_per_worker() -> bool:
    """True in a worker of a :class:`ForkPool` started with ``one_thread=True``: its siblings
    share the cores, so its own work runs on one thread."""
    return _ONE_THREAD[0]


def _in_fork_worker(fn, args):
    return fn(args, _FORK_STATE[0])


class ForkPool:
    """``workers`` processes forked from this one, each started with ``state`` (handed over at
    the fork, never pickled: what the parent built, such as warmed-up filters or an encoder,
    is shared). ``submit(fn, args)`` runs ``fn(args, state)`` in a worker and returns a
    :class:`concurrent.futures.Future`. Ctrl-C is the parent's to handle, and a worker ends
    with its parent (:func:`worker_init`). ``one_thread``: the workers' encoders use one thread
    each (:func:`one_thread_per_worker`).

    ``stop()`` is for Ctrl-C or an error: the work queued to the workers is not worth waiting
    for, so they are ended now. A worker ended while it sends a result leaves half a message
    in the result pipe (and the pipe's lock taken), and the pool's manager thread then waits
    for the rest for ever; the interpreter joins that thread at exit, so the process would
    never end (the test suite hung after its summary, 1 run in 10-20 of a test that stops a
    pool). With the workers gone and the parent's own write end closed, the pipe has no writer
    left: the thread reads its end, marks the pool broken and ends, and ``shutdown`` returns.
    (``multiprocessing.Pool`` has no such way out: its ``terminate`` waits for that lock before
    it ends the workers, and ``bimine embed --workers 2`` hung after Ctrl-C that way.)"""

    def __init__(self, state, workers: int, *, one_thread: bool = False) -> None:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers
        self._pool = ProcessPoolExecutor(workers, mp_context=mp.get_context("fork"), initializer=_start_fork_worker,
                                         initargs=(state, os.getpid(), one_thread))

    def submit(self, fn, args):
        return self._pool.submit(_in_fork_worker, fn, args)

    def stop(self) -> None:
        pool = self._pool
        stop_workers(pool)
        writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
        if writer is not None:
            writer.close()
        pool.shutdown(wait=True, cancel_futures=True)

    def shutdown(self, cancel_futures: bool = False) -> None:
        self._pool.shutdown(cancel_futures=cancel_futures)


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != parent_pid:
            os._exit(1)
