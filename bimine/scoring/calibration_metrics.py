"""Calibration metrics: expected calibration error and the reliability table behind a plot.

``reliability(p, y, bins)`` cuts [0, 1] into ``bins`` equal-width bins (a probability of
exactly 1 falls in the last) and returns, per bin, the number of predictions, their mean
predicted probability and the share that were right. The expected calibration error (Guo et
al. 2017) is the count-weighted mean of |share right - mean probability| over the bins.
"""

from __future__ import annotations

import numpy as np


def reliability(probs: np.ndarray, labels: np.ndarray, bins: int = 15) -> dict[str, np.ndarray]:
    """Per bin: ``count``, ``confidence`` (mean probability) and ``accuracy`` (share of true
    labels); empty bins have NaN means. Probabilities outside [0, 1] are an error."""
    p = np.asarray(probs, np.float64).ravel()
    y = np.asarray(labels, bool).ravel()
    if p.shape != y.shape:
        raise ValueError(f"{p.size} probabilities but {y.size} labels")
    if p.size and (np.nanmin(p) < 0 or np.nanmax(p) > 1):
        raise ValueError("probabilities must lie in [0, 1] (clip raw scores first)")
    which = np.minimum((p * bins).astype(np.int64), bins - 1)
    count = np.bincount(which, minlength=bins).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf = np.bincount(which, weights=p, minlength=bins) / count
        acc = np.bincount(which, weights=y.astype(np.float64), minlength=bins) / count
    return {"count": count, "confidence": conf, "accuracy": acc, "edges": np.linspace(0.0, 1.0, bins + 1)}


def expected_calibration_error(probs: np.ndarray, labels: np.ndarray, bins: int = 15) -> float:
    """Count-weighted mean over bins of |accuracy - confidence| (0 = perfectly calibrated)."""
    r = reliability(probs, labels, bins)
    n = r["count"].sum()
    if n == 0:
        return float("nan")
    used = r["count"] > 0
    return float((r["count"][used] * np.abs(r["accuracy"][used] - r["confidence"][used])).sum() / n)


def brier(probs: np.ndarray, labels: np.ndarray) -> float:
    """Mean squared difference between probability and outcome."""
    p = np.asarray(probs, np.float64).ravel()
    return float(np.mean((p - np.asarray(labels, np.float64).ravel()) ** 2)) if p.size else float("nan")
