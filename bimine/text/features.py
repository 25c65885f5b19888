"""Language-agnostic hashed n-gram features (paper 000 §2.2; paper 001 §4.2).

A sentence becomes a bag of bucket ids: word unigrams and bigrams (000) and character
n-grams (001: 3-6 for space-separated scripts, 1-4 for scripts without spaces), each hashed
into ``buckets`` buckets. The hash is a 64-bit polynomial hash of the Unicode code points
followed by the splitmix64 finaliser. It depends only on the text, never on the process
(unlike Python's salted ``hash()``), so the same sentence gets the same features on every
machine and in every run.

Two implementations give the same ids in the same order: compiled kernels (numba,
``bimine/text/_kernels.py``; the default) and the NumPy reference (``backend="numpy"``, or
the environment variable ``BIMINE_BACKEND=numpy``), which the tests and the throughput
benchmark compare against.
"""

from __future__ import annotations

import importlib.util
import os
import re
import threading
import unicodedata
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache

import numpy as np

from bimine.errors import ConfigError
from bimine.langs import uses_spaces
from bimine.text.normalize import (
    ZERO_WIDTH_SPACES,
    TextNorm,
    append_rows,
    is_mark,
    no_space_table,
)
from bimine.text.subwords import Pieces

_B = 0x100000001B3  # odd multiplier (the 64-bit FNV prime): invertible modulo 2**64
_B_INV = pow(_B, -1, 1 << 64)
_SEP = 10  # code point of "\n": separates sentences in a batch, never inside one
BACKENDS = ("auto", "numba", "numpy")
SUBWORD_VOCABS = ("trained", "teacher")  # features.subword_vocab
SUBWORD_INITS = ("random", "teacher")  # features.subword_init


def resolve_backend(backend: str | None = None) -> str:
    """``"numba"`` or ``"numpy"``: the one asked for, else ``$BIMINE_BACKEND``, else numba
    where it is installed (``"auto"``)."""
    b = backend or os.environ.get("BIMINE_BACKEND") or "auto"
    if b not in BACKENDS:
        raise ConfigError(f"backend {b!r}: use one of {', '.join(BACKENDS)} (BIMINE_BACKEND)")
    if b == "auto":
        b = "numba" if importlib.util.find_spec("numba") is not None else "numpy"
    return b


#: the text-path switches of a FeatureConfig: off by default, and then absent from a model's config
TEXT_SWITCHES = ("marks_in_words", "join_zero_width", "fold_variants", "short_syllable_ngrams")


