"""Trained pair scorers: calibrated confidence (paper 000 §2.4.2), a classifier on frozen
embeddings (002 §2.3) and a siamese BiGRU (003 §3).

* ``confidence``: ``sigmoid(scale(u) * u.v + bias(u))`` where ``scale`` and ``bias`` are
  weighted sums of ``[u, u^2]``, the source embedding and its pointwise square (dropout 0.4
  before them); heads trained since issue 11 pass the scale through a softplus
  (``positive_scale``), so that no source can get a negative scale, which would reverse its
  ranking. The encoder stays frozen (000 trains the head with a stop-gradient); trained
  like the encoder's ranking task, each source against the batch's targets (1 positive, B-1
  negatives), with binary cross-entropy. Being a function of the source alone times the dot
  product, it never changes which target ranks first for a source.
* ``fc``: a fully connected layer with ReLU applied to both frozen embeddings, ``[u'; v';
  |u' - v'|]`` into a two-way softmax, trained with cross-entropy on clean pairs and one
  synthetic negative each (:mod:`bimine.training.negatives`: adjacent sentence, truncation,
  reordering, random pairing). Its score is the cosine of the transformed embeddings
  (``output: probability`` gives the softmax instead).
* ``bigru``: one shared bidirectional GRU over token embeddings encodes both sides (the last
  states of both directions); ``[h_s * h_t; |h_s - h_t|]`` into a 256-unit ReLU layer and a
  sigmoid. Each epoch, every positive gets ``negatives`` (7) random targets from the other
  pairs of its (shuffled) batch. Adam 2e-4, dropout, gradient norm clipped at 5. Tokens are
  lowercased words and punctuation (characters in scripts written without spaces), hashed
  into ``buckets`` rows, so no vocabulary is built and any language works.

Each classifier is saved as one safetensors file; its config (kind, languages, sizes, the
encoder it was trained on, the decision threshold at the best dev F1 and the dev figures) is
the file's ``bimine_classifier`` metadata.
"""

from __future__ import annotations

import json
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bimine.errors import ConfigError
from bimine.text.normalize import TextNorm
from bimine.text.tokens import check_version, tokenize
from bimine.weights import read_safetensors, save_safetensors

KINDS = ("confidence", "fc", "bigru")
EMBEDDING_KINDS = ("confidence", "fc")
FORMAT = 1


def pad_batch(seqs: list) -> tuple:
    """Padded ``(B, T)`` int64 ids (0 = padding) and the lengths (an empty sentence has length 0)."""
    import torch  # loaded on use: PyTorch is heavy or optional

    width = max(1, max((len(q) for q in seqs), default=1))
    arr = np.zeros((len(seqs), width), dtype=np.int64)
    for r, q in enumerate(seqs):
        arr[r, : len(q)] = q
    return torch.from_numpy(arr), torch.tensor([len(q) for q in seqs], dtype=torch.int64)


class TokenHasher:
    """Token -> row of the embedding table: crc32 of the UTF-8 bytes into ``buckets - 1``
    rows (row 0 is padding). Deterministic across processes and platforms. ``version``: the
    token version (:mod:`bimine.text.tokens`) the model was trained with."""

    def __init__(self, buckets: int, max_tokens: int, version: int):
        self.buckets = buckets
        self.max_tokens = max_tokens
        self.version = version
        self._cache: dict[str, int] = {}

    def ids(self, s: str) -> list[int]:
        out = []
        cache = self._cache
        for tok in tokenize(s, self.version)[: self.max_tokens]:
            i = cache.get(tok)
            if i is None:
                i = zlib.crc32(tok.encode("utf-8")) % (self.buckets - 1) + 1
                if len(cache) < 2_000_000:
                    cache[tok] = i
            out.append(i)
        return out

    def many(self, texts: list[str]) -> list[list[int]]:
        """Each text's rows."""
        return [self.ids(s) for s in texts]

    def batch(self, texts: list[str]):
        """Padded ``(B, T)`` int64 ids and lengths (an empty sentence has length 0)."""
        return pad_batch(self.many(texts))


PIECES_TENSOR = "tokens.subwords"  #: the SentencePiece model of a ``tokens: pieces`` BiGRU, in its file


