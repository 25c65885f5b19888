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

import copy
import logging
import os
import socket
import uuid
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from bimine.embed import EmbedReport
from bimine.errors import ConfigError
from bimine.index.faiss_index import (
    SEARCH_CHUNK,
    KeyIndex,
    merge_topk,
    one_faiss_thread,
    search_stable,
    shard_offsets,
)
from bimine.store.store import ArrayRows, embed_to_shard

# Ray's default strategy fills the driver's node before it spills tasks to the others (and
# prefers the node holding a task's large arguments: the index and filter tasks' are in the
# driver's object store; the embedding tasks' model spec is small). Short
# tasks then queued on one node while the others idled (a 3-node test cluster ran 9 of 9
# embedding tasks on one node). SPREAD hands the tasks round the nodes that have a
# free CPU.
SPREAD = "SPREAD"


# Ray's settings for a driver (this process), set before each ``ray.init`` unless the user set
# them. OpenTelemetry metrics off (issue 41): once a process has run a second Ray session
# (``ray.init`` after ``ray.shutdown()``: the test suite's two clusters, a program mining twice),
# Ray 2.60's OpenTelemetry exporter thread outlives ``ray.shutdown()`` and wakes every 10 s to
# export to the gone metrics agent and log the failure. At interpreter exit that thread keeps
# running while the static destructors run; a wake-up after Ray's logging (spdlog) has been
# destroyed jumps through freed memory: SIGSEGV (exit status 139) after the work is done, at
# random (docs/decisions.md). Ray then records its metrics through OpenCensus, its other metrics
# path, whose exporter stops with the session.
DRIVER_ENV = {"RAY_enable_open_telemetry": "0"}


def prepare_driver() -> None:
    """Set :data:`DRIVER_ENV` in this process (and so in a local cluster it starts) where unset;
    call before ``ray.init``. :func:`init` does; so does ``tests/conftest.py`` for the tests
    that start their own clusters."""
    for key, value in DRIVER_ENV.items():
        os.environ.setdefault(key, value)


def require_ray():
    try:
        import ray  # loaded on use: Ray is heavy or optional
    except ImportError:
        raise ConfigError("--executor ray needs Ray: pip install 'bimine[ray]'") from None
    return ray


def init(address: str | None = None):
    """Join (or start) the Ray cluster; a no-op when this process is already connected.

    A cluster started for this run (no ``address``, no ``RAY_ADDRESS``) runs without Ray's
    dashboard (eleven processes nobody looks at during one command) and is watched by
    :mod:`bimine.distributed._reaper`, so that nothing of it outlives this process. Ray's own
    messages below ERROR stay out of the terminal (its token-authentication notice on every
    start among them); ``-v`` shows them."""
    ray = require_ray()
    if not ray.is_initialized():
        _check_reachable(address)
        prepare_driver()
        local = address is None and not os.environ.get("RAY_ADDRESS")
        quiet = logging.getLogger("bimine").getEffectiveLevel() > logging.INFO
        kwargs = {"include_dashboard": False} if local else {}
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=True,
                     logging_level=logging.ERROR if quiet else logging.INFO, **kwargs)
        except (ConnectionError, ValueError, RuntimeError) as e:  # no cluster there, or a malformed address
            where = f"at {address}" if address else "(RAY_ADDRESS or a new local one)"
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ConfigError(f"cannot join or start the Ray cluster {where}: {first}") from None
        if local:
            _watch_local_cluster()
    return ray


def _watch_local_cluster() -> None:
    """Start :mod:`bimine.distributed._reaper` for this process (see :func:`init`)."""
    import subprocess
    import sys

    subprocess.Popen([sys.executable, str(Path(__file__).with_name("_reaper.py")), str(os.getpid())],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True, close_fds=True)


def _check_reachable(address: str | None, timeout: float = 10.0) -> None:
    """Fail fast when a plain ``HOST:PORT`` (``address`` or ``RAY_ADDRESS``) has nothing listening:
    ``ray.init`` would otherwise retry the connection for many minutes before giving up."""
    target = address if address is not None else os.environ.get("RAY_ADDRESS")
    if not target or "://" in target or target in ("auto", "local"):
        return
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        return  # let ray.init report a malformed address in its own words
    try:
        socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout).close()
    except OSError as e:
        raise ConfigError(f"cannot join the Ray cluster at {target}: nothing answers there ({e.strerror or e}); "
                          "start its head with `ray start --head` or check the address") from None
    # something answers; a Ray head's GCS speaks gRPC (HTTP/2). Anything else (a web server, ssh)
    # would have ray.init retry for minutes, printing Ray's C++ connection warnings
    import grpc  # a dependency of ray

    channel = grpc.insecure_channel(target)
    try:
        grpc.channel_ready_future(channel).result(timeout=min(timeout, 5.0))
    except grpc.FutureTimeoutError:
        raise ConfigError(f"cannot join the Ray cluster at {target}: something answers there, but not a Ray head "
                          "(no gRPC); give the address 'ray start --head' printed (its GCS port, 6379 by default)"
                          ) from None
    finally:
        channel.close()


