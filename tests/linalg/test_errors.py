"""Bad input to the linear-algebra layer: a clear ValueError / TypeError naming the argument,
the range or shape allowed and the value received; and, beside each check, the same results
as before for valid input (against dense NumPy references).

Sections: SparseCCA and cca_path; the engine's building blocks (reduced_cca, the boolean
options, block_cg, GramStats); the covariance operators and inverses (RegularizedGram,
CrossCovariance, GramFactor, RegularizedInverse, column_mean, centred_projection); the
randomized SVD, the Dask reductions and the CCA engine's entry points.
"""

import re

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, aslinearoperator

import sparsecca.linalg._gram as gram_module
from sparsecca.linalg import (
    CCAEngine,
    CrossCovariance,
    FactorizationError,
    GramStats,
    SingularCovarianceError,
    SparseCCA,
    cca_path,
    centred_projection,
    column_mean,
    randomized_svd,
)
from sparsecca.linalg._gram import RegularizedGram
from sparsecca.linalg._inverse import GramFactor, RegularizedInverse, block_cg
from sparsecca.linalg._precision import in_precision
from sparsecca.linalg._reduced import reduced_cca
from sparsecca.linalg._rsvd import adaptive_range_finder, randomized_range_finder, svd_flip
from sparsecca.linalg._thresholds import Thresholds, applied
from sparsecca.linalg._validation import check_dense_size

# == SparseCCA and cca_path: data, parameters, transform ===========================================

rng = np.random.default_rng(0)
X0 = rng.random((12, 5))
Y0 = rng.random((12, 3))
X_nan = X0.copy()
X_nan[2, 1] = np.nan
Y_inf = Y0.copy()
Y_inf[0, 0] = np.inf
X_sparse_nan = sp.csr_matrix(X0)
X_sparse_nan.data[3] = np.nan
# the largest |value| of the scaled matrices, as the messages print it
X0_MAX_1E200 = re.escape(f"{np.abs(X0).max() * 1e200:.3g}")
Y0_MAX_1E_200 = re.escape(f"{np.abs(Y0).max() * 1e-200:.3g}")

BAD_DATA = [
    ("rows", X0, Y0[:9], ValueError,
     r"Y must have the same number of rows as X \(one row per example\), got X has 12, "
     r"Y has 9"),
    ("nan", X_nan, Y0, ValueError, r"X must contain only finite values, got NaN"),
    ("inf", X0, Y_inf, ValueError, r"Y must contain only finite values, got inf"),
    ("sparse-nan", X_sparse_nan, Y0, ValueError, r"X must contain only finite values, got NaN"),
    ("no-rows", np.zeros((0, 5)), np.zeros((0, 3)), ValueError,
     r"X must have at least 1 row and 1 column, got shape \(0, 5\)"),
    ("no-cols", X0, np.zeros((12, 0)), ValueError,
     r"Y must have at least 1 row and 1 column, got shape \(12, 0\)"),
    ("sparse-empty", sp.csr_matrix((0, 4)), np.zeros((0, 2)), ValueError,
     r"X must have at least 1 row and 1 column, got shape \(0, 4\)"),
    ("1-d", X0[:, 0], Y0, ValueError,
     r"X must be 2-D \(n_samples, n_features\), got an array with shape \(12,\)"),
    ("strings", np.full((12, 5), "a"), Y0, TypeError,
     r"X must have a real numeric dtype \(bool, int, float32 or float64\), got dtype <U1"),
    ("object", X0, Y0.astype(object), TypeError,
     r"Y must have a real numeric dtype \(bool, int, float32 or float64\), got dtype object"),
    ("complex", X0 + 1j, Y0, TypeError,
     r"X must have a real numeric dtype \(bool, int, float32 or float64\), got dtype "
     r"complex128"),
    ("none", None, Y0, TypeError,
     r"X must be a 2-D numeric array or a scipy.sparse matrix, got NoneType"),
    ("one-row", X0[:1], Y0[:1], ValueError,
     r"^X and Y must have at least 2 rows \(samples\) for CCA, got 1$"),
    ("one-row-sparse", sp.csr_matrix(X0[:1]), Y0[:1], ValueError, r"at least 2 rows"),
    # finite, but X^T X overflows (1e200) or underflows to 0 (1e-200)
    ("overflow", X0 * 1e200, Y0, ValueError,
     r"^X has values too large for float64: its covariance overflows \(largest \|value\| "
     rf"{X0_MAX_1E200} with 12 rows; n \* max\|x\|\^2 must stay below 1.8e\+308\); "
     r"rescale X, e.g. divide it by its largest \|value\|$"),
    ("overflow-negative", X0, -Y0 * 1e160, ValueError, r"^Y has values too large for float64"),
    ("underflow", X0, sp.csr_matrix(Y0) * 1e-200, ValueError,
     r"^Y has values too small for float64: its covariance underflows to 0 \(largest "
     rf"\|value\| {Y0_MAX_1E_200} with 12 rows; n \* max\|x\|\^2 must stay above "
     r"2.23e-308\); rescale Y"),
]


@pytest.mark.parametrize("case,X,Y,exc,match", BAD_DATA, ids=[c[0] for c in BAD_DATA])
def test_bad_data(case, X, Y, exc, match):
    with pytest.raises(exc, match=match):
        SparseCCA(2, tau=0.5).fit(X, Y)
    with pytest.raises(exc, match=match):
        cca_path(X, Y, [0.5], 2)


BAD_PARAMS = [
    (dict(tau=-0.1), ValueError, r"tau must be in \[0, 1\] \(C = \(1 - tau\) X\^T X \+ tau I\), "
                                 r"got -0.1"),
    (dict(tau=1.5), ValueError, r"tau must be in \[0, 1\] .*got 1.5"),
    (dict(tau=float("nan")), ValueError, r"tau must be in \[0, 1\] .*got nan"),
    (dict(tau="0.5"), TypeError, r"tau must be a real number in \[0, 1\], got '0.5'"),
    (dict(tau=True), TypeError, r"tau must be a real number in \[0, 1\], got True"),
    (dict(n_components=4), ValueError,
     r"n_components must be in \[1, min\(d1, d2\)\] = \[1, 3\] \(d1 = 5, d2 = 3\), got 4"),
    (dict(n_components=0), ValueError, r"n_components must be in \[1, min\(d1, d2\)\] = "
                                       r"\[1, 3\] \(d1 = 5, d2 = 3\), got 0"),
    (dict(n_components=-2), ValueError, r"n_components must be in .* got -2"),
    (dict(n_components=1.5), TypeError,
     r"n_components must be an int in \[1, min\(d1, d2\)\] = \[1, 3\], got 1.5"),
    (dict(n_components=True), TypeError, r"n_components must be an int .* got True"),
    (dict(solver="qr"), ValueError,
     r"solver must be one of \('auto', 'dense', 'randomized', 'iterative'\), got 'qr'"),
    (dict(preconditioner="exact"), ValueError,
     r"preconditioner must be one of \('auto', 'dense', 'low-rank'\), got 'exact'"),
    (dict(center="yes"), TypeError, r"center must be True or False, got 'yes'"),
    (dict(tol=0.0), ValueError, r"tol must be in \(0, 1\), got 0.0"),
    (dict(tol=1), ValueError, r"tol must be in \(0, 1\), got 1.0"),
    (dict(max_rank=0), ValueError, r"max_rank must be an int >= 1, got 0"),
    (dict(random_state=-1), ValueError, r"random_state must be None, an int >= 0, a numpy "
                                        r"Generator or RandomState, got -1"),
    (dict(random_state="seed"), TypeError, r"random_state must be None, an int >= 0"),
    (dict(verbose=-1), ValueError, r"verbose must be an int >= 0 or a bool, got -1"),
    (dict(verbose="loud"), TypeError, r"verbose must be an int >= 0 or a bool, got 'loud'"),
]


