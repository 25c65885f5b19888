"""A ``bimine mine`` run as one config object and the library function that runs it (issue 45).

The command builds a :class:`MineJob` from its options and hands it to :func:`run_mine`; the
Python API takes the same object::

    from bimine.mining.job import MineJob, run_mine
    from bimine.mining.spec import MineConfig

    report = run_mine(MineJob(src="news.fr", tgt="news.en", output="pairs.tsv", src_lang="fr",
                              tgt_lang="en", mine=MineConfig(threshold=1.85)))
    print(report.summary())

:func:`run_mine` loads the model (``auto`` chooses; a language the model serves poorly is
said once), the rescorer and the calibration head when asked, expands glob patterns, checks
the inputs' languages in the background, and runs
:func:`~bimine.mining.pipeline.mine_files`, which checks the output, work folder, format,
index and inputs before any work. Warnings go to ``warn`` (a function of one line; default:
the log).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

from bimine.embed import resolve_workers
from bimine.encoders.base import Encoder
from bimine.encoders.languages import load_for_languages, resolve_lang
from bimine.errors import OptionError
from bimine.index.faiss_index import IndexConfig
from bimine.mining.pipeline import MineReport, expand_inputs, mine_files
from bimine.mining.spec import MineConfig, MineJob
from bimine.scoring.calibration import Calibration
from bimine.scoring.rescore import load_rescorer
from bimine.streams import reading_once
from bimine.text.langcheck import LanguageChecks
from bimine.text.sameness import same_input_warning

log = logging.getLogger(__name__)

# the scores whose values are bounded, so that a threshold outside the bounds keeps no pair (or every one):
# a cosine is in [-1, 1] and the distance margin, a cosine less a mean of cosines, in [-2, 2]; ratio,
# eq9 and eq10 divide by a neighbourhood mean that can be near 0, so they have no bound
SCORE_RANGES = {"absolute": (-1.0, 1.0), "distance": (-2.0, 2.0)}
PROBABILITY = (0.0, 1.0)  # the rescorer's score


def check_threshold(score: str, threshold: float | None, rescore: str | None) -> None:
    """Refuse a threshold that no pair's score can reach, or that every one passes: outside
    [0, 1] with ``rescore`` (the rescorer's probability is the score), outside ``score``'s range
    (:data:`SCORE_RANGES`) without. ``bimine mine --rescore trees --threshold 1.85`` (an eq9 cut)
    wrote 0 pairs without a word."""
    if threshold is None:
        return
    if rescore is not None:
        lo, hi = PROBABILITY
        if not lo <= threshold <= hi:
            raise OptionError(f"--threshold {threshold:g}: with --rescore the threshold applies to the rescorer's "
                              f"probability, between {lo:g} and {hi:g}, so {threshold:g} would keep "
                              f"{'no pair' if threshold > hi else 'every pair'} (margin cuts such as eq9's 1.85 are "
                              "for mining without --rescore; docs/rescoring.md gives the rescorer's)")
        return
    if score in SCORE_RANGES:
        lo, hi = SCORE_RANGES[score]
        if not lo <= threshold <= hi:
            raise OptionError(f"--threshold {threshold:g}: the {score} score lies between {lo:g} and {hi:g}, so "
                              f"{threshold:g} would keep {'no pair' if threshold > hi else 'every pair'}; give a "
                              f"threshold in that range (or another --score)")


def check_index_options(factory: str, *, nprobe: bool, k_factor: bool) -> None:
    """Refuse index options that the index ``factory`` would ignore: ``nprobe`` (given) without
    IVF lists to probe, ``k_factor`` (given) without a ``Refine(...)`` / ``RFlat`` stage to
    re-score with. ``auto`` chooses by size an index that may have both, so it takes both."""
    from bimine.index.faiss_index import nlist_of

    if factory == "auto":
        return
    if nprobe and not nlist_of(factory):
        raise OptionError(f"--nprobe: the index {factory!r} has no IVF lists to probe, so --nprobe would be ignored; "
                          "drop it, or give an IVF index (e.g. IVF4096,SQ8 or --index auto)")
    if k_factor and "Refine(" not in factory and "RFlat" not in factory:
        raise OptionError(f"--k-factor: the index {factory!r} has no Refine(...) stage, so --k-factor would be "
                          "ignored; drop it, or give an index that re-scores (e.g. IVF4096,PQ128x4fs,Refine(SQfp16))")


@dataclass
class MineModels:
    """What a mining run loads before it reads a line: the encoder (``auto`` chosen), the mining
    settings (the rescorer's trained threshold put in), the rescorer and the calibration head."""

    encoder: Encoder
    cfg: MineConfig
    rescorer: object | None
    calibration: Calibration | None


def load_mine_models(model: str, langs: list[str | None], cfg: MineConfig, *, rescore: str | None = None,
                     trained_threshold: bool = False, confidence: bool = False, calibration: str | None = None,
                     warn: Callable[[str], None]) -> MineModels:
    """Check the settings that need no input (threshold, index options), then load what a run
    needs: the part of :func:`run_mine` that in-memory mining (:mod:`bimine.mining.memory`) shares."""
    if trained_threshold and rescore is None:
        raise OptionError("--threshold trained is the rescorer's threshold: use it with --rescore")
    check_threshold(cfg.score, cfg.threshold, rescore)
    index = cfg.index
    check_index_options(index.factory, nprobe=index.nprobe != IndexConfig.nprobe,
                        k_factor=index.k_factor != IndexConfig.k_factor)
    encoder = load_for_languages(model, langs, "mine", warn=warn)
    rescorer = None
    if rescore is not None:
        rescorer = load_rescorer(rescore, encoder)
        if trained_threshold:
            cfg = replace(cfg, threshold=rescorer.threshold)
    if calibration is not None and not confidence:
        raise OptionError("--calibration is used with --confidence")
    cal = Calibration.for_encoder(encoder, calibration) if confidence else None
    return MineModels(encoder, cfg, rescorer, cal)


@reading_once
def run_mine(job: MineJob, *, warn: Callable[[str], None] | None = None) -> MineReport:
    """Mine ``job``; returns the run's :class:`~bimine.mining.pipeline.MineReport`."""
    warn = warn or log.warning
    m = load_mine_models(job.model, [job.src_lang, job.tgt_lang], job.mine, rescore=job.rescore,
                         trained_threshold=job.trained_threshold, confidence=job.confidence,
                         calibration=job.calibration, warn=warn)
    encoder = m.encoder
    src_files, tgt_files = expand_inputs(job.src), expand_inputs(job.tgt)
    same = same_input_warning(src_files, tgt_files, "every line would pair with itself, which says nothing about "
                              "translations")
    if same:
        warn(same)
    checks = [(src_files[0], job.src_lang, "--src-lang", None), (tgt_files[0], job.tgt_lang, "--tgt-lang", None)]
    resolved = replace(job, src=src_files, tgt=tgt_files, src_lang=resolve_lang(encoder, job.src_lang, "--src-lang"),
                       tgt_lang=resolve_lang(encoder, job.tgt_lang, "--tgt-lang"), mine=m.cfg,
                       workers=resolve_workers(job.workers))
    with LanguageChecks([c for c in checks if c[1] is not None], warn=warn):
        return mine_files(resolved, encoder=encoder, calibration=m.calibration, rescorer=m.rescorer)
