"""When LOBPCG stops, and when it hands over: :class:`StoppingMonitor`.

The iteration (:mod:`._lobpcg`) reports each step's Ritz values and residual norms to a
monitor, which applies every rule that ends it, in this order:

* the residual/gap test: for the first k Ritz pairs ||r||_T / theta <= sqrt(tol) and
  max(||r||_T^2 / (2 gap theta_k), rise / ``lobpcg_jump_ratio``) <= tol (``certify``:
  checked again with bounds of the exact C_xx^-1 norms, :func:`_exact_norm_bounds`; a
  check whose lower bounds do not fall over ``certify_stall_steps`` steps is futile);
* the ceiling: with a known cap omega_max of every eigenvalue, the k-th Ritz value close
  enough to it (1 - sqrt(theta_k / omega_max) <= tol / 2);
* the hand-over (only when the solve has somewhere to hand over to, ``handover``): LOBPCG
  stalled, with less than 2x progress of the largest relative residual over
  ``lobpcg_stall_window`` steps; or, when the target is the dense factor of C_xx, slow:
  the geometric rate of the last ``lobpcg_handover_window`` steps predicts more than
  ``lobpcg_handover_steps`` further steps (:func:`_predicted_steps`);
* the step limit, ``lobpcg_maxiter`` (the loop asks :attr:`StoppingMonitor.maxiter`).

Which target a hand-over goes to is chosen by the caller (:func:`._reduced._handing_over`).

``converged`` and ``reason`` hold the outcome, in the manner of hmmlearn's
``ConvergenceMonitor``.
"""

from __future__ import annotations

import numpy as np

from ._thresholds import active

__all__ = ["StoppingMonitor"]

class _Stalled(Exception):
    """The iteration hands over (stalled, slow or out of steps) after ``n_cg`` steps;
    ``block`` is LOBPCG's Ritz block then (float64)."""

    def __init__(self, n_cg, block=None):
        self.n_cg = n_cg
        self.block = None if block is None else np.asarray(block, dtype=np.float64)

def _unmet(residual, thresh, error, tol, what="squared residual over the gap"):
    """Both parts of the iterative solvers' stopping test, the failed one(s) marked: with
    clustered correlations the residual can meet its target while the squared residual over
    a tiny gap does not."""
    def part(name, value, target):
        return f"{name} {value:.3g} ({'above' if value > target else 'within'} {target:.2g})"

    return (part("relative residual", residual, thresh) + ", "
            + part(f"error estimate ({what})", error, tol))

def _lobpcg_error_name():
    """What LOBPCG's error estimate is, for its warnings."""
    return (f"squared residual over the gap, at least the last step's rise / "
            f"{active().lobpcg_jump_ratio:g}")


