"""Tracebacks and limits (issue 72 §7): each is one line before any work, or a run that stays in
bounds: a name too long for the file system, a k-factor FAISS cannot allocate, NUMBA_NUM_THREADS=0,
--workers 1000, and Ctrl-C in the kNN search."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from bimine.cli.main import registered
from bimine.errors import OptionError
from tests.test_leftovers import ctrl_c_default

ROOT = Path(__file__).resolve().parents[1]
EN, FR = ROOT / "examples" / "sample.en", ROOT / "examples" / "sample.fr"
PAIR = ("--src-lang", "en", "--tgt-lang", "fr")
cli = registered()
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "BIMINE_PROGRESS": "0"}


def _one_line_error(r, *words: str) -> None:
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), r.output
    for w in words:
        assert w in lines[0], (w, lines[0])


@pytest.mark.parametrize("store", [True, False])
def test_a_name_too_long_for_the_file_system_is_one_line(tmp_path, store):
    name = tmp_path / ("s" * 300 if store else "n" * 250 + ".npy")  # 250 + ".npy": its temporary name is too long
    args = ["embed", str(EN), "--lang", "en", "-o", str(name)] + (["--store"] if store else [])
    _one_line_error(CliRunner().invoke(cli, args), "longer than the", "choose a shorter name")
    assert list(tmp_path.iterdir()) == []


def test_a_huge_k_factor_runs_as_the_largest_useful_one(tmp_path):
    """The issue's command ended in ``MemoryError: std::bad_alloc``: a k-factor beyond the keys
    there are is no more candidates (every key is re-scored), so it gives what the largest
    useful one gives (360 keys, k 4: 90)."""
    index = ("--index", "IVF16,PQ128x4fs,Refine(SQfp16)")
    out = {}
    for kf in ("1000000000", "90"):
        r = CliRunner().invoke(cli, ["mine", str(EN), str(FR), *PAIR, *index, "--k-factor", kf, "-o",
                                     str(tmp_path / f"{kf}.tsv"), "--no-progress"])
        assert r.exit_code == 0, r.output
        out[kf] = (tmp_path / f"{kf}.tsv").read_bytes()
    assert out["1000000000"] == out["90"] and out["90"]


def test_search_settings_beyond_memory_are_refused_before_faiss():
    from bimine.index.faiss_index import IndexConfig, check_search_memory

    cfg = IndexConfig(factory="IVF1024,PQ128x4fs,Refine(SQfp16)", k_factor=1_000_000)
    with pytest.raises(OptionError, match=r"--k-factor 1000000: .* use at most --k-factor \d+"):
        check_search_memory(cfg, 4, 5_000_000, 384, threads=2, available=8 << 30)
    check_search_memory(IndexConfig(factory=cfg.factory), 4, 5_000_000, 384, threads=2, available=8 << 30)
    with pytest.raises(OptionError, match=r"-k 1000000: .* use at most -k \d+"):
        check_search_memory(IndexConfig(factory="Flat"), 1_000_000, 5_000_000, 384, threads=2, available=8 << 30)


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_a_bad_numba_num_threads_is_one_line(tmp_path, value):
    r = subprocess.run([sys.executable, "-m", "bimine", "embed", str(EN), "-o", str(tmp_path / "x.npy")],
                       capture_output=True, text=True, env={**ENV, "NUMBA_NUM_THREADS": value})
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f"error: NUMBA_NUM_THREADS={value}: must be a whole number >= 1 (the threads of bimine's compiled kernels), "
        "or unset for one per core"], r.stderr
    assert not (tmp_path / "x.npy").exists()


def test_more_workers_than_work_are_capped_and_said(tmp_path, caplog):
    """The issue: --workers 1000 forked about 190 processes for 360 lines (37 s instead of 0.4 s)."""
    from bimine.cores import capped_workers, usable_cores

    r = CliRunner().invoke(cli, ["embed", str(EN), "--lang", "en", "-o", str(tmp_path / "w.npy"), "--workers", "1000",
                                 "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "--workers 1000: using 1 worker process(es), one per 1 batch(es) of work" in caplog.messages
    assert CliRunner().invoke(cli, ["embed", str(EN), "--lang", "en", "-o", str(tmp_path / "one.npy"),
                                    "--no-progress"]).exit_code == 0
    np.testing.assert_array_equal(np.load(tmp_path / "w.npy"), np.load(tmp_path / "one.npy"))
    assert capped_workers(1000) == usable_cores() and capped_workers(1000, 3) == min(3, usable_cores())
    assert capped_workers(1, 0) == 1


def test_ctrl_c_in_the_knn_search_stops_it_without_searching_the_queued_chunks(tmp_path):
    """The issue: mine took 19.5 s to stop on Ctrl-C in the kNN search; the main thread waited for
    every queued chunk of queries. Now Ctrl-C reaches it at once, and the chunks not started are
    never searched (counted: the test does not time anything)."""
    script = tmp_path / "search.py"
    script.write_text(textwrap.dedent("""
        import os, sys
        import numpy as np
        from bimine.index.faiss_index import KeyIndex, IndexConfig, search_stable, SEARCH_CHUNK

        rng = np.random.default_rng(0)
        keys = rng.standard_normal((60_000, 384), dtype=np.float32)
        queries = rng.standard_normal((SEARCH_CHUNK * 12, 384), dtype=np.float32)
        index = KeyIndex(384, len(keys), IndexConfig(factory="Flat"))
        index.add(keys)

        class Count:
            done = 0
            def update(self, n):
                Count.done += 1

        try:  # the Ctrl-C may land as soon as "searching" is out: inside the try
            print("searching", flush=True)
            search_stable(index, queries, 4, threads=2, progress=Count())
            print("finished", Count.done, flush=True)
        except KeyboardInterrupt:
            print("stopped", Count.done, flush=True)
        os._exit(0)
    """))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=ENV,
                         preexec_fn=ctrl_c_default)
    try:
        assert p.stdout.readline().strip() == "searching"
        p.send_signal(signal.SIGINT)
        last = p.stdout.readline().split()
        p.wait(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert last[0] == "stopped" and int(last[1]) < 12, last
