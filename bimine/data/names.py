"""Names as pairs: the translated names of the CLDR locale data (in the ``babel`` wheel) and of
the ISO code lists (gettext catalogs in the ``pycountry`` wheel), English against each locale.

A sentence encoder trained on software strings meets few country, city, language, currency,
month and day names; these sources give one pair per name and language
(``("Germany", "Allemagne")``, ``("Kyiv", "Київ")``, ``("Tuesday", "Dienstag")``).

Both functions yield ``(lang_tag, english, translation)`` with the tag as the data spells it
(``sr_Latn_BA``, ``pt_BR``, ``sr@latin``); the recipe normalises tags. Cleaning follows the
recipe's catalog rules where they fit names (see :func:`clean_name`) and counts every drop by
reason in a :class:`~bimine.data.catalog.CleanReport`; the rule "fewer than 3 English words" of
catalog strings does not apply: a name is one or two words by nature.

Drop reasons: ``"empty"``; ``"untranslated"`` (the translation equals the English, case aside:
``Paris``/``Paris``, as :func:`~bimine.data.catalog.clean_pair` drops copies); ``"too short"``
(no word of two letters in the English: ``"M01"``, ``"S"``); ``"no English"`` (a key the English
locale does not name); ``"duplicate"`` (the same pair again for the same tag in the unit: a month
in its format and stand-alone forms); ``"English locale"`` (names of ``en_*`` locales, skipped);
and for ISO catalogs those of :func:`~bimine.data.catalog.pairs_from_mo` (``"header"``, ``"plural"``).

Reading CLDR data: babel ships it as pickles (``babel/locale-data/<locale>.dat``). They are read
with a restricted unpickler that knows only four babel classes, as inert stand-ins, and refuses
any other: no code of the downloaded wheel runs, and babel is not a dependency of bimine.
"""

from __future__ import annotations

import io
import os
import pickle
import re
import tempfile
import zipfile
from collections.abc import Iterable, Iterator

from bimine.data.catalog import CleanReport, pairs_from_mo
from bimine.errors import InputError

_WORD = re.compile(r"[^\W\d_]{2,}")  # a word as catalog.clean_pair counts them


def clean_name(en: str, xx: str) -> tuple[str, str] | str:
    """The ``(english, translation)`` name pair with spaces collapsed, or why it is dropped:
    ``"empty"``, ``"too short"`` (no word of two or more letters in the English),
    ``"untranslated"`` (the same name in both languages, case aside)."""
    en, xx = " ".join(en.split()), " ".join(xx.split())
    if not en or not xx:
        return "empty"
    if not _WORD.search(en):
        return "too short"
    if en.casefold() == xx.casefold():
        return "untranslated"
    return en, xx


class _Unit:
    """Counts entries and drops, and removes repeats of a pair within one tag."""

    def __init__(self, report: CleanReport) -> None:
        self.rep = report
        self.seen: set[tuple[str, str, str]] = set()

    def pair(self, tag: str, en: str | None, xx: str) -> tuple[str, str, str] | None:
        self.rep.entries += 1
        if en is None:
            self.rep.dropped["no English"] += 1
            return None
        got = clean_name(en, xx)
        if isinstance(got, str):
            self.rep.dropped[got] += 1
            return None
        key = (tag, *got)
        if key in self.seen:
            self.rep.dropped["duplicate"] += 1
            return None
        self.seen.add(key)
        self.rep.kept += 1
        return key


def _english_tag(tag: str) -> bool:
    return tag == "en" or tag.startswith(("en_", "en-", "en@"))


# --------------------------------------------------------------------------- CLDR (babel)

# the babel classes its locale pickles name; anything else is refused
_BABEL_CLASSES = {("babel.localedata", "Alias"), ("babel.dates", "DateTimePattern"),
                  ("babel.numbers", "NumberPattern"), ("babel.plural", "PluralRule")}


class _Inert:
    """A stand-in for a babel object: keeps its arguments, does nothing."""

    def __init__(self, *args, **kwargs) -> None:
        self.args = args

    def __setstate__(self, state) -> None:
        self.state = state


class _LocaleUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) in _BABEL_CLASSES:
            return type(name, (_Inert,), {})
        raise pickle.UnpicklingError(f"unexpected class {module}.{name} in a babel locale file")


def read_locale_data(data: bytes, name: str = "<locale>") -> dict:
    """The raw (not inherited) CLDR data of one babel ``.dat`` file; a class outside babel's four
    or a corrupt file is an :class:`InputError` naming the file."""
    try:
        got = _LocaleUnpickler(io.BytesIO(data)).load()
    except Exception as e:  # corrupt data raises anything from the pickle machine
        raise InputError(f"{name}: not a readable babel locale file ({type(e).__name__}: {e})") from None
    if not isinstance(got, dict):
        raise InputError(f"{name}: not a babel locale file (holds a {type(got).__name__})")
    return got


def _strings(d) -> dict:
    """The string values of a mapping (aliases and other objects left out)."""
    return {k: v for k, v in d.items() if isinstance(v, str)} if isinstance(d, dict) else {}


def _wide(d: dict, what: str) -> dict[str, dict]:
    """``{"format": {k: name}, "stand-alone": {k: name}}`` of the wide month or day names."""
    out = {}
    top = d.get(what)
    if isinstance(top, dict):
        for ctx in ("format", "stand-alone"):
            sub = top.get(ctx)
            if isinstance(sub, dict):
                out[ctx] = _strings(sub.get("wide"))
    return out


def _cities(d: dict) -> dict[str, str]:
    zones = d.get("time_zones")
    if not isinstance(zones, dict):
        return {}
    return {z: v["city"] for z, v in zones.items() if isinstance(v, dict) and isinstance(v.get("city"), str)}


