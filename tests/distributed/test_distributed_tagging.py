"""The taggers on a PartitionedCorpus, on a two-process LocalCluster: the HMM fitted by a
tree reduce of partition counts is the HMM fitted on the corpus gathered (every array), the
MEMM trained on the partitions has the in-memory model's structure and objective and its
weights to the optimiser's tolerance, and nbest / tag / jackknife_nbest per partition give
exactly the in-memory lists."""

from __future__ import annotations

import numpy as np
import pytest

from sparsecca.data import TaggedCorpus, read_conllu, synthetic_corpus
from sparsecca.distributed import PartitionedCorpus, PartitionedNBest, read_conllu_partitions
from sparsecca.exceptions import TagsetMismatchError
from sparsecca.tagging import (
    MEMMTagger,
    PerceptronTagger,
    TrigramHMM,
    clone,
    jackknife_nbest,
)

pytest.importorskip("distributed")


def assert_same_model(a, b):
    """Every array and value of the two models' saved states (what ``save`` writes)."""
    (pa, arrays_a, extra_a), (pb, arrays_b, extra_b) = a._get_state(), b._get_state()
    assert pa == pb and extra_a == extra_b
    assert arrays_a.keys() == arrays_b.keys()
    for name, value in arrays_a.items():
        other = arrays_b[name]
        assert value.dtype == other.dtype and np.array_equal(value, other), name


def assert_same_nbest(a, b):
    # field by field first, so that a failure says what differs (NBestList.__eq__ only
    # says that something does)
    np.testing.assert_array_equal(a.sent_offsets, b.sent_offsets)
    np.testing.assert_array_equal(a.cand_offsets, b.cand_offsets)
    np.testing.assert_array_equal(np.array(a.tags.items, dtype=object)[a.tag_ids],
                                  np.array(b.tags.items, dtype=object)[b.tag_ids])
    np.testing.assert_array_equal(a.scores, b.scores)
    assert a == b  # sentences, candidate tag strings, scores, unknown masks
    assert a.tags == b.tags
    assert np.array_equal(a.tag_ids, b.tag_ids) and np.array_equal(a.losses, b.losses)


def _counts_equal(a, b):
    return all(np.array_equal(getattr(a, f), getattr(b, f)) if isinstance(getattr(a, f),
                                                                          np.ndarray)
               else getattr(a, f) == getattr(b, f) for f in a.__dataclass_fields__)


@pytest.fixture(scope="module", params=[("fr-sequoia", "upos", 1500), ("en-wsj", "xpos", 1500)])
def real(request, shared_data, tmp_path_factory):
    """(partitioned corpus, the same corpus in memory, the test file): the first 1500
    sentences of the training file (to keep the test short), and the whole test file."""
    name, tags, n = request.param
    text = (shared_data / name / "train.conllu").read_text(encoding="utf-8")
    cut = 0
    for _ in range(n):
        cut = text.index("\n\n", cut) + 2
    path = tmp_path_factory.mktemp(name) / "train.conllu"
    path.write_text(text[:cut], encoding="utf-8")
    corpus = read_conllu(path, tags=tags)
    parts = read_conllu_partitions(path, tags=tags,
                                   partition_size=path.stat().st_size // 5 + 1)
    return parts, corpus, read_conllu(shared_data / name / "test.conllu", tags=tags)


@pytest.mark.slow
def test_hmm_fit_counts_nbest_and_jackknife_equal_in_memory(client, real):
    parts, corpus, _ = real
    parts = parts.persist()
    assert parts.n_partitions == 5
    counts = parts.reduce(TrigramHMM._count_partition, TrigramHMM._merge_counts).compute()
    assert _counts_equal(counts, TrigramHMM._count_partition(corpus))
    model = TrigramHMM().fit(parts)
    reference = TrigramHMM().fit(corpus)
    assert_same_model(model, reference)
    # French prefixes inform the tag (the held-out selection gives them a weight), English
    # Penn tags hardly
    assert (reference.prefix_weight_ > 0) == (reference.tags_.id("NOUN") >= 0)
    nbest = model.nbest(parts, k=3)
    assert isinstance(nbest, PartitionedNBest) and nbest.n_partitions == 5
    assert_same_nbest(nbest.gather(), reference.nbest(corpus, k=3))
    tagged = model.tag(parts)
    assert isinstance(tagged, PartitionedCorpus)
    assert tagged.gather() == reference.tag(corpus)
    jk = jackknife_nbest(TrigramHMM(), parts, k=2, folds=3, random_state=1)
    assert isinstance(jk, PartitionedNBest) and jk.n_partitions == 5
    assert_same_nbest(jk.gather(), jackknife_nbest(TrigramHMM(), corpus, k=2, folds=3,
                                                   random_state=1))


@pytest.mark.parametrize("estimator", [PerceptronTagger(n_iter=2, random_state=0),
                                       MEMMTagger(maxiter=20)])
def test_discriminative_taggers_fit_and_jackknife_by_folds(client, estimator):
    corpus = synthetic_corpus(90, random_state=3)
    parts = PartitionedCorpus.from_corpus(corpus, 4)
    model = type(estimator)(**estimator.get_params()).fit(parts)
    reference = type(estimator)(**estimator.get_params()).fit(corpus)
    if isinstance(estimator, MEMMTagger):  # trained on the partitions: sums round otherwise
        assert_same_memm(model, reference)
    else:  # gathered on the driver
        assert_same_model(model, reference)
    assert_same_nbest(model.nbest(parts, k=3).gather(), model.nbest(corpus, k=3))
    jk = jackknife_nbest(estimator, parts, k=3, folds=3, random_state=5)
    assert_same_nbest(jk.gather(), jackknife_nbest(estimator, corpus, k=3, folds=3,
                                                   random_state=5))


#: what an MEMM fits before its weights: vocabularies, tag dictionary, suffix model,
#: emission and trigram patterns
MEMM_STRUCTURE = ("tags_", "words_", "word_counts_", "lex_indptr_", "lex_tags_", "suffixes_",
                  "suffix_indptr_", "suffix_tags_", "suffix_probs_", "tag_prior_", "theta_",
                  "emit_indptr_", "emit_tags_", "tri_indptr_", "tri_tags_")


def assert_same_structure(a, b):
    assert a.features_.vocabulary_ == b.features_.vocabulary_
    assert a.features_.n_dropped_ == b.features_.n_dropped_
    for name in MEMM_STRUCTURE:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), name
        else:
            assert x == y, name


