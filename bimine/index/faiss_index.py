"""FAISS indexes driven by factory strings, and kNN search with bounded memory.

An index is described by a factory string kept in config ("Flat", "IVF4096,Flat",
"IVF4096,SQ8", "OPQ64,IVF16384,PQ64", "HNSW32", ...); ``"auto"`` picks one by corpus size.
All indexes use inner product, i.e. cosine similarity on the unit-norm embeddings.

Memory of ``knn_search`` (bytes), with n keys of dimension d, query batch b, k neighbours:

    index (Flat: 4 n d; SQ8: n d; PQm: n m; IVF adds 8 n for ids)
    + query batch: 4 b d  + results: 12 b k  + the (n_queries x k) outputs: 12 n_q k

so it grows with the keys' compressed size, never with the number of queries in memory at once.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from bimine.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IndexConfig:
    """factory: FAISS factory string or "auto"; nprobe: IVF lists visited per query;
    train_size: vectors sampled to train IVF/PQ (0 = 64 per list, at least 10,000);
    exact_below: "auto" uses an exact Flat index below this many keys; ef_search: HNSW's
    candidate list size at query time."""

    factory: str = "auto"
    nprobe: int = 16
    train_size: int = 0
    exact_below: int = 300_000
    ef_search: int = 128
    seed: int = 0


def auto_factory(n: int, d: int, exact_below: int = 300_000) -> str:
    """Exact search below ``exact_below`` keys; IVF with 8-bit scalar codes up to 20M keys
    (d bytes per vector); OPQ+PQ codes (64 bytes per vector) above."""
    if n < exact_below:
        return "Flat"
    nlist = 2 ** int(round(math.log2(max(1024, 4 * math.sqrt(n)))))
    if n <= 20_000_000:
        return f"IVF{nlist},SQ8"
    m = 64 if d % 64 == 0 else 32
    return f"OPQ{m},IVF{nlist},PQ{m}"


def _nlist(factory: str) -> int:
    for part in factory.split(","):
        if part.startswith("IVF"):
            digits = "".join(ch for ch in part[3:] if ch.isdigit())
            return int(digits) if digits else 0
    return 0


class KeyIndex:
    """A FAISS index over key vectors, filled shard by shard."""

    def __init__(self, d: int, n_total: int, cfg: IndexConfig = IndexConfig()) -> None:
        import faiss

        self.cfg = cfg
        self.factory = auto_factory(n_total, d, cfg.exact_below) if cfg.factory == "auto" else cfg.factory
        try:
            self.index = faiss.index_factory(d, self.factory, faiss.METRIC_INNER_PRODUCT)
        except RuntimeError as e:
            raise ConfigError(f"invalid FAISS factory string {self.factory!r}: {str(e).splitlines()[0]}") from None
        self.d = d
        self.n_total = n_total

    @property
    def needs_training(self) -> bool:
        return not self.index.is_trained

    def train_sample_size(self) -> int:
        if self.cfg.train_size:
            return self.cfg.train_size
        return max(10_000, 64 * _nlist(self.factory))

    def train(self, sample: np.ndarray) -> None:
        if not self.needs_training:
            return
        nlist = _nlist(self.factory)
        if nlist and len(sample) < nlist:
            raise ConfigError(f"index {self.factory} needs at least {nlist} training vectors, got {len(sample)}; "
                              "use fewer IVF lists or 'Flat'")
        self.index.train(np.ascontiguousarray(sample, dtype=np.float32))

    def add(self, x: np.ndarray) -> None:
        self.index.add(np.ascontiguousarray(x, dtype=np.float32))

    @property
    def ntotal(self) -> int:
        return self.index.ntotal

    def search(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        import faiss

        if _nlist(self.factory):
            faiss.extract_index_ivf(self.index).nprobe = self.cfg.nprobe
        if "HNSW" in self.factory:
            hnsw = faiss.downcast_index(self.index.index if hasattr(self.index, "chain") else self.index)
            hnsw.hnsw.efSearch = max(self.cfg.ef_search, 2 * k)
        return self.index.search(np.ascontiguousarray(q, dtype=np.float32), k)


def sample_rows(shards: Callable[[], Iterable[tuple[int, np.ndarray]]], n_total: int, size: int,
                seed: int) -> np.ndarray:
    """A uniform sample of ``size`` rows (without replacement), read shard by shard."""
    size = min(size, n_total)
    pick = np.sort(np.random.default_rng(seed).choice(n_total, size=size, replace=False))
    out = []
    for start, a in shards():
        sel = pick[(pick >= start) & (pick < start + len(a))] - start
        if len(sel):
            out.append(a[sel])
    return np.concatenate(out) if out else np.zeros((0, 0), np.float32)


def build_index(shards: Callable[[], Iterable[tuple[int, np.ndarray]]], n_total: int, d: int,
                cfg: IndexConfig = IndexConfig(), progress=None) -> KeyIndex:
    """Train (on a sample) and fill an index from ``shards()``, an iterable of (start, rows)."""
    idx = KeyIndex(d, n_total, cfg)
    if idx.needs_training:
        sample = sample_rows(shards, n_total, idx.train_sample_size(), cfg.seed)
        log.info(f"training {idx.factory} on {len(sample)} sampled vectors")
        if progress is not None:
            progress.set_postfix_str(f"training {idx.factory} on {len(sample)} vectors")
        idx.train(sample)
    for _, a in shards():
        idx.add(a)
        if progress is not None:
            progress.update(len(a))
    return idx


def knn_search(index: KeyIndex, queries: Iterable[tuple[int, np.ndarray]], n_queries: int, k: int,
               batch_size: int = 65536, progress=None) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` (scores, ids) for every query row, reading queries shard by shard."""
    k = min(k, index.ntotal)
    sims = np.empty((n_queries, k), dtype=np.float32)
    ids = np.empty((n_queries, k), dtype=np.int64)
    for start, a in queries:
        for i in range(0, len(a), batch_size):
            q = a[i : i + batch_size]
            s, j = index.search(q, k)
            sims[start + i : start + i + len(q)] = s
            ids[start + i : start + i + len(q)] = j
            if progress is not None:
                progress.update(len(q))
    return sims, ids


def array_shards(x: np.ndarray, size: int = 1_000_000) -> Callable[[], Iterator[tuple[int, np.ndarray]]]:
    """Shards of an in-memory array, in the form ``build_index``/``knn_search`` take."""
    def gen() -> Iterator[tuple[int, np.ndarray]]:
        for i in range(0, len(x), size):
            yield i, x[i : i + size]
    return gen
