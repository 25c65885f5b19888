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
from bimine.jitcache import wait_for_background
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
        wait_for_background()  # an encoder's kernels loading in the background: in the open, so Ctrl-C works
        self._pool = ProcessPoolExecutor(workers, mp_context=mp.get_context("fork"), initializer=_start_worker,
                                         initargs=(filters, os.getpid()))

    def submit(self, fn, args) -> Future:
        return self._pool.submit(_in_worker, fn, args)

    def stop(self) -> None:
        """Ctrl-C or an error: the blocks in the workers' queue are not worth waiting for, so the
        workers are ended now. A worker ended while it sends a result leaves half a message in
        the result pipe, and the pool's manager thread then waits for the rest for ever; the
        interpreter joins that thread at exit, so the process would never end (the test suite
        hung after its summary, 1 run in 10-20 of a test that stops a pool). With the workers
        gone and the parent's own write end closed, the pipe has no writer left: the thread
        reads its end, marks the pool broken and ends, and ``shutdown`` returns."""
        pool = self._pool
        stop_workers(pool)
        writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
        if writer is not None:
            writer.close()
        pool.shutdown(wait=True, cancel_futures=True)

    def shutdown(self, cancel_futures: bool = False) -> None:
        self._pool.shutdown(cancel_futures=cancel_futures)
