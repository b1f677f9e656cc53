"""Bad input to the feature views: clear ValueError / TypeError naming the argument."""

import numpy as np
import pytest

from sparsecca.data import TaggedCorpus, Vocabulary
from sparsecca.features import (
    CharNgramView,
    HStackView,
    JointView,
    NotFittedError,
    SuffixView,
    TagNgramView,
    WordView,
)


@pytest.fixture(scope="module")
def corpus():
    return TaggedCorpus.from_sentences([[("the", "DT"), ("dog", "NN")], [("runs", "VBZ")]])


@pytest.fixture(scope="module")
def untagged():
    return TaggedCorpus.from_words([["the", "dog"], ["runs"]])


BAD_PARAMS = [
    (SuffixView(lengths=()), ValueError, r"lengths must be a non-empty sequence of ints >= 1, "
                                         r"got \(\)"),
    (SuffixView(lengths=(0, 2)), ValueError, r"lengths must contain ints >= 1, got \(0, 2\)"),
    (SuffixView(lengths=(2, 2)), ValueError, r"lengths must not repeat a value, got \(2, 2\)"),
    (SuffixView(lengths="ab"), TypeError, r"lengths must be an int or a sequence of ints"),
    (SuffixView(lengths=(2.0, 3)), TypeError, r"lengths must contain only ints, got 2.0"),
    (SuffixView(lengths=None), TypeError, r"lengths must be an int or a sequence of ints >= 1, "
                                          r"got NoneType"),
    (SuffixView(lengths=True), TypeError, r"lengths must be an int or a sequence"),
    (SuffixView(min_count=0), ValueError, r"min_count must be an int >= 1, got 0"),
    (SuffixView(min_count=-3), ValueError, r"min_count must be an int >= 1, got -3"),
    (SuffixView(min_count=1.5), TypeError, r"min_count must be an int >= 1, got 1.5"),
    (SuffixView(lowercase="yes"), TypeError, r"lowercase must be True or False, got 'yes'"),
    (SuffixView(dtype=np.int64), ValueError, r"dtype must be float32 or float64, "
                                             r"got int64"),
    (CharNgramView(n=()), ValueError, r"n must be a non-empty sequence of ints >= 1"),
    (CharNgramView(n=-1), ValueError, r"n must contain ints >= 1, got -1"),
    (WordView(min_count=0), ValueError, r"min_count must be an int >= 1, got 0"),
    (TagNgramView(orders=()), ValueError, r"orders must be a non-empty sequence"),
    (TagNgramView(orders=(1, 0)), ValueError, r"orders must contain ints >= 1"),
    (TagNgramView(boundaries=1), TypeError, r"boundaries must be True or False, got 1"),
    (TagNgramView(orders=(1, 40)), ValueError, r"orders=\(1, 40\) with 3 tags gives more than "
                                               r"2\*\*62"),
    (TagNgramView(dtype=np.complex128), ValueError,
     r"dtype must be float32 or float64, got complex128"),
    (JointView(kind="bigram"), ValueError, r"kind must be one of \('suffix', 'ngram'\), "
                                           r"got 'bigram'"),
    (JointView(lengths=()), ValueError, r"lengths must be a non-empty sequence"),
    (JointView(min_count=0), ValueError, r"min_count must be an int >= 1, got 0"),
]

#: max_features: None or an int >= 1, for every view (numpy ints are ints)
BAD_PARAMS += [
    (make(max_features=bad), exc, r"max_features must be None or an int >= 1, got " + got)
    for make in (SuffixView, CharNgramView, WordView, TagNgramView, JointView,
                 lambda **kw: HStackView([WordView()], **kw))
    for bad, exc, got in [(0, ValueError, "0"), (-1, ValueError, "-1"),
                          (np.int64(0), ValueError, r"np\.int64\(0\)"),
                          (1.5, TypeError, r"1\.5"), (True, TypeError, "True"),
                          (np.True_, TypeError, r"np\.True_"), ("10", TypeError, "'10'")]
]


@pytest.mark.parametrize("view,exc,match", BAD_PARAMS, ids=[repr(v) for v, _, _ in BAD_PARAMS])
def test_bad_parameters(corpus, view, exc, match):
    with pytest.raises(exc, match=match):
        view.fit(corpus)