def cluster_cpus(address: str | None = None) -> int:
    """The CPUs of the cluster (joined or started), at least 1."""
    return max(1, int(init(address).cluster_resources().get("CPU", 1)))


def embed_shard(spec, lines: list[str], lang: str, batch_size: int, path: str) -> dict:
    """Body of the Ray task: embed ``lines`` and write the float16 shard at ``path``; return the
    counts the driver's report adds up and the shard's SHA-256 (for the manifest)."""
    report = EmbedReport(path)
    digest = embed_to_shard(spec.load_cached(), lines, lang, Path(path), batch_size=batch_size, report=report)
    return {"lines": report.lines, "empty": report.empty, "truncated": report.truncated, "node": _node_id(),
            "sha256": digest}


def _node_id() -> str | None:
    """The Ray node running this task (None outside Ray)."""
    try:
        import ray  # loaded on use: Ray is heavy or optional

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
    task = ray.remote(num_cpus=cpus_per_task, max_retries=max_retries, scheduling_strategy=SPREAD)(embed_shard)
    limit = in_flight or cluster_cpus(address) // cpus_per_task + 2
    spec_ref = ray.put(spec.with_threads(threads_per_task or cpus_per_task))
    pending: deque = deque()
    for lines, path in jobs:
        pending.append(task.remote(spec_ref, lines, lang, batch_size, path))
        if len(pending) >= limit:
            yield ray.get(pending.popleft())
    while pending:
        yield ray.get(pending.popleft())


