"""The transformer dual encoder of paper 001 §4.2 (issue 16): one encoder for every language.

A sentence is cut into tokens: words and punctuation as the DAN's tokeniser splits them, and
runs of a script written without spaces (Han, kana, Thai, ...) in chunks of ``nospace_chunk``
characters. A token's vector is the sum, divided by the square root of their number, of the
embeddings of its hashed features, made by the DAN's featuriser run on the token alone: the
token itself (a hashed unigram: 001's vocabulary and out-of-vocabulary buckets in one hashed
table) and its character n-grams (3-6; 1-4 for scripts without spaces), plus, with
``translit``, those of its romanisation. A learned position embedding is added, a pre-norm
transformer stack reads the tokens, and four poolings (max, mean, first token, attention) are
concatenated and projected to ``output_dim``; the encoder L2-normalises.

Training (``bimine train`` with ``encoder: transformer``) and inference use the same PyTorch
module, :class:`TransformerNet`; :class:`TransformerEncoder` wraps it behind the
:class:`~bimine.encoders.base.Encoder` protocol and reads the exported embedding table in
its stored (int8 / int4 / ...) form, decoding only the rows a batch uses.
"""

from __future__ import annotations

import hashlib
import io
import os
import unicodedata
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from bimine.encoders.base import Encoder, check_model_digest, check_weights_sha256, weights_digest
from bimine.encoders.dan import EmbeddingTable, model_options
from bimine.encoders.torch_tables import SparseBag, quantize_table
from bimine.errors import ConfigError
from bimine.text.features import FeatureConfig, Featurizer
from bimine.text.normalize import TOKEN_RE, no_space_table
from bimine.text.translit import table_from_tensors
from bimine.text.zawgyi import to_unicode
from bimine.weights import load_safetensors, read_json

POOLINGS = ("max", "mean", "first", "attention")
RUNTIMES = ("torch", "int8", "onnx")  # TransformerEncoder(runtime=...)


def _token_features() -> FeatureConfig:
    return FeatureConfig(buckets=1 << 19, word_ngrams=(1,), char_ngrams=(3, 6), nospace_char_ngrams=(1, 4),
                         cross_word_chars=False, by_script=True)


@dataclass
class TransformerConfig:
    """Architecture of a transformer encoder (001 §4.2; its sizes: 3 layers, 8 heads, hidden
    512, filter 2048, output 500; the defaults here are sized for a CPU).

    ``features``: the hashed features of one token (word unigram and character n-grams; word
    bigrams make no sense inside a token). ``embed_dim``: width of the feature table, projected
    to ``d_model`` (a narrow table keeps the model small). ``max_tokens``: longer sentences are
    cut (the featuriser counts them). ``embedding_grad_multiplier``: 001's gradient multiplier
    on the feature embeddings (25 there).
    """

    features: FeatureConfig = field(default_factory=_token_features)
    embed_dim: int = 128
    d_model: int = 256
    layers: int = 2
    heads: int = 4
    ffn: int = 1024
    dropout: float = 0.0
    max_tokens: int = 64
    nospace_chunk: int = 3
    pooling: tuple[str, ...] = POOLINGS
    output_dim: int = 384
    embedding_grad_multiplier: float = 1.0

    def __post_init__(self) -> None:
        ints = {"embed_dim": self.embed_dim, "d_model": self.d_model, "layers": self.layers, "heads": self.heads,
                "ffn": self.ffn, "max_tokens": self.max_tokens, "nospace_chunk": self.nospace_chunk,
                "output_dim": self.output_dim}
        for key, value in ints.items():
            if value < 1:
                raise ValueError(f"{key} must be >= 1, got {value}")
        if self.d_model % self.heads:
            raise ValueError(f"d_model ({self.d_model}) must be a multiple of heads ({self.heads})")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if not self.embedding_grad_multiplier > 0:
            raise ValueError(f"embedding_grad_multiplier must be > 0, got {self.embedding_grad_multiplier}")
        bad = [p for p in self.pooling if p not in POOLINGS]
        if bad or not self.pooling or len(set(self.pooling)) != len(self.pooling):
            raise ValueError(f"pooling must list distinct items of {', '.join(POOLINGS)}, got {list(self.pooling)}")
        if tuple(self.features.word_ngrams) != (1,):
            raise ValueError("features.word_ngrams must be [1]: a token has no word bigrams")
        if self.features.subwords:
            raise ValueError("features.subwords is a DAN option: a transformer token is a word, not its pieces")
        text = [k for k in ("join_zero_width", "fold_variants") if getattr(self.features, k)]
        if text:  # the transformer cuts its tokens with its own tokeniser, which does not read them
            raise ValueError(f"features.{text[0]} is a DAN option: the transformer's tokens do not follow it")

    #: one encoder for every language (the trainer's DAN option ``shared``)
    shared = True

    def to_dict(self) -> dict:
        d = asdict(self)
        d["features"] = self.features.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> TransformerConfig:
        d = model_options(cls, d, _token_features().to_dict())
        if "pooling" in d:
            d["pooling"] = tuple(d["pooling"])
        return cls(**d)


