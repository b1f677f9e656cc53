"""Boosting-path, path-accuracy and perceptron kernels against slow NumPy references."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

from sparsecca.kernels import boosting_path, path_losses, perceptron_train, weight_path_losses
from sparsecca.kernels._boosting import _l1_step

# -- slow references -------------------------------------------------------------------------


def _stats(D, m0, alpha, rescale=False):
    """ExpLoss, W+ and W- recomputed from scratch (dense); optionally all scaled by one factor
    (the largest pair weight set to 1: steps and feature choices do not depend on the scale)."""
    M = m0 + D @ alpha
    w = np.exp(-(M - M.min())) if rescale else np.exp(-M)
    return w.sum(), ((D == 1) * w[:, None]).sum(0), ((D == -1) * w[:, None]).sum(0)


def _ref_ck_path(D, m0, n_rounds, eps):
    """Collins & Koo, brute force: every round re-derives every W sum from the margins."""
    alpha = np.zeros(D.shape[1])
    feats, deltas, obj = [], [], [1.0]
    log_z0 = logsumexp(-m0)
    for _ in range(n_rounds):
        z, wp, wm = _stats(D, m0, alpha, rescale=True)
        gain = np.abs(np.sqrt(wp) - np.sqrt(wm))
        k = int(np.argmax(gain))
        if gain[k] ** 2 <= 1e-13 * z:
            break
        d = 0.5 * np.log((wp[k] + eps * z) / (wm[k] + eps * z))
        alpha[k] += d
        feats.append(k)
        deltas.append(d)
        obj.append(np.exp(logsumexp(-(m0 + D @ alpha)) - log_z0))
    return np.array(feats), np.array(deltas), np.array(obj)


def _ref_l1_path(D, m0, n_rounds, c):
    """L1 objective, brute force: each feature's 1-d minimiser by a numerical line search."""
    z0 = np.exp(-m0).sum()

    def J(alpha):
        return np.exp(-(m0 + D @ alpha)).sum() / z0 + c * np.abs(alpha).sum()

    alpha = np.zeros(D.shape[1])
    feats, deltas, obj = [], [], [1.0]
    for _ in range(n_rounds):
        j0 = J(alpha)
        best = (0.0, -1, 0.0)
        for k in range(D.shape[1]):
            def f(a, k=k):
                x = alpha.copy()
                x[k] = a
                return J(x)
            # the minimiser lies within +-30 of the current weight for these data
            r = minimize_scalar(f, bounds=(alpha[k] - 30, alpha[k] + 30), method="bounded",
                                options=dict(xatol=1e-10))
            a = r.x if f(r.x) < f(0.0) else 0.0  # the kink at 0 is an exact candidate
            if j0 - f(a) > best[0]:
                best = (j0 - f(a), k, a)
        if best[1] < 0 or best[0] <= 1e-12:
            break
        _, k, a = best
        deltas.append(a - alpha[k])
        alpha[k] = a
        feats.append(k)
        obj.append(J(alpha))
    return np.array(feats), np.array(deltas), np.array(obj)


def _random_pairs(seed, n_pairs=40, n_features=7, density=0.35):
    rng = np.random.default_rng(seed)
    while True:
        D = rng.choice([-1.0, 0.0, 1.0], size=(n_pairs, n_features),
                       p=[density / 2, 1 - density, density / 2])
        # distinct, nonzero columns: no exact ties between features
        if np.all(np.abs(D).sum(0) > 0) and len({c.tobytes() for c in D.T}) == n_features:
            break
    return D, rng.normal(0.0, 1.0, n_pairs)


# -- boosting path -----------------------------------------------------------------------------


