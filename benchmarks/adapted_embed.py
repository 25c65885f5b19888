"""An adapted model's embedding speed beside its base model's, in the adapted language (issue 73).

Usage (from the repository root)::

    python -m benchmarks.adapted_embed --model ADAPTED_DIR --text FILE --lang LANG [--base default]
                                       [--repeats 3] [--json .bench/adapted_embed.json]

``bimine adapt`` writes per-language rows over the base model's table; this measures what they
cost where they are used: ``bimine embed TEXT --lang LANG -o OUT.npy`` as a whole process, the
base and the adapted model one after the other ``--repeats`` times (interleaved, so a change in the
machine's speed hits both), and ``encoder.encode`` of the same lines in this process (loaded and
warmed up first). Lines/s of each, and the ratio adapted / base.
"""

from __future__ import annotations

import os
import tempfile

from benchmarks.harness import Bench, process, timed
from bimine.encoders.registry import load_encoder
from bimine.text.io import read_lines


def main() -> int:
    bench = Bench("adapted_embed", __doc__)
    bench.arg("--model", required=True, help="the adapted model folder")
    bench.arg("--base", default="default")
    bench.arg("--text", required=True)
    bench.arg("--lang", required=True)
    bench.arg("--repeats", type=int, default=3)
    a = bench.parse()
    lines = [t.rstrip("\n") for t in read_lines(a.text)]
    n = len(lines)
    models = {"base": a.base, "adapted": a.model}
    whole: dict[str, list[float]] = {k: [] for k in models}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.npy")
        for _ in range(a.repeats):
            for name, m in models.items():
                r = process(["bimine", "embed", a.text, "--lang", a.lang, "-m", m, "-o", out, "--no-progress"])
                whole[name].append(r["wall_s"])
    inproc = {}
    for name, m in models.items():
        enc = load_encoder(m)
        enc.encode(lines[:200], a.lang)  # warm: compiled kernels, tables mapped
        _, t = timed(lambda enc=enc: enc.encode(lines, a.lang), repeat=a.repeats)
        inproc[name] = t["wall_s"]
    print(f"# {bench.command} ({bench.result()['date']}): {n:,} lines of {a.text}, --lang {a.lang}")
    print(f"| model | whole process s (median of {a.repeats}) | lines/s | in process s | lines/s |")
    print("|---|---:|---:|---:|---:|")
    for name, m in models.items():
        w = sorted(whole[name])[(a.repeats - 1) // 2]
        row = {"model": name, "path": m, "lines": n, "whole_s": round(w, 3), "whole_lines_s": round(n / w, 1),
               "whole_runs": whole[name], "in_process_s": round(inproc[name], 3),
               "in_process_lines_s": round(n / inproc[name], 1)}
        bench.rows.append(row)
        print(f"| {name} ({m}) | {w:.2f} | {n / w:,.0f} | {inproc[name]:.2f} | {n / inproc[name]:,.0f} |")
    b, ad = bench.rows
    print(f"adapted / base lines/s: whole process {ad['whole_lines_s'] / b['whole_lines_s']:.2f}, "
          f"in process {ad['in_process_lines_s'] / b['in_process_lines_s']:.2f}")
    bench.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
