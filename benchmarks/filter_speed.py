"""Speed of ``bimine filter`` (issue 10): pairs per second as a user sees them, beside
OpusFilter and bicleaner-hardrules on the same pairs.

Usage (from the repository root)::

    python -m benchmarks.filter_speed [--sizes 200000 1000000] [--repeat 3] [--no-model] [--no-peers]
                                      [--peer-max 200000] [--before DIR] [--json .bench/filter_speed.json]

The input: the en-fr pairs of the shared training data, concatenated in this order —
tatoeba-manythings, python-docs, django-docs, multi30k, bible-sword (253,992 pairs: short
sentences, software documentation, image captions, verses) — the first 200k, and the whole
set repeated up to 1M (so the 1M file holds every pair about four times: the duplicate rule
fires, and the language identifier and the embeddings meet repeated texts).

Whole-process figures (start-up included: ``bimine filter --src IN.en --tgt IN.fr --src-lang
en --tgt-lang fr -o OUT.tsv`` in a subprocess, as a user runs it):

* rules only (``--no-model``), ``--workers 1`` and ``2``; the same without the language rule
  (``lang``, py3langid), which is the part bicleaner-hardrules runs here without its own
  language identifier;
* the default pipeline with the shipped model (since issue 42 the rules, the near-copy rule,
  cosine, calibrated confidence, margin, the shape features and the trained combiner),
  ``--workers 2``;
* ``--before DIR``: rules only, and the default pipeline, with the code in DIR (e.g. ``git
  archive <commit> | tar -x -C DIR``), run with ``PYTHONPATH=DIR`` from another folder, for a
  before/after on the same machine and load.

Per run: wall-clock seconds (median and min over ``--repeat`` runs; the model and the peers
run once), CPU seconds of the process and its workers (user + system, from ``getrusage``),
peak memory as the summed PSS of the process tree (forked workers share pages; PSS counts a
shared page once), sampled every 0.1 s for 3 s then every 0.5 s (a /proc scan costs CPU), and
bimine's own phase timings (``BIMINE_TIMINGS``).

In-process figures, kept apart (no interpreter start-up, imports, compiled-code loading):
:func:`bimine.filtering.pipeline.run_pipeline` on the same files with the rules, workers 1
and 2, its phase timings; and where one process spends its time on the 200k input: the
compiled text pass, each rule, the language identifier, the write pass.

Peers, in their venvs (made by ``python -m benchmarks.filter_dev``; see there for why these
configurations): OpusFilter 3.3.1 with the filter set ``opusfilter-autogen --method
defaults`` writes (its ``opusfilter`` command on the two files, plain outputs, ``--n-jobs 1``
and ``2``), and
bicleaner-hardrules 2.10.8 with its default rules, ``--disable_lang_ident`` (FastSpell
downloads its model at first use, which this machine cannot), ``--annotated_output``, ``-p 1``
and ``-p 2``, on the pairs as a TSV. They are run up to ``--peer-max`` pairs (default 200k:
at their speed here 1M pairs take 25-40 min each); larger sizes are reported as not run.

The machine is described in the output (CPU, cores, memory, load, the share of the CPUs other
processes used just before), with the command, date and versions. Outputs:
``.bench/filter_speed/`` (inputs, outputs, logs), the JSON (``--json``) and the markdown tables
on stdout (also ``<json>.md``). Without ``../shared/data`` the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import gzip
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from itertools import islice

from benchmarks.filter_dev import DEFAULT_DATA, PEERS, REPO, ensure_venv, peer_versions
from benchmarks.harness import cpu_busy, machine_versions, repeat_tree, write_json

OUT = os.path.join(REPO, ".bench", "filter_speed")
SOURCES = ("tatoeba-manythings/tatoeba.en-fr", "python-docs/python-docs.en-fr", "django-docs/django-docs.en-fr",
           "multi30k/multi30k.en-fr", "bible-sword/pairs/bible.en-fr")
RULES_NO_LANG = "empty,bad_chars,identical,min_length,max_length,length_ratio,numbers,urls,duplicate"


# ---------------------------------------------------------------- inputs

def _lines(path: str) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
        return f.read().rstrip("\n").split("\n")  # "\n" only: U+0085 and U+2028 stay in their line


def make_inputs(data: str, sizes: list[int]) -> tuple[dict[int, dict[str, str]], int]:
    """``{size: {"en", "fr", "tsv"}}``: the first ``size`` pairs of the sources' concatenation,
    repeated when ``size`` is larger than the whole set; and the set's size."""
    src: list[str] = []
    tgt: list[str] = []
    for stem in SOURCES:
        a, b = _lines(os.path.join(data, "train", f"{stem}.en.gz")), _lines(os.path.join(data, "train", f"{stem}.fr.gz"))
        if len(a) != len(b):
            raise SystemExit(f"{stem}: {len(a)} English and {len(b)} French lines")
        src += a
        tgt += b
    if any("\t" in t for t in src + tgt):
        raise SystemExit("a sentence holds a tab; the TSV input of bicleaner-hardrules would break")
    os.makedirs(OUT, exist_ok=True)
    out = {}
    for n in sizes:
        files = {k: os.path.join(OUT, f"in-{n}.{k}") for k in ("en", "fr", "tsv")}
        if not all(os.path.exists(p) for p in files.values()):
            idx = [i % len(src) for i in range(n)]
            for key, rows in (("en", (src[i] for i in idx)), ("fr", (tgt[i] for i in idx)),
                              ("tsv", (f"{src[i]}\t{tgt[i]}" for i in idx))):
                with open(files[key] + ".tmp", "w", encoding="utf-8", newline="\n") as f:
                    f.writelines(r + "\n" for r in rows)
                os.replace(files[key] + ".tmp", files[key])
        out[n] = files
    return out, len(src)