def test_hand_computed_first_round():
    # three pairs, margins 0 -> w = (1, 1, 1), Z = 3
    # feature 0: W+ = 2 (pairs 0, 1), W- = 1 (pair 2); feature 1: W+ = 1, W- = 1
    D = np.array([[1.0, 0.0], [1.0, -1.0], [-1.0, 1.0]])
    eps = 0.0025
    f, d, obj = boosting_path(sp.csr_matrix(D), np.zeros(3), 1, eps=eps)
    assert f.tolist() == [0]
    step = 0.5 * np.log((2 + 3 * eps) / (1 + 3 * eps))
    assert d[0] == pytest.approx(step, rel=1e-14)
    # new loss: pairs 0, 1 gain margin step, pair 2 loses it
    assert obj[1] == pytest.approx((2 * np.exp(-step) + np.exp(step)) / 3, rel=1e-14)
    # without smoothing the step is 0.5 log 2 and the loss 2 sqrt(2)
    f, d, obj = boosting_path(sp.csr_matrix(D), np.zeros(3), 1, eps=1e-12)
    assert d[0] == pytest.approx(0.5 * np.log(2), rel=1e-9)
    assert obj[1] * 3 == pytest.approx(2 * np.sqrt(2), rel=1e-9)


def test_hand_computed_margins_and_w_sums():
    # margins (0, log 2, -log 2) -> w = (1, 1/2, 2); feature 0 fires +1 on pairs 0, 1 and -1 on
    # pair 2: W+ = 1.5, W- = 2, so |sqrt(W+) - sqrt(W-)| = 0.1589; feature 1 (+1 on pair 2
    # only): W+ = 2, W- = 0, gap sqrt(2): feature 1 wins
    D = np.array([[1.0, 0.0], [1.0, 0.0], [-1.0, 1.0]])
    m0 = np.array([0.0, np.log(2), -np.log(2)])
    z, wp, wm = _stats(D, m0, np.zeros(2))
    np.testing.assert_allclose([z, *wp, *wm], [3.5, 1.5, 2.0, 2.0, 0.0])
    eps = 0.01
    f, d, obj = boosting_path(sp.csr_matrix(D), m0, 1, eps=eps)
    assert f.tolist() == [1]
    assert d[0] == pytest.approx(0.5 * np.log((2 + eps * 3.5) / (0 + eps * 3.5)))
    assert obj[1] == pytest.approx((1 + 0.5 + 2 * np.exp(-d[0])) / 3.5)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("eps", [0.0025, 0.1])