@pytest.mark.parametrize("params,exc,match", BAD_PARAMS,
                         ids=[repr(p) for p, _, _ in BAD_PARAMS])
def test_bad_parameters(params, exc, match):
    kw = dict(n_components=2, tau=0.5)
    kw.update(params)
    with pytest.raises(exc, match=match):
        SparseCCA(**kw).fit(X0, Y0)


@pytest.mark.parametrize("solver", ["dense", "iterative"])
def test_tau_zero_singular_covariance(solver):
    # 4 rows cannot span 5 features: X^T X is singular
    with pytest.raises(SingularCovarianceError, match=r"Cxx is singular with tau = 0.*use "
                                                      r"tau > 0"):
        SparseCCA(2, tau=0.0, solver=solver).fit(X0[:4], Y0[:4])
    # a constant-zero output feature makes Cyy singular
    Y = Y0.copy()
    Y[:, 1] = 0.0
    with pytest.raises(SingularCovarianceError, match=r"Cyy is singular .*use tau > 0"):
        SparseCCA(2, tau=0.0, solver=solver).fit(X0, Y)
    # a SingularCovarianceError is a ValueError and a LinAlgError
    with pytest.raises(ValueError):
        SparseCCA(2, tau=0.0, solver=solver).fit(X0[:4], Y0[:4])
    with pytest.raises(np.linalg.LinAlgError):
        SparseCCA(2, tau=0.0, solver=solver).fit(X0[:4], Y0[:4])


def test_more_components_than_correlations():
    # rank(X^T Y) <= n = 2 < n_components = 3
    with pytest.raises(ValueError, match=r"n_components must be at most the number of nonzero "
                                         r"canonical correlations \(2 here"):
        SparseCCA(3, tau=0.5).fit(X0[:2], Y0[:2])


def test_extreme_but_representable_values_fit():
    # the Gram matrices of values near 1e+-150 are still normal float64: no refusal
    for scale in (1e150, 1e-150):
        m = SparseCCA(2, tau=0.5).fit(X0 * scale, Y0)
        assert np.all(np.isfinite(m.correlations_)) and m.correlations_[0] > 0
    # all-zero data is not an underflow: the solver's rank message stays
    with pytest.raises(ValueError, match=r"cross-covariance has rank 0"):
        SparseCCA(1, tau=0.5).fit(X0 * 0, Y0)


BAD_TRANSFORM_AND_SOLVE = [
    ("transform-X", lambda m, engine: m.transform(X0[:, :4]),
     r"X must have 5 features as in fit, got 4"),
    ("transform-Y", lambda m, engine: m.transform(X0, Y0[:, :2]),
     r"Y must have 3 features as in fit, got 2"),
    ("solve-M-columns", lambda m, engine: engine.solve(Y0[:, :2], 0.5, 2),
     r"M must have d2 = 3 columns like Y, got 2"),
    ("solve-M-rows", lambda m, engine: engine.solve(Y0[:5], 0.5, 2),
     r"M must have the same number of rows as X"),
    ("solve-M-overflow", lambda m, engine: engine.solve(Y0 * 1e300, 0.5, 2),
     r"^M has values too large for float64"),
]


@pytest.mark.parametrize("case,call,match", BAD_TRANSFORM_AND_SOLVE,
                         ids=[c[0] for c in BAD_TRANSFORM_AND_SOLVE])
def test_transform_and_engine_errors(case, call, match):
    with pytest.raises(ValueError, match=match):
        call(SparseCCA(2, tau=0.5).fit(X0, Y0), CCAEngine(X0, Y0))


# == the engine's building blocks: reduced_cca, options, block_cg, GramStats =======================

XS = sp.random(80, 10, density=0.4, random_state=1, format="csr")
YS = sp.random(80, 6, density=0.5, random_state=2, format="csr")
XINV = RegularizedInverse(XS, 0.3)
YINV = RegularizedInverse(YS, 0.3)
CROSS_S = CrossCovariance(XS, YS)
XINV_C = RegularizedInverse(XS, 0.3, center=True)
YINV_C = RegularizedInverse(YS, 0.3, center=True)


def _streamed_rows_differ():
    # the README's streaming workflow with Y's statistics from half the rows
    sx, sy = GramStats.from_blocks([XS]), GramStats.from_blocks([YS[:40]])
    return (RegularizedInverse(GramFactor(sx, center=True), 0.3, "iterative"),
            RegularizedInverse(sy, 0.3, "dense", center=True),
            CrossCovariance.from_blocks([(XS, YS)], center=True))


BAD_REDUCED = [
    ("two-taus", lambda: (XINV, RegularizedInverse(YS, 0.8), CROSS_S, 3), {}, ValueError,
     r"^xinv.tau \(0.3\) and yinv.tau \(0.8\) must be equal$"),
    ("cross-uncentred", lambda: (XINV_C, YINV_C, CROSS_S, 3), {}, ValueError,
     r"^xinv, yinv and cross must all be centred or all uncentred, got center=True "
     r"\(xinv\), True \(yinv\), False \(cross\)$"),
    ("y-uncentred", lambda: (XINV_C, YINV, CROSS_S, 3), {}, ValueError,
     r"got center=True \(xinv\), False \(yinv\), False \(cross\)$"),
    ("cross-rows", lambda: (XINV, YINV, CrossCovariance(XS[:40], YS[:40]), 3), {}, ValueError,
     r"^xinv has 80 samples, yinv 80, cross 40: all must come from the same rows$"),
    ("streamed-rows", lambda: (*_streamed_rows_differ(), 2), {}, ValueError,
     r"^xinv has 80 samples, yinv 40, cross 80: all must come from the same rows$"),
    ("k-float", lambda: (XINV, YINV, CROSS_S, 2.7), {}, TypeError,
     r"^n_components must be an int in \[1, min\(d1, d2\)\] = \[1, 6\], got 2.7$"),
    ("k-str", lambda: (XINV, YINV, CROSS_S, "3"), {}, TypeError,
     r"^n_components must be an int .* got '3'$"),
    ("k-bool", lambda: (XINV, YINV, CROSS_S, True), {}, TypeError,
     r"^n_components must be an int .* got True$"),
    ("k-0", lambda: (XINV, YINV, CROSS_S, 0), {}, ValueError,
     r"^n_components must be in \[1, min\(d1, d2\)\] = \[1, 6\] \(d1 = 10, d2 = 6\), got 0$"),
    ("k-large", lambda: (XINV, YINV, CROSS_S, 7), {}, ValueError,
     r"^n_components must be in \[1, min\(d1, d2\)\] = \[1, 6\] .* got 7$"),
    ("cross-array", lambda: (XINV, YINV, CROSS_S.toarray(), 3), {}, TypeError,
     r"^cross must be a \(d1, d2\) LinearOperator such as CrossCovariance, got ndarray "
     r"\(wrap an array with scipy.sparse.linalg.aslinearoperator\)$"),
    ("cross-none", lambda: (XINV, YINV, None, 3), {}, TypeError,
     r"^cross must be a \(d1, d2\) LinearOperator such as CrossCovariance, got NoneType$"),
    ("xinv-factor", lambda: (GramFactor(XS), YINV, CROSS_S, 3), {}, TypeError,
     r"^xinv must be a RegularizedInverse, got GramFactor$"),
    ("yinv-array", lambda: (XINV, np.eye(6), CROSS_S, 3), {}, TypeError,
     r"^yinv must be a RegularizedInverse, got ndarray$"),
    ("swapped", lambda: (YINV, XINV, CROSS_S, 3), {}, ValueError,
     r"^cross has shape \(10, 6\); xinv is 6 x 6 and yinv 10 x 10, so cross must be "
     r"\(6, 10\)$"),
    ("cross-transposed", lambda: (XINV, YINV, CrossCovariance(YS, XS), 3), {}, ValueError,
     r"^cross has shape \(6, 10\); xinv is 10 x 10 and yinv 6 x 6, so cross must be "
     r"\(10, 6\)$"),
    ("oversamples-str", lambda: (XINV, YINV, CROSS_S, 3), dict(oversamples="a"), TypeError,
     r"^oversamples must be an int >= 0, got 'a'$"),
    ("oversamples-neg", lambda: (XINV, YINV, CROSS_S, 3), dict(oversamples=-5), ValueError,
     r"^oversamples must be an int >= 0, got -5$"),
    ("tol-neg", lambda: (XINV, YINV, CROSS_S, 3), dict(tol=-1), ValueError,
     r"^tol must be in \(0, 1\), got -1.0$"),
    ("tol-str", lambda: (XINV, YINV, CROSS_S, 3), dict(tol="a"), TypeError,
     r"^tol must be a real number in \(0, 1\), got 'a'$"),
    ("omega-max", lambda: (XINV, YINV, CROSS_S, 3), dict(omega_max=-1), ValueError,
     r"^omega_max must be a finite number > 0, got -1$"),
    ("callback", lambda: (XINV, YINV, CROSS_S, 3), dict(callback=5), TypeError,
     r"^callback must be callable or None, got 5$"),
    ("exact", lambda: (XINV, YINV, CROSS_S, 3), dict(exact=5), TypeError,
     r"^exact must be None, a 'dense' RegularizedInverse of C_xx or a callable returning "
     r"one, got int$"),
    ("exact-model", lambda: (XINV, YINV, CROSS_S, 3),
     dict(exact=RegularizedInverse(XS, 0.3, "randomized", rank=2, random_state=0)), TypeError,
     r"^exact must be None, a 'dense' RegularizedInverse of C_xx or a callable returning "
     r"one, got .* \(method='(randomized|iterative)'\)$"),
]


