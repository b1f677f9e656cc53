"""The iterative solver's LOBPCG strategy against the dense solver and Eq. 11's block eigh,
and the thread-split products it runs on."""

import os
import re
import signal
import threading
import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import sparsecca.linalg._lobpcg as lobpcg_mod
import sparsecca.linalg._stopping as stopping_mod
import sparsecca.linalg._threads as split_mod
from sparsecca.linalg import CCAEngine, RankDeficientError, SparseCCA, cca_path
from sparsecca.linalg._gram import CrossCovariance, RegularizedGram
from sparsecca.linalg._precision import in_precision
from sparsecca.linalg._reduced import reduced_cca
from sparsecca.linalg._threads import run_pair, tall_matmul, tall_tmatmul
from sparsecca.linalg._thresholds import active

from .conftest import count_problem, covariances, eigh_reference, max_sin_angle

EPS = np.finfo(np.float64).eps


# every test runs with both preconditioners (see conftest.preconditioner)
pytestmark = pytest.mark.usefixtures("preconditioner")


def _engine_pair(X, Y, center=False, **kw):
    return (CCAEngine(X, Y, solver="dense", center=center),
            CCAEngine(X, Y, solver="iterative", center=center, random_state=0, **kw))


@pytest.mark.parametrize("tau", [0.1, 0.5, 0.95, 1.0])
@pytest.mark.parametrize("center", [False, True])
def test_lobpcg_equals_block_eigh(tau, center):
    X, Y = count_problem(900, 240, 40, seed=11)
    k = 8
    dense, it = _engine_pair(X, Y, center=center, tol=1e-12)
    res = it.solve(Y, tau, k)
    assert res.strategy == "lobpcg" and (res.n_iter > 0 or tau == 1.0)  # C = I at tau = 1
    Cxx, Cyy, Cxy = covariances(X, Y, tau, center=center)
    sig, Aref, _ = eigh_reference(Cxx, Cyy, Cxy, k + 1)
    np.testing.assert_allclose(res.correlations, sig[:k], rtol=1e-9)
    np.testing.assert_allclose(res.correlations, dense.solve(Y, tau, k).correlations,
                               rtol=1e-9)
    if sig[k - 1] - sig[k] > 1e-3 * sig[0]:
        assert max_sin_angle(res.x_weights, Aref[:, :k], Cxx) < 1e-5
    A, B = res.x_weights, res.y_weights
    np.testing.assert_allclose(A.T @ Cxx @ A, np.eye(k), atol=1e3 * EPS)
    np.testing.assert_allclose(B.T @ Cyy @ B, np.eye(k), atol=1e3 * EPS)


def test_default_tolerance_meets_the_iterative_target():
    X, Y = count_problem(2000, 400, 60, seed=12)
    dense, it = _engine_pair(X, Y)
    res = it.solve(Y, 0.5, 20)
    assert res.strategy == "lobpcg"
    ref = dense.solve(Y, 0.5, 20).correlations
    np.testing.assert_allclose(res.correlations, ref, rtol=1e-6)
    # Ritz values of a subspace are lower bounds
    assert np.all(res.correlations <= ref * (1 + 1e-12))


def test_arbitrary_cross_factor():
    """The rerankers' M != Y (a residual-like factor with negative entries)."""
    X, Y = count_problem(800, 200, 30, seed=13)
    rng = np.random.default_rng(1)
    R = sp.random(800, 30, density=0.1, random_state=rng, format="csr")
    R.data -= 0.5
    M = (0.6 * Y + 0.4 * R).tocsr()
    dense, it = _engine_pair(X, Y, tol=1e-12)
    a = it.solve(M, 0.3, 6)
    b = dense.solve(M, 0.3, 6)
    assert a.strategy == "lobpcg"
    np.testing.assert_allclose(a.correlations, b.correlations, rtol=1e-9)


def test_operator_cross_and_randomized_start_give_the_same_answer(set_thresholds):
    X, Y = count_problem(900, 240, 40, seed=14)
    _, it = _engine_pair(X, Y, tol=1e-12)
    base = it.solve(Y, 0.4, 6)
    # C_xy W_y^T as an operator (large d1 x d2), which also takes the randomized starting
    # block; a fresh engine, so that no warm start hides the cold path
    set_thresholds(lobpcg_dense_ct_bytes=0)
    _, cold = _engine_pair(X, Y, tol=1e-12)
    other = cold.solve(Y, 0.4, 6, strategy="lobpcg")
    assert other.n_iter > 0
    np.testing.assert_allclose(other.correlations, base.correlations, rtol=1e-9)


