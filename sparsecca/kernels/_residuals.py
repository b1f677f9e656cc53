"""Residual aggregation and the Algorithm 1 slack / multiplier update, on raw arrays."""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from .._config import JIT_SERIAL
from .._params import check_float, check_float_dtype
from .._sparse import check_sparse_structure
from ._checks import check_offsets, int_array, real_array

__all__ = ["aggregate_residuals", "slack_update"]


@numba.njit(**JIT_SERIAL)
def _aggregate_residuals_kernel(y_indptr, y_indices, y_data, c_indptr, c_indices, c_data,
                                weights, sent_offsets, n_cols):
    """Row i of R = (1/m_i) sum_j w_ij (y_i - yhat_ij) as CSR arrays.

    Rows must be canonical (no column twice in a row).  Each candidate adds its own term
    w_ij (y_if - yhat_ijf), so a feature on which a candidate agrees with the gold adds exactly
    0 and a feature on which all candidates agree is exactly 0 and dropped (summing
    (sum_j w_ij) y_i and then subtracting each w_ij yhat_ij left rounding noise there).  A
    dense accumulator of length n_cols (reset through the list of touched columns) keeps the
    cost O(nnz(Y_hat_i) + m_i nnz(y_i)) per row.
    """
    n = sent_offsets.size - 1
    acc = np.zeros(n_cols, dtype=np.float64)
    gold = np.zeros(n_cols, dtype=np.float64)  # y_i scattered
    touched = np.zeros(n_cols, dtype=np.bool_)
    cols = np.empty(n_cols, dtype=np.int64)
    # last candidate whose term covered a column: candidate indices are global, so no reset
    seen = np.full(n_cols, -1, dtype=np.int64)
    # upper bound on output nnz: every input entry distinct
    cap = 0
    for i in range(n):
        for j in range(sent_offsets[i], sent_offsets[i + 1]):
            cap += c_indptr[j + 1] - c_indptr[j]
        if sent_offsets[i + 1] > sent_offsets[i]:
            cap += y_indptr[i + 1] - y_indptr[i]
    out_indptr = np.zeros(n + 1, dtype=np.int64)
    out_indices = np.empty(cap, dtype=np.int32)
    out_data = np.empty(cap, dtype=np.float64)
    pos = 0
    for i in range(n):
        a, b = sent_offsets[i], sent_offsets[i + 1]
        m = b - a
        if m > 0:
            inv_m = 1.0 / m
            for p in range(y_indptr[i], y_indptr[i + 1]):
                gold[y_indices[p]] = y_data[p]
            nt = 0
            for j in range(a, b):
                w = weights[j]
                if w == 0.0:
                    continue
                for p in range(c_indptr[j], c_indptr[j + 1]):
                    col = c_indices[p]
                    if not touched[col]:
                        touched[col] = True
                        cols[nt] = col
                        nt += 1
                    seen[col] = j
                    acc[col] += w * (gold[col] - c_data[p])
                # gold features the candidate lacks
                for p in range(y_indptr[i], y_indptr[i + 1]):
                    col = y_indices[p]
                    if seen[col] != j:
                        if not touched[col]:
                            touched[col] = True
                            cols[nt] = col
                            nt += 1
                        acc[col] += w * y_data[p]
            rowcols = np.sort(cols[:nt])
            for q in range(nt):
                col = rowcols[q]
                v = acc[col]
                if v != 0.0:
                    out_indices[pos] = col
                    out_data[pos] = v * inv_m
                    pos += 1
                acc[col] = 0.0
                touched[col] = False
            for p in range(y_indptr[i], y_indptr[i + 1]):
                gold[y_indices[p]] = 0.0
        out_indptr[i + 1] = pos
    return out_indptr, out_indices[:pos], out_data[:pos]


def _as_csr(name, M, n_cols=None):
    if not sp.issparse(M):
        M = np.asarray(M)
        if M.ndim != 2:
            raise ValueError(f"{name} must be a 2-d matrix, got shape {M.shape}")
    if not np.issubdtype(M.dtype, np.number) or np.issubdtype(M.dtype, np.complexfloating):
        raise TypeError(f"{name} must have a real numeric dtype, got {M.dtype}")
    if sp.issparse(M):
        check_sparse_structure(M, name)
    M = sp.csr_matrix(M)
    if n_cols is not None and M.shape[1] != n_cols:
        raise ValueError(f"{name} has {M.shape[1]} columns, expected {n_cols}")
    M.sum_duplicates()
    # one NaN / inf would spread through the whole residual row without an error
    if M.nnz and not np.all(np.isfinite(M.data)):
        raise ValueError(f"{name} must have finite values")
    return M