class PieceTokenizer:
    """Text -> subword pieces of a stored SentencePiece model (an encoder's own, for example the
    default model's), cut as that encoder cuts them (its normalisation ``norm``,
    :class:`bimine.text.normalize.TextNorm`, then each word on its own); piece ``p`` is row
    ``p + 1`` (row 0 is padding). At most ``max_tokens`` pieces a sentence."""

    def __init__(self, model: bytes, vocab: int, max_tokens: int, norm: TextNorm = TextNorm(marks=True)):
        from bimine.text.subwords import Pieces

        self.pieces = Pieces(model, vocab)
        self.model = model
        self.max_tokens, self.norm = max_tokens, norm

    def many(self, texts: list[str]) -> list[list[int]]:
        out = []
        for a in range(0, len(texts), 4096):
            norm = [self.norm(t) for t in texts[a: a + 4096]]
            ids, off = self.pieces.encode(norm)
            ids = (ids + 1).tolist()
            out += [ids[off[i]: min(off[i + 1], off[i] + self.max_tokens)] for i in range(len(norm))]
        return out

    def ids(self, s: str) -> list[int]:
        return self.many([s])[0]

    def batch(self, texts: list[str]):
        return pad_batch(self.many(texts))


def tokenizer(config: dict, model: bytes | None = None):
    """The tokenizer of a BiGRU ``config`` (``model``: the SentencePiece bytes of ``tokens: pieces``)."""
    if config.get("tokens", "hashed") == "hashed":  # a file without a token version was made with version 1
        try:
            version = check_version(config.get("token_version", 1), "the BiGRU's config")
        except ValueError as e:
            raise ConfigError(str(e)) from None
        return TokenHasher(config["buckets"], config["max_tokens"], version)
    if model is None:
        raise ConfigError("the BiGRU cuts text into subword pieces, but its file holds no piece model")
    norm = TextNorm(config.get("lowercase", True), config.get("marks_in_words", True),
                    config.get("join_zero_width", False), config.get("fold_variants", False))
    return PieceTokenizer(model, config["buckets"] - 1, config["max_tokens"], norm)


# ---------------------------------------------------------------- modules
def _modules():
    import torch  # loaded on use: PyTorch is heavy or optional
    from torch import nn  # loaded on use: PyTorch is heavy or optional

    class ConfidenceHead(nn.Module):
        def __init__(self, dim: int, dropout: float = 0.4, positive_scale: bool = False):
            super().__init__()
            self.drop = nn.Dropout(dropout)
            self.scale = nn.Linear(2 * dim, 1)
            self.bias = nn.Linear(2 * dim, 1)
            self.positive_scale = positive_scale
            nn.init.zeros_(self.scale.weight)
            nn.init.zeros_(self.bias.weight)
            nn.init.constant_(self.scale.bias, 10.0)  # start near a plain scaled dot product
            nn.init.constant_(self.bias.bias, -5.0)

        def scale_bias(self, u):
            f = self.drop(torch.cat([u, u * u], dim=1))
            a = self.scale(f).squeeze(1)
            if self.positive_scale:  # softplus: the confidence then always grows with u.v
                a = torch.nn.functional.softplus(a)
            return a, self.bias(f).squeeze(1)

        def logits(self, u, v):  # aligned pairs
            a, b = self.scale_bias(u)
            return a * (u * v).sum(1) + b

        def logits_matrix(self, u, v):  # every source against every target
            a, b = self.scale_bias(u)
            return a[:, None] * (u @ v.T) + b[:, None]

    class FCHead(nn.Module):
        def __init__(self, dim: int, hidden: int, dropout: float = 0.1):
            super().__init__()
            self.fc = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU())
            self.drop = nn.Dropout(dropout)
            self.out = nn.Linear(3 * hidden, 2)

        def transform(self, u):
            return self.fc(u)

        def logits(self, u, v):
            a, b = self.transform(u), self.transform(v)
            return self.out(self.drop(torch.cat([a, b, (a - b).abs()], dim=1)))

    class BiGRUPair(nn.Module):
        def __init__(self, buckets: int, emb: int, hidden: int, fc: int, dropout: float):
            super().__init__()
            self.emb = nn.Embedding(buckets, emb, padding_idx=0, sparse=True)  # SparseAdam: rows seen
            self.gru = nn.GRU(emb, hidden, batch_first=True, bidirectional=True)
            self.drop = nn.Dropout(dropout)
            self.fc = nn.Linear(4 * hidden, fc)
            self.out = nn.Linear(fc, 1)
            for name, p in self.named_parameters():
                if name.endswith("bias") or "bias_" in name:
                    nn.init.zeros_(p)

        def encode(self, ids, lengths):
            from torch.nn.utils.rnn import pack_padded_sequence  # loaded on use: PyTorch is heavy or optional

            x = self.drop(self.emb(ids))
            packed = pack_padded_sequence(x, lengths.clamp(min=1), batch_first=True, enforce_sorted=False)
            _, h = self.gru(packed)  # (2, B, H): last state of each direction
            return torch.cat([h[0], h[1]], dim=1)

        def match(self, hs, ht):
            z = torch.cat([hs * ht, (hs - ht).abs()], dim=1)
            return self.out(self.drop(torch.relu(self.fc(self.drop(z))))).squeeze(1)

    return ConfidenceHead, FCHead, BiGRUPair