@pytest.mark.parametrize("cross", ["dense_ct", "kept_dense", "factored"])
@pytest.mark.parametrize("center", [False, True, "dominant"])
def test_single_precision_lobpcg_meets_its_tolerance(monkeypatch, set_thresholds, cross,
                                                     center):
    """tol >= lobpcg_single_tol keeps the blocks in float32 (dense C_xy W_y^T, or the
    operator with a float32 copy of the C_yy factor and C_xy through the kept dense X^T M or
    its sparse factors, whose products then accumulate in float32, centred too unless the
    mean dominates the data); the answer, finished in float64, is within tol of the dense
    solver and exactly orthonormal like a float64 one."""
    X, Y = count_problem(900, 240, 40, seed=14)
    if center == "dominant":
        # a column of large, nearly constant counts (X^T X ~1e7 times Xc^T Xc): float64
        # products, rounded; accumulated in float32 they lost the problem (LOBPCG found a
        # rank-3 cross-covariance)
        X = sp.hstack([X, sp.csr_matrix(3000.0 + np.arange(900.0)[:, None] % 3)]).tocsr()
    single = center != "dominant"
    center = bool(center)
    if cross != "dense_ct":
        set_thresholds(lobpcg_dense_ct_bytes=0)
    if cross == "factored":
        set_thresholds(dense_cross_cache_bytes=0)
    tau, k, tol = 0.4, 8, 1e-3
    dense, it = _engine_pair(X, Y, tol=tol, center=center)
    res = it.solve(Y, tau, k, strategy="lobpcg")
    assert res.lobpcg_dtype == np.float32 and res.n_iter > 0
    # float32 copies of the values exist exactly when the products accumulated in float32
    assert (it._xdata._single is not None) == single
    assert (it._ycross._m_single is not None) == (cross == "factored" and single)
    assert it._ycross.accumulates_single() == single
    assert (it._ycross._dense is None) == (cross == "factored")
    assert it._warm.X.dtype == np.float64  # the final block, kept warm with its images
    ref = dense.solve(Y, tau, k).correlations
    np.testing.assert_allclose(res.correlations, ref, rtol=tol)
    Cxx, Cyy, _ = covariances(X, Y, tau, center=center)
    A, B = res.x_weights, res.y_weights
    assert A.dtype == B.dtype == np.float64
    # the engine centres implicitly (X^T X - n mu mu^T, in float64 here): its rounding is
    # amplified as much as the float32 products' would be
    amp = it._xdata.centring_amplification()
    np.testing.assert_allclose(A.T @ Cxx @ A, np.eye(k), atol=max(1e3, 10 * amp) * EPS)
    np.testing.assert_allclose(B.T @ Cyy @ B, np.eye(k), atol=1e3 * EPS)
    # below the threshold the same call stays in float64
    _, it64 = _engine_pair(X, Y, tol=active().lobpcg_single_tol / 2)
    assert it64.solve(Y, tau, k, strategy="lobpcg").lobpcg_dtype == np.float64


def test_single_precision_whitener_matches_float64():
    """The dense Cholesky whitener in float32 (its own triangular solves) and a randomized
    one (float64, rounded) against their float64 selves."""
    X, Y = count_problem(600, 120, 300, seed=3)
    eng = CCAEngine(X, Y, solver="randomized", random_state=0)
    rng = np.random.default_rng(2)
    for inv in (eng.y_inverse(0.3), eng.x_inverse(0.3, rank=20, tail="diagonal")):
        W = inv.inv_sqrt()
        Ws = in_precision(W, np.float32)
        B = rng.standard_normal((inv.shape[0], 5))
        assert Ws.dtype == np.float32
        for got, want in ((Ws.matmat(B), W.matmat(B)), (Ws.rmatmat(B), W.rmatmat(B))):
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=0,
                                       atol=1e3 * np.finfo(np.float32).eps * np.abs(want).max())


def test_rank_deficient_cross_covariance():
    """M of rank 5 with 40 columns: the null directions of K must not pollute the block."""
    X, Y = count_problem(900, 240, 40, seed=11)
    M = np.hstack([Y.toarray()[:, :5]] * 8)
    dense, it = _engine_pair(X, Y, tol=1e-12)
    res = it.solve(M, 0.4, 5, strategy="lobpcg")
    np.testing.assert_allclose(res.correlations, dense.solve(M, 0.4, 5).correlations,
                               rtol=1e-9)
    with pytest.raises(RankDeficientError, match=r"at most the number of nonzero canonical "
                                                 r"correlations \(5 here.*got 6") as info:
        it.solve(M, 0.4, 6, strategy="lobpcg")
    assert (info.value.rank, info.value.n_components) == (5, 6)
    assert isinstance(info.value, ValueError)


def test_unconverged_lobpcg_warns_and_auto_falls_back_to_full(set_thresholds):
    X, Y = count_problem(900, 240, 40, seed=15)
    # preconditioned by the low-rank model (with the exact factor two steps converge)
    set_thresholds(exact_precond_max=0)
    dense, it = _engine_pair(X, Y, tol=1e-12)
    set_thresholds(lobpcg_maxiter=2)
    with pytest.warns(RuntimeWarning, match=r"LOBPCG did not meet its stopping test in 2 "
                                            r"iterations: relative residual \S+ \(above "
                                            r"\S+\), error estimate .* \(above"):
        bad = it.solve(Y, 0.4, 6, strategy="lobpcg")
    # unconverged, the reported error is the first-order residual bound, not LOBPCG's
    # quadratic estimate
    assert not bad.lobpcg_converged
    c = bad.correlations
    # (or the ceiling of plain CCA's correlations, 1 / (1 - tau), when that bound is smaller)
    assert bad.ceiling_error == pytest.approx(1 - c[-1] * (1 - 0.4), rel=1e-12)
    assert bad.error_estimate == pytest.approx(
        min(np.max(bad.residual_norms / c), bad.ceiling_error), rel=1e-12)
    res = it.solve(Y, 0.4, 6)  # 'auto': the stalled LOBPCG hands over to block CG
    assert res.strategy == "full"
    np.testing.assert_allclose(res.correlations, dense.solve(Y, 0.4, 6).correlations,
                               rtol=1e-9)


def _stalling(monkeypatch, set_thresholds, maxiter=5):
    """LOBPCG preconditioned by the low-rank model (the dense factor is not given from the
    start) that stalls -- stops unconverged -- after ``maxiter`` steps, with the stall
    rescue on (min(n, d1) <= exact_precond_max); the rescue lifts the step budget."""
    set_thresholds(exact_precond_small=0, exact_precond_max=8192, lobpcg_maxiter=maxiter)
    exact_inverse = CCAEngine._exact_inverse

    def lifting(self, tau):
        set_thresholds(lobpcg_maxiter=300)
        return exact_inverse(self, tau)

    monkeypatch.setattr(CCAEngine, "_exact_inverse", lifting)


