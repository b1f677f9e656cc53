"""What the taggers share, tested once over all of them: edge sentences (empty, 3,000 tokens),
gold tags outside the tagset, shared parameters, bad input, loading a file of another kind,
failed refits, jackknife n-best lists and progress bars."""

import functools
import itertools

import numpy as np
import pytest

from sparsecca._persist import ModelFormatError
from sparsecca.data import TaggedCorpus, synthetic_corpus
from sparsecca.exceptions import TagsetMismatchError
from sparsecca.tagging import (
    MEMMTagger,
    MMSTagger,
    NotFittedError,
    PerceptronTagger,
    TrigramHMM,
    jackknife_nbest,
)

#: the fitted model of each tagger, and a quick one for the tests that train again
TAGGERS = {
    "TrigramHMM": (lambda: TrigramHMM(), lambda: TrigramHMM()),
    "PerceptronTagger": (lambda: PerceptronTagger(n_iter=4), lambda: PerceptronTagger(n_iter=2)),
    "MEMMTagger": (lambda: MEMMTagger(maxiter=40), lambda: MEMMTagger(maxiter=5)),
    "MMSTagger": (lambda: MMSTagger(n_iter=4), lambda: MMSTagger(n_iter=2)),
}
#: the taggers decoded in a tag-dictionary lattice (parameters and internals in common)
LATTICE = ["PerceptronTagger", "MEMMTagger"]


@functools.lru_cache(maxsize=None)
def data():
    corpus = synthetic_corpus(400, random_state=0)
    return corpus[:300], corpus[300:]


@functools.lru_cache(maxsize=None)
def fitted(name):
    return TAGGERS[name][0]().fit(data()[0])


def quick(name):
    return TAGGERS[name][1]()


@pytest.mark.parametrize("name", list(TAGGERS))
def test_edge_sentences(name):
    model = fitted(name)
    train, _ = data()
    empty = TaggedCorpus.from_words([])
    nb = model.nbest(empty, k=3)
    assert nb.n_sentences == 0 and nb.n_total == 0 and model.tag(empty).n_tokens == 0
    nb = model.nbest(TaggedCorpus.from_words([[], ["x"], []]), k=3)
    assert nb.n_candidates[0] == 1 and nb.candidate(0, 0) == []
    if name == "MEMMTagger":  # the empty sequence has log-probability 0
        assert nb.scores[0] == 0.0
    # a 3,000-token sentence with unseen words: finite scores, distinct sequences
    words = [train.words[w] for w in train.word_ids[:2990]] + ["neverseen"] * 10
    long = TaggedCorpus.from_words([words])
    nb = model.nbest(long, k=5)
    assert nb.n_candidates[0] == 5 and np.all(np.isfinite(nb.scores))
    assert len({tuple(nb.candidate(0, j)) for j in range(5)}) == 5
    assert model.tag(long).n_tokens == 3000
    # training on a corpus with empty sentences
    sents = [[], *train.to_sentences()[:50], []]
    m = quick(name).fit(TaggedCorpus.from_sentences(sents))
    assert m.tag(TaggedCorpus.from_words([[], ["x"]])).n_tokens == 1


@pytest.mark.parametrize("name", list(TAGGERS))
def test_unseen_gold_tags(name):
    model = fitted(name)
    train, _ = data()
    words, tags = train[0]
    gold = [tags[0], "BRAND-NEW"] + list(tags[2:])
    test = TaggedCorpus.from_sentences([list(zip(words, gold))])
    nb = model.nbest(test, k=4)
    # the fitted tags first, then the unseen gold tag, which no candidate can produce
    assert nb.tags.items[:len(model.tags_)] == model.tags_.items
    assert nb.tags.items[-1] == "BRAND-NEW" and "BRAND-NEW" not in model.tags_
    assert np.all(nb.losses >= 1)
    for j in range(nb.n_total):  # the Hamming loss against the gold tags
        assert nb.losses[j] == sum(c != g for c, g in zip(nb.candidate(0, j), gold))
    assert nb.oracle_accuracy() <= 1 - 1 / len(gold)
    assert model.score(test) <= 1 - 1 / len(gold)
    renamed = [f"U-{t}" for t in train.tags]
    other = train.with_tags(train.tag_ids, renamed)
    for call in (lambda: model.score(other), lambda: model.nbest(other, k=2)):
        with pytest.raises(TagsetMismatchError, match=r"^corpus gold tags: .* not in the "
                                                       rf"tagset of this {name}"):
            call()


