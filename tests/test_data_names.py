"""The name and dictionary sources of the data recipe (cldr-names, iso-codes, freedict) on tiny
fixtures made here: a fake babel wheel with pickled locale files, a pycountry-like wheel with
.mo catalogs compiled by hand, a dictd dictionary in a fake unpacked Debian package."""

from __future__ import annotations

import gzip
import json
import os
import pickle
import struct
import zipfile

import pytest

from bimine.data import freedict, names, recipe
from bimine.data.catalog import CleanReport
from bimine.errors import InputError

# --------------------------------------------------------------------------- fixtures


class Alias:  # pickled under babel's name: the reader must take it as an inert stand-in
    def __init__(self, keys):
        self.keys = keys


Alias.__module__, Alias.__qualname__ = "babel.localedata", "Alias"


def _dat(d: dict) -> bytes:
    import sys
    import types

    mod = sys.modules.setdefault("babel.localedata", types.ModuleType("babel.localedata"))
    mod.Alias = Alias
    sys.modules.setdefault("babel", types.ModuleType("babel"))
    return pickle.dumps(d, protocol=4)


MONTHS_EN = {1: "January", 2: "February"}
DAYS_EN = {0: "Monday", 6: "Sunday"}


def babel_wheel(path) -> str:
    locales = {
        "root": {"months": {"format": {"wide": {1: "M01", 2: "M02"}}, "stand-alone": {"wide": Alias(["x"])}},
                 "time_zones": {"America/Sao_Paulo": {"city": "São Paulo"}}},
        "en": {"territories": {"DE": "Germany", "FR": "France", "001": "world"},
               "languages": {"de": "German", "fr": "French"}, "scripts": {"Latn": "Latin"},
               "currency_names": {"EUR": "Euro"},
               "time_zones": {"Etc/Unknown": {"city": "Unknown Location"}},
               "months": {"format": {"wide": MONTHS_EN}, "stand-alone": {"wide": MONTHS_EN}},
               "days": {"format": {"wide": DAYS_EN}}},
        "fr": {"territories": {"DE": "Allemagne", "FR": "France", "001": "Monde", "ZZ": "inconnu"},
               "languages": {"de": "allemand", "fr": "français"}, "scripts": {"Latn": "latin"},
               "currency_names": {"EUR": "euro", "XXX": ""},
               "time_zones": {"America/New_York": {"city": "New York"}, "America/Sao_Paulo": {"city": "São Paulo"},
                              "Europe/Kyiv": {"city": "Kyiv"}, "Europe/London": {"city": "Londres"},
                              "Etc/Unknown": {"city": "lieu inconnu"}},
               "months": {"format": {"wide": {1: "janvier", 2: "février"}},
                          "stand-alone": {"wide": {1: "janvier", 2: "février"}}},
               "days": {"format": {"wide": {0: "lundi", 6: "dimanche"}}}},
        "fr_CA": {"territories": {"DE": "Allemagne (CA)"}},
        "en_GB": {"territories": {"DE": "Germany"}},
        "uk": {"time_zones": {"Europe/Kyiv": {"city": "Київ"}}, "scripts": {"Latn": "латиниця"}},
    }
    whl = os.path.join(path, "babel-2.19.0-py3-none-any.whl")
    with zipfile.ZipFile(whl, "w") as z:
        for name, d in locales.items():
            z.writestr(f"babel/locale-data/{name}.dat", _dat(d))
        z.writestr("babel-2.19.0.dist-info/METADATA", "Name: babel\nLicense: BSD-3-Clause\n\nbody")
    return whl


