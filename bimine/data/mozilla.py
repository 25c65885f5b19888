"""English–X string pairs from Mozilla language packs (Firefox ESR, Thunderbird), cleaned for training.

The English strings live in the application's ``omni.ja`` archives (zips; Firefox has two, the
toolkit one in the app directory and ``browser/omni.ja``), the translations in the language pack
``langpack-<locale>@….xpi`` (a zip) of an l10n package. Both hold the same files under different
locale roots; a file is named here by its path relative to its locale root (``en-US`` or the
pack's locale removed, Firefox's leading ``browser/`` dropped), as read from the jars' manifests:

* ``localization/en-US/toolkit/x.ftl`` (omni.ja) and ``localization/de/toolkit/x.ftl``
  (langpack) are ``localization/toolkit/x.ftl``; ``browser/omni.ja``'s
  ``localization/en-US/browser/y.ftl`` and the pack's ``browser/localization/de/browser/y.ftl``
  are ``localization/browser/y.ftl``;
* ``chrome/en-US/locale/en-US/global/z.properties`` and ``chrome/de/locale/de/global/z.properties``
  are ``chrome/global/z.properties``; ``browser/omni.ja``'s ``chrome/en-US/locale/browser/w.properties``
  and the pack's ``browser/chrome/de/locale/browser/w.properties`` are ``chrome/browser/w.properties``.

Entries are joined on (relative file, key). Keys: a Fluent message's value is ``msg``, its
attributes ``msg.attr``; a ``.properties`` key or a ``.dtd`` entity name as written.

Choices (each counted under its drop reason in the :class:`~bimine.data.catalog.CleanReport`):

* Fluent select expressions on runtime values (plurals: ``{ $n -> … }``) drop the entry
  (``"plural/select"``); selects on a term attribute (``{ -brand-short-name.gender -> … }``, a
  fixed grammatical property) are resolved. Variable references ``{ $name }`` (also inside
  ``NUMBER()``/``DATETIME()``) are kept as the token ``{ $name }``, which catalog's
  ``placeholders()`` sees: both sides must carry the same ones (else ``"placeholders differ"``),
  and ``clean_text`` removes them from the output. Term references (``{ -brand-short-name }``)
  and message references are resolved to their text in the same locale (so the product names
  stay in the sentence); one that cannot be resolved drops the entry (``"unresolved reference"``);
  any other placeable (a function call on a literal, …) is ``"complex placeable"``. Terms
  themselves are no pairs (counted as ``"term"``).
* ``.properties``: PluralForm strings (the English holds ``;`` followed by no space, as in
  ``#1 message;#1 messages``) are ``"plural/select"``; ``#1``-style placeholders become
  ``{ $hash1 }`` tokens, like Fluent variables (not ``PKCS #7``); so do Thunderbird's
  ``%brand%``-style placeholders (``.properties`` and ``.dtd``), which catalog's printf pattern
  would cut in half.
* ``.dtd``: entity references (``&brandShortName;``) are resolved from the entities of the same
  locale's ``.dtd`` files (brand names stay in the sentence); an unknown one becomes the
  placeholder token ``{ $brandShortName }``. XML character references and ``&amp;`` etc. are left
  to ``clean_text``, which decodes them.
* Not natural-language text (``"not text"``): keyboard shortcuts and access keys (keys or
  attributes ending in ``accesskey``, ``.key``, ``commandkey``, ``keycode``, ``modifiers``),
  CSS sizes and styles (``.width``, ``.height``, ``.style``), and English values that are URLs,
  numbers/CSS lengths or CSS declarations.
  Lightning's ``calendar-extract.properties`` (date patterns) is not text either.
* Then catalog's :func:`~bimine.data.catalog.clean_pair` (markup, placeholders, untranslated
  copies, fewer than 3 English words), the quotes or brackets around a placeholder removed
  with it (``Timer “%S” exists`` -> ``Timer exists``), commas it leaves doubled or leading
  dropped; a pair seen before in the same language pack is ``"duplicate"`` (the platform
  variants of a file repeat many strings).
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from collections.abc import Iterator
from html.entities import html5

from fluent.syntax import FluentParser
from fluent.syntax import ast as fl

from bimine.data.catalog import CleanReport, clean_pair, placeholders
from bimine.errors import InputError

_EXTS = (".ftl", ".properties", ".dtd")
# English values mapped to a drop reason instead of a text start with this character
_DROP = "\x00"

# keys (or Fluent attributes) that hold no natural-language text
_NOT_TEXT_KEY = re.compile(r"(?:accesskey|[._-]key|commandkey|keycode|modifiers|[._-]width|[._-]height|[._-]style)\d*$",
                           re.IGNORECASE)
_NOT_TEXT_ATTR = frozenset({"accesskey", "key", "commandkey", "keycode", "modifiers", "width", "height", "style"})
_URL = re.compile(r"^\s*(?:[a-z][\w+.-]*://|about:|mailto:|www\.)\S*\s*$", re.IGNORECASE)
_NUMBER = re.compile(r"^[\s\d.,:;%+-]*(?:em|ch|px|ex|rem|vw|vh|pt|%)?\s*$", re.IGNORECASE)
_CSS = re.compile(r"^\s*(?:[a-z-]+\s*:\s*[^;:]+;?\s*)+$")
_CSS_PROPERTY = re.compile(r"(?:^|;)\s*(?:min-|max-)?(?:width|height|margin|padding|font-size)[\w-]*\s*:")
_PLURAL_PROPS = re.compile(r";(?!\s|$)")
_CHAR_ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-fA-F]+|[\w.-]+);")
_ENTITY_REF = re.compile(r"&([A-Za-z_][\w.-]*);")
# whole files without natural-language text: Lightning's patterns for finding dates in mail
_NOT_TEXT_FILES = frozenset({"chrome/calendar/calendar-extract.properties"})
_PCT_WORD = re.compile(r"%([A-Za-z_]\w+)%(?!%)")  # Thunderbird's %brand%, %title%, %file% …
_HASH_ARG = re.compile(r"(?<![\w&])(?<!PKCS )#(\d)(?!\d)")  # #1 … #9, not "PKCS #7", "&#8734;"
_DTD_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_DTD_ENTITY = re.compile(r"<!ENTITY\s+([A-Za-z_][\w.:-]*)\s+(?:\"([^\"]*)\"|'([^']*)')\s*>")
_PROPS_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
_PROPS_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f"}
# quotes or brackets around a placeholder: “%S”, ‘{ $name }’, « %S », „%S“, (%S), <%S>, 「%S」 …
_OPEN = "“„‘‚\"'«»‹›「『《(<（["
_CLOSE = "”“’‘\"'»«›‹」』》)>）]"
# typographic quotes or brackets left empty (by markup removed: “<span data-l10n-name="q"></span>”)
_EMPTY_QUOTES = re.compile(r"\s?(?:“\s*”|„\s*“|‘\s*’|‚\s*‘|«\s*»|»\s*«|‹\s*›|›\s*‹|「\s*」|『\s*』|《\s*》|（\s*）|\(\s*\)|\[\s*\])")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([.,)])(?=\s|$)")
_SPACES = re.compile(r"\s+")
_DOUBLE_COMMA = re.compile(r",(?:\s*,)+")  # "Welcome back, { $user }, good" without its placeholder


class _Unusable(Exception):
    """An entry that cannot become a pair; the argument is the drop reason."""


# ---------------------------------------------------------------- archives and paths


def _open_zip(path: str) -> zipfile.ZipFile:
    """An ``omni.ja`` or ``.xpi`` archive. (Mozilla's "optimised" jars put the central
    directory first; Python's zipfile reads those of Firefox/Thunderbird 153 as they are.)"""
    try:
        return zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise InputError(f"{path}: not a readable zip archive ({type(e).__name__}: {e}); "
                         f"unpack the package again with dpkg-deb -x") from None


def _relative(name: str, locale: str) -> str | None:
    """The file's path relative to its locale root (see the module's table), or None for a file
    outside the localisation trees (``res/``, ``chrome/toolkit/content/`` …)."""
    if not name.endswith(_EXTS):
        return None
    s = name.split("/")
    if s[0] == "browser":
        s = s[1:]
    if len(s) > 2 and s[0] == "localization" and s[1] == locale:
        return "/".join(["localization", *s[2:]])
    if len(s) > 4 and s[0] == "chrome" and s[1] == locale and s[2] == "locale":
        rest = s[4:] if s[3] == locale else s[3:]
        return "/".join(["chrome", *rest])
    return None


def _read_files(zips: list[zipfile.ZipFile], locale: str) -> dict[str, str]:
    """{relative file: text} of the localisation files in the archives."""
    out: dict[str, str] = {}
    for z in zips:
        for name in z.namelist():
            rel = _relative(name, locale)
            if rel is not None:
                out[rel] = z.read(name).decode("utf-8", errors="replace")
    return out


def _find(root: str, match) -> list[str]:
    """Files under ``root`` whose name satisfies ``match``, each real file once (Thunderbird's
    ``usr/lib/thunderbird/omni.ja`` is a link to ``usr/share/thunderbird/omni.ja``), sorted."""
    seen: dict[str, str] = {}
    for d, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            if match(f) and os.path.isfile(p):
                seen.setdefault(os.path.realpath(p), p)
    return sorted(seen.values())


# ---------------------------------------------------------------- parsers


def parse_properties(text: str) -> dict[str, str]:
    """The ``key = value`` entries of a ``.properties`` file: ``#``/``!`` comments, ``\\``
    line continuations (the next line's leading blanks dropped), escapes (``\\uXXXX``, ``\\n``,
    ``\\t``; ``\\X`` is ``X``); the key ends at the first unescaped ``=``, ``:`` or blank."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip()
        i += 1
        if not line or line[0] in "#!":
            continue
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1 and i <= len(lines):  # odd run of "\": continued
            line = line[:-1] + (lines[i].lstrip() if i < len(lines) else "")
            i += 1
        j = 0
        while j < len(line) and line[j] not in "=: \t\f":
            j += 2 if line[j] == "\\" else 1
        key, rest = line[:j], line[j:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        out[_unescape(key)] = _unescape(rest)
    return out


def _unescape(s: str) -> str:
    def one(m: re.Match) -> str:
        c = m.group(1)
        return chr(int(c[1:], 16)) if len(c) == 5 else _PROPS_ESCAPES.get(c, c)
    return _PROPS_ESCAPE.sub(one, s)


def parse_dtd(text: str) -> dict[str, str]:
    """The ``<!ENTITY name "value">`` (or single-quoted) entries of a ``.dtd`` file, comments
    skipped; values raw (entity references unresolved)."""
    out: dict[str, str] = {}
    for m in _DTD_ENTITY.finditer(_DTD_COMMENT.sub(" ", text)):
        out[m.group(1)] = m.group(2) if m.group(2) is not None else m.group(3)
    return out


# ---------------------------------------------------------------- one locale's strings


class _Locale:
    """The localisation files of one locale: parsed, with the tables that references need."""

    def __init__(self, files: dict[str, str]):
        self.raw: dict[tuple[str, str], tuple[str, object]] = {}  # (file, key) -> (kind, entry)
        self.messages: dict[str, dict[str, fl.Message]] = {}  # file -> id -> message
        self.any_message: dict[str, fl.Message] = {}
        self.terms: dict[str, fl.Term] = {}
        self.entities: dict[str, str] = {}
        parser = FluentParser(with_spans=False)
        for rel, text in sorted(files.items()):
            if rel.endswith(".ftl"):
                here = self.messages.setdefault(rel, {})
                for i, e in enumerate(parser.parse(text).body):
                    if isinstance(e, fl.Message):
                        here[e.id.name] = e
                        self.any_message.setdefault(e.id.name, e)
                        if e.value is not None:
                            self.raw[rel, e.id.name] = ("ftl", e.value)
                        for a in e.attributes:
                            self.raw[rel, f"{e.id.name}.{a.id.name}"] = ("ftl", a.value)
                    elif isinstance(e, fl.Term):
                        self.terms[e.id.name] = e
                        self.raw[rel, "-" + e.id.name] = ("term", None)
                    elif isinstance(e, fl.Junk):
                        self.raw[rel, f"#junk{i}"] = ("junk", None)
            elif rel.endswith(".properties"):
                for k, v in parse_properties(text).items():
                    self.raw[rel, k] = ("properties", v)
            else:
                ents = parse_dtd(text)
                for k, v in ents.items():
                    self.raw[rel, k] = ("dtd", v)
                self.entities.update(ents)

    def text(self, rel: str, key: str) -> str:
        """The entry as a string (placeholders as tokens), or raise :class:`_Unusable`."""
        kind, entry = self.raw[rel, key]
        if kind == "term":
            raise _Unusable("term")
        if kind == "junk":
            raise _Unusable("parse error")
        if kind == "ftl":
            return self._pattern(entry, rel, None, 0)
        if kind == "properties":
            return _PCT_WORD.sub(r"{ $\1 }", _HASH_ARG.sub(r"{ $hash\1 }", entry))
        return _PCT_WORD.sub(r"{ $\1 }", self._dtd(entry, 0))

    def _dtd(self, value: str, depth: int) -> str:
        def ref(m: re.Match) -> str:
            name = m.group(1)
            if name in self.entities and depth < 8:
                return self._dtd(self.entities[name], depth + 1)
            if name + ";" in html5:  # &amp; &lt; &rdquo; …: decoded by clean_text
                return m.group(0)
            return f"{{ ${name} }}"
        return _ENTITY_REF.sub(ref, value)

    def _pattern(self, pattern: fl.Pattern, rel: str | None, args: dict | None, depth: int) -> str:
        if depth > 8:
            raise _Unusable("unresolved reference")
        parts = []
        for el in pattern.elements:
            if isinstance(el, fl.TextElement):
                parts.append(el.value)
            else:
                parts.append(self._expr(el.expression, rel, args, depth))
        return "".join(parts)

    def _expr(self, x, rel: str | None, args: dict | None, depth: int) -> str:
        if isinstance(x, fl.StringLiteral):
            return x.parse()["value"]
        if isinstance(x, fl.NumberLiteral):
            return x.value
        if isinstance(x, fl.VariableReference):
            if args is not None and x.id.name in args:  # a term's parameter
                return args[x.id.name]
            return f"{{ ${x.id.name} }}"
        if isinstance(x, fl.Placeable):
            return self._expr(x.expression, rel, args, depth)
        if isinstance(x, fl.FunctionReference):
            pos = x.arguments.positional
            if x.id.name in ("NUMBER", "DATETIME") and pos and isinstance(pos[0], fl.VariableReference):
                return self._expr(pos[0], rel, args, depth)
            raise _Unusable("complex placeable")
        if isinstance(x, fl.MessageReference):
            m = self.messages.get(rel, {}).get(x.id.name) or self.any_message.get(x.id.name)
            return self._attr_or_value(m, x.attribute, None, depth)
        if isinstance(x, fl.TermReference):
            t = self.terms.get(x.id.name)
            targs = {a.name.name: self._literal(a.value) for a in x.arguments.named} if x.arguments else {}
            return self._attr_or_value(t, x.attribute, targs, depth)
        if isinstance(x, fl.SelectExpression):
            return self._select(x, rel, args, depth)
        raise _Unusable("complex placeable")

    @staticmethod
    def _literal(v) -> str:
        return v.parse()["value"] if isinstance(v, fl.StringLiteral) else v.value

    def _attr_or_value(self, entry, attribute, args, depth) -> str:
        if entry is None:
            raise _Unusable("unresolved reference")
        if attribute is None:
            pattern = entry.value
        else:
            pattern = next((a.value for a in entry.attributes if a.id.name == attribute.name), None)
        if pattern is None:
            raise _Unusable("unresolved reference")
        return self._pattern(pattern, None, args, depth + 1)

    def _select(self, x: fl.SelectExpression, rel, args, depth) -> str:
        sel = x.selector
        if isinstance(sel, fl.TermReference) and sel.attribute is not None:
            try:  # a fixed property: gender, animacy …; none: the default variant
                value = self._expr(sel, rel, args, depth)
            except _Unusable:
                value = None
        elif isinstance(sel, fl.VariableReference) and args is not None:
            value = args.get(sel.id.name)  # inside a term: its parameter, else the default variant
        else:
            raise _Unusable("plural/select")  # on a runtime value: plural forms
        chosen = next((v for v in x.variants if value is not None and self._key(v.key) == value), None)
        chosen = chosen or next(v for v in x.variants if v.default)
        return self._pattern(chosen.value, rel, args, depth + 1)

    @staticmethod
    def _key(k) -> str:
        return k.name if isinstance(k, fl.Identifier) else k.value


def _unquote_placeholders(s: str) -> str:
    """Quotes and brackets around a placeholder removed (``Timer “%S” exists`` -> ``Timer %S
    exists``), so that none is left empty once ``clean_text`` removes the placeholder."""
    for p in set(placeholders(s)):
        s = re.sub(f"[{re.escape(_OPEN)}]\\s*({re.escape(p)})\\s*[{re.escape(_CLOSE)}]", r"\1", s)
    return s


def _tidy(s: str) -> str:
    """Empty typographic quotes or brackets, and commas that a removed placeholder left doubled
    or leading, dropped; spaces collapsed."""
    s = _DOUBLE_COMMA.sub(",", _EMPTY_QUOTES.sub("", s))
    return _SPACE_BEFORE_PUNCT.sub(r"\1", _SPACES.sub(" ", s)).strip().lstrip(",;").lstrip()


def _not_text_key(rel: str, key: str) -> bool:
    if rel in _NOT_TEXT_FILES:
        return True
    if rel.endswith(".ftl"):
        return "." in key and key.rsplit(".", 1)[1].lower() in _NOT_TEXT_ATTR
    return bool(_NOT_TEXT_KEY.search(key))


def _not_text_value(s: str) -> bool:
    return bool(_URL.match(s) or _NUMBER.match(s) or (_CSS.match(s) and _CSS_PROPERTY.search(s)))


# ---------------------------------------------------------------- public API


def english_strings(app_root: str) -> dict[tuple[str, str], str]:
    """The English strings of an application unpacked in ``app_root`` (the ``firefox-esr`` or
    ``thunderbird`` package after ``dpkg-deb -x``): ``{(relative file, key): text}``, read from
    every ``omni.ja`` under it. Texts have Fluent term/message and DTD entity references
    resolved and variables as ``{ $name }`` tokens (see the module's notes). An entry that can
    never give a pair (a plural, an access key, a URL …) is kept, its value the reason prefixed
    with ``"\\x00"``, so that :func:`langpack_pairs` counts its translations under that reason."""
    jars = _find(app_root, lambda f: f == "omni.ja")
    if not jars:
        raise InputError(f"{app_root}: no omni.ja below it; give the directory the firefox-esr or "
                         f"thunderbird .deb was unpacked into (dpkg-deb -x PKG.deb DIR)")
    zips = [_open_zip(p) for p in jars]
    try:
        loc = _Locale(_read_files(zips, "en-US"))
    finally:
        for z in zips:
            z.close()
    out: dict[tuple[str, str], str] = {}
    for (rel, key), (kind, _) in loc.raw.items():
        if kind == "junk":
            continue
        if _not_text_key(rel, key):
            out[rel, key] = _DROP + "not text"
            continue
        try:
            s = loc.text(rel, key)
        except _Unusable as e:
            out[rel, key] = _DROP + e.args[0]
            continue
        if not s.strip():
            s = _DROP + "empty"
        elif rel.endswith(".properties") and _PLURAL_PROPS.search(_CHAR_ENTITY.sub("", s)):
            s = _DROP + "plural/select"
        elif _not_text_value(s):
            s = _DROP + "not text"
        out[rel, key] = s
    return out


def _langpack_locale(z: zipfile.ZipFile, path: str) -> str:
    """The locale as the language pack spells it: manifest.json's ``langpack_id``, else the
    ``langpack-<locale>@…`` file name."""
    try:
        m = json.loads(z.read("manifest.json"))
        tag = m.get("langpack_id") or next(iter(m.get("languages", {})), None)
        if tag:
            return tag
    except (KeyError, ValueError):
        pass
    return os.path.basename(path)[len("langpack-"):].split("@", 1)[0]


def langpack_pairs(english: dict[tuple[str, str], str], l10n_root: str,
                   report: CleanReport) -> Iterator[tuple[str, str, str]]:
    """``(lang_tag, english, translation)`` pairs of the language pack(s) below ``l10n_root`` (an
    l10n package after ``dpkg-deb -x``), joined with :func:`english_strings` of its application
    and cleaned; single-line texts, markup and placeholders removed. ``lang_tag`` is the locale
    as the pack spells it (``de``, ``pt-BR``, ``zh-CN``). Every entry of the pack counts in
    ``report.entries``, each pair in ``report.kept``, each drop in ``report.dropped[reason]``.
    A directory without a language pack (``firefox-esr-l10n-all`` is a metapackage) yields nothing."""
    for path in _find(l10n_root, lambda f: f.startswith("langpack-") and f.endswith(".xpi")):
        with _open_zip(path) as z:
            tag = _langpack_locale(z, path)
            loc = _Locale(_read_files([z], tag))
        seen: set[tuple[str, str]] = set()
        for (rel, key), (kind, _) in loc.raw.items():
            report.entries += 1
            src = english.get((rel, key))
            if kind in ("term", "junk"):
                reason = "term" if kind == "term" else "parse error"
            elif src is None:
                reason = "no English counterpart"
            elif src.startswith(_DROP):
                reason = src[1:]
            else:
                try:
                    got = clean_pair(_unquote_placeholders(src), _unquote_placeholders(loc.text(rel, key)))
                except _Unusable as e:
                    got = e.args[0]
                if not isinstance(got, str):
                    got = (_tidy(got[0]), _tidy(got[1]))
                    if not got[0] or not got[1]:
                        got = "empty"
                if isinstance(got, str):
                    reason = got
                elif got in seen:
                    reason = "duplicate"
                else:
                    seen.add(got)
                    report.kept += 1
                    yield tag, got[0], got[1]
                    continue
            report.dropped[reason] += 1
