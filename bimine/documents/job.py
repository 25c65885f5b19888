"""A ``bimine align`` run as one config object and the library function that runs it (issue 45).

Three forms, as the command has: one document pair (``src``, ``tgt``; ``output`` a file),
many (``batch``: a list of ``src<TAB>tgt[<TAB>name]``; ``output`` a folder), or the matched
documents of two collections (``doc_pairs``, the output of ``bimine docs match``, with
``src_docs`` and ``tgt_docs``; ``output`` a folder with ``index.tsv``)::

    from bimine.documents.job import AlignJob, run_align

    run_align(AlignJob(src="doc.en", tgt="doc.fr", output="doc.align", src_lang="en", tgt_lang="fr"))

A ``bimine docs match`` run is a :class:`DocsMatchJob`, run by :func:`run_docs_match`.

:func:`run_align` checks the outputs against the inputs, reads the batch list, loads the
model (saying once when it serves a language poorly), aligns and writes each pair; it says
what it did, a line a document, through ``say`` and warns through ``warn`` (functions of one
line; default: the log).
"""

from __future__ import annotations

import csv
import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from bimine.cleanup import sweep_leftovers, temp_prefix
from bimine.config import bounds, check_fields
from bimine.documents.align import Aligner, atomic_lines, write_aligned_tsv, write_alignment
from bimine.documents.beads import AlignConfig, Alignment
from bimine.documents.collections import read_collection
from bimine.documents.pipeline import DocMatchReport, match_documents
from bimine.documents.spec import DocsMatchJob
from bimine.encoders.languages import load_for_languages, resolve_lang
from bimine.encoders.user import hold_model
from bimine.errors import InputError, OptionError
from bimine.outputs import check_output_dir, check_output_file, shown
from bimine.progress import bar as progress_bar
from bimine.scoring.calibration import Calibration
from bimine.streams import reading_once
from bimine.text.io import read_lines
from bimine.text.sameness import same_input_warning
from bimine.text.sentences import get_splitter

log = logging.getLogger(__name__)
DEFAULT_METHOD = "two-pass"  # the better one on the dev sets (docs/documents.md)
SAME_DOCUMENT = "every line would align with itself, 1:1"


