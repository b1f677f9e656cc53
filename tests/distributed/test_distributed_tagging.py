"""The taggers on a PartitionedCorpus, on a two-process LocalCluster: the HMM fitted by a
tree reduce of partition counts is the HMM fitted on the corpus gathered (every array), and
nbest / tag / jackknife_nbest per partition give exactly the in-memory lists."""

from __future__ import annotations

import numpy as np
import pytest

from sparsecca.data import TaggedCorpus, read_conllu, synthetic_corpus
from sparsecca.distributed import PartitionedCorpus, PartitionedNBest, read_conllu_partitions
from sparsecca.tagging import MEMMTagger, PerceptronTagger, TrigramHMM, jackknife_nbest

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
    assert a == b  # sentences, candidate tag strings, scores, unknown masks
    assert a.tags == b.tags
    assert np.array_equal(a.tag_ids, b.tag_ids) and np.array_equal(a.losses, b.losses)


def _counts_equal(a, b):
    return all(np.array_equal(getattr(a, f), getattr(b, f)) if isinstance(getattr(a, f),
                                                                          np.ndarray)
               else getattr(a, f) == getattr(b, f) for f in a.__dataclass_fields__)


@pytest.fixture(scope="module", params=[("fr-sequoia", "upos", 1500), ("en-wsj", "xpos", 1500)])
def real(request, shared_data, tmp_path_factory):
    """(partitioned corpus, the same corpus in memory): the first 1500 sentences of the
    training file (to keep the test short)."""
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
    return parts, corpus


@pytest.mark.slow
def test_hmm_fit_counts_nbest_and_jackknife_equal_in_memory(client, real):
    parts, corpus = real
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
def test_discriminative_taggers_fit_gathered_and_jackknife_by_folds(client, estimator):
    corpus = synthetic_corpus(90, random_state=3)
    parts = PartitionedCorpus.from_corpus(corpus, 4)
    model = type(estimator)(**estimator.get_params()).fit(parts)  # gathered on the driver
    assert_same_model(model, type(estimator)(**estimator.get_params()).fit(corpus))
    assert_same_nbest(model.nbest(parts, k=3).gather(), model.nbest(corpus, k=3))
    jk = jackknife_nbest(estimator, parts, k=3, folds=3, random_state=5)
    assert_same_nbest(jk.gather(), jackknife_nbest(estimator, corpus, k=3, folds=3,
                                                   random_state=5))


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
