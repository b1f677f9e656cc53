"""sparsecca: low-dimensional discriminative reranking at corpus scale."""

__version__ = "0.1.0.dev0"

__all__ = ["load_model"]


def load_model(path, allowed=None):
    """Load any sparsecca model file (the class is read from the file's metadata).

    See :func:`sparsecca._persist.load_model`; imported lazily so that ``import sparsecca``
    stays cheap.
    """
    from ._persist import load_model as _load

    return _load(path, allowed)
