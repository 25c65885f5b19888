"""Is a file in the language it is said to be in? A quick look at a sample of its lines with
py3langid (:func:`check_language`), made before a long job so that a swapped ``--src-lang`` /
``--tgt-lang`` is caught in a second, not after an hour. Here, in ``text/``, because it reads
files; the language codes and the groups of related languages are :mod:`bimine.langs`'."""

from __future__ import annotations

import itertools
import logging
import os
import threading
from collections import Counter
from collections.abc import Iterable, Sequence

from bimine.jitcache import import_before_thread
from bimine.langs import (
    NON_LANGUAGE_CODES,
    is_lang_code,
    language_group,
    language_name,
    normalize_lang,
    related_languages,
)
from bimine.streams import readable_path
from bimine.text.io import open_binary
from bimine.text.normalize import is_mark
from bimine.text.zawgyi import is_zawgyi

log = logging.getLogger(__name__)

_IDENTIFIER = None


def _identify() -> tuple:
    """(classify(text) -> label, the identifier's labels), loading py3langid once: ~0.5 s from
    its LZMA-compressed model, ~0.1 s from the uncompressed copy in the user's cache
    (:func:`cached_identifier`)."""
    global _IDENTIFIER
    if _IDENTIFIER is None:
        import py3langid  # loaded on use: py3langid is heavy or optional

        ident = None
        try:
            ident = cached_identifier()
        except Exception as e:  # any other py3langid layout, an unwritable cache: py3langid's own load
            log.debug(f"py3langid's model read without the cache: {e}")
        if ident is not None:
            _IDENTIFIER = (lambda text: ident.classify(text)[0], list(dict.fromkeys(ident.nb_classes)))
            return _IDENTIFIER
        labels = []
        try:
            from py3langid.langid import _get_identifier  # loaded on use: py3langid is heavy or optional

            labels = list(dict.fromkeys(_get_identifier().nb_classes))
        except (ImportError, AttributeError):  # other py3langid versions: ask it for its labels
            labels = [lang for lang, _ in py3langid.rank("a")]
        _IDENTIFIER = (lambda text: py3langid.classify(text)[0], labels)
    return _IDENTIFIER


_MODEL_ARRAYS = ("ptc", "pc", "classes", "nextmove", "nextmove_row", "out_feat")


def cached_identifier():
    """py3langid's identifier built from an uncompressed copy of its model arrays, kept in the
    user's cache by :func:`bimine.diskcache.cached_arrays` (an entry ``py3langid-model-<hash>``,
    66 MB for py3langid 0.4's model) and made on first use. Decompressing the model (LZMA,
    ~0.35 s) is most of py3langid's load, and it competes for a core with the job the check runs
    beside. The entry's key holds py3langid's version and the model file's sha256, so another
    model never reads this copy. Raises for a py3langid whose model is not the npz-in-LZMA
    layout of 0.4 (the caller then lets py3langid load it)."""
    from importlib.metadata import version

    from py3langid import langid, modelio  # loaded on use: py3langid is heavy or optional

    from bimine.diskcache import cached_arrays, file_digest

    src = str(langid.MODEL_DIR / langid.MODEL_FILE)
    key = f"py3langid model arrays v1; py3langid {version('py3langid')}; model {src} sha256 {file_digest(src)}"
    a = cached_arrays("py3langid-model", key, lambda: _decompressed(src))
    return langid.LanguageIdentifier(a["ptc"], a["pc"], a["classes"].tolist(), modelio._to_array(a["nextmove"]),
                                     a["out_feat"].tolist(), tk_row=modelio._to_array(a["nextmove_row"]))


def _decompressed(src: str) -> dict:
    """The arrays of py3langid's model file (npz inside LZMA), read through a temporary file."""
    import lzma
    import shutil
    import tempfile

    import numpy as np

    with tempfile.TemporaryFile() as raw:
        with lzma.open(src) as z:
            shutil.copyfileobj(z, raw, length=1 << 20)
        raw.seek(0)
        with np.load(raw, allow_pickle=False) as data:
            return {name: data[name] for name in _MODEL_ARRAYS}


_MAGIC = (b"\x1f\x8b", b"\xfd7zXZ\x00", b"BZh", b"\x28\xb5\x2f\xfd")
_WHOLE_FILE_BYTES = 1 << 21  # plain files up to 2 MB are read whole; larger ones by seeking
_HEAD_BYTES = 1 << 20  # compressed files: only the first 1 MB of text is read
_MAX_LINE_BYTES = 1 << 16


def _usable(line: str, column: int | None, min_letters: int) -> str | None:
    if column is not None:
        cells = line.split("\t")
        if len(cells) < column:
            return None
        line = cells[column - 1]
    line = line.strip()[:400]
    letters = sum(ch.isalpha() for ch in line)
    if letters < min_letters and not line.isascii():  # a vowel sign or virama is part of its word
        letters += sum(not ch.isalpha() and is_mark(ord(ch)) for ch in line)
    if letters < min_letters:
        return None
    return line


