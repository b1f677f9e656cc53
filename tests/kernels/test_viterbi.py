"""k-best second-order Viterbi against brute-force enumeration and a plain NumPy Viterbi."""

import itertools
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from sparsecca.kernels import kbest_viterbi, sequence_logprob

N_TAGS = 4


def random_model(rng, n_tags=N_TAGS, density=0.4):
    """Random transition arrays in the kernel's format plus an independent dense table.

    ``dense[t2, t1, t]`` is built with plain NumPy from the same numbers, so it checks the
    kernel's binary-search look-up and back-off rule.
    """
    S = n_tags + 2
    bigram = rng.normal(size=(S, S)) - 2.0
    adj = np.where(rng.random((S, S)) < 0.5, rng.normal(size=(S, S)), 0.0)
    stored = rng.random((S, S, S)) < density
    tri = rng.normal(size=(S, S, S)) - 2.0
    dense = np.where(stored, tri, bigram[None, :, :] + adj[:, :, None])
    ctx, t = np.nonzero(stored.reshape(S * S, S))
    indptr = np.zeros(S * S + 1, dtype=np.int64)
    np.cumsum(np.bincount(ctx, minlength=S * S), out=indptr[1:])
    trans = dict(n_states=S, bigram_logp=bigram, context_adj=adj, tri_indptr=indptr,
                 tri_tags=t.astype(np.int32), tri_logp=tri.reshape(S * S, S)[ctx, t],
                 bos=n_tags, eos=n_tags + 1)
    return trans, dense


def random_lattice(rng, lengths, n_tags=N_TAGS, max_cands=N_TAGS):
    """Per-token random candidate subsets (distinct tags) with random emissions."""
    cand = []
    for n in lengths:
        for _ in range(n):
            m = int(rng.integers(1, max_cands + 1))
            tags = np.sort(rng.choice(n_tags, size=m, replace=False))
            cand.append((tags, rng.normal(size=m) - 1.0))
    sent_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    cand_offsets = np.concatenate([[0], np.cumsum([len(c[0]) for c in cand])]).astype(np.int64)
    cand_tags = np.concatenate([c[0] for c in cand] or [np.zeros(0, int)]).astype(np.int32)
    cand_logp = np.concatenate([c[1] for c in cand] or [np.zeros(0)])
    return dict(sent_offsets=sent_offsets, cand_offsets=cand_offsets, cand_tags=cand_tags,
                cand_logp=cand_logp)


def brute_force(lat, dense, bos, eos, i):
    """Every tag sequence of sentence ``i`` with its log-probability, best first."""
    a, b = lat["sent_offsets"][i], lat["sent_offsets"][i + 1]
    per_token = []
    for j in range(a, b):
        lo, hi = lat["cand_offsets"][j], lat["cand_offsets"][j + 1]
        per_token.append(list(zip(lat["cand_tags"][lo:hi].tolist(),
                                  lat["cand_logp"][lo:hi].tolist())))
    out = []
    for combo in itertools.product(*per_token):
        seq = [t for t, _ in combo]
        s = sum(e for _, e in combo)
        hist = [bos, bos] + seq + [eos]
        s += sum(dense[hist[m - 2], hist[m - 1], hist[m]] for m in range(2, len(hist)))
        out.append((s, tuple(seq)))
    out.sort(key=lambda x: -x[0])
    return out


def numpy_viterbi(lat, dense, bos, eos, i, n_tags):
    """Plain dense second-order Viterbi over all tags (non-candidates get -inf emission)."""
    S = dense.shape[0]
    a, b = lat["sent_offsets"][i], lat["sent_offsets"][i + 1]
    n = b - a
    emis = np.full((n, S), -np.inf)
    for m in range(n):
        lo, hi = lat["cand_offsets"][a + m], lat["cand_offsets"][a + m + 1]
        emis[m, lat["cand_tags"][lo:hi]] = lat["cand_logp"][lo:hi]
    delta = np.full((S, S), -np.inf)  # delta[t1, t]: best score of a prefix ending (t1, t)
    delta[bos, bos] = 0.0
    back = []
    for m in range(n + 1):
        e = emis[m] if m < n else np.where(np.arange(S) == eos, 0.0, -np.inf)
        cand = delta[:, :, None] + dense + e[None, None, :]  # [t2, t1, t]
        back.append(np.argmax(cand, axis=0))
        delta = np.max(cand, axis=0)
    t1 = int(np.argmax(delta[:, eos]))
    best = delta[t1, eos]
    seq = []
    t = eos
    for m in range(n, 0, -1):
        t2 = back[m][t1, t]
        seq.append(t1)
        t, t1 = t1, t2
    return best, tuple(reversed(seq))