@pytest.mark.parametrize("solver", ["iterative", "randomized"])
def test_stalled_lobpcg_resumes_with_the_dense_factor(monkeypatch, set_thresholds, capsys,
                                                      solver):
    X, Y = count_problem(900, 240, 40, seed=15)
    tol = 1e-12 if solver == "iterative" else 1e-6
    dense = CCAEngine(X, Y, solver="dense")
    _stalling(monkeypatch, set_thresholds)
    eng = CCAEngine(X, Y, solver=solver, random_state=0, tol=tol, max_rank=32, verbose=1)
    assert not eng.exact_preconditioner_fits() and eng.exact_rescue_fits()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # converged after the rescue: no warning
        res = eng.solve(Y, 0.4, 6)
    # five steps under the model, then on from its block with the exact factor
    assert res.strategy == "lobpcg" and res.lobpcg_converged and res.n_iter > 5
    assert res.preconditioner == "low-rank, then dense" and res.rescued_after == 5
    np.testing.assert_allclose(res.correlations, dense.solve(Y, 0.4, 6).correlations,
                               rtol=10 * tol)
    assert res.error_estimate <= tol
    out = capsys.readouterr().out
    assert ("tau=0.4 LOBPCG too slow after 5 steps under the low-rank-plus-diagonal "
            "preconditioner (stalled, or its rate predicted more than 17 further steps); "
            "resuming with the dense factor of C_xx") in out
    # the same tau again: the factor is kept, so it preconditions from the start
    again = eng.solve(Y, 0.4, 6)
    assert again.preconditioner == "dense"
    np.testing.assert_allclose(again.correlations, res.correlations, rtol=10 * tol)
    # the estimator says so
    _stalling(monkeypatch, set_thresholds)
    model = SparseCCA(6, tau=0.4, solver=solver, random_state=0, tol=tol, max_rank=32)
    model.fit(X, Y)
    assert model.solver_reason_.endswith(
        "preconditioned by the low-rank-plus-diagonal model of C_xx^-1 until LOBPCG "
        "was too slow, then by the dense factor of C_xx")


def test_no_stall_rescue_beyond_its_size(monkeypatch, set_thresholds):
    X, Y = count_problem(900, 240, 40, seed=15)
    _stalling(monkeypatch, set_thresholds)
    set_thresholds(exact_precond_max=239)  # min(n, d1) = 240
    it = CCAEngine(X, Y, solver="iterative", random_state=0, tol=1e-12)
    assert not it.exact_rescue_fits()
    res = it.solve(Y, 0.4, 6)  # 'auto': block CG takes over, as without the rescue
    assert res.strategy == "full" and res.preconditioner == "low-rank"
    assert not it._xexact  # no dense factor was formed


def test_explicit_lobpcg_without_a_factor_has_no_hand_over():
    """An explicit 'lobpcg' with no dense factor offered has nowhere to hand over to: it
    runs to its step limit and warns; the inverse it was given stays the model."""
    X, Y = count_problem(900, 240, 40, seed=15)
    it = CCAEngine(X, Y, solver="iterative", random_state=0, tol=1e-12)
    xinv, yinv = it.x_inverse(0.4, rank=32, tail="diagonal"), it.y_inverse(0.4)
    cross = CrossCovariance(it._xdata, it.Y)
    with pytest.warns(RuntimeWarning, match="LOBPCG did not meet its stopping test"):
        res = reduced_cca(xinv, yinv, cross, 6, strategy="lobpcg", tol=1e-12,
                          thresholds=active().replace(lobpcg_maxiter=2))
    assert res.n_iter == 2 and not xinv.exact_preconditioner
    assert res.strategy == "lobpcg" and not res.lobpcg_converged
    assert "rescued_after" not in res.__dict__


def test_resumed_lobpcg_that_hands_over_again_falls_back_to_block_cg():
    """'auto' with the dense factor offered: out of steps under the model, then again under
    the factor, the solve ends in 'full' (block CG preconditioned by the factor)."""
    X, Y = count_problem(900, 240, 40, seed=15)
    it = CCAEngine(X, Y, solver="iterative", random_state=0, tol=1e-12)
    xinv, yinv = it.x_inverse(0.4, rank=32, tail="diagonal"), it.y_inverse(0.4)
    res = reduced_cca(xinv, yinv, CrossCovariance(it._xdata, it.Y), 6, tol=1e-12,
                      exact=it._exact_inverse(0.4),
                      thresholds=active().replace(lobpcg_maxiter=2))
    assert res.strategy == "full" and res.rescued_after == 2 and res.n_iter > 4
    assert not xinv.exact_preconditioner
    dense = CCAEngine(X, Y, solver="dense").solve(Y, 0.4, 6)
    np.testing.assert_allclose(res.correlations, dense.correlations, rtol=1e-10)


def test_predicted_steps_against_counting_the_geometric_decay():
    thresh = 1e-6
    for rate in (0.3, 0.5, 0.9):
        # a plateau, then steady progress at ``rate`` (the best value so far counts)
        history = [0.5, 0.7, 0.6] + [0.5 * rate ** i for i in range(1, 16)]
        predicted = stopping_mod._predicted_steps(history, thresh, window=10)
        r, steps = history[-1], 0
        while r > thresh:  # count the steps of the same decay
            r *= rate
            steps += 1
        assert steps - 1 < predicted <= steps
    assert stopping_mod._predicted_steps([0.1] * 12 + [0.2], thresh, window=10) == np.inf
    assert stopping_mod._predicted_steps([0.1] * 12 + [1e-7], thresh, window=10) == 0.0


def _handing_over(steps, give_factor=True, strategy="lobpcg"):
    """reduced_cca under the low-rank model with ``exact`` forming the dense factor (or
    none offered, ``give_factor=False``); the hand-over rule measures the rate over 3 steps
    and hands over when it predicts more than ``steps`` further steps.  Returns the result,
    the calls of ``exact`` and ``xinv``."""
    X, Y = count_problem(900, 240, 40, seed=15)
    it = CCAEngine(X, Y, solver="iterative", random_state=0, tol=1e-12)
    xinv, yinv = it.x_inverse(0.4, rank=32, tail="diagonal"), it.y_inverse(0.4)
    assert not xinv.exact_preconditioner
    calls = []

    def exact(n):
        calls.append(n)
        return it._exact_inverse(0.4)

    res = reduced_cca(xinv, yinv, CrossCovariance(it._xdata, it.Y), 6, strategy=strategy,
                      tol=1e-12, exact=exact if give_factor else None,
                      thresholds=active().replace(lobpcg_handover_window=3,
                                                  lobpcg_handover_steps=steps))
    dense = CCAEngine(X, Y, solver="dense").solve(Y, 0.4, 6)
    np.testing.assert_allclose(res.correlations, dense.correlations, rtol=1e-10)
    return res, calls, xinv


