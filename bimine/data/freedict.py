"""Bilingual dictionaries as word pairs: FreeDict's English->X dictionaries in Debian
(``dict-freedict-eng-*``), one pair per headword and translation.

The dictd format: ``<name>.index`` has one line per headword, ``headword<TAB>offset<TAB>length``
with offset and length in dictd's base64 (digits ``A-Za-z0-9+/``, most significant first), into
the text of ``<name>.dict.dz`` (gzip; dictzip's random-access chunks are plain gzip to a reader
of the whole file). Headwords starting ``00database`` / ``00-database`` hold the dictionary's own
description. :func:`read_dictd` reads both (pyglossary could, but it is a large GPL-3 package for
twenty lines, and it gives the same entry text that still needs the parsing below).

An entry's text, as FreeDict's TEI-to-dictd export writes it::

    Abyssinian /əbisiniən/ <n>         headword, pronunciations, part of speech
    1. abyssin, Abyssin                sense number, translations (',' or ';')
       "an example"  - ein Beispiel    examples, indented and quoted: skipped
       Synonyms: {x}  /  see: {y}      cross references and notes: skipped

WikDict-made dictionaries (bul, fin, ind, jpn, nor; "WikDict" in their description) follow each
translation line with an English gloss line (``city in Belgium``), skipped. Labels (``[chem.]``,
``<masc>``, ``(tech.)``) are removed from translations.

Drop reasons (each a candidate pair of a headword and one translation; a headword dropped whole
counts once): ``"affix"`` (headwords such as ``-ation`` or ``<suffix>`` entries, whose
translations are fragments); ``"not a translation"`` (a definition or a sub-entry rather than a
translation: a ``:``, a sentence break, ``…``, a `` - ``); ``"too long"`` (more than
:data:`MAX_WORDS` words on a side: a definition); ``"untranslated"`` (the same word in both
languages, case aside, as the recipe's catalog cleaning drops copies); ``"empty"``;
``"duplicate"`` (the same pair again in the dictionary); ``"license not free: ..."`` (every
candidate of a dictionary whose license :func:`license_allows` refuses).
"""

from __future__ import annotations

import glob
import gzip
import logging
import os
import re
from collections.abc import Iterator

from bimine.data.catalog import CleanReport
from bimine.errors import InputError

log = logging.getLogger(__name__)

MAX_WORDS = 6  # a translation of more words is a definition, not a dictionary pair

_B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}

# Debian package suffix -> the language tag the recipe reads, where the suffix is not one
# ("rom" is Romany in ISO 639; FreeDict's eng-rom is Romanian)
TAGS = {"rom": "ro"}


def b64_number(s: str) -> int:
    """A dictd base64 number (``"B"`` = 1, ``"BA"`` = 64)."""
    n = 0
    for c in s:
        if c not in _B64:
            raise ValueError(f"not a dictd base64 number: {s!r}")
        n = n * 64 + _B64[c]
    return n


