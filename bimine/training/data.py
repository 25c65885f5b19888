"""Training data: parallel corpora read, cleaned, featurised once, and batched by seed."""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, field

import numpy as np

from bimine.data.recipe import source_pairs
from bimine.errors import ConfigError
from bimine.langs import normalize_lang
from bimine.text.features import Featurizer
from bimine.text.io import read_parallel
from bimine.text.normalize import TextNorm

log = logging.getLogger(__name__)


@dataclass
class CorpusSpec:
    """One parallel corpus: two aligned files (or a 2-column TSV when ``tgt`` is empty).
    ``skip_pairs``: the first pairs (lines) of the files are not read (held out from training).
    ``source_caps`` (a recipe's corpus, ``recipe`` its folder): ``{source: n}`` keeps the first
    ``n`` pairs that the recipe's ``source`` gave this language (its units), after the held-out
    ones; the other pairs are read as usual."""

    src: str
    src_lang: str
    tgt_lang: str
    tgt: str | None = None
    max_pairs: int | None = None
    name: str | None = None
    skip_pairs: int = 0
    source_caps: dict[str, int] = field(default_factory=dict)
    recipe: str | None = None


@dataclass
class Side:
    """Featurised sentences of one side: features of row i are ``ids[offsets[i]:offsets[i+1]]``.

    With ``ids`` None the features are computed when a batch asks for them (``featurizer``
    and ``lang`` given): the same ids, a quarter of the memory of millions of pairs."""

    texts: list[str]
    ids: np.ndarray | None
    offsets: np.ndarray | None
    text_ids: np.ndarray  # equal ids <=> equal normalised text
    featurizer: Featurizer | None = None
    lang: str | None = None

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, ...]:
        """Features of ``rows`` as a flat ``(ids, offsets)`` batch (a transformer's featuriser
        gives ``(ids, token_offsets, sentence_offsets)``)."""
        if self.ids is None:  # both featurisers give int64 ids
            return self.featurizer.featurize([self.texts[i] for i in rows], self.lang)
        starts = self.offsets[rows]
        lens = self.offsets[rows + 1] - starts
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        pos = np.arange(offsets[-1], dtype=np.int64) + np.repeat(starts - offsets[:-1], lens)
        return self.ids[pos].astype(np.int64), offsets


@dataclass
class PairGroup:
    """All training pairs of one language pair, featurised."""

    src_lang: str
    tgt_lang: str
    src: Side
    tgt: Side
    hard: np.ndarray | None = None  # (n, M) target rows used as hard negatives, -1 = none
    sources: list[str] = field(default_factory=list)
    teacher: np.ndarray | None = None  # (m, d) float16 teacher vectors of the English side of m rows
    teacher_index: np.ndarray | None = None  # (n,) row -> row of ``teacher``, -1 = none

    def __len__(self) -> int:
        return len(self.src.texts)


def _text_ids(texts: list[str], featurizer: Featurizer | None = None) -> np.ndarray:
    """One id per distinct text (normalised: two texts with the same id are never each other's
    negatives); with a featuriser's folds (``join_zero_width``, ``fold_variants``), texts that
    differ only in what it folds share an id, as they share their features."""
    fc = getattr(featurizer, "config", None)  # a DAN's FeatureConfig; the transformer's has no folds
    norm = TextNorm(join_zero_width=getattr(fc, "join_zero_width", False), fold_variants=getattr(fc, "fold_variants", False))
    table: dict[str, int] = {}
    return np.fromiter((table.setdefault(norm(t), len(table)) for t in texts), dtype=np.int64, count=len(texts))


def _featurize(featurizer: Featurizer, texts: list[str], lang: str, chunk: int = 4096, *,
               precompute: bool = True, text_ids: np.ndarray | None = None) -> Side:
    if not precompute:
        return Side(texts, None, None, _text_ids(texts, featurizer), featurizer, lang)
    ids_parts, lens = [], []
    for i in range(0, len(texts), chunk):
        ids, off = featurizer.featurize(texts[i : i + chunk], lang)
        ids_parts.append(ids.astype(np.int32))
        lens.append(np.diff(off))
    ids = np.concatenate(ids_parts) if ids_parts else np.zeros(0, dtype=np.int32)
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    if lens:
        np.cumsum(np.concatenate(lens), out=offsets[1:])
    text_ids = _text_ids(texts, featurizer) if text_ids is None else text_ids
    # int32 storage (half the memory of millions of featurised sentences); batches are int64
    return Side(texts, ids.astype(np.int32 if featurizer.config.rows < 2**31 else np.int64), offsets, text_ids)


def featurize_side(side: Side) -> Side:
    """``side`` with every sentence's features computed now (a side made with ``precompute``
    off, whose featuriser was completed after loading: a run's subword vocabulary)."""
    return _featurize(side.featurizer, side.texts, side.lang, text_ids=side.text_ids)