def test_lobpcg_hands_over_when_its_rate_predicts_more_steps_than_the_rule_allows():
    # no further step allowed: handed over as soon as the rate is measured (3 steps)
    res, calls, xinv = _handing_over(0)
    assert calls == [3] and res.rescued_after == 3 and res.lobpcg_converged
    assert res.lobpcg_error <= 1e-12
    assert not xinv.exact_preconditioner  # the solve's own copy had the factor
    # a generous count: LOBPCG converges under the model (19 steps), never asking
    res, calls, _ = _handing_over(10 ** 9)
    assert calls == [] and "rescued_after" not in res.__dict__ and res.lobpcg_converged


def test_slow_lobpcg_without_a_factor_goes_on_under_the_model():
    """Without a dense factor to hand over to, slow progress is no hand-over: 'auto' goes
    on with LOBPCG under the model instead of falling back to block CG."""
    res, calls, xinv = _handing_over(0, give_factor=False, strategy="auto")
    assert calls == [] and res.strategy == "lobpcg" and res.lobpcg_converged
    assert "rescued_after" not in res.__dict__ and not xinv.exact_preconditioner


def test_hand_over_is_reproducible_and_keeps_the_factor(monkeypatch, set_thresholds):
    """The hand-over is a count of steps (no clock): a fit that hands over gives
    bit-identical weights when repeated; the factor formed for it is kept for its tau."""
    _stalling(monkeypatch, set_thresholds, maxiter=300)
    set_thresholds(lobpcg_handover_window=3, lobpcg_handover_steps=0)
    X, Y = count_problem(900, 240, 40, seed=15)
    runs = []
    for _ in range(2):
        eng = CCAEngine(X, Y, solver="iterative", random_state=0, tol=1e-12, max_rank=32)
        assert 0.4 not in eng._xexact
        runs.append(eng.solve(Y, 0.4, 6))
        assert runs[-1].rescued_after == 3
        assert 0.4 in eng._xexact
    assert runs[0].preconditioner == "low-rank, then dense"
    np.testing.assert_array_equal(runs[0].x_weights, runs[1].x_weights)
    np.testing.assert_array_equal(runs[0].y_weights, runs[1].y_weights)


def test_warm_start_from_the_previous_block():
    X, Y = count_problem(900, 240, 40, seed=19)
    dense, it = _engine_pair(X, Y, tol=1e-12)
    first = it.solve(Y, 0.4, 6)
    again = it.solve(Y, 0.4, 6)  # starts from the converged block: nothing left to do
    assert first.n_iter > 0 and again.n_iter == 0
    np.testing.assert_allclose(again.correlations, first.correlations, rtol=1e-12)
    # finished from the kept images alone (no product with X): still exactly orthonormal
    Cxx, Cyy, _ = covariances(X, Y, 0.4)
    np.testing.assert_allclose(again.x_weights.T @ Cxx @ again.x_weights, np.eye(6),
                               atol=1e3 * EPS)
    np.testing.assert_allclose(again.y_weights.T @ Cyy @ again.y_weights, np.eye(6),
                               atol=1e3 * EPS)
    warm = it._warm
    np.testing.assert_allclose(warm.GX, X.T @ (X @ warm.X), rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match=r"start must be a WarmBlock of a \(240, 40\) problem, "
                                         r"got one of \(240, 41\)"):
        reduced_cca(it.x_inverse(0.4, rank=32, tail="diagonal"), it.y_inverse(0.4),
                    CrossCovariance(it._xdata, it.Y), 6, strategy="lobpcg",
                    start=lobpcg_mod.WarmBlock(warm.X, warm.GX, np.zeros((41, 1)), None))
    # a tau grid warm-starts each tau from the previous one and still matches dense
    path = cca_path(X, Y, [0.2, 0.6, 0.9], 6, solver="iterative", tol=1e-12, random_state=0)
    for tau, res in zip([0.2, 0.6, 0.9], path):
        np.testing.assert_allclose(res.correlations, dense.solve(Y, tau, 6).correlations,
                                   rtol=1e-9)
    # a full-width start replaces LOBPCG's own guess, a narrower one joins it: even a
    # random block of either width only costs steps, never accuracy
    ref = dense.solve(Y, 0.4, 6).correlations
    xinv, yinv = it.x_inverse(0.4, rank=32, tail="diagonal"), it.y_inverse(0.4)
    cross = CrossCovariance(it._xdata, it.Y)
    m = 6 + lobpcg_mod._default_oversamples(6)
    rng = np.random.default_rng(3)
    for width in (m, 2):
        res = reduced_cca(xinv, yinv, cross, 6, strategy="lobpcg", tol=1e-12,
                          start=rng.standard_normal((X.shape[1], width)))
        assert res.n_iter > 0
        np.testing.assert_allclose(res.correlations, ref, rtol=1e-9)


def test_progress_callback_sees_every_convergence_check():
    X, Y = count_problem(900, 240, 40, seed=19)
    it = CCAEngine(X, Y, solver="iterative", random_state=0, tol=1e-10)
    xinv, yinv = it.x_inverse(0.4, rank=32, tail="diagonal"), it.y_inverse(0.4)
    cross = CrossCovariance(it._xdata, it.Y)
    seen = []
    res = reduced_cca(xinv, yinv, cross, 6, strategy="lobpcg", tol=1e-10,
                      callback=lambda *a: seen.append(a))
    steps = [s for s, _, _ in seen]
    assert steps == list(range(res.n_iter + 1)) and res.n_iter > 0
    # the last check is the one that stopped LOBPCG: both quantities reached their targets
    _, residual, error = seen[-1]
    assert residual == res.lobpcg_residual <= np.sqrt(1e-10)
    assert error == res.lobpcg_error <= 1e-10
    assert all(r > np.sqrt(1e-10) or e > 1e-10 for _, r, e in seen[:-1])


