"""medsim memory: embedders, FAISS case buffers, SQLite store and reflection (lands with
the memory issue)."""
