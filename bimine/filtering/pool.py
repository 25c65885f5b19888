"""The filter pipeline's worker pool on this machine, used as the Ray one is
(:class:`bimine.distributed.ray_executor.BlockPool`): ``submit(fn, args)`` runs ``fn(args,
filters)`` in a worker with the worker's copy of the filters and returns a future.

The workers are forked from this process after the filters were warmed up (compiled kernels,
tables), so they share that work and need no pickled copy of the filters: each gets them once,
at the fork (:class:`bimine.cleanup.ForkPool`, which also says how ``stop`` ends them).
"""

from __future__ import annotations

from bimine.cleanup import ForkPool
from bimine.jitcache import wait_for_background
from bimine.scoring.base import PairFilter


class LocalBlockPool(ForkPool):
    """``workers`` forked processes scoring blocks with ``filters``."""

    def __init__(self, filters: list[PairFilter], workers: int) -> None:
        wait_for_background()  # an encoder's kernels loading in the background: in the open, so Ctrl-C works
        super().__init__(filters, workers)
