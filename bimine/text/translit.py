"""Romanised extra features for words in non-Latin scripts (``FeatureConfig.translit``).

Hashed n-grams share nothing between scripts: ``Трамп``, ``Τραμπ`` and ``Trump`` have no
n-gram in common, and neither have Serbian in Cyrillic and in Latin letters. With ``translit``
on, every word that holds a letter, mark or digit of a non-Latin script written with spaces
(Cyrillic, Greek, Arabic, Hebrew, Armenian, Georgian, Ethiopic, Hangul, ...) also contributes
the features of its lower-case ASCII romanisation (``tramp``), hashed like Latin text, so
names, loanwords and numbers meet their Latin-script forms. Scripts written without spaces
(Han, kana, Thai, ...) keep their own n-grams only, and so do the Brahmic scripts of India and
Sri Lanka (Devanagari to Sinhala, :data:`NOT_ROMANISED`): anyascii romanises them to short
consonant skeletons, and with them xsim error on NTREX rose by 2-9 points for all ten such
languages at step 4,000 while it fell for Cyrillic, Greek, Armenian, Georgian, Ethiopic,
Hangul and Arabic-script languages (docs/decisions.md).

The table (code point -> romanisation) comes from ``anyascii`` (ISC licence) when a model is
trained, and is stored in the model's weights (``translit.*`` tensors): a trained model never
depends on the installed ``anyascii`` version.
"""

from __future__ import annotations

import hashlib
import unicodedata

import numpy as np

from bimine.errors import ConfigError
from bimine.text.normalize import no_space_table

# Brahmic scripts of South Asia (Devanagari, Bengali, Gurmukhi, Gujarati, Oriya, Tamil, Telugu,
# Kannada, Malayalam, Sinhala) and the Devanagari extensions / Vedic marks: not romanised
NOT_ROMANISED = ((0x0900, 0x0DFF), (0x1CD0, 0x1CFF), (0xA8E0, 0xA8FF))


def build_table() -> dict[int, str]:
    """``{code point: romanisation}`` from anyascii: letters (L*), marks (M*) and decimal
    digits (Nd) outside ASCII that are neither Latin (by Unicode name), nor of a script written
    without spaces, nor in :data:`NOT_ROMANISED`; the romanisation is anyascii's output,
    lower-cased, letters and digits only (a mark may map to ``""``)."""
    try:
        from anyascii import anyascii  # loaded on use: anyascii is heavy or optional
    except ImportError:
        raise ConfigError(
            "features.translit: building the transliteration table needs anyascii (pip install anyascii)"
        ) from None

    ns = no_space_table()
    out: dict[int, str] = {}
    for cp in range(0x80, 0x30000):
        if ns[cp] or 0xD800 <= cp <= 0xDFFF or any(a <= cp <= b for a, b in NOT_ROMANISED):
            continue
        ch = chr(cp)
        cat = unicodedata.category(ch)
        if cat[0] not in "LM" and cat != "Nd":
            continue
        name = unicodedata.name(ch, "")
        if not name or "LATIN" in name or name.startswith("COMBINING") or "FULLWIDTH" in name:
            continue
        r = "".join(c for c in anyascii(ch).lower() if c.isascii() and c.isalnum())
        if r != ch:
            out[cp] = r
    return out


def table_digest(table: dict[int, str]) -> str:
    """A short hash of a table (recorded in checkpoints: resuming with another table is refused)."""
    h = hashlib.sha256()
    for cp in sorted(table):
        h.update(f"{cp}:{table[cp]}\n".encode())
    return h.hexdigest()[:16]


def table_to_tensors(table: dict[int, str]) -> dict[str, np.ndarray]:
    """The table as three arrays for a safetensors file: code points, offsets, ASCII bytes."""
    cps = np.array(sorted(table), dtype=np.int32)
    parts = [table[int(c)].encode("ascii") for c in cps]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    text = np.frombuffer(b"".join(parts), dtype=np.uint8).copy()
    return {"translit.codepoints": cps, "translit.offsets": offsets, "translit.text": text}


def table_from_tensors(weights) -> dict[int, str] | None:
    """The table stored by :func:`table_to_tensors`, or ``None`` when the weights hold none."""
    if "translit.codepoints" not in weights:
        return None
    cps = np.asarray(weights["translit.codepoints"])
    off = np.asarray(weights["translit.offsets"])
    text = np.asarray(weights["translit.text"]).tobytes().decode("ascii")
    if len(off) != len(cps) + 1 or off[-1] != len(text):
        raise ConfigError("model weights: the translit.* tensors do not fit together")
    return {int(c): text[off[i] : off[i + 1]] for i, c in enumerate(cps.tolist())}


class Romanizer:
    """Per sentence, the romanised forms of its words that change (``""`` when none does)."""

    def __init__(self, table: dict[int, str]) -> None:
        self.table = table
        self._trans = str.maketrans(table)
        # code points classified so far, and those that may romanise once normalised; made
        # here, not lazily: encoders call this from several threads (a character classified
        # twice gets the same answer, and is marked known only after its answer is stored)
        self._known = np.zeros(0x110000, dtype=bool)
        self._known[:0x80] = True  # ASCII: never romanised
        self._bad = np.zeros(0x110000, dtype=bool)

    def may_romanize(self, sentences: list[str]) -> np.ndarray:
        """For each raw sentence, whether :func:`~bimine.text.features.normalize_text` of it
        can hold a character this table romanises: False only when none of its characters
        does, alone, after NFKC and lower-casing (a character outside the table stays out of
        it in context: NFKC composes a mark into its base's script, and marks are not
        romanised). Sentences that are False get no extra features (``extra_texts`` would
        give ""), so callers skip normalising them: Latin text with accents, e.g. French.
        One pass over the batch's code points (NumPy); each new character is classified
        once per process."""
        n = len(sentences)
        joined = "".join(sentences)
        if joined.isascii():
            return np.zeros(n, dtype=bool)
        cps = np.frombuffer(joined.encode("utf-32-le", errors="surrogatepass"), dtype=np.uint32)
        new = np.flatnonzero(~self._known[cps])
        if len(new):
            for cp in np.unique(cps[new]).tolist():
                c = chr(cp)
                norm = unicodedata.normalize("NFKC", c) if not 0xD800 <= cp <= 0xDFFF else c
                self._bad[cp] = any(ord(x) in self.table for x in norm + norm.lower() + c.lower())
                self._known[cp] = True
        hits = np.zeros(len(cps) + 1, dtype=np.int64)
        np.cumsum(self._bad[cps], out=hits[1:])
        lengths = np.fromiter(map(len, sentences), dtype=np.int64, count=n)
        ends = np.cumsum(lengths)
        return hits[ends] > hits[ends - lengths]

    def extra_texts(self, normalized: list[str]) -> list[str]:
        """``normalized``: sentences as :func:`~bimine.text.features.normalize_text` makes
        them (space-separated tokens). Returns the romanised tokens that differ from the
        token, space-separated (empty romanisations, e.g. a lone virama, are left out)."""
        out = []
        tr = self._trans
        for s in normalized:
            if s.isascii():
                out.append("")
                continue
            t = s.translate(tr)
            if t == s:
                out.append("")
                continue
            out.append(" ".join(r for w, r in zip(s.split(" "), t.split(" ")) if r != w and r))
        return out
