"""Mining never writes wrong pairs: FAISS padding, cache keys, kills and approximate indexes.

Each test here would have caught a fault found in issue 8: kNN lists reused from a work dir
for other inputs of the same size; FAISS "no neighbour" rows (id -1, similarity -3.4e38)
averaged into the margin; and it checks kill-and-rerun and approximate-vs-exact agreement.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from bimine.index.faiss_index import IndexConfig
from bimine.mining.pipeline import knn_both_ways, mine_sides, side_from_array
from bimine.mining.spec import MineConfig
from bimine.scoring.margin import knn_mean, score_candidates


def clustered(rng, n, d, centres=20, spread=0.35):
    c = rng.standard_normal((centres, d)).astype(np.float32)
    x = c[rng.integers(0, centres, n)] + spread * rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def noisy_copy(rng, x, noise):
    y = x + noise * rng.standard_normal(x.shape).astype(np.float32)
    return y / np.linalg.norm(y, axis=1, keepdims=True)


def test_knn_mean_uses_valid_neighbours_only():
    pad = np.float32(-3.4028235e38)
    sims = np.array([[0.9, 0.7, pad, pad], [0.5, 0.4, 0.3, 0.2], [pad, pad, pad, pad]], np.float32)
    ids = np.array([[3, 1, -1, -1], [0, 1, 2, 3], [-1, -1, -1, -1]])
    m = knn_mean(sims, 4, ids)
    assert m[0] == pytest.approx(0.8) and m[1] == pytest.approx(0.35) and np.isnan(m[2])


def test_margin_with_padded_rows_is_finite_and_uses_what_exists():
    pad = np.float32(-3.4028235e38)
    # source 0 has two neighbours, source 1 none; targets: 0 has one neighbour, 1 has none
    sxy = np.array([[0.8, 0.6], [pad, pad]], np.float32)
    ixy = np.array([[0, 1], [-1, -1]])
    syx = np.array([[0.8, pad], [pad, pad]], np.float32)
    iyx = np.array([[0, -1], [-1, -1]])
    for kind in ("ratio", "distance", "eq9", "eq10", "absolute"):
        fwd, bwd = score_candidates(kind, 2, sxy, ixy, syx, iyx)
        assert np.all(np.isfinite(fwd[ixy >= 0])) and np.all(fwd[ixy < 0] == -np.inf)
        assert np.all(np.isfinite(bwd[iyx >= 0])) and np.all(bwd[iyx < 0] == -np.inf)
    fwd, _ = score_candidates("ratio", 2, sxy, ixy, syx, iyx)
    # (0, 0): mean of source 0 = 0.7, of target 0 = 0.8; (0, 1): target 1 has no neighbour -> 0.7 alone
    assert fwd[0, 0] == pytest.approx(0.8 / 0.75) and fwd[0, 1] == pytest.approx(0.6 / 0.7)


def _reference_scores(kind, k, sxy, ixy, syx, iyx):
    """Margins by explicit loops over the valid neighbours only."""
    def mean(s, i):
        v = [float(a) for a, b in zip(s[:k], i[:k]) if b >= 0]
        return sum(v) / len(v) if v else None

    mx = [mean(s, i) for s, i in zip(sxy, ixy)]
    my = [mean(s, i) for s, i in zip(syx, iyx)]
    out = {}
    for a in range(len(sxy)):
        for c in range(sxy.shape[1]):
            b = int(ixy[a, c])
            if b < 0:
                continue
            cos = float(sxy[a, c])
            both = [m for m in (mx[a], my[b]) if m is not None]
            m = sum(both) / len(both)
            out[(a, b)] = {"ratio": cos / m, "distance": cos - m, "eq9": cos / m + cos}[kind]
    return out


@pytest.mark.parametrize("kind", ["ratio", "distance", "eq9"])
def test_ivf_nprobe_1_and_k_above_corpus_gives_finite_correct_scores(kind, caplog):
    rng = np.random.default_rng(0)
    x, y = clustered(rng, 60, 16, centres=8), clustered(rng, 50, 16, centres=8)
    index = IndexConfig(factory="IVF8,Flat", nprobe=1)
    cfg = MineConfig(k=10, score=kind, strategy="forward", threshold=None, index=index)
    sx, sy = side_from_array(x), side_from_array(y)
    sxy, ixy, syx, iyx = knn_both_ways(sx, sy, cfg)
    assert (ixy < 0).any() and (iyx < 0).any()  # the search really padded some rows
    s, i, j = mine_sides(sx, sy, cfg)
    assert len(s) > 0 and np.all(np.isfinite(s)) and np.all(np.abs(s) < 10)
    ref = _reference_scores(kind, 10, sxy, ixy, syx, iyx)
    for sc, a, b in zip(s.tolist(), i.tolist(), j.tolist()):
        assert sc == pytest.approx(ref[(a, b)], rel=1e-4, abs=1e-5)
    # k above the corpus size: capped, with a warning
    with caplog.at_level(logging.WARNING, logger="bimine.mining.pipeline"):
        s2, _, _ = mine_sides(sx, sy, MineConfig(k=500, score=kind, index=index))
    assert "using k = 50" in caplog.text and np.all(np.isfinite(s2))


def test_approximate_auto_index_agrees_with_exact_on_planted_corpus():
    """12k x 12k: large enough that 'auto' (exact below 5k here) picks IVF + fast-scan PQ."""
    rng = np.random.default_rng(1)
    n, d = 12_000, 32
    x = clustered(rng, n, d, centres=300, spread=0.5)
    perm = rng.permutation(n)
    y = noisy_copy(rng, x[perm], 0.05)  # y[j] translates x[perm[j]]
    approx = MineConfig(index=IndexConfig(exact_below=5_000))
    exact = MineConfig(index=IndexConfig(factory="Flat"))
    rep = {}
    from bimine.mining.pipeline import MineReport

    rep["approx"] = MineReport()
    s1, i1, j1 = mine_sides(side_from_array(x), side_from_array(y), approx, report=rep["approx"])
    s2, i2, j2 = mine_sides(side_from_array(x), side_from_array(y), exact)
    assert rep["approx"].index.startswith("IVF")
    a, b = set(zip(i1.tolist(), j1.tolist())), set(zip(i2.tolist(), j2.tolist()))
    assert len(a & b) >= 0.99 * len(b)
    assert np.mean(perm[j2] == i2) > 0.95  # and the exact pairs are the planted ones


# --- work dirs: cache keyed by what it was computed from ---------------------------------

def _corpus(path: Path, words: list[str], n: int, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    lines = [" ".join(rng.choice(words, size=rng.integers(3, 9))) for _ in range(n)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


WORDS_A = "the cat sleeps on a red sofa while dog eats bread and milk in kitchen".split()
WORDS_B = "le chat dort sur un canapé rouge pendant que chien mange pain et lait dans cuisine".split()


def _mine(tmp_path, src, tgt, out, model, **kw):
    from bimine.encoders import load_encoder
    from bimine.mining.pipeline import mine_files
    from bimine.mining.spec import MineJob

    if "cfg" in kw:
        kw["mine"] = kw.pop("cfg")
    return mine_files(MineJob(str(src), str(tgt), str(out), src_lang="en", tgt_lang="fr", progress=False, workers=1,
                              **kw), encoder=load_encoder(str(model)))


def test_reused_work_dir_with_other_inputs_of_same_size_gives_fresh_output(tmp_path, tiny_model):
    a_src, a_tgt = _corpus(tmp_path / "a.en", WORDS_A, 40, 1), _corpus(tmp_path / "a.fr", WORDS_B, 40, 2)
    b_src, b_tgt = _corpus(tmp_path / "b.en", WORDS_A, 40, 3), _corpus(tmp_path / "b.fr", WORDS_B, 40, 4)
    work = tmp_path / "work"
    _mine(tmp_path, a_src, a_tgt, tmp_path / "a.tsv", tiny_model, work_dir=str(work))
    rep = _mine(tmp_path, b_src, b_tgt, tmp_path / "b-reused.tsv", tiny_model, work_dir=str(work))
    assert rep.reused == []  # nothing of run A applies to B
    _mine(tmp_path, b_src, b_tgt, tmp_path / "b-fresh.tsv", tiny_model)
    assert (tmp_path / "b-reused.tsv").read_bytes() == (tmp_path / "b-fresh.tsv").read_bytes()
    assert (tmp_path / "a.tsv").read_bytes() != (tmp_path / "b-fresh.tsv").read_bytes()
    # a rerun of B reuses everything, says so, and writes the same
    rep = _mine(tmp_path, b_src, b_tgt, tmp_path / "b-again.tsv", tiny_model, work_dir=str(work))
    assert len(rep.reused) == 4 and "index: reused kNN lists" in rep.summary()
    assert (tmp_path / "b-again.tsv").read_bytes() == (tmp_path / "b-fresh.tsv").read_bytes()
    # other settings (k) or another declared language: recomputed, not reused
    rep = _mine(tmp_path, b_src, b_tgt, tmp_path / "b-k2.tsv", tiny_model, work_dir=str(work), cfg=MineConfig(k=2))
    assert not any(r.startswith("kNN") for r in rep.reused)
    from bimine.encoders import load_encoder
    from bimine.mining.pipeline import mine_files
    from bimine.mining.spec import MineJob

    rep = mine_files(MineJob(str(b_src), str(b_tgt), str(tmp_path / "b-de.tsv"), src_lang="de", tgt_lang="fr",
                             progress=False, work_dir=str(work), workers=1), encoder=load_encoder(str(tiny_model)))
    assert not any(r.startswith("src") for r in rep.reused)


def test_tampered_knn_cache_is_recomputed(tmp_path, tiny_model):
    src, tgt = _corpus(tmp_path / "a.en", WORDS_A, 30, 1), _corpus(tmp_path / "a.fr", WORDS_B, 30, 2)
    work = tmp_path / "work"
    _mine(tmp_path, src, tgt, tmp_path / "1.tsv", tiny_model, work_dir=str(work))
    f = next(work.glob("knn-fwd-*.npz"))
    with np.load(f) as z:
        np.savez(f, sims=z["sims"], ids=z["ids"][::-1].copy(), meta=np.array('{"format": "other"}'))
    rep = _mine(tmp_path, src, tgt, tmp_path / "2.tsv", tiny_model, work_dir=str(work))
    assert not any(r.startswith("kNN fwd") for r in rep.reused)
    assert (tmp_path / "1.tsv").read_bytes() == (tmp_path / "2.tsv").read_bytes()


# --- kill -9 while embedding and while searching, then rerun ------------------------------

HARNESS = textwrap.dedent('''
    """Runs mine_files with a slowed-down step, writing a marker when that step is under way."""
    import sys, time, pathlib
    import bimine.store.store as S
    import bimine.index.sides as SD
    import bimine.mining.pipeline as P
    from bimine.encoders import load_encoder

    slow, marker, model, src, tgt, out, work = sys.argv[1:8]
    marker = pathlib.Path(marker)
    cli = work == "-"  # run the 'bimine mine' command (its signal handling included), no work dir
    if slow == "embed":
        orig = S.embed_lines
        def embed_lines(*a, **kw):
            for e in orig(*a, **kw):
                marker.write_text("embedding")
                time.sleep(0.3)
                yield e
        S.embed_lines = embed_lines
    else:
        orig = SD.knn_search
        calls = []
        def knn_search(*a, **kw):
            calls.append(1)
            if len(calls) == 2:  # the backward search, after the forward lists were saved
                marker.write_text("searching")
                time.sleep(60)
            return orig(*a, **kw)
        SD.knn_search = knn_search
    if cli:
        from bimine.cli.main import main
        sys.argv = ["bimine", "mine", src, tgt, "--src-lang", "en", "--tgt-lang", "fr", "-o", out, "-m", model,
                    "--workers", "1"]
        main()
    else:
        P.mine_files(P.MineJob(src, tgt, out, src_lang="en", tgt_lang="fr", work_dir=work, progress=False,
                               workers=1, shard_size=10), encoder=load_encoder(model))
''')


@pytest.mark.parametrize("moment", ["embed", "search"])
def test_sigkill_then_rerun_gives_byte_identical_output(tmp_path, tiny_model, moment):
    src, tgt = _corpus(tmp_path / "a.en", WORDS_A, 60, 1), _corpus(tmp_path / "a.fr", WORDS_B, 60, 2)
    _mine(tmp_path, src, tgt, tmp_path / "want.tsv", tiny_model, shard_size=10)
    work, out = tmp_path / "work", tmp_path / "got.tsv"
    p = _start(tmp_path, moment, tiny_model, src, tgt, out, work)
    if moment == "embed":  # let it finish a few shards of the source side first
        while len(list(work.glob("src-*.store/shard-*.npy"))) < 2 and p.poll() is None:
            time.sleep(0.05)
    assert p.poll() is None, "the run ended before it could be killed"
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert not out.exists()
    if moment == "search":
        assert list(work.glob("knn-fwd-*.npz")) and not list(work.glob("knn-bwd-*.npz"))
    rep = _mine(tmp_path, src, tgt, out, tiny_model, work_dir=str(work), shard_size=10)
    assert out.read_bytes() == (tmp_path / "want.tsv").read_bytes()
    if moment == "search":
        assert any(r.startswith("kNN fwd") for r in rep.reused)
    assert not [f for f in tmp_path.rglob("*tmp*") if f.name != "harness.py"]


def _start(tmp_path, moment, model, src, tgt, out, work, env=None):
    harness = tmp_path / "harness.py"
    harness.write_text(HARNESS)
    marker = tmp_path / "marker"
    marker.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1]), **(env or {})}
    p = subprocess.Popen([sys.executable, str(harness), moment, str(marker), str(model), str(src), str(tgt),
                          str(out), str(work)], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not marker.exists() and p.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert p.poll() is None, "the run ended before it could be stopped: " + (p.stderr.read() if p.stderr else "")
    return p


def test_sigterm_removes_the_temporary_mining_folder_and_sigkill_leftovers_are_swept(tmp_path, tiny_model):
    src, tgt = _corpus(tmp_path / "a.en", WORDS_A, 60, 1), _corpus(tmp_path / "a.fr", WORDS_B, 60, 2)
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    out = tmp_path / "pairs.tsv"
    p = _start(tmp_path, "search", tiny_model, src, tgt, out, "-", env={"TMPDIR": str(tmp)})
    assert list(tmp.glob("bimine-mine-tmp-*"))  # the run's temporary folder exists while it works
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode != 0 and "Traceback" not in err
    assert not list(tmp.iterdir()) and not out.exists()
    # SIGKILL cannot clean up: the next run sweeps what the dead process left
    p = _start(tmp_path, "search", tiny_model, src, tgt, out, "-", env={"TMPDIR": str(tmp)})
    p.send_signal(signal.SIGKILL)
    p.wait()
    left = list(tmp.glob("bimine-mine-tmp-*"))
    assert left
    stale_out = tmp_path / f"pairs.tsv.tmp-{p.pid}"
    stale_out.write_text("half-written")
    env = {**os.environ, "TMPDIR": str(tmp)}
    r = subprocess.run([sys.executable, "-m", "bimine", "mine", str(src), str(tgt), "--src-lang", "en",
                        "--tgt-lang", "fr", "-o", str(out), "-m", str(tiny_model), "--workers", "1"],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert not list(tmp.iterdir()) and not stale_out.exists() and out.exists()


# --- checked before any work ---------------------------------------------------------------

def test_tab_inside_a_line_is_refused_for_tsv_and_kept_in_jsonl(tmp_path, tiny_model):
    from bimine.errors import InputError

    src = _corpus(tmp_path / "a.en", WORDS_A, 20, 1)
    tgt = tmp_path / "a.fr"
    tgt.write_text("un chat\nle\tchien mange\nle pain\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"a\.fr:2: contains a tab.*--format jsonl"):
        _mine(tmp_path, src, tgt, tmp_path / "p.tsv", tiny_model)
    assert not (tmp_path / "p.tsv").exists()
    _mine(tmp_path, src, tgt, tmp_path / "p.jsonl", tiny_model, fmt="jsonl")
    import json

    rows = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert "le\tchien mange" in {r["tgt"] for r in rows}


def test_store_of_another_language_is_refused(tmp_path, tiny_model):
    from bimine.encoders import load_encoder
    from bimine.errors import InputError
    from bimine.store import build_store

    src, tgt = _corpus(tmp_path / "a.en", WORDS_A, 20, 1), _corpus(tmp_path / "a.fr", WORDS_B, 20, 2)
    build_store(str(src), tmp_path / "src.store", load_encoder(str(tiny_model)), "de", progress=False)
    with pytest.raises(InputError, match="was embedded as language 'de', but 'en' was asked for"):
        _mine(tmp_path, src, tgt, tmp_path / "p.tsv", tiny_model, src_store=str(tmp_path / "src.store"))


def test_output_problems_fail_before_any_work(tmp_path, tiny_model, monkeypatch):
    import bimine.mining.pipeline as P
    from bimine.errors import ConfigError

    def no_work(*a, **kw):
        raise AssertionError("embedding started before the output was checked")

    monkeypatch.setattr(P, "build_store", no_work)
    src, tgt = _corpus(tmp_path / "a.en", WORDS_A, 20, 1), _corpus(tmp_path / "a.fr", WORDS_B, 20, 2)
    with pytest.raises(ConfigError, match="does not exist"):
        _mine(tmp_path, src, tgt, tmp_path / "missing" / "p.tsv", tiny_model)
    with pytest.raises(ConfigError, match="is the input"):
        _mine(tmp_path, src, tgt, tgt, tiny_model)
    with pytest.raises(ConfigError, match="is a folder"):
        _mine(tmp_path, src, tgt, tmp_path, tiny_model)
    assert tgt.read_text().count("\n") == 20


def test_blank_only_input_warns(tmp_path, tiny_model, caplog):
    src = _corpus(tmp_path / "a.en", WORDS_A, 20, 1)
    blank = tmp_path / "blank.fr"
    blank.write_text("\n  \n\n")
    with caplog.at_level(logging.WARNING, logger="bimine.mining.pipeline"):
        rep = _mine(tmp_path, src, blank, tmp_path / "p.tsv", tiny_model)
    assert rep.written == 0 and "has only blank lines (3): nothing to mine" in caplog.text


def test_index_too_large_for_the_corpus_fails_before_embedding(tmp_path, tiny_model, monkeypatch):
    import bimine.mining.pipeline as P
    from bimine.errors import ConfigError

    monkeypatch.setattr(P, "build_store", lambda *a, **kw: (_ for _ in ()).throw(AssertionError("embedded")))
    src, tgt = _corpus(tmp_path / "a.en", WORDS_A, 20, 1), _corpus(tmp_path / "a.fr", WORDS_B, 20, 2)
    with pytest.raises(ConfigError, match="IVF64,Flat: needs at least 64 sentences per side"):
        _mine(tmp_path, src, tgt, tmp_path / "p.tsv", tiny_model, cfg=MineConfig(index=IndexConfig(factory="IVF64,Flat")))


def test_changed_index_default_recomputes_cached_knn(tmp_path, tiny_model, monkeypatch):
    """A cache keyed by the settings as asked ("nprobe 0 = default") would survive a change of
    the default; the key holds the resolved factory and nprobe, so it does not."""
    import bimine.index.sides as sides

    src, tgt = _corpus(tmp_path / "a.en", WORDS_A, 80, 1), _corpus(tmp_path / "a.fr", WORDS_B, 80, 2)
    work = tmp_path / "work"
    cfg = MineConfig(index=IndexConfig(factory="IVF4,Flat"))
    _mine(tmp_path, src, tgt, tmp_path / "1.tsv", tiny_model, work_dir=str(work), cfg=cfg)
    rep = _mine(tmp_path, src, tgt, tmp_path / "2.tsv", tiny_model, work_dir=str(work), cfg=cfg)
    assert any(r.startswith("kNN fwd") for r in rep.reused)
    monkeypatch.setattr(sides, "effective_nprobe", lambda factory, nprobe: 4)  # as if the default changed
    rep = _mine(tmp_path, src, tgt, tmp_path / "3.tsv", tiny_model, work_dir=str(work), cfg=cfg)
    assert not any(r.startswith("kNN") for r in rep.reused)
