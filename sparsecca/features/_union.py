"""Column-wise union of views: one input view built from several (e.g. suffixes + words)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from .._persist import (
    ModelFormatError,
    check_index,
    get_child,
    put_child,
    state_array,
    state_value,
)
from ..data import TaggedCorpus
from ._base import BaseView, check_corpus, check_max_features, keep_most_frequent
from ._counts import StackCounts

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
    if not isinstance(views, Sequence):
        # the rerankers clone and refit their views: the second fit would find it used up
        raise TypeError(f"views must be a non-empty sequence of feature views (a list or "
                        f"tuple), got a {type(views).__name__}, which the first fit would "
                        f"use up")
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


def _splits(view) -> bool:
    """Whether ``view`` has a split fit (``count`` / ``fit_counts``)."""
    return all(callable(getattr(view, a, None)) for a in ("count", "fit_counts", "_fit_counts"))


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
    max_features : int >= 1 or None, default None
        Keep the ``max_features`` columns of the whole stack occurring most often in the
        fitting corpus (largest column sums); ties go to the earlier column.  The parts keep
        their own vocabularies; the selection is applied to their stacked output.  None keeps
        every column.

    Attributes
    ----------
    reads : frozenset or None
        The parts' ``reads`` joined (a property of the parameters, known before ``fit``).
    views_ : list of fitted views (clones of ``views``)
    columns_ : int64 array, shape (n_features_,), or None
        Sorted indices of the columns kept in the parts' full stack (None without
        ``max_features``); column ``j`` of the output is column ``columns_[j]`` of the stack.
    n_features_ : int
        Number of output columns: the sum of the parts' ``n_features_``, or
        ``columns_.size``.
    feature_offsets_ : int64 array, shape (n_views + 1,)
        Output columns ``feature_offsets_[j]:feature_offsets_[j + 1]`` come from
        ``views_[j]``.
    n_dropped_ : int
        Feature occurrences absent from the output at the last ``fit``/``transform``: the sum
        of the parts' ``n_dropped_``, plus the occurrences of the columns ``max_features``
        left out.

    Examples
    --------
    >>> from sparsecca.data import TaggedCorpus
    >>> from sparsecca.features import HStackView, SuffixView, WordView
    >>> corpus = TaggedCorpus.from_words([["The", "selling", "pressure"], ["a", "sale", ","]])
    >>> view = HStackView([SuffixView(lengths=(2,)), WordView()]).fit(corpus)
    >>> view.n_features_, view.feature_offsets_.tolist(), sorted(view.reads)
    (12, [0, 6, 12], ['words'])
    >>> view.feature_names_out().tolist()[:8]
    ['0:^,', '0:^a', '0:he', '0:le', '0:ng', '0:re', '1:,', '1:The']
    >>> view.transform(corpus).shape
    (2, 12)

    ``max_features`` selects among the columns of the whole stack:

    >>> HStackView([SuffixView(lengths=(2,)), WordView()], max_features=3).fit(
    ...     corpus).feature_names_out().tolist()
    ['0:^,', '0:^a', '0:he']
    """

    def __init__(self, views=(), max_features=None):
        self.views = views
        self.max_features = max_features

    @property
    def reads(self) -> frozenset | None:
        """What the parts featurise, joined (parts that are stacks are asked in turn); None
        when ``views`` is not a sequence or a part does not declare ``reads``."""
        # only a real sequence: asking must not consume an iterator that fit will need
        if not isinstance(self.views, Sequence) or isinstance(self.views, (str, bytes)):
            return None
        kinds = [getattr(v, "reads", None) for v in self.views]
        if not kinds or not all(isinstance(k, frozenset) for k in kinds):
            return None
        return frozenset().union(*kinds)

    def fit(self, corpus: TaggedCorpus) -> "HStackView":
        """Fit a clone of every part on ``corpus`` (and, with ``max_features``, choose the
        columns by their sums on ``corpus``): ``fit_counts(count(corpus))`` when every part
        has a split fit (``count``/``fit_counts``, as the package's views do).

        Parameters
        ----------
        corpus : TaggedCorpus

        Returns
        -------
        self
        """
        views = _check_views(self.views)
        if all(_splits(v) for v in views):
            return self.fit_counts(self.count(corpus))
        # a part without a split fit: fitted on the corpus, column sums from its transform
        max_features = check_max_features(self.max_features)
        corpus = check_corpus(corpus)
        parts = [type(v)(**v.get_params()) for v in views]
        if max_features is None:
            self._set_parts([p.fit(corpus) for p in parts], None)
            return self
        occ = []
        for p in parts:
            b = sp.csr_matrix(p.fit_transform(corpus))
            occ.append(np.bincount(b.indices, weights=b.data, minlength=b.shape[1]))
        self._select(parts, np.concatenate(occ), max_features)
        return self

    def count(self, corpus: TaggedCorpus) -> StackCounts:
        """Every part's counts of ``corpus`` (each part must have a split fit), mergeable with
        those of other pieces of a corpus (:func:`~sparsecca.features.merge_counts`).

        Returns
        -------
        StackCounts
        """
        views = _check_views(self.views)
        check_max_features(self.max_features)
        corpus = check_corpus(corpus)
        for i, v in enumerate(views):
            if not _splits(v):
                raise TypeError(f"views[{i}] ({type(v).__name__}) has no split fit (count and "
                                f"fit_counts), so the stack cannot be fitted from counts")
        parts = tuple(type(v)(**v.get_params()).count(corpus) for v in views)
        return StackCounts(("HStackView",) + tuple(c.signature for c in parts), parts,
                           corpus.n_sentences)

    def _fit_counts(self, counts) -> np.ndarray:
        views = _check_views(self.views)
        max_features = check_max_features(self.max_features)
        if not isinstance(counts, StackCounts) or len(counts.parts) != len(views):
            raise TypeError(f"counts must be the StackCounts of an HStackView.count with "
                            f"{len(views)} parts, got {type(counts).__name__}")
        parts = [type(v)(**v.get_params()) for v in views]
        occ = np.concatenate([p._fit_counts(c) for p, c in zip(parts, counts.parts)])
        if max_features is None:
            self._set_parts(parts, None)
            return occ
        return self._select(parts, occ, max_features)

    def _select(self, parts, occ, max_features) -> np.ndarray:
        """Keep the ``max_features`` columns of largest sums ``occ``; the kept sums."""
        keep = keep_most_frequent(np.ones(occ.size, dtype=bool), occ, max_features)
        self._set_parts(parts, np.flatnonzero(keep).astype(np.int64))
        self._update_dropped(int(occ[~keep].sum()))
        return occ[keep]

    def _set_parts(self, fitted: list, columns) -> None:
        self.views_ = fitted
        widths = [int(v.n_features_) for v in fitted]
        offsets = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
        self.columns_ = columns
        if columns is None:
            self._new_col = None
            self.feature_offsets_ = offsets
        else:
            # full stack column -> output column (-1: left out)
            self._new_col = np.full(int(offsets[-1]), -1, dtype=np.int64)
            self._new_col[columns] = np.arange(columns.size, dtype=np.int64)
            self.feature_offsets_ = np.searchsorted(columns, offsets).astype(np.int64)
        self.n_features_ = int(self.feature_offsets_[-1])
        self._update_dropped(0)

    def _update_dropped(self, unselected: int) -> None:
        self.n_dropped_ = int(sum(getattr(v, "n_dropped_", 0) for v in self.views_)) + unselected

    def _stack(self, blocks: list) -> sp.csr_matrix:
        X = hstack_csr([sp.csr_matrix(b) for b in blocks])
        unselected = 0
        if self._new_col is not None:
            # keep the selected columns: an O(nnz) relabelling; columns_ is sorted, so sorted
            # indices stay sorted
            new = self._new_col[X.indices]
            kept = new >= 0
            unselected = int(round(float(X.data[~kept].sum(dtype=np.float64))))
            pos = np.zeros(kept.size + 1, dtype=np.int64)
            np.cumsum(kept, out=pos[1:])
            idx = X.indices.dtype
            X = sp.csr_matrix((X.data[kept], new[kept].astype(idx), pos[X.indptr].astype(idx)),
                              shape=(X.shape[0], self.n_features_))
        self._update_dropped(unselected)
        return X

    def transform(self, corpus: TaggedCorpus) -> sp.csr_matrix:
        """The parts' matrices side by side (the columns ``columns_`` of them).

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
        names = np.array(names, dtype=object)
        return names if self.columns_ is None else names[self.columns_]

    # -- persistence -------------------------------------------------------------------------
    def _get_state(self):
        self._check_fitted()
        arrays: dict = {}
        extra: dict = {"n_parts": len(self.views_), "n_dropped": self.n_dropped_}
        for j, v in enumerate(self.views_):
            put_child(arrays, extra, f"part{j}", v)
        if self.columns_ is not None:
            arrays["columns"] = self.columns_
        return self._persist_params(), arrays, extra

    def _set_state(self, arrays, extra):
        views = _check_views(self.views)
        max_features = check_max_features(self.max_features)
        n = extra.get("n_parts")
        if isinstance(n, bool) or not isinstance(n, int) or n != len(views):
            raise ModelFormatError(f"n_parts must equal the number of views ({len(views)}), "
                                   f"got {n!r}")
        parts = []
        for j, v in enumerate(views):
            part = get_child(arrays, extra, f"part{j}", allowed=[type(v)])
            parts.append(part)
        columns = None
        if max_features is None:
            if "columns" in arrays:
                raise ModelFormatError("array 'columns' is stored but max_features is None")
        else:
            width = sum(int(v.n_features_) for v in parts)
            columns = check_index("columns", state_array(arrays, "columns", "int"), width,
                                  increasing=True)
            if columns.size > max_features:
                raise ModelFormatError(f"array 'columns' has {columns.size} entries, more than "
                                       f"max_features={max_features}")
        self._set_parts(parts, columns)
        if "n_dropped" in extra:  # files written before max_features have no n_dropped
            self.n_dropped_ = state_value(extra, "n_dropped", int, low=0)
