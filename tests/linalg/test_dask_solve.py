"""SparseCCA and CCAEngine on row-chunked Dask views, against the same fits in memory.

The Dask path reduces the statistics over the chunks and runs every product with the data as
a map-reduce over them; the in-memory dense solver is the independent reference (the fits
must agree to the solver's tolerance, signs included: they are deterministic)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from sparsecca.linalg import CCAEngine, SparseCCA

from .conftest import count_problem

da = pytest.importorskip("dask.array", reason="the dask extra is not installed")

UNEVEN = (100, 250, 7, 243)  # an odd small chunk among larger ones


def _problem(seed=22):
    X, Y = count_problem(600, 80, 15, seed=seed)
    return sp.hstack([X, X[:, :5]]).tocsr(), Y  # 5 duplicate columns to merge


def _dask(A, rows=UNEVEN):
    return da.from_array(A, chunks=(rows, -1), asarray=False)


def _scheduler():
    import dask

    return dask.config.set(scheduler="threads")


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("solver", ["dense", "iterative"])
def test_dask_fit_equals_the_in_memory_dense_fit(sparse, center, solver):
    X, Y = _problem()
    if not sparse:
        X, Y = X.toarray(), Y.toarray()
    ref = SparseCCA(5, tau=0.3, solver="dense", center=center).fit(X, Y)
    # the low-rank model preconditions LOBPCG: its C_xx products are the map-reduces
    with _scheduler():
        est = SparseCCA(5, tau=0.3, solver=solver, center=center,
                        preconditioner="low-rank", random_state=0).fit(_dask(X), _dask(Y))
        xs, ys = est.transform(_dask(X), _dask(Y))
        assert isinstance(xs, da.Array) and xs.chunks == (UNEVEN, (5,))
        xs, ys = xs.compute(), ys.compute()
    tol = 1e-12 if solver == "dense" else 1e-6
    np.testing.assert_allclose(est.correlations_, ref.correlations_, rtol=tol)
    np.testing.assert_allclose(est.x_weights_, ref.x_weights_, atol=np.sqrt(tol))
    np.testing.assert_allclose(est.y_weights_, ref.y_weights_, atol=np.sqrt(tol))
    rx, ry = ref.transform(X, Y)
    np.testing.assert_allclose(xs, rx, atol=np.sqrt(tol) * np.abs(rx).max())
    np.testing.assert_allclose(ys, ry, atol=np.sqrt(tol) * np.abs(ry).max())
    np.testing.assert_allclose(est.empirical_correlations_, ref.empirical_correlations_,
                               atol=np.sqrt(tol))
    assert est.n_features_in_ == 85 and est.n_merged_features_ == 80
    if center:
        np.testing.assert_allclose(est.x_mean_, np.asarray(X.mean(axis=0)).ravel())


def test_randomized_dask_fit_meets_tol_and_its_estimate_covers_the_error():
    X, Y = _problem(seed=5)
    ref = SparseCCA(5, tau=0.5, solver="dense").fit(X, Y)
    with _scheduler(), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        est = SparseCCA(5, tau=0.5, solver="randomized", preconditioner="low-rank",
                        random_state=0).fit(_dask(X), _dask(Y))
    err = np.max(np.abs(est.correlations_ - ref.correlations_) / ref.correlations_)
    assert err <= est.error_estimate_ <= 1e-3


def test_an_inexact_randomized_model_warns_with_an_estimate_that_says_so():
    """The model solved as it is (adaptive_rank=False, a rank far below X's): never a wrong
    answer without a warning, and the estimate covers the error."""
    X, Y = _problem(seed=6)
    ref = CCAEngine(X, Y, solver="dense").solve(Y, 0.5, 5).correlations
    with _scheduler():
        engine = CCAEngine(_dask(X), _dask(Y), solver="randomized", adaptive_rank=False,
                           max_rank=4, random_state=0)
        with pytest.warns(RuntimeWarning, match=r"randomized solver: estimated relative "
                                                r"error .* > tol = 0.001"):
            res = engine.solve(engine.Y, 0.5, 5)
    err = np.max(np.abs(res.correlations - ref) / ref)
    assert err > 1e-3 and res.error_estimate >= err


def test_engine_solve_reduces_a_dask_m_over_the_row_chunks():
    X, Y = _problem(seed=7)
    M = Y.toarray() * np.linspace(0.5, 2.0, Y.shape[0])[:, None]  # a reranker-like mixture
    ref = CCAEngine(X, Y, solver="dense", center=True).solve(M, 0.2, 4)
    with _scheduler():
        engine = CCAEngine(_dask(X), _dask(Y), solver="iterative", center=True,
                           random_state=0)
        res = engine.solve(_dask(M), 0.2, 4)
    np.testing.assert_allclose(res.correlations, ref.correlations, rtol=1e-6)
    np.testing.assert_allclose(res[0], ref[0], atol=1e-3)


def test_the_rerankers_model_on_a_dask_m_is_the_in_memory_model():
    """adaptive_rank=False solves the rank-r model itself (the rerankers' way): the same
    model from the chunks as from the stacked matrix (merged columns in the same order)."""
    X, Y = _problem(seed=3)
    M = Y.toarray() * np.linspace(0.5, 2.0, Y.shape[0])[:, None]
    kw = dict(solver="randomized", adaptive_rank=False, max_rank=40, random_state=0)
    with pytest.warns(RuntimeWarning, match="randomized solver: estimated relative error"):
        ref = CCAEngine(X, Y, **kw).solve(M, 0.3, 4)
    with _scheduler(), pytest.warns(RuntimeWarning, match="randomized solver: estimated"):
        res = CCAEngine(_dask(X), _dask(Y), **kw).solve(_dask(M), 0.3, 4)
    np.testing.assert_allclose(res.correlations, ref.correlations, rtol=1e-10)
    np.testing.assert_allclose(res.error_estimate, ref.error_estimate, rtol=1e-8)


def test_a_dask_fitted_model_saves_and_loads(tmp_path):
    X, Y = _problem(seed=8)
    with _scheduler():
        est = SparseCCA(3, tau=0.4, center=True).fit(_dask(X), _dask(Y))
        est.save(tmp_path / "m")
        back = SparseCCA.load(tmp_path / "m")
        np.testing.assert_array_equal(back.transform(_dask(X)).compute(),
                                      est.transform(_dask(X)).compute())
    np.testing.assert_allclose(back.transform(X), est.transform(_dask(X)).compute(),
                               rtol=1e-12, atol=1e-12)


def _bad_inputs():
    X, Y = _problem(seed=9)
    Xd, Yd = _dask(X), _dask(Y)
    nan_rows = Xd[da.from_array(np.arange(600) % 2 == 0, chunks=100)]
    bad = X.copy()
    bad.data[bad.indptr[400]] = np.nan  # row 400: in the fourth chunk (rows 357-599)
    return [
        ((Xd.rechunk({1: 40}), Yd), r"X must be chunked by rows only \(one chunk across its "
                                    r"85 columns\), got column chunks \(40, 40, 5\)"),
        ((Xd, _dask(Y, 150)), r"Y must have the same row chunks as X, got \(150, 150, 150, "
                              r"150\) and \(100, 250, 7, 243\)"),
        ((Xd, Y), r"Y must be a dask.array.Array chunked like X \(Dask and in-memory views "
                  r"do not mix\), got csr_matrix"),
        ((X, Yd), r"X must be a dask.array.Array chunked like Y .* got csr_matrix"),
        ((nan_rows, Yd), r"X has row chunks of unknown size \(NaN"),
        ((Xd[:, 0], Yd), r"X must be 2-D \(n_samples, n_features\), got shape \(600,\)"),
        ((_dask(bad), Yd), r"X row block 3 \(rows 357-599\).*(NaN|finite)"),
    ]


@pytest.mark.parametrize("case", range(len(_bad_inputs())))
def test_bad_dask_views_are_refused_by_name(case):
    (X, Y), match = _bad_inputs()[case]
    with _scheduler(), pytest.raises((TypeError, ValueError), match=match):
        SparseCCA(2).fit(X, Y)


def test_bad_m_and_transform_inputs_are_refused_by_name():
    X, Y = _problem(seed=10)
    with _scheduler():
        engine = CCAEngine(_dask(X), _dask(Y), solver="dense")
        with pytest.raises(TypeError, match=r"M must be a dask.array.Array chunked like X"):
            engine.solve(Y, 0.5, 2)
        with pytest.raises(ValueError, match=r"M must have the same row chunks as X"):
            engine.solve(_dask(Y, 300), 0.5, 2)
        with pytest.raises(ValueError, match=r"M must have d2 = 15 columns like Y, got 14"):
            engine.solve(_dask(Y[:, :14]), 0.5, 2)
        est = SparseCCA(2).fit(_dask(X), _dask(Y))
        with pytest.raises(ValueError, match=r"X must be chunked by rows only"):
            est.transform(_dask(X).rechunk({1: 40}))
        with pytest.raises(ValueError, match=r"X must have 85 features as in fit, got 80"):
            est.transform(_dask(X[:, :80]))
        with pytest.raises(TypeError, match=r"Y must be a dask.array.Array chunked like X"):
            est.transform(_dask(X), Y)


def test_fit_on_a_local_cluster_equals_the_in_memory_fit(client):
    X, Y = _problem(seed=11)
    ref = SparseCCA(4, tau=0.3, solver="dense", center=True).fit(X, Y)
    est = SparseCCA(4, tau=0.3, solver="iterative", center=True, random_state=0).fit(
        _dask(X), _dask(Y))
    assert est.n_iter_ >= 1  # LOBPCG ran: its products were map-reduces on the workers
    np.testing.assert_allclose(est.correlations_, ref.correlations_, rtol=1e-6)
    np.testing.assert_allclose(est.transform(_dask(X)).compute(), ref.transform(X),
                               atol=1e-3 * np.abs(ref.transform(X)).max())


def test_en_wsj_dask_fit_equals_the_in_memory_fit(shared_data):
    from sparsecca.data import read_conllu
    from sparsecca.features import SuffixView, TagNgramView

    corpus = read_conllu(shared_data / "en-wsj" / "train.conllu", tags="xpos")[:1000]
    X = SuffixView(lengths=(2, 3, 4)).fit_transform(corpus)
    Y = TagNgramView(orders=(1, 2)).fit_transform(corpus)
    ref = SparseCCA(20, tau=0.5, solver="dense").fit(X, Y)
    with _scheduler():
        est = SparseCCA(20, tau=0.5, solver="randomized", random_state=0).fit(
            _dask(X, 300), _dask(Y, 300))
    err = np.max(np.abs(est.correlations_ - ref.correlations_) / ref.correlations_)
    assert err <= est.error_estimate_ <= 1e-3


@pytest.mark.parametrize("sparse", [True, False])
def test_centred_projection_of_a_dask_array_is_lazy_and_equal(sparse):
    from sparsecca.linalg import centred_projection, column_mean

    X, _ = _problem(seed=12)
    X = X if sparse else X.toarray()
    W = np.random.default_rng(0).standard_normal((X.shape[1], 3))
    mean = column_mean(X)
    for w in (W, W[:, 0]):
        P = centred_projection(_dask(X), w, mean)
        assert isinstance(P, da.Array) and P.chunks[0] == UNEVEN
        with _scheduler():
            np.testing.assert_allclose(P.compute(), centred_projection(X, w, mean),
                                       rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match=r"W must have X.shape\[1\] = 85 rows, got 84"):
        centred_projection(_dask(X), W[:84], mean)


def test_without_a_dual_form_the_size_rules_count_d1():
    """n < d1: in memory the dense factor is the dual n x n one; from Dask chunks only the
    primal d1 x d1 one exists, so 'auto' and the preconditioner rule count d1."""
    from sparsecca.linalg import Thresholds

    X, Y = count_problem(300, 900, 20, seed=1)
    t = Thresholds().replace(auto_dense_max=500, exact_precond_max=500)
    assert CCAEngine(X, Y, thresholds=t).solver_ == "dense"
    with _scheduler():
        engine = CCAEngine(_dask(X, 100), _dask(Y, 100), thresholds=t, random_state=0)
        assert engine.solver_ == "iterative" and "no dual form" in engine.solver_reason_
        assert not engine.exact_preconditioner_fits() and not engine.exact_rescue_fits()
        res = engine.solve(engine.Y, 0.5, 5)
    ref = CCAEngine(X, Y, solver="dense").solve(Y, 0.5, 5)
    np.testing.assert_allclose(res.correlations, ref.correlations, rtol=1e-6)
