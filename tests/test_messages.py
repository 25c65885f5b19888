"""What the commands print is for people (issue 55 §4): help texts show no ``[x<=None]``, every
command's temporaries carry its own name, warnings come in one style."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from bimine.cli.main import cli, registered


def _commands() -> list[list[str]]:
    """Every command's path (``["docs", "match"]``), once they are all registered."""
    out = []

    def walk(group, path):
        for name, cmd in group.commands.items():
            if hasattr(cmd, "commands"):
                walk(cmd, path + [name])
            else:
                out.append(path + [name])

    walk(registered(), [])
    return out


def test_no_help_text_prints_a_missing_bound():
    runner = CliRunner()
    commands = _commands()
    assert len(commands) > 15
    for path in commands:
        r = runner.invoke(cli, [*path, "--help"], terminal_width=100)
        assert r.exit_code == 0, (path, r.output)
        assert "None]" not in r.output and "None;" not in r.output, (path, r.output)


@pytest.mark.parametrize("command", ["score", "divergence", "select"])
def test_temporaries_carry_the_command_name(tmp_path, monkeypatch, command):
    import tempfile

    from bimine.filtering import job as job_mod
    from bimine.filtering import pipeline

    seen = []
    real = tempfile.TemporaryDirectory

    def spy(*a, **kw):
        seen.append(kw.get("prefix", ""))
        return real(*a, **kw)

    monkeypatch.setattr(pipeline.tempfile, "TemporaryDirectory", spy)
    tsv = tmp_path / "in.tsv"
    tsv.write_text("The cat sleeps.\tLe chat dort.\nA dog barks.\tUn chien aboie.\n", encoding="utf-8")
    kw = dict(input=str(tsv), src_lang="en", tgt_lang="fr", progress=False)
    if command == "score":
        job = job_mod.FilterJob(output=str(tmp_path / "o.tsv"), filtering=False, no_model=True, workers=1, **kw)
    else:
        job = job_mod.divergence_job(str(tmp_path / "o.tsv"), keep=0.5 if command == "select" else None, **kw)
    job_mod.run_filter(job)
    assert seen and all(p.startswith(f"bimine-{command}-tmp-") for p in seen), seen


def _bimine(*args, **kw):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "bimine", *map(str, args)], capture_output=True, text=True,
                          timeout=300, **kw)


def test_library_warnings_read_like_the_commands_own(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    r = _bimine("embed", empty, "--lang", "en", "-o", tmp_path / "e.npy")
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith("warning: ") and "WARNING" not in r.stderr, r.stderr


def test_train_rescorer_on_a_small_file_says_the_file_is_too_small(tmp_path):
    from pathlib import Path

    pairs = Path(__file__).resolve().parents[1] / "examples" / "train.en-fr.tsv"
    r = _bimine("train-rescorer", f"fr:{pairs}", "--gold", "100", "--distractors", "10000", "-o", tmp_path / "r")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert "the files are too small" in last and "each side needs 10,100" in last and "raise --distractors" not in last


def test_faiss_errors_lose_their_cpp_signature():
    from bimine.index.faiss_index import faiss_message

    e = RuntimeError("Error in void faiss::ProductQuantizer::set_derived_values() at /project/faiss/impl/"
                     "ProductQuantizer.cpp:64: Error: '!(d % M == 0)' failed: The dimension of the vector (d) "
                     "should be a multiple of the number of subquantizers (M)")
    assert faiss_message(e) == "The dimension of the vector (d) should be a multiple of the number of subquantizers (M)"
    e = RuntimeError("Error in void f() at x.cpp:3: Error: 'n > 0' failed")
    assert faiss_message(e) == "the check 'n > 0' failed"
    assert faiss_message(RuntimeError("plain text")) == "plain text"


@pytest.mark.parametrize("factory", ["PQ7", "IVF8,PQ48x12"])
def test_a_bad_index_is_one_line_without_cpp(tmp_path, factory):
    from pathlib import Path

    ex = Path(__file__).resolve().parents[1] / "examples"
    r = _bimine("mine", ex / "sample.en", ex / "sample.fr", "--src-lang", "en", "--tgt-lang", "fr", "-o",
                tmp_path / "x.tsv", "--index", factory)
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("error: ") and "faiss::" not in line and ".cpp" not in line and "Traceback" not in r.stderr


def test_train_divergence_on_empty_or_tiny_files_is_one_line_before_any_training(tmp_path):
    (tmp_path / "e.en").write_text("")
    (tmp_path / "e.fr").write_text("")
    r = _bimine("train-divergence", "--src", tmp_path / "e.en", "--tgt", tmp_path / "e.fr", "--src-lang", "en",
                "--tgt-lang", "fr", "-o", tmp_path / "d.safetensors")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "error: none of the 0 pairs has 1+ words on both sides: there is nothing to train on; give a parallel corpus "
        "(004 draws 5,000 positives)"], r.stderr  # no numpy RuntimeWarning, no aligner training first
    (tmp_path / "t.en").write_text("The cat.\nA dog.\n")
    (tmp_path / "t.fr").write_text("Le chat.\nUn chien.\n")
    r = _bimine("train-divergence", "--src", tmp_path / "t.en", "--tgt", tmp_path / "t.fr", "--src-lang", "en",
                "--tgt-lang", "fr", "-o", tmp_path / "d.safetensors")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "give a larger corpus" in r.stderr
