"""Views fitted from merged per-piece counts equal the views fitted on the whole corpus.

For random partitionings of a corpus into sentence-contiguous pieces -- each piece with its
own vocabularies (so the merge must re-code tags and units into their union) or sharing the
corpus's -- ``fit_counts`` of the merged ``count`` of the pieces gives the vocabulary, the
column order, the dropped count and the transform of ``fit`` on the concatenation
(:func:`sparsecca.data.concat_corpora`, the reference), in any grouping of the merges.
"""

from __future__ import annotations

from functools import reduce

import numpy as np
import pytest

from sparsecca.data import TaggedCorpus, concat_corpora, read_conllu, synthetic_corpus
from sparsecca.features import (
    CharNgramView,
    ContextFeatures,
    HStackView,
    JointView,
    SuffixView,
    TagNgramView,
    WordView,
    merge_counts,
)

VIEWS = {
    "suffix": lambda: SuffixView(min_count=2, max_features=60),
    "suffix_lower": lambda: SuffixView(lengths=(1, 3), lowercase=True),
    "char": lambda: CharNgramView(n=(1, 2), max_features=40),
    "context": lambda: ContextFeatures(min_count=2, affix=3, window=1),
    "context_all": lambda: ContextFeatures(),
    "word": lambda: WordView(lowercase=True, min_count=2),
    "tags": lambda: TagNgramView(),
    "tags_123": lambda: TagNgramView(orders=(1, 2, 3), min_count=2, max_features=25),
    "tags_noboundary": lambda: TagNgramView(orders=(2,), boundaries=False),
    "joint_suffix": lambda: JointView(kind="suffix", lengths=(2, 3), min_count=2),
    "joint_ngram": lambda: JointView(kind="ngram", max_features=80),
    "stack": lambda: HStackView([SuffixView(lengths=(2,)), WordView()], max_features=30),
    "stack_tags": lambda: HStackView([TagNgramView(orders=(1,)), TagNgramView(orders=(2,))]),
    "context_min2": lambda: ContextFeatures(min_count=2, affix=2, window=1),
}


def _pieces(corpus, rng, n_pieces, own_vocab):
    cuts = np.sort(rng.choice(np.arange(1, corpus.n_sentences), n_pieces - 1, replace=False))
    bounds = np.concatenate([[0], cuts, [corpus.n_sentences]])
    pieces = [corpus.select(np.arange(a, b)) for a, b in zip(bounds[:-1], bounds[1:])]
    if own_vocab:  # each piece's vocabularies: its own strings, in order of appearance
        pieces = [TaggedCorpus.from_sentences(p.to_sentences()) for p in pieces]
    return pieces


def _tree(counts):
    while len(counts) > 1:
        counts = [merge_counts(*counts[i:i + 2]) if i + 1 < len(counts) else counts[i]
                  for i in range(0, len(counts), 2)]
    return counts[0]


def _assert_same_view(merged, whole, corpus):
    assert merged.feature_names_out().tolist() == whole.feature_names_out().tolist()
    assert merged.n_features_ == whole.n_features_
    assert merged.n_dropped_ == whole.n_dropped_
    for attr in ("keys_", "tags_", "lexical_vocabulary_", "columns_"):
        if hasattr(whole, attr):
            a, b = getattr(merged, attr), getattr(whole, attr)
            if isinstance(b, np.ndarray):
                np.testing.assert_array_equal(a, b)
            else:
                assert a == b, attr
    A, B = merged.transform(corpus), whole.transform(corpus)
    assert A.shape == B.shape and A.dtype == B.dtype
    np.testing.assert_array_equal(A.indptr, B.indptr)
    np.testing.assert_array_equal(A.indices, B.indices)
    np.testing.assert_array_equal(A.data, B.data)