def _check_segments(sent_offsets, n_candidates, n_sentences=None):
    off = int_array("sent_offsets", sent_offsets)
    if n_sentences is not None and off.size != n_sentences + 1:
        raise ValueError(
            f"sent_offsets must have n_sentences + 1 = {n_sentences + 1} entries, got {off.size}"
        )
    return check_offsets("sent_offsets", off, n_candidates, "n_candidates")


def aggregate_residuals(Y, Y_hat, weights, sent_offsets, dtype=np.float64):
    """Weighted mean residuals R, row i = (1/m_i) sum_j w_ij (y_i - yhat_ij).

    The residual vectors r_ij are never formed: each output row is accumulated directly.

    Parameters
    ----------
    Y : sparse or dense matrix, shape (n, d2)
        Gold output view, one row per sentence.
    Y_hat : sparse or dense matrix, shape (n_candidates, d2)
        Candidate output views, the candidates of sentence i in rows
        ``sent_offsets[i]:sent_offsets[i+1]``.
    weights : array, shape (n_candidates,)
        c_ij: the losses L_ij (softened model) or the multipliers alpha_ij (Algorithm 1).
    sent_offsets : int array, shape (n + 1,)
    dtype : float32 or float64
        Output dtype (accumulation is in float64).

    Raises
    ------
    ValueError
        For non-finite values in ``Y``, ``Y_hat`` or ``weights``, mismatched shapes, invalid
        offsets, or another ``dtype``.
    TypeError
        For non-numeric matrices or weights, or float / bool ``sent_offsets``.

    Returns
    -------
    R : scipy.sparse.csr_matrix, shape (n, d2)
        Rows of sentences without candidates are zero.  A feature on which every candidate of
        sentence i agrees with the gold is exactly 0 and not stored.

    Notes
    -----
    ``R`` is the residual term of the cross-covariance factor of the softened (weights = the
    losses L_ij) and discriminative (weights = the multipliers alpha_ij) models of
    Jagarlamudi & Daumé III (2012), section 2.4-2.5.  Each output row is accumulated in a
    dense buffer reset through the list of touched columns, so the cost is
    O(nnz(Y_hat_i) + m_i nnz(y_i)) per sentence.

    References
    ----------
    J. Jagarlamudi and H. Daumé III (2012).  Low-dimensional discriminative reranking.
    Proceedings of NAACL-HLT 2012, pp. 699-709.

    Examples
    --------
    Sentence 0 has two candidates (weights 0 and 1), sentence 1 one (weight 2):

    >>> import scipy.sparse as sp
    >>> from sparsecca.kernels import aggregate_residuals
    >>> Y = sp.csr_matrix([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    >>> Y_hat = sp.csr_matrix([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    >>> R = aggregate_residuals(Y, Y_hat, weights=[0.0, 1.0, 2.0], sent_offsets=[0, 2, 3])
    >>> R.toarray().tolist()
    [[0.0, 0.5, -0.5], [-2.0, 0.0, 2.0]]
    """
    dtype = check_float_dtype(dtype)
    Y = _as_csr("Y", Y)
    Y_hat = _as_csr("Y_hat", Y_hat, n_cols=Y.shape[1])
    n = Y.shape[0]
    off = _check_segments(sent_offsets, Y_hat.shape[0], n)
    w = real_array("weights", weights, ndim=None)
    if w.shape != (Y_hat.shape[0],):
        raise ValueError(
            f"weights must have one entry per candidate ({Y_hat.shape[0]}), got shape {w.shape}"
        )
    if not np.all(np.isfinite(w)):
        raise ValueError("weights must be finite")
    indptr, indices, data = _aggregate_residuals_kernel(
        Y.indptr.astype(np.int64), Y.indices.astype(np.int64), Y.data.astype(np.float64),
        Y_hat.indptr.astype(np.int64), Y_hat.indices.astype(np.int64),
        Y_hat.data.astype(np.float64), w, off, Y.shape[1])
    return sp.csr_matrix((data.astype(dtype, copy=False), indices, indptr), shape=Y.shape)


