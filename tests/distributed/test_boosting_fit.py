"""The boosting rerankers fitted on partitioned n-best lists on a two-process LocalCluster:
the joint features' vocabulary from tree-merged counts, the training pairs built on the
workers, the dev losses along the paths tree-summed; the fit equal to the in-memory fit on
the gathered lists (the kernel runs on the same pairs, so exactly), and bad input refused
naming the partition."""

from __future__ import annotations

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from sparsecca import registry  # noqa: E402
from sparsecca.data import Vocabulary, synthetic_corpus, train_test_split  # noqa: E402
from sparsecca.distributed import PartitionedNBest  # noqa: E402
from sparsecca.exceptions import TagsetMismatchError  # noqa: E402
from sparsecca.rerank import BoostingReranker, RegularizedBoostingReranker  # noqa: E402
from sparsecca.rerank._boosting import ranking_pairs  # noqa: E402
from sparsecca.tagging import NBestList, TrigramHMM, jackknife_nbest  # noqa: E402

#: the four boosting rows of the registry, with few rounds (and two C for the regularised)
BOOSTING = ("collins-sufx", "regularized-sufx", "collins-ngram", "regularized-ngram")


def _make(name, n_rounds):
    model = registry.get(name).factory(random_state=0)
    assert isinstance(model, (BoostingReranker, RegularizedBoostingReranker))
    params = dict(n_rounds=n_rounds)
    if isinstance(model, RegularizedBoostingReranker):
        params["C"] = (1e-3, 1e-4)
    return model.set_params(**params)


def _retagged(nb: NBestList, order) -> NBestList:
    """``nb`` with its candidate and gold tag vocabularies in another order (same tags)."""
    tags = Vocabulary([nb.tags.items[i] for i in order])
    m = nb.tags.mapping_to(tags).astype(np.int32)
    gold = Vocabulary([t for t in tags.items if t in nb.corpus.tags.items])
    corpus = nb.corpus.with_tags(nb.corpus.tags.mapping_to(gold)[nb.corpus.tag_ids], gold)
    return NBestList(m[nb.tag_ids], nb.cand_offsets, nb.sent_offsets, nb.scores, corpus, tags,
                     nb.unknown)


def _no_candidates(nb: NBestList) -> NBestList:
    """``nb``'s sentences, none with a candidate."""
    return NBestList(np.zeros(0, np.int32), np.zeros(1, np.int64),
                     np.zeros(nb.n_sentences + 1, np.int64), np.zeros(0), nb.corpus, nb.tags)


def assert_same_fit(dist, mem):
    """Every fitted value equal: the features and the whole path exactly (same pairs, same
    kernel), the tuned values and dev accuracies."""
    fd, fm = dist.features_, mem.features_
    np.testing.assert_array_equal(fd.view_.keys_, fm.view_.keys_)
    np.testing.assert_array_equal(fd.columns_, fm.columns_)
    assert fd.feature_names_ == fm.feature_names_
    assert fd.view_.tags_ == fm.view_.tags_
    assert fd.view_.lexical_vocabulary_ == fm.view_.lexical_vocabulary_
    assert fd.view_.n_dropped_ == fm.view_.n_dropped_
    for attr in ("coef_", "path_features_", "path_deltas_", "path_objective_",
                 "dev_accuracy_path_"):
        np.testing.assert_array_equal(getattr(dist, attr), getattr(mem, attr), err_msg=attr)
    assert dist.tuned_params() == mem.tuned_params()
    for attr in ("n_pairs_", "tuning_", "grid_edges_"):
        assert getattr(dist, attr) == getattr(mem, attr), attr
    assert dist.selected_features() == mem.selected_features()


@pytest.fixture(scope="module")
def synthetic():
    train, dev = train_test_split(synthetic_corpus(130, random_state=3, mean_length=8),
                                  test_size=50, random_state=0)
    return (jackknife_nbest(TrigramHMM(), train, k=5, folds=3),
            TrigramHMM().fit(train).nbest(dev, k=5))


