"""The shared calibration helpers (bimine.scoring.logistic) against references: brute force over
every cut, hand-computed cases, and a general-purpose optimiser on the same loss."""

import math

import numpy as np
import pytest

from bimine.scoring.logistic import best_f1_threshold, fit_logistic, fit_logistic_1d, sigmoid


def _brute_best_f1(s, y, gold):
    best, bt = -1.0, None
    for t in np.unique(s):
        pred = s >= t
        tp = (pred & y).sum()
        f = 2 * tp / (pred.sum() + gold)
        if f > best + 1e-12:
            best, bt = f, t
    return best, bt


@pytest.mark.parametrize("n_gold", [None, 200])
def test_best_f1_threshold_matches_brute_force(n_gold):
    rng = np.random.default_rng(0)
    s = np.round(rng.random(300), 2)  # ties
    y = rng.random(300) < 0.3 + 0.5 * s
    gold = int(y.sum()) if n_gold is None else n_gold
    best, bt = _brute_best_f1(s, y, gold)
    t, p, r, f = best_f1_threshold(s, y, n_gold=n_gold)
    assert f == pytest.approx(best) and t == bt
    pred = s >= t
    assert p == pytest.approx((pred & y).sum() / pred.sum())
    assert r == pytest.approx((pred & y).sum() / gold)


def test_best_f1_threshold_by_hand():
    p = np.array([0.9, 0.8, 0.7, 0.2])
    y = np.array([1, 0, 1, 0])
    # cuts: 0.9 -> P 1, R 1/2; 0.8 -> 1/2, 1/2; 0.7 -> 2/3, 1 (F1 0.8); 0.2 -> 1/2, 1
    assert best_f1_threshold(p, y) == pytest.approx((0.7, 2 / 3, 1.0, 0.8))
    # two gold pairs were never candidates: at 0.7, P 2/3, R 2/4, F1 4/7
    assert best_f1_threshold(p, y, n_gold=4) == pytest.approx((0.7, 2 / 3, 0.5, 4 / 7))


def test_best_f1_threshold_counts_tied_scores_as_one_cut():
    """A cut keeps every score >= it: the F1 reported is the one that cut gives. Scores
    (0.9 gold, 0.7 gold, 0.7 not): cutting between the two 0.7s (F1 1.0) cannot be applied."""
    t, p, r, f = best_f1_threshold(np.array([0.9, 0.7, 0.7]), np.array([1, 1, 0]))
    assert (t, p, r) == (0.7, pytest.approx(2 / 3), 1.0) and f == pytest.approx(0.8)


def test_best_f1_threshold_without_positives_and_with_nan():
    assert best_f1_threshold(np.array([0.3, 0.2]), np.array([0, 0])) == (math.inf, 0.0, 0.0, 0.0)
    t, p, r, f = best_f1_threshold(np.array([0.9, np.nan, 0.1]), np.array([1, 1, 0]))
    assert (t, p, r, f) == (0.9, 1.0, 1.0, 1.0)  # the NaN row is left out


def test_sigmoid_keeps_small_probabilities_and_never_overflows():
    """Reference: math.exp per value, in the form that is exact on each side. The tanh form
    used before gave 0 at z = -40 and 8e-8 relative error at z = -22 (a divergence or
    confidence score of a very unlikely pair lost its digits)."""
    z = np.r_[np.linspace(-700, 700, 1401), -40.0, -22.26]
    ref = np.array([math.exp(v) / (1 + math.exp(v)) if v < 0 else 1 / (1 + math.exp(-v)) for v in z])
    np.testing.assert_allclose(sigmoid(z), ref, rtol=1e-15, atol=0)
    assert sigmoid(-40.0) > 0 and sigmoid(-40.0) == pytest.approx(4.248354255291589e-18, rel=1e-15)
    with np.errstate(over="raise", under="ignore"):
        assert sigmoid(np.array([-1e4, 1e4])).tolist() == [0.0, 1.0]
    assert sigmoid(0.0) == 0.5 and isinstance(sigmoid(0.0), float)


def test_fit_logistic_1d_matches_a_general_optimiser_on_the_same_loss():
    from scipy.optimize import minimize

    rng = np.random.default_rng(3)
    x = rng.normal(size=400)
    y = (rng.random(400) < sigmoid(1.7 * x - 0.4)).astype(float)
    w = rng.random(400) + 0.5
    for weights, l2 in ((None, 0.0), (w, 0.0), (w, 0.3)):
        ww = np.ones(400) if weights is None else weights
        ww = ww / ww.sum()

        def loss(t, ww=ww, l2=l2):
            s = t[0] * x + t[1]
            return float(ww @ (np.logaddexp(0, s) - y * s) + 0.5 * l2 * t[0] ** 2)

        ref = minimize(loss, np.zeros(2), method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14}).x
        a, b = fit_logistic_1d(x, y, weights, l2=l2)
        assert (a, b) == pytest.approx(tuple(ref), abs=1e-5)
    with pytest.raises(ValueError, match="labels"):
        fit_logistic_1d(x, y[:-1])


def test_fit_logistic_is_deterministic_and_finds_the_direction():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 3))
    y = (rng.random(2000) < sigmoid(2.0 * x[:, 0] - 1.0 * x[:, 2])).astype(float)
    mean, scale, w, b = fit_logistic(x, y)
    assert w[0] > 1.5 and w[2] < -0.7 and abs(w[1]) < 0.2
    again = fit_logistic(x, y)
    assert all(np.array_equal(a1, a2) for a1, a2 in zip((mean, scale, w, b), again))