@dataclass
class AlignJob:
    """What to align, and how.

    Input: ``src`` and ``tgt`` (one sentence per line), or ``batch``, or ``doc_pairs`` with
    ``src_docs`` and ``tgt_docs``. ``tsv``: also the aligned text of the one pair there;
    ``tsv_all``: a ``.tsv`` beside each alignment of a batch. The search: ``method``
    (``two-pass`` or ``vecalign``), ``max_side`` (default 5 for two-pass, 4 for vecalign),
    ``max_total`` (default 6 for two-pass, vecalign's own 8), ``overlaps`` (``joined`` or
    ``sum``), ``length_weight`` (default :class:`~bimine.documents.beads.AlignConfig`'s),
    ``token_weight`` (two-pass: the score of a number or name both sides of a bead hold; default
    :class:`~bimine.documents.beads.AlignConfig`'s, 0 turns it off)."""

    output: str
    src: str | None = None
    tgt: str | None = None
    batch: str | None = None
    doc_pairs: str | None = None
    src_docs: str | None = None
    tgt_docs: str | None = None
    tsv: str | None = None
    tsv_all: bool = False
    src_lang: str | None = None
    tgt_lang: str | None = None
    model: str = "default"
    method: str = DEFAULT_METHOD
    max_side: int | None = field(default=None, metadata=bounds(min=1, max=10))
    max_total: int | None = field(default=None, metadata=bounds(min=2, max=20))
    overlaps: str = "joined"
    length_weight: float | None = field(default=None, metadata=bounds(min=0))
    token_weight: float | None = field(default=None, metadata=bounds(min=0))
    encoding_errors: str = "strict"
    progress: bool = True

    def __post_init__(self) -> None:
        hold_model(self)  # an encoder object given in Python: its name, the object kept
        check_fields(self)
        if self.token_weight is not None and self.method != "two-pass":
            raise OptionError("--token-weight goes with --method two-pass")
        if (self.batch is not None or self.doc_pairs is not None) and self.tsv is not None:
            raise OptionError("with --batch or --doc-pairs, use --tsv-all (a .tsv beside each alignment)")
        if self.tsv_all and self.batch is None and self.doc_pairs is None:
            raise OptionError("--tsv-all goes with --batch or --doc-pairs; for one pair use --tsv FILE")
        if self.doc_pairs is not None:
            if self.src is not None or self.tgt is not None or self.batch is not None:
                raise OptionError("--doc-pairs replaces SRC TGT and --batch")
            if self.src_docs is None or self.tgt_docs is None:
                raise OptionError("--doc-pairs needs --src-docs and --tgt-docs (the collections it matched)")
        elif self.src_docs is not None or self.tgt_docs is not None:
            raise OptionError("--src-docs and --tgt-docs go with --doc-pairs")
        elif self.batch is None and (self.src is None or self.tgt is None):
            raise OptionError("give SRC and TGT, or --batch LIST")
        elif self.batch is not None and (self.src is not None or self.tgt is not None):
            raise OptionError("give SRC and TGT, or --batch LIST, not both")

    def config(self) -> AlignConfig:
        """The search's :class:`~bimine.documents.beads.AlignConfig`, with the command's defaults."""
        kwargs = {} if self.length_weight is None else {"length_weight": self.length_weight}
        if self.token_weight is not None:
            kwargs["token_weight"] = self.token_weight
        max_side = self.max_side
        if max_side is None:  # runs of up to 5 sentences help the two-pass search (bleualign-dev +0.009)
            max_side = 5 if self.method == "two-pass" else 4
        max_total = self.max_total
        if max_total is None and self.method == "two-pass":
            max_total = 6  # with runs of 5: 1:5 and 5:1 beads
        if max_total is not None:  # vecalign's max_total, two-pass's pass2_total
            kwargs["max_total" if self.method == "vecalign" else "pass2_total"] = max_total
        return AlignConfig(max_side=max_side, overlaps=self.overlaps, method=self.method, **kwargs)


def aligner_for(job: AlignJob, warn: Callable[[str], None]) -> tuple[Aligner, str, str]:
    """The aligner of ``job`` and the language codes to encode with."""
    config = job.config()
    encoder = load_for_languages(job.model, [job.src_lang, job.tgt_lang], "align", warn=warn)
    return (Aligner(encoder, config), resolve_lang(encoder, job.src_lang, "--src-lang"),
            resolve_lang(encoder, job.tgt_lang, "--tgt-lang"))


def read_document(path: str, errors: str) -> list[str]:
    return list(read_lines(path, errors=errors))


