"""SparseCCA / CCAEngine / cca_path against the block eigenproblem of Eq. 11."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from sparsecca.linalg import CCAEngine, SparseCCA, cca_path
from sparsecca.linalg._thresholds import Thresholds, active

from .conftest import count_problem, covariances, dense_problem, eigh_reference, max_sin_angle

EPS = np.finfo(np.float64).eps


def _problem(kind, seed, d1=40, d2=18):
    if kind == "sparse":
        return count_problem(150, d1, d2, seed=seed)
    return dense_problem(150, d1, d2, seed=seed)


@pytest.mark.parametrize("kind", ["sparse", "dense"])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("tau", [0.0, 0.1, 0.5, 0.95])
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("dims", [(40, 18), (18, 40)], ids=["d1>d2", "d1<d2"])
def test_dense_solver_equals_block_eigh(kind, seed, tau, center, dims):
    # d1 < d2: the eigenproblem of the input side (T T^T, d1 x d1), else of T^T T
    X, Y = _problem(kind, seed, *dims)
    k = 6
    Cxx, Cyy, Cxy = covariances(X, Y, tau, center=center)
    sig, Aref, Bref = eigh_reference(Cxx, Cyy, Cxy, k + 1)
    assert sig[k - 1] - sig[k] > 1e-6 * sig[0]  # a gap, so the k-subspace is defined
    m = SparseCCA(k, tau=tau, solver="dense", center=center).fit(X, Y)
    np.testing.assert_allclose(m.correlations_, sig[:k], rtol=1e-8)
    np.testing.assert_allclose(m.eigenvalues_, sig[:k] ** 2, rtol=2e-8)
    assert max_sin_angle(m.x_weights_, Aref[:, :k], Cxx) < 1e-6
    assert max_sin_angle(m.y_weights_, Bref[:, :k], Cyy) < 1e-6
    # component by component (distinct correlations): equal up to sign
    for j in range(k):
        if min(abs(sig[j] - sig[j + 1]), abs(sig[j] - sig[j - 1]) if j else 1) > 1e-4:
            c = m.x_weights_[:, j] @ Cxx @ Aref[:, j]
            assert abs(abs(c) - 1) < 1e-8
            np.testing.assert_allclose(np.sign(c) * m.y_weights_[:, j], Bref[:, j],
                                       atol=1e-6 * np.abs(Bref[:, j]).max())


@pytest.mark.parametrize("solver", ["dense", "randomized", "iterative"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_b_orthonormality_every_solver(solver, dtype, fmt, preconditioner):
    X, Y = count_problem(400, 90, 25, seed=3, dtype=dtype)
    if fmt == "dense":
        X, Y = X.toarray(), Y.toarray()
    tau = 0.3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # randomized may stop at max_rank
        m = SparseCCA(8, tau=tau, solver=solver, random_state=0, max_rank=40).fit(X, Y)
    Cxx, Cyy, Cxy = covariances(X, Y, tau)
    A, B = m.x_weights_, m.y_weights_
    tol = 1e3 * EPS
    np.testing.assert_allclose(A.T @ Cxx @ A, np.eye(8), atol=tol)
    np.testing.assert_allclose(B.T @ Cyy @ B, np.eye(8), atol=tol)
    # and A^T Cxy B is diagonal with the reported correlations, sorted descending
    np.testing.assert_allclose(A.T @ Cxy @ B, np.diag(m.correlations_), atol=1e3 * EPS *
                               m.correlations_[0])
    assert np.all(np.diff(m.correlations_) <= 0)
    assert m.x_weights_.dtype == np.float64 and np.all(np.isfinite(A))


@pytest.mark.parametrize("tau", [0.1, 0.5, 0.95])
def test_iterative_matches_dense(tau, preconditioner):
    X, Y = count_problem(3000, 600, 60, seed=4)
    d = SparseCCA(15, tau=tau, solver="dense").fit(X, Y)
    it = SparseCCA(15, tau=tau, solver="iterative", random_state=0).fit(X, Y)
    assert it.solver_ == "iterative" and it.n_iter_ > 0 and it.rank_ > 0
    np.testing.assert_allclose(it.correlations_, d.correlations_, rtol=1e-6)
    tight = SparseCCA(15, tau=tau, solver="iterative", tol=1e-12, random_state=0).fit(X, Y)
    np.testing.assert_allclose(tight.correlations_, d.correlations_, rtol=1e-10)
    # the a-posteriori bound is honest: the true error is below it
    assert np.all(np.abs(it.correlations_ - d.correlations_) <= it.residual_norms_ + 1e-12)


def test_randomized_adapts_its_rank_and_is_exact_when_the_range_is_exhausted():
    # n = 120 rows: rank(X) <= 120 < d1, so the adaptive factor can capture all of it
    X, Y = count_problem(120, 400, 30, seed=5)
    d = SparseCCA(10, tau=0.2, solver="dense").fit(X, Y)
    r = SparseCCA(10, tau=0.2, solver="randomized", random_state=0).fit(X, Y)
    assert 10 < r.rank_ <= 120 and r.error_estimate_ <= 1e-3
    np.testing.assert_allclose(r.correlations_, d.correlations_, rtol=1e-8)


def test_randomized_model_stops_at_max_rank_with_a_warning_and_lower_bounds():
    # strategy='full' solves the low-rank-plus-ridge model as it is (no LOBPCG refinement)
    X, Y = count_problem(2000, 500, 40, seed=6)
    d = SparseCCA(5, tau=0.3, solver="dense").fit(X, Y)
    engine = CCAEngine(X, Y, solver="randomized", max_rank=32, random_state=0)
    with pytest.warns(RuntimeWarning, match=r"estimated relative error .* > tol = 0.001 at "
                                            r"the largest allowed rank 32"):
        r = engine.solve(Y, 0.3, 5, strategy="full")
    assert r.rank == 32 and r.error_estimate > 1e-3 and r.n_refine == 0
    assert [rank for rank, _ in r.rank_history] == [32]
    # Rayleigh-Ritz values of a subspace never exceed the exact ones
    assert np.all(r.correlations <= d.correlations_ * (1 + 1e-10))
    assert np.all(np.abs(r.correlations - d.correlations_) <= r.residual_norms + 1e-12)


@pytest.mark.parametrize("tau", [0.1, 0.5, 0.95])
def test_randomized_refines_an_inaccurate_model_to_tol(tau, preconditioner):
    """Count data whose rank-32 model is far off: LOBPCG on the exact pencil, started from
    the model and preconditioned by it (or by the dense factor of C_xx, which the engine's
    rule picks for this size), brings the correlations within tol of the dense solver,
    without a warning and without growing the rank."""
    X, Y = count_problem(2000, 500, 40, seed=6)
    d = SparseCCA(5, tau=tau, solver="dense").fit(X, Y)
    engine = CCAEngine(X, Y, solver="randomized", max_rank=32, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the model alone: far from tol
        model = engine.solve(Y, tau, 5, strategy="full") if tau == 0.1 else None
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        r = SparseCCA(5, tau=tau, solver="randomized", max_rank=32, random_state=0).fit(X, Y)
    assert r.rank_ == 32 and r.n_iter_ > 0 and r.error_estimate_ <= 1e-3
    rel = np.abs(r.correlations_ - d.correlations_) / d.correlations_
    assert rel.max() <= 1e-3
    if model is not None:  # the model alone was not within tol: the refinement did it
        assert np.max(np.abs(model.correlations - d.correlations_) / d.correlations_) > 1e-2
    # still Rayleigh-Ritz values: lower bounds, within the a-posteriori residual bound
    assert np.all(r.correlations_ <= d.correlations_ * (1 + 1e-10))
    assert np.all(np.abs(r.correlations_ - d.correlations_) <= r.residual_norms_ + 1e-12)
    # a tighter tol gets closer (the estimate is not a fixed guess)
    tight = SparseCCA(5, tau=tau, solver="randomized", max_rank=32, tol=1e-8,
                      random_state=0).fit(X, Y)
    np.testing.assert_allclose(tight.correlations_, d.correlations_, rtol=1e-6)


@pytest.mark.parametrize("solver,strategy,rtol", [
    ("dense", "krylov", 1e-8), ("iterative", "krylov", 1e-6), ("iterative", "full", 1e-6),
    # a randomized SVD of a slowly decaying spectrum: approximate, and a lower bound
    ("dense", "operator", 2e-2)])
def test_reduced_strategies_agree(solver, strategy, rtol):
    X, Y = count_problem(1500, 300, 120, seed=7)
    tau = 0.4
    ref = CCAEngine(X, Y, solver="dense").solve(Y, tau, 10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        res = CCAEngine(X, Y, solver=solver, random_state=0).solve(Y, tau, 10,
                                                                  strategy=strategy)
    assert res.strategy == strategy
    # the iterative solver warns exactly when its estimate does not certify its tol (1e-7)
    uncertified = solver == "iterative" and res.error_estimate > 1e-7
    assert [str(w.message).startswith("iterative solver: estimated relative error")
            for w in caught] == [True] * uncertified
    np.testing.assert_allclose(res.correlations, ref.correlations, rtol=rtol)
    assert np.all(res.correlations <= ref.correlations * (1 + 1e-12))


@pytest.mark.parametrize("solver", ["dense", "randomized", "iterative"])
def test_krylov_starts_from_the_previous_ritz_block(solver, monkeypatch):
    """A sequence of 'krylov' solves (a tau grid, a sequence of M) starts each from the Ritz
    block of the one before instead of a randomized SVD, and matches cold solves."""
    from sparsecca.linalg import _strategies

    starts = []
    cold_start = _strategies.randomized_svd
    monkeypatch.setattr(_strategies, "randomized_svd",
                        lambda *a, **kw: starts.append(1) or cold_start(*a, **kw))
    X, Y = count_problem(1500, 300, 120, seed=7)
    rng = np.random.default_rng(5)
    R = sp.random(1500, 120, density=0.05, random_state=rng, format="csr")
    kw = dict(solver=solver, random_state=0, tol=1e-10, max_rank=64, adaptive_rank=False)
    warm = CCAEngine(X, Y, **kw)
    steps = [(Y, 0.4), (Y, 0.6), ((0.5 * Y + R).tocsr(), 0.6), ((0.2 * Y + R).tocsr(), 0.6),
             (Y, 0.4)]
    for M, tau in steps:
        res = warm.solve(M, tau, 10, strategy="krylov")
        assert len(starts) == 1  # only the first solve started cold
        kept = warm._krylov_warm
        assert kept.tau == tau and kept.V.shape == (120, 10 + 10)
        # orthonormal, and its first k columns are the solve's B, whitened (the final
        # Rayleigh-Ritz step only rotates within span(B))
        np.testing.assert_allclose(kept.V.T @ kept.V, np.eye(20), atol=1e-10)
        Bk = warm.y_inverse(tau).inv_sqrt().rmatmat(kept.V[:, :10])
        _, Cyy, _ = covariances(X, Y, tau)
        assert max_sin_angle(Bk, res.y_weights, Cyy) < 1e-6
        cold = CCAEngine(X, Y, **kw).solve(M, tau, 10, strategy="krylov")
        assert len(starts) == 2
        starts.pop()
        ref = CCAEngine(X, Y, solver="dense").solve(M, tau, 10)
        # the eigenvalues of the problem solved (the model's, for 'randomized') to tol
        np.testing.assert_allclose(res.raw_eigenvalues, cold.raw_eigenvalues, rtol=1e-9)
        if solver != "randomized":  # the others solve the exact problem
            np.testing.assert_allclose(res.correlations, ref.correlations, rtol=1e-8)
        else:  # the model's vectors in the exact metrics: first order in the residuals
            np.testing.assert_allclose(res.correlations, cold.correlations, rtol=1e-6)
        # the same subspaces: a^T Cxx a_cold = +-1 for the separated leading pair
        Cxx, _, _ = covariances(X, Y, tau, M=M)
        assert abs(float(res.x_weights[:, 0] @ Cxx @ cold.x_weights[:, 0])) == pytest.approx(
            1.0, abs=1e-6)


def test_arbitrary_cross_factor():
    """The rerankers' entry point: Cxy = X^T M with M != Y, same X, Y and tau."""
    X, Y = count_problem(200, 50, 20, seed=8)
    rng = np.random.default_rng(0)
    engine = CCAEngine(X, Y, solver="dense")
    for lam in (0.25, 0.75):
        R = sp.random(200, 20, density=0.1, random_state=rng, format="csr")
        M = ((1 - lam) * Y + lam * R).tocsr()
        A, B, omega = engine.solve(M, 0.3, 5)
        Cxx, Cyy, Cxy = covariances(X, Y, 0.3, M=M)
        sig, _, _ = eigh_reference(Cxx, Cyy, Cxy, 5)
        np.testing.assert_allclose(np.sqrt(omega), sig, rtol=1e-8)
    assert len(engine._xinv) == 1  # the X factorisation was reused across M