def test_dtype_unknown_string_is_value_error(corpus):
    # np.dtype raises TypeError for unknown names; the view turns it into its own ValueError
    with pytest.raises(ValueError, match=r"dtype must be float32 or float64, "
                                         r"got 'nonsense'"):
        SuffixView(dtype="nonsense").fit(corpus)


ALL = [SuffixView, CharNgramView, WordView, TagNgramView, JointView]


@pytest.mark.parametrize("cls", ALL)
def test_unfitted(cls, corpus):
    view = cls()
    for call in (lambda: view.transform(corpus), view.feature_names_out):
        with pytest.raises(NotFittedError, match=f"this {cls.__name__} is not fitted yet"):
            call()
    with pytest.raises(ValueError, match="not fitted yet"):  # also a ValueError
        view.transform(corpus)


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("bad", [[["the", "dog"]], "the dog", None])
def test_not_a_corpus(cls, bad, corpus):
    with pytest.raises(TypeError, match="corpus must be a sparsecca.data.TaggedCorpus, got"):
        cls().fit(bad)
    with pytest.raises(TypeError, match="corpus must be a sparsecca.data.TaggedCorpus, got"):
        cls().fit(corpus).transform(bad)


@pytest.mark.parametrize("cls", [TagNgramView, JointView])
def test_untagged_corpus_to_tag_view(cls, corpus, untagged):
    with pytest.raises(ValueError, match="corpus has no tags: this view featurises tag "
                                         "sequences and needs a tagged corpus"):
        cls().fit(untagged)
    with pytest.raises(ValueError, match="corpus has no tags"):
        cls().fit(corpus).transform(untagged)


# views whose fit keeps no feature: refused at fit, naming the view (the part of an HStackView)
NO_FEATURES = [
    (SuffixView(min_count=2), r"^SuffixView: min_count=2 leaves no features \(the most frequent "
                              r"occurs 1 time\)$"),
    (CharNgramView(min_count=10**6, max_features=5),
     r"^CharNgramView: min_count=1000000 leaves no features \(the most frequent occurs 1 "
     r"time\)$"),
    (WordView(min_count=3), r"^WordView: min_count=3 leaves no features"),
    (TagNgramView(orders=1, boundaries=False, min_count=3),
     r"^TagNgramView: min_count=3 leaves no features \(the most frequent occurs 1 time\)$"),
    (TagNgramView(min_count=10**6), r"^TagNgramView: min_count=1000000 leaves no features "),
    (JointView(min_count=10**6), r"^JointView: min_count=1000000 leaves no features"),
    (HStackView([WordView(), SuffixView(min_count=2)]), r"^SuffixView: min_count=2 leaves no"),
]


@pytest.mark.parametrize("view,match", NO_FEATURES, ids=[repr(v) for v, _ in NO_FEATURES])
def test_min_count_leaving_no_features(corpus, view, match):
    with pytest.raises(ValueError, match=match):
        view.fit(corpus)
    with pytest.raises(ValueError, match=match):
        view.fit_transform(corpus)


@pytest.mark.parametrize("view", [SuffixView(), CharNgramView(), WordView(), TagNgramView(),
                                  JointView(), HStackView([SuffixView(), WordView()])],
                         ids=repr)
def test_fit_on_empty_corpus(corpus, view):
    name = type(view.views[0] if isinstance(view, HStackView) else view).__name__
    with pytest.raises(ValueError, match=rf"^{name}: fitted on 0 sentences, which give no "
                                         rf"features$"):
        view.fit(corpus[0:0])


@pytest.mark.parametrize("cls", [SuffixView, CharNgramView, WordView])
def test_fit_on_empty_sentences_only(cls):
    with pytest.raises(ValueError, match=rf"^{cls.__name__}: the fitting corpus \(2 sentences\) "
                                         rf"gives no features$"):
        cls().fit(TaggedCorpus.from_words([[], []]))


