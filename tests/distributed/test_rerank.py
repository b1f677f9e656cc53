"""Fitted rerankers applied to partitioned n-best lists on a two-process LocalCluster: every
method partition by partition, equal to the in-memory result on the gathered lists."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from sparsecca.data import synthetic_corpus, train_test_split  # noqa: E402
from sparsecca.distributed import Partitioned, PartitionedNBest, apply_reranker  # noqa: E402
from sparsecca.exceptions import TagsetMismatchError  # noqa: E402
from sparsecca.rerank import (  # noqa: E402
    BoostingReranker,
    DiscriminativeReranker,
    GenerativeReranker,
    HiddenVariableReranker,
    PerceptronReranker,
    SoftenedReranker,
)
from sparsecca.tagging import TrigramHMM, jackknife_nbest  # noqa: E402


@pytest.fixture(scope="module")
def lists():
    train, dev = train_test_split(synthetic_corpus(110, random_state=2, mean_length=8),
                                  test_size=50, random_state=0)
    train_nb = jackknife_nbest(TrigramHMM(), train, k=5, folds=3)
    dev_nb = TrigramHMM().fit(train).nbest(dev, k=5)
    return train_nb, dev_nb


RERANKERS = {
    "perceptron": lambda: PerceptronReranker(n_epochs=2, decoder_weight=1.0, random_state=0),
    "boosting": lambda: BoostingReranker(n_rounds=50),
    "hidden": lambda: HiddenVariableReranker(n_epochs=1, lr=0.1, random_state=0),
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
    parts = PartitionedNBest.from_nbest(dev, [20, 0, 5, 25])
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
    nb = dev.select(np.arange(10, 20))
    renamed = [t.lower() + "x" for t in nb.tags.items]  # another tag column
    other = type(nb)(nb.tag_ids, nb.cand_offsets, nb.sent_offsets, nb.scores,
                     nb.corpus.with_tags(nb.corpus.tag_ids,
                                         [t.lower() + "x" for t in nb.corpus.tags.items]),
                     renamed, nb.unknown)
    with pytest.raises(TagsetMismatchError, match="partition 1: the candidates of nbest"):
        fitted["softened"].reranked(PartitionedNBest([dev.select(np.arange(10)), other])
                                    ).compute()
    empty = PartitionedNBest([dev.select(np.arange(0))])
    with pytest.raises(ValueError, match="nbest is empty"):
        fitted["perceptron"].score(empty)


# -- the CCA rerankers' fit on partitioned lists ------------------------------------------

@pytest.fixture(scope="module")
def sequoia_lists(shared_data):
    from sparsecca.data import read_conllu

    train = read_conllu(shared_data / "fr-sequoia" / "train.conllu", tags="upos")[:240]
    dev = read_conllu(shared_data / "fr-sequoia" / "dev.conllu", tags="upos")[:80]
    return (jackknife_nbest(TrigramHMM(), train, k=4, folds=3),
            TrigramHMM().fit(train).nbest(dev, k=4))


CCA = {
    "generative": lambda: GenerativeReranker(n_components=6, tau=0.9, k_grid=[6]),
    "softened": lambda: SoftenedReranker(n_components=6, tau=0.9, lam=0.5, k_grid=[3, 6],
                                         center=True),
    "discriminative": lambda: DiscriminativeReranker(n_components=6, tau=0.99, lam=0.5,
                                                     n_iter=1, k_grid=[6]),
}


def _assert_same_fit(dist, mem, dev):
    for attr in ("tau_", "w_", "n_components_", "dev_accuracy_", "solver_"):
        assert getattr(dist, attr) == getattr(mem, attr), attr
    if hasattr(mem, "lam_"):
        assert dist.lam_ == mem.lam_
    np.testing.assert_allclose(dist.eigenvalues_, mem.eigenvalues_, rtol=1e-6)
    np.testing.assert_allclose(dist.x_mean_, mem.x_mean_, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(dist.projection_scores(dev), mem.projection_scores(dev),
                               atol=1e-6)
    assert dist.score(dev) == mem.score(dev)
    assert dist.input_view_.feature_names_out().tolist() == \
        mem.input_view_.feature_names_out().tolist()
    np.testing.assert_allclose(dist.grid_scores_["accuracy"], mem.grid_scores_["accuracy"])


@pytest.mark.parametrize("name", sorted(CCA))
def test_cca_fit_on_partitions_equals_in_memory(client, sequoia_lists, name, tmp_path,
                                                monkeypatch):
    import dask.array as da

    import sparsecca.rerank._cca as cca_module

    engines = []

    class Recording(cca_module.CCAEngine):
        def __init__(self, X, Y, **kwargs):
            engines.append((type(X), type(Y)))
            super().__init__(X, Y, **kwargs)

    monkeypatch.setattr(cca_module, "CCAEngine", Recording)
    train, dev = sequoia_lists
    train_parts = PartitionedNBest.from_nbest(train, [90, 0, 70, 80])
    dev_parts = PartitionedNBest.from_nbest(dev, [30, 50])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mem = CCA[name]().fit(train_parts.gather(), dev_parts.gather())
        n_mem = len(record)
        dist = CCA[name]().fit(train_parts, dev_parts if name != "softened" else dev)
    # the partitioned fit ran the engine on the row-chunked Dask views
    assert engines[1] == (da.Array, da.Array) and engines[0] != engines[1]
    # the same warnings on both paths
    assert [str(w.message) for w in record[n_mem:]] == [str(w.message) for w in record[:n_mem]]
    _assert_same_fit(dist, mem, dev)
    if name == "discriminative":
        np.testing.assert_allclose(dist.slacks_, mem.slacks_, atol=1e-6)
    dist.save(tmp_path / "m.npz")
    loaded = type(dist).load(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.decision_function(dev), dist.decision_function(dev))


def test_baseline_fit_gathers_partitions(client, lists):
    train, dev = lists
    parts = PartitionedNBest.from_nbest(train, [25, 0, 35])
    a = RERANKERS["perceptron"]().fit(parts, PartitionedNBest.from_nbest(dev, [50]))
    b = RERANKERS["perceptron"]().fit(train, dev)
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_cca_fit_bad_partitions(client, lists):
    train, dev = lists
    no_gold = train.select(np.arange(10))
    no_gold = type(no_gold)(no_gold.tag_ids, no_gold.cand_offsets, no_gold.sent_offsets,
                            no_gold.scores, no_gold.corpus.with_tags(None, None), no_gold.tags)
    with pytest.raises(ValueError, match="train partition 1 has no gold tags"):
        GenerativeReranker(n_components=2, tau=0.9, w=1.0, k_grid=[2]).fit(
            PartitionedNBest([train.select(np.arange(10, 30)), no_gold]))
    with pytest.raises(ValueError, match="train has 1 sentence over its partitions"):
        GenerativeReranker(n_components=2, tau=0.9, w=1.0, k_grid=[2]).fit(
            PartitionedNBest([train.select(np.arange(1)), train.select(np.arange(0))]))
    with pytest.raises(ValueError, match="dev n-best list is required"):
        GenerativeReranker(n_components=2).fit(PartitionedNBest.from_nbest(train, [30, 30]))


# -- the whole training splits, from the files to the reranker -------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name, tags", [("fr-sequoia", "upos"), ("en-wsj", "xpos")])
def test_whole_split_from_files_to_reranker_equals_in_memory(client, shared_data, name, tags):
    # every training sentence of the split: read in byte ranges, the HMM's counts, the
    # jackknifed 10-best lists (10 folds, as the protocol), the dev lists and a CCA reranker
    # fitted on the partitions, each against the in-memory pipeline on the same files
    from sparsecca.data import read_conllu
    from sparsecca.distributed import read_conllu_partitions

    path = shared_data / name / "train.conllu"
    corpus = read_conllu(path, tags=tags)
    parts = read_conllu_partitions(path, tags=tags,
                                   partition_size=path.stat().st_size // 4 + 1).persist()
    assert parts.n_partitions == 4 and parts.gather() == corpus
    dev = read_conllu(shared_data / name / "dev.conllu", tags=tags)
    dev_nb = TrigramHMM().fit(corpus).nbest(dev, k=10)
    dist_dev_nb = TrigramHMM().fit(parts).nbest(dev, k=10)
    assert dist_dev_nb == dev_nb and np.array_equal(dist_dev_nb.losses, dev_nb.losses)
    train_nb = jackknife_nbest(TrigramHMM(), corpus, k=10, folds=10, random_state=0)
    train_parts = jackknife_nbest(TrigramHMM(), parts, k=10, folds=10, random_state=0).persist()
    assert train_parts.gather() == train_nb
    make = lambda: SoftenedReranker(n_components=40, tau=0.99, lam=0.5,  # noqa: E731
                                    k_grid=[20, 40])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the same warnings on both paths: checked above
        mem = make().fit(train_nb, dev_nb)
        dist = make().fit(train_parts, dev_nb)
    _assert_same_fit(dist, mem, dev_nb)
