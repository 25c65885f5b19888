"""Store the default model's per-language dev figures with it (``languages.json`` beside its weights).

    python -m benchmarks.model_languages     # reads docs/results/xsim-full.md, writes bimine/models/default/languages.json

For each language: the shipped model's NTREX-128 xsim error (the mean over that language's NTREX
sets, e.g. zho_Hans/zho_Hant/yue for zh), its UD PUD xsim error where there is a set, and the
training pairs, as measured by ``python -m benchmarks.xsim`` and recorded in
docs/results/xsim-full.md (re-run that to re-measure). Commands read it to say how well the
model serves a language (``bimine.encoders.languages``).
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(REPO, "docs", "results", "xsim-full.md")
OUT = os.path.join(REPO, "bimine", "models", "default", "languages.json")
ROW = re.compile(r"^\| (ntrex|pud) \| [^|]*\((\w+)\) \| ([\d,]+) \| [\d.]+ \| ([\d.]+) \| [\d.]+ \|$")


def main() -> None:
    from bimine import load_encoder

    sets: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    pairs: dict[str, int] = {}
    with open(TABLE, encoding="utf-8") as f:
        for line in f:
            m = ROW.match(line.strip())
            if m:
                kind, lang, n, err = m.group(1), m.group(2), int(m.group(3).replace(",", "")), float(m.group(4))
                sets[lang][kind].append(err)
                pairs[lang] = n
    langs = {lang: {"ntrex_xsim": round(sum(v["ntrex"]) / len(v["ntrex"]), 2) if v["ntrex"] else None,
                    "pud_xsim": round(sum(v["pud"]) / len(v["pud"]), 2) if v["pud"] else None,
                    "train_pairs": pairs[lang]} for lang, v in sorted(sets.items())}
    doc = {"model_id": load_encoder("default").model_id, "source": "docs/results/xsim-full.md (python -m benchmarks.xsim)",
           "measure": "xsim error in % against English, both directions, ratio margin k=4; NTREX-128 and UD PUD",
           "languages": langs}
    with open(OUT + ".tmp", "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(OUT + ".tmp", OUT)
    print(f"wrote {OUT}: {len(langs)} languages")


if __name__ == "__main__":
    main()
