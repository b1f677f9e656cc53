"""Randomized SVD and range finders (Halko, Martinsson & Tropp 2011)."""

import numpy as np
import pytest
import scipy.linalg as la
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, aslinearoperator

from sparsecca.linalg import FactorizationError, randomized_svd
from sparsecca.linalg._rsvd import adaptive_range_finder, randomized_range_finder, svd_flip


def _decaying(m, n, seed=0, decay=0.7, rank=None):
    rng = np.random.default_rng(seed)
    r = min(m, n) if rank is None else rank
    U = la.qr(rng.standard_normal((m, r)), mode="economic")[0]
    V = la.qr(rng.standard_normal((n, r)), mode="economic")[0]
    s = decay ** np.arange(r) * 10
    return (U * s) @ V.T, s


@pytest.mark.parametrize("kind", ["dense", "csr", "operator"])
@pytest.mark.parametrize("shape", [(120, 80), (80, 120)])
def test_randomized_svd_recovers_top_triplets(kind, shape):
    A, s_true = _decaying(*shape, seed=1)
    Aop = {"dense": A, "csr": sp.csr_matrix(A), "operator": aslinearoperator(A)}[kind]
    U, s, Vt = randomized_svd(Aop, 8, random_state=0)
    assert U.shape == (shape[0], 8) and s.shape == (8,) and Vt.shape == (8, shape[1])
    np.testing.assert_allclose(s, s_true[:8], rtol=1e-10)
    Ue, se, Vte = la.svd(A, full_matrices=False)
    Ue, Vte = svd_flip(Ue[:, :8], Vte[:8])
    np.testing.assert_allclose(U, Ue, atol=1e-8)
    np.testing.assert_allclose(Vt, Vte, atol=1e-8)
    np.testing.assert_allclose(U.T @ U, np.eye(8), atol=1e-12)


def test_sign_determinism_across_seeds():
    A, _ = _decaying(200, 60, seed=2, decay=0.8)
    U1, s1, V1 = randomized_svd(A, 5, random_state=1)
    U2, s2, V2 = randomized_svd(A, 5, random_state=12345)
    np.testing.assert_allclose(U1, U2, atol=1e-9)
    np.testing.assert_allclose(V1, V2, atol=1e-9)
    # the convention itself: largest |entry| of each column of U is positive
    idx = np.argmax(np.abs(U1), axis=0)
    assert np.all(U1[idx, np.arange(5)] > 0)


def test_svd_flip_preserves_product():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((7, 5))
    U, s, Vt = la.svd(A, full_matrices=False)
    U2, Vt2 = svd_flip(-U, -Vt)
    np.testing.assert_allclose((U2 * s) @ Vt2, A, atol=1e-12)
    np.testing.assert_allclose(U2, svd_flip(U, Vt)[0])


def test_range_finder_exact_for_low_rank():
    A, _ = _decaying(90, 70, seed=3, rank=6)
    Q = randomized_range_finder(sp.csr_matrix(A), 6, n_iter=0, random_state=0)
    assert np.linalg.norm(A - Q @ (Q.T @ A)) <= 1e-10 * np.linalg.norm(A)


@pytest.mark.parametrize("tol", [1e-1, 1e-3, 1e-6])
def test_adaptive_range_finder_meets_tolerance(tol):
    A, s = _decaying(150, 100, seed=4, decay=0.8)
    Q, err = adaptive_range_finder(A, tol, block_size=4, random_state=0)
    true_err = la.norm(A - Q @ (Q.T @ A), 2)
    assert true_err <= tol
    assert true_err <= err or err == 0.0  # the estimate is an upper bound
    # and the rank is adapted, not maximal: no more than the block needed past s_r < tol
    needed = int(np.sum(s > tol / 10))
    assert Q.shape[1] <= 2 * needed + 16
    np.testing.assert_allclose(Q.T @ Q, np.eye(Q.shape[1]), atol=1e-10)


def test_adaptive_range_finder_detects_exhausted_range():
    A, _ = _decaying(60, 50, seed=5, rank=7)
    Q, err = adaptive_range_finder(sp.csr_matrix(A), 1e-300, block_size=3, random_state=0)
    assert err == 0.0 and Q.shape[1] == 7