@pytest.mark.parametrize("solver", ["iterative", "randomized"])
def test_verbose_reports_progress_and_changes_nothing(capsys, solver):
    X, Y = count_problem(900, 240, 40, seed=19)
    kw = dict(tau=0.4, solver=solver, random_state=0, max_rank=32)
    quiet = SparseCCA(6, **kw).fit(X, Y)
    assert capsys.readouterr().out == ""
    loud = SparseCCA(6, verbose=2, **kw).fit(X, Y)
    out = capsys.readouterr().out.splitlines()
    np.testing.assert_array_equal(loud.x_weights_, quiet.x_weights_)
    np.testing.assert_array_equal(loud.correlations_, quiet.correlations_)
    assert all(line.startswith("[sparsecca] ") for line in out)
    assert f"solver '{solver}' (requested)" in out[0] and "Y 900 x 40" in out[0]
    assert any("C_yy^-1 (dense, 40 x 40)" in line for line in out)
    # verbose=2: every LOBPCG convergence check, then the outcome
    steps = [line for line in out if re.search(r"LOBPCG step \d+:", line)]
    assert len(steps) == quiet.n_iter_ + 1
    assert out[-1].startswith(f"[sparsecca] tau=0.4 done: 6 components (lobpcg, "
                              f"{quiet.n_iter_} LOBPCG steps), top correlation "
                              f"{quiet.correlations_[0]:.4f}")
    # verbose=1: every 10th check only
    SparseCCA(6, verbose=1, **kw).fit(X, Y)
    steps1 = [line for line in capsys.readouterr().out.splitlines()
              if re.search(r"LOBPCG step \d+:", line)]
    assert len(steps1) == quiet.n_iter_ // 10 + 1


def test_bad_start_block_is_refused():
    from sparsecca.linalg._gram import _DataMatrix
    from sparsecca.linalg._inverse import RegularizedInverse

    X, Y = count_problem(700, 200, 30, seed=21)
    xinv = RegularizedInverse(X, 0.3, "iterative", rank=8)
    yinv = RegularizedInverse(Y, 0.3, "dense")
    cross = CrossCovariance(_DataMatrix(X, False), Y)
    with pytest.raises(ValueError, match=r"start must be a finite \(d1, b\) = \(200, b\) "
                                         r"array, got shape \(199, 4\)"):
        reduced_cca(xinv, yinv, cross, 5, strategy="lobpcg", start=np.ones((199, 4)))
    bad = np.ones((200, 4))
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="start must be a finite"):
        reduced_cca(xinv, yinv, cross, 5, strategy="lobpcg", start=bad)


def test_lobpcg_refuses_what_it_cannot_do():
    X, Y = count_problem(300, 60, 20, seed=16)
    e = CCAEngine(X, Y, solver="dense")
    with pytest.raises(ValueError, match=r"strategy='lobpcg' needs an iterative or "
                                         r"randomized xinv"):
        e.solve(Y, 0.3, 4, strategy="lobpcg")
    it = CCAEngine(X, Y, solver="iterative", random_state=0)
    # k + p = 20 columns, 4 x 20 > d1 = 60: the basis would not be thin
    with pytest.raises(ValueError, match=r"a block of k \+ p = 20 columns with 4 \(k \+ p\) "
                                         r"<= d1 = 60"):
        it.solve(Y, 0.3, 10, strategy="lobpcg")
    # 'auto' picks block CG there
    assert it.solve(Y, 0.3, 10).strategy == "full"


def test_sparsecca_iterative_uses_lobpcg_and_a_small_preconditioner():
    X, Y = count_problem(1200, 300, 40, seed=17)
    res = CCAEngine(X, Y, solver="iterative", random_state=0).solve(Y, 0.5, 10)
    assert res.strategy == "lobpcg" and res.rank == 32 and 0 < res.n_iter < 200
    m = SparseCCA(10, tau=0.5, solver="iterative", random_state=0).fit(X, Y)
    d = SparseCCA(10, tau=0.5, solver="dense").fit(X, Y)
    assert m.rank_ == 32 and m.n_iter_ == res.n_iter
    np.testing.assert_allclose(m.correlations_, d.correlations_, rtol=1e-6)


def test_preconditioner_choice_by_shape():
    # n < d1: rank 128 with the diagonal tail (RegularizedInverse's 'auto' would pick the
    # identity tail there, which LOBPCG converges badly with)
    X, Y = count_problem(300, 700, 30, seed=20)
    it = CCAEngine(X, Y, solver="iterative", random_state=0)
    res = it.solve(Y, 0.5, 5)
    assert res.strategy == "lobpcg"
    (tau, rank, tail), inv = next(iter(it._xinv.items()))
    assert (rank, tail, inv.tail) == (128, "diagonal", "diagonal")
    d = CCAEngine(X, Y, solver="dense").solve(Y, 0.5, 5)
    np.testing.assert_allclose(res.correlations, d.correlations, rtol=1e-6)
    # block CG keeps the 'auto' tail
    it.solve(Y, 0.5, 5, strategy="full")
    (_, rank, tail), inv = next(iter(it._xinv.items()))
    assert (rank, tail, inv.tail) == (128, "auto", "identity")


