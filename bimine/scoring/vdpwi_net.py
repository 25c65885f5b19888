"""VDPWI's network as a PyTorch module (paper 004 §3): a BiLSTM over each side's word vectors,
the 13-channel similarity cube, the focus mask and a CNN over it. Imported only where PyTorch
runs (:func:`bimine.scoring.vdpwi.vdpwi_network` loads it on use)."""

from __future__ import annotations

import torch
from torch import nn


class VDPWI(nn.Module):
    """The semantic similarity model of paper 004 §3 on word vectors of size ``dim``."""

    def __init__(self, cfg, dim: int) -> None:
        super().__init__()
        self.cfg = cfg
        self.lstm = nn.LSTM(dim, cfg.hidden, batch_first=True, bidirectional=True)
        blocks, c_in = [], 13
        for c in cfg.channels:
            blocks += [nn.Conv2d(c_in, c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, ceil_mode=True)]
            c_in = c
        self.cnn = nn.Sequential(*blocks)
        self.fc = nn.Sequential(nn.Linear(c_in, cfg.fc), nn.ReLU(), nn.Linear(cfg.fc, 2))

    def states(self, x, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths.clamp(min=1).cpu(), batch_first=True,
                                                   enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        h = self.cfg.hidden
        return out[..., :h], out[..., h:]

    def cube(self, xs, ls, xt, lt):
        """(B, 13, Ls, Lt) similarity cube, zero outside both sentences."""
        fs, bs = self.states(xs, ls)
        ft, bt = self.states(xt, lt)
        chans = []
        for a, b in ((fs, ft), (bs, bt), (torch.cat([fs, bs], -1), torch.cat([ft, bt], -1)), (fs + bs, ft + bt)):
            dot = a @ b.transpose(1, 2)
            na, nb = a.norm(dim=-1), b.norm(dim=-1)
            cos = dot / (na[:, :, None] * nb[:, None, :]).clamp(min=1e-8)
            l2 = torch.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist")  # exact near 0
            chans += [cos, l2, dot]
        ws = xs / xs.norm(dim=-1, keepdim=True).clamp(min=1e-8)
        wt = xt / xt.norm(dim=-1, keepdim=True).clamp(min=1e-8)
        chans.append(ws @ wt.transpose(1, 2))
        c = torch.stack(chans, 1)
        dev = xs.device
        mask = (torch.arange(xs.shape[1], device=dev)[None, :] < ls.to(dev)[:, None]).float()[:, :, None] * \
               (torch.arange(xt.shape[1], device=dev)[None, :] < lt.to(dev)[:, None]).float()[:, None, :]
        return c * mask[:, None], mask

    def focus(self, c, mask):
        """VDPWI's similarity focus mask from the cosine of the concatenated (channel 6)
        and summed (channel 9) states: greedy one-to-one choice of the best cells."""
        with torch.no_grad():
            chosen = torch.zeros_like(mask)
            B = c.shape[0]
            steps = int(min(c.shape[2], c.shape[3]))
            for ch in (6, 9):
                s = c[:, ch].masked_fill(mask == 0, float("-inf")).clone()
                for _ in range(steps):
                    flat = s.reshape(B, -1)
                    best, idx = flat.max(dim=1)
                    ok = torch.isfinite(best)
                    if not ok.any():
                        break
                    r, q = idx // s.shape[2], idx % s.shape[2]
                    bi = torch.nonzero(ok).squeeze(1)
                    chosen[bi, r[bi], q[bi]] = 1.0
                    s[bi, r[bi], :] = float("-inf")
                    s[bi, :, q[bi]] = float("-inf")
            weight = torch.where(chosen > 0, torch.ones_like(mask), torch.full_like(mask, self.cfg.focus_weight))
        return c * (weight * mask)[:, None]

    def forward(self, xs, ls, xt, lt):
        c, mask = self.cube(xs, ls, xt, lt)
        h = self.focus(c, mask)
        # Each pair as if computed alone at its own size, whatever the batch's padding: after
        # every ReLU the cells outside the pair's (pooled) extent are set to 0, which is what
        # the next convolution's zero padding and a pooling window cut at the edge would see
        # (ReLU outputs are >= 0, so a 0 never wins a max). Without it the biases lit the
        # padding, and a pair's score depended on the longest sentence of its batch.
        rs, rt = ls.to(h.device).clamp(min=1), lt.to(h.device).clamp(min=1)
        for layer in self.cnn:
            h = layer(h)
            if isinstance(layer, nn.ReLU):
                keep = (torch.arange(h.shape[2], device=h.device)[None, :] < rs[:, None])[:, :, None] & \
                       (torch.arange(h.shape[3], device=h.device)[None, :] < rt[:, None])[:, None, :]
                h = h * keep[:, None].to(h.dtype)
            elif isinstance(layer, nn.MaxPool2d):
                rs, rt = (rs + 1) // 2, (rt + 1) // 2  # ceil_mode
        h = torch.amax(h, dim=(2, 3))
        return torch.log_softmax(self.fc(h), dim=-1)
