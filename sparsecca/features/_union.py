"""Column-wise union of views: one input view built from several (e.g. suffixes + words)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._persist import ModelFormatError, get_child, put_child
from ..data import TaggedCorpus
from ._base import BaseView, check_corpus

__all__ = ["HStackView", "hstack_csr"]


def hstack_csr(blocks: list, dtype=None) -> sp.csr_matrix:
    """Horizontal stack of CSR matrices with the same number of rows, in CSR.

    ``scipy.sparse.hstack`` goes through COO for CSR input (sorting every entry); here each
    block's entries are scattered straight to their place in the output row, O(nnz) and
    vectorised.  Sorted column indices in every block give sorted indices in the result.

    Parameters
    ----------
    blocks : list of scipy.sparse.csr_matrix, shapes (n, d_j)
    dtype : numpy dtype, optional
        Default: the common type of the blocks.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n, sum_j d_j)
    """
    n = blocks[0].shape[0]
    dtype = np.result_type(*[b.dtype for b in blocks]) if dtype is None else np.dtype(dtype)
    n_cols = sum(b.shape[1] for b in blocks)
    lengths = [np.diff(b.indptr).astype(np.int64) for b in blocks]
    row_nnz = np.sum(lengths, axis=0) if lengths else np.zeros(n, np.int64)
    nnz = int(row_nnz.sum())
    idx = np.int32 if max(nnz, n_cols) < 2**31 else np.int64
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(row_nnz, out=indptr[1:])
    indices = np.empty(nnz, dtype=idx)
    data = np.empty(nnz, dtype=dtype)
    start = indptr[:-1].copy()  # where the next block's entries of each row begin
    col0 = 0
    for b, ln in zip(blocks, lengths):
        if b.nnz:
            # destination = row start (after earlier blocks) + position within the block's row
            dest = np.repeat(start - b.indptr[:-1].astype(np.int64), ln)
            dest += np.arange(b.nnz, dtype=np.int64)
            indices[dest] = b.indices + col0
            data[dest] = b.data
            del dest
        start += ln
        col0 += b.shape[1]
    return sp.csr_matrix((data, indices, indptr.astype(idx, copy=False)), shape=(n, n_cols))


def _check_views(views) -> list:
    if isinstance(views, (str, bytes)) or not hasattr(views, "__iter__"):
        raise TypeError(f"views must be a non-empty sequence of feature views, got {views!r}")
    views = list(views)
    if not views:
        raise ValueError("views must be a non-empty sequence of feature views, got []")
    for i, v in enumerate(views):
        if isinstance(v, type):
            raise TypeError(f"views[{i}] must be a view instance, got the class {v.__name__}")
        for attr in ("fit", "transform", "get_params"):
            if not callable(getattr(v, attr, None)):
                raise TypeError(f"views[{i}] must be a feature view with fit, transform and "
                                f"get_params, got {type(v).__name__}")
    return views


class HStackView(BaseView):
    """Several views side by side: X = [X_1 | X_2 | ...] (columns of view j after view j-1).

    The paper's input view is a bag of suffixes; a richer input view adds the words
    themselves, ``HStackView([SuffixView(lengths=(1, 2, 3, 4)), WordView()])``.  Each part is
    cloned (``type(v)(**v.get_params())``) and fitted on its own, so the parts given are
    never modified and one HStackView can be reused as a template (as the rerankers do).

    Parameters
    ----------
    views : sequence of unfitted views
        Any views with ``fit``/``transform``/``get_params`` (input views, or tag views when
        every part featurises tags).

    Attributes
    ----------
    views_ : list of fitted views (clones of ``views``)
    n_features_ : int
        Sum of the parts' ``n_features_``.
    feature_offsets_ : int64 array, shape (n_views + 1,)
        Columns ``feature_offsets_[j]:feature_offsets_[j + 1]`` belong to ``views_[j]``.
    n_dropped_ : int
        Sum of the parts' ``n_dropped_`` (feature occurrences absent from the vocabularies at
        the last ``fit``/``transform``).
    """

    def __init__(self, views=()):
        self.views = views

    def fit(self, corpus: TaggedCorpus) -> "HStackView":
        """Fit a clone of every part on ``corpus``.

        Parameters
        ----------
        corpus : TaggedCorpus

        Returns
        -------
        self
        """
        views = _check_views(self.views)
        corpus = check_corpus(corpus)
        self._set_parts([type(v)(**v.get_params()).fit(corpus) for v in views])
        return self

    def _set_parts(self, fitted: list) -> None:
        self.views_ = fitted
        widths = [int(v.n_features_) for v in fitted]
        self.feature_offsets_ = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
        self.n_features_ = int(self.feature_offsets_[-1])
        self._update_dropped()

    def _update_dropped(self) -> None:
        self.n_dropped_ = int(sum(getattr(v, "n_dropped_", 0) for v in self.views_))

    def _stack(self, blocks: list) -> sp.csr_matrix:
        X = hstack_csr([sp.csr_matrix(b) for b in blocks])
        self._update_dropped()
        return X

    def transform(self, corpus: TaggedCorpus) -> sp.csr_matrix:
        """The parts' matrices side by side.

        Parameters
        ----------
        corpus : TaggedCorpus

        Returns
        -------
        X : scipy.sparse.csr_matrix, shape (n_sentences, n_features_)
            dtype: the common type of the parts' outputs; sorted indices when every part's
            are sorted.
        """
        self._check_fitted()
        corpus = check_corpus(corpus)
        return self._stack([v.transform(corpus) for v in self.views_])

    def fit_transform(self, corpus: TaggedCorpus) -> sp.csr_matrix:
        """``fit(corpus)`` then ``transform(corpus)`` (each part fitted and used once)."""
        views = _check_views(self.views)
        corpus = check_corpus(corpus)
        parts = [type(v)(**v.get_params()) for v in views]
        blocks = [p.fit_transform(corpus) for p in parts]
        self._set_parts(parts)
        return self._stack(blocks)

    def transform_sequences(self, *args, **kwargs) -> sp.csr_matrix:
        """The parts' ``transform_sequences`` (same arguments to each) side by side.

        Input views take ``(word_ids, offsets, words)``, tag views ``(tag_ids, offsets,
        tags)``; every part must support the call.

        Returns
        -------
        X : scipy.sparse.csr_matrix, shape (n_sequences, n_features_)
        """
        self._check_fitted()
        for i, v in enumerate(self.views_):
            if not callable(getattr(v, "transform_sequences", None)):
                raise TypeError(f"views[{i}] ({type(v).__name__}) has no transform_sequences")
        return self._stack([v.transform_sequences(*args, **kwargs) for v in self.views_])

    def feature_names_out(self) -> np.ndarray:
        """Feature names in column order, ``"<j>:<name>"`` for part ``j``.

        The prefix keeps names unique (the suffix ``"the"`` and the word ``"the"`` are
        different columns).
        """
        self._check_fitted()
        names = [f"{j}:{s}" for j, v in enumerate(self.views_) for s in v.feature_names_out()]
        return np.array(names, dtype=object)

    # -- persistence -------------------------------------------------------------------------
    def _get_state(self):
        self._check_fitted()
        arrays: dict = {}
        extra: dict = {"n_parts": len(self.views_)}
        for j, v in enumerate(self.views_):
            put_child(arrays, extra, f"part{j}", v)
        return self._persist_params(), arrays, extra

    def _set_state(self, arrays, extra):
        views = _check_views(self.views)
        n = extra.get("n_parts")
        if isinstance(n, bool) or not isinstance(n, int) or n != len(views):
            raise ModelFormatError(f"n_parts must equal the number of views ({len(views)}), "
                                   f"got {n!r}")
        parts = []
        for j, v in enumerate(views):
            part = get_child(arrays, extra, f"part{j}", allowed=[type(v)])
            parts.append(part)
        self._set_parts(parts)
