"""The CPU cores this process may use."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """Cores in this process's CPU affinity (a container's or ``taskset``'s limit), else all."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def capped_workers(asked: int, tasks: int | None = None, option: str = "--workers") -> int:
    """``asked`` worker processes, at most one per usable core and one per task (``tasks``: the
    batches or blocks there are; None: unknown), at least 1. A cap is said in one warning line:
    ``embed --workers 1000`` forked about 190 processes for 360 lines and took 37 s instead of
    0.4 s (issue 72 §7); more processes than cores only wait for each other."""
    import logging

    cores = usable_cores()
    n = max(1, min(asked, cores, tasks if tasks is not None else asked))
    if n < asked:
        why = (f"{tasks:,} batch(es) of work" if tasks is not None and tasks < cores
               else f"{cores} core(s) this process may use")
        logging.getLogger("bimine").warning(f"{option} {asked}: using {n} worker process(es), one per {why}")
    return n


def thread_env_problem() -> str | None:
    """What is wrong with the environment's thread settings, or None: ``NUMBA_NUM_THREADS`` must
    be a whole number >= 1 when set (0 ended every command in a ``ValueError`` traceback from
    numba's import, issue 72 §7)."""
    raw = os.environ.get("NUMBA_NUM_THREADS")
    if raw is None or raw.strip() == "":
        return None
    if not raw.strip().isdigit() or int(raw) < 1:
        return (f"NUMBA_NUM_THREADS={raw}: must be a whole number >= 1 (the threads of bimine's compiled "
                "kernels), or unset for one per core")
    return None


def available_memory() -> int:
    """Bytes of memory available to start new work (Linux's MemAvailable; else free pages)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 1 << 62  # unknown: no limit is imposed
