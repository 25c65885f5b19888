"""The targets of ``bimine adapt`` (issue 73): centring, and the pairs the teacher makes with the
pivot side, against a brute-force reference and hand computation."""

from __future__ import annotations

import numpy as np
import pytest

from bimine.training import adapt_targets as T


def unit(a):
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def brute_pairs(x, y, margin, k=4):
    """Mutual nearest neighbours by cosine with ratio margin >= margin, by loops over every pair."""
    out = []
    for i in range(len(x)):
        sims = [float(x[i] @ y[j]) for j in range(len(y))]
        j = int(np.argmax(sims))
        back = [float(y[j] @ x[m]) for m in range(len(x))]
        if int(np.argmax(back)) != i:
            continue
        fx = sorted(sims, reverse=True)[:k]
        by = sorted(back, reverse=True)[:k]
        if sims[j] / ((sum(fx) / len(fx) + sum(by) / len(by)) / 2) >= margin:
            out.append((i, j))
    return out


@pytest.mark.parametrize("margin", [0.0, 1.02, 1.1])
def test_pivot_pairs_are_the_brute_force_ones(margin, monkeypatch):
    rng = np.random.default_rng(0)
    base = unit(rng.normal(size=(60, 16)) + 2.0)  # a shared direction, as e5's vectors have
    x = unit(base[:40] + rng.normal(0, 0.05, (40, 16)))  # 40 sentences, 30 with a translation in y
    y = unit(np.concatenate([base[:30] + rng.normal(0, 0.05, (30, 16)), base[40:]]))
    monkeypatch.setattr(T, "BLOCK", 7)  # several blocks, the last one short
    rows, cols = T.pivot_pairs(x.astype(np.float32), y.astype(np.float32), margin)
    assert list(zip(rows.tolist(), cols.tolist())) == brute_pairs(x, y, margin)
    if margin == 1.02:
        planted = [(r, c) for r, c in zip(rows.tolist(), cols.tolist()) if r < 30]  # sentences with a translation
        assert len(planted) >= 25 and all(r == c for r, c in planted)


def test_centred_and_pivot_targets_by_hand():
    v = unit(np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]])).astype(np.float32)
    c = T.centred(v)
    mean = v.mean(axis=0)
    expect = (v - mean) / np.linalg.norm(v - mean, axis=1, keepdims=True)
    assert np.allclose(c, expect) and np.allclose(c[0], [0, 1 / np.sqrt(2), -1 / np.sqrt(2)], atol=1e-6)
    student = np.array([[0.0, 0.0, 1.0]], np.float32)
    out = T.pivot_targets(c, np.array([1]), student, 0.5)
    mixed = 0.5 * student[0] + 0.5 * c[1]
    assert np.allclose(out[1], mixed / np.linalg.norm(mixed)) and np.array_equal(out[0], c[0])
    assert T.pivot_pairs(v[:0], v, 1.0)[0].size == 0


def test_blended_targets_by_hand():
    t = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], np.float32)
    own = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]], np.float32)
    out = T.blended(t, own, 0.35)
    a = np.array([0.65, 0.0, 0.35])
    assert np.allclose(out[0], a / np.linalg.norm(a)) and np.allclose(out[1], [0.0, 1.0, 0.0])
    assert np.allclose(T.blended(t, own, 0.0), t) and np.allclose(T.blended(t, own, 1.0), own)


def test_adapt_targets_blend_the_models_own_vectors_of_the_same_texts():
    """Each line's and fragment's target: own_weight x the fast model's vector of that text (before
    adapting) + the rest of its centred teacher vector; the held-out lines' stay the teacher's."""
    from bimine.encoders import load_encoder
    from bimine.training.adapt import AdaptJob, _targets

    enc = load_encoder("default")
    texts = ["ສະບາຍດີ", "ຂອບໃຈຫຼາຍໆ", "ສະບາຍ", "ດີ"]  # two lines, then two fragments
    rng = np.random.default_rng(0)
    teacher = unit(rng.normal(size=(5, 384))).astype(np.float32)  # 4 texts, then 1 held-out line
    job = AdaptJob(text="x.txt", lang="lo", output="out", own_weight=0.35)
    targets, held, paired = _targets(job, enc, teacher, texts, 2, 1, None)
    lines_c, frags_c = T.centred(teacher[:2]), T.centred(teacher[2:4])
    own = enc.encode(texts, "lo")
    expect = unit(0.35 * own + 0.65 * np.concatenate([lines_c, frags_c]))
    assert np.allclose(targets, expect, atol=1e-6) and paired == 0
    assert np.allclose(held, T.centred(teacher[4:], teacher[:2].mean(axis=0)), atol=1e-6)
    plain, _, _ = _targets(AdaptJob(text="x.txt", lang="lo", output="out", own_weight=0.0), enc, teacher, texts, 2, 1,
                           None)
    assert np.allclose(plain, np.concatenate([lines_c, frags_c]), atol=1e-6)