@pytest.mark.parametrize("case,args,kw,exc,match", BAD_REDUCED,
                         ids=[c[0] for c in BAD_REDUCED])
def test_reduced_cca_bad_arguments(case, args, kw, exc, match):
    with pytest.raises(exc, match=match):
        reduced_cca(*args(), **kw)


def test_reduced_cca_matching_operators_still_solve():
    res = reduced_cca(XINV_C, YINV_C, CrossCovariance(XS, YS, center=True), 3)
    assert res.correlations.shape == (3,) and np.all(res.correlations < 1 / 0.7)
    # a cross-covariance as a plain LinearOperator carries no centring or rows to compare
    from scipy.sparse.linalg import aslinearoperator
    other = reduced_cca(XINV, YINV, aslinearoperator(CROSS_S.toarray()), 3)
    np.testing.assert_allclose(other.correlations, reduced_cca(XINV, YINV, CROSS_S, 3)
                               .correlations, rtol=1e-10)


# -- boolean options: a truthy string such as 'no' must not switch an option on ------------

def _stream(counter):
    """Row blocks of X that count how many were read."""
    for lo in range(0, 80, 20):
        counter.append(lo)
        yield XS[lo:lo + 20]


BOOL_OPTIONS = [
    ("cca_path", lambda v: cca_path(XS, YS, [0.3], 2, center=v), "center"),
    ("RegularizedGram", lambda v: RegularizedGram(XS, 0.3, center=v), "center"),
    ("RegularizedGram.from_blocks", lambda v: RegularizedGram.from_blocks([XS], 0.3, center=v),
     "center"),
    ("CrossCovariance", lambda v: CrossCovariance(XS, YS, center=v), "center"),
    ("CrossCovariance.from_blocks", lambda v: CrossCovariance.from_blocks([(XS, YS)], center=v),
     "center"),
    ("GramFactor", lambda v: GramFactor(XS, center=v), "center"),
    ("RegularizedInverse", lambda v: RegularizedInverse(XS, 0.3, center=v), "center"),
    ("CCAEngine-center", lambda v: CCAEngine(XS, YS, center=v), "center"),
    ("CCAEngine-merge", lambda v: CCAEngine(XS, YS, merge_duplicates=v), "merge_duplicates"),
    ("CCAEngine-adaptive", lambda v: CCAEngine(XS, YS, adaptive_rank=v), "adaptive_rank"),
    ("CCAEngine-lowrank-y", lambda v: CCAEngine(XS, YS, lowrank_y=v), "lowrank_y"),
]


@pytest.mark.parametrize("case,build,name", BOOL_OPTIONS, ids=[c[0] for c in BOOL_OPTIONS])
@pytest.mark.parametrize("value", ["no", "False", 1, None])
def test_boolean_options_refuse_non_bools(case, build, name, value):
    with pytest.raises(TypeError, match=rf"^{name} must be True or False, got {value!r}$"):
        build(value)


def test_boolean_options_take_numpy_bools():
    ref = RegularizedGram(XS, 0.3, center=True).toarray()
    np.testing.assert_array_equal(RegularizedGram(XS, 0.3, center=np.bool_(True)).toarray(),
                                  ref)


def test_from_blocks_checks_its_arguments_before_reading_the_stream():
    read = []
    with pytest.raises(ValueError, match=r"^tau must be in \[0, 1\] .*got 2.0$"):
        RegularizedGram.from_blocks(_stream(read), tau=2.0)
    with pytest.raises(TypeError, match=r"^center must be True or False, got 'no'$"):
        RegularizedGram.from_blocks(_stream(read), tau=0.5, center="no")
    with pytest.raises(TypeError, match=r"^center must be True or False, got 'no'$"):
        CrossCovariance.from_blocks(zip(_stream(read), [YS[:20]] * 4), center="no")
    assert read == []


@pytest.mark.parametrize("fit", [
    lambda k: cca_path(XS, YS, [0.3, 0.5], k),
    lambda k: SparseCCA(k).fit(XS, YS),
    lambda k: SparseCCA(k).fit_path(XS, YS, [0.3, 0.5]),
], ids=["cca_path", "fit", "fit_path"])
def test_n_components_is_checked_before_the_engine_reads_the_data(fit, monkeypatch):
    import sparsecca.linalg._cca as cca_mod

    def no_engine(*args, **kwargs):
        raise AssertionError("the engine was built for a bad n_components")

    monkeypatch.setattr(cca_mod, "CCAEngine", no_engine)
    with pytest.raises(ValueError, match=r"^n_components must be in \[1, min\(d1, d2\)\] = "
                                         r"\[1, 6\] \(d1 = 10, d2 = 6\), got 7$"):
        fit(7)
    with pytest.raises(TypeError, match=r"^n_components must be an int in \[1, min\(d1, "
                                        r"d2\)\] = \[1, 6\], got 2.5$"):
        fit(2.5)


def test_column_sums_names_x_or_y():
    engine = CCAEngine(XS, YS)
    for bad in ("x", "Z", 0, None):
        with pytest.raises(ValueError, match=rf"^which must be one of \('X', 'Y'\), got "
                                             rf"{re.escape(repr(bad))}$"):
            engine.column_sums(bad)
    np.testing.assert_allclose(engine.column_sums("Y"), np.asarray(YS.sum(axis=0)).ravel())


# -- block_cg -------------------------------------------------------------------------------

A_SPD = RegularizedGram(XS, 0.3).toarray()