def load_groups(
    specs: list[CorpusSpec], featurizer: Featurizer, root: str, *, dedupe: bool = True, precompute: bool = True
) -> list[PairGroup]:
    """Read every corpus, drop pairs with an empty side (counted, logged), de-duplicate exact
    duplicate pairs, and group by language pair. ``precompute``: featurise every sentence
    now (fast batches, ~1.2 KB a pair) or when a batch needs it (see :class:`Side`)."""
    by_pair: dict[tuple[str, str], tuple[list[str], list[str], list[str]]] = {}
    source_sets: dict[tuple[str, str], dict] = {}  # (recipe, source) -> lang -> its pairs
    for spec in specs:
        sl, tl = normalize_lang(spec.src_lang), normalize_lang(spec.tgt_lang)
        src = os.path.join(root, os.path.expandvars(spec.src))
        tgt = os.path.join(root, os.path.expandvars(spec.tgt)) if spec.tgt else None
        xs, ys, names = by_pair.setdefault((sl, tl), ([], [], []))
        caps = []  # [source, its pairs of this language, cap, pairs of it read so far]
        if spec.source_caps and not spec.recipe:
            raise ConfigError(f"{spec.name or src}: source_caps are of a recipe's sources: give them as "
                              "data.recipes[].source_caps")
        for source, cap in spec.source_caps.items():
            if (spec.recipe, source) not in source_sets:
                source_sets[spec.recipe, source] = source_pairs(spec.recipe, source)
            caps.append([source, source_sets[spec.recipe, source].get(tl, set()), cap, 0])
        empty = kept = 0
        for n, (x, y) in enumerate(read_parallel(src, tgt)):
            if n < spec.skip_pairs:
                continue
            if not x.strip() or not y.strip():
                empty += 1
                continue
            over = False
            for c in caps:
                if (x, y) in c[1]:
                    c[3] += 1
                    over = over or c[3] > c[2]
            if over:
                continue
            xs.append(x)
            ys.append(y)
            kept += 1
            if spec.max_pairs and kept >= spec.max_pairs:
                break
        if kept == 0:
            raise ConfigError(f"{src}: no usable pairs (all {empty} pairs have an empty side)")
        names.append(spec.name or os.path.basename(src))
        msg = f"{spec.name or src}: {kept} pairs ({sl}-{tl})"
        if spec.skip_pairs:
            msg += f" after the first {spec.skip_pairs}, held out"
        if empty:
            msg += f", skipped {empty} with an empty side"
        for source, _, cap, seen in caps:
            if seen > cap:
                msg += f", {source} capped at {cap:,} ({seen - cap:,} of its pairs left out)"
        log.info(msg)
    groups = []
    for (sl, tl), (xs, ys, names) in sorted(by_pair.items()):
        if dedupe:
            seen: set[tuple[str, str]] = set()
            keep = [i for i, p in enumerate(zip(xs, ys)) if not (p in seen or seen.add(p))]
            if len(keep) < len(xs):
                log.info(f"{sl}-{tl}: removed {len(xs) - len(keep)} duplicate pairs")
            xs = [xs[i] for i in keep]
            ys = [ys[i] for i in keep]
        groups.append(
            PairGroup(sl, tl, _featurize(featurizer, xs, sl, precompute=precompute),
                      _featurize(featurizer, ys, tl, precompute=precompute), sources=names)
        )
    return groups