@dataclass(frozen=True)
class FeatureConfig:
    """Which n-grams a sentence is made of, and into how many buckets they are hashed.

    ``char_ngrams``/``nospace_char_ngrams`` are inclusive ``(min, max)`` lengths; ``None``
    turns character n-grams off. ``word_ngrams`` lists the word n-gram orders (1 and/or 2).
    ``max_chars`` truncates overlong sentences before featurising (the caller counts them).
    ``cross_word_chars``: character n-grams may span a space inside them (``"t c"`` of
    ``"chat chaud"``); when False they stay within a word plus its boundary spaces, as the
    per-token n-grams of paper 001 (``" chat"``, ``"hat "``).
    ``num_hashes`` > 1 gives each n-gram that many buckets (hash embeddings, Svenstrup et al.
    2017): two n-grams then share their whole representation only if all hashes collide.
    ``by_script``: the script of the text, not the language code, chooses the n-gram lengths:
    an n-gram that starts in a script written without spaces (Han, kana, Thai, Lao, Khmer,
    Myanmar, Tibetan) takes ``nospace_char_ngrams``, any other ``char_ngrams``; the language
    passed to :meth:`Featurizer.featurize` is then not used (a model needs no ``--lang``).
    ``translit``: words in non-Latin scripts written with spaces also give the word unigram
    and character n-grams of their ASCII romanisation (:mod:`bimine.text.translit`), appended
    after the sentence's own features.
    ``marks_in_words``: combining marks (Unicode Mn/Mc/Me: vowel signs, viramas, medials, tone
    marks) and ZWNJ/ZWJ stay inside their word, and the zero-width spaces U+200B/U+FEFF separate
    words like a space (:func:`normalize_text`). Off, Python's ``\\w`` cuts an abugida's every word
    at each mark (``नमस्ते`` → ``नमस ् त े``; docs/decisions.md, issue 56): the shipped model was
    trained that way, so the switch is a model's own setting, off for models that lack it.
    ``join_zero_width``: the zero-width spaces U+200B/U+FEFF are dropped, so that the words they
    separate make one run, as the same script's text written without them (Khmer and Lao sources
    differ in this; docs/decisions.md, issue 56); a model's own setting, off where it lacks it.
    ``fold_variants``: spellings that sources differ in folded to one (every apostrophe and single
    quote ``'``, every double quote ``"``, Khmer ឲ as ឱ, Arabic kaf and yeh as the Persian ones,
    the Hebrew maqaf as a hyphen, old Malayalam chillus as the atomic letters;
    :func:`~bimine.text.normalize.fold_text`); a model's own setting, off where it lacks it.
    ``short_syllable_ngrams`` (with ``by_script``): n-grams starting in Hangul or Ethiopic, whose
    characters are syllables, take ``nospace_char_ngrams``'s lengths too; off where a model lacks it.
    ``subwords`` > 0: the sentence's pieces in a SentencePiece vocabulary of that many pieces
    (:mod:`bimine.text.subwords`, trained by ``bimine train`` on ``subword_sample`` sentences
    of each language) are appended too, as rows ``buckets + piece id``: the table then has
    ``rows = buckets + subwords`` rows.
    """

    buckets: int = 1 << 18
    word_ngrams: tuple[int, ...] = (1, 2)
    char_ngrams: tuple[int, int] | None = (3, 5)
    nospace_char_ngrams: tuple[int, int] | None = (1, 4)
    lowercase: bool = True
    max_chars: int = 1000
    num_hashes: int = 1
    cross_word_chars: bool = True
    by_script: bool = False
    translit: bool = False
    subwords: int = 0
    subword_sample: int = 5000
    marks_in_words: bool = False
    join_zero_width: bool = False
    fold_variants: bool = False
    short_syllable_ngrams: bool = False
    subword_vocab: str = "trained"
    subword_init: str = "random"

    def __post_init__(self) -> None:
        if self.buckets < 1:
            raise ConfigError("features.buckets must be >= 1")
        if self.subwords < 0 or 0 < self.subwords < 100:
            raise ConfigError("features.subwords must be 0 (off) or a vocabulary of at least 100 pieces")
        if self.subword_sample < 1:
            raise ConfigError("features.subword_sample must be >= 1")
        self._check_subword_source()
        for name in TEXT_SWITCHES:
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"features.{name} must be true or false, got {getattr(self, name)!r}")
        if self.short_syllable_ngrams and (not self.by_script or self.nospace_char_ngrams is None):
            raise ConfigError("features.short_syllable_ngrams gives Hangul and Ethiopic the n-gram lengths of "
                              "nospace_char_ngrams: it needs by_script: true and nospace_char_ngrams set")
        if not 1 <= self.num_hashes <= 4:
            raise ConfigError("features.num_hashes must be 1 to 4")
        if any(n not in (1, 2) for n in self.word_ngrams):
            raise ConfigError("features.word_ngrams may contain 1 and 2 only")
        for name in ("char_ngrams", "nospace_char_ngrams"):
            r = getattr(self, name)
            if r is not None and (len(r) != 2 or not 1 <= r[0] <= r[1] <= 8):
                raise ConfigError(f"features.{name} must be [min, max] with 1 <= min <= max <= 8")

    def _check_subword_source(self) -> None:
        if self.subword_vocab not in SUBWORD_VOCABS:
            raise ConfigError(f"features.subword_vocab {self.subword_vocab!r}: use one of {', '.join(SUBWORD_VOCABS)}")
        if self.subword_init not in SUBWORD_INITS:
            raise ConfigError(f"features.subword_init {self.subword_init!r}: use one of {', '.join(SUBWORD_INITS)}")
        if self.subword_vocab == "teacher":
            if not self.subwords:
                raise ConfigError("features.subword_vocab: teacher needs features.subwords set to the teacher "
                                  "vocabulary's piece count: 191076 lower-cased, 227837 lower-cased with "
                                  "marks_in_words: true, 227131 with fold_variants too (bimine train checks it; docs/decisions.md, "
                                  "'Teacher pieces (option)')")
            if self.subword_sample != FeatureConfig.subword_sample:
                raise ConfigError("features.subword_sample is the sample the pieces are learnt from; with "
                                  "features.subword_vocab: teacher no pieces are learnt: leave it out")
        if self.subword_init == "teacher" and self.subword_vocab != "teacher":
            raise ConfigError("features.subword_init: teacher starts each piece from the teacher's embedding of "
                              "that piece: it needs features.subword_vocab: teacher")

    @property
    def text_norm(self) -> TextNorm:
        """How this config normalises text (:class:`bimine.text.normalize.TextNorm`)."""
        return TextNorm(self.lowercase, self.marks_in_words, self.join_zero_width, self.fold_variants)

    @property
    def rows(self) -> int:
        """Rows of the embedding table: the hash buckets, then one per subword piece."""
        return self.buckets + self.subwords

    def to_dict(self) -> dict:
        d = asdict(self)
        if not self.subwords:  # the config of a model without subwords reads as before
            del d["subwords"], d["subword_sample"]
        for k in TEXT_SWITCHES:  # nor one trained with marks cut off or without a fold (its model id unchanged)
            if not d[k]:
                del d[k]
        for k in ("subword_vocab", "subword_init"):  # nor one with learnt pieces, randomly started
            if d[k] == getattr(FeatureConfig, k):
                del d[k]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> FeatureConfig:
        known = set(cls.__dataclass_fields__)
        unknown = set(d) - known
        if unknown:
            raise ConfigError(f"unknown feature option(s): {sorted(unknown)}")
        d = dict(d)
        for k in ("word_ngrams", "char_ngrams", "nospace_char_ngrams"):
            if d.get(k) is not None:
                d[k] = tuple(d[k])
        return cls(**d)


