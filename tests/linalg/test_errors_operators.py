"""Bad input to the covariance operators and inverses (RegularizedGram, CrossCovariance,
GramFactor, RegularizedInverse, column_mean, centred_projection): a clear ValueError /
TypeError naming the argument, the shape or range allowed and the value received, and
the same results as before for valid input (against dense NumPy references)."""

import numpy as np
import pytest
import scipy.sparse as sp

import sparsecca.linalg._gram as gram_module
import sparsecca.linalg._inverse as inverse_module
from sparsecca.linalg import (
    CrossCovariance,
    GramFactor,
    RegularizedGram,
    RegularizedInverse,
    SparseCCA,
    centred_projection,
    column_mean,
)
from sparsecca.linalg._validation import check_dense_size

rng = np.random.default_rng(0)
X = rng.random((20, 8))
M = rng.random((20, 5))
X12 = rng.random((30, 12))
B12 = rng.random((12, 2))
C = RegularizedGram(X, 0.5)
CROSS = CrossCovariance(X, M)
INV = RegularizedInverse(X12, 0.5, "dense")
IINV = RegularizedInverse(X12, 0.5, "iterative", rank=4, random_state=0)
RINV = RegularizedInverse(X12, 0.5, "randomized", rank=4, random_state=0)


def _dense_cov(A, tau, center=False):
    A = A - A.mean(axis=0) if center else A
    return (1 - tau) * A.T @ A + tau * np.eye(A.shape[1])


# -- U4: dense materialisation of a large d ------------------------------------------------

def _unreachable(*args, **kwargs):
    raise AssertionError("the size check must refuse before the dense matrix is formed")


@pytest.fixture
def no_dense(monkeypatch):
    """The dense forms raise instead of allocating (d = 40,000 would take 11.9 GiB)."""
    monkeypatch.setattr(gram_module._DataMatrix, "dense_gram", _unreachable)
    monkeypatch.setattr(gram_module._DataMatrix, "dense_outer_gram", _unreachable)
    monkeypatch.setattr(gram_module.CrossCovariance, "tosparse", _unreachable)
    monkeypatch.setattr(gram_module, "sparse_pair_tmatmat", _unreachable)


EYE = sp.eye(40_000, format="csr")
GIB = r"\(11.9 GiB\); d must be <= max_dim=20000, pass a larger max_dim to force"
TOO_LARGE = [
    ("gram-factor", lambda: GramFactor(EYE).dense_gram(),
     rf"^refusing to materialise a 40000 x 40000 dense Gram matrix {GIB}; the 'randomized' "
     r"and 'iterative' RegularizedInverse never form it$"),
    ("inverse", lambda: RegularizedInverse(EYE, 0.5, "dense"),
     rf"^refusing to materialise a 40000 x 40000 dense covariance C {GIB}; "
     r"method='randomized' or 'iterative' never forms it$"),
    ("inverse-named", lambda: RegularizedInverse(EYE, 0.5, "dense", name="Cxx"),
     r"^refusing to materialise a 40000 x 40000 dense covariance Cxx \(11.9 GiB\)"),
    ("cross", lambda: CrossCovariance(EYE, EYE).dense_product(),
     r"^refusing to materialise a 40000 x 40000 dense cross-covariance \(11.9 GiB\); "
     r"d must be <= max_dim=20000, pass a larger max_dim to force; its products "
     r"\(C_xy @ V\) never form it$"),
    ("cross-toarray", lambda: CrossCovariance(EYE, EYE).toarray(),
     r"^refusing to materialise a 40000 x 40000 dense cross-covariance \(11.9 GiB\)"),
    ("gram-toarray", lambda: RegularizedGram(EYE, 0.5).toarray(),
     rf"^refusing to materialise a 40000 x 40000 dense covariance {GIB}; its products "
     r"\(C @ V\) never form it$"),
    ("cross-tall", lambda: CROSS.dense_product(max_dim=6),
     r"^refusing to materialise a 8 x 5 dense cross-covariance \(0.0 GiB\); d1 \* d2 must "
     r"be <= max_dim\^2 = 36, with max_dim=6, pass a larger max_dim to force"),
    ("inverse-small-max-dim", lambda: RegularizedInverse(X, 0.5, "dense", max_dim=7),
     r"^refusing to materialise a 8 x 8 dense covariance C \(0.0 GiB\); d must be <= "
     r"max_dim=7"),
    ("inverse-dual", lambda: RegularizedInverse(X[:6], 0.5, "dense", max_dim=5),
     r"^refusing to materialise a 6 x 6 dense dual \(n x n\) matrix of C \(0.0 GiB\); n must "
     r"be <= max_dim=5, pass a larger max_dim to force"),
]


