"""The filter pipeline's worker pool on this machine, used as the Ray one is
(:class:`bimine.distributed.ray_executor.BlockPool`): ``submit(fn, args)`` runs ``fn(args,
filters)`` in a worker with the worker's copy of the filters and returns a future.

The workers are forked from this process after the filters were warmed up (compiled kernels,
tables), so they share that work and need no pickled copy of the filters: each gets them once,
as the argument of its initializer, at the fork. Ctrl-C is the parent's to handle, and a
worker ends with its parent (:func:`bimine.cleanup.worker_init`).
"""

from __future__ import annotations

import multiprocessing as mp
import os
from concurrent.futures import Future, ProcessPoolExecutor

from bimine.cleanup import stop_workers, worker_init
from bimine.scoring.base import PairFilter

_INHERITED: list[PairFilter] = []  # in a forked worker: the filters it was started with (never set in the parent)


def _start_worker(filters: list[PairFilter], parent_pid: int) -> None:
    worker_init(parent_pid)
    _INHERITED[:] = filters


def _in_worker(fn, args):
    return fn(args, _INHERITED)


class LocalBlockPool:
    """``workers`` forked processes scoring blocks with ``filters``."""

    def __init__(self, filters: list[PairFilter], workers: int) -> None:
        self.workers = workers
        self._pool = ProcessPoolExecutor(workers, mp_context=mp.get_context("fork"), initializer=_start_worker,
                                         initargs=(filters, os.getpid()))

    def submit(self, fn, args) -> Future:
        return self._pool.submit(_in_worker, fn, args)

    def stop(self) -> None:
        """Ctrl-C or an error: the blocks in the workers' queue are not worth waiting for. A
        worker stopped while it sends a result leaves half a message in the result pipe, which
        the pool's manager thread then waits on for ever: do not wait for it."""
        stop_workers(self._pool)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def shutdown(self, cancel_futures: bool = False) -> None:
        self._pool.shutdown(cancel_futures=cancel_futures)
