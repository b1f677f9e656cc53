"""psl_epoch / cluster_scores: against pure-Python references of the PSL algorithm."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from sparsecca.kernels import cluster_scores, psl_epoch
from sparsecca.kernels import psl_average as average
from sparsecca.kernels._mms import segment_first_max


def tiny_problem(seed=0, n=40, n_clusters=3, n_labels=4, n_feat=5):
    """Random clusters of 1-3 candidates, samples with 1-3 unit-length features each."""
    rng = np.random.default_rng(seed)
    C = rng.integers(1, 4, n_clusters)
    cl_tags = np.concatenate([np.sort(rng.choice(n_labels, c, replace=False)) for c in C])
    cl_indptr = np.concatenate([[0], np.cumsum(C)])
    woff = np.concatenate([[0], np.cumsum(C * n_feat)])
    s_cluster = rng.integers(0, n_clusters, n)
    s_gold = np.array([rng.integers(0, C[c]) for c in s_cluster])
    rows = [np.sort(rng.choice(n_feat, rng.integers(1, 4), replace=False)) for _ in range(n)]
    x_indptr = np.concatenate([[0], np.cumsum([r.size for r in rows])])
    x_local = np.concatenate(rows)
    x_data = np.concatenate([np.full(r.size, 1 / np.sqrt(r.size)) for r in rows])
    D = rng.uniform(0.1, 1.0, (n_labels, n_labels))
    np.fill_diagonal(D, 0)
    return dict(s_cluster=s_cluster, s_gold=s_gold, x_indptr=x_indptr, x_local=x_local,
                x_data=x_data, cl_indptr=cl_indptr, cl_tags=cl_tags, woff=woff, distance=D,
                n_feat=n_feat)


def table1_reference(p, orders, eta):
    """Table 1 of Ni et al. (2010), one dense weight matrix per cluster, plain Python; also
    the average of each cluster's weights over its own samples."""
    n_cl = p["cl_indptr"].size - 1
    W = [np.zeros((p["n_feat"], p["cl_indptr"][c + 1] - p["cl_indptr"][c])) for c in range(n_cl)]
    total = [np.zeros_like(w) for w in W]
    seen = [0] * n_cl
    for order in orders:
        for s in order:
            c = p["s_cluster"][s]
            cand = p["cl_tags"][p["cl_indptr"][c]:p["cl_indptr"][c + 1]]
            if cand.size < 2:
                continue
            x = np.zeros(p["n_feat"])
            lo, hi = p["x_indptr"][s], p["x_indptr"][s + 1]
            x[p["x_local"][lo:hi]] = p["x_data"][lo:hi]
            g = p["s_gold"][s]
            score = x @ W[c]
            V, star = -np.inf, None
            for k in range(cand.size):
                if k != g and p["distance"][cand[k], cand[g]] + score[k] > V:
                    V, star = p["distance"][cand[k], cand[g]] + score[k], k
            if score[g] < V:
                W[c][:, g] += eta * x
                W[c][:, star] -= eta * x
            total[c] += W[c]
            seen[c] += 1
    avg = [t / max(m, 1) for t, m in zip(total, seen)]
    return np.concatenate([w.ravel() for w in W]), np.concatenate([
        a.ravel() if m else w.ravel() for a, w, m in zip(avg, W, seen)])


def run_kernel(p, orders, eta):
    n_cl = p["cl_indptr"].size - 1
    w = np.zeros(int(p["woff"][-1]))
    u = np.zeros_like(w)
    counts = np.zeros(n_cl, dtype=np.int64)
    updates = 0
    for order in orders:
        updates += psl_epoch(order, p["s_cluster"], p["s_gold"], p["x_indptr"], p["x_local"],
                             p["x_data"], p["cl_indptr"], p["cl_tags"], p["woff"],
                             p["distance"], eta, w, u, counts)
    return w, average(w, u, p["woff"], counts), updates


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_psl_equals_table1_reference(seed):
    p = tiny_problem(seed)
    rng = np.random.default_rng(seed)
    orders = [rng.permutation(p["s_cluster"].size) for _ in range(3)]
    w, w_avg, updates = run_kernel(p, orders, 0.7)
    ref_w, ref_avg = table1_reference(p, orders, 0.7)
    np.testing.assert_allclose(w, ref_w, atol=1e-12)
    # the lazy average: the mean of each cluster's weights after each of its samples
    # (clusters with one candidate never change and keep zeros)
    np.testing.assert_allclose(w_avg, ref_avg, atol=1e-12)
    assert updates > 0