class BatchSchedule:
    """Deterministic batches: step ``s`` maps to the same (group, rows) for a given seed.

    Each epoch shuffles every group with ``default_rng([seed, epoch])``, cuts it into full
    batches of ``batch_size`` and shuffles the batches of all groups together, so every
    batch holds a single language pair. Resuming at step s needs no saved sampler state.
    """

    def __init__(self, sizes: list[int], batch_size: int, seed: int) -> None:
        self.sizes = sizes
        self.batch_size = batch_size
        self.seed = seed
        self.per_epoch = sum(n // batch_size for n in sizes)
        if self.per_epoch == 0:
            raise ConfigError(
                f"train.batch_size {batch_size} is larger than every language pair's data "
                f"({max(sizes)} pairs at most)"
            )
        self._epoch = -1
        self._batches: list[tuple[int, np.ndarray]] = []

    def __call__(self, step: int) -> tuple[int, np.ndarray]:
        epoch, i = divmod(step, self.per_epoch)
        if epoch != self._epoch:
            rng = np.random.default_rng([self.seed, epoch])
            batches = []
            for g, n in enumerate(self.sizes):
                perm = rng.permutation(n)
                nb = n // self.batch_size
                batches += [(g, b) for b in perm[: nb * self.batch_size].reshape(nb, self.batch_size)]
            order = rng.permutation(len(batches))
            self._batches = [batches[j] for j in order]
            self._epoch = epoch
        return self._batches[i]


def temperature_probs(sizes: list[int], temperature: float, weights: list[float] | None = None) -> np.ndarray:
    """Sampling probability of each group: ``p_g ∝ w_g * n_g ** (1 / T)``. T = 1 samples in
    proportion to the data; larger T flattens towards uniform (multilingual BERT/XLM-R use
    T ≈ 1.4-3.3 in this form, LaBSE-style models up to T = 5). ``weights`` (default 1 each)
    raise or lower chosen groups on top of that."""
    n = np.asarray(sizes, dtype=np.float64)
    if temperature <= 0 or not np.isfinite(temperature):
        raise ConfigError(f"sampling temperature must be a number > 0, got {temperature}")
    w = n ** (1.0 / temperature)
    if weights is not None:
        wt = np.asarray(weights, dtype=np.float64)
        if wt.shape != n.shape or not np.all(np.isfinite(wt)) or np.any(wt <= 0):
            raise ConfigError(f"sampling weights must be numbers > 0, one per group, got {list(weights)}")
        w = w * wt
    return w / w.sum()


def cap_passes(probs: np.ndarray, sizes: list[int], batch_size: int, steps: int,
               max_passes: float) -> tuple[np.ndarray, np.ndarray]:
    """``probs`` lowered so that no group is expected to be read more than ``max_passes`` times
    in ``steps`` batches: a group of ``n`` pairs gives ``min(batch_size, n)`` of them a draw, so
    its probability is capped at ``max_passes * n / (steps * min(batch_size, n))``. What the
    capped groups give up goes to the others in proportion to their own probability (repeated
    until none is over its cap). Returns the probabilities and which groups the cap holds.
    Raises ``ConfigError`` when the caps cannot add up to one (too few pairs in all for that many
    steps)."""
    if isinstance(max_passes, bool) or not isinstance(max_passes, (int, float)) or not 0 < max_passes < math.inf:
        raise ConfigError(f"max_passes must be a number > 0, got {max_passes!r}")
    n = np.asarray(sizes, dtype=np.float64)
    p0 = np.asarray(probs, dtype=np.float64)
    if steps < 1 or batch_size < 1 or np.any(n < 1) or p0.shape != n.shape:
        raise ValueError("cap_passes needs steps and batch_size >= 1 and one probability for each non-empty group")
    cap = max_passes * n / (steps * np.minimum(batch_size, n))
    if cap.sum() < 1.0:
        raise ConfigError(f"max_passes {max_passes}: {steps} steps of {batch_size} pairs need more passes over "
                          f"the {int(n.sum())} training pairs than that (set it to at least "
                          f"{math.ceil(100 * max_passes / cap.sum()) / 100:.2f})")
    p = p0.copy()
    capped = np.zeros(len(n), dtype=bool)
    while True:
        over = ~capped & (p > cap)
        if not over.any():
            break
        capped |= over
        p[capped] = cap[capped]
        rest = ~capped
        p[rest] = p0[rest] * (1.0 - p[capped].sum()) / p0[rest].sum()
    return p / p.sum(), capped


class TemperatureSchedule:
    """Deterministic batches with language-balanced sampling: step ``s`` draws group
    ``g ~ p`` (:func:`temperature_probs`, capped by :func:`cap_passes` with ``max_passes``)
    and that group's next batch.

    The group of every step comes from one ``default_rng([seed, 1])`` draw of ``steps``
    values, so step ``s`` is known without replaying the run (resumption needs no saved
    state). A group is read in epochs of its own: the ``k``-th batch drawn from group ``g``
    is slice ``k mod nb`` of ``default_rng([seed, 2, g, k // nb]).permutation(n_g)``, with
    ``nb = n_g // batch`` (at least 1); a group smaller than the batch gives batches of all
    its pairs.
    """

    def __init__(self, sizes: list[int], batch_size: int, seed: int, steps: int, temperature: float,
                 weights: list[float] | None = None, max_passes: float | None = None) -> None:
        self.sizes = sizes
        self.batch_size = batch_size
        self.seed = seed
        self.probs = temperature_probs(sizes, temperature, weights)
        self.capped = np.zeros(len(sizes), dtype=bool)  # the groups max_passes holds at its cap
        if max_passes is not None:
            self.probs, self.capped = cap_passes(self.probs, sizes, batch_size, steps, max_passes)
        rng = np.random.default_rng([seed, 1])
        self.groups = rng.choice(len(sizes), size=steps, p=self.probs).astype(np.int32)
        # k of step s: how many earlier steps drew the same group
        self.k = np.zeros(steps, dtype=np.int64)
        order = np.argsort(self.groups, kind="stable")
        g_sorted = self.groups[order]
        starts = np.searchsorted(g_sorted, np.arange(len(sizes)))
        self.k[order] = np.arange(steps) - starts[g_sorted]
        self._perm: dict[tuple[int, int], np.ndarray] = {}

    def __call__(self, step: int) -> tuple[int, np.ndarray]:
        if step >= len(self.groups):
            raise IndexError(f"step {step} is past the schedule's {len(self.groups)} steps")
        g, k = int(self.groups[step]), int(self.k[step])
        n = self.sizes[g]
        b = min(self.batch_size, n)
        nb = max(1, n // b)
        epoch, i = divmod(k, nb)
        key = (g, epoch)
        perm = self._perm.get(key)
        if perm is None:
            if len(self._perm) > 4 * len(self.sizes):
                self._perm.clear()
            perm = self._perm[key] = np.random.default_rng([self.seed, 2, g, epoch]).permutation(n)
        return g, perm[i * b : (i + 1) * b]