class TokenFeaturizer:
    """Sentences to tokens to hashed features: ``featurize(sentences, lang)`` returns
    ``(ids, token_offsets, sentence_offsets)``: the features of token ``t`` are
    ``ids[token_offsets[t]:token_offsets[t + 1]]``, the tokens of sentence ``i`` are
    ``sentence_offsets[i]`` to ``sentence_offsets[i + 1]``. Every sentence has at least one
    token (an empty sentence: one token without features). ``truncated`` counts the
    sentences cut to ``max_tokens``."""

    def __init__(self, config: TransformerConfig, backend: str | None = None,
                 translit_table: dict[int, str] | None = None) -> None:
        self.config = config
        self.inner = Featurizer(config.features, backend=backend, translit_table=translit_table)
        self.romanizer = self.inner.romanizer
        self.pieces = None  # subword pieces are a DAN option (TransformerConfig refuses them)
        self.truncated = 0
        self._nospace = no_space_table()

    def tokens(self, sentence: str) -> list[str]:
        cfg = self.config
        s = sentence[: cfg.features.max_chars]
        if not s.isascii():
            s = unicodedata.normalize("NFKC", s)
        if cfg.features.lowercase:
            s = s.lower()
        out: list[str] = []
        for tok in TOKEN_RE.findall(s):
            if tok.isascii() or not any(self._nospace[ord(c)] for c in tok):
                out.append(tok)
                continue
            # runs of a script without spaces in chunks; the rest of the token stays whole
            run, kind = "", None
            for c in tok + "\0":
                k = bool(self._nospace[ord(c)]) if c != "\0" else None
                if k != kind and run:
                    if kind:
                        out += [run[i : i + cfg.nospace_chunk] for i in range(0, len(run), cfg.nospace_chunk)]
                    else:
                        out.append(run)
                    run = ""
                run += c
                kind = k
        return out

    def featurize(self, sentences: list[str], lang: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cap = self.config.max_tokens
        flat: list[str] = []
        counts = np.empty(len(sentences), dtype=np.int64)
        for i, s in enumerate(sentences):
            toks = self.tokens(s)
            if len(toks) > cap:
                toks = toks[:cap]
                self.truncated += 1
            if not toks:
                toks = [""]
            flat += toks
            counts[i] = len(toks)
        ids, tok_offsets = self.inner.featurize(flat, lang)
        sent_offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
        np.cumsum(counts, out=sent_offsets[1:])
        return ids.astype(np.int64), tok_offsets.astype(np.int64), sent_offsets


class TransformerNet(nn.Module):
    """The encoder's PyTorch module: feature table, position embedding, transformer stack,
    poolings, output projection. ``with_table=False`` builds it without the feature table
    (inference reads the exported, quantised one; :meth:`from_token_vectors`)."""

    def __init__(self, cfg: TransformerConfig, with_table: bool = True) -> None:
        super().__init__()
        self.cfg = cfg
        if with_table:
            self.embedding = SparseBag(cfg.features.buckets, cfg.embed_dim, cfg.embedding_grad_multiplier)
        self.project_in = nn.Linear(cfg.embed_dim, cfg.d_model)
        self.position = nn.Embedding(cfg.max_tokens, cfg.d_model)
        nn.init.normal_(self.position.weight, std=0.02)
        self.layers = nn.ModuleList(PackedLayer(cfg.d_model, cfg.heads, cfg.ffn, cfg.dropout) for _ in range(cfg.layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        if "attention" in cfg.pooling:
            self.attention = nn.Linear(cfg.d_model, 1)
        self.project_out = nn.Linear(len(cfg.pooling) * cfg.d_model, cfg.output_dim)

    def forward(self, ids, token_offsets, sentence_offsets, lang: str | None = None) -> torch.Tensor:
        """Raw (unnormalised) outputs of a featurised batch (:meth:`TokenFeaturizer.featurize`)."""
        return self.from_token_vectors(token_vectors(self.embedding, ids, token_offsets), sentence_offsets)

    def from_token_vectors(self, vectors: torch.Tensor, sentence_offsets) -> torch.Tensor:
        """The rest of the forward pass from each token's vector (:func:`token_vectors`)."""
        x = self.project_in(vectors)
        index, valid = packed_layout(_tensor(sentence_offsets))
        x = x + self.position.weight[index[1]]
        for layer in self.layers:
            x = layer(x, index, valid)
        return self._output(pad_packed(self.norm(x), index, valid), valid)

    def padded(self, vectors: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """:meth:`from_token_vectors` on the padded layout: ``vectors`` ``(B, T, embed_dim)``
        (anything where ``valid`` ``(B, T)`` is False). Every layer runs on the padding too
        (only the attention and the poolings mask it); made for ONNX export, whose graph
        cannot hold the packed layout's data-dependent shapes."""
        x = self.project_in(vectors) + self.position.weight[: vectors.shape[1]]
        for layer in self.layers:
            x = layer.padded(x, valid)
        return self._output(self.norm(x) * valid[:, :, None], valid)

    def _output(self, h: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """The poolings of padded ``h`` (zeros in the padding), concatenated and projected."""
        return self.project_out(torch.cat([self._pool(kind, h, valid) for kind in self.cfg.pooling], dim=1))

    def _pool(self, kind: str, h: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        if kind == "first":
            return h[:, 0]
        if kind == "max":
            return h.masked_fill(~valid[:, :, None], float("-inf")).max(dim=1).values
        if kind == "mean":
            return (h * valid[:, :, None]).sum(dim=1) / valid.sum(dim=1, keepdim=True)
        weights = self.attention(h).squeeze(-1).masked_fill(~valid, float("-inf")).softmax(dim=1)
        return (weights[:, :, None] * h).sum(dim=1)

    # the trainer's interface (as TorchDAN's)
    def attach_sparse_grads(self) -> None:
        self.embedding.attach_sparse_grads()

    def sparse_parameters(self) -> list[nn.Parameter]:
        return [self.embedding.weight]

    def dense_parameters(self) -> list[nn.Parameter]:
        return [p for n, p in self.named_parameters() if not n.startswith("embedding.")]

    def export_weights(self, quantize: str = "int8") -> dict[str, np.ndarray]:
        """The feature table as :func:`~bimine.encoders.torch_tables.quantize_table` stores it, every
        other tensor as float32 under its state-dict name."""
        out = quantize_table(self.embedding.weight, quantize, "embedding.")
        for name, t in self.state_dict().items():
            if not name.startswith("embedding."):
                out[name] = t.detach().cpu().numpy().astype(np.float32)
        return out


class PackedLayer(nn.Module):
    """A pre-norm transformer layer over packed tokens (``(N, d)``, the tokens of a batch's
    sentences one after the other): the projections and the feed-forward block run on the real
    tokens only, the attention on the padded ``(B, T)`` layout with the padding masked. On the
    recipe's short sentences a batch is ~4x padding (15.9 tokens on average, up to 64), so
    this is ~4x less work than a padded layer."""

    def __init__(self, d: int, heads: int, ffn: int, dropout: float) -> None:
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.norm1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, ffn)
        self.ff2 = nn.Linear(ffn, d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, index: tuple[torch.Tensor, torch.Tensor], valid: torch.Tensor) -> torch.Tensor:
        b, t = valid.shape
        d = x.shape[1]
        qkv = pad_packed(self.qkv(self.norm1(x)), index, valid)  # (B, T, 3d)
        q, k, v = qkv.view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)  # each (B, H, T, d/H)
        a = nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=valid[:, None, None, :], dropout_p=self.dropout if self.training else 0.0)
        a = a.transpose(1, 2).reshape(b, t, d)[index]  # back to packed tokens
        x = x + self.drop(self.out(a))
        return x + self.drop(self.ff2(self.drop(nn.functional.gelu(self.ff1(self.norm2(x))))))

    def padded(self, x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """The same layer on a padded ``(B, T, d)`` batch (inference only)."""
        b, t, d = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        a = nn.functional.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], attn_mask=valid[:, None, None, :])
        x = x + self.out(a.transpose(1, 2).reshape(b, t, d))
        return x + self.ff2(nn.functional.gelu(self.ff1(self.norm2(x))))


def token_vectors(bag: nn.EmbeddingBag, ids, token_offsets) -> torch.Tensor:
    """Each token's feature embeddings summed and divided by the square root of their number
    (as :meth:`~bimine.encoders.dan.EmbeddingTable.pool` does with a stored table)."""
    ids, token_offsets = _tensor(ids), _tensor(token_offsets)
    n_feat = (token_offsets[1:] - token_offsets[:-1]).clamp(min=1).to(torch.float32)
    return bag(ids, token_offsets[:-1]) / n_feat.sqrt()[:, None]


def packed_layout(sentence_offsets: torch.Tensor) -> tuple[tuple[torch.Tensor, torch.Tensor], torch.Tensor]:
    """``(sentence, position)`` of each packed token and the ``(B, T)`` mask of real tokens."""
    counts = sentence_offsets[1:] - sentence_offsets[:-1]
    b, t = len(counts), int(counts.max()) if len(counts) else 0
    n = int(sentence_offsets[-1])
    sent = torch.repeat_interleave(torch.arange(b), counts)
    pos = torch.arange(n) - torch.repeat_interleave(sentence_offsets[:-1], counts)
    valid = torch.zeros(b, t, dtype=torch.bool).index_put((sent, pos), torch.ones(n, dtype=torch.bool))
    return (sent, pos), valid


def pad_packed(x: torch.Tensor, index: tuple[torch.Tensor, torch.Tensor], valid: torch.Tensor) -> torch.Tensor:
    """Packed ``(N, d)`` rows laid out as ``(B, T, d)``, zeros where ``valid`` is False."""
    return x.new_zeros(*valid.shape, x.shape[1]).index_put(index, x)


def _tensor(x) -> torch.Tensor:
    return torch.from_numpy(x) if isinstance(x, np.ndarray) else x


class TransformerEncoder(Encoder):
    """A transformer model folder behind the Encoder protocol (``--model FOLDER``).

    Sentences are encoded in batches of ``batch_size`` of similar length (sorted by their
    length in characters, returned in input order). ``threads``: PyTorch's thread count (set for the whole
    process). ``runtime``: ``torch`` (the packed float32 module), ``int8`` (its linear layers
    quantised to int8 on the fly, ``torch.ao.quantization.quantize_dynamic``) or ``onnx`` (the
    padded module exported to ONNX in memory and run by ONNX Runtime, ``pip install
    onnxruntime``); ``python -m benchmarks.transformer_runtime`` measures the three. The
    runtime is part of :attr:`model_id`, so vectors cached under one are not read for another.
    """

    @property
    def uses_language(self) -> bool:
        """False with by-script n-grams (the default): ``encode`` then ignores ``lang``."""
        return not self.config.features.by_script

    def __init__(self, config: TransformerConfig, weights: dict[str, np.ndarray], *, model_id: str | None = None,
                 batch_size: int = 128, threads: int | None = None, runtime: str = "torch",
                 weights_file: str | os.PathLike | None = None) -> None:
        if runtime not in RUNTIMES:
            raise ConfigError(f"transformer runtime {runtime!r}: use one of {', '.join(RUNTIMES)}")
        self.config = config
        self.runtime = runtime
        self.training: dict = {}
        self.batch_size = batch_size
        self.dim = config.output_dim
        if model_id is None and weights_file is None:  # built in memory: named by its tensors

            model_id = "tfm-" + weights_digest(weights, config.to_dict())
        self._model_id = model_id
        self._weights_file = weights_file
        table = None
        if config.features.translit:
            table = table_from_tensors(weights)
            if table is None:
                raise ConfigError("the model's features use transliteration, but its weights hold no translit.* table")
        self.featurizer = TokenFeaturizer(config, translit_table=table)
        self.table = EmbeddingTable.from_weights(weights, "embedding.")
        if self.table.shape != (config.features.buckets, config.embed_dim):
            raise ConfigError(f"feature table has shape {self.table.shape}, config says "
                              f"({config.features.buckets}, {config.embed_dim})")
        net = TransformerNet(config, with_table=False)
        state = {k: torch.from_numpy(np.asarray(v, dtype=np.float32)) for k, v in weights.items()
                 if not k.startswith(("embedding.", "translit."))}
        try:
            net.load_state_dict(state)
        except RuntimeError as e:
            raise ConfigError(f"model weights do not fit the config: {str(e).splitlines()[0]}") from None
        net.eval()
        if threads is not None:
            torch.set_num_threads(threads)
        if runtime == "int8":
            with warnings.catch_warnings():  # torch.ao.quantization is deprecated (still in 2.13)
                warnings.simplefilter("ignore")
                net = torch.ao.quantization.quantize_dynamic(net, {nn.Linear}, dtype=torch.qint8)
        self.net = net
        self._session = _onnx_session(net, torch.get_num_threads()) if runtime == "onnx" else None

    @classmethod
    def load(cls, path: str | os.PathLike, **kwargs) -> TransformerEncoder:
        path = Path(path)
        meta = read_json(path / "config.json", "model config")
        if meta.get("architecture") != "transformer":
            raise ConfigError(f"{path}/config.json: architecture {meta.get('architecture')!r} is not 'transformer'")
        wfile = path / "model.safetensors"
        sealed = check_model_digest(path, meta, wfile) if wfile.is_file() else None  # changed since written: refused
        config = TransformerConfig.from_dict(meta["model"])
        enc = cls(config, load_safetensors(wfile, "numpy", "model weights"), weights_file=wfile, **kwargs)
        enc.training = meta.get("training", {})
        enc._sealed = (path, sealed)
        if sealed is not None:
            enc.model_id  # noqa: B018  (reads the whole weights file: checked against its recorded SHA-256 now)
        return enc

    @property
    def model_id(self) -> str:
        """``tfm-`` + the first 16 hex digits of the sha256 of the weights file (of the tensors
        for an encoder built in memory), + ``-int8`` / ``-onnx`` for those runtimes."""
        if self._model_id is None:
            with open(self._weights_file, "rb") as f:
                whole = hashlib.file_digest(f, "sha256").hexdigest()
            check_weights_sha256(*getattr(self, "_sealed", (self._weights_file, None)), whole)
            self._model_id = "tfm-" + whole[:16]
        return self._model_id if self.runtime == "torch" else f"{self._model_id}-{self.runtime}"

    @torch.no_grad()
    def _encode_batch(self, sentences: list[str], lang: str) -> np.ndarray:
        ids, tok_off, sent_off = self.featurizer.featurize(sentences, lang)
        vectors = self.table.pool(ids, tok_off)
        if self._session is not None:
            padded, valid = pad_tokens(vectors, sent_off)
            out = torch.from_numpy(self._session.run(None, {"vectors": padded, "valid": valid})[0])
        else:
            out = self.net.from_token_vectors(torch.from_numpy(vectors), sent_off)
        return nn.functional.normalize(out, dim=1).numpy()

    def _encode(self, sentences: list[str], lang: str) -> np.ndarray:
        sentences = to_unicode(sentences)  # Zawgyi Burmese read as Unicode (bimine.text.zawgyi)
        out = np.empty((len(sentences), self.dim), dtype=np.float32)
        # similar lengths together: less padding (the length of the text stands in for its tokens)
        order = np.argsort([len(s) for s in sentences], kind="stable")
        for i in range(0, len(order), self.batch_size):
            rows = order[i : i + self.batch_size]
            out[rows] = self._encode_batch([sentences[j] for j in rows], lang)
        return out


def pad_tokens(vectors: np.ndarray, sentence_offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Packed token rows ``(N, E)`` laid out as ``(B, T, E)`` (zeros in the padding) and the
    ``(B, T)`` mask of real tokens."""
    index, valid = packed_layout(torch.from_numpy(sentence_offsets))
    return pad_packed(torch.from_numpy(vectors), index, valid).numpy(), valid.numpy()


class _Padded(nn.Module):
    def __init__(self, net: TransformerNet) -> None:
        super().__init__()
        self.net = net

    def forward(self, vectors: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        return self.net.padded(vectors, valid)


def _onnx_session(net: TransformerNet, threads: int):
    """An ONNX Runtime session of ``net.padded``, exported in memory (nothing is written)."""
    try:
        import onnxruntime as ort  # loaded on use: onnxruntime is heavy or optional
    except ImportError as e:
        raise ConfigError("the onnx runtime needs ONNX Runtime: pip install onnxruntime") from e
    buf = io.BytesIO()
    dummy = (torch.zeros(2, 3, net.cfg.embed_dim), torch.tensor([[True, True, True], [True, False, False]]))
    with warnings.catch_warnings():  # the TorchScript-based exporter is deprecated (still in 2.13)
        warnings.simplefilter("ignore")
        torch.onnx.export(_Padded(net), dummy, buf, input_names=["vectors", "valid"], output_names=["out"],
                          dynamic_axes={"vectors": {0: "batch", 1: "tokens"}, "valid": {0: "batch", 1: "tokens"}},
                          opset_version=17, dynamo=False)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(buf.getvalue(), options, providers=["CPUExecutionProvider"])
