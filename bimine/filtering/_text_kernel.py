"""What the rules need to know of each text, in one compiled pass over a block's code points.

The texts of a block are joined and encoded as UTF-32 (surrogates passed through), and one
numba loop reads each code point once, looking it up in tables built from Python's own
``str`` methods (so that ``\\w``, ``str.split()`` and ``str.casefold()`` mean here exactly
what they mean in :mod:`bimine.filtering.rules`' reference functions):

* ``units``: :func:`~bimine.filtering.rules.length_units` (``\\w+`` runs, a combining mark
  continuing a run but never starting one, plus the characters of
  scripts written without spaces, each of which also ends a run, in sixths of a unit: 4 per Han
  character, 2 per kana, 1 per Thai, Lao, Tibetan, Myanmar or Khmer code point; rounded up);
* ``nonspace``: characters that are not white space (``len("".join(s.split()))``);
* ``bad``: :func:`~bimine.filtering.rules.bad_chars` (categories Cc and Cs, U+FFFD, and the
  mojibake pairs of ``_MOJIBAKE_RE`` matched left to right without overlap);
* ``key_len``, ``key_hash``: length and 64-bit hash of the identical rule's key (letters,
  digits and combining marks of ``s.casefold()``); equal keys give equal hashes, and a pair whose hashes agree is
  confirmed on the strings themselves, so the rule stays exact;
* ``dup1``, ``dup2``: two independent 64-bit hashes of ``" ".join(s.split())``, the text the
  duplicate rule compares (128 bits: collisions are far rarer than with the one 64-bit
  ``hash()`` it used before);
* ``digit``: holds a decimal digit (re's ``\\d``); ``url``: holds ``@``, ``://`` or ``www.``
  (any case), without which the URL pattern cannot match.

The tables (a flag byte and a case-folding entry per code point, 5.5 MB) take ~0.3 s to build
from ``str`` methods and are cached on disk (:mod:`bimine.diskcache`) keyed by the
Python version and its Unicode database.
"""

from __future__ import annotations

import sys
import unicodedata

import numpy as np
from numba import njit

from bimine.diskcache import cached_arrays
from bimine.text.normalize import JOINERS, KANA_RANGES, NO_SPACE_RANGES, SYLLABLE_RANGES, mark_code_points

ALNUM = 1  # str.isalnum(): re's \w without "_"
SPACE = 2  # str.isspace(): what str.split() splits on
NOSPACE = 4  # a script written without spaces (bimine.text.features.NO_SPACE_RANGES)
CONTROL = 8  # category Cc (C0, DEL, C1) or Cs (surrogates); fixed by Unicode's stability policy
DECIMAL = 16  # str.isdecimal(): re's \d
SYLLABLE = 32  # of a no-space script that writes a syllable with several code points (1/6 unit each)
KANA = 64  # Hiragana and Katakana (1/3 unit each); other no-space characters: Han (2/3 unit each)
MARK = 128  # a combining mark or ZWNJ/ZWJ (bimine.text.normalize.is_mark): inside the word it follows
MULTI = 0x110000  # fold[c] >= MULTI: the folded letters are multi[fold[c] - MULTI]

_VERSION = 4  # of the tables' layout and meaning: part of the cache key (3: MARK; 4: marks in the key)
_TABLES = None


def _build_tables() -> dict[str, np.ndarray]:
    n = 0x110000
    chars = list(np.arange(n, dtype=np.uint32).tobytes().decode("utf-32-le", "surrogatepass"))
    alnum = np.fromiter(map(str.isalnum, chars), dtype=bool, count=n)
    flags = alnum.astype(np.uint8) * ALNUM
    flags |= np.fromiter(map(str.isspace, chars), dtype=bool, count=n).astype(np.uint8) * SPACE
    flags |= np.fromiter(map(str.isdecimal, chars), dtype=bool, count=n).astype(np.uint8) * DECIMAL
    for a, b in NO_SPACE_RANGES:
        flags[a : b + 1] |= NOSPACE
    for a, b in SYLLABLE_RANGES:
        flags[a : b + 1] |= SYLLABLE
    for a, b in KANA_RANGES:
        flags[a : b + 1] |= KANA
    flags[np.array(mark_code_points(), dtype=np.int64)] |= MARK
    flags[0x00:0x20] |= CONTROL
    flags[0x7F:0xA0] |= CONTROL
    flags[0xD800:0xE000] |= CONTROL
    # the identical rule's key: the letters, digits and combining marks (not ZWNJ/ZWJ) of
    # casefold(c), per code point (casefold maps each character alone); above U+1FFFF it
    # changes nothing (checked)
    keep = alnum | (flags & MARK > 0)
    keep[sorted(JOINERS)] = False  # neither letters nor digits
    top = 0x20000
    whole = "".join(chars)
    if whole[top:].casefold() != whole[top:]:
        top = n
    fold = np.where(keep, np.arange(n, dtype=np.uint32), 0).astype(np.uint32)
    folded = list(map(str.casefold, chars[:top]))
    lengths = np.fromiter(map(len, folded), dtype=np.int64, count=top)
    single = np.flatnonzero(lengths == 1)
    codes = np.frombuffer("".join([folded[i] for i in single.tolist()]).encode("utf-32-le", "surrogatepass"),
                          dtype=np.uint32)
    fold[single] = np.where(keep[codes], codes, 0)
    multi = [[0, 0, 0]]
    for i in np.flatnonzero(lengths != 1).tolist():
        kept = [ord(ch) for ch in folded[i] if keep[ord(ch)]]
        if len(kept) <= 1:
            fold[i] = kept[0] if kept else 0
        else:
            fold[i] = MULTI + len(multi)
            multi.append(kept + [0] * (3 - len(kept)))
    return {"flags": flags, "fold": fold, "multi": np.array(multi, dtype=np.uint32)}


def tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(flags, fold, multi)``, from the disk cache when it was built by this Python."""
    global _TABLES
    if _TABLES is None:
        key = (f"text tables v{_VERSION}; python {sys.version}; unicode {unicodedata.unidata_version}; "
               f"no-space ranges {NO_SPACE_RANGES}; syllable {SYLLABLE_RANGES}; kana {KANA_RANGES}")
        t = cached_arrays("text-tables", key, _build_tables)
        _TABLES = (t["flags"], t["fold"], t["multi"])
    return _TABLES


def code_points(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The code points of all ``texts`` (UTF-32, lone surrogates kept) and the offsets of
    each text (``len(str)`` counts code points, so the offsets need no separator)."""
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), out=offsets[1:])
    cps = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return cps, offsets


_FNV = np.uint64(0x100000001B3)
_FNV0 = np.uint64(0xCBF29CE484222325)
_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_G = np.uint64(0x9E3779B97F4A7C15)
_S33 = np.uint64(33)
_S29 = np.uint64(29)
_S31 = np.uint64(31)


@njit(cache=True, nogil=True, inline="always")
def _fmix(h):
    h ^= h >> _S33
    h *= _M1
    h ^= h >> _S33
    h *= _M2
    h ^= h >> _S33
    return h


@njit(cache=True, nogil=True)
def text_stats(cps, offsets, flags, fold, multi):
    """Per text: units, nonspace, bad, key_len, key_hash, dup1, dup2, digit, url (module doc)."""
    n = len(offsets) - 1
    units = np.zeros(n, dtype=np.int64)
    nonspace = np.zeros(n, dtype=np.int64)
    bad = np.zeros(n, dtype=np.int64)
    key_len = np.zeros(n, dtype=np.int64)
    key_hash = np.zeros(n, dtype=np.uint64)
    dup1 = np.zeros(n, dtype=np.uint64)
    dup2 = np.zeros(n, dtype=np.uint64)
    digit = np.zeros(n, dtype=np.bool_)
    url = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        u = 0
        sixths = 0  # no-space characters, in sixths of a unit
        ns = 0
        b = 0
        kl = 0
        kh = _FNV0
        d1 = _FNV0
        d2 = _G
        in_word = False
        words = 0  # of the white-space-split text, for the separators of the duplicate key
        gap = False
        dg = False
        ur = False
        p1 = 0  # the previous three code points
        p2 = 0
        p3 = 0
        starter = 0  # a character that may begin a mojibake pair, not consumed by one
        for k in range(offsets[i], offsets[i + 1]):
            c = cps[k]
            f = flags[c]
            # length units
            if f & NOSPACE:
                sixths += 1 if f & SYLLABLE else (2 if f & KANA else 4)
                in_word = False
            elif (f & ALNUM) or c == 95:
                if not in_word:
                    u += 1
                in_word = True
            elif not (f & MARK):  # a mark continues the word it follows, and starts none
                in_word = False
            # white space, the duplicate key
            if f & SPACE:
                gap = True
            else:
                ns += 1
                if gap and words > 0:
                    d1 = (d1 ^ np.uint64(32)) * _FNV
                    d2 = (d2 + np.uint64(33)) * _M1
                    d2 ^= d2 >> _S29
                if gap or words == 0:
                    words += 1
                gap = False
                d1 = (d1 ^ np.uint64(c)) * _FNV
                d2 = (d2 + np.uint64(c) + np.uint64(1)) * _M1
                d2 ^= d2 >> _S29
            # bad characters
            if (f & CONTROL) or c == 0xFFFD:
                b += 1
            if starter != 0 and ((starter != 0xE2 and 0x80 <= c <= 0xBF) or (starter == 0xE2 and c == 0x20AC)):
                b += 1
                starter = 0
            elif c == 0xC2 or c == 0xC3 or c == 0xE2:
                starter = c
            else:
                starter = 0
            # the identical rule's key
            v = fold[c]
            if v != 0:
                if v < 0x110000:
                    kh = (kh ^ np.uint64(v)) * _FNV
                    kl += 1
                else:
                    m = multi[v - 0x110000]
                    for j in range(3):
                        if m[j] != 0:
                            kh = (kh ^ np.uint64(m[j])) * _FNV
                            kl += 1
            if f & DECIMAL:
                dg = True
            # "@", "://", "www." (any case)
            if c == 64:
                ur = True
            elif c == 47 and p1 == 47 and p2 == 58:
                ur = True
            elif c == 46 and (p1 == 119 or p1 == 87) and (p2 == 119 or p2 == 87) and (p3 == 119 or p3 == 87):
                ur = True
            p3 = p2
            p2 = p1
            p1 = c
        units[i] = u + (sixths + 5) // 6
        nonspace[i] = ns
        bad[i] = b
        key_len[i] = kl
        key_hash[i] = _fmix(kh ^ np.uint64(kl))
        dup1[i] = _fmix(d1 ^ np.uint64(ns))
        dup2[i] = _fmix(d2 + np.uint64(words) * _G)
        digit[i] = dg
        url[i] = ur
    return units, nonspace, bad, key_len, key_hash, dup1, dup2, digit, url


