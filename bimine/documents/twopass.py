"""Two-pass sentence alignment, Bertalign's method (Liu & Zhu 2022), written from its description.

1. **Anchors.** Each source sentence's ``top_k`` (3) nearest target sentences by cosine (exact
   search), kept inside a window around the diagonal (``max(window, window_share * longer
   document)`` sentences each side of ``j = i * m / n``), are candidate 1:1 links; the heaviest
   chain of links increasing on both sides (a link weighs its cosine) is the set of anchors
   (:func:`bimine.documents._twopass_kernel.anchor_chain`; the same path as Bertalign's first-pass
   DP over 1:1 beads and skips).
2. **Band.** Between two consecutive anchors ``(i0, j0)`` and ``(i1, j1)`` (DP states: the first
   ``i`` source and ``j`` target sentences aligned), the source rows ``i0 + 1 .. i1`` may use the
   target columns ``j0 - band .. j1 + band``; the last anchor is moved to ``(n, m)``.
3. **Beads.** A DP over the band with beads ``a:b`` (``a, b >= 1``, ``a + b <= pass2_total``,
   each side at most ``max_side``) and skips maximises the summed score: a bead scores the
   cosine of the joined runs' embeddings, less (``margin``) the mean cosine of each run to the
   sentences just outside the other run, times (``length_penalty``) ``log2(1 + short / long)`` of
   their character lengths (the target's scaled by the documents' length ratio), plus
   ``extra_sentence_score`` per sentence beyond 1:1; a skipped sentence scores ``skip_score``, the
   first of a run of skips on one side ``gap_open`` more (Bertalign: -0.1 a sentence, no opening).

A bead's reported cost is ``1 - its score`` (a skip: ``1 - skip``): lower is better, as for the
Vecalign method. Time and memory are linear in the band's area, which stays near-linear in the
documents' length when anchors are dense (they are: most sentences of a translation are 1:1).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bimine.documents.beads import AlignConfig, Alignment, Bead, Overlaps
from bimine.documents.vecalign import DPPath, level0_problem, solve


def candidate_links(xs: np.ndarray, ys: np.ndarray, top_k: int, window: int, share: float,
                    weight: str = "cosine") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(i, j, cosine)`` of each source sentence's ``top_k`` nearest targets inside the window
    around the diagonal, positive cosines only, sorted by ``i`` then ``j``."""
    import faiss  # loaded on use: FAISS is heavy or optional

    n, m = len(xs), len(ys)
    k = min(top_k, m)
    index = faiss.IndexFlatIP(ys.shape[1])
    index.add(np.ascontiguousarray(ys, np.float32))
    sims, idx = index.search(np.ascontiguousarray(xs, np.float32), k)
    ii = np.repeat(np.arange(n, dtype=np.int64), k)
    jj = idx.reshape(-1).astype(np.int64)
    ww = sims.reshape(-1).astype(np.float64)
    if weight != "cosine":  # the targets' own nearest sources
        back = faiss.IndexFlatIP(xs.shape[1])
        back.add(np.ascontiguousarray(xs, np.float32))
        bsims, bidx = back.search(np.ascontiguousarray(ys, np.float32), min(top_k, n))
    if weight == "margin":  # 001's margin (distance form): the cosine less the mean of both sides' top-k cosines
        fx = sims.mean(axis=1).astype(np.float64)
        fy = bsims.mean(axis=1).astype(np.float64)
        ww = ww - (fx[ii] + fy[np.maximum(jj, 0)]) / 2.0
    elif weight == "mutual":  # only mutual nearest neighbours, weighing their cosine
        ww = np.where(bidx[np.maximum(jj, 0), 0] == ii, ww, 0.0)
    win = max(window, int(max(n, m) * share))
    center = (ii * m) // max(n, 1)
    keep = (jj >= 0) & (ww > 0) & (np.abs(jj - center) <= win)
    ii, jj, ww = ii[keep], jj[keep], ww[keep]
    order = np.lexsort((jj, ii))
    return ii[order], jj[order], ww[order]


def anchors(xs: np.ndarray, ys: np.ndarray, config: AlignConfig) -> list[tuple[int, int]]:
    """The first pass: the anchor states ``(i + 1, j + 1)`` of the chosen 1:1 links."""
    from bimine.documents._twopass_kernel import (
        anchor_chain,  # numba kernels: compiled on first use, not at import
    )

    ci, cj, cw = candidate_links(xs, ys, config.top_k, config.window, config.window_share, config.anchor_weight)
    if len(ci) == 0:
        return []
    chosen = anchor_chain(ci, cj, cw, len(ys))
    return [(int(ci[c]) + 1, int(cj[c]) + 1) for c in chosen]


