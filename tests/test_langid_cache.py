"""The uncompressed copy of py3langid's model in the user's cache (``cached_identifier``, an
entry of :mod:`bimine.diskcache`): the identifier built from it ranks every text exactly as
py3langid's own; the copy is read, not rewritten, on the next use; an incomplete or damaged
copy is made again; what killed writers left is swept."""

from __future__ import annotations

import os
import time

import pytest

pytest.importorskip("py3langid")

from bimine.text.langcheck import cached_identifier  # noqa: E402

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Le chat dort sur le canapé depuis ce matin.",
    "Der Hund schläft im Garten unter dem Baum.",
    "Привет, как у тебя дела сегодня?",
    "我爱你中国。今天天气很好！",
    "مرحبا بالعالم، كيف حالك؟",
    "สวัสดีครับ ยินดีที่ได้รู้จัก",
    "",
    "12345 !!!",
]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BIMINE_CACHE_DIR", str(tmp_path))
    return tmp_path


def _entry(cache):
    (entry,) = [p for p in cache.iterdir() if p.name.startswith("py3langid-model-") and ".tmp-" not in p.name]
    return entry


def test_the_cached_identifier_ranks_as_py3langid(cache):
    from py3langid.langid import _get_identifier

    ref = _get_identifier()
    made = cached_identifier()
    entry = _entry(cache)
    assert (entry / "key.txt").is_file() and (entry / "ptc.npy").is_file()
    assert not [p for p in cache.iterdir() if ".tmp-" in p.name]  # no temporary left
    stamp = os.path.getmtime(entry / "ptc.npy")
    read = cached_identifier()  # the second use reads the copy
    assert os.path.getmtime(entry / "ptc.npy") == stamp
    for ident in (made, read):
        assert list(ident.nb_classes) == list(ref.nb_classes)
        for text in TEXTS:
            assert ident.rank(text) == ref.rank(text), text
            assert ident.classify(text) == ref.classify(text), text


def test_an_incomplete_copy_is_made_again_and_old_temporaries_are_swept(cache):
    cached_identifier()
    entry = _entry(cache)
    (entry / "key.txt").unlink()  # as a copy whose writer was killed before the end
    (entry / "ptc.npy").write_bytes(b"not an array")
    old = cache / f"{entry.name}.tmp-1"
    old.mkdir()
    an_hour_ago = time.time() - 7200
    os.utime(old, (an_hour_ago, an_hour_ago))
    fresh = cache / f"{entry.name}.tmp-2"  # maybe another process writing now: kept
    fresh.mkdir()
    ident = cached_identifier()
    assert ident.classify(TEXTS[1])[0] == "fr"
    assert not old.exists() and fresh.exists()
    assert (entry / "key.txt").is_file()


def test_a_damaged_copy_is_made_again(cache):
    cached_identifier()
    entry = _entry(cache)
    (entry / "pc.npy").write_bytes(b"damaged")  # complete (key.txt) but unreadable
    assert cached_identifier().classify(TEXTS[1])[0] == "fr"  # rebuilt at once, not skipped
    assert cached_identifier().classify(TEXTS[2])[0] == "de"
    import numpy as np

    assert np.load(entry / "pc.npy").shape == (len(cached_identifier().nb_classes),)


def test_the_language_check_reads_the_copy_in_the_user_cache(tmp_path):
    """``_identify`` (what the commands' language check uses) builds the identifier from the
    copy in the user's cache folder: it falls back silently, so this checks the copy is made."""
    import subprocess
    import sys

    code = ("from bimine.text.langcheck import _identify\n"
            "classify, labels = _identify()\n"
            "print(classify('Le chat dort sur le canapé depuis ce matin.'), len(labels))\n")
    env = {k: v for k, v in os.environ.items() if k != "BIMINE_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "fr" and int(r.stdout.split()[1]) > 90
    assert len(list((tmp_path / "bimine").glob("py3langid-model-*/key.txt"))) == 1
