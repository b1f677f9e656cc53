"""Shared fixtures.

Tests that need the real corpora in ``../shared/data`` take the ``shared_data`` fixture: it
skips with a reason when the directory is absent, and fails when ``CI=true`` (CI always has it,
so a skip there would hide a broken path).
"""

import logging
import os
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


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


def pytest_collection_modifyitems(config, items):
    """Mark what the fast subset leaves out: a test that takes the ``shared_data`` fixture
    (directly or through another fixture) gets the ``shared_data`` mark, and every test of
    :data:`SLOW_MODULES` the ``slow`` mark."""
    for item in items:
        if "shared_data" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.shared_data)
        if item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


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
        yield client


@pytest.fixture
def client(_session_client):
    """A ``distributed.Client`` of the session's two-process ``LocalCluster`` (one thread
    each), the current scheduler for this test only."""
    with _session_client.as_current():
        yield _session_client
