"""PyTorch twin of :class:`bimine.encoders.dan.DANEncoder`, used for training.

Same parameter names as the NumPy encoder reads, so a state dict exports directly.
The embedding table is an ``EmbeddingBag`` with sparse gradients (for SparseAdam).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from bimine.encoders.dan import DANConfig
from bimine.encoders.torch_tables import SparseBag, quantize_table


class Tower(nn.Module):
    def __init__(self, cfg: DANConfig) -> None:
        super().__init__()
        self.embedding = SparseBag(cfg.features.rows, cfg.embed_dim)
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in cfg.layer_dims())

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        pooled = self.embedding(ids, offsets)
        h = pooled / counts.clamp(min=1).to(torch.float32).sqrt()[:, None]
        last = len(self.layers) - 1
        for j, layer in enumerate(self.layers):
            z = layer(h)
            if j < last:
                z = torch.relu(z)
                if z.shape == h.shape:
                    z = z + h
            h = z
        return h

    def attach_sparse_grads(self) -> None:
        self.embedding.attach_sparse_grads()


class TorchDAN(nn.Module):
    """One tower per language (``shared: false``) or a single shared tower."""

    def __init__(self, cfg: DANConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.towers = nn.ModuleDict({t: Tower(cfg) for t in cfg.towers()})

    def forward(self, ids: np.ndarray, offsets: np.ndarray, lang: str) -> torch.Tensor:
        """Raw (unnormalised) outputs for a featurised batch (``offsets`` has n+1 entries)."""
        tower = self.towers[self.cfg.tower_for(lang)]
        counts = torch.from_numpy(np.diff(offsets))
        return tower(torch.from_numpy(ids), torch.from_numpy(offsets[:-1]), counts)

    def attach_sparse_grads(self) -> None:
        """Call after ``loss.backward()`` and before the sparse optimiser's step."""
        for t in self.towers.values():
            t.attach_sparse_grads()

    def sparse_parameters(self) -> list[nn.Parameter]:
        return [t.embedding.weight for t in self.towers.values()]

    def dense_parameters(self) -> list[nn.Parameter]:
        return [p for t in self.towers.values() for p in t.layers.parameters()]

    def export_weights(self, quantize: str = "int8") -> dict[str, np.ndarray]:
        """Weights as the NumPy encoder reads them, the embedding tables stored as
        :func:`quantize_table` makes them (``int8``, ``int4``, ``float16``, ``none`` or ``pqM``)."""
        out: dict[str, np.ndarray] = {}
        for name, t in self.towers.items():
            out.update(quantize_table(t.embedding.weight, quantize, f"{name}.embedding."))
            for i, layer in enumerate(t.layers):
                out[f"{name}.layers.{i}.weight"] = layer.weight.detach().cpu().numpy().astype(np.float32)
                out[f"{name}.layers.{i}.bias"] = layer.bias.detach().cpu().numpy().astype(np.float32)
        return out
