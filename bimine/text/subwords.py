"""A subword vocabulary in place of hashed words (issue 9, ``features.subwords``).

A SentencePiece unigram model is trained on a language-balanced sample of the training
sentences (after bimine's own normalisation: NFKC, lower case, punctuation split off), and
each sentence's pieces become rows ``buckets + piece id`` of the embedding table, after its
hashed n-grams. The model's bytes are stored with the weights (``subwords.model``), so a
model never depends on a file beside it, and their hash is part of a run's fingerprint.

A sentence's pieces are its words' pieces, each word (a run of non-space characters of the
normalised text) cut by SentencePiece on its own. With SentencePiece's default
``split_by_whitespace`` no piece crosses a space, so this is the cut of the whole sentence
except for rare ties between equally scored cuts of a word (measured: 6 of 257,613 NTREX
sentences), and it makes a word's pieces independent of the sentence it is in. It also lets
the pieces of the words already seen be kept (:class:`WordCache`): SentencePiece then only
cuts new words, which took most of the time of the pieces before.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import threading

import numpy as np

from bimine.errors import ConfigError
from bimine.text.normalize import TextNorm, append_rows

TENSOR = "subwords.model"


def _spm():
    try:
        import sentencepiece  # loaded on use: only models with features.subwords need it
    except ImportError as e:
        raise ConfigError("features.subwords needs the sentencepiece package: pip install sentencepiece") from e
    return sentencepiece


def sample_sentences(texts_by_lang: dict[str, list[list[str]]], per_language: int, seed: int,
                     norm: TextNorm = TextNorm()) -> list[str]:
    """Up to ``per_language`` distinct normalised sentences of each language (drawn with a
    seeded generator from all its texts, in every language pair it appears in), in a fixed
    order: each language gets its share of the vocabulary, whatever its size. ``norm``: the
    featuriser's own normalisation (``FeatureConfig.text_norm``), so the pieces are learnt from
    the text they will cut."""
    out: list[str] = []
    for k, lang in enumerate(sorted(texts_by_lang)):
        seen: dict[str, None] = {}
        for texts in texts_by_lang[lang]:
            for t in texts:
                seen.setdefault(t, None)
        distinct = list(seen)
        rng = np.random.default_rng([seed, 4243, k])
        pick = rng.permutation(len(distinct))[:per_language] if len(distinct) > per_language else range(len(distinct))
        for i in sorted(pick):
            s = norm(distinct[i])
            if s:
                out.append(s)
    return out


def train_model(sentences: list[str], vocab_size: int, threads: int = 1) -> bytes:
    """The bytes of a SentencePiece unigram model of ``vocab_size`` pieces trained on
    ``sentences`` (already normalised: SentencePiece's own normalisation is turned off)."""
    spm = _spm()
    if not sentences:
        raise ConfigError("features.subwords: no training sentences to build the vocabulary from")
    buf = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences), model_writer=buf, vocab_size=vocab_size, model_type="unigram",
            character_coverage=0.9995, normalization_rule_name="identity", input_sentence_size=0,
            shuffle_input_sentence=False, num_threads=threads, max_sentence_length=4192,
            bos_id=-1, eos_id=-1, minloglevel=2,
        )
    except RuntimeError as e:  # e.g. a vocabulary larger than the sample allows
        raise ConfigError(f"features.subwords: SentencePiece could not train a {vocab_size}-piece vocabulary: {e}") from e
    return buf.getvalue()


def digest(model: bytes) -> str:
    return hashlib.sha256(model).hexdigest()[:16]


def to_tensors(model: bytes) -> dict[str, np.ndarray]:
    return {TENSOR: np.frombuffer(model, dtype=np.uint8).copy()}


def from_tensors(weights) -> bytes | None:
    if TENSOR not in weights:
        return None
    return np.asarray(weights[TENSOR], dtype=np.uint8).tobytes()


def offsets_of(lists) -> np.ndarray:
    """``[0, len(lists[0]), len(lists[0]) + len(lists[1]), ...]`` (int64)."""
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, lists), dtype=np.int64, count=len(lists)), out=offsets[1:])
    return offsets


