"""Language codes: ISO 639-1 (``fr``), ISO 639-3 (``fra``) and FLORES-style (``fra_Latn``).

Every code is mapped to one canonical form, the ISO 639-1 code where one exists and the
ISO 639-3 code otherwise, so that ``fr``, ``fra``, ``fre`` and ``fra_Latn`` all name French.

Which codes are accepted (anything else is a :class:`ConfigError` saying how to write one):

- 2 letters: one of the 185 ISO 639-1 codes (``fr``, ``sh``, ``bh``), or a withdrawn one
  that still circulates (``iw``, ``in``, ``ji``, ``jw``, ``mo`` -> ``he``, ``id``, ``yi``,
  ``jv``, ``ro``). ``xx`` is refused.
- 3 letters: one of the 7,910 ISO 639-3 codes (individual languages, macrolanguages and
  the special codes ``mis``, ``mul``, ``und``, ``zxx``), an ISO 639-2/B code (``fre``,
  ``ger``) or ``bih``. The full list ships with bimine (``bimine/_langdata.py``, generated
  from the ISO 639-3 registration authority's tables), so a language without an ISO 639-1
  code, or one that the language identifier does not know (``acu``, ``quc``), works as
  well as ``fra``; a code outside the list (``qqq``, ``xyz``) is refused.
  Individual languages of a macrolanguage that has a 639-1 code map to it where the
  corpora we know use them that way (``arb`` -> ``ar``, ``cmn``/``yue`` -> ``zh``,
  ``pes`` -> ``fa``, ``zsm`` -> ``ms``, ``swh`` -> ``sw``); other 639-3 codes stay as
  they are.
- Either, followed by ``_`` or ``-`` and a 4-letter script (``fra_Latn``, ``zho_Hans``,
  ``zh-hans``) and/or a 2-letter or 3-digit region (``en-US``, ``pt_BR``, ``es-419``,
  ``eng-GB``). The script and region are checked for their form only and then dropped:
  bimine's encoders and stores know languages, not scripts or regions.
- Case does not matter (``FRA_latn`` is ``fr``).
"""

from __future__ import annotations

import functools
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from bimine._langdata import ISO639_1, ISO639_2B, ISO639_3
from bimine.errors import ConfigError

