"""The Ray executor (issue 13) on a real Ray cluster started by the test on this machine:
the store it writes is byte-identical to the local executor's; a task whose worker dies is
retried; a rerun after a killed driver resumes from the shards already written."""

from __future__ import annotations

import filecmp
import json
import os
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from conftest import shipped_pairs, unaligned_sides  # noqa: E402

from bimine.encoders import load_encoder  # noqa: E402
from bimine.errors import ConfigError  # noqa: E402
from bimine.store import build_store  # noqa: E402
from bimine.store.store import EmbedRun  # noqa: E402

LINES = [f"Sentence number {i} says something about item {i % 37}." for i in range(2500)]
LINES[10] = ""
LINES[1234] = "   "


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True)
    yield ray
    ray.shutdown()


def _files(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


def _same_store(a: Path, b: Path) -> None:
    assert _files(a) == _files(b)
    for name in _files(a):
        assert filecmp.cmp(a / name, b / name, shallow=False), name


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    p = tmp_path_factory.mktemp("in") / "corpus.en"
    p.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return p


@pytest.fixture(scope="module")
def local_store(tmp_path_factory, corpus):
    out = tmp_path_factory.mktemp("local") / "st"
    build_store(str(corpus), out, load_encoder("default"), "en", shard_size=600, progress=False)
    return out


def test_ray_store_is_byte_identical_to_local(cluster, corpus, local_store, tmp_path):
    out = tmp_path / "st"
    st, rep = build_store(str(corpus), out, load_encoder("default"), "en", shard_size=600, progress=False,
                          run=EmbedRun(executor="ray"))
    assert st.rows == len(LINES) and rep.lines == len(LINES) and rep.empty == 1
    _same_store(local_store, out)


def test_a_task_killed_mid_way_is_retried_with_the_same_output(cluster, corpus, local_store, tmp_path):
    from dataclasses import dataclass

    from bimine.encoders import EncoderSpec

    @dataclass(frozen=True)
    class DiesOnce(EncoderSpec):
        """The default model, but the worker encoding line 1500 exits at once (as if killed),
        the first time only (a marker file remembers it across processes)."""

        marker: str = ""

        def load(self):
            import os

            real = EncoderSpec(self.kind, self.path, self.options).load()
            marker = self.marker

            class Enc:
                model_id, dim = real.model_id, real.dim

                def encode(self, sentences, lang):
                    if LINES[1500] in sentences and not os.path.exists(marker):
                        open(marker, "w").close()
                        os._exit(1)
                    return real.encode(sentences, lang)

            return Enc()

    enc = load_encoder("default")
    s = enc.spec
    marker = tmp_path / "died"
    enc.spec = DiesOnce(s.kind, s.path, s.options, marker=str(marker))
    out = tmp_path / "st"
    build_store(str(corpus), out, enc, "en", shard_size=600, progress=False, run=EmbedRun(executor="ray"))
    assert marker.exists()  # a worker did die, and its task ran again
    _same_store(local_store, out)


def test_a_rerun_resumes_from_the_shards_already_written(cluster, corpus, local_store, tmp_path):
    out = tmp_path / "st"
    # a driver killed after two shards: those two shards, progress.json, no manifest, a .tmp
    build_store(str(corpus), out, load_encoder("default"), "en", shard_size=600, progress=False)
    for name in ("manifest.json", "shard-00002.npy", "shard-00003.npy", "shard-00004.npy", "blank-lines.npy"):
        (out / name).unlink()
    (out / "shard-00002.npy.tmp").write_bytes(b"half a shard")
    m = json.loads((local_store / "manifest.json").read_text())
    ident = {k: m[k] for k in ("format", "model_id", "dim", "lang", "input", "input_sha256", "column", "shard_size")}
    (out / "progress.json").write_text(json.dumps(ident, indent=1, sort_keys=True) + "\n")
    before = {n: os.stat(out / n).st_mtime_ns for n in ("shard-00000.npy", "shard-00001.npy")}
    st, rep = build_store(str(corpus), out, load_encoder("default"), "en", shard_size=600, progress=False,
                          run=EmbedRun(executor="ray"))
    assert rep.reused == 1200
    assert {n: os.stat(out / n).st_mtime_ns for n in before} == before  # not rewritten
    _same_store(local_store, out)
    assert np.array_equal(st.load(), build_store(str(corpus), out, load_encoder("default"), "en", shard_size=600,
                                                 progress=False)[0].load())


def test_embed_command_joins_the_cluster(cluster, corpus, local_store, tmp_path):
    import subprocess
    import sys

    address = ray.get_runtime_context().gcs_address
    out = tmp_path / "st"
    r = subprocess.run([sys.executable, "-m", "bimine", "embed", str(corpus), "--lang", "en", "--store", "-o", str(out),
                        "--shard-size", "600", "--executor", "ray", "--ray-address", address, "--no-progress"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    _same_store(local_store, out)
    bad = subprocess.run([sys.executable, "-m", "bimine", "embed", str(corpus), "--lang", "en", "-o",
                          str(tmp_path / "x.npy"), "--executor", "ray"], capture_output=True, text=True)
    assert bad.returncode != 0 and "--executor ray writes a store: add --store" in bad.stderr


@pytest.mark.parametrize("factory", ["Flat", "IVF16,PQ16x4fs"])
def test_ray_sharded_knn_equals_the_local_one(cluster, factory):
    from bimine.distributed.ray_executor import sharded_knn as ray_knn
    from bimine.index.faiss_index import IndexConfig, KeyIndex, array_shards, sample_rows, sharded_knn

    rng = np.random.default_rng(5)
    keys = rng.standard_normal((3000, 32)).astype(np.float32)
    keys /= np.linalg.norm(keys, axis=1, keepdims=True)
    queries = keys[rng.permutation(3000)[:400]] + 0.05 * rng.standard_normal((400, 32)).astype(np.float32)
    trained = KeyIndex(32, 3000, IndexConfig(factory=factory, nprobe=4))
    trained.train(sample_rows(array_shards(keys), 3000, 1000, 0))
    key_shards = [keys[:1000], keys[1000:1100], keys[1100:]]
    q_shards = [queries[:150], queries[150:]]
    s1, i1 = sharded_knn(trained, key_shards, q_shards, 4)
    s2, i2 = ray_knn(trained, key_shards, q_shards, 4)
    assert np.array_equal(s1, s2) and np.array_equal(i1, i2)


def test_ray_knn_with_one_key_shard_orders_tied_duplicates_as_locally(cluster):
    """Duplicate lines give tied scores; FAISS returns ties in its own order (larger ids first
    for Flat), the local search orders them by id: a Ray search over a single key shard must
    too, or a corpus with repeated lines mines other pairs on Ray."""
    from bimine.distributed.ray_executor import sharded_knn as ray_knn
    from bimine.index.faiss_index import IndexConfig, KeyIndex, sharded_knn

    rng = np.random.default_rng(6)
    base = rng.standard_normal((200, 32)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    keys = np.concatenate([base, base[::-1], base])  # every key three times
    trained = KeyIndex(32, len(keys), IndexConfig(factory="Flat"))
    s1, i1 = sharded_knn(trained, [keys], [base[:50]], 4)
    s2, i2 = ray_knn(trained, [keys], [base[:50]], 4)
    assert (i1[:, :3] == np.sort(i1[:, :3], axis=1)).all()  # the three tied copies, by id
    assert np.array_equal(s1, s2) and np.array_equal(i1, i2)


def test_ray_search_in_pieces_of_a_query_shard_gives_the_local_bytes(cluster):
    """Search tasks finer than a query shard (whole search chunks of it, as the mine command
    cuts them to balance the CPUs) give the arrays of the local search over whole shards."""
    from bimine.distributed.ray_executor import knn_parts
    from bimine.index.faiss_index import SEARCH_CHUNK, IndexConfig, KeyIndex, knn_search
    from bimine.mining.pipeline import side_from_array
    from bimine.store.store import ArrayRows

    rng = np.random.default_rng(7)
    keys = rng.standard_normal((1500, 16)).astype(np.float32)
    queries = rng.standard_normal((2 * SEARCH_CHUNK + 3000, 16)).astype(np.float32)
    side = side_from_array(queries, np.setdiff1d(np.arange(len(queries)), [5, SEARCH_CHUNK + 9]))
    trained = KeyIndex(16, len(keys), IndexConfig(factory="Flat"))
    local = trained.copy()
    local.add(keys)
    s1, i1 = knn_search(local, side.valid_shards(), len(side.valid), 4)
    pieces = side.valid_parts(SEARCH_CHUNK)
    assert len(pieces) == 3
    stats: dict = {}
    s2, i2 = knn_parts(trained, [(0, ArrayRows(keys))], pieces, len(keys), len(side.valid), 4, stats=stats)
    assert stats["search_tasks"] == 3
    assert np.array_equal(s1, s2) and np.array_equal(i1, i2)


@pytest.fixture(scope="module")
def parallel_files(tmp_path_factory):
    """The shipped en-fr pairs as two files, the French side shuffled, a blank line on each side."""
    en, fr = unaligned_sides(0)
    d = tmp_path_factory.mktemp("pairs")
    (d / "a.en").write_text("\n".join(en) + "\n", encoding="utf-8")
    (d / "a.fr").write_text("\n".join(fr) + "\n", encoding="utf-8")
    return d / "a.en", d / "a.fr"


@pytest.mark.parametrize("factory", ["Flat", "IVF8,PQ16x4fs,Refine(SQfp16)"])
def test_mined_pairs_of_ray_are_byte_identical_to_local(cluster, parallel_files, tmp_path, factory):
    from bimine.index.faiss_index import IndexConfig
    from bimine.mining.pipeline import mine_files
    from bimine.mining.spec import MineConfig, MineJob

    src, tgt = parallel_files
    enc = load_encoder("default")
    cfg = MineConfig(index=IndexConfig(factory=factory, nprobe=4))
    out = {}
    for ex in ("local", "ray"):
        out[ex] = tmp_path / f"{ex}.tsv"
        rep = mine_files(MineJob(str(src), str(tgt), str(out[ex]), src_lang="en", tgt_lang="fr", mine=cfg,
                                 shard_size=300, progress=False, executor=ex, line_numbers=True, workers=1), encoder=enc)
        assert rep.src_blank == 1 and rep.tgt_blank == 1
    assert rep.written > 500  # real pairs were found, not an empty file compared with another
    assert out["local"].read_bytes() == out["ray"].read_bytes()


def test_mine_command_joins_the_cluster(cluster, parallel_files, tmp_path):
    import subprocess
    import sys

    src, tgt = parallel_files
    args = [sys.executable, "-m", "bimine", "mine", str(src), str(tgt), "--src-lang", "en", "--tgt-lang", "fr",
            "--shard-size", "500", "--no-progress"]
    r1 = subprocess.run([*args, "-o", str(tmp_path / "local.tsv")], capture_output=True, text=True)
    assert r1.returncode == 0, r1.stderr
    r2 = subprocess.run([*args, "-o", str(tmp_path / "ray.tsv"), "--executor", "ray",
                         "--ray-address", cluster.get_runtime_context().gcs_address], capture_output=True, text=True)
    assert r2.returncode == 0, r2.stderr
    assert "ray kNN (both directions): 6 index and 6 search tasks" in r2.stderr  # 3 shards a side, 2 directions
    assert "ray kNN" not in r1.stderr
    assert (tmp_path / "local.tsv").read_bytes() == (tmp_path / "ray.tsv").read_bytes()
    assert len((tmp_path / "ray.tsv").read_text(encoding="utf-8").splitlines()) > 500
    bad = subprocess.run([*args, "-o", str(tmp_path / "x.tsv"), "--ray-address", "auto"], capture_output=True, text=True)
    assert bad.returncode != 0 and "--ray-address needs --executor ray" in bad.stderr


def test_ray_mines_a_side_of_several_files_as_the_local_executor(cluster, parallel_files, tmp_path):
    """Several files per side: on Ray their stores are embedded at once; the same bytes as local."""
    from bimine.mining.pipeline import mine_files
    from bimine.mining.spec import MineJob

    src, tgt = parallel_files
    lines = src.read_text(encoding="utf-8").splitlines()
    parts = []
    for n, a in enumerate(range(0, len(lines), 500)):
        parts.append(tmp_path / f"part-{n}.en")
        parts[-1].write_text("\n".join(lines[a : a + 500]) + "\n", encoding="utf-8")
    out = {}
    for ex in ("local", "ray"):
        out[ex] = tmp_path / f"{ex}.tsv"
        mine_files(MineJob(str(tmp_path / "part-*.en"), str(tgt), str(out[ex]), src_lang="en", tgt_lang="fr",
                           shard_size=250, progress=False, executor=ex, line_numbers=True, workers=1),
                   encoder=load_encoder("default"))
    text = out["local"].read_text(encoding="utf-8")
    assert len(text.splitlines()) > 500 and "part-2.en:" in text
    assert out["local"].read_bytes() == out["ray"].read_bytes()


@pytest.fixture(scope="module")
def noisy_tsv(tmp_path_factory):
    """The shipped en-fr pairs as a TSV with noise: repeated pairs, an empty side, a copy, a misaligned pair."""
    rows = shipped_pairs()
    rows[5] = rows[4]
    rows[50] = "\t".join([rows[50].split("\t")[0], ""])
    rows[70] = "\t".join([rows[70].split("\t")[0]] * 2)
    rows[90] = "\t".join([rows[90].split("\t")[0], rows[600].split("\t")[1]])
    p = tmp_path_factory.mktemp("tsv") / "pairs.tsv"
    p.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return p


@pytest.mark.parametrize("command", [["filter"], ["score"], ["divergence"]])
def test_scoring_commands_on_ray_write_the_local_output(cluster, noisy_tsv, tmp_path, command):
    """filter / score (rules, language id, cosine, margin) and divergence (a torch model, each
    batch on one thread whatever the task's threads, issue 72 §1): blocks scored by Ray tasks
    give the bytes of a local run (forked workers)."""
    import subprocess
    import sys

    args = [sys.executable, "-m", "bimine", *command, str(noisy_tsv), "--src-lang", "en", "--tgt-lang", "fr",
            "--block-size", "200", "--no-progress"]
    local = subprocess.run([*args, "-o", str(tmp_path / "local.tsv")], capture_output=True, text=True)
    assert local.returncode == 0, local.stderr
    on_ray = subprocess.run([*args, "-o", str(tmp_path / "ray.tsv"), "--executor", "ray", "--ray-address",
                             cluster.get_runtime_context().gcs_address], capture_output=True, text=True)
    assert on_ray.returncode == 0, on_ray.stderr
    assert "scored on Ray: 7 block tasks on 2 CPUs" in on_ray.stderr  # 1,277 pairs in blocks of 200
    rows = {ex: [ln.split("\t") for ln in (tmp_path / f"{ex}.tsv").read_text(encoding="utf-8").splitlines()]
            for ex in ("local", "ray")}
    assert len(rows["ray"]) == 1278  # a header and one row per input row
    assert (tmp_path / "local.tsv").read_bytes() == (tmp_path / "ray.tsv").read_bytes()
    if command == ["filter"]:
        reasons = {r[-1] for r in rows["ray"][1:] if r[-2] == "0"}  # keep = 0: dropped, with its reason
        assert {"a side is empty", "the same pair came earlier", "the sides are the same text (untranslated copy)"} <= reasons


@pytest.mark.slow  # issue 72: the CI suite stays under 10 min on 2 cores; run with -m slow
def test_a_cluster_that_cannot_be_joined_is_a_clear_error(corpus, tmp_path):
    """A Ray client address with nothing behind it: an error naming the address, no traceback,
    no store written (Ray's client gives up after its connection timeout)."""
    import subprocess
    import sys

    out = tmp_path / "x.store"
    r = subprocess.run([sys.executable, "-m", "bimine", "embed", str(corpus), "--lang", "en", "--store", "-o",
                        str(out), "--executor", "ray", "--ray-address", "ray://127.0.0.1:1", "--no-progress"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "cannot join or start the Ray cluster at ray://127.0.0.1:1" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()  # the cluster is joined before the store folder is made (issue 55)


def _a_closed_port() -> int:
    import socket

    with socket.socket() as s:  # a port the OS just handed out and nobody listens on any more
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_head_address_with_nothing_listening_fails_fast(corpus, tmp_path, monkeypatch):
    """A plain HOST:PORT (flag or RAY_ADDRESS) where no head runs: ray.init would retry for many
    minutes; the command says so at once, naming the address, and writes nothing."""
    import subprocess
    import sys
    import time

    from bimine.distributed import ray_executor

    port = _a_closed_port()
    with pytest.raises(ConfigError, match=rf"cannot join the Ray cluster at 127\.0\.0\.1:{port}: nothing answers"):
        ray_executor._check_reachable(f"127.0.0.1:{port}")
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    with pytest.raises(ConfigError, match=rf"at 127\.0\.0\.1:{port}"):
        ray_executor._check_reachable(None)
    monkeypatch.delenv("RAY_ADDRESS")
    out = tmp_path / "x.store"
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "bimine", "embed", str(corpus), "--lang", "en", "--store", "-o",
                        str(out), "--executor", "ray", "--ray-address", f"127.0.0.1:{port}", "--no-progress"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and time.monotonic() - t0 < 60
    assert f"cannot join the Ray cluster at 127.0.0.1:{port}: nothing answers" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


def test_an_address_where_something_else_answers_fails_fast_in_one_line(corpus, tmp_path):
    """A web server on the port given as the head: ray.init would retry for minutes, printing
    Ray's C++ connection warnings (gcs_client.cc); the command says at once that it is not a
    Ray head, in one line, and leaves no store folder (issue 55)."""
    import http.server
    import subprocess
    import sys
    import threading
    import time

    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        out = tmp_path / "x.store"
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "bimine", "embed", str(corpus), "--lang", "en", "--store", "-o",
                            str(out), "--executor", "ray", "--ray-address", f"127.0.0.1:{server.server_port}",
                            "--no-progress"], capture_output=True, text=True, timeout=120)
    finally:
        server.shutdown()
    assert r.returncode == 2 and time.monotonic() - t0 < 30
    assert r.stderr.strip().splitlines() == [
        f"error: cannot join the Ray cluster at 127.0.0.1:{server.server_port}: something answers there, but not a "
        "Ray head (no gRPC); give the address 'ray start --head' printed (its GCS port, 6379 by default)"]
    assert not out.exists()


@pytest.mark.slow  # issue 72: the CI suite stays under 10 min on 2 cores; run with -m slow
def test_a_killed_run_leaves_no_ray_process_and_a_run_prints_no_ray_notices(corpus, tmp_path):
    """``kill -9`` of ``embed --executor ray`` on a cluster it started: every process of that
    cluster ends within seconds (Ray's two agents outlived it by 60-105 s); and a whole run
    prints no Ray notice (its token-authentication WARNING, the dashboard line) (issue 55)."""
    import signal
    import subprocess
    import sys
    import time

    psutil = pytest.importorskip("psutil")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    r = subprocess.run([sys.executable, "-m", "bimine", "embed", str(corpus), "--lang", "en", "--store", "-o",
                        str(tmp_path / "ok.store"), "--executor", "ray", "--no-progress"], capture_output=True,
                       text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert "WARNING" not in r.stderr and "dashboard" not in r.stderr and "INFO" not in r.stderr, r.stderr
    big = tmp_path / "big.en"
    big.write_text("\n".join(LINES * 200) + "\n")  # 500,000 lines: still embedding when killed
    p = subprocess.Popen([sys.executable, "-m", "bimine", "embed", str(big), "--lang", "en", "--store", "-o",
                          str(tmp_path / "big.store"), "--executor", "ray", "--shard-size", "5000", "--no-progress"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    driver = psutil.Process(p.pid)
    deadline = time.time() + 120
    agents: list = []
    while time.time() < deadline and p.poll() is None:
        family = driver.children(recursive=True)
        agents = [c for c in family if c.name().startswith("ray::") and "Agent" in c.name()]
        if len(agents) >= 2 and any("embed_shard" in c.name() for c in family):
            break
        time.sleep(0.2)
    assert p.poll() is None and agents, "the run ended before its cluster could be seen"
    family = [c for c in driver.children(recursive=True) if "_reaper" not in " ".join(c.cmdline())]
    p.send_signal(signal.SIGKILL)
    p.wait()

    def alive(c) -> bool:
        try:
            return c.is_running() and c.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    deadline = time.time() + 15
    while time.time() < deadline and any(alive(c) for c in family):
        time.sleep(0.2)
    left = [c.name() for c in family if alive(c)]
    assert not left, f"processes of the killed run's cluster still running: {left}"


def test_the_reachability_check_leaves_other_addresses_to_ray(monkeypatch):
    """"auto", "local", a ray:// client address, none at all: no socket is opened for them."""
    from bimine.distributed import ray_executor

    def refuse(*a, **k):
        raise AssertionError("no connection expected")

    monkeypatch.setattr(ray_executor.socket, "create_connection", refuse)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    for address in ("auto", "local", "ray://10.0.0.1:10001", None, "not-an-address"):
        ray_executor._check_reachable(address)