BAD_BLOCK_CG = [
    ("M-negative", dict(M=-np.eye(10)), FactorizationError,
     r"^the preconditioner M is not positive definite \(b\^T M b = -10 <= 0 for column 0 "
     r"of B\)$"),
    ("M-zero", dict(M=np.zeros((10, 10))), FactorizationError,
     r"^the preconditioner M is not positive definite \(b\^T M b = 0 <= 0"),
    ("rtol-negative", dict(rtol=-1), ValueError, r"^rtol must be in \(0, 1\), got -1.0$"),
    ("rtol-nan", dict(rtol=float("nan")), ValueError, r"^rtol must be in \(0, 1\), got nan$"),
    ("rtol-str", dict(rtol="a"), TypeError, r"^rtol must be a real number in \(0, 1\), got 'a'"),
    ("maxiter-negative", dict(maxiter=-1), ValueError, r"^maxiter must be an int >= 0, got -1$"),
    ("maxiter-float", dict(maxiter=2.5), TypeError, r"^maxiter must be an int >= 0, got 2.5$"),
    ("X0-shape", dict(X0=np.ones(5)), ValueError,
     r"^X0 must have the shape of B, \(10,\), got \(5,\)$"),
    ("X0-nan", dict(X0=np.full(10, np.nan)), ValueError,
     r"^X0 must contain only finite values$"),
    ("B-nan", dict(B=np.full(10, np.nan)), ValueError, r"^B must contain only finite values$"),
    ("B-3d", dict(B=np.ones((10, 2, 2))), ValueError,
     r"^B must be a \(d,\) or \(d, m\) array, got shape \(10, 2, 2\)$"),
    ("A-shape", dict(A=np.eye(12)), ValueError,
     r"^A must be \(d, d\) = \(10, 10\) like the rows of B, got shape \(12, 12\)$"),
    ("M-shape", dict(M=np.eye(12)), ValueError,
     r"^M must be \(d, d\) = \(10, 10\) like the rows of B, got shape \(12, 12\)$"),
    ("A-none", dict(A=None), TypeError,
     r"^A must be a \(d, d\) array or LinearOperator, got NoneType$"),
]


@pytest.mark.parametrize("case,kw,exc,match", BAD_BLOCK_CG, ids=[c[0] for c in BAD_BLOCK_CG])
def test_block_cg_bad_arguments(case, kw, exc, match):
    args = dict(A=A_SPD, B=np.ones(10))
    args.update(kw)
    with pytest.raises(exc, match=match):
        block_cg(args.pop("A"), args.pop("B"), **args)


def test_block_cg_zero_right_hand_side_with_any_preconditioner():
    B = np.zeros((10, 2))
    B[:, 0] = 1.0
    x, info = block_cg(A_SPD, B, M=np.eye(10), rtol=1e-10)
    assert info["converged"] and np.all(x[:, 1] == 0)
    np.testing.assert_allclose(A_SPD @ x, B, atol=1e-8)


# -- GramStats built by hand ----------------------------------------------------------------

XD = XS.toarray()
G0, S0 = XD.T @ XD, XD.sum(axis=0)

BAD_STATS = [
    ("n-zero", (G0, S0, 0), ValueError, r"^n_samples must be an int >= 1, got 0$"),
    ("n-negative", (G0, S0, -5), ValueError, r"^n_samples must be an int >= 1, got -5$"),
    ("n-float", (G0, S0, 2.7), TypeError, r"^n_samples must be an int >= 1, got 2.7$"),
    ("asymmetric", (np.triu(G0), S0, 80), ValueError,
     r"^gram must be symmetric \(X\^T X\), got max \|gram - gram\^T\| = "),
    ("nan", (np.full((10, 10), np.nan), S0, 80), ValueError,
     r"^gram and colsum must contain only finite values$"),
    ("colsum-shape", (G0, np.ones(5), 80), ValueError,
     r"^colsum must have shape \(d,\) = \(10,\) like gram, got \(5,\)$"),
    ("not-square", (G0[:, :4], S0, 80), ValueError,
     r"^gram must be a square \(d, d\) matrix X\^T X, got shape \(10, 4\)$"),
]


@pytest.mark.parametrize("case,args,exc,match", BAD_STATS, ids=[c[0] for c in BAD_STATS])
def test_gram_stats_bad_arguments(case, args, exc, match):
    with pytest.raises(exc, match=match):
        GramStats(*args)


def test_gram_stats_by_hand_equals_accumulated():
    a, b = GramStats.from_blocks([XS[:30]]), GramStats.from_blocks([XS[30:]])
    total = GramStats(a.gram + b.gram, a.colsum + b.colsum, a.n_samples + b.n_samples)
    np.testing.assert_allclose(RegularizedGram(total, 0.3, center=True).toarray(),
                               RegularizedGram(XS, 0.3, center=True).toarray(), atol=1e-12)


# == the covariance operators and inverses =========================================================

op_rng = np.random.default_rng(0)
X = op_rng.random((20, 8))
M = op_rng.random((20, 5))
X12 = op_rng.random((30, 12))
B12 = op_rng.random((12, 2))
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


def test_inverse_of_a_gram_factor_is_limited_like_data():
    """max_dim='auto' guards a GramFactor as it guards data; None lifts the limit (what
    CCAEngine passes: its solver chose the dense form, C_xx of up to 30,000 features for the
    zipf reference)."""
    with applied(Thresholds(dense_max_dim=4)):
        with pytest.raises(ValueError, match=r"d must be <= max_dim=4"):
            RegularizedInverse(X, 0.5, "dense")
        f = GramFactor(X)
        with pytest.raises(ValueError, match=r"d must be <= max_dim=4"):
            RegularizedInverse(f, 0.5, "dense")
        got = RegularizedInverse(f, 0.5, "dense", max_dim=None) @ X[:8].T
    np.testing.assert_allclose(got, np.linalg.solve(_dense_cov(X, 0.5), X[:8].T), rtol=1e-10)


def test_engine_dense_solver_is_not_limited():
    Xs, Ys = sp.csr_matrix(X12), sp.csr_matrix(op_rng.random((30, 5)))
    before = SparseCCA(n_components=2, tau=0.5, solver="dense").fit(Xs, Ys)
    with applied(Thresholds(dense_max_dim=1)):
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
     r"^DenseInverse is 12 x 12: the V of C @ V must be .* got shape \(5, 2\)$"),
    ("gram_matmat", lambda: C.gram_matmat(np.ones((7, 2))), r"^V must have d = 8 rows, got 7$"),
    ("gram_matmat-3d", lambda: C.gram_matmat(np.ones((8, 2, 1))),
     r"^V must be a \(d,\) vector or a \(d, m\) = \(8, m\) block, got shape \(8, 2, 1\)$"),
    ("gram_matmat-scalar", lambda: C.gram_matmat(1.0),
     r"^V must be a \(d,\) vector or a \(d, m\) = \(8, m\) block, got shape \(\)$"),
    ("in_precision", lambda: in_precision(C, np.float32).matmat(np.ones((7, 2))),
     r"^RegularizedGram in float32 is 8 x 8: the V of C @ V must be a \(8,\) vector or a "
     r"\(8, b\) block, got shape \(7, 2\)$"),
    ("in_precision-3d", lambda: in_precision(C, np.float32).matmat(np.ones((8, 2, 1))),
     r"^RegularizedGram in float32 is 8 x 8: .* got shape \(8, 2, 1\)$"),
    ("in_precision-dtype", lambda: in_precision(C, np.int64),
     r"^dtype must be float32 or float64, got int64$"),
    ("in_precision-dtype-str", lambda: in_precision(C, "nonsense"),
     r"^dtype must be float32 or float64, got 'nonsense'$"),
    ("from_gram_image-V", lambda: C.from_gram_image(np.ones((8, 2)), np.ones((7, 2))),
     r"^V must have d = 8 rows, got 7$"),
    ("from_gram_image-GV", lambda: C.from_gram_image(np.ones((8, 3)), np.ones((8, 2))),
     r"^GV must have shape \(8, 2\) like V, got \(8, 3\)$"),
    ("from_gram_image-1d", lambda: C.from_gram_image(C.gram_matmat(np.ones(8)), np.ones(8)),
     r"^GV must have shape \(8,\) like V, got \(8, 1\)$"),
    ("cross.in_precision", lambda: in_precision(CROSS, np.float32).matmat(np.ones((8, 2))),
     r"^CrossCovariance in float32 is 8 x 5: the V of C @ V must be a \(5,\) vector or a "
     r"\(5, b\) block, got shape \(8, 2\)$"),
    ("cross.in_precision-T", lambda: in_precision(CROSS, np.float32).rmatmat(np.ones((5, 2))),
     r"^CrossCovariance in float32 is 8 x 5: the V of C\^T @ V \(rmatvec / rmatmat\) must be "
     r"a \(8,\) vector or a \(8, b\) block, got shape \(5, 2\)$"),
    ("gram-factor", lambda: GramFactor(X).gram_matmat(np.ones((5, 2))),
     r"^V must have d = 8 rows, got 5$"),
    ("inv.gram_matmat", lambda: INV.gram_matmat(np.ones((5, 2))),
     r"^V must have d = 12 rows, got 5$"),
    ("inv.in_precision", lambda: in_precision(INV, np.float32) @ np.ones((5, 2)),
     r"^DenseInverse in float32 is 12 x 12: the V of C @ V must be .* got shape \(5, 2\)$"),
    ("inv.in_precision-f64", lambda: in_precision(INV, np.float64) @ np.ones((5, 2)),
     r"^DenseInverse is 12 x 12: the V of C @ V must be .* got shape \(5, 2\)$"),
    ("inv.in_precision-dtype", lambda: in_precision(INV, "float16"),
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
    # the blocks of the low-rank factor and its inverse
    ("galerkin-rows", lambda: RINV.lowrank_galerkin(np.ones((5, 2))),
     r"^B must have d = 12 rows, got 5$"),
    ("galerkin-1d", lambda: RINV.lowrank_galerkin(np.ones(12)),
     r"^B must be a 2-D \(d, m\) = \(12, m\) block, got shape \(12,\)$"),
    ("sandwich-u-only", lambda: RINV.sandwich(np.ones((12, 2)), u=np.ones(12)),
     r"^u and v go together \(the rank-one term u v\^T\); got u without v$"),
    ("sandwich-v-only", lambda: RINV.sandwich(np.ones((12, 2)), v=np.ones(2)),
     r"^u and v go together \(the rank-one term u v\^T\); got v without u$"),
    ("sandwich-rows", lambda: RINV.sandwich(np.ones((5, 2))), r"^B must have d = 12 rows, got 5$"),
    ("sandwich-v-shape", lambda: RINV.sandwich(np.ones((12, 2)), u=np.ones(12), v=np.ones(3)),
     r"^u and v must have shapes \(d,\) = \(12,\) and \(m,\) = \(2,\), got \(12,\) and \(3,\)$"),
]


