"""Pairs from translated help: LibreOffice (by paragraph id), GIMP and GNOME (by block structure)."""

from __future__ import annotations

import os
from collections import Counter

import pytest

from bimine.data.catalog import CleanReport
from bimine.data.helpdocs import (
    clean_prose_pair,
    gimp_help_pairs,
    gnome_user_docs_pairs,
    libreoffice_help_pairs,
)
from bimine.errors import InputError


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def balanced(rep: CleanReport) -> bool:
    return rep.entries == rep.kept + sum(rep.dropped.values())


# --- clean_prose_pair ------------------------------------------------------------------------------


@pytest.mark.parametrize("en, xx, want", [
    ("Enter $A$1 in the   cell\n now.", "Geben Sie $A$1 in die Zelle ein.",
     ("Enter $A$1 in the cell now.", "Geben Sie $A$1 in die Zelle ein.")),  # no placeholder stripping
    ("Set file_name to %s here.", "Setzen Sie file_name hier auf %s.",
     ("Set file_name to %s here.", "Setzen Sie file_name hier auf %s.")),
    ("Welcome to $[officename] help.", "Willkommen in der Hilfe von %PRODUCTNAME.",
     ("Welcome to LibreOffice help.", "Willkommen in der Hilfe von LibreOffice.")),
    ("Welcome to $[officeversion] help.", "Willkommen in der Hilfe.", "variable differs"),
    ("", "Etwas", "empty"),
    ("Some text here", "  ", "empty"),
    ("Insert the table now.", "insert the table  now.", "untranslated"),
    ("Tools - Options", "Extras - Optionen", "too short"),
    ("See [text/scalc/01/f.xhp#f not found].", "Siehe [text/scalc/01/f.xhp#f not found].", "broken embed"),
    ("Top layer using “Difference” mode.", "Top layer using „Difference“ mode.", "partly untranslated"),
    ("These options are described in Section 2, “Common Features”.",
     "These options are described in Abschnitt 2, „Gemeinsame Funktionen“.", "partly untranslated"),
    ("Collaboration in Calc and Writer", "Zusammenarbeit in Calc und Writer",  # names are kept: fine
     ("Collaboration in Calc and Writer", "Zusammenarbeit in Calc und Writer")),
    ("Drag to draw the callout.", "Um Text in die Legende einzugeben, klicken Sie doppelt auf die Linie. "
     "Der breite graue Rand signalisiert, dass Sie nun im Textbearbeitungsmodus sind.", "length ratio"),
    ("Week of year", "週", ("Week of year", "週")),  # short CJK: no ratio drop
])
def test_clean_prose_pair(en, xx, want):
    assert clean_prose_pair(en, xx) == want


# --- LibreOffice help ------------------------------------------------------------------------------

LO_HEAD = """<!DOCTYPE html>
<html lang="{lang}" dir="ltr">
<head>
<base href="../../../../">
<meta http-equiv="Content-Type" content="text/html; charset=utf-8">
<title>Page</title>
<script type="text/javascript" src="help.js" defer></script>
</head>
<body>
<header id="TopLeftHeader"><a class="logo" href="x.html"><p dir="auto">Help for LibreOffice 7.4</p></a></header>
<aside class="leftside"><input id="search-bar" type="search" class="search" placeholder="Search" dir="auto"></aside>
<div id="DisplayArea" itemprop="softwareHelp" itemscope="true">
<a name="bm_id1"></a><meta itemprop="keywords" content="lists">
"""
LO_FOOT = """</div>
<div id="SearchFrame"></div>
<footer><div id="DEBUG" class="debug"><p dir="auto">Title is: $[officename]</p>
<p id="bm_module" dir="auto"></p></div></footer>
</body>
</html>
"""