@pytest.mark.parametrize("seed", [0, 1])
def test_psl_counts_the_updates_of_each_cluster(seed):
    p = tiny_problem(seed, n_clusters=4)
    args = _psl_args(order=np.random.default_rng(seed).permutation(p["s_cluster"].size))
    args.update({k: p[k] for k in ("s_cluster", "s_gold", "x_indptr", "x_local", "x_data",
                                   "cl_indptr", "cl_tags", "woff", "distance")})
    n_cl = p["cl_indptr"].size - 1
    w, u = np.zeros(int(p["woff"][-1])), np.zeros(int(p["woff"][-1]))
    args.update(w=w, u=u, counts=np.zeros(n_cl, dtype=np.int64))
    updates = np.full(n_cl, 2, dtype=np.int64)  # incremented, not reset
    total = psl_epoch(**args, updates=updates)
    assert total > 0 and updates.sum() - 2 * n_cl == total
    # a cluster's updates are its steps: one cluster's samples alone give its count
    for c in range(n_cl):
        mine = np.flatnonzero(p["s_cluster"] == c)
        args_c = dict(args, order=args["order"][np.isin(args["order"], mine)],
                      w=np.zeros_like(w), u=np.zeros_like(u),
                      counts=np.zeros(n_cl, dtype=np.int64))
        assert psl_epoch(**args_c) == updates[c] - 2


def multiclass_perceptron(p, orders):
    """Collins' mistake-driven multi-class perceptron per cluster: update when the gold
    score does not beat every other candidate's (first best on ties)."""
    n_cl = p["cl_indptr"].size - 1
    W = [np.zeros((p["n_feat"], p["cl_indptr"][c + 1] - p["cl_indptr"][c])) for c in range(n_cl)]
    for order in orders:
        for s in order:
            c = p["s_cluster"][s]
            if W[c].shape[1] < 2:
                continue
            x = np.zeros(p["n_feat"])
            lo, hi = p["x_indptr"][s], p["x_indptr"][s + 1]
            x[p["x_local"][lo:hi]] = p["x_data"][lo:hi]
            g = p["s_gold"][s]
            score = x @ W[c]
            others = [k for k in range(score.size) if k != g]
            star = others[int(np.argmax(score[others]))]
            if score[g] <= score[star]:
                W[c][:, g] += x
                W[c][:, star] -= x
    return np.concatenate([w.ravel() for w in W])


@pytest.mark.parametrize("seed", [0, 3])
def test_uniform_distance_is_the_multiclass_perceptron(seed):
    # with distance 1 everywhere the most violating candidate is the best-scoring other one;
    # a large eta makes the margin of 1 negligible, so the updates are the perceptron's
    p = tiny_problem(seed)
    L = p["distance"].shape[0]
    p["distance"] = 1.0 - np.eye(L)
    rng = np.random.default_rng(seed)
    orders = [rng.permutation(p["s_cluster"].size) for _ in range(4)]
    eta = 1e6
    w, _, _ = run_kernel(p, orders, eta)
    np.testing.assert_allclose(w / eta, multiclass_perceptron(p, orders), atol=1e-9)