def decode(lat, trans, k, parallel=False):
    return kbest_viterbi(lat["sent_offsets"], lat["cand_offsets"], lat["cand_tags"],
                         lat["cand_logp"], k=k, parallel=parallel, **trans)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [1, 3, 10, 2000])
def test_kbest_equals_brute_force(seed, k):
    rng = np.random.default_rng(seed)
    trans, dense = random_model(rng)
    lengths = [0, 1, 2, 3, 4, 5]
    lat = random_lattice(rng, lengths)
    seq_tags, seq_off, sent_off, scores = decode(lat, trans, k)
    for i in range(len(lengths)):
        ref = brute_force(lat, dense, trans["bos"], trans["eos"], i)
        got = range(sent_off[i], sent_off[i + 1])
        assert len(got) == min(k, len(ref))
        got_seqs = [tuple(seq_tags[seq_off[r]:seq_off[r + 1]].tolist()) for r in got]
        np.testing.assert_allclose(scores[sent_off[i]:sent_off[i + 1]],
                                   [s for s, _ in ref[:len(got)]], rtol=1e-12, atol=1e-12)
        assert got_seqs == [q for _, q in ref[:len(got)]]
        assert len(set(got_seqs)) == len(got_seqs)


@pytest.mark.parametrize("seed", range(5))
def test_one_best_equals_numpy_viterbi(seed):
    rng = np.random.default_rng(100 + seed)
    n_tags = 6
    trans, dense = random_model(rng, n_tags=n_tags, density=0.3)
    lengths = [1, 7, 12, 20]
    lat = random_lattice(rng, lengths, n_tags=n_tags, max_cands=5)
    seq_tags, seq_off, sent_off, scores = decode(lat, trans, 1)
    assert np.array_equal(sent_off, np.arange(len(lengths) + 1))
    for i in range(len(lengths)):
        best, seq = numpy_viterbi(lat, dense, trans["bos"], trans["eos"], i, n_tags)
        assert scores[i] == pytest.approx(best, rel=1e-12, abs=1e-12)
        assert tuple(seq_tags[seq_off[i]:seq_off[i + 1]].tolist()) == seq


@pytest.mark.parametrize("parallel", [False, True])
def test_scores_are_sequence_logprobs(parallel):
    rng = np.random.default_rng(7)
    trans, dense = random_model(rng, n_tags=5)
    lengths = rng.integers(0, 15, size=40)
    lat = random_lattice(rng, lengths, n_tags=5, max_cands=4)
    seq_tags, seq_off, sent_off, scores = decode(lat, trans, 8, parallel=parallel)
    seq_sent = np.repeat(np.arange(lengths.size), np.diff(sent_off))
    # independent scoring with the dense NumPy table
    for r in range(seq_sent.size):
        i = seq_sent[r]
        a = lat["sent_offsets"][i]
        seq = seq_tags[seq_off[r]:seq_off[r + 1]].tolist()
        s = 0.0
        for m, t in enumerate(seq):
            lo, hi = lat["cand_offsets"][a + m], lat["cand_offsets"][a + m + 1]
            s += lat["cand_logp"][lo:hi][lat["cand_tags"][lo:hi] == t][0]
        hist = [trans["bos"]] * 2 + seq + [trans["eos"]]
        s += sum(dense[hist[m - 2], hist[m - 1], hist[m]] for m in range(2, len(hist)))
        assert scores[r] == pytest.approx(s, rel=1e-12, abs=1e-12)
    # the kernel's own scorer agrees too, and scores descend within each sentence
    again = sequence_logprob(lat["sent_offsets"], lat["cand_offsets"], lat["cand_tags"],
                             lat["cand_logp"], seq_sent=seq_sent, seq_tags=seq_tags,
                             seq_offsets=seq_off, **trans)
    np.testing.assert_allclose(again, scores, rtol=1e-12)
    for i in range(lengths.size):
        assert np.all(np.diff(scores[sent_off[i]:sent_off[i + 1]]) <= 0)