@pytest.mark.parametrize("case,call,match", BAD_SHAPES, ids=[c[0] for c in BAD_SHAPES])
def test_bad_shapes(case, call, match):
    with pytest.raises(ValueError, match=match):
        call()


BAD_TYPES = [
    ("with_exact-str", lambda: RINV.with_exact("dense"),
     r"^exact must be None or a 'dense' RegularizedInverse of the same GramFactor and tau, "
     r"got str$"),
    ("with_exact-array", lambda: IINV.with_exact(np.eye(12)),
     r"^exact must be None or a 'dense' RegularizedInverse .* got ndarray$"),
    ("column_mean-str", lambda: column_mean("abc"),
     r"^X must be a 2-D numeric array or a scipy.sparse matrix, got str$"),
    ("column_mean-none", lambda: column_mean(None),
     r"^X must be a 2-D numeric array or a scipy.sparse matrix, got NoneType$"),
    ("column_mean-strings", lambda: column_mean([["a", "b"]]),
     r"^X must have a real numeric dtype \(bool, int, float32 or float64\), got dtype <U1$"),
    ("centred_projection-X-str", lambda: centred_projection("X", np.ones(8)),
     r"^X must be a 2-D numeric array or a scipy.sparse matrix, got str$"),
]


@pytest.mark.parametrize("case,call,match", BAD_TYPES, ids=[c[0] for c in BAD_TYPES])
def test_bad_types(case, call, match):
    with pytest.raises(TypeError, match=match):
        call()


def test_products_of_valid_blocks_are_unchanged():
    tau = 0.5
    ref = _dense_cov(X, tau)
    G = X.T @ X
    V = op_rng.random((8, 3))
    v = V[:, 0]
    np.testing.assert_allclose(C @ v, ref @ v, rtol=1e-12)
    np.testing.assert_allclose(C @ V, ref @ V, rtol=1e-12)
    np.testing.assert_allclose(C.rmatmat(V), ref @ V, rtol=1e-12)
    np.testing.assert_allclose(C.gram_matmat(V), G @ V, rtol=1e-12)
    np.testing.assert_allclose(C.gram_matmat(v), (G @ v)[:, None], rtol=1e-12)  # (d, 1)
    np.testing.assert_allclose(C.gram_matmat(V.tolist()), G @ V, rtol=1e-12)
    np.testing.assert_array_equal(C.from_gram_image(C.gram_matmat(V), V), C @ V)
    np.testing.assert_allclose(in_precision(C, np.float64) @ V, ref @ V, rtol=1e-12)
    np.testing.assert_allclose(in_precision(C, np.float32) @ V, ref @ V, rtol=1e-5)
    assert (in_precision(C, "float32") @ V).dtype == np.float32
    W = op_rng.random((5, 2))
    np.testing.assert_allclose(CROSS @ W[:, 0], X.T @ M @ W[:, 0], rtol=1e-12)
    np.testing.assert_allclose(CROSS.rmatvec(V[:, 0]), M.T @ X @ V[:, 0], rtol=1e-12)
    U = op_rng.random((8, 2))
    np.testing.assert_allclose(in_precision(CROSS, np.float64) @ W, X.T @ M @ W, rtol=1e-12)
    np.testing.assert_allclose(in_precision(CROSS, np.float32).rmatmat(U), M.T @ X @ U,
                               rtol=1e-5)
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
            assert (in_precision(C, dtype) @ b).shape == (12,)
            assert (in_precision(C, dtype) @ b[:, None]).shape == (12, 1)


def test_solves_of_valid_blocks_are_unchanged():
    tau = 0.5
    ref = np.linalg.solve(_dense_cov(X12, tau), B12)
    np.testing.assert_allclose(in_precision(INV, np.float64) @ B12, ref, rtol=1e-10)
    np.testing.assert_allclose(in_precision(INV, np.float32) @ B12, ref, rtol=1e-4)
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


def test_with_exact_of_a_valid_inverse_is_unchanged():
    f = GramFactor(X12, random_state=0)
    inv = RegularizedInverse(f, 0.5, "randomized", rank=4)
    dense = RegularizedInverse(f, 0.5, "dense")
    exact = inv.with_exact(dense)
    assert exact.exact_preconditioner and not inv.exact_preconditioner
    np.testing.assert_array_equal(exact.precondition(B12), dense @ B12)
    assert not exact.with_exact(None).exact_preconditioner


@pytest.mark.parametrize("kind", ["list", "dense", "csr", "csc", "float32"])
def test_column_mean_and_centred_projection_of_valid_input(kind):
    Xk = {"list": X.tolist(), "dense": X, "csr": sp.csr_matrix(X), "csc": sp.csc_matrix(X),
          "float32": X.astype(np.float32)}[kind]
    tol = 1e-6 if kind == "float32" else 1e-12
    mu = column_mean(Xk)
    assert mu.dtype == np.float64 and mu.shape == (8,)
    np.testing.assert_allclose(mu, X.mean(axis=0), rtol=tol)
    W = op_rng.random((8, 3))
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
    ("lowrank-max-rank-0", lambda f: f.lowrank(tol=1e-6, max_rank=0), ValueError,
     r"^max_rank must be an int >= 1, got 0$"),
    ("lowrank-max-rank-negative", lambda f: f.lowrank(tol=1e-6, max_rank=-3), ValueError,
     r"^max_rank must be an int >= 1, got -3$"),
    ("lowrank-max-rank-float", lambda f: f.lowrank(tol=1e-12, max_rank=2.9), TypeError,
     r"^max_rank must be an int >= 1, got 2.9$"),
    ("lowrank-block-size-0", lambda f: f.lowrank(rank=4, block_size=0), ValueError,
     r"^block_size must be an int >= 1, got 0$"),
    ("lowrank-block-size-float", lambda f: f.lowrank(rank=4, block_size=2.5), TypeError,
     r"^block_size must be an int >= 1, got 2.5$"),
    ("lowrank-n-iter-str", lambda f: f.lowrank(rank=4, n_iter="a"), TypeError,
     r"^n_iter must be an int >= 0, got 'a'$"),
    ("lowrank-tol-str", lambda f: f.lowrank(tol="a"), TypeError,
     r"^tol must be a real number, got 'a'$"),
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
    ("tail-without-lowrank", lambda f: f.tail_diagonal(), ValueError,
     r"^tail_diagonal needs a low-rank factor: call lowrank first$"),
]


