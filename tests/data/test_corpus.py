import numpy as np
import pytest

from sparsecca.data import (
    TaggedCorpus,
    Vocabulary,
    kfold_indices,
    synthetic_corpus,
    train_test_split,
)


@pytest.fixture(scope="module")
def corpus():
    return synthetic_corpus(400, random_state=1)


def test_slicing_matches_python_lists(corpus):
    sents = corpus.to_sentences()
    idx = np.array([5, 3, 3, 399, 0])
    assert corpus[idx].to_sentences() == [sents[i] for i in idx]
    assert corpus[10:20].to_sentences() == sents[10:20]
    assert corpus[::7].to_sentences() == sents[::7]
    mask = np.zeros(len(corpus), bool)
    mask[[1, 2, 50]] = True
    assert corpus[mask].to_sentences() == [sents[1], sents[2], sents[50]]
    words, tags = corpus[-1]
    assert list(zip(words, tags)) == sents[-1]
    assert corpus[5:5].n_sentences == 0


def test_slice_shares_vocabulary_and_memory(corpus):
    part = corpus[10:20]
    assert part.words is corpus.words
    assert np.shares_memory(part.word_ids, corpus.word_ids)


def test_iteration(corpus):
    for (w, t), s in zip(corpus, corpus.to_sentences()):
        assert list(zip(w, t)) == s


def test_recode_and_unknowns():
    a = TaggedCorpus.from_sentences([[("x", "A"), ("y", "B")]])
    b = TaggedCorpus.from_sentences([[("y", "B"), ("z", "C")]])
    wid, tid = b.recode(words=a.words, tags=a.tags)
    np.testing.assert_array_equal(wid, [1, -1])
    np.testing.assert_array_equal(tid, [1, -1])


def test_kfold_partition():
    folds = kfold_indices(103, folds=10, random_state=0)
    held = np.concatenate([h for _, h in folds])
    assert sorted(held.tolist()) == list(range(103))
    for tr, h in folds:
        assert np.intersect1d(tr, h).size == 0 and tr.size + h.size == 103
        assert 10 <= h.size <= 11


def test_train_test_split(corpus):
    tr, te = train_test_split(corpus, test_size=0.25, random_state=0)
    assert tr.n_sentences + te.n_sentences == corpus.n_sentences
    assert te.n_sentences == 100
    assert tr.n_tokens + te.n_tokens == corpus.n_tokens


@pytest.mark.parametrize(("kwargs", "exc", "pattern"), [
    (dict(test_size=1.5), ValueError, r"test_size as a fraction must be in \(0, 1\), got 1.5"),
    (dict(test_size=0), ValueError, r"must be in \[1, 399\]"),
    (dict(test_size="a"), TypeError, "test_size must be a float or an int"),
])
def test_split_bad_args(corpus, kwargs, exc, pattern):
    with pytest.raises(exc, match=pattern):
        train_test_split(corpus, **kwargs)


@pytest.mark.parametrize(("n", "kw", "exc", "pattern"), [
    (10, dict(folds=1), ValueError, r"^folds must be in \[2, n_sentences=10\], got 1$"),
    (3, dict(folds=5), ValueError, r"^folds must be in \[2, n_sentences=3\], got 5$"),
    (10, dict(folds=2.0), TypeError, r"^folds must be an int in \[2, n_sentences=10\], "
                                     r"got 2.0$"),
    (10, dict(folds=True), TypeError, r"^folds must be an int in \[2, n_sentences=10\], "
                                      r"got True$"),
    # n_sentences was not checked: 2.5 reached numpy's permutation, -1 its own error
    (2.5, dict(folds=2), TypeError, r"^n_sentences must be an int >= 2, got 2.5$"),
    (1, dict(folds=2), ValueError, r"^n_sentences must be an int >= 2, got 1$"),
    # 'no' shuffled
    (10, dict(folds=2, shuffle="no"), TypeError, r"^shuffle must be True or False, got 'no'$"),
])
def test_kfold_bad_args(n, kw, exc, pattern):
    with pytest.raises(exc, match=pattern):
        kfold_indices(n, **kw)


def test_split_refuses_a_bool_size_and_a_non_bool_shuffle(corpus):
    with pytest.raises(TypeError, match=r"^test_size must be a float or an int, got True$"):
        train_test_split(corpus, test_size=True)
    with pytest.raises(TypeError, match=r"^shuffle must be True or False, got 0$"):
        train_test_split(corpus, shuffle=0)