def _uneven(nb, sizes, retag=None, empty=None):
    """Partitions of ``nb`` of the given sizes; partition ``retag`` with its tag
    vocabularies reversed, partition ``empty`` without candidates."""
    parts = PartitionedNBest.from_nbest(nb, sizes).compute()
    if retag is not None:
        parts[retag] = _retagged(parts[retag], range(len(nb.tags))[::-1])
    if empty is not None:
        parts[empty] = _no_candidates(parts[empty])
    return PartitionedNBest(parts)


@pytest.mark.parametrize("name", BOOSTING)
def test_synthetic_uneven_partitions_fit_as_in_memory(client, synthetic, name, tmp_path):
    train, dev = synthetic
    train_parts = _uneven(train, [30, 0, 5, 45], retag=3, empty=2)
    dev_parts = _uneven(dev, [0, 20, 4, 26], retag=1, empty=2)
    mem = _make(name, 150).fit(train_parts.gather(), dev_parts.gather())
    dist = _make(name, 150).fit(train_parts, dev_parts)
    assert_same_fit(dist, mem)
    # the pairs of the partitions, stacked, are the in-memory pairs of the gathered list
    assert dist.n_pairs_ == ranking_pairs(train_parts.gather(),
                                          mem.features_.joint(train_parts.gather()))[0].shape[0]
    dist.save(tmp_path / "m.npz")
    loaded = type(dist).load(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.decision_function(dev), mem.decision_function(dev))
    assert loaded.score(dev_parts) == mem.score(dev_parts.gather())


def test_threads_scheduler_fit_as_in_memory(synthetic):
    # no cluster: Dask's default scheduler, the tasks sharing the driver's objects
    train, dev = synthetic
    train_parts = _uneven(train, [40, 0, 40], empty=1)
    dev_parts = _uneven(dev, [25, 25], retag=1)
    mem = _make("regularized-ngram", 100).fit(train_parts.gather(), dev_parts.gather())
    assert_same_fit(_make("regularized-ngram", 100).fit(train_parts, dev_parts), mem)


def test_dev_in_memory_or_none_and_nothing_gathered(client, synthetic, monkeypatch):
    train, dev = synthetic
    train_parts = PartitionedNBest.from_nbest(train, [40, 40])
    mem = BoostingReranker(n_rounds=80).fit(train, dev)
    mem_nodev = BoostingReranker(n_rounds=80).fit(train)

    def refused(self, **kwargs):
        raise AssertionError("the partitioned fit gathered a list")

    monkeypatch.setattr(PartitionedNBest, "gather", refused)
    assert_same_fit(BoostingReranker(n_rounds=80).fit(train_parts, dev), mem)
    dist_nodev = BoostingReranker(n_rounds=80).fit(train_parts)
    assert_same_fit(dist_nodev, mem_nodev)
    assert dist_nodev.dev_accuracy_path_ is None


@pytest.fixture(scope="module")
def wsj_lists(shared_data):
    """Jackknifed 10-best lists of the first 1,500 training sentences of en-wsj (5 folds),
    and the 10-best lists of its first 400 dev sentences."""
    from sparsecca.data import read_conllu

    train = read_conllu(shared_data / "en-wsj" / "train.conllu", tags="xpos")[:1500]
    dev = read_conllu(shared_data / "en-wsj" / "dev.conllu", tags="xpos")[:400]
    return (jackknife_nbest(TrigramHMM(), train, k=10, folds=5, random_state=0),
            TrigramHMM().fit(train).nbest(dev, k=10))


