"""The calibration helpers every trained score shares: the logistic function, the logistic fits
and the best-F1 threshold, each in one place.

* :func:`sigmoid`: ``1 / (1 + exp(-z))`` in float64, accurate in both tails and never
  overflowing. Every score that maps log-odds to a probability uses it.
* :func:`fit_logistic`: an L2-regularised logistic regression on several standardised columns
  (the filter's combined ``score``; L-BFGS from zeros, so the same data give the same fit).
* :func:`fit_logistic_1d`: ``P(y = 1) = sigmoid(a x + b)`` on one column by weighted maximum
  likelihood (Newton's method with step halving, so the loss never rises): the Platt scaling of
  the divergence model and the starting scale of the confidence head.
* :func:`best_f1_threshold`: the cut ``score >= t`` with the best F1 and its precision and
  recall; ties are one cut (every threshold it gives can be applied as ``>=``), and ``n_gold``
  counts positives that never became candidates (mining: gold pairs the search missed).
"""

from __future__ import annotations

import math

import numpy as np


def sigmoid(z) -> np.ndarray:
    """The logistic function, float64: ``1 / (1 + exp(-z))`` for ``z >= 0`` and ``exp(z) / (1 +
    exp(z))`` below, so that no ``z`` overflows and a small probability keeps its digits (the
    ``tanh`` form this replaced returned 0 for ``z = -40``, 4e-18, and lost 8 % of 2e-10)."""
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(-np.abs(z))
    out = np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return out if out.ndim else out[()]


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-2) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(mean, scale, weights, bias) of an L2-regularised logistic regression of ``y`` (1 = clean)
    on the columns of ``x``, standardised; L-BFGS from zeros, so the same data give the same fit."""
    from scipy.optimize import minimize  # loaded on use: SciPy is heavy or optional

    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    mean, scale = x.mean(0), x.std(0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    z1 = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])

    def loss(w):
        s = z1 @ w
        reg = w[:-1] @ w[:-1]
        grad = z1.T @ (sigmoid(s) - y)
        grad[:-1] += 2 * l2 * w[:-1]
        return float(np.sum(np.logaddexp(0.0, s) - y * s) + l2 * reg), grad

    w = minimize(loss, np.zeros(z1.shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": 1000}).x
    return mean, scale, w[:-1], float(w[-1])


def fit_logistic_1d(x, y, weights=None, *, l2: float = 0.0, max_iter: int = 100) -> tuple[float, float]:
    """``(a, b)`` of ``P(y = 1) = sigmoid(a x + b)`` by weighted maximum likelihood: Newton's
    method on the two parameters from ``(0, 0)``, each step halved until the loss does not rise;
    ``weights`` (default equal) are normalised to sum to 1, ``l2`` is a ridge on ``a``."""
    x = np.asarray(x, np.float64).ravel()
    y = np.asarray(y, np.float64).ravel()
    w = np.ones(len(y)) if weights is None else np.asarray(weights, np.float64).ravel()
    if not (len(x) == len(y) == len(w)):
        raise ValueError(f"{len(x)} scores, {len(y)} labels and {len(w)} weights")
    w = w / w.sum()
    X = np.stack([x, np.ones_like(x)], 1)
    theta = np.zeros(2)
    ridge = np.diag([l2, 0.0])

    def loss(t):
        s = X @ t
        return float(w @ (np.logaddexp(0, s) - y * s) + 0.5 * l2 * t[0] ** 2)

    cur = loss(theta)
    for _ in range(max_iter):
        p = sigmoid(X @ theta)
        grad = X.T @ (w * (p - y)) + ridge @ theta
        hess = (X * (w * p * (1 - p))[:, None]).T @ X + ridge + 1e-12 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        t, new = 1.0, None
        while t > 1e-8:  # step halving: the loss never rises
            if loss(theta - t * step) <= cur:
                new = theta - t * step
                break
            t /= 2
        if new is None:
            break
        theta, prev, cur = new, cur, loss(new)
        if np.max(np.abs(t * step)) < 1e-10 or prev - cur < 1e-15:
            break
    return float(theta[0]), float(theta[1])


def best_f1_threshold(scores: np.ndarray, labels: np.ndarray,
                      n_gold: int | None = None) -> tuple[float, float, float, float]:
    """The threshold (score >= t is positive) with the highest F1, and its precision, recall
    and F1; ties go to the higher threshold; NaN scores are left out. Recall counts ``n_gold``
    positives when given (positives that are not among ``scores`` count as missed). With no
    positive: ``(inf, 0, 0, 0)``."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=bool)
    keep = ~np.isnan(s)
    s, y = s[keep], y[keep]
    gold = int(y.sum()) if n_gold is None else int(n_gold)
    if not y.any() or gold <= 0:
        return math.inf, 0.0, 0.0, 0.0
    order = np.argsort(-s, kind="stable")
    s, y = s[order], y[order]
    tp = np.cumsum(y)
    fp = np.cumsum(~y)
    last = np.r_[s[1:] != s[:-1], True]  # a threshold sits at the last of equal scores
    tp, fp, cut = tp[last], fp[last], s[last]
    prec = tp / (tp + fp)
    rec = tp / gold
    f1 = np.where(prec + rec > 0, 2 * prec * rec / np.maximum(prec + rec, 1e-300), 0.0)
    j = int(np.argmax(f1))
    return float(cut[j]), float(prec[j]), float(rec[j]), float(f1[j])
