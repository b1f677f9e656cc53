"""Forward-backward and the hidden-variable reranker's kernels against brute force."""

import itertools
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from scipy.special import logsumexp

from sparsecca.kernels import chain_marginals, hidden_loss_grad, hidden_scores, hidden_sgd_epoch

# -- slow references ---------------------------------------------------------------------------


def brute_chain(node, edge):
    """log Z, node and edge marginals of one chain by enumerating every assignment."""
    L, H = node.shape
    if L == 0:
        return 0.0, np.zeros((0, H)), np.zeros((0, H, H))
    logs, assigns = [], list(itertools.product(range(H), repeat=L))
    for h in assigns:
        logs.append(sum(node[w, h[w]] for w in range(L))
                    + sum(edge[w, h[w - 1], h[w]] for w in range(1, L)))
    logs = np.array(logs)
    lz = logsumexp(logs)
    p = np.exp(logs - lz)
    mu, xi = np.zeros((L, H)), np.zeros((L, H, H))
    for pa, h in zip(p, assigns):
        for w in range(L):
            mu[w, h[w]] += pa
        for w in range(1, L):
            xi[w, h[w - 1], h[w]] += pa
    return lz, mu, xi


def random_model(seed, H, n_sent=3, max_cands=3, max_len=4, n_node=5, n_edge=3, F=2):
    """A small random hidden-variable problem: features, offsets, scores, targets, theta."""
    rng = np.random.default_rng(seed)
    cand_off, sent_off, n_tok = [0], [0], 0
    for _ in range(n_sent):
        m = int(rng.integers(2, max_cands + 1))
        L = int(rng.integers(1, max_len + 1))
        for _ in range(m):
            n_tok += L
            cand_off.append(n_tok)
        sent_off.append(sent_off[-1] + m)
    nf = rng.integers(-1, n_node, size=(n_tok, F)).astype(np.int32)
    ef = rng.integers(-1, n_edge, size=n_tok).astype(np.int32)
    n_cand = len(cand_off) - 1
    scores = rng.normal(-3, 1, size=n_cand)
    target = np.zeros(n_cand, dtype=bool)
    for i in range(n_sent):
        a, b = sent_off[i], sent_off[i + 1]
        target[a + rng.integers(0, b - a)] = True
        if b - a > 2:
            target[a + rng.integers(0, b - a)] = True  # sometimes two best candidates
    theta = rng.normal(0, 0.7, size=1 + n_node * H + n_edge * H * H)
    return dict(theta=theta, node_feats=nf, edge_feats=ef, cand_offsets=np.array(cand_off),
                sent_offsets=np.array(sent_off), scores=scores, target=target, n_hidden=H,
                n_node=n_node)


def potentials(m, lo, hi):
    """Node and edge potentials of tokens lo..hi-1 from a random_model (plain NumPy)."""
    H, n_node, theta = m["n_hidden"], m["n_node"], m["theta"]
    W = theta[1:1 + n_node * H].reshape(n_node, H)
    E = theta[1 + n_node * H:].reshape(-1, H, H)
    node = np.zeros((hi - lo, H))
    edge = np.zeros((hi - lo, H, H))
    for w in range(hi - lo):
        for f in m["node_feats"][lo + w]:
            if f >= 0:
                node[w] += W[f]
        e = m["edge_feats"][lo + w]
        if w > 0 and e >= 0:
            edge[w] = E[e]
    return node, edge


def brute_loss(m, l2=0.0):
    """The loss by enumerating hidden assignments of every candidate."""
    co, so, s, t = m["cand_offsets"], m["sent_offsets"], m["scores"], m["target"]
    a = np.array([m["theta"][0] * s[j] + brute_chain(*potentials(m, co[j], co[j + 1]))[0]
                  for j in range(co.size - 1)])
    loss = 0.0
    for i in range(so.size - 1):
        x, y = a[so[i]:so[i + 1]], t[so[i]:so[i + 1]]
        if 0 < y.sum() < y.size:
            loss += logsumexp(x) - logsumexp(x[y])
    return loss + 0.5 * l2 * np.sum(m["theta"][1:] ** 2)


# -- chain_marginals -----------------------------------------------------------------------------


