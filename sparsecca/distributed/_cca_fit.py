"""The CCA rerankers' fit on partitioned n-best lists.

``GenerativeReranker(...).fit(train_parts, dev_parts)`` (and the softened and discriminative
models) with a :class:`PartitionedNBest` runs the in-memory fit's own code
(``_fit_data``) on the partitioned counterparts of its data:

* the views fitted from tree-reduced counts, X, Y and Yhat row-chunked Dask arrays kept on
  the workers (:func:`~sparsecca.distributed.cca_arrays`), the engine on them;
* the residual factor M (sentence-local) built per partition, with the chunks of X, so the
  engine reduces X^T M over the chunks;
* the discriminative model's slack step: the projections' column norms a tree sum, then the
  margins and the multiplier update per partition, the multipliers kept on the workers;
* dev: the projection scores computed per partition; the weight search reads them, with
  the dev list gathered on the driver (its tokens, not its features).

The result is the fitted reranker the in-memory fit on the gathered lists gives, to the
solver's tolerance (sums over partitions round differently).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._partitioned import PartitionedNBest, import_dask, tree_reduce
from ._views import cca_arrays, in_partition, row_chunked

__all__ = ["fit_cca_reranker"]


def _residual_block(part, Y, Yhat, weights, combine, args):
    from ..kernels import aggregate_residuals

    if part.n_sentences == 0:
        return sp.csr_matrix((0, Y.shape[1]), dtype=np.float64)
    return combine(Y, aggregate_residuals(Y, Yhat, weights, part.sent_offsets), *args)


def _column_sums(B) -> np.ndarray:
    return np.asarray(B.sum(axis=0, dtype=np.float64)).ravel()


def _add_pair(a, b):
    return a[0] + b[0], a[1] + b[1]


def _slack_block(part, slack_block, *args):
    if part.n_sentences == 0:
        return np.zeros(0), np.zeros(0)
    return slack_block(part, *args)


def _prefix_block(part, prefix_block, X, Yhat, A, B, means):
    if part.n_total == 0:
        return np.zeros((0, A.shape[1]))
    return prefix_block(part, X, Yhat, A, B, means)


def _losses(part):
    return (np.zeros(0) if part.losses is None else part.losses).astype(np.float64)


class PartitionedTraining:
    """:class:`~sparsecca.rerank._cca_data.TrainingData` over partitions: the same
    computations, each a map over the partitions or a tree sum."""

    def __init__(self, parts: PartitionedNBest, arrays, in_memory):
        dask = import_dask()
        self.parts, self._mem = parts, in_memory
        self.X, self.Y, self.Yhat = dask.persist(arrays.X, arrays.Y, arrays.Yhat)
        self._x = list(self.X.to_delayed().ravel())
        self._y = list(self.Y.to_delayed().ravel())
        self._yhat = list(self.Yhat.to_delayed().ravel())
        self.rows = arrays.n_sentences
        self.n_sentences = int(sum(self.rows))
        self._f = dask.delayed(in_partition, pure=True)

    def _map(self, fn, *per_part, nout=None):
        """``fn(part_i, *[a[i] for a in per_part])`` of every partition (delayed)."""
        dask = import_dask()
        f = dask.delayed(in_partition, pure=True, nout=nout)
        return [f(i, fn, p, *[a[i] for a in per_part])
                for i, p in enumerate(self.parts.partitions)]

    def means(self, center: bool):
        if not center:
            return np.zeros(self.X.shape[1]), np.zeros(self.Y.shape[1])
        dask = import_dask()
        col = dask.delayed(_column_sums, pure=True)
        sx, sy = dask.compute(tree_reduce([col(b) for b in self._x], np.add),
                              tree_reduce([col(b) for b in self._y], np.add))
        return sx / self.n_sentences, sy / self.n_sentences

    def losses(self):
        dask = import_dask()
        return list(dask.persist(*[dask.delayed(_losses, pure=True)(p)
                                   for p in self.parts.partitions]))

    def residual_factor(self, weights, combine, *args):
        n = len(self.rows)
        blocks = self._map(_residual_block, self._y, self._yhat, weights, [combine] * n,
                           [args] * n)
        dtype = np.result_type(self.Y.dtype, np.float64)
        return row_chunked(blocks, self.rows, int(self.Y.shape[1]), dtype, "sparsecca-M")

    def slack_step(self, X, A, B, means, losses, alpha, gamma):
        dask = import_dask()
        mem = self._mem
        shared = dask.delayed((A, B, means), traverse=False)
        sq = dask.delayed(mem.squared_norms, pure=True, nout=2)
        parts = [sq(x, y, shared[0], shared[1], shared[2]) for x, y in zip(self._x, self._y)]
        (sx, sy), = dask.compute(tree_reduce(parts, _add_pair))
        norms = dask.delayed((mem.safe_norms(sx), mem.safe_norms(sy)), traverse=False)
        n = len(self.rows)
        steps = self._map(_slack_block, [mem.slack_block] * n, self._x, self._y, self._yhat,
                          [shared[0]] * n, [shared[1]] * n, [shared[2]] * n, [norms] * n,
                          losses, alpha, [gamma] * n, nout=2)
        persisted = dask.persist(*[s[0] for s in steps], *[s[1] for s in steps])
        xi = np.concatenate(dask.compute(*persisted[:n]))
        return xi, list(persisted[n:])


class PartitionedDev:
    """:class:`~sparsecca.rerank._cca_data.DevData` over partitions: the projection scores
    per partition, the list itself (``nbest``) gathered for the weight search."""

    def __init__(self, parts: PartitionedNBest, nbest, views, in_memory):
        from ._views import _transform

        dask = import_dask()
        self.parts, self.nbest, self._mem = parts, nbest, in_memory
        f = dask.delayed(in_partition, pure=True)
        x = [f(i, _transform, p, views[0], False) for i, p in enumerate(parts.partitions)]
        yh = [f(i, _transform, p, views[1], True) for i, p in enumerate(parts.partitions)]
        persisted = dask.persist(*x, *yh)
        n = parts.n_partitions
        self._x, self._yhat = persisted[:n], persisted[n:]

    def prefix_scores(self, A, B, means):
        dask = import_dask()
        shared = dask.delayed((A, B, means), traverse=False)
        f = dask.delayed(in_partition, pure=True)
        blocks = [f(i, _prefix_block, p, self._mem.prefix_block, self._x[i], self._yhat[i],
                    shared[0], shared[1], shared[2])
                  for i, p in enumerate(self.parts.partitions)]
        return np.concatenate(dask.compute(*blocks), axis=0)


def _has_gold(part) -> bool:
    return part.n_sentences == 0 or part.losses is not None


def _gold_tags(part):
    return part.corpus.tags.items if part.corpus.has_tags else []


def _check_train(parts: PartitionedNBest) -> None:
    from ._views import partition_summaries

    dask = import_dask()
    gold = dask.compute(*parts.map(_has_gold).partitions)
    for i, ok in enumerate(gold):
        if not ok:
            raise ValueError(f"train partition {i} has no gold tags (losses is None); "
                             f"training needs n-best lists decoded from a tagged corpus")
    n = sum(s[0] for s in partition_summaries(parts))
    if n < 2:
        raise ValueError(f"train has {n} sentence{'s' if n != 1 else ''} over its "
                         f"partitions; CCA needs at least 2")


def _dev(reranker, dev, train_tags, grids):
    """The dev list in memory (validated as the in-memory fit does) and its partitions."""
    parts = None
    if isinstance(dev, PartitionedNBest):
        parts = dev.persist()
        dev = parts.gather()
    return reranker._check_dev(dev, train_tags, grids), parts


def fit_cca_reranker(reranker, train: PartitionedNBest, dev, grids):
    """Fit a CCA reranker (``grids`` = its validated tau, lam and k grids) on partitioned
    training lists; ``dev`` None, an NBestList or a PartitionedNBest.  Returns the
    reranker, fitted as the in-memory fit on the gathered lists fits it."""
    from ..data import Vocabulary, union_vocabulary

    train = train.persist()
    _check_train(train)
    dask = import_dask()
    train_tags = union_vocabulary([Vocabulary(t) for t in
                                   dask.compute(*train.map(_gold_tags).partitions)])
    dev_nb, dev_parts = _dev(reranker, dev, train_tags, grids)
    arrays = cca_arrays(train, *reranker._new_views())
    views = (arrays.input_view, arrays.output_view)
    if dev_nb is None:
        dev_data = None
    elif dev_parts is None:
        dev_data = reranker._dev_data(dev_nb, *reranker._views(dev_nb, "dev", views))
    else:
        dev_data = PartitionedDev(dev_parts, dev_nb, views, reranker._dev_data)
    training = PartitionedTraining(train, arrays, reranker._training_data)
    return reranker._fit_data(training, dev_data, views, grids)
