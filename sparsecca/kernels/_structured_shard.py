"""One shard of a structured perceptron trained by iterative parameter mixing (McDonald, Hall
and Mann 2010): the training arrays of a part of the corpus, and one epoch of the kernel of
:func:`~sparsecca.kernels.structured_perceptron` over them from given weights.

An epoch from the weights ``w0`` visits the shard's ``C`` sentences; ``w_j`` denotes the
weights after its ``j``-th visit.  Besides the final weights ``w_C`` it returns the sum
``w_1 + .. + w_C``: a change ``delta`` made at visit ``c`` (0-based) is in ``w_{c+1}..w_C``,
so the sum is ``C w_C - sum c delta``, which the kernel's running ``wc`` holds (the
bookkeeping of its averaged weights, here counted from the epoch's first visit).  The
caller averages these sums over epochs and shards.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._structured import _checked, _epoch, _scratch, check_orders

__all__ = ["PerceptronShard", "ShardEpoch"]


class ShardEpoch(NamedTuple):
    """What one epoch of a shard gives (weights as in the kernel: emission pairs, the
    flattened ``S x S`` bigram table, the weighted trigrams)."""

    emit: np.ndarray        #: final emission weights
    bigram: np.ndarray      #: final bigram weights, shape (S * S,)
    trigram: np.ndarray     #: final trigram weights
    emit_sum: np.ndarray    #: sum of the emission weights after each visit
    bigram_sum: np.ndarray
    trigram_sum: np.ndarray
    n_visits: int           #: sentences visited (the number of summed weight vectors)
    n_wrong: int            #: sentences decoded wrongly (one update each)


class PerceptronShard:
    """The training arrays of one shard, compiled once (the arguments are those of
    :func:`~sparsecca.kernels.structured_perceptron` but ``orders``, validated the same
    way); :meth:`epoch` runs one epoch from given weights.

    Examples
    --------
    The sentence of :func:`~sparsecca.kernels.structured_perceptron`'s example, one epoch
    from zero weights: one update (all ties), so the sum of the one weight vector is it.

    >>> import numpy as np, scipy.sparse as sp
    >>> from sparsecca.kernels import PerceptronShard
    >>> shard = PerceptronShard(
    ...     sp.csr_matrix(np.eye(2)), gold_tags=[0, 1], sent_offsets=[0, 2],
    ...     cand_offsets=[0, 2, 4], cand_tags=[0, 1, 0, 1], emit_indptr=[0, 2, 4],
    ...     emit_tags=[0, 1, 0, 1], n_states=4, tri_indptr=np.zeros(17, dtype=int),
    ...     tri_tags=[], bos=2, eos=3)
    >>> out = shard.epoch([0], np.zeros(4), np.zeros(16), np.zeros(0))
    >>> out.n_wrong, bool(np.array_equal(out.emit, out.emit_sum))
    (1, True)
    """

    def __init__(self, X, gold_tags, sent_offsets, cand_offsets, cand_tags, emit_indptr,
                 emit_tags, n_states, tri_indptr, tri_tags, bos, eos, beam=0):
        (self.phi, self.gold, self.sent_offsets, self.cand_offsets, self.cand_tags,
         self.emit_tags, self.n_states, self.tri_indptr, self.tri_tags, self.bos, self.eos,
         self.beam) = _checked(X, gold_tags, sent_offsets, cand_offsets, cand_tags,
                               emit_indptr, emit_tags, n_states, tri_indptr, tri_tags, bos,
                               eos, beam)

    @property
    def n_sentences(self) -> int:
        return self.sent_offsets.size - 1

    def _weights(self, name, w, size):
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (size,):
            raise ValueError(f"{name} must have shape ({size},), got {w.shape}")
        return w.copy()  # the caller's weights (maybe shared by other tasks) stay as they are

    def epoch(self, order, emit, bigram, trigram) -> ShardEpoch:
        """One epoch over the sentences ``order`` (local indices) from the given weights.

        Parameters
        ----------
        order : int array, shape (n_visits,)
        emit : float array, shape (n_pairs,)
        bigram : float array, shape (S * S,) or (S, S)
        trigram : float array, shape (n_trigrams,)

        Returns
        -------
        ShardEpoch
            The final weights, their sums and the counts of the epoch.
        """
        order = check_orders(order, self.n_sentences, ndim=1)
        S = self.n_states
        emit = [self._weights("emit", emit, self.emit_tags.size),
                np.zeros(self.emit_tags.size)]
        big = [self._weights("bigram", np.ravel(bigram), S * S), np.zeros(S * S)]
        tri = [self._weights("trigram", trigram, self.tri_tags.size),
               np.zeros(self.tri_tags.size)]
        work = _scratch(self.sent_offsets, self.cand_offsets, self.cand_tags, S,
                        self.tri_indptr, self.tri_tags, tri[0], self.beam)
        c, n_wrong = _epoch(order, self.sent_offsets, self.gold, self.cand_offsets,
                            self.cand_tags, *self.phi, self.emit_tags, *emit, S, *big,
                            np.zeros(S * S), self.tri_indptr, self.tri_tags, *tri, self.bos,
                            self.eos, 0, *work)
        return ShardEpoch(emit[0], big[0], tri[0], emit[0] * c - emit[1],
                          big[0] * c - big[1], tri[0] * c - tri[1], int(c), int(n_wrong))