def test_centered_equals_explicitly_centered_dense():
    X, Y = count_problem(300, 35, 12, seed=9)
    a = SparseCCA(5, tau=0.2, center=True, solver="dense").fit(X, Y)
    Xc = X.toarray() - X.toarray().mean(axis=0)
    Yc = Y.toarray() - Y.toarray().mean(axis=0)
    b = SparseCCA(5, tau=0.2, center=False, solver="dense").fit(Xc, Yc)
    np.testing.assert_allclose(a.correlations_, b.correlations_, rtol=1e-10)
    xs, ys = a.transform(X, Y)
    xs2, ys2 = b.transform(Xc, Yc)
    np.testing.assert_allclose(np.abs(xs), np.abs(xs2), atol=1e-9)
    assert sp.issparse(X)  # the input was never densified by fit


@pytest.mark.parametrize("solver", ["dense", "randomized", "iterative"])
@pytest.mark.parametrize("offset", [1e5, 1e7])
def test_centred_dense_input_with_large_offsets(solver, offset):
    """A dense view is centred explicitly: column offsets far above the spread change
    nothing beyond the rounding of the data itself (the rank-one correction left them
    1e-5 off at 1e5, and at 1e7 the Cholesky of Cxx failed)."""
    X0, Y0 = dense_problem(500, 30, 8, seed=11, shared=4, noise=0.8)
    X0, Y0 = X0 - X0.mean(axis=0), Y0 - Y0.mean(axis=0)
    Xo, Yo = X0 + offset, Y0 - offset
    # the data as stored: X0 + offset rounds X0 to ~offset * eps
    Xr, Yr = Xo - Xo.mean(axis=0), Yo - Yo.mean(axis=0)
    ref = SparseCCA(3, tau=0.1, solver="dense").fit(Xr, Yr)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = SparseCCA(3, tau=0.1, solver=solver, center=True, random_state=0).fit(Xo, Yo)
    tol = 1e-9 if solver != "randomized" else 1e-6
    np.testing.assert_allclose(est.correlations_, ref.correlations_, rtol=tol)
    np.testing.assert_allclose(est.x_mean_, Xo.mean(axis=0), rtol=1e-15)
    xs, ys = est.transform(Xo, Yo)
    xr, yr = ref.transform(Xr, Yr)
    scale = np.abs(xr).max()
    np.testing.assert_allclose(np.abs(xs), np.abs(xr), atol=1e3 * tol * scale)
    np.testing.assert_allclose(est.empirical_correlations_, ref.empirical_correlations_,
                               rtol=tol)


