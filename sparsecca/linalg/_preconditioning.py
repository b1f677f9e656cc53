"""What preconditions the fast solvers' LOBPCG (and block CG): the engine's rule.

:class:`_Preconditioning` is the part of :class:`._engine.CCAEngine` that chooses between
the dense Cholesky factor of C_xx and the low-rank-plus-diagonal model of C_xx^-1 (and the
model's rank and tail), and whether a LOBPCG that hands over under the model gets the dense
factor (``exact`` of :func:`._reduced.reduced_cca`).
"""

from __future__ import annotations

import time

from ._inverse import RegularizedInverse
from ._lobpcg import lobpcg_fits
from ._thresholds import active, with_own_thresholds

__all__ = []


class _Preconditioning:
    """The preconditioner rule of :class:`._engine.CCAEngine` (a mixin: it reads the
    engine's X, Y, caches, ``preconditioner``, ``precond_rank`` and ``center``)."""

    @with_own_thresholds
    def exact_preconditioner_fits(self):
        """Whether LOBPCG (and block CG) is preconditioned by the dense inverse of C_xx
        rather than by the low-rank-plus-diagonal model (always with
        ``preconditioner='dense'``, never with 'low-rank'; with 'auto' by the rule below).

        The model's norm understates ||r||_{C^-1} on text views, where nested suffix
        features are nearly collinear, so LOBPCG's error estimate was optimistic and both
        fast solvers stopped short of ``tol``.  With the exact factor the residuals are
        measured in the exact norm and LOBPCG takes a few steps instead of tens or
        hundreds.  The factor, of size s = min(n, d1), costs s^3 / 3 flops and is formed
        per tau, so it is used while s is no larger than the factor of C_yy that every solve
        pays, or below ``exact_precond_small`` (2048, negligible), and at most
        ``exact_precond_max`` (8192).  Beyond that it costs more than the steps it saves where
        the model preconditions well (independent count features, a tau near 1).  The
        measurements behind the rule are in docs/engine.md.

        Returns
        -------
        bool
        """
        if self.preconditioner != "auto":
            return self.preconditioner == "dense"
        n = self.X.shape[0] - int(self.center)
        paid = min(n, self.Y.shape[1])  # the size of C_yy's dense factor
        t = active()
        return self._exact_size() <= min(t.exact_precond_max, max(paid, t.exact_precond_small))

    @with_own_thresholds
    def exact_rescue_fits(self):
        """Whether a LOBPCG too slow under the low-rank-plus-diagonal model is resumed
        with the dense inverse of C_xx as its preconditioner (``exact`` of
        :func:`reduced_cca`): with ``preconditioner='auto'``, while min(n, d1) <=
        ``exact_precond_max``, whether or not :meth:`exact_preconditioner_fits` gave it the
        factor from the start.  Too slow means stalled, or a rate of progress that predicts
        more than ``lobpcg_handover_steps`` further steps (:mod:`._stopping`); beyond that
        size a stalled LOBPCG falls back to block CG ('full') instead.

        Slow progress is where the model's norm fails: on text views a model-preconditioned
        LOBPCG (or the block CG fallback) can take many times as long as a solve with the
        dense factor (docs/engine.md).

        Returns
        -------
        bool
        """
        if self.preconditioner != "auto":
            return False  # 'dense' has the factor from the start, 'low-rank' never
        return self._exact_size() <= active().exact_precond_max

    def _exact_size(self):
        """The order min(n, d1) of the dense factor of C_xx (d1 after merging duplicate
        columns; n less one when centred)."""
        return min(self.X.shape[0] - int(self.center), self.n_merged_features_)

    def _exact_inverse(self, tau):
        """The dense inverse of C_xx at ``tau`` that preconditions a fast solver's LOBPCG
        (kept for one tau: forming another tau's lets it go)."""
        if tau not in self._xexact:
            self._xexact = {}
            t0 = time.perf_counter()
            inv = RegularizedInverse._trusted(self.xfactor, tau, "dense", name="Cxx")
            self._xexact = {tau: inv}
            size = inv.shape[0] if inv.dense_space == "primal" else self.X.shape[0]
            self._say(f"tau={tau:g} C_xx^-1 preconditioner (dense, {inv.dense_space} "
                      f"{size:,} x {size:,}) in {time.perf_counter() - t0:.1f} s")
        return self._xexact[tau]

    def _precondition_exactly(self, xinv, tau):
        """``xinv`` preconditioned by the dense inverse of C_xx at ``tau`` (a
        :meth:`with_exact` copy) when :meth:`exact_preconditioner_fits`, or when that
        inverse is at hand (formed for a hand-over at this tau); else ``xinv``."""
        if xinv.exact_preconditioner or not (
                self.exact_preconditioner_fits()
                or (tau in self._xexact and self.preconditioner == "auto")):
            return xinv
        return xinv.with_exact(self._exact_inverse(tau))

    def _handover_inverse(self, xinv, tau):
        """``exact`` for :func:`reduced_cca`: a callable forming the dense inverse of C_xx
        when :meth:`exact_rescue_fits` and ``xinv`` is preconditioned by its model, else
        None."""
        if xinv.exact_preconditioner or not self.exact_rescue_fits():
            return None

        def rescue(steps):
            self._say(f"tau={tau:g} LOBPCG too slow after {steps} steps under the "
                      f"low-rank-plus-diagonal preconditioner (stalled, or its rate "
                      f"predicted more than {active().lobpcg_handover_steps} further steps); "
                      f"resuming with the dense factor of C_xx")
            return self._exact_inverse(tau)

        return rescue

    def _preconditioner(self, k, strategy):
        """(rank, tail) of the iterative solver's preconditioner.

        Block CG keeps RegularizedInverse's 'auto' tail and rank 128.  LOBPCG only needs
        the preconditioner to be a good local model, and the diagonal tail is one whatever
        the shape (with n < d1 the identity tail, block CG's choice there, converged far
        more slowly or not at all).  Its rank matters when n < d1 -- text views with
        nested, nearly collinear features, where rank 128 saves steps over 32 -- and not on
        independent count features with n > d1, where the cheaper factor wins
        (docs/engine.md).
        """
        d1, d2 = self.n_merged_features_, self.Y.shape[1]
        lobpcg = strategy == "lobpcg" or (strategy == "auto" and lobpcg_fits(d1, d2, k))
        if not lobpcg:
            rank = active().precond_rank if self.precond_rank is None else self.precond_rank
            return rank, "auto"
        if self.precond_rank is not None:
            return self.precond_rank, "diagonal"
        n = self.X.shape[0]
        return (active().precond_rank if n < d1 else active().precond_rank_lobpcg), "diagonal"


def _preconditioner_used(xinv, res):
    """'dense', 'low-rank' or 'low-rank, then dense' (a stalled LOBPCG resumed with the
    dense factor: ``rescued_after``): what preconditioned the solve's LOBPCG (or block CG),
    None when nothing did (the dense solver, or the randomized model solved as it is)."""
    if xinv.method == "dense" or (xinv.method == "randomized" and res.strategy != "lobpcg"):
        return None
    if "rescued_after" in res.__dict__:
        return "low-rank, then dense"
    return "dense" if xinv.exact_preconditioner else "low-rank"