# one random_state check for the whole library (sparsecca._params.check_random_state)
RANDOM_STATE_CALLS = {
    "train_test_split": lambda c, rs: train_test_split(c, test_size=0.25, random_state=rs),
    "kfold_indices": lambda c, rs: kfold_indices(c.n_sentences, folds=4, random_state=rs),
    "synthetic_corpus": lambda c, rs: synthetic_corpus(20, random_state=rs),
}


@pytest.mark.parametrize("call", sorted(RANDOM_STATE_CALLS))
@pytest.mark.parametrize(("seed", "exc", "pattern"), [
    (True, TypeError, r"^random_state must be None, an int >= 0, a numpy Generator or "
                      r"RandomState, got True$"),
    (-1, ValueError, r"^random_state must be None, an int >= 0, a numpy Generator or "
                     r"RandomState, got -1$"),
    (1.5, TypeError, r"got 1\.5$"),
    ("7", TypeError, r"got '7'$"),
])
def test_random_state_bad_values(corpus, call, seed, exc, pattern):
    with pytest.raises(exc, match=pattern):
        RANDOM_STATE_CALLS[call](corpus, seed)


def _fingerprint(result):
    if isinstance(result, list):  # folds: (train_idx, heldout_idx) pairs
        return [[part.tolist() for part in pair] for pair in result]
    parts = result if isinstance(result, tuple) else (result,)  # a split, or one corpus
    return [[list(sentence) for sentence in part] for part in parts]


@pytest.mark.parametrize("call", sorted(RANDOM_STATE_CALLS))
def test_random_state_kinds_agree(corpus, call):
    """An int seed, a Generator seeded alike and a legacy RandomState are all accepted; the
    first two give the same draw, and a RandomState is reproducible from its own seed."""
    f = RANDOM_STATE_CALLS[call]
    by_int = _fingerprint(f(corpus, 5))
    assert _fingerprint(f(corpus, np.random.default_rng(5))) == by_int
    assert _fingerprint(f(corpus, 6)) != by_int  # the fingerprint sees the seed
    assert _fingerprint(f(corpus, np.random.RandomState(9))) == _fingerprint(
        f(corpus, np.random.RandomState(9)))


def test_constructor_validation():
    with pytest.raises(ValueError, match="offsets must be non-decreasing and end at n_tokens=2"):
        TaggedCorpus([0, 1], [0, 0], [0, 1], ["a", "b"], ["T"])
    with pytest.raises(ValueError, match=r"word_ids must lie in \[0, 1\)"):
        TaggedCorpus([0, 1], [0, 0], [0, 2], ["a"], ["T"])
    with pytest.raises(ValueError, match="distinct"):
        Vocabulary(["a", "a"])
    with pytest.raises(ValueError, match=r"sentence 0: each token must be a \(word, tag\) pair"):
        TaggedCorpus.from_sentences([["a"]])


