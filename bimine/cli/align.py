"""``bimine align``: align the sentences of a document pair (or of many, with one loaded model)."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import os
import time

import click

from bimine.cli.main import MODEL_CHOICES_HELP, Finite, check_lang_option, cli, load_model, resolve_lang

MODEL_HELP = MODEL_CHOICES_HELP
DEFAULT_METHOD = "two-pass"  # the better one on the dev sets (docs/documents.md)


def _read_document(path: str, errors: str) -> list[str]:
    from bimine.text.io import read_lines

    return list(read_lines(path, errors=errors))


def _read_batch_list(path: str) -> list[tuple[str, str, str]]:
    """Rows ``src<TAB>tgt[<TAB>name]`` of a batch list; paths relative to the list's folder."""
    from bimine.errors import InputError
    from bimine.text.io import read_lines

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


def _aligner(model: str, src_lang, tgt_lang, max_side: int, max_total: int | None, overlaps: str, length_weight,
             method: str = "vecalign"):
    """The aligner of the command's options, and the language codes to encode with."""
    from bimine.documents.align import AlignConfig, Aligner

    kwargs = {} if length_weight is None else {"length_weight": length_weight}
    if max_side is None:  # runs of up to 5 sentences help the two-pass search (bleualign-dev +0.009)
        max_side = 5 if method == "two-pass" else 4
    if max_total is None and method == "two-pass":
        max_total = 6  # with runs of 5: 1:5 and 5:1 beads
    if max_total is not None:  # vecalign's max_total, two-pass's pass2_total
        kwargs["max_total" if method == "vecalign" else "pass2_total"] = max_total
    config = AlignConfig(max_side=max_side, overlaps=overlaps, method=method, **kwargs)
    encoder = load_model(model, [src_lang, tgt_lang], "align")
    return (Aligner(encoder, config), resolve_lang(encoder, src_lang, "--src-lang"),
            resolve_lang(encoder, tgt_lang, "--tgt-lang"))


def _summary(a, seconds: float) -> str:
    ones = sum(1 for b in a.beads if len(b.src) == 1 and len(b.tgt) == 1)
    skips = sum(1 for b in a.beads if not b.src or not b.tgt)
    blanks = (f" ({a.blank_src} and {a.blank_tgt} blank, each its own cost-0 deletion/insertion)"
              if a.blank_src or a.blank_tgt else "")
    return (f"{a.n_src} source and {a.n_tgt} target lines{blanks}: {len(a.beads)} beads ({ones} 1:1, "
            f"{skips} insertions/deletions, {len(a.beads) - ones - skips} larger) in {seconds:.2f} s")


def _warn_no_text(a, src: str, tgt: str) -> None:
    """A one-line warning when a document has no text at all (empty or only blank lines): then
    nothing can align, every line of the other document is an insertion or deletion."""
    for name, n, blank in ((src, a.n_src, a.blank_src), (tgt, a.n_tgt, a.blank_tgt)):
        if n == blank:
            what = "is empty" if n == 0 else f"has no text ({n} blank line{'s' if n != 1 else ''})"
            click.echo(f"warning: {name} {what}: nothing is aligned, every line is an insertion or deletion",
                       err=True)


@cli.command()
@click.argument("src", required=False, type=str)
@click.argument("tgt", required=False, type=str)
@click.option("--src-lang", default=None, callback=check_lang_option,
              help="Language of the source document (needed only by models whose features depend on it).")
@click.option("--tgt-lang", default=None, callback=check_lang_option, help="Language of the target document.")
@click.option("-o", "--output", required=True, type=click.Path(),
              help="Beads, one per line '[i,j]:[k]:cost' (0-based lines; with --batch: a folder).")
@click.option("--tsv", "tsv", type=click.Path(), default=None,
              help="Also write the aligned text to this TSV file (src_lines, tgt_lines, cost, src, tgt).")
@click.option("--tsv-all", is_flag=True, help="With --batch or --doc-pairs: also a .tsv of the aligned text "
              "beside each alignment.")
@click.option("--batch", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Align many pairs: a file of lines 'src_file<TAB>tgt_file[<TAB>name]'; -o is then a folder "
                   "that gets NAME.align for each line.")
@click.option("--doc-pairs", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Align matched documents: the output of 'bimine docs match' (src_doc, tgt_doc columns), with "
                   "--src-docs and --tgt-docs; -o is then a folder that gets pair-NNNNN.align and index.tsv.")
