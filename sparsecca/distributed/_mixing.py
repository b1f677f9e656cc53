"""Iterative parameter mixing (McDonald, Hall and Mann 2010), the driver's loop shared by the
learners that train on partitions this way (the tagger's structured perceptron, the
reranking perceptron, the hidden-variable reranker's SGD).

A learner gives one *shard* per partition (its compiled training arrays, persisted where
the partition lives) and a function ``run(shard, order, weights, *args)`` that runs one
epoch of its in-memory kernel over the shard's sentences ``order`` (local indices) from the
weights ``weights`` (a list of arrays, left unchanged) and returns ``(final weights, sums,
visits, count)``: the final weights (a list like ``weights``), the sum of the weight
vectors held after each visit (a list, or None when the learner does not average), the
number of sentences visited and the epoch's number of updates (or what stands for it).

Each epoch, every shard visits its sentences in the order the epoch's permutation of the
whole list gives them (the in-memory fit's draws, so one partition is the in-memory fit);
the shards' results are tree-reduced and the driver keeps ``w = sum_i mu_i w_i / sum_i
mu_i``, with ``mu_i`` 1 for every partition with a sentence (``"uniform"``) or the shard's
count (``"updates"``; an epoch where every ``mu_i`` is 0 keeps ``w``).  The reduce keeps a
running weighted mean, so a single contributing shard's weights are kept as they are.

Averaging (:func:`averaged_epochs`): after epoch ``n`` the mean of every weight vector a
shard held after one of its visits, over the shards and epochs ``1..n`` (Collins' average
along the shards' epochs one after the other).

The MMS tagger (``distributed._mms``) mixes cluster by cluster and keeps each partition's
state between epochs, so it runs its own loop on the same pieces: :func:`owners` and
:func:`local_orders` (each partition's visiting order in an epoch's permutation of the whole
corpus, for items laid out in blocks) and :func:`add_partials` (the tree sum of partial
results).
"""

from __future__ import annotations

import numpy as np

from ._partitioned import import_dask, tree_reduce
from ._partitioned import shared as _shared

__all__ = ["add_partials", "averaged_epochs", "local_orders", "mix_epoch", "owners"]


def owners(counts) -> tuple[np.ndarray, np.ndarray]:
    """``(owner, local)`` of the items of a corpus laid out in blocks: ``counts[i][b]``
    items of partition ``i`` in block ``b``, the corpus holding block 0 of every partition
    (in partition order), then block 1, ...; item ``g`` is item ``local[g]`` of partition
    ``owner[g]``, whose items run block by block.  One block: contiguous partitions."""
    counts = np.asarray(counts, dtype=np.int64).reshape(len(counts), -1)
    starts = np.cumsum(counts, axis=1) - counts  # a block's first local index
    owner, local = [], []
    for b in range(counts.shape[1]):
        for i, n in enumerate(counts[:, b]):
            owner.append(np.full(n, i, dtype=np.int64))
            local.append(starts[i, b] + np.arange(n, dtype=np.int64))
    empty = np.zeros(0, dtype=np.int64)
    return (np.concatenate(owner) if owner else empty,
            np.concatenate(local) if local else empty)


def local_orders(perm, owner, local, n_parts) -> list:
    """Each partition's local item indices in the order ``perm`` visits them (``owner``,
    ``local``: :func:`owners`)."""
    o = owner[perm]
    by_part = perm[np.argsort(o, kind="stable")]
    return np.split(local[by_part], np.cumsum(np.bincount(o, minlength=n_parts))[:-1])


def add_partials(a, b):
    """The sum of two partial results: numbers and arrays added, tuples and lists added
    item by item."""
    if isinstance(a, (tuple, list)):
        return type(a)(add_partials(x, y) for x, y in zip(a, b))
    return a + b


def _step(shard, order, weights, run, by_updates, args):
    """One shard's epoch as a partial result of the mixing: ``(weights, mu, sums, visits,
    count)``."""
    vectors, sums, visits, count = run(shard, order, weights, *args)
    mu = float(count) if by_updates else float(visits > 0)
    return list(vectors), mu, sums, int(visits), count


def _add(a, b):
    """Two partial results merged: the weighted mean of their weights (one of them as it is
    when the other's weight is 0), sums, visits and counts added."""
    (wa, ma, sa, va, ca), (wb, mb, sb, vb, cb) = a, b
    if mb == 0:
        mixed = wa
    elif ma == 0:
        mixed = wb
    else:
        mixed = [(ma * x + mb * y) / (ma + mb) for x, y in zip(wa, wb)]
    sums = None if sa is None else [x + y for x, y in zip(sa, sb)]
    return mixed, ma + mb, sums, va + vb, ca + cb


def mix_epoch(shards, layout, perm, weights, run, by_updates: bool, args=()):
    """One epoch of parameter mixing.

    Parameters
    ----------
    shards : list of delayed (or persisted) shards, one per partition
    layout : (owner, local)
        :func:`owners` of the shards' sentence counts (once for all epochs).
    perm : int array
        The epoch's visiting order of the whole list.
    weights : list of float arrays
        The weights every shard starts from.
    run : callable
        ``run(shard, order, weights, *args) -> (weights, sums, visits, count)`` (module
        notes); a module-level function, sent to the workers.
    by_updates : bool
        Mix by the shards' counts instead of uniformly.
    args : tuple
        More arguments of ``run``.

    Returns
    -------
    (weights, sums, visits, count)
        The mixed weights (``weights`` when no shard has a weight), the shards' sums added
        (None when ``run`` gives none), the sentences visited and the counts added.
    """
    dask = import_dask()
    step = dask.delayed(_step, pure=True)
    shared = _shared(list(weights))
    parts = [step(s, o, shared, run, by_updates, tuple(args))
             for s, o in zip(shards, local_orders(perm, *layout, len(shards)))]
    (mixed, mu, sums, visits, count), = dask.compute(tree_reduce(parts, _add))
    return (mixed if mu > 0 else list(weights)), sums, visits, count


def averaged_epochs(shards, sizes, orders, weights, run, by_updates: bool, args=()):
    """The epochs of parameter mixing with Collins' average, one per row of ``orders``.

    Yields
    ------
    (weights, averaged, count)
        The mixed weights after the epoch, the average of every weight vector a shard held
        after one of its visits so far (the mixed weights while nothing was visited), and
        the epoch's counts added over the shards.
    """
    layout = owners(np.reshape(sizes, (-1, 1)))
    total, seen = None, 0
    for perm in orders:
        weights, sums, visits, count = mix_epoch(shards, layout, perm, weights, run,
                                                 by_updates, args)
        total = sums if total is None else [t + s for t, s in zip(total, sums)]
        seen += visits
        avg = [t / seen for t in total] if seen else [x.copy() for x in weights]
        yield weights, avg, count
