"""Regularised inverse (and inverse square root) operators of C = (1 - tau) Xc^T Xc + tau I.

Three methods, one interface: :class:`RegularizedInverse` (in :mod:`._inverse_base`) checks
its arguments and returns the operator of the method, a subclass of it:

``dense`` (:class:`DenseInverse`, :mod:`._dense_inverse`)
    Cholesky of the d x d matrix (the exact reference; d small).  When n < d the dual form is
    used instead: an eigendecomposition of the n x n Gram Xc Xc^T gives the exact full SVD of
    Xc, hence C^-1 for every tau (C^-1 = V diag(1/((1-tau) s^2 + tau)) V^T + (I - V V^T)/tau).
``randomized`` (:class:`LowRankInverse`, :mod:`._lowrank_inverse`)
    From a rank-r factor G ~ V diag(lam) V^T of G = Xc^T Xc (randomized Nystrom, lam ~ s^2):

        tail='identity':  C^-1 ~ V diag(1/((1-tau) lam + tau)) V^T + (I - V V^T) / tau
        tail='diagonal':  C ~ (1-tau) (V diag(lam) V^T + diag(e)) + tau I,  inverted by Woodbury

    where e = diag(G) - diag(V diag(lam) V^T) >= 0 is the exact diagonal of the residual.  Both
    are exact when rank(X) <= r.  The identity tail is Halko et al.'s formula; it treats every
    unresolved direction as s = 0, which for count features (whose spectrum is flat: the
    tail's s^2 are far from 0) overweights the tail by (1-tau) s^2 / tau and can give
    correlation errors of order 1 even at r = d/2.  Keeping the tail's diagonal (the
    features' own frequencies) cuts those errors by orders of magnitude and makes a far
    better conditioned preconditioner (figures in docs/engine.md).
``iterative`` (:class:`IterativeInverse`, :mod:`._lowrank_inverse`)
    Block conjugate gradients on C, preconditioned by the ``randomized`` operator; exact to a
    relative residual tolerance.  Which tail preconditions better depends on the data (see
    ``tail='auto'``): the diagonal one when n > d with roughly independent features, the
    identity one when n < d (exact on the null space of X) or with many nearly collinear
    features (nested suffixes).

The factorisation that does not depend on tau -- the dense Gram, the dual eigendecomposition,
the randomized Nystrom factor -- lives in :class:`GramFactor` (:mod:`._gram_factor`), so a
grid of tau values reuses it; :func:`block_cg` is in :mod:`._block_cg`.  This module gathers
the names.
"""


from ._block_cg import _block_cg, _chol_or_none, block_cg
from ._dense_inverse import (
    DenseInverse,
    _dense_threads,
    _regularized_cholesky,
    _triangular_solve,
    _wide,
)
from ._gram_factor import GramFactor, _nystrom
from ._inverse_base import METHODS, TAILS, RegularizedInverse
from ._lowrank_inverse import IterativeInverse, LowRankInverse

__all__ = ["DenseInverse", "GramFactor", "IterativeInverse", "LowRankInverse",
           "RegularizedInverse", "block_cg"]

# the private helpers other modules and tests reach through this module
_PRIVATE = (METHODS, TAILS, _block_cg, _chol_or_none, _dense_threads, _nystrom,
            _regularized_cholesky, _triangular_solve, _wide)
