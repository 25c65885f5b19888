"""``--adapt`` (issue 73): before a job runs, adapt the fast model to each side whose language it
serves poorly, on a sample of that side, and run the job on the adapted model.

``bimine mine``, ``align``, ``score``, ``filter`` and ``docs match`` take ``--adapt``. Their command
builds one :class:`Side` per input side (its language and a way to read its sentences) and calls
:func:`adapt_sides`, which

1. keeps the model as it is when it serves every side's language by its stored dev figures
   (:func:`bimine.encoders.languages.poorly_served`), saying so;
2. otherwise, for each poorly served language, takes the side's sample (the ``sample`` distinct
   sentences with the smallest SHA-1: the same whatever the order of the input), writes it beside
   the adapted folder, and runs :func:`bimine.training.adapt.adapt_model` on it (the base
   model the first time, the previous result for a second language), with a sample of the other
   side as the pivot where the model serves that side (or has just been adapted to it): the
   teacher pairs the two samples' sentences, and the paired ones learn to land on the other
   side's vectors (:mod:`bimine.training.adapt_targets`);
3. then, where that other side's language is one the model serves, adapts the model (the result of
   2) to it too, on those pivot lines (:func:`_adapt_pivot_side`): the teacher has embedded them
   already, so it costs training alone, and the served side's lines the weak side is mined against
   land where the teacher puts them (Khmer mined among 25,000 English: F1 0.891 -> 0.921, e5-small
   0.921; docs/benchmarks.md, "Issue 73, seventh round"). English, the served side, gets the share of its own
   vectors that a language without a dev figure gets (:func:`bimine.training.adapt.own_weight_for`: 0.2), as measured;
4. returns the folder to run the job with and one line saying what was adapted and what it cost.

The adapted folder is named by the base model's id, the language and the sample's content: a rerun
on the same input finds it and reuses it (seconds), an input that changed gets a folder of its own.
It lives in ``<work dir>/adapted`` when the command has a work folder, else in the bimine cache
folder (``$BIMINE_CACHE_DIR``, ``~/.cache/bimine``) under ``adapted``.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bimine.diskcache import cache_dir
from bimine.encoders import load_encoder
from bimine.encoders.languages import describe, poorly_served
from bimine.errors import OptionError
from bimine.langs import normalize_lang
from bimine.outputs import atomic_path, shown
from bimine.training.adapt import AdaptJob, AdaptReport, adapt_model, require_teacher
from bimine.training.samples import line_hash, sample_lines
from bimine.weights import read_json, write_json

log = logging.getLogger(__name__)

ADAPT_SAMPLE = 20_000  # sentences a side, as `bimine adapt --sample`
FOLDER = "adapted"
#: AdaptJob's settings for ``--adapt`` beyond its defaults (none: the command's own; tests make it small)
SETTINGS: dict = {}


@dataclass
class Side:
    """One input side of a job: ``name`` (as the summary shows it), ``lang`` (as given, or None),
    ``option`` (the option that gives it, for the error when it is missing) and ``lines``, a
    function that reads the side's sentences afresh each time it is called."""

    name: str
    lang: str | None
    option: str
    lines: Callable[[], Iterable[str]] = field(repr=False)


@dataclass
class SideAdaptation:
    """What :func:`adapt_sides` did: the model to run the job with (``-m``), the adaptations made
    or reused (in order), and the one line that says so."""

    model: str
    reports: list[AdaptReport]
    summary: str


def adaptation_root(work_dir: str | None) -> Path:
    """Where the adapted models of a job live: ``<work_dir>/adapted``, else the cache folder's."""
    if work_dir:
        return Path(work_dir) / FOLDER
    root = cache_dir()
    if root is None:
        raise OptionError("--adapt keeps the adapted model in --work-dir or in the bimine cache folder, which "
                          "BIMINE_CACHE_DIR=off turns off: give --work-dir (or unset BIMINE_CACHE_DIR)")
    return Path(root) / FOLDER


def _check(model: str, sides: list[Side]):
    """The base encoder, after the refusals that cost nothing: a model that cannot be adapted, a
    side without its language, no teacher or no PyTorch."""
    base = "default" if model == "auto" else model
    enc = load_encoder(base)
    if not hasattr(enc, "featurizer") or getattr(enc, "adapters", None) is None:
        raise OptionError(f"--adapt: -m {model} is not one of bimine's fast models, the only ones adapted; "
                          "drop --adapt, or use -m default (or a folder of 'bimine adapt')")
    for s in sides:
        if s.lang is None:
            raise OptionError(f"--adapt needs {s.option}: the language of {s.name} decides whether and what to adapt")
    return base, enc