@pytest.mark.parametrize("case,call,exc,match", BAD_FACTOR_CALLS,
                         ids=[c[0] for c in BAD_FACTOR_CALLS])
def test_gram_factor_bad_arguments(case, call, exc, match):
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


# == the randomized SVD, the Dask reductions, the engine's entry points ============================

RNG = np.random.default_rng(0)
A30 = RNG.standard_normal((30, 20))


class Duck:
    """A duck-typed operator: ``shape``, ``@`` and ``.T``; ``bad`` / ``bad_t`` make the
    product / the transposed product return a (3, 3) block; products are counted."""

    def __init__(self, A, shape=None, bad=False, bad_t=False):
        self.A, self.bad, self.bad_t = A, bad, bad_t
        self.shape = A.shape if shape is None else shape
        self.calls = {"A": 0, "A.T": 0}

    def __matmul__(self, V):
        self.calls["A"] += 1
        return np.ones((3, 3)) if self.bad else self.A @ V

    @property
    def T(self):
        return _DuckT(self)


class _DuckT:
    def __init__(self, duck):
        self.duck = duck
        self.shape = duck.shape[::-1]

    def __matmul__(self, U):
        self.duck.calls["A.T"] += 1
        return np.ones((3, 3)) if self.duck.bad_t else self.duck.A.T @ U


def _operator(n_out):
    """A (30, 20) LinearOperator whose products have n_out rows (30 / 20 are right)."""
    return LinearOperator((30, 20), dtype=np.float64, matvec=lambda v: np.ones(n_out),
                          rmatvec=lambda u: np.ones(n_out))


BAD_OPERATORS = [
    ("matvec-length", lambda: _operator(7), ValueError,
     r"^A @ V failed for V of shape \(20, 13\) \(it must return shape \(30, 13\)\): "
     r"cannot reshape array of size 7"),
    ("matmat-shape", lambda: LinearOperator(
        (30, 20), dtype=np.float64, matvec=lambda v: A30 @ v, rmatvec=lambda u: A30.T @ u,
        matmat=lambda V: np.ones((7, V.shape[1]))), ValueError,
     r"^A @ V returned shape \(7, 13\) for V of shape \(20, 13\), expected \(30, 13\)$"),
    ("duck-product", lambda: Duck(A30, bad=True), ValueError,
     r"^A @ V returned shape \(3, 3\) for V of shape \(20, 13\), expected \(30, 13\)$"),
    ("duck-transposed-product", lambda: Duck(A30, bad_t=True), ValueError,
     r"^A.T @ V returned shape \(3, 3\) for V of shape \(30, 13\), expected \(20, 13\)$"),
    # the wide orientation works on A.T: its first product is A.T @ V
    ("duck-wide", lambda: Duck(A30.T, bad_t=True), ValueError,
     r"^A.T @ V returned shape \(3, 3\) for V of shape \(20, 13\), expected \(30, 13\)$"),
    ("float-shape", lambda: Duck(A30, shape=(30.0, 20.0)), ValueError,
     r"^A.shape must be two ints >= 1 \(at least 1 row and 1 column\), got \(30.0, 20.0\)$"),
    ("bool-shape", lambda: Duck(A30, shape=(True, 20)), ValueError,
     r"^A.shape must be two ints >= 1 .*, got \(True, 20\)$"),
    ("zero-shape", lambda: Duck(A30, shape=(0, 20)), ValueError,
     r"^A.shape must be two ints >= 1 .*, got \(0, 20\)$"),
    ("str-shape", lambda: Duck(A30, shape="ab"), ValueError,
     r"^A.shape must be two ints >= 1 .*, got \('a', 'b'\)$"),
    ("scalar-shape", lambda: Duck(A30, shape=5), TypeError,
     r"^A must be an array, a scipy.sparse matrix, a LinearOperator or an object with a "
     r"2-D shape"),
]


@pytest.mark.parametrize("make,exc,match", [b[1:] for b in BAD_OPERATORS],
                         ids=[b[0] for b in BAD_OPERATORS])
def test_randomized_svd_checks_generic_operators(make, exc, match):
    with pytest.raises(exc, match=match):
        randomized_svd(make(), 3, random_state=0)


def test_complex_operator_is_refused():
    # its products would be cast to float64: the SVD of Re(A), with only a ComplexWarning
    A = A30 + 1j * np.arange(600.0).reshape(30, 20)
    with pytest.raises(TypeError, match=r"^A must have a real numeric dtype .*got dtype "
                                        r"complex128$"):
        randomized_svd(aslinearoperator(A), 3, random_state=0)


def test_range_finders_check_the_first_products():
    match = r"^A @ V returned shape \(3, 3\) for V of shape \(20, 3\), expected \(30, 3\)$"
    with pytest.raises(ValueError, match=match):
        randomized_range_finder(Duck(A30, bad=True), 3, random_state=0)
    with pytest.raises(ValueError, match=r"^A.T @ V returned shape \(3, 3\)"):
        adaptive_range_finder(Duck(A30, bad_t=True), 1e-3, n_iter=1, random_state=0)


@pytest.mark.parametrize("shape", [(30, 20), (20, 30)])
@pytest.mark.parametrize("kind", ["duck", "operator", "numpy-int-shape"])
def test_generic_operators_give_the_dense_result(kind, shape):
    A = A30 if shape == (30, 20) else A30.T.copy()
    op = {"duck": Duck(A), "operator": aslinearoperator(A),
          "numpy-int-shape": Duck(A, shape=(np.int64(shape[0]), np.int32(shape[1])))}[kind]
    U, s, Vt = randomized_svd(op, 4, random_state=3)
    Ud, sd, Vtd = randomized_svd(A, 4, random_state=3)
    np.testing.assert_allclose(s, sd, rtol=1e-13)
    np.testing.assert_allclose(U, Ud, atol=1e-12)
    np.testing.assert_allclose(Vt, Vtd, atol=1e-12)
    # and against the exact SVD (A has a flat spectrum: n_iter 7 still leaves ~1e-3)
    se = np.linalg.svd(A, compute_uv=False)
    np.testing.assert_allclose(s, se[:4], rtol=5e-2)


def test_product_check_adds_no_products():
    # the shape check looks at the products that are made anyway, once each way
    duck = Duck(A30)
    randomized_svd(duck, 3, n_iter=2, random_state=0)
    assert duck.calls == {"A": 3, "A.T": 3}


BAD_FLIP = [
    ("1-D", np.ones(3), np.ones(3), ValueError, r"^u must be 2-D, got an array with shape \(3,\)$"),
    ("vt-1-D", np.ones((3, 2)), np.ones(2), ValueError,
     r"^vt must be 2-D, got an array with shape \(2,\)$"),
    ("k-mismatch", np.ones((3, 2)), np.ones((4, 5)), ValueError,
     r"^u and vt must be \(m, k\) and \(k, n\) with the same k, got shapes \(3, 2\) and "
     r"\(4, 5\)$"),
    ("no-rows", np.ones((0, 2)), np.ones((2, 5)), ValueError,
     r"^u must have at least 1 row .*got shape \(0, 2\)$"),
    ("nan", np.array([[1.0, np.nan]]), np.ones((2, 5)), ValueError,
     r"^u must contain only finite values$"),
    ("strings", np.array([["a"]]), np.ones((1, 5)), TypeError,
     r"^u must be an array of real numbers, got dtype <U1$"),
    ("complex", np.ones((3, 2), complex), np.ones((2, 5)), TypeError,
     r"^u must be an array of real numbers, got dtype complex128$"),
]


