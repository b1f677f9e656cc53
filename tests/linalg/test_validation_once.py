"""Validation runs at the public entry points only: a tau walk of CCAEngine.solve passes
_validation.py at solve itself, a fixed number of times per solve, never from the inverses,
covariance operators and products the engine builds and applies below it.

The calls are counted with a profile hook on every code object of _validation.py (the main
thread and the split threads, whose pool is made afresh under the hook for the test).
"""

import os
import sys
import threading
from collections import Counter

import numpy as np
import pytest

import sparsecca.linalg._threads as threads_module
import sparsecca.linalg._validation as validation
from sparsecca.linalg import CCAEngine, SparseCCA

from .conftest import count_problem

TAUS = (0.9, 0.5, 0.2, 0.1, 0.05)
#: the checks CCAEngine.solve runs on its own arguments (tau, M's rows, n_components, the
#: strategy): the calls made from below it are what the test rules out
SOLVE_CHECKS = Counter(check_tau=1, check_same_rows=1, check_n_components=1, check_choice=1)


class _Calls:
    """The _validation functions called (by code name) and their callers outside it."""

    def __init__(self):
        self.calls = Counter()
        self.callers = Counter()
        self._file = validation.__file__

    def __call__(self, frame, event, arg):
        if event != "call" or frame.f_code.co_filename != self._file:
            return
        caller = frame.f_back
        if caller is None or caller.f_code.co_filename == self._file:
            return  # a check's own helpers (comprehensions, inner functions)
        self.calls[frame.f_code.co_name] += 1
        self.callers[(os.path.basename(caller.f_code.co_filename),
                      caller.f_code.co_name)] += 1

    def __enter__(self):
        sys.setprofile(self)
        threading.setprofile(self)
        return self

    def __exit__(self, *exc):
        sys.setprofile(None)
        threading.setprofile(None)


@pytest.fixture
def fresh_split_pool(monkeypatch):
    """A pool of split threads started under the test's profile hook, shut down after."""
    monkeypatch.setattr(threads_module, "_POOL", None)
    monkeypatch.setattr(threads_module, "_POOL_WORKERS", 0)
    yield
    if threads_module._POOL is not None:
        threads_module._POOL.shutdown(wait=True)


@pytest.mark.parametrize("solver", ["dense", "randomized", "iterative"])
@pytest.mark.parametrize("shape", [(300, 40, 30), (120, 400, 60)],
                         ids=["n>d1", "n<d1"])
def test_a_tau_walk_validates_at_solve_only(solver, shape, fresh_split_pool):
    X, Y = count_problem(*shape, seed=1)
    engine = CCAEngine(X, Y, solver=solver, random_state=0)
    per_solve = []
    callers = Counter()
    for tau in TAUS:
        with _Calls() as seen:
            res = engine.solve(Y, tau, 3)
        assert np.all(np.isfinite(res.correlations))
        per_solve.append(seen.calls)
        callers.update(seen.callers)
    # every solve built its own inverses (one per tau): they ran no check
    assert engine._y_inverse(TAUS[-1]).tau == TAUS[-1]
    assert all(calls == SOLVE_CHECKS for calls in per_solve), per_solve
    assert set(callers) == {("_engine.py", "solve")}, callers


def test_a_path_validates_at_its_entry_only(fresh_split_pool):
    """SparseCCA.fit_path checks its arguments and builds its engine (whose constructor
    checks the data), then solves every tau without a check below them."""
    X, Y = count_problem(300, 40, 30, seed=2)
    for solver in ("dense", "randomized", "iterative"):
        model = SparseCCA(n_components=3, solver=solver, random_state=0)
        with _Calls() as seen:
            model.fit_path(X, Y, TAUS)
        below = {c for c in seen.callers if c[0] not in ("_cca.py", "_engine.py")
                 or c == ("_engine.py", "_solve")}
        assert not below, seen.callers
        # the data are checked once (by the engine), each tau once (by fit_path)
        assert seen.calls["check_matrix"] == 2
        assert seen.calls["check_tau"] == len(TAUS)