def test_reduced_cca_with_a_raw_iterative_inverse():
    """The low-level entry point with hand-built operators (what the rerankers call)."""
    from sparsecca.linalg._gram import _DataMatrix
    from sparsecca.linalg._inverse import RegularizedInverse

    X, Y = count_problem(700, 200, 30, seed=18)
    xinv = RegularizedInverse(X, 0.3, "iterative", rank=8)
    yinv = RegularizedInverse(Y, 0.3, "dense")
    cross = CrossCovariance(_DataMatrix(X, False), Y)
    res = reduced_cca(xinv, yinv, cross, 5, strategy="lobpcg", tol=1e-12)
    Cxx, Cyy, Cxy = covariances(X, Y, 0.3)
    sig, _, _ = eigh_reference(Cxx, Cyy, Cxy, 5)
    np.testing.assert_allclose(res.correlations, sig, rtol=1e-9)


# -- the thread-split products ----------------------------------------------------------------

def _two_threads():
    return 2  # exercise the threaded path even on a one-core runner


@pytest.fixture(autouse=True)
def _pinned_blas(monkeypatch):
    # the split runs threaded only where BLAS is held to one thread (inside small_blas)
    monkeypatch.setattr(split_mod, "blas_pinned", lambda: True)


def test_split_products_do_not_depend_on_the_thread_count(monkeypatch):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((30001, 70))
    B = rng.standard_normal((70, 60))
    C = rng.standard_normal((30001, 60))
    out = {}
    for threads in (lambda: 1, _two_threads):
        monkeypatch.setattr(split_mod, "n_split_threads", threads)
        out[threads()] = (tall_matmul(A, B), tall_tmatmul(A, C))
    for one, two in zip(out[1], out[2]):
        np.testing.assert_array_equal(one, two)
    # and they are the plain products up to the rounding of a length-70 / length-d dot
    ab, atc = out[2]
    assert np.all(np.abs(ab - A @ B) <= 70 * EPS * (np.abs(A) @ np.abs(B)))
    assert np.all(np.abs(atc - A.T @ C) <= A.shape[0] * EPS * (np.abs(A).T @ np.abs(C)))


def test_run_pair_propagates_errors_from_either_side(monkeypatch):
    monkeypatch.setattr(split_mod, "n_split_threads", _two_threads)

    def boom():
        raise ValueError("worker side")

    with pytest.raises(ValueError, match="worker side"):
        run_pair(boom, lambda: 1)
    with pytest.raises(KeyError):
        run_pair(lambda: 1, lambda: {}["main side"])
    assert run_pair(lambda: 1, lambda: 2) == (1, 2)


def _in_thread_with_timeout(fn, seconds=60):
    """Run fn on a daemon thread; fail (instead of hanging the suite) if it deadlocks."""
    out = {}

    def target():
        out["value"] = fn()

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"deadlocked: still running after {seconds} s"
    return out["value"]