@njit(cache=True, nogil=True)
def pair_keys(a1, a2, b1, b2):
    """Two 64-bit keys of each pair from its sides' two hashes (order matters: (a, b) and
    (b, a) differ)."""
    n = len(a1)
    k1 = np.empty(n, dtype=np.uint64)
    k2 = np.empty(n, dtype=np.uint64)
    for i in range(n):
        k1[i] = _fmix(a1[i] * _G + _fmix(b1[i] ^ _M2))
        k2[i] = _fmix((a2[i] ^ _M1) + _fmix(b2[i] * _G + _S31))
    return k1, k2


@njit(cache=True, nogil=True)
def count_seen(k1, k2, keys1, keys2, counts, used):
    """For each pair key in order: how many times it came before (in earlier calls too), then
    count it, in an open-addressing table (``keys1``, ``keys2``, ``counts``; a power-of-two
    size; a slot is free while its count is 0) holding ``used`` keys, grown to stay under half
    full. Returns the scores, the new ``used`` and the (maybe new) table arrays."""
    mask = len(keys1) - 1
    out = np.empty(len(k1), dtype=np.float64)
    for i in range(len(k1)):
        s = np.int64(k1[i] & np.uint64(mask))
        while True:
            if counts[s] == 0:
                keys1[s] = k1[i]
                keys2[s] = k2[i]
                counts[s] = 1
                used += 1
                out[i] = 0.0
                break
            if keys1[s] == k1[i] and keys2[s] == k2[i]:
                out[i] = counts[s]
                counts[s] += 1
                break
            s = (s + 1) & mask
        if used * 2 > len(keys1):  # kept under half full
            keys1, keys2, counts = _grow(keys1, keys2, counts)
            mask = len(keys1) - 1
    return out, used, keys1, keys2, counts


@njit(cache=True, nogil=True)
def first_seen(k1, k2, keys1, keys2, ords, used):
    """For each pair key in order: the ordinal of its pair among the distinct pairs (numbered
    in the order of their first appearance, over earlier calls too) and whether this is that
    first appearance; an open-addressing table as :func:`count_seen`'s, whose ``ords`` hold
    ordinal + 1 (0: a free slot). ``used`` is the number of distinct pairs so far. Returns the
    ordinals, the first-appearance flags, the new ``used`` and the (maybe new) table arrays."""
    mask = len(keys1) - 1
    out = np.empty(len(k1), dtype=np.int64)
    first = np.zeros(len(k1), dtype=np.bool_)
    for i in range(len(k1)):
        s = np.int64(k1[i] & np.uint64(mask))
        while True:
            if ords[s] == 0:
                keys1[s] = k1[i]
                keys2[s] = k2[i]
                used += 1
                ords[s] = used
                out[i] = used - 1
                first[i] = True
                break
            if keys1[s] == k1[i] and keys2[s] == k2[i]:
                out[i] = ords[s] - 1
                break
            s = (s + 1) & mask
        if used * 2 > len(keys1):  # kept under half full
            keys1, keys2, ords = _grow(keys1, keys2, ords)
            mask = len(keys1) - 1
    return out, first, used, keys1, keys2, ords


@njit(cache=True, nogil=True)
def _grow(keys1, keys2, counts):
    size = 2 * len(keys1)
    n1 = np.zeros(size, dtype=np.uint64)
    n2 = np.zeros(size, dtype=np.uint64)
    nc = np.zeros(size, dtype=np.int64)
    mask = size - 1
    for s in range(len(keys1)):
        if counts[s] != 0:
            t = np.int64(keys1[s] & np.uint64(mask))
            while nc[t] != 0:
                t = (t + 1) & mask
            n1[t] = keys1[s]
            n2[t] = keys2[s]
            nc[t] = counts[s]
    return n1, n2, nc
