"""The training objective of :class:`~sparsecca.tagging.MEMMTagger` as a sum over pieces of
the training corpus.

The negative conditional log-likelihood is a sum over tokens, so its value and gradient are
sums of those of any split of the corpus into sentence-contiguous pieces.  :class:`LossTerms`
computes them for one piece (the whole corpus in memory, one partition of a partitioned
corpus); :class:`Objective` adds the L2 penalty, once, to the sum of the pieces' terms and is
what L-BFGS-B minimises.

A piece's terms are in the layout of the whole parameter vector ``theta`` = [emission weights
(CSR by feature, the fitted pattern's order), bigram weights ((T + 1) x T, row-major, row T =
BOS), trigram weights (the fitted trigrams' order)].  A partition's terms keep only the
features its tokens use (``local=True``): its emission table and gradient have a row per
used feature, and its gradient is scattered into the whole vector.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .._sparse import expand_ranges
from ._lattice import _BLOCK_CELLS

__all__ = ["LossTerms", "Objective", "TrainingPiece", "gold_histories", "split_theta"]


def gold_histories(tag_ids, offsets, bos):
    """The gold tags two and one positions back of every token (BOS before a sentence)."""
    n = tag_ids.size
    pos = np.arange(n, dtype=np.int64) - np.repeat(offsets[:-1], np.diff(offsets))
    t1 = np.where(pos >= 1, np.roll(tag_ids, 1), bos).astype(np.int64)
    t2 = np.where(pos >= 2, np.roll(tag_ids, 2), bos).astype(np.int64)
    return t2, t1


def split_theta(theta, sizes, T):
    """The emission, bigram ((T + 1) x T) and trigram parts of ``theta`` (views)."""
    a, b, _ = sizes
    return theta[:a], theta[a:a + b].reshape(T + 1, T), theta[a + b:]


class TrainingPiece(NamedTuple):
    """The training tokens of one partition in the fitted model's ids: the context features
    ``X`` (float64 CSR, the fitted features' columns), the gold tags ``y`` and histories
    ``t2``, ``t1``, and the codes ``feature * n_tags + tag`` of its gold (feature, tag)
    pairs (None when every pair has a weight)."""

    X: sp.csr_matrix
    y: np.ndarray
    t2: np.ndarray
    t1: np.ndarray
    pairs: np.ndarray | None


class LossTerms:
    """Negative conditional log-likelihood of the gold tags of some tokens given their gold
    histories, and its gradient (no penalty).

    Every training history is a gold context ``(t2, t1)``, so the transition part of the
    scores is one dense table over the distinct gold contexts of the tokens, ``H[c] = B[t1]
    + C[t2, t1]``, gathered per token; its gradient is summed per context by a sparse one-hot
    product and then spread back to ``B`` and ``C``.  The token blocks (features, their
    transpose, the one-hot contexts) are built once.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix, float64, shape (n_tokens, n_features)
    y, t2, t1 : int arrays, shape (n_tokens,)
        Gold tags and the gold tags two and one positions back (BOS = ``T``).
    emit_indptr, emit_tags : arrays
        The weighted (feature, tag) pairs of the model, CSR by feature.
    T : int
        Tags.
    tri_indptr, tri_tags : arrays
        The weighted trigrams of the model, CSR by context ``t2 * (T + 2) + t1``.
    local : bool, default False
        Keep only the features the tokens use (a partition of the corpus): the emission
        table has a row per used feature.
    """

    def __init__(self, X, y, t2, t1, emit_indptr, emit_tags, T, tri_indptr, tri_tags,
                 local=False):
        S = T + 2
        self.T = T
        self.sizes = (emit_tags.size, (T + 1) * T, tri_tags.size)
        self.n_params = sum(self.sizes)
        self.emit_index = None  # positions of this piece's pairs in theta's emission part
        if local:
            used = np.unique(X.indices)
            X = sp.csr_matrix((X.data, np.searchsorted(used, X.indices), X.indptr),
                              shape=(X.shape[0], used.size))
            lo = emit_indptr[used]
            cnt = emit_indptr[used + 1] - lo
            self.emit_index = expand_ranges(lo, cnt)
            self.emit_feature = np.repeat(np.arange(used.size), cnt)
            self.emit_tags = emit_tags[self.emit_index]
        else:
            self.emit_feature = np.repeat(np.arange(X.shape[1]), np.diff(emit_indptr))
            self.emit_tags = emit_tags
        self.F = F = X.shape[1]
        self.full = self.emit_tags.size == F * T
        # the distinct gold contexts, and where each trigram of theta sits in H (all of them
        # for the whole corpus: trigrams come from gold contexts)
        codes, ctx = np.unique(t2 * S + t1, return_inverse=True)
        self.ctx_t1 = codes % S
        tri_code = np.repeat(np.arange(S * S), np.diff(tri_indptr))
        pos = np.searchsorted(codes, tri_code)
        found = pos < codes.size
        found[found] = codes[pos[found]] == tri_code[found]
        self.tri_index = None  # positions of the piece's trigrams in theta's trigram part
        if found.all():
            self.tri_ctx, self.tri_tags = pos, tri_tags
        else:
            self.tri_index = np.flatnonzero(found)
            self.tri_ctx, self.tri_tags = pos[found], tri_tags[found]
        n = X.shape[0]
        step = max(1, _BLOCK_CELLS // T)
        self.blocks = []
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            Xb = X[lo:hi]
            onehot = sp.csr_matrix((np.ones(hi - lo), (ctx[lo:hi], np.arange(hi - lo))),
                                   shape=(codes.size, hi - lo))
            self.blocks.append((Xb, Xb.T.tocsr(), ctx[lo:hi], y[lo:hi], onehot))

    def split(self, theta):
        return split_theta(theta, self.sizes, self.T)

    def __call__(self, theta):
        """``(value, gradient)`` at ``theta`` (float64, shape (n_params,))."""
        F, T = self.F, self.T
        emit, big, tri = self.split(theta)
        if self.emit_index is not None:
            emit = emit[self.emit_index]
        if self.full:
            W = emit.reshape(F, T)
        else:
            W = np.zeros((F, T))
            W[self.emit_feature, self.emit_tags] = emit
        H = big[self.ctx_t1]
        H[self.tri_ctx, self.tri_tags] += tri if self.tri_index is None else tri[self.tri_index]
        g_W = np.zeros((F, T))
        g_H = np.zeros_like(H)
        nll = 0.0
        for Xb, XbT, ctx, y, onehot in self.blocks:
            rows = np.arange(y.size)
            M = Xb @ W
            M += H[ctx]
            gold = M[rows, y]
            top = M.max(axis=1)
            M -= top[:, None]
            np.exp(M, out=M)
            z = M.sum(axis=1)
            nll += float(np.sum(top + np.log(z) - gold))
            # M becomes P - Y, the gradient of the loss with respect to the scores
            M /= z[:, None]
            M[rows, y] -= 1.0
            g_W += XbT @ M
            g_H += onehot @ M
        g_emit = g_W.ravel() if self.full else g_W[self.emit_feature, self.emit_tags]
        g_big = np.zeros((T + 1, T))
        np.add.at(g_big, self.ctx_t1, g_H)
        g_tri = g_H[self.tri_ctx, self.tri_tags]
        if self.emit_index is None and self.tri_index is None:
            return nll, np.concatenate([g_emit, g_big.ravel(), g_tri])
        a, b, _ = self.sizes
        grad = np.zeros(self.n_params)
        grad[slice(None, a) if self.emit_index is None else self.emit_index] = g_emit
        grad[a:a + b] = g_big.ravel()
        grad[a + b + (np.arange(g_tri.size) if self.tri_index is None
                      else self.tri_index)] = g_tri
        return nll, grad


class Objective:
    """Penalised negative conditional log-likelihood: ``terms(theta)`` (the summed
    :class:`LossTerms` of the corpus's pieces) plus ``lam / 2 * ||theta||^2``.  Calling it
    returns the value and the gradient (float64), as ``scipy.optimize.minimize(jac=True)``
    expects.

    Parameters
    ----------
    terms : callable
        ``theta -> (value, gradient)`` of the unpenalised loss.
    sizes : tuple of int
        The lengths of theta's emission, bigram and trigram parts.
    T : int
        Tags.
    lam : float
        The penalty.
    """

    def __init__(self, terms, sizes, T, lam):
        self.terms, self.sizes, self.T, self.lam = terms, tuple(sizes), T, lam
        self.n_params = sum(self.sizes)
        self.last_value = np.nan

    def split(self, theta):
        return split_theta(theta, self.sizes, self.T)

    def __call__(self, theta):
        theta = np.asarray(theta, dtype=np.float64)
        nll, grad = self.terms(theta)
        grad = grad + self.lam * theta
        self.last_value = nll + 0.5 * self.lam * float(theta @ theta)
        return self.last_value, grad