@pytest.mark.parametrize("u,vt,exc,match", [b[1:] for b in BAD_FLIP],
                         ids=[b[0] for b in BAD_FLIP])
def test_svd_flip_bad_arguments(u, vt, exc, match):
    with pytest.raises(exc, match=match):
        svd_flip(u, vt)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_svd_flip_valid_input_unchanged(dtype):
    U, s, Vt = np.linalg.svd(A30, full_matrices=False)
    U, Vt = -U.astype(dtype), -Vt.astype(dtype)
    U2, Vt2 = svd_flip(U, Vt)
    # the reference convention, written out: the largest |entry| of each column positive
    signs = np.sign(U[np.argmax(np.abs(U), axis=0), np.arange(U.shape[1])])
    np.testing.assert_array_equal(U2, U * signs)
    np.testing.assert_array_equal(Vt2, Vt * signs[:, None])
    assert U2.dtype == dtype and Vt2.dtype == dtype
    np.testing.assert_allclose((U2 * s) @ Vt2, A30, atol=1e-4 if dtype == np.float32 else 1e-12)


def test_svd_flip_integer_input_and_no_columns():
    u, vt = svd_flip(np.array([[1, -3], [2, 1]]), np.array([[1, 1], [1, 2]]))
    np.testing.assert_array_equal(u, [[1.0, 3.0], [2.0, -1.0]])
    np.testing.assert_array_equal(vt, [[1.0, 1.0], [-1.0, -2.0]])
    u, vt = svd_flip(np.ones((3, 0)), np.ones((0, 5)))  # k = 0: nothing to flip
    assert u.shape == (3, 0) and vt.shape == (0, 5)


BAD_SVD_ARGS = [
    (dict(k=0), ValueError, r"^k must be an int in \[1, min\(A.shape\)\] = \[1, 20\], got 0$"),
    (dict(k=-2), ValueError, r"^k must be an int in \[1, min\(A.shape\)\] = \[1, 20\], got -2$"),
    (dict(k=21), ValueError, r"^k must be an int in \[1, min\(A.shape\)\] = \[1, 20\], got 21$"),
    (dict(k=2.0), TypeError, r"^k must be an int in \[1, min\(A.shape\)\] = \[1, 20\], got 2.0$"),
    (dict(k=True), TypeError, r"^k must be an int in .*, got True$"),
    (dict(k=3, oversamples=-1), ValueError, r"^oversamples must be an int >= 0, got -1$"),
    (dict(k=3, oversamples=1.5), TypeError, r"^oversamples must be an int >= 0, got 1.5$"),
    (dict(k=3, n_iter=-1), ValueError, r"^n_iter must be 'auto' or an int >= 0, got -1$"),
    (dict(k=3, n_iter=2.0), TypeError, r"^n_iter must be 'auto' or an int >= 0, got 2.0$"),
    (dict(k=3, n_iter=None), TypeError, r"^n_iter must be 'auto' or an int >= 0, got None$"),
    (dict(k=3, n_iter="AUTO"), ValueError, r"^n_iter must be 'auto' or an int >= 0, got 'AUTO'$"),
    (dict(k=3, random_state=-1), ValueError,
     r"^random_state must be None, an int >= 0, a numpy Generator or RandomState, got -1$"),
    (dict(k=3, random_state=1.5), TypeError,
     r"^random_state must be None, an int >= 0, a numpy Generator or RandomState, got 1.5$"),
]


@pytest.mark.parametrize("kw,exc,match", BAD_SVD_ARGS)
def test_randomized_svd_bad_arguments(kw, exc, match):
    with pytest.raises(exc, match=match):
        randomized_svd(A30, **kw)


def test_randomized_range_finder_size_range():
    with pytest.raises(ValueError, match=r"^size must be an int in \[1, min\(A.shape\)\] = "
                                         r"\[1, 20\], got 0$"):
        randomized_range_finder(A30, 0)


@pytest.mark.parametrize("kw", [dict(k=20), dict(k=3, n_iter=0), dict(k=3, oversamples=0),
                                dict(k=3, random_state=np.random.default_rng(5))])
def test_randomized_svd_valid_arguments_unchanged(kw):
    U, s, Vt = randomized_svd(A30, **kw)
    k = kw["k"]
    assert U.shape == (30, k) and Vt.shape == (k, 20)
    np.testing.assert_allclose((U * s) @ Vt if k == 20 else U.T @ U, A30 if k == 20
                               else np.eye(k), atol=1e-10)
    se = np.linalg.svd(A30, compute_uv=False)
    assert np.all(s <= se[:k] * (1 + 1e-12)) and s[0] >= 0.9 * se[0]


# --- Dask: row blocks of unknown size (boolean indexing leaves NaN chunk sizes) ---------


def _filtered(seed=0, dtype=np.float64):
    """(n, 6) counts as a dask array of 4 row blocks; block 1 has no row with x0 > 0."""
    rng = np.random.default_rng(seed)
    Xn = rng.poisson(1.0, size=(100, 6)).astype(dtype)
    Xn[:, 0] += 1
    Xn[25:50, 0] = 0
    Mn = rng.poisson(2.0, size=(100, 3)).astype(dtype)
    return Xn, Mn, Xn[:, 0] > 0


def test_dask_unknown_size_empty_block_is_skipped():
    da = pytest.importorskip("dask.array")
    from sparsecca.linalg import CrossCovariance, GramStats

    Xn, Mn, keep = _filtered()
    X, M = da.from_array(Xn, chunks=(25, 6)), da.from_array(Mn, chunks=(25, 3))
    mask = X[:, 0] > 0
    assert np.isnan(X[mask].chunks[0]).all()
    st = GramStats.from_dask(X[mask])
    known = GramStats.from_dask(X[mask].compute_chunk_sizes())
    assert 0 in X[mask].compute_chunk_sizes().chunks[0]
    # counts: every tree order sums exactly, so the two are identical
    np.testing.assert_array_equal(st.gram.toarray(), known.gram.toarray())
    np.testing.assert_array_equal(st.colsum, known.colsum)
    assert st.n_samples == known.n_samples == keep.sum()
    np.testing.assert_array_equal(st.gram.toarray(), Xn[keep].T @ Xn[keep])
    K = CrossCovariance.from_dask(X[mask], M[mask], center=True)
    Kk = CrossCovariance.from_dask(X[mask].compute_chunk_sizes(),
                                   M[mask].compute_chunk_sizes(), center=True)
    np.testing.assert_array_equal(K.toarray(), Kk.toarray())
    np.testing.assert_allclose(K.toarray(), CrossCovariance(Xn[keep], Mn[keep],
                                                            center=True).toarray(),
                               rtol=1e-13, atol=1e-13)


def test_dask_unknown_size_real_valued_data():
    # real values: the tree adds the same blocks in another order, equal to rounding
    da = pytest.importorskip("dask.array")
    from sparsecca.linalg import GramStats

    Xn = np.random.default_rng(1).standard_normal((100, 6))
    Xn[25:50, 0] = -np.abs(Xn[25:50, 0])
    X = da.from_array(Xn, chunks=(25, 6))
    st = GramStats.from_dask(X[X[:, 0] > 0])
    keep = Xn[:, 0] > 0
    np.testing.assert_allclose(st.gram.toarray(), Xn[keep].T @ Xn[keep], rtol=1e-13)
    np.testing.assert_allclose(st.colsum, Xn[keep].sum(axis=0), rtol=1e-13, atol=1e-13)


