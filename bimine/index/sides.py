"""The two sides of a search and the kNN lists between them, both ways.

A :class:`Side` is the embedded rows of one side (a store, several stores, or an array) with
the rows that may be searched (blank lines are not) and a fingerprint of what it holds.
:func:`knn_both_ways` finds each valid row's ``k`` nearest neighbours among the other side's
valid rows, in both directions, with one FAISS index per key shard and exact merges; with a
cache folder each direction's lists are kept and reused only for the same inputs and settings
(:func:`knn_cache_meta`). Mining, document matching, the filter's in-corpus margin and the
rescorer's planted corpora all search this way.

``cfg`` is a :class:`SearchConfig` or anything with its ``k`` and ``index``, e.g.
:class:`bimine.mining.pipeline.MineConfig`; ``report`` anything with ``seconds``,
``reused``, ``index`` and ``ray`` (:class:`bimine.mining.pipeline.MineReport`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from bimine.errors import ConfigError
from bimine.executors import plugin
from bimine.index.faiss_index import (
    IndexConfig,
    build_sharded_index,
    effective_nprobe,
    knn_search,
    resolve_factory,
    train_index,
    train_shared,
)
from bimine.progress import bar
from bimine.store.store import ArrayRows, EmbeddingStore, json_digest

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchConfig:
    """``k`` neighbours of each row, searched with the index ``index``."""

    k: int = 4
    index: IndexConfig = field(default_factory=IndexConfig)

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ConfigError(f"k must be >= 1, got {self.k}")


@dataclass
class Side:
    """One side of the mining job: shard iterator over its rows and the rows that may be mined."""

    n_rows: int
    dim: int
    sources: list  # (first row, rows, reader) per shard, reader(rows) -> float32: see valid_parts
    valid: np.ndarray  # sorted row indices that are not blank
    fingerprint: str = ""  # identifies the embeddings (cache keys); "" = not cacheable

    def valid_parts(self, piece_rows: int | None = None) -> list[tuple[int, Callable[[], np.ndarray]]]:
        """``(start in valid-row order, reader)`` per shard with valid rows, where ``reader()``
        returns what :meth:`valid_shards` yields for that shard; readers are picklable, for
        Ray tasks that read their shard where they run.

        ``piece_rows`` cuts each shard's valid rows further into pieces of that many rows (the
        last piece of a shard shorter): with a multiple of the search chunk
        (:data:`~bimine.index.faiss_index.SEARCH_CHUNK`) the pieces' chunks are the shard's,
        so searching the pieces gives the bytes of searching the shard."""
        if piece_rows is not None and piece_rows < 1:
            raise ValueError(f"piece_rows must be >= 1, got {piece_rows}")
        out, pos = [], 0
        for start, n, read in self.sources:
            sel = self.valid[(self.valid >= start) & (self.valid < start + n)] - start
            step = piece_rows or max(1, len(sel))
            for a in range(0, len(sel), step):
                rows = sel[a : a + step]
                whole = a == 0 and len(rows) == n
                out.append((pos, partial(read, None if whole else rows)))
                pos += len(rows)
        return out

    def valid_shards(self) -> Iterator[tuple[int, np.ndarray]]:
        """Yield (start in valid-row order, valid rows of the shard), one shard in memory."""
        for pos, read in self.valid_parts():
            yield pos, read()


def side_from_store(store: EmbeddingStore) -> Side:
    blank = store.blank_lines()
    valid = np.setdiff1d(np.arange(store.rows, dtype=np.int64), blank, assume_unique=True)
    files = store.shard_files()
    starts = np.cumsum([0] + [f.rows for f in files])[:-1].tolist()
    return Side(store.rows, store.dim, [(s, f.rows, f) for s, f in zip(starts, files)], valid,
                store_fingerprint(store))


def side_from_array(x: np.ndarray, valid: np.ndarray | None = None, *, shard_rows: int | None = None) -> Side:
    """A side held in memory; ``shard_rows``: cut into shards of that many rows, as a store of that
    shard size is (each its own index and search, read as float32 one shard at a time)."""
    valid = np.arange(len(x), dtype=np.int64) if valid is None else np.asarray(valid, dtype=np.int64)
    x = np.ascontiguousarray(x)
    h = hashlib.sha256(memoryview(x).cast("B") if x.size else b"")  # the bytes as they are: no copy
    h.update(str(x.shape).encode())
    h.update(valid.tobytes())
    step = shard_rows or max(1, len(x))
    sources = [(a, min(step, len(x) - a), ArrayRows(x[a : a + step])) for a in range(0, len(x), step)]
    sources = sources or [(0, 0, ArrayRows(x))]
    return Side(len(x), x.shape[1], sources, valid, "array:" + h.hexdigest())


def store_fingerprint(store: EmbeddingStore) -> str:
    """sha256 of the store's manifest: it names the input's checksum, the model, language,
    column and every shard, so equal fingerprints mean equal embeddings."""
    return "store:" + hashlib.sha256(json.dumps(store.manifest, sort_keys=True).encode()).hexdigest()


def side_from_stores(stores: list[EmbeddingStore]) -> Side:
    """One side made of several stores (one per input file), rows numbered through them in
    order; a single store gives :func:`side_from_store`'s side (same fingerprint)."""
    if len(stores) == 1:
        return side_from_store(stores[0])
    sources, valid, start = [], [], 0
    h = hashlib.sha256()
    for st in stores:
        one = side_from_store(st)
        sources += [(start + a, n, read) for a, n, read in one.sources]
        valid.append(one.valid + start)
        start += one.n_rows
        h.update(one.fingerprint.encode() + b"\0")
    return Side(start, stores[0].dim, sources, np.concatenate(valid), "stores:" + h.hexdigest())


