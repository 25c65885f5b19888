"""English–X paragraph pairs from translated documentation shipped in Debian packages.

Three sources, each unpacked with ``dpkg-deb -x`` into a directory (the ``*_root`` arguments):

* LibreOffice help (``libreoffice-help-en-us`` and ``libreoffice-help-<x>``): HTML pages under
  ``usr/share/libreoffice/help/<lang>/text/``; a paragraph or heading of a translated page is paired
  with the one of the same-path en-US page that carries the same ``par_id…``/``hd_id…`` id.
* GIMP help (``gimp-help-en`` and ``gimp-help-<x>``): DocBook HTML under
  ``usr/share/gimp/2.0/help/<lang>/``; the text blocks of two same-path pages are paired one to one
  when the pages have the same block structure.
* ``gnome-user-docs``: Mallard pages under ``usr/share/help/<lang>/<doc>/`` (English in ``C``),
  translated by itstool; paired like GIMP's pages.

Each yields ``(lang_tag, english, translation)``, the tag spelt as the package's directory name
(``de``, ``pt_BR``, ``sr@latin``, ``zh-CN``). Every translated text unit seen counts in
``report.entries``: it is either kept (``report.kept``) or dropped under one reason
(``report.dropped``), so ``entries == kept + sum(dropped.values())``. Reasons: ``"no English
counterpart"`` (no same-path English page, or no same-id English paragraph), ``"repeated id"``
(an id found twice in the English or the translated page), ``"structure differs"`` (every unit of
a page whose block structure differs from the English page's), ``"bad page"`` (a Mallard page that
is not well-formed XML), ``"code"`` (program code, not prose), those of :func:`clean_prose_pair`,
and ``"duplicate"`` (a pair already yielded for the language: embedded paragraphs, shared notes).

Texts come out on one line: markup removed, entities decoded, whitespace collapsed. Program
listings, navigation, tables of contents and index pages are left out.
"""

from __future__ import annotations

import functools
import os
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterator
from html.parser import HTMLParser

from bimine.data.catalog import CleanReport
from bimine.errors import InputError

__all__ = ["CleanReport", "clean_prose_pair", "gimp_help_pairs", "gnome_user_docs_pairs",
           "libreoffice_help_pairs"]

_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"[^\W\d_]{2,}")  # as catalog.clean_pair counts words
# LibreOffice help variables that the HTML build normally resolves; replaced if one slips through
_LO_VARS = {"$[officename]": "LibreOffice", "%PRODUCTNAME": "LibreOffice"}
_LO_VAR = re.compile(r"\$\[\w+\]|%PRODUCT[A-Z]+")  # any left after the replacements above
_BROKEN_EMBED = re.compile(r"\[text/\S+ not found\]")  # LibreOffice's build could not resolve an <embed>
_LO_ID = re.compile(r"(?:par|hd)_id\w*$")

_VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
_HTML_BLOCKS = frozenset(
    "html body div p h1 h2 h3 h4 h5 h6 ul ol li dl dt dd table thead tbody tfoot tr td th caption "
    "blockquote pre hr section article header footer nav aside figure figcaption address center "
    "colgroup col fieldset legend main form".split())
_HTML_SKIP = frozenset("head script style noscript img template object iframe button input select".split())
_HTML_CODE = frozenset("pre code tt kbd samp".split())
_MAL_BLOCKS = frozenset(
    "page section info title subtitle desc p screen note steps list item terms tree table thead tbody "
    "tfoot tr td th col colgroup figure example quote comment listing synopsis links cite div choose "
    "when else credit revision license include expander".split())
_MAL_CODE = frozenset("code screen".split())


def _one_line(s: str) -> str:
    return _SPACES.sub(" ", s).strip()