@pytest.mark.parametrize("H", [1, 2, 3])
@pytest.mark.parametrize("seed", range(4))
def test_chains_match_enumeration(H, seed):
    rng = np.random.default_rng(seed)
    lengths = [1, 0, 6, 3, int(rng.integers(1, 6))]
    off = np.concatenate([[0], np.cumsum(lengths)])
    node = rng.normal(0, 2, size=(off[-1], H))
    edge = rng.normal(0, 2, size=(off[-1], H, H))
    log_z, mu, xi = chain_marginals(node, edge, off)
    for c, (lo, hi) in enumerate(zip(off[:-1], off[1:])):
        lz, m, x = brute_chain(node[lo:hi], edge[lo:hi])
        assert abs(log_z[c] - lz) <= 1e-10
        np.testing.assert_allclose(mu[lo:hi], m, rtol=0, atol=1e-10)
        np.testing.assert_allclose(xi[lo:hi], x, rtol=0, atol=1e-10)
        if hi > lo:
            assert not xi[lo].any()  # a chain's first node has no incoming edge
    lz_only, mu0, xi0 = chain_marginals(node, edge, off, marginals=False)
    np.testing.assert_array_equal(lz_only, log_z)
    assert mu0.shape == (0, H) and xi0.shape == (0, H, H)


def test_long_chain_does_not_underflow():
    """1,000 nodes whose potentials would underflow exp() in linear space (e^-50000)."""
    H, L = 3, 1000
    rng = np.random.default_rng(0)
    node = -50.0 + rng.normal(0, 1e-3, size=(L, H))
    node[:, 0] = -50.0
    edge = np.zeros((L, H, H))
    log_z, mu, xi = chain_marginals(node, edge, [0, L])
    # with zero edges the chain factorises: log Z = sum_w logsumexp(node[w])
    assert np.isclose(log_z[0], logsumexp(node, axis=1).sum(), rtol=1e-13, atol=0)
    assert np.isfinite(log_z[0]) and log_z[0] < -48_000
    np.testing.assert_allclose(mu, np.exp(node - logsumexp(node, axis=1, keepdims=True)),
                               atol=1e-12)
    np.testing.assert_allclose(mu.sum(1), 1.0, atol=1e-12)
    np.testing.assert_allclose(xi[1:].sum((1, 2)), 1.0, atol=1e-12)
    # strong couplings: the chain prefers staying in one value; still finite marginals
    edge = np.tile(np.eye(H) * 30.0, (L, 1, 1))
    log_z, mu, xi = chain_marginals(node, edge, [0, L])
    assert np.isfinite(log_z[0]) and np.all(np.isfinite(mu)) and np.all(np.isfinite(xi))
    np.testing.assert_allclose(mu.sum(1), 1.0, atol=1e-12)


BAD_CHAINS = [
    (dict(node_potentials=np.zeros((2, 0))), ValueError, "at least one hidden value"),
    (dict(edge_potentials=np.zeros((2, 2, 3))), ValueError, r"edge_potentials must have shape "
                                                            r"\(2, 2, 2\)"),
    (dict(node_potentials=np.array([[0.0, np.inf], [0, 0]])), ValueError,
     "node_potentials must be finite"),
    (dict(edge_potentials=np.full((2, 2, 2), np.nan)), ValueError,
     "edge_potentials must be finite"),
    (dict(offsets=[0, 3]), ValueError, "offsets must start at 0, be non-decreasing and end at "
                                       "n_nodes=2"),
    (dict(offsets=[0.0, 2.0]), TypeError, "offsets must be an array of integers"),
    (dict(node_potentials=np.zeros((2, 2), dtype=bool)), TypeError, "real"),
    (dict(marginals="yes"), TypeError, "marginals must be True or False"),
]


@pytest.mark.parametrize("kwargs,err,match", BAD_CHAINS)
def test_chain_marginals_refuses(kwargs, err, match):
    args = dict(node_potentials=np.zeros((2, 2)), edge_potentials=np.zeros((2, 2, 2)),
                offsets=[0, 2])
    args.update(kwargs)
    with pytest.raises(err, match=match):
        chain_marginals(**args)


