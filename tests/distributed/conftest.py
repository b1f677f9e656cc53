"""The Dask cluster of the distributed tests: one ``distributed.LocalCluster`` of two
single-threaded worker processes for the whole session, with its ``Client`` (the fixture
``client``), so that every test runs its tasks in other processes (pickling what they send)
as on a real cluster.  Tests that need no cluster run on Dask's default scheduler."""

from __future__ import annotations

import logging

import pytest


@pytest.fixture(scope="session")
def client():
    """A ``distributed.Client`` of a two-process ``LocalCluster`` (one thread each), shared
    by the session and shut down at its end."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster) as client:
        yield client