LO_EN = LO_HEAD.format(lang="en-US") + """
<h1 id="hd_id3147407" dir="auto"><a name="auto"></a>Creating Numbered Lists as You Type</h1>
<p id="par_id3155525" class="paragraph" dir="auto">LibreOffice numbers <span class="emph">your</span> paragraphs
   automatically &amp; quickly.</p>
<p id="par_id1" class="paragraph" dir="auto">Choose <span id="swlnsys_1" class="switchinline"><span hidden="true"
 id="MACtextshared_1" class="MAC"><span class="emph">LibreOffice - Preferences</span></span><span hidden="true"
 id="defaulttextshared_1"><span class="emph">Tools - Options</span></span></span> to open the dialog.</p>
<div class="embedded"><p id="par_id2" class="paragraph" dir="auto">This paragraph is embedded twice.</p></div>
<div class="embedded"><p id="par_id2" class="paragraph" dir="auto">This paragraph is embedded twice.</p></div>
<table><tr><td><p id="par_id3" class="tablecontentintable" dir="auto">Use Basic<br>for this task.</p></td></tr></table>
<p id="par_id4" class="code" dir="auto">Dim a As Integer</p>
<p id="par_id5" class="paragraph" dir="auto">Yes</p>
<p id="par_id6" class="paragraph" dir="auto">The text of the page <img src="x.png" alt="icon"> goes here.</p>
<div class="tip"><div class="notetext"><p dir="auto">A tip without an id is not paired.</p></div></div>
""" + LO_FOOT

LO_DE = LO_HEAD.format(lang="de") + """
<h1 id="hd_id3147407" dir="auto"><a name="auto"></a>Nummerierte Listen bei der Eingabe erzeugen</h1>
<p id="par_id3155525" class="paragraph" dir="auto">LibreOffice nummeriert <span class="emph">Ihre</span> Absätze
   automatisch &amp; schnell.</p>
<p id="par_id1" class="paragraph" dir="auto">Wählen Sie <span id="swlnsys_1" class="switchinline"><span hidden="true"
 id="MACtextshared_1" class="MAC"><span class="emph">LibreOffice - Einstellungen</span></span><span hidden="true"
 id="defaulttextshared_1"><span class="emph">Extras - Optionen</span></span></span>, um den Dialog zu öffnen.</p>
<div class="embedded"><p id="par_id2" class="paragraph" dir="auto">Dieser Absatz ist zweimal eingebettet.</p></div>
<div class="embedded"><p id="par_id2" class="paragraph" dir="auto">Dieser Absatz ist zweimal eingebettet.</p></div>
<table><tr><td><p id="par_id3" class="tablecontentintable" dir="auto">Verwenden Sie Basic<br>für diese Aufgabe.</p></td></tr></table>
<p id="par_id4" class="code" dir="auto">Dim a As Integer</p>
<p id="par_id5" class="paragraph" dir="auto">Ja</p>
<p id="par_id6" class="paragraph" dir="auto">The text of the page <img src="x.png" alt="Symbol"> goes here.</p>
<p id="par_id7" class="paragraph" dir="auto">Ein Absatz, den es im Englischen nicht gibt.</p>
<div class="tip"><div class="notetext"><p dir="auto">Ein Tipp ohne Kennung wird nicht gepaart.</p></div></div>
""" + LO_FOOT

# not well-formed XML (an HTML entity, an unquoted attribute): read with html.parser instead
LO_EN_2 = LO_HEAD.format(lang="en-US") + """
<p id="par_id10" class=paragraph dir="auto">Press&nbsp;Enter to confirm the entry.</p>
<div class="embedded"><p id="par_id3155525" class="paragraph" dir="auto">LibreOffice numbers <span class="emph">your</span>
   paragraphs automatically &amp; quickly.</p></div>
""" + LO_FOOT
LO_DE_2 = LO_HEAD.format(lang="de") + """
<p id="par_id10" class=paragraph dir="auto">Drücken Sie&nbsp;die Eingabetaste zum Bestätigen.</p>
<div class="embedded"><p id="par_id3155525" class="paragraph" dir="auto">LibreOffice nummeriert <span class="emph">Ihre</span>
   Absätze automatisch &amp; schnell.</p></div>
""" + LO_FOOT
LO_DE_ONLY = LO_HEAD.format(lang="de") + """
<h2 id="hd_id1" dir="auto">Eine Seite, die es nur auf Deutsch gibt</h2>
<p id="par_id1" class="paragraph" dir="auto">Sie hat keine englische Entsprechung.</p>
""" + LO_FOOT