@numba.njit(**JIT_SERIAL)
def _slack_update_kernel(margins, losses, alpha, sent_offsets, gamma):
    """Steps 9-14 of Algorithm 1 for every sentence; updates ``alpha`` in place."""
    n = sent_offsets.size - 1
    xi = np.zeros(n, dtype=np.float64)
    for i in range(n):
        a, b = sent_offsets[i], sent_offsets[i + 1]
        best = np.inf
        for j in range(a, b):
            if losses[j] > 0.0:
                psi = (1.0 - margins[j]) * losses[j]
                if psi > 0.0 and psi < best:
                    best = psi
        if best == np.inf:
            continue  # every margin constraint of sentence i holds: no slack, no update
        xi[i] = best
        for j in range(a, b):
            if losses[j] > 0.0:
                d = margins[j] - (1.0 - best / losses[j])
                v = alpha[j] - gamma * d
                # multipliers of inequality constraints stay non-negative
                alpha[j] = v if v > 0.0 else 0.0
    return xi


def slack_update(margins, losses, alpha, sent_offsets, gamma):
    """One multiplier update of Algorithm 1 (steps 9-14), vectorised over all candidates.

    For candidate j of sentence i with margin s_ij = x_i^T A_n B_n^T r_ij and loss L_ij > 0:
    psi_ij = (1 - s_ij) L_ij; the slack xi_i is the smallest positive psi_ij (0 when none is
    positive); when xi_i > 0 every multiplier of the sentence moves against
    d_ij = s_ij - (1 - xi_i / L_ij) with step ``gamma`` and is clipped at 0 (Lagrange
    multipliers of inequality constraints are non-negative).  Candidates with zero loss have no
    margin constraint and keep their multiplier.

    Parameters
    ----------
    margins, losses, alpha : float arrays, shape (n_candidates,)
        ``losses`` and ``alpha`` >= 0.
    sent_offsets : int array, shape (n + 1,)
    gamma : float > 0

    Returns
    -------
    xi : ndarray, shape (n,)
        The slacks.
    alpha_new : ndarray, shape (n_candidates,)
        The updated multipliers (``alpha`` itself is not modified).

    Raises
    ------
    ValueError
        Arrays of different lengths, non-finite values, negative ``losses`` or ``alpha``,
        ``gamma`` <= 0, or invalid offsets.
    TypeError
        Non-numeric arrays, or float / bool ``sent_offsets``.

    References
    ----------
    J. Jagarlamudi and H. Daumé III (2012).  Low-dimensional discriminative reranking.
    Proceedings of NAACL-HLT 2012, pp. 699-709 (Algorithm 1).

    Examples
    --------
    Sentence 0 has candidates 0 and 1, sentence 1 has candidate 2 (loss 0: no constraint).
    Candidate 0 violates its margin (psi = (1 - 0.5) * 1 = 0.5 is the slack), so the
    multipliers of sentence 0 move; candidate 0 sits exactly on ``1 - xi / L`` and keeps
    its multiplier:

    >>> from sparsecca.kernels import slack_update
    >>> xi, alpha = slack_update(margins=[0.5, 2.0, 0.2], losses=[1.0, 2.0, 0.0],
    ...                          alpha=[1.0, 2.0, 0.0], sent_offsets=[0, 2, 3], gamma=0.5)
    >>> xi.tolist(), alpha.tolist()
    ([0.5, 0.0], [1.0, 1.375, 0.0])
    """
    s = real_array("margins", margins, ndim=None)
    L = real_array("losses", losses, ndim=None)
    al = real_array("alpha", alpha, ndim=None).copy()
    if not (s.ndim == L.ndim == al.ndim == 1 and s.size == L.size == al.size):
        raise ValueError(
            f"margins, losses and alpha must be 1-d of equal length, got shapes "
            f"{s.shape}, {L.shape}, {al.shape}"
        )
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(L)) and np.all(np.isfinite(al))):
        raise ValueError("margins, losses and alpha must be finite")
    if np.any(L < 0):
        raise ValueError(f"losses must be >= 0, got minimum {L.min()}")
    if np.any(al < 0):
        raise ValueError(f"alpha must be >= 0 (multipliers of inequality constraints), got "
                         f"minimum {al.min()}")
    gamma = check_float("gamma", gamma, 0.0, strict=True)
    off = _check_segments(sent_offsets, s.size)
    xi = _slack_update_kernel(s, L, al, off, gamma)
    return xi, al
