"""The uncompressed copy of py3langid's model in the user's cache (``cached_identifier``): the
identifier built from it ranks every text exactly as py3langid's own; the copy is read, not
rewritten, on the next use; an incomplete copy is made again; what killed runs left is swept."""

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


def test_the_cached_identifier_ranks_as_py3langid(tmp_path):
    from py3langid.langid import _get_identifier

    ref = _get_identifier()
    made = cached_identifier(str(tmp_path))
    (folder,) = [p for p in tmp_path.iterdir() if not p.name.startswith(".tmp-")]
    assert (folder / "source.json").is_file() and (folder / "ptc.npy").is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")] == []  # no temporary left
    stamp = os.path.getmtime(folder / "ptc.npy")
    read = cached_identifier(str(tmp_path))  # the second use reads the copy
    assert os.path.getmtime(folder / "ptc.npy") == stamp
    for ident in (made, read):
        assert list(ident.nb_classes) == list(ref.nb_classes)
        for text in TEXTS:
            assert ident.rank(text) == ref.rank(text), text
            assert ident.classify(text) == ref.classify(text), text


def test_an_incomplete_copy_is_made_again_and_old_temporaries_are_swept(tmp_path):
    cached_identifier(str(tmp_path))
    (folder,) = list(tmp_path.iterdir())
    (folder / "source.json").unlink()  # as a copy whose writer was killed before the end
    (folder / "ptc.npy").write_bytes(b"not an array")
    old = tmp_path / ".tmp-old"
    old.mkdir()
    an_hour_ago = time.time() - 7200
    os.utime(old, (an_hour_ago, an_hour_ago))
    fresh = tmp_path / ".tmp-fresh"  # maybe another process writing now: kept
    fresh.mkdir()
    ident = cached_identifier(str(tmp_path))
    assert ident.classify(TEXTS[1])[0] == "fr"
    assert not old.exists() and fresh.exists()
    assert (folder / "source.json").is_file()


def test_the_language_check_reads_the_copy_in_the_user_cache(tmp_path):
    """``_identify`` (what the commands' language check uses) builds the identifier from the
    copy in the user's cache folder: it falls back silently, so this checks the copy is made."""
    import subprocess
    import sys

    code = ("from bimine.text.langcheck import _identify\n"
            "classify, labels = _identify()\n"
            "print(classify('Le chat dort sur le canapé depuis ce matin.'), len(labels))\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "fr" and int(r.stdout.split()[1]) > 90
    copies = list((tmp_path / "bimine" / "langid").glob("*/source.json"))
    assert len(copies) == 1


def test_a_damaged_copy_is_removed_and_made_again(tmp_path):
    cached_identifier(str(tmp_path))
    (folder,) = list(tmp_path.iterdir())
    (folder / "pc.npy").write_bytes(b"damaged")  # complete (source.json) but unreadable
    with pytest.raises(ValueError):  # numpy: not a .npy file
        cached_identifier(str(tmp_path))  # _identify then loads py3langid's own model for this run
    assert not folder.exists()
    assert cached_identifier(str(tmp_path)).classify(TEXTS[1])[0] == "fr"  # the next run makes it again