def clean_prose_pair(en: str, xx: str, *, min_src_words: int = 3) -> tuple[str, str] | str:
    """The ``(english, translation)`` pair of documentation prose on one line each, or the reason
    it is dropped, checked in this order:

    * ``"empty"``: a side without text;
    * ``"variable differs"``: a LibreOffice help variable other than ``$[officename]`` or
      ``%PRODUCTNAME`` (those two become "LibreOffice") left on a side;
    * ``"broken embed"``: LibreOffice's ``[text/….xhp#… not found]`` on a side;
    * ``"untranslated"``: the translation copies the English (case aside);
    * ``"too short"``: fewer than ``min_src_words`` English words of two or more letters;
    * ``"partly untranslated"``: of the translation's words (three or more), nine tenths are
      words of the English, or three fifths and lower-case words of the English make three tenths:
      English left with a translated link title or other quote marks;
    * ``"length ratio"``: the translation over four times as long as the English or under a tenth
      of it (loose bounds: CJK translations take a third of the characters): a stale translation.

    Unlike :func:`bimine.data.catalog.clean_pair` this keeps ``$A$1``, ``%``, ``{…}`` and
    underscores: in help prose they are content (cell references, formats, identifiers), not
    placeholders or accelerators."""
    a, b = _one_line(en), _one_line(xx)
    if not a or not b:
        return "empty"
    for var, value in _LO_VARS.items():
        a, b = a.replace(var, value), b.replace(var, value)
    if _LO_VAR.search(a) or _LO_VAR.search(b):
        return "variable differs"
    if _BROKEN_EMBED.search(a) or _BROKEN_EMBED.search(b):
        return "broken embed"
    if a.casefold() == b.casefold():
        return "untranslated"
    en_words = _WORD.findall(a)
    if len(en_words) < min_src_words:
        return "too short"
    # English left in the translation with a translated name, link title or quote marks in it
    # ("See Slet en fil permanent for more.", "Top layer using „Difference“ mode.")
    # (names and identifiers are kept in translations: a copied sentence also copies the small
    # lower-case words)
    xx_words = _WORD.findall(b)
    if len(xx_words) >= 3:
        known = {w.casefold() for w in en_words}
        copied = sum(w.casefold() in known for w in xx_words)
        copied_lower = sum(w.islower() and w in known for w in xx_words)
        if copied >= 0.9 * len(xx_words) or (copied >= 0.6 * len(xx_words) and copied_lower >= 0.3 * len(xx_words)):
            return "partly untranslated"
    # a translation four times longer than the English, or a tenth of it, is one of an older
    # (or another) paragraph: loose bounds, as CJK translations take a third of the characters
    if len(b) > 4 * len(a) + 10 or 10 * len(b) < len(a) - 10:
        return "length ratio"
    return a, b


# --- parsing -------------------------------------------------------------------------------------


