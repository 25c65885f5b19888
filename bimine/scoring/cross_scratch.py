"""A cross-encoder rescorer trained from scratch on bimine's hashed tokens (issue 15 (b)).

The alternative to :mod:`bimine.scoring.cross_encoder` (started from e5-small): no pretrained
weights at all. Both sentences go into one sequence, ``SRC`` tokens then ``TGT`` tokens (each
cut to ``max_side``), each token the sum of its hashed features (the transformer encoder's
:class:`~bimine.encoders.transformer.TokenFeaturizer`), plus a position and a segment
embedding; transformer layers over the packed tokens (:class:`PackedLayer`) attend across the
pair. The head reads each side's mean state, their absolute difference and product, and the
max over all tokens. Stored whole (``cross.safetensors`` + ``cross.json``, ``kind:
scratch-cross``); it needs PyTorch but not the e5 extra.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from bimine.errors import InputError
from bimine.scoring.cross_files import WEIGHTS_FILE, save_stage, state_fingerprint
from bimine.scoring.logistic import sigmoid
from bimine.text.translit import table_from_tensors, table_to_tensors
from bimine.weights import load_safetensors

KIND = "scratch-cross"


def scratch_modules():
    import torch  # loaded on use: PyTorch is heavy or optional
    from torch import nn  # loaded on use: PyTorch is heavy or optional

    from bimine.encoders.torch_tables import SparseBag  # loaded on use: pulls in PyTorch
    from bimine.encoders.transformer import (  # loaded on use: pulls in PyTorch
        PackedLayer,
        TokenFeaturizer,
        TransformerConfig,
        packed_layout,
        pad_packed,
        token_vectors,
    )

    class PairNet(nn.Module):
        def __init__(self, cfg: TransformerConfig) -> None:
            super().__init__()
            self.cfg = cfg
            d = cfg.d_model
            self.embedding = SparseBag(cfg.features.buckets, cfg.embed_dim)
            self.project_in = nn.Linear(cfg.embed_dim, d)
            self.position = nn.Embedding(2 * cfg.max_tokens, d)
            self.segment = nn.Embedding(2, d)
            for e in (self.position, self.segment):
                nn.init.normal_(e.weight, std=0.02)
            self.layers = nn.ModuleList(PackedLayer(d, cfg.heads, cfg.ffn, cfg.dropout) for _ in range(cfg.layers))
            self.norm = nn.LayerNorm(d)
            self.head = nn.Sequential(nn.Linear(5 * d, d), nn.GELU(), nn.Linear(d, 1))

        def forward(self, ids, tok_off, sides_off) -> torch.Tensor:
            """Logits of pairs featurised as sentences ``[s0, t0, s1, t1, ...]`` (``sides_off``
            the sentence offsets into tokens of that list)."""
            x = self.project_in(token_vectors(self.embedding, ids, tok_off))
            sides_off = torch.from_numpy(sides_off)
            side_len = sides_off[1:] - sides_off[:-1]
            seg = torch.repeat_interleave(torch.arange(len(side_len)) % 2, side_len)
            pair_off = sides_off[::2]
            index, valid = packed_layout(pair_off)
            x = x + self.position.weight[index[1]] + self.segment.weight[seg]
            for layer in self.layers:
                x = layer(x, index, valid)
            x = self.norm(x)
            h = pad_packed(x, index, valid)
            seg_pad = pad_packed(seg[:, None].to(x.dtype), index, valid)[:, :, 0]
            is_src = valid & (seg_pad == 0)
            is_tgt = valid & (seg_pad == 1)
            u = (h * is_src[:, :, None]).sum(1) / is_src.sum(1, keepdim=True).clamp(min=1)
            v = (h * is_tgt[:, :, None]).sum(1) / is_tgt.sum(1, keepdim=True).clamp(min=1)
            m = h.masked_fill(~valid[:, :, None], float("-inf")).max(dim=1).values
            return self.head(torch.cat([u, v, (u - v).abs(), u * v, m], dim=1)).squeeze(1)

    return torch, PairNet, TokenFeaturizer, TransformerConfig


def default_config(max_side: int = 48) -> dict:
    """The architecture (a :class:`~bimine.encoders.transformer.TransformerConfig` mapping):
    2 layers of width 128, a 2^18 x 64 feature table."""
    return {"features": {"buckets": 1 << 18, "by_script": True, "translit": True}, "embed_dim": 64, "d_model": 128,
            "layers": 2, "heads": 4, "ffn": 512, "max_tokens": max_side, "output_dim": 1}


class ScratchCrossRescorer:
    """A trained from-scratch cross-encoder: :meth:`predict` gives each pair's probability."""

    def __init__(self, net, meta: dict, translit_table=None):
        torch, _, TokenFeaturizer, _ = scratch_modules()
        self.net = net
        self.meta = meta
        self.featurizer = TokenFeaturizer(net.cfg, translit_table=translit_table)

    @property
    def fingerprint(self) -> str:
        return state_fingerprint(self.meta, self.net.state_dict())

    def features(self, src: list[str], tgt: list[str]):
        both = [t for pair in zip(src, tgt) for t in pair]
        return self.featurizer.featurize(both, "und")

    def logits(self, src: list[str], tgt: list[str], batch: int = 128, progress=None) -> np.ndarray:
        torch = scratch_modules()[0]
        if len(src) != len(tgt):
            raise ValueError(f"{len(src)} sources but {len(tgt)} targets")
        out = np.zeros(len(src), dtype=np.float32)
        order = np.argsort([len(a) + len(b) for a, b in zip(src, tgt)], kind="stable")  # less padding
        self.net.eval()
        with torch.inference_mode():
            for s in range(0, len(order), batch):
                rows = order[s: s + batch]
                out[rows] = self.net(*self.features([src[i] for i in rows], [tgt[i] for i in rows])).numpy()
                if progress is not None:
                    progress(len(rows))
        return out

    def predict(self, src: list[str], tgt: list[str], batch: int = 128, block: int | None = None,
                progress=None) -> np.ndarray:
        return sigmoid(self.logits(src, tgt, batch=batch, progress=progress)).astype(np.float32)

    def save(self, folder: str | os.PathLike) -> None:
        state = {k: v.detach().contiguous() for k, v in self.net.state_dict().items()}
        rom = self.featurizer.romanizer
        if rom is not None:
            import torch  # loaded on use: PyTorch is heavy or optional

            state.update({k: torch.from_numpy(v) for k, v in table_to_tensors(rom.table).items()})
        save_stage(folder, state, self.meta)

    @classmethod
    def load(cls, folder: str | os.PathLike, meta: dict) -> ScratchCrossRescorer:
        torch, PairNet, _, TransformerConfig = scratch_modules()
        net = PairNet(TransformerConfig.from_dict(meta["model"]))
        path = Path(folder) / WEIGHTS_FILE
        tensors = load_safetensors(path, "numpy", "cross-encoder weights")
        state = {k: torch.from_numpy(v) for k, v in tensors.items() if not k.startswith("translit.")}
        try:
            net.load_state_dict(state)
        except RuntimeError as e:
            raise InputError(f"{folder}: the weights do not fit the cross-encoder's config: "
                             f"{str(e).splitlines()[0]}") from None
        return cls(net, meta, table_from_tensors(tensors))
