"""Vecalign's search (Thompson & Koehn 2019), steps 2-4 of :mod:`bimine.documents.align`'s
description: the bead cost with its normalisers and length prior, the skip cost, and the dynamic
programme, exact on short documents and banded around the projected path of down-sampled
documents on long ones (``method="vecalign"``). The two-pass search builds its second pass on
:func:`solve` and :func:`level0_problem`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from bimine.documents.beads import AlignConfig, Alignment, Bead, Overlaps


def normalise_rows(v: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return (v / np.maximum(norms, 1e-12)).astype(np.float32)


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
    return normalise_rows(out), lens


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
class DPPath:
    """The best path of one DP run, first bead first."""

    moves: np.ndarray  # per bead: type index, T (deletion) or T+1 (insertion)
    ends_i: np.ndarray  # state after each bead
    ends_j: np.ndarray
    costs: np.ndarray  # DP cost of each bead
    skip: float
    cells: int  # DP cells filled (for the record)


def solve(problem: Problem, lo: np.ndarray | None = None, hi: np.ndarray | None = None) -> DPPath:
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
    return DPPath(moves=moves, ends_i=ei, ends_j=ej, costs=costs, skip=float(problem.skip), cells=int(widths.sum()))


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


def align_vecalign(src: Overlaps, tgt: Overlaps, config: AlignConfig) -> Alignment:
    """Align two embedded documents with Vecalign's search."""
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
