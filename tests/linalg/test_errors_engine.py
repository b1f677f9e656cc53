"""Bad input to the engine's building blocks (reduced_cca, the operators, block_cg):
a clear ValueError / TypeError naming the argument, the range and the value."""

import numpy as np
import pytest
import scipy.sparse as sp

from sparsecca.linalg import (
    CrossCovariance,
    GramFactor,
    GramStats,
    RegularizedInverse,
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
     r"^omega_max must be a real number > 0 or None, got -1$"),
    ("callback", lambda: (XINV, YINV, CROSS, 3), dict(callback=5), TypeError,
     r"^callback must be callable or None, got 5$"),
    ("on-stall", lambda: (XINV, YINV, CROSS, 3), dict(on_stall=5), TypeError,
     r"^on_stall must be callable or None, got 5$"),
    ("rescue-cost", lambda: (XINV, YINV, CROSS, 3), dict(rescue_cost=-1.0), ValueError,
     r"^rescue_cost must be a real number >= 0 or None, got -1.0$"),
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