def _spread(items: Sequence, n: int) -> list:
    """``n`` items evenly spaced over ``items`` (all of them when there are fewer)."""
    if len(items) <= n:
        return list(items)
    return [items[(2 * i + 1) * len(items) // (2 * n)] for i in range(n)]


def _decode(raw: bytes) -> str:
    return raw.rstrip(b"\r\n").decode("utf-8", errors="replace")


def _skip_line(f) -> None:
    """Read on to the start of the next line."""
    while (piece := f.readline(_MAX_LINE_BYTES)) and not piece.endswith(b"\n"):
        pass


def _read_sample(path: str, n: int) -> list[str]:
    """Lines of the file ``path``: evenly spread over a plain file (about 4n seeks, so the cost
    does not grow with the file), or from the first 1 MB of text of a compressed one."""
    with open(path, "rb") as f:
        compressed = f.read(6).startswith(_MAGIC)
        size = os.fstat(f.fileno()).st_size
        if not compressed:
            if size <= _WHOLE_FILE_BYTES:
                f.seek(0)
                return [_decode(x) for x in f.read().split(b"\n")]
            lines = []
            after = 0  # where the line after the last one sampled starts: each line is sampled once, however
            for i in range(4 * n):  # many seeks land in it (a file of two long lines gave 200 "sampled lines")
                at = i * size // (4 * n)
                if at <= after:
                    f.seek(after)
                else:
                    f.seek(at)
                    _skip_line(f)  # the rest of a line cut by the seek
                raw = f.readline(_MAX_LINE_BYTES)
                if not raw:
                    break
                if not raw.endswith(b"\n"):
                    _skip_line(f)  # a line longer than the sample takes of it
                after = f.tell()
                lines.append(_decode(raw))
            return lines
    g = open_binary(path)
    try:
        head = g.read(_HEAD_BYTES)
    finally:
        g.close()
    parts = head.split(b"\n")
    if len(head) == _HEAD_BYTES and len(parts) > 1:
        parts = parts[:-1]  # a line cut at the end of the head
    return [_decode(x) for x in parts]


def sample_lines(
    source: str | os.PathLike | Iterable[str], n: int = 200, *, column: int | None = None, min_letters: int = 10
) -> list[str]:
    """Up to ``n`` non-blank lines of ``source`` with at least ``min_letters`` letters (a
    letter's combining marks counted: a short Hindi line is as usable as an English one), for a
    quick look at a corpus without reading it all.

    ``source``: a file (plain: lines evenly spread over it, read by seeking; compressed:
    lines from its first 1 MB of text), a list of lines (evenly spread), or any other
    iterable of lines (the first ``20 n``). ``column``: 1-based TSV column to take. A stream
    (``-``, a pipe) is sampled from its one copy (:mod:`bimine.streams`), which the real read
    reads too; a missing or unreadable file gives ``[]``: the real read reports those.
    """
    if isinstance(source, (str, os.PathLike)):
        try:
            raw = _read_sample(readable_path(source), n)
        except Exception:  # missing, unreadable, corrupt: the real read reports it with a clear error
            return []
    elif isinstance(source, Sequence):
        raw = _spread(source, 4 * n)
    else:
        raw = list(itertools.islice(source, 20 * n))
    if any("\x00" in x for x in raw if isinstance(x, str)):
        return []  # a binary or UTF-16 file: no language to judge (the real read names the problem)
    usable = [u for u in (_usable(x, column, min_letters) for x in raw if isinstance(x, str)) if u]
    return _spread(usable, n)


def check_language(
    source: str | os.PathLike | Iterable[str],
    lang: str,
    *,
    sample: int = 200,
    column: int | None = None,
    name: str | None = None,
    min_lines: int = 20,
    max_declared: float = 0.1,
    min_other: float = 0.6,
) -> str | None:
    """A one-line warning when ``source`` is clearly not in ``lang``, else None.

    Identifies the language of up to ``sample`` lines (see :func:`sample_lines`: lines of
    at least 10 letters, vowel signs and other combining marks counted, evenly spread over a
    plain file, from the head of a compressed one) with py3langid, and warns only when both hold:

    - at most ``max_declared`` (10%) of them look like ``lang`` or a close relative that
      identifiers confuse it with (no/nb/nn/da/sv, hr/sr/bs, ms/id, Arabic or Chinese
      varieties, ...: see ``_RELATED_GROUPS``), so a mixed corpus with a fair share of
      ``lang`` passes;
    - at least ``min_other`` (60%) look like one other language (or its relatives).

    Nothing is said when fewer than ``min_lines`` (20) usable lines are found (tiny or
    very short-lined input), when ``lang`` is a language the identifier does not know
    (most ISO 639-3 languages: there is nothing to compare with), for the special codes
    ``mul``/``und``/``zxx``/``mis``, or when py3langid is missing. Costs the identifier's
    load (about 0.5 s, once per process) plus a few milliseconds; the file is never read
    whole. Raises :class:`ConfigError` for an invalid ``lang``.

    The message reads ``news.de: declared 'fr' but 92% of 200 sampled lines look like 'de'
    (German)``; ``name`` replaces the file name (default: the path, or ``<lines>``).
    Callers print or log it.
    """
    declared = normalize_lang(lang)
    if declared in NON_LANGUAGE_CODES:
        return None
    lines = sample_lines(source, sample, column=column)
    if len(lines) < min_lines:
        return None
    try:
        classify, labels = _identify()
    except ImportError:
        return None
    known = set()
    for label in labels:
        if is_lang_code(label):
            known.add(normalize_lang(label))
    accepted = related_languages(declared)
    if not accepted & known:
        return None
    found: list[str] = []
    for line in lines:
        label = classify(line)
        if is_lang_code(label) and normalize_lang(label) not in NON_LANGUAGE_CODES:
            found.append(normalize_lang(label))
    if len(found) < min_lines:
        return None
    same = sum(1 for c in found if c in accepted)
    if same > max_declared * len(found):
        return None
    by_group: Counter[str] = Counter(language_group(c) for c in found if c not in accepted)
    if not by_group:
        return None
    key, count = by_group.most_common(1)[0]
    if count < min_other * len(found):
        return None
    top = Counter(c for c in found if language_group(c) == key).most_common(1)[0][0]
    label = f"{top!r}" + (f" ({language_name(top)})" if language_name(top) else "")
    where = name or (str(source) if isinstance(source, (str, os.PathLike)) else "<lines>")
    return f"{where}: declared {lang!r} but {round(100 * count / len(found))}% of {len(found)} sampled lines look like {label}"


def _where(source, option: str | None = None) -> str:
    """How a warning names ``source``: its path; sentences given in memory by the option of their
    language (``src_lang``: "the src sentences"), else ``<lines>``."""
    if isinstance(source, (str, os.PathLike)):
        return str(source)
    return f"the {option.removesuffix('_lang')} sentences" if option and option.endswith("_lang") else "<lines>"


def language_warning_line(source, lang: str, option: str, *, column: int | None = None) -> str | None:
    """``warning: <check_language's message>; is <option> right?``, or None."""
    msg = check_language(source, lang, column=column, name=_where(source, option))
    return f"warning: {msg}; is {option} right?" if msg else None


def _myanmar(line: str) -> bool:
    return sum(0x1000 <= ord(ch) <= 0x109F for ch in line) >= 5


def zawgyi_warning_line(source, *, column: int | None = None, sample: int = 200, min_lines: int = 20,
                        share: float = 0.5, name: str | None = None) -> str | None:
    """``warning: ...`` when most sampled Myanmar-script lines of ``source`` are written in the
    Zawgyi font encoding rather than Unicode (:func:`bimine.text.zawgyi.is_zawgyi`), else None.
    The encoders read each Zawgyi line as its Unicode text, but the output keeps the text as it
    was read, so the user learns that it is Zawgyi (the NTREX Myanmar set is 99.9 % Zawgyi, the
    recipe's Burmese 0.25 %; docs/decisions.md, issue 56). Nothing is said for fewer than
    ``min_lines`` Myanmar lines. ``name`` replaces the file name (as in :func:`check_language`)."""
    lines = [x for x in sample_lines(source, sample, column=column, min_letters=5) if _myanmar(x)]
    if len(lines) < min_lines:
        return None
    zawgyi = sum(map(is_zawgyi, lines))
    if zawgyi <= share * len(lines):
        return None
    where = name or _where(source)
    return (f"warning: {where}: {round(100 * zawgyi / len(lines))}% of {len(lines)} sampled Myanmar lines are in the "
            "Zawgyi font encoding, not Unicode; the models read each Zawgyi line as its Unicode text (ICU's "
            "Zawgyi-my transform), but the output keeps the text as written")


class LanguageChecks:
    """Check each ``(source, lang, option, column)`` (:func:`language_warning_line`) in a
    background thread while the job starts its real work; each warning goes to ``warn`` as
    soon as it is known, and leaving the block waits for the checks (unless the block failed).

    Loading the language identifier's model costs ~0.4 s, mostly LZMA decompression, which
    releases the GIL: in the background it overlaps with loading and running the encoder
    instead of adding to the job's wall time (docs/benchmarks.md §3).
    """

    def __init__(self, checks: list[tuple[str | os.PathLike | Sequence[str], str, str, int | None]], warn=None) -> None:
        self._checks = checks
        self._warn = warn or log.warning
        self._thread = threading.Thread(target=self._run, name="bimine-language-check", daemon=True)

    def _run(self) -> None:
        for source, lang, option, column in self._checks:
            try:
                msg = language_warning_line(source, lang, option, column=column)
            except Exception as e:  # the main work reports problems with the input itself
                log.debug(f"language check of {source} skipped: {e}")
                continue
            if msg:
                self._warn(msg)
            try:
                msg = zawgyi_warning_line(source, column=column, name=_where(source, option))
            except Exception as e:
                log.debug(f"encoding check of {source} skipped: {e}")
                continue
            if msg:
                self._warn(msg)

    def __enter__(self) -> LanguageChecks:
        # what the checks import is imported here, beside the job's own imports: only reading
        # the identifier's model (the slow part) is left to the thread
        import_before_thread("py3langid", "py3langid.langid", "py3langid.modelio", "bimine.diskcache", "email.parser",
                             "myanmartools")
        self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self._thread.join()
