"""The filtering dev benchmark (issue 10): clean newstest2013 pairs against synthetic web-crawl
noise, bimine's scores side by side with OpusFilter's and bicleaner-hardrules' rule sets.

Usage (from the repository root; nothing else to set up)::

    python -m benchmarks.filter_dev [--langs fr de es] [--model default] [--pipeline P.yaml]
                                    [--scores lang cosine ...] [--no-peers] [--json .bench/filter_dev.json]

The set: for each of en-fr, en-de, en-es, ``--clean`` (1,000) lines of newstest2013 as they are
and ``--per-type`` (150) noisy pairs of each type of :mod:`benchmarks.filter_noise`
(misaligned neighbour, partial translation, wrong language, untranslated copy, unrelated pair
of similar length, boilerplate, changed numbers), shuffled, seeded (``--seed``); each line of
newstest2013 is the source of at most one pair (3,000 lines, 523 with a digit: about as many
pairs as fit). newstest2013 is held out: nothing here was tuned on it (newstest2012 is not
used either). The English side is the same in the three pairs, and so are the clean lines.

The scorers, all run over the same two-column TSV (``.bench/filter_dev/mix.en-xx.tsv``):

* **bimine**: ``bimine score -c PIPELINE`` in a subprocess; every output column after the two
  input columns is one scorer (each rule's score, ``lang``, ``cosine``, ``margin``, the
  combined ``score``), oriented clean-high with the direction its filter declares
  (``clean_high``; the filters are built as ``bimine score`` builds them to read it). A scorer
  is only a column name: a pipeline YAML with more scores (e.g. ``- score: classifier`` with
  its ``path``, a column named ``confidence``, ``fc`` or ``bigru``) adds rows without a change
  here (``--pipeline``; ``--scores`` picks columns). The default pipeline is the one of ``bimine score`` without options.
  "bimine rules (keep)" is the ``keep`` column of ``bimine filter --no-model`` (binary).
* **OpusFilter** (PyPI ``opusfilter``, own venv): the filter set ``opusfilter-autogen --method
  defaults --langs en xx --scripts Latin Latin`` writes (OpusFilter's documented default
  parameters), run through ``opusfilter.pipeline.FilterPipeline`` by a small driver: each
  filter's accept decision (binary), its score where it has a clean-high or clean-low
  direction (the worse side for per-side scores), the share of filters passed, and the keep
  decision of the whole set (every filter accepts).
* **bicleaner-hardrules** (PyPI, own venv): ``bicleaner-hardrules -s en -t xx -A
  --annotated_output`` with its default rules; the keep decision and each rule that fires.
  Disabled: ``no_wrong_language`` (``--disable_lang_ident``: FastSpell downloads fastText's
  lid.176.bin from dl.fbaipublicfiles.com at first use, which this machine cannot reach), and
  the LM fluency and porn-removal rules, which need a Bicleaner model pack (metadata.yaml,
  not on PyPI; without one bicleaner-hardrules switches them off itself).

The venvs are made under ``.bench/venvs/<name>`` when missing (``python3 -m venv``, ``pip
install`` from PyPI; bicleaner-hardrules needs Python 3.8 or 3.9 — FastSpell's cyhunspell 2.0.2
has wheels for those only — and kenlm, which it imports without declaring it, built from its
PyPI sdist, ~2 min; logs in ``.bench/venvs/<name>.log``). A peer that cannot
be installed is reported with pip's error and left out; nothing is faked.

The metrics, per language pair and as the mean over the pairs:

* **ROC-AUC** of clean against each noise type (and against all noise): the probability that
  a clean pair scores above a noisy one, ties counted one half. A NaN score (a score the tool
  could not compute) counts as the lowest score (a filter drops such a pair); NaNs are counted.
* **Removal at a fixed keep fraction**: keep the best-scored pairs, as many as the mixture has
  clean pairs (the true clean fraction, 1,000 / 2,050 = 48.8 %), remove the rest; ties at the
  cut are kept in proportion (the expected value of a random tie break), so binary scorers
  are measured fairly. Per type: *recall* = share of that type's pairs removed, *precision* =
  that type's removed pairs over them plus the clean pairs removed (clean pairs and that type
  only). Over all noise, precision equals recall at this keep fraction (as many removed as
  there is noise), so one number is given.
* **Own decisions** (bimine rules, OpusFilter, bicleaner-hardrules as a whole): the pairs each
  rule set keeps at its own thresholds: kept share, removal precision and recall, per type.

``margin`` is computed against the mixture itself (k = 4 nearest neighbours in the corpus), so
it depends on the mixture's make-up, as it would on a real crawl.
Outputs: ``.bench/filter_dev/`` (the mixtures with their labels, every tool's output) and a JSON
with every number (``--json``). Without ``../shared/data`` the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from benchmarks.filter_noise import NOISE_TYPES, build_mixture
from benchmarks.harness import write_json

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA = os.environ.get("BIMINE_SHARED_DATA", os.path.join(REPO, "..", "shared", "data"))
OUT = os.path.join(REPO, ".bench", "filter_dev")
VENVS = os.path.join(REPO, ".bench", "venvs")
LANGS = ("fr", "de", "es")


# ---------------------------------------------------------------- metrics

def _lowest_nan(s: np.ndarray) -> np.ndarray:
    s = np.asarray(s, dtype=np.float64)
    return np.where(np.isnan(s), -np.inf, s)


def roc_auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """P(a positive scores above a negative), ties one half (Mann-Whitney U / (n_pos n_neg));
    NaN scores count as the lowest."""
    from scipy.stats import rankdata

    pos, neg = _lowest_nan(pos), _lowest_nan(neg)
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    r = rankdata(np.concatenate([pos, neg]))
    return float((r[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def keep_best(scores: np.ndarray, k: int) -> np.ndarray:
    """Probability that each pair is kept when the ``k`` best-scored pairs are kept and ties at
    the cut are broken at random (1 above the cut, 0 below, a share between); NaN lowest."""
    s = _lowest_nan(scores)
    n = len(s)
    if k >= n:
        return np.ones(n)
    if k <= 0:
        return np.zeros(n)
    t = np.sort(s)[::-1][k - 1]
    above, at = s > t, s == t
    p = np.where(above, 1.0, 0.0)
    p[at] = (k - above.sum()) / at.sum()
    return p


def removal_stats(keep: np.ndarray, labels: np.ndarray) -> dict:
    """Precision and recall of removal given keep probabilities: overall, and per noise type
    (precision on the clean pairs and that type only)."""
    removed = 1.0 - np.asarray(keep, dtype=np.float64)
    clean = labels == "clean"
    rc = removed[clean].sum()
    out = {"kept": float(1 - removed.mean()), "clean_kept": float(1 - removed[clean].mean())}
    noise = ~clean
    out["precision"] = float(removed[noise].sum() / removed.sum()) if removed.sum() else float("nan")
    out["recall"] = float(removed[noise].mean())
    for t in sorted(set(labels[noise].tolist())):
        m = labels == t
        rt = removed[m].sum()
        out[t] = {"recall": float(rt / m.sum()), "precision": float(rt / (rt + rc)) if rt + rc else float("nan")}
    return out


def evaluate(values: np.ndarray, labels: np.ndarray, decision: np.ndarray | None = None) -> dict:
    """Every metric of one clean-high scorer on one mixture."""
    clean = labels == "clean"
    out = {"nan": int(np.isnan(values).sum()), "auc": {}}
    for t in sorted(set(labels[~clean].tolist())):
        out["auc"][t] = roc_auc(values[clean], values[labels == t])
    out["auc"]["all"] = roc_auc(values[clean], values[~clean])
    out["at_clean_fraction"] = removal_stats(keep_best(values, int(clean.sum())), labels)
    if decision is not None:
        out["decision"] = removal_stats(decision.astype(np.float64), labels)
    return out


# ---------------------------------------------------------------- scorers

@dataclass
class Scorer:
    """One row of the tables: clean-high ``values`` per pair, and ``decision`` (keep 1/0) for
    the rule sets judged at their own thresholds."""

    tool: str
    name: str
    values: np.ndarray
    decision: np.ndarray | None = None
    note: str = ""
    clean_high: bool = True  # False: ``values`` is the tool's score negated


@dataclass
class PeerResult:
    tool: str
    scorers: list[Scorer] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    error: str | None = None


def read_tsv(path: str) -> tuple[list[str], list[list[str]]]:
    with open(path, encoding="utf-8", newline="") as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    return rows[0], rows[1:]


def pipeline_spec(path: str | None, model: str = "default"):
    """The pipeline evaluated: ``path``, or what ``bimine score -m MODEL`` runs by default (the
    combined pipeline where the model ships a combiner)."""
    import yaml

    from bimine.filtering.config import default_spec, parse_pipeline

    if path is None:
        from bimine.encoders import load_encoder
        from bimine.filtering.combine import combiners_for

        return default_spec(combiner=combiners_for(load_encoder(model)) is not None)
    with open(path, encoding="utf-8") as f:
        return parse_pipeline(yaml.safe_load(f), where=path)


def write_pipeline(spec, path: str) -> None:
    import yaml

    data = {"filters": spec.filters, "normalize": spec.normalize}
    if spec.combine is not None:
        data["combine"] = spec.combine
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(data, f, sort_keys=False, allow_unicode=True)


def directions(spec, src_lang: str, tgt_lang: str, model: str) -> dict[str, bool]:
    """Column name -> clean_high, as the pipeline's filters declare it (``score``: clean-high);
    the filters are built as ``bimine score`` builds them (a classifier score loads its file)."""
    from bimine.encoders import load_encoder
    from bimine.filtering.config import build_filters

    encoder = load_encoder(model) if any("score" in item for item in spec.filters) else None
    filters = build_filters(spec, src_lang=src_lang, tgt_lang=tgt_lang, encoder=encoder)
    return {**{f.name: bool(f.clean_high) for f in filters}, "score": True}


def run_bimine(args: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "bimine", *args, "--no-progress"], capture_output=True, text=True,
                       cwd=REPO)
    if r.returncode != 0:
        raise RuntimeError(f"bimine {' '.join(args)} failed:\n{r.stderr[-3000:]}")
    return time.perf_counter() - t0, r.stderr.strip()


def bimine_scorers(tsv: str, xx: str, spec, pipeline_yaml: str, model: str, columns: list[str] | None,
                   src_lang: str = "en") -> PeerResult:
    """``bimine score`` with the pipeline (one scorer per output column) and the keep decision
    of ``bimine filter --no-model``."""
    res = PeerResult("bimine")
    stem = os.path.splitext(tsv)[0]
    scored, filtered = f"{stem}.bimine-score.tsv", f"{stem}.bimine-filter.tsv"
    sec, log = run_bimine(["score", tsv, "--src-lang", src_lang, "--tgt-lang", xx, "-c", pipeline_yaml, "-m", model,
                           "-o", scored])
    res.info["score_seconds"], res.info["score_log"] = round(sec, 2), log
    sec, log = run_bimine(["filter", tsv, "--src-lang", src_lang, "--tgt-lang", xx, "--no-model", "-o", filtered])
    res.info["filter_seconds"], res.info["filter_log"] = round(sec, 2), log
    header, rows = read_tsv(scored)
    direction = directions(spec, src_lang, xx, model)
    names = header[2:] if columns is None else columns
    for name in names:
        if name not in header:
            raise SystemExit(f"--scores: {name!r} is not a column of the bimine score output ({', '.join(header[2:])})")
        if name not in direction:
            raise SystemExit(f"column {name!r}: no filter of the pipeline declares its direction")
        v = np.array([float(r[header.index(name)]) for r in rows])
        res.scorers.append(Scorer("bimine", name, v if direction[name] else -v, clean_high=direction[name]))
    fh, frows = read_tsv(filtered)
    keep = np.array([r[fh.index("keep")] == "1" for r in frows])
    res.scorers.append(Scorer("bimine", "bimine rules (keep)", keep.astype(np.float64), keep,
                              note="bimine filter --no-model"))
    # what `bimine filter --top-fraction/--token-budget` ranks by: the graded scores among the
    # pairs the rules keep, the pairs the rules drop below all of them
    for name in [n for n in ("score",) + tuple(n for n in names if n in GRADED) if n in names]:
        v = np.array([float(r[header.index(name)]) for r in rows])
        gated = np.where(keep, v, np.nanmin(v) - 1.0 - np.abs(np.nanmin(v)))
        res.scorers.append(Scorer("bimine", f"rules, then {name}", gated))
    return res


# graded scores also shown gated by the rules (besides `score`), when present in the pipeline
GRADED = ("margin", "confidence", "fc", "bigru")


# ---------------------------------------------------------------- peers

@dataclass(frozen=True)
class PeerSpec:
    name: str
    packages: tuple[str, ...]
    pythons: tuple[str, ...]  # interpreter versions that can install it ("3.9"), best first
    report: tuple[str, ...]  # distributions whose versions are recorded


PEERS = {
    "opusfilter": PeerSpec("opusfilter", ("opusfilter==3.3.1",), ("3.11", "3.12", "3.10"),
                           ("opusfilter", "lingua-language-detector", "py3langid", "rapidfuzz")),
    # cyhunspell 2.0.2 (FastSpell's dependency) has wheels for Python 3.8/3.9 only;
    # kenlm is imported unconditionally by bicleaner_hardrules.lm (built from the PyPI sdist)
    "bicleaner-hardrules": PeerSpec("bicleaner-hardrules", ("bicleaner-hardrules==2.10.8", "kenlm"), ("3.9", "3.8"),
                                    ("bicleaner-hardrules", "fastspell", "kenlm")),
}


def find_python(versions: tuple[str, ...]) -> str | None:
    """An interpreter of the first of ``versions`` found: ``pythonX.Y`` on PATH, this one, or
    pyenv's (``~/.pyenv/versions/X.Y.*``)."""
    for v in versions:
        cands = [shutil.which(f"python{v}")]
        if f"{sys.version_info[0]}.{sys.version_info[1]}" == v:
            cands.append(getattr(sys, "_base_executable", sys.executable))
        cands += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{v}.*/bin/python{v}")), reverse=True)
        for c in filter(None, cands):
            try:
                r = subprocess.run([c, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                   capture_output=True, text=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if r.returncode == 0 and r.stdout.strip() == v:
                return c
    return None


def ensure_venv(spec: PeerSpec, install: bool = True) -> tuple[str | None, str | None]:
    """``(venv folder, None)`` when ``spec`` is installed (installing it when missing), else
    ``(None, why)`` with pip's error."""
    d = os.path.join(VENVS, spec.name)
    marker = os.path.join(d, ".bench-installed.json")
    want = {"packages": list(spec.packages)}
    if os.path.exists(marker):
        with open(marker) as f:
            if json.load(f) == want:
                return d, None
    if not install:
        return None, f"{d} is not installed (run without --no-install)"
    py = find_python(spec.pythons)
    if py is None:
        return None, f"no Python {' or '.join(spec.pythons)} found to make its venv"
    os.makedirs(VENVS, exist_ok=True)
    log = os.path.join(VENVS, f"{spec.name}.log")
    print(f"[filter_dev] installing {' '.join(spec.packages)} into {d} with {py} (log: {log})", file=sys.stderr)
    shutil.rmtree(d, ignore_errors=True)
    with open(log, "w") as f:
        r = subprocess.run([py, "-m", "venv", d], stdout=f, stderr=subprocess.STDOUT)
        if r.returncode == 0:
            r = subprocess.run([os.path.join(d, "bin", "pip"), "install", *spec.packages], stdout=f,
                               stderr=subprocess.STDOUT)
    if r.returncode != 0:
        with open(log) as f:
            lines = [ln.rstrip() for ln in f if ln.strip() and "is ignored: it is neither" not in ln]
        return None, "pip failed:\n" + "\n".join(lines[-12:])
    with open(marker, "w") as f:
        json.dump(want, f)
    return d, None


def peer_versions(venv: str, dists: tuple[str, ...]) -> dict[str, str]:
    code = ("import importlib.metadata as m, json, sys\n"
            "out = {}\n"
            "for d in sys.argv[1:]:\n"
            "    try: out[d] = m.version(d)\n"
            "    except m.PackageNotFoundError: pass\n"
            "out['python'] = '%d.%d.%d' % sys.version_info[:3]\n"
            "print(json.dumps(out))")
    r = subprocess.run([os.path.join(venv, "bin", "python"), "-c", code, *dists], capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr[-500:]}


def _fingerprint(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        if os.path.exists(p):
            with open(p, "rb") as f:
                h.update(f.read())
        else:
            h.update(p.encode())
    return h.hexdigest()[:16]


OPUSFILTER_DRIVER = r'''
"""Score a two-column TSV with the filters of an OpusFilter config (run in OpusFilter's venv).
Writes one JSON line per pair: each filter's accept decision, and its score reduced to one
number where the filter has a clean-high or clean-low direction (the worse side)."""
import json, math, sys
from ruamel.yaml import YAML
from opusfilter import CLEAN_HIGH, CLEAN_LOW
from opusfilter.pipeline import FilterPipeline

config, tsv, out = sys.argv[1:4]
steps = YAML(typ="safe").load(open(config, encoding="utf-8"))["steps"]
filters = [s for s in steps if s["type"] == "filter"][0]["parameters"]["filters"]
pipe = FilterPipeline.from_config(filters)
names = [".".join(t) for t in pipe.get_score_tuples()]
pairs = [line.rstrip("\n").split("\t")[:2] for line in open(tsv, encoding="utf-8")]
columns = {}
for name, filt in zip(names, pipe.filters):
    scores = list(filt.score(pairs))
    accept = [bool(filt.accept(s)) for s in scores]
    graded = None
    if filt.score_direction in (CLEAN_HIGH, CLEAN_LOW):
        red = min if filt.score_direction == CLEAN_HIGH else max
        try:
            graded = [float(red(s)) if isinstance(s, (list, tuple)) else float(s) for s in scores]
            graded = [None if math.isnan(x) else x for x in graded]
        except (TypeError, ValueError):
            graded = None
    columns[name] = {"direction": filt.score_direction, "accept": accept, "score": graded}
json.dump({"filters": names, "columns": columns}, open(out, "w"))
'''


def opusfilter_scorers(venv: str, tsv: str, src_file: str, tgt_file: str, xx: str, src_lang: str = "en") -> PeerResult:
    res = PeerResult("OpusFilter")
    stem = os.path.splitext(tsv)[0]
    cfg = f"{stem}.opusfilter-config.yaml"
    work = os.path.join(OUT, "opusfilter-work")
    os.makedirs(work, exist_ok=True)
    r = subprocess.run([os.path.join(venv, "bin", "opusfilter-autogen"), "--files", src_file, tgt_file,
                        "--langs", src_lang, xx, "--scripts", "Latin", "Latin", "--method", "defaults",
                        "--work-dir", work, "--overwrite", "-o", cfg], capture_output=True, text=True)
    if r.returncode != 0:
        res.error = "opusfilter-autogen failed:\n" + r.stderr[-2000:]
        return res
    driver = os.path.join(OUT, "opusfilter_driver.py")
    with open(driver, "w") as f:
        f.write(OPUSFILTER_DRIVER)
    out = f"{stem}.opusfilter-{_fingerprint(tsv, cfg, driver, json.dumps(PEERS['opusfilter'].packages))}.json"
    t0 = time.perf_counter()
    if not os.path.exists(out):
        r = subprocess.run([os.path.join(venv, "bin", "python"), driver, cfg, tsv, out + ".tmp"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            res.error = "the OpusFilter driver failed:\n" + r.stderr[-3000:]
            return res
        os.replace(out + ".tmp", out)
        res.info["seconds"] = round(time.perf_counter() - t0, 2)
    else:
        res.info["seconds"] = "cached"
    with open(cfg, encoding="utf-8") as f:
        res.info["config"] = f.read()
    with open(out) as f:
        data = json.load(f)
    accepts = []
    for name in data["filters"]:
        col = data["columns"][name]
        acc = np.array(col["accept"], dtype=bool)
        accepts.append(acc)
        res.scorers.append(Scorer("OpusFilter", f"{name} (accept)", acc.astype(np.float64), acc))
        if col["score"] is not None:
            v = np.array([np.nan if x is None else x for x in col["score"]], dtype=np.float64)
            res.scorers.append(Scorer("OpusFilter", f"{name} (score)", v if col["direction"] == "clean_high" else -v))
    allacc = np.all(accepts, axis=0)
    res.scorers.insert(0, Scorer("OpusFilter", "share of filters passed", np.mean(accepts, axis=0)))
    res.scorers.insert(0, Scorer("OpusFilter", "all filters (keep)", allacc.astype(np.float64), allacc,
                                 note="autogen defaults"))
    return res


# bicleaner-hardrules' rules that are on by default (Hardrules.rule_pipeline), in its order, less the
# ones disabled below; one scorer each, so that a rule that fires in no pair is still listed
BICLEANER_RULES = ("no_empty", "not_too_long", "not_too_short", "length_ratio", "no_identical", "no_literals",
                   "no_only_symbols", "no_only_numbers", "no_breadcrumbs", "no_glued_words", "no_repeated_words",
                   "no_unicode_noise", "no_space_noise", "no_paren", "no_escaped_unicode", "no_bad_encoding",
                   "no_titles")
BICLEANER_DISABLED = {
    "no_wrong_language": "--disable_lang_ident: FastSpell downloads fastText lid.176.bin from "
                         "dl.fbaipublicfiles.com at first use; no internet here",
    "lm_filter": "needs a Bicleaner model pack (metadata.yaml with KenLM models), not on PyPI",
    "no_porn": "needs a Bicleaner model pack (porn-removal fastText model), not on PyPI",
}


def bicleaner_scorers(venv: str, tsv: str, xx: str, src_lang: str = "en") -> PeerResult:
    res = PeerResult("bicleaner-hardrules")
    stem = os.path.splitext(tsv)[0]
    cmd = ["-s", src_lang, "-t", xx, "--disable_lang_ident", "--annotated_output", "-A", "-p", "1"]
    out = f"{stem}.bicleaner-{_fingerprint(tsv, json.dumps(cmd), json.dumps(PEERS['bicleaner-hardrules'].packages))}.tsv"
    res.info["command"] = "bicleaner-hardrules IN OUT " + " ".join(cmd)
    t0 = time.perf_counter()
    if not os.path.exists(out):
        r = subprocess.run([os.path.join(venv, "bin", "bicleaner-hardrules"), tsv, out + ".tmp", *cmd, "-q"],
                           capture_output=True, text=True, cwd=OUT)
        if r.returncode != 0:
            res.error = "bicleaner-hardrules failed:\n" + r.stderr[-3000:]
            return res
        os.replace(out + ".tmp", out)
        res.info["seconds"] = round(time.perf_counter() - t0, 2)
    else:
        res.info["seconds"] = "cached"
    with open(out, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    keep = np.array([r[-1] == "keep" for r in rows])
    fired: list[set[str]] = [set() if r[-1] == "keep" else {x.split("(")[0] for x in r[-1].split("+")} for r in rows]
    res.scorers.append(Scorer("bicleaner-hardrules", "default rules (keep)", keep.astype(np.float64), keep,
                              note="lang id, LM and porn rules off"))
    for rule in list(BICLEANER_RULES) + sorted(set().union(*fired) - set(BICLEANER_RULES)):
        ok = np.array([rule not in f for f in fired])
        res.scorers.append(Scorer("bicleaner-hardrules", f"{rule} (accept)", ok.astype(np.float64), ok))
    return res


# ---------------------------------------------------------------- the run

def read_lines(path: str) -> list[str]:
    # newstest2009 holds U+0085: split on "\n" only, never str.splitlines()
    with open(path, encoding="utf-8", newline="") as f:
        return f.read().rstrip("\n").split("\n")


def make_set(data: str, xx: str, n_clean: int, n_per_type: int, seed: int, year: int = 2013):
    d = os.path.join(data, "dev", "newstest")
    src = read_lines(os.path.join(d, f"newstest{year}.en-{xx}.en"))
    tgt = read_lines(os.path.join(d, f"newstest{year}.en-{xx}.{xx}"))
    others = {y: read_lines(os.path.join(d, f"newstest{year}.en-{y}.{y}")) for y in LANGS if y != xx}
    for y in others:
        if read_lines(os.path.join(d, f"newstest{year}.en-{y}.en")) != src:
            raise SystemExit(f"newstest{year}: the English sides of en-{xx} and en-{y} differ; the wrong-language "
                             "noise needs the 4-way parallel set")
    mix = build_mixture(src, tgt, others=others, tgt_lang=xx, n_clean=n_clean, n_per_type=n_per_type, seed=seed)
    os.makedirs(OUT, exist_ok=True)
    base = os.path.join(OUT, f"mix.en-{xx}")
    with open(base + ".tsv", "w", encoding="utf-8", newline="\n") as f:
        f.writelines(f"{p.src}\t{p.tgt}\n" for p in mix)
    for side, lang in (("src", "en"), ("tgt", xx)):
        with open(f"{base}.{lang}", "w", encoding="utf-8", newline="\n") as f:
            f.writelines(getattr(p, side) + "\n" for p in mix)
    with open(base + ".labels.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(p.as_dict(), ensure_ascii=False) + "\n" for p in mix)
    return base, np.array([p.label for p in mix])


def _f(x, pct: bool = False) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "–"
    return f"{100 * x:.1f}" if pct else f"{x:.3f}"


def _mean(vals: list[float]) -> float:
    v = [x for x in vals if x is not None and not np.isnan(x)]
    return float(np.mean(v)) if v else float("nan")


def tables(results: dict, langs: list[str]) -> str:
    """Markdown: AUC per type (mean over the pairs) and all noise per pair; removal recall and
    precision at the clean fraction; the rule sets' own decisions."""
    rows = results["scorers"]
    types = list(NOISE_TYPES)
    short = {"misaligned": "misal.", "partial": "partial", "wrong_lang": "wrong lang", "untranslated": "untransl.",
             "unrelated": "unrel.", "boilerplate": "boilerpl.", "numbers": "numbers"}
    silent = [r for r in rows if all(r["per_lang"][x]["distinct"] <= 1 for x in langs)]
    shown = [r for r in rows if r not in silent]
    out = []
    head = " | ".join(short[t] for t in types)
    out.append(f"ROC-AUC, clean against each noise type (mean over en-{'/'.join(langs)}), and against all noise "
               "per pair; NaN: scores that are NaN (all pairs)\n")
    out.append(f"| tool | scorer | {head} | " + " | ".join(f"all en-{x}" for x in langs) + " | NaN |")
    out.append("|---|---|" + "---|" * (len(types) + len(langs) + 1))
    for r in shown:
        cells = [_f(_mean([r["per_lang"][x]["auc"][t] for x in langs])) for t in types]
        cells += [_f(r["per_lang"][x]["auc"]["all"]) for x in langs]
        out.append(f"| {r['tool']} | {r['name']} | " + " | ".join(cells) + f" | {sum(r['per_lang'][x]['nan'] for x in langs)} |")
    out.append("")
    out.append("Noise removal when keeping the best-scored share equal to the true clean fraction "
               f"({results['clean_fraction'] * 100:.1f} %), mean over the pairs, %: recall per type "
               "(share of that type removed); P=R over all noise; clean kept\n")
    out.append(f"| tool | scorer | {head} | P=R all | clean kept |")
    out.append("|---|---|" + "---|" * (len(types) + 2))
    for r in shown:
        at = [r["per_lang"][x]["at_clean_fraction"] for x in langs]
        cells = [_f(_mean([a[t]["recall"] for a in at]), True) for t in types]
        cells += [_f(_mean([a["recall"] for a in at]), True), _f(_mean([a["clean_kept"] for a in at]), True)]
        out.append(f"| {r['tool']} | {r['name']} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("Removal precision per type at the same cut (that type's removed pairs over them plus the clean "
               "pairs removed), mean over the pairs, %\n")
    out.append(f"| tool | scorer | {head} |")
    out.append("|---|---|" + "---|" * len(types))
    for r in shown:
        at = [r["per_lang"][x]["at_clean_fraction"] for x in langs]
        out.append(f"| {r['tool']} | {r['name']} | "
                   + " | ".join(_f(_mean([a[t]["precision"] for a in at]), True) for t in types) + " |")
    out.append("")
    dec = [r for r in rows if r.get("whole_set")]
    out.append("The rule sets at their own thresholds, mean over the pairs, %: kept share, clean kept, removal "
               "precision and recall (all noise), recall per type\n")
    out.append(f"| tool | decision | kept | clean kept | P | R | {head} |")
    out.append("|---|---|---|---|---|---|" + "---|" * len(types))
    for r in dec:
        d = [r["per_lang"][x]["decision"] for x in langs]
        cells = [_f(_mean([a[k] for a in d]), True) for k in ("kept", "clean_kept", "precision", "recall")]
        cells += [_f(_mean([a[t]["recall"] for a in d]), True) for t in types]
        out.append(f"| {r['tool']} | {r['name']} | " + " | ".join(cells) + " |")
    if silent:
        out.append("")
        out.append("Constant on these sets (never fired; AUC 0.5, left out above): "
                   + ", ".join(f"{r['tool']} {r['name']}" for r in silent) + ".")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--langs", nargs="+", default=list(LANGS), choices=LANGS)
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--model", default="default", help="model of the embedding scores (bimine score -m)")
    ap.add_argument("--pipeline", default=None, help="bimine pipeline YAML (default: bimine score's default pipeline)")
    ap.add_argument("--scores", nargs="+", default=None, help="bimine output columns to evaluate (default: all)")
    ap.add_argument("--clean", type=int, default=1000, help="clean pairs per language pair")
    ap.add_argument("--per-type", type=int, default=150, help="noisy pairs per noise type and language pair")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-peers", action="store_true", help="bimine only")
    ap.add_argument("--no-install", action="store_true", help="use the peers' venvs only if already installed")
    ap.add_argument("--json", default=os.path.join(REPO, ".bench", "filter_dev.json"))
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.data, "dev", "newstest")):
        print(f"filter_dev: skipped, {os.path.join(args.data, 'dev', 'newstest')} not found "
              "(the shared data folder ../shared/data, or BIMINE_SHARED_DATA)")
        return
    os.makedirs(OUT, exist_ok=True)
    spec = pipeline_spec(args.pipeline, args.model)
    pipeline_yaml = os.path.join(OUT, "pipeline.yaml")
    write_pipeline(spec, pipeline_yaml)
    peers: dict[str, tuple[str | None, str | None]] = {}
    if not args.no_peers:
        for name, ps in PEERS.items():
            peers[name] = ensure_venv(ps, install=not args.no_install)
    results: dict = {"set": {"source": "newstest2013", "langs": args.langs, "clean": args.clean,
                             "per_type": args.per_type, "seed": args.seed, "types": list(NOISE_TYPES)},
                     "clean_fraction": args.clean / (args.clean + args.per_type * len(NOISE_TYPES)),
                     "model": args.model, "pipeline": {"filters": spec.filters, "normalize": spec.normalize},
                     "peers": {}, "scorers": [], "timings": {}}
    for name, (venv, err) in peers.items():
        results["peers"][name] = ({"versions": peer_versions(venv, PEERS[name].report), "venv": venv} if venv
                                  else {"error": err})
    if "bicleaner-hardrules" in results["peers"]:
        results["peers"]["bicleaner-hardrules"]["disabled"] = BICLEANER_DISABLED
    by_key: dict[tuple[str, str], dict] = {}
    for xx in args.langs:
        base, labels = make_set(args.data, xx, args.clean, args.per_type, args.seed)
        tsv = base + ".tsv"
        found = [bimine_scorers(tsv, xx, spec, pipeline_yaml, args.model, args.scores)]
        if "opusfilter" in peers and peers["opusfilter"][0]:
            found.append(opusfilter_scorers(peers["opusfilter"][0], tsv, base + ".en", f"{base}.{xx}", xx))
        if "bicleaner-hardrules" in peers and peers["bicleaner-hardrules"][0]:
            found.append(bicleaner_scorers(peers["bicleaner-hardrules"][0], tsv, xx))
        for res in found:
            info = {k: v for k, v in res.info.items() if k != "config"}
            results["timings"].setdefault(res.tool, {})[f"en-{xx}"] = info
            if "config" in res.info:
                results["peers"].setdefault("opusfilter", {})["config_en-" + xx] = res.info["config"]
            if res.error:
                results["peers"].setdefault(res.tool, {})["error_en-" + xx] = res.error
                print(f"[filter_dev] {res.tool} en-{xx}: {res.error}", file=sys.stderr)
            for s in res.scorers:
                key = (s.tool, s.name)
                if key not in by_key:
                    by_key[key] = {"tool": s.tool, "name": s.name, "note": s.note, "whole_set": s.note != "",
                                   "per_lang": {}}
                    results["scorers"].append(by_key[key])
                ev = evaluate(s.values, labels, s.decision)
                ev["distinct"] = int(len(np.unique(s.values)))
                by_key[key]["per_lang"][xx] = ev
    # a scorer missing in a pair (a peer failed there) is left out of the tables
    langs = list(args.langs)
    partial = [r for r in results["scorers"] if not all(x in r["per_lang"] for x in langs)]
    results["scorers"] = [r for r in results["scorers"] if r not in partial]
    md = tables(results, langs)
    if partial:
        md += "\n\nNot run on every pair, left out: " + ", ".join(f"{r['tool']} {r['name']}" for r in partial) + "."
    print(md)
    for name, p in results["peers"].items():
        if "error" in p:
            print(f"\n{name}: NOT RUN — {p['error']}")
        else:
            print(f"\n{name}: " + ", ".join(f"{k} {v}" for k, v in p["versions"].items()))
    results["markdown"] = md
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    write_json(args.json, results)
    print(f"\nwrote {args.json}; the sets and every tool's output are in {OUT}")


if __name__ == "__main__":
    main()