# -- the reranker's kernels --------------------------------------------------------------------

@pytest.mark.parametrize("H", [1, 2, 3])
@pytest.mark.parametrize("seed", range(3))
def test_scores_and_loss_match_enumeration(H, seed):
    m = random_model(seed, H)
    co = m["cand_offsets"]
    s = hidden_scores(m["theta"], m["node_feats"], m["edge_feats"], co, m["scores"], H,
                      m["n_node"])
    ref = [m["theta"][0] * m["scores"][j] + brute_chain(*potentials(m, co[j], co[j + 1]))[0]
           for j in range(co.size - 1)]
    np.testing.assert_allclose(s, ref, rtol=0, atol=1e-10)
    loss, _ = hidden_loss_grad(**m, l2=0.3)
    assert abs(loss - brute_loss(m, l2=0.3)) <= 1e-10


@pytest.mark.parametrize("H", [1, 2, 3])
@pytest.mark.parametrize("seed", range(3))
def test_gradient_equals_finite_differences(H, seed):
    m = random_model(seed + 10, H)
    loss, grad = hidden_loss_grad(**m, l2=0.2)
    theta = m["theta"]
    eps = 1e-6
    num = np.empty_like(theta)
    for k in range(theta.size):
        up, down = theta.copy(), theta.copy()
        up[k] += eps
        down[k] -= eps
        num[k] = (hidden_loss_grad(**dict(m, theta=up), l2=0.2)[0]
                  - hidden_loss_grad(**dict(m, theta=down), l2=0.2)[0]) / (2 * eps)
    np.testing.assert_allclose(grad, num, rtol=1e-6, atol=1e-7)


def test_extreme_potentials_fall_back_to_log_space():
    """Weights so extreme that the rescaled recursion underflows (every path through a node
    below 1e-308 of the best): the log-space recursion takes over, still exact."""
    H = 2
    theta = np.array([1.0, 0.0, -800.0, -800.0, 0.0, 0.0, -800.0, -800.0, 0.0])
    m = dict(theta=theta, node_feats=np.array([[0], [1], [0], [1]], dtype=np.int32),
             edge_feats=np.array([-1, 0, -1, -1], dtype=np.int32),
             cand_offsets=np.array([0, 2, 4]), sent_offsets=np.array([0, 2]),
             scores=np.array([-1.0, -2.0]), target=np.array([False, True]), n_hidden=H,
             n_node=2)
    out = hidden_scores(theta, m["node_feats"], m["edge_feats"], m["cand_offsets"],
                        m["scores"], H, 2)
    ref = [m["theta"][0] * m["scores"][j] + brute_chain(*potentials(m, 2 * j, 2 * j + 2))[0]
           for j in range(2)]
    np.testing.assert_allclose(out, ref, rtol=1e-13)
    assert out[0] == pytest.approx(-1.0 - 800.0 + np.log(3.0), rel=1e-13)
    loss, grad = hidden_loss_grad(**m)
    assert loss == pytest.approx(brute_loss(m), rel=1e-12)
    assert np.all(np.isfinite(grad))
    eps = 1e-6
    for k in (0, 1, 5, 8):
        up, down = theta.copy(), theta.copy()
        up[k] += eps
        down[k] -= eps
        num = (hidden_loss_grad(**dict(m, theta=up))[0]
               - hidden_loss_grad(**dict(m, theta=down))[0]) / (2 * eps)
        assert grad[k] == pytest.approx(num, rel=1e-5, abs=1e-7)


def test_sgd_epoch_lowers_the_loss():
    m = random_model(3, 2, n_sent=6)
    theta, accum = m["theta"].copy(), np.zeros_like(m["theta"])
    rest = {k: v for k, v in m.items() if k != "theta"}
    before = hidden_loss_grad(**m)[0]
    for _ in range(30):
        hidden_sgd_epoch(theta, accum, **rest, order=np.arange(6), lr=0.3)
    after = hidden_loss_grad(**dict(m, theta=theta))[0]
    assert after < 0.5 * before
    assert np.all(accum >= 0)


