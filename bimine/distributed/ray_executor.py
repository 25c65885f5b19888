"""The Ray executor (issue 13): store shards embedded by Ray tasks.

A task gets a shard's lines, the encoder's :class:`~bimine.encoders.EncoderSpec` (small,
picklable; the worker loads the encoder once and keeps it for the next tasks) and the shard's
final path; it embeds the lines in the same batches as the local executor and writes the
shard the way the local executor does (``.tmp``, fsync, rename), so the store is the same
bytes and a shard under its final name is always whole. Ray retries a task whose worker
died; a driver killed mid-run is resumed by running the command again: the shards already
written are recognised by the store's identity checks and skipped.

The store folder must be visible to every node (a shared file system) when the cluster has
more than one machine. ``ray.init`` joins the cluster at ``address`` (``"auto"``: the one
started on this machine by ``ray start``; ``None``: ``RAY_ADDRESS`` if set, else a local
cluster started for this run).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from bimine.errors import ConfigError


def require_ray():
    try:
        import ray
    except ImportError:
        raise ConfigError("--executor ray needs Ray: pip install 'bimine[ray]'") from None
    return ray


def init(address: str | None = None):
    """Join (or start) the Ray cluster; a no-op when this process is already connected."""
    ray = require_ray()
    if not ray.is_initialized():
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=True)
    return ray


def embed_shard(spec, lines: list[str], lang: str, batch_size: int, path: str) -> dict:
    """Body of the Ray task: embed ``lines`` and write the float16 shard at ``path``; return the
    counts the driver's report adds up."""
    from bimine.embed import EmbedReport
    from bimine.store.store import embed_to_shard

    report = EmbedReport(path)
    embed_to_shard(spec.load_cached(), lines, lang, Path(path), batch_size=batch_size, report=report)
    return {"lines": report.lines, "empty": report.empty, "truncated": report.truncated, "node": _node_id()}


def _node_id() -> str | None:
    """The Ray node running this task (None outside Ray)."""
    try:
        import ray

        return ray.get_runtime_context().get_node_id() if ray.is_initialized() else None
    except ImportError:
        return None


def embed_shards(spec, jobs: Iterator[tuple[list[str], str]], lang: str, batch_size: int, *,
                 address: str | None = None, in_flight: int | None = None, max_retries: int = 3,
                 cpus_per_task: int = 1, threads_per_task: int | None = None) -> Iterator[dict]:
    """Run :func:`embed_shard` for each ``(lines, path)`` of ``jobs`` as Ray tasks of
    ``cpus_per_task`` CPUs each, at most ``in_flight`` at once (default: the cluster's CPUs /
    cpus_per_task + 2; the driver holds that many shards of text), yielding each task's
    counts in the order of ``jobs``.

    ``threads_per_task``: the threads the encoder is told to use (default ``cpus_per_task``,
    so that a node running several tasks is not oversubscribed). The bytes do not depend on
    it: the DAN cuts a batch in slices of a fixed size whatever its threads.
    """
    ray = init(address)
    task = ray.remote(num_cpus=cpus_per_task, max_retries=max_retries)(embed_shard)
    limit = in_flight or int(ray.cluster_resources().get("CPU", 1)) // cpus_per_task + 2
    spec_ref = ray.put(spec.with_threads(threads_per_task or cpus_per_task))
    pending: deque = deque()
    for lines, path in jobs:
        pending.append(task.remote(spec_ref, lines, lang, batch_size, path))
        if len(pending) >= limit:
            yield ray.get(pending.popleft())
    while pending:
        yield ray.get(pending.popleft())


def _fill_key_shard(data, cfg, factory: str, n_total: int, keys: np.ndarray) -> np.ndarray:
    from bimine.index.faiss_index import KeyIndex

    idx = KeyIndex.from_bytes(data, cfg, factory, n_total)
    idx.add(keys)
    return idx.to_bytes()


def _search_query_shard(queries: np.ndarray, k: int, offsets: list[int], cfg, factory: str, n_total: int,
                        shard_refs: list) -> tuple[np.ndarray, np.ndarray]:
    import ray

    from bimine.index.faiss_index import KeyIndex, search_shards

    # the key shards' indexes loaded one after another, not all at once
    indexes = (KeyIndex.from_bytes(ray.get(ref), cfg, factory, n_total) for ref in shard_refs)
    return search_shards(indexes, offsets, queries, k)


def sharded_knn(trained, key_shards: list[np.ndarray], queries: list[np.ndarray], k: int, *,
                address: str | None = None, max_retries: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bimine.index.faiss_index.sharded_knn` on Ray: a task fills each key shard's
    index (a copy of the ``trained`` empty one: one quantiser for all shards), a task
    searches each query shard against every key shard and merges the lists exactly; the
    result is the same arrays as the local function's."""
    from bimine.index.faiss_index import shard_offsets

    ray = init(address)
    fill = ray.remote(num_cpus=1, max_retries=max_retries)(_fill_key_shard)
    search = ray.remote(num_cpus=1, max_retries=max_retries)(_search_query_shard)
    base = ray.put(trained.to_bytes())
    refs = [fill.remote(base, trained.cfg, trained.factory, trained.n_total, a) for a in key_shards]
    offsets = shard_offsets(key_shards)
    k = min(k, int(sum(len(a) for a in key_shards)))
    out = ray.get([search.remote(q, k, offsets, trained.cfg, trained.factory, trained.n_total, refs)
                   for q in queries])
    return np.concatenate([s for s, _ in out]), np.concatenate([i for _, i in out])
