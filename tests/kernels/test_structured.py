"""The linear-model side of the Viterbi kernel family and the structured perceptron loop.

* ``kbest_viterbi(..., trigrams='additive', norm_offsets=..., norm=...)`` against brute-force
  enumeration of every tag sequence on tiny lattices;
* ``structured_perceptron`` against a slow pure-Python training loop that keeps the whole
  weight vector after every example and averages them explicitly.
"""

import itertools
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

from sparsecca.kernels import (
    PerceptronShard,
    kbest_viterbi,
    sequence_logprob,
    structured_perceptron,
)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from structured_reference import update_transitions  # noqa: E402
from test_viterbi import random_lattice, random_model  # noqa: E402


def additive_dense(trans):
    """``dense[t2, t1, t]``: bigram + adjustment, plus the stored trigram's weight."""
    S = trans["n_states"]
    dense = trans["bigram_logp"][None, :, :] + trans["context_adj"][:, :, None]
    ind = trans["tri_indptr"]
    for c in range(S * S):
        for u in range(ind[c], ind[c + 1]):
            dense[c // S, c % S, trans["tri_tags"][u]] += trans["tri_logp"][u]
    return dense


def random_norm(rng, lat):
    """One normaliser per (token, candidate of j - 2, candidate of j - 1), kernel layout."""
    n_c = np.diff(lat["cand_offsets"])
    sizes = []
    for i in range(lat["sent_offsets"].size - 1):
        a, b = lat["sent_offsets"][i], lat["sent_offsets"][i + 1]
        for j in range(a, b):
            p1 = n_c[j - 1] if j - 1 >= a else 1
            p2 = n_c[j - 2] if j - 2 >= a else 1
            sizes.append(p1 * p2)
    off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return off, rng.normal(size=int(off[-1]))


def brute_force(lat, dense, bos, eos, i, norm=None):
    """Every candidate sequence of sentence ``i`` with its score, best first."""
    a, b = lat["sent_offsets"][i], lat["sent_offsets"][i + 1]
    co, ct, ce = lat["cand_offsets"], lat["cand_tags"], lat["cand_logp"]
    out = []
    for combo in itertools.product(*[range(co[j + 1] - co[j]) for j in range(a, b)]):
        seq = [int(ct[co[a + m] + q]) for m, q in enumerate(combo)]
        s = sum(ce[co[a + m] + q] for m, q in enumerate(combo))
        hist = [bos, bos] + seq + [eos]
        s += sum(dense[hist[m - 2], hist[m - 1], hist[m]] for m in range(2, len(hist)))
        if norm is not None:
            off, z = norm
            idx = [0, 0] + list(combo)  # candidate index; 0 for the BOS positions
            for m in range(b - a):
                n_p = co[a + m] - co[a + m - 1] if m >= 1 else 1
                s -= z[off[a + m] + idx[m] * n_p + idx[m + 1]]
        out.append((s, tuple(seq)))
    out.sort(key=lambda x: -x[0])
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("with_norm", [False, True])
def test_additive_kbest_equals_brute_force(seed, with_norm):
    rng = np.random.default_rng(seed)
    n_tags = int(rng.integers(2, 5))
    trans, _ = random_model(rng, n_tags=n_tags)
    dense = additive_dense(trans)
    lat = random_lattice(rng, [0, 1, 3, 6, 2], n_tags=n_tags, max_cands=n_tags)
    norm = random_norm(rng, lat) if with_norm else None
    kw = dict(trigrams="additive")
    if norm is not None:
        kw.update(norm_offsets=norm[0], norm=norm[1])
    k = 7
    seq_tags, seq_off, sent_off, scores = kbest_viterbi(**lat, **trans, k=k, **kw)
    for i in range(5):
        ref = brute_force(lat, dense, trans["bos"], trans["eos"], i, norm)[:k]
        got = range(sent_off[i], sent_off[i + 1])
        assert len(got) == len(ref)
        assert np.allclose([scores[r] for r in got], [s for s, _ in ref])
        assert [tuple(seq_tags[seq_off[r]:seq_off[r + 1]]) for r in got] == [q for _, q in ref]
        # the score of every enumerated sequence, recomputed by sequence_logprob
        all_seqs = brute_force(lat, dense, trans["bos"], trans["eos"], i, norm)
        flat = np.array([t for _, q in all_seqs for t in q], dtype=np.int32)
        lens = [len(q) for _, q in all_seqs]
        again = sequence_logprob(**lat, **trans, seq_sent=np.full(len(all_seqs), i),
                                 seq_tags=flat, seq_offsets=np.concatenate([[0], np.cumsum(lens)]),
                                 **kw)
        assert np.allclose(again, [s for s, _ in all_seqs])


def test_backoff_mode_is_unchanged():
    """The default mode still replaces the back-off by a stored trigram's score."""
    rng = np.random.default_rng(3)
    trans, dense = random_model(rng)
    lat = random_lattice(rng, [4, 5])
    _, _, sent_off, scores = kbest_viterbi(**lat, **trans, k=3)
    for i in range(2):
        ref = brute_force(lat, dense, trans["bos"], trans["eos"], i)[:3]
        assert np.allclose(scores[sent_off[i]:sent_off[i + 1]], [s for s, _ in ref])


def _norm_case():
    rng = np.random.default_rng(0)
    trans, _ = random_model(rng)
    lat = random_lattice(rng, [3, 2])
    return trans, lat, random_norm(rng, lat)


def _nan_at_0(off, z):
    z = z.copy()
    z[0] = np.nan
    return dict(norm=z)


def _token_0_too_long(off, z):
    off = off.copy()
    off[1:] += 1
    return dict(norm_offsets=off, norm=np.concatenate([z, [0.0]]))


@pytest.mark.parametrize("change, exc, match", [
    (lambda off, z: dict(trigrams="sum"), ValueError,
     r"trigrams must be one of \('backoff', 'additive'\)"),
    (lambda off, z: dict(norm=None), ValueError, "norm_offsets and norm must be given together"),
    (lambda off, z: dict(norm_offsets=np.array([0, 1])), ValueError,
     r"norm_offsets must have n_tokens \+ 1=6 entries, got 2"),
    (_nan_at_0, ValueError, "norm must be finite, got nan at index 0"),
    (_token_0_too_long, ValueError, "token 0 needs 1, got 2"),
    (lambda off, z: dict(norm_offsets=off + 0.5), TypeError, "norm_offsets must be"),
])
def test_norm_and_mode_errors(change, exc, match):
    trans, lat, (off, z) = _norm_case()
    kw = dict(trigrams="additive", norm_offsets=off, norm=z)
    kw.update(change(off, z))
    with pytest.raises(exc, match=match):
        kbest_viterbi(**lat, **trans, k=2, **kw)


# ------------------------------------------------------------------ the perceptron loop

def random_problem(rng, n_tags=3, lengths=(3, 0, 4, 2, 5, 1), n_features=6):
    """Binary token features, gold tags, a pruned lattice holding the gold, weight support."""
    S = n_tags + 2
    n = int(sum(lengths))
    X = sp.csr_matrix((rng.random((n, n_features)) < 0.4).astype(np.float32))
    gold = rng.integers(0, n_tags, size=n).astype(np.int32)
    cand = []
    for j in range(n):
        extra = rng.random(n_tags) < 0.5
        extra[gold[j]] = True
        cand.append(np.flatnonzero(extra))
    cand_offsets = np.concatenate([[0], np.cumsum([c.size for c in cand])]).astype(np.int64)
    cand_tags = np.concatenate(cand).astype(np.int32)
    # supported pairs: random, so that some updates fall outside them
    support = rng.random((n_features, n_tags)) < 0.7
    emit_indptr = np.concatenate([[0], np.cumsum(support.sum(1))]).astype(np.int64)
    emit_tags = np.nonzero(support)[1].astype(np.int32)
    stored = rng.random((S * S, S)) < 0.5
    tri_indptr = np.concatenate([[0], np.cumsum(stored.sum(1))]).astype(np.int64)
    tri_tags = np.nonzero(stored)[1].astype(np.int32)
    sent_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return dict(X=X, gold_tags=gold, sent_offsets=sent_offsets, cand_offsets=cand_offsets,
                cand_tags=cand_tags, emit_indptr=emit_indptr, emit_tags=emit_tags, n_states=S,
                tri_indptr=tri_indptr, tri_tags=tri_tags, bos=n_tags, eos=n_tags + 1)


def reference_perceptron(p, orders, beam=0):
    """Slow and obvious: dict weights, the full weight vector stored after every example,
    averaged explicitly.  Decoding uses the public kbest_viterbi (checked above against
    brute force) on one sentence at a time, so ties break the same way.  ``beam > 0``: the
    lattice of each token is its ``beam`` best tags by current emission score (ties to the
    lower tag) plus its gold tag, in ascending order."""
    S, bos, eos = p["n_states"], p["bos"], p["eos"]
    X = p["X"].toarray()
    pairs = [(f, int(t)) for f in range(X.shape[1])
             for t in p["emit_tags"][p["emit_indptr"][f]:p["emit_indptr"][f + 1]]]
    tris = [(c // S, c % S, int(t)) for c in range(S * S)
            for t in p["tri_tags"][p["tri_indptr"][c]:p["tri_indptr"][c + 1]]]
    W = {q: 0.0 for q in pairs}
    B = np.zeros((S, S))
    C = {q: 0.0 for q in tris}
    history = []
    out = []
    so, co, ct, gold = p["sent_offsets"], p["cand_offsets"], p["cand_tags"], p["gold_tags"]

    def vector():
        return (np.array([W[q] for q in pairs]), B.copy(), np.array([C[q] for q in tris]))

    for order in orders:
        n_wrong = 0
        for i in order:
            a, b = so[i], so[i + 1]
            if b > a and beam:
                n_tags = S - 2
                emis = [[sum(X[j, f] * W.get((f, t), 0.0) for f in range(X.shape[1]))
                         for t in range(n_tags)] for j in range(a, b)]
                lat = [sorted(set(sorted(range(n_tags), key=lambda t: (-e[t], t))[:beam])
                              | {int(gold[a + m])}) for m, e in enumerate(emis)]
                co = np.zeros(so[-1] + 1, dtype=np.int64)
                co[a + 1:b + 1] = np.cumsum([len(c) for c in lat])
                co[b + 1:] = co[b]
                ct = np.zeros(co[-1], dtype=np.int32)
                ct[co[a]:co[b]] = [t for c in lat for t in c]
            if b > a:
                cands = [(j, int(t)) for j in range(a, b) for t in ct[co[j]:co[j + 1]]]
                score = [sum(X[j, f] * W.get((f, t), 0.0) for f in range(X.shape[1]))
                         for j, t in cands]
                tri_w = np.array([C[q] for q in tris])
                seq_tags, _, _, _ = kbest_viterbi(
                    [0, b - a], co[a:b + 1] - co[a], ct[co[a]:co[b]], score, S, B,
                    np.zeros((S, S)), p["tri_indptr"], p["tri_tags"], tri_w, bos, eos, k=1,
                    trigrams="additive")
                pred = [int(t) for t in seq_tags]
                g = [int(t) for t in gold[a:b]]
                if pred != g:
                    n_wrong += 1
                    for m in range(b - a):
                        if pred[m] != g[m]:
                            for f in range(X.shape[1]):
                                if (f, g[m]) in W:
                                    W[f, g[m]] += X[a + m, f]
                                if (f, pred[m]) in W:
                                    W[f, pred[m]] -= X[a + m, f]
                    update_transitions(B, C, g, pred, bos, eos)
            history.append(vector())
        avg = tuple(np.mean([h[r] for h in history], axis=0) for r in range(3))
        out.append((*avg, n_wrong))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_epochs_equal_pure_python_reference(seed):
    rng = np.random.default_rng(seed)
    p = random_problem(rng, n_tags=int(rng.integers(2, 5)))
    n_sent = p["sent_offsets"].size - 1
    orders = np.stack([rng.permutation(n_sent) for _ in range(3)])
    got = list(structured_perceptron(**p, orders=orders))
    ref = reference_perceptron(p, orders)
    assert len(got) == 3
    for (e, bg, tr, nw), (re_, rb, rt, rn) in zip(got, ref):
        assert nw == rn
        np.testing.assert_allclose(e, re_, atol=1e-12)
        np.testing.assert_allclose(bg, rb, atol=1e-12)
        np.testing.assert_allclose(tr, rt, atol=1e-12)
    assert sum(r[3] for r in ref) > 0  # the test exercised updates


@pytest.mark.parametrize("seed, beam", [(0, 1), (1, 2), (2, 1), (3, 3)])
def test_beam_epochs_equal_pure_python_reference(seed, beam):
    """Lattices rebuilt from the current weights at every visit, gold tag included."""
    rng = np.random.default_rng(seed)
    p = random_problem(rng, n_tags=int(rng.integers(3, 5)))
    n_sent = p["sent_offsets"].size - 1
    orders = np.stack([rng.permutation(n_sent) for _ in range(3)])
    ref = reference_perceptron(p, orders, beam=beam)
    p["cand_offsets"] = p["cand_tags"] = None  # not needed with a beam
    got = list(structured_perceptron(**p, orders=orders, beam=beam))
    for (e, bg, tr, nw), (re_, rb, rt, rn) in zip(got, ref, strict=True):
        assert nw == rn
        np.testing.assert_allclose(e, re_, atol=1e-12)
        np.testing.assert_allclose(bg, rb, atol=1e-12)
        np.testing.assert_allclose(tr, rt, atol=1e-12)
    assert sum(r[3] for r in ref) > 0


@pytest.mark.parametrize("seed, beam", [(0, 0), (1, 0), (2, 2)])
def test_shard_epochs_chained_are_the_kernel_epochs(seed, beam):
    """One shard holding every sentence, each epoch started from the last one's final
    weights, its per-epoch sums of the weight vectors added up: the averaged weights of
    structured_perceptron, value for value (0/1 features: every sum an integer)."""
    rng = np.random.default_rng(seed)
    p = random_problem(rng, n_tags=int(rng.integers(2, 5)))
    n_sent = p["sent_offsets"].size - 1
    orders = np.stack([rng.permutation(n_sent) for _ in range(3)])
    if beam:
        p["cand_offsets"] = p["cand_tags"] = None
    shard = PerceptronShard(**p, beam=beam)
    S = p["n_states"]
    w = (np.zeros(p["emit_tags"].size), np.zeros(S * S), np.zeros(p["tri_tags"].size))
    total, seen = [np.zeros_like(x) for x in w], 0
    for order, (e, bg, tr, nw) in zip(orders, structured_perceptron(**p, orders=orders,
                                                                    beam=beam), strict=True):
        out = shard.epoch(order, *w)
        w = (out.emit, out.bigram, out.trigram)
        total = [t + x for t, x in zip(total, (out.emit_sum, out.bigram_sum,
                                                out.trigram_sum))]
        seen += out.n_visits
        assert out.n_wrong == nw and out.n_visits == n_sent
        np.testing.assert_array_equal(total[0] / seen, e)
        np.testing.assert_array_equal((total[1] / seen).reshape(S, S), bg)
        np.testing.assert_array_equal(total[2] / seen, tr)


def test_shard_epoch_leaves_the_given_weights_and_refuses_bad_ones():
    p = _p()
    shard = PerceptronShard(**p)
    S = p["n_states"]
    w = (np.ones(p["emit_tags"].size), np.zeros(S * S), np.zeros(p["tri_tags"].size))
    before = [x.copy() for x in w]
    shard.epoch(np.arange(6), *w)
    for a, b in zip(w, before):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match=r"emit must have shape \(\d+,\), got \(3,\)"):
        shard.epoch([0], np.zeros(3), w[1], w[2])
    with pytest.raises(ValueError, match=r"orders must hold sentence indices in \[0, 6\)"):
        shard.epoch([6], *w)
    with pytest.raises(ValueError, match="orders must be a 1-d int array"):
        shard.epoch([[0]], *w)
    with pytest.raises(ValueError, match="n_states must be an int >= 3, got 2"):
        PerceptronShard(**dict(p, n_states=2))


def test_wide_beam_is_the_full_lattice():
    """A beam as wide as the tagset gives every tag to every token: the static full lattice."""
    p = random_problem(np.random.default_rng(5), n_tags=4)
    n = p["gold_tags"].size
    orders = [[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0]]
    full = dict(p, cand_offsets=np.arange(n + 1) * 4, cand_tags=np.tile(np.arange(4), n))
    for (e, bg, tr, nw), (e2, bg2, tr2, nw2) in zip(
            structured_perceptron(**full, orders=orders),
            structured_perceptron(**p, orders=orders, beam=4), strict=True):
        assert nw == nw2
        np.testing.assert_array_equal(e, e2)
        np.testing.assert_array_equal(bg, bg2)
        np.testing.assert_array_equal(tr, tr2)


@pytest.mark.parametrize("beam", [0, 2])
def test_generic_decoder_fallback_gives_the_same_epochs(beam, monkeypatch):
    """Without the dense trigram mirror (a tagset too large for it) the kernel family's
    decoder runs: the same sequences, hence the same weights."""
    import sparsecca.kernels._structured as mod

    p = random_problem(np.random.default_rng(7), n_tags=3)
    orders = np.stack([np.random.default_rng(e).permutation(6) for e in range(3)])
    fast = list(structured_perceptron(**p, orders=orders, beam=beam))
    monkeypatch.setattr(mod, "_DENSE_TRIGRAMS", 0)
    slow = list(structured_perceptron(**p, orders=orders, beam=beam))
    for x, y in zip(fast, slow, strict=True):
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u, v)