def _rank_deficient(n, d, r, seed=0):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((n, r))
    return B @ rng.standard_normal((r, d)), B[:, :8] + 0.5 * rng.standard_normal((n, 8))


def test_lobpcg_breakdown_in_float32_is_retried_in_float64(capsys):
    """A rank-300 X with ||X^T X|| ~ 5e6 at tau = 1e-6: LOBPCG's float32 blocks lose C_xx
    (once it 'converged' to correlations of 0.67 for 0.92 with a negative error estimate;
    then a Ritz value above the cap that bounds every eigenvalue raised FactorizationError).
    The float32 breakdown is now retried with float64 blocks, which match the dense solver.
    Near the edge (tau = 1e-4) whether float32 holds depends on the BLAS kernels' rounding
    (it broke down with OpenBLAS's SkylakeX kernels, not with its Haswell ones): either way
    the answer matches."""
    X, Y = _rank_deficient(3000, 400, 300)
    for tau in (1e-6, 1e-4):
        ref = SparseCCA(3, tau=tau, solver="dense").fit(X, Y)
        assert ref.correlations_[0] > 0.9
        np.testing.assert_allclose(
            SparseCCA(3, tau=tau, solver="iterative").fit(X, Y).correlations_,
            ref.correlations_, rtol=1e-7)
        capsys.readouterr()
        est = SparseCCA(3, tau=tau, solver="randomized", random_state=0, verbose=2).fit(X, Y)
        np.testing.assert_allclose(est.correlations_, ref.correlations_, rtol=1e-3)
        assert est.error_estimate_ <= 1e-3
        starts = capsys.readouterr().out.count("LOBPCG step 0:")
        # at 1e-6 the float32 attempt breaks down on every BLAS kernel: two starts
        assert starts == 2 if tau == 1e-6 else starts in (1, 2)


