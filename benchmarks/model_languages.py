"""Store the default model's per-language dev figures with it (``languages.json`` beside its weights).

    python -m benchmarks.model_languages     # reads docs/results/xsim-full.md, writes bimine/models/default/languages.json
    python -m benchmarks.model_languages --json .bench/xsim/X.json --model default   # from an xsim run's JSON
    python -m benchmarks.model_languages --served   # the languages the shipped languages.json serves well (README)
    python -m benchmarks.model_languages --e5       # e5-small's, from docs/results/xsim-e5-small.json,
                                                    # into bimine/models/e5-small/languages.json
    python -m benchmarks.model_languages --pool docs/results/pool-retrieval.json
        # adds each language's large-pool R@1 (a benchmarks.pool_retrieval run of 'default' and
        # 'e5-small') to both files, keeping what they hold

For each language: the shipped model's NTREX-128 xsim error (the mean over that language's NTREX
sets, e.g. zho_Hans/zho_Hant/yue for zh), its UD PUD xsim error where there is a set, and the
training pairs, as measured by ``python -m benchmarks.xsim`` and recorded in
docs/results/xsim-full.md (re-run that to re-measure). With ``--json``, the figures are those of
the ``--model`` column of a ``python -m benchmarks.xsim --json`` run, and the training pairs those of
the shipped model's own training record. ``--pool`` adds ``ntrex_pool_r1``: the mean over a
language's NTREX sets of R@1 (raw cosine, %) of lines 1,001-1,997 among 25,000 English
sentences, from a ``python -m benchmarks.pool_retrieval --json`` run whose model ids are the
files' own. Commands read it to say how well the model serves a language
(``bimine.encoders.languages``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections import defaultdict

from bimine.weights import write_json

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
                    help="print the languages the shipped languages.json serves well (bimine.encoders.languages."
                         "figure_of: large-pool R@1, else NTREX xsim), best first, for the README; write nothing")
    ap.add_argument("--pool", default=None, help="a pool_retrieval run's JSON (models 'default' and 'e5-small'): add "
                    "their large-pool R@1 to both languages.json files, nothing else changed")
    args = ap.parse_args()
    if args.pool:
        for name, path in (("default", OUT), ("e5-small", E5_OUT)):
            print(add_pool(path, args.pool, name))
        return
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
    kept = keep_pool_figures(out, doc)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    write_json(out, doc, indent=1, sort_keys=True)
    print(f"wrote {out}: {len(langs)} languages" + (f", the large-pool R@1 of {kept} kept" if kept else ""))


def keep_pool_figures(path: str, doc: dict) -> int:
    """Carry the large-pool figures of the file at ``path`` over to ``doc`` (the xsim figures
    written again) when both are the same model's; a file of another model has its pool figures
    measured again (``--pool``), and the command says so. Returns how many were kept."""
    if not os.path.isfile(path):
        return 0
    with open(path, encoding="utf-8") as f:
        old = json.load(f)
    pool = {lang: e["ntrex_pool_r1"] for lang, e in old.get("languages", {}).items() if "ntrex_pool_r1" in e}
    if not pool:
        return 0
    if old.get("model_id") != doc["model_id"]:
        print(f"note: {path} held the large-pool R@1 of model {old.get('model_id')}, not of {doc['model_id']}: "
              "measure it (python -m benchmarks.pool_retrieval) and add it with --pool; until then xsim decides")
        return 0
    merge_pool(doc, pool)
    if "pool_source" in old:
        doc["pool_source"] = old["pool_source"]
    return len(pool)


def merge_pool(doc: dict, figures: dict[str, float]) -> None:
    """Each language's large-pool R@1 into ``doc``'s entry (a language it had no entry for gets one)."""
    for lang, r1 in figures.items():
        doc["languages"].setdefault(lang, {"ntrex_xsim": None, "pud_xsim": None, "train_pairs": None})
        doc["languages"][lang]["ntrex_pool_r1"] = r1


def pool_figures(results: dict, model_id: str) -> dict[str, float]:
    """Per language code, the mean cos R@1 over its NTREX sets of one model's pool_retrieval rows
    (those measured with that ``model_id`` and a pool of 25,000: another model's rows are refused)."""
    from bimine.encoders.languages import POOL_SIZE

    per: dict[str, list[float]] = defaultdict(list)
    for name, r in results.items():
        if r.get("model_id") != model_id:
            raise SystemExit(f"{name}: measured with model {r.get('model_id')}, not {model_id}")
        if r.get("pool") != POOL_SIZE:
            raise SystemExit(f"{name}: a pool of {r.get('pool')}, not {POOL_SIZE}")
        per[r["lang"]].append(float(r["cos_r1"]))
    return {lang: round(sum(v) / len(v), 2) for lang, v in per.items()}


def add_pool(path: str, pool_json: str, model: str) -> str:
    """Add ``model``'s large-pool R@1 of ``pool_json`` to the languages.json at ``path``."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    with open(pool_json, encoding="utf-8") as f:
        results = json.load(f)["results"]
    if model not in results:
        raise SystemExit(f"{pool_json} has no model {model!r}")
    figures = pool_figures(results[model], doc["model_id"])
    merge_pool(doc, figures)
    doc["pool_source"] = (f"{os.path.relpath(os.path.abspath(pool_json), REPO)} (python -m benchmarks.pool_retrieval): "
                          "ntrex_pool_r1, R@1 raw cosine in % of NTREX lines 1,001-1,997 among 25,000 English "
                          "sentences, the mean over the language's NTREX sets")
    write_json(path, doc, indent=1, sort_keys=True)
    return f"wrote {path}: large-pool R@1 of {len(figures)} languages"


def served() -> None:
    """The well-served languages of the shipped ``languages.json``, as the README lists them
    (:func:`bimine.encoders.languages.figure_of`: large-pool R@1 where stored, else xsim)."""
    from bimine.encoders.languages import SERVED_POOL_R1, SERVED_XSIM, figure_of
    from bimine.langs import language_name

    with open(OUT, encoding="utf-8") as f:
        doc = json.load(f)
    figs = [(k, figure_of(v)) for k, v in doc["languages"].items()]
    pool = lambda f: f.measure == "pool"  # noqa: E731  (R@1 first, highest first; then xsim, lowest first)
    good = sorted(((k, f) for k, f in figs if f.served), key=lambda kf: (not pool(kf[1]), -kf[1].value if
                                                                          pool(kf[1]) else kf[1].value, kf[0]))
    print(f"{doc['model_id']}: {len(good)} languages served (R@1 at least {SERVED_POOL_R1:g} % among 25,000 English "
          f"sentences; without that figure, NTREX xsim error at most {SERVED_XSIM:g} %), best first:")
    print(", ".join(f"{language_name(k) or k} ({k}, {'R@1 ' if pool(f) else ''}{f.value:g} %)" for k, f in good))


if __name__ == "__main__":
    main()
