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
from bimine.text.tokens import TOKENS_VERSION


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


def sentence_words(s: str, max_words: int, version: int = TOKENS_VERSION) -> list[str]:
    """The first ``max_words`` word tokens of ``s`` in token version ``version`` (the model's)."""
    return words(s, max_words, version)


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
    """The VDPWI network (:class:`bimine.scoring.vdpwi_net.VDPWI`) of ``cfg`` on ``dim``-d word vectors."""
    from bimine.scoring.vdpwi_net import VDPWI  # loaded on use: pulls in PyTorch

    return VDPWI(cfg, dim)


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