def mo_bytes(entries: dict[str, str]) -> bytes:
    """A gettext .mo file (the GNU format, little-endian) holding ``entries``."""
    keys = sorted(entries)
    ids = b"".join(k.encode() + b"\0" for k in keys)
    strs = b"".join(entries[k].encode() + b"\0" for k in keys)
    n = len(keys)
    start = 7 * 4 + 16 * n
    ko, vo, off = [], [], 0
    for k in keys:
        ko.append((len(k.encode()), start + off))
        off += len(k.encode()) + 1
    off = 0
    for k in keys:
        vo.append((len(entries[k].encode()), start + len(ids) + off))
        off += len(entries[k].encode()) + 1
    out = struct.pack("<7I", 0x950412DE, 0, n, 7 * 4, 7 * 4 + 8 * n, 0, 0)
    out += b"".join(struct.pack("<2I", *x) for x in ko) + b"".join(struct.pack("<2I", *x) for x in vo)
    return out + ids + strs


def pycountry_wheel(path) -> str:
    header = "Content-Type: text/plain; charset=UTF-8\n"
    whl = os.path.join(path, "pycountry-26.2.16-py3-none-any.whl")
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("pycountry/locales/de/LC_MESSAGES/iso3166-1.mo",
                   mo_bytes({"": header, "Germany": "Deutschland", "Austria": "Österreich", "Namibia": "Namibia",
                             "Federal Republic of Germany": "Bundesrepublik Deutschland"}))
        z.writestr("pycountry/locales/de/LC_MESSAGES/iso3166-3.mo",
                   mo_bytes({"": header, "Germany": "Deutschland", "Czechoslovakia": "Tschechoslowakei"}))
        z.writestr("pycountry/locales/sr@latin/LC_MESSAGES/iso4217.mo",
                   mo_bytes({"": header, "Euro": "Evro", "X": "Iks"}))
        z.writestr("pycountry/locales/en/LC_MESSAGES/iso639-3.mo", mo_bytes({"": header, "French": "French"}))
        z.writestr("pycountry-26.2.16.dist-info/METADATA", "Name: pycountry\nLicense: LGPL 2.1\n\nbody")
    return whl


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def b64(n: int) -> str:
    s = ""
    while True:
        s = _B64[n % 64] + s
        n //= 64
        if not n:
            return s


ENTRIES = [
    ("00-database-info", "00-database-info\nEnglish-French FreeDict Dictionary\n"),
    ("abyssinian", "Abyssinian /əbisiniən/ <n>\n1. abyssin, Abyssin\n2. Éthiopien ; [hist.] Abyssinien\n"),
    ("cat", "cat /kæt/ <n>\nchat <masc> [zool.]\n      \"the cat sleeps\"  - le chat dort\n   Synonyms: {puss}\n\n"),
    ("paris", "Paris /pæris/ <pn>\nParis\n"),
    ("ation", "-ation <suffix>\n-ation\n"),
    ("vacuum", "vacuum /ˈvækjʊəm/\nI.  <N> 1.  vide\nII.  <N Comp>vacuum cleaner /x/   aspirateur\n"),
    ("open", "open sth. /ˈəʊpən/\netw. öffnen, Öffnungs…\n"),
    ("define", "define\nune très longue définition de sept mots ou plus\n"),
]


def dictd_package(root, code="eng-fra", license_line="License: GPL-2+", entries=ENTRIES, aliases=("chat",)):
    """A fake unpacked dict-freedict-<code> package; ``aliases``: index lines that repeat the
    'cat' entry (dictd indexes one entry under several keys)."""
    dictd = os.path.join(root, "usr/share/dictd")
    doc = os.path.join(root, f"usr/share/doc/dict-freedict-{code}")
    os.makedirs(dictd)
    os.makedirs(doc)
    text, index, where = b"", [], {}
    for head, body in entries:
        data = body.encode()
        where[head] = (len(text), len(data))
        index.append(f"{head}\t{b64(len(text))}\t{b64(len(data))}")
        text += data
    for a in aliases:
        off, n = where["cat"]
        index.append(f"{a}\t{b64(off)}\t{b64(n)}")
    with open(os.path.join(dictd, f"freedict-{code}.index"), "w", encoding="utf-8") as f:
        f.write("\n".join(index) + "\n")
    with gzip.open(os.path.join(dictd, f"freedict-{code}.dict.dz"), "wb") as f:
        f.write(text)
    with open(os.path.join(doc, "copyright"), "w", encoding="utf-8") as f:
        f.write("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
                "Files: debian/*\nLicense: GPL-3+\n\n"
                f"Files: afr-deu/*\nLicense: GPL-2+\n\nFiles: {code}/*\nCopyright: someone\n{license_line}\n"
                " The text of the license.\n")
    return str(root)


