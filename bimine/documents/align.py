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

import os

import numpy as np

from bimine.documents.beads import AlignConfig, Alignment, Bead, Overlaps
from bimine.documents.tokens import attach_shared_tokens
from bimine.documents.twopass import align_two_pass
from bimine.documents.vecalign import align_vecalign, normalise_rows
from bimine.outputs import atomic_path


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
            layers.append(normalise_rows(cum[s:] - cum[: n - s + 1]))
        vectors = np.concatenate(layers) if layers else np.zeros((0, dim), np.float32)
    return Overlaps(vectors=np.ascontiguousarray(vectors, np.float32), start=starts, lengths=lengths, n=n)


def align_overlaps(src: Overlaps, tgt: Overlaps, config: AlignConfig | None = None) -> Alignment:
    """Align two embedded documents (see the module docstring)."""
    config = config or AlignConfig()
    if config.method == "two-pass":
        return align_two_pass(src, tgt, config)
    return align_vecalign(src, tgt, config)


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
