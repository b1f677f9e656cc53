import math

import numpy as np
import pytest

from sparsecca.evaluate import accuracy_report, mcnemar, paired_bootstrap, token_accuracy


def test_token_accuracy_and_split():
    gold = np.array([0, 1, 2, 3, 4])
    pred = np.array([0, 1, 0, 3, 0])
    unk = np.array([False, False, True, False, True])
    assert token_accuracy(pred, gold) == pytest.approx(0.6)
    r = accuracy_report(pred, gold, unk)
    assert r["known_accuracy"] == 1.0 and r["unknown_accuracy"] == 0.0 and r["n_unknown"] == 2
    assert math.isnan(token_accuracy(pred, gold, np.zeros(5, bool)))


def _binom_two_sided(k, n):
    """Exact two-sided binomial p-value at p=1/2, from the pmf (independent of scipy)."""
    pmf = [math.comb(n, i) / 2**n for i in range(n + 1)]
    return min(1.0, sum(p for p in pmf if p <= pmf[k] * (1 + 1e-7)))


@pytest.mark.parametrize("seed", range(4))
def test_mcnemar_matches_binomial(seed):
    rng = np.random.default_rng(seed)
    a = rng.random(300) < 0.9
    b = rng.random(300) < 0.93
    r = mcnemar(a, b)
    assert r["n01"] == np.sum(~a & b) and r["n10"] == np.sum(a & ~b)
    assert r["p_value"] == pytest.approx(_binom_two_sided(r["n01"], r["n01"] + r["n10"]),
                                         rel=1e-9)


def test_bootstrap_matches_slow_loop():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 30, size=80)
    off = np.concatenate([[0], np.cumsum(lengths)])
    a = rng.random(off[-1]) < 0.9
    b = a.copy()
    flip = rng.random(off[-1]) < 0.05
    b[flip] = True
    r = paired_bootstrap(a, b, off, n_resamples=500, random_state=3)
    # slow reference with the same resampling indices
    gen = np.random.default_rng(3)
    idx = gen.integers(0, 80, size=(500, 80))
    worse = 0
    for row in idx:
        ga = sum(a[off[i]:off[i + 1]].sum() for i in row)
        gb = sum(b[off[i]:off[i + 1]].sum() for i in row)
        worse += (gb - ga) <= 0
    assert r["p_value"] == pytest.approx((worse + 1) / 501)
    assert r["gain"] == pytest.approx(b.mean() - a.mean())
    assert r["p_value"] < 0.05  # B is strictly better on a real share of tokens


def test_bootstrap_identical_systems_not_significant():
    a = np.ones(100, bool)
    r = paired_bootstrap(a, a, [0, 50, 100], n_resamples=200)
    assert r["p_value"] == 1.0 and r["gain"] == 0.0


@pytest.mark.parametrize(("call", "pattern"), [
    (lambda: token_accuracy([1, 2], [1]), "pred has 2 tokens, gold has 1"),
    (lambda: paired_bootstrap([True], [True], [0, 1], n_resamples=5),
     "n_resamples must be an int >= 100, got 5"),
    (lambda: paired_bootstrap([True, False], [True, True], [0, 1]),
     "end at n_tokens=2"),
    (lambda: mcnemar([True], [True, False]), "correct_a has 1 tokens, correct_b has 2"),
])
def test_bad_input(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()