# --------------------------------------------------------------------------- CLDR


def test_cldr_names_pair_english_with_each_locale_and_count_drops(tmp_path):
    rep = CleanReport()
    rows = list(names.cldr_pairs(babel_wheel(tmp_path), rep))
    fr = sorted((en, xx) for tag, en, xx in rows if tag == "fr")
    assert fr == sorted([("Germany", "Allemagne"), ("world", "Monde"), ("German", "allemand"),
                         ("French", "français"), ("London", "Londres"), ("Unknown Location", "lieu inconnu"),
                         ("January", "janvier"), ("February", "février"), ("Monday", "lundi"),
                         ("Sunday", "dimanche")])
    # a regional locale gives the names its own file holds; cities: English, else root's, else the zone's name
    assert [r for r in rows if r[0] != "fr"] == [("fr_CA", "Germany", "Allemagne (CA)"), ("uk", "Latin", "латиниця"),
                                                 ("uk", "Kyiv", "Київ")]
    assert rep.dropped == {"untranslated": 6,  # copies, case aside: France, latin, euro, New York, São Paulo, Kyiv
                           "no English": 2,  # ZZ, XXX
                           "duplicate": 2,  # stand-alone months equal to the format ones
                           "English locale": 1}
    assert rep.entries == rep.kept + sum(rep.dropped.values()) and rep.kept == len(rows)


def test_cldr_untranslated_and_empty_follow_the_catalog_rules():
    assert names.clean_name("Paris", "paris") == "untranslated"
    assert names.clean_name(" Germany ", "Allemagne\n") == ("Germany", "Allemagne")
    assert names.clean_name("Euro", "") == "empty"
    assert names.clean_name("M01", "janv.") == "too short"


def test_cldr_reader_refuses_unknown_classes_and_corrupt_files(tmp_path):
    evil = pickle.dumps({"x": os.system})  # a function: a pickle could call it
    with pytest.raises(InputError, match="evil.dat: not a readable babel locale file"):
        names.read_locale_data(evil, "evil.dat")
    with pytest.raises(InputError, match="bad.dat"):
        names.read_locale_data(b"\x80\x04garbage", "bad.dat")
    whl = tmp_path / "babel-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("babel/locale-data/fr.dat", _dat({}))
    with pytest.raises(InputError, match="no en.dat"):
        list(names.cldr_pairs(str(whl), CleanReport()))


# --------------------------------------------------------------------------- ISO code lists


def test_iso_codes_from_mo_catalogs_without_the_three_word_minimum(tmp_path):
    rep = CleanReport()
    rows = list(names.iso_pairs(pycountry_wheel(tmp_path), rep))
    assert rows == [("de", "Austria", "Österreich"), ("de", "Federal Republic of Germany", "Bundesrepublik Deutschland"),
                    ("de", "Germany", "Deutschland"), ("de", "Czechoslovakia", "Tschechoslowakei"),
                    ("sr@latin", "Euro", "Evro")]
    assert rep.dropped == {"header": 3, "untranslated": 1, "duplicate": 1, "too short": 1, "English locale": 2}
    assert rep.entries == rep.kept + sum(rep.dropped.values()) and rep.kept == len(rows)


# --------------------------------------------------------------------------- FreeDict


