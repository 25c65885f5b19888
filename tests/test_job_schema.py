"""One validation per job (issue 72 §4): a job file, a ``--set`` override, a Python job object and
the command line build the same object, checked by its fields' types and ranges (the schema:
each field's type hint and ``bounds`` metadata, ``bimine.config.check_fields``) with the same
messages. Every field's bad values are generated from that schema and tried both ways."""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path

import pytest
from click.testing import CliRunner

from bimine.cli.main import registered
from bimine.config import apply_overrides, from_dict
from bimine.documents.job import AlignJob
from bimine.documents.spec import DocMatchConfig, DocsMatchJob
from bimine.errors import ConfigError
from bimine.filtering.job import FilterJob
from bimine.index.faiss_index import IndexConfig
from bimine.mining.spec import MineConfig, MineJob
from bimine.training.adapt import AdaptJob
from bimine.training.classifier import CalibrateJob, ClassifierJob
from bimine.training.divergence import DivergenceJob
from bimine.training.rescorer import RescorerJob

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
TSV, EN, FR = str(EX / "dev.en-fr.tsv"), str(EX / "sample.en"), str(EX / "sample.fr")

# each job with the fewest fields it needs
JOBS = {
    MineJob: {"src": EN, "tgt": FR, "output": "o.tsv"},
    MineConfig: {},
    IndexConfig: {},
    FilterJob: {"output": "o.tsv", "input": TSV},
    AlignJob: {"output": "o.align", "src": str(EX / "doc.en"), "tgt": str(EX / "doc.fr")},
    DocsMatchJob: {"src": str(EX / "docs.en.jsonl"), "tgt": str(EX / "docs.fr.jsonl"), "output": "o.tsv"},
    DocMatchConfig: {},
    RescorerJob: {"output": "r"},
    ClassifierJob: {"kind": "fc", "output": "c.safetensors", "src_lang": "en", "tgt_lang": "fr", "input": TSV},
    CalibrateJob: {"inputs": [TSV]},
    DivergenceJob: {"srcs": [EN], "tgts": [FR], "src_lang": "en", "tgt_lang": "fr", "output": "d.safetensors"},
    AdaptJob: {"text": EN, "lang": "en", "output": "adapted"},
}


