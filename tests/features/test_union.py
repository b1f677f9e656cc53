"""HStackView and hstack_csr against np.hstack of the parts (dense reference)."""

from functools import cache

import numpy as np
import pytest
import scipy.sparse as sp
from features_reference import top_columns

from sparsecca.data import read_conllu, synthetic_corpus
from sparsecca.features import (
    CharNgramView,
    HStackView,
    NotFittedError,
    SuffixView,
    TagNgramView,
    WordView,
)
from sparsecca.features._union import hstack_csr

DTYPES = [np.float32, np.float64]

INPUT_PARTS = {
    "suffix1234+word": lambda dt: [SuffixView(lengths=(1, 2, 3, 4), dtype=dt), WordView(dtype=dt)],
    "word+suffix+char": lambda dt: [WordView(lowercase=True, dtype=dt), SuffixView(dtype=dt),
                                    CharNgramView(n=2, min_count=3, dtype=dt)],
    "single": lambda dt: [SuffixView(lengths=2, dtype=dt)],
}


@cache
def corpora():
    c = synthetic_corpus(n_sentences=400, random_state=3)
    return c[:300], c[300:]


def dense_parts(parts, fit_on, apply_to):
    """Reference: each part fitted on its own, densified and stacked by NumPy."""
    return np.hstack([p.fit(fit_on).transform(apply_to).toarray() for p in parts])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(INPUT_PARTS))
def test_transform_matches_np_hstack(name, dtype):
    train, test = corpora()
    view = HStackView(INPUT_PARTS[name](dtype))
    X = view.fit_transform(train)
    assert sp.isspmatrix_csr(X) and X.dtype == np.dtype(dtype)
    assert X.has_sorted_indices
    np.testing.assert_array_equal(X.toarray(), dense_parts(INPUT_PARTS[name](dtype), train, train))
    Xt = view.transform(test)  # held-out sentences: unseen features dropped per part
    np.testing.assert_array_equal(Xt.toarray(),
                                  dense_parts(INPUT_PARTS[name](dtype), train, test))
    assert view.n_features_ == X.shape[1] == view.feature_offsets_[-1]
    widths = [v.n_features_ for v in view.views_]
    np.testing.assert_array_equal(np.diff(view.feature_offsets_), widths)
    assert view.n_dropped_ == sum(v.n_dropped_ for v in view.views_)
    # fit then transform gives the same matrix as fit_transform
    np.testing.assert_array_equal(HStackView(INPUT_PARTS[name](dtype)).fit(train)
                                  .transform(train).toarray(), X.toarray())


def test_parts_are_cloned_not_fitted():
    train, _ = corpora()
    parts = INPUT_PARTS["suffix1234+word"](np.float64)
    view = HStackView(parts).fit(train)
    assert all(not hasattr(p, "n_features_") for p in parts)
    assert all(a is not b for a, b in zip(parts, view.views_))
    assert view.get_params() == {"views": parts, "max_features": None}


def test_transform_sequences_input_and_tag_views():
    train, test = corpora()
    view = HStackView([SuffixView(lengths=(1, 2)), WordView()]).fit(train)
    X = view.transform_sequences(test.word_ids, test.offsets, test.words)
    np.testing.assert_array_equal(X.toarray(), view.transform(test).toarray())
    tags = HStackView([TagNgramView(orders=1), TagNgramView(orders=(2, 3), boundaries=False)])
    tags.fit(train)
    ref = np.hstack([TagNgramView(orders=1).fit(train).transform(test).toarray(),
                     TagNgramView(orders=(2, 3), boundaries=False).fit(train)
                     .transform_sequences(test.tag_ids, test.offsets, test.tags).toarray()])
    got = tags.transform_sequences(test.tag_ids, test.offsets, test.tags)
    np.testing.assert_array_equal(got.toarray(), ref)


def test_feature_names_are_prefixed_and_unique():
    train, _ = corpora()
    view = HStackView([SuffixView(lengths=(1, 2, 3, 4)), WordView()]).fit(train)
    names = view.feature_names_out()
    assert names.shape == (view.n_features_,)
    assert len(set(names)) == names.size
    s, w = view.views_
    assert list(names[:s.n_features_]) == [f"0:{x}" for x in s.feature_names_out()]
    assert list(names[s.n_features_:]) == [f"1:{x}" for x in w.feature_names_out()]