def test_ck_path_matches_brute_force(seed, eps):
    D, m0 = _random_pairs(seed)
    f, d, obj = boosting_path(sp.csr_matrix(D), m0, 25, eps=eps)
    rf, rd, robj = _ref_ck_path(D, m0, 25, eps)
    np.testing.assert_array_equal(f, rf)
    np.testing.assert_allclose(d, rd, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(obj, robj, rtol=1e-9)
    assert np.all(np.diff(obj) < 1e-12)  # the smoothed step never increases ExpLoss here


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("c", [0.003, 0.03])
def test_l1_path_matches_brute_force(seed, c):
    D, m0 = _random_pairs(seed, n_pairs=30, n_features=5)
    f, d, obj = boosting_path(sp.csr_matrix(D), m0, 12, l1=c)
    rf, rd, robj = _ref_l1_path(D, m0, 12, c)
    # the reference stops once its numerical gains fall below 1e-12; the kernel may take a
    # few more (negligible) exact steps
    n = rf.size
    assert f.size >= n
    np.testing.assert_array_equal(f[:n], rf)
    np.testing.assert_allclose(d[:n], rd, rtol=1e-6, atol=1e-7)
    # the closed form is exact, the reference's numerical line search only close (1e-8)
    np.testing.assert_allclose(obj[:n + 1], robj, rtol=1e-8)
    assert obj[n] - obj[-1] < 1e-10
    assert np.all(np.diff(obj) <= 1e-12)  # exact coordinate descent is monotone


def test_l1_path_converges_and_stops():
    D, m0 = _random_pairs(3, n_pairs=30, n_features=5)
    f, _, obj = boosting_path(sp.csr_matrix(D), m0, 5000, l1=0.05)
    assert f.size < 5000  # stopped: no coordinate can lower the objective
    # at the end every coordinate is optimal: KKT within tolerance
    alpha = np.zeros(5)
    np.add.at(alpha, f, boosting_path(sp.csr_matrix(D), m0, 5000, l1=0.05)[1])
    z0 = np.exp(-m0).sum()
    w = np.exp(-(m0 + D @ alpha)) / z0
    grad = -(D * w[:, None]).sum(0)
    on = alpha != 0
    np.testing.assert_allclose(grad[on], -0.05 * np.sign(alpha[on]), atol=1e-6)
    assert np.all(np.abs(grad[~on]) <= 0.05 + 1e-9)


@pytest.mark.parametrize("wp,wm,a,c", [
    (2.0, 1.0, 0.0, 0.1), (1.0, 2.0, 0.0, 0.1), (0.3, 0.3, 0.5, 0.2), (1.0, 0.0, 0.0, 0.5),
    (0.0, 1.0, 0.0, 0.5), (0.0, 0.0, 1.0, 0.5), (1.0, 1.2, -2.0, 0.05), (5.0, 0.01, 3.0, 1.0),
    (0.01, 0.01, 0.0, 1.0), (1e-6, 3.0, 0.2, 1e-3),
])
def test_l1_step_matches_line_search(wp, wm, a, c):
    def g(x):
        return wp * np.exp(-(x - a)) + wm * np.exp(x - a) + c * abs(x)

    a_new, gain = _l1_step(wp, wm, a, c)
    r = minimize_scalar(g, bounds=(a - 40, a + 40), method="bounded", options=dict(xatol=1e-12))
    ref = min(g(r.x), g(0.0))
    assert g(a_new) == pytest.approx(ref, rel=1e-9, abs=1e-12)
    assert gain == pytest.approx(g(a) - ref, rel=1e-7, abs=1e-12)


def test_boosting_degenerate_inputs():
    # no pairs, no features, all-zero differences: no rounds, no NaN
    f, d, obj = boosting_path(sp.csr_matrix((0, 4)), np.zeros(0), 10)
    assert f.size == 0 and obj.tolist() == [0.0]
    f, d, obj = boosting_path(sp.csr_matrix((3, 0)), np.zeros(3), 10)
    assert f.size == 0 and obj.tolist() == [1.0]
    f, d, obj = boosting_path(sp.csr_matrix((3, 4)), np.array([1.0, -2.0, 0.0]), 10)
    assert f.size == 0 and obj.tolist() == [1.0]
    # W+ == W- for every feature: nothing to gain
    D = np.array([[1.0], [-1.0]])
    f, _, _ = boosting_path(sp.csr_matrix(D), np.zeros(2), 10)
    assert f.size == 0


@pytest.mark.parametrize("offset", [-800.0, 800.0])
def test_boosting_huge_margins_rescale(offset):
    # exp(-M) overflows / underflows for every pair unless the kernel shifts the margins
    D, m0 = _random_pairs(1)
    f, d, obj = boosting_path(sp.csr_matrix(D), m0 + offset, 40, eps=0.0025)
    rf, rd, robj = _ref_ck_path(D, m0, 40, 0.0025)
    np.testing.assert_array_equal(f, rf)
    np.testing.assert_allclose(d, rd, rtol=1e-9)
    np.testing.assert_allclose(obj, robj, rtol=1e-9)


def test_boosting_loss_falling_by_hundreds_of_orders():
    # one pair dominates by e^2000: its loss collapses over the rounds, which cancels the
    # incremental sums catastrophically unless they are re-derived from the margins
    D, _ = _random_pairs(0)
    m0 = np.linspace(-1000, 1000, D.shape[0])
    f, d, obj = boosting_path(sp.csr_matrix(D), m0, 300, eps=0.0025)
    assert np.all(np.isfinite(d)) and np.all(np.isfinite(obj))
    assert obj[-1] < 1e-100 and np.all(np.diff(obj) <= 0)
    # the objective is the true normalised loss of the accumulated weights
    alpha = np.zeros(D.shape[1])
    np.add.at(alpha, f, d)
    assert np.log(obj[-1]) == pytest.approx(logsumexp(-(m0 + D @ alpha)) - logsumexp(-m0),
                                            rel=1e-9)


@pytest.mark.parametrize("kwargs,err,match", [
    (dict(n_rounds=-1), ValueError, "n_rounds must be an int >= 0, got -1"),
    (dict(n_rounds=2.5), TypeError, "n_rounds must be an int"),
    (dict(n_rounds=5, eps=0.0), ValueError, "eps must be a finite number > 0"),
    (dict(n_rounds=5, l1=-1.0), ValueError, "l1 must be a finite number >= 0"),
    (dict(n_rounds=5, refresh=0), ValueError, "refresh must be an int >= 1"),
])
def test_boosting_path_bad_params(kwargs, err, match):
    with pytest.raises(err, match=match):
        boosting_path(sp.csr_matrix(np.eye(2)), np.zeros(2), **kwargs)


def test_boosting_path_n_rounds_must_fit_in_memory(monkeypatch):
    # 10**13 rounds failed inside numba: "MemoryError: Allocation failed (probably too large)"
    from sparsecca.kernels import _boosting as kb

    D, m0 = sp.csr_matrix(np.eye(2)), np.zeros(2)  # separable: every round is run
    with pytest.raises(ValueError, match=r"^n_rounds must be an int in \[0, \d+\], got "
                                         r"10000000000000 \(the path is allocated up front, "
                                         r"24 bytes a round, and must fit in memory\)$"):
        boosting_path(D, m0, 10**13)
    # the bound: physical memory / 24 bytes a round ...
    monkeypatch.setattr(kb, "_physical_memory", lambda: 24 * 1000 + 23)
    assert kb.max_rounds() == 1000
    with pytest.raises(ValueError, match=r"^n_rounds must be an int in \[0, 1000\], got 1001 "):
        boosting_path(D, m0, 1001)
    assert boosting_path(D, m0, 1000)[0].size == 1000
    # ... and at most 2**31 - 1, also where the memory is unknown
    for mem in (2**50, None):
        monkeypatch.setattr(kb, "_physical_memory", lambda mem=mem: mem)
        assert kb.max_rounds() == 2**31 - 1
        with pytest.raises(ValueError, match=r"in \[0, 2147483647\], got 2147483648 "):
            boosting_path(D, m0, 2**31)


@pytest.mark.parametrize("D,m0,err,match", [
    (np.eye(2), np.zeros(2), TypeError, "D must be a scipy.sparse matrix"),
    (sp.csr_matrix(2 * np.eye(2)), np.zeros(2), ValueError, r"values in \{-1, 0, \+1\}.*got 2"),
    (sp.csr_matrix(np.eye(2)), np.zeros(3), ValueError, r"margins must have shape \(2,\)"),
    (sp.csr_matrix(np.eye(2)), np.array([0.0, np.nan]), ValueError, "margins must be finite"),
])
def test_boosting_path_bad_input(D, m0, err, match):
    with pytest.raises(err, match=match):
        boosting_path(D, m0, 3)


# -- accuracy along a path -------------------------------------------------------------------


def _ref_path_losses(H, base, off, losses, feats, deltas):
    Hd = H.toarray()
    alpha = np.zeros(H.shape[1])
    out = []
    for t in range(len(feats) + 1):
        if t:
            alpha[feats[t - 1]] += deltas[t - 1]
        s = base + Hd @ alpha
        total = 0
        for i in range(len(off) - 1):
            if off[i + 1] > off[i]:
                total += losses[off[i] + int(np.argmax(s[off[i]:off[i + 1]]))]
        out.append(total)
    return np.array(out)


@pytest.mark.parametrize("seed", range(5))
def test_path_losses_match_recomputation(seed):
    rng = np.random.default_rng(seed)
    m = rng.integers(0, 6, size=40)
    off = np.concatenate([[0], np.cumsum(m)])
    n = off[-1]
    H = sp.random(n, 12, density=0.3, random_state=rng, format="csr")
    H.data = np.ceil(H.data * 3)
    base = rng.normal(size=n)
    losses = rng.integers(0, 5, size=n)
    feats = rng.integers(0, 12, size=60)
    deltas = rng.normal(size=60)
    got = path_losses(H, base, off, losses, feats, deltas)
    np.testing.assert_array_equal(got, _ref_path_losses(H, base, off, losses, feats, deltas))


def test_path_losses_ties_go_to_earlier_candidate():
    # two identical candidates with different losses: the earlier one is always chosen
    H = sp.csr_matrix(np.array([[1.0], [1.0], [0.0]]))
    out = path_losses(H, np.zeros(3), [0, 3], np.array([4, 0, 2]), [0, 0], [1.0, -3.0])
    assert out.tolist() == [4, 4, 2]  # t=0: all tie -> cand 0; t=1: 0 and 1 tie; t=2: cand 2


# -- perceptron ------------------------------------------------------------------------------


def _ref_perceptron(H, base, off, oracle, losses, orders, b, averaged):
    """Slow reference: stores w after every example and averages explicitly."""
    Hd = H.toarray()
    w = np.zeros(H.shape[1])
    history = []
    out, n_upd = [], []
    for order in orders:
        u = 0
        for i in order:
            if off[i + 1] > off[i]:
                s = b * base[off[i]:off[i + 1]] + Hd[off[i]:off[i + 1]] @ w
                c = off[i] + int(np.argmax(s))
                if losses[c] > losses[oracle[i]]:
                    w = w + Hd[oracle[i]] - Hd[c]
                    u += 1
            history.append(w.copy())
        out.append(np.mean(history, axis=0) if averaged else w.copy())
        n_upd.append(u)
    return np.array(out), np.array(n_upd)


def _random_perceptron_problem(seed, n_sent=30, n_feat=15):
    rng = np.random.default_rng(seed)
    m = rng.integers(0, 7, size=n_sent)
    off = np.concatenate([[0], np.cumsum(m)])
    n = off[-1]
    H = sp.random(n, n_feat, density=0.3, random_state=rng, format="csr")
    H.data = np.ceil(H.data * 3)
    base = rng.normal(size=n)
    losses = rng.integers(0, 6, size=n)
    oracle = np.array([off[i] + int(np.argmin(losses[off[i]:off[i + 1]])) if m[i] else 0
                       for i in range(n_sent)])
    orders = np.stack([rng.permutation(n_sent) for _ in range(4)])
    return H, base, off, oracle, losses, orders


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("averaged", [True, False])
@pytest.mark.parametrize("b", [0.0, 0.7])
def test_perceptron_matches_explicit_average(seed, averaged, b):
    args = _random_perceptron_problem(seed)
    W, n_upd = perceptron_train(*args, b, averaged=averaged)
    rW, rn = _ref_perceptron(*args, b, averaged)
    assert n_upd.sum() > 0  # the problem makes the perceptron work
    np.testing.assert_array_equal(n_upd, rn)
    np.testing.assert_allclose(W, rW, rtol=1e-12, atol=1e-12)


def test_perceptron_no_update_when_oracle_chosen():
    # the decoder already prefers the oracle: w stays 0
    H = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0]]))
    W, n = perceptron_train(H, np.array([1.0, 0.0]), [0, 2], [0], np.array([0, 3]),
                            [[0], [0]], 1.0)
    assert n.tolist() == [0, 0] and not W.any()
    # a tie in loss between chosen and oracle is no mistake either
    W, n = perceptron_train(H, np.array([0.0, 1.0]), [0, 2], [0], np.array([1, 1]), [[0]], 1.0)
    assert n.tolist() == [0]


