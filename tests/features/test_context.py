"""ContextFeatures against a slow pure-Python extraction, token by token."""

from collections import Counter

import numpy as np
import pytest

from sparsecca.data import TaggedCorpus, synthetic_corpus
from sparsecca.features import ContextFeatures

SENTENCES = [
    ["The", "U.S.", "re-election", "of", "Mr.", "Smith", "costs", "$", "3.5", "billion", "."],
    [],
    ["a"],
    ["NASA", "'s", "ISS", "orbits", "the", "earth"],
    ["Wait", "-", "what", "?", "42"],
]


def reference_names(sentence, i, affix=4, window=2):
    """The feature names of token ``i``, written out plainly."""
    w = sentence[i]
    names = {"bias", "w=" + w, "l=" + w.lower()}
    for k in range(1, affix + 1):
        if k <= len(w):
            names.add(f"p{k}={w[:k]}")
            names.add(f"s{k}={w[-k:]}")
    if any(c.isupper() for c in w):
        names.add("has_upper")
    if any(c.isdigit() for c in w):
        names.add("has_digit")
    if "-" in w:
        names.add("has_hyphen")
    if w.isupper():
        names.add("all_caps")
    if w[:1].isupper():
        names.add("init_cap")
    for d in range(-window, window + 1):
        if d == 0:
            continue
        j = i + d
        if j < 0:
            names.add(f"w{d:+d}:BOS")
        elif j >= len(sentence):
            names.add(f"w{d:+d}:EOS")
        else:
            names.add(f"w{d:+d}={sentence[j].lower()}")
    return names


def reference_rows(sentences, **kw):
    return [reference_names(s, i, **kw) for s in sentences for i in range(len(s))]


def rows_as_names(X, view):
    names = view.feature_names_out()
    return [set(names[X.indices[X.indptr[r]:X.indptr[r + 1]]]) for r in range(X.shape[0])]


@pytest.mark.parametrize("affix, window", [(4, 2), (2, 1), (0, 0), (6, 3)])
def test_equals_reference(affix, window):
    corpus = TaggedCorpus.from_words(SENTENCES)
    view = ContextFeatures(affix=affix, window=window)
    X = view.fit_transform(corpus)
    ref = reference_rows(SENTENCES, affix=affix, window=window)
    assert X.shape == (corpus.n_tokens, view.n_features_)
    assert X.dtype == np.float32 and np.all(X.data == 1)
    assert X.has_canonical_format
    assert rows_as_names(X, view) == ref
    assert sorted(set().union(*ref)) == list(view.feature_names_out())
    assert view.n_dropped_ == 0


#: words that look like feature names or sort next to their heads and markers
ODD = [["w=", "l=x", "p1=", "=", ":", "w-1", "a=b", "BOS", "w-1:EOS", "Ünï", "\u00e9t\u00e9"],
       ["0", "-", "p10=", "s1", "has_upper", "bias", "ALL", "A", "a", "Ünï", "x" * 12]]


@pytest.mark.parametrize("affix, window, min_count", [(10, 3, 1), (1, 12, 1), (4, 2, 2)])
def test_names_that_look_like_templates(affix, window, min_count):
    """The columns are the sorted kept names, whatever the words (the name blocks of the
    templates are sorted each on its own, then put in order)."""
    view = ContextFeatures(affix=affix, window=window, min_count=min_count)
    X = view.fit_transform(TaggedCorpus.from_words(ODD))
    ref = reference_rows(ODD, affix=affix, window=window)
    counts = Counter(n for row in ref for n in row)
    kept = sorted(n for n, c in counts.items() if c >= min_count)
    assert list(view.feature_names_out()) == kept
    assert rows_as_names(X, view) == [row & set(kept) for row in ref]


def test_name_order_of_overlapping_blocks():
    """Blocks whose spans overlap are not put side by side: all names are sorted at once."""
    from sparsecca.features._context import _name_order

    names = ["b", "a", "c", "a0", "z"]
    assert _name_order(names, [2, 2, 1], {}).tolist() == [1, 3, 0, 2, 4]
    assert _name_order(names, [2, 0, 3], {}).tolist() == [1, 3, 0, 2, 4]
    assert _name_order(["y", "x", "b", "a"], [2, 2], {1: 0}).tolist() == [3, 2, 1, 0]