@pytest.fixture
def lo(tmp_path):
    en, xx = str(tmp_path / "en"), str(tmp_path / "de")
    help_en = "usr/share/libreoffice/help/en-US/text/swriter/guide/"
    help_de = "usr/share/libreoffice/help/de/text/swriter/guide/"
    write(en, help_en + "auto_numbering.html", LO_EN)
    write(en, help_en + "entry.html", LO_EN_2)
    write(xx, help_de + "auto_numbering.html", LO_DE)
    write(xx, help_de + "entry.html", LO_DE_2)
    write(xx, help_de + "only_de.html", LO_DE_ONLY)
    write(xx, "usr/share/libreoffice/help/de/contents.js", "var x = 1;")
    os.makedirs(os.path.join(xx, "usr/share/libreoffice/help/media/navigation"))
    return en, xx


def test_libreoffice_help_pairs(lo):
    rep = CleanReport()
    got = list(libreoffice_help_pairs(*lo, rep))
    assert got == [
        ("de", "Creating Numbered Lists as You Type", "Nummerierte Listen bei der Eingabe erzeugen"),
        ("de", "LibreOffice numbers your paragraphs automatically & quickly.",
         "LibreOffice nummeriert Ihre Absätze automatisch & schnell."),
        ("de", "Choose Tools - Options to open the dialog.", "Wählen Sie Extras - Optionen, um den Dialog zu öffnen."),
        ("de", "Use Basic for this task.", "Verwenden Sie Basic für diese Aufgabe."),
        ("de", "Press Enter to confirm the entry.", "Drücken Sie die Eingabetaste zum Bestätigen."),
    ]
    assert rep.entries == 14 and rep.kept == 5 and balanced(rep)
    assert rep.dropped == Counter({"repeated id": 2, "no English counterpart": 3, "code": 1, "too short": 1,
                                   "untranslated": 1, "duplicate": 1})  # the paragraph embedded in entry.html


def test_libreoffice_help_needs_english(lo, tmp_path):
    with pytest.raises(InputError, match="en-US"):
        list(libreoffice_help_pairs(str(tmp_path / "nothing"), lo[1], CleanReport()))
    with pytest.raises(InputError, match="libreoffice-help"):
        list(libreoffice_help_pairs(lo[0], str(tmp_path / "nothing"), CleanReport()))


# --- GIMP help -------------------------------------------------------------------------------------

GIMP_PAGE = """<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">
<html xmlns="http://www.w3.org/1999/xhtml">
  <head><title>{title}</title><link rel="home" href="index.html" title="GIMP" /></head>
  <body>
    <div class="navheader"><table><tr><th colspan="3">{title}</th></tr></table><hr /></div>
    <div class="sect2">
      <div class="titlepage"><div><div><h3 class="title"><a id="gimp-filter-oilify"></a>{title}</h3></div></div></div>
      <div class="toc"><dl><dt><a href="x.html">{title}</a></dt></dl></div>
      {body}
    </div>
    <div class="navfooter"><a href="https://gitlab.gnome.org/GNOME/gimp/issues" class="reportbug">Report a bug</a></div>
  </body>
</html>
"""
GIMP_EN = GIMP_PAGE.format(title="11.6. Oilify filter explained", body="""
      <div class="figure"><p class="title"><strong>Figure 17.207. Example of the <span class="quote">“<span
        class="quote">Oilify</span>”</span> filter</strong></p>
        <div class="mediaobject"><img src="images/a.jpg" alt="Example" /></div></div>
      <p>
      This filter makes the image look like an oil painting. The
      <span class="guilabel">Mask size</span> controls the outcome.
    </p>
      <div class="tip"><table border="0" summary="Tip"><tr><td><img alt="[Tip]" src="images/tip.png" /></td>
        <th align="left">Tip</th></tr><tr><td><p>The GIMPressionist filter can produce similar effects.</p></td></tr>
      </table></div>
      <pre class="programlisting">(define (script-fu-oilify image) (gimp-image-undo image))</pre>
      <p>You can find it in the <span class="guimenu">Filters</span> → <span class="guisubmenu">Artistic</span> menu.</p>
      <p>Top layer at 100% opacity using “Difference” mode.</p>
""")
GIMP_DE = GIMP_PAGE.format(title="11.6. Ölgemälde-Filter erklärt", body="""
      <div class="figure"><p class="title"><strong>Abbildung 17.207. Anwendungsbeispiel für den Filter <span
        class="quote">„<span class="quote">Ölgemälde</span>“</span></strong></p>
        <div class="mediaobject"><img src="images/a.jpg" alt="Beispiel" /></div></div>
      <p>Dieser Filter lässt das Bild wie ein Ölgemälde aussehen. Die <span class="guilabel">Maskengröße</span>
      steuert das Ergebnis.</p>
      <div class="tip"><table border="0" summary="Tip"><tr><td><img alt="[Tipp]" src="images/tip.png" /></td>
        <th align="left">Tipp</th></tr><tr><td><p>The GIMPressionist filter can produce similar effects.</p></td></tr>
      </table></div>
      <pre class="programlisting">(define (script-fu-oilify image) (gimp-image-undo image))</pre>
      <p>Sie finden ihn im Menü <span class="guimenu">Filter</span> → <span class="guisubmenu">Künstlerisch</span>.</p>
      <p>Top layer at 100% opacity using „Difference“ mode.</p>
""")
GIMP_EN_2 = GIMP_PAGE.format(title="3. Layers", body="<p>A layer is like a sheet of glass.</p>")
GIMP_DE_2 = GIMP_PAGE.format(title="3. Ebenen", body="<p>Eine Ebene ist wie eine Glasscheibe.</p><p>Mehr dazu.</p>")
GIMP_DE_ONLY = GIMP_PAGE.format(title="Nur auf Deutsch", body="<p>Diese Seite gibt es nur auf Deutsch.</p>")


