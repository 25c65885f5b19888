"""What a mining run is asked to do: the mining settings (:class:`MineConfig`) and the whole job
(:class:`MineJob`), the object ``bimine mine`` builds from its options, ``bimine run`` from a
YAML file, and :func:`bimine.mining.job.run_mine` and :func:`bimine.mining.pipeline.mine_files`
run. Each checks its own fields when it is made, so a run checks them once, at the top."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from bimine.config import bounds, check_fields
from bimine.encoders.user import hold_model
from bimine.errors import ConfigError
from bimine.executors import check_executor
from bimine.index.faiss_index import IndexConfig
from bimine.mining.select import STRATEGIES
from bimine.scoring.margin import SCORES

FORMATS = ("tsv", "jsonl", "parquet")


@dataclass(frozen=True)
class MineConfig:
    """k: neighbours for the margin (LASER/001: 4); score: see ``bimine.scoring.margin``;
    strategy: see ``bimine.mining.select``; threshold: minimum score of a kept pair, in the
    units of ``score`` and the same test (score >= threshold) for every score; None keeps
    every selected candidate, whatever its sign (``distance`` and ``absolute`` scores can be
    negative); dedupe: drop repeated (src, tgt) text pairs; drop_copies: drop pairs whose
    sides are equal up to case, punctuation, digits and spaces; min_chars: minimum length of
    both sides.

    The defaults (``eq9``, ``max``) are the best score and strategy on the BUCC-style newstest
    dev sets (docs/benchmarks.md §5, docs/decisions.md "Default score and strategy")."""

    k: int = field(default=4, metadata=bounds(min=1))
    score: str = "eq9"
    strategy: str = "max"
    threshold: float | None = None
    index: IndexConfig = field(default_factory=IndexConfig)
    dedupe: bool = False
    drop_copies: bool = False
    min_chars: int = field(default=0, metadata=bounds(min=0))

    def __post_init__(self) -> None:
        check_fields(self)
        if self.score not in SCORES:
            raise ConfigError(f"unknown score {self.score!r}: choose one of {', '.join(SCORES)}")
        if self.strategy not in STRATEGIES:
            raise ConfigError(f"unknown strategy {self.strategy!r}: choose one of {', '.join(STRATEGIES)}")
        if self.threshold is not None and np.isnan(self.threshold):
            raise ConfigError("threshold must be a number (or None to keep every candidate), not NaN")


@dataclass
class MineJob:
    """What to mine, and how.

    ``src`` / ``tgt``: a file, a glob pattern or a list of either per side (one sentence per
    line); ``src_lang`` / ``tgt_lang`` their languages (checked against the text; needed only
    by models whose features depend on them). ``mine``: k, score, strategy, threshold, index
    and the pair filters (:class:`~bimine.mining.pipeline.MineConfig`). ``model``: ``default``,
    ``e5-small``, ``auto`` or a model folder. ``work_dir``: keep (and reuse) stores and kNN
    lists; ``src_store`` / ``tgt_store``: stores made by ``bimine embed --store``. ``fmt``:
    ``tsv``, ``jsonl`` or ``parquet``; ``line_numbers``: add each side's line (``FILE:LINE``
    for a side of many files). ``confidence``: add the calibrated confidence (the model's head,
    or the one at ``calibration``). ``rescore``: ``default``, ``trees`` or a rescorer folder;
    ``trained_threshold``: keep pairs at the rescorer's stored threshold. ``workers``: encoding
    processes (0 = 1); ``shard_size``: lines per store shard; ``executor`` ``local`` or ``ray``."""

    src: str | os.PathLike | list
    tgt: str | os.PathLike | list
    output: str
    src_lang: str | None = None
    tgt_lang: str | None = None
    mine: MineConfig = field(default_factory=MineConfig)
    model: str = "default"
    work_dir: str | None = None
    src_store: str | None = None
    tgt_store: str | None = None
    fmt: str = "tsv"
    line_numbers: bool = False
    confidence: bool = False
    calibration: str | None = None
    rescore: str | None = None
    trained_threshold: bool = False
    encoding_errors: str = "strict"
    workers: int = field(default=0, metadata=bounds(min=0))
    shard_size: int = field(default=1_000_000, metadata=bounds(min=1))
    executor: str = "local"
    ray_address: str | None = None
    progress: bool = True
    wait: bool = True  # a work folder (or store) another run is using: wait for it; False refuses

    def __post_init__(self) -> None:
        hold_model(self)  # an encoder object given in Python: its name, the object kept
        check_fields(self)
        check_executor(self.executor)
        if self.fmt not in FORMATS:
            raise ConfigError(f"unknown format {self.fmt!r}: choose one of {', '.join(FORMATS)}")