def test_exact_low_rank_model_that_misses_tol_warns():
    """When the randomized model's rank spans X it used to be trusted without a warning,
    though at a tiny tau its 1/tau tail magnifies the factor's rounding (tau = 1e-10: 4e-3
    off, estimate 0.11; tau = 1e-14: 0.69 for 0.92)."""
    X, Y = _rank_deficient(400, 30, 12)
    for tau in (1e-10, 1e-14):
        with pytest.warns(RuntimeWarning, match=r"although its low-rank model spans X "
                                                r"\(rank 12\)"):
            est = SparseCCA(3, tau=tau, solver="randomized", random_state=0).fit(X, Y)
        assert est.error_estimate_ > 1e-3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SparseCCA(3, tau=1e-4, solver="randomized", random_state=0).fit(X, Y)


@pytest.mark.parametrize("fmt", ["dense", "csr", "csc"])
def test_float32_input_means_accumulate_in_float64(fmt):
    """x_mean_ of a float32 view is its float64 mean: scipy (and numpy, down the rows)
    average float32 in float32 (6e-4 off here), which shifted every centred projection."""
    rng = np.random.default_rng(3)
    X = sp.random(100_000, 6, density=0.5, random_state=4, format="csr")
    X.data = 3.0 * X.data + 100.0
    Y = sp.csr_matrix(X[:, :3] @ rng.standard_normal((3, 3)))
    X32 = X.astype(np.float32)
    X64 = X32.astype(np.float64)
    conv = {"dense": lambda A: A.toarray(), "csr": sp.csr_matrix, "csc": sp.csc_matrix}[fmt]
    a = SparseCCA(2, tau=0.1, solver="dense", center=True).fit(conv(X32), Y)
    b = SparseCCA(2, tau=0.1, solver="dense", center=True).fit(conv(X64), Y)
    exact = np.asarray(X64.sum(axis=0)).ravel() / X64.shape[0]
    np.testing.assert_allclose(a.x_mean_, exact, rtol=4 * EPS)
    np.testing.assert_allclose(a.correlations_, b.correlations_, rtol=1e-12)


def test_matches_scikit_learn_cca():
    """tau -> 0, full rank, centred: the classical canonical correlations."""
    skl = pytest.importorskip("sklearn.cross_decomposition")
    X, Y = dense_problem(400, 6, 4, seed=10, shared=3, noise=0.7)
    k = 3
    ref = skl.CCA(n_components=k, scale=False, max_iter=5000, tol=1e-14).fit(X, Y)
    xs_r, ys_r = ref.transform(X, Y)
    ours = SparseCCA(k, tau=0.0, center=True, solver="dense").fit(X, Y)
    xs, ys = ours.transform(X, Y)
    for j in range(k):
        r_ref = np.corrcoef(xs_r[:, j], ys_r[:, j])[0, 1]
        np.testing.assert_allclose(ours.correlations_[j], r_ref, rtol=1e-6)
        np.testing.assert_allclose(ours.empirical_correlations_[j], r_ref, rtol=1e-6)
        # the same projection direction, up to sign and scale
        assert abs(np.corrcoef(xs[:, j], xs_r[:, j])[0, 1]) > 1 - 1e-6
        assert abs(np.corrcoef(ys[:, j], ys_r[:, j])[0, 1]) > 1 - 1e-6
    # at tau = 0 the eigen-correlations are Pearson correlations and at most 1
    assert np.all(ours.correlations_ <= 1 + 1e-12)


def test_works_inside_scikit_learn():
    """clone, a Pipeline (scikit-learn >= 1.6 asks every step for its tags), check_is_fitted
    and feature names: the pipeline's scores equal those of the steps run by hand."""
    pytest.importorskip("sklearn")
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError as SklearnNotFitted
    from sklearn.feature_extraction.text import TfidfTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.utils.validation import check_is_fitted

    X, Y = count_problem(300, 40, 12, seed=21)
    est = SparseCCA(3, tau=0.3, center=True, solver="dense", random_state=0)
    twin = clone(est)
    assert twin is not est and twin.get_params() == est.get_params()
    with pytest.raises(SklearnNotFitted):
        check_is_fitted(twin)
    pipe = make_pipeline(TfidfTransformer(), clone(est)).fit(X, Y)
    check_is_fitted(pipe)
    Xt = TfidfTransformer().fit_transform(X)
    assert sp.issparse(Xt)
    by_hand = clone(est).fit(Xt, Y)
    np.testing.assert_array_equal(pipe.transform(X), by_hand.transform(Xt))
    names = pipe.get_feature_names_out()
    assert list(names) == ["sparsecca0", "sparsecca1", "sparsecca2"]
    assert list(by_hand.get_feature_names_out([f"f{i}" for i in range(40)])) == list(names)
    with pytest.raises(ValueError, match="input_features must have n_features_in_ = 40 "
                                         "names, got 2"):
        by_hand.get_feature_names_out(["a", "b"])
    with pytest.raises(AttributeError, match="not fitted yet"):
        SparseCCA(2).get_feature_names_out()