# ---------------------------------------------------------------- bimine, whole process

def bimine_cmd(files: dict, out: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "bimine", "filter", "--src", files["en"], "--tgt", files["fr"], "--src-lang", "en",
            "--tgt-lang", "fr", "-o", out, "--no-progress", *extra]


def shown(cmd: list[str]) -> str:
    """The command as a user types it."""
    parts = ["bimine"] + cmd[3:] if cmd[:3] == [sys.executable, "-m", "bimine"] else list(cmd)
    return " ".join(os.path.relpath(p, REPO) if os.path.isabs(p) and p.startswith(REPO) else p for p in parts)


def bimine_runs(n: int, files: dict, times: int, model: bool, before: str | None) -> list[dict]:
    env = dict(os.environ, BIMINE_TIMINGS="1")
    out = os.path.join(OUT, f"out-{n}.tsv")
    cases = [("bimine", "rules (default set)", ["--no-model", "--workers", "1"], times),
             ("bimine", "rules (default set)", ["--no-model", "--workers", "2"], times),
             ("bimine", "rules without lang", ["--no-model", "--rules", RULES_NO_LANG, "--workers", "1"], times),
             ("bimine", "rules without lang", ["--no-model", "--rules", RULES_NO_LANG, "--workers", "2"], times)]
    if model:
        cosine = os.path.join(OUT, "rules-cosine.yaml")  # the default rules and the cosine, no margin
        with open(cosine, "w") as f:
            f.write("filters:\n" + "".join(f"  - rule: {r}\n" for r in RULES_NO_LANG.split(","))
                    + "  - rule: lang\n  - score: cosine\n")
        cases.append(("bimine", "rules + cosine (default model)", ["-c", cosine, "--workers", "2"], 1))
        # since issue 42: the rules, copy, cosine, confidence, margin, the shape features and the combiner
        cases.append(("bimine", "default pipeline (default model)", ["--workers", "2"], 1))
    rows = []
    for tool, what, extra, k in cases:
        cmd = bimine_cmd(files, out, *extra)
        print(f"[filter_speed] {n:,} pairs: {shown(cmd)}", file=sys.stderr)
        res = repeat_tree(cmd, k, env=env, cwd=REPO, log=os.path.join(OUT, f"log-{n}-{len(rows)}.txt"))
        rows.append({"tool": tool, "what": what, "pairs": n, "command": shown(cmd), **res})
    if before:
        env_b = dict(os.environ, PYTHONPATH=before)
        # once, untimed, on 1,000 pairs: the before tree compiles its numba kernels into its own cache
        warm = {k: os.path.join(OUT, f"warm.{k}") for k in ("en", "fr")}
        for k, path in warm.items():
            with open(files[k], encoding="utf-8") as f, open(path, "w", encoding="utf-8") as g:
                g.writelines(line for _, line in zip(range(1000), f))
        subprocess.run(bimine_cmd(warm, os.path.join(OUT, "warm.tsv"), *(["--workers", "2"] if model else ["--no-model"])),
                       env=env_b, cwd=tempfile.gettempdir(), check=True, capture_output=True)
        cmd = bimine_cmd(files, out, "--no-model")
        print(f"[filter_speed] {n:,} pairs: before: PYTHONPATH={before} {shown(cmd)}", file=sys.stderr)
        res = repeat_tree(cmd, times, env=env_b, cwd=tempfile.gettempdir(), log=os.path.join(OUT, f"log-{n}-before.txt"))
        rows.append({"tool": "bimine before", "what": "rules (default set), one process", "pairs": n,
                     "command": f"PYTHONPATH={before} {shown(cmd)}", **res})
        if model:
            cmd = bimine_cmd(files, out, "--workers", "2")
            print(f"[filter_speed] {n:,} pairs: before: PYTHONPATH={before} {shown(cmd)}", file=sys.stderr)
            res = repeat_tree(cmd, 1, env=env_b, cwd=tempfile.gettempdir(), log=os.path.join(OUT, f"log-{n}-before-model.txt"))
            rows.append({"tool": "bimine before", "what": "default pipeline (default model)", "pairs": n,
                         "command": f"PYTHONPATH={before} {shown(cmd)}", **res})
    return rows


