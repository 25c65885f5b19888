"""Mozilla language packs: English from fake omni.ja jars joined with a fake langpack .xpi."""

from __future__ import annotations

import json
import zipfile
from collections import Counter

import pytest

from bimine.data.catalog import CleanReport
from bimine.data.mozilla import _relative, english_strings, langpack_pairs, parse_dtd, parse_properties
from bimine.errors import InputError

EN_FTL = """\
# a comment
-brand-short-name = Firefox
hello = Hello, how are you today?
greet = Welcome back, { $user }, good to see you.
files =
    { $count ->
        [one] You have one file open.
       *[other] You have { $count } files open.
    }
save-button =
    .label = Save the current page
    .accesskey = S
brand-msg = { -brand-short-name } is updating itself now.
gender-msg = { -brand-short-name } is ready to go.
case-msg = Thanks for using { -brand-short-name } every day.
mismatch = Delete { $name } from the list now?
ref-msg = { hello } Nice to meet you.
link = Read the <a data-l10n-name="terms">terms of use</a> before going on.
width =
    .style = width: 30em
ok = OK
no-results = No results in Settings for “<span data-l10n-name="query"></span>”.
"""
DE_FTL = """\
-brand-short-name =
    { $case ->
        [gen] Firefoxes
       *[nom] Firefox
    }
    .gender = masculine
hello = Hallo, wie geht es dir heute?
greet = Willkommen zurück, { $user }, schön dich zu sehen.
files =
    { $count ->
        [one] Sie haben eine Datei geöffnet.
       *[other] Sie haben { $count } Dateien geöffnet.
    }
save-button =
    .label = Die aktuelle Seite speichern
    .accesskey = p
brand-msg = { -brand-short-name } aktualisiert sich gerade.
gender-msg =
    { -brand-short-name.gender ->
        [masculine] Der { -brand-short-name } ist bereit.
       *[other] Das { -brand-short-name } ist bereit.
    }
case-msg = Danke für die Nutzung des { -brand-short-name(case: "gen") } jeden Tag.
mismatch = Eintrag jetzt aus der Liste löschen?
ref-msg = { hello } Schön, Sie kennenzulernen.
link = Lesen Sie die <a data-l10n-name="terms">Nutzungsbedingungen</a>, bevor Sie fortfahren.
width =
    .style = width: 35em
ok = OK
no-results = Keine Ergebnisse in den Einstellungen für „<span data-l10n-name="query"></span>“.
extra = Diesen Schlüssel gibt es im Englischen nicht.
broken = { oops
"""
EN_DUP_FTL = "hello-again = Hello, how are you today?\n"
DE_DUP_FTL = "hello-again = Hallo, wie geht es dir heute?\n"
EN_PROPS = """\
# a comment = not an entry
! another comment
long.message = This is a long message \\
    that goes on here.
escape = Caf\\u00e9 opens every single day.
plural.files = #1 file selected;#1 files selected
moved = Moved folder #1 into folder #2
open.accesskey = O
home.url = https://www.mozilla.org/
pkcs = Unknown PKCS #11 error occurred.
brand = %brand% cannot decrypt this message.
timer = Timer “%S” already exists here.
"""
DE_PROPS = """\
long.message = Dies ist eine lange Nachricht, \\
    die hier weitergeht.
escape = Das Caf\\u00e9 hat jeden Tag ge\\u00f6ffnet.
plural.files = #1 Datei ausgewählt;#1 Dateien ausgewählt
moved = Ordner #1 in Ordner #2 verschoben
open.accesskey = f
home.url = https://www.mozilla.org/de/
pkcs = Unbekannter PKCS#11-Fehler ist aufgetreten.
brand = %brand% kann diese Nachricht nicht entschlüsseln.
timer = Timer „%S“ ist bereits vorhanden.
"""
EN_DTD = """\
<!-- <!ENTITY commented.out "Not an entry at all"> -->
<!ENTITY restart.label "Restart &brandShortName; to apply the changes">
<!ENTITY single.label 'Close all the other windows first'>
<!ENTITY unknown.label "Send this to &someone; right away">
<!ENTITY quote.label "Use the &quot;Open&quot; button to start">
"""
DE_DTD = """\
<!ENTITY restart.label "&brandShortName; neu starten, um die Änderungen anzuwenden">
<!ENTITY single.label 'Zuerst alle anderen Fenster schließen'>
<!ENTITY unknown.label "Das sofort an &someone; senden">
<!ENTITY quote.label "Benutzen Sie die Schaltfläche &quot;Öffnen&quot; zum Start">
"""
EN_BROWSER_FTL = "tab-close = Close this tab and all the others\n"
DE_BROWSER_FTL = "tab-close = Diesen und alle anderen Tabs schließen\n"


