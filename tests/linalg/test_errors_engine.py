"""Bad input to the engine's building blocks (reduced_cca, the operators, block_cg):
a clear ValueError / TypeError naming the argument, the range and the value."""

import re

import numpy as np
import pytest
import scipy.sparse as sp

from sparsecca.linalg import (
    CCAEngine,
    CrossCovariance,
    FactorizationError,
    GramFactor,
    GramStats,
    RegularizedGram,
    RegularizedInverse,
    SparseCCA,
    block_cg,
    cca_path,
    reduced_cca,
)

X = sp.random(80, 10, density=0.4, random_state=1, format="csr")
Y = sp.random(80, 6, density=0.5, random_state=2, format="csr")
XINV = RegularizedInverse(X, 0.3)
YINV = RegularizedInverse(Y, 0.3)
CROSS = CrossCovariance(X, Y)
XINV_C = RegularizedInverse(X, 0.3, center=True)
YINV_C = RegularizedInverse(Y, 0.3, center=True)


def _streamed_rows_differ():
    # the README's streaming workflow with Y's statistics from half the rows
    sx, sy = GramStats.from_blocks([X]), GramStats.from_blocks([Y[:40]])
    return (RegularizedInverse(GramFactor(sx, center=True), 0.3, "iterative"),
            RegularizedInverse(sy, 0.3, "dense", center=True),
            CrossCovariance.from_blocks([(X, Y)], center=True))


BAD_REDUCED = [
    ("two-taus", lambda: (XINV, RegularizedInverse(Y, 0.8), CROSS, 3), {}, ValueError,
     r"^xinv.tau \(0.3\) and yinv.tau \(0.8\) must be equal$"),
    ("cross-uncentred", lambda: (XINV_C, YINV_C, CROSS, 3), {}, ValueError,
     r"^xinv, yinv and cross must all be centred or all uncentred, got center=True "
     r"\(xinv\), True \(yinv\), False \(cross\)$"),
    ("y-uncentred", lambda: (XINV_C, YINV, CROSS, 3), {}, ValueError,
     r"got center=True \(xinv\), False \(yinv\), False \(cross\)$"),
    ("cross-rows", lambda: (XINV, YINV, CrossCovariance(X[:40], Y[:40]), 3), {}, ValueError,
     r"^xinv has 80 samples, yinv 80, cross 40: all must come from the same rows$"),
    ("streamed-rows", lambda: (*_streamed_rows_differ(), 2), {}, ValueError,
     r"^xinv has 80 samples, yinv 40, cross 80: all must come from the same rows$"),
    ("k-float", lambda: (XINV, YINV, CROSS, 2.7), {}, TypeError,
     r"^n_components must be an int in \[1, min\(d1, d2\)\] = \[1, 6\], got 2.7$"),
    ("k-str", lambda: (XINV, YINV, CROSS, "3"), {}, TypeError,
     r"^n_components must be an int .* got '3'$"),
    ("k-bool", lambda: (XINV, YINV, CROSS, True), {}, TypeError,
     r"^n_components must be an int .* got True$"),
    ("k-0", lambda: (XINV, YINV, CROSS, 0), {}, ValueError,
     r"^n_components must be in \[1, min\(d1, d2\)\] = \[1, 6\] \(d1 = 10, d2 = 6\), got 0$"),
    ("k-large", lambda: (XINV, YINV, CROSS, 7), {}, ValueError,
     r"^n_components must be in \[1, min\(d1, d2\)\] = \[1, 6\] .* got 7$"),
    ("cross-array", lambda: (XINV, YINV, CROSS.toarray(), 3), {}, TypeError,
     r"^cross must be a \(d1, d2\) LinearOperator such as CrossCovariance, got ndarray "
     r"\(wrap an array with scipy.sparse.linalg.aslinearoperator\)$"),
    ("cross-none", lambda: (XINV, YINV, None, 3), {}, TypeError,
     r"^cross must be a \(d1, d2\) LinearOperator such as CrossCovariance, got NoneType$"),
    ("xinv-factor", lambda: (GramFactor(X), YINV, CROSS, 3), {}, TypeError,
     r"^xinv must be a RegularizedInverse, got GramFactor$"),
    ("yinv-array", lambda: (XINV, np.eye(6), CROSS, 3), {}, TypeError,
     r"^yinv must be a RegularizedInverse, got ndarray$"),
    ("swapped", lambda: (YINV, XINV, CROSS, 3), {}, ValueError,
     r"^cross has shape \(10, 6\); xinv is 6 x 6 and yinv 10 x 10, so cross must be "
     r"\(6, 10\)$"),
    ("cross-transposed", lambda: (XINV, YINV, CrossCovariance(Y, X), 3), {}, ValueError,
     r"^cross has shape \(6, 10\); xinv is 10 x 10 and yinv 6 x 6, so cross must be "
     r"\(10, 6\)$"),
    ("oversamples-str", lambda: (XINV, YINV, CROSS, 3), dict(oversamples="a"), TypeError,
     r"^oversamples must be an int >= 0, got 'a'$"),
    ("oversamples-neg", lambda: (XINV, YINV, CROSS, 3), dict(oversamples=-5), ValueError,
     r"^oversamples must be an int >= 0, got -5$"),
    ("tol-neg", lambda: (XINV, YINV, CROSS, 3), dict(tol=-1), ValueError,
     r"^tol must be in \(0, 1\), got -1.0$"),
    ("tol-str", lambda: (XINV, YINV, CROSS, 3), dict(tol="a"), TypeError,
     r"^tol must be a real number in \(0, 1\), got 'a'$"),
    ("omega-max", lambda: (XINV, YINV, CROSS, 3), dict(omega_max=-1), ValueError,
     r"^omega_max must be a finite number > 0, got -1$"),
    ("callback", lambda: (XINV, YINV, CROSS, 3), dict(callback=5), TypeError,
     r"^callback must be callable or None, got 5$"),
    ("on-stall", lambda: (XINV, YINV, CROSS, 3), dict(on_stall=5), TypeError,
     r"^on_stall must be callable or None, got 5$"),
    ("rescue-cost", lambda: (XINV, YINV, CROSS, 3), dict(rescue_cost=-1.0), ValueError,
     r"^rescue_cost must be a finite number >= 0, got -1.0$"),
]