# ISO 639-3 (and 639-2/B where it differs) -> ISO 639-1, for languages that have a 639-1 code;
# also individual languages -> their macrolanguage's 639-1 code where corpora use them so.
# The generated tables below complete it for every other 639-1 language.
_ISO3_TO_1 = {
    "afr": "af",
    "amh": "am",
    "ara": "ar",
    "arb": "ar",
    "asm": "as",
    "aze": "az",
    "azj": "az",
    "bak": "ba",
    "bel": "be",
    "ben": "bn",
    "bod": "bo",
    "tib": "bo",
    "bos": "bs",
    "bre": "br",
    "bul": "bg",
    "cat": "ca",
    "ces": "cs",
    "cze": "cs",
    "cym": "cy",
    "wel": "cy",
    "dan": "da",
    "deu": "de",
    "ger": "de",
    "div": "dv",
    "dzo": "dz",
    "ell": "el",
    "gre": "el",
    "eng": "en",
    "epo": "eo",
    "est": "et",
    "ekk": "et",
    "eus": "eu",
    "baq": "eu",
    "ewe": "ee",
    "fao": "fo",
    "fas": "fa",
    "per": "fa",
    "pes": "fa",
    "fij": "fj",
    "fin": "fi",
    "fra": "fr",
    "fre": "fr",
    "fry": "fy",
    "ful": "ff",
    "gle": "ga",
    "gla": "gd",
    "glg": "gl",
    "grn": "gn",
    "guj": "gu",
    "hat": "ht",
    "hau": "ha",
    "heb": "he",
    "hin": "hi",
    "hrv": "hr",
    "hun": "hu",
    "hye": "hy",
    "arm": "hy",
    "ibo": "ig",
    "ind": "id",
    "isl": "is",
    "ice": "is",
    "ita": "it",
    "jav": "jv",
    "jpn": "ja",
    "kal": "kl",
    "kan": "kn",
    "kat": "ka",
    "geo": "ka",
    "kaz": "kk",
    "khm": "km",
    "kin": "rw",
    "kir": "ky",
    "kor": "ko",
    "kur": "ku",
    "kmr": "ku",
    "lao": "lo",
    "lat": "la",
    "lav": "lv",
    "lvs": "lv",
    "lin": "ln",
    "lit": "lt",
    "ltz": "lb",
    "lug": "lg",
    "mal": "ml",
    "mar": "mr",
    "mkd": "mk",
    "mac": "mk",
    "mlg": "mg",
    "plt": "mg",
    "mlt": "mt",
    "mon": "mn",
    "khk": "mn",
    "mri": "mi",
    "mao": "mi",
    "msa": "ms",
    "may": "ms",
    "zsm": "ms",
    "mya": "my",
    "bur": "my",
    "nep": "ne",
    "npi": "ne",
    "nld": "nl",
    "dut": "nl",
    "nno": "nn",
    "nob": "nb",
    "nor": "no",
    "nya": "ny",
    "oci": "oc",
    "ori": "or",
    "ory": "or",
    "orm": "om",
    "gaz": "om",
    "pan": "pa",
    "pol": "pl",
    "por": "pt",
    "pus": "ps",
    "pbt": "ps",
    "que": "qu",
    "ron": "ro",
    "rum": "ro",
    "rus": "ru",
    "san": "sa",
    "sin": "si",
    "slk": "sk",
    "slo": "sk",
    "slv": "sl",
    "smo": "sm",
    "sna": "sn",
    "snd": "sd",
    "som": "so",
    "sot": "st",
    "spa": "es",
    "sqi": "sq",
    "alb": "sq",
    "als": "sq",
    "srp": "sr",
    "ssw": "ss",
    "sun": "su",
    "swa": "sw",
    "swh": "sw",
    "swe": "sv",
    "tah": "ty",
    "tam": "ta",
    "tat": "tt",
    "tel": "te",
    "tgk": "tg",
    "tgl": "tl",
    "tha": "th",
    "tir": "ti",
    "ton": "to",
    "tsn": "tn",
    "tso": "ts",
    "tuk": "tk",
    "tur": "tr",
    "uig": "ug",
    "ukr": "uk",
    "urd": "ur",
    "uzb": "uz",
    "uzn": "uz",
    "ven": "ve",
    "vie": "vi",
    "wol": "wo",
    "xho": "xh",
    "yid": "yi",
    "ydd": "yi",
    "yor": "yo",
    "zho": "zh",
    "chi": "zh",
    "cmn": "zh",
    "yue": "zh",
    "zul": "zu",
    "ast": "ast",
    "ceb": "ceb",
    "haw": "haw",
}
_TO_1: dict[str, str] = {a3: a2 for a2, (a3, _) in ISO639_1.items()}
_TO_1.update({b: _TO_1[t] for b, t in ISO639_2B.items() if t in _TO_1})
_TO_1.update(_ISO3_TO_1)
# withdrawn ISO 639-1 codes still found in corpora and tools
_OLD_1 = {"iw": "he", "in": "id", "ji": "yi", "jw": "jv", "mo": "ro"}

# Scripts written without spaces between words: character n-grams of these use a shorter range.
NO_SPACE_LANGS = frozenset({"zh", "ja", "th", "lo", "km", "my", "bo", "dz"})

_CODE_RE = re.compile(r"^([a-z]{2,3})(?:[_-]([a-z]{4}))?(?:[_-]([a-z]{2}|[0-9]{3}))?$", re.IGNORECASE)
HOW_TO_WRITE = "write ISO 639-1 ('fr'), ISO 639-3 ('fra') or FLORES-style ('fra_Latn')"