@pytest.mark.parametrize("name", BOOSTING)
def test_wsj_fit_on_partitions_equals_in_memory(client, wsj_lists, name):
    train, dev = wsj_lists
    train_parts = PartitionedNBest.from_nbest(train, [500, 0, 700, 300]).persist()
    dev_parts = PartitionedNBest.from_nbest(dev, [150, 250]).persist()
    mem = _make(name, 300).fit(train, dev)
    dist = _make(name, 300).fit(train_parts, dev_parts)
    assert_same_fit(dist, mem)
    assert mem.n_pairs_ > 10_000 and mem.features_.n_features_ > 5_000
    assert dist.score(dev_parts) == mem.score(dev)


def _without_gold(nb):
    return NBestList(nb.tag_ids, nb.cand_offsets, nb.sent_offsets, nb.scores,
                     nb.corpus.with_tags(None, None), nb.tags)


def _with_scores(nb, scores):
    return NBestList(nb.tag_ids, nb.cand_offsets, nb.sent_offsets, scores, nb.corpus, nb.tags,
                     nb.unknown)


def _other_column(nb):
    renamed = [t.lower() + "x" for t in nb.tags.items]
    corpus = nb.corpus.with_tags(nb.corpus.tag_ids,
                                 [t.lower() + "x" for t in nb.corpus.tags.items])
    return NBestList(nb.tag_ids, nb.cand_offsets, nb.sent_offsets, nb.scores, corpus, renamed,
                     nb.unknown)


def _top1(nb):
    return nb.reorder(nb.sent_offsets[:-1][np.diff(nb.sent_offsets) > 0])


def _bad_cases(train, dev):
    a, b = train.select(np.arange(20)), train.select(np.arange(20, 40))
    inf = _with_scores(b, np.where(np.arange(b.n_total) == 3, -np.inf, b.scores))
    d0, d1 = dev.select(np.arange(20)), dev.select(np.arange(20, 40))
    boost = BoostingReranker(n_rounds=10)
    return [
        (boost, [a, b.corpus], [d0], TypeError,
         "train partition 1: must be an NBestList, got TaggedCorpus"),
        (boost, [a, _without_gold(b)], None, ValueError,
         r"train partition 1: has no gold tags \(losses is None\)"),
        (boost, [inf, a], None, ValueError,
         r"train partition 0: train has 1 candidate\(s\) with decoder score -inf"),
        (boost, [a.select(np.arange(0)), a.select(np.arange(0))], None, ValueError,
         r"train is empty \(0 sentences, 0 candidates over 2 partitions\)"),
        (boost, [a, b], [d0, _without_gold(d1)], ValueError,
         r"dev partition 1: has no gold tags"),
        (boost, [a, b], [d0, _with_scores(d1, np.full(d1.n_total, -np.inf))], ValueError,
         r"dev partition 1: dev has \d+ candidate\(s\) with decoder score -inf"),
        (boost, [a, b], [_other_column(d0), _other_column(d1)], TagsetMismatchError,
         r"dev gold tags: 100.0% of the tag tokens"),
        (boost, [a, b], [_top1(d0), _top1(d1)], ValueError,
         "dev has one candidate per sentence; tuning needs k >= 2"),
        (boost, [a, b], _top1(d0), ValueError,
         "dev has one candidate per sentence; tuning needs k >= 2"),
        (RegularizedBoostingReranker(C=(1e-3, 1e-4)), [a, b], None, ValueError,
         "C has 2 values to choose from but no dev n-best list was given"),
        (BoostingReranker(n_rounds=0), [a, b], None, ValueError,
         "n_rounds must be an int >= 1, got 0"),
        (BoostingReranker(features="words"), [a, b], None, ValueError,
         "features must be one of"),
    ]


def test_bad_partitions(client, synthetic):
    train, dev = synthetic
    for model, train_parts, dev_parts, error, match in _bad_cases(train, dev):
        if isinstance(dev_parts, list):
            dev_parts = PartitionedNBest(dev_parts)
        with pytest.raises(error, match=match):
            model.fit(PartitionedNBest(train_parts), dev_parts)
