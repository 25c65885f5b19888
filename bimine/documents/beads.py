"""The types every sentence aligner shares: its settings (:class:`AlignConfig`), the embedded
runs of sentences of a document (:class:`Overlaps`), a bead and the alignment of a document pair
(:class:`Bead`, :class:`Alignment`). The searches (:mod:`bimine.documents.vecalign`,
:mod:`bimine.documents.twopass`) and the command's aligner (:mod:`bimine.documents.align`) read
and write these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from bimine.errors import ConfigError

METHODS = ("vecalign", "two-pass")



@dataclass(frozen=True)
class AlignConfig:
    """Options of the aligner; the defaults are the ones measured in docs/benchmarks.md."""

    max_side: int = 4  #: most sentences on one side of a bead
    max_total: int = 8  #: most sentences in a bead, both sides together (Vecalign's -a)
    skip_quantile: float = 0.2  #: skip cost = this quantile of random 1:1 costs
    skip_samples: int = 20_000  #: random 1:1 pairs the skip cost is taken from
    norm_samples: int = 100  #: random vectors of the other document per normaliser
    length_weight: float = 0.6  #: weight of the length prior (0 = Vecalign's cost; 0.6: best on dev)
    overlaps: str = "joined"  #: "joined" (embed joined text) or "sum" (sum sentence vectors)
    exact_cells: int = 250_000  #: exact DP when n * m is at most this
    band: int = 8  #: half-width of the search band around a projected coarse path
    seed: int = 42  #: seed of the random samples (normalisers, skip cost)
    # the search: "two-pass" (Bertalign's, bimine.documents.twopass; the default: better on the dev sets,
    # docs/documents.md) or "vecalign" (this module)
    method: str = "two-pass"
    top_k: int = 3  #: two-pass: candidate targets per source sentence in the first pass
    window: int = 250  #: two-pass: first-pass window, sentences each side of the diagonal (at least)
    window_share: float = 0.06  #: two-pass: ... or this share of the longer document, if more
    band2: int = 40  #: two-pass: second-pass band, sentences each side of the anchors (Bertalign: 5)
    pass2_total: int = 5  #: two-pass: most sentences in a bead, both sides together
    skip_score: float = -0.06  #: two-pass: score of a skipped sentence (Bertalign: -0.1)
    # two-pass: score of opening a run of skipped sentences (Bertalign: 0, independent skips). -0.08
    # until issue 58: it skipped sentences the gold aligns (60 on the six dev sets, Vecalign's
    # search 25), which cost lax F1 below Vecalign's on three sets; -0.2 leaves 14
    # (docs/documents.md, "Sentences lost")
    gap_open: float = -0.2
    margin: bool = False  #: two-pass: subtract the runs' mean cosine to their neighbours (Bertalign: True)
    length_penalty: bool = True  #: two-pass: multiply by log2(1 + short / long)
    extra_sentence_score: float = -0.03  #: two-pass: added to a bead's score per sentence beyond 1:1 (Bertalign: 0)
    pass2_cost: str = "bertalign"  #: two-pass: the second pass's scores: bertalign's or vecalign's cost
    anchor_weight: str = "cosine"  #: two-pass: first-pass link weight: cosine (Bertalign), margin or mutual
    isolated_quantile: float = 0.0  #: two-pass: the lines with the lowest best cosines ...
    isolated_skip: float = 0.0  #: ... skip at this score (0: free)
    baseline: str = "none"  #: two-pass: "none" (Bertalign) or "random": cosine less its mean to random sentences
    # two-pass: numbers and names that both documents hold (bimine.documents.tokens; bleualign-dev +0.026,
    # docs/documents.md): a bead scores token_weight per such token on both its sides, less token_unmatched
    # times that per such token on one side only, counting tokens in at most token_max_df sentences of
    # each document (0: every shared token); token_weight 0 turns it off
    token_weight: float = 0.2
    token_unmatched: float = 1.0
    token_max_df: int = 2

    def __post_init__(self) -> None:
        if self.max_side < 1:
            raise ConfigError(f"max_side must be >= 1, got {self.max_side}")
        if self.max_total < 2:
            raise ConfigError(f"max_total must be >= 2 (a 1:1 bead), got {self.max_total}")
        if not 0.0 <= self.skip_quantile <= 1.0:
            raise ConfigError(f"skip_quantile must be in [0, 1], got {self.skip_quantile}")
        if self.skip_samples < 1 or self.norm_samples < 1:
            raise ConfigError("skip_samples and norm_samples must be >= 1")
        if self.length_weight < 0:
            raise ConfigError(f"length_weight must be >= 0, got {self.length_weight}")
        if self.overlaps not in ("joined", "sum"):
            raise ConfigError(f"overlaps must be 'joined' or 'sum', got {self.overlaps!r}")
        if self.exact_cells < 1 or self.band < 1:
            raise ConfigError("exact_cells and band must be >= 1")
        if self.method not in METHODS:
            raise ConfigError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.top_k < 1 or self.window < 0 or self.band2 < 0 or not 0 <= self.window_share <= 1:
            raise ConfigError("top_k must be >= 1, window and band2 >= 0, window_share in [0, 1]")
        if self.baseline not in ("none", "random"):
            raise ConfigError(f"baseline must be 'none' or 'random', got {self.baseline!r}")
        if self.token_weight < 0 or self.token_unmatched < 0 or self.token_max_df < 0:
            raise ConfigError("token_weight, token_unmatched and token_max_df must be >= 0")
        if self.pass2_total < 2:
            raise ConfigError(f"pass2_total must be >= 2 (a 1:1 bead), got {self.pass2_total}")

    def bead_types(self) -> list[tuple[int, int]]:
        """The ``(a, b)`` bead types searched besides 1:0 and 0:1, smallest first."""
        return sorted(((a, b) for a in range(1, self.max_side + 1) for b in range(1, self.max_side + 1)
                       if a + b <= self.max_total), key=lambda t: (t[0] + t[1], t))


class Bead(NamedTuple):
    """Source and target sentence numbers (0-based, consecutive, possibly empty) and a cost."""

    src: tuple[int, ...]
    tgt: tuple[int, ...]
    cost: float


def format_bead(bead: Bead) -> str:
    """The Vecalign line of a bead: ``[i,j]:[k]:cost`` (``[]:[k]`` an insertion)."""
    return f"[{','.join(map(str, bead.src))}]:[{','.join(map(str, bead.tgt))}]:{bead.cost:.6f}"


@dataclass
class Overlaps:
    """Embeddings of every run of 1..k consecutive sentences of one document.

    Layer ``s`` (runs of ``s`` sentences) occupies rows ``start[s-1] .. start[s-1] + n - s``
    of ``vectors``; row ``start[s-1] + i`` is the run of sentences ``i .. i+s-1``.
    ``lengths`` holds the characters of each run (joined by one space). ``gaps`` (optional,
    one flag per sentence) marks the sentences that a paragraph break (a removed blank line)
    separates from the one before: no run may cross one.
    """

    vectors: np.ndarray
    start: np.ndarray
    lengths: np.ndarray
    n: int
    gaps: np.ndarray | None = None
    #: optional per-row token bit sets (rows x words uint64): see :func:`bimine.documents.tokens.shared_token_bits`
    tokens: np.ndarray | None = None

    @property
    def k(self) -> int:
        return len(self.start)

    def single(self) -> np.ndarray:
        return self.vectors[self.start[0] : self.start[0] + self.n]

    def cut_rows(self) -> np.ndarray:
        """One flag (uint8) per row of ``vectors``: 1 when its run crosses a paragraph break."""
        cut = np.zeros(len(self.vectors), np.uint8)
        if self.gaps is None or not self.gaps[1:].any():
            return cut
        crossed = np.concatenate([[0], np.cumsum(self.gaps[1:], dtype=np.int64)])  # breaks before sentence i
        for s in range(2, self.k + 1):
            rows = self.n - s + 1
            if rows <= 0:
                break
            i = np.arange(rows)
            cut[self.start[s - 1] : self.start[s - 1] + rows] = crossed[i + s - 1] > crossed[i]
        return cut


@dataclass
class Alignment:
    """The beads of one document pair and how they were found."""

    beads: list[Bead]
    n_src: int
    n_tgt: int
    skip_cost: float
    levels: int  # down-sampling levels used (0 = exact DP)
    cells: int  # DP cells filled at the finest level
    blank_src: int = 0  # blank lines of each document (each its own cost-0 skip bead)
    blank_tgt: int = 0
    #: text lines (both documents) in insertions, deletions or beads no closer than unrelated sentences
    #: (:func:`chance_lines`); None where the documents are too short to tell
    chance_lines: int | None = None

    def lines(self) -> list[str]:
        return [format_bead(b) for b in self.beads]
