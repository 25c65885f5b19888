"""Language codes: ISO 639-1 (``fr``), ISO 639-3 (``fra``) and FLORES-style (``fra_Latn``).

Every code is mapped to one canonical form, the ISO 639-1 code where one exists and the
ISO 639-3 code otherwise, so that ``fr``, ``fra``, ``fre`` and ``fra_Latn`` all name French.
"""

from __future__ import annotations

import re

from bimine.errors import ConfigError

# ISO 639-3 (and 639-2/B where it differs) -> ISO 639-1, for languages that have a 639-1 code.
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
_ISO1 = set(_ISO3_TO_1.values()) | {"nb", "nn", "sh"}

# Scripts written without spaces between words: character n-grams of these use a shorter range.
NO_SPACE_LANGS = frozenset({"zh", "ja", "th", "lo", "km", "my", "bo", "dz"})

_CODE_RE = re.compile(r"^([A-Za-z]{2,3})(?:[_-]([A-Za-z]{4}))?$")


def normalize_lang(code: str) -> str:
    """Return the canonical code for ``code`` (``fr``, ``fra``, ``fre``, ``fra_Latn`` -> ``fr``).

    Unknown but well-formed 3-letter codes are kept as they are (lower-cased), so languages
    without an ISO 639-1 code still work. Malformed codes raise :class:`ConfigError`.
    """
    m = _CODE_RE.match(code.strip()) if isinstance(code, str) else None
    if not m:
        raise ConfigError(
            f"invalid language code {code!r}: use ISO 639-1 ('fr'), ISO 639-3 ('fra') "
            "or FLORES-style ('fra_Latn')"
        )
    base = m.group(1).lower()
    if len(base) == 2:
        return base
    return _ISO3_TO_1.get(base, base)


def uses_spaces(lang: str) -> bool:
    """True when the language separates words with spaces (most scripts)."""
    return normalize_lang(lang) not in NO_SPACE_LANGS
