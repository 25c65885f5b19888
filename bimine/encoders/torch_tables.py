"""The hashed-feature tables of the PyTorch encoders (the DAN's towers, the transformer, the
scratch cross-encoder): :class:`SparseBag`, the trainable table with one sparse gradient row
per distinct feature, and :func:`quantize_table`, its export in the stored forms the NumPy
:class:`~bimine.encoders.dan.EmbeddingTable` reads. Here, under ``encoders/``, because the
inference modules build the same nets: nothing here imports ``bimine.training``."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def init_std(dim: int) -> float:
    """The standard deviation of a ``dim``-wide table's initial rows (normal): ``dim ** -0.5``, so
    a row's expected squared norm is 1."""
    return dim**-0.5


class SparseBag(nn.EmbeddingBag):
    """A sum-mode ``EmbeddingBag`` whose gradient is one sparse row per distinct feature.

    ``grad_multiplier`` scales that gradient (001 §4.2 multiplies the word and character
    embeddings' gradients by 25). Under Adam, whose steps do not depend on the gradient's
    scale, it changes almost nothing; ``optim.embedding_lr`` is the lever there.
    """

    def __init__(self, num: int, dim: int, grad_multiplier: float = 1.0) -> None:
        super().__init__(num, dim, mode="sum", sparse=True)
        nn.init.normal_(self.weight, std=init_std(dim))
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
    import faiss  # loaded on use: FAISS is heavy or optional

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