def flatten(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, offsets)``: list ``i`` is ``ids[offsets[i]:offsets[i + 1]]`` (int64)."""
    offsets = offsets_of(lists)
    ids = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=int(offsets[-1]))
    return ids, offsets


#: words kept per cache (per thread) before it is emptied and filled again: ~50-70 MB of arrays
MAX_CACHED_WORDS = 1 << 19


class WordCache:
    """The pieces of the words seen so far, in the arrays of ``_piece_kernels``' hash table.

    At most ``max_words`` words: a cache that would grow past it is emptied first (the pieces
    of a word never depend on what the cache holds, only the time to get them does)."""

    def __init__(self, buckets: int, max_words: int | None = None) -> None:
        self.buckets = buckets  # the rows kept are ``buckets + piece id``
        self.max_words = MAX_CACHED_WORDS if max_words is None else max_words
        self.resets = 0
        self._alloc(1024)

    def _alloc(self, words: int) -> None:
        self.table = np.full(2 * words, -1, dtype=np.int64)
        self.slot_hash = np.empty(words, dtype=np.uint64)
        self.slot_word = np.empty((words, 2), dtype=np.int64)
        self.slot_piece = np.empty((words, 2), dtype=np.int64)
        self.word_cp = np.empty(8 * words, dtype=np.uint32)
        self.piece_ids = np.empty(4 * words, dtype=np.int64)  # rows: buckets + piece id
        self.counts = np.zeros(3, dtype=np.int64)  # slots, code points, pieces in use

    def __len__(self) -> int:
        return int(self.counts[0])

    @staticmethod
    def _grow(a: np.ndarray, need: int) -> np.ndarray:
        if need <= len(a):
            return a
        b = np.empty((max(need, 2 * len(a)),) + a.shape[1:], dtype=a.dtype)
        b[: len(a)] = a
        return b

    def make_room(self, words: int, code_points: int, pieces: int) -> None:
        from bimine.text import _piece_kernels as K  # numba kernels: compiled on first use, not at import

        if len(self) + words > self.max_words:
            self.resets += 1
            self._alloc(1024)
        ns, nc, npc = (int(x) for x in self.counts)
        self.word_cp = self._grow(self.word_cp, nc + code_points)
        self.piece_ids = self._grow(self.piece_ids, npc + pieces)
        if ns + words > len(self.slot_hash):
            cap = len(self.slot_hash)
            while cap < ns + words:
                cap *= 2
            self.slot_hash = self._grow(self.slot_hash, cap)
            self.slot_word = self._grow(self.slot_word, cap)
            self.slot_piece = self._grow(self.slot_piece, cap)
            self.table = np.full(2 * cap, -1, dtype=np.int64)  # at most half full
            K.rehash(self.table, self.slot_hash, ns)


def fill_word_cache(wc: WordCache, c: np.ndarray, starts: np.ndarray, ids: np.ndarray, offsets: np.ndarray,
                    buckets: int, words) -> tuple[np.ndarray, np.ndarray] | None:
    """``(ids, offsets)`` with each sentence's pieces (rows ``buckets + piece``) after its
    features, the words not in ``wc`` cut by ``words`` (a list of words -> their piece lists) and
    added to it; ``None`` when the batch holds more distinct new words than the cache can."""
    from bimine.text import _piece_kernels as K  # numba kernels: compiled on first use, not at import

    for _ in range(3):
        out, off, misses = K.emit(c, starts, ids, offsets, wc.table, wc.slot_hash,
                                  wc.slot_word, wc.slot_piece, wc.word_cp, wc.piece_ids)
        if not len(misses):
            return out, off
        first: dict[str, int] = {}  # each distinct word once
        for k, (a, b) in enumerate(misses.tolist()):
            first.setdefault(c[a:b].tobytes().decode("utf-32-le"), k)
        if len(first) > wc.max_words:  # more new words than a cache holds: no cache for this batch
            return None
        misses = misses[list(first.values())]
        pieces, piece_off = flatten(words(list(first)))
        pieces += buckets
        wc.make_room(len(misses), int((misses[:, 1] - misses[:, 0]).sum()), len(pieces))
        K.insert(c, misses, pieces, piece_off, wc.table, wc.slot_hash, wc.slot_word, wc.slot_piece,
                 wc.word_cp, wc.piece_ids, wc.counts)
    return None


def warm_piece_kernels(c: np.ndarray, starts: np.ndarray, ids: np.ndarray, offsets: np.ndarray,
                       buckets: int) -> None:
    """Load (or compile) the word cache's kernels for the array types of a real batch
    (``c``/``starts``/``ids``/``offsets`` as :meth:`Pieces.append` gets them): the same fill
    on a throwaway cache, without SentencePiece (each word gets one made-up piece). Lets an
    encoder load them in the background while SentencePiece reads its model."""
    fill_word_cache(WordCache(buckets), c, starts, ids, offsets, buckets, lambda ws: [[0]] * len(ws))


class Pieces:
    """Piece ids of normalised sentences with a stored SentencePiece model."""

    def __init__(self, model: bytes, vocab_size: int) -> None:
        spm = _spm()
        self.processor = spm.SentencePieceProcessor(model_proto=model)
        if self.processor.get_piece_size() != vocab_size:
            raise ConfigError(f"the subword model has {self.processor.get_piece_size()} pieces, "
                              f"features.subwords says {vocab_size}")
        self.model = model
        self.vocab_size = vocab_size
        self._local = threading.local()

    def __getstate__(self) -> dict:
        return {"model": self.model, "vocab_size": self.vocab_size}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["model"], state["vocab_size"])

    def words(self, words: list[str]) -> list[list[int]]:
        """Each word's piece ids, the word cut on its own."""
        return self.processor.encode(words, out_type=int)

    def encode(self, normalized: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, offsets)``: the piece ids of sentence i are ``ids[offsets[i]:offsets[i + 1]]``,
        its words' pieces in order (the reference of :meth:`append`, with no cache)."""
        word_lists = [[w for w in s.split(" ") if w] for s in normalized]
        flat = list(itertools.chain.from_iterable(word_lists))
        distinct = list(dict.fromkeys(flat))
        cut = dict(zip(distinct, self.words(distinct)))
        ids, ends = flatten([cut[w] for w in flat])  # each word's pieces
        return ids, ends[offsets_of(word_lists)]

    def cache(self, buckets: int) -> WordCache:
        """This thread's word cache of rows ``buckets + piece``."""
        wc = getattr(self._local, "cache", None)
        if wc is None or wc.buckets != buckets:
            wc = self._local.cache = WordCache(buckets)
        return wc

    def append(self, c: np.ndarray, starts: np.ndarray, ids: np.ndarray, offsets: np.ndarray,
               buckets: int) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, offsets)`` with each sentence's pieces (as rows ``buckets + piece``) after its
        features. ``c``/``starts``: the normalised batch of the compiled featuriser
        (``Featurizer.normalized_codepoints``)."""
        done = fill_word_cache(self.cache(buckets), c, starts, ids, offsets, buckets, self.words)
        if done is not None:
            return done
        # a batch with more distinct new words than the cache holds
        norm = [t.strip(" ") for t in c[: starts[-1] - 1].tobytes().decode("utf-32-le").split("\n")]
        ids2, off2 = self.encode(norm)
        return append_rows(ids, offsets, np.arange(len(norm)), ids2 + buckets, off2)
