"""Numba compilation flags and the kernels' on-disk cache, in one place.

Every kernel in :mod:`sparsecca.kernels` takes its flags from here so that caching,
fastmath and parallelism are decided once.  ``NUMBA_DISABLE_JIT=1`` in the
environment turns every kernel into plain Python (the tests run each kernel once
that way).

Where the compiled kernels are cached: in a user cache directory, never beside the
sources (an installed package's ``site-packages/sparsecca/kernels/__pycache__`` outlived
``pip uninstall`` and then shadowed the next install as a namespace package):

* ``$NUMBA_CACHE_DIR/sparsecca`` when ``NUMBA_CACHE_DIR`` is set (numba's own variable);
* else ``$XDG_CACHE_HOME/sparsecca/numba`` (an absolute ``XDG_CACHE_HOME`` only, as the XDG
  specification asks);
* else ``~/.cache/sparsecca/numba``.

Under that directory each kernel file's cache lives in ``<version>/<dir>_<sha1 of dir>``
(the package version and the source directory), so that two checkouts or two installed
versions never share files; numba's index also checks each source file's contents.  The
choice only applies to functions defined inside this package: a cache locator placed first
in numba's list claims those and leaves every other library's functions to numba's own
rules (numba's global configuration is not changed).

When that directory cannot be created or written to, the kernels compile without a cache
(in every process, a few seconds each) after one one-line :class:`NumbaCacheWarning`
naming the directory tried.
"""

import hashlib
import os
import tempfile
import warnings

from . import __version__

__all__ = ["JIT_SERIAL", "JIT_PARALLEL", "JIT_DISABLED", "CACHE_DIR", "CACHE_ENABLED",
           "NumbaCacheWarning", "cache_dir", "kernel_cache_path"]

JIT_DISABLED = os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0")

#: this package's directory: the cache locator claims functions defined below it only
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class NumbaCacheWarning(RuntimeWarning):
    """No writable directory for the compiled kernels: they compile in every process."""


def cache_dir(environ=None):
    """The directory holding sparsecca's compiled kernels (absolute; may not exist yet).

    ``$NUMBA_CACHE_DIR/sparsecca`` when ``NUMBA_CACHE_DIR`` is set and not empty; else
    ``$XDG_CACHE_HOME/sparsecca/numba`` when ``XDG_CACHE_HOME`` is an absolute path; else
    ``~/.cache/sparsecca/numba``.  ``None`` when there is no home directory to put it in.

    Parameters
    ----------
    environ : mapping, optional
        The environment to read (default ``os.environ``).
    """
    env = os.environ if environ is None else environ
    numba_dir = env.get("NUMBA_CACHE_DIR", "")
    if numba_dir:
        return os.path.join(os.path.abspath(os.path.expanduser(numba_dir)), "sparsecca")
    xdg = env.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, "sparsecca", "numba")
    home = env.get("HOME") or os.path.expanduser("~")
    if not os.path.isabs(home):
        return None
    return os.path.join(home, ".cache", "sparsecca", "numba")


def kernel_cache_path(py_file, root=None):
    """The cache directory of the kernels defined in ``py_file``: ``<root>/<version>/
    <dir>_<sha1 of dir>`` with ``root`` :data:`CACHE_DIR` by default (the layout of numba's
    own ``NUMBA_CACHE_DIR`` locator, below this package's version)."""
    source_dir = os.path.dirname(os.path.abspath(py_file))
    digest = hashlib.sha1(source_dir.encode()).hexdigest()
    return os.path.join(CACHE_DIR if root is None else root, __version__,
                        f"{os.path.basename(source_dir)}_{digest}")


def _writable(path):
    """``None`` when ``path`` could be created and written to, else the error, in words."""
    if path is None:
        return "no home directory"
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError as err:
        return f"{type(err).__name__}: {err.strerror or err}"
    return None


def _in_package(py_file):
    try:
        real = os.path.realpath(py_file)
        package = os.path.realpath(PACKAGE_DIR)
        return os.path.commonpath([real, package]) == package
    except ValueError:  # another drive (Windows) or a mix of relative and absolute paths
        return False


def _install_locator():
    """Put a locator for this package's functions first in numba's list (once a process)."""
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # older numba: private name
    classes = impl._locator_classes
    if any(getattr(c, "_sparsecca_locator", False) for c in classes):
        return

    class SparseccaCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
        """numba's cache locator for sparsecca's kernels: :func:`kernel_cache_path`."""

        _sparsecca_locator = True

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = kernel_cache_path(py_file)

        def get_cache_path(self):
            return self._cache_path

        @classmethod
        def from_function(cls, py_func, py_file):
            # None leaves the function to numba's next locator: any other library's, and
            # (only reached when the directory vanished since the check below) ours too
            if not (CACHE_ENABLED and _in_package(py_file)):
                return None
            return super().from_function(py_func, py_file)

    classes.insert(0, SparseccaCacheLocator)


CACHE_DIR = cache_dir()

#: whether the kernels are cached on disk: False without JIT, or when CACHE_DIR is not
#: writable (then one NumbaCacheWarning says so)
CACHE_ENABLED = False
if not JIT_DISABLED:
    _problem = _writable(None if CACHE_DIR is None else os.path.join(CACHE_DIR, __version__))
    if _problem is None:
        CACHE_ENABLED = True
        _install_locator()
    else:
        # one physical line: no source line under it (lineno 0), whatever imported us
        warnings.warn_explicit(
            f"cannot write the numba cache to {CACHE_DIR} ({_problem}); the kernels "
            f"compile in every process: set NUMBA_CACHE_DIR to a writable directory to cache "
            f"them", NumbaCacheWarning, "sparsecca", 0, module="sparsecca._config",
            registry=globals().setdefault("__warningregistry__", {}))

#: ``numba.njit`` flags for serial kernels: cached on disk (see above) when a cache directory
#: is writable; no fastmath, so results match the slow references up to summation order
JIT_SERIAL = dict(nogil=True, cache=CACHE_ENABLED, fastmath=False)

#: parallel kernels: numba cannot cache prange kernels reliably across processes
JIT_PARALLEL = dict(nogil=True, parallel=True, cache=False, fastmath=False)
