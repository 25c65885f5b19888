"""The semantic similarity model of paper 004 §3, after VDPWI (He & Lin 2016), CPU-sized.

1. **Bilingual word embeddings**: each word of a sentence is embedded by the sentence encoder
   itself (the word alone as a "sentence"), so the shipped DAN's bilingual space gives the
   word vectors; they stay frozen and are cached per word.
2. **BiLSTM** over each sentence's word vectors (one LSTM shared by both languages).
3. **Word similarity cube**, 13 channels for every pair of positions ``(i, j)``: cosine, L2
   distance and dot product between the forward states, the backward states, their
   concatenation and their sum (12, as in VDPWI), plus the cosine of the frozen word vectors
   themselves (in place of VDPWI's padding indicator; padded cells are zero).
4. **Similarity focus layer**: on the cosine of the concatenated states and of the summed
   states, the most similar pair of positions is chosen greedily, its row and column
   removed, again until one side runs out (VDPWI's focus); chosen cells keep weight 1, the
   others 0.1; the cube is multiplied by that mask.
5. **Deep convolutional network**: blocks of 3x3 convolution, ReLU and 2x2 max pooling over
   the focus cube as an image, a global max pool, two fully connected layers and a two-way
   softmax; the score is the probability of "equivalent" in [0, 1].

Trained end to end (word vectors frozen) to minimise the KL divergence between the output
distribution and the gold one, ``[1 - y, y]`` (004 §3), keeping the epoch with the best
Pearson correlation on held-out synthetic examples (004 §5.1).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from bimine.devices import check_device
from bimine.scoring.ibm import words


@dataclass
class VDPWIConfig:
    hidden: int = 64  # LSTM state per direction
    channels: tuple[int, ...] = (32, 64, 64, 128)  # convolution blocks
    fc: int = 64
    max_words: int = 48  # words per sentence (the rest is cut)
    focus_weight: float = 0.1  # weight of the cells the focus layer does not choose

    def to_dict(self) -> dict:
        d = asdict(self)
        d["channels"] = list(self.channels)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> VDPWIConfig:
        d = dict(d)
        d["channels"] = tuple(d.get("channels", cls.channels))
        return cls(**d)


def sentence_words(s: str, max_words: int) -> list[str]:
    return words(s, max_words)


class WordVectors:
    """Frozen word vectors from a sentence encoder, cached per (language, word)."""

    def __init__(self, encoder, limit: int = 2_000_000) -> None:
        self.encoder = encoder
        self.limit = limit  # cached words at most (then the cache starts again)
        self.cache: dict[tuple[str, str], np.ndarray] = {}
        self.dim: int | None = None

    def matrix(self, words: list[str], lang: str) -> np.ndarray:
        """The vectors of ``words`` as rows of one matrix."""
        if not words:
            if self.dim is None:
                self.dim = self.encoder.encode(["a"], lang).shape[1]
            return np.zeros((0, self.dim), np.float32)
        return self.lookup([words], lang)[0]

    def lookup(self, sents: list[list[str]], lang: str) -> list[np.ndarray]:
        missing = sorted({w for ws in sents for w in ws if (lang, w) not in self.cache})
        if missing:
            if self.cache and len(self.cache) + len(missing) > self.limit:  # bounded memory on long streams
                self.cache.clear()
                missing = sorted({w for ws in sents for w in ws})
            vec = self.encoder.encode(missing, lang)
            self.dim = vec.shape[1]
            for w, v in zip(missing, vec):  # one call's words are all kept, whatever the limit
                self.cache[(lang, w)] = v
        if self.dim is None:
            self.dim = self.encoder.encode(["a"], lang).shape[1]
        d = self.dim
        return [np.stack([self.cache[(lang, w)] for w in ws]) if ws else np.zeros((0, d), np.float32) for ws in sents]


def vdpwi_network(cfg: VDPWIConfig, dim: int):
    import torch  # loaded on use: PyTorch is heavy or optional
    from torch import nn  # loaded on use: PyTorch is heavy or optional

    class VDPWI(nn.Module):
        def __init__(self) -> None:
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

    return VDPWI()


def torch_device(device: str | None = None):
    """``device`` or, when None, a CUDA GPU when PyTorch sees one, else the CPU."""
    import torch  # loaded on use: PyTorch is heavy or optional

    return torch.device(check_device(device) or ("cuda" if torch.cuda.is_available() else "cpu"))


def pad_batch(vecs: list[np.ndarray], multiple: int = 8):
    """``(B, L, d)`` float32 tensor (L the longest rounded up to ``multiple``, at least 8) and
    the lengths."""
    import torch  # loaded on use: PyTorch is heavy or optional

    d = vecs[0].shape[1]
    L = max(8, max(len(v) for v in vecs))
    L = -(-L // multiple) * multiple
    out = np.zeros((len(vecs), L, d), np.float32)
    for k, v in enumerate(vecs):
        out[k, : len(v)] = v
    return torch.from_numpy(out), torch.tensor([len(v) for v in vecs], dtype=torch.int64)
