"""Multi-node paths of the Ray executor on a Ray cluster of 3 nodes started on this machine
(``ray.cluster_utils.Cluster``): tasks land on several nodes, the output is the local one."""

from __future__ import annotations

import filecmp

import numpy as np
import pytest

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

from bimine.encoders import load_encoder  # noqa: E402
from bimine.store import EmbedRun, build_store  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    if ray.is_initialized():
        ray.shutdown()
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    for _ in range(2):
        c.add_node(num_cpus=1)
    c.wait_for_nodes()
    ray.init(address=c.address)
    # A worker process on each node before the tests: a node whose worker is still starting
    # (seconds) cannot take a task, and the tests check where tasks land, not start-up times.
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = ray.remote(num_cpus=1)(lambda: ray.get_runtime_context().get_node_id())
    ids = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
    started = ray.get([here.options(scheduling_strategy=NodeAffinitySchedulingStrategy(i, soft=False)).remote()
                       for i in ids])
    assert sorted(started) == sorted(ids)
    yield c
    ray.shutdown()
    c.shutdown()


def test_three_nodes(cluster, tmp_path):
    assert len([n for n in ray.nodes() if n["Alive"]]) == 3
    lines = [f"Line {i}: the river flows past village {i % 41}." for i in range(1800)]
    p = tmp_path / "c.en"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    local, ray_out = tmp_path / "local", tmp_path / "ray"
    build_store(str(p), local, load_encoder("default"), "en", shard_size=300, progress=False)
    build_store(str(p), ray_out, load_encoder("default"), "en", shard_size=300, progress=False,
                run=EmbedRun(executor="ray"))
    names = sorted(x.name for x in local.iterdir())
    assert names == sorted(x.name for x in ray_out.iterdir())
    assert all(filecmp.cmp(local / n, ray_out / n, shallow=False) for n in names)

    from bimine.distributed.ray_executor import sharded_knn as ray_knn
    from bimine.index.faiss_index import IndexConfig, KeyIndex, array_shards, sample_rows, sharded_knn

    keys = np.load(local / "shard-00000.npy").astype(np.float32)
    trained = KeyIndex(keys.shape[1], len(keys), IndexConfig(factory="IVF4,Flat", nprobe=2))
    trained.train(sample_rows(array_shards(keys), len(keys), 300, 0))
    shards, queries = [keys[:100], keys[100:250], keys[250:]], [keys[::7], keys[3::11]]
    a = sharded_knn(trained, shards, queries, 3)
    b = ray_knn(trained, shards, queries, 3)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_embedding_tasks_run_on_several_nodes(cluster, tmp_path):
    from bimine.distributed.ray_executor import embed_shards

    spec = load_encoder("default").spec
    lines = [f"Sentence {i} of a shard." for i in range(200)]
    jobs = ((lines, str(tmp_path / f"shard-{j:05d}.npy")) for j in range(9))
    nodes = {r["node"] for r in embed_shards(spec, jobs, "en", 64)}
    assert len(nodes) >= 2
    assert len(list(tmp_path.glob("shard-*.npy"))) == 9