@pytest.mark.parametrize("kwargs,err,match", [
    (dict(oracle=[5]), ValueError, "oracle\\[i\\] must be a candidate of sentence i"),
    (dict(oracle=[0, 1]), ValueError, r"oracle must have shape \(1,\)"),
    (dict(orders=[0, 0]), ValueError, "orders must be a 2-d int array"),
    (dict(orders=[[3]]), ValueError, r"orders must hold sentence indices in \[0, 1\)"),
    (dict(losses=[0]), ValueError, r"losses must have shape \(2,\)"),
    # any finite weight: the message said "a finite number >= -inf"
    (dict(decoder_weight=np.inf), ValueError, r"^decoder_weight must be a finite number, got "
                                              r"inf$"),
    (dict(decoder_weight=-np.inf), ValueError, r"^decoder_weight must be a finite number, got "
                                               r"-inf$"),
    (dict(base_scores=[0.0, np.nan]), ValueError, "base_scores must be finite"),
    # the numba product decoder_weight * base_scores was -inf for candidate 1, without a word
    (dict(decoder_weight=-1e308, base_scores=[0.0, 4.0]), ValueError,
     r"^decoder_weight times base_scores overflows float64 \(largest \|value\| 4\): "
     r"decoder_weight must be in \[-4\.494e\+307, 4\.494e\+307\], got -1e\+308$"),
])
def test_perceptron_bad_input(kwargs, err, match):
    args = dict(H=sp.csr_matrix(np.eye(2)), base_scores=[0.0, 1.0], sent_offsets=[0, 2],
                oracle=[0], losses=[0, 1], orders=[[0]], decoder_weight=1.0)
    args.update(kwargs)
    with pytest.raises(err, match=match):
        perceptron_train(**args)


