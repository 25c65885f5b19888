"""Cleaning catalog entries: placeholders, accelerators, markup, plural and header entries, copies."""

from __future__ import annotations

import struct

import pytest

from bimine.data.catalog import (
    CleanReport,
    clean_pair,
    clean_text,
    pairs_from_mo,
    placeholders,
    strip_accelerators,
    strip_markup,
)


@pytest.mark.parametrize("s, want", [
    ("Delete %s files?", ["%s"]), ("Page %1$S of %2$S", ["%1$S", "%2$S"]), ("%(count)d items", ["%(count)d"]),
    ("Hello {name}, you have {0} messages", ["{name}", "{0}"]), ("Open $(FILE) now", ["$(FILE)"]),
    ("100 % sure", []), ("50%% done", []), ("%.2f MB", ["%.2f"]), ("Welcome to %PRODUCTNAME", ["%PRODUCTNAME"]),
])
def test_placeholders(s, want):
    assert placeholders(s) == want


def test_accelerators():
    assert strip_accelerators("~Save As...") == "Save As..."
    assert strip_accelerators("_File") == "File"
    assert strip_accelerators("&Open && Close") == "Open & Close"
    assert strip_accelerators("set file_name and dir_name") == "set file_name and dir_name"
    assert strip_accelerators("Search for st_yles") == "Search for styles"
    # real LibreOffice/GTK entries: the mnemonic may sit anywhere in a word
    assert strip_accelerators("Find Pre_vious") == "Find Previous"
    assert strip_accelerators("É_changer la page") == "Échanger la page"
    assert strip_accelerators("Rechercher le pré_cédent") == "Rechercher le précédent"
    assert strip_accelerators("Tom &amp; Jerry") == "Tom &amp; Jerry"  # an entity, not an accelerator


def test_markup():
    assert strip_markup("<b>Bold</b> and <a href='x'>link</a> &amp; more") == "Bold and link & more"


def test_clean_pair_keeps_and_drops_with_reasons():
    assert clean_pair("Delete %s files from the ~disk?", "Supprimer %s fichiers du ~disque ?") == (
        "Delete files from the disk?", "Supprimer fichiers du disque ?")
    assert clean_pair("Delete %s files from %s", "Supprimer les fichiers de %d") == "placeholders differ"
    assert clean_pair("Open the file now", "Open the file now") == "untranslated"
    assert clean_pair("Open", "Ouvrir") == "too short"
    assert clean_pair("Save the file", "") == "empty"
    assert clean_pair("<b>%s</b>", "<b>%s</b>") == "empty"


def _write_mo(path, entries: dict[str, str]) -> None:
    """A gettext .mo file (little-endian, no hash table), as msgfmt writes it."""
    keys = sorted(entries)
    ids = b"".join(k.encode() + b"\0" for k in keys)
    strs = b"".join(entries[k].encode() + b"\0" for k in keys)
    n = len(keys)
    start = 7 * 4 + 16 * n
    koffs, voffs, o = [], [], 0
    for k in keys:
        koffs.append((len(k.encode()), start + o))
        o += len(k.encode()) + 1
    o2 = 0
    for k in keys:
        voffs.append((len(entries[k].encode()), start + len(ids) + o2))
        o2 += len(entries[k].encode()) + 1
    header = struct.pack("<7I", 0x950412DE, 0, n, 28, 28 + 8 * n, 0, 0)
    table = b"".join(struct.pack("<2I", *x) for x in koffs + voffs)
    path.write_bytes(header + table + ids + strs)


def test_pairs_from_mo_counts_every_drop(tmp_path):
    mo = tmp_path / "fr.mo"
    _write_mo(mo, {
        "": "Content-Type: text/plain; charset=UTF-8\nPlural-Forms: nplurals=2; plural=(n > 1);\n",
        "Save the current document": "Enregistrer le document actuel",
        "menu\x04Open a _recent file": "Ouvrir un fichier _récent",
        "%d file was deleted\x00%d files were deleted": "%d fichier supprimé\x00%d fichiers supprimés",
        "Print the whole page": "Print the whole page",
        "Copy %s to %s": "Copier %s",
    })
    rep = CleanReport()
    pairs = list(pairs_from_mo(str(mo), rep))
    assert sorted(pairs) == [("Open a recent file", "Ouvrir un fichier récent"),
                             ("Save the current document", "Enregistrer le document actuel")]
    assert rep.kept == 2 and rep.dropped == {"header": 1, "plural": 2, "untranslated": 1, "placeholders differ": 1}
    assert rep.entries == rep.kept + sum(rep.dropped.values())


def test_unreadable_mo_is_a_clear_error(tmp_path):
    from bimine.errors import InputError

    bad = tmp_path / "bad.mo"
    bad.write_bytes(b"not a catalog")
    with pytest.raises(InputError, match="bad.mo: not a readable .mo catalog"):
        list(pairs_from_mo(str(bad)))


def test_clean_text_collapses_what_is_left():
    assert clean_text("_Delete %s  <i>now</i>:") == "Delete now"
    assert clean_text("Could not open the file $(ARG1).") == "Could not open the file."
    assert clean_text("Impossible d'ouvrir le fichier $(ARG1) !") == "Impossible d'ouvrir le fichier !"
