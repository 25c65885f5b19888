"""The noise generators of the filtering dev benchmark (benchmarks/filter_noise.py) on hand-made
lines: each type makes what it says, never the clean pair, and the same seed gives the same set."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from benchmarks.filter_noise import (
    BOILERPLATE,
    NOISE_TYPES,
    build_mixture,
    change_numbers,
    make_noise,
    misaligned,
    numbers,
    partial,
    unrelated,
    untranslated,
    wrong_language,
)

SRC = [f"Sentence number {w} of the English side talks about the {w} topic today." for w in
       ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")] * 8
TGT = [f"La phrase {w} du côté français parle aujourd'hui du sujet {w} en {1990 + k} avec {k + 2} amis."
       for k, w in enumerate(("un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf", "dix") * 8)]
DE = [f"Der deutsche Satz Nummer {k} spricht heute über ein Thema." for k in range(len(SRC))]
ES = [f"La frase española número {k} habla hoy de un tema." for k in range(len(SRC))]
# unique lines, so that "another line" is always another sentence
SRC = [f"{s} (line {k})" for k, s in enumerate(SRC)]
TGT = [f"{t} (ligne {k})" for k, t in enumerate(TGT)]


def rng(seed: int = 0) -> random.Random:
    return random.Random(seed)


def test_changed_numbers_differ_only_in_digits():
    text = "In 2013, 1,400 people paid 2.50 euros; 7 of them twice."
    for seed in range(50):
        out = change_numbers(text, rng(seed))
        assert out is not None and out != text and len(out) == len(text)
        for a, b in zip(text, out):
            assert a == b or (a.isdigit() and b.isdigit())
        # a number of several digits never starts with a 0 it did not have
        assert not re.search(r"(?<!\d)0\d", out)
    assert change_numbers("no digits here", rng()) is None


def test_numbers_pair_keeps_the_source_and_changes_the_target():
    p = numbers(SRC, TGT, 3, rng())
    assert p.src == SRC[3] and p.tgt != TGT[3] and p.label == "numbers"
    assert re.sub(r"\d", "#", p.tgt) == re.sub(r"\d", "#", TGT[3])


def test_misaligned_takes_a_neighbour_target():
    for seed in range(20):
        p = misaligned(SRC, TGT, 5, rng(seed))
        j = TGT.index(p.tgt)
        assert p.src == SRC[5] and j != 5 and abs(j - 5) <= 2
    # at the ends, only the neighbours that exist
    assert TGT.index(misaligned(SRC, TGT, 0, rng()).tgt) in (1, 2)


def test_partial_cuts_or_merges():
    kinds = Counter()
    for seed in range(60):
        p = partial(SRC, TGT, 4, rng(seed))
        if p is None:
            continue
        kinds[p.detail] += 1
        if p.detail == "target cut":
            assert p.src == SRC[4] and TGT[4].startswith(p.tgt)
            n, k = len(TGT[4].split()), len(p.tgt.split())
            assert 0.3 * n - 1 <= k <= 0.7 * n + 1 and k < n
        elif p.detail == "source holds two sentences":
            assert p.src == SRC[4] + " " + SRC[5] and p.tgt == TGT[4]
        else:
            assert p.src == SRC[4] and p.tgt == TGT[4] + " " + TGT[5]
    assert set(kinds) == {"target cut", "source holds two sentences", "target holds two sentences"}
    # a short target cannot be cut, the last line cannot be merged with the next
    short = ["one two three"] * 2
    assert all(partial(short, short, 1, rng(s)) is None for s in range(20))


def test_wrong_language_is_the_same_line_in_another_language():
    p = wrong_language(SRC, TGT, 7, rng(), {"de": DE, "es": ES})
    assert p.src == SRC[7] and p.tgt in (DE[7], ES[7]) and p.detail in ("de", "es")
    # a line that reads the same in every language (a name) gives no wrong-language noise
    same = {"de": ["Barack Obama"], "es": ["Barack Obama"]}
    assert wrong_language(["Barack Obama"], ["Barack Obama"], 0, rng(), same) is None


def test_untranslated_copies_the_source():
    details = Counter()
    for seed in range(60):
        p = untranslated(SRC, TGT, 2, rng(seed))
        details[p.detail] += 1
        assert p.src == SRC[2] and p.tgt != TGT[2]
        if p.detail == "exact copy":
            assert p.tgt == SRC[2]
        elif p.detail == "copy with one word dropped":
            assert len(p.tgt.split()) == len(SRC[2].split()) - 1
        else:
            assert p.tgt.casefold().strip("- .") in SRC[2].casefold()
    assert len(details) >= 4
    # a pair whose target already is the source (a name) is not made noise
    assert untranslated(["Reuters"], ["Reuters"], 0, rng()) is None


def test_unrelated_is_far_and_of_similar_length():
    src = [f"source line {k}" for k in range(300)]
    tgt = [("x" * (40 + k % 7)) + f" {k}" for k in range(300)]
    for seed in range(20):
        p = unrelated(src, tgt, 150, rng(seed))
        j = tgt.index(p.tgt)
        assert abs(j - 150) >= 50 and 0.8 * len(tgt[150]) <= len(p.tgt) <= 1.2 * len(tgt[150])
    assert unrelated(src[:40], tgt[:40], 5, rng()) is None  # nothing 50 lines away


def test_boilerplate_strings_and_pairs():
    assert all(len(row) == 4 and all(x.strip() for x in row) for row in BOILERPLATE)
    seen = Counter()
    for seed in range(200):
        p = make_noise("boilerplate", SRC, TGT, 0, rng(seed), tgt_lang="de")
        seen[p.detail] += 1
        assert p.label == "boilerplate" and p.line == -1
        if p.detail == "translated":
            assert (p.src, p.tgt) in {(r[0], r[2]) for r in BOILERPLATE}
        if p.detail == "mismatched":
            assert (p.src, p.tgt) not in {(r[0], r[2]) for r in BOILERPLATE}
    assert set(seen) == {"translated", "translated template", "mismatched", "menu bar"}


@pytest.mark.parametrize("kind", [t for t in NOISE_TYPES if t != "boilerplate"])
def test_no_generator_returns_the_clean_pair(kind):
    others = {"de": DE, "es": ES}
    for i in range(len(SRC)):
        for seed in range(3):
            p = make_noise(kind, SRC, TGT, i, rng(seed), others=others, tgt_lang="fr")
            if p is not None:
                assert (" ".join(p.src.split()).casefold(), " ".join(p.tgt.split()).casefold()) != \
                    (" ".join(SRC[i].split()).casefold(), " ".join(TGT[i].split()).casefold())
                assert p.label == kind and p.line == i


def test_mixture_is_deterministic_and_complete():
    others = {"de": DE, "es": ES}
    a = build_mixture(SRC, TGT, others=others, tgt_lang="fr", n_clean=20, n_per_type=5, seed=1)
    b = build_mixture(SRC, TGT, others=others, tgt_lang="fr", n_clean=20, n_per_type=5, seed=1)
    c = build_mixture(SRC, TGT, others=others, tgt_lang="fr", n_clean=20, n_per_type=5, seed=2)
    assert a == b and a != c
    counts = Counter(p.label for p in a)
    assert counts == {"clean": 20, **{t: 5 for t in NOISE_TYPES}}
    lines = [p.line for p in a if p.line >= 0]
    assert len(lines) == len(set(lines))  # a line is the source of at most one pair
    assert all((p.src, p.tgt) == (SRC[p.line], TGT[p.line]) for p in a if p.label == "clean")
    with pytest.raises(ValueError, match="numbers"):  # targets without digits: no numbers noise
        build_mixture(SRC, [re.sub(r"\d", "", t) for t in TGT], others=others, tgt_lang="fr",
                      n_clean=20, n_per_type=5, seed=0, types=("numbers",))


def test_mixture_keeps_the_share_of_lines_with_digits():
    n = 400  # a quarter of the lines hold a digit
    src = [f"Line {k} says something." if k % 4 == 0 else
           f"Sentence without a digit, variant {chr(65 + k % 26)}{chr(65 + k // 26)}." for k in range(n)]
    tgt = [s.replace("says something", "dit quelque chose").replace("Sentence without a digit", "Phrase sans chiffre")
           for s in src]
    de = [f"Deutsch {s}" for s in src]
    mix = build_mixture(src, tgt, others={"de": de}, tgt_lang="fr", n_clean=80, n_per_type=20, seed=0)
    share = Counter()
    for p in mix:
        if p.line >= 0:
            share[p.label] += any(ch.isdigit() for ch in src[p.line])
    assert share["clean"] == 20  # a quarter of the lines have a digit
    assert all(share[t] == 5 for t in ("misaligned", "partial", "wrong_lang", "untranslated", "unrelated"))
    assert share["numbers"] == 20