def _zip(path, files: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)


@pytest.fixture
def app(tmp_path):
    lib = tmp_path / "app" / "usr" / "lib" / "firefox-esr"
    _zip(lib / "omni.ja", {
        "chrome/chrome.manifest": "locale global en-US en-US/locale/en-US/global/\n",
        "localization/en-US/toolkit/test.ftl": EN_FTL,
        "localization/en-US/toolkit/dup.ftl": EN_DUP_FTL,
        "chrome/en-US/locale/en-US/global/test.properties": EN_PROPS,
        "chrome/en-US/locale/en-US/global/test.dtd": EN_DTD,
        "res/locale/dom/dom.properties": "ignored = This file is outside the locale roots\n",
    })
    _zip(lib / "browser" / "omni.ja", {
        "localization/en-US/browser/tabs.ftl": EN_BROWSER_FTL,
        "chrome/en-US/locale/branding/brand.dtd": '<!ENTITY brandShortName "Firefox">\n',
    })
    return str(tmp_path / "app")


@pytest.fixture
def l10n(tmp_path):
    ext = tmp_path / "l10n" / "usr" / "lib" / "firefox-esr" / "browser" / "extensions"
    _zip(ext / "langpack-de@firefox-esr.mozilla.org.xpi", {
        "manifest.json": json.dumps({"langpack_id": "de", "languages": {"de": {}}}),
        "localization/de/toolkit/test.ftl": DE_FTL,
        "localization/de/toolkit/dup.ftl": DE_DUP_FTL,
        "chrome/de/locale/de/global/test.properties": DE_PROPS,
        "chrome/de/locale/de/global/test.dtd": DE_DTD,
        "browser/localization/de/browser/tabs.ftl": DE_BROWSER_FTL,
        "browser/chrome/de/locale/branding/brand.dtd": '<!ENTITY brandShortName "Feuerfuchs">\n',
    })
    return str(tmp_path / "l10n")


def test_relative_paths():
    assert _relative("localization/en-US/toolkit/a/b.ftl", "en-US") == "localization/toolkit/a/b.ftl"
    assert _relative("browser/localization/pt-BR/browser/c.ftl", "pt-BR") == "localization/browser/c.ftl"
    assert _relative("chrome/en-US/locale/en-US/global/d.properties", "en-US") == "chrome/global/d.properties"
    assert _relative("chrome/de/locale/de/global/d.properties", "de") == "chrome/global/d.properties"
    assert _relative("browser/chrome/de/locale/browser/e.properties", "de") == "chrome/browser/e.properties"
    assert _relative("chrome/en-US/locale/branding/brand.dtd", "en-US") == "chrome/branding/brand.dtd"
    assert _relative("res/locale/dom/dom.properties", "en-US") is None
    assert _relative("localization/de/coverage.json", "de") is None


def test_parse_properties():
    text = "# c = d\n! e\n  a.b = x \\\n   y\\\\\nc:z\nd\\=k = \\u00e9\\n\\t\\q\nempty =\nlast = end \\\n"
    assert parse_properties(text) == {"a.b": "x y\\", "c": "z", "d=k": "é\n\tq", "empty": "", "last": "end "}


def test_parse_dtd():
    assert parse_dtd(EN_DTD) == {
        "restart.label": "Restart &brandShortName; to apply the changes",
        "single.label": "Close all the other windows first",
        "unknown.label": "Send this to &someone; right away",
        "quote.label": "Use the &quot;Open&quot; button to start",
    }


def test_english_strings(app):
    en = english_strings(app)
    assert en["localization/toolkit/test.ftl", "hello"] == "Hello, how are you today?"
    assert en["localization/toolkit/test.ftl", "greet"] == "Welcome back, { $user }, good to see you."
    assert en["localization/toolkit/test.ftl", "brand-msg"] == "Firefox is updating itself now."
    assert en["localization/toolkit/test.ftl", "ref-msg"] == "Hello, how are you today? Nice to meet you."
    assert en["localization/toolkit/test.ftl", "save-button.label"] == "Save the current page"
    assert en["localization/toolkit/test.ftl", "files"] == "\x00plural/select"
    assert en["localization/toolkit/test.ftl", "save-button.accesskey"] == "\x00not text"
    assert en["localization/toolkit/test.ftl", "width.style"] == "\x00not text"
    assert en["chrome/global/test.properties", "long.message"] == "This is a long message that goes on here."
    assert en["chrome/global/test.properties", "escape"] == "Café opens every single day."
    assert en["chrome/global/test.properties", "plural.files"] == "\x00plural/select"
    assert en["chrome/global/test.properties", "moved"] == "Moved folder { $hash1 } into folder { $hash2 }"
    assert en["chrome/global/test.properties", "home.url"] == "\x00not text"
    assert en["chrome/global/test.dtd", "restart.label"] == "Restart Firefox to apply the changes"  # from browser/omni.ja
    assert en["chrome/global/test.dtd", "unknown.label"] == "Send this to { $someone } right away"
    assert en["localization/browser/tabs.ftl", "tab-close"] == "Close this tab and all the others"
    assert not any(k[0].startswith("res/") for k in en)
    assert len(en) == 31