#: in the adapted folders' names: a folder made by an earlier version of the adaptation (2: the pivot
#: sampled to --adapt-sample, where version 1 cut it to the weak side's sample; 3: a Zawgyi Burmese
#: side trained as its Unicode text, where version 2 trained rows that encoding never read; 4: the pivot
#: the fast model's nearest lines to the sample, where version 3 took a hashed sample; 5: targets blended
#: with the model's own vectors, whose job key a version-4 folder of the same name would refuse; 6: the
#: job keyed by the pivot file's digest, not by the lines taken from it, and the targets' share of the
#: model's own vectors chosen by the language's dev figure) is never reused
FOLDER_VERSION = 6


def _enough(side: Side, sample: list[str]) -> None:
    if len(sample) < 10:
        raise OptionError(f"--adapt: {side.name} has {len(sample)} distinct non-empty sentences; adapting needs "
                          "at least 10")


def _write_sample(root: Path, key: str, lang: str, lines: Iterable[str]) -> Path:
    """``lines`` written as ``<root>/<lang>-<key>.txt``, unless that file is there already."""
    path = root / f"{lang}-{key}.txt"
    if not path.is_file():
        root.mkdir(parents=True, exist_ok=True)
        with atomic_path(str(path)) as tmp, open(tmp, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.writelines(t + "\n" for t in lines)
    return path


def _sample_key(*parts, lines: Iterable[str] = ()) -> str:
    h = hashlib.sha256("|".join(str(p) for p in (FOLDER_VERSION,) + parts).encode())
    for t in lines:
        h.update(line_hash(t))
    return h.hexdigest()[:16]


def _pivot_file(root: Path, enc, lang: str, sample: list[str], other: Side, other_lang: str, n: int,
                progress: bool) -> tuple[Path, dict]:
    """The pivot's sample (:mod:`bimine.training.pivot_sample`) written beside the adapted folders,
    keyed by the model, both languages, the weak side's sample and the other side's content: a
    rerun on the same input finds it without searching again."""
    from bimine.training.pivot_sample import guided_pivot, side_digest

    digest, total = side_digest(other.lines())
    key = _sample_key("pivot", enc.model_id, lang, other_lang, n, digest, lines=sample)
    path = root / f"{other_lang}-{key}.txt"
    told = root / f"{other_lang}-{key}.json"  # how its lines were taken, for the summary of a rerun
    if path.is_file() and told.is_file():
        return path, read_json(told, "pivot record")
    chosen, info = guided_pivot(enc, sample, lang, other.lines, other_lang, n, total=total, progress=progress)
    _enough(other, chosen)
    _write_sample(root, key, other_lang, chosen)
    write_json(told, info)
    return path, info


def adapt_sides(model: str, sides: list[Side], *, work_dir: str | None = None, sample: int = ADAPT_SAMPLE,
                progress: bool = True) -> SideAdaptation:
    """Adapt ``model`` (``auto``: the shipped model) to every language of ``sides`` that it
    serves poorly, on a sample of ``sample`` sentences of that side (module docstring); returns
    the model to run the job with. Refused before any work: a model that is not a fast (DAN)
    one, a side without its language, no teacher (``bimine[e5]``) or PyTorch."""
    t0 = time.monotonic()
    base, enc = _check(model, sides)
    langs = [normalize_lang(s.lang) for s in sides]
    weak = poorly_served(enc, langs)
    if not weak:
        served = " and ".join(dict.fromkeys(langs))
        return SideAdaptation(base, [], f"--adapt: nothing to adapt, the model serves {served} well (its stored "
                                        "dev figures)")
    require_teacher("--adapt")
    root = adaptation_root(work_dir)
    weak_langs = {lang for lang, _ in weak}
    current, current_id, reports, done = base, enc.model_id, [], set()
    pivots: list[dict | None] = []
    for side, lang in zip(sides, langs):
        if lang not in weak_langs or lang in done:
            continue
        pivot = next(((s, other) for s, other in zip(sides, langs) if other != lang
                      and (other not in weak_langs or other in done)), None)
        lines, _ = sample_lines(side.lines(), sample)
        _enough(side, lines)
        piv_path, piv_info = (_pivot_file(root, load_encoder(current), lang, lines, pivot[0], pivot[1], sample,
                                          progress) if pivot else (None, None))
        path = _write_sample(root, _sample_key(current_id, lang, sample, piv_path.name if piv_path else "",
                                               sorted(SETTINGS.items()), lines=lines), lang, lines)
        out = path.with_suffix("")
        shared = str(out) + ".teacher" if pivot and pivot[1] not in weak_langs else None  # for step 3
        job = AdaptJob(text=str(path), lang=lang, output=str(out), model=current, sample=len(lines),
                       progress=progress, source=side.name, pivot=str(piv_path) if piv_path else None,
                       pivot_sample=sample, pivot_lang=pivot[1] if pivot else "en", teacher_cache=shared,
                       **SETTINGS)
        report = adapt_model(job)
        reports.append(report)
        pivots.append(piv_info)
        done.add(lang)
        current = str(out)
        current_id = load_encoder(current).model_id
        if shared:  # the served side learns the pivot lines the teacher has just embedded
            report = _adapt_pivot_side(root, current, current_id, pivot, piv_path, shared, sample, progress)
            reports.append(report)
            pivots.append({"pivot_side": True})
            current = report.output
            current_id = load_encoder(current).model_id
    return SideAdaptation(current, reports, _summary(weak, reports, pivots, time.monotonic() - t0))


def _adapt_pivot_side(root: Path, model: str, model_id: str, pivot: tuple[Side, str], piv_path: Path,
                      teacher_cache: str, sample: int, progress: bool) -> AdaptReport:
    """``model`` adapted to the pivot side's language on its pivot lines (all of them: the file holds
    at most ``sample``; no fragments: the teacher's vectors of the lines are in ``teacher_cache``
    already, from the weak side's pairing), in a folder named by the model and the pivot file; the
    shared cache is removed once the folder is written."""
    side, lang = pivot
    out = root / f"{lang}-{_sample_key('pivot-side', model_id, lang, piv_path.name, sorted(SETTINGS.items()))}"
    job = AdaptJob(text=str(piv_path), lang=lang, output=str(out), model=model, sample=sample,
                   progress=progress, source=side.name, teacher_cache=teacher_cache, **{**SETTINGS, "fragments": False})
    report = adapt_model(job)
    shutil.rmtree(teacher_cache, ignore_errors=True)
    return report


def _summary(weak, reports: list[AdaptReport], pivots: list[dict | None], seconds: float) -> str:
    parts = []
    for r, info in zip(reports, pivots):
        rec = r.record
        how = (f"reused (made earlier in {rec['seconds']:.0f} s)" if r.reused else f"{rec['seconds']:.0f} s")
        piv = rec.get("pivot")
        chosen = _pivot_words(piv, info)
        paired = f", {piv['paired']:,} of them paired by the teacher with the {piv['lang']} side{chosen}" if piv else ""
        if info and info.get("pivot_side"):
            again = rec.get("teacher_embedded", 0)
            vectors = ("the teacher's vectors of the pairing, no new ones" if not again else
                       f"the teacher embedded {again:,} of them again: the pairing's were gone")
            parts.append(f"then {rec['lang']} on those {rec['sample'] + rec.get('heldout_lines', 0):,} lines of "
                         f"{rec['text']} ({vectors}, {rec['steps']} steps): {how}")
            continue
        parts.append(f"{rec['lang']} on {rec['sample'] + rec.get('heldout_lines', 0):,} sentences of "
                     f"{rec['text']} ({rec['fragments']:,} fragments, {rec['steps']} steps{paired}): {how}")
    return (f"--adapt: the model serves {describe(weak)} poorly; adapted {'; '.join(parts)}; "
            f"{seconds:.0f} s in all; the job runs on {shown(reports[-1].output)}")


def _pivot_words(piv: dict | None, info: dict | None) -> str:
    """How the pivot's lines were taken, for the summary (nothing where the other side was taken whole)."""
    if not (piv and info and info["guided"]):
        return ""
    near = info.get("nearest", piv["sample"])
    if near >= piv["sample"]:
        return f" (its {piv['sample']:,} lines of {info['lines']:,} nearest the sample by the fast model)"
    return (f" (its {piv['sample']:,} lines of {info['lines']:,}: {near:,} nearest the sample by the fast model, "
            f"the rest a hashed sample)")