def test_dictd_reader_and_base64_numbers(tmp_path):
    assert [freedict.b64_number(b64(n)) for n in (0, 1, 63, 64, 4097, 10**7)] == [0, 1, 63, 64, 4097, 10**7]
    root = dictd_package(tmp_path / "pkg")
    got = list(freedict.read_dictd(str(tmp_path / "pkg/usr/share/dictd/freedict-eng-fra.index")))
    assert [h for h, _ in got] == [h for h, _ in ENTRIES]  # the alias of 'cat' points at the same entry: once
    assert got[3] == ("paris", "Paris /pæris/ <pn>\nParis\n")
    bad = tmp_path / "pkg/usr/share/dictd/freedict-eng-fra.index"
    bad.write_text("cat\tB\n")
    with pytest.raises(InputError, match=r"freedict-eng-fra.index:1: expected headword"):
        list(freedict.read_dictd(str(bad)))
    bad.write_text("cat\tB\tZZZZ\n")
    with pytest.raises(InputError, match=r":1: entry past the end"):
        list(freedict.read_dictd(str(bad)))
    assert root


def test_freedict_pairs_labels_senses_and_drops(tmp_path):
    root = dictd_package(tmp_path / "pkg")
    rep = CleanReport()
    rows = list(freedict.freedict_pairs(root, rep))
    assert rows == [("fra", "Abyssinian", "abyssin"), ("fra", "Abyssinian", "Abyssin"), ("fra", "Abyssinian", "Éthiopien"),
                    ("fra", "Abyssinian", "Abyssinien"), ("fra", "cat", "chat"), ("fra", "vacuum", "vide"),
                    ("fra", "open sth.", "etw. öffnen")]
    assert rep.dropped == {"untranslated": 1,  # Paris/Paris
                           "affix": 1,  # -ation
                           "not a translation": 2,  # the Polish-style compound line, "Öffnungs…"
                           "too long": 1}
    assert rep.entries == rep.kept + sum(rep.dropped.values())
    assert freedict.package_licenses(root) == ["eng-fra: GPL-2+"]


def test_wikdict_gloss_lines_are_skipped(tmp_path):
    entries = [("00-database-info", "00-database-info\nEnglish-Norwegian FreeDict+WikDict dictionary\n"),
               ("bruges", "Bruges //bɹuːʒ// <pn>\n1. Brugge, Bruges\ncity in Belgium\n2. Brygge\ntown in France\n"),
               ("sapphire", "sapphire <n>\nsafir 2.\ngem\n 3.\ncorundum\n"),
               ("cat", "cat <n>\nkatt\nanimal\n")]
    root = dictd_package(tmp_path / "pkg", "eng-nor", entries=entries, aliases=())
    rows = list(freedict.freedict_pairs(root, CleanReport()))
    assert rows == [("nor", "Bruges", "Brugge"), ("nor", "Bruges", "Brygge"), ("nor", "sapphire", "safir"),
                    ("nor", "cat", "katt")]
    assert freedict.tag_of("eng-rom") == "ro" and recipe.language_of(freedict.tag_of("eng-nor")) == "no"


@pytest.mark.parametrize("lic, ok", [
    ("GPL-2+", True), ("GPL-3+ and GFDL-1.2+", True), ("CC-BY-SA-3.0", True), ("CC-by-sa-3.0", True),
    ("CC-BY-3.0", True), ("public-domain", True), ("LGPL-2.1+", True), ("CC-BY-SA-3.0 or GPL-3+", True),
    ("CC-BY-NC-SA-3.0", False), ("CC-BY-ND-4.0", False), ("GPL-2+ and CC-BY-NC-4.0", False),
    ("CC-BY-NC-4.0 or GPL-2+", True), ("proprietary", False), ("", False),
])
def test_license_check(lic, ok):
    assert freedict.license_allows(lic) is ok


def test_a_dictionary_whose_license_is_not_free_gives_no_pairs(tmp_path):
    root = dictd_package(tmp_path / "pkg", license_line="License: CC-BY-NC-SA-3.0")
    rep = CleanReport()
    assert list(freedict.freedict_pairs(root, rep)) == []
    assert rep.kept == 0 and list(rep.dropped) == ["license not free: CC-BY-NC-SA-3.0"]
    assert rep.dropped["license not free: CC-BY-NC-SA-3.0"] == rep.entries == 12
    assert freedict.package_licenses(root) == ["eng-fra: CC-BY-NC-SA-3.0"]
    none = dictd_package(tmp_path / "none", code="eng-xyz", license_line="Comment: no license here")
    os.rename(os.path.join(none, "usr/share/dictd/freedict-eng-xyz.index"), os.path.join(none, "usr/share/dictd/x.index"))
    with pytest.raises(InputError, match="no usr/share/dictd/freedict-eng"):
        list(freedict.freedict_pairs(none, CleanReport()))


