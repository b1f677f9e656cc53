import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

from sparsecca.kernels import aggregate_residuals, slack_update


def _random_nbest(rng, n=30, d2=17, max_m=6, density=0.3):
    m = rng.integers(0, max_m + 1, size=n)
    off = np.concatenate([[0], np.cumsum(m)])
    Y = sp.random(n, d2, density=density, random_state=rng, format="csr") * 5
    Yh = sp.random(off[-1], d2, density=density, random_state=rng, format="csr") * 5
    Y.data = np.round(Y.data)
    Yh.data = np.round(Yh.data)
    w = rng.gamma(1.0, 2.0, size=off[-1])
    w[rng.random(off[-1]) < 0.2] = 0.0
    return Y, Yh, w, off


def _reference_residuals(Y, Yh, w, off):
    """Slow reference: form every residual r_ij densely and average."""
    Yd, Yhd = Y.toarray(), Yh.toarray()
    R = np.zeros_like(Yd)
    for i in range(Yd.shape[0]):
        m = off[i + 1] - off[i]
        for j in range(off[i], off[i + 1]):
            R[i] += w[j] * (Yd[i] - Yhd[j]) / m
    return R


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("dense_input", [False, True])
def test_aggregate_residuals_matches_reference(seed, dense_input):
    rng = np.random.default_rng(seed)
    Y, Yh, w, off = _random_nbest(rng)
    args = (Y.toarray(), Yh.toarray()) if dense_input else (Y, Yh)
    R = aggregate_residuals(*args, w, off)
    assert sp.isspmatrix_csr(R) and R.has_sorted_indices
    np.testing.assert_allclose(R.toarray(), _reference_residuals(Y, Yh, w, off),
                               rtol=1e-12, atol=1e-12)
    assert not np.any(R.data == 0)  # exact zeros are dropped


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_aggregate_residuals_dtype(dtype):
    rng = np.random.default_rng(0)
    Y, Yh, w, off = _random_nbest(rng)
    R = aggregate_residuals(Y, Yh, w, off, dtype=dtype)
    assert R.dtype == dtype
    np.testing.assert_allclose(R.toarray(), _reference_residuals(Y, Yh, w, off),
                               rtol=10 * np.finfo(dtype).eps * 50, atol=1e-5)


def test_identical_candidates_give_zero_rows():
    Y = sp.csr_matrix(np.array([[1.0, 2.0, 0.0]]))
    R = aggregate_residuals(Y, sp.vstack([Y, Y]).tocsr(), np.array([3.0, 1.0]), [0, 2])
    assert R.nnz == 0


def test_identical_candidates_with_float_weights_give_empty_rows():
    # (0.1 + 0.2 + 0.3) y - 0.1 y - 0.2 y - 0.3 y left 3.7e-17 / 5.6e-17 stored
    Y = sp.csr_matrix(np.array([[1.0, 1.0, 0.0], [2.0, 0.0, 3.0]]))
    Yh = sp.csr_matrix(np.repeat(Y.toarray(), 3, axis=0))
    R = aggregate_residuals(Y, Yh, np.array([0.1, 0.2, 0.3, 0.7, 1.3, 2.9]), [0, 3, 6])
    assert R.nnz == 0


def test_features_all_candidates_agree_on_are_not_stored():
    # column 1 (count 3) agrees in every candidate: its residual is exactly 0
    Y = sp.csr_matrix(np.array([[1.0, 3.0, 0.0]]))
    Yh = sp.csr_matrix(np.array([[1.0, 3.0, 0.0], [1.0, 3.0, 0.0], [0.0, 3.0, 1.0]]))
    R = aggregate_residuals(Y, Yh, np.array([0.1, 0.7, 0.2]), [0, 3])
    np.testing.assert_array_equal(R.indices, [0, 2])
    np.testing.assert_allclose(R.data, [0.2 / 3, -0.2 / 3], rtol=1e-15)


@pytest.mark.parametrize("seed", range(3))
def test_stored_entries_are_the_reference_non_zeros(seed):
    # candidates are the gold with a few counts changed, float weights (Algorithm 1's alpha)
    rng = np.random.default_rng(seed)
    n, d2 = 40, 30
    m = rng.integers(0, 6, size=n)
    off = np.concatenate([[0], np.cumsum(m)])
    Yd = np.round(sp.random(n, d2, density=0.3, random_state=rng).toarray() * 4)
    Yhd = np.repeat(Yd, m, axis=0)
    change = rng.random(Yhd.shape) < 0.05
    Yhd[change] = rng.integers(0, 3, size=change.sum())
    w = rng.gamma(1.0, 1.0, size=off[-1])
    R = aggregate_residuals(sp.csr_matrix(Yd), sp.csr_matrix(Yhd), w, off)
    ref = _reference_residuals(sp.csr_matrix(Yd), sp.csr_matrix(Yhd), w, off)
    np.testing.assert_array_equal(R.toarray() != 0, ref != 0)
    np.testing.assert_allclose(R.toarray(), ref, rtol=1e-12, atol=0)