# ---------------------------------------------------------------- peers

def opusfilter_run(venv: str, n: int, files: dict, jobs: int) -> dict:
    """OpusFilter's own command on the filter set of ``opusfilter-autogen --method defaults``
    (the arguments of benchmarks.filter_dev), inputs and outputs pointed at these files."""
    import yaml

    work = os.path.join(OUT, f"opusfilter-{n}")
    os.makedirs(work, exist_ok=True)
    cfg = os.path.join(work, "config.yaml")
    r = subprocess.run([os.path.join(venv, "bin", "opusfilter-autogen"), "--files", files["en"], files["fr"], "--langs",
                        "en", "fr", "--scripts", "Latin", "Latin", "--method", "defaults", "--work-dir", work,
                        "--overwrite", "-o", cfg], capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": "opusfilter-autogen failed: " + r.stderr[-1500:]}
    with open(cfg, encoding="utf-8") as f:
        conf = yaml.safe_load(f)
    step = next(s for s in conf["steps"] if s["type"] == "filter")
    step["parameters"]["inputs"] = [files["en"], files["fr"]]
    step["parameters"]["outputs"] = ["filtered.en", "filtered.fr"]  # plain, like bimine's output
    conf["common"]["output_directory"] = work
    with open(cfg, "w", encoding="utf-8") as f:
        yaml.safe_dump(conf, f, sort_keys=False)
    cmd = [os.path.join(venv, "bin", "opusfilter"), cfg, "--overwrite", "--n-jobs", str(jobs)]
    print(f"[filter_speed] {n:,} pairs: {' '.join(cmd)}", file=sys.stderr)
    res = repeat_tree(cmd, 1, log=os.path.join(work, "log.txt"))
    return {"command": f"opusfilter {os.path.relpath(cfg, REPO)} --overwrite --n-jobs {jobs} (autogen --method defaults: "
                       f"{', '.join(next(iter(x)) for x in step['parameters']['filters'])})", **res}


def bicleaner_run(venv: str, n: int, files: dict, processes: int) -> dict:
    out = os.path.join(OUT, f"bicleaner-{n}-p{processes}.tsv")
    cmd = [os.path.join(venv, "bin", "bicleaner-hardrules"), files["tsv"], out, "-s", "en", "-t", "fr",
           "--disable_lang_ident", "--annotated_output", "-p", str(processes), "-q"]
    print(f"[filter_speed] {n:,} pairs: {' '.join(cmd)}", file=sys.stderr)
    res = repeat_tree(cmd, 1, cwd=OUT, log=os.path.join(OUT, f"bicleaner-{n}-p{processes}.log"))
    return {"command": "bicleaner-hardrules " + " ".join(os.path.relpath(c, REPO) if c.startswith(REPO) else c
                                                          for c in cmd[1:]), **res}


# ---------------------------------------------------------------- bimine, in process

def in_process(sizes: list[int], inputs: dict, block_size: int = 20_000) -> dict:
    """run_pipeline in this process (after a warm-up: compiled code and tables loaded), rules
    only, workers 1 and 2; and, on the first size, one process's time per stage."""
    from bimine.filtering.config import build_filters, default_spec
    from bimine.filtering.pipeline import PipelineOptions, read_pair_blocks, run_pipeline

    out = {"runs": [], "stages": {}}
    first = inputs[sizes[0]]
    with tempfile.TemporaryDirectory(dir=OUT) as tmp:
        warm = build_filters(default_spec(model=False), src_lang="en", tgt_lang="fr")
        run_pipeline(islice(read_pair_blocks(src=first["en"], tgt=first["fr"], block_size=1000), 2), warm,
                     os.path.join(tmp, "warm.tsv"))
        for n in sizes:
            for workers in (1, 2):
                filters = build_filters(default_spec(model=False), src_lang="en", tgt_lang="fr")
                c0 = resource.getrusage(resource.RUSAGE_SELF)
                k0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                rep = run_pipeline(read_pair_blocks(src=inputs[n]["en"], tgt=inputs[n]["fr"], block_size=block_size),
                                   filters, os.path.join(tmp, "o.tsv"), PipelineOptions(workers=workers))
                wall = time.perf_counter() - t0
                c1 = resource.getrusage(resource.RUSAGE_SELF)
                k1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = sum(getattr(b, a) - getattr(c, a) for b, c in ((c1, c0), (k1, k0)) for a in ("ru_utime", "ru_stime"))
                out["runs"].append({"pairs": n, "workers": workers, "wall": wall, "cpu": cpu,
                                    "phases": {k: round(v, 3) for k, v in rep.seconds.items()}})
                print(f"[filter_speed] in process {n:,} pairs, workers {workers}: {wall:.2f} s", file=sys.stderr)
        out["stages"] = stages(first, block_size)
    return out


def stages(files: dict, block_size: int) -> dict:
    """One process's CPU seconds per stage over the blocks of ``files``: reading, the compiled
    text pass (both sides), each rule given that pass, the language identifier, the write pass
    (from a pipeline run)."""
    from bimine.filtering import rules
    from bimine.filtering.config import build_filters, default_spec
    from bimine.filtering.pipeline import read_pair_blocks, run_pipeline

    t = time.process_time()
    blocks = list(read_pair_blocks(src=files["en"], tgt=files["fr"], block_size=block_size))
    cost = {"read (chunked decode, blocks)": time.process_time() - t}
    filters = build_filters(default_spec(model=False), src_lang="en", tgt_lang="fr")
    for b in blocks:
        rules._STATS_CACHE.clear()
        t = time.process_time()
        rules.text_stats(b.src)
        rules.text_stats(b.tgt)
        cost["compiled text pass (both sides)"] = cost.get("compiled text pass (both sides)", 0) + time.process_time() - t
        for f in filters:
            t = time.process_time()
            f.score(b.src, b.tgt)
            key = f"rule {f.name}" + (" (py3langid, compiled)" if f.name == "lang" else "")
            cost[key] = cost.get(key, 0) + time.process_time() - t
    with tempfile.TemporaryDirectory(dir=OUT) as tmp:
        rep = run_pipeline(iter(blocks), build_filters(default_spec(model=False), src_lang="en", tgt_lang="fr"),
                           os.path.join(tmp, "o.tsv"))
    cost["spool + decide + write (wall)"] = rep.seconds["decide"] + rep.seconds["write"]
    return {k: round(v, 3) for k, v in cost.items()}


# ---------------------------------------------------------------- tables

def _rate(n: int, sec: float | None) -> str:
    return f"{n / sec:,.0f}" if sec else "–"


def tables(res: dict) -> str:
    m = res["machine"]
    out = [f"Machine: {m['cpu']}, {m['cores']} cores, {m.get('memory_gb', '?')} GB; Python {m['python']}; "
           f"{', '.join(f'{k} {v}' for k, v in m['versions'].items())}; bimine {m['commit']}. "
           f"Run {res['date']}; the CPUs were {100 * res['busy_before']:.0f} % busy with other work in the "
           f"5 s before the run (load average {res['load_before']} before, {res['load_after']} after).", "",
           "Whole process, start-up included (pairs/s from the median wall-clock time; CPU: the process and its "
           "workers; memory: peak summed PSS of the process tree; others: the share of the machine's CPU time "
           "other processes used during the run)", "",
           "| tool | what | workers | pairs | wall s (median / min) | pairs/s | CPU s | peak MB | others |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in res["whole"]:
        if "error" in r:
            out.append(f"| {r['tool']} | {r['what']} | {r.get('workers', '')} | {r['pairs']:,} | "
                       f"not run: {r['error'].splitlines()[0][:80]} | | | | |")
            continue
        out.append(f"| {r['tool']} | {r['what']} | {r.get('workers', '')} | {r['pairs']:,} | "
                   f"{r['wall_median']:.1f} / {r['wall_min']:.1f} | {_rate(r['pairs'], r['wall_median'])} | "
                   f"{r['cpu_median']:.1f} | {r['peak_mb']:,.0f} | "
                   + (f"{100 * r['others_share']:.0f} % |" if "others_share" in r else "– |"))
    out += ["", "Commands:", ""]
    seen = set()
    for r in res["whole"]:
        if r.get("command") and r["command"] not in seen:
            seen.add(r["command"])
            out.append(f"- `{r['command']}`")
    phased = [r for r in res["whole"] if r.get("timings")]
    if phased:
        out += ["", "bimine's phases in those runs (wall s, main process; `BIMINE_TIMINGS=1`)", "",
                "| what | workers | pairs | phases |", "|---|---|---|---|"]
        for r in phased:
            out.append(f"| {r['what']} | {r.get('workers', '')} | {r['pairs']:,} | "
                       + ", ".join(f"{k} {v:.1f}" for k, v in r["timings"].items()) + " |")
    ip = res.get("in_process")
    if ip:
        out += ["", "In process (run_pipeline after a warm-up: no interpreter start-up, imports or compiled-code "
                "loading), rules only", "", "| pairs | workers | wall s | pairs/s | CPU s | phases (wall s) |",
                "|---|---|---|---|---|---|"]
        for r in ip["runs"]:
            out.append(f"| {r['pairs']:,} | {r['workers']} | {r['wall']:.2f} | {_rate(r['pairs'], r['wall'])} | "
                       f"{r['cpu']:.2f} | " + ", ".join(f"{k} {v:.2f}" for k, v in r["phases"].items()) + " |")
        total = sum(ip["stages"].values())
        out += ["", f"Where one process spends its time on the first size ({res['sizes'][0]:,} pairs; CPU s)", "",
                "| stage | s | share |", "|---|---|---|"]
        for k, v in sorted(ip["stages"].items(), key=lambda kv: -kv[1]):
            out.append(f"| {k} | {v:.2f} | {100 * v / total:.0f} % |")
    return "\n".join(out)


# ---------------------------------------------------------------- the run

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--sizes", type=int, nargs="+", default=[200_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=3, help="runs of each rules-only case (the median is reported)")
    ap.add_argument("--no-model", action="store_true", help="skip the runs with the shipped model")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--peer-max", type=int, default=200_000, help="largest size the peers are run on")
    ap.add_argument("--no-in-process", action="store_true")
    ap.add_argument("--before", default=None, help="a source tree of bimine to time as 'before' (PYTHONPATH)")
    ap.add_argument("--json", default=os.path.join(REPO, ".bench", "filter_speed.json"))
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.data, "train", "tatoeba-manythings")):
        print(f"filter_speed: skipped, {os.path.join(args.data, 'train')} not found (../shared/data or BIMINE_SHARED_DATA)")
        return
    inputs, whole_set = make_inputs(args.data, args.sizes)
    res = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "sizes": args.sizes,
           "source_pairs": whole_set, "machine": machine_versions(), "argv": sys.argv[1:]}
    res["load_before"] = open("/proc/loadavg").read().split()[0]
    res["busy_before"] = cpu_busy()
    res["whole"] = []
    peers = {}
    if not args.no_peers:
        for name in ("opusfilter", "bicleaner-hardrules"):
            venv, err = ensure_venv(PEERS[name], install=False)
            peers[name] = venv
            res["machine"]["versions"].update({f"{name}:{k}": v for k, v in (peer_versions(venv, PEERS[name].report)
                                                                              if venv else {"error": err}).items()
                                               if k != "python"})
    for n in args.sizes:
        for row in bimine_runs(n, inputs[n], args.repeat, not args.no_model, args.before):
            row["workers"] = _workers_of(row["command"])
            res["whole"].append(row)
        for name, venv in peers.items():
            if venv is None:
                continue
            todo = [("opusfilter", "autogen defaults (with lingua language id)", p) for p in (1, 2)] \
                if name == "opusfilter" else [("bicleaner-hardrules", "default rules, no language id", p) for p in (1, 2)]
            for tool, what, p in todo:
                if n > args.peer_max:
                    res["whole"].append({"tool": tool, "what": what, "pairs": n, "workers": p,
                                         "error": f"not run above --peer-max {args.peer_max:,} pairs"})
                    continue
                r = opusfilter_run(venv, n, inputs[n], p) if tool == "opusfilter" else bicleaner_run(venv, n, inputs[n], p)
                res["whole"].append({"tool": tool, "what": what, "pairs": n, "workers": p, **r})
    if not args.no_in_process:
        res["in_process"] = in_process(args.sizes, inputs)
    res["load_after"] = open("/proc/loadavg").read().split()[0]
    md = tables(res)
    res["markdown"] = md
    print(md)
    write_json(args.json, res)
    with open(os.path.splitext(args.json)[0] + ".md", "w") as f:
        f.write(md + "\n")
    print(f"\nwrote {args.json}; inputs, outputs and logs in {OUT}", file=sys.stderr)


def _workers_of(command: str) -> int | str:
    parts = command.split()
    return int(parts[parts.index("--workers") + 1]) if "--workers" in parts else 1


if __name__ == "__main__":
    main()