def test_cluster_scores_equal_dense_products():
    rng = np.random.default_rng(5)
    p = tiny_problem(5)
    n_cl = p["cl_indptr"].size - 1
    C = np.diff(p["cl_indptr"])
    # clusters hold the even global features 0, 2, 4, 6, 8 as their five rows
    feat_ids = np.tile(np.arange(0, 10, 2), n_cl)
    feat_indptr = np.arange(n_cl + 1) * 5
    w = rng.normal(size=int(p["woff"][-1]))
    tok_cluster = rng.integers(0, n_cl, 7)
    ids = [np.sort(rng.choice(10, 3, replace=False)) for _ in range(7)]
    x_indptr = np.arange(8) * 3
    x_ids = np.concatenate(ids)
    x_data = rng.normal(size=21)
    out = cluster_scores(tok_cluster, x_indptr, x_ids, x_data, p["cl_indptr"], feat_indptr,
                         feat_ids, p["woff"], w)
    ref = []
    for j, c in enumerate(tok_cluster):
        W = w[p["woff"][c]:p["woff"][c + 1]].reshape(5, C[c])
        x = np.zeros(5)
        for f, v in zip(ids[j], x_data[3 * j:3 * j + 3]):
            if f % 2 == 0:
                x[f // 2] = v
        ref.extend(x @ W)
    np.testing.assert_allclose(out, ref, atol=1e-12)


def test_psl_average_is_w_minus_u_over_steps():
    rng = np.random.default_rng(2)
    woff = np.array([0, 3, 3, 7])
    counts = np.array([4, 9, 0])
    w, u = rng.normal(size=7), rng.normal(size=7)
    per = np.repeat(np.maximum(counts, 1).astype(float), np.diff(woff))
    assert np.array_equal(average(w, u, woff, counts), w - u / per)
    with pytest.raises(ValueError, match=r"woff must have shape \(4,\)"):
        average(w, u, woff[:-1], counts)


def test_segment_first_max_takes_the_first_best():
    s = np.array([1.0, 3.0, 3.0, -1.0, 0.5, 2.0, 2.0])
    offsets = np.array([0, 3, 3, 4, 7])
    # ties go to the first; an empty segment points at its start
    assert segment_first_max(offsets, s).tolist() == [1, 3, 3, 5]
    with pytest.raises(ValueError, match="offsets"):
        segment_first_max(np.array([0, 9]), s)


def _psl_args(**change):
    p = tiny_problem(0)
    n_cl = p["cl_indptr"].size - 1
    args = dict(order=np.arange(p["s_cluster"].size), s_cluster=p["s_cluster"],
                s_gold=p["s_gold"], x_indptr=p["x_indptr"], x_local=p["x_local"],
                x_data=p["x_data"], cl_indptr=p["cl_indptr"], cl_tags=p["cl_tags"],
                woff=p["woff"], distance=p["distance"], eta=0.5,
                w=np.zeros(int(p["woff"][-1])), u=np.zeros(int(p["woff"][-1])),
                counts=np.zeros(n_cl, dtype=np.int64))
    args.update(change)
    return args


@pytest.mark.parametrize("change, exc, match", [
    (dict(eta=0.0), ValueError, r"eta must be a finite number > 0, got 0\.0"),
    (dict(eta=-1), ValueError, r"eta must be a finite number > 0, got -1"),
    (dict(eta="1"), TypeError, r"eta must be a real number"),
    (dict(distance=np.ones((4, 3))), ValueError, r"distance must be square, got shape \(4, 3\)"),
    (dict(distance=np.ones((2, 2))), ValueError, r"cl_tags must lie in \[0, 2\)"),
    (dict(order=np.array([0, 99])), ValueError, r"order must lie in \[0, 40\)"),
    (dict(s_gold=np.full(40, 3)), ValueError, r"s_gold must be a candidate position"),
    (dict(u=np.zeros(3)), TypeError, r"u must be a contiguous float64 array"),
    (dict(counts=np.ones(3)), TypeError, r"counts must be an int64 array"),
    (dict(updates=np.zeros(3)), TypeError,
     r"^updates must be an int64 array of shape \(3,\)$"),
    (dict(updates=[0, 0, 0]), TypeError, r"^updates must be an int64 array of shape \(3,\)$"),
])
def test_psl_bad_input(change, exc, match):
    with pytest.raises(exc, match=match):
        psl_epoch(**_psl_args(**change))


def test_runs_without_jit():
    """The kernels as plain Python (NUMBA_DISABLE_JIT=1) give the reference answers."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {here!r})
        import numba
        assert numba.config.DISABLE_JIT
        from test_psl_kernels import (test_cluster_scores_equal_dense_products,
                              test_psl_average_is_w_minus_u_over_steps,
                              test_psl_equals_table1_reference,
                              test_segment_first_max_takes_the_first_best,
                              test_uniform_distance_is_the_multiclass_perceptron)
        test_psl_average_is_w_minus_u_over_steps()
        test_segment_first_max_takes_the_first_best()
        test_psl_equals_table1_reference(1)
        test_uniform_distance_is_the_multiclass_perceptron(0)
        test_cluster_scores_equal_dense_products()
        print("NOJIT-OK")
    """)
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert "NOJIT-OK" in res.stdout
