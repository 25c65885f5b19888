"""Training data: parallel corpora read, cleaned, featurised once, and batched by seed."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

import numpy as np

from bimine.errors import ConfigError
from bimine.langs import normalize_lang
from bimine.text.features import Featurizer, normalize_text
from bimine.text.io import read_parallel

log = logging.getLogger(__name__)


@dataclass
class CorpusSpec:
    """One parallel corpus: two aligned files (or a 2-column TSV when ``tgt`` is empty)."""

    src: str
    src_lang: str
    tgt_lang: str
    tgt: str | None = None
    max_pairs: int | None = None
    name: str | None = None


@dataclass
class Side:
    """Featurised sentences of one side: features of row i are ``ids[offsets[i]:offsets[i+1]]``."""

    texts: list[str]
    ids: np.ndarray
    offsets: np.ndarray
    text_ids: np.ndarray  # equal ids <=> equal normalised text

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Features of ``rows`` as a flat ``(ids, offsets)`` batch."""
        starts = self.offsets[rows]
        lens = self.offsets[rows + 1] - starts
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        pos = np.arange(offsets[-1], dtype=np.int64) + np.repeat(starts - offsets[:-1], lens)
        return self.ids[pos], offsets


@dataclass
class PairGroup:
    """All training pairs of one language pair, featurised."""

    src_lang: str
    tgt_lang: str
    src: Side
    tgt: Side
    hard: np.ndarray | None = None  # (n, M) target rows used as hard negatives, -1 = none
    sources: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.src.texts)


def _featurize(featurizer: Featurizer, texts: list[str], lang: str, chunk: int = 4096) -> Side:
    ids_parts, lens = [], []
    for i in range(0, len(texts), chunk):
        ids, off = featurizer.featurize(texts[i : i + chunk], lang)
        ids_parts.append(ids.astype(np.int32))
        lens.append(np.diff(off))
    ids = np.concatenate(ids_parts) if ids_parts else np.zeros(0, dtype=np.int32)
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    if lens:
        np.cumsum(np.concatenate(lens), out=offsets[1:])
    table: dict[str, int] = {}
    text_ids = np.fromiter(
        (table.setdefault(normalize_text(t), len(table)) for t in texts), dtype=np.int64, count=len(texts)
    )
    return Side(texts, ids.astype(np.int64), offsets, text_ids)


def load_groups(
    specs: list[CorpusSpec], featurizer: Featurizer, root: str, *, dedupe: bool = True
) -> list[PairGroup]:
    """Read every corpus, drop pairs with an empty side (counted, logged), de-duplicate exact
    duplicate pairs, and group by language pair."""
    by_pair: dict[tuple[str, str], tuple[list[str], list[str], list[str]]] = {}
    for spec in specs:
        sl, tl = normalize_lang(spec.src_lang), normalize_lang(spec.tgt_lang)
        src = os.path.join(root, os.path.expandvars(spec.src))
        tgt = os.path.join(root, os.path.expandvars(spec.tgt)) if spec.tgt else None
        xs, ys, names = by_pair.setdefault((sl, tl), ([], [], []))
        empty = kept = 0
        for x, y in read_parallel(src, tgt):
            if not x.strip() or not y.strip():
                empty += 1
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
        if empty:
            msg += f", skipped {empty} with an empty side"
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
            PairGroup(sl, tl, _featurize(featurizer, xs, sl), _featurize(featurizer, ys, tl), sources=names)
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