@pytest.fixture
def gimp(tmp_path):
    en, xx = str(tmp_path / "en"), str(tmp_path / "de")
    write(en, "usr/share/gimp/2.0/help/en/gimp-filter-oilify.html", GIMP_EN)
    write(en, "usr/share/gimp/2.0/help/en/gimp-layers.html", GIMP_EN_2)
    write(xx, "usr/share/gimp/2.0/help/de/gimp-filter-oilify.html", GIMP_DE)
    write(xx, "usr/share/gimp/2.0/help/de/gimp-layers.html", GIMP_DE_2)
    write(xx, "usr/share/gimp/2.0/help/de/nur-de.html", GIMP_DE_ONLY)
    write(xx, "usr/share/gimp/2.0/help/de/images/tip.png", "")
    return en, xx


def test_gimp_help_pairs(gimp):
    rep = CleanReport()
    got = list(gimp_help_pairs(*gimp, rep))
    assert got == [
        ("de", "Oilify filter explained", "Ölgemälde-Filter erklärt"),  # DocBook's section number stripped
        ("de", "Example of the “Oilify” filter", "Anwendungsbeispiel für den Filter „Ölgemälde“"),  # and label
        ("de", "This filter makes the image look like an oil painting. The Mask size controls the outcome.",
         "Dieser Filter lässt das Bild wie ein Ölgemälde aussehen. Die Maskengröße steuert das Ergebnis."),
        ("de", "You can find it in the Filters → Artistic menu.", "Sie finden ihn im Menü Filter → Künstlerisch."),
    ]
    # units of the oilify page: title, caption, p, "Tip", tip p, pre, p, p; 3 of the layers page
    # (structure differs), 2 of the German-only page (title and p)
    assert rep.entries == 8 + 3 + 2 and rep.kept == 4 and balanced(rep)
    assert rep.dropped == Counter({"too short": 1, "untranslated": 1, "code": 1, "partly untranslated": 1,
                                   "structure differs": 3, "no English counterpart": 2})


def test_gimp_help_not_xml(gimp):
    # a page that is not XHTML (HTML entities, no closing </p>) is still read
    en, xx = gimp
    write(en, "usr/share/gimp/2.0/help/en/plain.html",
          "<html><body><h1>A plain page title</h1><p>One&nbsp;paragraph of plain text.<p>Another one here.</body></html>")
    write(xx, "usr/share/gimp/2.0/help/de/plain.html",
          "<html><body><h1>Ein schlichter Seitentitel</h1><p>Ein&nbsp;Absatz schlichten Texts.<p>Noch einer.</body></html>")
    got = list(gimp_help_pairs(en, xx, CleanReport()))
    assert got[-3:] == [("de", "A plain page title", "Ein schlichter Seitentitel"),
                   ("de", "One paragraph of plain text.", "Ein Absatz schlichten Texts."),
                   ("de", "Another one here.", "Noch einer.")]


