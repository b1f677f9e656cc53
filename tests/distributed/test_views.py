"""Views fitted on partitioned n-best lists by tree-reduced counts, transformed per partition
into row-chunked Dask arrays, on a two-process LocalCluster: equal to the in-memory views of
the gathered lists."""

from __future__ import annotations

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from sparsecca.data import TaggedCorpus, read_conllu, synthetic_corpus  # noqa: E402
from sparsecca.distributed import (  # noqa: E402
    PartitionedCorpus,
    PartitionedNBest,
    cca_arrays,
    fit_views,
    partition_summaries,
    transform_partitions,
)
from sparsecca.exceptions import TagsetMismatchError  # noqa: E402
from sparsecca.features import HStackView, SuffixView, TagNgramView, WordView  # noqa: E402
from sparsecca.tagging import TrigramHMM, jackknife_nbest  # noqa: E402


@pytest.fixture(scope="module")
def synthetic_nbest():
    corpus = synthetic_corpus(80, random_state=4, mean_length=10)
    return jackknife_nbest(TrigramHMM(), corpus, k=4, folds=3)


@pytest.fixture(scope="module")
def sequoia_nbest(shared_data):
    corpus = read_conllu(shared_data / "fr-sequoia" / "train.conllu", tags="upos")[:300]
    return jackknife_nbest(TrigramHMM(), corpus, k=5, folds=3)


def _same(A, B):
    A, B = A.tocsr(), B.tocsr()
    assert A.shape == B.shape
    assert (A != B).nnz == 0


def _check_arrays(nbest, sizes, views=(None, None)):
    parts = PartitionedNBest.from_nbest(nbest, sizes)
    arrays = cca_arrays(parts, *views)
    gathered = parts.gather()
    iv = SuffixView() if views[0] is None else type(views[0])(**views[0].get_params())
    ov = TagNgramView() if views[1] is None else type(views[1])(**views[1].get_params())
    iv.fit(gathered.corpus)
    ov.fit(gathered.corpus)
    assert arrays.input_view.feature_names_out().tolist() == iv.feature_names_out().tolist()
    assert arrays.output_view.feature_names_out().tolist() == ov.feature_names_out().tolist()
    assert arrays.X.chunks[0] == tuple(sizes) == arrays.Y.chunks[0]
    assert arrays.Yhat.chunks[0] == tuple(int(nb.n_total) for nb in parts.compute())
    _same(arrays.X.compute(), iv.transform(gathered.corpus))
    _same(arrays.Y.compute(), ov.transform(gathered.corpus))
    _same(arrays.Yhat.compute(),
          ov.transform_sequences(gathered.tag_ids, gathered.cand_offsets, gathered.tags))


def test_cca_arrays_equal_in_memory_synthetic(client, synthetic_nbest):
    _check_arrays(synthetic_nbest, [30, 0, 17, 33],
                  (HStackView([SuffixView(lengths=(2, 3)), WordView()], max_features=200),
                   TagNgramView(orders=(1, 2, 3), min_count=2)))


def test_cca_arrays_equal_in_memory_sequoia(client, sequoia_nbest):
    _check_arrays(sequoia_nbest, [100, 120, 80], (SuffixView(min_count=2), None))


def test_fit_views_on_corpus_partitions_with_own_vocabularies(client):
    corpus = synthetic_corpus(40, random_state=7)
    pieces = [TaggedCorpus.from_sentences(corpus.select(np.arange(a, b)).to_sentences())
              for a, b in ((0, 13), (13, 14), (14, 40))]
    parts = PartitionedCorpus(pieces)
    whole = parts.gather()
    views = fit_views(parts, [WordView(max_features=30), TagNgramView(min_count=3)])
    for fitted, ref in zip(views, [WordView(max_features=30), TagNgramView(min_count=3)]):
        ref.fit(whole)
        assert fitted.feature_names_out().tolist() == ref.feature_names_out().tolist()
        X = transform_partitions(parts, fitted, [13, 1, 26])
        _same(X.compute(), ref.transform(whole))


def test_partition_with_another_tagset_is_named(client, synthetic_nbest):
    nb = synthetic_nbest.select(np.arange(20))
    other = nb.corpus.tags.items
    # the third partition's tags renamed: another tag column
    renamed = type(nb)(nb.tag_ids, nb.cand_offsets, nb.sent_offsets, nb.scores,
                       nb.corpus.with_tags(nb.corpus.tag_ids, [t.lower() + "x" for t in other]),
                       [t.lower() + "x" for t in nb.tags.items], nb.unknown)
    parts = PartitionedNBest([nb.select(np.arange(10)), nb.select(np.arange(10, 20)),
                              renamed])
    with pytest.raises(TagsetMismatchError, match="partition 2 has another tagset than "
                                                  "partition 0"):
        cca_arrays(parts)
    with pytest.raises(TagsetMismatchError, match="partition 2"):
        partition_summaries(parts)


def test_bad_arguments(synthetic_nbest):
    with pytest.raises(TypeError, match="parts must be a PartitionedNBest or a "
                                        "PartitionedCorpus, got list"):
        fit_views([synthetic_nbest], [WordView()])
    parts = PartitionedNBest.from_nbest(synthetic_nbest, [40, 40])
    with pytest.raises(TypeError, match="views\\[0\\] \\(object\\) has no split fit"):
        fit_views(parts, [object()])
    with pytest.raises(ValueError, match="rows must give one size per partition \\(2\\), "
                                         "got 3"):
        transform_partitions(parts, WordView().fit(synthetic_nbest.corpus), [1, 2, 3])
    corpus_parts = PartitionedCorpus.from_corpus(synthetic_nbest.corpus, 2)
    with pytest.raises(TypeError, match="parts must be a PartitionedNBest, got "
                                        "PartitionedCorpus"):
        cca_arrays(corpus_parts)
