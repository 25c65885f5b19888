"""Leaving nothing behind: temporaries of killed runs are swept, SIGTERM cleans up like Ctrl-C.

Every output is written under a temporary name holding the writer's process id
(``pairs.tsv.tmp-PID``, ``bimine-mine-tmp-PID-...``) and renamed when complete. A run
stopped by SIGTERM unwinds normally (its ``finally`` blocks remove its temporaries); one
killed by SIGKILL cannot, so the next run removes temporaries whose process is gone.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
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
    for p in folder.glob(pattern):
        m = re.search(r"tmp-(\d+)", p.name)
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