def _wrong_types(tp) -> list:
    """Values of the wrong type for a field of type hint ``tp`` (None is fine for an optional one)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        out = [v for a in inner for v in _wrong_types(a)]
        # a value one member takes is no wrong value of the union
        return [v for v in out if not any(_takes(a, v) for a in inner)]
    if tp is bool:
        return ["yes", 1]
    if tp is int:
        return ["x", 2.5, True]
    if tp is float:
        return ["x", True]
    if tp is str:
        return [5, True]
    if origin in (list, tuple):
        return [5, "a-string"] if origin is list else [5, [1]]
    if dataclasses.is_dataclass(tp):
        return [5, {"no_such_field": 1}]
    return [5] if tp is type(None) else []


def _takes(tp, v) -> bool:
    try:
        from bimine.config import _convert

        _convert(tp, v, "x")
        return True
    except ConfigError:
        return False


def _out_of_range(f: dataclasses.Field, tp) -> list:
    rng = f.metadata.get("bounds")
    if rng is None:
        return []
    lo, hi, lo_open, hi_open = rng
    is_float = float in (typing.get_args(tp) or (tp,))
    step = 0.5 if is_float else 1
    out = []
    if lo is not None:
        out.append(lo if lo_open else lo - step)
    if hi is not None:
        out.append(hi if hi_open else hi + step)
    if typing.get_origin(tp) is tuple:  # columns: every item is held to the range
        out = [(v, v) for v in out]
    return out


def _bad_values():
    for cls, base in JOBS.items():
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            for bad in _wrong_types(hints[f.name]) + _out_of_range(f, hints[f.name]):
                yield pytest.param(cls, base, f.name, bad, id=f"{cls.__name__}.{f.name}={bad!r}")


BAD = list(_bad_values())


def test_every_job_has_ranges_in_its_schema():
    """The generator below tries the ranges it finds: the schema must hold them."""
    with_range = {cls.__name__ for cls, *_ in (p.values for p in BAD)
                  if any(f.metadata.get("bounds") for f in dataclasses.fields(cls))}
    assert {"MineJob", "MineConfig", "IndexConfig", "FilterJob", "AlignJob", "DocMatchConfig", "RescorerJob",
            "ClassifierJob", "CalibrateJob", "DivergenceJob"} <= with_range
    assert len(BAD) > 300


@pytest.mark.parametrize("cls,base,name,bad", BAD)
def test_a_bad_value_is_the_same_error_from_python_and_from_a_job_file(cls, base, name, bad):
    with pytest.raises(ConfigError) as in_python:
        cls(**{**base, name: bad})
    with pytest.raises(ConfigError) as in_yaml:
        from_dict(cls, {**base, name: bad})
    assert str(in_python.value) == str(in_yaml.value)
    assert str(in_python.value).startswith(name) or f" {name}." in str(in_python.value), str(in_python.value)


def test_python_takes_what_a_job_file_takes():
    """The issue: ``MineJob(mine={"k": 8})`` gave AttributeError; a YAML job accepts exactly that."""
    job = MineJob(src=Path(EN), tgt=FR, output=Path("o.tsv"), mine={"k": 8, "index": {"nprobe": 4}})
    assert isinstance(job.mine, MineConfig) and job.mine.k == 8 and job.mine.index.nprobe == 4
    assert job.output == "o.tsv" and job.src == EN  # paths as text
    assert from_dict(MineJob, {"src": EN, "tgt": FR, "output": "o.tsv", "mine": {"k": 8}}).mine == MineConfig(k=8)
    with pytest.raises(ConfigError, match=r"^mine\.k: must be >= 1, got 0$"):
        MineJob(src=EN, tgt=FR, output="o.tsv", mine={"k": 0})
    with pytest.raises(ConfigError, match="unknown config key"):
        MineJob(src=EN, tgt=FR, output="o.tsv", mine={"kk": 3})


def test_a_set_override_is_checked_as_the_file(tmp_path):
    data = apply_overrides({"src": EN, "tgt": FR, "output": "o.tsv"}, ["mine.k=-1"])
    with pytest.raises(ConfigError, match=r"^mine\.k: must be >= 1, got -1$"):
        from_dict(MineJob, data)


@pytest.mark.parametrize("line,words", [
    ("block_size: -5", "block_size: must be >= 1, got -5"),  # hung for ever in _tsv_blocks
    ("block_size: 0", "block_size: must be >= 1, got 0"),
    ("src: 5", "src: expected str or null, got 5 (put quotes around text that looks like a number or a boolean)"),
    ("top_fraction: 1.5", "top_fraction: must be <= 1, got 1.5"),
])
def test_bimine_run_refuses_a_bad_job_in_one_line(tmp_path, line, words):
    job = tmp_path / "job.yaml"
    job.write_text(f"job: filter\ninput: {TSV}\nsrc_lang: en\ntgt_lang: fr\noutput: {tmp_path / 'o.tsv'}\n{line}\n")
    if line.startswith("src:"):
        job.write_text(job.read_text().replace(f"input: {TSV}\n", f"tgt: {FR}\n"))
    r = CliRunner().invoke(registered(), ["run", str(job)])
    assert r.exit_code == 2 and r.output.strip() == f"error: {job}: {words}", r.output
    assert not (tmp_path / "o.tsv").exists()


def _commands():
    from bimine.documents.match import Eq3Config

    cli = registered()
    docs = cli.commands["docs"].commands["match"]
    return [("mine", cli.commands["mine"], [MineJob, MineConfig, IndexConfig]),
            ("filter", cli.commands["filter"], [FilterJob]), ("score", cli.commands["score"], [FilterJob]),
            ("align", cli.commands["align"], [AlignJob]),
            ("docs match", docs, [DocsMatchJob, DocMatchConfig, Eq3Config]),
            ("train-classifier", cli.commands["train-classifier"], [ClassifierJob]),
            ("calibrate", cli.commands["calibrate"], [CalibrateJob]),
            ("train-divergence", cli.commands["train-divergence"], [DivergenceJob]),
            ("train-rescorer", cli.commands["train-rescorer"], [RescorerJob]),
            ("adapt", cli.commands["adapt"], [AdaptJob])]


def test_the_command_line_ranges_are_the_schemas():
    """Each command's numeric option and its job field hold values to the same range (the command
    line refuses with click's words first; the job object the command builds checks again)."""
    import click

    compared = 0
    for name, command, classes in _commands():
        fields = {f.name: f for cls in classes for f in dataclasses.fields(cls)}
        for opt in command.params:
            t = opt.type
            if not isinstance(t, (click.IntRange, click.FloatRange)) or opt.name not in fields:
                continue
            rng = fields[opt.name].metadata.get("bounds") or (None, None, False, False)  # any finite number
            lo, hi, lo_open, hi_open = rng
            assert (t.min, t.max, bool(t.min_open), bool(t.max_open)) == (lo, hi, lo_open, hi_open), (name, opt.name)
            compared += 1
    assert compared >= 40, compared