def band_from_anchors(points: list[tuple[int, int]], n: int, m: int, band: int) -> tuple[np.ndarray, np.ndarray]:
    """Per DP row ``0..n``, the columns ``lo..hi`` the second pass searches (see the module
    docstring); the last anchor is replaced by ``(n, m)`` where it is not already there."""
    # an anchor on the last row or column (other than (n, m)) would leave no room to reach (n, m)
    pts = [p for p in points if p[0] < n and p[1] < m] + [(n, m)]
    lo = np.zeros(n + 1, np.int64)
    hi = np.zeros(n + 1, np.int64)
    pi, pj = 0, 0
    for i1, j1 in pts:
        a, b = max(0, pj - band), min(m, j1 + band)
        lo[pi + 1 : i1 + 1] = a
        hi[pi + 1 : i1 + 1] = b
        pi, pj = i1, j1
    lo[0], hi[0] = (lo[1], hi[1]) if n else (0, m)
    lo[0] = 0
    # every row's range must meet the next one's, so that a path exists (a skip or a bead links them)
    for i in range(1, n + 1):
        if lo[i] > hi[i - 1]:
            lo[i] = hi[i - 1]
        if hi[i] < lo[i - 1]:
            hi[i] = lo[i - 1]
    hi[n] = m
    return lo, hi


def bead_types(total: int, max_side: int) -> list[tuple[int, int]]:
    """Bertalign's bead types: ``a, b >= 1``, ``a + b <= total``, each side at most ``max_side``,
    smallest first."""
    return sorted(((a, b) for a in range(1, max_side + 1) for b in range(1, max_side + 1) if a + b <= total),
                  key=lambda t: (t[0] + t[1], t))


def baselines(src: Overlaps, tgt: Overlaps, config: AlignConfig) -> tuple[np.ndarray, np.ndarray]:
    """Per overlap row of each side, the cosine a bead's score is measured from: 0 (Bertalign's),
    or (``baseline: random``) the row's mean cosine to ``norm_samples`` random single sentences of
    the other document, so that an unrelated bead scores about 0 whatever the encoder's cosines
    between unrelated texts."""
    if config.baseline != "random":
        return np.zeros(len(src.vectors)), np.zeros(len(tgt.vectors))
    rng = np.random.default_rng([config.seed, 7])
    xs, ys = src.single(), tgt.single()
    sy = ys[rng.integers(0, len(ys), config.norm_samples)]
    sx = xs[rng.integers(0, len(xs), config.norm_samples)]
    return ((src.vectors @ sy.T).mean(axis=1, dtype=np.float64), (tgt.vectors @ sx.T).mean(axis=1, dtype=np.float64))


def isolated_lines(src: Overlaps, tgt: Overlaps, config: AlignConfig) -> tuple[np.ndarray, np.ndarray]:
    """Per sentence of each side: whether its best cosine to any sentence of the other document is
    among the lowest ``isolated_quantile`` of its document's (a caption, a page header, OCR debris:
    a line with no counterpart anywhere)."""
    n, m = src.n, tgt.n
    if not (config.isolated_quantile > 0 and n and m):
        return np.zeros(n, bool), np.zeros(m, bool)
    xs, ys = src.single(), tgt.single()
    bx = np.concatenate([(xs[a:a + 2048] @ ys.T).max(axis=1) for a in range(0, n, 2048)])
    by = np.concatenate([(ys[a:a + 2048] @ xs.T).max(axis=1) for a in range(0, m, 2048)])
    return bx <= np.quantile(bx, config.isolated_quantile), by <= np.quantile(by, config.isolated_quantile)


class ScoreTerms(NamedTuple):
    """What :func:`bimine.documents._twopass_kernel.bead_score` reads besides the embeddings and
    the options: see :func:`score_terms`."""

    ratio: float
    bx: np.ndarray
    by: np.ndarray
    xt: np.ndarray
    yt: np.ndarray
    token_weight: float


def score_terms(src: Overlaps, tgt: Overlaps, config: AlignConfig) -> ScoreTerms:
    """The documents' length ratio (source characters over target characters), the rows'
    baselines (:func:`baselines`), and the token bit sets with their weight (none, and weight 0,
    unless both sides carry them and ``token_weight`` is set) that the second pass scores beads
    with."""
    sx = float(src.lengths[: src.n].sum())
    sy = float(tgt.lengths[: tgt.n].sum())
    bx, by = baselines(src, tgt, config)
    use_tokens = bool(config.token_weight) and src.tokens is not None and tgt.tokens is not None
    none = np.zeros((1, 1), np.uint64)
    return ScoreTerms(ratio=sx / sy if sy > 0 else 1.0, bx=bx, by=by, xt=src.tokens if use_tokens else none,
                      yt=tgt.tokens if use_tokens else none,
                      token_weight=float(config.token_weight) if use_tokens else 0.0)