# --- GNOME user docs (Mallard) ---------------------------------------------------------------------

MAL_EN = """<page xmlns="http://projectmallard.org/1.0/" xmlns:its="http://www.w3.org/2005/11/its"
      type="topic" style="task" id="mouse-doubleclick">
  <info>
    <link type="guide" xref="mouse"/>
    <revision pkgversion="3.8" date="2013-03-13" status="candidate"/>
    <credit type="author"><name>Phil Bull</name><email>philbull@gmail.com</email></credit>
    <include href="legal.xml" xmlns="http://www.w3.org/2001/XInclude"/>
    <desc>Control how quickly you need to press the mouse button a second time.</desc>
  </info>
  <title>Adjust the double-click speed</title>
  <comment><cite date="2018-07-29">shaunm</cite><p>Say more about how to start Orca here.</p></comment>
  <p>Double-clicking only happens when you press the mouse button twice
  quickly enough.</p>
  <steps>
    <item><p>Open the <gui xref="shell-introduction#activities">Activities</gui> overview and press
      <keyseq><key>Ctrl</key><key>Alt</key><key>Tab</key></keyseq> now.</p></item>
    <item><p>Choose <guiseq><gui>Settings</gui><gui>Mouse</gui></guiseq> from the menu.</p></item>
  </steps>
  <code>gsettings set org.gnome.desktop.peripherals.mouse double-click 400</code>
  <p>See <link xref="mouse"/> for other mouse settings.</p>
  <p>This paragraph is not translated yet.</p>
</page>
"""
MAL_DE = """<?xml version="1.0" encoding="utf-8"?>
<page xmlns="http://projectmallard.org/1.0/" xmlns:its="http://www.w3.org/2005/11/its"
      type="topic" style="task" id="mouse-doubleclick" xml:lang="de">
  <info>
    <link type="guide" xref="mouse"/>
    <revision pkgversion="3.8" date="2013-03-13" status="candidate"/>
    <credit type="author"><name>Phil Bull</name><email>philbull@gmail.com</email></credit>
    <include xmlns="http://www.w3.org/2001/XInclude" href="legal.xml"/>
    <desc>Legen Sie fest, wie schnell Sie ein zweites Mal die Maustaste drücken müssen.</desc>
    <mal:credit xmlns:mal="http://projectmallard.org/1.0/" type="translator copyright">
      <mal:name>Mario Blättermann</mal:name><mal:years>2011.</mal:years></mal:credit>
  </info>
  <title>Anpassen der Doppelklickgeschwindigkeit</title>
  <p>Ein Doppelklick passiert nur, wenn Sie die Maustaste schnell genug zweimal klicken.</p>
  <steps>
    <item><p>Öffnen Sie die <gui xref="shell-introduction#activities">Aktivitäten</gui>-Übersicht und drücken
      Sie <keyseq><key>Strg</key><key>Alt</key><key>Tab</key></keyseq>.</p></item>
    <item><p>Wählen Sie <guiseq><gui>Einstellungen</gui><gui>Maus</gui></guiseq> im Menü.</p></item>
  </steps>
  <code>gsettings set org.gnome.desktop.peripherals.mouse double-click 400</code>
  <p>Siehe <link xref="mouse"/> für weitere Einstellungen der Maus.</p>
  <p>This paragraph is not translated yet.</p>
</page>
"""
MAL_MOUSE_EN = """<page xmlns="http://projectmallard.org/1.0/" type="guide" id="mouse">
  <info><title type="link">Mouse and touchpad settings</title></info>
  <title>Mouse</title>
</page>
"""
MAL_MOUSE_DE = """<page xmlns="http://projectmallard.org/1.0/" type="guide" id="mouse">
  <info><title type="link">Einstellungen von Maus und Tastfeld</title></info>
  <title>Maus</title>
</page>
"""
MAL_SR_EN = """<page xmlns="http://projectmallard.org/1.0/" id="net"><title>Networking and the web</title>
  <p>Connect to wireless networks in your area.</p></page>"""