def build_module(cfg: dict):
    ConfidenceHead, FCHead, BiGRUPair = _modules()
    kind = cfg["kind"]
    if kind == "confidence":
        return ConfidenceHead(cfg["dim"], cfg.get("dropout", 0.4), cfg.get("positive_scale", False))
    if kind == "fc":
        return FCHead(cfg["dim"], cfg["hidden"], cfg.get("dropout", 0.1))
    if kind == "bigru":
        return BiGRUPair(cfg["buckets"], cfg["emb"], cfg["hidden"], cfg["fc"], cfg.get("dropout", 0.2))
    raise ConfigError(f"unknown classifier kind {kind!r}; kinds: {', '.join(KINDS)}")


# ---------------------------------------------------------------- the classifier
@dataclass
class PairClassifier:
    """A trained pair scorer and its config (see the module docstring)."""

    config: dict
    module: object = field(repr=False)
    pieces: bytes | None = field(default=None, repr=False)  #: the SentencePiece model of ``tokens: pieces``

    @property
    def kind(self) -> str:
        return self.config["kind"]

    @property
    def threshold(self) -> float | None:
        return self.config.get("threshold")

    # --- file
    def save(self, path: str | Path) -> None:
        import torch  # loaded on use: PyTorch is heavy or optional

        state = {k: v.detach().contiguous() for k, v in self.module.state_dict().items()}
        if self.pieces is not None:
            state[PIECES_TENSOR] = torch.frombuffer(bytearray(self.pieces), dtype=torch.uint8)
        meta = {"bimine_classifier": json.dumps({**self.config, "format": FORMAT}, sort_keys=True)}
        save_safetensors(path, state, meta)

    @classmethod
    def load(cls, path: str | Path) -> PairClassifier:
        meta, state = read_safetensors(path, "pt", "classifier", "bimine train-classifier")
        if "bimine_classifier" not in meta:
            raise ConfigError(f"classifier {path}: no bimine_classifier metadata; not written by "
                              "'bimine train-classifier'")
        cfg = json.loads(meta["bimine_classifier"])
        if cfg.get("format", 0) > FORMAT:
            raise ConfigError(f"classifier {path}: format {cfg['format']} is newer than this bimine reads "
                              f"({FORMAT}); upgrade bimine")
        pieces = state.pop(PIECES_TENSOR, None)
        module = build_module(cfg)
        module.load_state_dict(state)
        module.eval()
        return cls(cfg, module, None if pieces is None else pieces.numpy().tobytes())

    def tokenizer(self):
        """The BiGRU's text-to-rows cut (:func:`tokenizer`)."""
        return tokenizer(self.config, self.pieces)

    # --- checks
    def check_encoder(self, encoder) -> None:
        """An embedding classifier only means something on the embeddings it was trained on."""
        if self.kind not in EMBEDDING_KINDS:
            return
        if encoder is None:
            raise ConfigError(f"the {self.kind} classifier scores embeddings of {self.config['encoder']}; "
                              "give that model (remove --no-model)")
        if encoder.model_id != self.config["encoder"]:
            raise ConfigError(f"the {self.kind} classifier was trained on embeddings of {self.config['encoder']}, "
                              f"not of {encoder.model_id}; use that model or train the classifier on this one")

    def orientation(self, src_lang: str, tgt_lang: str) -> bool:
        """Whether the pipeline's sides must be swapped to match training (ConfigError when the
        classifier was trained on another language pair; a classifier trained on several pairs
        has no languages and takes any)."""
        a, b = self.config.get("src_lang"), self.config.get("tgt_lang")
        if a is None or b is None or (a, b) == (src_lang, tgt_lang):
            return False
        if (b, a) == (src_lang, tgt_lang):
            return True
        raise ConfigError(f"the {self.kind} classifier was trained on {a}-{b}, not {src_lang}-{tgt_lang}")

    # --- scoring
    def score_embeddings(self, u: np.ndarray, v: np.ndarray, output: str = "default") -> np.ndarray:
        """Scores of the aligned rows ``(u[i], v[i])`` (embedding kinds)."""
        import torch  # loaded on use: PyTorch is heavy or optional

        with torch.inference_mode():
            tu, tv = torch.from_numpy(np.ascontiguousarray(u, dtype=np.float32)), \
                torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32))
            if self.kind == "confidence":
                return torch.sigmoid(self.module.logits(tu, tv)).double().numpy()
            if self.kind == "fc":
                if output == "probability":
                    return torch.softmax(self.module.logits(tu, tv), dim=1)[:, 1].double().numpy()
                a = torch.nn.functional.normalize(self.module.transform(tu), dim=1)
                b = torch.nn.functional.normalize(self.module.transform(tv), dim=1)
                return (a * b).sum(1).double().numpy()
        raise ConfigError(f"{self.kind} does not score embeddings")

    def encode_texts(self, texts: list[str], batch: int = 512) -> np.ndarray:
        """BiGRU sentence vectors (``[h_fwd; h_bwd]``), in input order."""
        import torch  # loaded on use: PyTorch is heavy or optional

        hasher = self.tokenizer()
        order = np.argsort([len(t) for t in texts], kind="stable")
        out = np.zeros((len(texts), 2 * self.config["hidden"]), dtype=np.float32)
        with torch.inference_mode():
            for a in range(0, len(texts), batch):
                idx = order[a: a + batch]
                ids, lengths = hasher.batch([texts[i] for i in idx])
                out[idx] = self.module.encode(ids, lengths).numpy()
        return out

    def match_vectors(self, hs: np.ndarray, ht: np.ndarray) -> np.ndarray:
        import torch  # loaded on use: PyTorch is heavy or optional

        with torch.inference_mode():
            z = self.module.match(torch.from_numpy(hs), torch.from_numpy(ht))
            return torch.sigmoid(z).double().numpy()

    def score(self, src: list[str], tgt: list[str], encoder=None, *, src_lang: str | None = None,
              tgt_lang: str | None = None, output: str = "default") -> np.ndarray:
        """One score per pair, higher = more likely parallel."""
        if self.kind == "bigru":
            return self.match_vectors(self.encode_texts(src), self.encode_texts(tgt))
        self.check_encoder(encoder)
        return self.score_embeddings(encoder.encode(src, src_lang), encoder.encode(tgt, tgt_lang), output)

    def score_matrix(self, src: list[str], tgt: list[str], encoder=None, *, src_lang: str | None = None,
                     tgt_lang: str | None = None, output: str = "default", chunk: int = 256) -> np.ndarray:
        """``(len(src), len(tgt))`` scores of every source with every target (the Cartesian
        product of paper 003 §5.1), each side encoded once."""
        import torch  # loaded on use: PyTorch is heavy or optional

        if self.kind == "bigru":
            hs, ht = self.encode_texts(src), self.encode_texts(tgt)
            out = np.empty((len(src), len(tgt)))
            for a in range(0, len(src), chunk):
                blk = hs[a: a + chunk]
                rows = np.repeat(blk, len(tgt), axis=0)
                out[a: a + len(blk)] = self.match_vectors(rows, np.tile(ht, (len(blk), 1))).reshape(len(blk), -1)
            return out
        self.check_encoder(encoder)
        u, v = encoder.encode(src, src_lang), encoder.encode(tgt, tgt_lang)
        if self.kind == "confidence":
            with torch.inference_mode():
                return torch.sigmoid(self.module.logits_matrix(torch.from_numpy(u), torch.from_numpy(v))).double().numpy()
        if output == "probability":
            out = np.empty((len(src), len(tgt)))
            for a in range(0, len(src), chunk):
                blk = u[a: a + chunk]
                p = self.score_embeddings(np.repeat(blk, len(tgt), axis=0), np.tile(v, (len(blk), 1)), output)
                out[a: a + len(blk)] = p.reshape(len(blk), -1)
            return out
        with torch.inference_mode():
            a = torch.nn.functional.normalize(self.module.transform(torch.from_numpy(u)), dim=1)
            b = torch.nn.functional.normalize(self.module.transform(torch.from_numpy(v)), dim=1)
            return (a @ b.T).double().numpy()


# ---------------------------------------------------------------- metrics
def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve (ties count half), NaN scores left out."""
    from scipy.stats import rankdata  # loaded on use: SciPy is heavy or optional

    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=bool)
    keep = ~np.isnan(s)
    s, y = s[keep], y[keep]
    npos, nneg = int(y.sum()), int((~y).sum())
    if not npos or not nneg:
        return math.nan
    r = rankdata(s)
    return float((r[y].sum() - npos * (npos + 1) / 2) / (npos * nneg))