@pytest.mark.parametrize("shape", [(60, 8), (8, 60), (20, 20)])
def test_adaptive_range_finder_full_rank_basis_is_exact(shape):
    # a basis of min(m, n) columns spans the range of a full-rank A: err is 0.0 as for a
    # rank-deficient A, not the estimate taken before the last block
    A = np.random.default_rng(7).standard_normal(shape)
    Q, err = adaptive_range_finder(A, 1e-300, block_size=3, random_state=0)
    assert Q.shape[1] == min(shape) and err == 0.0
    assert la.norm(A - Q @ (Q.T @ A), 2) <= 1e-12 * la.norm(A, 2)


def test_adaptive_range_finder_full_basis_off_the_range_is_not_exact():
    # a given basis of n columns that misses range(A) is not taken for exhaustion
    rng = np.random.default_rng(8)
    A = rng.standard_normal((40, 5))
    Q0 = la.qr(rng.standard_normal((40, 5)), mode="economic")[0]
    Q, err = adaptive_range_finder(A, 1e-3, random_state=0, Q=Q0)
    assert Q.shape[1] == 5 and err >= la.norm(A - Q @ (Q.T @ A), 2) > 1.0


def test_adaptive_range_finder_extends_a_basis():
    A, _ = _decaying(100, 80, seed=6, decay=0.75)
    Q1, e1 = adaptive_range_finder(A, 1e-1, block_size=4, max_block=4, random_state=0)
    Q2, e2 = adaptive_range_finder(A, 1e-4, block_size=4, max_block=4, random_state=1, Q=Q1)
    np.testing.assert_allclose(Q2[:, :Q1.shape[1]], Q1)
    assert Q2.shape[1] > Q1.shape[1] and la.norm(A - Q2 @ (Q2.T @ A), 2) <= 1e-4


BAD = [
    (dict(k=0), ValueError, r"k must be an int in \[1, min\(A.shape\)\] = \[1, 10\], got 0"),
    (dict(k=11), ValueError, r"k must be an int in \[1, min\(A.shape\)\] = \[1, 10\], got 11"),
    (dict(k=2.5), TypeError, r"k must be an int in \[1, min\(A.shape\)\] = \[1, 10\], got 2.5"),
    (dict(k=2, oversamples=-1), ValueError, r"oversamples must be an int >= 0, got -1"),
    (dict(k=2, n_iter="many"), ValueError, r"n_iter must be 'auto' or an int >= 0, got 'many'"),
    (dict(k=2, random_state="x"), TypeError, r"random_state must be None, an int >= 0"),
]


@pytest.mark.parametrize("kw,exc,match", BAD)
def test_randomized_svd_bad_arguments(kw, exc, match):
    A = np.ones((12, 10))
    with pytest.raises(exc, match=match):
        randomized_svd(A, **kw)


def test_randomized_svd_rejects_non_operators():
    with pytest.raises(TypeError, match=r"A must be an array, a scipy.sparse matrix, a "
                                        r"LinearOperator"):
        randomized_svd(object(), 2)
    with pytest.raises(ValueError, match=r"A must contain only finite values, got NaN"):
        randomized_svd(np.full((4, 3), np.nan), 2)


class _CountingOperator(LinearOperator):
    """A with NaN entries (``bad`` 'A' in A @ V, 'AT' in A.T @ U only, None: none); more than 50
    products raise, so a range finder that cannot stop fails instead of hanging."""

    def __init__(self, A, bad="A"):
        super().__init__(dtype=np.float64, shape=A.shape)
        self.A, self.bad, self.calls = A, bad, 0
        self.A_nan = A.copy()
        self.A_nan[0, 0] = np.nan

    def _count(self):
        self.calls += 1
        if self.calls > 50:
            raise RuntimeError("the range finder does not stop on NaN")

    def _matmat(self, V):
        self._count()
        return (self.A_nan if self.bad == "A" else self.A) @ V

    def _rmatmat(self, U):
        self._count()
        return (self.A_nan if self.bad == "AT" else self.A).T @ U

    def _matvec(self, v):
        return self._matmat(v.reshape(-1, 1)).ravel()

    def _rmatvec(self, u):
        return self._rmatmat(u.reshape(-1, 1)).ravel()


