"""PyTorch twin of :class:`bimine.encoders.dan.DANEncoder`, used for training.

Same parameter names as the NumPy encoder reads, so a state dict exports directly.
The embedding table is an ``EmbeddingBag`` with sparse gradients (for SparseAdam).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from bimine.encoders.dan import DANConfig


class SparseBag(nn.EmbeddingBag):
    """A sum-mode ``EmbeddingBag`` whose gradient is one sparse row per distinct feature.

    ``grad_multiplier`` scales that gradient (001 §4.2 multiplies the word and character
    embeddings' gradients by 25). Under Adam, whose steps do not depend on the gradient's
    scale, it changes almost nothing; ``optim.embedding_lr`` is the lever there.
    """

    def __init__(self, num: int, dim: int, grad_multiplier: float = 1.0) -> None:
        super().__init__(num, dim, mode="sum", sparse=True)
        nn.init.normal_(self.weight, std=dim**-0.5)
        self.grad_multiplier = grad_multiplier
        self._pending: list[tuple[torch.Tensor, torch.Tensor]] = []

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        w = self.weight
        if torch.is_grad_enabled() and w.requires_grad:
            # Gather the rows this batch uses into a small dense leaf: its gradient is one
            # row per distinct feature instead of one per occurrence, and becomes an already
            # coalesced sparse gradient (see attach_sparse_grads): SparseAdam then skips the
            # sort of ~10^5 rows that dominated a step.
            uniq, inv = torch.unique(ids, return_inverse=True)
            sub = w.detach()[uniq].requires_grad_()
            self._pending.append((uniq, sub))
            return nn.functional.embedding_bag(inv, sub, offsets, mode="sum")
        return super().forward(ids, offsets)

    def attach_sparse_grads(self) -> None:
        """Turn the row gradients of this step's forwards into the table's sparse ``.grad``."""
        if not self._pending:
            return
        w = self.weight
        idx = torch.cat([u for u, _ in self._pending])
        val = torch.cat([s.grad if s.grad is not None else torch.zeros_like(s) for _, s in self._pending])
        self._pending = []
        if self.grad_multiplier != 1.0:
            val = val * self.grad_multiplier
        w.grad = torch.sparse_coo_tensor(idx[None], val, w.shape, check_invariants=False).coalesce()


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


def quantize_table(weight: torch.Tensor, quantize: str, prefix: str) -> dict[str, np.ndarray]:
    """An embedding table as the NumPy :class:`~bimine.encoders.dan.EmbeddingTable` reads it
    (tensors named ``prefix`` + weight/scale/nibbles/codes/codebook); ``quantize`` is
    ``int8``, ``int4``, ``float16``, ``none`` or ``pqM``.

    int8: each row is scaled by max|row|/127 and rounded; the scale is stored as float32
    under ``scale``. int4: see :func:`_int4_quantize`. pqM (e.g. pq32): FAISS product
    quantisation with M sub-vectors of 8 bits (M bytes per row), trained on the rows.
    """
    w = weight.detach().cpu().numpy().astype(np.float32)
    if quantize == "int8":
        scale = np.abs(w).max(axis=1) / 127.0
        scale[scale == 0] = 1.0
        q = np.clip(np.rint(w / scale[:, None]), -127, 127).astype(np.int8)
        return {prefix + "weight": q, prefix + "scale": scale.astype(np.float32)}
    if quantize == "int4":
        return _int4_quantize(w, prefix)
    if quantize == "float16":
        return {prefix + "weight": w.astype(np.float16)}
    if quantize == "none":
        return {prefix + "weight": w}
    if quantize.startswith("pq"):
        return _product_quantize(w, int(quantize[2:]), prefix)
    raise ValueError(f"quantize must be int8, int4, float16, none or pqM, not {quantize!r}")


def _product_quantize(w: np.ndarray, m: int, prefix: str, train_rows: int = 262144, seed: int = 0) -> dict:
    """Codes (rows x m, uint8) and codebook (m x 256 x d/m) of ``w`` with faiss.ProductQuantizer."""
    import faiss

    d = w.shape[1]
    if m < 1 or d % m:
        raise ValueError(f"pq{m}: the embedding width {d} must be a multiple of {m}")
    pq = faiss.ProductQuantizer(d, m, 8)
    rng = np.random.default_rng(seed)
    sample = w[rng.choice(len(w), size=min(train_rows, len(w)), replace=False)]
    pq.train(np.ascontiguousarray(sample))
    codes = pq.compute_codes(np.ascontiguousarray(w))
    codebook = faiss.vector_to_array(pq.centroids).reshape(m, pq.ksub, pq.dsub)
    return {prefix + "codes": codes.astype(np.uint8), prefix + "codebook": codebook.astype(np.float32)}


def _int4_quantize(w: np.ndarray, prefix: str) -> dict:
    """4-bit codes, two per byte (``nibbles``: rows x d/2 uint8), and a float16 scale per row.

    A value is ``(code - 8) * scale`` with ``code`` in 1..15 and ``scale = max|row| / 7``.
    """
    if w.shape[1] % 2:
        raise ValueError("int4 needs an even embedding width")
    scale = np.abs(w).max(axis=1) / 7.0
    scale[scale == 0] = 1.0
    scale = scale.astype(np.float16)
    q = np.clip(np.rint(w / scale.astype(np.float32)[:, None]), -7, 7).astype(np.int16) + 8
    packed = (q[:, 0::2] | (q[:, 1::2] << 4)).astype(np.uint8)
    return {prefix + "nibbles": packed, prefix + "scale": scale}