def test_parallel_equals_serial():
    rng = np.random.default_rng(11)
    trans, _ = random_model(rng, n_tags=8, density=0.2)
    lat = random_lattice(rng, rng.integers(0, 30, size=200), n_tags=8, max_cands=6)
    a = decode(lat, trans, 5, parallel=False)
    b = decode(lat, trans, 5, parallel=True)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_long_sentence_does_not_underflow():
    rng = np.random.default_rng(3)
    trans, _ = random_model(rng, n_tags=6)
    lat = random_lattice(rng, [1000], n_tags=6, max_cands=3)
    seq_tags, seq_off, sent_off, scores = decode(lat, trans, 10)
    assert sent_off[-1] == 10
    assert np.all(np.isfinite(scores)) and scores[0] < -1000
    seqs = {tuple(seq_tags[seq_off[r]:seq_off[r + 1]]) for r in range(10)}
    assert len(seqs) == 10
    again = sequence_logprob(lat["sent_offsets"], lat["cand_offsets"], lat["cand_tags"],
                             lat["cand_logp"], seq_sent=np.zeros(10, int), seq_tags=seq_tags,
                             seq_offsets=seq_off, **trans)
    np.testing.assert_allclose(again, scores, rtol=1e-12)


def test_fewer_sequences_than_k_and_empty_inputs():
    rng = np.random.default_rng(5)
    trans, _ = random_model(rng)
    # one token with 2 candidates, one with 1: exactly 2 sequences exist
    lat = dict(sent_offsets=np.array([0, 2]), cand_offsets=np.array([0, 2, 3]),
               cand_tags=np.array([0, 3, 1]), cand_logp=np.array([-1.0, -2.0, -0.5]))
    seq_tags, seq_off, sent_off, scores = decode(lat, trans, 50)
    assert sent_off.tolist() == [0, 2]
    assert {tuple(seq_tags[seq_off[r]:seq_off[r + 1]]) for r in range(2)} == {(0, 1), (3, 1)}
    # no sentences at all
    lat0 = dict(sent_offsets=np.array([0]), cand_offsets=np.array([0]),
                cand_tags=np.zeros(0, int), cand_logp=np.zeros(0))
    seq_tags, seq_off, sent_off, scores = decode(lat0, trans, 3)
    assert seq_tags.size == 0 and seq_off.tolist() == [0] and sent_off.tolist() == [0]
    assert scores.size == 0


def _good_args():
    rng = np.random.default_rng(0)
    trans, _ = random_model(rng)
    lat = random_lattice(rng, [2, 3])
    return {**lat, **trans, "k": 2}


@pytest.mark.parametrize("change, exc, match", [
    (dict(k=0), ValueError, r"k must be an int >= 1, got 0"),
    (dict(k=-3), ValueError, r"k must be an int >= 1, got -3"),
    (dict(k=2.5), TypeError, r"k must be an int"),
    (dict(k=True), TypeError, r"k must be an int"),
    (dict(sent_offsets=np.array([0, 2, 4])), ValueError,
     r"sent_offsets must .* end at n_tokens .*=5; got 3 entries"),
    (dict(sent_offsets=np.array([[0, 5]])), ValueError, r"sent_offsets must be 1-d"),
    (dict(cand_tags=np.linspace(0.0, 1.0, 7)), TypeError,
     r"cand_tags must be an array of integers"),
    (dict(cand_logp=np.zeros(3)), ValueError, r"cand_logp has 3 entries"),
    (dict(n_states=1), ValueError, r"n_states must be an int >= 2, got 1"),
    (dict(bigram_logp=np.zeros((3, 3))), ValueError, r"bigram_logp must have n_states\*\*2=36"),
    (dict(context_adj=np.zeros(5)), ValueError, r"context_adj must have n_states\*\*2=36"),
    (dict(tri_indptr=np.zeros(5, int)), ValueError, r"tri_indptr must have n_states\*\*2 \+ 1"),
    (dict(bos=6), ValueError, r"bos must be an int in \[0, n_states=6\), got 6"),
    (dict(eos=-1), ValueError, r"eos must be an int in \[0, n_states=6\), got -1"),
])
def test_bad_input(change, exc, match):
    args = _good_args()
    args.update(change)
    with pytest.raises(exc, match=match):
        kbest_viterbi(**args)