NON_FINITE = r"returned non-finite values \(a LinearOperator with NaN/inf\?\)"


@pytest.mark.parametrize("bad,n_iter", [("A", 0), ("A", 2), ("AT", 2)])
def test_range_finders_refuse_non_finite_products(bad, n_iter):
    A = np.random.default_rng(0).standard_normal((30, 20))
    with pytest.raises(FactorizationError, match=NON_FINITE):
        adaptive_range_finder(_CountingOperator(A, bad), 1e-3, n_iter=n_iter, random_state=0)
    with pytest.raises(FactorizationError, match=r"^the products with A " + NON_FINITE):
        randomized_range_finder(_CountingOperator(A, bad), 3, n_iter=n_iter, random_state=0)
    with pytest.raises(FactorizationError, match=NON_FINITE):
        randomized_svd(_CountingOperator(A, bad), 3, n_iter=n_iter, random_state=0)


BAD_ADAPTIVE = [
    (dict(Q=np.full((30, 2), np.nan)), ValueError, r"^Q must contain only finite values$"),
    (dict(Q=np.ones((30, 2))), ValueError,
     r"^Q must have orthonormal columns \(Q\^T Q = I\), got max \|Q\^T Q - I\| = 30$"),
    (dict(Q=np.eye(5)), ValueError,
     r"^Q must be an \(m, r\) = \(30, r\) array with orthonormal columns, got shape \(5, 5\)"),
    (dict(Q=np.ones(30)), ValueError, r"^Q must be an \(m, r\) .* got shape \(30,\)"),
    (dict(Q="basis"), TypeError, r"^Q must be an \(m, r\) = \(30, r\) array"),
    (dict(growth=0), ValueError, r"^growth must be a finite number >= 1, got 0"),
    (dict(growth=float("nan")), ValueError, r"^growth must be a finite number >= 1, got nan"),
    (dict(growth=float("inf")), ValueError, r"^growth must be a finite number >= 1, got inf"),
    (dict(growth="x"), TypeError, r"^growth must be a real number, got 'x'"),
    (dict(tol=float("inf")), ValueError, r"^tol must be a finite number > 0, got inf"),
    (dict(tol=0.0), ValueError, r"^tol must be a finite number > 0, got 0.0"),
    (dict(tol="x"), TypeError, r"^tol must be a real number, got 'x'"),
    (dict(max_block=0), ValueError, r"^max_block must be an int >= 1, got 0"),
    (dict(max_block=2.5), TypeError, r"^max_block must be an int >= 1, got 2.5"),
]


@pytest.mark.parametrize("kw,exc,match", BAD_ADAPTIVE,
                         ids=[f"{k}-{i}" for i, (kw, _, _) in enumerate(BAD_ADAPTIVE) for k in kw])
def test_adaptive_range_finder_bad_arguments(kw, exc, match):
    A = np.random.default_rng(0).standard_normal((30, 20))
    # first through the counting operator: a NaN basis made the unchecked loop run forever
    kw = dict(dict(tol=1e-3), **kw)
    with pytest.raises(exc, match=match):
        adaptive_range_finder(_CountingOperator(A, bad=None), **kw)
    with pytest.raises(exc, match=match):
        adaptive_range_finder(A, **kw)


# --- methods 'subspace' and 'krylov' with a residual target ----------------------------------

from sparsecca.linalg import SVDConvergenceWarning  # noqa: E402
from sparsecca.linalg._rsvd import SVDInfo  # noqa: E402

K = 6


def _gapped(m, n, spectrum, seed=0):
    """A = U diag(s) V^T: 'flat' (the top K within 10%, then a drop to a flat tail) or
    'decaying' (geometric); returns A and its singular values."""
    rng = np.random.default_rng(seed)
    r = min(m, n)
    U = la.qr(rng.standard_normal((m, r)), mode="economic")[0]
    V = la.qr(rng.standard_normal((n, r)), mode="economic")[0]
    if spectrum == "flat":
        s = np.concatenate([np.linspace(2.0, 1.8, K), np.linspace(1.2, 0.8, r - K)])
    else:
        s = 10 * 0.8 ** np.arange(r)
    return (U * s) @ V.T, s


