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

    A model file is one ``.npz`` of arrays plus JSON metadata, written by the ``save``
    method of a fitted tagger, feature view, reranker or n-best list; it is read with
    ``np.load(allow_pickle=False)`` (never pickle), and every array is checked before the
    object is built.  See :func:`sparsecca._persist.load_model`; imported lazily so that
    ``import sparsecca`` stays cheap.

    Parameters
    ----------
    path : str or path-like
        As given to ``save``; the ``.npz`` suffix that ``save`` appended may be omitted.
    allowed : collection of classes, optional
        Refuse (ModelFormatError) a file holding any other class, e.g.
        ``allowed=[TrigramHMM]`` where only a tagger makes sense.

    Returns
    -------
    object
        The fitted object, of the class recorded in the file.

    Raises
    ------
    FileNotFoundError
        No such file.
    ModelFormatError
        Not a sparsecca model file (a plain ``.npz``, a pickle, a truncated or corrupted
        archive), a class outside ``allowed``, a newer format version, or arrays
        inconsistent with each other.

    Examples
    --------
    >>> from sparsecca import load_model
    >>> from sparsecca.data import synthetic_corpus
    >>> from sparsecca.tagging import TrigramHMM
    >>> hmm = TrigramHMM().fit(synthetic_corpus(50, random_state=0))
    >>> print(hmm.save("tagger").name)
    tagger.npz
    >>> model = load_model("tagger")
    >>> type(model).__name__, model.tags_ == hmm.tags_, model.n_sentences_
    ('TrigramHMM', True, 50)
    >>> load_model("tagger.npz", allowed=[TrigramHMM]).n_sentences_
    50
    """
    from ._persist import load_model as _load

    return _load(path, allowed)
