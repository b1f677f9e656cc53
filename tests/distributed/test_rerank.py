"""Fitted rerankers applied to partitioned n-best lists on a two-process LocalCluster: every
method partition by partition, equal to the in-memory result on the gathered lists."""

from __future__ import annotations

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from sparsecca.data import synthetic_corpus, train_test_split  # noqa: E402
from sparsecca.distributed import Partitioned, PartitionedNBest, apply_reranker  # noqa: E402
from sparsecca.rerank import (  # noqa: E402
    BoostingReranker,
    GenerativeReranker,
    HiddenVariableReranker,
    PerceptronReranker,
    SoftenedReranker,
)
from sparsecca.tagging import TrigramHMM, jackknife_nbest  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as c:
        yield c


def split_nbest(nbest, sizes):
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    assert bounds[-1] == nbest.n_sentences
    return PartitionedNBest([nbest.select(np.arange(a, b))
                             for a, b in zip(bounds[:-1], bounds[1:])])


@pytest.fixture(scope="module")
def lists():
    train, dev = train_test_split(synthetic_corpus(160, random_state=2, mean_length=10),
                                  test_size=60, random_state=0)
    train_nb = jackknife_nbest(TrigramHMM(), train, k=5, folds=3)
    dev_nb = TrigramHMM().fit(train).nbest(dev, k=5)
    return train_nb, dev_nb


RERANKERS = {
    "perceptron": lambda: PerceptronReranker(n_epochs=2, decoder_weight=1.0, random_state=0),
    "boosting": lambda: BoostingReranker(n_rounds=50),
    "hidden": lambda: HiddenVariableReranker(n_epochs=1, lr=0.1, random_state=0),
    "generative": lambda: GenerativeReranker(n_components=8, tau=0.9, w=1.0),
    "softened": lambda: SoftenedReranker(n_components=8, tau=0.9, lam=0.5, w=1.0),
}


@pytest.fixture(scope="module")
def fitted(lists):
    train, dev = lists
    return {name: make().fit(train, dev) for name, make in RERANKERS.items()}


@pytest.mark.parametrize("name", sorted(RERANKERS))
def test_methods_per_partition_equal_in_memory(client, lists, fitted, name):
    _, dev = lists
    reranker = fitted[name]
    parts = split_nbest(dev, [25, 0, 5, 30])
    gathered = parts.gather()
    assert gathered == dev
    scores = reranker.decision_function(parts)
    assert type(scores) is Partitioned
    np.testing.assert_array_equal(np.concatenate(scores.compute()),
                                  reranker.decision_function(dev))
    np.testing.assert_array_equal(np.concatenate(reranker.rerank(parts).compute()),
                                  reranker.rerank(dev))
    assert reranker.predict(parts).gather() == reranker.predict(dev)
    reranked = reranker.reranked(parts)
    assert isinstance(reranked, PartitionedNBest)
    assert reranked.gather() == reranker.reranked(dev)
    assert reranker.score(parts) == reranker.score(dev)
    if hasattr(reranker, "projection_scores"):
        np.testing.assert_array_equal(np.concatenate(reranker.projection_scores(parts)
                                                     .compute()),
                                      reranker.projection_scores(dev))


def test_partition_errors_name_the_partition(client, lists, fitted):
    _, dev = lists
    no_gold = dev.select(np.arange(10, 20))
    no_gold = type(no_gold)(no_gold.tag_ids, no_gold.cand_offsets, no_gold.sent_offsets,
                            no_gold.scores, no_gold.corpus.with_tags(None, None), no_gold.tags)
    parts = PartitionedNBest([dev.select(np.arange(10)), no_gold])
    with pytest.raises(ValueError, match="partition 1: has no gold tags"):
        fitted["perceptron"].score(parts)
    with pytest.raises(TypeError, match="nbest must be a PartitionedNBest, got list"):
        apply_reranker(fitted["perceptron"], [dev], "score")
    with pytest.raises(ValueError, match="method must be one of"):
        apply_reranker(fitted["perceptron"], parts, "fit")
    empty = PartitionedNBest([dev.select(np.arange(0))])
    with pytest.raises(ValueError, match="nbest is empty"):
        fitted["perceptron"].score(empty)