def solve_band(src: Overlaps, tgt: Overlaps, config: AlignConfig, lo: np.ndarray,
               hi: np.ndarray) -> tuple[DPPath, list]:
    """The second pass over the band ``lo..hi``; returns the path and the bead types.

    A skipped sentence scores ``skip_score``, and the first of a run of skips on one side
    ``gap_open`` more (0: independent skips, Bertalign's); an isolated line
    (:func:`isolated_lines`) scores ``isolated_skip`` and opens a run for free."""
    # numba kernels: compiled on first use, not at import
    from bimine.documents._twopass_kernel import backtrack_affine, band_dp_affine

    n, m = src.n, tgt.n
    types = [t for t in bead_types(config.pass2_total, config.max_side) if t[0] <= src.k and t[1] <= tgt.k]
    ta = np.array([t[0] for t in types], np.int64)
    tb = np.array([t[1] for t in types], np.int64)
    widths = hi - lo + 1
    off = np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.int64)
    ix, iy = isolated_lines(src, tgt, config)
    skip_x = np.where(ix, config.isolated_skip, config.skip_score).astype(np.float64)
    skip_y = np.where(iy, config.isolated_skip, config.skip_score).astype(np.float64)
    open_x = np.where(ix, 0.0, float(config.gap_open))
    open_y = np.where(iy, 0.0, float(config.gap_open))
    t = score_terms(src, tgt, config)
    D, B, P = band_dp_affine(n, m, lo, hi, off, ta, tb, src.vectors, src.start, src.lengths.astype(np.float64),
                             tgt.vectors, tgt.start, tgt.lengths.astype(np.float64), t.ratio,
                             bool(config.margin), bool(config.length_penalty), skip_x, skip_y, open_x, open_y,
                             src.cut_rows(), tgt.cut_rows(), t.bx, t.by, float(config.extra_sentence_score),
                             t.xt, t.yt, t.token_weight, float(config.token_unmatched))
    moves, ei, ej, cum = backtrack_affine(n, m, lo, off, ta, tb, D, B, P)
    if len(moves) == 0 and (n or m):
        raise RuntimeError("alignment search band holds no path (a bug: please report it)")
    moves, ei, ej = moves[::-1].copy(), ei[::-1].copy(), ej[::-1].copy()
    costs = np.diff(np.concatenate([[0.0], cum[::-1]]))
    return DPPath(moves=moves, ends_i=ei, ends_j=ej, costs=costs, skip=float(config.skip_score),
                 cells=int(widths.sum())), types


def align_two_pass(src: Overlaps, tgt: Overlaps, config: AlignConfig) -> Alignment:
    """Align two embedded documents by the two passes of the module docstring."""
    n, m = src.n, tgt.n
    if n == 0 or m == 0:
        beads = [Bead((i,), (), 0.0) for i in range(n)] + [Bead((), (j,), 0.0) for j in range(m)]
        return Alignment(beads=beads, n_src=n, n_tgt=m, skip_cost=0.0, levels=0, cells=0)
    points = anchors(src.single(), tgt.single(), config)
    lo, hi = band_from_anchors(points, n, m, config.band2)
    if config.pass2_cost == "vecalign":  # Vecalign's cost and bead types, searched in the anchors' band

        p = level0_problem(src, tgt, config)
        path, types = solve(p, lo, hi), p.types
    else:
        path, types = solve_band(src, tgt, config, lo, hi)
    T = len(types)
    beads = []
    i = j = 0
    for mv, ei, ej, c in zip(path.moves, path.ends_i, path.ends_j, path.costs):
        a, b = (1, 0) if mv == T else (0, 1) if mv == T + 1 else types[mv]
        if config.pass2_cost == "vecalign":
            cost = float(c) / (a * b) if a and b else float(c)
        else:
            cost = float(1.0 + c)
        beads.append(Bead(tuple(range(i, int(ei))), tuple(range(j, int(ej))), cost))
        i, j = int(ei), int(ej)
    return Alignment(beads=beads, n_src=n, n_tgt=m, skip_cost=1.0 - config.skip_score, levels=0, cells=path.cells)
