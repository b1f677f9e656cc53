"""Problems and references for the linear-algebra engine tests."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import scipy.linalg as la
import scipy.sparse as sp

from sparsecca.linalg._thresholds import applied


def count_problem(n, d1, d2, *, seed=0, latent=8, density=(8, 5), dtype=np.float64):
    """Two correlated sparse count views (rows share a latent class), CSR.

    Every feature occurs at least once so that X^T X and Y^T Y are nonsingular when n is
    large enough.
    """
    rng = np.random.default_rng(seed)
    z = rng.integers(latent, size=n)

    def view(d, per_row):
        prefs = rng.dirichlet(np.full(d, 0.3), size=latent)
        rows, cols = [], []
        for i in range(n):
            m = rng.poisson(per_row) + 1
            p = 0.5 * prefs[z[i]] + 0.5 / d
            c = rng.choice(d, size=m, p=p / p.sum())
            rows.append(np.full(m, i))
            cols.append(c)
        rows = np.concatenate(rows)
        cols = np.concatenate(cols)
        # make sure every column occurs
        extra = np.arange(d)
        rows = np.concatenate([rows, rng.integers(n, size=d)])
        cols = np.concatenate([cols, extra])
        M = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, d))
        M.sum_duplicates()
        return M.astype(dtype)

    return view(d1, density[0]), view(d2, density[1])


def dense_problem(n, d1, d2, *, seed=0, shared=3, noise=1.0):
    """Gaussian views with ``shared`` latent dimensions."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, shared))
    X = Z @ rng.standard_normal((shared, d1)) + noise * rng.standard_normal((n, d1))
    Y = Z @ rng.standard_normal((shared, d2)) + noise * rng.standard_normal((n, d2))
    return X, Y


def covariances(X, Y, tau, center=False, M=None):
    """Dense Cxx, Cyy, Cxy exactly as documented (reference, float64)."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    Y = Y.toarray() if sp.issparse(Y) else np.asarray(Y)
    M = Y if M is None else (M.toarray() if sp.issparse(M) else np.asarray(M))
    X = X.astype(np.float64)
    Y = Y.astype(np.float64)
    M = M.astype(np.float64)
    if center:
        X = X - X.mean(axis=0)
        Y = Y - Y.mean(axis=0)
        M = M - M.mean(axis=0)
    Cxx = (1 - tau) * X.T @ X + tau * np.eye(X.shape[1])
    Cyy = (1 - tau) * Y.T @ Y + tau * np.eye(Y.shape[1])
    return Cxx, Cyy, X.T @ M


def eigh_reference(Cxx, Cyy, Cxy, k):
    """Top-k of the full block generalized eigenproblem of Eq. 11 with scipy.linalg.eigh.

    Returns sigma (k,), A (d1, k), B (d2, k) with A^T Cxx A = B^T Cyy B = I.
    """
    d1, d2 = Cxy.shape
    Aop = np.zeros((d1 + d2, d1 + d2))
    Aop[:d1, d1:] = Cxy
    Aop[d1:, :d1] = Cxy.T
    Bop = la.block_diag(Cxx, Cyy)
    w, Z = la.eigh(Aop, Bop)
    order = np.argsort(w)[::-1][:k]
    # z^T Bop z = 1 and a^T Cxx a = b^T Cyy b for a +/- pair, so a = sqrt(2) z[:d1]
    Z = Z[:, order] * np.sqrt(2.0)
    return w[order], Z[:d1], Z[d1:]


def max_sin_angle(U, V, C):
    """Largest principal-angle sine between span(U) and span(V) in the C inner product."""
    L = la.cholesky(C, lower=False)
    Qu = la.qr(L @ U, mode="economic")[0]
    Qv = la.qr(L @ V, mode="economic")[0]
    s = la.svdvals(Qu.T @ Qv)
    return float(np.sqrt(max(0.0, 1.0 - s.min() ** 2)))


@pytest.fixture(scope="session")
def zipf_dir(shared_data):
    d = shared_data / "zipf-two-view"
    if not d.is_dir():
        pytest.skip(f"{d} not found")
    return d


@pytest.fixture
def set_thresholds():
    """``set_thresholds(**changes)`` makes the active Thresholds with ``changes`` applied
    the one in force for the rest of the test (engines given no ``thresholds`` use it)."""
    from sparsecca.linalg._thresholds import active

    with contextlib.ExitStack() as stack:
        yield lambda **changes: stack.enter_context(applied(active().replace(**changes)))


@pytest.fixture(params=["exact", "lowrank"])
def preconditioner(request, set_thresholds):
    """Both preconditioners of the fast solvers' LOBPCG: the dense factor of C_xx, which
    CCAEngine's rule gives every small test problem, and the low-rank-plus-diagonal model
    (the rule switched off), which large problems get."""
    if request.param == "lowrank":
        set_thresholds(exact_precond_max=0)
    return request.param