# --------------------------------------------------------------------------- the recipe


def test_sources_are_registered_with_units_and_their_own_code_hash(monkeypatch):
    for name in ("cldr-names", "iso-codes", "freedict"):
        assert name in recipe.SOURCES and recipe.SOURCES[name].license_note
    assert [u.packages for u in recipe.SOURCES["cldr-names"].units()] == [[recipe.CLDR_WHEEL]]
    assert [u.kind for u in recipe.SOURCES["iso-codes"].units()] == ["pip"]
    monkeypatch.setattr(recipe, "_apt_names", lambda prefix: ["dict-freedict-eng-deu", "dict-freedict-eng-fra"])
    assert [(u.name, u.packages, u.shared) for u in recipe.SOURCES["freedict"].units()] == [
        ("dict-freedict-eng-deu", ["dict-freedict-eng-deu"], 0), ("dict-freedict-eng-fra", ["dict-freedict-eng-fra"], 0)]
    versions = {s: recipe.code_version(s) for s in recipe.SOURCES}
    assert versions["cldr-names"] == versions["iso-codes"] != versions["freedict"]
    assert len(set(versions.values())) == len({tuple(v) for v in recipe._CODE.values()})
    # the sources there before keep their hash: names.py and freedict.py are not in their code
    assert all("names" not in m and "freedict" not in m for s, m in recipe._CODE.items()
               if s not in ("cldr-names", "iso-codes", "freedict"))


def test_build_the_three_sources_on_fixtures(monkeypatch, tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    files = {recipe.CLDR_WHEEL: babel_wheel(wheels), recipe.ISO_WHEEL: pycountry_wheel(wheels)}
    debs = {"dict-freedict-eng-fra": dictd_package(tmp_path / "fra"),
            "dict-freedict-eng-spa": dictd_package(tmp_path / "spa", code="eng-spa",
                                                   license_line="License: CC-BY-NC-4.0")}
    monkeypatch.setattr(recipe, "_apt_names", lambda prefix: sorted(debs))
    monkeypatch.setattr(recipe, "download", lambda kind, name, folder: files.get(name) or debs[name])
    monkeypatch.setattr(recipe, "unpack", lambda kind, path, folder: path)
    out = tmp_path / "out"
    res = recipe.build(str(out), sources=["cldr-names", "iso-codes", "freedict"], keys=None, progress=False)
    assert res["extract"] == {"done": 4, "skipped": 0, "failed": {}}
    m = res["manifest"]
    assert m["languages"]["fr"]["sources"] == {"cldr-names": 11, "freedict": 7}
    assert m["languages"]["de"]["sources"] == {"iso-codes": 4}
    assert m["languages"]["uk"]["pairs"] == 2 and m["languages"]["sr"]["pairs"] == 1
    assert "es" not in m["languages"]
    fd = m["sources"]["freedict"]
    assert fd["licenses"] == {"dict-freedict-eng-fra": ["eng-fra: GPL-2+"],
                              "dict-freedict-eng-spa": ["eng-spa: CC-BY-NC-4.0"]}
    assert fd["dropped"]["license not free: CC-BY-NC-4.0"] == 12
    assert m["sources"]["cldr-names"]["licenses"] == {recipe.CLDR_WHEEL: ["BSD-3-Clause"]}
    info = json.loads((out / "units/freedict/dict-freedict-eng-spa.json").read_text())
    assert info["status"] == "done" and info["rows"] == 0 and info["code"] == recipe.code_version("freedict")
    again = recipe.build(str(out), sources=["cldr-names", "iso-codes", "freedict"], keys=None, progress=False)
    assert again["extract"]["skipped"] == 4  # resumable: nothing redone
