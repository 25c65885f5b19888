"""Calibrated confidence of an encoder's cosine (paper 000 §2.4.2), stored with the model.

``confidence(u, v) = sigmoid(scale(u) * u.v + bias(u))`` where ``scale`` and ``bias`` are
weighted sums of ``[u, u^2]`` (the source embedding and its pointwise square), the scale
passed through a softplus so that it is always positive (a deviation from 000, which leaves
it unconstrained: a negative scale would reverse a source's ranking). The head is
trained on held-out pairs with the encoder frozen (``bimine calibrate``; the training code is
``bimine.training.classifier``'s ``confidence`` kind, which needs torch). Because both
terms depend on the source alone and the scale is positive, the confidence is an increasing
function of ``u.v`` for each source: it never changes which target ranks first, only says
how far to trust it.

A model folder may hold ``calibration.safetensors`` (the shipped default model does); the
file records the ``model_id`` of the encoder it was trained on and is refused for any other
(a head trained on other embeddings would give confident nonsense). Inference is NumPy only.
"""

from __future__ import annotations

import json
import os

import numpy as np

from bimine.encoders.base import head_ids, heads_folder
from bimine.errors import ConfigError
from bimine.scoring.logistic import sigmoid
from bimine.weights import read_safetensors

CALIBRATION_FILE = "calibration.safetensors"


class Calibration:
    """The NumPy form of a trained confidence head (see the module docstring)."""

    def __init__(self, scale_w: np.ndarray, scale_b: float, bias_w: np.ndarray, bias_b: float, config: dict) -> None:
        self.scale_w = np.asarray(scale_w, np.float64).ravel()
        self.scale_b = float(scale_b)
        self.bias_w = np.asarray(bias_w, np.float64).ravel()
        self.bias_b = float(bias_b)
        self.config = config
        self.dim = len(self.scale_w) // 2

    @classmethod
    def load(cls, path: str | os.PathLike) -> Calibration:
        """Read a confidence head written by ``bimine calibrate`` or ``bimine train-classifier
        confidence`` (one safetensors file; its metadata names the encoder)."""
        meta, t = read_safetensors(path, "numpy", "calibration", "bimine calibrate")
        cfg = json.loads(meta.get("bimine_classifier", "{}"))
        if cfg.get("kind") != "confidence":
            raise ConfigError(f"calibration {path}: not a confidence head (kind {cfg.get('kind')!r})")
        try:
            return cls(t["scale.weight"], t["scale.bias"].item(), t["bias.weight"], t["bias.bias"].item(), cfg)
        except KeyError as e:
            raise ConfigError(f"calibration {path}: lacks tensor {e.args[0]!r}") from None

    @classmethod
    def for_encoder(cls, encoder, path: str | os.PathLike | None = None) -> Calibration:
        """The head of ``encoder``: ``path`` if given, else the model folder's
        ``calibration.safetensors``; refused when it was trained on another encoder."""
        if path is None:
            folder = heads_folder(encoder)
            if folder is None or not (folder / CALIBRATION_FILE).is_file():
                raise ConfigError(f"model {encoder.model_id} has no calibration head; train one with "
                                  "'bimine calibrate' (or give a file with --calibration)")
            path = folder / CALIBRATION_FILE
        cal = cls.load(path)
        if cal.config.get("encoder") not in head_ids(encoder):
            raise ConfigError(f"calibration {path} was trained on embeddings of {cal.config.get('encoder')}, not of "
                              f"{encoder.model_id}; train one for this model with 'bimine calibrate'")
        if cal.dim != encoder.dim:
            raise ConfigError(f"calibration {path} is for {cal.dim}-d embeddings, the model has {encoder.dim}")
        return cal

    def scale_bias(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per source row: the scale and the bias (float64)."""
        u = np.asarray(u, np.float64)
        d = self.dim
        sq = u * u
        scale = u @ self.scale_w[:d] + sq @ self.scale_w[d:] + self.scale_b
        if self.config.get("positive_scale", False):
            scale = np.logaddexp(0.0, scale)  # softplus, as in training
        bias = u @ self.bias_w[:d] + sq @ self.bias_w[d:] + self.bias_b
        return scale, bias

    def from_cosine(self, u: np.ndarray, cos: np.ndarray) -> np.ndarray:
        """Confidence of cosines ``cos`` (shape ``(n,)`` or ``(n, k)``: k candidates per source)
        of the sources ``u`` (``(n, d)``)."""
        scale, bias = self.scale_bias(u)
        cos = np.asarray(cos, np.float64)
        if cos.ndim == 2:
            scale, bias = scale[:, None], bias[:, None]
        z = scale * cos + bias
        return sigmoid(z)

    def confidence(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Confidence of the aligned pairs ``(u[i], v[i])``."""
        cos = np.einsum("ij,ij->i", np.asarray(u, np.float64), np.asarray(v, np.float64))
        return self.from_cosine(u, cos)