def locale_names(d: dict) -> dict[str, dict]:
    """The names of one locale's raw data by category: territories, languages, scripts,
    currencies, cities (of time zones), months and days (wide; format and stand-alone)."""
    out = {"territories": _strings(d.get("territories")), "languages": _strings(d.get("languages")),
           "scripts": _strings(d.get("scripts")), "currencies": _strings(d.get("currency_names")),
           "cities": _cities(d)}
    for what in ("months", "days"):
        for ctx, names in _wide(d, what).items():
            out[f"{what} {ctx}"] = names
    return out


def _english_cldr(en: dict, root: dict) -> dict[str, dict]:
    """English names by category. A city English CLDR does not name is root's (``São Paulo``)
    or the time zone's last part (``America/New_York`` -> ``New York``), as CLDR says;
    English month and day names are the same in both contexts (the format ones)."""
    names = locale_names(en)
    cities = {}
    for z in set(_cities(root)) | set(names["cities"]):
        cities[z] = names["cities"].get(z) or _cities(root).get(z)
    names["cities"] = cities
    for what in ("months", "days"):
        names[f"{what} stand-alone"] = names.get(f"{what} format", {})
    return names


def _english_city(english: dict, zone: str) -> str:
    got = english["cities"].get(zone)
    if got:
        return got
    return zone.rsplit("/", 1)[-1].replace("_", " ")


def cldr_pairs_from_files(files: Iterable[tuple[str, bytes]], report: CleanReport) -> Iterator[tuple[str, str, str]]:
    """``(locale, english, name)`` from babel locale files given as ``(file name, bytes)``
    (``en.dat`` and ``root.dat`` among them). Each locale gives the names its own file holds
    (a regional locale holds only those that differ from its language's), paired by key with
    the English ones."""
    files = dict(files)
    for need in ("en.dat", "root.dat"):
        if need not in files:
            raise InputError(f"babel locale data: no {need} (is this the babel wheel?)")
    english = _english_cldr(read_locale_data(files["en.dat"], "en.dat"), read_locale_data(files["root.dat"], "root.dat"))
    unit = _Unit(report)
    for fname in sorted(files):
        tag = fname[: -len(".dat")]
        if tag in ("root", "en"):
            continue  # no names (root), the English side (en)
        names = locale_names(read_locale_data(files[fname], fname))
        if _english_tag(tag):
            n = sum(len(v) for v in names.values())
            report.entries += n
            report.dropped["English locale"] += n
            continue
        for cat, got in names.items():
            for key, name in got.items():
                if cat == "cities":
                    en = _english_city(english, key)
                else:
                    en = english.get(cat, {}).get(key)
                if (row := unit.pair(tag, en, name)) is not None:
                    yield row


def cldr_pairs(wheel_path: str, report: CleanReport) -> Iterator[tuple[str, str, str]]:
    """``(locale, english, name)`` of the CLDR data in a babel wheel (read from the zip)."""
    try:
        z = zipfile.ZipFile(wheel_path)
    except (OSError, zipfile.BadZipFile) as e:
        raise InputError(f"{wheel_path}: not a readable wheel ({e})") from None
    with z:
        prefix = "babel/locale-data/"
        members = [n for n in z.namelist() if n.startswith(prefix) and n.endswith(".dat")]
        if not members:
            raise InputError(f"{wheel_path}: no {prefix}*.dat (is this the babel wheel?)")

        def files():
            for n in members:
                yield n[len(prefix):], z.read(n)

        yield from cldr_pairs_from_files(files(), report)


# --------------------------------------------------------------------------- ISO code lists (pycountry)

# locales/<tag>/LC_MESSAGES/<domain>.mo, domain iso3166-1, iso3166-2, iso3166-3, iso639-3,
# iso639-5, iso4217, iso15924
_ISO_MO = re.compile(r"(?:^|/)locales/([^/]+)/LC_MESSAGES/(iso[\w-]+)\.mo$")


def iso_pairs(wheel_path: str, report: CleanReport) -> Iterator[tuple[str, str, str]]:
    """``(locale, english, name)`` of the ISO code-list catalogs in a pycountry wheel (the
    ``iso-codes`` translations): every ``.mo`` under ``locales/``, cleaned by
    :func:`~bimine.data.catalog.pairs_from_mo` without the three-word minimum (names are short),
    then :func:`clean_name`'s rules; English locales skipped."""
    try:
        z = zipfile.ZipFile(wheel_path)
    except (OSError, zipfile.BadZipFile) as e:
        raise InputError(f"{wheel_path}: not a readable wheel ({e})") from None
    unit = _Unit(report)
    with z, tempfile.TemporaryDirectory(prefix="bimine-iso-") as tmp:
        catalogs = sorted((m.group(1), m.group(2), n) for n in z.namelist() if (m := _ISO_MO.search(n)))
        if not catalogs:
            raise InputError(f"{wheel_path}: no locales/*/LC_MESSAGES/iso*.mo (is this the pycountry wheel?)")
        for tag, domain, member in catalogs:
            path = os.path.join(tmp, f"{tag}-{domain}.mo")
            with open(path, "wb") as f:
                f.write(z.read(member))
            if _english_tag(tag):
                sub = CleanReport()
                for _ in pairs_from_mo(path, sub, min_src_words=1):
                    pass
                report.entries += sub.entries
                report.dropped["English locale"] += sub.entries
                continue
            # pairs_from_mo counts the entries it drops; the pairs it yields go through _Unit,
            # which counts them as entries again: take them back out of its own count
            sub = CleanReport()
            for en, xx in pairs_from_mo(path, sub, min_src_words=1):
                if (row := unit.pair(tag, en, xx)) is not None:
                    yield row
            report.entries += sub.entries - sub.kept
            report.dropped.update(sub.dropped)
            os.remove(path)
