"""The CSR kernels of sparsecca.kernels._csr against scipy products (the slow references)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

from sparsecca.kernels._csr import (
    csr_gram_matmat,
    csr_gram_matmat_parallel,
    csr_gram_matmat_rows,
    csr_matmat_rows,
    csr_pair_tmatmat_rows,
    csr_tmatmat_rows,
)


def _csr(dtype, seed=0, n=57, d=23):
    X = sp.random(n, d, density=0.2, random_state=seed, format="csr", dtype=np.float64)
    X.data = np.round(X.data * 5) + 1
    X.data[X.indptr[3]:X.indptr[4]] = 0  # an empty row
    X.eliminate_zeros()
    assert X.indptr[4] == X.indptr[3]
    return X.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("b", [1, 7])
def test_gram_kernel_matches_scipy(dtype, b):
    X = _csr(dtype)
    V = np.random.default_rng(1).standard_normal((23, b))
    ref = (X.T @ (X @ V)).astype(np.float64)
    out = np.full((23, b), np.nan)
    np.testing.assert_allclose(csr_gram_matmat(X.indptr, X.indices, X.data, V, out), ref,
                               rtol=1e-12, atol=1e-10)


def test_parallel_gram_kernel_matches_scipy():
    # opt-in kernel (SPARSECCA_PARALLEL_GRAM=1); one signature, compiled once (~10 s)
    X = _csr(np.float64)
    V = np.random.default_rng(1).standard_normal((23, 5))
    ref = X.T @ (X @ V)
    for chunks in (1, 2, 5):
        out = np.full((23, 5), np.nan)
        np.testing.assert_allclose(
            csr_gram_matmat_parallel(X.indptr, X.indices, X.data, V, out, chunks), ref,
            rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lo,hi", [(0, 57), (0, 20), (20, 57), (4, 4)])
def test_row_range_kernels_match_scipy(dtype, lo, hi):
    X = _csr(dtype)
    rng = np.random.default_rng(2)
    V = rng.standard_normal((23, 6))
    U = rng.standard_normal((57, 6))
    out = np.full((57, 6), np.nan)
    csr_matmat_rows(X.indptr, X.indices, X.data, V, out, lo, hi)
    np.testing.assert_allclose(out[lo:hi], (X[lo:hi] @ V).astype(np.float64), rtol=1e-12,
                               atol=1e-10)
    assert np.all(np.isnan(out[:lo])) and np.all(np.isnan(out[hi:]))  # other rows untouched
    got = csr_tmatmat_rows(X.indptr, X.indices, X.data, U, np.full((23, 6), np.nan), lo, hi)
    np.testing.assert_allclose(got, (X[lo:hi].T @ U[lo:hi]).astype(np.float64), rtol=1e-12,
                               atol=1e-10)
    Xr = X[lo:hi].astype(np.float64)
    got = csr_gram_matmat_rows(X.indptr, X.indices, X.data, V, np.full((23, 6), np.nan), lo,
                               hi)
    np.testing.assert_allclose(got, Xr.T @ (Xr @ V), rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lo,hi", [(0, 57), (3, 5), (20, 57), (4, 4)])
def test_pair_kernel_matches_scipy(dtype, lo, hi):
    """Dense X[lo:hi]^T M[lo:hi] from two CSR matrices (M with an empty row of its own)."""
    X = _csr(dtype)
    M = _csr(dtype, seed=5, d=9)
    M = M.tolil()
    M[10, :] = 0
    M = M.tocsr()
    M.eliminate_zeros()
    out = np.full((23, 9), np.nan)
    got = csr_pair_tmatmat_rows(X.indptr, X.indices, X.data, M.indptr, M.indices, M.data,
                                out, lo, hi)
    ref = (X[lo:hi].astype(np.float64).T @ M[lo:hi].astype(np.float64)).toarray()
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("threads", ["1", "0"])
def test_split_sparse_products_match_scipy_and_do_not_depend_on_threads(threads,
                                                                        monkeypatch):
    """Above SPLIT_MIN_FLOPS the products are two row ranges (threaded inside small_blas):
    equal to scipy's, and bit-identical with the split thread on or off."""
    from sparsecca.linalg import _gram
    from sparsecca.linalg._validation import small_blas

    X = sp.random(3000, 400, density=0.05, random_state=3, format="csr")
    rng = np.random.default_rng(4)
    V = rng.standard_normal((400, 40))
    U = rng.standard_normal((3000, 40))
    assert X.nnz * 40 >= _gram.SPLIT_MIN_FLOPS
    dm = _gram._DataMatrix(X, False)
    monkeypatch.setenv("SPARSECCA_SPLIT", "1")
    with small_blas(1):
        ref_v, ref_u = _gram.sparse_matmat(X, V), _gram.sparse_tmatmat(X, U)
        ref_g = dm.gram_matmat(V)
    np.testing.assert_allclose(ref_v, X @ V, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ref_u, X.T @ U, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ref_g, X.T @ (X @ V), rtol=1e-12, atol=1e-12)
    monkeypatch.setenv("SPARSECCA_SPLIT", threads)
    with small_blas(1):
        assert np.array_equal(_gram.sparse_matmat(X, V), ref_v)
        assert np.array_equal(_gram.sparse_tmatmat(X, U), ref_u)
        assert np.array_equal(dm.gram_matmat(V), ref_g)
    # outside small_blas the halves run in turn: still the same bits
    assert np.array_equal(dm.gram_matmat(V), ref_g)


def test_kernels_run_without_jit():
    """The same kernels, interpreted (NUMBA_DISABLE_JIT=1), agree with scipy."""
    code = textwrap.dedent("""
        import numpy as np, scipy.sparse as sp
        from numba.core import config
        assert config.DISABLE_JIT
        from sparsecca.kernels._csr import (csr_gram_matmat, csr_gram_matmat_parallel,
                                            csr_matmat_rows, csr_tmatmat_rows)
        X = sp.random(20, 9, density=0.3, random_state=0, format="csr")
        V = np.arange(18.0).reshape(9, 2)
        ref = X.T @ (X @ V)
        out = np.empty((9, 2))
        assert np.allclose(csr_gram_matmat(X.indptr, X.indices, X.data, V, out), ref)
        assert np.allclose(csr_gram_matmat_parallel(X.indptr, X.indices, X.data, V, out, 3),
                           ref)
        XV = np.empty((20, 2))
        assert np.allclose(csr_matmat_rows(X.indptr, X.indices, X.data, V, XV, 0, 20), X @ V)
        U = np.arange(40.0).reshape(20, 2)
        assert np.allclose(csr_tmatmat_rows(X.indptr, X.indices, X.data, U, out, 5, 20),
                           X[5:].T @ U[5:])
        from sparsecca.kernels._csr import csr_gram_matmat_rows, csr_pair_tmatmat_rows
        assert np.allclose(csr_gram_matmat_rows(X.indptr, X.indices, X.data, V, out, 5, 20),
                           X[5:].T @ (X[5:] @ V))
        M = sp.random(20, 4, density=0.4, random_state=1, format="csr")
        D = np.empty((9, 4))
        assert np.allclose(csr_pair_tmatmat_rows(X.indptr, X.indices, X.data, M.indptr,
                                                 M.indices, M.data, D, 2, 20),
                           (X[2:].T @ M[2:]).toarray())
        print("ok")
    """)
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"