def _check_partitionings(corpus, name, seed, n_splits=3):
    rng = np.random.default_rng(seed)
    for split in range(n_splits):
        pieces = _pieces(corpus, rng, int(rng.integers(2, 6)), own_vocab=split % 2 == 0)
        whole_corpus = concat_corpora(pieces)
        whole = VIEWS[name]().fit(whole_corpus)
        view = VIEWS[name]()
        counts = [view.count(p) for p in pieces]
        for merged_counts in (_tree(counts), reduce(merge_counts, counts)):
            merged = VIEWS[name]().fit_counts(merged_counts)
            _assert_same_view(merged, whole, whole_corpus)


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_merged_counts_fit_the_whole_corpus_synthetic(name):
    corpus = synthetic_corpus(60, random_state=3, mean_length=8)
    _check_partitionings(corpus, name, seed=11)


@pytest.mark.parametrize("name", ["suffix", "tags_123", "joint_ngram", "stack",
                                  "context", "context_min2"])
def test_merged_counts_fit_the_whole_corpus_sequoia(name, shared_data):
    corpus = read_conllu(shared_data / "fr-sequoia" / "train.conllu", tags="upos")[:400]
    _check_partitionings(corpus, name, seed=5, n_splits=2)


def test_fit_is_counts_then_finalize():
    corpus = synthetic_corpus(30, random_state=1, mean_length=6)
    for name in sorted(VIEWS):
        view = VIEWS[name]()
        _assert_same_view(VIEWS[name]().fit_counts(view.count(corpus)),
                          VIEWS[name]().fit(corpus), corpus)


def test_count_leaves_a_fitted_view_intact():
    a = synthetic_corpus(20, random_state=1)
    b = TaggedCorpus.from_sentences([[("x", "ZZ"), ("y", "QQ")]])
    for name in ("tags", "joint_ngram"):
        view = VIEWS[name]().fit(a)
        before = view.transform(a)
        view.count(b)
        assert (view.transform(a) != before).nnz == 0


def test_empty_piece_merges_as_nothing():
    corpus = synthetic_corpus(20, random_state=2)
    empty = corpus.select(np.arange(0))
    for name in ("suffix", "tags", "joint_suffix", "stack", "context"):
        view = VIEWS[name]()
        merged = view.fit_counts(merge_counts(view.count(empty), view.count(corpus)))
        _assert_same_view(merged, VIEWS[name]().fit(corpus), corpus)


def test_bad_counts_refused():
    corpus = synthetic_corpus(10, random_state=0)
    tags = TagNgramView().count(corpus)
    with pytest.raises(TypeError, match="a must be feature counts"):
        merge_counts({"DT": 1}, tags)
    with pytest.raises(TypeError, match="cannot merge TagCodeCounts with FeatureCounts"):
        merge_counts(tags, SuffixView().count(corpus))
    with pytest.raises(ValueError, match="different parameters"):
        merge_counts(tags, TagNgramView(orders=(1, 2, 3)).count(corpus))
    with pytest.raises(ValueError, match="other parameters"):
        TagNgramView(orders=(1,)).fit_counts(tags)
    with pytest.raises(TypeError, match="counts must be the FeatureCounts of SuffixView"):
        SuffixView().fit_counts(tags)
    with pytest.raises(ValueError, match="other parameters"):
        ContextFeatures(affix=2).fit_counts(ContextFeatures().count(corpus))
    with pytest.raises(ValueError, match="cannot merge counts of views with different"):
        merge_counts(ContextFeatures(affix=2).count(corpus), ContextFeatures().count(corpus))
    with pytest.raises(ValueError, match="other parameters"):
        ContextFeatures(window=1).fit_counts(ContextFeatures().count(corpus))
    with pytest.raises(TypeError, match="counts must be the FeatureCounts of ContextFeatures"):
        ContextFeatures().fit_counts(tags)
    with pytest.raises(TypeError, match="views\\[0\\] .* has no split fit"):
        HStackView([_NoSplit()]).count(corpus)


class _NoSplit(WordView):
    count = None
