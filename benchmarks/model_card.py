"""Tables of the model card, from measured artefacts only: the model's own training record,
the recipe's manifest, and (optionally) the JSON written by ``benchmarks.xsim``.

Usage:
    python -m benchmarks.model_card --model default --manifest ../data/recipe/manifest.json \\
        [--xsim .bench/xsim.json] > /tmp/tables.md

Prints Markdown: the sources with their licenses and pair counts, and one row per training
language (name, pairs the model was trained on, pairs in the recipe by source, xsim error
on NTREX / UD PUD when given).
"""

from __future__ import annotations

import argparse
import json
import os

from bimine.encoders.base import default_model_path
from bimine.langs import language_name


def load_json(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def tables(model_cfg: dict, manifest: dict, xsim: dict | None = None, model_key: str | None = None) -> str:
    trained = model_cfg.get("training", {}).get("languages", {})
    langs = manifest["languages"]
    out = ["| source | what | license | pairs in the recipe |", "|---|---|---|---:|"]
    for name, s in sorted(manifest["sources"].items(), key=lambda kv: -kv[1]["pairs"]):
        out.append(f"| {name} | {s['description']} | {s['license_note']} | {s['pairs']:,} |")
    out.append("")
    # every set of a language (NTREX has fra and fra-CA, zho_Hans, zho_Hant and yue for zh, ...)
    by_lang: dict[str, dict[str, list[tuple[str, float]]]] = {}
    if xsim is not None:
        res = xsim["results"][model_key or next(iter(xsim["results"]))]
        for part in ("ntrex", "pud"):
            for name, v in res.get(part, {}).items():
                by_lang.setdefault(v["lang"], {}).setdefault(part, []).append((name, v["mean"]))
    head = "| language | code | trained on (pairs) | in the recipe | sources |"
    sep = "|---|---|---:|---:|---|"
    if xsim is not None:
        head += " NTREX xsim % | PUD xsim % |"
        sep += "---:|---:|"
    out += [head, sep]
    for lang, n in sorted(trained.items(), key=lambda kv: -kv[1]):
        v = langs.get(lang, {"pairs": 0, "sources": {}})
        src = ", ".join(f"{k} {c:,}" for k, c in sorted(v["sources"].items(), key=lambda kv: -kv[1])[:4])
        if len(v["sources"]) > 4:
            src += ", ..."
        row = f"| {language_name(lang) or lang} | {lang} | {n:,} | {v['pairs']:,} | {src} |"
        if xsim is not None:
            x = by_lang.get(lang, {})
            for part in ("ntrex", "pud"):
                sets = x.get(part, [])
                if len(sets) == 1:
                    row += f" {sets[0][1]:.1f} |"
                elif sets:
                    row += " " + " / ".join(f"{m:.1f} ({name})" for name, m in sets) + " |"
                else:
                    row += " - |"
        out.append(row)
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="default")
    ap.add_argument("--manifest", required=True, help="manifest.json of the recipe the model was trained on")
    ap.add_argument("--xsim", default=None, help="JSON written by python -m benchmarks.xsim --json")
    ap.add_argument("--xsim-model", default=None, help="which model of the xsim JSON (default: the first)")
    args = ap.parse_args()
    folder = str(default_model_path()) if args.model == "default" else args.model
    cfg = load_json(os.path.join(folder, "config.json"))
    xsim = load_json(args.xsim) if args.xsim else None
    print(tables(cfg, load_json(args.manifest), xsim, args.xsim_model))


if __name__ == "__main__":
    main()