def normalize_lang(code: str) -> str:
    """Return the canonical code for ``code`` (``fr``, ``fra``, ``fre``, ``fra_Latn`` -> ``fr``).

    See the module docstring for what is accepted. Raises :class:`ConfigError` for a
    malformed code (``english``, ``fr_Latin``) or an unknown one (``xx``, ``qqq``), with a
    suggestion when the text is a language's English name (``english`` -> ``en``).
    """
    if not isinstance(code, str):
        raise ConfigError(f"invalid language code {code!r}: expected a string; {HOW_TO_WRITE}")
    return _normalize(code.strip())


@functools.lru_cache(maxsize=4096)
def _normalize(code: str) -> str:
    m = _CODE_RE.match(code)
    if not m:
        raise ConfigError(f"invalid language code {code!r}: {HOW_TO_WRITE}{_did_you_mean(code)}")
    base = m.group(1).lower()
    if len(base) == 2:
        if base in ISO639_1:
            return base
        if base in _OLD_1:
            return _OLD_1[base]
        raise ConfigError(f"invalid language code {code!r}: {base!r} is not an ISO 639-1 code; {HOW_TO_WRITE}")
    if base in _TO_1:
        return _TO_1[base]
    if base in ISO639_3:
        return base
    raise ConfigError(f"invalid language code {code!r}: {base!r} is not an ISO 639-3 code; {HOW_TO_WRITE}")


def is_lang_code(code: str) -> bool:
    """True when :func:`normalize_lang` accepts ``code``."""
    try:
        normalize_lang(code)
    except ConfigError:
        return False
    return True


@functools.cache
def _names() -> dict[str, str]:
    """Lower-cased English names of the ISO 639-1 languages -> their code (``spanish`` -> ``es``)."""
    out: dict[str, str] = {}
    for a2, (_, name) in ISO639_1.items():
        for part in re.split(r"[;,]", name):
            out.setdefault(part.strip().lower(), a2)
    return out


def _did_you_mean(text: str) -> str:
    code = _names().get(text.strip().lower())
    return f"; for {ISO639_1[code][1].split(';')[0]} that is {code!r}" if code else ""


def language_name(lang: str) -> str | None:
    """English name of a canonical ISO 639-1 code (``de`` -> ``German``), else None."""
    entry = ISO639_1.get(lang)
    return entry[1].split(";")[0] if entry else None


def uses_spaces(lang: str) -> bool:
    """True when the language separates words with spaces (most scripts)."""
    return normalize_lang(lang) not in NO_SPACE_LANGS


# --------------------------------------------------------------------------- declared vs actual language

# Languages a language identifier confuses with each other on real text (close relatives,
# varieties, a macrolanguage and its members). A line identified as any language sharing a
# group with the declared one counts as the declared language, so a Norwegian corpus that
# the identifier calls Danish, or a Bosnian one called Croatian, raises no alarm. A code may
# sit in several groups (gl with pt and with es); the relation is not transitive, so a
# Portuguese file declared as Spanish is still caught.
_RELATED_GROUPS = (
    "no nb nn da sv",
    "hr sr bs sh cnr",
    "ms id zsm min",
    "ar arb ary arz apc ajp acm aeb afb ars acq ayl apd mey",
    "zh yue wuu lzh cmn nan hak gan hsn cjy cdo",
    "fa prs pes",
    "cs sk",
    "bg mk",
    "ku kmr ckb sdh",
    "uz uzs uzn",
    "gn gug",
    "ff fuv fuc",
    "lv ltg",
    "he hbo",
    "el grc",
    "tl fil",
    "sw swh swc",
    "zu xh ss nr nd",
    "st nso tn",
    "rw rn",
    "is fo",
    "ga gd",
    "tt ba",
    "az azb azj",
    "tr crh gag",
    "hi mai bho awa mag hne",
    "mr kok gom",
    "bn as",
    "pa pnb ur skr",
    "ht gcf gcr",
    "ca oc",
    "it vec lij nap scn co sc",
    "nl af vls li",
    "de lb gsw bar",
    "fr wa pcd frp",
    "pt gl",
    "es gl an ext ast",
    "et vro",
    "bo dz",
    "am ti tig",
    "qu quy quz",
)
_SPECIAL = frozenset({"mis", "mul", "und", "zxx"})


