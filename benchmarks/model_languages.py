"""Store the default model's per-language dev figures with it (``languages.json`` beside its weights).

    python -m benchmarks.model_languages     # reads docs/results/xsim-full.md, writes bimine/models/default/languages.json
    python -m benchmarks.model_languages --json .bench/xsim/X.json --model default   # from an xsim run's JSON
    python -m benchmarks.model_languages --served   # the languages the shipped languages.json serves well (README)
    python -m benchmarks.model_languages --e5       # e5-small's, from docs/results/xsim-e5-small.json,
                                                    # into bimine/models/e5-small/languages.json

For each language: the shipped model's NTREX-128 xsim error (the mean over that language's NTREX
sets, e.g. zho_Hans/zho_Hant/yue for zh), its UD PUD xsim error where there is a set, and the
training pairs, as measured by ``python -m benchmarks.xsim`` and recorded in
docs/results/xsim-full.md (re-run that to re-measure). With ``--json``, the figures are those of
the ``--model`` column of a ``python -m benchmarks.xsim --json`` run, and the training pairs those of
the shipped model's own training record. Commands read it to say how well the model serves a
language (``bimine.encoders.languages``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections import defaultdict

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(REPO, "docs", "results", "xsim-full.md")
OUT = os.path.join(REPO, "bimine", "models", "default", "languages.json")
E5_JSON = os.path.join(REPO, "docs", "results", "xsim-e5-small.json")
E5_OUT = os.path.join(REPO, "bimine", "models", "e5-small", "languages.json")
ROW = re.compile(r"^\| (ntrex|pud) \| [^|]*\((\w+)\) \| ([\d,]+) \| [\d.]+ \| ([\d.]+) \| [\d.]+ \|$")


def from_table(path: str) -> tuple[dict, dict[str, int], str]:
    """Per language {ntrex|pud: [errors]} and training pairs, from the middle model column of
    docs/results/xsim-full.md."""
    sets: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    pairs: dict[str, int] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = ROW.match(line.strip())
            if m:
                kind, lang, n, err = m.group(1), m.group(2), int(m.group(3).replace(",", "")), float(m.group(4))
                sets[lang][kind].append(err)
                pairs[lang] = n
    return sets, pairs, "docs/results/xsim-full.md (python -m benchmarks.xsim)"


def from_json(path: str, model: str) -> tuple[dict, dict[str, int], str]:
    """The same from one model of a ``benchmarks.xsim --json`` file; training pairs from the
    shipped model's config (0 for a measured language it was not trained on)."""
    from bimine.encoders.base import default_model_path

    with open(path, encoding="utf-8") as f:
        res = json.load(f)["results"]
    if model not in res:
        raise SystemExit(f"{path} has no model {model!r} (it has {', '.join(res)})")
    with open(os.path.join(str(default_model_path()), "config.json"), encoding="utf-8") as f:
        trained = {k: int(v) for k, v in json.load(f).get("training", {}).get("languages", {}).items()}
    sets: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for kind in ("ntrex", "pud"):
        for r in res[model].get(kind, {}).values():
            sets[r["lang"]][kind].append(round(float(r["mean"]), 1))  # as the table shows them
    pairs = {lang: trained.get(lang, 0) for lang in sets}
    return sets, pairs, f"{os.path.relpath(path, REPO)} (python -m benchmarks.xsim --json), model {model}"


def from_e5(path: str) -> tuple[dict, dict, str, str]:
    """e5-small's figures from its recorded xsim run (``{model_id: {ntrex|pud: {set: row}}}``);
    no training pairs (e5-small's training data is not ours to count)."""
    with open(path, encoding="utf-8") as f:
        (model_id, res), = json.load(f).items()
    sets: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for kind in ("ntrex", "pud"):
        for r in res.get(kind, {}).values():
            sets[r["lang"]][kind].append(round(float(r["mean"]), 1))
    return sets, {lang: None for lang in sets}, f"{os.path.relpath(path, REPO)} (python -m benchmarks.xsim)", model_id


def main() -> None:
    from bimine import load_encoder

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", default=None, help="an xsim run's JSON instead of docs/results/xsim-full.md")
    ap.add_argument("--model", default="default", help="with --json: the model's name in it")
    ap.add_argument("--e5", action="store_true", help="write e5-small's figures (docs/results/xsim-e5-small.json)")
    ap.add_argument("--served", action="store_true",
                    help="print the languages the shipped languages.json serves well (NTREX xsim at most "
                         "bimine.encoders.languages.SERVED_XSIM), best first, for the README; write nothing")
    args = ap.parse_args()
    if args.served:
        served()
        return
    out, model_id = OUT, None
    if args.e5:
        sets, pairs, source, model_id = from_e5(E5_JSON)
        out = E5_OUT
    else:
        sets, pairs, source = from_json(args.json, args.model) if args.json else from_table(TABLE)
    langs = {lang: {"ntrex_xsim": round(sum(v["ntrex"]) / len(v["ntrex"]), 2) if v["ntrex"] else None,
                    "pud_xsim": round(sum(v["pud"]) / len(v["pud"]), 2) if v["pud"] else None,
                    "train_pairs": pairs[lang]} for lang, v in sorted(sets.items())}
    doc = {"model_id": model_id or load_encoder("default").model_id, "source": source,
           "measure": "xsim error in % against English, both directions, ratio margin k=4; NTREX-128 and UD PUD",
           "languages": langs}
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(out + ".tmp", out)
    print(f"wrote {out}: {len(langs)} languages")


def served() -> None:
    """The well-served languages of the shipped ``languages.json``, as the README lists them."""
    from bimine.encoders.languages import SERVED_XSIM
    from bimine.langs import language_name

    with open(OUT, encoding="utf-8") as f:
        doc = json.load(f)
    good = sorted(((v["ntrex_xsim"], k) for k, v in doc["languages"].items()
                   if v.get("ntrex_xsim") is not None and v["ntrex_xsim"] <= SERVED_XSIM))
    print(f"{doc['model_id']}: {len(good)} languages at most {SERVED_XSIM:g} % NTREX xsim error (best first):")
    print(", ".join(f"{language_name(k) or k} ({k}, {e:g} %)" for e, k in good))


if __name__ == "__main__":
    main()