def assert_same_memm(model, reference, atol=1e-6):
    """The structure exactly; the weights, the loss and the iterations to the optimiser's
    tolerance (the partitions' sums round differently from the in-memory ones)."""
    assert_same_structure(model, reference)
    for name in ("emit_weights_", "bigram_weights_", "tri_weights_"):
        np.testing.assert_allclose(getattr(model, name), getattr(reference, name), rtol=0,
                                   atol=atol, err_msg=name)
    assert model.loss_ == pytest.approx(reference.loss_, rel=1e-9)
    assert abs(model.n_iter_ - reference.n_iter_) <= 1


def assert_same_objective(parts, corpus, estimator, seed=0):
    """The structure the partitioned fit builds, and its objective (a tree sum over the
    partitions) against the in-memory one at zero and at random weights."""
    dist, mem = clone(estimator), clone(estimator)
    problem = parts._memm_objective(dist)
    reference = mem._fit_structure(corpus)
    assert_same_structure(dist, mem)
    assert problem.n_params == reference.n_params
    rng = np.random.default_rng(seed)
    for theta in (np.zeros(reference.n_params), rng.normal(0, 0.3, reference.n_params)):
        value, grad = problem(theta)
        ref_value, ref_grad = reference(theta)
        assert value == pytest.approx(ref_value, rel=1e-12, abs=0)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-12,
                                   atol=1e-12 * np.abs(ref_grad).max())


@pytest.mark.parametrize("estimator", [MEMMTagger(maxiter=15),
                                       MEMMTagger(maxiter=15, support="all", templates="model1",
                                                  lam=0.5)])
def test_memm_objective_on_uneven_and_empty_partitions(client, estimator):
    corpus = synthetic_corpus(120, random_state=2)
    empty = corpus.select(np.zeros(0, np.int64))
    # a partition with its own vocabularies (the model's ids are those of the union)
    own = TaggedCorpus.from_sentences(corpus[60:61].to_sentences())
    parts = PartitionedCorpus([corpus[:9], empty, corpus[9:60], own, corpus[61:], empty])
    assert_same_objective(parts, corpus, estimator)
    model = clone(estimator).fit(parts)
    assert_same_memm(model, clone(estimator).fit(corpus))


def _retagged(corpus, prefix):
    """The corpus with every tag renamed (another tag column)."""
    return TaggedCorpus.from_sentences([[(w, prefix + t) for w, t in sentence]
                                        for sentence in corpus.to_sentences()])


