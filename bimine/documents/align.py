"""Sentence alignment inside one document pair (``bimine align``).

The method is Vecalign's (Thompson & Koehn 2019), written from its description:

1. **Overlaps.** Every run of 1..``max_side`` consecutive sentences of each document is
   embedded (the run's sentences joined by a space), so an ``a:b`` bead compares one vector
   of ``a`` source sentences with one of ``b`` target sentences. ``overlaps="sum"`` instead
   sums the single-sentence vectors (no extra encoding: for slow encoders).
2. **Cost.** ``2ab (1 - cos(x, y)) / (n(x) + n(y))``, ``n(v)`` = one minus the mean cosine of
   ``v`` to 100 random vectors of the other document: a sentence close to everything (a hub)
   gains nothing. The ``ab`` factor makes one big bead cost about what the small beads it
   replaces would. Optionally plus a length prior ``w |log(len x) - log(r len y)|`` with
   ``r`` the document's length ratio (``length_weight``; 0 = Vecalign's cost).
3. **Skips.** A deleted or inserted sentence costs the ``skip_quantile`` (0.2) quantile of
   the costs of 20,000 random 1:1 pairs of the same documents: leaving a sentence out costs
   about what a fairly good random match would.
4. **Search.** Dynamic programming over beads ``a:b`` (1 <= a, b <= ``max_side``, a + b <=
   ``max_total``) plus 1:0 and 0:1. Short documents (``n * m <= exact_cells``) get the exact
   DP over the whole matrix. Longer ones are down-sampled (consecutive sentence vectors
   summed in pairs, the mean removed, renormalised) until they are short, aligned there with
   1:1 beads and skips, and the path is projected back level by level into a band of
   ``band`` cells each side, where the DP runs again: time and memory linear in the length.

The result is a list of beads covering every sentence of both documents once, in order; a
bead's reported cost is its DP cost divided by ``a * b`` (lower = better; a skip reports
the skip cost).

**Blank lines** (empty or only white space) are paragraph breaks, not sentences: they are
taken out before the search (so they neither get embedded nor bias the normalisers, the skip
cost or the length ratio), no bead with text spans one, and each comes back as its own
deletion ``[i]:[]`` or insertion ``[]:[j]`` of cost 0, in its place. A document that is all
blank thus aligns nothing: every line of the other is a skip.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from bimine.documents.tokens import attach_shared_tokens
from bimine.errors import ConfigError
from bimine.outputs import atomic_path

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
    gap_open: float = -0.08  #: two-pass: score of opening a run of skipped sentences (Bertalign: 0, independent skips)
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


def _layer_starts(n: int, k: int) -> np.ndarray:
    sizes = [max(n - s + 1, 0) for s in range(1, k + 1)]
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)


def overlap_texts(sentences: list[str], k: int) -> list[str]:
    """The texts of every run of 1..k consecutive sentences, layer by layer (see
    :class:`Overlaps`); a run is its sentences stripped and joined by one space."""
    clean = [s.strip() for s in sentences]
    out: list[str] = []
    for s in range(1, k + 1):
        out.extend(" ".join(w for w in clean[i : i + s] if w) for i in range(len(clean) - s + 1))
    return out


def _normalise_rows(v: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return (v / np.maximum(norms, 1e-12)).astype(np.float32)


def embed_overlaps(sentences: list[str], encoder, lang: str, k: int, *, mode: str = "joined",
                   batch_size: int = 8192, progress=None) -> Overlaps:
    """Embed the runs of 1..k sentences of a document with ``encoder`` (see :class:`Overlaps`).

    ``mode="joined"`` embeds each run's joined text once (identical texts once overall);
    ``mode="sum"`` embeds single sentences and sums their vectors per run. Runs that are
    empty text get a zero vector (cosine 0 with everything). ``progress`` (a tqdm-like
    object) is advanced by the number of texts encoded.
    """
    n = len(sentences)
    starts = _layer_starts(n, k)
    runs = overlap_texts(sentences, k)
    lengths = np.array([len(t) for t in runs], np.float64)
    texts = runs if mode == "joined" else runs[:n]  # layer 1 (single sentences) comes first
    uniq: dict[str, int] = {}
    index = np.array([uniq.setdefault(t, len(uniq)) for t in texts], np.int64)
    order = list(uniq)
    dim = int(encoder.dim)
    emb = np.zeros((len(order), dim), np.float32)
    if progress is not None and getattr(progress, "total", None) is not None:
        progress.total += len(order)
        progress.refresh()
    for i in range(0, len(order), batch_size):
        chunk = order[i : i + batch_size]
        emb[i : i + len(chunk)] = encoder.encode(chunk, lang)
        if progress is not None:
            progress.update(len(chunk))
    empty = np.array([not t for t in order], bool)
    emb[empty] = 0.0
    vectors = emb[index]
    if mode == "sum" and k > 1:
        single = vectors
        cum = np.concatenate([np.zeros((1, dim), np.float64), np.cumsum(single, axis=0, dtype=np.float64)])
        layers = [single]
        for s in range(2, k + 1):
            if n - s + 1 <= 0:
                break
            layers.append(_normalise_rows(cum[s:] - cum[: n - s + 1]))
        vectors = np.concatenate(layers) if layers else np.zeros((0, dim), np.float32)
    return Overlaps(vectors=np.ascontiguousarray(vectors, np.float32), start=starts, lengths=lengths, n=n)


@dataclass
class Problem:
    """Everything the DP needs at one level: vectors, normalisers, log-lengths, skip cost."""

    X: np.ndarray
    xstart: np.ndarray
    nx: np.ndarray
    lx: np.ndarray
    Y: np.ndarray
    ystart: np.ndarray
    ny: np.ndarray
    ly: np.ndarray
    n: int
    m: int
    skip: float
    length_weight: float
    types: list[tuple[int, int]] = field(default_factory=list)
    xcut: np.ndarray | None = None  #: per row of X: 1 = the run crosses a paragraph break (no bead)
    ycut: np.ndarray | None = None

    def cost(self, a: int, b: int, i: int, j: int) -> float:
        """Cost of the bead of source sentences ``i..i+a-1`` and target ``j..j+b-1`` (NumPy
        reference of the compiled cost; +inf for a run across a paragraph break)."""
        xr, yr = self.xstart[a - 1] + i, self.ystart[b - 1] + j
        if (self.xcut is not None and self.xcut[xr]) or (self.ycut is not None and self.ycut[yr]):
            return math.inf
        dist = max(0.0, 1.0 - float(np.dot(self.X[xr].astype(np.float64), self.Y[yr].astype(np.float64))))
        c = 2.0 * a * b * dist / max(float(self.nx[xr] + self.ny[yr]), 1e-6)
        if self.length_weight > 0:
            c += self.length_weight * abs(float(self.lx[xr] - self.ly[yr]))
        return c


_LEN_SMOOTH = 10.0  # characters added to every length before the logarithm (short sentences)


def make_problem(X: np.ndarray, xstart: np.ndarray, xlen: np.ndarray, n: int,
                 Y: np.ndarray, ystart: np.ndarray, ylen: np.ndarray, m: int,
                 types: list[tuple[int, int]], config: AlignConfig, rng: np.random.Generator) -> Problem:
    """Normalisers, length terms and the skip cost for one level (see the module docstring)."""
    k = config.norm_samples
    sx = rng.integers(0, len(X), k) if len(X) else np.zeros(0, np.int64)
    sy = rng.integers(0, len(Y), k) if len(Y) else np.zeros(0, np.int64)
    nx = (1.0 - (X @ Y[sy].T).mean(axis=1, dtype=np.float64)) if len(sy) else np.ones(len(X))
    ny = (1.0 - (Y @ X[sx].T).mean(axis=1, dtype=np.float64)) if len(sx) else np.ones(len(Y))
    sx_len = float(xlen[xstart[0] : xstart[0] + n].sum()) + _LEN_SMOOTH * n
    sy_len = float(ylen[ystart[0] : ystart[0] + m].sum()) + _LEN_SMOOTH * m
    ratio = sx_len / sy_len if sy_len > 0 else 1.0
    lx = np.log(xlen + _LEN_SMOOTH)
    ly = np.log(ylen + _LEN_SMOOTH) + math.log(max(ratio, 1e-9))
    p = Problem(X=X, xstart=xstart, nx=nx, lx=lx, Y=Y, ystart=ystart, ny=ny, ly=ly, n=n, m=m, skip=0.0,
                length_weight=config.length_weight, types=types)
    if n and m:
        if n * m <= config.skip_samples:
            ii, jj = (g.ravel() for g in np.meshgrid(np.arange(n), np.arange(m), indexing="ij"))
        else:
            ii = rng.integers(0, n, config.skip_samples)
            jj = rng.integers(0, m, config.skip_samples)
        xr, yr = xstart[0] + ii, ystart[0] + jj
        cos = np.einsum("ij,ij->i", X[xr].astype(np.float64), Y[yr].astype(np.float64))
        costs = 2.0 * np.maximum(0.0, 1.0 - cos) / np.maximum(nx[xr] + ny[yr], 1e-6)
        if config.length_weight > 0:
            costs += config.length_weight * np.abs(lx[xr] - ly[yr])
        p.skip = float(np.quantile(costs, config.skip_quantile))
    return p


def _downsample(v: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sum consecutive pairs of rows (an odd last row alone), remove the mean, renormalise."""
    n = len(v)
    half = (n + 1) // 2
    out = v[0::2].astype(np.float64)
    out[: n // 2] += v[1::2]
    lens = lengths[0::2].copy()
    lens[: n // 2] += lengths[1::2] + 1.0
    if half > 1:
        out -= out.mean(axis=0)
    return _normalise_rows(out), lens


def _band(states_i: np.ndarray, states_j: np.ndarray, n: int, m: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row ``0..n`` the columns ``lo..hi`` within ``width`` cells of the path through the
    given states (fine coordinates, from (0, 0) to (n, m)): every bead's rectangle, widened by
    ``width`` rows and columns."""
    from scipy.ndimage import maximum_filter1d, minimum_filter1d  # loaded on use: SciPy is heavy or optional

    jmin = np.full(n + 1, m, np.int64)
    jmax = np.zeros(n + 1, np.int64)
    for k in range(len(states_i) - 1):
        i0, i1, j0, j1 = states_i[k], states_i[k + 1], states_j[k], states_j[k + 1]
        jmin[i0 : i1 + 1] = np.minimum(jmin[i0 : i1 + 1], j0)
        jmax[i0 : i1 + 1] = np.maximum(jmax[i0 : i1 + 1], j1)
    size = 2 * width + 1
    lo = np.maximum(minimum_filter1d(jmin, size, mode="nearest") - width, 0)
    hi = np.minimum(maximum_filter1d(jmax, size, mode="nearest") + width, m)
    lo[0] = 0
    hi[n] = m
    return lo.astype(np.int64), hi.astype(np.int64)


@dataclass
class _Path:
    moves: np.ndarray  # per bead: type index, T (deletion) or T+1 (insertion)
    ends_i: np.ndarray  # state after each bead
    ends_j: np.ndarray
    costs: np.ndarray  # DP cost of each bead
    skip: float
    cells: int  # DP cells filled (for the record)


def solve(problem: Problem, lo: np.ndarray | None = None, hi: np.ndarray | None = None) -> _Path:
    """Run the compiled DP on ``problem`` inside the band ``lo..hi`` (the whole matrix when
    not given) and return the best path, first bead first."""
    # numba kernels: compiled on first use, not at import
    from bimine.documents._align_kernel import backtrack, banded_dp

    n, m = problem.n, problem.m
    if lo is None:
        lo = np.zeros(n + 1, np.int64)
        hi = np.full(n + 1, m, np.int64)
    widths = hi - lo + 1
    off = np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.int64)
    ta = np.array([t[0] for t in problem.types], np.int64)
    tb = np.array([t[1] for t in problem.types], np.int64)
    xcut = problem.xcut if problem.xcut is not None else np.zeros(len(problem.X), np.uint8)
    ycut = problem.ycut if problem.ycut is not None else np.zeros(len(problem.Y), np.uint8)
    D, B = banded_dp(n, m, lo, hi, off, ta, tb, problem.X, problem.xstart, problem.nx, problem.lx,
                     problem.Y, problem.ystart, problem.ny, problem.ly, float(problem.skip),
                     float(problem.length_weight), xcut, ycut)
    moves, ei, ej = backtrack(n, m, lo, off, ta, tb, B)
    if len(moves) == 0 and (n or m):
        raise RuntimeError("alignment search band holds no path (a bug: please report it)")
    moves, ei, ej = moves[::-1].copy(), ei[::-1].copy(), ej[::-1].copy()
    cum = D[off[ei] - lo[ei] + ej]
    costs = np.diff(np.concatenate([[0.0], cum]))
    return _Path(moves=moves, ends_i=ei, ends_j=ej, costs=costs, skip=float(problem.skip), cells=int(widths.sum()))


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


def _coarse_band(xv: np.ndarray, xlen: np.ndarray, yv: np.ndarray, ylen: np.ndarray, config: AlignConfig,
                 depth: int) -> tuple[np.ndarray | None, np.ndarray | None, int]:
    """The search band for single vectors ``xv``/``yv`` at recursion depth ``depth``: ``None``
    (search everything) when they are short, else the path of the down-sampled pair (1:1
    beads and skips, itself banded by the level below) projected and widened; also the
    number of down-sampling levels used."""
    n, m = len(xv), len(yv)
    if n * m <= config.exact_cells or n <= 1 or m <= 1:
        return None, None, 0
    cx, cxl = _downsample(xv, xlen)
    cy, cyl = _downsample(yv, ylen)
    lo, hi, levels = _coarse_band(cx, cxl, cy, cyl, config, depth + 1)
    zero = np.zeros(1, np.int64)
    rng = np.random.default_rng([config.seed, depth + 1])
    coarse = solve(make_problem(cx, zero, cxl, len(cx), cy, zero, cyl, len(cy), [(1, 1)], config, rng), lo, hi)
    si = np.minimum(2 * np.concatenate([[0], coarse.ends_i]), n)
    sj = np.minimum(2 * np.concatenate([[0], coarse.ends_j]), m)
    lo, hi = _band(si, sj, n, m, config.band)
    return lo, hi, levels + 1


def level0_problem(src: Overlaps, tgt: Overlaps, config: AlignConfig) -> Problem:
    """The DP problem of the full-resolution documents: every bead type that fits."""
    types = [t for t in config.bead_types() if t[0] <= src.k and t[1] <= tgt.k]
    rng = np.random.default_rng([config.seed, 0])
    p = make_problem(src.vectors, src.start, src.lengths, src.n, tgt.vectors, tgt.start, tgt.lengths, tgt.n,
                     types, config, rng)
    p.xcut, p.ycut = src.cut_rows(), tgt.cut_rows()
    return p


def align_overlaps(src: Overlaps, tgt: Overlaps, config: AlignConfig | None = None) -> Alignment:
    """Align two embedded documents (see the module docstring)."""
    config = config or AlignConfig()
    if config.method == "two-pass":
        from bimine.documents.twopass import align_two_pass  # a cycle: twopass builds on this module

        return align_two_pass(src, tgt, config)
    n, m = src.n, tgt.n
    if n == 0 or m == 0:
        beads = [Bead((i,), (), 0.0) for i in range(n)] + [Bead((), (j,), 0.0) for j in range(m)]
        return Alignment(beads=beads, n_src=n, n_tgt=m, skip_cost=0.0, levels=0, cells=0)
    lo, hi, levels = _coarse_band(src.single(), src.lengths[:n], tgt.single(), tgt.lengths[:m], config, 0)
    p = level0_problem(src, tgt, config)
    path = solve(p, lo, hi)
    T = len(p.types)
    beads = []
    i = j = 0
    for mv, ei, ej, c in zip(path.moves, path.ends_i, path.ends_j, path.costs):
        a, b = (1, 0) if mv == T else (0, 1) if mv == T + 1 else p.types[mv]
        cost = float(c) / (a * b) if a and b else float(c)
        beads.append(Bead(tuple(range(i, int(ei))), tuple(range(j, int(ej))), cost))
        i, j = int(ei), int(ej)
    return Alignment(beads=beads, n_src=n, n_tgt=m, skip_cost=path.skip, levels=levels, cells=path.cells)


class Aligner:
    """Aligns document pairs with one loaded encoder (reused across pairs in batch mode)."""

    def __init__(self, encoder, config: AlignConfig | None = None) -> None:
        self.encoder = encoder
        self.config = config or AlignConfig()

    def embed(self, sentences: list[str], lang: str, progress=None) -> Overlaps:
        return embed_overlaps(sentences, self.encoder, lang, self.config.max_side, mode=self.config.overlaps,
                              progress=progress)

    def align(self, src: list[str], tgt: list[str], src_lang: str, tgt_lang: str, progress=None) -> Alignment:
        """Align two documents (one sentence per line); blank lines are paragraph breaks (see the
        module docstring), every line is in exactly one bead."""
        skeep, tkeep = text_lines(src), text_lines(tgt)
        ss, ts = [src[i] for i in skeep], [tgt[j] for j in tkeep]
        so = self.embed(ss, src_lang, progress)
        to = self.embed(ts, tgt_lang, progress)
        so.gaps, to.gaps = _gaps(skeep), _gaps(tkeep)
        attach_shared_tokens(ss, ts, so, to, self.config)
        inner = align_overlaps(so, to, self.config)
        out = with_blank_lines(inner, skeep, len(src), tkeep, len(tgt))
        out.chance_lines = chance_lines(inner, so, to, seed=self.config.seed)
        return out


CHANCE_QUANTILE = 0.99  #: a bead is "no closer than unrelated sentences" up to this quantile of their cosines
CHANCE_SAMPLES = 20_000  #: random sentence pairs the quantile is taken from
CHANCE_OFF_DIAGONAL = 0.1  #: ... each at least this far (in relative position) from the diagonal


def chance_lines(a: Alignment, src: Overlaps, tgt: Overlaps, *, seed: int = 42) -> int | None:
    """How many text lines of ``a`` (an alignment of ``src`` and ``tgt``'s rows, blank lines
    out) are in insertions or deletions, or in beads whose runs' cosine is not above the
    :data:`CHANCE_QUANTILE` of the cosines of random sentence pairs of the same two documents
    taken away from the diagonal (relative positions more than :data:`CHANCE_OFF_DIAGONAL`
    apart: in a translation the pairs near it are the translations themselves, a fortieth of
    all pairs in a 40-line document). The search always finds some path, so on two unrelated
    texts its beads are the best of chance pairs and most lines land here (unrelated NTREX texts
    of 40-360 lines: 74-100 % of them with the shipped model, both searches, 83-100 % with
    e5-small, two-pass), few in a translation (0-15 %; 6-11 % with a quarter of one side's lines
    deleted). Measured against the documents' own unrelated pairs, so it holds for any encoder's
    cosine scale (e5-small's unrelated sentences have cosines near 0.78). None when there are no
    such pairs (a document of one sentence)."""
    n, m = src.n, tgt.n
    skipped = sum(len(b.src) + len(b.tgt) for b in a.beads if not (b.src and b.tgt))
    if n == 0 or m == 0:
        return None
    rng = np.random.default_rng([seed, 55])
    if n * m <= CHANCE_SAMPLES:
        ii, jj = (g.ravel() for g in np.meshgrid(np.arange(n), np.arange(m), indexing="ij"))
    else:
        ii, jj = rng.integers(0, n, 2 * CHANCE_SAMPLES), rng.integers(0, m, 2 * CHANCE_SAMPLES)
    far = np.abs((ii + 0.5) / n - (jj + 0.5) / m) > CHANCE_OFF_DIAGONAL
    ii, jj = ii[far][:CHANCE_SAMPLES], jj[far][:CHANCE_SAMPLES]
    if not len(ii):
        return None
    x, y = src.single(), tgt.single()
    level = float(np.quantile(np.einsum("ij,ij->i", x[ii], y[jj], dtype=np.float64), CHANCE_QUANTILE))
    weak = 0
    for b in a.beads:
        if b.src and b.tgt and len(b.src) <= src.k and len(b.tgt) <= tgt.k:
            xr = src.start[len(b.src) - 1] + b.src[0]
            yr = tgt.start[len(b.tgt) - 1] + b.tgt[0]
            if float(np.dot(src.vectors[xr], tgt.vectors[yr])) <= level:
                weak += len(b.src) + len(b.tgt)
    return skipped + weak


def text_lines(sentences: list[str]) -> list[int]:
    """Numbers of the lines that hold text (not empty, not only white space)."""
    return [i for i, s in enumerate(sentences) if s.strip()]


def _gaps(keep: list[int]) -> np.ndarray:
    """Per kept line: whether blank lines separate it from the kept line before it."""
    k = np.asarray(keep, np.int64)
    return np.concatenate([[False], np.diff(k) > 1]) if len(k) else np.zeros(0, bool)


def with_blank_lines(a: Alignment, src_keep: list[int], n_src: int, tgt_keep: list[int], n_tgt: int) -> Alignment:
    """The alignment ``a`` of the text lines ``src_keep``/``tgt_keep`` of two documents of
    ``n_src``/``n_tgt`` lines, in the documents' own line numbers, each blank line put back
    as its own cost-0 deletion or insertion just before the next bead of its side."""
    out: list[Bead] = []
    si = ti = 0  # next line of each document not yet in a bead

    def blanks_until(s_end: int, t_end: int) -> None:
        nonlocal si, ti
        out.extend(Bead((i,), (), 0.0) for i in range(si, s_end))
        out.extend(Bead((), (j,), 0.0) for j in range(ti, t_end))
        si, ti = max(si, s_end), max(ti, t_end)

    for b in a.beads:
        s = tuple(src_keep[i] for i in b.src)
        t = tuple(tgt_keep[j] for j in b.tgt)
        if not (s or t) or any(side and side[-1] - side[0] != len(side) - 1 for side in (s, t)):
            raise RuntimeError(f"a bead spans a blank line: {s}:{t} (a bug: please report it)")
        blanks_until(s[0] if s else si, t[0] if t else ti)
        out.append(Bead(s, t, b.cost))
        si, ti = (s[-1] + 1 if s else si), (t[-1] + 1 if t else ti)
    blanks_until(n_src, n_tgt)
    return Alignment(beads=out, n_src=n_src, n_tgt=n_tgt, skip_cost=a.skip_cost, levels=a.levels, cells=a.cells,
                     blank_src=n_src - len(src_keep), blank_tgt=n_tgt - len(tgt_keep))


def write_alignment(path: str | os.PathLike, alignment: Alignment) -> None:
    """Write one bead per line, ``[i,j]:[k]:cost``, atomically."""
    atomic_lines(path, alignment.lines())


def write_aligned_tsv(path: str | os.PathLike, alignment: Alignment, src: list[str], tgt: list[str]) -> None:
    """Write the aligned text: a header ``src_lines<TAB>tgt_lines<TAB>cost<TAB>src<TAB>tgt``
    then one row per bead (line numbers 0-based and comma-separated, sentences joined by a
    space; an insertion or deletion has one empty side), atomically."""
    rows = ["src_lines\ttgt_lines\tcost\tsrc\ttgt"]
    for b in alignment.beads:
        s = " ".join(src[i].strip() for i in b.src).replace("\t", " ")
        t = " ".join(tgt[j].strip() for j in b.tgt).replace("\t", " ")
        rows.append(f"{','.join(map(str, b.src))}\t{','.join(map(str, b.tgt))}\t{b.cost:.6f}\t{s}\t{t}")
    atomic_lines(path, rows)


def atomic_lines(path: str | os.PathLike, lines: list[str]) -> None:
    """Write ``lines`` (each followed by a newline) to ``path`` atomically."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(line + "\n")