def test_kernels_run_without_jit():
    """The same kernels, interpreted (NUMBA_DISABLE_JIT=1), agree with the references."""
    code = textwrap.dedent("""
        import numpy as np, scipy.sparse as sp
        from numba.core import config
        assert config.DISABLE_JIT
        from sparsecca.kernels import boosting_path, path_losses, perceptron_train
        from sparsecca.kernels import weight_path_losses
        out = weight_path_losses([0., 1., 0.], [1., 0., 0.], [0, 2, 3], [3, 0, 1], [0., 1., 2.])
        assert out.tolist() == [1, 4, 4], out  # w = 1: a tie, the earlier candidate wins
        D = sp.csr_matrix(np.array([[1., 0], [1, -1], [-1, 1]]))
        f, d, obj = boosting_path(D, np.zeros(3), 1, eps=0.0025)
        assert f.tolist() == [0] and np.isclose(d[0], 0.5 * np.log(2.0075 / 1.0075)), d
        f, d, obj = boosting_path(D, np.zeros(3), 3, l1=0.01)
        assert f[0] == 0 and np.all(np.diff(obj) <= 1e-12), obj
        H = sp.csr_matrix(np.array([[1.], [1.], [0.]]))
        out = path_losses(H, np.zeros(3), [0, 3], np.array([4, 0, 2]), [0, 0], [1., -3.])
        assert out.tolist() == [4, 4, 2], out
        H = sp.csr_matrix(np.array([[1., 0], [0, 1]]))
        W, n = perceptron_train(H, np.array([0., 1.]), [0, 2], [0], np.array([0, 2]),
                                [[0], [0]], 1.0)
        # epoch 1: candidate 1 wins (1 > 0), a mistake: w = (1, -1); epoch 2: candidate 0
        # wins (1 > 0), no update; the average of (1, -1) and (1, -1) is (1, -1)
        assert n.tolist() == [1, 0] and np.allclose(W, [[1, -1], [1, -1]]), (n, W)
        print("ok")
    """)
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# -- weight path (Eq. 13 tuning) ------------------------------------------------------------