@pytest.mark.parametrize("min_count", [1, 2, 3, 5])
def test_min_count_and_unseen_words(min_count):
    train = synthetic_corpus(60, random_state=1)
    test = synthetic_corpus(20, random_state=2)
    sents = [w for w, _ in train]
    counts = Counter(n for row in reference_rows(sents) for n in row)
    view = ContextFeatures(min_count=min_count).fit(train)
    kept = {n for n, c in counts.items() if c >= min_count}
    assert set(view.feature_names_out()) == kept
    assert view.n_dropped_ == sum(c for n, c in counts.items() if c < min_count)
    X = view.transform(test)
    ref = [row & kept for row in reference_rows([w for w, _ in test])]
    assert rows_as_names(X, view) == ref
    assert view.n_dropped_ == sum(len(r) for r in reference_rows([w for w, _ in test])) \
        - sum(len(r) for r in ref)


@pytest.mark.parametrize("min_count", [1, 2])
def test_fit_transform_equals_fit_then_transform(min_count):
    """fit_transform extracts the word features once; the result is fit(c).transform(c)."""
    corpus = synthetic_corpus(60, random_state=3)
    a = ContextFeatures(min_count=min_count)
    X = a.fit_transform(corpus)
    b = ContextFeatures(min_count=min_count).fit(corpus)
    assert a.vocabulary_.items == b.vocabulary_.items
    Y = b.transform(corpus)
    assert (X != Y).nnz == 0 and X.dtype == Y.dtype and X.has_canonical_format
    assert a.n_dropped_ == b.n_dropped_


def test_dtype_empty_and_persistence(tmp_path):
    corpus = TaggedCorpus.from_words(SENTENCES)
    view = ContextFeatures(dtype=np.float64).fit(corpus)
    assert view.transform(corpus).dtype == np.float64
    empty = view.transform(TaggedCorpus.from_words([[], []]))
    assert empty.shape == (0, view.n_features_)
    path = view.save(tmp_path / "ctx")
    again = ContextFeatures.load(path)
    assert again.get_params() == view.get_params()
    assert (again.transform(corpus) != view.transform(corpus)).nnz == 0


@pytest.mark.parametrize("params, exc, match", [
    (dict(min_count=0), ValueError, "min_count must be an int >= 1, got 0"),
    (dict(affix=-1), ValueError, "affix must be an int >= 0, got -1"),
    (dict(window=1.5), TypeError, "window must be an int >= 0, got 1.5"),
    (dict(dtype=np.int32), ValueError, "dtype must be float32 or float64, got int32"),
    (dict(min_count=10**6), ValueError, "ContextFeatures: min_count=1000000 leaves no features"),
])
def test_bad_params(params, exc, match):
    with pytest.raises(exc, match=match):
        ContextFeatures(**params).fit(TaggedCorpus.from_words(SENTENCES))


def test_bad_input():
    with pytest.raises(TypeError, match="corpus must be a sparsecca.data.TaggedCorpus"):
        ContextFeatures().fit([["a"]])
    from sparsecca.features import NotFittedError
    with pytest.raises(NotFittedError, match="not fitted yet"):
        ContextFeatures().transform(TaggedCorpus.from_words(SENTENCES))


def test_threads_sharing_a_fitted_view_transform_as_one_would():
    # every transform of new words grows the shared type table; threads may share a view
    # (a tagger decoding partitions on the threaded Dask scheduler)
    from concurrent.futures import ThreadPoolExecutor

    train = synthetic_corpus(40, random_state=0)
    corpora = [synthetic_corpus(30, random_state=s) for s in range(1, 17)]
    alone = [ContextFeatures(affix=2).fit(train).transform(c) for c in corpora]
    shared = ContextFeatures(affix=2).fit(train)
    for _ in range(3):
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(shared.transform, corpora))
        for a, b in zip(alone, got):
            assert (a != b).nnz == 0