def test_correlations_can_exceed_one_with_tau():
    X, Y = count_problem(500, 40, 10, seed=11)
    tau = 0.5
    m = SparseCCA(3, tau=tau, solver="dense").fit(X, Y)
    assert m.correlations_[0] > 1.0  # the paper's unscaled Cxy
    assert m.correlations_[0] <= 1.0 / (1.0 - tau) + 1e-12
    np.testing.assert_allclose(m.eigenvalues_, m.correlations_ ** 2)
    assert np.all(np.abs(m.empirical_correlations_) <= 1.0)


def test_thresholds_parameter_is_in_force_during_the_fit_only(tmp_path):
    X, Y = count_problem(200, 30, 12, seed=12)
    default = SparseCCA(3, tau=0.3, random_state=0).fit(X, Y)
    assert default.solver_ == "dense"
    # 'auto' picks the iterative solver above auto_dense_max = 10 (min(n, d1) = 30)
    small = Thresholds(auto_dense_max=10)
    model = SparseCCA(3, tau=0.3, random_state=0, thresholds=small).fit(X, Y)
    assert model.solver_ == "iterative" and "min(n, d1) = 30 > 10" in model.solver_reason_
    np.testing.assert_allclose(model.correlations_, default.correlations_, rtol=1e-6)
    assert active() == Thresholds()  # restored after the fit
    # the engine and cca_path take it too
    assert CCAEngine(X, Y, thresholds=small).solver_ == "iterative"
    (res,) = cca_path(X, Y, [0.3], 3, random_state=0, thresholds=small)
    assert res.solver == "iterative"
    # saved with the model, as a Thresholds again
    model.save(tmp_path / "m.npz")
    loaded = SparseCCA.load(tmp_path / "m.npz")
    assert loaded.thresholds == small
    np.testing.assert_array_equal(loaded.transform(X), model.transform(X))
    with pytest.raises(TypeError, match="thresholds must be None or a sparsecca.linalg."
                                        "Thresholds, got dict"):
        SparseCCA(3, thresholds={"auto_dense_max": 10}).fit(X, Y)


def test_estimator_api():
    X, Y = count_problem(200, 30, 12, seed=12)
    est = SparseCCA(4, tau=0.3, solver="auto", random_state=0)
    assert est.get_params() == dict(n_components=4, tau=0.3, solver="auto", center=False,
                                    tol=None, max_rank=None, preconditioner="auto",
                                    certify=False, random_state=0, verbose=0,
                                    thresholds=None)
    assert not hasattr(est, "x_weights_")
    with pytest.raises(AttributeError, match="not fitted yet"):
        est.transform(X)
    assert est.fit(X, Y) is est
    assert est.solver_ == "dense" and "min(n, d1) = 30" in est.solver_reason_
    assert est.x_weights_.shape == (30, 4) and est.y_weights_.shape == (12, 4)
    xs = est.transform(X)
    xs2, ys2 = est.fit_transform(X, Y)
    np.testing.assert_allclose(xs, xs2)
    assert ys2.shape == (200, 4)
    np.testing.assert_allclose(est.empirical_correlations_,
                               [np.corrcoef(xs[:, j], ys2[:, j])[0, 1] for j in range(4)])
    est.set_params(tau=0.6)
    assert est.tau == 0.6
    with pytest.raises(ValueError, match="invalid parameter 'alpha'"):
        est.set_params(alpha=1)
    assert "SparseCCA(n_components=4" in repr(est)


def _direct_correlations(X, Y, m):
    """Pearson correlations of X a_j and Y b_j, formed from the projections themselves."""
    P = np.asarray(X @ m.x_weights_)
    Q = np.asarray(Y @ m.y_weights_)
    return np.array([np.corrcoef(P[:, j], Q[:, j])[0, 1] for j in range(P.shape[1])])


@pytest.mark.parametrize("solver", ["dense", "randomized", "iterative"])
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("fmt", ["csr", "dense"])
def test_empirical_correlations_from_moments_match_the_projections(solver, center, fmt):
    """The moments the final Rayleigh-Ritz step forms give the training projections'
    Pearson correlations without a pass over the data; a tau grid (warm LOBPCG starts
    whose images come from the previous solve) included."""
    X, Y = count_problem(700, 160, 30, seed=21)
    if fmt == "dense":
        X, Y = X.toarray(), Y.toarray()
    kw = dict(solver=solver, center=center, random_state=0)
    if solver != "dense":
        kw["tol"] = 1e-9 if solver == "iterative" else 1e-3
    for m in [SparseCCA(6, tau=0.4, **kw).fit(X, Y),
              *SparseCCA(6, **kw).fit_path(X, Y, [0.2, 0.5, 0.8])]:
        np.testing.assert_allclose(m.empirical_correlations_, _direct_correlations(X, Y, m),
                                   rtol=0, atol=1e4 * EPS)


