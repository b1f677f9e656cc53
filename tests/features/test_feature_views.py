"""Feature views against the slow per-token references in features_reference.py."""

from functools import cache

import numpy as np
import pytest
import scipy.sparse as sp
from features_reference import (
    char_feats,
    joint_rows,
    suffix_feats,
    tag_rows,
    top_columns,
    vocabulary,
    word_rows,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import sparsecca.features._base as base_module
from sparsecca.data import TaggedCorpus, Vocabulary, read_conllu, synthetic_corpus
from sparsecca.features import (
    CharNgramView,
    JointView,
    SuffixView,
    TagNgramView,
    WordView,
)
from sparsecca.features._lexical import suffixes

DTYPES = [np.float32, np.float64]

VIEWS = {
    "suffix234": lambda: SuffixView(),
    "suffix1234_lower": lambda: SuffixView(lengths=(4, 1, 2, 3), lowercase=True),
    "suffix_5": lambda: SuffixView(lengths=5),
    "char12": lambda: CharNgramView(),
    "char3_lower": lambda: CharNgramView(n=3, lowercase=True),
    "word": lambda: WordView(),
    "word_lower": lambda: WordView(lowercase=True),
    "tag12": lambda: TagNgramView(),
    "tag123_noboundary": lambda: TagNgramView(orders=(1, 2, 3), boundaries=False),
    "tag3": lambda: TagNgramView(orders=3),
    "joint_suffix": lambda: JointView(),
    "joint_suffix_13_lower": lambda: JointView(lengths=(1, 3), lowercase=True),
    "joint_ngram": lambda: JointView(kind="ngram"),
}
TAG_VIEWS = [k for k in VIEWS if k.startswith(("tag", "joint"))]

HAND = [
    [("The", "DT"), ("selling", "NN"), ("pressure", "NN"), (".", ".")],
    [],
    [("a", "DT"), ("aaaa", "NN"), ("Aaaa", "NN"), ("x^ab", "FW"), ("ab", "FW"), ("\\^a", "FW")],
    [("I", "PRP"), ("sell", "VBP"), (",", ","), ("the", "DT"), ("selling", "VBG")],
    [("哈哈", "NN"), ("中国人", "NR"), ("人", "NN")],
    [("the", "DT")],
]


@cache
def synth(n, seed):
    """Synthetic corpora are immutable and views never modify them: build each once."""
    return synthetic_corpus(n, random_state=seed)


def hand_corpus():
    return TaggedCorpus.from_sentences(HAND)


CORPORA = {
    "hand": hand_corpus,
    "synthetic": lambda: synth(150, 0),
}


def reference(view, corpus):
    """Per-sentence Counters of feature names, computed token by token."""
    p = view.get_params()
    sents = list(corpus)
    if isinstance(view, SuffixView):
        lengths = sorted([p["lengths"]] if isinstance(p["lengths"], int) else p["lengths"])
        return word_rows([w for w, _ in sents], lambda w: suffix_feats(w, lengths),
                         p["lowercase"])
    if isinstance(view, CharNgramView):
        ns = [p["n"]] if isinstance(p["n"], int) else list(p["n"])
        return word_rows([w for w, _ in sents], lambda w: char_feats(w, ns), p["lowercase"])
    if isinstance(view, WordView):
        return word_rows([w for w, _ in sents], lambda w: [w], p["lowercase"])
    if isinstance(view, TagNgramView):
        orders = [p["orders"]] if isinstance(p["orders"], int) else list(p["orders"])
        return tag_rows([t for _, t in sents], orders, p["boundaries"])
    if isinstance(view, JointView):
        return joint_rows([list(zip(w, t)) for w, t in sents], p["kind"], p["lengths"],
                          p["lowercase"])
    raise AssertionError(view)


def expected_matrix(view, rows):
    """Reference rows restricted to the view's fitted vocabulary (sparse), and the dropped count."""
    col = {f: j for j, f in enumerate(view.feature_names_out())}
    r, c, v = [], [], []
    dropped = 0
    for i, row in enumerate(rows):
        for f, n in row.items():
            if f in col:
                r.append(i)
                c.append(col[f])
                v.append(n)
            else:
                dropped += n
    E = sp.csr_matrix((v, (r, c)), shape=(len(rows), len(col)))
    return E, dropped


def assert_same(X, E, dtype):
    assert sp.isspmatrix_csr(X)
    assert X.dtype == dtype
    assert X.shape == E.shape
    assert X.has_canonical_format
    assert (abs(X - E)).max() == 0 if X.nnz or E.nnz else True
    assert X.nnz == E.nnz  # no explicit zeros


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("corpus_name", list(CORPORA))
@pytest.mark.parametrize("view_name", list(VIEWS))
@pytest.mark.parametrize("min_count", [1, 2])
def test_fit_transform_matches_reference(view_name, corpus_name, dtype, min_count):
    corpus = CORPORA[corpus_name]()
    view = VIEWS[view_name]().set_params(dtype=dtype, min_count=min_count)
    X = view.fit_transform(corpus)
    rows = reference(view, corpus)
    vocab, total = vocabulary(rows, min_count)
    assert set(view.feature_names_out()) == vocab
    assert view.n_features_ == len(vocab) == len(view.vocabulary_)
    E, dropped = expected_matrix(view, rows)
    assert_same(X, E, dtype)
    assert view.n_dropped_ == dropped == sum(n for f, n in total.items() if n < min_count)
    # fit alone reports the same min_count losses
    assert view.fit(corpus).n_dropped_ == dropped


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("view_name", list(VIEWS))
def test_transform_unseen_dropped_and_counted(view_name, dtype):
    train = synth(120, 0)
    other = synth(60, 1)  # other words, tag vocabulary in another order
    view = VIEWS[view_name]().set_params(dtype=dtype).fit(train)
    X = view.transform(other)
    E, dropped = expected_matrix(view, reference(view, other))
    assert_same(X, E, dtype)
    assert view.n_dropped_ == dropped
    assert dropped > 0 or view_name.startswith("tag")


@pytest.mark.parametrize("view_name", list(VIEWS))
def test_transform_sequences_equals_transform(view_name):
    """Candidate-style input (words repeated per candidate, foreign tag vocabulary)."""
    base = synth(40, 3)
    view = VIEWS[view_name]().fit(base)
    rng = np.random.default_rng(0)
    # three candidates per sentence: gold, a random re-tagging, one with an unseen tag
    cand_tags = Vocabulary(list(reversed(base.tags.items)) + ["NEWTAG"])
    to_cand = base.tags.mapping_to(cand_tags)
    wid, tid, off = [], [], [0]
    for i in range(base.n_sentences):
        a, b = base.offsets[i], base.offsets[i + 1]
        gold = to_cand[base.tag_ids[a:b]]
        for cand in (gold, rng.integers(0, len(cand_tags) - 1, b - a),
                     np.where(np.arange(b - a) % 3 == 1, len(cand_tags) - 1, gold)):
            wid.append(base.word_ids[a:b])
            tid.append(cand)
            off.append(off[-1] + (b - a))
    wid, tid, off = np.concatenate(wid), np.concatenate(tid), np.array(off)
    equiv = TaggedCorpus(wid, tid, off, base.words, cand_tags)
    X_ref = view.transform(equiv)
    n_ref = view.n_dropped_
    if isinstance(view, TagNgramView):
        X = view.transform_sequences(tid, off, cand_tags)
    elif isinstance(view, JointView):
        X = view.transform_sequences(wid, tid, off, base.words, cand_tags)
    else:
        X = view.transform_sequences(wid, off, base.words)
    assert (X != X_ref).nnz == 0 and X.shape == X_ref.shape
    assert view.n_dropped_ == n_ref
    E, dropped = expected_matrix(view, reference(view, equiv))
    assert_same(X, E, np.float64)
    assert view.n_dropped_ == dropped
    if view_name in TAG_VIEWS:
        assert dropped > 0  # the NEWTAG n-grams


def test_joint_view_paper_example():
    """Section 4.1: features of 'selling' in "the/DT selling/NN pressure/NN"."""
    corpus = TaggedCorpus.from_sentences([[("the", "DT"), ("selling", "NN"),
                                           ("pressure", "NN")]])
    view = JointView(kind="suffix", lengths=(2, 3, 4))
    X = view.fit_transform(corpus)
    names = dict(zip(view.feature_names_out(), X.toarray()[0]))
    selling = {f"{s}\t{t}" for s in ("ng", "ing", "ling") for t in ("NN", "DT NN")}
    the = {f"{s}\t{t}" for s in ("he", "the", "^the") for t in ("DT", "<s> DT")}
    pressure = {f"{s}\t{t}" for s in ("re", "ure", "sure") for t in ("NN", "NN NN")}
    assert set(names) == selling | the | pressure
    assert all(v == 1 for v in names.values())
    # the same sentence with the ngram kind
    view = JointView(kind="ngram")
    X = view.fit_transform(corpus)
    names = dict(zip(view.feature_names_out(), X.toarray()[0]))
    assert names == {
        "the\tDT": 1, "the\t<s> DT": 1, "selling\tNN": 1, "selling\tDT NN": 1,
        "pressure\tNN": 1, "pressure\tNN NN": 1,
        "<s> DT": 1, "DT NN": 1, "NN NN": 1,
        "<s> <s> DT": 1, "<s> DT NN": 1, "DT NN NN": 1,
    }


def test_tag_view_known_example_and_column_order():
    corpus = TaggedCorpus.from_sentences([[("the", "DT"), ("selling", "NN"),
                                           ("pressure", "NN")]])
    view = TagNgramView()
    Y = view.fit_transform(corpus)
    # by order, then by fitted tag ids with <s>, </s> after the tags
    assert view.vocabulary_.items == ["DT", "NN", "DT NN", "NN NN", "NN </s>", "<s> DT"]
    np.testing.assert_array_equal(Y.toarray(), [[1, 2, 1, 1, 1, 1]])
    view = TagNgramView(orders=(2, 1), boundaries=False)
    Y = view.fit_transform(corpus)
    assert view.vocabulary_.items == ["DT", "NN", "DT NN", "NN NN"]
    np.testing.assert_array_equal(Y.toarray(), [[1, 2, 1, 1]])


@pytest.mark.parametrize("view_name", ["suffix234", "char12", "word"])
def test_lexical_vocabulary_sorted(view_name):
    view = VIEWS[view_name]().fit(synth(50, 0))
    names = view.vocabulary_.items
    assert names == sorted(names)


def test_joint_columns_sorted_by_unit_then_tag_feature():
    view = JointView().fit(synth(50, 0))
    assert np.all(np.diff(view.keys_) > 0)
    units = view.lexical_vocabulary_.items
    assert units == sorted(units)
    first = [n.split("\t")[0] for n in view.feature_names_out()]
    rank = {u: i for i, u in enumerate(units)}
    assert [rank[u] for u in first] == sorted(rank[u] for u in first)


@pytest.mark.parametrize("view_name", TAG_VIEWS)
def test_joint_and_tag_views_chunked_equal_unchunked(view_name, monkeypatch):
    corpus = synth(60, 5)
    view = VIEWS[view_name]()
    X = view.fit_transform(corpus)
    names = view.feature_names_out()
    monkeypatch.setattr(base_module, "CHUNK_TOKENS", 7)  # many chunks, some one sentence
    view2 = VIEWS[view_name]()
    X2 = view2.fit_transform(corpus)
    assert list(view2.feature_names_out()) == list(names)
    assert (X != X2).nnz == 0


@pytest.mark.parametrize("view_name", list(VIEWS))
def test_empty_sentences_and_empty_corpus(view_name):
    corpus = hand_corpus()
    view = VIEWS[view_name]().fit(corpus)
    X = view.transform(corpus)
    assert X[1].nnz == 0  # the empty sentence
    X0 = view.transform(corpus[0:0])
    assert X0.shape == (0, view.n_features_)
    assert view.n_dropped_ == 0


def test_untagged_corpus_fine_for_word_views():
    corpus = TaggedCorpus.from_words([["The", "cat"], ["sat"]])
    X = SuffixView(lengths=(1, 2)).fit_transform(corpus)
    E, _ = expected_matrix(SuffixView(lengths=(1, 2)).fit(corpus),
                           reference(SuffixView(lengths=(1, 2)), corpus))
    assert_same(X, E, np.float64)


def test_params_protocol():
    view = SuffixView(lengths=(1, 2), min_count=3)
    assert view.get_params() == dict(lengths=(1, 2), min_count=3, max_features=None,
                                     lowercase=False, dtype=np.float64)
    assert repr(view).startswith("SuffixView(lengths=(1, 2), min_count=3, lowercase=False")
    # max_features came last: positional arguments written before it keep their meaning
    for positional in [SuffixView((1, 2), 3, True, np.float32),
                       CharNgramView((1,), 2, True, np.float32),
                       WordView(2, True, np.float32),
                       TagNgramView((1,), False, 2, np.float32),
                       JointView("suffix", (2,), 2, True, np.float32)]:
        assert positional.dtype is np.float32 and positional.max_features is None
    assert view.set_params(min_count=1) is view and view.min_count == 1
    with pytest.raises(ValueError, match="invalid parameter 'foo' for SuffixView"):
        view.set_params(foo=1)
    assert not hasattr(view, "vocabulary_")
    assert not hasattr(JointView(), "vocabulary_")


# -- max_features -------------------------------------------------------------------------

MAX_FEATURES = {  # the number kept, from the size of the vocabulary without max_features
    "one": lambda d: 1,
    "third": lambda d: max(1, d // 3),
    "all_but_one": lambda d: max(1, d - 1),
    "equal": lambda d: d,
    "larger": lambda d: d + 7,
}


@pytest.mark.parametrize("size", list(MAX_FEATURES))
@pytest.mark.parametrize("corpus_name", list(CORPORA))
@pytest.mark.parametrize("view_name", list(VIEWS))
@pytest.mark.parametrize("min_count", [1, 2])
def test_max_features_keeps_the_most_frequent_columns(view_name, corpus_name, size, min_count):
    corpus = CORPORA[corpus_name]()
    full = VIEWS[view_name]().set_params(min_count=min_count)
    X_full = full.fit_transform(corpus)
    names_full = full.feature_names_out()
    n = MAX_FEATURES[size](full.n_features_)
    view = VIEWS[view_name]().set_params(min_count=min_count, max_features=n)
    X = view.fit_transform(corpus)
    # the reference: the full matrix's columns chosen by the sums of the reference counts
    rows = reference(view, corpus)
    _, total = vocabulary(rows, 1)
    cols = top_columns([total[f] for f in names_full], n)
    assert list(view.feature_names_out()) == [names_full[j] for j in cols]
    assert view.n_features_ == len(cols) == min(n, full.n_features_)
    assert_same(X, X_full[:, cols].tocsr(), np.float64)
    E, dropped = expected_matrix(view, rows)
    assert_same(X, E, np.float64)
    kept = set(view.feature_names_out())
    assert view.n_dropped_ == dropped == sum(c for f, c in total.items() if f not in kept)
    assert view.fit(corpus).n_dropped_ == dropped  # fit alone counts the same losses
    if view_name.startswith(("suffix", "char", "word")):
        assert view.vocabulary_.items == sorted(view.vocabulary_.items)  # column order kept


def test_max_features_ties_go_to_the_earlier_column():
    # every word occurs once: the sorted first two win, not the first two met in the corpus
    corpus = TaggedCorpus.from_words([["zeta", "beta", "alpha", "gamma"], ["delta"]])
    assert WordView(max_features=2).fit(corpus).vocabulary_.items == ["alpha", "beta"]
    corpus = TaggedCorpus.from_words([["zeta", "beta", "zeta"], ["alpha", "gamma", "gamma"]])
    view = WordView(max_features=2).fit(corpus)
    assert view.vocabulary_.items == ["gamma", "zeta"] and view.n_dropped_ == 2


@pytest.mark.parametrize("view_name", list(VIEWS))
def test_max_features_transform_uses_the_fitted_columns(view_name):
    train, other = synth(120, 0), synth(60, 1)
    full = VIEWS[view_name]().fit(train)
    sums = np.asarray(full.transform(train).sum(axis=0)).ravel().tolist()
    cols = top_columns(sums, max(1, full.n_features_ // 4))
    view = VIEWS[view_name]().set_params(max_features=len(cols)).fit(train)
    X = view.transform(other)
    assert_same(X, full.transform(other)[:, cols].tocsr(), np.float64)
    E, dropped = expected_matrix(view, reference(view, other))
    assert_same(X, E, np.float64)
    assert view.n_dropped_ == dropped


@pytest.mark.parametrize("view_name", list(VIEWS))
def test_max_features_in_params_clone_and_repr(view_name):
    clone = pytest.importorskip("sklearn.base").clone
    view = VIEWS[view_name]().set_params(min_count=2, max_features=10)
    assert view.get_params()["max_features"] == 10
    assert "max_features=10)" in repr(view)
    twin = clone(view)
    assert twin is not view and twin.get_params() == view.get_params()
    assert VIEWS[view_name]().max_features is None  # the default keeps every feature
    corpus = synth(40, 2)
    np.testing.assert_array_equal(twin.fit_transform(corpus).toarray(),
                                  view.fit_transform(corpus).toarray())


# -- the short-word mark and suffixes that begin with it -----------------------------------

MARKED = [[("x^ab", "FW"), ("ab", "FW")], [("z\\^ab", "FW"), ("\\^ab", "FW"), ("^ab", "FW")]]


def test_suffix_escape_keeps_marked_words_apart():
    # "x^ab"'s 3-suffix and the mark of the word "ab" were one column ("^ab")
    corpus = TaggedCorpus.from_sentences(MARKED)
    view = SuffixView()
    X = view.fit_transform(corpus)
    names = list(view.feature_names_out())
    assert len(names) == len(set(names))
    got = [{names[j]: int(v) for j, v in zip(row.indices, row.data)} for row in X]
    assert got == [
        # x^ab: ab, \^ab, x^ab; ab: ab, ^ab
        {"ab": 2, "\\^ab": 1, "x^ab": 1, "^ab": 1},
        # z\^ab: ab, \^ab, \\^ab (its 4-suffix \^ab, escaped); \^ab: the same three;
        # ^ab: ab, \^ab and its mark ^^ab
        {"ab": 3, "\\^ab": 3, "\\\\^ab": 2, "^^ab": 1},
    ]


@pytest.mark.parametrize("make", [SuffixView, JointView])
def test_suffix_escape_is_saved_and_old_states_keep_their_features(make):
    corpus = TaggedCorpus.from_sentences(MARKED)
    view = make().fit(corpus)
    params, arrays, extra = view.get_state()
    assert extra["suffix_escape"] is True
    again = type(view).from_state(params, arrays, extra)
    np.testing.assert_array_equal(again.transform(corpus).toarray(),
                                  view.transform(corpus).toarray())
    # a state saved before the flag existed featurises as it did then: "x^ab"'s 3-suffix
    # falls in the column of the mark "^ab", the escaped names are unknown to it
    old_state = {k: v for k, v in extra.items() if k != "suffix_escape"}
    old = type(view).from_state(params, arrays, old_state)
    assert suffixes("x^ab", (2, 3, 4), escape=False) == ["ab", "^ab", "x^ab"]
    X = old.transform(TaggedCorpus.from_sentences([[("x^ab", "FW")]]))
    names = list(old.feature_names_out())
    # the word-side unit of each feature (JointView's names are "unit<TAB>tag n-gram")
    units = {names[j].split("\t")[0] for j in X.indices}
    assert units == {"ab", "^ab", "x^ab"}
    if make is SuffixView:
        assert {names[j]: int(v) for j, v in zip(X.indices, X.data)} == {
            "ab": 1, "^ab": 1, "x^ab": 1}
    with pytest.raises(ValueError, match="suffix_escape"):
        type(view).from_state(params, arrays, {**extra, "suffix_escape": "yes"})


# -- property test on random small corpora --------------------------------------------------

_word = st.text(alphabet="abAB^\\", min_size=1, max_size=5)
_tag = st.sampled_from(["N", "V", "D"])
_sentences = st.lists(st.lists(st.tuples(_word, _tag), max_size=6), min_size=1, max_size=6)


@settings(max_examples=40, deadline=None)
@given(sents=_sentences, min_count=st.integers(1, 3),
       view_name=st.sampled_from(["suffix1234_lower", "char12", "tag123_noboundary", "tag3",
                                  "joint_suffix", "joint_ngram", "suffix234"]))
def test_random_corpora_match_reference(sents, min_count, view_name):
    corpus = TaggedCorpus.from_sentences(sents)
    view = VIEWS[view_name]().set_params(min_count=min_count)
    rows = reference(view, corpus)
    vocab, _ = vocabulary(rows, min_count)
    if not vocab:  # e.g. only empty sentences: refused (test_feature_errors)
        with pytest.raises(ValueError, match="no features"):
            view.fit(corpus)
        return
    X = view.fit_transform(corpus)
    assert set(view.feature_names_out()) == vocab
    E, dropped = expected_matrix(view, rows)
    assert_same(X, E, np.float64)
    assert view.n_dropped_ == dropped


# -- real corpora ---------------------------------------------------------------------------

@pytest.mark.shared_data
def test_suffix_escape_leaves_the_shared_corpora_alone(shared_data):
    # README: no word of the five train sets changes features at lengths 2-4 (those of
    # Table 2 and the benchmarks); at 1-4 only fr-sequoia's token "^"
    changed = {}
    for path in sorted(shared_data.glob("*/train.conllu*")):
        words = read_conllu(path, tags="upos").words.items
        for lengths in [(2, 3, 4), (1, 2, 3, 4)]:
            changed[path.parent.name, lengths] = {
                w for w in words if suffixes(w, lengths) != suffixes(w, lengths, escape=False)}
    assert len(changed) == 10
    assert changed == {key: ({"^"} if key == ("fr-sequoia", (1, 2, 3, 4)) else set())
                       for key in changed}


@pytest.mark.shared_data
@pytest.mark.parametrize("view_name", ["suffix234", "suffix1234_lower", "tag12",
                                       "joint_suffix", "joint_ngram"])
def test_real_english_matches_reference(shared_data, view_name):
    train = read_conllu(shared_data / "en-wsj" / "train.conllu", tags="xpos")[:1500]
    dev = read_conllu(shared_data / "en-wsj" / "dev.conllu", tags="xpos")[:300]
    view = VIEWS[view_name]().set_params(min_count=2, dtype=np.float32).fit(train)
    X = view.transform(dev)
    E, dropped = expected_matrix(view, reference(view, dev))
    assert_same(X, E, np.float32)
    assert view.n_dropped_ == dropped > 0


@pytest.mark.shared_data
def test_real_chinese_char_ngrams_match_reference(shared_data):
    train = read_conllu(shared_data / "zh-gsd" / "train.conllu", tags="upos")[:800]
    dev = read_conllu(shared_data / "zh-gsd" / "dev.conllu", tags="upos")[:200]
    view = CharNgramView(n=(1, 2)).fit(train)
    X = view.transform(dev)
    E, dropped = expected_matrix(view, reference(view, dev))
    assert_same(X, E, np.float64)
    assert view.n_dropped_ == dropped > 0
