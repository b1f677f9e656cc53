"""The MEMM's training on a :class:`PartitionedCorpus`, where the partitions lie.

``MEMMTagger().fit(parts)`` hands the corpus to :func:`memm_objective`, which builds the
training objective without gathering the corpus:

1. per partition, the counts of the tag dictionary (those of the HMM) and of the context
   features, tree-merged; on the driver, the vocabularies, the tag dictionary, the features
   (``min_count`` over the whole corpus) and the gold trigrams from the merged counts;
2. per partition, its training tokens in the model's ids (the features transformed, the
   gold tags and histories), kept on the workers; the gold (feature, tag) pairs of the
   partitions tree-merged into the emission pattern (``support='observed'``);
3. per partition, its loss terms (the in-memory fit's own code: the token blocks, the
   emission table restricted to the partition's features), kept on the workers.

The tagger's L-BFGS-B then runs on the driver as in memory; each evaluation sends the
parameter vector to the workers, evaluates every partition's terms there and tree-sums
their values and gradients; the penalty is added once, on the driver.
"""

from __future__ import annotations

import numpy as np

from ._partitioned import PartitionedCorpus, import_dask, tree_reduce
from ._partitioned import shared as _shared
from ._tagging import count_partitions
from ._views import in_partition

__all__ = ["memm_objective"]


def _piece(part, tagger):
    return tagger._training_piece(part)


def _pairs(piece):
    return piece.pairs


def _terms(piece, tagger):
    return tagger._loss_terms(piece)


def _evaluate(terms, theta):
    return terms(theta)


def _add(a, b):
    return a[0] + b[0], a[1] + b[1]


class PartitionSum:
    """``theta -> (value, gradient)``: the sum over the partitions of their loss terms
    (persisted Dask objects), the sum a tree reduce on the workers."""

    def __init__(self, terms: list):
        self.terms = terms

    def __call__(self, theta):
        dask = import_dask()
        evaluate = dask.delayed(_evaluate, pure=False)
        theta = _shared(np.asarray(theta, dtype=np.float64))
        (value, grad), = dask.compute(tree_reduce([evaluate(t, theta) for t in self.terms],
                                                  _add))
        return value, grad


def memm_objective(parts: PartitionedCorpus, tagger):
    """Fit ``tagger``'s vocabularies, features and weight layout on ``parts`` and return its
    training objective, whose evaluations run on the partitions (see the module notes).

    Raises
    ------
    TagsetMismatchError
        When a partition's tags are mostly ones another partition never uses (another tag
        column); the message names both partitions.
    ValueError, TypeError
        For a partition that is not a tagged corpus (naming the partition), or a corpus
        without tokens.
    """
    dask = import_dask()
    task = dask.delayed(in_partition, pure=True)
    total, _ = count_partitions(parts, tagger)
    tagger._fit_counts(total)
    shared = _shared(tagger)
    pieces = dask.persist(*[task(i, _piece, p, shared)
                            for i, p in enumerate(parts.partitions)])
    if tagger.support == "observed":  # the weighted pairs: those seen in the gold data
        pairs = tree_reduce([dask.delayed(_pairs, pure=True)(p) for p in pieces], np.union1d)
        tagger._set_pairs(pairs.compute())
        shared = _shared(tagger)
    terms = dask.persist(*[dask.delayed(_terms, pure=True)(p, shared) for p in pieces])
    del pieces  # the terms hold the partitions' token blocks
    return tagger._penalised(PartitionSum(list(terms)))

