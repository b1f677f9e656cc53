"""Shared fixtures.

Tests that need the real corpora in ``../shared/data`` take the ``shared_data`` fixture: it
skips with a reason when the directory is absent, and fails when ``CI=true`` (CI always has it,
so a skip there would hide a broken path).

Under pytest-xdist (README's test command runs ``-n 2 --dist loadgroup``) every worker
process, and every child process its tests start, caches the numba kernels in a directory of
its own: numba's cache is not safe for two processes compiling the same function at once
(numba issue 4807: one process's index can name another's data file).  Tests that must not
overlap another test of their kind share an ``xdist_group`` (:data:`XDIST_GROUPS`).
"""

import logging
import os
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _worker_cache_dir(worker, environ=os.environ):
    """``NUMBA_CACHE_DIR`` for xdist worker ``worker``: below the directory numba would use
    (``NUMBA_CACHE_DIR``, else an absolute ``XDG_CACHE_HOME``, else ``~/.cache``), so that it
    persists between runs like the ordinary cache."""
    base = environ.get("NUMBA_CACHE_DIR", "")
    if not base:
        xdg = environ.get("XDG_CACHE_HOME", "")
        base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "sparsecca-pytest-xdist", worker)


# set before anything imports sparsecca (its _config reads the environment once, on import)
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["NUMBA_CACHE_DIR"] = _worker_cache_dir(os.environ["PYTEST_XDIST_WORKER"])


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ../shared/data (skip when absent; fail when CI=true)."""
    if not SHARED_DATA.is_dir():
        msg = f"real corpora not found at {SHARED_DATA} (expected ../shared/data beside the repo)"
        if _in_ci():
            pytest.fail(msg + "; CI=true requires them")
        pytest.skip(msg)
    return SHARED_DATA


#: test modules that run whole scripts, installs or example programs in child processes:
#: every test in them counts as ``slow`` (the fast subset, ``-m "not slow and not
#: shared_data"``, leaves them out)
SLOW_MODULES = {
    "test_benchmark_scripts.py", "test_examples.py", "test_readme.py", "test_install.py",
    "test_mms_table4.py", "test_tagger_peers.py", "test_fuzz.py", "test_faults.py",
}

#: tests that run in one xdist worker, one after the other (``--dist loadgroup``), keyed by
#: the directory or module that holds them: the fault tests time signals against a child's
#: write and tally their outcomes in a module global; each distributed test starts a
#: LocalCluster of two worker processes, and two clusters at once would overload two cores
XDIST_GROUPS = {"test_faults.py": "faults", "distributed": "localcluster",
                "test_dask_solve.py": "localcluster"}


def pytest_collection_modifyitems(config, items):
    """Mark what the fast subset leaves out: a test that takes the ``shared_data`` fixture
    (directly or through another fixture) gets the ``shared_data`` mark, and every test of
    :data:`SLOW_MODULES` the ``slow`` mark; and the ``xdist_group`` of :data:`XDIST_GROUPS`."""
    tests = Path(__file__).resolve().parent
    for item in items:
        if "shared_data" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.shared_data)
        if item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
        parts = item.path.resolve().parts[len(tests.parts):]
        group = next((XDIST_GROUPS[p] for p in parts if p in XDIST_GROUPS), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


# the Dask cluster of the distributed tests (tests/distributed, tests/linalg/test_dask_solve.py):
# one LocalCluster of two single-threaded worker processes for the session, so that every
# test using it runs its tasks in other processes (pickling what they send) as on a real
# cluster.  The client is the scheduler only inside the tests that take ``client``: the others
# keep Dask's default scheduler, whatever ran before them.
@pytest.fixture(scope="session")
def _session_client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        # each worker compiles into a numba cache of its own (numba issue 4807, as above),
        # set before its first task imports sparsecca
        from sparsecca.distributed import own_numba_cache

        client.register_plugin(own_numba_cache(_worker_cache_dir("dask")))
        yield client


@pytest.fixture
def client(_session_client):
    """A ``distributed.Client`` of the session's two-process ``LocalCluster`` (one thread
    each), the current scheduler for this test only."""
    with _session_client.as_current():
        yield _session_client