def _splitmix64(z: np.ndarray) -> np.ndarray:
    z = z ^ (z >> np.uint64(30))
    z = z * np.uint64(0xBF58476D1CE4E5B9)
    z = z ^ (z >> np.uint64(27))
    z = z * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@dataclass
class _Powers:
    """Cached B**i and B**-i modulo 2**64, grown on demand."""

    fwd: np.ndarray = field(default_factory=lambda: np.ones(1, dtype=np.uint64))
    inv: np.ndarray = field(default_factory=lambda: np.ones(1, dtype=np.uint64))

    def ensure(self, n: int) -> None:
        if len(self.fwd) >= n:
            return
        size = max(n, 2 * len(self.fwd))
        with np.errstate(over="ignore"):
            for name, base in (("fwd", _B), ("inv", _B_INV)):
                steps = np.full(size, base, dtype=np.uint64)
                steps[0] = 1
                setattr(self, name, np.cumprod(steps, dtype=np.uint64))


_POW = _Powers()


class _CodePointClasses:
    """What the tokeniser regex makes of each code point (space, word, other), learnt lazily.

    A 0x110000-entry table; a code point is classified by ``TOKEN_RE``'s own ``\\w``/``\\s``
    the first time a batch holds it, so the compiled tokeniser splits exactly like the regex.
    """

    def __init__(self, marks: bool = False) -> None:
        self.table: np.ndarray | None = None
        self.lock = threading.Lock()
        self.marks = marks  # FeatureConfig.marks_in_words: marks are word characters, zero-width spaces spaces

    def ready(self, cp: np.ndarray) -> np.ndarray:
        from bimine.text import _kernels as K  # numba kernels: compiled on first use, not at import

        with self.lock:
            if self.table is None:
                t = np.full(0x110000, K.UNKNOWN, dtype=np.uint8)
                self._classify(t, np.arange(128, dtype=np.uint32), K)
                self.table = t
            new = K.unknown_code_points(cp, self.table)
            if len(new):
                self._classify(self.table, new, K)
        return self.table

    def _classify(self, table: np.ndarray, cps: np.ndarray, K) -> None:
        for c in cps.tolist():
            ch = chr(c)
            if self.marks and c in ZERO_WIDTH_SPACES:
                table[c] = K.SPACE
            elif _WORD_RE.match(ch) or (self.marks and is_mark(c)):
                table[c] = K.WORD
            else:
                table[c] = K.SPACE if _SPACE_RE.match(ch) else K.OTHER


