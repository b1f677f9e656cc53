"""Kernels of the reranking perceptron (Collins 2002; the averaged perceptron over n-best
lists) and the losses along its weight path; the raw-array conventions are those of
:mod:`sparsecca.kernels._boosting`."""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT_SERIAL
from .._params import check_bool, check_float, check_weight_scale
from ._boosting import _check_segments, _csr_arrays, _float_vector, _int_vector
from ._checks import real_array

__all__ = ["PerceptronRerankShard", "perceptron_train", "weight_path_losses"]


@numba.njit(**JIT_SERIAL)
def _perceptron_epoch_kernel(indptr, indices, data, base, sent_offsets, oracle, losses, order,
                             decoder_weight, w, acc, last, t0):
    """One pass of the reranking perceptron, in place on w / acc / last.

    ``t`` counts the examples already seen.  ``acc[k]`` holds the sum of w_k over examples
    1..last[k]; before w_k changes at example t + 1 the missing terms w_k * (t - last[k]) are
    added (the lazy "timestamp" average), so an update costs O(nnz of the two rows).
    Returns (examples seen, number of updates).
    """
    t = t0
    n_updates = 0
    for q in range(order.size):
        i = order[q]
        a, b = sent_offsets[i], sent_offsets[i + 1]
        if b > a:
            best = a
            best_score = -np.inf
            for r in range(a, b):
                s = decoder_weight * base[r]
                for e in range(indptr[r], indptr[r + 1]):
                    s += w[indices[e]] * data[e]
                if s > best_score or r == a:
                    best_score = s
                    best = r
            o = oracle[i]
            if losses[best] > losses[o]:
                n_updates += 1
                for e in range(indptr[o], indptr[o + 1]):
                    k = indices[e]
                    acc[k] += w[k] * (t - last[k])
                    last[k] = t
                    w[k] += data[e]
                for e in range(indptr[best], indptr[best + 1]):
                    k = indices[e]
                    acc[k] += w[k] * (t - last[k])
                    last[k] = t
                    w[k] -= data[e]
        t += 1
    return t, n_updates


def _checked(H, base_scores, sent_offsets, oracle, losses):
    """The validated arrays of :func:`perceptron_train` (``H`` as its CSR arrays) and the
    number of features."""
    indptr, indices, data, (n_cand, n_features) = _csr_arrays("H", H)
    base = _float_vector("base_scores", base_scores, n_cand)
    off = _check_segments(sent_offsets, n_cand)
    loss = _int_vector("losses", losses, n_cand)
    orc = _int_vector("oracle", oracle, off.size - 1)
    nonempty = np.diff(off) > 0
    if np.any((orc[nonempty] < off[:-1][nonempty]) | (orc[nonempty] >= off[1:][nonempty])):
        raise ValueError("oracle[i] must be a candidate of sentence i (a global index)")
    return (indptr, indices, data, base, off, orc, loss), n_features


def _orders(orders, n_sent: int, ndim: int) -> np.ndarray:
    orders = np.asarray(orders)
    what = "a 2-d int array (n_epochs, n)" if ndim == 2 else "a 1-d int array"
    if orders.ndim != ndim or (orders.size and not np.issubdtype(orders.dtype, np.integer)):
        raise ValueError(f"{'orders' if ndim == 2 else 'order'} must be {what}, got "
                         f"{orders.dtype} {orders.shape}")
    orders = np.ascontiguousarray(orders, dtype=np.int64)
    if orders.size and (orders.min() < 0 or orders.max() >= n_sent):
        raise ValueError(f"{'orders' if ndim == 2 else 'order'} must hold sentence indices "
                         f"in [0, {n_sent})")
    return orders


def _decoder_weight(decoder_weight, base) -> float:
    dw = check_float("decoder_weight", decoder_weight, -np.inf, strict=False)
    check_weight_scale("decoder_weight", dw, base, "base_scores", signed=True)
    return dw


