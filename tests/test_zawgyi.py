"""Myanmar text in the Zawgyi font encoding, not Unicode, gets a warning (issue 56): the models
read Unicode Burmese. Zawgyi and Unicode spellings of the same words, written out by code point."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bimine.text.langcheck import zawgyi_warning_line

pytest.importorskip("myanmartools")

# "how are you" and "I" in Zawgyi (E stored before its consonant, U+1039 as the asat, U+107D)
ZAWGYI = ["\u1031\u1014\u1031\u1000\u102c\u1004\u1039\u1038\u101c\u102c\u1038",
          "\u1000\u107d\u103c\u1014\u1039\u1031\u1010\u102c\u1039"]
# the same in Unicode: နေကောင်းလား, ကျွန်တော်
UNICODE = ["\u1014\u1031\u1000\u1031\u102c\u1004\u103a\u1038\u101c\u102c\u1038",
           "\u1000\u103b\u103d\u1014\u103a\u1010\u1031\u102c\u103a"]
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "dev" / "ntrex128" / "NTREX-128"


def _lines(words: list[str], n: int = 30) -> list[str]:
    return [f"{words[i % 2]} {words[(i + 1) % 2]} {i}" for i in range(n)]


def test_zawgyi_lines_warn_and_unicode_lines_do_not(tmp_path):
    z = tmp_path / "z.my"
    z.write_text("\n".join(_lines(ZAWGYI)) + "\n", encoding="utf-8")
    u = tmp_path / "u.my"
    u.write_text("\n".join(_lines(UNICODE)) + "\n", encoding="utf-8")
    msg = zawgyi_warning_line(z)
    assert msg is not None and msg.startswith(f"warning: {z}: 100% of 30 sampled Myanmar lines are in the Zawgyi")
    assert zawgyi_warning_line(u) is None
    assert zawgyi_warning_line(tmp_path / "missing") is None
    few = tmp_path / "few.my"
    few.write_text("\n".join(_lines(ZAWGYI, 5)) + "\n", encoding="utf-8")
    assert zawgyi_warning_line(few) is None  # too few lines to say


def test_embed_warns_on_zawgyi_text(tmp_path):
    z = tmp_path / "z.my"
    z.write_text("\n".join(_lines(ZAWGYI)) + "\n", encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "bimine", "embed", str(z), "--lang", "my", "-o", str(tmp_path / "z.npy")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "sampled Myanmar lines are in the Zawgyi font encoding" in r.stderr


def test_the_ntrex_myanmar_reference_is_zawgyi():
    f = SHARED / "newstest2019-ref.mya.txt.gz"
    if not f.exists():
        pytest.skip("the shared NTREX data is not here")
    msg = zawgyi_warning_line(f)
    assert msg is not None and "Zawgyi" in msg