_WORD_RE = re.compile(r"\w", re.UNICODE)
_SPACE_RE = re.compile(r"\s", re.UNICODE)
_CLASSES = {False: _CodePointClasses(), True: _CodePointClasses(marks=True)}  # by marks_in_words


_NO_TABLE = np.zeros(0, dtype=np.uint8)


class Featurizer:
    """Turns a batch of sentences into a flat array of bucket ids plus offsets.

    ``featurize(sentences, lang)`` returns ``(ids, offsets)`` where the features of sentence
    ``i`` are ``ids[offsets[i]:offsets[i + 1]]`` (int64, each in ``[0, buckets)``). An empty
    sentence has no features (``offsets[i] == offsets[i + 1]``).
    """

    def __init__(self, config: FeatureConfig, backend: str | None = None,
                 translit_table: dict[int, str] | None = None, subword_model: bytes | None = None) -> None:
        """``translit_table``: the romanisation table of a ``translit`` model (stored in its
        weights); built from anyascii when not given. ``subword_model``: the SentencePiece
        model of a ``subwords`` model (stored in its weights; a training run builds it and
        sets it with :meth:`set_subword_model` before featurising)."""
        self.config = config
        self.norm = config.text_norm  # once: normalize() runs per text on the reference paths
        self.backend = resolve_backend(backend)
        cfg = config
        self.pieces = None
        if subword_model is not None:
            self.set_subword_model(subword_model)
        self.romanizer = None
        if cfg.translit:
            from bimine.text.translit import (  # loaded on use: only models with translit
                Romanizer,
                build_table,
            )

            self.romanizer = Romanizer(translit_table if translit_table is not None else build_table())
            # romanised words: unigrams and Latin character n-grams, hashed as Latin text is
            self._extra = Featurizer(replace(cfg, word_ngrams=tuple(k for k in cfg.word_ngrams if k == 1), subwords=0,
                                             subword_vocab="trained", subword_init="random", translit=False,
                                             by_script=True), backend=self.backend)
        # premultiplied salts, row j: 0 word unigrams, 1 bigrams, 2 + k character k-grams
        self._salts = np.array(
            [
                [((salt + 1000 * r) * 0x9E3779B97F4A7C15) % (1 << 64) for r in range(cfg.num_hashes)]
                for salt in (1, 2, *(100 + k for k in range(9)))
            ],
            dtype=np.uint64,
        )

    def set_subword_model(self, model: bytes) -> None:
        """Use the SentencePiece ``model`` (bytes) for the ``subwords`` pieces."""
        if not self.config.subwords:
            raise ConfigError("a subword model was given, but features.subwords is 0")
        self.pieces = Pieces(model, self.config.subwords)

    def normalize(self, s: str) -> str:
        """``s`` as this featuriser's config normalises it (:func:`normalize_text`)."""
        return self.norm(s)

    def featurize(self, sentences: list[str], lang: str) -> tuple[np.ndarray, np.ndarray]:
        if self.config.subwords and self.pieces is None:
            raise ConfigError("features.subwords is set, but the featuriser has no subword model")
        cps = None
        if self.backend == "numba":
            cps = self.normalized_codepoints(sentences) if len(sentences) else None
            ids, offsets = self._featurize_numba(sentences, lang, cps)
        else:
            ids, offsets = self._featurize_numpy(sentences, lang)
        if self.romanizer is not None:
            ids, offsets = self._add_romanized(sentences, ids, offsets)
        if self.pieces is not None and len(sentences):
            cfg = self.config
            if cps is not None:  # the normalised batch the kernels used: " s1 \n s2 \n ...", and a word cache
                ids, offsets = self.pieces.append(cps[0], cps[1], ids, offsets, cfg.buckets)
            else:
                mc = cfg.max_chars
                norm = [self.normalize(s[:mc] if len(s) > mc else s) for s in sentences]
                ids2, off2 = self.pieces.encode(norm)
                ids, offsets = append_rows(ids, offsets, np.arange(len(sentences)), ids2 + cfg.buckets, off2)
        return ids, offsets

    def _add_romanized(self, sentences: list[str], ids: np.ndarray, offsets: np.ndarray):
        """Append to each sentence's features those of its romanised words (``translit``)."""
        cfg = self.config
        mc = cfg.max_chars
        idx = np.flatnonzero(self.romanizer.may_romanize(sentences)).tolist()
        if not idx:
            return ids, offsets
        norm = [self.normalize(sentences[i][:mc]) for i in idx]
        extra = self.romanizer.extra_texts(norm)
        keep = [j for j, e in enumerate(extra) if e]
        if not keep:
            return ids, offsets
        rows = np.array([idx[j] for j in keep], dtype=np.int64)
        ids2, off2 = self._extra.featurize([extra[j] for j in keep], "en")
        return append_rows(ids, offsets, rows, ids2, off2)

    def normalized_codepoints(self, sentences: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Code points of ``"\\n".join(" " + normalize_text(s) + " " for s in sentences)`` and
        where each sentence starts in them (``n + 1`` offsets, one past a final newline).

        Normalises the whole batch at once: NFKC and lower-casing of the batch joined with
        newlines equal those of each line (a newline never composes with a neighbour, is not
        cased and is not case-ignorable, so it ends a final-sigma context as the end of a
        string does), and the compiled tokeniser splits like ``TOKEN_RE`` (``_CLASSES``).
        A batch whose sentences themselves hold a newline is normalised line by line.
        """
        from bimine.text import _kernels as K  # numba kernels: compiled on first use, not at import

        n = len(sentences)
        mc = self.config.max_chars
        if any(len(s) > mc for s in sentences):
            sentences = [s[:mc] if len(s) > mc else s for s in sentences]
        big = "\n".join(sentences)
        if big.count("\n") == n - 1:
            if not big.isascii():
                big = self.norm.fold(unicodedata.normalize("NFKC", big))
            if self.config.lowercase:
                big = big.lower()
            if big.count("\n") == n - 1:
                cp = np.frombuffer(big.encode("utf-32-le"), dtype=np.uint32)
                return K.token_stream(cp, _CLASSES[self.config.marks_in_words].ready(cp), n)
        joined = "\n".join(f" {self.normalize(s)} " for s in sentences)
        # writable, as token_stream's array: the kernels then have one signature for both paths
        c = np.frombuffer(bytearray(joined.encode("utf-32-le")), dtype=np.uint32)
        starts = np.concatenate([[0], np.flatnonzero(c == _SEP) + 1, [len(c) + 1]]).astype(np.int64)
        return c, starts

    def _featurize_numba(self, sentences: list[str], lang: str, cps=None) -> tuple[np.ndarray, np.ndarray]:
        """``cps``: the batch's :meth:`normalized_codepoints`, when the caller has them."""
        from bimine.text import _kernels as K  # numba kernels: compiled on first use, not at import

        cfg = self.config
        if len(sentences) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64)
        c, starts = cps if cps is not None else self.normalized_codepoints(sentences)
        if cfg.by_script:
            rng, rng2, table = cfg.char_ngrams, cfg.nospace_char_ngrams, _short_ngram_table(cfg)
        else:
            rng = cfg.char_ngrams if uses_spaces(lang) else cfg.nospace_char_ngrams
            rng2, table = None, _NO_TABLE
        kmin, kmax = rng if rng is not None else (0, 0)
        kmin2, kmax2 = rng2 if rng2 is not None else (0, 0)
        return K.featurize(
            c, starts, kmin, kmax, not cfg.cross_word_chars, 1 in cfg.word_ngrams, 2 in cfg.word_ngrams,
            self._salts, np.uint64(cfg.buckets), table, kmin2, kmax2,
        )

    def _featurize_numpy(self, sentences: list[str], lang: str) -> tuple[np.ndarray, np.ndarray]:
        """The NumPy reference: vectorised over the whole batch, then sorted by sentence."""
        cfg = self.config
        n = len(sentences)
        if n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64)
        mc = cfg.max_chars
        texts = [self.normalize(s[:mc] if len(s) > mc else s) for s in sentences]
        # " s1 \n s2 \n ...": a space on each side marks the sentence (and word) boundary.
        joined = "\n".join(f" {t} " for t in texts)
        c = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
        L = len(c)
        _POW.ensure(L + 1)
        with np.errstate(over="ignore"):
            q = np.zeros(L + 1, dtype=np.uint64)
            np.cumsum(c * _POW.inv[:L], out=q[1:])
        is_sep = c == _SEP
        sid = np.cumsum(is_sep) if L else np.zeros(0, dtype=np.int64)
        sid = sid.astype(np.int64)

        def span_hash(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            # polynomial hash of c[a:b] = B**(b-1) * (q[b] - q[a])  (mod 2**64)
            with np.errstate(over="ignore"):
                return _POW.fwd[b - 1] * (q[b] - q[a])

        all_ids: list[np.ndarray] = []
        all_sid: list[np.ndarray] = []

        def add(h: np.ndarray, s: np.ndarray, salt: int) -> None:
            for r in range(cfg.num_hashes):
                with np.errstate(over="ignore"):
                    z = _splitmix64(h + np.uint64(salt + 1000 * r) * np.uint64(0x9E3779B97F4A7C15))
                all_ids.append((z % np.uint64(cfg.buckets)).astype(np.int64))
                all_sid.append(s)

        _numpy_char_ngrams(cfg, lang, c, sid, is_sep, span_hash, add)
        _numpy_word_ngrams(cfg, c, sid, is_sep, span_hash, add)

        ids = np.concatenate(all_ids) if all_ids else np.zeros(0, dtype=np.int64)
        sids = np.concatenate(all_sid) if all_sid else np.zeros(0, dtype=np.int64)
        order = np.argsort(sids, kind="stable")
        ids = ids[order]
        counts = np.bincount(sids, minlength=n)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        return ids, offsets


# Syllabic scripts written with spaces, whose every character is a syllable (Hangul: jamo,
# compatibility jamo, extensions and syllables; Ethiopic and its supplements and extensions):
# with ``short_syllable_ngrams`` their n-grams take ``nospace_char_ngrams``'s lengths too.
SPACED_SYLLABLE_RANGES = (
    (0x1100, 0x11FF), (0x3130, 0x318F), (0xA960, 0xA97F), (0xAC00, 0xD7FF),
    (0x1200, 0x139F), (0x2D80, 0x2DDF), (0xAB00, 0xAB2F),
)


@lru_cache(maxsize=1)
def _spaced_syllable_table() -> np.ndarray:
    t = no_space_table().copy()
    for a, b in SPACED_SYLLABLE_RANGES:
        t[a : b + 1] = 1
    return t


def _short_ngram_table(cfg: FeatureConfig) -> np.ndarray:
    """``table[cp] == 1`` where an n-gram starting at ``cp`` takes ``nospace_char_ngrams``."""
    return _spaced_syllable_table() if cfg.short_syllable_ngrams else no_space_table()


def _numpy_char_ngrams(cfg: FeatureConfig, lang: str, c: np.ndarray, sid: np.ndarray, is_sep: np.ndarray,
                       span_hash, add) -> None:
    """The NumPy reference's character n-grams over the normalised sentences (code points ``c``,
    sentence ids ``sid``) with their boundary spaces, each hashed and passed to ``add``."""
    L = len(c)
    if cfg.by_script:
        # lengths by the script of an n-gram's first non-space character
        first = np.concatenate([c[1:], [_SEP]])
        first = np.where(c == 32, first, c).astype(np.int64)
        ns = _short_ngram_table(cfg)[np.minimum(first, 0x10FFFF)].astype(bool) & (first != _SEP)
        ranges = [(r, m) for r, m in ((cfg.char_ngrams, ~ns), (cfg.nospace_char_ngrams, ns)) if r is not None]
    else:
        rng = cfg.char_ngrams if uses_spaces(lang) else cfg.nospace_char_ngrams
        ranges = [(rng, None)] if rng is not None else []
    if ranges:
        lengths = sorted({k for r, _ in ranges for k in range(r[0], r[1] + 1)})
        # cumulative count of spaces, to find n-grams with a space strictly inside
        spaces = np.concatenate([[0], np.cumsum(c == 32)])
        # positions that may start/end an n-gram: inside a sentence, not the separator
        for k in lengths:
            if L < k:
                continue
            a = np.arange(L - k + 1)
            ok = (sid[a] == sid[a + k - 1]) & ~is_sep[a] & ~is_sep[a + k - 1]
            if ranges[0][1] is not None:  # by script: the start's script allows length k
                allowed = np.zeros(L - k + 1, dtype=bool)
                for r, m in ranges:
                    if r[0] <= k <= r[1]:
                        allowed |= m[a]
                ok &= allowed
            if not cfg.cross_word_chars and k > 2:
                ok &= spaces[a + k - 1] - spaces[a + 1] == 0
            a = a[ok]
            # an n-gram of only spaces carries nothing (an empty sentence is "  ")
            a = a[spaces[a + k] - spaces[a] < k]
            add(span_hash(a, a + k), sid[a], 100 + k)


def _numpy_word_ngrams(cfg: FeatureConfig, c: np.ndarray, sid: np.ndarray, is_sep: np.ndarray, span_hash,
                       add) -> None:
    """The NumPy reference's word unigrams and bigrams, each hashed and passed to ``add``."""
    if not cfg.word_ngrams:
        return
    blank = (c == 32) | is_sep
    prev_blank = np.concatenate([[True], blank[:-1]])
    next_blank = np.concatenate([blank[1:], [True]])
    starts = np.flatnonzero(~blank & prev_blank)
    ends = np.flatnonzero(~blank & next_blank) + 1
    wh = span_hash(starts, ends)
    wsid = sid[starts]
    if 1 in cfg.word_ngrams:
        add(wh, wsid, 1)
    if 2 in cfg.word_ngrams and len(wh) > 1:
        same = wsid[1:] == wsid[:-1]
        with np.errstate(over="ignore"):
            bh = _splitmix64(wh[:-1]) * np.uint64(_B) + wh[1:]
        add(bh[same], wsid[1:][same], 2)