MAL_SR = """<page xmlns="http://projectmallard.org/1.0/" id="net"><title>Umrežavanje i veb</title>
  <p>Povežite se na bežične mreže.</p><p>Višak.</p></page>"""


@pytest.fixture
def gnome(tmp_path):
    root = str(tmp_path / "gnome-user-docs")
    h = "usr/share/help/"
    write(root, h + "C/gnome-help/mouse-doubleclick.page", MAL_EN)
    write(root, h + "C/gnome-help/mouse.page", MAL_MOUSE_EN)
    write(root, h + "C/gnome-help/net.page", MAL_SR_EN)
    write(root, h + "C/gnome-help/legal.xml", "<legal/>")
    write(root, h + "de/gnome-help/mouse-doubleclick.page", MAL_DE)
    write(root, h + "de/gnome-help/mouse.page", MAL_MOUSE_DE)
    write(root, h + "de/gnome-help/broken.page", "<page><p>Nicht wohlgeformt</page>")
    write(root, h + "de/gnome-help/figures/mouse.svg", "<svg/>")
    write(root, h + "sr@latin/gnome-help/net.page", MAL_SR)
    return root


def test_gnome_user_docs_pairs(gnome):
    rep = CleanReport()
    got = list(gnome_user_docs_pairs(gnome, rep))
    assert got == [
        ("de", "Control how quickly you need to press the mouse button a second time.",
         "Legen Sie fest, wie schnell Sie ein zweites Mal die Maustaste drücken müssen."),
        ("de", "Adjust the double-click speed", "Anpassen der Doppelklickgeschwindigkeit"),
        ("de", "Double-clicking only happens when you press the mouse button twice quickly enough.",
         "Ein Doppelklick passiert nur, wenn Sie die Maustaste schnell genug zweimal klicken."),
        ("de", "Open the Activities overview and press Ctrl+Alt+Tab now.",
         "Öffnen Sie die Aktivitäten-Übersicht und drücken Sie Strg+Alt+Tab."),
        ("de", "Choose Settings ▸ Mouse from the menu.", "Wählen Sie Einstellungen ▸ Maus im Menü."),
        ("de", "See Mouse and touchpad settings for other mouse settings.",  # an empty link takes its target's title
         "Siehe Einstellungen von Maus und Tastfeld für weitere Einstellungen der Maus."),
        ("de", "Mouse and touchpad settings", "Einstellungen von Maus und Tastfeld"),
    ]
    # de: broken.page (1, whole page); mouse-doubleclick: desc, title, p, 2 items, code, 2 p;
    # mouse: link title, title; sr@latin: 3 units, structure differs
    assert rep.entries == 1 + 8 + 2 + 3 and rep.kept == 7 and balanced(rep)
    assert rep.dropped == Counter({"bad page": 1, "code": 1, "untranslated": 1, "too short": 1,
                                   "structure differs": 3})


def test_gnome_user_docs_lang_tags(gnome):
    h = os.path.join(gnome, "usr/share/help/")
    write(h, "sr@latin/gnome-help/net.page", MAL_SR.replace("<p>Višak.</p>", ""))
    got = [p for p in gnome_user_docs_pairs(gnome, CleanReport()) if p[0] != "de"]
    assert got == [("sr@latin", "Networking and the web", "Umrežavanje i veb"),
                   ("sr@latin", "Connect to wireless networks in your area.", "Povežite se na bežične mreže.")]


def test_gnome_user_docs_needs_c(tmp_path):
    with pytest.raises(InputError, match="gnome-user-docs"):
        list(gnome_user_docs_pairs(str(tmp_path), CleanReport()))


def test_libreoffice_help_symlinked_language(lo, tmp_path):
    # libreoffice-help-sk ships only help/sk -> cs: Czech pages, not Slovak ones
    sk = str(tmp_path / "sk")
    os.makedirs(os.path.join(sk, "usr/share/libreoffice/help"))
    os.symlink(os.path.join(lo[1], "usr/share/libreoffice/help/de"), os.path.join(sk, "usr/share/libreoffice/help/sk"))
    assert os.path.isdir(os.path.join(sk, "usr/share/libreoffice/help/sk/text"))
    rep = CleanReport()
    assert list(libreoffice_help_pairs(lo[0], sk, rep)) == [] and rep.entries == 0
