"""FAISS indexes driven by factory strings, and kNN search with bounded memory.

An index is described by a factory string kept in config ("Flat", "IVF4096,Flat",
"IVF4096,SQ8", "OPQ64,IVF16384,PQ64", "HNSW32", ...); ``"auto"`` picks one by corpus size.
All indexes use inner product, i.e. cosine similarity on the unit-norm embeddings.

Memory of ``knn_search`` (bytes), with n keys of dimension d, query batch b, k neighbours:

    index (Flat: 4 n d; SQfp16: 2 n d; SQ8: n d; PQm: n m; PQmx4fs: n m / 2;
           Refine(X) adds X's codes; IVF adds 8 n for ids)
    + query batch: 4 b d  + results: 12 b k k_factor  + the (n_queries x k) outputs: 12 n_q k

so it grows with the keys' compressed size, never with the number of queries in memory at once.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from bimine.config import bounds, check_fields
from bimine.cores import usable_cores
from bimine.errors import ConfigError, OptionError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IndexConfig:
    """factory: FAISS factory string or "auto"; nprobe: IVF lists visited per query (0 = one
    3/32 of the lists, measured for recall@4 >= 0.95 at 1M keys); k_factor: a ``Refine(...)`` index re-scores k * k_factor
    candidates of its compressed search with the finer codes; train_size: vectors sampled to
    train IVF/PQ (0 = 40 per list, at least 10,000); exact_below: "auto" uses an exact Flat
    index below this many keys; ef_search: HNSW's candidate list size at query time."""

    factory: str = "auto"
    nprobe: int = field(default=0, metadata=bounds(min=0))
    k_factor: int = field(default=32, metadata=bounds(min=1))
    train_size: int = field(default=0, metadata=bounds(min=0))
    exact_below: int = field(default=300_000, metadata=bounds(min=0))
    ef_search: int = field(default=128, metadata=bounds(min=1))
    seed: int = field(default=0, metadata=bounds(min=0))

    def __post_init__(self) -> None:
        check_fields(self)


def fastscan_pq_m(d: int) -> int:
    """Sub-quantizers for 4-bit fast-scan PQ: the even divisor of d nearest d/3 (128 for 384)."""
    divs = [m for m in range(2, d + 1, 2) if d % m == 0]
    return min(divs, key=lambda m: (abs(m - d / 3), m)) if divs else d


def auto_factory(n: int, d: int, exact_below: int = 300_000) -> str:
    """Exact search below ``exact_below`` keys. Above, IVF (about 4 sqrt(n) lists) scanned with
    4-bit fast-scan PQ codes (d/3 sub-quantizers), whose best k * k_factor candidates are
    re-scored with finer codes: float16 up to 5M keys (2 d bytes per vector), 8-bit above
    (d bytes). Above 20M, OPQ+PQ codes of 64 bytes per vector without re-scoring (lower recall).
    Measured at 1M x 1M (docs/benchmarks.md): IVF+SQ8 at 16 probes gave recall@4 0.78;
    this choice with the default nprobe (3/32 of the lists) 0.95 or more."""
    if n < exact_below:
        return "Flat"
    nlist = 2 ** int(round(math.log2(max(1024, 4 * math.sqrt(n)))))
    if n <= 20_000_000:
        refine = "SQfp16" if n <= 5_000_000 else "SQ8"
        return f"IVF{nlist},PQ{fastscan_pq_m(d)}x4fs,Refine({refine})"
    m = 64 if d % 64 == 0 else 32
    return f"OPQ{m},IVF{nlist},PQ{m}"


def nlist_of(factory: str) -> int:
    """IVF lists of a factory string: the digits right after "IVF" ("IVF4096_HNSW32" -> 4096)."""
    for part in factory.split(","):
        if part.startswith("IVF"):
            m = re.match(r"\d+", part[3:])
            return int(m.group()) if m else 0
    return 0