def test_nested_run_pair_does_not_deadlock(monkeypatch):
    monkeypatch.setattr(split_mod, "n_split_threads", _two_threads)
    A = np.random.default_rng(2).standard_normal((50000, 60))
    B = np.random.default_rng(3).standard_normal((60, 40))
    # a split product inside the worker's half, and one inside the caller's
    a, b = _in_thread_with_timeout(
        lambda: run_pair(lambda: tall_matmul(A, B), lambda: tall_tmatmul(A, A)))
    np.testing.assert_allclose(a, A @ B, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(b, A.T @ A, rtol=1e-12, atol=1e-8)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_split_products_work_in_a_forked_child(monkeypatch):
    monkeypatch.setattr(split_mod, "n_split_threads", _two_threads)
    A = np.random.default_rng(4).standard_normal((50000, 60))
    B = np.ones((60, 40))
    ref = tall_matmul(A, B)  # the pool and its worker exist now
    pid = os.fork()
    if pid == 0:  # the child must not wait on the parent's (absent) worker thread
        ok = np.array_equal(tall_matmul(A, B), ref)
        os._exit(0 if ok else 3)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung in a split product")


def test_blas_pinned_tracks_small_blas_regions(monkeypatch):
    from sparsecca.linalg import _threads as val

    monkeypatch.undo()  # the module's autouse _pinned_blas

    if val._CONTROLLER is None:
        pytest.skip("threadpoolctl is not installed: small_blas does not pin BLAS")
    assert not val.blas_pinned()
    with val.small_blas(10):
        assert val.blas_pinned()
        with val.small_blas(10**9):  # a large inner region does not unpin the outer one
            assert val.blas_pinned()
    with val.small_blas(10**9):
        assert not val.blas_pinned()
    assert not val.blas_pinned()


def test_wide_blas_threads_a_big_solve_only_when_no_split_thread_runs(monkeypatch):
    from sparsecca.linalg import _threads
    from sparsecca.linalg import _threads as val

    if val._CONTROLLER is None:
        pytest.skip("threadpoolctl is not installed: small_blas does not pin BLAS")
    monkeypatch.setattr(_threads, "n_split_threads", lambda: 2)

    def blas_threads():
        return min(lib["num_threads"] for lib in val._CONTROLLER.info()
                   if lib["user_api"] == "blas")

    with val.small_blas(10):
        assert blas_threads() == 1
        with _threads.wide_blas():
            assert blas_threads() == 2
        assert blas_threads() == 1
        # beside a split thread (either side of run_pair) it stays at one
        seen = _threads.run_pair(lambda: _wide_threads(_threads, blas_threads),
                               lambda: _wide_threads(_threads, blas_threads))
        assert seen == (1, 1)


@pytest.mark.parametrize("solver,pinned", [("randomized", True), ("iterative", True),
                                           ("dense", False)])
def test_fast_solvers_run_in_a_pinned_region_where_big_factors_go_wide(solver, pinned,
                                                                       monkeypatch):
    """The randomized and iterative solves hold BLAS to one thread (no idle OpenBLAS
    thread spinning beside the split sparse products); a mid-size dense factor still gets
    both cores inside it; the dense reference keeps the global setting."""
    from sparsecca.linalg import _cca, _inverse, _threads
    from sparsecca.linalg import _threads as val

    monkeypatch.undo()  # the module's autouse _pinned_blas
    if val._CONTROLLER is None:
        pytest.skip("threadpoolctl is not installed: small_blas does not pin BLAS")
    monkeypatch.setattr(_threads, "n_split_threads", lambda: 2)
    seen = []
    real = _cca.CCAEngine._solve_with

    def spy(self, *args):
        seen.append(val.blas_pinned())
        return real(self, *args)

    monkeypatch.setattr(_cca.CCAEngine, "_solve_with", spy)
    X, Y = count_problem(300, 40, 12, seed=3)
    CCAEngine(X, Y, solver=solver, random_state=0).solve(Y, 0.5, 3)
    assert seen == [pinned]
    with val.small_blas(0):
        with _inverse._dense_threads(8000):  # SMALL_BLAS_MAX < d < DENSE_SINGLE_THREAD_MIN
            assert min(lib["num_threads"] for lib in val._CONTROLLER.info()
                       if lib["user_api"] == "blas") == 2
        with _inverse._dense_threads(100):
            assert val.blas_pinned()


def _wide_threads(split, blas_threads):
    with split.wide_blas():
        return blas_threads()


@pytest.mark.parametrize("solver", ["randomized", "iterative"])
def test_tau_grid_reuses_x_transpose_y_and_matches_dense(solver):
    X, Y = count_problem(1500, 400, 30, seed=23)
    taus = [0.1, 0.5, 0.9]
    engine = CCAEngine(X, Y, solver=solver, random_state=0, max_rank=48)
    first = engine.solve(engine.Y, taus[0], 5)
    cross = engine._ycross
    rest = [engine.solve(engine.Y, tau, 5) for tau in taus[1:]]
    assert cross is not None and engine._ycross is cross  # one X^T Y for the grid
    dense = CCAEngine(X, Y, solver="dense")
    rtol = 1e-3 if solver == "randomized" else 1e-6
    for tau, res in zip(taus, [first] + rest):
        ref = dense.solve(Y, tau, 5).correlations
        np.testing.assert_allclose(res.correlations, ref, rtol=rtol)
    # a different M gets its own operator
    M = Y.copy()
    engine.solve(M, 0.5, 5)
    assert engine._ycross is cross
    # the caller's own Y object (not engine.Y, which check_matrix made) is plain CCA too
    assert Y is not engine.Y
    again = engine.solve(Y, taus[0], 5)
    assert engine._ycross is cross
    np.testing.assert_allclose(again.correlations, first.correlations, rtol=rtol)


def test_ceiling_certifies_saturated_correlations():
    """Plain CCA's correlations are at most 1 / (1 - tau); with n < d1 the top ones sit just
    below that cap (exact linear relations between the views), where LOBPCG's residuals
    converge slowly.  Ritz values are lower bounds, so a k-th one near the cap certifies
    every correlation: LOBPCG stops sooner, and the reported bound holds against dense."""
    X, Y = count_problem(300, 1200, 80, seed=3)
    tau, k = 1e-3, 8
    ref = CCAEngine(X, Y, solver="dense").solve(Y, tau, k).correlations
    assert np.all(1 - ref * (1 - tau) < 1e-4)  # saturated: the test's premise
    eng = CCAEngine(X, Y, solver="randomized", random_state=0)
    res = eng.solve(Y, tau, k, strategy="lobpcg")
    rel = np.abs(res.correlations - ref) / ref
    assert res.ceiling_error == pytest.approx(1 - res.correlations[-1] * (1 - tau), rel=1e-12)
    assert np.all(rel <= res.ceiling_error + 1e3 * EPS)  # a bound, not an estimate
    assert res.error_estimate <= res.ceiling_error <= eng.tol
    # the same solve without the cap takes more steps to its residual test
    xinv, yinv = eng.x_inverse(tau, rank=32, tail="diagonal"), eng.y_inverse(tau)
    cross = CrossCovariance(eng._xdata, eng.Y)
    free = reduced_cca(xinv, yinv, cross, k, strategy="lobpcg", tol=eng.tol)
    capped = reduced_cca(xinv, yinv, cross, k, strategy="lobpcg", tol=eng.tol,
                         omega_max=1 / (1 - tau) ** 2)
    assert "ceiling_error" not in free.__dict__
    assert capped.n_iter < free.n_iter
    np.testing.assert_allclose(capped.correlations, ref, rtol=eng.tol)
    # another cross-covariance factor than Y has no such cap: the engine gives none
    other = eng.solve(2.0 * Y, tau, k, strategy="lobpcg")
    assert "ceiling_error" not in other.__dict__


def _zipf_rows(n, d, per_row, seed):
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, d + 1)
    rows = np.repeat(np.arange(n), per_row)
    cols = rng.choice(d, size=rows.size, p=p / p.sum())
    return sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, d))