@pytest.mark.parametrize("case,args,kw,exc,match", BAD_REDUCED,
                         ids=[c[0] for c in BAD_REDUCED])
def test_reduced_cca_bad_arguments(case, args, kw, exc, match):
    with pytest.raises(exc, match=match):
        reduced_cca(*args(), **kw)


def test_reduced_cca_matching_operators_still_solve():
    res = reduced_cca(XINV_C, YINV_C, CrossCovariance(X, Y, center=True), 3)
    assert res.correlations.shape == (3,) and np.all(res.correlations < 1 / 0.7)
    # a cross-covariance as a plain LinearOperator carries no centring or rows to compare
    from scipy.sparse.linalg import aslinearoperator
    other = reduced_cca(XINV, YINV, aslinearoperator(CROSS.toarray()), 3)
    np.testing.assert_allclose(other.correlations, reduced_cca(XINV, YINV, CROSS, 3)
                               .correlations, rtol=1e-10)


# -- boolean options: a truthy string such as 'no' must not switch an option on ------------

def _stream(counter):
    """Row blocks of X that count how many were read."""
    for lo in range(0, 80, 20):
        counter.append(lo)
        yield X[lo:lo + 20]


BOOL_OPTIONS = [
    ("cca_path", lambda v: cca_path(X, Y, [0.3], 2, center=v), "center"),
    ("RegularizedGram", lambda v: RegularizedGram(X, 0.3, center=v), "center"),
    ("RegularizedGram.from_blocks", lambda v: RegularizedGram.from_blocks([X], 0.3, center=v),
     "center"),
    ("CrossCovariance", lambda v: CrossCovariance(X, Y, center=v), "center"),
    ("CrossCovariance.from_blocks", lambda v: CrossCovariance.from_blocks([(X, Y)], center=v),
     "center"),
    ("GramFactor", lambda v: GramFactor(X, center=v), "center"),
    ("RegularizedInverse", lambda v: RegularizedInverse(X, 0.3, center=v), "center"),
    ("CCAEngine-center", lambda v: CCAEngine(X, Y, center=v), "center"),
    ("CCAEngine-merge", lambda v: CCAEngine(X, Y, merge_duplicates=v), "merge_duplicates"),
    ("CCAEngine-adaptive", lambda v: CCAEngine(X, Y, adaptive_rank=v), "adaptive_rank"),
    ("CCAEngine-lowrank-y", lambda v: CCAEngine(X, Y, lowrank_y=v), "lowrank_y"),
]


