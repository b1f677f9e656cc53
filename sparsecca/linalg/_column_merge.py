"""Exact reduction of a data matrix with duplicate columns."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = []


class _ColumnMerge:
    """Exact reduction of a data matrix with duplicate columns.

    Identical columns x_j (common for sparse NLP features: a word seen once and its
    suffixes share one row pattern -- often a quarter of a suffix view's columns) make
    C = (1 - tau) X^T X + tau I needlessly large and ill-conditioned for diagonal
    preconditioners.  With groups g of m_g identical columns, X a only depends on the group
    sums, and for a fixed X a the penalty ||a||^2 is smallest with equal shares, so every
    solution has a_j = c_g / sqrt(m_g) where c solves the same problem for the merged matrix
    X_hat = [sqrt(m_g) x_g].  a^T Cxx a, a^T Cxy b and the residual norms are preserved.
    """

    def __init__(self, X):
        # fingerprint: two random projections; identical columns give bit-identical sums
        R = np.random.default_rng(0x5eed).standard_normal((X.shape[0], 2))
        h = np.asarray(X.T @ R) if sp.issparse(X) else X.T @ R
        Xc = X.tocsc() if sp.issparse(X) else X
        if sp.issparse(Xc):
            Xc.sort_indices()

        def same(firsts, members):
            return np.array([_same_column(Xc, i, j) for i, j in zip(firsts, members)],
                            dtype=bool)

        self._set_labels(_verified_labels(h, same))
        if self.trivial:
            self.merged = X
        elif sp.issparse(X):
            Xm = X.tocsc()[:, self.first] @ sp.diags(self.scale.astype(X.dtype))
            self.merged = sp.csr_matrix(Xm, dtype=X.dtype)
        else:
            self.merged = np.ascontiguousarray(X[:, self.first] * self.scale.astype(X.dtype))

    def _set_labels(self, labels):
        """Groups from a label per original column: ``labels`` (merged index of every
        column), ``counts``, ``n_merged``, ``trivial``, and the ``first`` column and the
        ``scale`` sqrt(m_g) of each group."""
        d = self.n_features = labels.size
        uniq, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
        first = np.full(uniq.size, d, dtype=np.int64)
        np.minimum.at(first, inverse, np.arange(d))
        # the groups in the order of their first column, whatever the fingerprints (which
        # differ between an in-memory X and its Dask chunks): the same merged matrix
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        self.labels = rank[inverse]  # merged index of every original column
        self.counts = counts[order]
        self.first = first[order]
        self.n_merged = uniq.size
        self.trivial = self.n_merged == d
        self.scale = np.sqrt(self.counts.astype(np.float64))

    def expand(self, W):
        """Weights on the merged columns (d', k) -> original columns (d, k)."""
        if self.trivial:
            return W
        return W[self.labels] / np.sqrt(self.counts[self.labels])[:, None]


def _verified_labels(h, same):
    """A label per column from its fingerprint row of ``h`` (d, 2): equal fingerprints share
    a label once ``same(firsts, members)`` (bool array) confirms each member equals its
    group's first column exactly (a hash collision splits the group)."""
    d = h.shape[0]
    order = np.lexsort((h[:, 1], h[:, 0]))
    hs = h[order]
    new = np.ones(d, dtype=bool)
    new[1:] = np.any(hs[1:] != hs[:-1], axis=1)
    label_sorted = np.cumsum(new) - 1
    labels = np.empty(d, dtype=np.int64)
    labels[order] = label_sorted
    members = order[~new]  # members other than the first of each candidate group
    firsts = order[np.searchsorted(label_sorted, labels[members])]
    if members.size:
        bad = members[~np.asarray(same(firsts, members), dtype=bool)]
        labels[bad] = int(label_sorted[-1]) + 1 + np.arange(bad.size)
    return labels


def _same_column(Xc, i, j):
    if sp.issparse(Xc):
        a = slice(Xc.indptr[i], Xc.indptr[i + 1])
        b = slice(Xc.indptr[j], Xc.indptr[j + 1])
        return (a.stop - a.start == b.stop - b.start
                and np.array_equal(Xc.indices[a], Xc.indices[b])
                and np.array_equal(Xc.data[a], Xc.data[b]))
    return np.array_equal(Xc[:, i], Xc[:, j])
