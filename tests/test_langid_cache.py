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