def test_empirical_correlations_fall_back_when_the_mean_cancels():
    """Uncentred columns with a large common offset: the projections' means dwarf their
    spread, and subtracting n mean^2 from the second moment would cancel most digits; the
    correlations are then formed from the projections."""
    rng = np.random.default_rng(5)
    n = 400
    z = rng.standard_normal((n, 3))
    X = 1e4 + np.hstack([z, rng.standard_normal((n, 5))]) * 1e-2
    Y = 1e4 + (z @ rng.standard_normal((3, 4)) + rng.standard_normal((n, 4))) * 1e-2
    m = SparseCCA(3, tau=0.3, solver="dense").fit(X, Y)
    ref = _direct_correlations(X, Y, m)
    np.testing.assert_allclose(m.empirical_correlations_, ref, rtol=0, atol=1e-9)
    # the moments alone would have been far off: the fallback is what kept them exact
    res = CCAEngine(X, Y, solver="dense").solve(Y, 0.3, 3)
    xx, yy, xy = res.projection_moments
    mx = X.sum(axis=0) @ res.x_weights / n
    my = Y.sum(axis=0) @ res.y_weights / n
    assert np.any(n * mx * mx > (1 - 1e-6) * xx)
    naive = (xy - n * mx * my) / np.sqrt((xx - n * mx * mx) * (yy - n * my * my))
    assert np.max(np.abs(naive - ref)) > 1e-6


def test_fit_path_and_cca_path_reuse_and_equal_single_fits():
    X, Y = count_problem(300, 45, 15, seed=13)
    taus = [0.05, 0.3, 0.9]
    models = SparseCCA(4, solver="dense").fit_path(X, Y, taus)
    results = cca_path(X, Y, taus, 4, solver="dense")
    for tau, m, r in zip(taus, models, results):
        single = SparseCCA(4, tau=tau, solver="dense").fit(X, Y)
        assert m.tau == tau and m.tau_ == tau
        np.testing.assert_allclose(m.correlations_, single.correlations_, rtol=1e-10)
        np.testing.assert_allclose(r.correlations, single.correlations_, rtol=1e-10)
        A, B, omega = r
        np.testing.assert_allclose(omega, single.eigenvalues_, rtol=1e-10)


def test_fit_path_randomized_reuses_the_x_factor():
    X, Y = count_problem(100, 300, 20, seed=14)
    engine = CCAEngine(X, Y, solver="randomized", random_state=0)
    engine.solve(Y, 0.1, 5)
    passes = engine.xfactor.n_gram_products_
    engine.solve(Y, 0.7, 5)
    assert engine.xfactor.n_gram_products_ == passes  # the SVD of X does not depend on tau


def test_reproduces_the_zipf_known_figure(zipf_dir):
    X = sp.load_npz(zipf_dir / "X_20000_5000.npz")
    Y = sp.load_npz(zipf_dir / "Y_20000_300.npz")
    m = SparseCCA(50, tau=0.5, solver="dense").fit(X, Y)
    np.testing.assert_allclose(m.correlations_[:5],
                               [1.9538, 1.5952, 1.5888, 1.5805, 1.5777], atol=5e-5)
    np.testing.assert_allclose(m.empirical_correlations_[:5],
                               [0.3232, 0.8003, 0.7971, 0.7930, 0.7915], atol=5e-5)
    assert m.correlations_.shape == (50,) and np.all(np.diff(m.correlations_) <= 0)


@pytest.mark.parametrize("solver", ["dense", "iterative"])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_duplicate_columns_are_merged_exactly(solver, fmt, preconditioner):
    X, Y = count_problem(300, 30, 10, seed=15)
    # triplicate column 3, duplicate columns 7 and 20 (as a word seen once and its suffixes)
    X = sp.hstack([X, X[:, [3, 3, 7, 20]]]).tocsr()
    X = X.toarray() if fmt == "dense" else X
    tau = 0.2
    merged = CCAEngine(X, Y, solver=solver, random_state=0)
    assert merged.n_merged_features_ == 30
    plain = CCAEngine(X, Y, solver="dense", merge_duplicates=False)
    a = merged.solve(Y, tau, 5)
    b = plain.solve(Y, tau, 5)
    np.testing.assert_allclose(a.correlations, b.correlations, rtol=1e-8)
    Cxx, _, Cxy = covariances(X, Y, tau)
    A = a.x_weights
    assert A.shape == (34, 5)
    np.testing.assert_allclose(A.T @ Cxx @ A, np.eye(5), atol=1e-10)
    np.testing.assert_allclose(A.T @ Cxy @ a.y_weights, np.diag(a.correlations), atol=1e-10)
    # duplicates share the weight equally
    np.testing.assert_allclose(A[3], A[30])
    np.testing.assert_allclose(A[7], A[32])


def test_centered_transform_with_duplicate_columns():
    """Duplicate input columns are merged inside the engine; transform must still centre with
    the means of the original columns (regression: x_mean_ had the merged length)."""
    import scipy.sparse as _sp

    from sparsecca.linalg import SparseCCA as _SparseCCA

    rng = np.random.default_rng(0)
    X = _sp.random(300, 40, density=0.2, random_state=1, format="csr")
    X = _sp.hstack([X, X[:, :5]]).tocsr()          # 5 duplicated columns
    Y = _sp.random(300, 12, density=0.3, random_state=2, format="csr")
    cca = _SparseCCA(3, tau=0.3, center=True, random_state=0).fit(X, Y)
    assert cca.x_mean_.shape == (45,)
    Xt = _sp.random(50, 45, density=0.2, random_state=rng.integers(1 << 30), format="csr")
    got = cca.transform(Xt)
    ref = (Xt.toarray() - np.asarray(X.mean(axis=0)).ravel()) @ cca.x_weights_
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10)


