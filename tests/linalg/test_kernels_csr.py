"""The CSR kernels of sparsecca.kernels._csr against scipy products (the slow references)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

from sparsecca.kernels._csr import csr_gram_matmat, csr_gram_matmat_parallel


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


def test_kernels_run_without_jit():
    """The same kernels, interpreted (NUMBA_DISABLE_JIT=1), agree with scipy."""
    code = textwrap.dedent("""
        import numpy as np, scipy.sparse as sp
        from numba.core import config
        assert config.DISABLE_JIT
        from sparsecca.kernels._csr import csr_gram_matmat, csr_gram_matmat_parallel
        X = sp.random(20, 9, density=0.3, random_state=0, format="csr")
        V = np.arange(18.0).reshape(9, 2)
        ref = X.T @ (X @ V)
        out = np.empty((9, 2))
        assert np.allclose(csr_gram_matmat(X.indptr, X.indices, X.data, V, out), ref)
        assert np.allclose(csr_gram_matmat_parallel(X.indptr, X.indices, X.data, V, out, 3),
                           ref)
        print("ok")
    """)
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"