def test_separable_data_converges():
    """A corpus the features separate: no mistakes after a few epochs."""
    X = sp.identity(4, format="csr")
    p = dict(X=X, gold_tags=[0, 1, 1, 0], sent_offsets=[0, 2, 4], cand_offsets=[0, 2, 4, 6, 8],
             cand_tags=[0, 1] * 4, emit_indptr=[0, 2, 4, 6, 8], emit_tags=[0, 1] * 4,
             n_states=4, tri_indptr=np.zeros(17, dtype=int), tri_tags=[], bos=2, eos=3)
    wrong = [w for *_, w in structured_perceptron(**p, orders=[[0, 1]] * 4)]
    assert wrong[-1] == 0


def _p():
    return random_problem(np.random.default_rng(0))


@pytest.mark.parametrize("change, exc, match", [
    (dict(X=np.eye(3)), TypeError, "X must be a scipy.sparse matrix, got ndarray"),
    (dict(n_states=2), ValueError, "n_states must be an int >= 3, got 2"),
    (dict(bos=5), ValueError, r"bos must be an int in \[0, n_states=5\), got 5"),
    (dict(eos=3), ValueError, "bos and eos must be different states, got both 3"),
    (dict(gold_tags=[0]), ValueError, "gold_tags must have n_tokens=15 entries, got 1"),
    (dict(gold_tags="bos"), ValueError, "gold_tags must lie in .* neither bos nor eos"),
    (dict(emit_indptr=[0, 1]), ValueError, r"emit_indptr must have n_features \+ 1=7 entries"),
    (dict(tri_tags="unsorted"), ValueError, "tri_tags must be sorted .* row"),
    (dict(orders=[0, 1]), ValueError, r"orders must be a 2-d int array"),
    (dict(orders=[[0, 9]]), ValueError, r"orders must hold sentence indices in \[0, 6\)"),
    (dict(cand_offsets=[0, 1], cand_tags=[0]), ValueError, "sent_offsets"),
    (dict(beam=-1), ValueError, "beam"),
    (dict(beam=2, sent_offsets=[0, 3]), ValueError, "sent_offsets"),
])
def test_bad_arguments(change, exc, match):
    p = _p()
    p["orders"] = [[0, 1]]
    for key, v in change.items():
        if isinstance(v, str) and v == "bos":
            v = p["gold_tags"].copy()
            v[0] = p["bos"]
        elif isinstance(v, str) and v == "unsorted":
            ind = p["tri_indptr"]
            c = int(np.flatnonzero(np.diff(ind) >= 2)[0])
            v = p["tri_tags"].copy()
            v[ind[c]:ind[c + 1]] = v[ind[c]:ind[c + 1]][::-1]
        p[key] = v
    with pytest.raises(exc, match=match):
        structured_perceptron(**p)  # refused at the call, before any epoch


