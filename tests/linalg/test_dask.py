"""Covariance statistics reduced over the row chunks of Dask arrays, against the stacked
matrices (the block sums are exact: equal to rounding)."""

import numpy as np
import pytest

from sparsecca.linalg import CrossCovariance, GramStats, SparseCCA
from sparsecca.linalg._inverse import GramFactor, RegularizedInverse
from sparsecca.linalg._reduced import reduced_cca

from .conftest import count_problem

da = pytest.importorskip("dask.array", reason="the dask extra is not installed")


def _dask(A, rows, sparse):
    A = A if sparse else A.toarray()
    return da.from_array(A, chunks=(rows, A.shape[1]), asarray=False)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("rows", [7, 40, 500])  # several blocks, an odd count, one block
@pytest.mark.parametrize("center", [False, True])
def test_dask_statistics_equal_the_stacked_ones(sparse, rows, center):
    X, Y = count_problem(300, 60, 12, seed=21)
    st = GramStats.from_dask(_dask(X, rows, sparse), scheduler="threads")
    np.testing.assert_allclose(st.gram.toarray(), (X.T @ X).toarray(), rtol=1e-13)
    np.testing.assert_allclose(st.colsum, np.asarray(X.sum(axis=0)).ravel(), rtol=1e-13)
    assert st.n_samples == 300 and st.n_features == 60
    K = CrossCovariance.from_dask(_dask(X, rows, sparse), _dask(Y, rows, sparse),
                                  center=center, scheduler="sync")
    ref = CrossCovariance(X, Y, center=center)
    np.testing.assert_allclose(K.toarray(), ref.toarray(), rtol=1e-12, atol=1e-12)


def test_cca_from_dask_statistics_equals_the_in_memory_fit():
    X, Y = count_problem(600, 80, 15, seed=22)
    tau, k = 0.3, 5
    sx = GramStats.from_dask(_dask(X, 64, True))
    sy = GramStats.from_dask(_dask(Y, 64, True), name="Y")
    cross = CrossCovariance.from_dask(_dask(X, 64, True), _dask(Y, 64, True))
    res = reduced_cca(RegularizedInverse(GramFactor(sx), tau, "dense"),
                      RegularizedInverse(sy, tau, "dense"), cross, k)
    ref = SparseCCA(k, tau=tau, solver="dense").fit(X, Y)
    np.testing.assert_allclose(res.correlations, ref.correlations_, rtol=1e-10)


def test_empty_chunks_add_nothing():
    X, _ = count_problem(50, 9, 4, seed=23)
    A = da.from_array(X, chunks=((20, 0, 30), (9,)), asarray=False)
    assert A.chunks[0] == (20, 0, 30)
    st = GramStats.from_dask(A)
    np.testing.assert_allclose(st.gram.toarray(), (X.T @ X).toarray())


def test_dask_input_errors():
    X, Y = count_problem(60, 9, 4, seed=24)
    with pytest.raises(TypeError, match=r"X must be a dask.array.Array, got csr_matrix"):
        GramStats.from_dask(X)
    cols = da.from_array(X.toarray(), chunks=(20, 5))
    with pytest.raises(ValueError, match=r"X must be chunked by rows only \(one chunk across "
                                         r"its 9 columns\), got column chunks \(5, 4\); "
                                         r"rechunk with X.rechunk\(\{1: -1\}\)"):
        GramStats.from_dask(cols)
    with pytest.raises(ValueError, match=r"M must have the same row chunks as X, got "
                                         r"\(30, 30\) and \(20, 20, 20\)"):
        CrossCovariance.from_dask(_dask(X, 20, False), _dask(Y, 30, False))
    bad = X.toarray()
    bad[45, 2] = np.nan
    with pytest.raises(ValueError, match=r"Y row block 2 \(rows 40-59\) must contain only "
                                         r"finite values, got NaN"):
        GramStats.from_dask(da.from_array(bad, chunks=(20, 9)), name="Y")
    with pytest.raises(ValueError, match=r"X must have at least 1 row"):
        GramStats.from_dask(da.zeros((0, 4), chunks=(1, 4)))
