"""Myanmar text in the Zawgyi font encoding, not Unicode (issue 56): the encoders read each Zawgyi
line as its Unicode text, caches never reuse a vector of the unconverted line, and a file that is
mostly Zawgyi gets a warning (the output keeps the text as written). Zawgyi and Unicode spellings
of the same words, written out by code point."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bimine.text.langcheck import zawgyi_warning_line
from bimine.text.zawgyi import cache_text, convert, is_zawgyi, to_unicode

# "how are you" and "I" in Zawgyi (E stored before its consonant, U+1039 as the asat, U+107D)
ZAWGYI = ["\u1031\u1014\u1031\u1000\u102c\u1004\u1039\u1038\u101c\u102c\u1038",
          "\u1000\u107d\u103c\u1014\u1039\u1031\u1010\u102c\u1039"]
# the same in Unicode: နေကောင်းလား, ကျွန်တော်
UNICODE = ["\u1014\u1031\u1000\u1031\u102c\u1004\u103a\u1038\u101c\u102c\u1038",
           "\u1000\u103b\u103d\u1014\u103a\u1010\u1031\u102c\u103a"]
# "Myanmar": Zawgyi ျမန္မာ (medial RA stored before its consonant), Unicode မြန်မာ
MYANMAR_Z = "\u103b\u1019\u1014\u1039\u1019\u102c"
MYANMAR_U = "\u1019\u103c\u1014\u103a\u1019\u102c"
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


def test_embed_warns_on_zawgyi_text_and_embeds_it_as_unicode(tmp_path):
    out = {}
    for name, words in (("z", ZAWGYI), ("u", UNICODE)):
        f = tmp_path / f"{name}.my"
        f.write_text("\n".join(_lines(words)) + "\n", encoding="utf-8")
        r = subprocess.run([sys.executable, "-m", "bimine", "embed", str(f), "--lang", "my", "-o",
                            str(tmp_path / f"{name}.npy")], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        out[name] = (np.load(tmp_path / f"{name}.npy"), r.stderr)
    assert "sampled Myanmar lines are in the Zawgyi font encoding" in out["z"][1]
    assert "Zawgyi" not in out["u"][1]
    assert np.array_equal(out["z"][0], out["u"][0])


def test_the_ntrex_myanmar_reference_is_zawgyi():
    f = SHARED / "newstest2019-ref.mya.txt.gz"
    if not f.exists():
        pytest.skip("the shared NTREX data is not here")
    msg = zawgyi_warning_line(f)
    assert msg is not None and "Zawgyi" in msg


def test_zawgyi_lines_become_their_unicode_spelling():
    assert to_unicode(ZAWGYI + [MYANMAR_Z]) == UNICODE + [MYANMAR_U]
    assert all(map(is_zawgyi, ZAWGYI + [MYANMAR_Z]))
    assert not any(map(is_zawgyi, UNICODE + [MYANMAR_U, "Bonjour", ""]))


def test_only_zawgyi_lines_are_converted():
    mixed = [ZAWGYI[0], UNICODE[1], "Myanmar", f"{MYANMAR_Z} 2024", MYANMAR_U]
    assert to_unicode(mixed) == [UNICODE[0], UNICODE[1], "Myanmar", f"{MYANMAR_U} 2024", MYANMAR_U]
    assert mixed[0] == ZAWGYI[0]  # the caller's list is left as it was
    # the transform itself scrambles Unicode Burmese: why each line is tested first
    assert convert(MYANMAR_U) != MYANMAR_U
    batch = ["no Burmese here", "nor here"]
    assert to_unicode(batch) is batch and to_unicode(UNICODE) is UNICODE and to_unicode([]) == []


def test_cache_keys_name_the_conversion():
    from bimine.training.distill import _key

    assert cache_text(UNICODE[0]) == UNICODE[0] and cache_text("Bonjour") == "Bonjour"
    assert cache_text(ZAWGYI[0]) != ZAWGYI[0] and ZAWGYI[0] in cache_text(ZAWGYI[0])
    assert _key(UNICODE[0]) == hashlib.sha1(UNICODE[0].encode()).hexdigest()  # keys of all other text unchanged
    assert _key(ZAWGYI[0]) != hashlib.sha1(ZAWGYI[0].encode()).hexdigest()


def test_the_default_model_reads_zawgyi_as_unicode():
    from bimine.encoders import load_encoder

    enc = load_encoder("default")
    z, u = enc.encode(ZAWGYI + [MYANMAR_Z], "my"), enc.encode(UNICODE + [MYANMAR_U], "my")
    assert np.array_equal(z, u)
    ids_z, _ = enc.featurizer.featurize(ZAWGYI, "my")  # the text as written has other features
    ids_u, _ = enc.featurizer.featurize(UNICODE, "my")
    assert not np.array_equal(np.sort(ids_z), np.sort(ids_u))


def test_benchmark_cache_never_returns_a_vector_of_the_unconverted_line(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1]))
    from benchmarks.common import CachedEncoder

    enc = CachedEncoder("default", cache_dir=str(tmp_path))
    # what a cache written before the conversion holds: the raw Zawgyi line's (here: zero) vector
    np.savez(f"{enc.dir}/my.npz", texts=np.frombuffer(json.dumps([ZAWGYI[0]]).encode(), dtype=np.uint8),
             emb=np.zeros((1, enc.dim), np.float32))
    v = enc.encode([ZAWGYI[0], UNICODE[0]], "my")
    assert np.array_equal(v[0], v[1]) and np.linalg.norm(v[0]) > 0.99


def test_the_ntrex_myanmar_reference_converts_to_unicode():
    f = SHARED / "newstest2019-ref.mya.txt.gz"
    if not f.exists():
        pytest.skip("the shared NTREX data is not here")
    from bimine.text.io import read_lines

    lines = list(read_lines(str(f)))
    before = sum(map(is_zawgyi, lines))
    after = sum(map(is_zawgyi, to_unicode(lines)))
    assert before > 0.99 * len(lines) and after < 0.01 * len(lines)