@pytest.mark.parametrize("names, params, exc, match", [
    (LATTICE, dict(min_count=0), ValueError, r"^min_count must be an int >= 1, got 0$"),
    (LATTICE, dict(dict_min_count=0), ValueError, r"^dict_min_count must be an int >= 1, got 0$"),
    (LATTICE, dict(unknown_ratio=1.0), ValueError,
     r"unknown_ratio must be a finite number in \[0, 1\)"),
    (LATTICE, dict(unknown_ratio=-0.1), ValueError,
     r"unknown_ratio must be a finite number in \[0, 1\]"),
    (LATTICE + ["TrigramHMM"], dict(max_suffix_length=-1), ValueError,
     "max_suffix_length must be an int >= 0, got -1"),
    (LATTICE, dict(progress="yes"), TypeError, "progress must be True or False"),
    (LATTICE + ["TrigramHMM"], dict(parallel=1), TypeError,
     "parallel must be True or False, got 1"),
    (LATTICE, dict(random_state=-1), ValueError, "random_state must be None, an int >= 0"),
])
def test_shared_bad_params(names, params, exc, match):
    train = data()[0][:30]
    for name in names:
        cls = type(quick(name))
        with pytest.raises(exc, match=match):
            cls(**params).fit(train)


@pytest.mark.parametrize("name", list(TAGGERS))
def test_bad_input(name):
    train, test = data()
    model = fitted(name)
    cls = type(model)
    untagged = TaggedCorpus.from_words([w for w, _ in train][:5])
    for call, exc, match in [
        (lambda: cls().fit(untagged), ValueError, r"^corpus must be tagged"),
        (lambda: cls().fit([["a"]]), TypeError, "corpus must be a TaggedCorpus"),
        (lambda: cls().fit(TaggedCorpus.from_sentences([[]])), ValueError,
         "at least one token"),
        (lambda: cls().tag(test), NotFittedError, f"{name} instance is not fitted yet"),
        (lambda: cls().save("never-written"), NotFittedError, "not fitted"),
        (lambda: model.nbest(test, k=0), ValueError, r"^k must be an int >= 1, got 0$"),
        (lambda: model.score(untagged), ValueError, r"^corpus must be tagged"),
        (lambda: model.tag(["a"]), TypeError, "corpus must be a TaggedCorpus"),
    ]:
        with pytest.raises(exc, match=match):
            call()


@pytest.mark.parametrize("saved, loader", list(itertools.permutations(TAGGERS, 2)))
def test_loading_a_file_of_another_kind(saved, loader, tmp_path):
    path = fitted(saved).save(tmp_path / "model")
    with pytest.raises(ModelFormatError, match=f"holds a '{saved}', not a '{loader}'"):
        type(fitted(loader)).load(path)


@pytest.mark.parametrize("name", list(TAGGERS))
def test_a_saved_state_without_tags_is_refused(name):
    from sparsecca._persist import pack_strings

    _, arrays, extra = fitted(name)._get_state()
    arrays = {**arrays, **pack_strings("tags", [])}
    with pytest.raises(ModelFormatError, match="^the model has no tags$"):
        quick(name)._set_state(arrays, extra)


@pytest.mark.parametrize("name", list(TAGGERS))
def test_failed_refit_keeps_the_model(name):
    model = fitted(name)
    before = dict(vars(model))
    with pytest.raises(ValueError, match="at least one token"):
        model.fit(TaggedCorpus.from_sentences([[]]))
    assert vars(model).keys() == before.keys()
    for key, value in before.items():
        assert getattr(model, key) is value, key


@pytest.mark.parametrize("tagger", [PerceptronTagger(n_iter=2), MEMMTagger(maxiter=10)],
                         ids=type)
def test_jackknife(tagger):
    train, _ = data()
    nb = jackknife_nbest(tagger, train[:80], k=3, folds=2)
    assert nb.n_sentences == 80 and nb.corpus is not None
    assert nb.oracle_accuracy() >= nb.top1_accuracy() > 0.5


@pytest.mark.parametrize("name, label", [("PerceptronTagger", "perceptron"),
                                         ("MEMMTagger", "MEMM L-BFGS")])
def test_progress_bar(name, label, capsys):
    quick(name).set_params(progress=True).fit(data()[0][:50])
    assert label in capsys.readouterr().err
