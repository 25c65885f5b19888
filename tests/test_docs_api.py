"""docs/api.md's ```python blocks run as written from the repository root, offline (issue 74); a
block whose first line is ``# needs: ...`` names what must be downloaded first and is skipped. Each
block runs in a fresh namespace, as a reader who copies one would run it, and what it prints is
checked against the figures its comments give (``print(x)  # 244 ...``: the line printed starts so)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "api.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def expected_lines(code: str) -> list[tuple[str, bool]]:
    """What each ``print(...)  # text`` line of ``code`` says it prints, in order (a remark after two
    spaces and a parenthesis left out; a trailing ``...``: the line starts so, else it is exactly so); a print in a loop says
    its lines in the comment lines after it (so does a print whose line leaves no room for a comment)."""
    out, in_loop_output = [], False
    for line in code.splitlines():
        m = re.match(r"\s*print\(.*\)\s+#\s+(.*)$", line)
        text = m.group(1) if m else line[2:] if in_loop_output and line.startswith("# ") else None
        # the comment lines right after a print without a comment (in a loop, or a long line) are what it prints
        in_loop_output = (bool(re.match(r"\s*print\(", line)) and not m) or (in_loop_output and text is not None)
        if text is not None:
            text = text.split("  (")[0].rstrip()
            out.append((text.removesuffix("...").rstrip(), text.endswith("...")))
    return out


def test_docs_api_has_the_issues_examples():
    text = DOC.read_text(encoding="utf-8")
    for heading in ("## Embed", "## Mine two lists", "## Mine your own embeddings", "## Align", "## Filter a DataFrame",
                    "## Bring your own encoder", "LaBSE"):
        assert heading in text
    assert sum(b.startswith("# needs:") for b in BLOCKS) == 1  # only LaBSE's weights are not shipped


@pytest.mark.parametrize("n", range(len(BLOCKS)))
def test_docs_api_block_runs_as_written(n, monkeypatch):
    code = BLOCKS[n]
    if code.startswith("# needs:"):
        pytest.skip(code.splitlines()[0])
    monkeypatch.chdir(ROOT)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, f"docs/api.md block {n + 1}", "exec"), {"__name__": f"docs_api_{n}"})
    printed = buf.getvalue().splitlines()
    want = expected_lines(code)
    assert len(printed) >= len(want)
    for got, (w, prefix) in zip(printed, want):
        assert got.startswith(w) if prefix else got == w, (got, w)


def test_readme_python_block_runs_as_written(tmp_path, monkeypatch):
    """The README's Python lines, from a folder holding the repository's examples (they write
    scored.tsv and kept.tsv where they run)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    code = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "bimine.mine(" in b)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    printed = buf.getvalue().splitlines()
    want = expected_lines(code)
    assert len(printed) == len(want) == 3
    for got, (w, prefix) in zip(printed, want):
        assert got.startswith(w) if prefix else got == w, (got, w)
