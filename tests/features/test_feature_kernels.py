"""The grouped lookup kernel of the feature views against a whole-table np.searchsorted."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from sparsecca.kernels import grouped_lookup


def _table(rng, n_groups, n_codes, density):
    """A (group, code) table sorted by group then code, as group_start + sorted codes."""
    present = rng.random((n_groups, n_codes)) < density
    g, c = np.nonzero(present)  # row-major: sorted by group, then code
    start = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(np.bincount(g, minlength=n_groups), out=start[1:])
    return g, c, start


def _reference(group, code, g, c, n_codes):
    """Slow reference: combined keys and a whole-table binary search."""
    m = n_codes + 4  # query codes lie in [-2, n_codes + 2): shift them to stay in one group
    keys = g * m + (c + 2)
    q = group * m + (code + 2)
    pos = np.searchsorted(keys, q)
    out = np.full(q.size, -1, dtype=np.int64)
    for i, (p, k) in enumerate(zip(pos, q)):
        if p < keys.size and keys[p] == k:
            out[i] = p
    return out


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_groups,n_codes,density", [(1, 50, 0.5), (40, 30, 0.1),
                                                      (200, 7, 0.9), (30, 100, 0.0)])
def test_grouped_lookup_matches_searchsorted(seed, n_groups, n_codes, density):
    rng = np.random.default_rng(seed)
    g, c, start = _table(rng, n_groups, n_codes, density)
    group = rng.integers(0, n_groups, 500)
    code = rng.integers(-2, n_codes + 2, 500)  # includes codes outside any table range
    got = grouped_lookup(group, code, start, c)
    np.testing.assert_array_equal(got, _reference(group, code, g, c, n_codes))
    if g.size:  # every table entry is found at its own position
        np.testing.assert_array_equal(grouped_lookup(g, c, start, c), np.arange(g.size))


def test_grouped_lookup_empty_inputs():
    start = np.array([0, 2, 2, 3])
    codes = np.array([1, 5, 0])
    assert grouped_lookup(np.zeros(0, int), np.zeros(0, int), start, codes).shape == (0,)
    np.testing.assert_array_equal(
        grouped_lookup(np.array([1, 0, 2, 2]), np.array([1, 5, 0, 5]), start, codes),
        [-1, 1, 2, -1])


@pytest.mark.parametrize("args,match", [
    ((np.array([0, 1]), np.array([0]), np.array([0, 1]), np.array([3])),
     r"group and code must be 1-d arrays of the same shape, got \(2,\) and \(1,\)"),
    ((np.array([0]), np.array([0]), np.array([1, 1]), np.array([3])),
     "group_start must be 1-d, start at 0 and end at len"),
    ((np.array([0]), np.array([0]), np.array([0, 2]), np.array([3])),
     "group_start must be 1-d, start at 0 and end at len"),
    ((np.array([3]), np.array([0]), np.array([0, 1]), np.array([3])),
     r"group must lie in \[0, 1\), got values in \[3, 3\]"),
])
def test_grouped_lookup_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        grouped_lookup(*args)


def test_grouped_lookup_without_jit():
    """The kernel as plain Python (NUMBA_DISABLE_JIT=1) agrees with the reference."""
    code = textwrap.dedent("""
        import numpy as np
        from sparsecca.kernels import grouped_lookup
        from sparsecca.features import JointView
        from sparsecca.data import TaggedCorpus
        start = np.array([0, 2, 2, 3])
        codes = np.array([1, 5, 0])
        got = grouped_lookup(np.array([1, 0, 2, 2, 0]), np.array([1, 5, 0, 5, 1]), start, codes)
        assert got.tolist() == [-1, 1, 2, -1, 0], got
        c = TaggedCorpus.from_sentences([[("the", "DT"), ("selling", "NN")]])
        v = JointView().fit(c)
        d = TaggedCorpus.from_sentences([[("the", "DT"), ("selling", "VB")]])
        X = v.transform(d)
        names = [n for n, x in zip(v.feature_names_out(), X.toarray()[0]) if x]
        assert names == ["^the\\tDT", "^the\\t<s> DT", "he\\tDT", "he\\t<s> DT",
                         "the\\tDT", "the\\t<s> DT"], names
        assert v.n_dropped_ == 6, v.n_dropped_
        print("ok")
    """)
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"
