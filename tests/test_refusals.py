"""Refused in one line (issue 41 §2-3): non-finite numbers in every option and config, and a
pipeline YAML that is malformed or carries a Python tag."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bimine.cli import align, divergence, docs, filter, mine, rescore, train  # noqa: F401  (register the commands)
from bimine.cli.main import cli

EX = Path(__file__).resolve().parents[1] / "examples"
PAIR = ["--src-lang", "en", "--tgt-lang", "fr"]


def _run(args) -> tuple[int, str]:
    r = CliRunner().invoke(cli, [str(a) for a in args])
    return r.exit_code, r.output


NON_FINITE = [
    ["filter", "--src", EX / "sample.en", "--tgt", EX / "sample.fr", *PAIR, "-o", "{o}", "--threshold", "nan"],
    ["filter", "--src", EX / "sample.en", "--tgt", EX / "sample.fr", *PAIR, "-o", "{o}", "--threshold", "-inf"],
    ["filter", "--src", EX / "sample.en", "--tgt", EX / "sample.fr", *PAIR, "-o", "{o}", "--top-fraction", "nan"],
    ["select", EX / "dev.en-fr.tsv", *PAIR, "-o", "{o}", "--keep", "-inf"],
    ["mine", EX / "sample.en", EX / "sample.fr", *PAIR, "-o", "{o}", "--threshold", "nan"],
    ["mine", EX / "sample.en", EX / "sample.fr", *PAIR, "-o", "{o}", "--threshold", "inf"],
    ["select", EX / "dev.en-fr.tsv", *PAIR, "-o", "{o}", "--keep", "nan"],
    ["docs", "match", EX / "docs.en.jsonl", EX / "docs.fr.jsonl", *PAIR, "-o", "{o}", "--w1", "nan"],
    ["align", EX / "doc.en", EX / "doc.fr", *PAIR, "-o", "{o}", "--length-weight", "inf"],
]


@pytest.mark.parametrize("args", NON_FINITE, ids=lambda a: f"{a[0]}-{a[-2]}-{a[-1]}")
def test_non_finite_numbers_are_refused(tmp_path, args):
    out = tmp_path / "out.tsv"
    code, text = _run([str(out) if a == "{o}" else a for a in args])
    assert code == 2 and "finite number" in text, text
    assert not out.exists()


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_non_finite_numbers_in_a_pipeline_yaml_are_refused(tmp_path, value):
    for body in (f"threshold: {value}\nfilters:\n  - rule: empty\n",
                 f"filters:\n  - score: cosine\n    threshold: {value}\n"):
        y = tmp_path / "p.yaml"
        y.write_text(body)
        code, text = _run(["filter", "--src", EX / "sample.en", "--tgt", EX / "sample.fr", *PAIR,
                           "-o", tmp_path / "o.tsv", "-c", y])
        assert code == 2 and "p.yaml" in text and "finite number" in text, text


def test_non_finite_set_value_is_refused(tmp_path):
    code, text = _run(["train", "-c", Path(__file__).resolve().parents[1] / "configs" / "example.yaml",
                       "-o", tmp_path / "run", "--set", "train.max_minutes=.inf"])
    assert code == 2 and "train.max_minutes: must be a finite number" in text, text
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("body,words", [
    ("filters:\n  - rule: [unclosed\n", "invalid YAML"),
    ("filters: !!python/object/apply:os.system ['echo owned > {marker}']\n", "python/object/apply"),
    ("filters: [\x00]\n", "invalid YAML"),
])
def test_bad_pipeline_yaml_is_one_line(tmp_path, body, words):
    marker = tmp_path / "marker"
    y = tmp_path / "pipe.yaml"
    y.write_text(body.replace("{marker}", str(marker)))
    code, text = _run(["filter", "--src", EX / "sample.en", "--tgt", EX / "sample.fr", *PAIR,
                       "-o", tmp_path / "o.tsv", "-c", y])
    assert code == 2, text
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "pipe.yaml" in lines[0] and words in lines[0], text
    assert not marker.exists()  # nothing ran


class _Spy:
    """An encoder that records whether anything was embedded."""

    def __init__(self):
        from bimine import load_encoder

        self._enc = load_encoder("default")
        self.calls = 0

    def encode(self, sentences, lang):
        self.calls += 1
        return self._enc.encode(sentences, lang)

    def __getattr__(self, name):
        return getattr(self._enc, name)


@pytest.mark.parametrize("bad", ["empty", "binary"])
def test_mine_and_docs_match_check_the_target_before_embedding_the_source(tmp_path, bad):
    from bimine.documents.pipeline import match_documents
    from bimine.documents.spec import DocMatchConfig, DocsMatchJob
    from bimine.errors import InputError
    from bimine.mining.pipeline import mine_files
    from bimine.mining.spec import MineJob

    tgt = tmp_path / "t.fr"
    tgt.write_bytes(b"" if bad == "empty" else b"Bonjour\n\x00\x01\x02 binary\n")
    spy = _Spy()
    with pytest.raises(InputError, match="t.fr"):
        mine_files(MineJob(str(EX / "sample.en"), str(tgt), str(tmp_path / "p.tsv"), src_lang="en", tgt_lang="fr",
                           progress=False, workers=1), encoder=spy)
    with pytest.raises(InputError, match="t.fr"):
        match_documents(DocsMatchJob(str(EX / "docs.en.jsonl"), str(tgt), str(tmp_path / "d.tsv"), src_lang="en",
                                     tgt_lang="fr", progress=False, src_format="jsonl", tgt_format="tsv",
                                     match=DocMatchConfig(method="counts")), encoder=spy)
    assert spy.calls == 0
    assert not list(tmp_path.glob("*.tsv*"))