KNN_FORMAT = "bimine-knn/3"  # 3: one index per key shard, fixed-size query chunks on one thread


def knn_cache_meta(name: str, q: Side, keys: Side, cfg) -> dict | None:
    """What a kNN list is computed from: both sides' fingerprints, the index config and k.

    The cached file is named by a hash of this and holds it, so a work dir reused for other
    inputs (even with the same line counts), another model, language or index settings (also
    a changed default: the resolved factory and nprobe are part of it) never hands back
    neighbours of something else. None when a side has no fingerprint (not cacheable).
    """
    if not q.fingerprint or not keys.fingerprint:
        return None
    # the settings as they will run, not only as asked ("auto", nprobe 0 = a default that may change)
    factory = resolve_factory(cfg.index, len(keys.valid), keys.dim)
    resolved = {"factory": factory, "nprobe": effective_nprobe(factory, cfg.index.nprobe)}
    return {"format": KNN_FORMAT, "direction": name, "queries": q.fingerprint, "keys": keys.fingerprint,
            "n_queries": len(q.valid), "n_keys": len(keys.valid), "k": cfg.k, "index": asdict(cfg.index),
            "resolved": resolved}


def _load_knn(f: Path, meta: dict, k: int, n_queries: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Cached (sims, ids) of ``f`` if it was computed from exactly ``meta``, else None."""
    try:
        with np.load(f) as z:
            got = json.loads(str(z["meta"]))
            sims, ids = z["sims"], z["ids"]
    except Exception as e:  # unreadable or from an older version: recompute
        log.warning(f"{f}: cannot be reused ({type(e).__name__}); computing the kNN lists again")
        return None
    if got != meta or sims.shape != ids.shape or len(sims) != n_queries or sims.shape[1] > k:
        log.warning(f"{f}: was computed from other inputs or settings; computing the kNN lists again")
        return None
    return sims, ids


def knn_both_ways(x: Side, y: Side, cfg, *, progress: bool = False, cache: Path | None = None,
                  need_backward: bool = True, report=None, executor: str = "local",
                  ray_address: str | None = None):
    """kNN of valid x rows among valid y rows and back; ids are positions in valid-row order.

    Each key shard has its own index (copies of one training) and the lists are merged
    exactly, in this process (``executor="local"``) or by Ray tasks (``"ray"``: a task fills
    each key shard, a task searches each query shard), with the same arithmetic: both give
    the same bytes.

    With ``cache`` (a work dir), each direction's lists are kept in a file keyed by
    :func:`knn_cache_meta` and reused only when that matches exactly.
    """
    out = []
    dirs = [("fwd", x, y)] + ([("bwd", y, x)] if need_backward else [])
    metas = {name: knn_cache_meta(name, q, keys, cfg) if cache else None for name, q, keys in dirs}
    files = {name: cache / f"knn-{name}-{json_digest(m)}.npz" if m else None for name, m in metas.items()}
    loaded = {}
    for name, q, _ in dirs:
        if files[name] is not None and files[name].exists():
            got = _load_knn(files[name], metas[name], cfg.k, len(q.valid))
            if got is not None:
                loaded[name] = got
    shared = None
    if len(dirs) - len(loaded) == 2:
        t = time.time()
        shared = train_shared([(x.valid_shards, len(x.valid)), (y.valid_shards, len(y.valid))], x.dim, cfg.index)
        if shared is not None and report is not None:
            report.seconds["train index"] = time.time() - t
    for name, q, keys in dirs:
        if name in loaded:
            out += list(loaded[name])
            if report is not None:
                report.reused.append(f"kNN {name} ({files[name].name})")
            continue
        t = time.time()
        if executor == "ray":
            ray_executor = plugin("ray")
            base = shared if shared is not None else train_index(keys.valid_shards, len(keys.valid), keys.dim,
                                                                  cfg.index)
            t_index = time.time() - t
            t = time.time()
            pieces = q.valid_parts(ray_executor.search_piece_rows(len(q.valid), ray_address))
            with bar(total=len(q.valid), unit=" q", desc=f"index+kNN {name} (ray)", enabled=progress) as b:
                sims, ids = ray_executor.knn_parts(base, keys.valid_parts(), pieces, len(keys.valid),
                                                   len(q.valid), cfg.k, address=ray_address, progress=b,
                                                   stats=report.ray if report is not None else None)
            index = base
        else:
            with bar(total=len(keys.valid), unit=" vec", desc=f"index {name}", enabled=progress) as b:
                index = build_sharded_index(keys.valid_shards, len(keys.valid), keys.dim, cfg.index, progress=b,
                                            trained=shared)
            t_index = time.time() - t
            t = time.time()
            with bar(total=len(q.valid), unit=" q", desc=f"kNN {name}", enabled=progress) as b:
                sims, ids = knn_search(index, q.valid_shards(), len(q.valid), cfg.k, progress=b)
        if report is not None:
            report.index = index.factory + (f" (nprobe {index.nprobe})" if index.nprobe else "")
            report.seconds[f"index {name}"] = t_index
            report.seconds[f"kNN {name}"] = time.time() - t
        del index
        f = files[name]
        if f is not None:
            tmp = f.with_name(f"{f.stem}.tmp-{os.getpid()}.npz")
            try:
                np.savez(tmp, sims=sims, ids=ids, meta=np.array(json.dumps(metas[name], sort_keys=True)))
                os.replace(tmp, f)
            finally:
                if tmp.exists():
                    tmp.unlink()
        out += [sims, ids]
    if report is not None and not report.index and loaded:
        report.index = "reused kNN lists"
    return out if need_backward else out + [None, None]