@click.option("--src-docs", type=str, default=None, help="With --doc-pairs: the source collection.")
@click.option("--tgt-docs", type=str, default=None, help="With --doc-pairs: the target collection.")
@click.option("-m", "--model", default="default", show_default=True, help=MODEL_HELP)
@click.option("--max-side", type=click.IntRange(1, 10), default=None,
              help="Most sentences on one side of a bead (default: 5 for two-pass, 4 for vecalign).")
@click.option("--max-total", type=click.IntRange(2, 20), default=None,
              help="Most sentences in a bead, both sides together (default: 6 for two-pass, 8 for vecalign).")
@click.option("--method", type=click.Choice(["two-pass", "vecalign"]), default=DEFAULT_METHOD, show_default=True,
              help="two-pass: Bertalign's anchors then many-to-many beads around them (docs/documents.md); "
                   "vecalign: Vecalign's cost and its down-sampled search.")
@click.option("--overlaps", type=click.Choice(["joined", "sum"]), default="joined", show_default=True,
              help="Embed joined runs of sentences, or sum sentence embeddings (no extra encoding: for slow models).")
@click.option("--length-weight", type=Finite(min=0), default=None,
              help="Weight of the length prior (default 0.6, the best on the dev sets: docs/documents.md; 0 = Vecalign's cost).")
