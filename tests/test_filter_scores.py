"""Embedding scores of given pairs: the in-corpus margin (002 Eq. 2) against brute force."""

from __future__ import annotations

import numpy as np
import pytest

from bimine.scoring.pair_scores import corpus_margin


def unit(a):
    return (a / np.linalg.norm(a, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("kind", ["ratio", "distance", "eq9"])
def test_corpus_margin_equals_brute_force(kind):
    rng = np.random.default_rng(0)
    u = unit(rng.standard_normal((60, 16)))
    v = unit(u + 0.7 * rng.standard_normal((60, 16)))
    k = 4
    got = corpus_margin(u, v, k=k, kind=kind)
    s = u.astype(np.float64) @ v.T.astype(np.float64)
    mx = -np.sort(-s, axis=1)[:, :k].mean(axis=1)
    my = -np.sort(-s, axis=0)[:k, :].mean(axis=0)
    cos = np.diag(s)
    m = (mx + my) / 2
    want = {"ratio": cos / m, "distance": cos - m, "eq9": cos / m + cos}[kind]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_blank_rows_are_no_neighbours_and_get_nan():
    rng = np.random.default_rng(1)
    u = unit(rng.standard_normal((20, 8)))
    v = unit(u + 0.5 * rng.standard_normal((20, 8)))
    valid_src = np.array([i for i in range(20) if i != 3])
    got = corpus_margin(u, v, k=3, valid_src=valid_src)
    assert np.isnan(got[3]) and np.isfinite(np.delete(got, 3)).all()
    s = u @ v.T
    s[3, :] = -np.inf  # source 3 is no candidate for any target
    mx = -np.sort(-(u @ v.T), axis=1)[:, :3].mean(axis=1)
    my = -np.sort(-s, axis=0)[:3, :].mean(axis=0)
    want = np.diag(u @ v.T) / ((mx + my) / 2)
    np.testing.assert_allclose(np.delete(got, 3), np.delete(want, 3), rtol=1e-4)


def test_margin_in_the_pipeline_equals_the_whole_corpus_margin(tmp_path, tiny_model):
    """Blocks of 3 pairs: the margin column is computed against all 10 pairs, not per block."""
    from test_filter_pipeline import _blocks, read_tsv

    from bimine import load_encoder
    from bimine.filtering.pipeline import run_pipeline
    from bimine.scoring.pair_scores import MarginScore

    enc = load_encoder(tiny_model)
    src = [f"sentence number {i} about cats" for i in range(9)] + [""]
    tgt = [f"phrase numéro {i} sur les chats" for i in range(10)]
    out = tmp_path / "o.tsv"
    run_pipeline(_blocks(src, tgt, 3), [MarginScore(encoder=enc, src_lang="en", tgt_lang="fr", k=3)], str(out))
    got = np.array([float(x["margin"]) for x in read_tsv(out)])
    want = corpus_margin(enc.encode(src, "en"), enc.encode(tgt, "fr"), k=3, valid_src=np.arange(9))
    np.testing.assert_allclose(got[:9], want[:9], rtol=1e-5)
    assert np.isnan(got[9]) and np.isnan(want[9])
    rows = read_tsv(out)
    assert rows[9]["margin"] == "nan" and float(rows[9]["score"]) == 0.0  # a NaN component counts 0


def test_margin_index_is_exact_below_the_threshold_and_ivf_above():
    from bimine.scoring.pair_scores import MARGIN_EXACT_BELOW, margin_index

    assert margin_index(MARGIN_EXACT_BELOW - 1, 384).factory == "Flat"
    big = margin_index(1_000_000, 384)
    assert big.factory == "IVF4096,PQ128x4fs,Refine(SQfp16)" and big.nprobe == 32
    assert margin_index(10, 384, exact_below=5, nprobe=7).nprobe == 7


def test_approximate_margin_stays_close_to_the_exact_one():
    """Above ``exact_below`` the margin is searched with IVF: on clustered data (sentences
    come in topics) it keeps the exact margin's order and moves few values."""
    from scipy.stats import spearmanr

    from bimine.scoring.pair_scores import MarginScore

    rng = np.random.default_rng(3)
    n, d = 12_000, 32
    topics = unit(rng.standard_normal((200, d)))
    u = unit(topics[rng.integers(0, 200, n)] + 0.35 * rng.standard_normal((n, d)))
    v = unit(u + 0.25 * rng.standard_normal((n, d)))
    v[::10] = v[rng.permutation(n)[: len(v[::10])]]  # a tenth misaligned
    exact = corpus_margin(u, v)

    class Fixed:
        def encode(self, texts, lang):
            return (u if lang == "en" else v)[[int(t) for t in texts]]

    m = MarginScore(encoder=Fixed(), src_lang="en", tgt_lang="fr", exact_below=5_000, nprobe=16)
    got = m.score([str(i) for i in range(n)], [str(i) for i in range(n)])
    assert spearmanr(got, exact).statistic > 0.98
    assert np.median(np.abs(got - exact)) < 0.05  # 8 four-bit codes a vector at d = 32: coarse
    drop = (exact < np.quantile(exact, 0.1)) != (got < np.quantile(got, 0.1))
    assert drop.mean() < 0.02
    from bimine.errors import ConfigError

    with pytest.raises(ConfigError, match="nprobe"):
        MarginScore(nprobe=0)


def test_blank_pairs_get_no_cosine_and_rank_below_translations(tmp_path):
    """Two blank sides embed to the same vector (cosine 1.0): that is no evidence of a
    translation, so the cosine and the confidence are NaN there and `score` ranks the pair
    below every real translation (issue 42: blank/blank pairs scored 1.0)."""
    from bimine import load_encoder
    from bimine.scoring.pair_scores import ConfidenceScore, CosineScore

    enc = load_encoder("default")
    src = ["The cat sits on the mat.", "", "   ", "I like apples very much.", "Hello"]
    tgt = ["Le chat est assis sur le tapis.", "", "  ", "J'aime beaucoup les pommes.", ""]
    for f in (CosineScore(encoder=enc, src_lang="en", tgt_lang="fr"),
              ConfidenceScore(encoder=enc, src_lang="en", tgt_lang="fr")):
        s = f.score(src, tgt)
        assert np.isnan(s[[1, 2, 4]]).all() and np.isfinite(s[[0, 3]]).all(), (f.name, s)
    from click.testing import CliRunner

    from bimine.cli import filter  # noqa: F401  (registers score)
    from bimine.cli.main import cli

    tsv = tmp_path / "t.tsv"
    tsv.write_text("".join(f"{a}\t{b}\n" for a, b in zip(src, tgt)))
    out = tmp_path / "o.tsv"
    r = CliRunner().invoke(cli, ["score", str(tsv), "--src-lang", "en", "--tgt-lang", "fr", "-o", str(out)])
    assert r.exit_code == 0, r.output
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    score = [float(r[-1]) for r in rows[1:]]
    assert min(score[0], score[3]) > max(score[1], score[2], score[4])
