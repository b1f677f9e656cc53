"""sparsecca: low-dimensional discriminative reranking at corpus scale."""

__version__ = "0.1.0.dev0"
