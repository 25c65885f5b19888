"""What the subword pieces (``features.subwords``) cost the featuriser: SentencePiece on each
sentence against the pieces kept per word, in one run.

Usage: python -m benchmarks.subword_pieces [--model FOLDER] [--vocab 16000] [--repeats 3]
                                           [--data ../shared/data] [--json OUT]

The vocabulary is the one of ``--model`` (a model trained with ``features.subwords``), else a
throw-away ``--vocab``-piece SentencePiece model trained here, as ``bimine train`` trains it
(``bimine.text.subwords``), on 2,000 lines of each of the first 60 Bible translations of
``train/bible-sword/matrix``. The features are the shipped default model's (its
``FeatureConfig``, with the hash buckets made room for the pieces).

Inputs as in ``benchmarks.embed_throughput``: tatoeba.en (100,000 lines), bible.en (40,000),
ntrex.ru (1,997 lines, 5 times). For each, single-threaded featuriser lines/s (best of
``--repeats``, after a warm-up pass that fills the word cache):

- ``no pieces``: the hashed n-grams alone (the shipped default);
- ``sentence cut``: the n-grams, then SentencePiece on each normalised sentence and the two
  merged (how the pieces were added before the word cache);
- ``word cache``: the featuriser now (each word cut once, its pieces kept).

Also the features per sentence with and without the pieces (the DAN's pooling cost grows with
them), and the share of sentences whose word-by-word pieces differ from SentencePiece's cut of
the whole sentence (ties between equally scored cuts of a word). Skips (exit 0) when the data
folder is absent.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import os
import sys
from dataclasses import replace

import numpy as np

from benchmarks.harness import timed, write_json
from bimine.encoders import load_encoder
from bimine.text.features import Featurizer
from bimine.text.normalize import append_rows, normalize_text
from bimine.text.subwords import flatten, from_tensors, train_model

INPUTS = {
    "tatoeba.en": ("train/tatoeba-manythings/tatoeba.en-fr.en.gz", "en", 100_000, 1),
    "bible.en": ("train/bible-sword/pairs/bible.en-de.en.gz", "en", 40_000, 1),
    "ntrex.ru": ("dev/ntrex128/NTREX-128/newstest2019-ref.rus.txt.gz", "ru", 2_000, 5),
}


def read(data: str, path: str, n: int) -> list[str]:
    with gzip.open(os.path.join(data, path), "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in itertools.islice(f, n)]


def throwaway_vocab(data: str, size: int) -> bytes:
    folder = os.path.join(data, "train/bible-sword/matrix")
    sample = []
    for name in sorted(f for f in os.listdir(folder) if f.endswith(".txt.gz"))[:60]:
        for line in read(data, os.path.join("train/bible-sword/matrix", name), 2_000):
            t = normalize_text(line.strip(), True)
            if t:
                sample.append(t)
    return train_model(sample, size)


def sentence_cut(ngrams: Featurizer, f: Featurizer, sentences: list[str], lang: str):
    """The featuriser before the word cache: ``ngrams`` (``f``'s features without the pieces),
    then SentencePiece on each whole sentence."""
    ids, off = ngrams.featurize(sentences, lang)
    cfg = f.config
    norm = [normalize_text(s[: cfg.max_chars], cfg.lowercase) for s in sentences]
    ids2, off2 = flatten(f.pieces.processor.encode(norm, out_type=int))
    return append_rows(ids, off, np.arange(len(sentences)), ids2 + cfg.buckets, off2)


def rate(fn, sentences: list[str], lang: str, repeats: int, batch: int = 2048) -> float:
    """Lines/s of ``fn`` over ``sentences`` in batches, the fastest of ``repeats`` passes."""

    def one_pass() -> None:
        for i in range(0, len(sentences), batch):
            fn(sentences[i : i + batch], lang)

    return len(sentences) / timed(one_pass, repeat=repeats)[1]["wall_min_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="a model folder trained with features.subwords")
    ap.add_argument("--vocab", type=int, default=16_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.data, "train/bible-sword/matrix")):
        print(f"{args.data}: no train/bible-sword (pass --data); skipped", file=sys.stderr)
        return
    if args.model:
        from safetensors.numpy import load_file

        enc = load_encoder(args.model)
        cfg = enc.featurizer.config
        vocab = from_tensors(load_file(os.path.join(args.model, "model.safetensors")))
        if vocab is None:
            raise SystemExit(f"{args.model}: not a model with features.subwords")
        base = replace(cfg, subwords=0)
    else:
        base = load_encoder("default").featurizer.config
        vocab = throwaway_vocab(args.data, args.vocab)
        cfg = replace(base, buckets=base.buckets - args.vocab, subwords=args.vocab)
    plain = Featurizer(base)
    pieces = Featurizer(cfg, subword_model=vocab)
    ngrams = Featurizer(replace(cfg, subwords=0))  # the same buckets as ``pieces``, no pieces
    rows = []
    for name, (path, lang, n, times) in INPUTS.items():
        xs = read(args.data, path, n) * times
        for fn in (plain.featurize, pieces.featurize):
            fn(xs[:20_000], lang)  # warm-up: compiled kernels, the word cache
        with_p = pieces.featurize(xs[:5_000], lang)
        old = sentence_cut(ngrams, pieces, xs[:5_000], lang)
        differ = sum(not np.array_equal(with_p[0][with_p[1][i]:with_p[1][i + 1]], old[0][old[1][i]:old[1][i + 1]])
                     for i in range(len(with_p[1]) - 1))
        r = {"input": name, "lines": len(xs),
             "no pieces": rate(plain.featurize, xs, lang, args.repeats),
             "sentence cut": rate(lambda s, la: sentence_cut(ngrams, pieces, s, la), xs, lang, args.repeats),
             "word cache": rate(pieces.featurize, xs, lang, args.repeats),
             "features/sentence": round(float(np.diff(plain.featurize(xs[:5_000], lang)[1]).mean()), 1),
             "with pieces": round(float(np.diff(with_p[1]).mean()), 1),
             "cut differs": f"{differ} of {len(with_p[1]) - 1}"}
        rows.append(r)
        print(f"  {name}: {r}", file=sys.stderr, flush=True)
    vocab_name = f"{args.model} ({cfg.subwords:,} pieces)" if args.model else f"throw-away, {args.vocab:,} pieces"
    print(f"vocabulary: {vocab_name}; featuriser lines/s, one thread, best of {args.repeats}\n")
    print("| input | no pieces | sentence cut | word cache | features/sentence | with pieces | word cut differs |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['input']} | {r['no pieces']:,.0f} | {r['sentence cut']:,.0f} | {r['word cache']:,.0f} | "
              f"{r['features/sentence']} | {r['with pieces']} | {r['cut differs']} |")
    if args.json:
        write_json(args.json, {"vocabulary": vocab_name, "rows": rows})


if __name__ == "__main__":
    main()
