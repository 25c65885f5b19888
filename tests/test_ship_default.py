"""The ship script re-makes the divergence model with the command docs/divergence.md gives for
the shipped model. The two disagreed once: after issue 58 the docs trained with `--min-words 1`,
but the script still used 5, and re-shipping the encoder quietly undid issue 58's fix."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _docs_command() -> list[str]:
    text = (ROOT / "docs" / "divergence.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    cmds = [b for b in blocks if "-o bimine/models/default/divergence.safetensors" in b]
    assert len(cmds) == 1, "docs/divergence.md should give one command for the shipped model"
    return shlex.split(cmds[0].split("bimine train-divergence", 1)[1].split("\npython", 1)[0].replace("\\\n", " "))


def _options(args: list[str]) -> dict[str, str]:
    """Options with one value each, but the corpora, the aligner's path and the output."""
    out = {}
    for k, v in zip(args[::2], args[1::2]):
        assert k.startswith("-"), (k, v)
        if k not in ("--src", "--tgt", "--aligner", "-o"):
            out[k] = v
    return out


def test_ship_script_trains_the_divergence_model_as_the_docs_say(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks.ship_default import divergence_args

    docs = _docs_command()
    ours = divergence_args("$D", "aligner.en-fr.safetensors", "bimine/models/default/divergence.safetensors")
    assert ours[0] == "train-divergence"
    assert _options(ours[1:]) == _options(docs)
    assert _options(docs)["--min-words"] == "1"  # issue 58
    # the same corpora, in the same order
    pick = lambda a: [v for k, v in zip(a[::2], a[1::2]) if k in ("--src", "--tgt")]  # noqa: E731
    assert pick(ours[1:]) == pick(docs)
