"""Regularised inverse operators: dense / randomized / iterative, and block CG."""

import numpy as np
import pytest
import scipy.linalg as la
import scipy.sparse as sp

from sparsecca.linalg import FactorizationError, SingularCovarianceError, SparseCCA
from sparsecca.linalg._inverse import GramFactor, RegularizedInverse, block_cg
from sparsecca.linalg._precision import in_precision
from sparsecca.linalg._thresholds import Thresholds, applied

from .conftest import count_problem, covariances


def _low_rank(n, d, r, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, r)) @ rng.standard_normal((r, d))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("space,n", [("primal", 80), ("dual", 25)])
def test_dense_inverse_and_whitener(dtype, fmt, center, space, n):
    X, Y = count_problem(n, 40, 5, seed=1, dtype=dtype)
    X = X.toarray() if fmt == "dense" else X
    tau = 0.3
    inv = RegularizedInverse(X, tau, "dense", center=center)
    assert inv.dense_space == space
    Cxx, _, _ = covariances(X, Y, tau, center=center)
    Ci = np.linalg.inv(Cxx)
    B = np.random.default_rng(0).standard_normal((40, 3))
    # the operator computes in float64 from (possibly float32) data: the error is the
    # float32 rounding of the data only, i.e. zero for integer counts
    np.testing.assert_allclose(inv @ B, Ci @ B, rtol=1e-9, atol=1e-10)
    W = inv.inv_sqrt()
    Wd = W @ np.eye(40)
    np.testing.assert_allclose(Wd.T @ Wd, Ci, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(Wd @ Cxx @ Wd.T, np.eye(40), atol=1e-9)
    np.testing.assert_allclose(W.T @ B, Wd.T @ B, atol=1e-10)
    # rows whitened in place: (W R^T)^T, written into R (the dense primal form solves there)
    R = np.random.default_rng(3).standard_normal((6, 40))
    out = W.apply_to_rows(R.copy())
    np.testing.assert_allclose(out, R @ Wd.T, rtol=1e-9, atol=1e-10)
    R2 = R.copy()
    assert W.apply_to_rows(R2) is R2 and np.array_equal(R2, out)
    # a block LAPACK cannot overwrite (float32) is still written back
    R3 = R.astype(np.float32)
    assert W.apply_to_rows(R3) is R3
    np.testing.assert_allclose(R3, out, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("tail", ["identity", "diagonal"])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_randomized_is_exact_when_rank_is_captured(tail, fmt):
    X = _low_rank(60, 45, 6, seed=2)
    X = sp.csr_matrix(X) if fmt == "csr" else X
    tau = 0.25
    inv = RegularizedInverse(X, tau, "randomized", rank=10, tail=tail, random_state=0)
    assert inv.rank_ <= 10 and inv.factor.range_error_ == 0.0
    Xd = X.toarray() if fmt == "csr" else X
    C = (1 - tau) * Xd.T @ Xd + tau * np.eye(45)
    np.testing.assert_allclose(inv @ np.eye(45), np.linalg.inv(C), atol=1e-10)
    W = inv.inv_sqrt() @ np.eye(45)
    np.testing.assert_allclose(W @ C @ W.T, np.eye(45), atol=1e-9)
    R = np.random.default_rng(3).standard_normal((6, 45))
    np.testing.assert_allclose(inv.inv_sqrt().apply_to_rows(R.copy()), R @ W.T, atol=1e-10)


def test_identity_tail_is_the_halko_formula():
    X, _ = count_problem(200, 60, 4, seed=3)
    tau = 0.4
    inv = RegularizedInverse(X, tau, "randomized", rank=12, tail="identity", random_state=0)
    V, lam = inv.factor.lowrank(12)
    formula = (V * (1.0 / ((1 - tau) * lam + tau))) @ V.T + (np.eye(60) - V @ V.T) / tau
    np.testing.assert_allclose(inv @ np.eye(60), formula, rtol=1e-10, atol=1e-12)
    # symmetric inverse square root in this case
    W = inv.inv_sqrt() @ np.eye(60)
    np.testing.assert_allclose(W, W.T, atol=1e-12)
    np.testing.assert_allclose(W @ W, formula, rtol=1e-10, atol=1e-12)


def test_diagonal_tail_model_keeps_the_exact_diagonal():
    X, _ = count_problem(200, 60, 4, seed=4)
    tau = 0.4
    inv = RegularizedInverse(X, tau, "randomized", rank=12, random_state=0)
    f = inv.factor
    V, lam = f.lowrank(12)
    G = (X.T @ X).toarray()
    e = f.tail_diagonal(12)
    np.testing.assert_array_less(-1e-9, e)  # G - V diag(lam) V^T is PSD: its diagonal too
    model = (1 - tau) * ((V * lam) @ V.T + np.diag(e)) + tau * np.eye(60)
    np.testing.assert_allclose(np.diag(model), (1 - tau) * np.diag(G) + tau, rtol=1e-10)
    np.testing.assert_allclose(inv @ np.eye(60), np.linalg.inv(model), rtol=1e-8, atol=1e-12)
    # tau-independent, so kept for the factor and rank; a grown factor gets its own
    assert f.tail_diagonal(12) is e and not e.flags.writeable
    np.testing.assert_allclose(f.tail_diagonal(5), np.diag(G) - (V[:, :5] ** 2) @ lam[:5],
                               atol=1e-9)
    f.lowrank(30)
    V30, lam30 = f.lowrank(30)
    np.testing.assert_allclose(f.tail_diagonal(30), np.diag(G) - (V30 ** 2) @ lam30,
                               atol=1e-9)


def test_extended_factor_stays_a_nystrom_factor_of_g():
    # the factor keeps only (V, lam); growing it extends V's basis and applies G again
    X, _ = count_problem(200, 60, 4, seed=14)
    G = (X.T @ X).toarray()
    f = GramFactor(X, random_state=0)
    V12, lam12 = f.lowrank(12)
    err12 = la.norm(G - (V12 * lam12) @ V12.T, 2)
    V, lam = f.lowrank(30)
    assert f.rank_ == 30 and V.shape == (60, 30)
    np.testing.assert_allclose(V.T @ V, np.eye(30), atol=1e-12)
    resid = G - (V * lam) @ V.T
    assert la.eigvalsh(resid).min() > -1e-8 * np.abs(G).max()  # still PSD
    assert la.norm(resid, 2) < err12
    # grown to the full dimension the factor is exact
    V, lam = f.lowrank(60)
    np.testing.assert_allclose((V * lam) @ V.T, G, atol=1e-9 * np.abs(G).max())
    # Nystrom: G - V diag(lam) V^T is positive semidefinite
    assert la.eigvalsh(G - (V * lam) @ V.T).min() > -1e-8 * np.abs(G).max()


@pytest.mark.parametrize("center", [False, True])
def test_iterative_inverse_reaches_tolerance(center):
    X, Y = count_problem(300, 120, 5, seed=5)
    tau = 0.2
    inv = RegularizedInverse(X, tau, "iterative", center=center, rank=16, tol=1e-10)
    Cxx, _, _ = covariances(X, Y, tau, center=center)
    B = np.random.default_rng(1).standard_normal((120, 7))
    Z = inv @ B
    assert inv.last_info_["converged"] and inv.n_iter_ > 0
    np.testing.assert_allclose(Z, np.linalg.solve(Cxx, B), rtol=1e-7, atol=1e-9)
    with pytest.raises(NotImplementedError, match="method='iterative' provides C\\^-1"):
        inv.inv_sqrt()


@pytest.mark.parametrize("method", ["randomized", "iterative"])
@pytest.mark.parametrize("space,n", [("primal", 300), ("dual", 60)])
@pytest.mark.parametrize("center", [False, True])
def test_exact_preconditioner_is_the_dense_inverse(method, space, n, center):
    X, Y = count_problem(n, 120, 5, seed=9)
    tau = 0.2
    f = GramFactor(X, center=center, random_state=0)
    inv = RegularizedInverse(f, tau, method, rank=8, tail="diagonal")
    Cxx, _, _ = covariances(X, Y, tau, center=center)
    B = np.random.default_rng(2).standard_normal((120, 4))
    exact = np.linalg.solve(Cxx, B)
    # the rank-8 model alone is far from C^-1 (what the exact factor replaces)
    model = inv.precondition(B)
    assert np.abs(model - exact).max() > 1e-2 * np.abs(exact).max()
    assert not inv.exact_preconditioner
    dense = RegularizedInverse(f, tau, "dense")
    assert dense.dense_space == space
    inv = inv.with_exact(dense)
    assert inv.exact_preconditioner
    np.testing.assert_allclose(inv.precondition(B), exact, rtol=1e-9, atol=1e-11)
    # float32 blocks get a float32 factor: the result's precision, scaled by cond(C)
    P32 = inv.precondition(B.astype(np.float32))
    assert P32.dtype == np.float32
    cond = np.linalg.cond(Cxx)
    assert np.abs(P32 - exact).max() <= 50 * cond * np.finfo(np.float32).eps * np.abs(
        exact).max()
    if method == "iterative":
        # block CG preconditioned by C^-1 itself: done in one iteration
        np.testing.assert_allclose(inv @ B, exact, rtol=1e-8, atol=1e-10)
        assert inv.n_iter_ <= 1
    else:  # the randomized inverse stays the model: only its preconditioner changed
        np.testing.assert_array_equal(inv @ B, model)


def test_with_exact_refuses_a_mismatched_inverse():
    X, _ = count_problem(200, 30, 4, seed=10)
    f = GramFactor(X, random_state=0)
    inv = RegularizedInverse(f, 0.3, "randomized", rank=5)
    dense = RegularizedInverse(f, 0.3, "dense")
    with pytest.raises(ValueError, match="with_exact is for a 'randomized' or 'iterative'"):
        dense.with_exact(dense)
    for other in (RegularizedInverse(f, 0.4, "dense"), RegularizedInverse(X, 0.3, "dense"),
                  RegularizedInverse(f, 0.3, "randomized", rank=5)):
        with pytest.raises(ValueError, match="a 'dense' RegularizedInverse of the same "
                                             "GramFactor and tau"):
            inv.with_exact(other)


def test_factor_is_shared_across_tau():
    X, _ = count_problem(150, 50, 4, seed=6)
    f = GramFactor(X, random_state=0)
    a = RegularizedInverse(f, 0.1, "randomized", rank=20)
    n_products = f.n_gram_products_
    b = RegularizedInverse(f, 0.9, "randomized", rank=20)
    assert f.n_gram_products_ == n_products  # no new pass over X for the second tau
    assert a.factor is b.factor is f
    d1 = RegularizedInverse(f, 0.1, "dense")
    G = f.dense_gram()
    d2 = RegularizedInverse(f, 0.5, "dense")
    assert f.dense_gram() is G and d1.factor is d2.factor


def test_dense_tau_zero_singular_says_so():
    X = _low_rank(30, 20, 4, seed=7)
    for space in ("primal", "dual"):
        with pytest.raises(SingularCovarianceError, match=r"Cxx is singular .*use tau > 0"):
            RegularizedInverse(X, 0.0, "dense", dense_space=space, name="Cxx")
    # n >= d and no zero column: the low-rank factor finds rank 4 and says so (this once
    # hinged on whether a rounding-level tail landed on +0, which differs between BLAS builds)
    for method in ("iterative", "randomized"):
        with pytest.raises(SingularCovarianceError,
                           match=r"singular with tau = 0: the data have rank 4 < d = 20"):
            RegularizedInverse(X, 0.0, method)
    # and it is a LinAlgError and a ValueError
    assert issubclass(SingularCovarianceError, np.linalg.LinAlgError)
    assert issubclass(SingularCovarianceError, ValueError)


def test_dense_tau_zero_nonsingular_is_plain_inverse():
    rng = np.random.default_rng(8)
    X = rng.standard_normal((50, 10))
    inv = RegularizedInverse(X, 0.0, "dense")
    np.testing.assert_allclose(inv @ np.eye(10), np.linalg.inv(X.T @ X), rtol=1e-10)


@pytest.mark.parametrize("method", ["randomized", "iterative"])
@pytest.mark.parametrize("d", [12, 100])
def test_tau_zero_full_rank_factor_is_exact(method, d):
    # the low-rank factor covers every feature (d <= its rank): no tail, so tau = 0 on a
    # nonsingular X^T X is the plain inverse, not a 'zero variance' refusal
    X = np.random.default_rng(9).standard_normal((400, d))
    inv = RegularizedInverse(X, 0.0, method)
    ref = np.linalg.inv(X.T @ X)
    np.testing.assert_allclose(inv @ np.eye(d), ref, rtol=1e-8, atol=1e-12 * abs(ref).max())
    f = GramFactor(X)
    f.lowrank(d)
    assert f.rank_ == d and f.range_error_ == 0.0


def test_tau_zero_full_rank_factor_of_singular_data_says_so():
    # every feature in the basis, but two equal columns: singular at tau = 0 all the same
    X = np.random.default_rng(10).standard_normal((400, 12))
    X[:, 3] = X[:, 2]
    with pytest.raises(SingularCovarianceError, match=r"singular with tau = 0.*use tau > 0"):
        RegularizedInverse(X, 0.0, "randomized")


def test_dual_form_refuses_a_tau_below_rounding():
    # n < d: C's smallest eigenvalue is tau, and the dual form divides by it after cancelling
    # ~||G|| / tau: at tau = 1e-20 every solver returned noise (dense 0.13 for correlations
    # of 1), now a SingularCovarianceError that names a usable tau
    X = sp.random(300, 600, density=0.02, random_state=1, format="csr")
    Y = sp.random(300, 30, density=0.2, random_state=2, format="csr")
    for tau in (1e-14, 1e-20):
        with pytest.raises(SingularCovarianceError,
                           match=rf"^Cxx is singular to working precision with tau = {tau:g}: "
                                 r"tau is below the rounding level .* use tau >= \d"):
            RegularizedInverse(X, tau, "dense", name="Cxx")
        for solver in ("dense", "randomized", "iterative"):
            with pytest.raises(SingularCovarianceError, match="to working precision"):
                SparseCCA(3, tau=tau, solver=solver, random_state=0).fit(X, Y)
    # above it the exact answer: n < d, so the top correlations sit at the cap 1 / (1 - tau)
    model = SparseCCA(3, tau=1e-10, solver="dense").fit(X, Y)
    np.testing.assert_allclose(model.correlations_, 1.0, rtol=1e-6)


def _spd(d, cond, seed=0):
    rng = np.random.default_rng(seed)
    Q = la.qr(rng.standard_normal((d, d)))[0]
    return (Q * np.geomspace(1, cond, d)) @ Q.T


@pytest.mark.parametrize("precond", [False, True])
def test_block_cg_many_right_hand_sides(precond):
    A = _spd(80, 1e3, seed=1)
    B = np.random.default_rng(2).standard_normal((80, 12))
    B[:, 5] = B[:, 4]  # a repeated right-hand side must not break the block recurrence
    B[:, 6] = 0.0  # nor a zero one
    M = np.linalg.inv(A + 0.5 * np.diag(np.diag(A))) if precond else None
    X, info = block_cg(A, B, M=M, rtol=1e-12, maxiter=200)
    assert info["converged"]
    np.testing.assert_allclose(X, np.linalg.solve(A, B), rtol=1e-8, atol=1e-10)
    # Galerkin property from a zero start: B^T X is symmetric
    np.testing.assert_allclose(B.T @ X, (B.T @ X).T, atol=1e-8)


def test_block_cg_single_vector_and_warm_start():
    A = _spd(40, 50, seed=3)
    b = np.ones(40)
    x, info = block_cg(A, b, rtol=1e-12)
    assert x.shape == (40,)
    np.testing.assert_allclose(A @ x, b, atol=1e-9)
    x2, info2 = block_cg(A, b, X0=x, rtol=1e-10)
    assert info2["n_iter"] == 0


def test_block_cg_detects_indefinite_operator():
    A = np.diag(np.r_[np.ones(5), -np.ones(5)])
    with pytest.raises(FactorizationError, match="not positive definite"):
        block_cg(A, np.ones((10, 1)), rtol=1e-12)


def test_block_cg_warns_when_not_converged():
    A = _spd(60, 1e6, seed=4)
    with pytest.warns(RuntimeWarning, match="did not reach rtol"):
        block_cg(A, np.ones((60, 2)), rtol=1e-14, maxiter=3)


BAD = [
    (dict(tau=1.5), ValueError, r"tau must be in \[0, 1\] .*got 1.5"),
    (dict(tau=-0.1), ValueError, r"tau must be in \[0, 1\] .*got -0.1"),
    (dict(tau="0.5"), TypeError, r"tau must be a real number in \[0, 1\], got '0.5'"),
    (dict(tau=0.5, method="cholesky"), ValueError,
     r"method must be one of \('dense', 'randomized', 'iterative'\), got 'cholesky'"),
    (dict(tau=0.5, method="randomized", tail="zero"), ValueError,
     r"tail must be one of \('diagonal', 'identity', 'auto'\), got 'zero'"),
    (dict(tau=0.5, method="randomized", rank=0), ValueError, r"rank must be an int >= 1, got 0"),
    (dict(tau=0.5, method="iterative", tol=2.0), ValueError, r"tol must be in \(0, 1\), got 2.0"),
]


@pytest.mark.parametrize("kw,exc,match", BAD)
def test_regularized_inverse_bad_arguments(kw, exc, match):
    X = np.eye(6)
    tau = kw.pop("tau")
    with pytest.raises(exc, match=match):
        RegularizedInverse(X, tau, **kw)


@pytest.mark.parametrize("path", ["sparse", "densified", "dense"])
@pytest.mark.parametrize("tail", ["diagonal", "identity"])
def test_sandwich_matches_dense_products(tail, path):
    """B^T C^-1 B from the low-rank formula equals the product through the dense operator,
    whether F^T F is a sparse product or a BLAS syrk on the densified (or dense) block."""
    limits = Thresholds(sandwich_dense_min_density=0.0 if path == "densified" else 2.0)
    X, Y = count_problem(300, 120, 25, seed=5)
    inv = RegularizedInverse(X, 0.3, method="randomized", rank=40, tail=tail, random_state=0)
    Bs = sp.csr_matrix(X.T @ Y)
    ref = Bs.toarray().T @ inv.matmat(Bs.toarray())
    B = Bs.toarray() if path == "dense" else Bs
    with applied(limits):
        got = inv.sandwich(B)
    scale = np.abs(ref).max()
    np.testing.assert_allclose(got, 0.5 * (ref + ref.T), rtol=0,
                               atol=1e3 * np.finfo(float).eps * scale)
    # with a rank-one term (a centred cross-covariance): B - u v^T
    rng = np.random.default_rng(1)
    u, v = rng.normal(size=B.shape[0]), rng.normal(size=B.shape[1])
    Bd = Bs.toarray() - np.outer(u, v)
    ref = Bd.T @ inv.matmat(Bd)
    with applied(limits):
        got = inv.sandwich(B, u, v)
    np.testing.assert_allclose(got, 0.5 * (ref + ref.T), rtol=0,
                               atol=1e3 * np.finfo(float).eps * np.abs(ref).max())


@pytest.mark.parametrize("big", [True, False])
def test_sandwich_syrk_goes_wide_in_a_pinned_region_only_when_large(big, monkeypatch):
    """Inside the fast solvers' pinned region a large syrk takes both cores (the rerankers'
    Galerkin matrices), a small one stays on one; the result is the same."""
    import types

    import sparsecca.linalg._lowrank_inverse as inverse_module
    from sparsecca.linalg import _threads
    from sparsecca.linalg import _threads as val

    if val._CONTROLLER is None:
        pytest.skip("threadpoolctl is not installed: small_blas does not pin BLAS")
    monkeypatch.setattr(_threads, "n_split_threads", lambda: 2)
    limits = Thresholds(sandwich_dense_min_density=0.0,
                        sandwich_wide_min_flops=1.0 if big else 1e18)
    seen = []
    real = inverse_module.blas

    def dsyrk(*args, **kw):
        seen.append(min(lib["num_threads"] for lib in val._CONTROLLER.info()
                        if lib["user_api"] == "blas"))
        return real.dsyrk(*args, **kw)

    monkeypatch.setattr(inverse_module, "blas", types.SimpleNamespace(dsyrk=dsyrk))
    X, Y = count_problem(300, 120, 25, seed=5)
    inv = RegularizedInverse(X, 0.3, method="randomized", rank=40, random_state=0)
    B = sp.csr_matrix(X.T @ Y)
    with val.small_blas(0), applied(limits):
        got = inv.sandwich(B)
    assert seen == [2 if big else 1]
    ref = B.toarray().T @ inv.matmat(B.toarray())
    np.testing.assert_allclose(got, 0.5 * (ref + ref.T), rtol=0,
                               atol=1e3 * np.finfo(float).eps * np.abs(ref).max())


@pytest.mark.parametrize("center", [False, True])
def test_sparse_galerkin_path_matches_dense_cross_path(center):
    """reduced_cca's sparse Galerkin shortcut (randomized inverse, sparse C_xy, with or
    without its rank-one centring term) gives the projections of the dense-block path
    (forced by a dense M)."""
    from sparsecca.linalg import CrossCovariance
    from sparsecca.linalg._reduced import reduced_cca

    X, Y = count_problem(400, 150, 30, seed=6)
    xinv = RegularizedInverse(X, 0.4, method="randomized", rank=60, random_state=0,
                              center=center)
    yinv = RegularizedInverse(Y, 0.4, method="dense", center=center)
    fast = reduced_cca(xinv, yinv, CrossCovariance(X, Y, center=center), 6, strategy="full")
    slow = reduced_cca(xinv, yinv, CrossCovariance(X, Y.toarray(), center=center), 6,
                       strategy="full")
    np.testing.assert_allclose(fast.correlations, slow.correlations, rtol=1e-10)
    np.testing.assert_allclose(fast.x_weights, slow.x_weights, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fast.y_weights, slow.y_weights, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("tail", ["diagonal", "identity"])
@pytest.mark.parametrize("method", ["randomized", "iterative"])
def test_lowrank_galerkin_equals_b_transpose_t_b(method, tail):
    """B^T T B from row chunks equals the product with the model's explicit inverse."""
    from sparsecca.linalg._inverse import RegularizedInverse

    X, _ = count_problem(300, 80, 5, seed=31)
    inv = RegularizedInverse(X, 0.4, method, rank=12, tail=tail, random_state=0)
    B = np.random.default_rng(5).standard_normal((80, 7))
    ref = B.T @ inv._lowrank_inverse(B)
    for chunk in (8 * 7 * 3, 64 * 2**20):  # 3-row chunks and one chunk
        np.testing.assert_allclose(inv.lowrank_galerkin(B, chunk_bytes=chunk), ref,
                                   rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    with pytest.raises(ValueError, match="lowrank_galerkin needs a 'randomized' or "
                                         "'iterative' inverse"):
        RegularizedInverse(X, 0.4, "dense").lowrank_galerkin(B)


@pytest.mark.parametrize("method,cls", [("dense", "DenseInverse"),
                                        ("randomized", "LowRankInverse"),
                                        ("iterative", "IterativeInverse")])
def test_factory_returns_the_class_of_the_method(method, cls):
    """RegularizedInverse(...) builds the method's class, a RegularizedInverse; the trusted
    path (the engine's: no argument checks) builds the same operator."""
    from sparsecca.linalg import _inverse

    X, Y = count_problem(200, 40, 5, seed=12)
    f = GramFactor(X, random_state=0)
    inv = RegularizedInverse(f, 0.3, method, rank=8, tol=1e-10)
    assert type(inv) is getattr(_inverse, cls) and isinstance(inv, RegularizedInverse)
    assert inv.method == method
    trusted = RegularizedInverse._trusted(f, 0.3, method, rank=8, tol=1e-10)
    assert type(trusted) is type(inv)
    B = np.random.default_rng(4).standard_normal((40, 3))
    np.testing.assert_allclose(trusted @ B, inv @ B, rtol=1e-10, atol=1e-12)
    Cxx, _, _ = covariances(X, Y, 0.3)
    if method != "randomized":
        np.testing.assert_allclose(inv @ B, np.linalg.solve(Cxx, B), rtol=1e-7, atol=1e-9)
    # a class called directly builds its own method and refuses another
    assert type(getattr(_inverse, cls)(f, 0.3, rank=8)) is type(inv)
    other = "iterative" if method == "dense" else "dense"
    with pytest.raises(ValueError, match=rf"^{cls} is method='{method}', got "
                                         rf"method='{other}'"):
        getattr(_inverse, cls)(f, 0.3, other)


def test_with_exact_leaves_the_inverse_unchanged():
    X, Y = count_problem(200, 40, 5, seed=13)
    f = GramFactor(X, random_state=0)
    inv = RegularizedInverse(f, 0.3, "iterative", rank=4, tol=1e-10)
    dense = RegularizedInverse(f, 0.3, "dense")
    exact = inv.with_exact(dense)
    assert exact.exact_preconditioner and not inv.exact_preconditioner
    assert exact.factor is inv.factor and exact.model is inv.model
    B = np.random.default_rng(5).standard_normal((40, 3))
    np.testing.assert_allclose(exact.precondition(B), dense @ B, rtol=1e-12)
    Cxx, _, _ = covariances(X, Y, 0.3)
    np.testing.assert_allclose(exact @ B, np.linalg.solve(Cxx, B), rtol=1e-8, atol=1e-10)
    assert exact.n_iter_ <= 1
    assert not exact.with_exact(None).exact_preconditioner and exact.exact_preconditioner
    with pytest.raises(ValueError, match="with_exact is for a 'randomized' or 'iterative'"):
        dense.with_exact(dense)


@pytest.mark.parametrize("method,space,n", [("dense", "primal", 200), ("dense", "dual", 30),
                                            ("randomized", None, 200)])
def test_in_precision_casts_once_at_the_boundary(method, space, n):
    """in_precision(float32): a float32 operator; the dense factor solves in float32 (within
    float32's rounding scaled by cond(C)), the model rounds its float64 result."""
    X, Y = count_problem(n, 40, 5, seed=14)
    inv = RegularizedInverse(X, 0.3, method, rank=8, random_state=0)
    if space is not None:
        assert inv.dense_space == space
    assert in_precision(inv, np.float64) is inv
    single = in_precision(inv, "float32")
    assert in_precision(single, np.float64) is inv
    # a block float32 holds exactly (the cast operator rounds its operand first)
    B = np.random.default_rng(6).standard_normal((40, 3)).astype(np.float32).astype(float)
    ref = inv @ B
    got = single @ B
    assert single.dtype == np.float32 and got.dtype == np.float32
    if method == "randomized":
        np.testing.assert_array_equal(got, ref.astype(np.float32))
    else:
        Cxx, _, _ = covariances(X, Y, 0.3)
        cond = np.linalg.cond(Cxx)
        assert np.abs(got - ref).max() <= 50 * cond * np.finfo(np.float32).eps * np.abs(
            ref).max()
        np.testing.assert_array_equal(in_precision(single, np.float32) @ B, got)
        np.testing.assert_array_equal(single @ B[:, 0], got[:, 0])
    with pytest.raises(ValueError, match="^dtype must be float32 or float64, got float16$"):
        in_precision(inv, np.float16)