@click.option("--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict", show_default=True,
              help="On invalid UTF-8: stop with an error, or replace with U+FFFD.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
def align(src, tgt, src_lang, tgt_lang, output, tsv, tsv_all, batch, doc_pairs, src_docs, tgt_docs, model, max_side,
          max_total, method, overlaps, length_weight, encoding_errors, no_progress) -> None:
    """Align the sentences (one per line) of the document SRC with those of its translation TGT
    (or of many pairs: --batch, or --doc-pairs with the output of 'bimine docs match').

    Writes one bead per line: '[3,4]:[5]:0.21' aligns source lines 3 and 4 (0-based) with
    target line 5; '[]:[6]' and '[7]:[]' are an insertion and a deletion. Every line of both
    files is in exactly one bead, in order.
    """
    from bimine.cleanup import sweep_leftovers
    from bimine.documents.align import write_aligned_tsv, write_alignment
    from bimine.outputs import check_output_dir, check_output_file

    if (batch is not None or doc_pairs is not None) and tsv is not None:
        raise click.UsageError("with --batch or --doc-pairs, use --tsv-all (a .tsv beside each alignment)")
    if tsv_all and batch is None and doc_pairs is None:
        raise click.UsageError("--tsv-all goes with --batch or --doc-pairs; for one pair use --tsv FILE")
    if doc_pairs is not None:
        if src is not None or tgt is not None or batch is not None:
            raise click.UsageError("--doc-pairs replaces SRC TGT and --batch")
        if src_docs is None or tgt_docs is None:
            raise click.UsageError("--doc-pairs needs --src-docs and --tgt-docs (the collections it matched)")
        _align_doc_pairs(doc_pairs, src_docs, tgt_docs, output, tsv_all, src_lang, tgt_lang, model,
                         max_side, max_total, overlaps, length_weight, encoding_errors, no_progress, method)
        return
    if src_docs is not None or tgt_docs is not None:
        raise click.UsageError("--src-docs and --tgt-docs go with --doc-pairs")
    if batch is None:
        if src is None or tgt is None:
            raise click.UsageError("give SRC and TGT, or --batch LIST")
        check_output_file(output, inputs=(src, tgt))
        if tsv is not None:
            check_output_file(tsv, inputs=(src, tgt, output), option="--tsv")
        jobs = [(src, tgt, None)]
    else:
        if src is not None or tgt is not None:
            raise click.UsageError("give SRC and TGT, or --batch LIST, not both")
        jobs = _read_batch_list(batch)
        check_output_dir(output, inputs=[batch] + [p for j in jobs for p in j[:2]])
        os.makedirs(output, exist_ok=True)
    sweep_leftovers(output, tsv)  # what runs killed by SIGKILL left
    aligner, src_lang, tgt_lang = _aligner(model, src_lang, tgt_lang, max_side, max_total, overlaps, length_weight,
                                           method)
    from bimine.progress import bar as progress_bar

    bar = progress_bar(total=0, unit=" text", desc="embedding runs of sentences", enabled=not no_progress)
    t_all = time.perf_counter()
    for src_path, tgt_path, name in jobs:
        t0 = time.perf_counter()
        s = _read_document(src_path, encoding_errors)
        t = _read_document(tgt_path, encoding_errors)
        a = aligner.align(s, t, src_lang, tgt_lang, progress=bar)
        out = output if name is None else os.path.join(output, name + ".align")
        write_alignment(out, a)
        if tsv is not None or tsv_all:
            write_aligned_tsv(tsv if name is None else os.path.join(output, name + ".tsv"), a, s, t)
        bar.clear()
        _warn_no_text(a, src_path, tgt_path)
        click.echo(f"{name or out}: " + _summary(a, time.perf_counter() - t0), err=True)
    bar.close()
    if len(jobs) > 1:
        click.echo(f"{len(jobs)} document pairs aligned in {time.perf_counter() - t_all:.1f} s into {output}", err=True)


def _read_doc_pairs(path: str) -> list[tuple[str, str]]:
    """(src_doc, tgt_doc) of every row of a 'docs match' output (a TSV with that header)."""
    import csv

    from bimine.errors import InputError

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


def _align_doc_pairs(doc_pairs, src_docs, tgt_docs, output, tsv, src_lang, tgt_lang, model, max_side, max_total,
                     overlaps, length_weight, encoding_errors, no_progress, method="vecalign") -> None:
    """Align the sentences of each matched document pair (``docs match`` output)."""
    import tempfile

    from bimine.cleanup import sweep_leftovers, temp_prefix
    from bimine.documents.align import write_aligned_tsv, write_alignment
    from bimine.documents.collections import read_collection
    from bimine.errors import InputError
    from bimine.outputs import check_output_dir
    from bimine.progress import bar as progress_bar
    from bimine.text.sentences import get_splitter

    check_output_dir(output, inputs=(doc_pairs, src_docs, tgt_docs))
    pairs = _read_doc_pairs(doc_pairs)
    aligner, src_lang, tgt_lang = _aligner(model, src_lang, tgt_lang, max_side, max_total, overlaps, length_weight,
                                           method)
    split = get_splitter()
    os.makedirs(output, exist_ok=True)
    t0 = time.perf_counter()
    sweep_leftovers(output)  # what runs killed by SIGKILL left
    with tempfile.TemporaryDirectory(prefix=temp_prefix("align")) as tmp:
        cols = []
        for name, path, lang in (("src", src_docs, src_lang), ("tgt", tgt_docs, tgt_lang)):
            cols.append(read_collection(path, os.path.join(tmp, f"{name}.txt"),
                                        split=lambda text, _lang=lang: split(text, _lang), errors=encoding_errors))
        sidx, tidx = cols[0].index_of(), cols[1].index_of()
        index = ["file\tsrc_doc\ttgt_doc\tsrc_sentences\ttgt_sentences\tbeads"]
        with progress_bar(total=len(pairs), unit=" pair", desc="aligning", enabled=not no_progress) as bar:
            for n, (sd, td) in enumerate(pairs, 1):
                if sd not in sidx or td not in tidx:
                    side, doc = ("source", sd) if sd not in sidx else ("target", td)
                    raise InputError(f"{doc_pairs}:{n + 1}: {side} document {doc!r} is not in "
                                     f"{src_docs if side == 'source' else tgt_docs}")
                s, t = cols[0].sentences(sidx[sd]), cols[1].sentences(tidx[td])
                a = aligner.align(s, t, src_lang, tgt_lang)
                name = f"pair-{n:05d}"
                write_alignment(os.path.join(output, name + ".align"), a)
                if tsv:
                    write_aligned_tsv(os.path.join(output, name + ".tsv"), a, s, t)
                clean = [x.replace("\t", " ") for x in (sd, td)]
                index.append(f"{name}.align\t{clean[0]}\t{clean[1]}\t{len(s)}\t{len(t)}\t{len(a.beads)}")
                bar.update(1)
    from bimine.documents.align import atomic_lines

    atomic_lines(os.path.join(output, "index.tsv"), index)
    click.echo(f"{len(pairs)} document pairs aligned in {time.perf_counter() - t0:.1f} s into {output} "
               f"(index.tsv lists them)", err=True)
