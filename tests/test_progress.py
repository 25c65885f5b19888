"""Progress bars: drawn on a terminal only, never before an input error is found."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bimine.progress import bars_wanted


def test_bars_follow_the_terminal_and_the_environment(monkeypatch):
    monkeypatch.delenv("BIMINE_PROGRESS", raising=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert not bars_wanted(True)
    monkeypatch.setenv("BIMINE_PROGRESS", "1")
    assert bars_wanted(True) and not bars_wanted(False)
    monkeypatch.setenv("BIMINE_PROGRESS", "0")
    assert not bars_wanted(True)


@pytest.mark.parametrize("command", ["embed", "embed-store", "mine"])
def test_no_bar_is_drawn_before_an_input_error(tmp_path, tiny_model, command):
    good = tmp_path / "good.txt"
    good.write_text("".join(f"sentence number {i}\n" for i in range(5000)))
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"".join(f"line {i}\n".encode() for i in range(5000)) + b"broken \xff line\n")
    args = {"embed": ["embed", str(bad), "--lang", "en", "-o", str(tmp_path / "x.npy")],
            "embed-store": ["embed", str(bad), "--lang", "en", "--store", "-o", str(tmp_path / "x.store")],
            "mine": ["mine", str(good), str(bad), "--src-lang", "en", "--tgt-lang", "fr", "-o",
                     str(tmp_path / "p.tsv")]}[command]
    r = subprocess.run([sys.executable, "-m", "bimine", *args, "-m", str(tiny_model)], capture_output=True,
                       text=True, env={**os.environ, "BIMINE_PROGRESS": "1"})
    assert r.returncode == 2 and "bad.txt:5001: invalid UTF-8" in r.stderr
    assert "%|" not in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x.npy").exists() and not (tmp_path / "p.tsv").exists()


def test_without_a_terminal_the_bar_counts_and_tqdm_is_not_loaded(tmp_path, tiny_model, monkeypatch):
    from bimine.progress import NoBar, bar

    monkeypatch.delenv("BIMINE_PROGRESS", raising=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    with bar(total=10, initial=2) as b:
        assert isinstance(b, NoBar)
        b.update(3)
        b.set_postfix(x=1)
        b.set_postfix_str("y")
        b.total += 5
        b.refresh()
        b.clear()
    assert (b.n, b.total) == (5, 15)
    src = tmp_path / "in.txt"
    src.write_text("one line\nanother line\n")
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "bimine", "embed", str(src), "--lang", "en",
                        "-o", str(tmp_path / "x.npy"), "-m", str(tiny_model)], capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "BIMINE_PROGRESS"})
    assert r.returncode == 0, r.stderr
    assert "| bimine.embed" in r.stderr and "| tqdm" not in r.stderr  # a pipe, not a terminal: no bar, no tqdm
