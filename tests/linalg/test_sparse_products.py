"""The engine's sparse products (sparsecca.linalg._sparse_products) against dense NumPy references.

scipy does the arithmetic; what is ours is the row split (row blocks sharing the matrix's
arrays, run on the split threads), the float64 accumulation of float32 storage and the densified
pair product, so those are what is checked, with empty rows at the split boundaries.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from sparsecca.linalg import _sparse_products as _products
from sparsecca.linalg import _threads
from sparsecca.linalg._centring import _DataMatrix
from sparsecca.linalg._threads import small_blas
from sparsecca.linalg._thresholds import Thresholds, active, applied


def _csr(dtype, seed=0, n=57, d=23, density=0.2):
    X = sp.random(n, d, density=density, random_state=seed, format="csr", dtype=np.float64)
    X.data = np.round(X.data * 5) + 1
    X.data[X.indptr[3]:X.indptr[4]] = 0  # an empty row
    X.eliminate_zeros()
    assert X.indptr[4] == X.indptr[3]
    return X.astype(dtype)


@pytest.mark.parametrize("lo,hi", [(0, 57), (0, 20), (20, 57), (4, 4), (3, 5)])
def test_row_range_and_transpose_are_views(lo, hi):
    X = _csr(np.float64)
    R = _products._csr_rows(X, lo, hi)
    assert R.shape == (hi - lo, X.shape[1])
    np.testing.assert_array_equal(R.toarray(), X.toarray()[lo:hi])
    T = _products._transposed(R)
    assert T.format == "csc" and T.shape == R.shape[::-1]
    np.testing.assert_array_equal(T.toarray(), X.toarray()[lo:hi].T)
    if R.nnz:  # no copy of the nonzeros, even for a view smaller than half of X
        for A in (R, T):
            assert np.shares_memory(A.data, X.data) and np.shares_memory(A.indices, X.indices)


def _unsorted(X):
    """The same matrix with each row's column indices in reverse order."""
    X = X.copy()
    for i in range(X.shape[0]):
        a, b = X.indptr[i], X.indptr[i + 1]
        X.indices[a:b] = X.indices[a:b][::-1].copy()
        X.data[a:b] = X.data[a:b][::-1].copy()
    X.has_sorted_indices = False
    return X