@pytest.mark.parametrize("max_features", [None, 1, 150, 10**6])
def test_save_load_round_trip(tmp_path, max_features):
    train, test = corpora()
    view = HStackView([SuffixView(lengths=(1, 2, 3, 4), dtype=np.float32), WordView()],
                      max_features=max_features)
    view.fit(train)
    path = view.save(tmp_path / "view")
    back = HStackView.load(path)
    assert [type(v) for v in back.views_] == [SuffixView, WordView]
    assert back.get_params()["max_features"] == max_features
    assert back.n_features_ == view.n_features_ and back.n_dropped_ == view.n_dropped_
    np.testing.assert_array_equal(back.feature_offsets_, view.feature_offsets_)
    assert list(back.feature_names_out()) == list(view.feature_names_out())
    if max_features is None:
        assert back.columns_ is None
    else:
        np.testing.assert_array_equal(back.columns_, view.columns_)
    for a, b in ((back.transform(test), view.transform(test)),
                 (back.transform_sequences(test.word_ids, test.offsets, test.words),
                  view.transform_sequences(test.word_ids, test.offsets, test.words))):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a.indptr, b.indptr)
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_array_equal(a.data, b.data)
    assert back.n_dropped_ == view.n_dropped_


def test_load_file_written_before_max_features(tmp_path):
    # such a file has neither the max_features parameter nor n_dropped: it loads as the
    # whole stack, and n_dropped_ is the parts' (nothing was selected)
    from sparsecca._persist import load_model_file, save_model_file

    train, test = corpora()
    view = HStackView([SuffixView(lengths=(1, 2)), WordView(min_count=2)]).fit(train)
    assert view.n_dropped_ > 0  # WordView's min_count leaves words out
    meta, arrays = load_model_file(view.save(tmp_path / "new"), "HStackView")
    del meta["params"]["max_features"], meta["extra"]["n_dropped"]
    old = save_model_file(tmp_path / "old", meta["class"], meta["params"], arrays,
                          extra=meta["extra"])
    back = HStackView.load(old)
    assert back.max_features is None and back.columns_ is None
    assert back.n_dropped_ == view.n_dropped_ == sum(v.n_dropped_ for v in back.views_)
    a, b = back.transform(test), view.transform(test)
    assert a.shape == b.shape and (a != b).nnz == 0


# -- max_features: the most frequent columns of the whole stack -----------------------------

def fitted_parts(parts, corpus):
    """Each part fitted on its own: (the parts, their summed n_dropped_ at fit)."""
    fitted = [p.fit(corpus) for p in parts]
    return fitted, sum(p.n_dropped_ for p in fitted)