def test_bad_candidates():
    args = _good_args()
    args["cand_tags"] = args["cand_tags"].copy()
    args["cand_tags"][0] = 99
    with pytest.raises(ValueError, match=r"cand_tags must lie in \[0, n_states=6\)"):
        kbest_viterbi(**args)
    args = _good_args()
    args["cand_logp"] = args["cand_logp"].copy()
    args["cand_logp"][1] = np.nan
    with pytest.raises(ValueError, match="cand_logp must be finite or -inf .*got nan at index 1"):
        kbest_viterbi(**args)
    args = _good_args()
    co = args["cand_offsets"].copy()
    co[1] = co[0]  # token 0 loses its candidates
    args["cand_offsets"] = co
    with pytest.raises(ValueError, match="token 0 has none"):
        kbest_viterbi(**args)


def test_runs_without_jit():
    """The kernel as plain Python (NUMBA_DISABLE_JIT=1) gives the brute-force answer."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {here!r})
        import numpy as np
        import numba
        assert numba.config.DISABLE_JIT
        from test_viterbi import random_model, random_lattice, brute_force, decode
        rng = np.random.default_rng(42)
        trans, dense = random_model(rng)
        lat = random_lattice(rng, [0, 2, 4])
        for parallel in (False, True):
            seq_tags, seq_off, sent_off, scores = decode(lat, trans, 4, parallel)
            for i in range(3):
                ref = brute_force(lat, dense, trans["bos"], trans["eos"], i)[:4]
                got = scores[sent_off[i]:sent_off[i + 1]]
                assert np.allclose(got, [s for s, _ in ref]), (got, ref)
        print("NOJIT-OK")
    """)
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert "NOJIT-OK" in res.stdout


def _first_context_with(trans, n):
    ind = trans["tri_indptr"]
    return int(np.flatnonzero(np.diff(ind) >= n)[0])


def _reversed_context(trans):
    c = _first_context_with(trans, 2)
    tags = trans["tri_tags"].copy()
    lo, hi = trans["tri_indptr"][c], trans["tri_indptr"][c + 1]
    tags[lo:hi] = tags[lo:hi][::-1]
    return c, tags


def _with(arr, i, value):
    arr = np.array(arr, dtype=np.float64, copy=True)
    arr.flat[i] = value
    return arr


def _bad_table(case, args):
    S = args["n_states"]
    c, rev = _reversed_context(args)
    return {
        "bigram_nan": (dict(bigram_logp=_with(args["bigram_logp"], 0, np.nan)),
                       r"bigram_logp must be finite or -inf \(log-probabilities\), got nan at "
                       r"index 0"),
        "bigram_inf": (dict(bigram_logp=np.full(S * S, np.inf)),
                       r"bigram_logp .*got inf at index 0"),
        "adj_nan": (dict(context_adj=_with(args["context_adj"], 7, np.nan)),
                    r"context_adj must be finite or -inf .*got nan at index 7"),
        "tri_nan": (dict(tri_logp=np.full(args["tri_logp"].size, np.nan)),
                    r"tri_logp must be finite or -inf .*got nan at index 0"),
        "cand_inf": (dict(cand_logp=_with(args["cand_logp"], 0, np.inf)),
                     r"cand_logp must be finite or -inf .*got inf at index 0"),
        "tri_unsorted": (dict(tri_tags=rev),
                         rf"tri_tags must be sorted \(ascending, without repeats\) within each "
                         rf"context; context {c} \(t2={c // S}, t1={c % S}\) is not"),
        "bos_is_eos": (dict(bos=5, eos=5), "bos and eos must be different states, got both 5"),
    }[case]


@pytest.mark.parametrize("case", ["bigram_nan", "bigram_inf", "adj_nan", "tri_nan", "cand_inf",
                                  "tri_unsorted", "bos_is_eos"])
def test_bad_tables(case):
    """NaN / +inf in a table, tri_tags out of order, bos == eos: each was decoded silently."""
    args = _good_args()
    change, match = _bad_table(case, args)
    with pytest.raises(ValueError, match=match):
        kbest_viterbi(**{**args, **change})
    if case == "bigram_nan":
        seq = dict(seq_sent=[0], seq_tags=args["cand_tags"][[0, 0]], seq_offsets=[0, 2])
        no_k = {key: v for key, v in args.items() if key != "k"}
        with pytest.raises(ValueError, match=match):
            sequence_logprob(**{**no_k, **seq, **change})


