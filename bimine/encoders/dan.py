"""Deep Averaging Network dual encoder, inference in NumPy (paper 000 §2.2, Fig. 1).

Forward pass for one sentence with hashed features ``f_1..f_n``::

    x = (E[f_1] + ... + E[f_n]) / sqrt(n)               # sum divided by sqrt(length)
    h_l = relu(W_l h_{l-1} + b_l) (+ h_{l-1} if same width)   # residual, skip level 1
    u = W_L h_{L-1} + b_L                               # last layer: no ReLU
    u = u / ||u||                                       # L2-normalised output

The embedding table may be stored as float32/float16, as int8 with one float scale per row
(``embedding.scale``), which quarters its size, or product-quantised (``embedding.codes`` +
``embedding.codebook``, m bytes per row); rows are decoded after the lookup.
With ``shared: false`` each language has its own tower (paper 000); with ``shared: true``
all languages use one (paper 001). Needs only NumPy and safetensors: no torch.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from bimine.errors import ConfigError
from bimine.langs import normalize_lang
from bimine.text.features import FeatureConfig, Featurizer


@dataclass
class DANConfig:
    """Architecture of a DAN encoder (sizes are widths of the vectors)."""

    features: FeatureConfig = field(default_factory=FeatureConfig)
    embed_dim: int = 256
    hidden: tuple[int, ...] = (256, 256)
    output_dim: int = 384
    shared: bool = True
    languages: tuple[str, ...] = ()

    def towers(self) -> list[str]:
        """Names of the towers: ``["shared"]`` or one per language."""
        return ["shared"] if self.shared else list(self.languages)

    def tower_for(self, lang: str) -> str:
        if self.shared:
            return "shared"
        code = normalize_lang(lang)
        if code not in self.languages:
            raise ConfigError(
                f"this model has one encoder per language and none for {lang!r}; "
                f"it knows {', '.join(self.languages)}"
            )
        return code

    def layer_dims(self) -> list[tuple[int, int]]:
        dims = [self.embed_dim, *self.hidden, self.output_dim]
        return list(zip(dims[:-1], dims[1:]))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["features"] = self.features.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> DANConfig:
        d = dict(d)
        unknown = set(d) - set(cls.__dataclass_fields__)
        if unknown:
            raise ConfigError(f"unknown model option(s): {sorted(unknown)}")
        if "features" in d:
            f = d["features"]
            d["features"] = f if isinstance(f, FeatureConfig) else FeatureConfig.from_dict(f)
        for k in ("hidden", "languages"):
            if k in d:
                d[k] = tuple(d[k])
        if "languages" in d:
            d["languages"] = tuple(normalize_lang(x) for x in d["languages"])
        cfg = cls(**d)
        if not cfg.shared and not cfg.languages:
            raise ConfigError("model.shared: false needs model.languages (one tower per language)")
        return cfg


class EmbeddingTable:
    """The n-gram embedding table in one of three storage forms, read row by row.

    dense: ``weight`` (float32/float16); int8: ``weight`` int8 plus ``scale`` (one float per
    row); int4: ``nibbles`` (two 4-bit values per byte) plus ``scale``; pq: ``codes`` (uint8, rows x m) plus ``codebook`` (m x 256 x d/m), product
    quantisation as in FAISS, a row being the concatenation of its m sub-vector centroids.
    """

    def __init__(self, weight=None, scale=None, codes=None, codebook=None, nibbles=None) -> None:
        self.weight, self.scale, self.codes, self.codebook = weight, scale, codes, codebook
        self.nibbles = nibbles
        if nibbles is not None:
            self.shape = (nibbles.shape[0], 2 * nibbles.shape[1])
            self.scale = scale.astype(np.float32).reshape(-1, 1)
        elif codes is not None:
            m, _, dsub = codebook.shape
            self.shape = (codes.shape[0], m * dsub)
            self._sub = np.arange(m)
        else:
            if scale is None and weight.dtype != np.float32:
                self.weight = weight.astype(np.float32)
            self.shape = weight.shape
            if scale is not None:
                self.scale = scale.astype(np.float32).reshape(-1, 1)

    @classmethod
    def from_weights(cls, weights: dict[str, np.ndarray], prefix: str) -> EmbeddingTable:
        if prefix + "nibbles" in weights:
            return cls(nibbles=weights[prefix + "nibbles"], scale=weights[prefix + "scale"])
        if prefix + "codes" in weights:
            return cls(codes=weights[prefix + "codes"], codebook=weights[prefix + "codebook"].astype(np.float32))
        return cls(weight=weights[prefix + "weight"], scale=weights.get(prefix + "scale"))

    def lookup(self, ids: np.ndarray) -> np.ndarray:
        """float32 rows ``ids`` of the table."""
        if self.nibbles is not None:
            b = self.nibbles[ids]
            out = np.empty((len(ids), b.shape[1], 2), dtype=np.float32)
            out[:, :, 0] = b & 15
            np.right_shift(b, 4, out=b)
            out[:, :, 1] = b
            out -= 8.0
            out *= self.scale[ids][:, :, None]
            return out.reshape(len(ids), -1)
        if self.codes is not None:
            c = self.codes[ids]  # (n, m)
            return self.codebook[self._sub, c].reshape(len(ids), -1)
        rows = self.weight[ids]
        if self.scale is not None:
            rows = rows.astype(np.float32) * self.scale[ids]
        return rows


def _l2_normalize(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norm, 1e-12)


class DANEncoder:
    """NumPy DAN encoder; ``encode(sentences, lang)`` returns unit-norm float32 rows."""

    def __init__(
        self,
        config: DANConfig,
        weights: dict[str, np.ndarray],
        *,
        model_id: str = "dan",
        batch_size: int = 4096,
    ) -> None:
        self.config = config
        self.featurizer = Featurizer(config.features)
        self.model_id = model_id
        self.dim = config.output_dim
        self.batch_size = batch_size
        self._towers = {}
        for t in config.towers():
            p = f"{t}."
            try:
                table = EmbeddingTable.from_weights(weights, p + "embedding.")
                layers = [
                    (
                        np.ascontiguousarray(weights[f"{p}layers.{i}.weight"].T, dtype=np.float32),
                        weights[f"{p}layers.{i}.bias"].astype(np.float32),
                    )
                    for i in range(len(config.layer_dims()))
                ]
            except KeyError as e:
                raise ConfigError(f"model weights lack tensor {e.args[0]!r}") from None
            if table.shape != (config.features.buckets, config.embed_dim):
                raise ConfigError(
                    f"embedding table has shape {table.shape}, config says "
                    f"({config.features.buckets}, {config.embed_dim})"
                )
            self._towers[t] = (table, layers)

    @classmethod
    def load(cls, path: str | os.PathLike, **kwargs) -> DANEncoder:
        """Load ``config.json`` + ``model.safetensors`` from the folder ``path``."""
        from safetensors.numpy import load_file

        path = Path(path)
        meta = json.loads((path / "config.json").read_text())
        if meta.get("architecture") != "dan":
            raise ConfigError(f"{path}/config.json: architecture {meta.get('architecture')!r} is not 'dan'")
        config = DANConfig.from_dict(meta["model"])
        wfile = path / "model.safetensors"
        weights = load_file(str(wfile))
        digest = meta.get("model_id") or hashlib.sha256(wfile.read_bytes()).hexdigest()[:16]
        return cls(config, weights, model_id=f"dan-{digest}", **kwargs)

    def pooled(self, sentences: list[str], lang: str) -> np.ndarray:
        """The n-gram embeddings summed and divided by sqrt(n): input of the feed-forward stack.

        Each distinct feature of the batch is decoded once; the per-sentence sums are one
        sparse (sentences x distinct features) by dense product. Measured ~7x faster than
        gathering one row per occurrence and ``np.add.reduceat`` (docs/decisions.md).
        """
        from scipy.sparse import csr_matrix

        table, _ = self._towers[self.config.tower_for(lang)]
        ids, offsets = self.featurizer.featurize(sentences, lang)
        n = len(sentences)
        if len(ids) == 0:
            return np.zeros((n, table.shape[1]), dtype=np.float32)
        counts = np.diff(offsets)
        uniq, inv = np.unique(ids, return_inverse=True)
        weights = np.repeat((1.0 / np.sqrt(np.maximum(counts, 1))).astype(np.float32), counts)
        bags = csr_matrix((weights, inv.reshape(-1), offsets), shape=(n, len(uniq)))
        return np.asarray(bags @ table.lookup(uniq), dtype=np.float32)

    def encode(self, sentences: list[str], lang: str) -> np.ndarray:
        """Embed ``sentences`` of language ``lang``: ``(n, dim)`` float32, unit-norm rows."""
        tower = self.config.tower_for(lang)
        _, layers = self._towers[tower]
        out = np.empty((len(sentences), self.dim), dtype=np.float32)
        bs = self.batch_size
        for i in range(0, len(sentences), bs):
            h = self.pooled(sentences[i : i + bs], lang)
            for j, (wt, b) in enumerate(layers):
                z = h @ wt
                z += b
                if j < len(layers) - 1:
                    np.maximum(z, 0, out=z)
                    if z.shape == h.shape:
                        z += h
                h = z
            out[i : i + bs] = _l2_normalize(h)
        return out