@pytest.mark.parametrize("case,build,name", BOOL_OPTIONS, ids=[c[0] for c in BOOL_OPTIONS])
@pytest.mark.parametrize("value", ["no", "False", 1, None])
def test_boolean_options_refuse_non_bools(case, build, name, value):
    with pytest.raises(TypeError, match=rf"^{name} must be True or False, got {value!r}$"):
        build(value)


def test_boolean_options_take_numpy_bools():
    ref = RegularizedGram(X, 0.3, center=True).toarray()
    np.testing.assert_array_equal(RegularizedGram(X, 0.3, center=np.bool_(True)).toarray(),
                                  ref)


def test_from_blocks_checks_its_arguments_before_reading_the_stream():
    read = []
    with pytest.raises(ValueError, match=r"^tau must be in \[0, 1\] .*got 2.0$"):
        RegularizedGram.from_blocks(_stream(read), tau=2.0)
    with pytest.raises(TypeError, match=r"^center must be True or False, got 'no'$"):
        RegularizedGram.from_blocks(_stream(read), tau=0.5, center="no")
    with pytest.raises(TypeError, match=r"^center must be True or False, got 'no'$"):
        CrossCovariance.from_blocks(zip(_stream(read), [Y[:20]] * 4), center="no")
    assert read == []


@pytest.mark.parametrize("fit", [
    lambda k: cca_path(X, Y, [0.3, 0.5], k),
    lambda k: SparseCCA(k).fit(X, Y),
    lambda k: SparseCCA(k).fit_path(X, Y, [0.3, 0.5]),
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
    engine = CCAEngine(X, Y)
    for bad in ("x", "Z", 0, None):
        with pytest.raises(ValueError, match=rf"^which must be one of \('X', 'Y'\), got "
                                             rf"{re.escape(repr(bad))}$"):
            engine.column_sums(bad)
    np.testing.assert_allclose(engine.column_sums("Y"), np.asarray(Y.sum(axis=0)).ravel())


# -- block_cg -------------------------------------------------------------------------------

A_SPD = RegularizedGram(X, 0.3).toarray()

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

XD = X.toarray()
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
    a, b = GramStats.from_blocks([X[:30]]), GramStats.from_blocks([X[30:]])
    total = GramStats(a.gram + b.gram, a.colsum + b.colsum, a.n_samples + b.n_samples)
    np.testing.assert_allclose(RegularizedGram(total, 0.3, center=True).toarray(),
                               RegularizedGram(X, 0.3, center=True).toarray(), atol=1e-12)


# -- low-rank factor and its inverse --------------------------------------------------------

X12 = sp.random(80, 12, density=0.4, random_state=1, format="csr")
RINV = RegularizedInverse(X12, 0.3, "randomized", rank=4)

BAD_LOWRANK_BLOCKS = [
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


@pytest.mark.parametrize("case,call,match", BAD_LOWRANK_BLOCKS,
                         ids=[c[0] for c in BAD_LOWRANK_BLOCKS])
def test_lowrank_blocks_are_checked(case, call, match):
    with pytest.raises(ValueError, match=match):
        call()


BAD_LOWRANK = [
    (dict(tol=1e-6, max_rank=0), ValueError, r"^max_rank must be an int >= 1, got 0$"),
    (dict(tol=1e-6, max_rank=-3), ValueError, r"^max_rank must be an int >= 1, got -3$"),
    (dict(tol=1e-12, max_rank=2.9), TypeError, r"^max_rank must be an int >= 1, got 2.9$"),
    (dict(rank=4, block_size=0), ValueError, r"^block_size must be an int >= 1, got 0$"),
    (dict(rank=4, block_size=2.5), TypeError, r"^block_size must be an int >= 1, got 2.5$"),
    (dict(rank=4, n_iter="a"), TypeError, r"^n_iter must be an int >= 0, got 'a'$"),
    (dict(tol="a"), TypeError, r"^tol must be a real number, got 'a'$"),
]


@pytest.mark.parametrize("kw,exc,match", BAD_LOWRANK, ids=[repr(k) for k, _, _ in BAD_LOWRANK])
def test_gram_factor_lowrank_bad_arguments(kw, exc, match):
    with pytest.raises(exc, match=match):
        GramFactor(X12).lowrank(**kw)


def test_tail_diagonal_needs_a_factor():
    with pytest.raises(ValueError, match=r"^tail_diagonal needs a low-rank factor: call "
                                         r"lowrank first$"):
        GramFactor(X12).tail_diagonal()