def _weight_path_reference(base, p, off, losses, weights):
    """Slow reference: per w and sentence, the first index of the maximum."""
    out = []
    for w in weights:
        total = 0
        for i in range(len(off) - 1):
            if off[i + 1] == off[i]:
                continue
            v = [base[r] + w * p[r] for r in range(off[i], off[i + 1])]
            total += int(losses[off[i] + v.index(max(v))])
        out.append(total)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_weight_path_losses_against_reference(seed):
    rng = np.random.default_rng(seed)
    m = rng.integers(0, 6, size=40)  # includes sentences without candidates
    off = np.concatenate([[0], np.cumsum(m)])
    n = int(off[-1])
    # rounded scores make exact ties common, so the tie rule is exercised
    base = np.round(rng.normal(size=n), 1)
    p = np.round(rng.normal(size=n), 1)
    losses = rng.integers(0, 5, size=n)
    weights = np.concatenate([np.arange(0.0, 5.0), np.linspace(0.0, 2.0, 41)])
    got = weight_path_losses(base, p, off, losses, weights)
    assert got.tolist() == _weight_path_reference(base, p, off, losses, weights)


@pytest.mark.parametrize("seed", range(3))
def test_weight_path_losses_log_zero_base(seed):
    """-inf base scores (log 0): never chosen unless the whole sentence has them (then the
    first candidate), as the reference's list.index(max) does."""
    rng = np.random.default_rng(seed)
    m = rng.integers(1, 6, size=30)
    off = np.concatenate([[0], np.cumsum(m)])
    n = int(off[-1])
    base = np.round(rng.normal(size=n), 1)
    base[rng.random(n) < 0.3] = -np.inf
    base[off[0]:off[1]] = -np.inf
    p = np.round(rng.normal(size=n), 1)
    losses = rng.integers(0, 5, size=n)
    weights = np.concatenate([np.arange(0.0, 5.0), np.linspace(0.0, 2.0, 41)])
    got = weight_path_losses(base, p, off, losses, weights)
    assert got.tolist() == _weight_path_reference(base, p, off, losses, weights)