def test_synthetic_is_deterministic_and_realistic():
    a = synthetic_corpus(2000, random_state=7)
    b = synthetic_corpus(2000, random_state=7)
    c = synthetic_corpus(2000, random_state=8)
    assert a == b and not a == c
    counts = np.bincount(a.word_ids)
    assert (counts == 1).sum() > 0.25 * counts.size      # many rare types (Zipf tail)
    # ambiguous types exist and cover a real share of tokens
    pairs = np.unique(a.word_ids.astype(np.int64) * 100 + a.tag_ids)
    n_tags_per_word = np.bincount(pairs // 100)
    assert 0.03 < (n_tags_per_word[a.word_ids] > 1).mean() < 0.5
    # a suffix predicts its tag, though not perfectly: "-tion" words are mostly nouns,
    # "-ly" words lean to adverbs but many are adjectives
    words = np.array(a.words.items, dtype=object)[a.word_ids]
    tags = np.array(a.tags.items, dtype=object)[a.tag_ids]
    tion = np.array([w.endswith("tion") for w in words])
    ly = np.array([w.endswith("ly") for w in words])
    assert (tags[tion] == "NOUN").mean() > 0.8
    assert 0.5 < (tags[ly] == "ADV").mean() < 0.95
    assert 15 < a.lengths.mean() < 21


@pytest.mark.parametrize(("kwargs", "pattern"), [
    (dict(n_sentences=0), "n_sentences must be an int >= 1, got 0"),
    (dict(n_sentences=10, mean_length=1.0), r"mean_length must be in \[2, 200\], got 1.0"),
    (dict(n_sentences=10, ambiguity=2.0), r"ambiguity must be in \[0, 1\], got 2.0"),
])
def test_synthetic_bad_args(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        synthetic_corpus(**kwargs)


@pytest.mark.parametrize(("call", "exc", "pattern"), [
    # a str sentence would be split into characters
    (lambda: TaggedCorpus.from_words(["hello world"]), TypeError,
     r"^sentence 0 must be a sequence of tokens, got str 'hello world'$"),
    (lambda: TaggedCorpus.from_words([["a"], b"ab"]), TypeError,
     r"^sentence 1 must be a sequence of tokens, got bytes b'ab'$"),
    (lambda: TaggedCorpus.from_sentences([[("a", "X")], "ab"]), TypeError,
     r"^sentence 1 must be a sequence of tokens, got str 'ab'$"),
    # word forms and tags that read_conllu refuses (and write_conllu cannot write)
    (lambda: TaggedCorpus.from_sentences([[("a", "X")], [("", "X")]]), ValueError,
     r"^sentence 1: word '' is empty or only whitespace"),
    (lambda: TaggedCorpus.from_sentences([[(" ", "X")]]), ValueError,
     r"^sentence 0: word ' ' is empty or only whitespace"),
    (lambda: TaggedCorpus.from_sentences([[("a", "")]]), ValueError,
     r"^sentence 0: tag '' is empty or only whitespace"),
    (lambda: TaggedCorpus.from_words([["a", ""]]), ValueError,
     r"^sentence 0: word '' is empty or only whitespace"),
    (lambda: TaggedCorpus.from_words([["a", 3]]), TypeError,
     r"^sentence 0: words must be str, got int$"),
    # a lone surrogate failed only at save() / write_conllu, with a raw UnicodeEncodeError
    (lambda: TaggedCorpus.from_sentences([[("ok", "A")], [("ok", "A"), ("bad\ud800", "B")]]),
     ValueError, r"^sentence 1: word 'bad\\ud800' holds a lone surrogate \(U\+D800 at "
                 r"position 3\), which UTF-8 cannot encode: neither a model file nor CoNLL-U "
                 r"can hold it$"),
    (lambda: TaggedCorpus.from_sentences([[("a", "\udfffX")]]), ValueError,
     r"^sentence 0: tag '\\udfffX' holds a lone surrogate \(U\+DFFF at position 0\)"),
    (lambda: TaggedCorpus.from_words([["a"], ["b", "\udc80"]]), ValueError,
     r"^sentence 1: word '\\udc80' holds a lone surrogate"),
    # float ids were truncated to int without a word
    (lambda: TaggedCorpus(np.array([0.0, 1.9]), None, [0, 2], ["a", "b"], None), TypeError,
     r"^word_ids must be an array of integers, got dtype float64$"),
    (lambda: TaggedCorpus([0, 1], [0.0, 0.7], [0, 2], ["a", "b"], ["T"]), TypeError,
     r"^tag_ids must be an array of integers, got dtype float64$"),
    (lambda: TaggedCorpus([0, 1], None, [0.0, 2.0], ["a", "b"], None), TypeError,
     r"^offsets must be an array of integers, got dtype float64$"),
    (lambda: TaggedCorpus([True, False], None, [0, 2], ["a", "b"], None), TypeError,
     r"^word_ids must be an array of integers, got dtype bool$"),
    # int64 ids past int32 wrapped around into the vocabulary range
    (lambda: TaggedCorpus(np.array([0, 2**32]), None, [0, 2], ["a", "b"], None), ValueError,
     r"^word_ids must lie in the int32 range .*, got values in \[0, 4294967296\]$"),
    (lambda: Vocabulary([1, 2]), TypeError,
     r"^Vocabulary items must be str, got int 1 at position 0$"),
    (lambda: Vocabulary(["a", None]), TypeError,
     r"^Vocabulary items must be str, got NoneType None at position 1$"),
])
def test_construction_refuses_what_it_would_alter(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


def test_construction_accepts_empty_and_other_int_dtypes():
    empty = TaggedCorpus([], None, [0], [], None)  # np.asarray([]) is float64
    assert empty.n_sentences == 0 and empty.word_ids.dtype == np.int32
    c = TaggedCorpus(np.array([1, 0], np.uint64), np.array([0, 0], np.int8),
                     np.array([0, 2], np.int32), ["a", "b"], ["T"])
    assert c.to_sentences() == [[("b", "T"), ("a", "T")]]
    assert TaggedCorpus.from_words([["a b", "c"]]).sentence(0) == (["a b", "c"], None)