def read_batch_list(path: str) -> list[tuple[str, str, str]]:
    """Rows ``src<TAB>tgt[<TAB>name]`` of a batch list; paths relative to the list's folder."""
    base = os.path.dirname(os.path.abspath(path))
    jobs, names = [], set()
    for no, line in enumerate(read_lines(path), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if len(cells) not in (2, 3) or not all(c.strip() for c in cells):
            raise InputError(f"{path}:{no}: expected 'src_file<TAB>tgt_file[<TAB>name]', got {line[:80]!r}")
        src, tgt = (c if os.path.isabs(c) else os.path.join(base, c) for c in cells[:2])
        name = cells[2] if len(cells) == 3 else os.path.basename(cells[0])
        if "/" in name or name in (".", ".."):
            raise InputError(f"{path}:{no}: the output name {name!r} must be a plain file name")
        if name in names:
            raise InputError(f"{path}:{no}: output name {name!r} is used twice; add a third column with unique names")
        names.add(name)
        for f in (src, tgt):
            if not os.path.isfile(f):
                raise InputError(f"{path}:{no}: {f} does not exist")
        jobs.append((src, tgt, name))
    if not jobs:
        raise InputError(f"{path}: lists no document pairs")
    return jobs


def read_doc_pairs(path: str) -> list[tuple[str, str]]:
    """(src_doc, tgt_doc) of every row of a 'docs match' output (a TSV with that header)."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(rows, None)
        if not header or "src_doc" not in header or "tgt_doc" not in header:
            raise InputError(f"{path}:1: expected a header with src_doc and tgt_doc (the output of 'bimine docs match')")
        a, b = header.index("src_doc"), header.index("tgt_doc")
        out = []
        for no, r in enumerate(rows, 2):
            if len(r) <= max(a, b):
                raise InputError(f"{path}:{no}: has {len(r)} column(s), the header {len(header)}")
            out.append((r[a], r[b]))
    return out


def summary(a, seconds: float) -> str:
    """One line on an alignment: lines, beads by kind, seconds."""
    ones = sum(1 for b in a.beads if len(b.src) == 1 and len(b.tgt) == 1)
    skips = sum(1 for b in a.beads if not b.src or not b.tgt)
    blanks = (f" ({a.blank_src} and {a.blank_tgt} blank, each its own cost-0 deletion/insertion)"
              if a.blank_src or a.blank_tgt else "")
    return (f"{a.n_src} source and {a.n_tgt} target lines{blanks}: {len(a.beads)} beads ({ones} 1:1, "
            f"{skips} insertions/deletions, {len(a.beads) - ones - skips} larger) in {seconds:.2f} s")


def no_text_warnings(a, src: str, tgt: str) -> list[str]:
    """A warning for each document with no text at all (empty or only blank lines): then
    nothing can align, every line of the other document is an insertion or deletion."""
    out = []
    for name, n, blank in ((src, a.n_src, a.blank_src), (tgt, a.n_tgt, a.blank_tgt)):
        if n == blank:
            what = "is empty" if n == 0 else f"has no text ({n} blank line{'s' if n != 1 else ''})"
            out.append(f"warning: {name} {what}: nothing is aligned, every line is an insertion or deletion")
    return out


def mostly_skipped_warning(a, src: str, tgt: str) -> str | None:
    """A warning when more than half of the text lines of both documents are insertions or
    deletions (documents that share little, or search settings under which every bead scores
    below a skip: e5-small with both the margin and the random baseline)."""
    skipped_src = sum(1 for b in a.beads if b.src and not b.tgt) - a.blank_src
    skipped_tgt = sum(1 for b in a.beads if b.tgt and not b.src) - a.blank_tgt
    text_src, text_tgt = a.n_src - a.blank_src, a.n_tgt - a.blank_tgt
    if text_src and text_tgt and 2 * skipped_src > text_src and 2 * skipped_tgt > text_tgt:
        return (f"warning: {skipped_src} of {text_src} text lines of {src} and {skipped_tgt} of {text_tgt} of {tgt} "
                "are insertions or deletions: the documents share little, or the search's settings leave no bead worth "
                "more than a skip")
    return None


# the unrelated-texts warning needs at least this many text lines in each document: what is "no closer than
# unrelated sentences" is the top 1% of the random pairs of the two documents, which a pair of 12-line
# documents (144 random pairs) cannot estimate (a correct 12-line ko-en pair was called unrelated, issue 72 §6)
UNRELATED_MIN_LINES = 20


def unrelated_warning(a, src: str, tgt: str) -> str | None:
    """A warning when more than half of the text lines of the two documents together are
    insertions, deletions or in beads no closer than unrelated sentences
    (:func:`bimine.documents.align.chance_lines`): two texts that are not translations of each
    other, which the search still aligns, bead by bead, with the best of chance pairs (doc.en
    against 120 shuffled lines of sample.fr: 15 of its 53 beads are insertions or deletions,
    and 154 of the 160 lines are at chance).
    :func:`mostly_skipped_warning` says it instead when most lines of both are skipped. Quiet
    when a document has fewer than :data:`UNRELATED_MIN_LINES` text lines: too few to judge."""
    text_src, text_tgt = a.n_src - a.blank_src, a.n_tgt - a.blank_tgt
    text = text_src + text_tgt
    if a.chance_lines is None or min(text_src, text_tgt) < UNRELATED_MIN_LINES or 2 * a.chance_lines <= text:
        return None
    return (f"warning: {a.chance_lines} of the {text} text lines of {src} and {tgt} are insertions, deletions or in beads "
            "whose sentences are no closer than unrelated ones (the top 1% of random sentence pairs of the two "
            "documents): the documents do not look like translations of each other")


@reading_once
def run_align(job: AlignJob, *, warn: Callable[[str], None] | None = None,
              say: Callable[[str], None] | None = None) -> int:
    """Align ``job``'s document pairs and write their beads; returns how many pairs."""
    warn = warn or log.warning
    say = say or log.info
    if job.doc_pairs is not None:
        return _align_doc_pairs(job, warn, say)
    if job.batch is None:
        check_output_file(job.output, inputs=(job.src, job.tgt))
        if job.tsv is not None:
            check_output_file(job.tsv, inputs=(job.src, job.tgt, job.output), option="--tsv")
        pairs = [(job.src, job.tgt, None)]
    else:
        pairs = read_batch_list(job.batch)
        check_output_dir(job.output, inputs=[job.batch] + [p for j in pairs for p in j[:2]])
        os.makedirs(job.output, exist_ok=True)
    sweep_leftovers(job.output, job.tsv)  # what runs killed by SIGKILL left
    for src_path, tgt_path, _ in pairs:
        same = same_input_warning(src_path, tgt_path, SAME_DOCUMENT)
        if same:
            warn(same)
    aligner, src_lang, tgt_lang = aligner_for(job, warn)
    bar = progress_bar(total=0, unit=" text", desc="embedding runs of sentences", enabled=job.progress)
    t_all = time.perf_counter()
    for src_path, tgt_path, name in pairs:
        t0 = time.perf_counter()
        s = read_document(src_path, job.encoding_errors)
        t = read_document(tgt_path, job.encoding_errors)
        a = aligner.align(s, t, src_lang, tgt_lang, progress=bar)
        out = job.output if name is None else os.path.join(job.output, name + ".align")
        write_alignment(out, a)
        if job.tsv is not None or job.tsv_all:
            write_aligned_tsv(job.tsv if name is None else os.path.join(job.output, name + ".tsv"), a, s, t)
        bar.clear()
        warn_about(a, src_path, tgt_path, warn)
        say(f"{name or shown(out)}: " + summary(a, time.perf_counter() - t0))
    bar.close()
    if len(pairs) > 1:
        say(f"{len(pairs)} document pairs aligned in {time.perf_counter() - t_all:.1f} s into {job.output}")
    return len(pairs)


def align_in_memory(job: AlignJob, src: list[str], tgt: list[str], *, warn: Callable[[str], None]) -> Alignment:
    """One document pair held in memory (``job.src`` / ``job.tgt`` name the sides in warnings),
    aligned as :func:`run_align` aligns a pair of files: the same beads, the same warnings."""
    if src == tgt and src:
        warn(f"warning: {job.src} and {job.tgt} hold the same sentences: {SAME_DOCUMENT}")
    aligner, src_lang, tgt_lang = aligner_for(job, warn)
    with progress_bar(total=0, unit=" text", desc="embedding runs of sentences", enabled=job.progress,
                      force=job.progress) as bar:
        a = aligner.align(src, tgt, src_lang, tgt_lang, progress=bar)
    warn_about(a, job.src, job.tgt, warn)
    return a


def warn_about(a: Alignment, src: str, tgt: str, warn: Callable[[str], None]) -> None:
    """The warnings of one aligned pair: sides with no text, and an alignment mostly skipped or no
    closer than unrelated sentences."""
    for line in no_text_warnings(a, src, tgt):
        warn(line)
    skipped = mostly_skipped_warning(a, src, tgt) or unrelated_warning(a, src, tgt)
    if skipped:
        warn(skipped)


def _align_doc_pairs(job: AlignJob, warn, say) -> int:
    """Align the sentences of each matched document pair (``docs match`` output)."""
    check_output_dir(job.output, inputs=(job.doc_pairs, job.src_docs, job.tgt_docs))
    pairs = read_doc_pairs(job.doc_pairs)
    same = same_input_warning(job.src_docs, job.tgt_docs, "every document would align with itself")
    if same:
        warn(same)
    aligner, src_lang, tgt_lang = aligner_for(job, warn)
    split = get_splitter()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=temp_prefix("align")) as tmp:
        cols = []
        for name, path, lang in (("src", job.src_docs, src_lang), ("tgt", job.tgt_docs, tgt_lang)):
            cols.append(read_collection(path, os.path.join(tmp, f"{name}.txt"),
                                        split=lambda text, _lang=lang: split(text, _lang), errors=job.encoding_errors))
        sidx, tidx = cols[0].index_of(), cols[1].index_of()
        _check_pair_ids(job, pairs, sidx, tidx)  # every id, before the output folder is made
        os.makedirs(job.output, exist_ok=True)
        sweep_leftovers(job.output)  # what runs killed by SIGKILL left
        index = ["file\tsrc_doc\ttgt_doc\tsrc_sentences\ttgt_sentences\tbeads"]
        mostly_skipped = []
        with progress_bar(total=len(pairs), unit=" pair", desc="aligning", enabled=job.progress) as bar:
            for n, (sd, td) in enumerate(pairs, 1):
                s, t = cols[0].sentences(sidx[sd]), cols[1].sentences(tidx[td])
                a = aligner.align(s, t, src_lang, tgt_lang)
                name = f"pair-{n:05d}"
                write_alignment(os.path.join(job.output, name + ".align"), a)
                if mostly_skipped_warning(a, sd, td) or unrelated_warning(a, sd, td):
                    mostly_skipped.append(name)
                if job.tsv_all:
                    write_aligned_tsv(os.path.join(job.output, name + ".tsv"), a, s, t)
                clean = [x.replace("\t", " ") for x in (sd, td)]
                index.append(f"{name}.align\t{clean[0]}\t{clean[1]}\t{len(s)}\t{len(t)}\t{len(a.beads)}")
                bar.update(1)
    atomic_lines(os.path.join(job.output, "index.tsv"), index)
    if mostly_skipped:
        warn(f"warning: in {len(mostly_skipped)} of {len(pairs)} document pairs more than half of the lines are "
             "insertions, deletions or beads no closer than unrelated sentences: they do not look like translations of "
             f"each other (the first: {', '.join(mostly_skipped[:3])})")
    say(f"{len(pairs)} document pairs aligned in {time.perf_counter() - t0:.1f} s into {job.output} "
        f"(index.tsv lists them)")
    return len(pairs)