@pytest.mark.parametrize("case,call,match", TOO_LARGE, ids=[c[0] for c in TOO_LARGE])
def test_dense_forms_refuse_a_large_d(case, call, match, no_dense):
    with pytest.raises(ValueError, match=match):
        call()


BAD_MAX_DIM = [
    ("toarray-str", lambda: C.toarray(max_dim="x"), TypeError,
     r"^max_dim must be an int >= 1, got 'x'$"),
    ("toarray-float", lambda: C.toarray(max_dim=20.5), TypeError,
     r"^max_dim must be an int >= 1, got 20.5$"),
    ("toarray-0", lambda: C.toarray(max_dim=0), ValueError,
     r"^max_dim must be an int >= 1, got 0$"),
    ("cross-str", lambda: CROSS.toarray(max_dim="x"), TypeError,
     r"^max_dim must be an int >= 1, got 'x'$"),
    ("dense-gram-bool", lambda: GramFactor(X).dense_gram(max_dim=True), TypeError,
     r"^max_dim must be an int >= 1, got True$"),
    ("inverse-str", lambda: RegularizedInverse(X, 0.5, "dense", max_dim="big"), TypeError,
     r"^max_dim must be an int >= 1, got 'big'$"),
    ("inverse-0-randomized", lambda: RegularizedInverse(X, 0.5, "randomized", max_dim=0),
     ValueError, r"^max_dim must be an int >= 1, got 0$"),
]