@pytest.mark.parametrize("size", ["one", "small", "equal", "larger"])
@pytest.mark.parametrize("name", sorted(INPUT_PARTS))
def test_max_features_selects_the_most_frequent_columns(name, size):
    train, test = corpora()
    parts, fit_dropped = fitted_parts(INPUT_PARTS[name](np.float64), train)
    full = np.hstack([p.transform(train).toarray() for p in parts])
    d = full.shape[1]
    n = {"one": 1, "small": max(1, d // 5), "equal": d, "larger": d + 3}[size]
    sums = full.sum(axis=0).tolist()
    cols = top_columns(sums, n)
    left_out = [j for j in range(d) if j not in set(cols)]
    view = HStackView(INPUT_PARTS[name](np.float64), max_features=n)
    X = view.fit_transform(train)
    assert sp.isspmatrix_csr(X) and X.has_canonical_format and X.dtype == np.float64
    np.testing.assert_array_equal(X.toarray(), full[:, cols])
    assert view.n_features_ == len(cols) == min(n, d)
    np.testing.assert_array_equal(view.columns_, cols)
    assert view.columns_.dtype == np.int64
    names = [f"{j}:{s}" for j, p in enumerate(parts) for s in p.feature_names_out()]
    assert list(view.feature_names_out()) == [names[j] for j in cols]
    # feature_offsets_: the part each output column comes from
    widths = [p.n_features_ for p in parts]
    part_of = np.repeat(np.arange(len(parts)), widths)[cols]
    np.testing.assert_array_equal(view.feature_offsets_,
                                  np.searchsorted(part_of, np.arange(len(parts) + 1)))
    assert view.n_dropped_ == fit_dropped + sum(sums[j] for j in left_out)
    # fit alone: the same columns and losses; transform gives fit_transform's matrix
    other = HStackView(INPUT_PARTS[name](np.float64), max_features=n).fit(train)
    np.testing.assert_array_equal(other.columns_, cols)
    assert other.n_dropped_ == view.n_dropped_
    assert (other.transform(train) != X).nnz == 0
    # held-out corpus: the same columns, and the left-out columns' occurrences are dropped
    held = np.hstack([p.transform(test).toarray() for p in parts])
    test_dropped = sum(p.n_dropped_ for p in parts)
    Xt = view.transform(test)
    assert Xt.has_canonical_format
    np.testing.assert_array_equal(Xt.toarray(), held[:, cols])
    assert view.n_dropped_ == test_dropped + held[:, left_out].sum()
    Xs = view.transform_sequences(test.word_ids, test.offsets, test.words)
    assert (Xs != Xt).nnz == 0 and Xs.shape == Xt.shape
    assert view.n_dropped_ == test_dropped + held[:, left_out].sum()


def test_max_features_is_the_benchmarks_selection():
    """What benchmarks/bench_linalg.py computed by hand before HStackView had max_features."""
    c = synthetic_corpus(n_sentences=500, random_state=8)
    for d in (1, 100, 800, 10**5):
        X = sp.hstack([SuffixView(lengths=(1, 2, 3, 4)).fit_transform(c),
                       WordView().fit_transform(c)]).tocsr()
        top = np.argsort(-np.asarray(X.sum(axis=0)).ravel(), kind="stable")[:d]
        X = X[:, np.sort(top)].tocsr()
        got = HStackView([SuffixView(lengths=(1, 2, 3, 4)), WordView()],
                         max_features=d).fit_transform(c)
        assert sp.isspmatrix_csr(got) and got.shape == X.shape and got.dtype == X.dtype
        assert (got != X).nnz == 0 and got.nnz == X.nnz


def test_max_features_in_params_clone_and_repr():
    clone = pytest.importorskip("sklearn.base").clone
    view = HStackView([SuffixView(lengths=2), WordView()], max_features=40)
    assert view.get_params()["max_features"] == 40
    assert repr(view).endswith("max_features=40)")
    twin = clone(view)
    assert twin.max_features == 40 and twin.views[0] is not view.views[0]
    train, _ = corpora()
    assert (twin.fit_transform(train) != view.fit_transform(train)).nnz == 0
    assert HStackView([WordView()]).fit(train).columns_ is None


@pytest.mark.parametrize("views, exc, match", [
    ([], ValueError, r"views must be a non-empty sequence.*got \[\]"),
    ((), ValueError, r"views must be a non-empty sequence"),
    ("suffix", TypeError, r"views must be a non-empty sequence of feature views, got 'suffix'"),
    (None, TypeError, r"views must be a non-empty sequence of feature views, got None"),
    ([SuffixView], TypeError, r"views\[0\] must be a view instance, got the class SuffixView"),
    ([WordView(), object()], TypeError, r"views\[1\] must be a feature view .* got object"),
    ((v for v in [WordView()]), TypeError,
     r"views must be a non-empty sequence of feature views \(a list or tuple\), got a "
     r"generator, which the first fit would use up"),
])
def test_bad_views(views, exc, match):
    train, _ = corpora()
    with pytest.raises(exc, match=match):
        HStackView(views).fit(train)
    with pytest.raises(exc, match=match):
        HStackView(views).fit_transform(train)


def test_not_fitted_and_bad_corpus():
    train, _ = corpora()
    with pytest.raises(NotFittedError, match="not fitted"):
        HStackView([WordView()]).transform(train)
    with pytest.raises(TypeError, match="corpus must be a sparsecca.data.TaggedCorpus"):
        HStackView([WordView()]).fit([["a"]])
    view = HStackView([WordView(), TagNgramView()]).fit(train)
    view.views_[1].transform_sequences = None  # a part without transform_sequences
    with pytest.raises(TypeError, match=r"views\[1\] \(TagNgramView\) has no transform_seq"):
        view.transform_sequences(train.word_ids, train.offsets, train.words)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("dtype", DTYPES)
def test_hstack_csr_random(seed, dtype):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    blocks = []
    for _ in range(int(rng.integers(1, 5))):
        d = int(rng.integers(1, 30))
        density = float(rng.choice([0.0, 0.05, 0.3]))
        blocks.append(sp.random(n, d, density=density, format="csr", dtype=dtype,
                                random_state=rng))
    X = hstack_csr(blocks)
    assert X.dtype == np.dtype(dtype) and X.shape == (n, sum(b.shape[1] for b in blocks))
    X.check_format(full_check=True)
    assert X.has_sorted_indices
    np.testing.assert_array_equal(X.toarray(), np.hstack([b.toarray() for b in blocks]))


def test_hstack_csr_mixed_dtype_and_empty_rows():
    a = sp.csr_matrix(np.array([[0, 1], [0, 0], [2, 0]], dtype=np.float32))
    b = sp.csr_matrix(np.array([[3.5], [0], [0]], dtype=np.float64))
    X = hstack_csr([a, b])
    assert X.dtype == np.float64
    np.testing.assert_array_equal(X.toarray(), [[0, 1, 3.5], [0, 0, 0], [2, 0, 0]])


def test_reads_joins_the_parts():
    """What a stack featurises is what its parts do, nested stacks included; a part that
    does not say, or views that are not a sequence, leave it undeclared (None)."""
    from sparsecca.features import JointView

    assert SuffixView.reads == WordView.reads == CharNgramView.reads == frozenset({"words"})
    assert TagNgramView.reads == frozenset({"tags"})
    assert JointView.reads == frozenset({"words", "tags"})
    assert HStackView([SuffixView(), WordView()]).reads == frozenset({"words"})
    assert HStackView([SuffixView(), HStackView([TagNgramView()])]).reads == frozenset(
        {"words", "tags"})
    assert HStackView([SuffixView(), object()]).reads is None
    assert HStackView([]).reads is None
    views = iter([SuffixView()])
    assert HStackView(views).reads is None
    assert next(views) is not None  # not consumed by asking


def test_as_reranker_input_view():
    """The rerankers clone their input view; an HStackView survives that and save/load."""
    from sparsecca.rerank import GenerativeReranker
    from sparsecca.tagging import TrigramHMM

    train, dev = corpora()
    tagger = TrigramHMM().fit(train)
    nb_train, nb_dev = tagger.nbest(train, k=3), tagger.nbest(dev, k=3)
    template = HStackView([SuffixView(lengths=(1, 2, 3, 4)), WordView()])
    model = GenerativeReranker(n_components=5, tau=0.5, k_grid=[5], w=1.0, solver="dense",
                               input_view=template).fit(nb_train, nb_dev)
    d1 = HStackView([SuffixView(lengths=(1, 2, 3, 4)), WordView()]).fit(train).n_features_
    assert model.x_weights_.shape == (d1, 5)
    assert not hasattr(template, "views_")


@pytest.mark.shared_data
def test_brown_dev_suffix_plus_word(shared_data):
    dev = read_conllu(shared_data / "en-brown" / "dev.conllu.gz", tags="xpos")[:2000]
    parts = [SuffixView(lengths=(1, 2, 3, 4)), WordView()]
    X = HStackView(parts).fit_transform(dev)
    ref = [p.fit_transform(dev) for p in parts]
    assert X.shape == (2000, sum(r.shape[1] for r in ref))
    assert X.nnz == sum(r.nnz for r in ref)
    # compare with scipy's own hstack (exact: the same counts in the same places)
    assert (X != sp.hstack(ref, format="csr")).nnz == 0


def test_get_feature_names_out_is_scikit_learns_name():
    from sparsecca.data import synthetic_corpus
    from sparsecca.features import HStackView, SuffixView, TagNgramView, WordView

    corpus = synthetic_corpus(30, random_state=0)
    for view in (SuffixView(), WordView(), TagNgramView(), HStackView([SuffixView(),
                                                                        WordView()])):
        with pytest.raises(ValueError, match="input_features must be None"):
            view.fit(corpus).get_feature_names_out(["a"])
        names = view.get_feature_names_out()
        assert list(names) == list(view.feature_names_out())
        assert len(names) == view.transform(corpus).shape[1]
