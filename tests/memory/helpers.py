"""Helpers for the memory tests."""
from __future__ import annotations

import numpy as np

from memory.embed import EmbedderError


class VectorsOnly:
    """A store's embedder when the tests give every vector by hand."""

    text_strategy = "none (vectors given)"

    def __init__(self, dim: int, name: str | None = None):
        self.dim = dim
        self.name = name or f"test:vectors-{dim}"

    def embed_texts(self, texts):
        raise EmbedderError("vectors only")

    def embed_images(self, paths):
        raise EmbedderError("vectors only")


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def seeded_unit(i: int, dim: int) -> np.ndarray:
    """The same unit vector for the same i, in any process."""
    v = np.random.default_rng(i).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)