def test_langpack_pairs(app, l10n):
    report = CleanReport()
    pairs = list(langpack_pairs(english_strings(app), l10n, report))
    assert sorted(pairs) == sorted([
        ("de", "Hello, how are you today?", "Hallo, wie geht es dir heute?"),
        ("de", "Welcome back, good to see you.", "Willkommen zurück, schön dich zu sehen."),
        ("de", "Save the current page", "Die aktuelle Seite speichern"),
        ("de", "Firefox is updating itself now.", "Firefox aktualisiert sich gerade."),
        ("de", "Firefox is ready to go.", "Der Firefox ist bereit."),  # select on the term's gender
        ("de", "Thanks for using Firefox every day.", "Danke für die Nutzung des Firefoxes jeden Tag."),
        ("de", "Hello, how are you today? Nice to meet you.", "Hallo, wie geht es dir heute? Schön, Sie kennenzulernen."),
        ("de", "Read the terms of use before going on.", "Lesen Sie die Nutzungsbedingungen, bevor Sie fortfahren."),
        ("de", "This is a long message that goes on here.", "Dies ist eine lange Nachricht, die hier weitergeht."),
        ("de", "Café opens every single day.", "Das Café hat jeden Tag geöffnet."),
        ("de", "Moved folder into folder", "Ordner in Ordner verschoben"),
        ("de", "Unknown PKCS #11 error occurred.", "Unbekannter PKCS#11-Fehler ist aufgetreten."),
        ("de", "cannot decrypt this message.", "kann diese Nachricht nicht entschlüsseln."),
        ("de", "Restart Firefox to apply the changes", "Feuerfuchs neu starten, um die Änderungen anzuwenden"),
        ("de", "Close all the other windows first", "Zuerst alle anderen Fenster schließen"),
        ("de", "Send this to right away", "Das sofort an senden"),
        ("de", 'Use the "Open" button to start', 'Benutzen Sie die Schaltfläche "Öffnen" zum Start'),
        ("de", "Close this tab and all the others", "Diesen und alle anderen Tabs schließen"),
        ("de", "Timer already exists here.", "Timer ist bereits vorhanden."),  # no empty “ ” left
        ("de", "No results in Settings for.", "Keine Ergebnisse in den Einstellungen für."),
    ])
    assert report.entries == 33 and report.kept == 20
    assert report.dropped == Counter({
        "plural/select": 2,  # Fluent { $count -> … }, .properties "a;b"
        "not text": 4,  # .accesskey and .style attributes, open.accesskey, a URL
        "no English counterpart": 1,  # "extra"
        "placeholders differ": 1,  # "mismatch" lost its { $name }
        "term": 1,  # -brand-short-name
        "untranslated": 1,  # "OK"
        "too short": 1,  # brandShortName: "Feuerfuchs"
        "duplicate": 1,  # hello-again in dup.ftl
        "parse error": 1,  # "broken = { oops"
    })


def test_no_langpack_yields_nothing(tmp_path, app):
    (tmp_path / "meta" / "usr" / "share" / "doc").mkdir(parents=True)
    report = CleanReport()
    assert list(langpack_pairs(english_strings(app), str(tmp_path / "meta"), report)) == []
    assert report == CleanReport()


def test_no_omni_ja(tmp_path):
    with pytest.raises(InputError, match="no omni.ja"):
        english_strings(str(tmp_path))


def test_locale_from_file_name(tmp_path, app):
    ext = tmp_path / "pt" / "extensions"
    _zip(ext / "langpack-pt-BR@firefox-esr.mozilla.org.xpi", {
        "localization/pt-BR/toolkit/test.ftl": "hello = Olá, como você está hoje?\n",
    })
    report = CleanReport()
    got = list(langpack_pairs(english_strings(app), str(tmp_path / "pt"), report))
    assert got == [("pt-BR", "Hello, how are you today?", "Olá, como você está hoje?")]
    assert (report.entries, report.kept) == (1, 1)
