"""Which Dask scheduler runs the pipeline: a ``distributed`` cluster at an address, a local
cluster of worker processes, or (the default) none, in process as without Dask."""

from __future__ import annotations

import contextlib
import os
import re

from .._machine import usable_cores

__all__ = ["own_numba_cache", "parse_scheduler", "scheduler"]

_LOCAL = re.compile(r"local(?::(\d+))?")
_ADDRESS = re.compile(r"(?:tcp|tls|inproc|ucx|ws|wss)://\S+|[\w.\-]+:\d+")


def parse_scheduler(spec):
    """``spec`` as ``(kind, value)``: ``('local', n_workers or None)`` for ``local`` or
    ``local:N``, ``('address', address)`` for ``HOST:PORT`` or ``tcp://HOST:PORT``.

    Raises
    ------
    ValueError
        Anything else, naming the accepted forms and the value received.

    Examples
    --------
    >>> from sparsecca.distributed import parse_scheduler
    >>> parse_scheduler("local:2"), parse_scheduler("tcp://10.0.0.5:8786")
    (('local', 2), ('address', 'tcp://10.0.0.5:8786'))
    """
    if not isinstance(spec, str):
        raise TypeError(f"scheduler must be a string ('local', 'local:N' or a scheduler "
                        f"address HOST:PORT), got {type(spec).__name__}")
    m = _LOCAL.fullmatch(spec)
    if m:
        n = None if m.group(1) is None else int(m.group(1))
        if n is not None and n < 1:
            raise ValueError(f"scheduler 'local:N' needs N >= 1 worker processes, got {spec!r}")
        return "local", n
    if _ADDRESS.fullmatch(spec):
        return "address", spec
    raise ValueError(f"scheduler must be 'local', 'local:N' (N >= 1 worker processes) or the "
                     f"address of a running dask scheduler (HOST:PORT or tcp://HOST:PORT), "
                     f"got {spec!r}")


def own_numba_cache(base=None):
    """A ``distributed`` worker plugin giving every worker a numba cache of its own.

    numba's on-disk cache is not safe for two processes compiling the same function at once
    (numba issue 4807: one process's index can name another's data file), which is what
    the workers of a fresh cluster do on their first tasks.  The plugin sets the worker's
    ``NUMBA_CACHE_DIR`` to ``base/<worker name>`` before its first task imports sparsecca, so
    that each worker compiles into, and later reuses, a directory of its own.
    :func:`scheduler` registers it on the local clusters it starts; register it on a cluster
    of your own with ``client.register_plugin(own_numba_cache())`` before the first task.

    Parameters
    ----------
    base : str, optional
        The directory below which each worker's cache goes (default: ``dask-workers``
        below sparsecca's kernel cache: ``$NUMBA_CACHE_DIR/sparsecca``,
        ``$XDG_CACHE_HOME/sparsecca/numba`` or ``~/.cache/sparsecca/numba``, read on the
        driver; with no home directory either, the workers are left as they are and compile
        without a cache).

    Returns
    -------
    distributed.diagnostics.plugin.WorkerPlugin

    Examples
    --------
    >>> from sparsecca.distributed import own_numba_cache
    >>> own_numba_cache("/tmp/numba-cache").name
    'sparsecca-own-numba-cache'
    """
    from distributed.diagnostics.plugin import WorkerPlugin

    if base is None:
        from .._config import cache_dir

        root = cache_dir()
        # no home directory: the workers compile without a cache, and are left so
        base = None if root is None else os.path.join(root, "dask-workers")
    if base is not None:
        base = os.path.abspath(os.path.expanduser(str(base)))

    # a class local to this function: pickled by value, so that unpickling it on a worker
    # does not import sparsecca (whose kernel cache location is read once, on import)
    class OwnNumbaCache(WorkerPlugin):
        name = "sparsecca-own-numba-cache"

        def setup(self, worker):
            if base is not None:
                os.environ["NUMBA_CACHE_DIR"] = os.path.join(base, str(worker.name))

    return OwnNumbaCache()


@contextlib.contextmanager
def scheduler(spec=None, *, memory_limit="auto"):
    """A context in which Dask computations run on the scheduler ``spec`` names.

    Parameters
    ----------
    spec : str or None
        None: no cluster (the default Dask scheduler, in process).  ``'local'`` or
        ``'local:N'``: a ``distributed.LocalCluster`` of N single-threaded worker processes
        (N = the machine's cores when omitted), each with a numba cache of its own
        (:func:`own_numba_cache`), shut down on exit.  ``'HOST:PORT'`` or
        ``'tcp://HOST:PORT'``: a client of a running scheduler (left running on exit).
    memory_limit : str or int
        Per worker of a local cluster (distributed's syntax, e.g. ``'3GB'``).

    Yields
    ------
    distributed.Client or None

    Examples
    --------
    >>> from sparsecca.distributed import scheduler
    >>> with scheduler(None) as client:
    ...     print(client)
    None
    """
    if spec is None:
        yield None
        return
    kind, value = parse_scheduler(spec)
    try:
        from distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover - the test extra installs distributed
        raise ImportError("a scheduler needs dask.distributed: pip install \".[distributed]\" "
                          "(from the sparsecca checkout)") from None
    if kind == "address":
        with Client(value) as client:
            yield client
        return
    n = value or usable_cores()
    with LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                      memory_limit=memory_limit, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        client.register_plugin(own_numba_cache())
        yield client