def search_piece_rows(n_queries: int, address: str | None = None, rounds: int = 4) -> int:
    """Rows per search task: about ``rounds`` tasks per CPU of the cluster, so that the last
    round leaves few CPUs idle (3 query shards on 2 CPUs ran in two rounds: +28% measured),
    rounded up to whole search chunks so that a piece's chunks are its shard's (same bytes)."""
    rows = -(-max(1, n_queries) // (rounds * cluster_cpus(address)))
    return -(-rows // SEARCH_CHUNK) * SEARCH_CHUNK


def _fill_key_part(data, cfg, factory: str, n_total: int, part) -> tuple[np.ndarray, int]:
    """Task: a copy of the trained empty index filled with the key part's vectors (``part()``
    reads them where the task runs), on one FAISS thread as in a local run; returns the
    index's bytes and their size (the driver counts the size without fetching the bytes)."""
    idx = KeyIndex.from_bytes(data, cfg, factory, n_total)
    with one_faiss_thread():
        idx.add(part())
    out = idx.to_bytes()
    return out, int(out.nbytes)


def _search_query_part(part, k: int, offsets: list[int], cfg, factory: str, n_total: int, shard_refs: list,
                       threads: int) -> tuple[np.ndarray, np.ndarray]:
    """Task: the query part's rows against every key shard's index, loaded one after another
    (not all at once), the lists merged as they come: the same arrays as a local run
    (:func:`~bimine.index.faiss_index.search_stable` chunks; the merge is a total order)."""
    import ray  # loaded on use: Ray is heavy or optional

    q = part()
    merged: list = []  # the lists so far, ids global (offset 0); ordered as merge_topk orders them
    for ref, off in zip(shard_refs, offsets):
        idx = KeyIndex.from_bytes(ray.get(ref), cfg, factory, n_total)
        s, i = search_stable(idx, q, k, threads=threads)
        del idx
        merged = [(*merge_topk([*merged, (s, i, off)], k), 0)]
    return merged[0][:2]


def knn_parts(trained, key_parts: list[tuple[int, object]], query_parts: list[tuple[int, object]], n_keys: int,
              n_queries: int, k: int, *, address: str | None = None, max_retries: int = 3, cpus_per_task: int = 1,
              progress=None, stats: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """kNN of every query row among the keys on Ray, as stopes lays it out: a task fills each
    key part's index (a copy of the ``trained`` empty one: one quantiser for all parts), a
    task searches each query part against every key part and merges the lists exactly.

    ``key_parts`` / ``query_parts``: ``(first row, reader)`` where ``reader()`` returns the
    part's float32 rows where the task runs (a store shard read from the shared file system,
    or an in-memory array that travels with the task). Equal to
    :func:`bimine.index.faiss_index.build_sharded_index` + ``knn_search`` on the same parts.
    ``stats`` (a dict) gets the tasks run and the bytes they moved: ``index_bytes`` (the key
    shards' indexes, each read by every search task: ``index_reads`` times in all) and
    ``list_bytes`` (the neighbour lists sent back to the driver)."""
    ray = init(address)
    fill = ray.remote(num_cpus=cpus_per_task, max_retries=max_retries, num_returns=2,
                      scheduling_strategy=SPREAD)(_fill_key_part)
    search = ray.remote(num_cpus=cpus_per_task, max_retries=max_retries, scheduling_strategy=SPREAD)(_search_query_part)
    base = ray.put(trained.to_bytes())
    args = (trained.cfg, trained.factory, trained.n_total)
    if not key_parts:  # no keys: the empty index answers "no neighbour"
        refs, sizes, offsets = [base], [], [0]
    else:
        refs, sizes = zip(*[fill.remote(base, *args, part) for _, part in key_parts])
        refs, offsets = list(refs), [start for start, _ in key_parts]
    k = min(k, max(1, n_keys))  # as knn_search clips k to the keys indexed
    sims = np.empty((n_queries, k), dtype=np.float32)
    ids = np.empty((n_queries, k), dtype=np.int64)
    tasks = {search.remote(part, k, offsets, *args, refs, cpus_per_task): start for start, part in query_parts}
    while tasks:
        done, _ = ray.wait(list(tasks), num_returns=1)
        start = tasks.pop(done[0])
        s, i = ray.get(done[0])
        sims[start : start + len(s)] = s
        ids[start : start + len(s)] = i
        if progress is not None:
            progress.update(len(s))
    if stats is not None:
        index_bytes = int(sum(ray.get(list(sizes))))
        for key, v in (("fill_tasks", len(sizes)), ("search_tasks", len(query_parts)), ("index_bytes", index_bytes),
                       ("index_reads", len(sizes) * len(query_parts)),
                       ("index_bytes_read", index_bytes * len(query_parts)),
                       ("list_bytes", int(sims.nbytes + ids.nbytes))):
            stats[key] = stats.get(key, 0) + v
    return sims, ids


def sharded_knn(trained, key_shards: list[np.ndarray], queries: list[np.ndarray], k: int, *,
                address: str | None = None, max_retries: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bimine.index.faiss_index.sharded_knn` on Ray (in-memory shards): the same arrays."""
    return knn_parts(trained, list(zip(shard_offsets(key_shards), map(ArrayRows, key_shards))),
                     list(zip(shard_offsets(queries), map(ArrayRows, queries))), sum(len(a) for a in key_shards),
                     sum(len(q) for q in queries), k, address=address, max_retries=max_retries)


class _EncoderBySpec:
    """Stands in for a filter's encoder on its way to a Ray worker: the worker loads the
    encoder from the spec (once per process, with the task's CPUs as threads) instead of
    receiving its weights with every pipeline."""

    def __init__(self, spec) -> None:
        self.spec = spec


_WORKER_PIPELINES: dict[str, list] = {}  # per Ray worker process: the filters of the pipeline now scoring


def _filters_for_ray(filters: list) -> list:
    """Shallow copies of ``filters`` whose ``encoder`` (when it has a spec) travels as its spec."""
    out = []
    for f in filters:
        enc = getattr(f, "encoder", None)
        spec = getattr(enc, "spec", None)
        if spec is not None:
            f = copy.copy(f)
            f.encoder = _EncoderBySpec(spec)
        out.append(f)
    return out


def _score_block(token: str, holder: list, threads: int, fn, args) -> object:
    """Task: ``fn(args, filters)`` with this worker's copy of the pipeline's filters, fetched and
    set up once per worker process and pipeline (``token``)."""
    filters = _WORKER_PIPELINES.get(token)
    if filters is None:
        import ray  # loaded on use: Ray is heavy or optional

        filters = ray.get(holder[0])
        for f in filters:
            if isinstance(getattr(f, "encoder", None), _EncoderBySpec):
                f.encoder = f.encoder.spec.with_threads(threads).load_cached()
        _WORKER_PIPELINES.clear()
        _WORKER_PIPELINES[token] = filters
    return fn(args, filters)


class _Result:
    def __init__(self, ref) -> None:
        self.ref = ref

    def result(self):
        import ray  # loaded on use: Ray is heavy or optional

        return ray.get(self.ref)


class BlockPool:
    """The filter pipeline's worker pool on Ray, used as its ``ProcessPoolExecutor`` is:
    ``submit(fn, args)`` runs ``fn(args, filters)`` in a task (one CPU each) with the worker's
    copy of the filters and returns an object whose ``result()`` is what ``fn`` returned.
    ``workers`` is the cluster's CPUs (the pipeline keeps twice that many blocks in flight).
    The filters go to the object store once; an encoder with a spec travels as its spec. A
    filter that cannot be sent (an object Python cannot pickle) is a clear error."""

    def __init__(self, filters: list, address: str | None = None, max_retries: int = 3) -> None:
        ray = init(address)
        try:
            self._ref = ray.put(_filters_for_ray(filters))
        except Exception as e:  # cloudpickle's errors vary (TypeError, PicklingError, ...)
            raise ConfigError(f"--executor ray: the pipeline's filters cannot be sent to Ray workers ({e}); "
                              "use the local executor") from None
        self._token = uuid.uuid4().hex
        self._task = ray.remote(num_cpus=1, max_retries=max_retries, scheduling_strategy=SPREAD)(_score_block)
        self.workers = cluster_cpus(address)
        self.tasks = 0

    def submit(self, fn, args) -> _Result:
        self.tasks += 1
        return _Result(self._task.remote(self._token, [self._ref], 1, fn, args))

    def shutdown(self, cancel_futures: bool = False) -> None:
        """Nothing to stop: the tasks belong to the cluster (as ``ProcessPoolExecutor.shutdown``)."""