@pytest.mark.parametrize("kwargs, match", [
    (dict(model_scores=[0.0]), r"model_scores must have shape \(2,\)"),
    (dict(base_scores=[0.0, np.nan]), "base_scores must be finite or -inf"),
    (dict(base_scores=[np.inf, 0.0]), "base_scores must be finite or -inf"),
    (dict(model_scores=[-np.inf, 0.0]), "model_scores must be finite$"),
    (dict(losses=[1]), r"losses must have shape \(2,\)"),
    (dict(weights=[np.inf]), "weights must be finite"),
])
def test_weight_path_losses_bad_input(kwargs, match):
    args = dict(base_scores=[0.0, 1.0], model_scores=[1.0, 0.0], sent_offsets=[0, 2],
                losses=[0, 1], weights=[0.0, 1.0])
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        weight_path_losses(**args)


# -- integer arguments: refused when a cast would alter them --------------------------------

_WP_ARGS = dict(base_scores=[0.0, 1.0, 0.0, 2.0, 1.0], model_scores=np.zeros(5),
                sent_offsets=[0, 2, 5], losses=[1, 0, 0, 1, 1], weights=[0.0])


@pytest.mark.parametrize("kwargs, exc, match", [
    # the chosen losses sum to 1.8, but int64 truncation made it 0
    (dict(losses=np.array([1, 0.9, 0, 0.9, 1])), TypeError,
     "losses must be an array of integers, got dtype float64"),
    # NaN became INT64_MIN
    (dict(losses=np.array([1, np.nan, 0, 0, 1])), TypeError,
     "losses must be an array of integers, got dtype float64"),
    (dict(losses=np.ones(5, dtype=bool)), TypeError,
     "losses must be an array of integers, got dtype bool"),
    (dict(losses=np.array([0, 0, 0, 0, 2**63], dtype=np.uint64)), ValueError,
     r"losses must lie in the int64 range .*, got values in \[0, 9223372036854775808\]"),
    (dict(losses=["a"] * 5), TypeError, "losses must be an array of integers, got dtype <U1"),
    (dict(sent_offsets=[0, 2.5, 5]), TypeError,
     "sent_offsets must be an array of integers, got dtype float64"),
    (dict(sent_offsets=[0, 3, 2, 5]), ValueError,
     r"^sent_offsets must start at 0, be non-decreasing and end at n_candidates=5; got 4 "
     r"entries, first 0, last 5, 3 then 2 at positions 1, 2$"),
    (dict(sent_offsets=[[0, 2, 5]]), ValueError, r"^sent_offsets must be 1-d, got shape \(1, 3\)$"),
    (dict(sent_offsets=[]), ValueError, r"end at n_candidates=5; got 0 entries$"),
    (dict(weights=[[0.0, 1.0]]), ValueError, r"weights must be 1-d, got shape \(1, 2\)"),
    (dict(weights=["a"]), TypeError, "weights must be a real .*array, got <U1"),
    (dict(model_scores=np.zeros(5) + 1j), TypeError, "model_scores must be a real .*complex128"),
])
def test_weight_path_losses_refuses_ids_a_cast_would_alter(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        weight_path_losses(**{**_WP_ARGS, **kwargs})


def test_weight_path_losses_any_int_dtype_same_result():
    ref = weight_path_losses(**_WP_ARGS)
    assert ref.tolist() == [1]
    for dt in (np.int8, np.uint16, np.int32, np.uint64):
        got = weight_path_losses(**{**_WP_ARGS, "losses": np.array(_WP_ARGS["losses"], dt),
                                    "sent_offsets": np.array([0, 2, 5], dt)})
        assert got.tolist() == ref.tolist()


_PL_ARGS = dict(H=sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])),
                base_scores=np.zeros(3), sent_offsets=[0, 3], losses=[2, 0, 1],
                features=[0, 1, 1], deltas=[1.0, 2.0, -5.0])


