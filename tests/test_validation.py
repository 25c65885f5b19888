"""User mistakes end in one clear line and a non-zero exit, before any heavy work; valid input still works.

Covers: option choices and ranges, config types and --set overrides, train --resume without a
run, language codes and the declared-language warning, output paths, and BUCC inputs.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import bucc_files

from bimine.cli import classifier, embed, evaluate, filter, mine, train  # noqa: F401  (register the commands)
from bimine.cli.main import cli
from bimine.config import apply_overrides, from_dict
from bimine.errors import ConfigError
from bimine.outputs import check_output_dir, check_output_file


def invoke(*args, input=None):
    """Run the CLI in-process; an unexpected exception stays in ``result.exception``."""
    return CliRunner().invoke(cli, [str(a) for a in args], input=input)


def error_line(r, *must_contain: str) -> str:
    """Assert the command failed cleanly: non-zero exit, no traceback, exactly one error line,
    naming everything in ``must_contain``; return that line."""
    assert r.exit_code != 0, r.output
    assert isinstance(r.exception, SystemExit), repr(r.exception)  # not a crash
    assert "Traceback" not in r.output
    lines = [x for x in r.output.splitlines() if x.lower().startswith("error:")]
    assert len(lines) == 1, r.output
    for text in must_contain:
        assert text in lines[0], (text, lines[0])
    return lines[0]


_DE = [f"{s} {v} {o}." for s, v, o in itertools.product(
    ["Der alte Mann", "Meine Schwester", "Unser Nachbar", "Die Lehrerin", "Jeder Student"],
    ["kauft jeden Morgen", "liest am Abend gern", "vergisst manchmal"],
    ["die Zeitung in der Bäckerei", "ein Buch über Geschichte", "frisches Brot beim Markt"])]
_EN = [f"{s} {v} {o}." for s, v, o in itertools.product(
    ["The old man", "My sister", "Our neighbour", "The teacher", "Every student"],
    ["buys every morning", "likes to read in the evening", "sometimes forgets"],
    ["the newspaper at the bakery", "a book about history", "fresh bread at the market"])]


@pytest.fixture
def texts(tmp_path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.en", tmp_path / "b.de"
    a.write_text("\n".join(_EN) + "\n", encoding="utf-8")
    b.write_text("\n".join(_DE) + "\n", encoding="utf-8")
    return a, b


# =============================================================================== 1. choices and ranges

MINE = ["mine", "a.txt", "b.txt", "--src-lang", "en", "--tgt-lang", "de", "-o", "p.tsv"]
EMBED = ["embed", "a.txt", "--lang", "en", "-o", "a.npy"]
RETRIEVAL = ["eval", "retrieval", "a.txt", "b.txt", "--src-lang", "en", "--tgt-lang", "de"]
BUCC = ["eval", "bucc"] + [x for s in ("train", "test") for k in ("src", "tgt", "gold")
                           for x in (f"--{s}-{k}", f"{s}.{k}")] + ["--src-lang", "de", "--tgt-lang", "en"]


@pytest.mark.parametrize(
    "args, option",
    [
        (BUCC + ["--score", "foo"], "--score"),
        (BUCC + ["--strategy", "best"], "--strategy"),
        (BUCC + ["--score", "ratio", "--score", "Ratio"], "--score"),
        (BUCC + ["-k", "0"], "-k"),
        (MINE + ["-k", "0"], "-k"),
        (MINE + ["--k", "-3"], "-k"),
        (MINE + ["--nprobe", "-1"], "--nprobe"),
        (MINE + ["--k-factor", "0"], "--k-factor"),
        (MINE + ["--workers", "-1"], "--workers"),
        (MINE + ["--min-chars", "-1"], "--min-chars"),
        (MINE + ["--threshold", "nan"], "--threshold"),
        (MINE + ["--threshold", "high"], "--threshold"),
        (MINE + ["--score", "cosine"], "--score"),
        (MINE + ["--strategy", "best"], "--strategy"),
        (MINE + ["--format", "csv"], "--format"),
        (MINE + ["--encoding-errors", "ignore"], "--encoding-errors"),
        (EMBED + ["--shard-size", "0"], "--shard-size"),
        (EMBED + ["--batch-size", "0"], "--batch-size"),
        (EMBED + ["--column", "0"], "--column"),
        (EMBED + ["--workers", "-2"], "--workers"),
        (EMBED + ["--encoding-errors", "ignore"], "--encoding-errors"),
        (RETRIEVAL + ["--max-lines", "-5"], "--max-lines"),
        (RETRIEVAL + ["--max-lines", "0"], "--max-lines"),
        (RETRIEVAL + ["--max-lines", "2.5"], "--max-lines"),
    ],
)
def test_bad_option_values_are_refused_at_parse_time(args, option):
    error_line(invoke(*args), option)


def test_every_numeric_option_is_range_checked_and_every_fixed_set_is_a_choice():
    """Walk all commands: no option is a bare int/float (unchecked) except --threshold
    (any real number, nan refused by a callback); options listing values use Choice."""
    import importlib
    import pkgutil

    import click

    import bimine.cli

    for mod in pkgutil.iter_modules(bimine.cli.__path__):  # every command registered, whatever ran before
        importlib.import_module(f"bimine.cli.{mod.name}")
    unchecked = []

    def walk(cmd, path):
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, path + [name])
            return
        for p in cmd.params:
            if isinstance(p.type, (click.types.IntParamType, click.types.FloatParamType)) and not isinstance(
                p.type, (click.IntRange, click.FloatRange)
            ):
                if p.name != "threshold":
                    unchecked.append(" ".join(path + [p.name]))
            if p.name in ("score", "scores", "strategy", "strategies", "fmt", "encoding_errors"):
                assert isinstance(p.type, click.Choice), p.name

    walk(cli, [])
    assert unchecked == []


def test_valid_choices_and_bounds_are_accepted(tmp_path, tiny_model):
    p = tmp_path / "in.tsv"
    p.write_text("1\tHello there\n2\tGood night\n")
    out = tmp_path / "o.npy"
    r = invoke("embed", p, "--lang", "en", "--model", tiny_model, "-o", out, "--column", "1", "--batch-size", "1",
               "--workers", "0", "--no-progress")
    assert r.exit_code == 0, r.output
    assert np.load(out).shape == (2, 16)
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("alpha beta\ngamma delta\n")
    b.write_text("gamma delta\nalpha beta\n")
    r = invoke("mine", a, b, "--src-lang", "en", "--tgt-lang", "en", "--model", tiny_model, "-o", tmp_path / "p.tsv",
               "-k", "1", "--nprobe", "0", "--k-factor", "1", "--min-chars", "0", "--threshold", "-1e9",
               "--score", "ratio", "--strategy", "greedy", "--no-progress")
    assert r.exit_code == 0, r.output
    assert len((tmp_path / "p.tsv").read_text().splitlines()) == 2


def test_mistyped_index_factory_fails_before_embedding(tmp_path, tiny_model, texts):
    a, b = texts
    r = invoke("mine", a, b, "--src-lang", "en", "--tgt-lang", "de", "--model", tiny_model, "-o", tmp_path / "p.tsv",
               "--index", "IVF64,PQ7", "--work-dir", tmp_path / "w", "--no-progress")
    error_line(r, "invalid FAISS factory string 'IVF64,PQ7'")
    assert not list((tmp_path / "w").glob("*")) if (tmp_path / "w").exists() else True
    assert not (tmp_path / "p.tsv").exists()


# =============================================================================== 2. config types


@dataclasses.dataclass
class _Inner:
    n: int = 1
    xs: list[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Outer:
    name: str
    flag: bool = False
    rate: float = 0.5
    limit: int | None = None
    pair: tuple[int, int] | None = (1, 2)
    sizes: tuple[int, ...] = ()
    inner: _Inner = dataclasses.field(default_factory=_Inner)
    items: list[_Inner] = dataclasses.field(default_factory=list)


@pytest.mark.parametrize(
    "data, message",
    [
        ({"name": "a", "flag": 1}, "flag: expected bool, got 1"),
        ({"name": "a", "flag": "true"}, "flag: expected bool, got 'true'"),
        ({"name": "a", "inner": {"n": True}}, "inner.n: expected int, got true"),
        ({"name": "a", "inner": {"n": 2.5}}, "inner.n: expected int, got 2.5"),
        ({"name": "a", "inner": {"n": 2.0}}, "inner.n: expected int, got 2.0"),
        ({"name": "a", "inner": {"xs": [1, "2"]}}, "inner.xs[1]: expected int, got '2'"),
        ({"name": "a", "inner": {"xs": 3}}, "inner.xs: expected a list of int, got 3"),
        ({"name": "a", "inner": 5}, "inner: expected a mapping"),
        ({"name": "a", "inner": [1]}, "inner: expected a mapping"),
        ({"name": "a", "inner": {"m": 1}}, "unknown config key(s): inner.m"),
        ({"name": "a", "items": [{"n": 1}, {"n": "x"}]}, "items[1].n: expected int, got 'x'"),
        ({"name": "a", "items": {"n": 1}}, "items: expected a list of mappings, got a mapping"),
        ({"name": "a", "rate": True}, "rate: expected float, got true"),
        ({"name": "a", "rate": "fast"}, "rate: expected float, got 'fast'"),
        ({"name": "a", "limit": 1.5}, "limit: expected int or null, got 1.5"),
        ({"name": "a", "pair": [1]}, "pair: expected a list of 2 (int, int) or null, got 1 item(s)"),
        ({"name": "a", "pair": [1, "b"]}, "pair[1]: expected int, got 'b'"),
        ({"name": "a", "sizes": [1, None]}, "sizes[1]: expected int, got null"),
        ({"name": 2012}, "name: expected str, got 2012 (put quotes"),
        ({"flag": True}, "missing config key(s): name"),
        ({"name": "a", "typo": 1}, "unknown config key(s): typo"),
        (["name"], "config: expected a mapping"),
    ],
)
def test_config_types_are_checked_with_dotted_keys(data, message):
    with pytest.raises(ConfigError) as e:
        from_dict(_Outer, data)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_valid_config_values_are_converted():
    cfg = from_dict(_Outer, {"name": "a", "flag": True, "rate": 1, "limit": None, "pair": [3, 4], "sizes": [1, 2],
                             "inner": {"n": 7, "xs": [1]}, "items": [{"n": 2}]})
    assert cfg == _Outer("a", True, 1.0, None, (3, 4), (1, 2), _Inner(7, [1]), [_Inner(2, [])])
    assert isinstance(cfg.rate, float)
    assert from_dict(_Outer, {"name": "a", "rate": "1e-3", "pair": None}).rate == 0.001  # YAML 1.1 reads 1e-3 as text
    assert from_dict(_Outer, {"name": "a", "inner": None}).inner == _Inner()  # an empty section: defaults


def test_set_overrides_index_lists_and_refuse_bad_forms():
    d = {"data": {"train": [{"src": "a"}]}, "train": None}
    apply_overrides(d, ["data.train[0].max_pairs=10", "train.steps=5", "optim.lr=0.1"])
    assert d == {"data": {"train": [{"src": "a", "max_pairs": 10}]}, "train": {"steps": 5}, "optim": {"lr": 0.1}}
    for bad, message in [
        ("train.steps", "expected KEY=VALUE"),
        ("=3", "is not a dotted key"),
        ("train..steps=3", "is not a dotted key"),
        ("data.train[3].src=x", "data.train has 1 item(s)"),
        ("data.train[0].src.x=1", "data.train[0].src is 'a', not a section"),
        ("train.steps=[", "the value is not valid YAML"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            apply_overrides(d, [bad])


def _tiny_run_config(tmp_path: Path) -> Path:
    """A YAML config that trains a 16-bucket model on 12 pairs in a second."""
    corpus = tmp_path / "pairs.tsv"
    corpus.write_text("".join(f"{e}\t{d}\n" for e, d in zip(_EN[:12], _DE[:12])), encoding="utf-8")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        "data:\n  train:\n    - {src: pairs.tsv, src_lang: en, tgt_lang: de}\n"
        "model: {features: {buckets: 64}, embed_dim: 8, hidden: [8], output_dim: 8}\n"
        "train: {batch_size: 4, steps: 3, eval_every: 3, checkpoint_every: 1, log_every: 1, threads: 1}\n"
        "export_quantize: int4\n",
        encoding="utf-8",
    )
    return cfg


@pytest.mark.parametrize(
    "override, message",
    [
        ("train.steps=2.5", "train.steps: expected int, got 2.5"),
        ("train.steps=true", "train.steps: expected int, got true"),
        ("train.batch_size=big", "train.batch_size: expected int, got 'big'"),
        ("loss.bidirectional=1", "loss.bidirectional: expected bool, got 1"),
        ("model.shared='yes'", "model.shared: expected bool, got 'yes'"),
        ("model.hidden=[2.5]", "model.hidden[0]: expected int, got 2.5"),
        ("model.features.buckets=x", "model.features.buckets: expected int, got 'x'"),
        ("model.features.char_ngrams=[3]", "model.features.char_ngrams: expected a list of 2"),
        ("train.max_minutes=soon", "train.max_minutes: expected float or null, got 'soon'"),
        ("data.train=5", "data.train: expected a list of mappings, got 5"),
        ("data.train[0].max_pairs=0.5", "data.train[0].max_pairs: expected int or null, got 0.5"),
        ("data.train[0].src_lang=xx", "data.train[0].src_lang: invalid language code 'xx'"),
        ("model.languages=[en, english]", "model.languages[1]: invalid language code 'english'"),
        ("train=5", "train: expected a mapping"),
        ("train.stpes=5", "unknown config key(s): train.stpes"),
        ("export_quantize=3", "export_quantize: expected str, got 3"),
        ("train.eval_every=0", "train.eval_every: must be >= 1, got 0"),
        ("optim.lr=0", "optim.lr: must be a number > 0, got 0.0"),
        ("hard_negatives.fraction=1.5", "hard_negatives.fraction: must be between 0 and 1"),
        ("loss.similarity=euclid", "loss.similarity: must be cosine or dot"),
        ("data.train[0].src=missing.tsv", "data.train[0].src:"),
        ("export_quantize=pq3", "export_quantize pq3: model.embed_dim 8 must be a multiple of 3"),
        ("model.embed_dim=7", "export_quantize int4 needs an even model.embed_dim"),
    ],
)
def test_train_config_mistakes_fail_before_any_data_is_read(tmp_path, override, message, monkeypatch):
    import bimine.training.trainer as trainer

    def no_loading(*a, **k):
        raise AssertionError("data was loaded before the config was checked")

    monkeypatch.setattr(trainer, "load_groups", no_loading)
    cfg = _tiny_run_config(tmp_path)
    r = invoke("train", "-c", cfg, "-o", tmp_path / "run", "--set", override, "--no-progress")
    error_line(r, message)
    assert not (tmp_path / "run").exists()  # nothing written either


def test_missing_hard_negative_baseline_fails_before_any_data_is_read(tmp_path):
    r = invoke("train", "-c", _tiny_run_config(tmp_path), "-o", tmp_path / "run", "--set",
               "hard_negatives.per_example=2", "--set", f"hard_negatives.baseline={tmp_path / 'nope'}")
    error_line(r, "hard_negatives.baseline:", "nope")


@pytest.mark.parametrize(
    "yaml_text, message",
    [
        ("- a\n- b\n", "the top level must be a mapping"),
        ("train: 5\n", "train: expected a mapping"),
        ("train: [1, 2]\n", "train: expected a mapping"),
        ("data: {train: 3}\n", "data.train: expected a list of mappings, got 3"),
        ("data:\n  train:\n    - {src: x, src_lang: en}\n", "missing config key(s): data.train[0].tgt_lang"),
        ("trian: {steps: 5}\n", "unknown config key(s): trian"),
        ("train: {steps: 5\n", "invalid YAML"),
        ("data:\n  train:\n    - {src: x, src_lang: en, tgt_lang: qqq}\n", "data.train[0].tgt_lang"),
    ],
)
def test_config_file_mistakes_are_one_line_errors(tmp_path, yaml_text, message):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml_text)
    error_line(invoke("train", "-c", cfg, "-o", tmp_path / "run"), message)


def test_a_valid_config_with_overrides_trains(tmp_path):
    cfg = _tiny_run_config(tmp_path)
    r = invoke("train", "-c", cfg, "-o", tmp_path / "run", "--no-progress", "--set", "optim.lr=1e-3",
               "--set", "train.max_minutes=null", "--set", "data.train[0].max_pairs=10")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "run/model/model.safetensors").exists()


# =============================================================================== 3. --resume without a run


def test_resume_without_a_run_is_an_error_naming_the_folder(tmp_path):
    cfg = _tiny_run_config(tmp_path)
    missing = tmp_path / "no-such-run"
    line = error_line(invoke("train", "-c", cfg, "-o", missing, "--resume"), str(missing), "without --resume")
    assert "does not exist" in line and not missing.exists()
    empty = tmp_path / "empty-run"
    empty.mkdir()
    line = error_line(invoke("train", "-c", cfg, "-o", empty, "--resume"), str(empty), "no checkpoint")
    assert list(empty.iterdir()) == []  # no fresh run was started there


def test_resume_continues_a_run_and_a_second_fresh_run_is_refused(tmp_path):
    cfg = _tiny_run_config(tmp_path)
    run = tmp_path / "run"
    assert invoke("train", "-c", cfg, "-o", run, "--no-progress").exit_code == 0
    r = invoke("train", "-c", cfg, "-o", run, "--resume", "--set", "train.steps=5", "--no-progress")
    assert r.exit_code == 0, r.output
    import json

    assert json.loads((run / "model/config.json").read_text())["training"]["steps"] == 5
    error_line(invoke("train", "-c", cfg, "-o", run), "already holds a run", "--resume")


# =============================================================================== 4. language codes


@pytest.mark.parametrize(
    "args, option, code",
    [
        (["embed", "a.txt", "--lang", "xx", "-o", "a.npy"], "--lang", "'xx'"),
        (["embed", "a.txt", "--lang", "english", "-o", "a.npy"], "--lang", "for English that is 'en'"),
        (MINE[:3] + ["--src-lang", "qqq", "--tgt-lang", "de", "-o", "p.tsv"], "--src-lang", "'qqq'"),
        (MINE[:3] + ["--src-lang", "en", "--tgt-lang", "deutsch", "-o", "p.tsv"], "--tgt-lang", "'deutsch'"),
        (RETRIEVAL[:4] + ["--src-lang", "en", "--tgt-lang", "fr_Latin"], "--tgt-lang", "'fr_Latin'"),
        (BUCC[:-4] + ["--src-lang", "zz", "--tgt-lang", "en"], "--src-lang", "'zz'"),
    ],
)
def test_unknown_language_codes_are_refused(args, option, code):
    line = error_line(invoke(*args), option, code)
    assert "'fra_Latn'" in line  # says how to write one


def test_all_code_forms_embed_identically(tmp_path, tiny_model):
    p = tmp_path / "in.txt"
    p.write_text("Le chat dort.\nBonjour.\n")
    outs = []
    for code in ("fr", "fra", "fre", "fra_Latn", "fr-CA"):
        out = tmp_path / f"{code}.npy"
        r = invoke("embed", p, "--lang", code, "--model", tiny_model, "-o", out, "--no-progress")
        assert r.exit_code == 0, r.output
        outs.append(np.load(out))
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])
    out = tmp_path / "acu.npy"  # a language without a 639-1 code, unknown to the identifier
    assert invoke("embed", p, "--lang", "acu", "--model", tiny_model, "-o", out, "--no-progress").exit_code == 0


# =============================================================================== 5. declared-language warning


def test_embed_warns_when_the_text_is_another_language(tmp_path, tiny_model, texts):
    _, de = texts
    r = invoke("embed", de, "--lang", "fr", "--model", tiny_model, "-o", tmp_path / "o.npy", "--no-progress")
    assert r.exit_code == 0, r.output
    warnings = [x for x in r.output.splitlines() if x.startswith("warning:")]
    assert len(warnings) == 1
    assert "b.de: declared 'fr' but" in warnings[0] and "look like 'de'" in warnings[0] and "--lang" in warnings[0]
    assert np.load(tmp_path / "o.npy").shape[0] == len(_DE)  # a warning, not an error
    r = invoke("embed", de, "--lang", "de", "--model", tiny_model, "-o", tmp_path / "o.npy", "--no-progress")
    assert r.exit_code == 0 and "warning:" not in r.output


def test_mine_warns_for_each_side(tmp_path, tiny_model, texts):
    en, de = texts
    r = invoke("mine", en, de, "--src-lang", "de", "--tgt-lang", "en", "--model", tiny_model, "-o",
               tmp_path / "p.tsv", "--no-progress")
    assert r.exit_code == 0, r.output
    warnings = [x for x in r.output.splitlines() if x.startswith("warning:")]
    assert len(warnings) == 2
    assert "a.en: declared 'de'" in warnings[0] and "--src-lang" in warnings[0]
    assert "b.de: declared 'en'" in warnings[1] and "--tgt-lang" in warnings[1]
    r = invoke("mine", en, de, "--src-lang", "en", "--tgt-lang", "de", "--model", tiny_model, "-o",
               tmp_path / "p.tsv", "--no-progress")
    assert r.exit_code == 0 and "warning:" not in r.output


# =============================================================================== 6. output paths


def test_mine_output_in_a_missing_folder_fails_before_any_work(tmp_path, tiny_model, texts, monkeypatch):
    import bimine.mining.pipeline as pipeline

    def no_work(*a, **k):
        raise AssertionError("mining started: the inputs were read")

    monkeypatch.setattr(pipeline, "scan_text", no_work)  # mine_files' first read of the inputs
    a, b = texts
    out = tmp_path / "missing" / "x.tsv"
    r = invoke("mine", a, b, "--src-lang", "en", "--tgt-lang", "de", "--model", tiny_model, "-o", out)
    error_line(r, "-o/--output", str(out), "does not exist")
    assert not out.parent.exists()


@pytest.mark.parametrize("how", ["same", "relative", "symlink", "hardlink"])
def test_mine_output_equal_to_an_input_is_refused(tmp_path, tiny_model, texts, how, monkeypatch):
    a, b = texts
    before = b.read_bytes()
    if how == "same":
        out = b
    elif how == "relative":
        monkeypatch.chdir(tmp_path)
        out = Path("sub/../b.de")
        (tmp_path / "sub").mkdir()
    elif how == "symlink":
        out = tmp_path / "link.tsv"
        out.symlink_to(b)
    else:
        out = tmp_path / "hard.tsv"
        os.link(b, out)
    r = invoke("mine", a, b, "--src-lang", "en", "--tgt-lang", "de", "--model", tiny_model, "-o", out)
    error_line(r, "-o/--output", "is the input")
    assert b.read_bytes() == before


def test_mine_output_inside_a_store_or_onto_a_folder_is_refused(tmp_path, tiny_model, texts):
    a, b = texts
    store = tmp_path / "sa"
    assert invoke("embed", a, "--lang", "en", "--model", tiny_model, "--store", "-o", store,
                  "--no-progress").exit_code == 0
    base = ["mine", a, b, "--src-lang", "en", "--tgt-lang", "de", "--model", tiny_model]
    error_line(invoke(*base, "--src-store", store, "-o", store / "manifest.json"), "inside the input folder")
    error_line(invoke(*base, "--src-store", store, "-o", store), "-o/--output")
    error_line(invoke(*base, "-o", tmp_path), "-o/--output", "is a folder")
    (tmp_path / "wfile").write_text("x")
    error_line(invoke(*base, "-o", tmp_path / "p.tsv", "--work-dir", tmp_path / "wfile"), "--work-dir",
               "is an existing file")


def test_embed_output_checks(tmp_path, tiny_model, texts):
    a, _ = texts
    before = a.read_bytes()
    base = ["embed", a, "--lang", "en", "--model", tiny_model, "--no-progress"]
    error_line(invoke(*base, "-o", tmp_path / "missing_dir" / "x.npy"), "-o/--output", "missing_dir",
               "does not exist")
    error_line(invoke(*base, "-o", a), "-o/--output", "is the input")
    error_line(invoke(*base, "--store", "-o", a), "-o/--output", "is the input")
    existing = tmp_path / "existing.npy"
    existing.write_bytes(b"keep me")
    error_line(invoke(*base, "--store", "-o", existing), "-o/--output", "is an existing file")
    assert existing.read_bytes() == b"keep me" and a.read_bytes() == before
    error_line(invoke(*base, "-o", tmp_path), "-o/--output", "is a folder")
    # what stays allowed: replacing an earlier output, a store in new nested folders
    assert invoke(*base, "-o", existing).exit_code == 0 and np.load(existing).shape == (len(_EN), 16)
    r = invoke(*base, "--store", "-o", tmp_path / "new" / "nested" / "store")
    assert r.exit_code == 0 and (tmp_path / "new/nested/store/manifest.json").exists()


def test_train_output_that_is_a_file_is_refused(tmp_path):
    cfg = _tiny_run_config(tmp_path)
    f = tmp_path / "run.txt"
    f.write_text("not a folder")
    error_line(invoke("train", "-c", cfg, "-o", f), "-o/--output", "is an existing file")
    error_line(invoke("train", "-c", cfg, "-o", cfg), "-o/--output")
    error_line(invoke("train", "-c", cfg, "-o", f / "sub"), "-o/--output", "is a file")


def test_output_checks_report_unwritable_folders(tmp_path, monkeypatch):
    import tempfile

    def denied(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", denied)
    with pytest.raises(ConfigError, match=r"^-o/--output .*out\.tsv: cannot write in folder"):
        check_output_file(tmp_path / "out.tsv")
    with pytest.raises(ConfigError, match=r"^--work-dir .*: cannot write in parent folder"):
        check_output_dir(tmp_path / "new" / "dir", option="--work-dir")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes through permission bits")
def test_output_in_a_read_only_folder_is_refused(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(ConfigError, match="cannot write in folder"):
            check_output_file(ro / "x.tsv")
    finally:
        ro.chmod(0o700)


def test_output_checks_leave_nothing_behind(tmp_path):
    check_output_file(tmp_path / "a.tsv", inputs=(None, "-", tmp_path / "b.tsv"))
    check_output_dir(tmp_path / "x" / "y", inputs=(tmp_path / "b.tsv",))
    assert list(tmp_path.iterdir()) == []


# =============================================================================== 7. eval bucc inputs


@pytest.mark.parametrize(
    "files, message",
    [
        ({"test.gold": ""}, "test.gold: no gold pairs"),
        ({"train.gold": "\n\n"}, "train.gold: no gold pairs"),
        ({"test.gold": "t2\ts1\n"}, "test.gold:1: expected '<src_id><TAB><tgt_id>'"),
        ({"test.gold": "s1\tt2\nx9\tt1\n"}, "'x9' is not an id of"),
        ({"test.gold": "s1 t2\n"}, "test.gold:1: expected '<src_id><TAB><tgt_id>', got 1"),
        ({"train.src": ""}, "train.src: no sentences"),
        ({"test.tgt": "\n"}, "test.tgt: no sentences"),
        ({"test.src": "s1\ta\ns1\tb\n"}, "sentence ids are not unique ('s1' appears 2 times)"),
    ],
)
def test_bucc_input_mistakes_fail_before_embedding(tmp_path, tiny_model, files, message, monkeypatch):
    import bimine.eval.bucc as bucc

    def no_embedding(*a, **k):
        raise AssertionError("embedding started")

    monkeypatch.setattr(bucc, "embed_split", no_embedding)
    error_line(invoke(*bucc_files(tmp_path, files), "--model", tiny_model), message)


def test_bucc_swapped_gold_columns_are_named(tmp_path, tiny_model):
    line = error_line(invoke(*bucc_files(tmp_path, {"train.gold": "t2\ts1\n"}), "--model", tiny_model))
    assert "swapped" in line and "train.gold:1" in line


def test_bucc_plot_path_is_checked_first(tmp_path, tiny_model):
    args = bucc_files(tmp_path)
    error_line(invoke(*args, "--model", tiny_model, "--plot", tmp_path / "nope" / "pr.png"), "--plot",
               "does not exist")
    error_line(invoke(*args, "--model", tiny_model, "--plot", tmp_path / "test.gold"), "--plot", "is the input")
    r = invoke(*args, "--model", tiny_model, "--json")
    assert r.exit_code == 0, r.output  # the valid split still evaluates
