"""How well a student model reproduces its teacher, on the text it was distilled on and on test text.

    python -m benchmarks.teacher_fit --model runs/abl56b-prose1k/model --prose ../data/prose3k-w3 \
        --cache ../data/vocab/teacher-cache --sets hau,pus,som,amh,kor,ben,deu

For each NTREX-128 language of ``--sets``: the first ``--n`` sentences of that language's list in
a ``bimine data prose`` folder (text the student's prose distillation could have seen; their
teacher vectors read from ``--cache``) and the first ``--n`` sentences of its NTREX reference
(news the student never saw; e5-small's vectors computed here with the ``-m e5-small`` runtime).
For each, the student's vector of every sentence is searched among the teacher's vectors of the
same sentences: "P@1" is the share whose nearest teacher vector (inner product) is the teacher's
vector of the same sentence, "cos" the mean cosine between the two vectors of a sentence. The
student and the teacher have different spaces, so cos is low everywhere; P@1 says whether the
student puts a sentence where the teacher puts it relative to the others. A high P@1 on the
prose and a low one on NTREX means the student fits its distillation text but does not carry
the teacher's knowledge over to other text of the language (coverage, not the pull's strength).
"""

from __future__ import annotations

import argparse
import gzip
import os
import time

import numpy as np

from benchmarks.xsim import ntrex_sets, read_set


def fit(student: np.ndarray, teacher: np.ndarray) -> tuple[float, float]:
    """(mean cosine, P@1 of each student vector's nearest teacher vector being its own)."""
    a = student / np.linalg.norm(student, axis=1, keepdims=True)
    b = teacher / np.linalg.norm(teacher, axis=1, keepdims=True)
    cos = float(np.mean(np.sum(a * b, axis=1)))
    p1 = float(np.mean(np.argmax(a @ b.T, axis=1) == np.arange(len(a))))
    return cos, p1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="the student (a model folder)")
    ap.add_argument("--prose", required=True, help="a 'bimine data prose' folder")
    ap.add_argument("--cache", required=True, help="the teacher cache holding the prose's vectors")
    ap.add_argument("--sets", required=True, help="NTREX set names, comma-separated (hau,pus,deu,...)")
    ap.add_argument("--n", type=int, default=500, help="sentences of each side (default 500)")
    ap.add_argument("--data", default="../shared/data")
    args = ap.parse_args()

    from bimine import load_encoder
    from bimine.training.distill import TeacherCache
    from bimine.training.words import word_teacher

    student = load_encoder(args.model)
    teacher = word_teacher("auto", 64)
    cache = TeacherCache(args.cache, teacher)
    sets = {s[0]: s for s in ntrex_sets(args.data)}
    print(f"student {args.model}, teacher {teacher.model_id} ({type(teacher).__name__}), {args.n} sentences a side")
    print("| set | lang | prose P@1 | prose cos | NTREX P@1 | NTREX cos |")
    print("|---|---|---:|---:|---:|---:|")
    t0 = time.time()
    for name in args.sets.split(","):
        if name not in sets:
            raise SystemExit(f"--sets: {name} is not an NTREX set here")
        _, lang, en_file, xx_file = sets[name]
        path = os.path.join(args.prose, "prose", f"{lang}.tsv.gz")
        with gzip.open(path, "rt", encoding="utf-8") as f:
            prose = [line.rstrip("\n") for line in f if line.strip()][: args.n]
        pc, pp = fit(student.encode(prose, lang), cache.embed(prose).astype(np.float32))
        _, xx = read_set(en_file, xx_file)
        news = xx[: args.n]
        nc, np1 = fit(student.encode(news, lang), teacher.encode(news, lang))
        print(f"| {name} | {lang} ({len(prose)}) | {pp:.3f} | {pc:.3f} | {np1:.3f} | {nc:.3f} |", flush=True)
    print(f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