class StoppingMonitor:
    """The stopping rules of one LOBPCG run (see the module docstring).

    Parameters
    ----------
    k : int, the wanted pairs;  tol : float, the accuracy target
    omega_max : float, optional, a cap of every eigenvalue (the ceiling rule)
    handover : {None, 'full', 'dense'}
        Where a hand-over would go: None (nowhere: no hand-over rule), 'full' (the stall
        window) or 'dense', the dense factor of C_xx (the stall window and the rate)
    certify : callable, optional
        ``certify(judge, step)`` -> (lower, upper, steps, verdict) of
        :func:`_exact_norm_bounds` for this step's residuals: the test is then checked in
        the exact norm before it stops
    callback : callable, optional, ``callback(step, residual, error)`` per report

    Attributes
    ----------
    converged : bool
    reason : None or one of 'converged', 'ceiling', 'exhausted', 'stalled', 'slow',
        'futile', 'maxiter'
    residual, error : float, the two stopping quantities at the last report
    certify_steps : int, norm_ratio : float (the checks' CG steps and measured ratio)
    """

    def __init__(self, k, tol, *, omega_max=None, handover=None, certify=None,
                 callback=None):
        t = active()
        self.k, self.tol, self.thresh = k, tol, np.sqrt(tol)
        self.omega_max, self.handover = omega_max, handover
        self.certify, self.callback = certify, callback
        self.maxiter = t.lobpcg_maxiter
        self._jump, self._window = t.lobpcg_jump_ratio, t.lobpcg_stall_window
        self._rate_window, self._rate_steps = t.lobpcg_handover_window, t.lobpcg_handover_steps
        self._futile_steps = t.certify_stall_steps
        self._live_ratio = t.lobpcg_active_ratio
        self.converged, self.reason = False, None
        self.rel, self.error = np.full(k, np.inf), np.inf
        self.history, self._last, self._checks = [], None, []
        self.norm_ratio, self.certify_steps = 1.0, 0

    @property
    def residual(self):
        return float(self.rel[:self.k].max())

    def _stop(self, reason, converged):
        self.reason, self.converged = reason, converged
        return True

    def report(self, step, theta, rn):
        """Take step ``step``'s Ritz values (m,) and residual norms rn (m,) in the
        preconditioner's norm; True when the iteration stops (see ``reason``)."""
        k, tol = self.k, self.tol
        if self.norm_ratio > 1.0:
            rn = rn * np.sqrt(self.norm_ratio)
        self.rel = rn / np.maximum(np.abs(theta), 1e-300)
        # the p buffer pairs absorb a cluster straddling k: the wanted Ritz values are off by
        # about ||r||^2 over the gap to the rest of the spectrum, past the block (cluster
        # form of the Temple bound), estimated by the last Ritz value
        mm = theta.size  # < m when the basis lost dependent directions
        gap = theta[k - 1] - theta[mm - 1] if mm > k else theta[k - 1]
        # relative error of the correlations sqrt(omega): half that of omega
        over_gap = 0.5 / max(float(gap), 1e-300) / max(float(theta[k - 1]), 1e-300)
        self.error = float(rn[:k].max()) ** 2 * over_gap
        floor = 0.0
        if self._last is not None:
            # Ritz values only rise: a rise far above the estimate means the gap is not
            # settled yet
            rise = 0.5 * float(np.max((theta[:k] - self._last)
                                      / np.maximum(theta[:k], 1e-300)))
            floor = rise / self._jump
            self.error = max(self.error, floor)
        self._last = theta[:k].copy()
        if self.callback is not None:
            self.callback(step, self.residual, self.error)
        if self.residual <= self.thresh and self.error <= tol:
            if self.certify is None:
                return self._stop("converged", True)
            if self._certified(step, theta, rn, over_gap, floor):
                return True
        if self.omega_max is not None:
            # the Ritz values are lower bounds of the eigenvalues and omega_max caps them:
            # the correlations are certified once the k-th is close enough to the cap (half
            # of tol: room for the rounding of float32 blocks)
            ceiling = 1.0 - np.sqrt(max(float(theta[k - 1]), 0.0) / self.omega_max)
            if ceiling <= 0.5 * tol:
                self.error = min(self.error, ceiling)
                return self._stop("ceiling", True)
        return self._progress()

    def _certified(self, step, theta, rn, over_gap, floor):
        """The test again in the exact norm (True: stop, converged or futile)."""
        k = self.k
        tk = np.maximum(np.abs(theta[:k]), 1e-300)
        test = _StoppingTest(tk, self.thresh, over_gap, floor, self.tol)
        lower, upper, steps, verdict = self.certify(test.judge)
        self.certify_steps += steps
        model2 = np.maximum(rn[:k] ** 2 / self.norm_ratio, 1e-300)
        self.norm_ratio = max(self.norm_ratio, float(np.max(lower / model2)))
        if verdict:
            self.rel = np.sqrt(upper) / tk
            self.error = test.error(upper)
            return self._stop("converged", True)
        # refuted or undecided: go on with the model's norms scaled by the measured ratio,
        # unless the exact norms do not fall at all while the model's do (this happens
        # on large text views: the lower bounds can stay put over many checks)
        low = test.error(lower)
        earlier = [q for i, q in self._checks if i <= step - self._futile_steps]
        self._checks.append((step, low))
        if earlier and low > 0.5 * min(earlier):
            self.error = low
            return self._stop("futile", False)
        return False

    def _progress(self):
        """The hand-over rule (True: stop, reason 'stalled' or 'slow')."""
        # in the model's norm: a scale raised by a failed exact-norm check is no stall
        self.history.append(self.residual / np.sqrt(self.norm_ratio))
        if self.handover is None:
            return False
        history, w = self.history, self._window
        # the largest residual is not monotone (a Ritz vector entering the top k restarts
        # it), and plateaus of 10-20 steps precede steady progress: stalled means less
        # than 2x in the last w steps (slow but steady progress, 2x per few tens of steps,
        # still beats the block CG fallback)
        if len(history) >= w + 20 and min(history[-w:]) > 0.5 * min(history[:-w]):
            return self._stop("stalled", False)
        # the dense factor resumes from the block in a few steps: hand over as soon as the
        # measured rate still predicts more steps than the rule allows
        if (self.handover == "dense" and len(history) > self._rate_window
                and _predicted_steps(history, self.thresh / np.sqrt(self.norm_ratio),
                                     self._rate_window) > self._rate_steps):
            return self._stop("slow", False)
        return False

    def live(self, theta):
        """The columns that stay in the search block: not converged far beyond the target
        and not null directions of K (theta ~ 0: a cross-covariance of rank < k + p),
        whose residual directions are noise (under certify every column stays: a column
        far past the model's target has not passed the exact norm's).  None left: stop."""
        live = ((self.certify is not None) | (self.rel > self._live_ratio * self.thresh)) & (
            theta > 1e-12 * max(float(theta[0]), 1e-300))
        if not live.any():
            self._stop("exhausted", True)
        return live

    def at_limit(self, step):
        """True (reason 'maxiter') once ``step`` reaches the step limit."""
        if step >= self.maxiter:
            self._stop("maxiter", False)
            return True
        return False

    def why(self, step):
        """The warning of an unconverged run."""
        if self.reason == "futile":
            return (f"LOBPCG stopped after {step} steps: certify's check in the exact "
                    f"C_xx^-1 norm found the error estimate no smaller than {self.error:.3g} "
                    f"(tol = {self.tol:g}) over the last {self._futile_steps} or more steps, "
                    f"while the low-rank model's norm fell; the model preconditions the "
                    f"exact norm too poorly here. Use solver='iterative' or "
                    f"preconditioner='dense' for a certified solve")
        return (f"LOBPCG did not meet its stopping test in {self.maxiter} iterations: "
                f"{_unmet(self.residual, self.thresh, self.error, self.tol, _lobpcg_error_name())}")


