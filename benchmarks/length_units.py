"""Length units of scripts written without spaces against English words (issue 42).

    python -m benchmarks.length_units [--pairs 1997]

For the NTREX-128 languages written without spaces (and a few with spaces, for reference), the
median ratio of the target's length units to the English source's words, and the share of the
genuine translations that the default ``length_ratio`` rule (longer / shorter > 3) and
``max_length`` (> 200 units) would reject: with the units of ``bimine.filtering.rules.length_units``
and with one unit per character of those scripts (the rule before issue 42). A second table does
the same for scripts written with spaces whose words hold combining marks, against words cut at
each mark (the units before issue 56's fix). A third gives the word tokens of the pair models
(``bimine.scoring.ibm.words``: the IBM aligner, the divergence models, VDPWI) per English word,
in token version 1 (words cut at each mark) and 2 (``bimine.text.tokens``). Skips when the shared
data is absent.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from benchmarks.filter_cut import read_gz
from benchmarks.filter_dev import DEFAULT_DATA

LANGS = ("khm", "tha", "lao", "mya", "bod", "zho_Hans", "zho_Hant", "jpn", "kor", "fra", "deu", "rus")
# scripts written with spaces whose words hold combining marks (vowel signs, viramas, vowel marks)
MARKED = ("hin", "mar", "nep", "ben", "guj", "pan", "tam", "tel", "kan", "mal", "sin", "urd", "fas", "arb", "heb",
          "amh", "fra", "deu", "rus")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--pairs", type=int, default=1997)
    args = ap.parse_args()
    d = os.path.join(args.data, "dev", "ntrex128", "NTREX-128")
    if not os.path.isdir(d):
        print(f"length_units: skipped, {d} not found")
        return
    from bimine.filtering.rules import _NO_SPACE_RE, _WORD_RE, length_units

    def per_char(s: str) -> int:
        rest, n = _NO_SPACE_RE.subn(" ", s)
        return n + len(_WORD_RE.findall(rest))

    def marks_cut(s: str) -> int:  # before issue 56's fix: a word ends at each combining mark
        rest, n = _NO_SPACE_RE.subn(" ", s)
        return -(-n // 6) + len(_WORD_RE.findall(rest)) if n else len(_WORD_RE.findall(rest))

    en = read_gz(os.path.join(d, "newstest2019-src.eng.txt.gz"))[:args.pairs]
    ew = np.array([length_units(s) for s in en], dtype=float)
    print("| NTREX-128 | pairs | units / English words (median) | fail length_ratio 3 | fail max_length 200 | "
          "one unit per character: ratio | fail length_ratio 3 | fail max_length 200 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    table(d, en, ew, LANGS, (length_units, per_char))
    print()
    print("| NTREX-128 | pairs | units / English words (median) | fail length_ratio 3 | fail max_length 200 | "
          "words cut at each mark: ratio | fail length_ratio 3 | fail max_length 200 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    table(d, en, ew, MARKED, (length_units, marks_cut))
    print()
    from bimine.scoring.ibm import words

    print("| NTREX-128 | pair-model word tokens per English word, version 1 | version 2 |")
    print("|---|---:|---:|")
    en_words = sum(len(words(s)) for s in en)
    for code in MARKED + LANGS[:4]:
        path = os.path.join(d, f"newstest2019-ref.{code}.txt.gz")
        if os.path.exists(path):
            tgt = read_gz(path)[:len(en)]
            print(f"| {code} | " + " | ".join(f"{sum(len(words(s, version=v)) for s in tgt) / en_words:.2f}"
                                            for v in (1, 2)) + " |")


def table(d: str, en: list[str], ew: np.ndarray, langs, counts) -> None:
    """One row a language: each count's median units over English words and the shares of the
    genuine pairs that length_ratio 3 and max_length 200 reject."""
    for code in langs:
        path = os.path.join(d, f"newstest2019-ref.{code}.txt.gz")
        if not os.path.exists(path):
            continue
        tgt = read_gz(path)[:len(en)]
        cells = []
        for count in counts:
            u = np.array([count(s) for s in tgt], dtype=float)
            ratio = np.maximum(u, ew) / np.maximum(np.minimum(u, ew), 1)
            cells += [f"{np.median(u / np.maximum(ew, 1)):.2f}", f"{100 * (ratio > 3).mean():.1f} %",
                      f"{100 * (np.maximum(u, ew) > 200).mean():.1f} %"]
        print(f"| {code} | {len(tgt)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