@pytest.mark.parametrize("order", ["sorted", "unsorted"])
@pytest.mark.parametrize("split", ["none", "rows", "output"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_match_dense_numpy(dtype, split, order, set_thresholds):
    """X V, X^T U, X^T X V and X^T M equal float64 NumPy products of the dense matrices,
    in one piece or as row blocks (float32 storage accumulates in float64), whether
    or not the column indices are sorted within rows; X^T M and X^T X also as two blocks of
    output rows (sparse_pair_tmatmat beyond Thresholds.pair_split_max_bytes)."""
    set_thresholds(split_min_flops=10**12 if split == "none" else 1,
               pair_split_max_bytes=2**30 if split == "rows" else 0,
               pair_output_split_min_flops=0 if split == "output" else 1e30)
    X = _csr(dtype)
    if order == "unsorted":
        X = _unsorted(X)
        assert not X.has_sorted_indices
    M = _csr(dtype, seed=5, d=9).tolil()
    M[10, :] = 0  # an empty row of its own
    M = M.tocsr()
    M.eliminate_zeros()
    rng = np.random.default_rng(2)
    V = rng.standard_normal((23, 6))
    U = rng.standard_normal((57, 6))
    Xd = X.toarray().astype(np.float64)
    Md = M.toarray().astype(np.float64)
    tol = dict(rtol=1e3 * np.finfo(np.float64).eps, atol=1e3 * np.finfo(np.float64).eps)
    got = _products.sparse_matmat(X, V)
    assert got.dtype == np.float64 and got.shape == (57, 6)
    np.testing.assert_allclose(got, Xd @ V, **tol)
    np.testing.assert_allclose(_products.sparse_tmatmat(X, U), Xd.T @ U, **tol)
    np.testing.assert_allclose(_products.sparse_gram_matmat(X, V), Xd.T @ (Xd @ V), **tol)
    got = _products.sparse_pair_tmatmat(X, M)
    assert got.dtype == np.float64 and got.shape == (23, 9)
    np.testing.assert_allclose(got, Xd.T @ Md, **tol)
    np.testing.assert_allclose(_products.sparse_pair_tmatmat(X, X), Xd.T @ Xd, **tol)
    # the float32 products do not round to float32: exact small integers times normals
    if dtype == np.float32:
        assert not np.array_equal(_products.sparse_matmat(X, V),
                                  (X @ V.astype(np.float32)).astype(np.float64))


@pytest.mark.parametrize("threads", ["1", "0"])
def test_split_products_do_not_depend_on_threads(threads, monkeypatch):
    """Above Thresholds.split_min_flops the products are always the same row blocks
    (threaded when cores are free): equal to scipy's, and bit-identical with the split
    threads on or off, inside or outside a small_blas region."""
    X = sp.random(3000, 400, density=0.05, random_state=3, format="csr")
    M = sp.random(3000, 30, density=0.1, random_state=4, format="csr")
    rng = np.random.default_rng(4)
    V = rng.standard_normal((400, 40))
    U = rng.standard_normal((3000, 40))
    assert X.nnz * 40 >= active().split_min_flops
    dm = _DataMatrix(X, False)
    monkeypatch.setenv("SPARSECCA_SPLIT", "1")

    def products():
        # X^T X as blocks of output rows
        with applied(Thresholds(pair_split_max_bytes=0, pair_output_split_min_flops=0)):
            gram = _products.sparse_pair_tmatmat(X, X)
        return (_products.sparse_matmat(X, V), _products.sparse_tmatmat(X, U), dm.gram_matmat(V),
                _products.sparse_pair_tmatmat(X, M), gram)

    refs = products()
    for got, ref in zip(refs, (X @ V, X.T @ U, X.T @ (X @ V), (X.T @ M).toarray(),
                               (X.T @ X).toarray())):
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    monkeypatch.setenv("SPARSECCA_SPLIT", threads)
    for got, ref in zip(products(), refs):
        assert np.array_equal(got, ref)
    with small_blas(1):
        for got, ref in zip(products(), refs):
            assert np.array_equal(got, ref)


def test_products_are_identical_on_1_2_and_3_threads(monkeypatch):
    """The sparse and the tall dense products, run inside a small_blas region (where the
    row blocks go to the split threads) on 1, 2 and 3 threads: bit-identical results, and
    several row blocks (split_min_flops = 1: up to MAX_ROW_BLOCKS of them)."""
    X = sp.random(2000, 300, density=0.05, random_state=5, format="csr")
    M = sp.random(2000, 40, density=0.1, random_state=6, format="csr")
    rng = np.random.default_rng(5)
    V, U = rng.standard_normal((300, 20)), rng.standard_normal((2000, 20))
    A, B = rng.standard_normal((2001, 30)), rng.standard_normal((30, 10))
    C = rng.standard_normal((2001, 10))
    assert _threads.n_row_blocks(2000, 1e12) == _threads.MAX_ROW_BLOCKS > 2

    def products():
        with small_blas(0):
            out = (_products.sparse_matmat(X, V), _products.sparse_tmatmat(X, U),
                   _products.sparse_gram_matmat(X, V), _products.sparse_pair_tmatmat(X, M),
                   _threads.tall_matmul(A, B), _threads.tall_tmatmul(A, C))
            with applied(Thresholds(split_min_flops=1, pair_split_max_bytes=0,
                                    pair_output_split_min_flops=0)):
                out += (_products.sparse_pair_tmatmat(X, M),)
        return out

    results = {}
    with applied(Thresholds(split_min_flops=1)):
        for n in (1, 2, 3):
            monkeypatch.setattr(_threads, "n_split_threads", lambda n=n: n)
            results[n] = products()
    refs = (X @ V, X.T @ U, X.T @ (X @ V), (X.T @ M).toarray(), A @ B, A.T @ C,
            (X.T @ M).toarray())
    for got, ref in zip(results[1], refs):
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    for n in (2, 3):
        for got, ref in zip(results[n], results[1]):
            assert np.array_equal(got, ref)


def test_run_blocks_uses_the_threads_it_is_given(monkeypatch):
    """With 3 split threads inside a small_blas region, three tasks run at once (each waits
    for the other two), in the caller's thresholds; results come back in task order."""
    import threading

    monkeypatch.setattr(_threads, "n_split_threads", lambda: 3)
    barrier = threading.Barrier(3, timeout=30)

    def task(i):
        def run():
            barrier.wait()
            return i, active().split_min_flops, threading.get_ident()
        return run

    with small_blas(0), applied(Thresholds(split_min_flops=7)):
        out = _threads.run_blocks([task(i) for i in range(3)])
    assert [o[:2] for o in out] == [(0, 7), (1, 7), (2, 7)]
    assert len({o[2] for o in out}) == 3
    # outside a pinned region (BLAS threads the work itself) they run here, in turn
    out = _threads.run_blocks([lambda: threading.get_ident()] * 3)
    assert set(out) == {threading.get_ident()}


def test_machine_threads_follow_the_affinity_and_blas(monkeypatch):
    """The split threads: the cores this process may use, at most BLAS's own thread count;
    SPARSECCA_SPLIT=0 turns them off."""
    import os

    n = _threads.machine_threads()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert 1 <= n <= cores
    if _threads._BLAS_THREADS is not None:
        assert n <= _threads._BLAS_THREADS
    monkeypatch.setenv("SPARSECCA_SPLIT", "0")
    assert _threads.n_split_threads() == 1
    monkeypatch.setenv("SPARSECCA_SPLIT", "1")
    assert _threads.n_split_threads() == n


def test_engine_does_not_load_numba():
    """The engine is scipy only: fitting SparseCCA must not import numba (its import and
    LLVM cost ~100 MB and ~0.4 s, which the zipf 20K x 5K budget of 200 MB cannot hold)."""
    import subprocess
    import sys

    code = ("import sys, numpy as np, scipy.sparse as sp\n"
            "from sparsecca.linalg import SparseCCA\n"
            "X = sp.random(400, 60, density=0.1, random_state=0, format='csr')\n"
            "Y = sp.random(400, 20, density=0.2, random_state=1, format='csr')\n"
            "SparseCCA(3, tau=0.5, solver='randomized', random_state=0).fit(X, Y)\n"
            "SparseCCA(3, tau=0.5, solver='iterative', random_state=0).fit(X, Y)\n"
            "print('numba' in sys.modules)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "False"


def test_small_blas_pins_scipys_blas_too():
    """small_blas holds every BLAS library that numpy and scipy use to one thread, scipy's
    own (its LAPACK factorisations) included, whatever the order of the imports: in a fresh
    interpreter that imports the engine first."""
    import subprocess
    import sys

    code = ("import sparsecca.linalg\n"
            "from sparsecca.linalg import _threads\n"
            "import threadpoolctl, scipy.linalg\n"
            "if _threads._CONTROLLER is None:\n"
            "    print('skip'); raise SystemExit\n"
            "libs = {l['filepath'] for l in threadpoolctl.threadpool_info()\n"
            "        if l['user_api'] == 'blas'}\n"
            "seen = {l['filepath'] for l in _threads._CONTROLLER.info()}\n"
            "with _threads.small_blas(0):\n"
            "    pinned = {l['filepath']: l['num_threads']\n"
            "              for l in threadpoolctl.threadpool_info() if l['user_api'] == 'blas'}\n"
            "print(libs <= seen and set(pinned.values()) == {1})\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    if res.stdout.strip() == "skip":
        pytest.skip("threadpoolctl is not installed")
    assert res.stdout.strip() == "True"