def test_fixed_rank_engine_solves_once_at_max_rank():
    """adaptive_rank=False: one solve at rank max_rank (the rerankers' rank-plus-ridge model),
    the same answer as an adaptive engine whose doubling ends at that rank."""
    X, Y = count_problem(600, 400, 30, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # error estimate above tol: expected
        fixed = CCAEngine(X, Y, solver="randomized", max_rank=64, random_state=0,
                          adaptive_rank=False).solve(Y, 0.5, 5)
        adaptive = CCAEngine(X, Y, solver="randomized", max_rank=64, random_state=0,
                             tol=1e-12).solve(Y, 0.5, 5, strategy="full")
    assert [r for r, _ in fixed.rank_history] == [64]
    assert adaptive.rank_history[-1][0] == 64
    np.testing.assert_allclose(fixed.correlations, adaptive.correlations, rtol=1e-10)


@pytest.mark.parametrize("tau", [0.3, 1.0])
@pytest.mark.parametrize("d2", [90, 40])
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("dense_m", [False, True])
def test_dual_strategy_matches_full(center, dense_m, d2, tau):
    """n < d1: the 'dual' solve (n-space when n < d2 too, else an (r x d2) Galerkin block)
    equals the 'full' one, for M = Y and for a general M (softened-style), sparse or dense."""
    from sparsecca.linalg import CrossCovariance
    from sparsecca.linalg._inverse import RegularizedInverse
    from sparsecca.linalg._reduced import reduced_cca

    X, Y = count_problem(60, 150, d2, seed=11)
    rng = np.random.default_rng(0)
    M = (0.6 * Y + 0.4 * sp.random(60, d2, density=0.1, random_state=rng)).tocsr()
    if dense_m:
        M = M.toarray()
    xinv = RegularizedInverse(X, tau, method="dense", center=center)
    yinv = RegularizedInverse(Y, tau, method="dense", center=center)
    assert xinv.dense_space == "dual"
    assert yinv.dense_space == ("dual" if d2 > 60 else "primal")
    cross = CrossCovariance(X, M, center=center)
    dual = reduced_cca(xinv, yinv, cross, 8)
    full = reduced_cca(xinv, yinv, cross, 8, strategy="full")
    assert dual.strategy == "dual" and full.strategy == "full"
    np.testing.assert_allclose(dual.correlations, full.correlations, rtol=1e-9)
    Cxx = xinv.covariance.toarray()
    Cyy = yinv.covariance.toarray()
    assert max_sin_angle(dual.x_weights, full.x_weights, Cxx) < 1e-6
    assert max_sin_angle(dual.y_weights, full.y_weights, Cyy) < 1e-6
    np.testing.assert_allclose(np.abs(dual.x_weights), np.abs(full.x_weights), rtol=1e-6,
                               atol=1e-8 * np.abs(full.x_weights).max())


def test_wide_output_view_is_swapped_not_approximated(set_thresholds):
    # Y with more than y_dense_max features and rows: SparseCCA solves (Y, X), since CCA is
    # symmetric in its views, and returns the weights in the caller's order.  Before, C_yy
    # was whitened by a low-rank factor and every solver was off (zipf 50K x 30K given as Y:
    # 14.6%, estimates 9e-4 and 5e-9)
    set_thresholds(y_dense_max=25)
    X, Y = count_problem(150, 18, 40, seed=4)
    tau, k = 0.5, 5
    Cxx, Cyy, Cxy = covariances(X, Y, tau)
    sig, Aref, Bref = eigh_reference(Cxx, Cyy, Cxy, k + 1)
    for solver, rtol in (("dense", 1e-8), ("iterative", 1e-6), ("randomized", 1e-3)):
        m = SparseCCA(k, tau=tau, solver=solver, random_state=0).fit(X, Y)
        assert "views swapped" in m.solver_reason_
        np.testing.assert_allclose(m.correlations_, sig[:k], rtol=rtol)
        assert m.x_weights_.shape == (18, k) and m.y_weights_.shape == (40, k)
        assert (m.n_features_in_, m.n_merged_features_) == (18, 18)
        A, B = m.x_weights_, m.y_weights_
        np.testing.assert_allclose(A.T @ Cxx @ A, np.eye(k), atol=1e-6)
        np.testing.assert_allclose(B.T @ Cyy @ B, np.eye(k), atol=1e-6)
        np.testing.assert_allclose(np.diag(A.T @ Cxy @ B), m.correlations_, rtol=1e-6)
        U, V = m.transform(X, Y)
        assert U.shape == V.shape == (150, k)
    m = SparseCCA(k, tau=tau, solver="dense").fit(X, Y)
    assert max_sin_angle(m.x_weights_, Aref[:, :k], Cxx) < 1e-6
    assert max_sin_angle(m.y_weights_, Bref[:, :k], Cyy) < 1e-6
    # the path and centring keep the caller's order too
    (p,) = SparseCCA(k, solver="dense").fit_path(X, Y, [tau])
    np.testing.assert_allclose(p.correlations_, m.correlations_, rtol=1e-12)
    c = SparseCCA(k, tau=tau, solver="dense", center=True).fit(X, Y)
    np.testing.assert_allclose(c.x_mean_, np.asarray(X.mean(axis=0)).ravel())
    assert c.y_mean_.shape == (40,)
    # both views too wide: refused, not whitened by a low-rank factor
    wide = sp.hstack([X, X, X]).tocsr()
    with pytest.raises(ValueError, match=r"Y has 40 features and 150 rows, both more than 25: "
                                         r".*Give the view with fewer features as Y"):
        SparseCCA(k, tau=tau, solver="randomized").fit(wide, Y)


@pytest.mark.parametrize("solver,n,d1,d2,small,fits", [
    ("randomized", 400, 80, 100, 0, True),  # d1 <= d2: no larger than C_yy's factor
    ("randomized", 400, 120, 100, 0, False),  # d1 > d2: larger than the factor paid already
    ("randomized", 400, 120, 100, 120, True),  # ... but small (exact_precond_small)
    ("randomized", 60, 200, 100, 0, True),  # the dual n x n form of C_xx
    ("iterative", 400, 80, 100, 0, True),  # the same rule for the iterative solver
    ("iterative", 400, 120, 100, 0, False),
    ("iterative", 400, 80, 100, -1, False)])  # beyond exact_precond_max (-1: set to 50)
def test_exact_preconditioner_rule(solver, n, d1, d2, small, fits, capsys):
    rule = Thresholds(exact_precond_small=max(small, 0))
    if small < 0:
        rule = rule.replace(exact_precond_max=50)
    X, Y = count_problem(n, d1, d2, seed=12)
    engine = CCAEngine(X, Y, solver=solver, random_state=0, verbose=1, max_rank=40,
                       thresholds=rule)
    assert engine.exact_preconditioner_fits() is fits
    k = 3
    res = engine.solve(Y, 0.5, k)
    assert res.strategy == "lobpcg"
    said = "C_xx^-1 preconditioner (dense" in capsys.readouterr().out
    assert said is fits
    assert res.preconditioner == ("dense" if fits else "low-rank")
    ref = CCAEngine(X, Y, solver="dense").solve(Y, 0.5, k)
    rtol = 1e-7 if solver == "iterative" else 1e-3
    np.testing.assert_allclose(res.correlations, ref.correlations, rtol=rtol)


@pytest.mark.parametrize("solver", ["randomized", "iterative"])
@pytest.mark.parametrize("option,rule", [
    ("low-rank", {"exact_precond_max": 0}),  # the rule's model, with no stall rescue
    ("dense", {"exact_precond_small": 8192})])  # the rule's dense factor from the start
def test_preconditioner_option_overrides_the_rule(solver, option, rule):
    # d1 = 120 > d2 = 100 (and not small): the rule gives the model, but would rescue a
    # stall
    base = Thresholds(exact_precond_small=0)
    X, Y = count_problem(400, 120, 100, seed=12)
    kw = dict(solver=solver, random_state=0, max_rank=40, thresholds=base)
    auto = CCAEngine(X, Y, **kw)
    assert not auto.exact_preconditioner_fits() and auto.exact_rescue_fits()
    chosen = CCAEngine(X, Y, preconditioner=option, **kw)
    assert chosen.exact_preconditioner_fits() is (option == "dense")
    assert not chosen.exact_rescue_fits()
    res = chosen.solve(Y, 0.5, 3)
    assert res.preconditioner == option
    # the same solve as the rule's thresholds set to give that preconditioner
    ref = CCAEngine(X, Y, **{**kw, "thresholds": base.replace(**rule)}).solve(Y, 0.5, 3)
    assert ref.preconditioner == option
    np.testing.assert_array_equal(res.x_weights, ref.x_weights)
    np.testing.assert_array_equal(res.correlations, ref.correlations)
    # and SparseCCA / cca_path pass it on
    model = SparseCCA(3, tau=0.5, preconditioner=option, **kw).fit(X, Y)
    np.testing.assert_array_equal(model.correlations_, ref.correlations)
    (path,) = cca_path(X, Y, [0.5], 3, preconditioner=option, **kw)
    np.testing.assert_array_equal(path.correlations, ref.correlations)


def test_duplicate_columns_count_once_in_the_exact_preconditioner_rule():
    X, Y = count_problem(400, 30, 40, seed=13)
    Xd = sp.hstack([X, X[:, :20]]).tocsr()  # 50 columns, 30 after merging duplicates
    engine = CCAEngine(Xd, Y, solver="iterative", random_state=0)
    assert engine.n_merged_features_ == 30 and engine.exact_preconditioner_fits()


def test_one_dense_preconditioner_at_a_time_across_tau():
    X, Y = count_problem(600, 60, 80, seed=14)
    engine = CCAEngine(X, Y, solver="iterative", random_state=0)
    assert engine.exact_preconditioner_fits()
    for tau in (0.2, 0.6):
        engine.solve(Y, tau, 3)
    cached = list(engine._xinv.values())
    assert len(cached) == 2  # the low-rank factors of both taus stay
    # but only the last tau's dense factor is kept (d1 x d1 each); the cached inverses
    # stay the model (each solve preconditions a with_exact copy)
    assert list(engine._xexact) == [0.6]
    assert [inv.exact_preconditioner for inv in cached] == [False, False]
    again = engine.solve(Y, 0.2, 3)
    assert again.preconditioner == "dense"
    ref = CCAEngine(X, Y, solver="dense").solve(Y, 0.2, 3)
    np.testing.assert_allclose(again.correlations, ref.correlations, rtol=1e-7)
    assert list(engine._xexact) == [0.2]


def test_solver_reason_says_what_preconditioned():
    X, Y = count_problem(400, 80, 100, seed=16)
    dense = SparseCCA(3, tau=0.5, solver="dense").fit(X, Y)
    assert "preconditioned" not in dense.solver_reason_
    fast = SparseCCA(3, tau=0.5, solver="iterative", random_state=0).fit(X, Y)
    assert fast.solver_reason_.endswith("; preconditioned by the dense factor of C_xx")
    model = SparseCCA(3, tau=0.5, solver="iterative", random_state=0,
                      thresholds=Thresholds(exact_precond_max=0)).fit(X, Y)
    assert model.solver_reason_.endswith("; preconditioned by the low-rank-plus-diagonal "
                                         "model of C_xx^-1")
    # the randomized model solved as it is (no LOBPCG): nothing preconditioned
    engine = CCAEngine(X, Y, solver="randomized", random_state=0, max_rank=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert engine.solve(Y, 0.5, 3, strategy="full").preconditioner is None
