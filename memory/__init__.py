"""medsim memory: embedders (``memory.embed``) and the case store (``memory.store``:
SQLite the truth, FAISS records and experience buffers).

Importing it loads no model library: torch, transformers and open_clip are imported when
an embedder first embeds, faiss when a store opens.
"""
from memory.embed import Embedder, EmbedderError, make_embedder
from memory.store import BUFFERS, MemoryRecord, MemoryStore, MemoryStoreError, RecordNotFound

__all__ = ["BUFFERS", "Embedder", "EmbedderError", "MemoryRecord", "MemoryStore", "MemoryStoreError",
           "RecordNotFound", "make_embedder"]
