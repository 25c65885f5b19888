"""The one protocol of the pair scorers: a score per pair, a direction, and a decision
(OpusFilter's split of ``score()`` from ``accept()``).

The scorers of this package (:mod:`bimine.scoring.pair_scores`: the embedding cosine, the
in-corpus margin, the calibrated confidence, the trained classifiers, the divergence models,
the mining rescorer) and the rules and shape features of :mod:`bimine.filtering` are all
:class:`PairFilter` s, so ``score``, ``filter``, ``divergence`` and ``select`` compose the same
pieces in one pipeline.

A filter scores a block of pairs at once (``score(src, tgt) -> float64 array``), says which
direction of its score means clean (``clean_high``), and accepts a pair when its score is on
the clean side of ``threshold`` (inclusive); a filter without a threshold (``None``) only
scores and accepts every pair. Rules, embedding scores and classifiers all take
this shape, so that one pipeline runs them in order, records one column per score, and
combines them (a clean-low score enters a combination negated).

A *stateful* filter (duplicates) depends on the pairs before it and must see the blocks in
input order, in one process; the others score any block anywhere. A stateful or corpus-level
filter may split off the part of its work that does not depend on other blocks
(:meth:`PairFilter.prepare`: hashing the pairs, embedding them), which the pipeline then runs
in its worker processes with the stateless filters; :meth:`PairFilter.score_prepared` or
:meth:`PairFilter.collect_prepared` finishes in order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np


@dataclass
class PairFilter:
    """Base class. Subclasses set ``name`` (the score's column), ``clean_high``, a default
    ``threshold`` and ``reason`` (the drop reason written next to a dropped pair), and
    implement :meth:`score`."""

    name: str = "filter"
    threshold: float | None = 0.0
    clean_high: bool = True
    reason: str = ""
    stateful: bool = False
    kind: str = "rule"  # "score": a graded quality score, summed into the combined score
    # a corpus-level score (e.g. a margin against the corpus's own neighbours): the pipeline
    # calls collect(src, tgt) on every block in order, then finalize() -> one score per pair
    needs_corpus: bool = False
    # scored in the main process when the workers are forked (torch in a forked worker can
    # hang), in order like a stateful filter; a Ray worker is a fresh process and scores it
    fork_unsafe: ClassVar[bool] = False

    def collect(self, src: list[str], tgt: list[str]) -> None:
        raise NotImplementedError

    def finalize(self) -> np.ndarray:
        raise NotImplementedError

    def score(self, src: list[str], tgt: list[str]) -> np.ndarray:
        raise NotImplementedError

    def prepare(self, src: list[str], tgt: list[str]) -> object | None:
        """A stateful filter's work on a block that needs no earlier block (may run in another
        process; the result is pickled back). None: nothing to prepare."""
        return None

    def score_prepared(self, src: list[str], tgt: list[str], prepared: object | None) -> np.ndarray:
        """:meth:`score`, given what :meth:`prepare` returned for the same block (or None when
        it was not called)."""
        return self.score(src, tgt)

    def collect_prepared(self, src: list[str], tgt: list[str], prepared: object | None) -> None:
        """:meth:`collect` (corpus-level filters), given what :meth:`prepare` returned for the
        same block (or None when it was not called)."""
        self.collect(src, tgt)

    def accept(self, scores: np.ndarray) -> np.ndarray:
        """True where the score is on the clean side of the threshold (inclusive); a NaN
        score is never accepted."""
        s = np.asarray(scores, dtype=np.float64)
        if self.threshold is None:
            return np.ones(len(s), dtype=bool)
        with np.errstate(invalid="ignore"):
            return s >= self.threshold if self.clean_high else s <= self.threshold

    def clean_score(self, scores: np.ndarray) -> np.ndarray:
        """The score oriented so that higher means cleaner (negated for clean-low scores)."""
        s = np.asarray(scores, dtype=np.float64)
        return s if self.clean_high else -s
