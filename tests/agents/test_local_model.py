import hashlib
import sys

import pytest

from agents.llm import local_model
from agents.llm.local_model import ModelNotInstalled, embedded_model_path


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    site = tmp_path / "site"
    blobs = [b"GGUF" + bytes([i]) * 1000 for i in range(1, 4)]
    for i, blob in enumerate(blobs, start=1):
        d = site / f"fakepart{i}" / "data"
        d.mkdir(parents=True)
        (d.parent / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
        (d / f"part{i:02d}.bin").write_bytes(blob)
    whole = b"".join(blobs)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("MEDSIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(local_model.EMBEDDED, "parts", 3)
    monkeypatch.setattr(local_model.EMBEDDED, "package", "fakepart{}")
    monkeypatch.setattr(local_model.EMBEDDED, "size", len(whole))
    monkeypatch.setattr(local_model.EMBEDDED, "sha256", hashlib.sha256(whole).hexdigest())
    return whole


def test_assembles_parts_in_order_and_checks_checksum(fake_parts, tmp_path, monkeypatch):
    p = embedded_model_path()
    assert p.read_bytes() == fake_parts
    assert "fakepart1" not in sys.modules  # found, never imported
    assert embedded_model_path() == p  # second call reuses the file
    monkeypatch.setattr(local_model.EMBEDDED, "sha256", "0" * 64)
    with pytest.raises(ModelNotInstalled, match="checksum"):
        embedded_model_path(verify=True)


def test_missing_part_names_the_fix(fake_parts, monkeypatch):
    monkeypatch.setattr(local_model.EMBEDDED, "parts", 4)
    with pytest.raises(ModelNotInstalled, match="part 4 is missing.*make models"):
        embedded_model_path(verify=True)
