"""sparsecca: low-dimensional discriminative reranking at corpus scale."""

__version__ = "0.1.0.dev0"

__all__ = ["experiment", "experiment_on_corpora", "load_model", "write_report"]

#: the Table 2 runner (sparsecca._experiment), imported on first use so that
#: ``import sparsecca`` stays cheap
_EXPERIMENT = ("experiment", "experiment_on_corpora", "write_report")


def __getattr__(name):
    if name in _EXPERIMENT:
        from . import _experiment

        return getattr(_experiment, name)
    raise AttributeError(f"module 'sparsecca' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_EXPERIMENT])


def load_model(path, allowed=None):
    """Load any sparsecca model file (the class is read from the file's metadata).

    See :func:`sparsecca._persist.load_model`; imported lazily so that ``import sparsecca``
    stays cheap.
    """
    from ._persist import load_model as _load

    return _load(path, allowed)