def _as_kind(A, kind, dtype):
    A = A.astype(dtype)
    if kind == "csr":
        return sp.csr_matrix(A)
    if kind == "operator":
        return aslinearoperator(A)
    return A


def _recomputed(A, U, s, Vt):
    """max(||A v - s u||, ||A^T u - s v||) / s, independently of randomized_svd."""
    r1 = np.linalg.norm(A @ Vt.T - U * s, axis=0)
    r2 = np.linalg.norm(A.T @ U - Vt.T * s, axis=0)
    return np.maximum(r1, r2) / s


def _sin_angle(X, Y):
    """sine of the largest principal angle between the column spaces of X and Y."""
    return float(np.sqrt(max(0.0, 1.0 - la.svdvals(X.T @ Y).min() ** 2)))


@pytest.mark.parametrize("method", ["subspace", "krylov"])
@pytest.mark.parametrize("spectrum", ["flat", "decaying"])
@pytest.mark.parametrize("kind", ["ndarray", "csr", "operator"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("tol", [1e-3, 1e-7])
def test_tol_is_met_against_the_exact_svd(method, spectrum, kind, dtype, tol):
    shape = (160, 110) if kind != "csr" else (110, 160)
    A, _ = _gapped(*shape, spectrum, seed=3)
    A = A.astype(dtype).astype(np.float64)  # the matrix the SVD sees
    U, s, Vt, info = randomized_svd(_as_kind(A, kind, dtype), K, oversamples=4,
                                    method=method, tol=tol, block_size=3 if method ==
                                    "krylov" else None, random_state=0, return_info=True)
    assert isinstance(info, SVDInfo) and info.converged and info.residual <= tol
    assert info.method == method and info.tol == tol and info.residuals.shape == (K,)
    assert U.dtype == s.dtype == Vt.dtype == np.float64
    Ue, se, Vte = la.svd(A, full_matrices=False)
    # the residual it reports is the one recomputed from the returned triplets: float64
    # products are exact to rounding; the float32 products of a loose tol (krylov) to
    # about 1e-7 of ||A|| per product
    rec = _recomputed(A, U, s, Vt)
    eps = np.finfo(np.float32 if method == "krylov" and tol >= 1e-4 else np.float64).eps
    np.testing.assert_allclose(info.residuals, rec, rtol=1e-6,
                               atol=100 * eps * (se[0] / s[-1]) ** 2)
    # singular values: within the residual (a triplet with relative residual r has a
    # singular value within sqrt(2) r s of s)
    np.testing.assert_allclose(s, se[:K], rtol=2 * tol)
    # subspaces: sin of the largest angle <= ||residual|| / gap (Wedin), gap = s_K - s_K+1
    gap = se[K - 1] - se[K]
    bound = np.sqrt(2 * K) * tol * se[0] / gap
    assert _sin_angle(U, Ue[:, :K]) <= bound
    assert _sin_angle(Vt.T, Vte[:K].T) <= bound
    np.testing.assert_allclose(U.T @ U, np.eye(K), atol=1e3 * np.finfo(float).eps)
    np.testing.assert_allclose(Vt @ Vt.T, np.eye(K), atol=1e3 * np.finfo(float).eps)
    # sign-deterministic: the largest |entry| of each column of U is positive
    assert np.all(U[np.argmax(np.abs(U), axis=0), np.arange(K)] > 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["ndarray", "csr", "operator"])
def test_krylov_is_exact_on_a_low_rank_matrix(kind, dtype):
    # rank 5 < the first block: the Krylov space is exact at once; the singular values
    # to rounding of the squared formulation, eps (s_1 / s_k)^2
    A, s_true = _decaying(90, 70, seed=3, rank=5)
    A = A.astype(dtype).astype(np.float64)
    se = la.svdvals(A)[:5]
    U, s, Vt, info = randomized_svd(_as_kind(A, kind, dtype), 5, method="krylov",
                                    tol=1e-10, random_state=0, return_info=True)
    eps = np.finfo(np.float64).eps
    np.testing.assert_allclose(s, se, rtol=100 * eps * (se[0] / se[-1]) ** 2)
    # rounding to float32 leaves a tail of singular values of order eps32 ||A||
    np.testing.assert_allclose((U * s) @ Vt, A, atol=100 * np.finfo(dtype).eps * se[0])
    assert info.converged and info.residual <= 1e-10


def test_krylov_needs_fewer_passes_than_subspace_on_a_flat_spectrum():
    rng = np.random.default_rng(1)
    A = sp.random(400, 300, density=0.05, format="csr", random_state=rng)
    kw = dict(oversamples=10, tol=1e-3, random_state=0, return_info=True)
    *_, ik = randomized_svd(A, 10, method="krylov", **kw)
    with pytest.warns(SVDConvergenceWarning, match="subspace"):
        *_, i_s = randomized_svd(A, 10, method="subspace", **kw)
    # krylov meets 1e-3 in a third of the passes after which subspace iteration has not
    assert ik.converged and not i_s.converged
    assert 3 * ik.n_passes < i_s.n_passes


def test_krylov_resolves_repeated_singular_values_up_to_its_block_size():
    rng = np.random.default_rng(2)
    U0 = la.qr(rng.standard_normal((80, 60)), mode="economic")[0]
    V0 = la.qr(rng.standard_normal((50, 60)), mode="economic")[0][:50]
    V0 = la.qr(rng.standard_normal((50, 50)), mode="economic")[0]
    s0 = np.concatenate([[5.0], np.full(4, 3.0), np.linspace(2.0, 0.1, 45)])
    A = (U0[:, :50] * s0) @ V0.T
    U, s, Vt, info = randomized_svd(A, 5, method="krylov", block_size=4, tol=1e-8,
                                    random_state=0, return_info=True)
    np.testing.assert_allclose(s, s0[:5], rtol=1e-8)
    assert info.converged


def test_krylov_rank_deficient_matrix_returns_orthonormal_factors():
    A, _ = _decaying(40, 30, seed=4, rank=3)
    U, s, Vt, info = randomized_svd(A, 6, method="krylov", random_state=0, return_info=True)
    # the singular values come from A^T U directly, not as square roots of eigenvalues of
    # A A^T: zero to rounding of s_1, not of s_1^2
    np.testing.assert_allclose(s[3:], 0.0, atol=100 * np.finfo(float).eps * s[0])
    np.testing.assert_allclose(U.T @ U, np.eye(6), atol=1e-10)
    np.testing.assert_allclose(Vt @ Vt.T, np.eye(6), atol=1e-10)
    np.testing.assert_allclose((U * s) @ Vt, A, atol=1e-10 * s[0])
    assert info.converged is None and np.all(np.isfinite(info.residuals))


def test_krylov_sign_determinism_across_seeds():
    A, _ = _decaying(200, 60, seed=2, decay=0.8)
    U1, s1, V1 = randomized_svd(A, 5, method="krylov", tol=1e-10, random_state=1)
    U2, s2, V2 = randomized_svd(A, 5, method="krylov", tol=1e-10, random_state=12345)
    np.testing.assert_allclose(U1, U2, atol=1e-8)
    np.testing.assert_allclose(V1, V2, atol=1e-8)


@pytest.mark.parametrize("method", ["subspace", "krylov"])
def test_missed_tol_warns_and_says_so(method):
    A = np.random.default_rng(0).standard_normal((120, 90))  # flat: no fast convergence
    with pytest.warns(SVDConvergenceWarning, match=rf"randomized_svd\(method='{method}'\) "
                                                   r"did not reach tol = 1e-12 .* relative "
                                                   r"residual"):
        U, s, Vt, info = randomized_svd(A, 5, method=method, tol=1e-12, n_iter=1,
                                        random_state=0, return_info=True)
    assert info.converged is False and info.residual > 1e-12
    np.testing.assert_allclose(info.residuals, _recomputed(A, U, s, Vt), rtol=1e-6,
                               atol=1e-12)


@pytest.mark.parametrize("method", ["subspace", "krylov"])
def test_info_without_tol_reports_the_residual(method):
    A, _ = _decaying(100, 70, seed=6, decay=0.75)
    U, s, Vt, info = randomized_svd(A, 4, method=method, n_iter=2, random_state=0,
                                    return_info=True)
    assert info.converged is None and info.tol is None
    np.testing.assert_allclose(info.residuals, _recomputed(A, U, s, Vt), rtol=1e-6,
                               atol=1e-13)
    # and the same triplets as without info
    U2, s2, Vt2 = randomized_svd(A, 4, method=method, n_iter=2, random_state=0)
    np.testing.assert_allclose(s, s2, rtol=1e-12)


def test_default_method_is_unchanged_subspace_iteration():
    A, _ = _decaying(120, 80, seed=1)
    U, s, Vt = randomized_svd(A, 8, random_state=0)
    U2, s2, Vt2 = randomized_svd(A, 8, method="subspace", random_state=0)
    np.testing.assert_array_equal(s, s2)
    np.testing.assert_array_equal(U, U2)


@pytest.mark.parametrize("bad", ["A", "AT"])
def test_krylov_refuses_non_finite_products(bad):
    A = np.random.default_rng(0).standard_normal((30, 20))
    with pytest.raises(FactorizationError, match=NON_FINITE):
        randomized_svd(_CountingOperator(A, bad), 3, method="krylov", random_state=0)


BAD_METHOD_TOL = [
    (dict(method="lanczos"), ValueError,
     r"^method must be one of \('subspace', 'krylov'\), got 'lanczos'$"),
    (dict(method=None), ValueError, r"^method must be one of \('subspace', 'krylov'\), got None$"),
    (dict(tol=0.0), ValueError, r"^tol must be None or a number in \(0, 1\], got 0.0$"),
    (dict(tol=-1e-3), ValueError, r"^tol must be None or a number in \(0, 1\], got -0.001$"),
    (dict(tol=1.5), ValueError, r"^tol must be None or a number in \(0, 1\], got 1.5$"),
    (dict(tol=float("nan")), ValueError, r"^tol must be None or a number in \(0, 1\], got nan$"),
    (dict(tol="1e-3"), TypeError, r"^tol must be None or a number in \(0, 1\], got '1e-3'$"),
    (dict(tol=True), TypeError, r"^tol must be None or a number in \(0, 1\], got True$"),
    (dict(k=0, method="krylov"), ValueError,
     r"^k must be an int in \[1, min\(A.shape\)\] = \[1, 10\], got 0$"),
    (dict(k=11, method="krylov", tol=1e-3), ValueError,
     r"^k must be an int in \[1, min\(A.shape\)\] = \[1, 10\], got 11$"),
    (dict(method="krylov", block_size=0), ValueError,
     r"^block_size must be an int in \[1, min\(A.shape\)\] = \[1, 10\], got 0$"),
    (dict(method="krylov", block_size=2.0), TypeError,
     r"^block_size must be an int in \[1, min\(A.shape\)\] = \[1, 10\], got 2.0$"),
    (dict(return_info=1), TypeError, r"^return_info must be True or False, got 1$"),
]


@pytest.mark.parametrize("kw,exc,match", BAD_METHOD_TOL)
def test_randomized_svd_bad_method_tol_k(kw, exc, match):
    A = np.ones((12, 10))
    kw = dict(dict(k=2), **kw)
    with pytest.raises(exc, match=match):
        randomized_svd(A, **kw)


def test_thresholds_argument_sets_the_krylov_block():
    """``thresholds=`` is the active Thresholds during the call: Krylov blocks of
    krylov_block columns (default min(16, k + p) = 13), the basis grown to about
    krylov_auto_basis (k + p) columns; anything but a Thresholds is a TypeError."""
    from sparsecca.linalg._thresholds import Thresholds

    A = np.random.default_rng(0).standard_normal((80, 60))
    *_, default = randomized_svd(A, 3, method="krylov", random_state=0, return_info=True)
    assert default.basis_size == 39  # 3 blocks of 13
    U, s, Vt, info = randomized_svd(A, 3, method="krylov", random_state=0, return_info=True,
                                    thresholds=Thresholds(krylov_block=4))
    assert info.basis_size == 40  # ceil(3 * 13 / 4) = 10 blocks of 4
    np.testing.assert_allclose(s, np.linalg.svd(A, compute_uv=False)[:3], rtol=1e-2)
    with pytest.raises(TypeError, match="thresholds must be None or a"):
        randomized_svd(A, 3, thresholds=5)
