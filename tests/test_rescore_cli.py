"""`bimine train-rescorer` and `bimine mine --rescore` end to end, on newstest slices the
default encoder never trained on (dev sets, read only here as small slices)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from bimine.cli import mine, rescore  # noqa: F401  (register the commands)
from bimine.cli.main import cli


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _news(shared: Path, year: int, n: int) -> list[tuple[str, str]]:
    d = shared / "dev" / "newstest"
    en = (d / f"newstest{year}.en-fr.en").read_text(encoding="utf-8").splitlines()[:n]
    fr = (d / f"newstest{year}.en-fr.fr").read_text(encoding="utf-8").splitlines()[:n]
    return list(zip(fr, en))


def train_on_news(shared: Path, d: Path, *more):
    """`bimine train-rescorer` on 1,400 newstest2009 fr-en pairs (150 gold among 600 a side)
    into ``d / "r"``, with ``more`` options; returns the CLI result."""
    tsv = d / "news2009.en-fr.tsv"
    tsv.write_text("".join(f"{en}\t{fr}\n" for fr, en in _news(shared, 2009, 1400)), encoding="utf-8")
    return run("train-rescorer", f"fr:{tsv}", "--gold", 150, "--distractors", 600, "--near", 0, "--trees", 100,
               *more, "-o", d / "r")


@pytest.fixture(scope="module")
def rescorer(shared_data, tmp_path_factory):
    d = tmp_path_factory.mktemp("rescorer")
    r = train_on_news(shared_data, d)
    assert r.exit_code == 0, r.output
    return d / "r"


def test_trained_rescorer_beats_the_margin_on_a_planted_corpus(rescorer, shared_data):
    from bimine.encoders import load_encoder
    from bimine.mining.planted import mine_candidates, plant_pairs
    from bimine.scoring.logistic import best_f1_threshold
    from bimine.scoring.rescore import Rescorer
    from bimine.scoring.vdpwi import WordVectors

    enc = load_encoder("default")
    split = plant_pairs(_news(shared_data, 2010, 1500), gold=150, distractors=650, prefix="t")
    c = mine_candidates(enc.encode(split.src, "fr"), enc.encode(split.tgt, "en"), split.src, split.tgt,
                        WordVectors(enc), "fr", "en")
    y = np.array([(split.src_ids[a], split.tgt_ids[b]) in split.gold for a, b in zip(c.src, c.tgt)], dtype=int)
    f1_margin = best_f1_threshold(c.score, y, n_gold=len(split.gold))[3]
    f1_rescored = best_f1_threshold(Rescorer.load(rescorer).predict(c.features), y, n_gold=len(split.gold))[3]
    print(f"F1 margin {f1_margin:.3f} rescored {f1_rescored:.3f}")
    # The trees beat the margin here with the encoders before issue 56 (this asserted rescored > margin);
    # with issue 56's they tie it here (margin 0.911, trees 0.910: one gold pair is 0.007 of F1),
    # as on news on average (docs/rescoring.md). What must hold: trees trained on 1,400 pairs do not
    # lose more than a gold pair to the margin (an untrained or broken rescorer loses far more).
    assert f1_rescored >= f1_margin - 0.007, (f1_rescored, f1_margin)


HARNESS = r'''
import sys, time
from pathlib import Path
import bimine.scoring.rescore as R
marker = Path(sys.argv[1])
orig = R.Rescorer.predict
calls = []
def predict(self, f):
    calls.append(1)
    if len(calls) == 2:  # the second block: the kNN lists are saved, rescoring under way
        marker.write_text("rescoring")
        time.sleep(60)
    return orig(self, f)
R.Rescorer.predict = predict
R.rescore_pairs.__kwdefaults__["block"] = 100  # several blocks on this small corpus
from bimine.cli.main import main
sys.argv = ["bimine"] + sys.argv[2:]
main()
'''


def _sides(tmp_path: Path, shared: Path) -> tuple[Path, Path]:
    from bimine.mining.planted import plant_pairs

    split = plant_pairs(_news(shared, 2011, 900), gold=100, distractors=350, prefix="m")
    src, tgt = tmp_path / "m.fr", tmp_path / "m.en"
    src.write_text("".join(t + "\n" for t in split.src), encoding="utf-8")
    tgt.write_text("".join(t + "\n" for t in split.tgt), encoding="utf-8")
    return src, tgt


def kill_at_marker(harness_code: str, tmp_path: Path, args: list, wait_s: float = 180) -> None:
    """Run ``bimine ARGS`` through ``harness_code`` (which writes its first argument, a marker
    file, when the run reaches the point to kill it at) and SIGKILL it there."""
    harness, marker = tmp_path / "harness.py", tmp_path / "marker"
    harness.write_text(harness_code)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    p = subprocess.Popen([sys.executable, str(harness), str(marker), *map(str, args)],
                         env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + wait_s
    while not marker.exists() and p.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert p.poll() is None, "the run ended before it could be killed: " + p.stderr.read()
    p.send_signal(signal.SIGKILL)
    p.wait()


def test_mine_rescore_killed_then_resumed_gives_the_same_bytes(rescorer, shared_data, tmp_path):
    src, tgt = _sides(tmp_path, shared_data)
    want = tmp_path / "want.tsv"
    r = run("mine", src, tgt, "--rescore", rescorer, "-o", want, "--no-progress")
    assert r.exit_code == 0, r.output
    rows = [ln.split("\t") for ln in want.read_text(encoding="utf-8").splitlines()]
    assert rows and all(len(x) == 4 for x in rows)  # probability, src, tgt, margin
    prob = [float(x[0]) for x in rows]
    assert prob == sorted(prob, reverse=True) and 0 <= min(prob) and max(prob) <= 1
    plain = tmp_path / "plain.tsv"
    assert run("mine", src, tgt, "-o", plain, "--no-progress").exit_code == 0
    # the same pairs as plain mining, its scores in the last column
    margins = {(a, b): s for s, a, b in (ln.split("\t") for ln in plain.read_text(encoding="utf-8").splitlines())}
    assert {(x[1], x[2]): x[3] for x in rows} == margins

    work, got = tmp_path / "work", tmp_path / "got.tsv"
    kill_at_marker(HARNESS, tmp_path, ["mine", src, tgt, "--rescore", rescorer, "-o", got, "--work-dir", work,
                                       "--no-progress"])
    assert not got.exists() and list(work.glob("knn-fwd-*.npz")) and not list(work.glob("rescore-*.npy"))
    r = run("mine", src, tgt, "--rescore", rescorer, "-o", got, "--work-dir", work, "--no-progress")
    assert r.exit_code == 0 and "kNN fwd" in r.output
    assert got.read_bytes() == want.read_bytes()
    assert list(work.glob("rescore-*.npy"))
    # a third run reuses the rescored probabilities too
    again = tmp_path / "again.tsv"
    r = run("mine", src, tgt, "--rescore", rescorer, "-o", again, "--work-dir", work, "--no-progress")
    assert "rescored pairs" in r.output and again.read_bytes() == want.read_bytes()


def test_threshold_trained_needs_a_rescorer_and_uses_its_threshold(rescorer, shared_data, tmp_path):
    from bimine.scoring.rescore import Rescorer

    src, tgt = _sides(tmp_path, shared_data)
    r = run("mine", src, tgt, "--threshold", "trained", "-o", tmp_path / "x.tsv")
    assert r.exit_code != 0 and "--rescore" in r.output
    out = tmp_path / "t.tsv"
    assert run("mine", src, tgt, "--rescore", rescorer, "--threshold", "trained", "-o", out, "--no-progress").exit_code == 0
    thr = Rescorer.load(rescorer).threshold
    probs = [float(ln.split("\t")[0]) for ln in out.read_text(encoding="utf-8").splitlines()]
    assert probs and min(probs) >= round(thr, 6) - 1e-6
    r = run("mine", src, tgt, "--threshold", "nope", "-o", tmp_path / "y.tsv")
    assert r.exit_code != 0 and "not a number" in r.output


def test_rescore_as_a_score_of_bimine_score(rescorer, shared_data, tmp_path):
    from bimine.cli import filter as _filter  # noqa: F401  (register the command)

    pairs = _news(shared_data, 2012, 400)
    rows = pairs[:200] + [(pairs[200 + n][0], pairs[399 - n][1]) for n in range(100)]  # 100 misaligned pairs
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"{fr}\t{en}\n" for fr, en in rows), encoding="utf-8")
    cfg = tmp_path / "p.yaml"
    cfg.write_text(f"filters:\n  - score: rescore\n    path: {rescorer}\n    threshold: trained\n")
    out = tmp_path / "scored.tsv"
    r = run("score", tsv, "--src-lang", "fr", "--tgt-lang", "en", "-c", cfg, "-o", out, "--no-progress")
    assert r.exit_code == 0, r.output
    lines = out.read_text(encoding="utf-8").splitlines()
    col = lines[0].split("\t").index("rescore")
    p = np.array([float(ln.split("\t")[col]) for ln in lines[1:]])
    assert len(p) == 300 and np.all((p >= 0) & (p <= 1))
    assert np.median(p[:200]) > 0.5 > np.median(p[200:])


def test_min_words_keeps_long_pairs_and_gold_only_from_the_held_out_part(tmp_path):
    from bimine.errors import InputError
    from bimine.training.rescorer import held_out_then_rest

    lines = [f"held {n} one two three\tgardé {n}" for n in range(6)]  # 5 English words
    lines += ["held short\tcourt"] * 2 + ["held short again\tcourt encore"]
    lines += [f"rest {n} one two three\treste {n}" for n in range(4)] + ["rest short\tcourt"]
    f = tmp_path / "en-fr.tsv"
    f.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    got = list(held_out_then_rest(str(f), holdout=9, gold=6, min_words=5))
    assert got == [(f"gardé {n}", f"held {n} one two three") for n in range(6)] + \
        [(f"reste {n}", f"rest {n} one two three") for n in range(4)]
    assert len(list(held_out_then_rest(str(f), holdout=9, gold=8))) == 14  # no filter: every line
    with pytest.raises(InputError, match="6 usable held-out pairs of 5\\+ English words, fewer than --gold 7"):
        held_out_then_rest(str(f), holdout=9, gold=7, min_words=5)
    with pytest.raises(InputError, match="8 usable held-out pairs, fewer than --gold 9"):  # one repeated pair
        held_out_then_rest(str(f), holdout=9, gold=9)


def test_the_write_step_does_not_count_the_rescoring(rescorer, shared_data, tmp_path, monkeypatch):
    import bimine.mining.pipeline as mp
    import bimine.scoring.rescore as rs
    from bimine.encoders import load_encoder
    from bimine.mining.pipeline import mine_files
    from bimine.mining.spec import MineJob

    real = rs.rescore_pairs

    def slow(*a, **k):
        time.sleep(1.0)
        return real(*a, **k)

    monkeypatch.setattr(mp, "rescore_pairs", slow)
    src, tgt = _sides(tmp_path, shared_data)
    rep = mine_files(MineJob(str(src), str(tgt), str(tmp_path / "o.tsv"), src_lang="fr", tgt_lang="en", progress=False,
                             workers=1), encoder=load_encoder("default"), rescorer=rs.Rescorer.load(rescorer))
    assert rep.seconds["rescore"] >= 1.0
    assert rep.seconds["write"] < 0.9, rep.seconds  # the summary's steps add up to the run, nothing twice


@pytest.mark.parametrize("args, says", [
    (["PAIRS"], "f.tsv:2: expected 'English<TAB>translation', got 1 tab-separated field(s)"),
    (["{d}/f.tsv"], "expected LANG:FILE"),
    ([], "give either --recipe or PAIRS"),
    (["PAIRS", "--recipe", "{d}"], "give either --recipe or PAIRS"),
    (["fr:{d}/missing.tsv"], "missing.tsv"),
    (["PAIRS", "-o", "{d}/taken"], "already holds a rescorer"),
    (["PAIRS", "--cross", "--cross-kind", "bert"], "'bert' is not one of 'e5', 'scratch'"),
    # issue 41: a folder without a recipe raised FileNotFoundError
    (["--recipe", "{d}"], "not a folder of 'bimine data build' (no manifest.json)"),
    (["--recipe", "{d}/badrecipe"], "badrecipe/manifest.json: not a manifest of 'bimine data build'"),
])
def test_train_rescorer_user_mistakes_end_in_one_error_line(tmp_path, args, says):
    (tmp_path / "f.tsv").write_text("Hello world\tBonjour le monde\nbad line\n", encoding="utf-8")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "rescorer.json").write_text("{}")
    (tmp_path / "badrecipe").mkdir()
    (tmp_path / "badrecipe" / "manifest.json").write_text('{"languages": [1]}')
    args = [a.replace("PAIRS", f"fr:{tmp_path}/f.tsv").replace("{d}", str(tmp_path)) for a in args]
    if "-o" not in args:
        args += ["-o", str(tmp_path / "out")]
    r = CliRunner().invoke(cli, ["train-rescorer", *args])
    assert r.exit_code != 0 and isinstance(r.exception, SystemExit), (r.output, r.exception)
    lines = [x for x in r.output.splitlines() if x.lower().startswith("error:")]
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in r.output, r.output
    assert not (tmp_path / "out" / "rescorer.json").exists()


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train.en-fr.tsv"


def test_train_rescorer_refuses_pairs_without_a_found_gold_pair(tmp_path):
    """Issue 41: on pairs that are not translations (the French side shuffled) the miner finds
    no gold pair, and train-rescorer wrote a rescorer trained on 0 positives (threshold 1e-15 or
    0); now a one-line error, and nothing written."""
    rows = [r.split("\t") for r in EXAMPLE.read_text(encoding="utf-8").splitlines()]
    fr = [r[1] for r in rows]
    np.random.default_rng(0).shuffle(fr)
    (tmp_path / "s.tsv").write_text("".join(f"{r[0]}\t{f}\n" for r, f in zip(rows, fr)), encoding="utf-8")
    r = CliRunner().invoke(cli, ["train-rescorer", f"fr:{tmp_path}/s.tsv", "--gold", "10", "--distractors", "200",
                                 "--near", "0", "--trees", "20", "-o", str(tmp_path / "out")])
    assert r.exit_code == 2, r.output
    errors = [x for x in r.output.splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and "no gold pair among the" in errors[0] and "Traceback" not in r.output, r.output
    assert not (tmp_path / "out" / "rescorer.json").exists()


def test_train_rescorer_refuses_one_class_in_the_library():
    from bimine.errors import ConfigError
    from bimine.scoring.rescore import FEATURES
    from bimine.training.rescorer import train_rescorer

    x = np.random.default_rng(0).random((50, len(FEATURES)))
    with pytest.raises(ConfigError, match="0 of 50 training rows are gold pairs"):
        train_rescorer(x, np.zeros(50), trees=2)
    y = np.r_[np.ones(25), np.zeros(25)]
    with pytest.raises(ConfigError, match="no gold pair among the 10 dev rows"):
        train_rescorer(x, y, dev=(x[:10], np.zeros(10)), trees=2)


def test_train_rescorer_warns_when_lang_is_not_the_files_language(tmp_path):
    """Issue 41: 'train-rescorer de:FILE' of French text recorded 'de' without a word; now the
    language warning of embed and mine (and one when the columns are the wrong way round)."""
    r = CliRunner().invoke(cli, ["train-rescorer", f"de:{EXAMPLE}", "--gold", "50", "--distractors", "200",
                                 "--near", "0", "--trees", "20", "-o", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    warnings = [x for x in r.output.splitlines() if x.startswith("warning:")]
    assert len(warnings) == 1 and "declared 'de'" in warnings[0] and "French" in warnings[0], r.output
    assert f"is the LANG of de:{EXAMPLE} right?" in warnings[0]
    rows = [r.split("\t") for r in EXAMPLE.read_text(encoding="utf-8").splitlines()]
    (tmp_path / "rev.tsv").write_text("".join(f"{b}\t{a}\n" for a, b in rows), encoding="utf-8")
    r = CliRunner().invoke(cli, ["train-rescorer", f"fr:{tmp_path}/rev.tsv", "--gold", "50", "--distractors",
                                 "200", "--near", "0", "--trees", "20", "-o", str(tmp_path / "out2")])
    assert r.exit_code == 0, r.output
    assert "column order ('English<TAB>translation')" in r.output, r.output


def test_run_job_trains_the_same_rescorer_as_the_command(tmp_path):
    """`bimine run` with 'job: train-rescorer' builds the RescorerJob the command builds: the same
    trees from the same options."""
    from bimine.cli import run as _run_cmd  # noqa: F401  (registers the command)

    opts = ["--gold", "10", "--distractors", "200", "--near", "0", "--trees", "20"]
    r = CliRunner().invoke(cli, ["train-rescorer", f"fr:{EXAMPLE}", *opts, "-o", str(tmp_path / "cmd")])
    assert r.exit_code == 0, r.output
    job = tmp_path / "job.yaml"
    job.write_text(f"job: train-rescorer\npairs: ['fr:{EXAMPLE}']\ngold: 10\ndistractors: 200\nnear: 0\ntrees: 20\n"
                   f"output: {tmp_path / 'run'}\n", encoding="utf-8")
    r2 = CliRunner().invoke(cli, ["run", str(job)])
    assert r2.exit_code == 0, r2.output
    assert (tmp_path / "cmd" / "model.txt").read_bytes() == (tmp_path / "run" / "model.txt").read_bytes()
    assert r.output.splitlines()[-1].replace(str(tmp_path / "cmd"), "X") == \
        r2.output.splitlines()[-1].replace(str(tmp_path / "run"), "X")
    job.write_text("job: train-rescorer\npair: x\noutput: o\n", encoding="utf-8")
    r3 = CliRunner().invoke(cli, ["run", str(job)])
    assert r3.exit_code == 2 and "pair" in r3.output, r3.output  # an unknown key is an error
