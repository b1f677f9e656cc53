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

    A ValueError and an AttributeError, as scikit-learn's ``NotFittedError``.
    """


class ModelFormatError(ValueError):
    """A model file is unreadable, of another class, or from a newer format version."""


class TagsetMismatchError(ValueError):
    """Most given tags are outside the tagset a model was fitted on (UPOS against XPOS)."""


def in_context(exc: Exception, context: str) -> Exception:
    """``exc`` as the same exception type with ``context`` before its message (for a caller
    that knows which file, fold or model the error belongs to)."""
    try:
        return type(exc)(f"{context}: {exc}")
    except Exception:  # an exception type with another constructor: keep it, add a note
        exc.add_note(context)
        return exc