def read_dictd(index_path: str, dict_path: str | None = None) -> Iterator[tuple[str, str]]:
    """``(index headword, entry text)`` of a dictd dictionary, in index order, each distinct
    entry once (several index lines may point at one entry: the first is kept). ``dict_path``:
    the ``.dict.dz`` (or ``.dict``) beside the index by default. A broken index line is an
    :class:`InputError` naming the file and line."""
    if dict_path is None:
        base = index_path[: -len(".index")] if index_path.endswith(".index") else index_path
        dict_path = base + ".dict.dz" if os.path.exists(base + ".dict.dz") else base + ".dict"
    try:
        opener = gzip.open if dict_path.endswith(".dz") or dict_path.endswith(".gz") else open
        with opener(dict_path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as e:
        raise InputError(f"{dict_path}: not a readable dictd data file ({e})") from None
    seen: set[tuple[int, int]] = set()
    with open(index_path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                raise InputError(f"{index_path}:{n}: expected headword<TAB>offset<TAB>length, got {line.strip()!r}")
            try:
                off, length = b64_number(parts[1]), b64_number(parts[2])
            except ValueError as e:
                raise InputError(f"{index_path}:{n}: {e}") from None
            if off + length > len(data):
                raise InputError(f"{index_path}:{n}: entry past the end of {os.path.basename(dict_path)}")
            if (off, length) in seen:
                continue
            seen.add((off, length))
            yield parts[0], data[off:off + length].decode("utf-8", "replace")


def _is_meta(headword: str) -> bool:
    return headword.startswith(("00database", "00-database"))


# --------------------------------------------------------------------------- licenses

# license families that allow redistributing data derived from the dictionary
_FREE = re.compile(r"^(?:A?GPL|LGPL|GFDL|CC-BY(?:-SA)?|CC0|public[- ]domain|MIT|BSD|Expat|Apache)(?:[-_ ]|$)",
                   re.IGNORECASE)
_NOT_FREE = re.compile(r"-(?:NC|ND)\b|NonCommercial|NoDeriv", re.IGNORECASE)


def license_allows(name: str) -> bool:
    """Whether a Debian ``License:`` value allows redistributing derived data: each part of an
    ``and`` must, one part of an ``or`` is enough (GPL/LGPL/AGPL, GFDL, CC-BY, CC-BY-SA, CC0,
    public domain, MIT/BSD/Apache; never a non-commercial or no-derivatives license)."""
    name = name.strip()
    if not name:
        return False
    alternatives = re.split(r"\s+or\s+", name, flags=re.IGNORECASE)
    return any(all(_FREE.match(p.strip()) and not _NOT_FREE.search(p) for p in re.split(r"\s+and\s+", a,
                                                                                          flags=re.IGNORECASE))
               for a in alternatives)


def dictionary_license(root: str, code: str) -> str | None:
    """The ``License:`` of the stanza for ``<code>/*`` (``eng-deu/*``) in the package's Debian
    copyright file (FreeDict's one file names every dictionary's license), else the ``Files: *``
    stanza's, else None."""
    fallback = None
    for path in sorted(glob.glob(os.path.join(root, "usr/share/doc/*/copyright"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for stanza in re.split(r"\n\s*\n", text):
            files = re.search(r"^Files:(.*(?:\n[ \t].*)*)", stanza, re.MULTILINE)
            lic = re.search(r"^License:[ \t]*(.*)", stanza, re.MULTILINE)
            if not files or not lic:
                continue
            patterns = files.group(1).split()
            if f"{code}/*" in patterns:
                return lic.group(1).strip()
            if "*" in patterns and fallback is None:
                fallback = lic.group(1).strip()
    return fallback


def _dictionaries(root: str) -> list[tuple[str, str]]:
    """``(code, index path)`` of the package's dictd dictionaries (``freedict-eng-deu.index``)."""
    out = []
    for idx in sorted(glob.glob(os.path.join(root, "usr/share/dictd/*.index"))):
        name = os.path.basename(idx)[: -len(".index")]
        out.append((name[len("freedict-"):] if name.startswith("freedict-") else name, idx))
    return out


def package_licenses(root: str) -> list[str]:
    """The licenses of the package's dictionaries (for the unit's JSON), ``code: license``."""
    return [f"{code}: {dictionary_license(root, code) or 'none found'}" for code, _ in _dictionaries(root)]


# --------------------------------------------------------------------------- entries

_PRON = re.compile(r"\s+(?=/|<)")  # where pronunciations and the part of speech start
_POS = re.compile(r"<([^<>]*)>")
_AFFIX_POS = {"suffix", "prefix", "infix", "affix", "interfix", "circumfix"}
_SENSE = re.compile(r"^\s*(?:[IVX]+\.|\d+\.|[a-z]\.)(?=\s|$)\s*")
_TRAILING_SENSE = re.compile(r"\s+\d+\.$")  # WikDict: "サファイア 2." (the next sense has no translation)
_XREF = re.compile(r"^\s*(?:Synonyms?|Antonyms?|See also|see|Note|Notes|Usage|Syn|Ant)\s*:", re.IGNORECASE)
_LABEL = re.compile(r"<[^<>]*>|\[[^\[\]]*\]|\{[^{}]*\}|(?:(?<=\s)|^)\([^()]*\)")
_SPLIT = re.compile(r"\s*[,;]\s*(?![^()]*\))")
_BAD = re.compile(r":|…|\.\.\.|^-|-$|\*|=|/")
_STOP_INSIDE = re.compile(r"(\w+)\.\s+\S")
# abbreviations Ding (eng-deu) and others write inside translations
_ABBREVIATIONS = {"etw", "jdn", "jdm", "jds", "jd", "sth", "sb", "o", "s", "u", "a", "z", "b", "d", "h", "e", "g", "i",
                  "bzw", "usw", "ca", "vgl", "bes", "ugs", "dgl", "od", "st", "dr", "mr", "mrs", "nr", "hl"}
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_STRESS = re.compile(r"(?<=[\u0400-\u04ff])[\u0300\u0301]")


def _headwords(first_line: str) -> tuple[list[str], set[str]]:
    """The headword(s) of an entry's first line (``pin-stripe, pin-striped`` gives two) and
    its parts of speech."""
    head = _LABEL.sub(" ", _PRON.split(first_line.strip(), maxsplit=1)[0])  # "figure (drawn)"
    pos = {p.strip().lower() for m in _POS.findall(first_line) for p in m.split(",")}
    words = [" ".join(w.split()) for w in re.split(r"\s*,\s*", head) if w.strip()]
    return words, pos


def _translations(line: str, split: bool = True) -> list[str]:
    """The translations of one sense line: labels and sense marks removed, split at , and ;.
    A description after `` - `` goes (eng-ara: ``هيرودوتس - أبو التاريخ``, a name and who he
    was); ``~`` joins words in eng-hin; stress marks of Cyrillic words (``свеще́н``) go.
    ``split=False``: the line is one translation (that of a phrase, commas and all)."""
    line = _TRAILING_SENSE.sub("", line)
    prev = None
    while prev != line:  # nested labels: "[of (iron)]"
        prev, line = line, _LABEL.sub(" ", line)
    prev = None
    while prev != line:  # "I. 1. próżnia" once "<N>" is gone
        prev, line = line, _SENSE.sub("", line)
    line = line.replace("~", " ")
    if _CYRILLIC.search(line):
        line = _STRESS.sub("", line)
    items = []
    for item in _SPLIT.split(line) if split else [line]:
        item = " ".join(item.split(" - ", 1)[0].split()).strip(" .")
        if item:
            items.append(item)
    return items


def _sentence_break(item: str) -> bool:
    """A full stop inside the item that ends a sentence, not an abbreviation (``etw. öffnen``)."""
    return any(m.group(1).lower() not in _ABBREVIATIONS for m in _STOP_INSIDE.finditer(item))


def entry_pairs(text: str, wikdict: bool = False) -> tuple[list[tuple[str, str]] | str, list[str]]:
    """The candidate ``(headword, translation)`` pairs of one entry's text, or the reason the
    whole entry is dropped (``"affix"``, ``"empty"``); second: drop reasons met for single
    translations (``"not a translation"``). ``wikdict``: every second line after the headword
    is an English gloss."""
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines or not lines[0].strip():
        return "empty", []
    heads, pos = _headwords(lines[0])
    if not heads:
        return "empty", []
    if pos & _AFFIX_POS or any(h.startswith("-") or h.endswith("-") for h in heads):
        return "affix", []
    body = lines[1:]
    if wikdict:
        body = body[0::2]
    out: list[tuple[str, str]] = []
    drops: list[str] = []
    for line in body:
        s = line.strip()
        if not s or s.startswith(('"', "-", "{")) or _XREF.match(s):
            continue  # examples ("..."), phrase translations (- ...), cross references, notes
        if re.search(r"<[^<>]*Comp>|\(:", s):
            drops.append("not a translation")  # Polish compounds and phrases: "<N Comp>vacuum cleaner   odkurzacz"
            continue
        # the translation of a phrase of four words or more is one, commas and all
        for item in _translations(s, split=max(len(h.split()) for h in heads) < 4):
            if _BAD.search(item) or _sentence_break(item):
                drops.append("not a translation")
                continue
            for h in heads:
                out.append((h, item))
    return out, drops


def dictionary_pairs(index_path: str, tag: str, report: CleanReport) -> Iterator[tuple[str, str, str]]:
    """``(tag, headword, translation)`` of one dictd dictionary, cleaned; counts in ``report``."""
    wikdict = False
    seen: set[tuple[str, str]] = set()
    for head, text in read_dictd(index_path):
        if _is_meta(head):
            wikdict = wikdict or "wikdict" in text.lower()
            continue
        got, drops = entry_pairs(text, wikdict)
        for reason in drops:
            report.entries += 1
            report.dropped[reason] += 1
        if isinstance(got, str):
            report.entries += 1
            report.dropped[got] += 1
            continue
        for en, xx in got:
            report.entries += 1
            if max(len(en.split()), len(xx.split())) > MAX_WORDS:
                report.dropped["too long"] += 1
            elif en.casefold() == xx.casefold():
                report.dropped["untranslated"] += 1
            elif (en, xx) in seen:
                report.dropped["duplicate"] += 1
            else:
                seen.add((en, xx))
                report.kept += 1
                yield tag, en, xx


def tag_of(code: str) -> str:
    """The language tag of a dictionary code (``eng-deu`` -> ``deu``, ``eng-rom`` -> ``ro``)."""
    target = code.split("-", 1)[1] if "-" in code else code
    return TAGS.get(target, target)


def freedict_pairs(root: str, report: CleanReport) -> Iterator[tuple[str, str, str]]:
    """``(tag, headword, translation)`` of the English->X dictionaries in an unpacked
    ``dict-freedict-eng-*`` package whose license allows it; a dictionary whose license does
    not (or that names none) gives no pair: its candidates are counted as
    ``"license not free: <license>"``."""
    dicts = [(c, i) for c, i in _dictionaries(root) if c.startswith("eng-")]
    if not dicts:
        raise InputError(f"{root}: no usr/share/dictd/freedict-eng-*.index (is this a dict-freedict-eng-* package?)")
    for code, idx in dicts:
        lic = dictionary_license(root, code)
        if lic is None or not license_allows(lic):
            sub = CleanReport()
            for _ in dictionary_pairs(idx, tag_of(code), sub):
                pass
            report.entries += sub.entries
            report.dropped[f"license not free: {lic or 'none found'}"] += sub.entries
            log.warning(f"{code}: license '{lic or 'none found'}' does not allow redistributing derived data; skipped")
            continue
        yield from dictionary_pairs(idx, tag_of(code), report)