@pytest.mark.parametrize("seed", [0, 1])
def test_estimate_waits_for_a_settled_gap(seed):
    """n < d1 and centred: the correlations pile up below the ceiling 1 / (1 - tau) in a
    cluster wider than the block, which the buffer Ritz values have not found after one step;
    the gap to them then looked large, and the squared residual over it claimed 5e-4 where
    the correlations were 7e-3 off.  The last step's rise (120x the estimate) now holds
    LOBPCG until the gap is settled, and the estimate covers the error."""
    n, d1, d2, k, tau = 400, 700, 40, 5, 0.3
    X = _zipf_rows(n, d1, 14, seed=1)
    mixed = X[:, :d2 // 2] @ sp.random(d2 // 2, d2 // 2, density=0.3, random_state=2)
    Y = sp.hstack([mixed, _zipf_rows(n, d2 - d2 // 2, 2, seed=3)]).tocsr()
    Cxx, Cyy, Cxy = covariances(X, Y, tau, center=True)
    ref = eigh_reference(Cxx, Cyy, Cxy, k)[0]
    assert 1 - ref[-1] * (1 - tau) < 0.005  # the premise: saturated, n < d1
    res = CCAEngine(X, Y, solver="randomized", center=True, random_state=seed).solve(
        Y, tau, k, strategy="lobpcg")
    rel = np.abs(res.correlations - ref) / ref
    assert rel.max() <= res.error_estimate <= 1e-3


def test_indefinite_preconditioner_leaves_the_residual_unknown():
    # r^T T r < 0 beyond rounding: T is not positive definite in the working precision, and
    # its norm is no residual (once clipped to 0: converged, with an error estimate of 0)
    rng = np.random.default_rng(0)
    R = rng.standard_normal((50, 3)).astype(np.float32)
    W = R.copy()
    W[:, 1] *= -1.0
    # orthogonal to r, less a rounding-level share of it: r^T w ~ -0.1 eps |r| |w| is 0
    r = R[:, 2].astype(np.float64)
    v = rng.standard_normal(50)
    v -= (v @ r) / (r @ r) * r
    W[:, 2] = v - 0.1 * np.finfo(np.float32).eps * np.linalg.norm(v) / np.linalg.norm(r) * r
    rn = lobpcg_mod._preconditioned_norms(R, W)
    np.testing.assert_allclose(rn[0], np.linalg.norm(R[:, 0]), rtol=1e-6)
    assert rn[1] == np.inf and rn[2] == 0.0


def test_unmet_stopping_test_names_the_part_that_failed():
    # a saturated cluster: the residual within its target, the squared residual over a tiny
    # gap not (the warning once claimed the residual target was missed, quoting a residual
    # below it)
    msg = stopping_mod._unmet(1.36e-4, 3.2e-4, 2.2e-5, 1e-7)
    assert msg == ("relative residual 0.000136 (within 0.00032), error estimate (squared "
                   "residual over the gap) 2.2e-05 (above 1e-07)")
    assert "(above 0.00032)" in stopping_mod._unmet(1e-3, 3.2e-4, 1e-9, 1e-7)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("tau", [0.1, 0.9])
def test_exact_norm_bounds_enclose_the_dense_norm(dtype, tau):
    """_exact_norm_bounds (certify): at every CG step lower <= r^T C^-1 r <= upper (dense
    reference), and both close in on it as CG converges."""
    X, _ = count_problem(60, 25, 5, seed=3)[:2]
    X = sp.csr_matrix(X)
    C = RegularizedGram(X, tau)
    Cd = (1.0 - tau) * (X.T @ X).toarray() + tau * np.eye(X.shape[1])
    rng = np.random.default_rng(0)
    R = rng.standard_normal((X.shape[1], 4)).astype(dtype)
    exact = np.einsum("ij,ij->j", R.astype(np.float64), np.linalg.solve(Cd, R.astype(np.float64)))
    diag = 1.0 / np.diag(Cd)  # a crude preconditioner: CG needs several steps

    def precond(B):
        return B * diag[:, None]

    seen = []

    def judge(n2, bound):
        seen.append((bound, n2.copy()))
        return None

    lower, upper, steps, verdict = lobpcg_mod._exact_norm_bounds(
        C, precond, R, precond(R), tau, dtype, judge, maxsteps=30)
    assert verdict is None and steps == 30
    slack = 1e-4 if dtype == np.float32 else 1e-10
    for bound, n2 in seen:
        if bound == "lower":
            assert np.all(n2 <= exact * (1 + slack)), (n2, exact)
        else:
            assert np.all(n2 >= exact * (1 - slack)), (n2, exact)
    np.testing.assert_allclose(lower, exact, rtol=100 * slack)
    np.testing.assert_allclose(upper, exact, rtol=100 * slack)
    # the first bounds (before any CG step) are loose: the check needs the steps
    assert np.max(seen[1][1] / exact) > 1.01


def test_certify_verdicts_stop_the_check():
    """A verdict ends the check at once: True from the upper bounds certifies, False from the
    lower bounds refutes; the steps taken are returned."""
    X, _ = count_problem(60, 25, 5, seed=3)[:2]
    C = RegularizedGram(sp.csr_matrix(X), 0.5)
    R = np.random.default_rng(1).standard_normal((25, 3))
    for answer, bound in ((True, "upper"), (False, "lower")):
        calls = []

        def judge(n2, b, answer=answer, bound=bound, calls=calls):
            calls.append(b)
            return answer if (b == bound and len(calls) > 4) else None

        *_, steps, verdict = lobpcg_mod._exact_norm_bounds(
            C, lambda B: B, R, R.copy(), 0.5, np.float64, judge)
        assert verdict is answer and 0 < steps <= 3


def test_certify_gives_up_when_the_exact_norms_do_not_fall(monkeypatch):
    """A check whose lower bounds never fall (faked: all of en-brown's pattern, where the
    exact norms stayed put while the model's fell) ends LOBPCG after certify_stall_steps
    with a warning that names certify and the way out, not at the step limit; the
    estimate is then the first-order bound, which is not claimed to meet tol."""
    X, Y = count_problem(900, 240, 40, seed=14)
    real = lobpcg_mod._exact_norm_bounds
    first = []

    def stuck(C, precond, R, W, tau, dtype, judge, **kw):
        lower, upper, steps, _ = real(C, precond, R, W, tau, dtype, lambda n2, b: None,
                                      maxsteps=3)
        first.append(4.0 * float(lower.max()) if not first else first[0])
        lower = np.full_like(lower, first[0])
        return lower, np.full_like(upper, np.inf), steps, judge(lower, "lower")

    monkeypatch.setattr(lobpcg_mod, "_exact_norm_bounds", stuck)
    engine = CCAEngine(X, Y, solver="iterative", preconditioner="low-rank", certify=True,
                       random_state=0)
    with pytest.warns(RuntimeWarning, match=r"certify's check in the exact C_xx\^-1 norm.*"
                                            r"solver='iterative' or preconditioner='dense'"):
        res = engine.solve(Y, 0.4, 6, strategy="lobpcg")
    assert len(first) >= 2
    assert active().certify_stall_steps <= res.n_iter < active().lobpcg_maxiter
    assert not res.lobpcg_converged
