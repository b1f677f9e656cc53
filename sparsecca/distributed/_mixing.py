"""What the trainings by iterative parameter mixing share (the perceptron's,
``distributed._perceptron``, and the MMS tagger's, ``distributed._mms``): each partition's
visiting order in an epoch's permutation of the whole corpus, and the tree sum of the
partitions' partial results."""

from __future__ import annotations

import numpy as np

__all__ = ["add_partials", "local_orders", "owners"]


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
    """Each partition's local item indices in the order ``perm`` visits them."""
    o = owner[perm]
    by_part = perm[np.argsort(o, kind="stable")]
    return np.split(local[by_part], np.cumsum(np.bincount(o, minlength=n_parts))[:-1])


def add_partials(a, b):
    """The sum of two partial results: numbers and arrays added, tuples and lists added
    item by item."""
    if isinstance(a, (tuple, list)):
        return type(a)(add_partials(x, y) for x, y in zip(a, b))
    return a + b
