"""The combined ``score``: one number per pair that orders pairs from clean to noisy (issue 42).

``combine: model`` (the default with the shipped model): a pair that fails any hard rule of the
pipeline (a filter with a threshold: empty side, copy, wrong language, numbers or URLs that
differ, absurd length ratio, ...) scores 0, Bicleaner's convention; every other pair scores the
probability that it is clean, from a logistic regression over fixed transforms of the graded
evidence (calibrated confidence, margin, cosine, language-identifier score, length ratio, copied
words, length, sentence punctuation, repeated sides, menu separators, sentence counts, coverage),
so its scale does not depend on the corpus. The weights are fitted by
``python -m benchmarks.fit_combiner`` on synthetic web-crawl noise made from newstest2012 (dev)
and shipped with the model (``combiner.json``); a ``--classifier`` adds its log-odds.

``combine: sum`` is paper 002's Eq. 3 (the sum of the graded scores, clean-high) and
``combine: minmax`` its Eq. 4 (each min-max normalised first); both stay available.

``combine: gate`` (``bimine divergence`` and ``select``): the pipeline's one probability score
(the divergence model's P(equivalent)), 0 for a pair that fails a hard rule, as ``model`` does:
an untranslated copy or a side in another language is no equivalent translation, whatever the
model, which compares word vectors, thinks of it (a copy's words match one for one).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bimine.encoders.base import head_ids, heads_folder
from bimine.errors import ConfigError
from bimine.outputs import atomic_path
from bimine.scoring.logistic import sigmoid
from bimine.weights import read_json

COMBINER_FILE = "combiner.json"
FORMAT = 1

# name -> (the columns it reads, how): the transforms are fixed code, the weights data
TRANSFORMS = {
    "conf_logit": ("confidence",),
    "margin": ("margin",),
    "cosine": ("cosine",),
    "lang": ("lang",),
    "log_len_ratio": ("length_ratio",),
    "copy": ("copy",),
    "log_units": ("min_length",),
    "punct_both": ("punct",),
    "punct_one": ("punct",),
    "log_repeat": ("repeat",),
    "menu": ("menu",),
    "length_log": ("length_log",),
    "length_log_sq": ("length_log",),
    "sentences": ("sentences",),
    "cover": ("cover",),
    "bare_repeat": ("punct", "repeat"),
    "lone_numbers": ("lone_numbers",),
}


def transform(name: str, cols: dict[str, np.ndarray]) -> np.ndarray:
    """Feature ``name`` (:data:`TRANSFORMS`) from the score columns; NaN (a blank side, a score
    that cannot be computed) becomes the value that says nothing either way."""

    def c(col: str) -> np.ndarray:
        return np.asarray(cols[col], dtype=np.float64)

    if name == "conf_logit":
        p = np.clip(np.nan_to_num(c("confidence"), nan=0.5), 1e-4, 1 - 1e-4)
        return np.log(p / (1 - p))
    if name == "margin":
        return np.clip(np.nan_to_num(c("margin"), nan=1.0), 0.5, 2.5)
    if name == "cosine":
        return np.nan_to_num(c("cosine"), nan=0.0)
    if name == "lang":
        return np.nan_to_num(c("lang"), nan=0.5)
    if name == "log_len_ratio":
        return np.log(np.maximum(np.nan_to_num(c("length_ratio"), nan=1.0), 1.0))
    if name == "copy":
        return np.nan_to_num(c("copy"), nan=0.0)
    if name == "log_units":
        return np.log1p(np.maximum(np.nan_to_num(c("min_length"), nan=0.0), 0.0))
    if name == "punct_both":
        return (c("punct") == 2).astype(np.float64)
    if name == "punct_one":
        return (c("punct") == 1).astype(np.float64)
    if name == "log_repeat":
        return np.log(np.maximum(np.nan_to_num(c("repeat"), nan=1.0), 1.0))
    if name == "menu":
        return np.minimum(np.nan_to_num(c("menu"), nan=0.0), 2.0)
    if name == "length_log":
        return np.nan_to_num(c("length_log"), nan=0.0)
    if name == "length_log_sq":
        return np.nan_to_num(c("length_log"), nan=0.0) ** 2
    if name == "sentences":
        return np.minimum(np.nan_to_num(c("sentences"), nan=0.0), 3.0)
    if name == "cover":
        return np.clip(np.nan_to_num(c("cover"), nan=0.0), -0.5, 0.5)
    if name == "bare_repeat":  # a recurring pair with no sentence punctuation: boilerplate, a menu item
        return (np.nan_to_num(c("punct"), nan=1.0) == 0) * np.log(np.maximum(np.nan_to_num(c("repeat"), nan=1.0), 1.0))
    if name == "lone_numbers":
        return np.log1p(np.maximum(np.nan_to_num(c("lone_numbers"), nan=0.0), 0.0))
    raise ConfigError(f"unknown combiner feature {name!r}")


def columns_of(features: list[str]) -> list[str]:
    """The score columns ``features`` read, in order, without repeats."""
    return list(dict.fromkeys(col for f in features for col in TRANSFORMS[f]))


@dataclass
class LogisticCombiner:
    """``P(clean) = sigmoid(bias + sum_j w_j (x_j - mean_j) / scale_j)`` over :data:`TRANSFORMS`.
    ``cut``: the default decision threshold on it (``filter`` keeps pairs at or above)."""

    features: list[str]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    cut: float = 0.5
    info: dict = field(default_factory=dict)

    @property
    def columns(self) -> list[str]:
        return columns_of(self.features)

    def logit(self, cols: dict[str, np.ndarray]) -> np.ndarray:
        x = np.stack([transform(f, cols) for f in self.features], axis=1)
        return ((x - self.mean) / self.scale) @ self.weights + self.bias

    def probability(self, cols: dict[str, np.ndarray]) -> np.ndarray:
        return sigmoid(self.logit(cols))

    def to_dict(self) -> dict:
        return {"format": FORMAT, "features": self.features, "mean": self.mean.tolist(), "scale": self.scale.tolist(),
                "weights": self.weights.tolist(), "bias": self.bias, "cut": self.cut, "info": self.info}

    @classmethod
    def from_dict(cls, d: dict, where: str = "combiner") -> LogisticCombiner:
        try:
            if d.get("format") != FORMAT:
                raise ConfigError(f"{where}: format {d.get('format')!r}; this bimine reads {FORMAT}")
            feats = list(d["features"])
            bad = [f for f in feats if f not in TRANSFORMS]
            if bad:
                raise ConfigError(f"{where}: unknown feature(s) {bad}")
            arrays = [np.asarray(d[k], dtype=np.float64) for k in ("mean", "scale", "weights")]
            if any(a.shape != (len(feats),) for a in arrays) or not all(np.isfinite(a).all() for a in arrays):
                raise ConfigError(f"{where}: mean, scale and weights must be {len(feats)} finite numbers each")
            return cls(feats, *arrays, bias=float(d["bias"]), cut=float(d.get("cut", 0.5)), info=d.get("info", {}))
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"{where}: not a combiner ({e})") from None


@dataclass
class Combiners:
    """The combiner shipped with a model: ``full`` (with the in-corpus margin) and ``small``
    (without it, for inputs too small to estimate a margin: fewer than ``min_pairs``)."""

    full: LogisticCombiner
    small: LogisticCombiner
    min_pairs: int
    model_id: str

    def pick(self, n_pairs: int) -> tuple[LogisticCombiner, str | None]:
        """The combiner for a corpus of ``n_pairs``, and a note when the margin is left out."""
        if n_pairs >= self.min_pairs:
            return self.full, None
        return self.small, (f"the in-corpus margin is left out of score: {n_pairs:,} pairs are too few to estimate "
                            f"it (it needs {self.min_pairs:,})")

    def to_dict(self) -> dict:
        return {"format": FORMAT, "model_id": self.model_id, "min_pairs": self.min_pairs,
                "full": self.full.to_dict(), "small": self.small.to_dict()}


def load_combiners(path: str | os.PathLike) -> Combiners:
    d = read_json(path, "combiner")
    where = str(path)
    try:
        return Combiners(LogisticCombiner.from_dict(d["full"], f"{where} (full)"),
                         LogisticCombiner.from_dict(d["small"], f"{where} (small)"), int(d["min_pairs"]),
                         str(d["model_id"]))
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"{where}: not a combiner file ({e})") from None


def combiners_for(encoder) -> Combiners | None:
    """The combiner stored beside ``encoder``'s weights and trained on its scores, else None."""
    folder = heads_folder(encoder) if encoder is not None else None
    if folder is None or not (Path(folder) / COMBINER_FILE).is_file():
        return None
    c = load_combiners(Path(folder) / COMBINER_FILE)
    return c if c.model_id in head_ids(encoder) else None


def write_combiners(c: Combiners, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(c.to_dict(), indent=1) + "\n", encoding="utf-8")


PASSING_FLOOR = 1e-9  # the lowest score of a pair that passes every rule (a failing pair scores 0)


def gated(probability: np.ndarray, passed: np.ndarray) -> np.ndarray:
    """Bicleaner's convention: 0 for a pair that fails a hard rule, else its probability, kept
    above 0 (a passing pair always ranks above a failing one)."""
    return np.where(passed, np.maximum(probability, PASSING_FLOOR), 0.0)
