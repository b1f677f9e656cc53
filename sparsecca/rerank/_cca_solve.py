"""The engine solves of a CCA reranker's fit, and what the fit tells the user about them.

Every (tau, lam) point of the dev grid is one engine solve (one per Algorithm 1 iteration for
the discriminative model).  The engine warns, per solve, when its own residuals put the
estimated relative error of the correlations above its tolerance; over a grid that is a
warning per point.  :class:`SolveLog` takes those warnings and the estimates, and the fit
issues one :class:`RerankerToleranceWarning` naming the points that missed, the estimates
and the tolerance.
"""

from __future__ import annotations

import re
import warnings

from ..linalg import CentringPrecisionWarning, SVDConvergenceWarning

__all__ = ["RerankerToleranceWarning", "SolveLog"]

#: the engine's messages about a missed tolerance (randomized model, block CG, LOBPCG,
#: Krylov, reduced_cca's self-check)
_MISSED = re.compile(r"relative error|stopping test|error estimate")
#: RuntimeWarnings of the engine that are no statement about the tolerance
_OTHER = (CentringPrecisionWarning, SVDConvergenceWarning)


class RerankerToleranceWarning(RuntimeWarning):
    """A CCA reranker's fit had solves whose own residuals missed the solver's tolerance.

    Issued once per ``fit`` of :class:`GenerativeReranker`, :class:`SoftenedReranker` or
    :class:`DiscriminativeReranker` (instead of the engine's warning at every grid point):
    the message names how many (tau, lam) points missed, the worst estimated relative error
    of the correlations and where, the estimate of the selected point (also in
    ``solver_error_``) and the tolerance.  Under ``solver='randomized'`` the usual cause is
    the rank cap ``max_rank`` of the model of C_xx (the correlations are then lower bounds
    of the exact ones); ``solver='iterative'`` solves to the tolerance.

    Examples
    --------
    A rank-2 model of C_xx misses the randomized solver's tolerance:

    >>> import warnings
    >>> from sparsecca.data import synthetic_corpus, train_test_split
    >>> from sparsecca.rerank import GenerativeReranker, RerankerToleranceWarning
    >>> from sparsecca.tagging import TrigramHMM, jackknife_nbest
    >>> train, dev = train_test_split(synthetic_corpus(160, random_state=0), test_size=40,
    ...                               random_state=0)
    >>> train_nbest = jackknife_nbest(TrigramHMM(), train, k=3, folds=2)
    >>> dev_nbest = TrigramHMM().fit(train).nbest(dev, k=3)
    >>> model = GenerativeReranker(n_components=4, tau=(0.9, 0.99), max_rank=2)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     model = model.fit(train_nbest, dev_nbest)
    >>> [w.category.__name__ for w in caught]
    ['RerankerToleranceWarning']
    >>> "missed the randomized solver's tolerance tol = 0.001" in str(caught[0].message)
    True
    >>> model.solver_error_ > 1e-3
    True
    """


def _is_tolerance(w) -> bool:
    """Whether a caught warning is the engine's statement of a missed tolerance."""
    return (issubclass(w.category, RuntimeWarning) and not issubclass(w.category, _OTHER)
            and _MISSED.search(str(w.message)) is not None)


class SolveLog:
    """The engine solves of one fit: their error estimates, and which missed the tolerance.

    ``solve`` runs one engine solve, holding back the engine's tolerance warnings (any
    other warning is passed on, once per fit and message); ``close_point`` ends a grid
    point; ``warn`` issues the fit's one :class:`RerankerToleranceWarning`, if any point
    missed.
    """

    def __init__(self, engine, owner: str):
        self.engine = engine
        self.owner = owner
        self.n_points = 0
        self.missed = []            # (point label, worst estimate of the point)
        self.said = None            # the engine's first tolerance message
        self._errors = []           # estimates of the current point's solves
        self._flagged = False       # a tolerance warning in the current point
        self._registry = {}         # passed-on warnings: once per fit and message

    def solve(self, M, tau, K):
        """One engine solve: (A, B, omega, error estimate or None)."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = self.engine.solve(M, tau, K)
        for w in caught:
            if _is_tolerance(w):
                self._flagged = True
                self.said = self.said or str(w.message)
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno,
                                       registry=self._registry)
        A, B, omega = res
        err = getattr(res, "error_estimate", None)
        err = None if err is None else float(err)
        if err is not None:
            self._errors.append(err)
        return A, B, omega, err

    def close_point(self, label: str) -> None:
        """End the grid point ``label`` (e.g. "tau=0.9, lam=0.5")."""
        self.n_points += 1
        worst = max(self._errors, default=None)
        tol = float(self.engine.tol)
        if self._flagged or (worst is not None and worst > tol):
            self.missed.append((label, worst))
        self._errors, self._flagged = [], False

    def warn(self, selected: str, error, *, stacklevel: int = 3) -> None:
        """One :class:`RerankerToleranceWarning` for the fit, when a point missed."""
        if not self.missed:
            return
        tol = float(self.engine.tol)
        solver = self.engine.solver_
        rated = [(lab, e) for lab, e in self.missed if e is not None]
        at, top = max(rated, key=lambda r: r[1]) if rated else (selected, None)
        worst = "" if at == selected else f"; the worst estimate, {top:.3g} at {at}"
        chosen = ("no estimate" if error is None
                  else f"an estimated relative error of {error:.3g}")
        advice = (f"the model of C_xx is capped at rank max_rank={self.engine.max_rank}, so "
                  f"the correlations are lower bounds of the exact ones: raise max_rank or "
                  f"use solver='iterative'" if solver == "randomized" else
                  "the correlations are not certified: compare with solver='dense' where "
                  "it fits")
        msg = (f"{self.owner}: {len(self.missed)} of {self.n_points} grid points missed the "
               f"{solver} solver's tolerance tol = {tol:g} by their own residuals{worst}; "
               f"the selected point ({selected}) has {chosen} (solver_error_); {advice}")
        if self.said:
            msg += f". The engine said: {self.said}"
        warnings.warn(msg, RerankerToleranceWarning, stacklevel=stacklevel)
