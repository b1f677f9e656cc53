"""Bad input: a clear ValueError / TypeError naming the argument, the range and the value."""

import re

import numpy as np
import pytest
import scipy.sparse as sp

from sparsecca.linalg import CCAEngine, SingularCovarianceError, SparseCCA, cca_path

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


def test_transform_and_engine_errors():
    m = SparseCCA(2, tau=0.5).fit(X0, Y0)
    with pytest.raises(ValueError, match=r"X must have 5 features as in fit, got 4"):
        m.transform(X0[:, :4])
    with pytest.raises(ValueError, match=r"Y must have 3 features as in fit, got 2"):
        m.transform(X0, Y0[:, :2])
    engine = CCAEngine(X0, Y0)
    with pytest.raises(ValueError, match=r"M must have d2 = 3 columns like Y, got 2"):
        engine.solve(Y0[:, :2], 0.5, 2)
    with pytest.raises(ValueError, match=r"M must have the same number of rows as X"):
        engine.solve(Y0[:5], 0.5, 2)
    with pytest.raises(ValueError, match=r"^M has values too large for float64"):
        engine.solve(Y0 * 1e300, 0.5, 2)
    with pytest.raises(TypeError, match=r"taus must be a non-empty sequence of floats in "
                                        r"\[0, 1\], got 0.5"):
        cca_path(X0, Y0, 0.5, 2)
    with pytest.raises(ValueError, match=r"taus\[1\] must be in \[0, 1\] .*got 2"):
        SparseCCA(2).fit_path(X0, Y0, [0.1, 2])