@pytest.mark.parametrize("make, error, match", [
    (lambda c: [c[:6], _retagged(c[6:], "X-")], TagsetMismatchError,
     r"partition 1 has another tagset than partition 0: 20 of its 20 tag tokens \(100%\)"),
    (lambda c: [c[:4], c[4:8], TaggedCorpus.from_words([c.sentence(8)[0]])], ValueError,
     r"partition 2: corpus must be tagged \(tag_ids is None\)"),
    (lambda c: [c[:6], c.to_sentences()], TypeError,
     "partition 1: corpus must be a TaggedCorpus, got list"),
    (lambda c: [c.select(np.zeros(0, np.int64))] * 2, ValueError,
     "corpus must contain at least one token, got an empty corpus"),
])
def test_memm_fit_bad_partitions(client, make, error, match):
    corpus = synthetic_corpus(12, random_state=0, mean_length=3)
    model = MEMMTagger(maxiter=5).fit(corpus)
    before = model.emit_weights_.copy()
    with pytest.raises(error, match=match):
        model.fit(PartitionedCorpus(make(corpus)))
    np.testing.assert_array_equal(model.emit_weights_, before)  # the previous fit is kept


@pytest.mark.slow
def test_memm_fit_on_partitions_equals_in_memory(client, real):
    parts, corpus, test = real
    parts = parts.persist()
    estimator = MEMMTagger(maxiter=40)
    assert_same_objective(parts, corpus, estimator)
    model = clone(estimator).fit(parts)
    reference = clone(estimator).fit(corpus)
    assert_same_memm(model, reference)
    # the same tags on the whole test set
    tags = model.tag(test)
    np.testing.assert_array_equal(tags.tag_ids, reference.tag(test).tag_ids)
    assert model.score(test) == reference.score(test) > 0.9


def test_jackknife_with_empty_partitions_and_a_tag_only_one_fold_sees():
    # on the default (threaded) scheduler: a partition without sentences, and a tag of one
    # sentence (its fold's tagger never saw it: an extra tag of that fold's list)
    corpus = synthetic_corpus(60, random_state=0)
    words, tags = corpus.sentence(7)
    odd = TaggedCorpus.from_sentences([list(zip(words, ["RARE"] + tags[1:]))])
    empty = odd.select(np.zeros(0, np.int64))
    parts = PartitionedCorpus([corpus[:7], empty, odd, corpus[8:40], empty, corpus[40:]])
    gathered = parts.gather()
    jk = jackknife_nbest(TrigramHMM(), parts, k=2, folds=4, random_state=0)
    assert [nb.n_sentences for nb in jk.compute()] == [7, 0, 1, 32, 0, 20]
    assert "RARE" in jk.gather().tags
    assert_same_nbest(jk.gather(), jackknife_nbest(TrigramHMM(), gathered, k=2, folds=4,
                                                   random_state=0))
    model = TrigramHMM().fit(parts)
    assert_same_model(model, TrigramHMM().fit(gathered))


@pytest.mark.parametrize("call, error, match", [
    (lambda p: TrigramHMM().fit(p.map(lambda c: TaggedCorpus.from_words(
        [c.sentence(0)[0]]), cls=PartitionedCorpus)), ValueError,
     r"corpus must be tagged \(tag_ids is None\)"),
    (lambda p: jackknife_nbest(TrigramHMM(), p.map(lambda c: TaggedCorpus.from_words(
        [c.sentence(0)[0]] * 2), cls=PartitionedCorpus)), ValueError,
     r"corpus must be tagged \(tag_ids is None\)"),
    (lambda p: TrigramHMM().fit(p.map(lambda c: c.select(np.zeros(0, np.int64)),
                                      cls=PartitionedCorpus)), ValueError,
     "corpus must contain at least one token, got an empty corpus"),
    (lambda p: jackknife_nbest(TrigramHMM(), p, k=0), ValueError, "k must be an int >= 1"),
    (lambda p: jackknife_nbest(TrigramHMM(), p, folds=50), ValueError,
     r"folds must be in \[2, n_sentences=12\], got 50"),
    (lambda p: jackknife_nbest(TrigramHMM, p), TypeError, "estimator must be an instance"),
    (lambda p: TrigramHMM().fit(p).nbest(p, k=0), ValueError, "k must be an int >= 1"),
    (lambda p: TrigramHMM().nbest(p), Exception, "not fitted yet"),
    (lambda p: jackknife_nbest(TrigramHMM(), PartitionedCorpus.from_corpus(p.gather()[:1], 1)),
     ValueError, "corpus must have at least 2 sentences to jackknife, got 1"),
])
def test_bad_input(call, error, match):
    parts = PartitionedCorpus.from_corpus(synthetic_corpus(12, random_state=0), 3)
    with pytest.raises(error, match=match):
        call(parts)
