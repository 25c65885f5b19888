"""Divergence models: train, save, load, score (paper 004).

A model is one safetensors file whose ``bimine_divergence`` metadata (JSON) holds its kind,
config, the encoder it reads word vectors from (model id; refused for any other), the
languages it was trained on, the decision threshold and its training record:

* ``vdpwi``: the semantic similarity model (:mod:`bimine.scoring.vdpwi`), torch;
* ``mm``: Munteanu & Marcu's linear classifier (:mod:`bimine.scoring.divergence_features`) with the
  word-alignment tables it reads, NumPy only.

Scores are in [0, 1], higher = more equivalent (the score contract's direction).

**Calibration (issue 55).** Either model is trained on synthetic examples at one positive to five
negatives (004 §5.1), short sentences of its training corpora, with a soft (KL) or regression-like
target: its raw output ranks pairs but is no probability on real clean pairs (the shipped model
gave the 300 clean NTREX translations of examples/dev.en-fr.tsv a median of 0.39). A model file may
carry a Platt map, fitted on *held-out* clean pairs and divergent ones made from them
(:func:`bimine.training.divergence_data.calibration_examples`), the two classes weighted equally:

    score = sigmoid(a * logit(raw) + b),   raw clipped to [1e-6, 1 - 1e-6],  a > 0

stored in the metadata as ``calibration`` (JSON: ``method``, ``a``, ``b`` and how it was fitted).
:meth:`DivergenceModel.score` then returns P(equivalent) for a pair drawn half from clean
translations and half from those divergences (so its log-odds are a likelihood ratio, what the
combined score adds); the map is increasing, so the ranking, ``select --keep`` and every
ROC-AUC are unchanged. A file without it (written before, or by :func:`train_vdpwi` /
:func:`train_mm` alone) still loads and scores with the raw output; :attr:`DivergenceModel.calibrated`
says which, and the commands warn once that its ``score`` ranks but is not a calibrated
probability. Stored thresholds (``threshold``, ``refresd_threshold``) are on the scale of
:meth:`DivergenceModel.score`.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bimine.encoders.base import default_model_path, head_ids
from bimine.errors import ConfigError
from bimine.outputs import atomic_path
from bimine.scoring.divergence_features import LinearClassifier, pair_features
from bimine.scoring.ibm import IBMModel, Vocab, WordAligner
from bimine.scoring.logistic import sigmoid
from bimine.scoring.vdpwi import (
    VDPWIConfig,
    WordVectors,
    pad_batch,
    sentence_words,
    torch_device,
    vdpwi_network,
)
from bimine.text.tokens import check_version
from bimine.weights import read_safetensors, save_safetensors

FORMAT = 1
KINDS = ("vdpwi", "mm")
DEFAULT_FILE = "divergence.safetensors"
CLIP = 1e-6  # raw probabilities are clipped to [CLIP, 1 - CLIP] before their logit
THRESHOLD_KEYS = ("threshold", "refresd_threshold")  # stored thresholds, on the scale of score()


def logit_clipped(p) -> np.ndarray:
    """The logit of probabilities ``p``, clipped to [:data:`CLIP`, 1 - :data:`CLIP`] first."""
    p = np.clip(np.asarray(p, np.float64), CLIP, 1 - CLIP)
    return np.log(p) - np.log1p(-p)


@dataclass(frozen=True)
class PlattCalibration:
    """``p = sigmoid(a * logit(raw) + b)`` (raw clipped to [1e-6, 1 - 1e-6]); ``a > 0`` keeps
    the order of the raw scores."""

    a: float
    b: float

    def __call__(self, raw) -> np.ndarray:
        return sigmoid(self.a * logit_clipped(raw) + self.b)

    def inverse(self, p) -> np.ndarray:
        """The raw score that maps to ``p``."""
        return sigmoid((logit_clipped(p) - self.b) / self.a)

    @classmethod
    def from_meta(cls, d: dict) -> PlattCalibration:
        if d.get("method") != "platt":
            raise ConfigError(f"unknown divergence calibration method {d.get('method')!r} (this bimine reads 'platt')")
        a, b = float(d["a"]), float(d["b"])
        if not (math.isfinite(a) and math.isfinite(b) and a > 0):
            raise ConfigError(f"divergence calibration a={a}, b={b}: a must be finite and above 0")
        return cls(a, b)


@dataclass
class DivergenceModel:
    kind: str
    config: dict
    weights: dict[str, np.ndarray]
    meta: dict = field(default_factory=dict)
    _net: object = field(default=None, repr=False)
    _vectors: object = field(default=None, repr=False)
    _aligner: object = field(default=None, repr=False)
    device: str | None = field(default=None, repr=False)  # vdpwi: None = a CUDA GPU if there, else the CPU
    _clf: object = field(default=None, repr=False)

    @property
    def token_version(self) -> int:
        """The token version the model was trained with (:mod:`bimine.text.tokens`; a file
        without one was made with version 1)."""
        return self.config.get("token_version", 1)

    @property
    def threshold(self) -> float:
        return float(self.meta.get("threshold", 0.5))

    @property
    def calibration(self) -> PlattCalibration | None:
        """The stored Platt map, or None (an older file, or a model not calibrated yet)."""
        d = self.meta.get("calibration")
        return PlattCalibration.from_meta(d) if d else None

    @property
    def calibrated(self) -> bool:
        return bool(self.meta.get("calibration"))

    def set_calibration(self, cal: PlattCalibration, *, map_thresholds: bool = True, **record) -> None:
        """Store ``cal`` with ``record`` (how and on what it was fitted; JSON values). With
        ``map_thresholds`` the stored thresholds are carried through it, so that the same pairs
        pass them: a threshold on the raw scores goes through ``cal``, one on the scores of an
        earlier calibration back through that one first. Without, they are left as they are
        (set them on the new scale yourself)."""
        if not (math.isfinite(cal.a) and math.isfinite(cal.b) and cal.a > 0):
            raise ConfigError(f"calibration a={cal.a}, b={cal.b}: a must be finite and above 0")
        if map_thresholds:
            old = self.calibration
            for k in THRESHOLD_KEYS:
                if k in self.meta:
                    raw = float(old.inverse(self.meta[k])) if old is not None else float(self.meta[k])
                    self.meta[k] = round(float(cal(raw)), 4)
        self.meta["calibration"] = {"method": "platt", "a": cal.a, "b": cal.b, **record}

    def calibration_note(self, name: str = "this divergence model") -> str | None:
        """One line for the user when the model carries no calibration, else None."""
        if self.calibrated:
            return None
        return (f"{name} carries no calibration: its 'score' ranks pairs (higher = more equivalent) but is not "
                "a calibrated probability (clean translations may score below 0.5); rank with it (bimine select "
                "--keep), or retrain it with this bimine's 'bimine train-divergence', which calibrates it on "
                "held-out pairs")

    # ------------------------------------------------------------------ storage
    def save(self, path: str | os.PathLike) -> None:
        meta = {"format": FORMAT, "kind": self.kind, "config": self.config, **self.meta}
        with atomic_path(path) as tmp:  # atomic_path also sweeps the temporaries of killed runs
            save_safetensors(tmp, {k: np.ascontiguousarray(v) for k, v in self.weights.items()},
                             {"bimine_divergence": json.dumps(meta, ensure_ascii=False)}, atomic=False)

    @classmethod
    def load(cls, path: str | os.PathLike) -> DivergenceModel:
        path = Path(path)
        metadata, weights = read_safetensors(path, "numpy", "divergence model", "bimine train-divergence")
        raw = metadata.get("bimine_divergence")
        if raw is None:
            raise ConfigError(f"{path}: not a bimine divergence model (no 'bimine_divergence' metadata)")
        meta = json.loads(raw)
        if meta.get("format") != FORMAT:
            raise ConfigError(f"{path}: divergence model format {meta.get('format')}, this bimine reads {FORMAT}")
        kind = meta.pop("kind")
        if kind not in KINDS:
            raise ConfigError(f"{path}: unknown divergence model kind {kind!r}")
        config = meta.pop("config")
        meta.pop("format")
        try:
            check_version(config.get("token_version", 1), str(path))
        except ValueError as e:
            raise ConfigError(str(e)) from None
        return cls(kind, config, weights, meta)

    def check_encoder(self, encoder) -> None:
        want = self.meta.get("encoder")
        if self.kind == "vdpwi" and want and encoder is not None and want not in head_ids(encoder):
            raise ConfigError(f"this divergence model reads word vectors of encoder {want}, not "
                              f"{getattr(encoder, 'model_id', '?')}: use the model it was trained with (-m)")

    def check_runtime(self) -> None:
        """A vdpwi model runs on PyTorch, an optional dependency: say so before any work."""
        if self.kind == "vdpwi":
            try:
                import torch  # noqa: F401
            except ImportError:
                raise ConfigError("this divergence model (vdpwi) runs on PyTorch, which is not installed: "
                                  "pip install torch==2.13.0 (the CPU build is enough; see the README)") from None

    def reversed_languages(self, src_lang: str, tgt_lang: str) -> bool:
        """Whether the model was trained on ``tgt_lang``-``src_lang`` (it then scores the pairs
        with their sides swapped). Any other pair than the model's, in either order, is
        refused: its dictionary or word similarities were learnt for those two languages."""
        langs = list(self.meta.get("languages") or [])
        if len(langs) != 2 or [src_lang, tgt_lang] == langs:
            return False
        if [tgt_lang, src_lang] == langs:
            return True
        raise ConfigError(f"this divergence model was trained on {langs[0]}-{langs[1]} pairs, not "
                          f"{src_lang}-{tgt_lang}: train one on a {src_lang}-{tgt_lang} corpus with "
                          f"'bimine train-divergence' (no labels needed) and pass it with -d")

    # ------------------------------------------------------------------ scoring
    def score(self, src: list[str], tgt: list[str], *, src_lang: str, tgt_lang: str, encoder=None,
              batch: int = 64) -> np.ndarray:
        """Probability that each pair is equivalent, float64 in [0, 1]: the raw score through the
        stored calibration (module docstring), or the raw score when the model has none."""
        raw = self.raw_score(src, tgt, src_lang=src_lang, tgt_lang=tgt_lang, encoder=encoder, batch=batch)
        cal = self.calibration
        return cal(raw) if cal is not None and len(raw) else raw

    def raw_score(self, src: list[str], tgt: list[str], *, src_lang: str, tgt_lang: str, encoder=None,
                  batch: int = 64) -> np.ndarray:
        """The model's own output (its softmax's or classifier's P(equivalent) under the synthetic
        training mix), float64 in [0, 1], uncalibrated."""
        if len(src) != len(tgt):
            raise ValueError("src and tgt differ in length")
        if self.reversed_languages(src_lang, tgt_lang):  # trained on the other direction: swap the sides
            return self.raw_score(tgt, src, src_lang=tgt_lang, tgt_lang=src_lang, encoder=encoder, batch=batch)
        if not src:
            return np.zeros(0)
        if self.kind == "mm":
            self._ensure_mm()
            return self._clf.predict(pair_features(src, tgt, self._aligner))
        return self._score_vdpwi(src, tgt, src_lang, tgt_lang, encoder, batch)

    def _ensure_mm(self) -> None:
        if self._aligner is None:
            c = self.config
            sv, tv = Vocab(c["src_vocab"][1:]), Vocab(c["tgt_vocab"][1:])
            models = {k: IBMModel.from_arrays(self.weights, k, a, b, c["length_cap"])
                      for k, (a, b) in (("e2f", (sv, tv)), ("f2e", (tv, sv)))}
            self._aligner = WordAligner(models["e2f"], models["f2e"], dict_threshold=c["dict_threshold"],
                                        token_version=self.token_version)
            self._clf = LinearClassifier.from_arrays(self.weights, "clf")

    def _ensure_vdpwi(self, encoder):
        import torch  # loaded on use: PyTorch is heavy or optional

        if self._net is None:
            cfg = VDPWIConfig.from_dict(self.config["vdpwi"])
            net = vdpwi_network(cfg, int(self.config["dim"]))
            net.load_state_dict({k[4:]: torch.from_numpy(v.copy()) for k, v in self.weights.items()
                                 if k.startswith("net.")})
            net.eval()
            self._net = net.to(torch_device(self.device))
        if self._vectors is None or self._vectors.encoder is not encoder:
            self._vectors = WordVectors(encoder)
        return self._net, self._vectors

    def _score_vdpwi(self, src, tgt, src_lang, tgt_lang, encoder, batch) -> np.ndarray:
        if encoder is None:
            raise ConfigError("the vdpwi divergence model needs the sentence encoder it was trained with")
        self.check_encoder(encoder)
        net, vectors = self._ensure_vdpwi(encoder)
        mw = int(self.config["vdpwi"]["max_words"])
        sw = [sentence_words(s, mw, self.token_version) for s in src]
        tw = [sentence_words(t, mw, self.token_version) for t in tgt]
        return predict_pairs(net, [max(len(a), len(b)) for a, b in zip(sw, tw)],
                             lambda idx: (vectors.lookup([sw[i] for i in idx], src_lang),
                                          vectors.lookup([tw[i] for i in idx], tgt_lang)), batch)


def predict_pairs(net, lengths: list[int], vectors_of, batch: int) -> np.ndarray:
    """P(equivalent) (float64) of the pairs whose longer sides have ``lengths``, in batches of
    similar lengths (less padding); ``vectors_of(idx)`` gives the source and target word
    vectors of the pairs ``idx``.

    On a CPU each batch runs on one torch thread, the batches in parallel on as many threads as
    torch has: a convolution's sums run in an order that depends on its thread count (6 of 400
    pairs moved by up to 3e-8 between 1 and 2 threads), so a score depended on the machine's
    cores and on where it ran (a Ray task has one thread, issue 72 §1). The batches are the
    same whatever the thread count, so every score is."""
    import torch  # loaded on use: PyTorch is heavy or optional

    dev = next(net.parameters()).device
    out = np.zeros(len(lengths))
    order = np.argsort(lengths, kind="stable")
    batches = (order[k:k + batch] for k in range(0, len(order), batch))

    def forward(idx, vs, vt) -> None:
        with torch.inference_mode():
            xs, ls = pad_batch(vs)
            xt, lt = pad_batch(vt)
            out[idx] = net(xs.to(dev), ls, xt.to(dev), lt)[:, 1].exp().double().cpu().numpy()

    if dev.type != "cpu":
        for idx in batches:
            forward(idx, *vectors_of(idx))
        return out
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        if threads == 1:
            for idx in batches:
                forward(idx, *vectors_of(idx))
            return out
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(threads, thread_name_prefix="bimine-vdpwi") as pool:
            pending: list = []
            for idx in batches:  # the word vectors here, the network in the pool; 2 batches a thread in flight
                pending.append(pool.submit(forward, idx, *vectors_of(idx)))
                if len(pending) >= 2 * threads:
                    pending.pop(0).result()
            for f in pending:
                f.result()
    finally:
        torch.set_num_threads(threads)
    return out


def default_path() -> Path:
    """The divergence model shipped with the default encoder."""
    return Path(default_model_path()) / DEFAULT_FILE