@pytest.mark.parametrize("kwargs, exc, match", [
    # feature 1.9 was used as feature 1
    (dict(features=[0, 1.9, 1]), TypeError,
     "features must be an array of integers, got dtype float64"),
    (dict(features=[True, False, True]), TypeError,
     "features must be an array of integers, got dtype bool"),
    (dict(losses=[2.0, 0.0, 1.5]), TypeError,
     "losses must be an array of integers, got dtype float64"),
    (dict(sent_offsets=[0.0, 3.0]), TypeError,
     "sent_offsets must be an array of integers, got dtype float64"),
])
def test_path_losses_refuses_float_ids(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        path_losses(**{**_PL_ARGS, **kwargs})


def test_path_losses_int_dtypes_same_result():
    ref = path_losses(**_PL_ARGS)
    assert ref.tolist() == [2, 2, 1, 2]
    got = path_losses(**{**_PL_ARGS, "features": np.array([0, 1, 1], np.uint8),
                         "losses": np.array([2, 0, 1], np.int16)})
    assert got.tolist() == ref.tolist()


_PT_ARGS = dict(H=sp.csr_matrix(np.eye(3)), base_scores=[0.0, 1.0, 0.0], sent_offsets=[0, 2, 3],
                oracle=[0, 2], losses=[0, 1, 0], orders=[[0, 1], [1, 0]], decoder_weight=1.0)


@pytest.mark.parametrize("kwargs, exc, match", [
    # candidate 0.5 was used as candidate 0
    (dict(oracle=np.array([0.5, 2])), TypeError,
     "oracle must be an array of integers, got dtype float64"),
    (dict(losses=np.array([0, 1.0, 0])), TypeError,
     "losses must be an array of integers, got dtype float64"),
    (dict(sent_offsets=np.array([0, 2, 3.0])), TypeError,
     "sent_offsets must be an array of integers, got dtype float64"),
    # a truthy string switched averaging on, None switched it off
    (dict(averaged="no"), TypeError, "averaged must be True or False, got 'no'"),
    (dict(averaged=None), TypeError, "averaged must be True or False, got None"),
])
def test_perceptron_refuses_float_ids_and_non_bool_averaged(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        perceptron_train(**{**_PT_ARGS, **kwargs})


def test_perceptron_int_dtypes_and_numpy_bool_same_result():
    W, n = perceptron_train(**_PT_ARGS)
    W2, n2 = perceptron_train(**{**_PT_ARGS, "oracle": np.array([0, 2], np.uint32),
                                 "losses": np.array([0, 1, 0], np.int8),
                                 "averaged": np.bool_(True)})
    np.testing.assert_array_equal(W, W2)
    np.testing.assert_array_equal(n, n2)


def test_boosting_path_sums_duplicate_entries():
    # two stored +1s at one (pair, feature) acted as a 2 in the kernel
    dup = sp.csr_matrix((np.array([1.0, 1.0, -1.0]), np.array([0, 0, 1]), np.array([0, 2, 3])),
                        shape=(2, 2))
    with pytest.raises(ValueError, match=r"D must have values in \{-1, 0, \+1\} .*got 2"):
        boosting_path(dup, np.zeros(2), 3)
    # a +1 and a -1 stored at one place sum to 0: the same path as without the entry
    cancel = sp.csr_matrix((np.array([1.0, -1.0, 1.0, -1.0]), np.array([0, 0, 1, 1]),
                            np.array([0, 3, 4])), shape=(2, 2))
    plain = sp.csr_matrix(np.array([[0.0, 1.0], [0.0, -1.0]]))
    m0 = np.array([0.3, -0.2])
    for x, y in zip(boosting_path(cancel, m0, 3), boosting_path(plain, m0, 3)):
        np.testing.assert_array_equal(x, y)
    # D itself is left as it was (duplicates, order and explicit zeros kept)
    D = sp.csr_matrix((np.array([0.0, 1.0, -1.0, 1.0]), np.array([1, 0, 0, 1], dtype=np.int64),
                       np.array([0, 3, 4], dtype=np.int64)), shape=(2, 2))
    before = [a.copy() for a in (D.data, D.indices, D.indptr)]
    boosting_path(D, m0, 3)
    for a, b in zip((D.data, D.indices, D.indptr), before):
        np.testing.assert_array_equal(a, b)
