"""The partition collections and the scheduler specification (the default threaded scheduler
runs the same task graphs as a cluster; one test starts a local cluster of its own)."""

from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("dask")

from sparsecca.data import TaggedCorpus, concat_corpora, synthetic_corpus  # noqa: E402
from sparsecca.distributed import (  # noqa: E402
    Partitioned,
    PartitionedCorpus,
    PartitionedNBest,
    parse_scheduler,
    scheduler,
    tree_reduce,
)
from sparsecca.tagging import TrigramHMM  # noqa: E402


@pytest.mark.parametrize("n_parts", [1, 2, 3, 7, 20])
def test_from_corpus_round_trips_and_keeps_order(n_parts):
    corpus = synthetic_corpus(20, random_state=3)
    parts = PartitionedCorpus.from_corpus(corpus, n_parts)
    assert parts.n_partitions == n_parts
    got = parts.compute()
    assert [p.n_sentences for p in got] == [len(a) for a in np.array_split(np.arange(20),
                                                                           n_parts)]
    assert parts.gather() == corpus
    assert parts.persist().gather() == corpus


@pytest.mark.parametrize("n", [1, 2, 5, 8, 13])
def test_tree_reduce_equals_the_sequential_sum(n):
    dask = pytest.importorskip("dask")
    values = [np.arange(4) * (i + 1) for i in range(n)]
    got = tree_reduce([dask.delayed(v) for v in values], np.add).compute()
    np.testing.assert_array_equal(got, np.sum(values, axis=0))
    # a non-commutative 'add' keeps the partition order
    assert tree_reduce([dask.delayed(str(i)) for i in range(n)],
                       lambda a, b: a + b).compute() == "".join(map(str, range(n)))


def test_map_and_reduce_follow_the_partitions():
    p = Partitioned([[1, 2], [3], [4, 5, 6]])
    assert p.map(len).compute() == [2, 1, 3]
    assert p.reduce(sum, lambda a, b: a + b).compute() == 21
    assert repr(p) == "Partitioned(n_partitions=3)"


def test_partitioned_nbest_gathers_the_whole_list():
    corpus = synthetic_corpus(15, random_state=1)
    nbest = TrigramHMM().fit(corpus).nbest(corpus, k=3)
    parts = PartitionedNBest([nbest.select(range(0, 4)), nbest.select(range(4, 9)),
                              nbest.select(range(9, 15))])
    assert parts.gather() == nbest
    for spec in (3, [4, 5, 6], [0, 15, 0]):
        split = PartitionedNBest.from_nbest(nbest, spec)
        assert split.gather() == nbest
        if not isinstance(spec, int):
            assert [p.n_sentences for p in split.compute()] == spec


def test_concat_corpora_merges_vocabularies():
    a = TaggedCorpus.from_sentences([[("a", "X"), ("b", "Y")]])
    b = TaggedCorpus.from_sentences([[("c", "Z"), ("a", "X")]])
    both = concat_corpora([a, b])
    assert both.words.items == ["a", "b", "c"] and both.tags.items == ["X", "Y", "Z"]
    assert both.sentence(1) == (["c", "a"], ["Z", "X"])


@pytest.mark.parametrize("spec, expected", [
    ("local", ("local", None)), ("local:3", ("local", 3)),
    ("10.1.2.3:8786", ("address", "10.1.2.3:8786")),
    ("tcp://host.example:8786", ("address", "tcp://host.example:8786")),
])
def test_parse_scheduler(spec, expected):
    assert parse_scheduler(spec) == expected


@pytest.mark.parametrize("call, exc, match", [
    (lambda: Partitioned([]), ValueError, "Partitioned needs at least one partition"),
    (lambda: PartitionedCorpus.from_corpus([("a", "X")], 1), TypeError,
     "corpus must be a TaggedCorpus, got list"),
    (lambda: PartitionedCorpus.from_corpus(synthetic_corpus(3, random_state=0), 4),
     ValueError, r"partitions must be an int in \[1, 3\] .*got 4"),
    (lambda: PartitionedCorpus.from_corpus(synthetic_corpus(3, random_state=0), 0),
     ValueError, "partitions must be an int >= 1, got 0"),
    (lambda: PartitionedCorpus.from_corpus(synthetic_corpus(3, random_state=0), [1, 1]),
     ValueError, r"sizes >= 0 summing to the 3 sentences, got \[1, 1\]"),
    (lambda: PartitionedCorpus.from_corpus(synthetic_corpus(3, random_state=0), [4, -1]),
     ValueError, "summing to the 3 sentences"),
    (lambda: PartitionedCorpus.from_corpus(synthetic_corpus(3, random_state=0), "ab"),
     ValueError, "summing to the 3 sentences, got 'ab'"),
    (lambda: PartitionedNBest.from_nbest("x", 2), TypeError, "nbest must be an NBestList"),
    (lambda: tree_reduce([], np.add), ValueError, "at least one partial result"),
    (lambda: concat_corpora([]), ValueError, "at least one corpus"),
    (lambda: concat_corpora(["x"]), TypeError, r"corpora\[0\] must be a TaggedCorpus"),
    (lambda: parse_scheduler("local:0"), ValueError, "N >= 1 worker processes, got 'local:0'"),
    (lambda: parse_scheduler("cluster"), ValueError, "got 'cluster'"),
    (lambda: parse_scheduler(4), TypeError, "got int"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_no_scheduler_runs_in_process():
    with scheduler(None) as client:
        assert client is None


def _worker_state():
    """(NUMBA_CACHE_DIR, sparsecca's kernel cache root) as a worker sees them."""
    import os

    from sparsecca import _config

    return os.environ.get("NUMBA_CACHE_DIR"), _config.CACHE_DIR


def test_local_scheduler_gives_each_worker_its_own_cache_and_a_closed_one_a_clear_error():
    from sparsecca._config import cache_dir

    corpus = synthetic_corpus(40, random_state=0)
    with scheduler("local:2") as client:
        state = client.run(_worker_state)
        parts = PartitionedCorpus.from_corpus(corpus, 3).persist()
        assert parts.gather() == corpus
    base = os.path.join(cache_dir(), "dask-workers")
    dirs = sorted(d for d, _ in state.values())
    assert len(set(dirs)) == 2 and all(os.path.dirname(d) == base for d in dirs)
    # sparsecca, imported by the worker's first task, caches below the worker's own directory
    assert all(root == os.path.join(d, "sparsecca") for d, root in state.values())
    with pytest.raises(RuntimeError, match="persisted on a Dask cluster whose client has "
                                           "closed .*status 'closed'"):
        parts.gather()
    with pytest.raises(RuntimeError, match="this PartitionedCorpus was persisted"):
        parts.map(len)