def perceptron_train(H, base_scores, sent_offsets, oracle, losses, orders, decoder_weight,
                     averaged=True):
    """Collins' reranking perceptron; the (averaged) weights after every epoch.

    For each sentence i (in ``orders[e]`` during epoch e) the candidate maximising
    ``decoder_weight * base_scores[r] + H[r] @ w`` (ties: the earlier candidate) is chosen;
    when its loss exceeds the oracle's, ``w += H[oracle_i] - H[chosen]``.  The averaged
    weights are the mean of w after every example seen so far (Collins 2002), computed with
    lazy per-feature timestamps.

    Parameters
    ----------
    H : scipy.sparse matrix, shape (n_candidates, n_features)
    base_scores : float array, shape (n_candidates,)
        Decoder scores (their weight stays fixed at ``decoder_weight``).
    sent_offsets : int array, shape (n_sentences + 1,)
    oracle : int array, shape (n_sentences,)
        Global candidate index of each sentence's oracle (ignored for empty sentences).
    losses : int array, shape (n_candidates,)
    orders : int array, shape (n_epochs, n_sentences')
        Sentence visiting order of each epoch (indices in [0, n_sentences)).
    decoder_weight : float
    averaged : bool

    Returns
    -------
    weights : float64 array, shape (n_epochs, n_features)
        Averaged (or final, ``averaged=False``) weights after each epoch.
    n_updates : int64 array, shape (n_epochs,)

    References
    ----------
    M. Collins (2002).  Discriminative training methods for hidden Markov models: theory
    and experiments with perceptron algorithms.  Proceedings of EMNLP 2002, pp. 1-8.

    Examples
    --------
    Two sentences of two candidates.  In sentence 0 the decoder prefers candidate 0 (loss 2)
    over the oracle, candidate 1; sentence 1 is visited first and needs no update:

    >>> import scipy.sparse as sp
    >>> from sparsecca.kernels import perceptron_train
    >>> H = sp.csr_matrix([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
    >>> W, n_updates = perceptron_train(H, base_scores=[0.0, -1.0, 0.0, -1.0],
    ...                                 sent_offsets=[0, 2, 4], oracle=[1, 2],
    ...                                 losses=[2, 0, 0, 1], orders=[[1, 0], [1, 0]],
    ...                                 decoder_weight=1.0)
    >>> W.tolist(), n_updates.tolist()
    ([[-0.5, 0.5], [-0.75, 0.75]], [1, 0])

    The weights were 0 after the first example and (-1, 1) after the three others, hence the
    averages.
    """
    (indptr, indices, data, base, off, orc, loss), n_features = _checked(
        H, base_scores, sent_offsets, oracle, losses)
    orders = _orders(orders, off.size - 1, 2)
    dw = _decoder_weight(decoder_weight, base)
    averaged = check_bool("averaged", averaged)
    w = np.zeros(n_features, dtype=np.float64)
    acc = np.zeros(n_features, dtype=np.float64)
    last = np.zeros(n_features, dtype=np.int64)
    t = 0
    out = np.zeros((orders.shape[0], n_features), dtype=np.float64)
    n_upd = np.zeros(orders.shape[0], dtype=np.int64)
    for e in range(orders.shape[0]):
        t, n_upd[e] = _perceptron_epoch_kernel(indptr, indices, data, base, off, orc, loss,
                                               orders[e], dw, w, acc, last, t)
        if not averaged:
            out[e] = w
        elif t > 0:
            out[e] = (acc + w * (t - last)) / t
    return out, n_upd