@functools.cache
def _groups() -> dict[str, tuple[frozenset[str], str]]:
    """code -> (every code related to it, the key its group is counted under)."""
    out: dict[str, tuple[frozenset[str], str]] = {}
    for g in _RELATED_GROUPS:
        members = g.split()
        for c in members:
            rel, key = out.get(c, (frozenset(), members[0]))
            out[c] = (rel | frozenset(members), key)
    return out


def _related(lang: str) -> frozenset[str]:
    return _groups().get(lang, (frozenset({lang}), lang))[0] | {lang}


def _group_key(lang: str) -> str:
    return _groups().get(lang, (None, lang))[1]


_IDENTIFIER = None


def _identify() -> tuple:
    """(classify(text) -> label, the identifier's labels), loading py3langid once (~0.5 s)."""
    global _IDENTIFIER
    if _IDENTIFIER is None:
        import py3langid

        labels = []
        try:
            from py3langid.langid import _get_identifier

            labels = list(dict.fromkeys(_get_identifier().nb_classes))
        except (ImportError, AttributeError):  # other py3langid versions: ask it for its labels
            labels = [lang for lang, _ in py3langid.rank("a")]
        _IDENTIFIER = (lambda text: py3langid.classify(text)[0], labels)
    return _IDENTIFIER


_MAGIC = (b"\x1f\x8b", b"\xfd7zXZ\x00", b"BZh", b"\x28\xb5\x2f\xfd")
_WHOLE_FILE_BYTES = 1 << 21  # plain files up to 2 MB are read whole; larger ones by seeking
_HEAD_BYTES = 1 << 20  # compressed files: only the first 1 MB of text is read
_MAX_LINE_BYTES = 1 << 16


def _usable(line: str, column: int | None, min_letters: int) -> str | None:
    if column is not None:
        cells = line.split("\t")
        if len(cells) < column:
            return None
        line = cells[column - 1]
    line = line.strip()
    if sum(ch.isalpha() for ch in line[:400]) < min_letters:
        return None
    return line[:400]