@pytest.mark.parametrize("case,call,exc,match", BAD_MAX_DIM, ids=[c[0] for c in BAD_MAX_DIM])
def test_bad_max_dim(case, call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_check_dense_size_limit_is_max_dim_squared_entries():
    check_dense_size((20_000, 20_000), 20_000, "x")  # on the limit: allowed
    check_dense_size((400_000, 1_000), 20_000, "x")  # tall, as many entries
    check_dense_size((10**6, 10**6), None, "x")  # None: no limit
    with pytest.raises(ValueError, match=r"^refusing to materialise a 20001 x 20001 dense x "
                                         r"\(3.0 GiB\); d must be <= max_dim=20000"):
        check_dense_size((20_001, 20_001), 20_000, "x")


def test_dense_forms_within_the_limit_are_unchanged():
    tau = 0.5
    ref = _dense_cov(X, tau)
    np.testing.assert_allclose(C.toarray(max_dim=8), ref, rtol=1e-12)
    np.testing.assert_array_equal(C.toarray(max_dim=None), C.toarray())
    np.testing.assert_allclose(GramFactor(X).dense_gram(max_dim=8), X.T @ X, rtol=1e-12)
    np.testing.assert_allclose(RegularizedInverse(X, tau, "dense", max_dim=8) @ X[:8].T,
                               np.linalg.solve(ref, X[:8].T), rtol=1e-10)
    # dual form: n = 6 <= max_dim = 6 < d = 8
    Xs = X[:6]
    np.testing.assert_allclose(RegularizedInverse(Xs, tau, "dense", max_dim=6) @ B12[:8],
                               np.linalg.solve(_dense_cov(Xs, tau), B12[:8]), rtol=1e-10)
    # a tall cross-covariance within max_dim^2 entries (8 x 5 <= 7^2; max(d1, d2) = 8 > 7)
    Mc = CrossCovariance(X, M, center=True)
    np.testing.assert_allclose(Mc.toarray(max_dim=7), (X - X.mean(axis=0)).T @ M,
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(CROSS.dense_product(max_dim=7), X.T @ M, rtol=1e-12)


def test_inverse_of_a_gram_factor_is_limited_like_data(monkeypatch):
    """max_dim='auto' guards a GramFactor as it guards data; None lifts the limit (what
    CCAEngine passes: its solver chose the dense form, C_xx of up to 30,000 features for the
    zipf reference)."""
    monkeypatch.setattr(inverse_module, "DENSE_MAX_DIM", 4)
    with pytest.raises(ValueError, match=r"d must be <= max_dim=4"):
        RegularizedInverse(X, 0.5, "dense")
    f = GramFactor(X)
    with pytest.raises(ValueError, match=r"d must be <= max_dim=4"):
        RegularizedInverse(f, 0.5, "dense")
    np.testing.assert_allclose(RegularizedInverse(f, 0.5, "dense", max_dim=None) @ X[:8].T,
                               np.linalg.solve(_dense_cov(X, 0.5), X[:8].T), rtol=1e-10)


def test_engine_dense_solver_is_not_limited(monkeypatch):
    Xs, Ys = sp.csr_matrix(X12), sp.csr_matrix(rng.random((30, 5)))
    before = SparseCCA(n_components=2, tau=0.5, solver="dense").fit(Xs, Ys)
    monkeypatch.setattr(inverse_module, "DENSE_MAX_DIM", 1)
    after = SparseCCA(n_components=2, tau=0.5, solver="dense").fit(Xs, Ys)
    np.testing.assert_array_equal(after.correlations_, before.correlations_)
    np.testing.assert_array_equal(after.x_weights_, before.x_weights_)


# -- U6: shapes -------------------------------------------------------------------------------

BAD_SHAPES = [
    ("C@v", lambda: C @ np.ones(7),
     r"^RegularizedGram is 8 x 8: the V of C @ V must be a \(8,\) vector or a \(8, b\) block, "
     r"got shape \(7,\)$"),
    ("C.matmat", lambda: C.matmat(np.ones((7, 2))),
     r"^RegularizedGram is 8 x 8: the V of C @ V must be .* got shape \(7, 2\)$"),
    ("C.rmatvec-3d", lambda: C.rmatvec(np.ones((8, 1, 1))),
     r"^RegularizedGram is 8 x 8: the V of C\^T @ V \(rmatvec / rmatmat\) must be a \(8,\) "
     r"vector or a \(8, b\) block, got shape \(8, 1, 1\)$"),
    ("cross@", lambda: CROSS @ np.ones((8, 2)),
     r"^CrossCovariance is 8 x 5: the V of C @ V must be a \(5,\) vector or a \(5, b\) block, "
     r"got shape \(8, 2\)$"),
    ("cross.rmatmat", lambda: CROSS.rmatmat(np.ones((5, 2))),
     r"^CrossCovariance is 8 x 5: the V of C\^T @ V \(rmatvec / rmatmat\) must be a \(8,\) "
     r"vector or a \(8, b\) block, got shape \(5, 2\)$"),
    ("inv@", lambda: INV @ np.ones((5, 2)),
     r"^RegularizedInverse is 12 x 12: the V of C @ V must be .* got shape \(5, 2\)$"),
    ("gram_matmat", lambda: C.gram_matmat(np.ones((7, 2))), r"^V must have d = 8 rows, got 7$"),
    ("gram_matmat-3d", lambda: C.gram_matmat(np.ones((8, 2, 1))),
     r"^V must be a \(d,\) vector or a \(d, m\) = \(8, m\) block, got shape \(8, 2, 1\)$"),
    ("gram_matmat-scalar", lambda: C.gram_matmat(1.0),
     r"^V must be a \(d,\) vector or a \(d, m\) = \(8, m\) block, got shape \(\)$"),
    ("matmat_as", lambda: C.matmat_as(np.ones((7, 2)), np.float32),
     r"^V must have d = 8 rows, got 7$"),
    ("matmat_as-1d", lambda: C.matmat_as(np.ones(8), np.float32),
     r"^V must be a 2-D \(d, m\) = \(8, m\) block, got shape \(8,\)$"),
    ("matmat_as-dtype", lambda: C.matmat_as(np.ones((8, 2)), np.int64),
     r"^dtype must be float32 or float64, got int64$"),
    ("matmat_as-dtype-str", lambda: C.matmat_as(np.ones((8, 2)), "nonsense"),
     r"^dtype must be float32 or float64, got 'nonsense'$"),
    ("from_gram_image-V", lambda: C.from_gram_image(np.ones((8, 2)), np.ones((7, 2))),
     r"^V must have d = 8 rows, got 7$"),
    ("from_gram_image-GV", lambda: C.from_gram_image(np.ones((8, 3)), np.ones((8, 2))),
     r"^GV must have shape \(8, 2\) like V, got \(8, 3\)$"),
    ("from_gram_image-1d", lambda: C.from_gram_image(C.gram_matmat(np.ones(8)), np.ones(8)),
     r"^GV must have shape \(8,\) like V, got \(8, 1\)$"),
    ("cross.matmat_as", lambda: CROSS.matmat_as(np.ones((8, 2)), np.float32),
     r"^V must have d2 = 5 rows, got 8$"),
    ("cross.matmat_as-T", lambda: CROSS.matmat_as(np.ones((5, 2)), np.float64, transpose=True),
     r"^V must have d1 = 8 rows, got 5$"),
    ("gram-factor", lambda: GramFactor(X).gram_matmat(np.ones((5, 2))),
     r"^V must have d = 8 rows, got 5$"),
    ("inv.gram_matmat", lambda: INV.gram_matmat(np.ones((5, 2))),
     r"^V must have d = 12 rows, got 5$"),
    ("solve_as", lambda: INV.solve_as(np.ones((5, 2)), np.float32),
     r"^B must have d = 12 rows, got 5$"),
    ("solve_as-f64", lambda: INV.solve_as(np.ones((5, 2)), np.float64),
     r"^B must have d = 12 rows, got 5$"),
    ("solve_as-dtype", lambda: INV.solve_as(B12, "float16"),
     r"^dtype must be float32 or float64, got float16$"),
    ("solve-dense", lambda: INV.solve(np.ones((5, 2))), r"^B must have d = 12 rows, got 5$"),
    ("solve-randomized", lambda: RINV.solve(np.ones(5)), r"^B must have d = 12 rows, got 5$"),
    ("solve-X0", lambda: IINV.solve(B12, X0=np.ones((5, 2))),
     r"^X0 must have shape \(12, 2\) like B, got \(5, 2\)$"),
    ("solve-X0-flat", lambda: IINV.solve(B12, X0=np.ones(24)),
     r"^X0 must have shape \(12, 2\) like B, got \(24,\)$"),
    ("solve-X0-dense", lambda: INV.solve(B12, X0=np.ones((12, 3))),
     r"^X0 must have shape \(12, 2\) like B, got \(12, 3\)$"),
    ("solve_with_residual", lambda: IINV.solve_with_residual(np.ones((5, 2))),
     r"^B must have d = 12 rows, got 5$"),
    ("precondition", lambda: RINV.precondition(np.ones((5, 2))),
     r"^B must have d = 12 rows, got 5$"),
    ("centred_projection-mean", lambda: centred_projection(X, np.ones((8, 2)), mean=np.ones(3)),
     r"^mean must have shape \(8,\) \(one per column of X\), got \(3,\)$"),
    ("centred_projection-W", lambda: centred_projection(X, np.ones((3, 2))),
     r"^W must have X.shape\[1\] = 8 rows, got 3$"),
    ("centred_projection-X-1d", lambda: centred_projection(np.ones(8), np.ones((8, 2))),
     r"^X must be 2-D \(n_samples, n_features\), got an array with shape \(8,\)$"),
    ("column_mean-1d", lambda: column_mean(np.ones(3)),
     r"^X must be 2-D \(n_samples, n_features\), got an array with shape \(3,\)$"),
    ("column_mean-empty", lambda: column_mean(np.ones((0, 3))),
     r"^X must have at least 1 row to average, got shape \(0, 3\)$"),
]


@pytest.mark.parametrize("case,call,match", BAD_SHAPES, ids=[c[0] for c in BAD_SHAPES])
def test_bad_shapes(case, call, match):
    with pytest.raises(ValueError, match=match):
        call()


BAD_TYPES = [
    ("use_exact-str", lambda: RINV.use_exact("dense"),
     r"^exact must be None or a 'dense' RegularizedInverse of the same GramFactor and tau, "
     r"got str$"),
    ("use_exact-array", lambda: IINV.use_exact(np.eye(12)),
     r"^exact must be None or a 'dense' RegularizedInverse .* got ndarray$"),
    ("column_mean-str", lambda: column_mean("abc"),
     r"^X must be a 2-D numeric array or a scipy.sparse matrix, got str$"),
    ("column_mean-none", lambda: column_mean(None),
     r"^X must be a 2-D numeric array or a scipy.sparse matrix, got NoneType$"),
    ("column_mean-strings", lambda: column_mean([["a", "b"]]),
     r"^X must have a real numeric dtype \(bool, int, float32 or float64\), got dtype <U1$"),
    ("centred_projection-X-str", lambda: centred_projection("X", np.ones(8)),
     r"^X must be a 2-D numeric array or a scipy.sparse matrix, got str$"),
    ("cross.matmat_as-transpose", lambda: CROSS.matmat_as(np.ones((8, 2)), np.float64, "yes"),
     r"^transpose must be True or False, got 'yes'$"),
]


@pytest.mark.parametrize("case,call,match", BAD_TYPES, ids=[c[0] for c in BAD_TYPES])
def test_bad_types(case, call, match):
    with pytest.raises(TypeError, match=match):
        call()


def test_products_of_valid_blocks_are_unchanged():
    tau = 0.5
    ref = _dense_cov(X, tau)
    G = X.T @ X
    V = rng.random((8, 3))
    v = V[:, 0]
    np.testing.assert_allclose(C @ v, ref @ v, rtol=1e-12)
    np.testing.assert_allclose(C @ V, ref @ V, rtol=1e-12)
    np.testing.assert_allclose(C.rmatmat(V), ref @ V, rtol=1e-12)
    np.testing.assert_allclose(C.gram_matmat(V), G @ V, rtol=1e-12)
    np.testing.assert_allclose(C.gram_matmat(v), (G @ v)[:, None], rtol=1e-12)  # (d, 1)
    np.testing.assert_allclose(C.gram_matmat(V.tolist()), G @ V, rtol=1e-12)
    np.testing.assert_array_equal(C.from_gram_image(C.gram_matmat(V), V), C @ V)
    np.testing.assert_allclose(C.matmat_as(V, np.float64), ref @ V, rtol=1e-12)
    np.testing.assert_allclose(C.matmat_as(V, np.float32), ref @ V, rtol=1e-5)
    assert C.matmat_as(V, "float32").dtype == np.float32
    W = rng.random((5, 2))
    np.testing.assert_allclose(CROSS @ W[:, 0], X.T @ M @ W[:, 0], rtol=1e-12)
    np.testing.assert_allclose(CROSS.rmatvec(V[:, 0]), M.T @ X @ V[:, 0], rtol=1e-12)
    U = rng.random((8, 2))
    np.testing.assert_allclose(CROSS.matmat_as(W, np.float64), X.T @ M @ W, rtol=1e-12)
    np.testing.assert_allclose(CROSS.matmat_as(U, np.float32, transpose=True),
                               M.T @ X @ U, rtol=1e-5)
    np.testing.assert_allclose(GramFactor(X).gram_matmat(V), G @ V, rtol=1e-12)
    np.testing.assert_allclose(INV.gram_matmat(B12), X12.T @ X12 @ B12, rtol=1e-12)


@pytest.mark.parametrize("inv", ["dense", "randomized", "iterative"])
def test_solves_keep_the_shape_of_a_vector(inv):
    """A (d,) right-hand side gives (d,) from every solve, as ``C^-1 @ b`` does; a (d, 1)
    one keeps its column."""
    C = {"dense": INV, "randomized": RINV, "iterative": IINV}[inv]
    b = B12[:, 0]
    assert C.solve(b).shape == (12,) and C.solve(b[:, None]).shape == (12, 1)
    assert [a.shape for a in C.solve_with_residual(b)] == [(12,), (12,)]
    np.testing.assert_allclose(C.solve(b), C @ b, rtol=1e-6, strict=True)
    if inv == "dense":
        for dtype in (np.float32, np.float64):
            assert C.solve_as(b, dtype).shape == (12,)
            assert C.solve_as(b[:, None], dtype).shape == (12, 1)


def test_solves_of_valid_blocks_are_unchanged():
    tau = 0.5
    ref = np.linalg.solve(_dense_cov(X12, tau), B12)
    np.testing.assert_allclose(INV.solve_as(B12, np.float64), ref, rtol=1e-10)
    np.testing.assert_allclose(INV.solve_as(B12, np.float32), ref, rtol=1e-4)
    np.testing.assert_allclose(INV.solve(B12), ref, rtol=1e-10)
    np.testing.assert_allclose(INV.solve(B12, X0=np.zeros((12, 2))), ref, rtol=1e-10)
    np.testing.assert_allclose(INV.solve(B12[:, 0]), ref[:, 0], rtol=1e-10, strict=True)
    np.testing.assert_allclose(IINV.solve(B12), ref, rtol=1e-6)
    np.testing.assert_allclose(IINV.solve(B12, X0=ref), ref, rtol=1e-6)
    # a (d,) right-hand side takes a (d,) or (d, 1) warm start, and gives a (d,) solution
    np.testing.assert_allclose(IINV.solve(B12[:, 0], X0=ref[:, 0]), ref[:, 0], rtol=1e-6,
                               strict=True)
    np.testing.assert_allclose(IINV.solve(B12[:, 0], X0=ref[:, :1]), ref[:, 0], rtol=1e-6,
                               strict=True)
    Z, R = IINV.solve_with_residual(B12, X0=ref)
    np.testing.assert_allclose(Z, ref, rtol=1e-6)
    np.testing.assert_allclose(R, B12 - _dense_cov(X12, tau) @ Z, atol=1e-10)
    np.testing.assert_allclose(RINV.precondition(B12), RINV @ B12, rtol=1e-12)


def test_use_exact_of_a_valid_inverse_is_unchanged():
    f = GramFactor(X12, random_state=0)
    inv = RegularizedInverse(f, 0.5, "randomized", rank=4)
    dense = RegularizedInverse(f, 0.5, "dense")
    inv.use_exact(dense)
    assert inv.exact_preconditioner
    np.testing.assert_array_equal(inv.precondition(B12), dense @ B12)
    inv.use_exact(None)
    assert not inv.exact_preconditioner


@pytest.mark.parametrize("kind", ["list", "dense", "csr", "csc", "float32"])
def test_column_mean_and_centred_projection_of_valid_input(kind):
    Xk = {"list": X.tolist(), "dense": X, "csr": sp.csr_matrix(X), "csc": sp.csc_matrix(X),
          "float32": X.astype(np.float32)}[kind]
    tol = 1e-6 if kind == "float32" else 1e-12
    mu = column_mean(Xk)
    assert mu.dtype == np.float64 and mu.shape == (8,)
    np.testing.assert_allclose(mu, X.mean(axis=0), rtol=tol)
    W = rng.random((8, 3))
    np.testing.assert_allclose(centred_projection(Xk, W, mu), (X - X.mean(axis=0)) @ W,
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(centred_projection(Xk, W[:, 0]), X @ W[:, 0], rtol=tol)
    np.testing.assert_allclose(centred_projection(Xk, W, np.zeros(8)), X @ W, rtol=tol)


# -- U11: options a method ignores, non-finite tolerances ------------------------------------

BAD_OPTIONS = [
    ("dense-tol", dict(method="dense", tol=2), ValueError, r"^tol must be in \(0, 1\), got 2.0$"),
    ("dense-tol-str", dict(method="dense", tol="a"), TypeError,
     r"^tol must be a real number in \(0, 1\), got 'a'$"),
    ("dense-rank", dict(method="dense", rank=0), ValueError, r"^rank must be an int >= 1, got 0$"),
    ("dense-maxiter", dict(method="dense", maxiter=-1), ValueError,
     r"^maxiter must be an int >= 1, got -1$"),
    ("randomized-rank-and-tol", dict(method="randomized", rank=4, tol=2), ValueError,
     r"^tol must be in \(0, 1\), got 2.0$"),
    ("randomized-tol-inf", dict(method="randomized", rank=4, tol=float("inf")), ValueError,
     r"^tol must be in \(0, 1\), got inf$"),
    ("randomized-maxiter", dict(method="randomized", rank=4, maxiter=2.5), TypeError,
     r"^maxiter must be an int >= 1, got 2.5$"),
    ("iterative-tol-nan", dict(method="iterative", tol=float("nan")), ValueError,
     r"^tol must be in \(0, 1\), got nan$"),
    ("iterative-rank-float", dict(method="iterative", rank=4.0), TypeError,
     r"^rank must be an int >= 1, got 4.0$"),
]


@pytest.mark.parametrize("case,kw,exc,match", BAD_OPTIONS, ids=[c[0] for c in BAD_OPTIONS])
def test_options_are_checked_whatever_the_method(case, kw, exc, match):
    with pytest.raises(exc, match=match):
        RegularizedInverse(X12, 0.3, **kw)


BAD_FACTOR_CALLS = [
    ("lowrank-tol-inf", lambda f: f.lowrank(tol=float("inf")), ValueError,
     r"^tol must be a finite number > 0, got inf$"),
    ("lowrank-tol-nan", lambda f: f.lowrank(tol=float("nan")), ValueError,
     r"^tol must be a finite number > 0, got nan$"),
    ("lowrank-tol-0", lambda f: f.lowrank(tol=0), ValueError,
     r"^tol must be a finite number > 0, got 0$"),
    ("lowrank-rank-and-tol-inf", lambda f: f.lowrank(4, tol=np.inf), ValueError,
     r"^tol must be a finite number > 0, got inf$"),
    ("lowrank-tol-bool", lambda f: f.lowrank(tol=True), TypeError,
     r"^tol must be a real number, got True$"),
    ("tail-negative", lambda f: (f.lowrank(4), f.tail_diagonal(-1)), ValueError,
     r"^rank must be an int >= 0, got -1$"),
    ("tail-str", lambda f: (f.lowrank(4), f.tail_diagonal("x")), TypeError,
     r"^rank must be an int >= 0, got 'x'$"),
    ("tail-float", lambda f: (f.lowrank(4), f.tail_diagonal(2.5)), TypeError,
     r"^rank must be an int >= 0, got 2.5$"),
]


@pytest.mark.parametrize("case,call,exc,match", BAD_FACTOR_CALLS,
                         ids=[c[0] for c in BAD_FACTOR_CALLS])
def test_gram_factor_refuses_non_finite_and_negative(case, call, exc, match):
    with pytest.raises(exc, match=match):
        call(GramFactor(X12, random_state=0))


def test_ignored_options_leave_the_result_unchanged():
    ref = np.linalg.solve(_dense_cov(X12, 0.3), B12)
    plain = RegularizedInverse(X12, 0.3, "dense") @ B12
    np.testing.assert_allclose(plain, ref, rtol=1e-10)
    np.testing.assert_array_equal(
        RegularizedInverse(X12, 0.3, "dense", rank=4, tol=1e-3, maxiter=10) @ B12, plain)
    lowrank = RegularizedInverse(X12, 0.3, "randomized", rank=4, random_state=0) @ B12
    np.testing.assert_array_equal(
        RegularizedInverse(X12, 0.3, "randomized", rank=4, tol=1e-3, maxiter=10,
                           random_state=0) @ B12, lowrank)
    np.testing.assert_allclose(
        RegularizedInverse(X12, 0.3, "iterative", rank=4, tol=1e-10, maxiter=200,
                           random_state=0) @ B12, ref, rtol=1e-8)


def test_valid_factor_calls_are_unchanged():
    G = X12.T @ X12
    a, b = GramFactor(X12, random_state=0), GramFactor(X12, random_state=0)
    Va, la = a.lowrank(4)
    Vb, lb = b.lowrank(4, tol=1e-3)  # tol beside a rank: checked, then unused
    np.testing.assert_array_equal(Va, Vb)
    np.testing.assert_array_equal(la, lb)
    f = GramFactor(X12, random_state=0)
    V, lam = f.lowrank(tol=1e-8 * np.linalg.norm(G, 2))
    np.testing.assert_allclose((V * lam) @ V.T, G, atol=1e-6 * np.abs(G).max())
    np.testing.assert_array_equal(a.tail_diagonal(0), a.colsq)
    for r in (2, np.int64(2)):
        np.testing.assert_allclose(a.tail_diagonal(r),
                                   np.maximum(np.diag(G) - (Va[:, :2] ** 2) @ la[:2], 0.0),
                                   rtol=1e-10, atol=1e-10)