def effective_nprobe(factory: str, nprobe: int) -> int:
    """IVF lists visited per query: ``nprobe`` as configured (at most the number of lists), or
    for 0 the default, 3/32 of the lists (docs/decisions.md); 0 for an index without lists."""
    nlist = nlist_of(factory)
    return min(nlist, nprobe or max(1, 3 * nlist // 32))


def resolve_factory(cfg: IndexConfig, n: int, d: int) -> str:
    """The factory string ``cfg`` asks for, with "auto" resolved for n keys of dimension d."""
    return auto_factory(n, d, cfg.exact_below) if cfg.factory == "auto" else cfg.factory


_FAISS_WHERE = re.compile(r"Error in .*? at \S+:\d+: (?:Error: '(.*?)' failed(?:: )?)?(.*)", re.S)


def faiss_message(e: BaseException) -> str:
    """The reason in a FAISS exception, without the C++ signature, source file and line it
    quotes (``Error in void faiss::ProductQuantizer::set_derived_values() at
    /project/faiss/impl/ProductQuantizer.cpp:64: Error: '!(d % M == 0)' failed: The dimension
    ...`` becomes ``The dimension ...``); the failed condition where no reason is given."""
    text = str(e).strip()
    m = _FAISS_WHERE.search(text)
    if not m:
        return text.splitlines()[0] if text else type(e).__name__
    reason = m.group(2).strip().splitlines()[0] if m.group(2).strip() else ""
    return reason or f"the check {m.group(1)!r} failed"


SEARCH_BYTES_PER_CANDIDATE = 12  # FAISS's distance (float32) and label (int64) of each candidate of a query


def search_candidates(factory: str, cfg: IndexConfig, k: int, n_keys: int) -> int:
    """Candidates a search keeps per query: ``k``, or for an index that re-scores (``Refine``,
    ``RFlat``) ``k * k_factor``, never more than the keys there are (FAISS sized its arrays for
    ``k * k_factor`` even beyond them: :meth:`KeyIndex.search` caps it, with the same result)."""
    k = max(1, min(k, n_keys))
    if "Refine(" in factory or "RFlat" in factory:
        return min(k * cfg.k_factor, max(n_keys, k))
    return k


def check_search_memory(cfg: IndexConfig, k: int, n_keys: int, d: int, *, threads: int | None = None,
                        available: int | None = None) -> None:
    """Refuse, in one line and before FAISS sees them, search settings whose arrays cannot fit
    in memory: each of ``threads`` (default one per core) searches :data:`SEARCH_CHUNK` queries
    at a time, with :func:`search_candidates` candidates each. ``--k-factor 1000000000``
    ended in ``MemoryError: std::bad_alloc`` deep in FAISS (issue 72 §7). Half of the memory
    available now is the limit."""
    from bimine.cores import available_memory

    factory = resolve_factory(cfg, n_keys, d)
    cand = search_candidates(factory, cfg, k, n_keys)
    need = (threads or usable_cores()) * SEARCH_CHUNK * cand * SEARCH_BYTES_PER_CANDIDATE
    limit = (available if available is not None else available_memory()) // 2
    if need <= limit:
        return
    per = (threads or usable_cores()) * SEARCH_CHUNK * SEARCH_BYTES_PER_CANDIDATE
    most = max(1, limit // per)
    if cand > k:
        raise OptionError(f"--k-factor {cfg.k_factor}: the search would keep k x k-factor = {cand:,} candidates per "
                          f"query, {need / 2**30:,.1f} GiB for its {SEARCH_CHUNK:,}-query batches, more than half "
                          f"of the {2 * limit / 2**30:,.1f} GiB available; use at most --k-factor "
                          f"{max(1, most // max(1, k))}")
    raise OptionError(f"-k {k}: the search would keep {cand:,} neighbours per query, {need / 2**30:,.1f} GiB for its "
                      f"{SEARCH_CHUNK:,}-query batches, more than half of the {2 * limit / 2**30:,.1f} GiB available; "
                      f"use at most -k {most}")


class KeyIndex:
    """A FAISS index over key vectors, filled shard by shard."""

    def __init__(self, d: int, n_total: int, cfg: IndexConfig = IndexConfig()) -> None:
        import faiss  # loaded on use: FAISS is heavy or optional

        self.cfg = cfg
        self.factory = resolve_factory(cfg, n_total, d)
        try:
            self.index = faiss.index_factory(d, self.factory, faiss.METRIC_INNER_PRODUCT)
        except RuntimeError as e:
            raise ConfigError(f"invalid FAISS factory string {self.factory!r}: {faiss_message(e)}") from None
        self.d = d
        self.n_total = n_total

    @property
    def needs_training(self) -> bool:
        return not self.index.is_trained

    def train_sample_size(self) -> int:
        if self.cfg.train_size:
            return self.cfg.train_size
        return max(10_000, 40 * nlist_of(self.factory))

    def train(self, sample: np.ndarray) -> None:
        if not self.needs_training:
            return
        nlist = nlist_of(self.factory)
        if nlist and len(sample) < nlist:
            raise ConfigError(f"index {self.factory} needs at least {nlist} training vectors, got {len(sample)}; "
                              "use fewer IVF lists or 'Flat'")
        # one thread: k-means' assignments come from BLAS products whose last bits depend on
        # the threads, and a flipped assignment moves a centroid (the same training on any machine)
        with one_faiss_thread():
            try:
                self.index.train(np.ascontiguousarray(sample, dtype=np.float32))
            except RuntimeError as e:
                raise ConfigError(f"index {self.factory}: FAISS cannot train it on {len(sample):,} vectors: "
                                  f"{faiss_message(e)}; choose a smaller index or 'Flat'") from None

    def add(self, x: np.ndarray) -> None:
        self.index.add(np.ascontiguousarray(x, dtype=np.float32))

    def copy(self) -> KeyIndex:
        """An independent copy (trained, holding what was added so far)."""
        import faiss  # loaded on use: FAISS is heavy or optional

        new = KeyIndex.__new__(KeyIndex)
        new.__dict__.update(self.__dict__)
        new.index = faiss.clone_index(self.index)
        return new

    def to_bytes(self) -> np.ndarray:
        """The index (trained, with what was added) as FAISS's own serialisation, a uint8 array
        that can travel to another process; :meth:`from_bytes` reads it back."""
        import faiss  # loaded on use: FAISS is heavy or optional

        return faiss.serialize_index(self.index)

    @classmethod
    def from_bytes(cls, data: np.ndarray, cfg: IndexConfig, factory: str, n_total: int) -> KeyIndex:
        import faiss  # loaded on use: FAISS is heavy or optional

        new = cls.__new__(cls)
        new.cfg, new.factory, new.n_total = cfg, factory, n_total
        new.index = faiss.deserialize_index(np.asarray(data, dtype=np.uint8))
        new.d = new.index.d
        return new

    @property
    def refines(self) -> bool:
        """Whether the index re-scores its candidates with finer codes ("...,Refine(X)", "RFlat")."""
        import faiss  # loaded on use: FAISS is heavy or optional

        return isinstance(self.index, faiss.IndexRefine)

    @property
    def nprobe(self) -> int:
        """IVF lists visited per query (see :func:`effective_nprobe`)."""
        return effective_nprobe(self.factory, self.cfg.nprobe)

    @property
    def ntotal(self) -> int:
        return self.index.ntotal

    def search(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        import faiss  # loaded on use: FAISS is heavy or optional

        if nlist_of(self.factory):
            ivf = faiss.extract_index_ivf(self.index)
            ivf.nprobe = self.nprobe
            quantizer = faiss.downcast_index(ivf.quantizer)
            if isinstance(quantizer, faiss.IndexHNSW):  # "IVF4096_HNSW32,...": probe lists found by HNSW
                quantizer.hnsw.efSearch = max(self.cfg.ef_search, 2 * self.nprobe)
        elif "HNSW" in self.factory:
            hnsw = faiss.downcast_index(self.index.index if hasattr(self.index, "chain") else self.index)
            hnsw.hnsw.efSearch = max(self.cfg.ef_search, 2 * k)
        if self.refines:  # no more candidates than keys: the same result, arrays of the keys' size at most
            self.index.k_factor = max(1, min(self.cfg.k_factor, -(-self.index.ntotal // max(1, k))))
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


def train_index(shards, n_total: int, d: int, cfg: IndexConfig, progress=None) -> KeyIndex:
    """An empty index, trained on a sample of ``shards()`` if its factory needs training."""
    idx = KeyIndex(d, n_total, cfg)
    if idx.needs_training:
        sample = sample_rows(shards, n_total, idx.train_sample_size(), cfg.seed)
        log.info(f"training {idx.factory} on {len(sample)} sampled vectors")
        if progress is not None:
            progress.set_postfix_str(f"training {idx.factory} on {len(sample)} vectors")
        idx.train(sample)
    return idx


def build_index(shards: Callable[[], Iterable[tuple[int, np.ndarray]]], n_total: int, d: int,
                cfg: IndexConfig = IndexConfig(), progress=None, trained: KeyIndex | None = None) -> KeyIndex:
    """Train (on a sample) and fill one index from ``shards()``, an iterable of (start, rows).

    With ``trained`` (an empty trained index of the same factory), fill a copy of it instead
    of training again: the two directions of a mining run share one training."""
    idx = trained.copy() if trained is not None else train_index(shards, n_total, d, cfg, progress)
    for _, a in shards():
        idx.add(a)
        if progress is not None:
            progress.update(len(a))
    return idx


def build_sharded_index(shards: Callable[[], Iterable[tuple[int, np.ndarray]]], n_total: int, d: int,
                        cfg: IndexConfig = IndexConfig(), progress=None, trained: KeyIndex | None = None,
                        threads: int | None = None) -> ShardedIndex:
    """As :func:`build_index`, but each shard of ``shards()`` in its own copy of the one trained
    index, filled on one FAISS thread (``threads`` shards at once): the layout and arithmetic
    of the Ray executor, where a task fills each shard, so mining gives the same bytes
    whichever executor and however many cores run it (see :func:`search_stable`)."""
    base = trained if trained is not None else train_index(shards, n_total, d, cfg, progress)
    parts: list[KeyIndex] = []
    offsets: list[int] = []
    threads = threads or usable_cores()

    def fill(a: np.ndarray) -> KeyIndex:
        idx = base.copy()
        with one_faiss_thread():
            idx.add(a)
        if progress is not None:
            progress.update(len(a))
        return idx

    with ThreadPoolExecutor(threads, thread_name_prefix="bimine-index") as pool:
        pending: list = []
        for start, a in shards():
            offsets.append(start)
            pending.append(pool.submit(fill, a))
            if len(pending) >= threads:  # at most `threads` shards of vectors in memory
                parts.append(pending.pop(0).result())
        parts += [f.result() for f in pending]
    if not parts:  # no keys: an empty index answers "no neighbour"
        parts, offsets = [base.copy()], [0]
    return ShardedIndex(parts, offsets)


def train_shared(sides: list[tuple[Callable[[], Iterable[tuple[int, np.ndarray]]], int]], d: int,
                 cfg: IndexConfig) -> KeyIndex | None:
    """One empty index trained on an equal sample of every side, for indexes over each of them
    (both sides live in one embedding space). None when the sides need different factories
    (``auto`` by size) or the factory needs no training."""
    if len({resolve_factory(cfg, n, d) for _, n in sides}) > 1:
        return None
    idx = KeyIndex(d, sides[0][1], cfg)
    if not idx.needs_training:
        return None
    size = idx.train_sample_size()
    parts = [sample_rows(sh, n, size // len(sides) + (i < size % len(sides)), cfg.seed + i)
             for i, (sh, n) in enumerate(sides)]
    sample = np.concatenate([p for p in parts if len(p)])
    log.info(f"training {idx.factory} on {len(sample)} vectors sampled from both sides")
    idx.train(sample)
    return idx


SEARCH_CHUNK = 8192  # query rows searched by one thread at a time (see knn_search)


@contextmanager
def one_faiss_thread():
    """FAISS (and its BLAS) on one thread in the calling thread, as before afterwards."""
    import faiss  # loaded on use: FAISS is heavy or optional

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


class ShardedIndex:
    """Key shards, each in its own index (copies of one trained index), searched together:
    a query's top-k is the exact merge of every shard's top-k (:func:`merge_topk`)."""

    def __init__(self, parts: list[KeyIndex], offsets: list[int]) -> None:
        self.parts, self.offsets = parts, offsets

    @property
    def ntotal(self) -> int:
        return sum(p.ntotal for p in self.parts)

    @property
    def factory(self) -> str:
        return self.parts[0].factory  # every part is a copy of one index (at least one part)

    @property
    def nprobe(self) -> int:
        return self.parts[0].nprobe

    def search(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        return search_shards(self.parts, self.offsets, q, k)


def search_stable(index: KeyIndex | ShardedIndex, q: np.ndarray, k: int, *, threads: int | None = None,
                  progress=None) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` of the rows of ``q`` in chunks of :data:`SEARCH_CHUNK` rows, each chunk searched
    on one thread (``threads`` chunks at once; default one per core).

    FAISS's scores depend at the last bit on the shape of its BLAS products and on how they
    are split between threads (measured: 3,074 of 20,000 queries got other float32 scores with
    1 and 2 threads), so a search run on another machine, another core count or in a Ray task
    would rank near-ties differently. Fixed chunks on one thread each give the same bytes
    everywhere (the same CPU kind assumed), as fast as FAISS's own threads (measured equal on
    2 cores)."""
    threads = threads or usable_cores()
    chunks = [(i, min(i + SEARCH_CHUNK, len(q))) for i in range(0, len(q), SEARCH_CHUNK)]

    def one(c: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        with one_faiss_thread():
            out = index.search(q[c[0] : c[1]], k)
        if progress is not None:
            progress.update(c[1] - c[0])
        return out

    # in worker threads even for one: this thread waits, so Ctrl-C stops the search at once (it
    # took 19.5 s, the queued chunks searched first, issue 72 §7); the chunks at work are left
    # to end with the process (a command exits at once; in Python, in the background)
    pool = ThreadPoolExecutor(max(1, min(threads, len(chunks))), thread_name_prefix="bimine-knn")
    try:
        res = list(pool.map(one, chunks))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    if not res:
        return np.zeros((0, k), np.float32), np.zeros((0, k), np.int64)
    return np.concatenate([r[0] for r in res]), np.concatenate([r[1] for r in res])


def knn_search(index: KeyIndex | ShardedIndex, queries: Iterable[tuple[int, np.ndarray]], n_queries: int, k: int,
               progress=None, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` (scores, ids) for every query row, reading queries shard by shard, each
    shard searched with :func:`search_stable` (the same bytes for any number of threads)."""
    k = min(k, index.ntotal)
    sims = np.empty((n_queries, k), dtype=np.float32)
    ids = np.empty((n_queries, k), dtype=np.int64)
    for start, a in queries:
        s, j = search_stable(index, a, k, threads=threads, progress=progress)
        sims[start : start + len(a)] = s
        ids[start : start + len(a)] = j
    return sims, ids


def array_shards(x: np.ndarray, size: int = 1_000_000) -> Callable[[], Iterator[tuple[int, np.ndarray]]]:
    """Shards of an in-memory array, in the form ``build_index``/``knn_search`` take."""
    def gen() -> Iterator[tuple[int, np.ndarray]]:
        for i in range(0, len(x), size):
            yield i, x[i : i + size]
    return gen


def merge_topk(parts: Iterable[tuple[np.ndarray, np.ndarray, int]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` of the union of per-key-shard results: ``parts`` holds, for each key
    shard, its ``(sims, local ids, offset of the shard's first key)`` for the same queries.
    Ids become global (``offset + local``; FAISS's -1 for "no neighbour" stays -1 and sorts
    last); the order is by similarity, ties by the smaller global id, so the result does not
    depend on how the keys were sharded. When every shard answered its own top-``k`` from
    the same trained quantiser and codes, this equals one index's top-``k`` over all keys
    (what stopes does for indexes too large for one machine)."""
    sims_l, ids_l = [], []
    for s, i, off in parts:
        sims_l.append(np.asarray(s, np.float32))
        ids_l.append(np.where(i >= 0, np.asarray(i, np.int64) + off, -1))
    sims = np.concatenate(sims_l, axis=1)
    ids = np.concatenate(ids_l, axis=1)
    missing = ids < 0
    key_s = np.where(missing, np.inf, -sims)  # ascending = best first; missing last
    key_i = np.where(missing, np.iinfo(np.int64).max, ids)
    order = np.lexsort((key_i, key_s), axis=1)[:, :k]
    return np.take_along_axis(sims, order, 1), np.take_along_axis(ids, order, 1)


def shard_offsets(shards: list[np.ndarray]) -> list[int]:
    """The global id of each key shard's first key."""
    return [int(x) for x in np.cumsum([0] + [len(a) for a in shards])[:-1]]


def search_shards(indexes: Iterable[KeyIndex], offsets: list[int], queries: np.ndarray, k: int,
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``queries`` against each key shard's index in turn (an iterable: a Ray task loads one at
    a time), the lists merged exactly with :func:`merge_topk`."""
    return merge_topk(((*idx.search(queries, k), off) for idx, off in zip(indexes, offsets)), k)


def sharded_knn(trained: KeyIndex, key_shards: list[np.ndarray], queries: list[np.ndarray], k: int,
                ) -> tuple[np.ndarray, np.ndarray]:
    """kNN as it runs across machines (stopes' layout), here in one process: every key shard
    gets its own copy of the ``trained`` (empty) index, every query shard is searched against
    every key shard, and the per-shard lists are merged exactly. The same arrays as
    :func:`bimine.distributed.ray_executor.sharded_knn`; equals one index over all keys
    searched with the same quantiser, up to the order of tied scores, for indexes without a
    ``Refine`` stage (a sharded Refine re-ranks more candidates than one index)."""
    index = build_sharded_index(array_shards_list(key_shards), sum(len(a) for a in key_shards),
                                trained.d, trained.cfg, trained=trained)
    return knn_search(index, array_shards_list(queries)(), sum(len(q) for q in queries), k)


def array_shards_list(arrays: list[np.ndarray]) -> Callable[[], Iterator[tuple[int, np.ndarray]]]:
    """Given arrays as consecutive shards, in the form ``build_index``/``knn_search`` take."""
    def gen() -> Iterator[tuple[int, np.ndarray]]:
        yield from zip(shard_offsets(arrays), arrays)
    return gen