def test_minus_inf_scores():
    m = random_model(0, 2)
    s = m["scores"].copy()
    s[1] = -np.inf
    out = hidden_scores(m["theta"], m["node_feats"], m["edge_feats"], m["cand_offsets"], s, 2,
                        m["n_node"])
    assert out[1] == -np.inf and np.all(np.isfinite(np.delete(out, 1)))
    with pytest.raises(ValueError, match="scores must be finite, got -inf at candidate 1"):
        hidden_loss_grad(**dict(m, scores=s))


BAD_MODELS = [
    (dict(n_hidden=0), ValueError, "n_hidden must be an int >= 1, got 0"),
    (dict(theta=np.zeros(4)), ValueError, r"theta must hold 1 \+ n_hidden \* \(n_node"),
    (dict(theta=np.zeros(5)), ValueError, "theta has 5 weights: too few for 5 node rows"),
    (dict(node_feats=lambda m: np.full(m["node_feats"].shape, 9)), ValueError,
     r"node_feats must be -1 \(none\) or ids in \[0, 5\)"),
    (dict(edge_feats=lambda m: m["edge_feats"][1:]), ValueError,
     "edge_feats must have shape"),
    (dict(target=np.zeros(3)), TypeError, "target must be a bool array"),
    (dict(l2=-1.0), ValueError, "l2 must be a finite number >= 0"),
    (dict(theta=np.full(1 + 5 * 2 + 3 * 4, np.nan)), ValueError, "theta must be finite"),
]


@pytest.mark.parametrize("kwargs,err,match", BAD_MODELS)
def test_loss_grad_refuses(kwargs, err, match):
    m = random_model(0, 2)
    m.update({k: v(m) if callable(v) else v for k, v in kwargs.items()})
    with pytest.raises(err, match=match):
        hidden_loss_grad(**m)


def test_sgd_epoch_refuses():
    m = random_model(0, 2)
    rest = {k: v for k, v in m.items() if k != "theta"}
    theta = m["theta"].copy()
    with pytest.raises(ValueError, match="lr must be a finite number > 0, got 0"):
        hidden_sgd_epoch(theta, np.zeros_like(theta), **rest, order=[0], lr=0)
    with pytest.raises(TypeError, match="accum must be a C-contiguous float64 array"):
        hidden_sgd_epoch(theta, np.zeros(2), **rest, order=[0], lr=0.1)
    with pytest.raises(TypeError, match="theta must be a 1-d C-contiguous float64 array"):
        hidden_sgd_epoch(list(theta), np.zeros_like(theta), **rest, order=[0], lr=0.1)
    with pytest.raises(ValueError, match=r"order must hold sentence indices in \[0, 3\)"):
        hidden_sgd_epoch(theta, np.zeros_like(theta), **rest, order=[3], lr=0.1)


def test_kernels_run_without_jit():
    """The same kernels, interpreted (NUMBA_DISABLE_JIT=1), give the enumeration answers."""
    code = textwrap.dedent("""
        import itertools
        import numpy as np
        from numba.core import config
        assert config.DISABLE_JIT
        from sparsecca.kernels import chain_marginals, hidden_loss_grad
        rng = np.random.default_rng(1)
        node, edge = rng.normal(size=(4, 2)), rng.normal(size=(4, 2, 2))
        lz, mu, xi = chain_marginals(node, edge, [0, 1, 4])
        tot = 0.0
        m1 = np.zeros(2)
        for h in itertools.product(range(2), repeat=3):
            e = np.exp(node[1, h[0]] + node[2, h[1]] + node[3, h[2]]
                       + edge[2, h[0], h[1]] + edge[3, h[1], h[2]])
            tot += e
            m1[h[1]] += e
        assert abs(lz[1] - np.log(tot)) < 1e-10, (lz, np.log(tot))
        assert np.allclose(mu[2], m1 / tot, atol=1e-10) and np.isclose(lz[0],
            np.log(np.exp(node[0]).sum()))
        loss, grad = hidden_loss_grad(np.zeros(3), [[0], [-1]], [-1, -1], [0, 1, 2], [0, 2],
                                      [-1.0, -3.0], np.array([False, True]), 2, 1)
        assert np.isclose(loss, np.log(2)) and np.allclose(grad, [1.0, 0.25, 0.25]), grad
        print("ok")
    """)
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