def test_disjoint_tagsets(corpus):
    upos = Vocabulary(["DET", "NOUN", "VERB"])
    ids, off = np.array([0, 1, 2]), np.array([0, 2, 3])
    with pytest.raises(ValueError, match=r"^tag sequences: 100.0% of the tag tokens \(3 of 3\) "
                                         r"are not in the tagset the TagNgramView was fitted "
                                         r"on \(at most 50% may be\); given tags \['DET', "
                                         r"'NOUN', 'VERB'\] \(3 tags\), fitted tagset \['DT', "
                                         r"'NN', 'VBZ'\] \(3 tags\); is one of them another "
                                         r"tag column \(UPOS against XPOS\)\?$"):
        TagNgramView().fit(corpus).transform_sequences(ids, off, upos)
    with pytest.raises(ValueError, match="the tagset the JointView was fitted on"):
        JointView().fit(corpus).transform_sequences(np.array([0, 1, 2]), ids, off,
                                                    corpus.words, upos)
    other = TaggedCorpus.from_sentences([[("the", "DET"), ("dog", "NOUN")]])
    with pytest.raises(ValueError, match="100.0% of the tag tokens"):
        TagNgramView().fit(corpus).transform(other)


@pytest.mark.parametrize("cls", [TagNgramView, JointView])
def test_mostly_foreign_tags_refused_a_few_accepted(cls, corpus):
    """UPOS and XPOS share '.', so a 'no tag in common' rule never fired on a swap; the rule
    is the fraction of tokens outside the fitted tagset (at most half)."""
    fitted = TaggedCorpus.from_sentences([[("the", "DT"), ("dog", "NN"), (".", ".")]])
    view = cls().fit(fitted)
    swap = TaggedCorpus.from_sentences([[("the", "DET"), ("dog", "NOUN"), (".", ".")]])
    with pytest.raises(ValueError, match=r"66.7% of the tag tokens \(2 of 3\) are not in"):
        view.transform(swap)
    # half the tokens unseen (a new gold tag, say) is the most that passes
    half = TaggedCorpus.from_sentences([[("the", "DT"), ("dog", "NNS")]])
    assert view.transform(half).shape[0] == 1
    assert view.n_dropped_ > 0


def test_transform_sequences_bad_arrays(corpus):
    tv = TagNgramView().fit(corpus)
    jv = JointView().fit(corpus)
    sv = SuffixView().fit(corpus)
    tags, words = corpus.tags, corpus.words
    ok_ids, ok_off = np.array([0, 1, 2]), np.array([0, 2, 3])
    cases = [
        (lambda: tv.transform_sequences(np.array([0.0, 1.0, 2.0]), ok_off, tags), TypeError,
         r"tag_ids must be an integer array, got dtype float64"),
        (lambda: tv.transform_sequences(np.array([0, 1, 7]), ok_off, tags), ValueError,
         r"tag_ids must lie in \[0, 3\) \(the size of tags\), got 7"),
        (lambda: tv.transform_sequences(np.array([0, -1, 2]), ok_off, tags), ValueError,
         r"tag_ids must lie in \[0, 3\) \(the size of tags\), got -1"),
        (lambda: tv.transform_sequences(np.array([[0, 1, 2]]), ok_off, tags), ValueError,
         r"tag_ids must be a 1-d array, got shape \(1, 3\)"),
        (lambda: tv.transform_sequences(ok_ids, np.array([0, 2, 4]), tags), ValueError,
         r"offsets must start at 0 and end at n_tokens=3, got first 0 and last 4"),
        (lambda: tv.transform_sequences(ok_ids, np.array([1, 3]), tags), ValueError,
         r"offsets must start at 0"),
        (lambda: tv.transform_sequences(ok_ids, np.array([0, 3, 2, 3]), tags), ValueError,
         r"offsets must be non-decreasing"),
        (lambda: tv.transform_sequences(ok_ids, np.array([0.0, 3.0]), tags), TypeError,
         r"offsets must be an integer array"),
        (lambda: tv.transform_sequences(ok_ids, np.array([], dtype=int), tags), ValueError,
         r"offsets must be a 1-d array of size >= 1"),
        (lambda: tv.transform_sequences(ok_ids, ok_off, None), TypeError,
         r"tags must be a Vocabulary or a sequence of str, got None"),
        (lambda: tv.transform_sequences(ok_ids, ok_off, [1, 2, 3]), TypeError,
         r"tags must contain only str"),
        (lambda: jv.transform_sequences(np.array([0, 1]), ok_ids, ok_off, words, tags),
         ValueError, r"word_ids and tag_ids must have the same shape, got \(2,\) and \(3,\)"),
        (lambda: jv.transform_sequences(np.array([0, 1, 9]), ok_ids, ok_off, words, tags),
         ValueError, r"word_ids must lie in \[0, 3\) \(the size of words\), got 9"),
        (lambda: sv.transform_sequences(np.array([0, 1, 2]), ok_off, 5), TypeError,
         r"words must be a Vocabulary or a sequence of str, got int"),
    ]
    for call, exc, match in cases:
        with pytest.raises(exc, match=match):
            call()
    # a plain list of str is accepted as a vocabulary
    np.testing.assert_array_equal(
        tv.transform_sequences(ok_ids, ok_off, tags.items).toarray(),
        tv.transform_sequences(ok_ids, ok_off, tags).toarray())