class _TreeBuilder(HTMLParser):
    """HTML to an ElementTree element (no lxml): void elements closed, stray end tags ignored,
    an end tag closes the open elements above its own, entities decoded."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = ET.Element("#document")
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        el = ET.SubElement(self.stack[-1], tag, {k: v or "" for k, v in attrs})
        if tag not in _VOID:
            self.stack.append(el)

    def handle_startendtag(self, tag, attrs):
        ET.SubElement(self.stack[-1], tag, {k: v or "" for k, v in attrs})

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        parent = self.stack[-1]
        if len(parent):
            parent[-1].tail = (parent[-1].tail or "") + data
        else:
            parent.text = (parent.text or "") + data


_VOID_TAG = re.compile("<(" + "|".join(sorted(_VOID)) + r""")\b((?:[^>"']|"[^"]*"|'[^']*')*?)/?>""")


def _strip_ns(root: ET.Element) -> ET.Element:
    """Namespaces dropped from tag names (``{http://www.w3.org/1999/xhtml}p`` -> ``p``)."""
    for el in root.iter():
        if isinstance(el.tag, str) and el.tag[:1] == "{":
            el.tag = el.tag.rsplit("}", 1)[1]
    return root


def _read_html(path: str, start: str | None = None, end: str | None = None) -> ET.Element:
    """An HTML page as an ElementTree element. The part from ``start`` to ``end`` (the whole page
    when they are not given or not found) is first read as XML, void elements closed (expat: ten
    times faster than :mod:`html.parser`); a page that is not well-formed XML that way (HTML
    entities, unquoted attributes, unclosed elements) is read whole with :mod:`html.parser`."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    part = text
    if start is not None and end is not None:
        i = text.find(start)
        j = text.find(end, i + 1)
        if i >= 0 and j > i:
            part = text[i:j]
    try:
        return _strip_ns(ET.fromstring(_VOID_TAG.sub(r"<\1\2/>", part)))
    except ET.ParseError:
        pass
    p = _TreeBuilder()
    p.feed(text)
    p.close()
    return p.root


def _read_mallard(path: str) -> ET.Element | None:
    """A Mallard page with namespaces dropped from tag names (``{…/1.0/}p`` -> ``p``); None if it
    is not well-formed XML."""
    try:
        return _strip_ns(ET.parse(path).getroot())
    except ET.ParseError:
        return None


# --- text units ----------------------------------------------------------------------------------


class _Text:
    """How a page's elements become text. ``skip(child, parent)``: leave the child and its content
    out (its tail stays); ``blocks``: tags that start a new unit; ``code``: tags whose text is program
    code; ``render(el)``: the text of an element that is not its content (a Mallard key sequence, a
    link that takes its target's title), or None."""

    def __init__(self, skip: Callable[[ET.Element, ET.Element], bool], blocks: frozenset, code: frozenset,
                 render: Callable[[ET.Element], str | None] | None = None):
        self.skip, self.blocks, self.code, self.render = skip, blocks, code, render

    def inline(self, el: ET.Element, parts: list, in_code: bool, counts: list) -> None:
        """Text of ``el``'s content appended to ``parts``; ``counts`` = [prose chars, code chars]."""
        if self.render is not None:
            got = self.render(el)
            if got is not None:
                parts.append(got)
                counts[1 if in_code else 0] += len(got.strip())
                return
        if el.text:
            parts.append(el.text)
            counts[1 if in_code else 0] += len(el.text.strip())
        for ch in el:
            if isinstance(ch.tag, str) and not self.skip(ch, el):
                sep = ch.tag in self.blocks or ch.tag == "br"
                if sep:
                    parts.append(" ")
                self.inline(ch, parts, in_code or ch.tag in self.code, counts)
                if sep:
                    parts.append(" ")
            if ch.tail:
                parts.append(ch.tail)
                counts[1 if in_code else 0] += len(ch.tail.strip())

    def text(self, el: ET.Element) -> str:
        """``el``'s content on one line."""
        parts: list = []
        self.inline(el, parts, el.tag in self.code, [0, 0])
        return _one_line("".join(parts))

    def units(self, root: ET.Element) -> list[tuple[str, str, bool]]:
        """The text units of a page in document order: ``(signature, text, is_code)``. A unit is a
        run of inline content (text and non-block elements) directly inside a block element; runs
        of only whitespace are left out. The signature is the path of block tags from the root, so
        two pages built from the same source get the same sequence of signatures. A unit is code
        when all its text is inside code elements."""
        out: list[tuple[str, str, bool]] = []

        def walk(el: ET.Element, path: str) -> None:
            parts: list = []
            counts = [0, 0]
            in_code = el.tag in self.code

            def flush():
                text = _one_line("".join(parts))
                if text:
                    out.append((path, text, counts[0] == 0))
                parts.clear()
                counts[0] = counts[1] = 0

            if el.text:
                parts.append(el.text)
                counts[1 if in_code else 0] += len(el.text.strip())
            for ch in el:
                if isinstance(ch.tag, str) and not self.skip(ch, el):
                    if ch.tag in self.blocks:
                        flush()
                        walk(ch, f"{path}/{ch.tag}")
                    else:
                        if ch.tag == "br":
                            parts.append(" ")
                        self.inline(ch, parts, in_code or ch.tag in self.code, counts)
                if ch.tail:
                    parts.append(ch.tail)
                    counts[1 if in_code else 0] += len(ch.tail.strip())
            flush()

        walk(root, root.tag)
        return out


def _take(lang: str, a: str, b: str, report: CleanReport, seen: set) -> tuple[str, str, str] | None:
    """The cleaned pair to yield, or None with the drop counted. A pair already yielded for the
    language (an embedded paragraph, a shared note) is dropped as ``"duplicate"``."""
    got = clean_prose_pair(a, b)
    if isinstance(got, str):
        report.dropped[got] += 1
        return None
    key = hash((lang, got[0], got[1]))
    if key in seen:
        report.dropped["duplicate"] += 1
        return None
    seen.add(key)
    report.kept += 1
    return lang, got[0], got[1]


def _pair_units(lang: str, en: list | None, xx: list, report: CleanReport, seen: set,
                prepare: Callable[[str, str], tuple[str, str]] | None = None) -> Iterator[tuple[str, str, str]]:
    """Units of a translated page paired one to one with the English page's, when both pages have
    the same sequence of signatures; otherwise every unit is dropped."""
    report.entries += len(xx)
    if en is None:
        report.dropped["no English counterpart"] += len(xx)
        return
    if [u[0] for u in en] != [u[0] for u in xx]:
        report.dropped["structure differs"] += len(xx)
        return
    for (_, a, code), (_, b, _) in zip(en, xx):
        if code:
            report.dropped["code"] += 1
            continue
        got = _take(lang, *(prepare(a, b) if prepare else (a, b)), report, seen)
        if got is not None:
            yield got


def _need_dir(path: str, what: str) -> None:
    if not os.path.isdir(path):
        raise InputError(f"{path}: no such directory; expected {what} (a .deb unpacked with dpkg-deb -x)")


def _lang_dirs(base: str, exclude: set, what: str) -> list[str]:
    """The language directories under ``base``, sorted. A symbolic link is not one: Debian's
    ``libreoffice-help-sk`` holds only ``help/sk -> cs`` (the Czech help), which is not Slovak."""
    _need_dir(base, what)
    return sorted(d for d in os.listdir(base) if d not in exclude and os.path.isdir(os.path.join(base, d))
                  and not os.path.islink(os.path.join(base, d)))


def _files(top: str, suffix: str) -> list[str]:
    """Paths relative to ``top`` of the files ending in ``suffix`` below it, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        rel = os.path.relpath(dirpath, top)
        out += [os.path.normpath(os.path.join(rel, f)) for f in filenames if f.endswith(suffix)]
    return sorted(out)


# --- LibreOffice help ----------------------------------------------------------------------------

_LO_HELP = os.path.join("usr", "share", "libreoffice", "help")
_LO_CODE_CLASSES = frozenset({"code", "codeintable", "smathcode"})


def _lo_skip(ch: ET.Element, parent: ET.Element) -> bool:
    # <switchinline>: one hidden <span> per platform/application; keep the default one only
    if ch.tag in _HTML_SKIP:
        return True
    return "hidden" in ch.attrib and not ch.get("id", "").startswith("default")


_LO_TEXT = _Text(_lo_skip, _HTML_BLOCKS, _HTML_CODE)


def _lo_paragraphs(path: str) -> tuple[dict[str, tuple[str, bool]], Counter]:
    """``{id: (text, is_code)}`` of the ``par_id…``/``hd_id…`` elements of a LibreOffice help page,
    and how often each id occurs (an id repeated in the page is ambiguous)."""
    root = _read_html(path, '<div id="DisplayArea"', '<div id="SearchFrame"')
    paras: dict[str, tuple[str, bool]] = {}
    seen: Counter = Counter()
    for el in root.iter():
        pid = el.get("id")
        if not pid or not _LO_ID.match(pid):
            continue
        seen[pid] += 1
        is_code = bool(_LO_CODE_CLASSES & set(el.get("class", "").split()))
        paras[pid] = (_LO_TEXT.text(el), is_code)
    return paras, seen


def libreoffice_help_pairs(en_root: str, xx_root: str, report: CleanReport) -> Iterator[tuple[str, str, str]]:
    """``(lang, english, translation)`` of the LibreOffice help unpacked in ``xx_root`` (one or more
    ``usr/share/libreoffice/help/<lang>/`` trees), paired by page path and paragraph id with the
    en-US help unpacked in ``en_root``. A unit is a translated paragraph or heading with a
    ``par_id…``/``hd_id…`` id; ids that occur more than once in either page are dropped
    (``"repeated id"``), as are code paragraphs (``"code"``)."""
    en_text = os.path.join(en_root, _LO_HELP, "en-US", "text")
    _need_dir(en_text, "the English help of libreoffice-help-en-us")
    for lang in _lang_dirs(os.path.join(xx_root, _LO_HELP), {"en-US", "media"}, "a libreoffice-help-<x> package"):
        seen: set = set()  # hashes of the pairs yielded for this language
        xx_text = os.path.join(xx_root, _LO_HELP, lang, "text")
        for rel in _files(xx_text, ".html"):
            xx, xx_seen = _lo_paragraphs(os.path.join(xx_text, rel))
            report.entries += sum(xx_seen.values())
            en_path = os.path.join(en_text, rel)
            if not os.path.isfile(en_path):
                report.dropped["no English counterpart"] += sum(xx_seen.values())
                continue
            en, en_seen = _lo_paragraphs(en_path)
            for pid, (b, _) in xx.items():
                if xx_seen[pid] > 1 or en_seen[pid] > 1:
                    report.dropped["repeated id"] += xx_seen[pid]
                    continue
                if pid not in en:
                    report.dropped["no English counterpart"] += 1
                    continue
                a, code = en[pid]
                if code:
                    report.dropped["code"] += 1
                    continue
                got = _take(lang, a, b, report, seen)
                if got is not None:
                    yield got


# --- GIMP help -----------------------------------------------------------------------------------

_GIMP_HELP = os.path.join("usr", "share", "gimp", "2.0", "help")
# navigation and tables of contents (copies of titles), the index and the glossary (sorted per
# language: same-looking structures, other entries), the bibliography (names and titles)
_GIMP_SKIP_CLASSES = frozenset({"navheader", "navfooter", "toc", "list-of-figures", "list-of-tables",
                                "list-of-examples", "list-of-procedures", "list-of-equations", "index",
                                "indexdiv", "glossary", "glossdiv", "bibliography", "bibliodiv"})
# DocBook's generated labels: "Figure 15.43. ", "Table 3.1. ", "11.6.1. " (the translation's own
# label word precedes the same number)
_DOCBOOK_LABEL = re.compile(r"(?:(?:Figure|Table|Example|Procedure|Equation|Chapter|Part|Appendix|Section)\s+)?"
                            r"((?:\d+|[A-Z])(?:\.\d+)*\.)\s+")


def _strip_labels(en: str, xx: str) -> tuple[str, str]:
    """DocBook's label removed from both sides when the English has one and the translation has
    the same number near its start (``Figure 15.43. Oilify`` / ``Abbildung 15.43. Ölgemälde`` /
    ``図15.43 油絵``)."""
    m = _DOCBOOK_LABEL.match(en)
    if not m or not (m.group(1)[0].isdigit() or m.group(0)[0] != m.group(1)[0]):
        return en, xx  # a bare capital ("A new …") is not a label
    number = m.group(1).rstrip(".")
    i = xx.find(number, 0, 24)
    j = i + len(number)
    if i < 0 or any(c.isdigit() for c in xx[:i]) or xx[j:j + 1].isdigit():
        return en, xx
    return en[m.end():], xx[j:].lstrip(" :.")


def _gimp_skip(ch: ET.Element, parent: ET.Element) -> bool:
    return ch.tag in _HTML_SKIP or bool(_GIMP_SKIP_CLASSES & set(ch.get("class", "").split()))


_GIMP_TEXT = _Text(_gimp_skip, _HTML_BLOCKS, _HTML_CODE)


def _gimp_units(path: str) -> list[tuple[str, str, bool]]:
    return _GIMP_TEXT.units(_read_html(path))


def gimp_help_pairs(en_root: str, xx_root: str, report: CleanReport) -> Iterator[tuple[str, str, str]]:
    """``(lang, english, translation)`` of the GIMP help unpacked in ``xx_root``
    (``usr/share/gimp/2.0/help/<lang>/``), paired with the English help unpacked in ``en_root``: the
    text blocks of a page are paired one to one with those of the same-path English page when both
    have the same block structure (the same sequence of block-element paths); otherwise the page's
    blocks are dropped (``"structure differs"``). Program listings (``"code"``) are dropped."""
    en_dir = os.path.join(en_root, _GIMP_HELP, "en")
    _need_dir(en_dir, "the English help of gimp-help-en")
    for lang in _lang_dirs(os.path.join(xx_root, _GIMP_HELP), {"en"}, "a gimp-help-<x> package"):
        seen: set = set()  # hashes of the pairs yielded for this language
        xx_dir = os.path.join(xx_root, _GIMP_HELP, lang)
        for rel in _files(xx_dir, ".html"):
            xx = _gimp_units(os.path.join(xx_dir, rel))
            en_path = os.path.join(en_dir, rel)
            en = _gimp_units(en_path) if os.path.isfile(en_path) else None
            yield from _pair_units(lang, en, xx, report, seen, _strip_labels)


# --- GNOME user docs (Mallard) -------------------------------------------------------------------

_GNOME_HELP = os.path.join("usr", "share", "help")


def _mallard_skip(ch: ET.Element, parent: ET.Element) -> bool:
    # editorial comments: not in the translations (itstool leaves them out); page metadata
    # (credits, revisions, links, translator credits) is not prose: keep its title and description
    return ch.tag == "comment" or (parent.tag == "info" and ch.tag not in ("title", "desc"))


@functools.lru_cache(maxsize=4096)
def _mallard_link_text(doc_dir: str, xref: str) -> str | None:
    """The text Yelp shows for an empty ``<link xref="page#section"/>``: the target's link title
    (``info/title[@type="link"]``) or its title, from the pages of the same language."""
    page, _, sec = xref.partition("#")
    path = os.path.join(doc_dir, page + ".page")
    root = _read_mallard(path) if page and os.path.isfile(path) else None
    if root is None:
        return None
    target = root if not sec else next((e for e in root.iter() if e.get("id") == sec), None)
    if target is None:
        return None
    titles = [t for i in target.findall("info") for t in i.findall("title")
              if t.get("type") == "link" and not t.get("role")] + target.findall("title")
    return _mallard_text(doc_dir).text(titles[0]) if titles else None


def _mallard_render(doc_dir: str, el: ET.Element) -> str | None:
    if el.tag in ("keyseq", "guiseq"):  # <keyseq><key>Ctrl</key><key>C</key></keyseq>: Ctrl+C
        if (el.text or "").strip() or any((ch.tail or "").strip() for ch in el):
            return None
        join = el.get("join") or (" ▸ " if el.tag == "guiseq" else " " if el.get("type") == "sequence" else "+")
        text = _mallard_text(doc_dir)
        return join.join(text.text(ch) for ch in el if isinstance(ch.tag, str))
    if el.tag == "link" and not len(el) and not (el.text or "").strip():
        xref = el.get("xref")
        return _mallard_link_text(doc_dir, xref) if xref else el.get("href")
    return None


@functools.lru_cache(maxsize=64)
def _mallard_text(doc_dir: str) -> _Text:
    return _Text(_mallard_skip, _MAL_BLOCKS, _MAL_CODE, functools.partial(_mallard_render, doc_dir))


def _mallard_units(path: str) -> list[tuple[str, str, bool]] | None:
    root = _read_mallard(path)
    return None if root is None else _mallard_text(os.path.dirname(path)).units(root)


def gnome_user_docs_pairs(root: str, report: CleanReport) -> Iterator[tuple[str, str, str]]:
    """``(lang, english, translation)`` of the ``gnome-user-docs`` package unpacked in ``root``: the
    Mallard pages ``usr/share/help/<lang>/<doc>/*.page`` paired with ``usr/share/help/C/<doc>/``
    ones like GIMP's pages (block units one to one when the block structures match). A page that
    is not well-formed XML is dropped as a whole (``"bad page"``, one entry)."""
    help_dir = os.path.join(root, _GNOME_HELP)
    en_dir = os.path.join(help_dir, "C")
    _mallard_link_text.cache_clear()  # keyed by directory: another package may have been unpacked there
    _need_dir(en_dir, "the English (C) pages of gnome-user-docs")
    for lang in _lang_dirs(help_dir, {"C"}, "the translated pages of gnome-user-docs"):
        seen: set = set()  # hashes of the pairs yielded for this language
        xx_dir = os.path.join(help_dir, lang)
        for rel in _files(xx_dir, ".page"):
            xx = _mallard_units(os.path.join(xx_dir, rel))
            if xx is None:
                report.entries += 1
                report.dropped["bad page"] += 1
                continue
            en_path = os.path.join(en_dir, rel)
            en = _mallard_units(en_path) if os.path.isfile(en_path) else None
            if en is None and os.path.isfile(en_path):  # the English page is not well-formed
                report.entries += len(xx)
                report.dropped["bad page"] += len(xx)
                continue
            yield from _pair_units(lang, en, xx, report, seen)