def test_runs_without_jit():
    """Both kernels as plain Python (NUMBA_DISABLE_JIT=1) give the reference answers."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {here!r})
        import numpy as np
        import numba
        assert numba.config.DISABLE_JIT
        from test_structured import (test_additive_kbest_equals_brute_force,
                                     test_beam_epochs_equal_pure_python_reference,
                                     test_epochs_equal_pure_python_reference)
        test_additive_kbest_equals_brute_force(1, True)
        test_epochs_equal_pure_python_reference(1)
        test_beam_epochs_equal_pure_python_reference(1, 2)
        print("NOJIT-OK")
    """)
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert "NOJIT-OK" in res.stdout


# -- the public 1-best decoder of a trained perceptron: bad input ------------------------------

def _best_args(**change):
    import scipy.sparse as sp

    from sparsecca.kernels import dense_trigrams

    S = 4
    args = dict(X=sp.csr_matrix(np.eye(2)), sent_offsets=np.array([0, 2]),
                cand_offsets=np.array([0, 2, 4]), cand_tags=np.array([0, 1, 0, 1], np.int32),
                emit_indptr=np.array([0, 1, 2]), emit_tags=np.array([1, 0], np.int32),
                emit_w=np.array([2.0, 3.0]), bigram_w=np.zeros((S, S)),
                tri_dense=dense_trigrams(np.zeros(S * S + 1, np.int64), [], [], S),
                bos=S - 2, eos=S - 1)
    args.update(change)
    return args


