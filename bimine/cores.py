"""The CPU cores this process may use."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """Cores in this process's CPU affinity (a container's or ``taskset``'s limit), else all."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
