"""The exceptions shared by every part of sparsecca, each defined once.

:class:`NotFittedError` is raised by every estimator (tagger, feature views, rerankers,
:class:`~sparsecca.linalg.SparseCCA`) used or saved before ``fit``; it is re-exported by
:mod:`sparsecca.tagging`, :mod:`sparsecca.features` and :mod:`sparsecca.rerank`, so
``except NotFittedError`` catches it whichever module it was imported from.
:class:`ModelFormatError` (an unreadable, foreign, newer or inconsistent model file) is
re-exported by :mod:`sparsecca._persist`.  :class:`TagsetMismatchError`: tags mostly outside
the tagset a model was fitted on (see :mod:`sparsecca._tagset`).
"""

from __future__ import annotations

__all__ = ["ModelFormatError", "NotFittedError", "TagsetMismatchError", "in_context"]


class NotFittedError(ValueError, AttributeError):
    """An estimator was used (or saved) before ``fit``.

    A ValueError and an AttributeError, as scikit-learn's ``NotFittedError``, so that
    ``except ValueError`` and ``hasattr``-style checks both see it.  Raised by the tagger
    (:class:`~sparsecca.tagging.TrigramHMM`), the feature views, the rerankers and
    :class:`~sparsecca.linalg.SparseCCA`; the message names the class and the call to make
    first.

    Examples
    --------
    >>> from sparsecca.exceptions import NotFittedError
    >>> from sparsecca.features import SuffixView
    >>> try:
    ...     SuffixView().feature_names_out()
    ... except NotFittedError as exc:
    ...     print(exc)
    this SuffixView is not fitted yet; call fit(corpus) first
    >>> issubclass(NotFittedError, ValueError), issubclass(NotFittedError, AttributeError)
    (True, True)
    """


class ModelFormatError(ValueError):
    """A model file is unreadable, of another class, or from a newer format version.

    Raised by ``load`` / :func:`sparsecca.load_model` (and by ``save``, which never writes a
    file that ``load`` would refuse) for a file that is not a sparsecca model (a plain
    ``.npz``, a pickle, a truncated or corrupted archive), holds another class than the one
    asked for, comes from a newer format version, or holds arrays inconsistent with each
    other.  The message names the file and, where it can, the array.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsecca import load_model
    >>> from sparsecca.exceptions import ModelFormatError
    >>> np.savez("plain.npz", x=np.arange(3))  # an .npz, but no sparsecca model
    >>> try:
    ...     load_model("plain.npz")
    ... except ModelFormatError as exc:
    ...     print(isinstance(exc, ValueError), "plain.npz" in str(exc))
    True True
    """


class TagsetMismatchError(ValueError):
    """Most given tags are outside the tagset a model was fitted on (UPOS against XPOS).

    A few tags unseen at fit are normal (dev and test gold may hold rare tags that train
    never had); more than half of the tag tokens outside the fitted tagset means the tags
    come from another tag column, and every loss or feature computed from them would be
    meaningless.  The message names both tagsets (a few tags of each) and the fraction.

    Examples
    --------
    >>> from sparsecca.data import TaggedCorpus
    >>> from sparsecca.exceptions import TagsetMismatchError
    >>> from sparsecca.features import TagNgramView
    >>> upos = TaggedCorpus.from_sentences([[("the", "DET"), ("dog", "NOUN")]])
    >>> view = TagNgramView().fit(upos)
    >>> try:  # candidates tagged with another tagset (XPOS)
    ...     view.transform_sequences([0, 1], [0, 2], ["DT", "NN"])
    ... except TagsetMismatchError as exc:
    ...     print(str(exc)[:60])
    tag sequences: 100.0% of the tag tokens (2 of 2) are not in
    """


def in_context(exc: Exception, context: str) -> Exception:
    """``exc`` as the same exception type with ``context`` before its message (for a caller
    that knows which file, fold or model the error belongs to).

    Parameters
    ----------
    exc : Exception
        The error to re-raise.
    context : str
        What the error belongs to, e.g. ``"train.conllu"`` or ``"jackknife fold 3 of 10"``.

    Returns
    -------
    Exception
        A new exception of ``type(exc)`` whose message is ``"<context>: <message>"``; for an
        exception type whose constructor takes other arguments, ``exc`` itself with
        ``context`` added as a note (``exc.add_note`` on Python >= 3.11; on 3.10, appended to
        ``exc.__notes__`` as 3.11 does, where tracebacks of 3.11 and later show it).  The
        caller raises it ``from exc``.

    Examples
    --------
    >>> from sparsecca.exceptions import in_context
    >>> exc = in_context(ValueError("offsets must start at 0"), "train.conllu")
    >>> type(exc).__name__, str(exc)
    ('ValueError', 'train.conllu: offsets must start at 0')
    """
    try:
        return type(exc)(f"{context}: {exc}")
    except Exception:  # an exception type with another constructor: keep it, add a note
        _add_note(exc, context)
        return exc


def _add_note(exc: BaseException, note: str) -> None:
    """``exc.add_note(note)``, also on Python 3.10 (no ``add_note``): appended to a
    ``__notes__`` list as 3.11 does."""
    if hasattr(exc, "add_note"):
        exc.add_note(note)
        return
    if not hasattr(exc, "__notes__"):
        exc.__notes__ = []
    if not isinstance(exc.__notes__, list):  # as 3.11's add_note
        raise TypeError("Cannot add note: __notes__ is not a list")
    exc.__notes__.append(note)