def _check_pair_ids(job: AlignJob, pairs: list[tuple[str, str]], sidx: dict, tidx: dict) -> None:
    """Refuse ``--doc-pairs`` naming a document the collections do not hold: the first such
    line and how many there are."""
    bad = [(n, sd, td) for n, (sd, td) in enumerate(pairs, 1) if sd not in sidx or td not in tidx]
    if not bad:
        return
    n, sd, td = bad[0]
    side, doc = ("source", sd) if sd not in sidx else ("target", td)
    more = f" ({len(bad):,} of {len(pairs):,} pairs name a missing document)" if len(bad) > 1 else ""
    raise InputError(f"{job.doc_pairs}:{n + 1}: {side} document {doc!r} is not in "
                     f"{job.src_docs if side == 'source' else job.tgt_docs}{more}")


@reading_once
def run_docs_match(job: DocsMatchJob, *, warn: Callable[[str], None] | None = None) -> DocMatchReport:
    """Match ``job``'s collections and write the document pairs; returns the run's report."""
    warn = warn or log.warning
    same = same_input_warning(job.src, job.tgt, "every document would match itself, which says nothing about "
                              "translations")
    if same:
        warn(same)
    encoder = load_for_languages(job.model, [job.src_lang, job.tgt_lang], "docs match", warn=warn)
    cal = None
    if job.match.method in ("eq3", "two-stage"):
        cal = Calibration.for_encoder(encoder, job.calibration)
    splitter = get_splitter() if job.splitter is None else get_splitter(job.splitter)
    resolved = replace(job, src_lang=resolve_lang(encoder, job.src_lang, "--src-lang"),
                       tgt_lang=resolve_lang(encoder, job.tgt_lang, "--tgt-lang"))
    return match_documents(resolved, encoder=encoder, calibration=cal, splitter=splitter)