_LAT = dict(sent_offsets=np.array([0, 2]), cand_offsets=np.array([0, 3, 4]))


@pytest.mark.parametrize("change, exc, match", [
    # a repeated candidate gave the same sequence twice in the k-best list
    (dict(cand_tags=[0, 0, 1, 2]), ValueError,
     "candidate tags must be distinct within each token; token 0 has candidate tag 0 twice"),
    (dict(cand_tags=[2, 0, 2, 1]), ValueError, "token 0 has candidate tag 2 twice"),
    # BOS / EOS as a token's tag ended up inside the output sequences
    (dict(cand_tags=[0, 1, 2, 4]), ValueError,
     r"cand_tags must not contain bos \(4\) or eos \(5\); token 1 has candidate 4"),
    (dict(cand_tags=[5, 1, 2, 3]), ValueError, "token 0 has candidate 5"),
    # int64 tag 2**32 + 1 wrapped to tag 1 in int32
    (dict(cand_tags=np.array([2**32 + 1, 0, 2, 3])), ValueError,
     r"cand_tags must lie in the int32 range .*got values in \[0, 4294967297\]"),
    (dict(cand_tags=np.array([True, False, True, False])), TypeError,
     "cand_tags must be an array of integers, got dtype bool"),
    (dict(cand_offsets=np.array([0, 3.0, 4])), TypeError,
     "cand_offsets must be an array of integers, got dtype float64"),
    (dict(tri_tags="float"), TypeError, "tri_tags must be an array of integers, got dtype float64"),
    (dict(tri_tags="wrap"), ValueError, "tri_tags must lie in the int32 range"),
    (dict(bos=True), TypeError, r"bos must be an int in \[0, n_states=6\), got True"),
    # a truthy string ran the parallel kernel
    (dict(parallel="no"), TypeError, "parallel must be True or False, got 'no'"),
])
def test_bad_candidate_tags_and_ids(change, exc, match):
    args = _good_args()
    args.update(_LAT, cand_tags=np.array([0, 1, 2, 3]), cand_logp=np.array([-1.0, -2, -3, -4]))
    if change.get("tri_tags") == "float":
        change = dict(tri_tags=args["tri_tags"].astype(float))
    elif change.get("tri_tags") == "wrap":
        change = dict(tri_tags=args["tri_tags"].astype(np.int64) + 2**32)
    args.update(change)
    with pytest.raises(exc, match=match):
        kbest_viterbi(**args)


def test_valid_unusual_input_unchanged():
    """Candidates out of order, -inf emissions, narrow / unsigned ids and (S, S) tables."""
    rng = np.random.default_rng(8)
    trans, dense = random_model(rng)
    lat = random_lattice(rng, [3, 2])
    lat["cand_logp"][[1, 4]] = -np.inf
    ref = decode(lat, trans, 6)
    for i in range(2):
        want = brute_force(lat, dense, trans["bos"], trans["eos"], i)[:6]
        got = ref[3][ref[2][i]:ref[2][i + 1]]
        np.testing.assert_allclose(got, [s for s, _ in want])
    # reverse each token's candidates (with their emissions): same sequences and scores
    # (finite emissions here: the order among tied -inf paths is not specified)
    lat = random_lattice(rng, [3, 2, 4])
    ref = decode(lat, trans, 6)
    co = lat["cand_offsets"]
    perm = np.concatenate([np.arange(co[j + 1] - 1, co[j] - 1, -1) for j in range(co.size - 1)])
    shuffled = dict(lat, cand_tags=lat["cand_tags"][perm], cand_logp=lat["cand_logp"][perm],
                    cand_offsets=co.astype(np.uint32), sent_offsets=lat["sent_offsets"].astype(
                        np.int16))
    out = kbest_viterbi(**shuffled, **dict(trans, tri_tags=trans["tri_tags"].astype(np.uint8)),
                        k=6, parallel=np.bool_(False))
    for x, y in zip(ref, out):
        np.testing.assert_array_equal(x, y)
