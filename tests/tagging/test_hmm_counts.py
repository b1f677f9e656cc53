"""The HMM's counts are a sum over sentence partitions: the counts of consecutive parts
merged equal the counts of the whole, in any split (empty parts, parts with vocabularies of
their own), and the model fitted from merged counts is the model fitted on the corpus."""

from __future__ import annotations

import numpy as np
import pytest

from sparsecca.data import TaggedCorpus, concat_corpora, synthetic_corpus
from sparsecca.tagging import TrigramHMM
from sparsecca.tagging._hmm_counts import HOLDOUT, HMMCounts


def _equal(a, b) -> bool:
    for name in a.__dataclass_fields__:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray):
            if not (x.dtype == y.dtype and np.array_equal(x, y)):
                return False
        elif x != y:
            return False
    return True


def _fitted(model) -> dict:
    return {k: v for k, v in vars(model).items() if k.endswith("_")}


def assert_same_model(a, b):
    fa, fb = _fitted(a), _fitted(b)
    assert fa.keys() == fb.keys()
    for name, value in fa.items():
        other = fb[name]
        if isinstance(value, np.ndarray):
            assert value.dtype == other.dtype and np.array_equal(value, other), name
        else:
            assert value == other, name


@pytest.fixture(scope="module")
def corpus():
    return synthetic_corpus(230, random_state=4)


def _merged(parts):
    acc = HMMCounts.of_corpus(parts[0])
    for p in parts[1:]:
        acc = acc.merge(HMMCounts.of_corpus(p))
    return acc


@pytest.mark.parametrize("cuts", [[117], [0, 3, 3, 101, 229], [9, 19, 29, 40]])
def test_merged_counts_equal_the_whole(corpus, cuts):
    bounds = [0, *cuts, corpus.n_sentences]
    parts = [corpus.select(np.arange(a, b)) for a, b in zip(bounds[:-1], bounds[1:])]
    whole = HMMCounts.of_corpus(corpus)
    assert _equal(_merged(parts), whole)
    # the tree of a reduce: ((p0 p1) (p2 p3)) ...
    level = [HMMCounts.of_corpus(p) for p in parts]
    while len(level) > 1:
        level = [level[i].merge(level[i + 1]) if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
    assert _equal(level[0], whole)


def test_parts_with_their_own_vocabularies(corpus):
    # re-read parts: each with the vocabulary of its own sentences (as from a file)
    bounds = [0, 50, 51, 170, corpus.n_sentences]
    own = [TaggedCorpus.from_sentences(
        [list(zip(*corpus.sentence(i))) for i in range(a, b)]) for a, b in zip(
        bounds[:-1], bounds[1:])]
    gathered = concat_corpora(own)
    assert _equal(_merged(own), HMMCounts.of_corpus(gathered))
    assert_same_model(TrigramHMM()._fit_from_counts(_merged(own)), TrigramHMM().fit(gathered))


def test_counts_against_a_direct_count(corpus):
    counts = HMMCounts.of_corpus(corpus)
    tags, words = corpus.tags.items, corpus.words.items
    tri, lex, cand = {}, {}, []
    first_residue = {}
    for i in range(corpus.n_sentences):
        w, t = corpus.sentence(i)
        padded = ["<s>", "<s>", *t, "</s>"]
        for j in range(2, len(padded)):
            key = tuple(padded[j - 2:j + 1])
            tri[key] = tri.get(key, 0) + 1
        for a, b in zip(w, t):
            lex[(i % HOLDOUT, a, b)] = lex.get((i % HOLDOUT, a, b), 0) + 1
            first_residue.setdefault(a, set()).add(i % HOLDOUT)
    for i in range(corpus.n_sentences):
        for a, b in zip(*corpus.sentence(i)):
            if len(first_residue[a]) == 1:
                cand.append((i % HOLDOUT, a, b))
    name = ["<s>", "</s>", *tags]
    assert {tuple(name[x] for x in row): int(c) for row, c in zip(
        counts.tri.tolist(), counts.tri_counts)} == tri
    assert {(r, words[w], tags[t]): int(c) for (r, w, t), c in zip(
        counts.lex.tolist(), counts.lex_counts)} == lex
    assert [(r, words[w], tags[t]) for r, w, t in counts.cand.tolist()] == cand


@pytest.mark.parametrize("prefix_weight", ["auto", 0.25])
def test_fit_from_merged_counts_is_the_fit(corpus, prefix_weight):
    parts = [corpus.select(np.arange(a, b)) for a, b in [(0, 77), (77, 78), (78, 230)]]
    model = TrigramHMM(prefix_weight=prefix_weight)
    assert_same_model(model._fit_from_counts(_merged(parts)),
                      TrigramHMM(prefix_weight=prefix_weight).fit(corpus))
