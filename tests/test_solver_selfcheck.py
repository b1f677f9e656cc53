"""Solver self-checks: every path that returns correlations meets its tolerance by its own
residual test, or says so (a RuntimeWarning, an error, or the recorded estimate of a
deliberately approximate model).  Each path is given a deliberately bad inverse or
preconditioner: a randomized model of C_xx of far too low a rank, or LOBPCG with too few
steps."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from sparsecca.linalg import CrossCovariance, SparseCCA, cca_path
from sparsecca.linalg._inverse import RegularizedInverse
from sparsecca.linalg._reduced import reduced_cca

TAU = 0.01


@pytest.fixture(scope="module")
def views():
    X = sp.random(400, 200, density=0.05, format="csr", random_state=0)
    Y = sp.random(400, 30, density=0.2, format="csr", random_state=1)
    return X, Y


def _caught(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def test_reduced_cca_warns_when_its_residuals_miss_tol(views):
    # finding 5: a randomized inverse of rank 5 (of 200) gave correlations far below the
    # exact ones, with only residual_norms showing it
    X, Y = views
    yinv, cross = RegularizedInverse(Y, TAU, "dense"), CrossCovariance(X, Y)
    exact = reduced_cca(RegularizedInverse(X, TAU, "dense"), yinv, cross, 5)
    bad_inv = RegularizedInverse(X, TAU, "randomized", rank=5, random_state=0)
    bad, msgs = _caught(lambda: reduced_cca(bad_inv, yinv, cross, 5))
    assert bad.correlations[0] < 0.95 * exact.correlations[0]  # a wrong answer ...
    assert any("reduced_cca: estimated relative error" in m and "> tol" in m for m in msgs)
    assert bad.error_estimate > 1e-8
    from sparsecca.linalg import SolverToleranceError

    with pytest.raises(SolverToleranceError, match="estimated relative error"):
        reduced_cca(bad_inv, yinv, cross, 5, self_check="raise")
    _, msgs = _caught(lambda: reduced_cca(bad_inv, yinv, cross, 5, self_check="off"))
    assert not any("reduced_cca" in m for m in msgs)


def test_reduced_cca_exact_solve_passes_its_self_check(views):
    X, Y = views
    res, msgs = _caught(lambda: reduced_cca(RegularizedInverse(X, TAU, "dense"),
                                            RegularizedInverse(Y, TAU, "dense"),
                                            CrossCovariance(X, Y), 5))
    assert not msgs and res.error_estimate <= 1e-8


def test_reduced_cca_self_check_argument_is_checked(views):
    X, Y = views
    with pytest.raises(ValueError, match="self_check"):
        reduced_cca(RegularizedInverse(X, TAU, "dense"), RegularizedInverse(Y, TAU, "dense"),
                    CrossCovariance(X, Y), 2, self_check="loud")


def _exact(X, Y, k):
    return SparseCCA(n_components=k, tau=TAU, solver="dense").fit(X, Y).correlations_


@pytest.fixture
def few_lobpcg_steps():
    """A deliberately bad solve: LOBPCG gets 2 steps (its fallbacks remain)."""
    from sparsecca.linalg._thresholds import active, applied

    with applied(active().replace(lobpcg_maxiter=2)):
        yield


def _meets_or_says(corr, exact, estimate, tol, msgs):
    """The self-check property: within tol by its own estimate (and then really within
    it, up to the estimate's first-order slack), or a warning said it was not."""
    if estimate <= tol:
        assert np.allclose(corr, exact[:corr.size], rtol=max(10 * np.sqrt(tol), 1e-6))
        return "met"
    assert any("estimated relative error" in m or "stopping test" in m for m in msgs), msgs
    return "warned"


@pytest.mark.parametrize("solver", ["randomized", "iterative"])
def test_sparse_cca_meets_tol_or_warns(views, solver, few_lobpcg_steps):
    X, Y = views
    model = SparseCCA(n_components=5, tau=TAU, solver=solver, max_rank=5, tol=1e-10,
                      random_state=0)
    _, msgs = _caught(lambda: model.fit(X, Y))
    # reduced_cca's own check is off inside SparseCCA: never a second warning
    assert not any(m.startswith("reduced_cca") for m in msgs)
    _meets_or_says(model.correlations_, _exact(X, Y, 5), model.error_estimate_, 1e-10, msgs)


@pytest.mark.parametrize("solver", ["randomized", "iterative"])
def test_cca_path_meets_tol_or_warns(views, solver, few_lobpcg_steps):
    X, Y = views
    path, msgs = _caught(lambda: cca_path(X, Y, [TAU], 5, solver=solver, max_rank=5,
                                          tol=1e-10, random_state=0))
    _meets_or_says(path[0].correlations, _exact(X, Y, 5), path[0].error_estimate, 1e-10,
                   msgs)


def test_cca_path_dense_is_exact(views):
    X, Y = views
    path, msgs = _caught(lambda: cca_path(X, Y, [TAU, 0.1], 3, solver="dense"))
    assert not msgs


def test_cca_rerankers_record_their_error_estimate():
    # the rerankers' randomized solver is a deliberately approximate model (rank capped at
    # max_rank): its estimate is recorded in solver_error_ and reported by one warning per
    # fit (not per grid point); the dense solver meets any tolerance
    from sparsecca.data import synthetic_corpus, train_test_split
    from sparsecca.rerank import DiscriminativeReranker as CCAReranker
    from sparsecca.tagging import TrigramHMM, jackknife_nbest

    corpus = synthetic_corpus(160, random_state=0)
    train, dev = train_test_split(corpus, test_size=40, random_state=0)
    hmm = TrigramHMM().fit(train)
    tr = jackknife_nbest(TrigramHMM(), train, k=3, folds=2, random_state=0)
    dv = hmm.nbest(dev, k=3)
    from sparsecca.rerank import RerankerToleranceWarning

    with pytest.warns(RerankerToleranceWarning, match="solver_error_"):
        coarse = CCAReranker(n_components=4, tau=(0.9,), lam=(0.5,), solver="randomized",
                             max_rank=2, random_state=0).fit(tr, dv)
    assert coarse.solver_error_ is not None and coarse.solver_error_ > 1e-6
    exact = CCAReranker(n_components=4, tau=(0.9,), lam=(0.5,), solver="dense",
                        random_state=0).fit(tr, dv)
    assert exact.solver_error_ is None or exact.solver_error_ < 1e-6
