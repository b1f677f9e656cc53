"""What the CCA rerankers' fit reads of its training and dev lists, in memory.

The fit (:class:`~sparsecca.rerank.GenerativeReranker` and the others) asks its data for the
views' column means, the cross-covariance factor M built from the sentence-local residuals,
the discriminative model's slack step, and the dev lists' projection scores.  Here these are
computed on one in-memory list; ``sparsecca.distributed`` gives the same interface over
partitioned lists (the same per-sentence computations, partition by partition), so both
paths run one fit.
"""

from __future__ import annotations

import numpy as np

from ..kernels import aggregate_residuals, slack_update
from ..linalg import centred_projection, column_mean
from ._cca_views import cosine_prefix_scores

__all__ = ["TrainingData", "DevData", "normalised_margins", "scaled_sum"]


def scaled_sum(Y, R, scale):
    """M = scale Y + R (the discriminative model's factor), CSR."""
    return (scale * Y + R).tocsr()


def normalised_margins(PX, PY, QH_raw, nx, ny, cand_sent):
    """Margins of every candidate with the projections normalised to the length constraints
    ||X a|| = ||Y b|| = 1 (Eq. 4): ``nx``, ``ny`` the column norms over all sentences."""
    QY = PY / ny
    QH = QH_raw / ny
    return np.einsum("ij,ij->i", (PX / nx)[cand_sent], QY[cand_sent] - QH)


def safe_norms(sq):
    """Column norms from column sums of squares, a zero norm taken as 1."""
    n = np.sqrt(sq)
    n[n == 0] = 1.0
    return n


class TrainingData:
    """The training list and its views (X, Y of the sentences, Yhat of the candidates)."""

    def __init__(self, train, X, Y, Yhat):
        self.train, self.X, self.Y, self.Yhat = train, X, Y, Yhat
        self.n_sentences = train.n_sentences

    def means(self, center: bool):
        """Training column means of the views (zero without centring)."""
        if not center:
            return np.zeros(self.X.shape[1]), np.zeros(self.Y.shape[1])
        return column_mean(self.X), column_mean(self.Y)

    def losses(self):
        """The candidates' Hamming losses, float64 (a fresh array)."""
        return self.train.losses.astype(np.float64)

    def residual_factor(self, weights, combine, *args):
        """``combine(Y, R, *args)`` with R the ``weights``-weighted mean residuals."""
        R = aggregate_residuals(self.Y, self.Yhat, weights, self.train.sent_offsets)
        return combine(self.Y, R, *args)

    def slack_step(self, X, A, B, means, losses, alpha, gamma):
        """One multiplier update of Algorithm 1: (slacks, new multipliers); ``X`` is the
        engine's input view."""
        sx, sy = self.squared_norms(X, self.Y, A, B, means)
        return self.slack_block(self.train, X, self.Y, self.Yhat, A, B, means,
                                (safe_norms(sx), safe_norms(sy)), losses, alpha, gamma)

    @staticmethod
    def squared_norms(X, Y, A, B, means):
        """Column sums of squares of the centred projections of X and Y (rows of a block)."""
        PX = centred_projection(X, A, means[0]) if X.shape[0] else np.zeros((0, A.shape[1]))
        PY = centred_projection(Y, B, means[1]) if Y.shape[0] else np.zeros((0, B.shape[1]))
        return np.sum(PX * PX, axis=0), np.sum(PY * PY, axis=0)

    safe_norms = staticmethod(safe_norms)

    @staticmethod
    def slack_block(nbest, X, Y, Yhat, A, B, means, norms, losses, alpha, gamma):
        """The slack update of the sentences of ``nbest`` (rows of X, Y; Yhat its
        candidates), ``norms`` the projections' column norms over all sentences."""
        PX = centred_projection(X, A, means[0])
        PY = centred_projection(Y, B, means[1])
        QH = centred_projection(Yhat, B, means[1])
        margins = normalised_margins(PX, PY, QH, norms[0], norms[1], nbest.cand_sentence)
        return slack_update(margins, losses, alpha, nbest.sent_offsets, gamma)


class DevData:
    """The dev list and its views (X of the sentences, Yhat of the candidates)."""

    def __init__(self, dev, Xd, Yhat_d):
        self.nbest, self.X, self.Yhat = dev, Xd, Yhat_d

    def prefix_scores(self, A, B, means):
        """cos(A_k^T x_i, B_k^T yhat_ij) of every dev candidate and prefix k (columns)."""
        return self.prefix_block(self.nbest, self.X, self.Yhat, A, B, means)

    @staticmethod
    def prefix_block(nbest, X, Yhat, A, B, means):
        """:meth:`prefix_scores` of the list ``nbest`` with views X and Yhat."""
        return cosine_prefix_scores(centred_projection(X, A, means[0]),
                                    centred_projection(Yhat, B, means[1]), nbest.cand_sentence)