def _spread(items: Sequence, n: int) -> list:
    """``n`` items evenly spaced over ``items`` (all of them when there are fewer)."""
    if len(items) <= n:
        return list(items)
    return [items[(2 * i + 1) * len(items) // (2 * n)] for i in range(n)]


def _decode(raw: bytes) -> str:
    return raw.rstrip(b"\r\n").decode("utf-8", errors="replace")


def _read_sample(path: str, n: int) -> list[str]:
    """Lines of the file ``path``: evenly spread over a plain file (about 4n seeks, so the cost
    does not grow with the file), or from the first 1 MB of text of a compressed one."""
    with open(path, "rb") as f:
        compressed = f.read(6).startswith(_MAGIC)
        size = os.fstat(f.fileno()).st_size
        if not compressed:
            if size <= _WHOLE_FILE_BYTES:
                f.seek(0)
                return [_decode(x) for x in f.read().split(b"\n")]
            lines = []
            for i in range(4 * n):
                f.seek(i * size // (4 * n))
                if i:
                    f.readline(_MAX_LINE_BYTES)  # the rest of a line cut by the seek
                raw = f.readline(_MAX_LINE_BYTES)
                if raw:
                    lines.append(_decode(raw))
            return lines
    from bimine.text.io import open_binary

    g = open_binary(path)
    try:
        head = g.read(_HEAD_BYTES)
    finally:
        g.close()
    parts = head.split(b"\n")
    if len(head) == _HEAD_BYTES and len(parts) > 1:
        parts = parts[:-1]  # a line cut at the end of the head
    return [_decode(x) for x in parts]


def sample_lines(
    source: str | os.PathLike | Iterable[str], n: int = 200, *, column: int | None = None, min_letters: int = 10
) -> list[str]:
    """Up to ``n`` non-blank lines of ``source`` with at least ``min_letters`` letters, for a
    quick look at a corpus without reading it all.

    ``source``: a file (plain: lines evenly spread over it, read by seeking; compressed:
    lines from its first 1 MB of text), a list of lines (evenly spread), or any other
    iterable of lines (the first ``20 n``). ``column``: 1-based TSV column to take. ``-``
    (stdin, which cannot be read twice), a missing or unreadable file give ``[]``: the real
    read reports those.
    """
    if isinstance(source, (str, os.PathLike)):
        if str(source) == "-":
            return []
        try:
            raw = _read_sample(str(source), n)
        except Exception:  # missing, unreadable, corrupt: the real read reports it with a clear error
            return []
    elif isinstance(source, Sequence):
        raw = _spread(source, 4 * n)
    else:
        import itertools

        raw = list(itertools.islice(source, 20 * n))
    usable = [u for u in (_usable(x, column, min_letters) for x in raw if isinstance(x, str)) if u]
    return _spread(usable, n)


def check_language(
    source: str | os.PathLike | Iterable[str],
    lang: str,
    *,
    sample: int = 200,
    column: int | None = None,
    name: str | None = None,
    min_lines: int = 20,
    max_declared: float = 0.1,
    min_other: float = 0.6,
) -> str | None:
    """A one-line warning when ``source`` is clearly not in ``lang``, else None.

    Identifies the language of up to ``sample`` lines (see :func:`sample_lines`: lines of
    at least 10 letters, evenly spread over a plain file, from the head of a compressed
    one) with py3langid, and warns only when both hold:

    - at most ``max_declared`` (10%) of them look like ``lang`` or a close relative that
      identifiers confuse it with (no/nb/nn/da/sv, hr/sr/bs, ms/id, Arabic or Chinese
      varieties, ...: see ``_RELATED_GROUPS``), so a mixed corpus with a fair share of
      ``lang`` passes;
    - at least ``min_other`` (60%) look like one other language (or its relatives).

    Nothing is said when fewer than ``min_lines`` (20) usable lines are found (tiny or
    very short-lined input), when ``lang`` is a language the identifier does not know
    (most ISO 639-3 languages: there is nothing to compare with), for the special codes
    ``mul``/``und``/``zxx``/``mis``, or when py3langid is missing. Costs the identifier's
    load (about 0.5 s, once per process) plus a few milliseconds; the file is never read
    whole. Raises :class:`ConfigError` for an invalid ``lang``.

    The message reads ``news.de: declared 'fr' but 92% of 200 sampled lines look like 'de'
    (German)``; ``name`` replaces the file name (default: the path, or ``<lines>``).
    Callers print or log it.
    """
    declared = normalize_lang(lang)
    if declared in _SPECIAL:
        return None
    lines = sample_lines(source, sample, column=column)
    if len(lines) < min_lines:
        return None
    try:
        classify, labels = _identify()
    except ImportError:
        return None
    known = set()
    for label in labels:
        if is_lang_code(label):
            known.add(normalize_lang(label))
    accepted = _related(declared)
    if not accepted & known:
        return None
    found: list[str] = []
    for line in lines:
        label = classify(line)
        if is_lang_code(label) and normalize_lang(label) not in _SPECIAL:
            found.append(normalize_lang(label))
    if len(found) < min_lines:
        return None
    same = sum(1 for c in found if c in accepted)
    if same > max_declared * len(found):
        return None
    by_group: Counter[str] = Counter(_group_key(c) for c in found if c not in accepted)
    if not by_group:
        return None
    key, count = by_group.most_common(1)[0]
    if count < min_other * len(found):
        return None
    top = Counter(c for c in found if _group_key(c) == key).most_common(1)[0][0]
    label = f"{top!r}" + (f" ({language_name(top)})" if language_name(top) else "")
    where = name or (str(source) if isinstance(source, (str, os.PathLike)) else "<lines>")
    return f"{where}: declared {lang!r} but {round(100 * count / len(found))}% of {len(found)} sampled lines look like {label}"