class _StoppingTest:
    """LOBPCG's stopping test at one step, on squared residual norms n2 (k,): the relative
    residuals sqrt(n2) / theta against ``thresh`` and the error estimate
    max(max(n2) over_gap, floor) against ``tol``."""

    def __init__(self, theta, thresh, over_gap, floor, tol):
        self.theta, self.thresh, self.over_gap = theta, thresh, over_gap
        self.floor, self.tol = floor, tol

    def error(self, n2):
        """The error estimate of squared norms n2."""
        return max(float(n2.max()) * self.over_gap, self.floor)

    def judge(self, n2, bound):
        """``judge`` of :func:`_exact_norm_bounds`: upper bounds that pass the test certify
        (True), lower bounds that fail it refute (False), anything else leaves the check
        undecided (None)."""
        ok = (float(np.sqrt(n2 / self.theta ** 2).max()) <= self.thresh
              and self.error(n2) <= self.tol)
        if bound == "upper":
            return True if ok else None
        return None if ok else False


def _predicted_steps(history, thresh, window=None):
    """Steps LOBPCG still needs to bring its largest relative residual (``history``, one
    value per step so far) to ``thresh`` at the geometric rate of its best value over the
    last ``window`` steps (inf without progress)."""
    w = active().lobpcg_handover_window if window is None else window
    best = np.minimum.accumulate(np.asarray(history, dtype=np.float64))
    if best[-1] <= thresh:
        return 0.0
    rate = (best[-1] / best[-1 - w]) ** (1.0 / w)
    return np.inf if rate >= 1.0 else float(np.log(best[-1] / thresh) / -np.log(rate))