def test_best_sequences_matches_kbest_viterbi_on_a_tiny_case():
    from sparsecca.kernels import best_sequences

    tags, scores = best_sequences(**_best_args())
    assert tags.tolist() == [1, 0] and scores.tolist() == [5.0]


@pytest.mark.parametrize("change, exc, match", [
    (dict(X=np.eye(2)), TypeError, "X must be a CSR matrix"),
    (dict(bigram_w=np.zeros((4, 3))), ValueError, "bigram_w must be square"),
    (dict(tri_dense=np.zeros(8)), ValueError, r"tri_dense must have n_states \*\* 3 = 64"),
    (dict(bos=0), ValueError, "bos and eos must be n_states - 2 = 2"),
    (dict(sent_offsets=np.array([0, 0, 2])), ValueError, "no empty sentence"),
    (dict(cand_offsets=np.array([0, 2, 3])), ValueError, "cand_offsets must rise from 0 to 4"),
    (dict(emit_w=np.array([1.0])), ValueError, "emit_w must have len"),
    (dict(cand_tags=np.array([0, 1, 0, 2], np.int32)), ValueError,
     r"cand_tags must lie in \[0, 2\)"),
])
def test_best_sequences_bad_input(change, exc, match):
    from sparsecca.kernels import best_sequences

    with pytest.raises(exc, match=match):
        best_sequences(**_best_args(**change))


@pytest.mark.parametrize("args, match", [
    ((np.array([0, 1]), [0], [1.0], 2), "n_states \\*\\* 2 \\+ 1 = 5"),
    ((np.array([0, 1, 1, 1, 1]), [0, 1], [1.0], 2), "tri_indptr\\[-1\\] = 1"),
    ((np.array([0, 1, 1, 1, 1]), [2], [1.0], 2), r"tri_tags must lie in \[0, 2\)"),
])
def test_dense_trigrams_bad_input(args, match):
    from sparsecca.kernels import dense_trigrams

    with pytest.raises(ValueError, match=match):
        dense_trigrams(*args)