@pytest.mark.parametrize(("args", "exc", "pattern"), [
    (dict(weights=np.ones(3)), ValueError, r"weights must have one entry per candidate \(4\)"),
    (dict(sent_offsets=[0, 4]), ValueError, r"sent_offsets must have n_sentences \+ 1 = 3"),
    (dict(sent_offsets=[0, 1, 3]), ValueError,
     r"end at n_candidates=\d+; got 3 entries, first 0, last 3$"),
    (dict(Y_hat=np.ones((4, 5))), ValueError, "Y_hat has 5 columns, expected 3"),
    (dict(weights=np.array([1, np.nan, 1, 1])), ValueError, "weights must be finite"),
    (dict(Y=np.array([["a", "b", "c"], ["a", "b", "c"]])), TypeError, "real numeric dtype"),
])
def test_aggregate_bad_input(args, exc, pattern):
    kw = dict(Y=np.ones((2, 3)), Y_hat=np.ones((4, 3)), weights=np.ones(4), sent_offsets=[0, 1, 4])
    kw.update(args)
    with pytest.raises(exc, match=pattern):
        aggregate_residuals(**kw)


def _reference_slack(s, L, alpha, off, gamma):
    """Algorithm 1, steps 9-14, written out per sentence in plain Python."""
    alpha = alpha.astype(float).copy()
    xi = np.zeros(len(off) - 1)
    for i in range(len(off) - 1):
        idx = [j for j in range(off[i], off[i + 1]) if L[j] > 0]
        psis = [(1 - s[j]) * L[j] for j in idx]
        pos = [p for p in psis if p > 0]
        xi[i] = min(pos) if pos else 0.0
        if xi[i] > 0:
            for j in idx:
                d = s[j] - (1 - xi[i] / L[j])
                alpha[j] = max(0.0, alpha[j] - gamma * d)
    return xi, alpha


@pytest.mark.parametrize("seed", range(6))
def test_slack_update_matches_reference(seed):
    rng = np.random.default_rng(seed)
    m = rng.integers(1, 8, size=40)
    off = np.concatenate([[0], np.cumsum(m)])
    n = off[-1]
    s = rng.normal(0.5, 1.0, size=n)
    L = rng.integers(0, 4, size=n).astype(float)
    alpha = L.copy()
    xi, new = slack_update(s, L, alpha, off, gamma=0.3)
    rxi, ralpha = _reference_slack(s, L, alpha, off, 0.3)
    np.testing.assert_allclose(xi, rxi, rtol=1e-14, atol=0)
    np.testing.assert_allclose(new, ralpha, rtol=1e-14, atol=0)
    np.testing.assert_array_equal(alpha, L)  # input untouched
    assert np.all(new >= 0)


def test_slack_zero_when_all_margins_satisfied():
    s = np.array([1.5, 2.0, 1.0])
    L = np.array([1.0, 2.0, 3.0])
    xi, new = slack_update(s, L, L, [0, 3], gamma=1.0)
    assert xi[0] == 0 and np.array_equal(new, L)


@pytest.mark.parametrize(("kw", "pattern"), [
    (dict(gamma=0.0), r"gamma must be a finite number > 0, got 0.0"),
    (dict(losses=np.array([-1.0, 1.0])), "losses must be >= 0"),
    (dict(margins=np.ones(3)), "equal length"),
    (dict(sent_offsets=[0, 1]), r"end at n_candidates=\d+; got 2 entries, first 0, last 1$"),
])
def test_slack_bad_input(kw, pattern):
    args = dict(margins=np.ones(2), losses=np.ones(2), alpha=np.ones(2), sent_offsets=[0, 2],
                gamma=0.1)
    args.update(kw)
    with pytest.raises(ValueError, match=pattern):
        slack_update(**args)


def test_kernels_run_without_jit():
    """The same kernels, interpreted (NUMBA_DISABLE_JIT=1), agree with the references."""
    code = textwrap.dedent("""
        import numpy as np, scipy.sparse as sp, numba
        from numba.core import config
        assert config.DISABLE_JIT
        from sparsecca.kernels import aggregate_residuals, slack_update
        Y = sp.csr_matrix(np.array([[1., 0, 2], [0, 1, 1]]))
        Yh = sp.csr_matrix(np.array([[1., 1, 1], [0, 0, 2], [0, 1, 1]]))
        R = aggregate_residuals(Y, Yh, np.array([2., 1., 5.]), [0, 2, 3]).toarray()
        exp = np.array([[0.5, -1, 1], [0, 0, 0]])
        assert np.allclose(R, exp), R
        R = aggregate_residuals(Y, sp.vstack([Y[:1], Y[:1], Y[1:]]).tocsr(),
                                np.array([0.1, 0.2, 0.3]), [0, 2, 3])
        assert R.nnz == 0, R.data
        xi, a = slack_update(np.array([0.2, 2.0]), np.array([1., 1.]), np.array([1., 1.]),
                             [0, 2], 0.5)
        assert np.allclose(xi, [0.8]) and np.allclose(a, [1.0, 0.1]), (xi, a)
        print("ok")
    """)
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# -- arguments a cast or a NaN would silently alter ------------------------------------------

