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


def init(address: str | None = None, num_cpus: int | None = None):
    """Join (or start) the Ray cluster; a no-op when this process is already connected."""
    ray = require_ray()
    if not ray.is_initialized():
        kw = {"address": address, "ignore_reinit_error": True, "log_to_driver": True}
        if address is None and num_cpus is not None:
            kw["num_cpus"] = num_cpus
        ray.init(**kw)
    return ray


def embed_shard(spec, lines: list[str], lang: str, batch_size: int, path: str) -> dict:
    """Body of the Ray task: embed ``lines`` and write the float16 shard at ``path``; return the
    counts the driver's report adds up."""
    from bimine.embed import EmbedReport, embed_lines
    from bimine.store.store import write_shard

    encoder = spec.load_cached()
    report = EmbedReport(path)
    parts = list(embed_lines(encoder, lines, lang, batch_size=batch_size, report=report))
    write_shard(Path(path), np.concatenate(parts).astype(np.float16))
    return {"lines": report.lines, "empty": report.empty, "truncated": report.truncated}


def embed_shards(spec, jobs: Iterator[tuple[list[str], str]], lang: str, batch_size: int, *,
                 address: str | None = None, in_flight: int | None = None, max_retries: int = 3,
                 cpus_per_task: int = 1, threads_per_task: int | None = None) -> Iterator[dict]:
    """Run :func:`embed_shard` for each ``(lines, path)`` of ``jobs`` as Ray tasks of
    ``cpus_per_task`` CPUs each, at most ``in_flight`` at once (default: the cluster's CPUs /
    cpus_per_task + 2; the driver holds that many shards of text), yielding each task's
    counts in the order of ``jobs``.

    ``threads_per_task``: the threads the encoder is told to use (None: its default, one per
    core of the node, as in a local run). The DAN's float32 rows depend on how a batch is
    sliced between threads (at the last bit: BLAS kernels differ with the number of rows),
    so only the default gives the local run's bytes; it oversubscribes a node that runs
    several tasks at once."""
    ray = init(address)
    task = ray.remote(num_cpus=cpus_per_task, max_retries=max_retries)(embed_shard)
    limit = in_flight or int(ray.cluster_resources().get("CPU", 1)) // cpus_per_task + 2
    spec_ref = ray.put(spec if threads_per_task is None else spec.with_threads(threads_per_task))
    pending: deque = deque()
    for lines, path in jobs:
        pending.append(task.remote(spec_ref, lines, lang, batch_size, path))
        if len(pending) >= limit:
            yield ray.get(pending.popleft())
    while pending:
        yield ray.get(pending.popleft())
