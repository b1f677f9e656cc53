"""Corrupt scipy.sparse index arrays are refused before compiled code reads them.

scipy's constructor does not scan ``indices``: before this check a CSR matrix with a negative
column index given to SparseCCA aborted the interpreter ("double free or corruption").
"""

import numpy as np
import pytest
import scipy.sparse as sp

from sparsecca._sparse import check_sparse_structure
from sparsecca.kernels import aggregate_residuals, boosting_path, perceptron_train
from sparsecca.linalg import SparseCCA, randomized_svd

rng = np.random.default_rng(0)
DENSE = rng.random((12, 5)) * (rng.random((12, 5)) < 0.5)
DENSE[:, 0] += 1.0  # every row and column has an entry
Y0 = rng.random((12, 3))


def _csr(indices=None, indptr=None, fmt="csr"):
    """A copy of DENSE in ``fmt`` whose index arrays are replaced after construction."""
    M = getattr(sp, f"{fmt}_matrix")(DENSE)
    M = M.copy()
    if indices is not None:
        M.indices = indices(M.indices.copy())
    if indptr is not None:
        M.indptr = indptr(M.indptr.copy())
    return M


def _set(a, i, v):
    a[i] = v
    return a


def _coo_col(value):
    M = sp.coo_matrix(DENSE)
    col = M.col.copy()
    col[1] = value
    M.col = col
    return M


CORRUPT = [
    ("negative-column", _csr(indices=lambda a: _set(a, 3, -1)),
     r"X is not a valid CSR matrix: column indices must be in \[0, 5\), got -1"),
    ("column-past-end", _csr(indices=lambda a: _set(a, 0, 5)),
     r"X is not a valid CSR matrix: column indices must be in \[0, 5\), got 5"),
    ("float-indices", _csr(indices=lambda a: a.astype(np.float64)),
     r"X is not a valid CSR matrix: its column indices array must have an integer dtype, "
     r"got float64"),
    ("decreasing-indptr", _csr(indptr=lambda a: _set(a, 2, a[3] + 1)),
     r"X is not a valid CSR matrix: indptr must be non-decreasing, got indptr\[2\] = \d+ > "
     r"indptr\[3\] = \d+"),
    ("short-indptr", _csr(indptr=lambda a: a[:-1]),
     r"X is not a valid CSR matrix: indptr must have 13 entries \(12 rows \+ 1\), got 12"),
    ("indptr-past-data", _csr(indptr=lambda a: _set(a, 12, a[12] + 4)),
     r"X is not a valid CSR matrix: indptr ends at \d+, past its \d+ indices and \d+ values"),
    ("indptr-not-at-0", _csr(indptr=lambda a: _set(a, 0, 1)),
     r"X is not a valid CSR matrix: indptr must start at 0, got 1"),
    ("csc-negative-row", _csr(indices=lambda a: _set(a, 0, -7), fmt="csc"),
     r"X is not a valid CSC matrix: row indices must be in \[0, 12\), got -7"),
    ("coo-column", _coo_col(9),
     r"X is not a valid COO matrix: column indices must be in \[0, 5\), got 9"),
]


@pytest.mark.parametrize("case,X,match", CORRUPT, ids=[c[0] for c in CORRUPT])
def test_corrupt_structure_is_refused(case, X, match):
    with pytest.raises(ValueError, match=match):
        check_sparse_structure(X, "X")
    with pytest.raises(ValueError, match=match):
        SparseCCA(2, tau=0.5).fit(X, Y0)
    with pytest.raises(ValueError, match=match.replace("X is", "A is")):
        randomized_svd(X, 2, random_state=0)


def test_refused_without_touching_the_input():
    X = CORRUPT[0][1]
    arrays = (X.data, X.indices, X.indptr)
    saved = [a.copy() for a in arrays]
    with pytest.raises(ValueError):
        SparseCCA(2, tau=0.5).fit(X, Y0)
    for a, b, s in zip(arrays, (X.data, X.indices, X.indptr), saved):
        assert a is b
        np.testing.assert_array_equal(a, s)


def _unsorted_with_duplicates():
    # row 0 holds (col 3, 1.0), (col 0, 2.0), (col 3, 0.5): unsorted, duplicated, and valid
    data = np.array([1.0, 2.0, 0.5, 4.0])
    indices = np.array([3, 0, 3, 1])
    indptr = np.array([0, 3, 4])
    return sp.csr_matrix((data, indices, indptr), shape=(2, 4)), np.array(
        [[2.0, 0, 0, 1.5], [0, 4.0, 0, 0]])


def test_valid_unusual_matrices_pass():
    M, dense = _unsorted_with_duplicates()
    check_sparse_structure(M, "X")
    # spare capacity past indptr[-1] is valid (scipy keeps it after deletions)
    spare = sp.csr_matrix((np.r_[M.data, 9.0], np.r_[M.indices, -5], M.indptr), shape=M.shape)
    check_sparse_structure(spare, "X")
    for fmt in ("csc", "coo", "bsr", "lil", "dok", "dia"):
        check_sparse_structure(sp.csr_matrix(dense).asformat(fmt), "X")
    check_sparse_structure(sp.csr_array(dense), "X")


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_duplicates_and_unsorted_indices_fit_like_their_sum(fmt):
    M, dense = _unsorted_with_duplicates()
    X = sp.vstack([M] * 6).asformat(fmt) + sp.csr_matrix(np.tile(DENSE[:2, :4], (6, 1)))
    Xd = np.tile(dense, (6, 1)) + np.tile(DENSE[:2, :4], (6, 1))
    Y = Y0[:12]
    a = SparseCCA(2, tau=0.5, solver="dense").fit(X, Y)
    b = SparseCCA(2, tau=0.5, solver="dense").fit(Xd, Y)
    np.testing.assert_allclose(a.correlations_, b.correlations_, rtol=1e3 * np.finfo(float).eps)


def test_kernel_wrappers_refuse_corrupt_structure():
    bad = sp.csr_matrix(np.eye(2))
    bad.indices = np.array([0, 2], dtype=bad.indices.dtype)
    with pytest.raises(ValueError, match=r"D is not a valid CSR matrix: column indices must be "
                                         r"in \[0, 2\), got 2"):
        boosting_path(bad, np.zeros(2), 3)
    with pytest.raises(ValueError, match=r"H is not a valid CSR matrix"):
        perceptron_train(bad, [0.0, 1.0], [0, 2], [0], [0, 1], [[0]], 1.0)
    Y = sp.csr_matrix(np.ones((2, 3)))
    Y.indices = Y.indices.copy()
    Y.indices[1] = -1
    with pytest.raises(ValueError, match=r"Y is not a valid CSR matrix: column indices must be "
                                         r"in \[0, 3\), got -1"):
        aggregate_residuals(Y, np.ones((4, 3)), np.ones(4), [0, 1, 4])
