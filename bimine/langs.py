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
import re

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
#: Codes that name no language (missing, multiple, undetermined, no linguistic content).
NON_LANGUAGE_CODES = frozenset({"mis", "mul", "und", "zxx"})


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


def related_languages(lang: str) -> frozenset[str]:
    """``lang`` and the languages close enough to be mistaken for it (one of the groups above:
    Norwegian and Danish, Malay and Indonesian, ...): a side identified as one of them is not
    called the wrong language."""
    return _groups().get(lang, (frozenset({lang}), lang))[0] | {lang}


def language_group(lang: str) -> str:
    """The code a group of related languages is counted under (``lang`` itself outside every group)."""
    return _groups().get(lang, (None, lang))[1]