def test_no_features_message_counts_the_most_frequent():
    corpus = TaggedCorpus.from_words([["a", "a", "b"], ["b", "a"]])
    with pytest.raises(ValueError, match=r"^WordView: min_count=4 leaves no features \(the most "
                                         r"frequent occurs 3 times\)$"):
        WordView(min_count=4).fit(corpus)
    assert WordView(min_count=3).fit(corpus).n_features_ == 1  # one left: kept as before


def _tagged(tags):
    return TaggedCorpus.from_sentences([[(f"w{i}", t) for i, t in enumerate(tags)],
                                        [("v", tags[-1])]])


SPACE = r"it contains a space, which separates the parts of feature names"
BOUNDARY = r"it is spelled like the sentence-boundary symbol of feature names"


@pytest.mark.parametrize(("view", "tags", "match"), [
    # "A B" was both the unigram A B and the bigram A, B; "<s> X" two bigrams: fit said only
    # 'Vocabulary items must be distinct' (JointView(kind="ngram") fitted, then its names failed)
    (TagNgramView(), ["A", "B", "A B"], r"^TagNgramView cannot featurise tag 'A B': " + SPACE),
    (TagNgramView(orders=(2, 3)), ["A", "B", "A B"], r"tag 'A B': " + SPACE),
    (TagNgramView(), ["<s>", "X"], r"^TagNgramView cannot featurise tag '<s>': " + BOUNDARY),
    (TagNgramView(), ["X", "</s>"], r"tag '</s>': " + BOUNDARY),
    (TagNgramView(boundaries=False), ["A", "B", "A B"], r"tag 'A B': " + SPACE),
    (JointView(kind="ngram"), ["A", "B", "A B"], r"^JointView cannot featurise tag 'A B': "
                                                 + SPACE),
    (JointView(kind="suffix"), ["A", "B", "A B"], r"tag 'A B': " + SPACE),
    (JointView(kind="ngram"), ["<s>", "X"], r"^JointView cannot featurise tag '<s>': "
                                            + BOUNDARY),
    (JointView(kind="ngram"), ["A", "B\tC"], r"tag 'B\\tC': it contains a tab, which "
                                             r"separates the parts of feature names"),
], ids=repr)
def test_tags_that_would_share_feature_names_refused(view, tags, match):
    with pytest.raises(ValueError, match=match):
        view.fit(_tagged(tags))


@pytest.mark.parametrize(("view", "tags"), [
    (TagNgramView(orders=1), ["A", "B", "A B"]),  # unigram names are the tags themselves
    (TagNgramView(orders=1), ["<s>", "</s>"]),
    (TagNgramView(boundaries=False), ["<s>", "</s>"]),  # no boundary symbol in any name
    (JointView(kind="ngram"), ["X", "</s>"]),  # JointView has no end symbol
], ids=repr)
def test_tags_that_keep_feature_names_distinct_accepted(view, tags):
    view.fit(_tagged(tags))
    names = view.vocabulary_.items
    assert len(set(names)) == len(names) == view.n_features_


def test_only_tags_that_occur_are_checked():
    corpus = TaggedCorpus.from_sentences([[("x", "A B")], [("a", "A"), ("b", "B")]])
    view = TagNgramView().fit(corpus[1:])  # the tag vocabulary holds 'A B'; no token has it
    assert view.vocabulary_.items == ["A", "B", "A B", "B </s>", "<s> A"]