def _dask_bad_unknown(case):
    da = pytest.importorskip("dask.array")
    from sparsecca.linalg import CrossCovariance, GramStats

    Xn, Mn, keep = _filtered()
    if case == "all-empty":
        X = da.from_array(Xn, chunks=(25, 6))
        return lambda: GramStats.from_dask(X[X[:, 0] > 100])
    if case == "nan":
        Xn[60, 3] = np.nan  # row 60 is kept: its block (2) has unknown size
        X = da.from_array(Xn, chunks=(25, 6))
        return lambda: GramStats.from_dask(X[X[:, 0] > 0], name="Y")
    X, M = da.from_array(Xn, chunks=(25, 6)), da.from_array(Mn, chunks=(25, 3))
    # different masks, same (unknown) chunk structure: block 1 has 0 rows of X, 25 of M
    return lambda: CrossCovariance.from_dask(X[X[:, 0] > 0], M[X[:, 0] >= 0])


BAD_DASK = [
    ("all-empty", r"^X must have at least 1 row, got none: every row block computed to "
                  r"0 rows$"),
    ("nan", r"^Y row block 2 \(rows unknown until computed\) must contain only finite "
            r"values, got NaN$"),
    ("rows-differ", r"^X row block 1 \(rows unknown until computed\) and M row block 1 "
                    r"\(rows unknown until computed\) must have the same number of rows, "
                    r"got 0 and 25$"),
]


@pytest.mark.parametrize("case,match", BAD_DASK, ids=[b[0] for b in BAD_DASK])
def test_dask_unknown_size_errors(case, match):
    with pytest.raises(ValueError, match=match):
        _dask_bad_unknown(case)()


def test_dask_known_chunks_beside_unknown_ones():
    # X's sizes computed, M's not: compared when the blocks are computed
    da = pytest.importorskip("dask.array")
    from sparsecca.linalg import CrossCovariance

    Xn, Mn, keep = _filtered()
    X, M = da.from_array(Xn, chunks=(25, 6)), da.from_array(Mn, chunks=(25, 3))
    K = CrossCovariance.from_dask(X[X[:, 0] > 0].compute_chunk_sizes(), M[X[:, 0] > 0])
    np.testing.assert_array_equal(K.toarray(), Xn[keep].T @ Mn[keep])


# --- cca_path / fit_path taus, CCAEngine.x_inverse -------------------------------------


def _views():
    from .conftest import count_problem

    return count_problem(120, 12, 6, seed=31)


BAD_TAUS = [
    ("set", {0.3, 0.1}, TypeError,
     r"^taus must be an ordered sequence \(a list, tuple or array\) of floats in \[0, 1\]: "
     r"the results come in its order; got a set \{0.(1|3), 0.(1|3)\}$"),
    ("frozenset", frozenset([0.3]), TypeError, r"^taus must be an ordered sequence .* got a "
                                               r"frozenset frozenset\(\{0.3\}\)$"),
    ("dict", {0.3: "a"}, TypeError, r"^taus must be an ordered sequence .* got a dict"),
    ("dict-keys", {0.3: "a", 0.1: "b"}.keys(), TypeError,
     r"^taus must be an ordered sequence .* got a dict_keys"),
    ("0-d-array", np.array(0.3), TypeError,
     r"^taus must be a non-empty sequence of floats in \[0, 1\], got array\(0.3\)$"),
    ("above-1", [0.1, 1.5], ValueError, r"^taus\[1\] must be in \[0, 1\] .*got 1.5$"),
    ("nan", (0.1, float("nan")), ValueError, r"^taus\[1\] must be in \[0, 1\] .*got nan$"),
    ("empty", np.array([]), ValueError, r"^taus must be a non-empty sequence"),
    ("scalar", 0.5, TypeError,
     r"taus must be a non-empty sequence of floats in \[0, 1\], got 0.5"),
    ("above-1-int", [0.1, 2], ValueError, r"taus\[1\] must be in \[0, 1\] .*got 2"),
]


@pytest.mark.parametrize("taus,exc,match", [b[1:] for b in BAD_TAUS],
                         ids=[b[0] for b in BAD_TAUS])
def test_cca_path_bad_taus(taus, exc, match):
    # X and Y are not even looked at: taus are checked before any work
    with pytest.raises(exc, match=match):
        cca_path("not a matrix", None, taus, 2)
    X, Y = _views()
    with pytest.raises(exc, match=match):
        SparseCCA(2, solver="dense").fit_path(X, Y, taus)


@pytest.mark.parametrize("taus", [[0.3, 0.1], (0.3, 0.1), np.array([0.3, 0.1]),
                                  (t for t in (0.3, 0.1))])
def test_cca_path_ordered_taus_unchanged(taus):
    X, Y = _views()
    res = cca_path(X, Y, taus, 2, solver="dense")
    for r, tau in zip(res, (0.3, 0.1)):
        ref = SparseCCA(2, tau=tau, solver="dense").fit(X, Y)
        np.testing.assert_allclose(r.correlations, ref.correlations_, rtol=1e-12)


BAD_X_INVERSE = [
    (dict(tail="x"), ValueError,
     r"^tail must be one of \('diagonal', 'identity', 'auto'\), got 'x'$"),
    (dict(tail=None), ValueError, r"^tail must be one of .*, got None$"),
    (dict(rank=0), ValueError, r"^rank must be an int >= 1, got 0$"),
    (dict(rank=2.5), TypeError, r"^rank must be an int >= 1, got 2.5$"),
]


@pytest.mark.parametrize("solver", ["dense", "randomized", "iterative"])
@pytest.mark.parametrize("kw,exc,match", BAD_X_INVERSE)
def test_x_inverse_checks_rank_and_tail_for_every_solver(solver, kw, exc, match):
    X, Y = _views()
    engine = CCAEngine(X, Y, solver=solver, random_state=0)
    with pytest.raises(exc, match=match):
        engine.x_inverse(0.3, **kw)


@pytest.mark.parametrize("tail", ["auto", "diagonal", "identity"])
def test_x_inverse_valid_tail_unchanged_on_dense(tail):
    # the dense inverse ignores rank and tail: C^-1 as before, against numpy
    X, Y = _views()
    engine = CCAEngine(X, Y, solver="dense")
    inv = engine.x_inverse(0.3, rank=4, tail=tail)
    Xd = X.toarray()
    C = 0.7 * Xd.T @ Xd + 0.3 * np.eye(X.shape[1])
    B = np.random.default_rng(0).standard_normal((X.shape[1], 3))
    np.testing.assert_allclose(inv.matmat(B), np.linalg.solve(C, B), rtol=1e-10)


# -- n_components against the distinct columns of X -------------------------------------------

@pytest.mark.parametrize("solver", ["dense", "randomized", "iterative"])
def test_components_beyond_distinct_columns_refused_in_the_users_terms(solver):
    """X with 3 distinct columns of 6: the engine merges them, so 5 components were refused
    inside it with 'd1 = 3', a d1 the user never passed."""
    rng = np.random.default_rng(0)
    X3 = rng.normal(size=(50, 3))
    X, Y = np.hstack([X3, X3]), rng.normal(size=(50, 8))
    pattern = (r"^n_components=5 exceeds min\(d1, d2\) = 3 counting identical columns of X "
               r"once: X has 3 distinct columns of 6 \(the others repeat one of them and are "
               r"merged exactly\); give n_components <= 3$")
    with pytest.raises(ValueError, match=pattern):
        SparseCCA(5, tau=0.5, solver=solver, random_state=0).fit(X, Y)
    with pytest.raises(ValueError, match=pattern):
        SparseCCA(5, tau=0.5, solver=solver, random_state=0).fit_path(X, Y, [0.5])
    engine = CCAEngine(X, Y, solver=solver, random_state=0)
    with pytest.raises(ValueError, match=pattern):
        engine.solve(engine.Y, 0.5, 5)
    # the advice works
    model = SparseCCA(3, tau=0.5, solver=solver, random_state=0).fit(X, Y)
    assert model.correlations_.shape == (3,)