class PerceptronRerankShard:
    """A part of an n-best list for the reranking perceptron trained by iterative parameter
    mixing (McDonald, Hall and Mann 2010): the arguments of :func:`perceptron_train` but
    the orders and the decoder weight, validated once; :meth:`epoch` runs one epoch of the
    same kernel from given weights.

    Examples
    --------
    The lists of :func:`perceptron_train`'s example, its first epoch from zero weights:

    >>> import numpy as np, scipy.sparse as sp
    >>> from sparsecca.kernels import PerceptronRerankShard
    >>> H = sp.csr_matrix([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
    >>> shard = PerceptronRerankShard(H, base_scores=[0.0, -1.0, 0.0, -1.0],
    ...                               sent_offsets=[0, 2, 4], oracle=[1, 2],
    ...                               losses=[2, 0, 0, 1])
    >>> w, w_sum, n_visits, n_updates = shard.epoch([1, 0], np.zeros(2), 1.0)
    >>> w.tolist(), w_sum.tolist(), n_visits, n_updates
    ([-1.0, 1.0], [-1.0, 1.0], 2, 1)
    """

    def __init__(self, H, base_scores, sent_offsets, oracle, losses):
        self._arrays, self.n_features = _checked(H, base_scores, sent_offsets, oracle, losses)

    @property
    def n_sentences(self) -> int:
        return self._arrays[4].size - 1

    def epoch(self, order, w, decoder_weight):
        """One epoch over the sentences ``order`` (local indices) from the weights ``w``
        (left unchanged).

        Returns
        -------
        w : float64 array, shape (n_features,)
            The final weights.
        w_sum : float64 array, shape (n_features,)
            The sum of the weights held after each visit.
        n_visits : int
            Sentences visited (an empty one too).
        n_updates : int
        """
        indptr, indices, data, base, off, orc, loss = self._arrays
        order = _orders(order, off.size - 1, 1)
        dw = _decoder_weight(decoder_weight, base)
        w = np.array(w, dtype=np.float64)  # a copy: the caller's weights may be shared
        if w.shape != (self.n_features,):
            raise ValueError(f"w must have shape ({self.n_features},), got {w.shape}")
        acc = np.zeros(self.n_features, dtype=np.float64)
        last = np.zeros(self.n_features, dtype=np.int64)
        t, n_upd = _perceptron_epoch_kernel(indptr, indices, data, base, off, orc, loss, order,
                                            dw, w, acc, last, 0)
        return w, acc + w * (t - last), int(t), int(n_upd)


# -- score-combination weight path (Eq. 13) ---------------------------------------------------

@numba.njit(**JIT_SERIAL)
def _weight_path_losses_kernel(base, p, sent_offsets, losses, weights, out):
    """out[t] = summed loss of each sentence's argmax of base + weights[t] * p."""
    n_sent = sent_offsets.shape[0] - 1
    for t in range(weights.shape[0]):
        w = weights[t]
        total = 0
        for i in range(n_sent):
            lo = sent_offsets[i]
            hi = sent_offsets[i + 1]
            if lo == hi:
                continue
            best = lo
            best_v = base[lo] + w * p[lo]
            for r in range(lo + 1, hi):
                v = base[r] + w * p[r]
                if v > best_v:  # strict: ties keep the earlier candidate
                    best = r
                    best_v = v
            total += losses[best]
        out[t] = total
    return out


def weight_path_losses(base_scores, model_scores, sent_offsets, losses, weights):
    """Total loss of the chosen candidates for each weight w of ``base + w * model``.

    Each sentence picks its highest-scoring candidate (ties: the earlier one, as
    :meth:`NBestList.argmax`); a sentence without candidates contributes nothing (the caller
    adds its tokens).  A base score of -inf (log 0) is never picked unless every candidate
    of its sentence has it, then the first one is, as :meth:`NBestList.argmax` does.

    Parameters
    ----------
    base_scores : float array, shape (n_candidates,)
        Finite or -inf.
    model_scores : float array, shape (n_candidates,)
        Finite.
    sent_offsets : int array, shape (n_sentences + 1,)
    losses : int array, shape (n_candidates,)
    weights : float array, shape (n_weights,)

    Returns
    -------
    int64 array, shape (n_weights,)

    Notes
    -----
    This is the dev-set search of Eq. 13 of Jagarlamudi & Daumé III (2012), the final score
    ``s_ij + w p_ij``; :func:`sparsecca.rerank.tune_weight` turns the losses into
    accuracies and chooses w.

    Examples
    --------
    One sentence of two candidates; the model score favours the better one, candidate 1:

    >>> from sparsecca.kernels import weight_path_losses
    >>> out = weight_path_losses(base_scores=[0.0, -1.0], model_scores=[0.0, 1.0],
    ...                          sent_offsets=[0, 2], losses=[1, 0], weights=[0.0, 1.0, 2.0])
    >>> out.tolist()  # at w = 1 the scores tie and the earlier candidate wins
    [1, 1, 0]
    """
    base = real_array("base_scores", base_scores)
    base = _float_vector("base_scores", base, base.shape[0], allow_neg_inf=True)
    n_cand = base.shape[0]
    p = _float_vector("model_scores", model_scores, n_cand)
    off = _check_segments(sent_offsets, n_cand)
    loss = _int_vector("losses", losses, n_cand)
    w = real_array("weights", weights)
    w = _float_vector("weights", w, w.shape[0])
    out = np.zeros(w.shape[0], dtype=np.int64)
    return _weight_path_losses_kernel(base, p, off, loss, w, out)
