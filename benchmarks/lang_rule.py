"""The language rule's two scores on dev data: how many genuine lines each keeps at 0.5 and how
many lines in another language it lets through (docs/decisions.md, "Language score").

    python -m benchmarks.lang_rule

The first 2,000 lines of tatoeba-test en-fr and newstest2012 en-fr/en-de, each declared as
its own language (genuine) and as each of the other two (wrong); "probability" is
py3langid's probability of the declared language (relatives included), "pairwise" that over
itself plus the most likely other language (bimine's default).
"""

from __future__ import annotations

import itertools
import os
import sys

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "dev")


def _lines(path: str, n: int = 2000) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in itertools.islice(f, n)]


def main() -> int:
    if not os.path.isdir(DATA):
        print(f"skipped: {DATA} not found (the shared dev data)")
        return 0
    from bimine.filtering.langid import language_scores

    sets = {"tatoeba-test fr": ("tatoeba-test/tatoeba-test.en-fr.fr", "fr"),
            "tatoeba-test en": ("tatoeba-test/tatoeba-test.en-fr.en", "en"),
            "newstest2012 fr": ("newstest/newstest2012.en-fr.fr", "fr"),
            "newstest2012 de": ("newstest/newstest2012.en-de.de", "de"),
            "newstest2012 en": ("newstest/newstest2012.en-fr.en", "en")}
    print("| lines | declared as | kept at 0.5: probability | kept at 0.5: pairwise |")
    print("|---|---|---:|---:|")
    for name, (path, lang) in sets.items():
        texts = _lines(os.path.join(DATA, path))
        for decl in ("en", "fr", "de"):
            p = language_scores(texts, decl)
            q = language_scores(texts, decl, pairwise=True)
            tag = "genuine" if decl == lang else "wrong"
            print(f"| {name} | {decl} ({tag}) | {100 * (p >= 0.5).mean():.2f} % | {100 * (q >= 0.5).mean():.2f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