_Y = sp.csr_matrix([[1.0, 0.0], [0.0, 1.0]])
_YH = sp.csr_matrix([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]])
_AGG = dict(Y=_Y, Y_hat=_YH, weights=[1.0, 1.0, 1.0], sent_offsets=[0, 1, 3])


@pytest.mark.parametrize(("kw", "exc", "pattern"), [
    # dtype=int gave [[1, -1], [0, 0]] instead of [[1, -1], [-0.75, 0.75]]
    (dict(dtype=int), ValueError, "dtype must be float32 or float64, got int64"),
    (dict(dtype=bool), ValueError, "dtype must be float32 or float64, got bool"),
    # float16 gave a matrix whose .toarray() raised
    (dict(dtype=np.float16), ValueError, "dtype must be float32 or float64, got float16"),
    (dict(dtype="no such dtype"), ValueError, "dtype must be float32 or float64, got 'no such"),
    (dict(Y=sp.csr_matrix([[1.0, np.nan], [0.0, 1.0]])), ValueError, "Y must have finite values"),
    (dict(Y=np.array([[1.0, 0.0], [np.inf, 1.0]])), ValueError, "Y must have finite values"),
    (dict(Y_hat=sp.csr_matrix([[0.0, 1.0], [1.0, 0.0], [0.5, -np.inf]])), ValueError,
     "Y_hat must have finite values"),
    # offset 2.9 was used as 2
    (dict(sent_offsets=np.array([0, 1.0, 3])), TypeError,
     "sent_offsets must be an array of integers, got dtype float64"),
    (dict(sent_offsets=np.array([0, 1, 3])[None]), ValueError,
     r"sent_offsets must be 1-d, got shape \(1, 3\)"),
    (dict(weights=["a"] * 3), TypeError, "weights must be a real .*array, got <U1"),
    (dict(weights=np.ones(3) + 1j), TypeError, "weights must be a real .*array, got complex128"),
])
def test_aggregate_refuses_bad_dtype_values_and_offsets(kw, exc, pattern):
    with pytest.raises(exc, match=pattern):
        aggregate_residuals(**{**_AGG, **kw})


def test_aggregate_valid_input_unchanged():
    R = aggregate_residuals(**_AGG)
    np.testing.assert_allclose(R.toarray(), [[1.0, -1.0], [-0.75, 0.75]])
    R32 = aggregate_residuals(**{**_AGG, "sent_offsets": np.array([0, 1, 3], np.uint8),
                                 "weights": np.array([1, 1, 1]), "dtype": "float32"})
    assert R32.dtype == np.float32
    np.testing.assert_allclose(R32.toarray(), R.toarray())


_SLACK = dict(margins=np.array([0.2, 2.0, 0.5]), losses=np.array([1.0, 1.0, 2.0]),
              alpha=np.array([1.0, 1.0, 1.0]), sent_offsets=[0, 2, 3], gamma=0.5)


@pytest.mark.parametrize(("kw", "exc", "pattern"), [
    # offset 2.5 was used as 2
    (dict(sent_offsets=np.array([0, 2.5, 3])), TypeError,
     "sent_offsets must be an array of integers, got dtype float64"),
    (dict(sent_offsets=[]), ValueError, r"sent_offsets must start at 0, .*; got 0 entries"),
    (dict(gamma="0.1"), TypeError, "gamma must be a real number, got '0.1'"),
    (dict(gamma=None), TypeError, "gamma must be a real number, got None"),
    (dict(gamma=np.array([0.1, 0.2])), TypeError, "gamma must be a real number"),
    (dict(gamma=True), TypeError, "gamma must be a real number, got True"),
    (dict(alpha=np.array([1.0, -1.0, 1.0])), ValueError, "alpha must be >= 0"),
    (dict(losses=np.array([1, 1, 2]) + 0j), TypeError, "losses must be a real .*complex128"),
])
def test_slack_refuses_bad_gamma_offsets_and_alpha(kw, exc, pattern):
    with pytest.raises(exc, match=pattern):
        slack_update(**{**_SLACK, **kw})


def test_slack_valid_input_unchanged():
    xi, a = slack_update(**_SLACK)
    rxi, ra = _reference_slack(_SLACK["margins"], _SLACK["losses"], _SLACK["alpha"],
                               _SLACK["sent_offsets"], 0.5)
    np.testing.assert_allclose(xi, rxi, rtol=1e-14)
    np.testing.assert_allclose(a, ra, rtol=1e-14)
    xi2, a2 = slack_update(**{**_SLACK, "sent_offsets": np.array([0, 2, 3], np.int32),
                              "gamma": np.float32(0.5), "losses": np.array([1, 1, 2])})
    np.testing.assert_array_equal(xi2, xi)
    np.testing.assert_array_equal(a2, a)
