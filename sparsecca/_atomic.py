"""Atomic file output: write to a unique temporary file beside the target, then rename.

A write interrupted by SIGINT (KeyboardInterrupt) or SIGTERM removes its temporary file and
leaves the target as it was: while a temporary file exists, SIGTERM raises
:class:`Terminated` (a ``SystemExit`` with status 143) in the main thread instead of killing
the process on the spot.  :func:`check_writable` probes an output's directory before any
work, so that an unwritable one is reported at once and under the user's path.

For the fault-injection tests only: when the environment variable
``SPARSECCA_TEST_WRITE_DELAY`` holds a number of seconds, :func:`atomic_write` sleeps that
long after the data is written and before the rename, so that a test can send a signal while
the temporary file exists.  Nothing else reads it.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_write", "atomic_write_bytes", "check_writable", "Terminated"]

_DELAY_ENV = "SPARSECCA_TEST_WRITE_DELAY"


class Terminated(SystemExit):
    """SIGTERM arrived during an atomic write; exit status 128 + 15."""

    def __init__(self):
        super().__init__(128 + signal.SIGTERM)


def _open_unique(parent: Path, name: str) -> tuple[int, Path]:
    """A new file ``parent/.<name>.<random>.tmp``, opened for writing (fd, path).

    Not ``tempfile.mkstemp``: that creates mode 0600, and the file we rename into place must
    get the permissions a plain ``open(path, 'wb')`` gives (0666 less the umask, or those of
    the file it replaces, see :func:`_keep_mode`), as before.
    ``O_EXCL`` makes the name ours alone: an existing file is never opened, let alone replaced.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    stem = name[:100]  # stay under NAME_MAX with the prefix and random part added
    for _ in range(100):
        tmp = parent / f".{stem}.{os.urandom(6).hex()}.tmp"
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{parent}: could not create a unique temporary file for {name}")


def _open_for(p: Path) -> tuple[int, Path]:
    """:func:`_open_unique` beside ``p``; an OSError names ``p`` and its directory, never the
    temporary file's internal name."""
    try:
        return _open_unique(p.parent, p.name)
    except FileExistsError:
        raise
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise type(exc)(f"{p}: cannot write in directory {p.parent} ({why})") from None


def _keep_mode(target: Path, tmp: Path) -> None:
    """Give ``tmp`` the permission bits of an existing ``target``, as ``open(target, 'wb')``
    would keep them: replacing a private (0600) file must not leave a 0644 one."""
    try:
        mode = os.stat(target).st_mode & 0o777
    except OSError:  # no such file: tmp keeps 0666 less the umask
        return
    if os.stat(tmp).st_mode & 0o777 != mode:
        os.chmod(tmp, mode)


def _check_target(p: Path) -> None:
    if p.is_dir():
        raise IsADirectoryError(f"{p}: is a directory, expected a file name")
    parent = p.parent
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise FileNotFoundError(f"{p}: directory {parent} {what}")


def check_writable(path) -> None:
    """Check, before any work, that :func:`atomic_write` can write ``path``.

    Creates and removes a temporary file in the directory of ``path`` (the test a later
    write depends on: permissions alone miss read-only file systems and immutable
    directories, and do not apply to root).

    Parameters
    ----------
    path : str or path-like
        The output file (it may exist).

    Raises
    ------
    FileNotFoundError, IsADirectoryError
        As :func:`atomic_write`.
    OSError
        The directory cannot receive a new file; the message names ``path``.

    Examples
    --------
    >>> check_writable("out.txt")
    >>> import os
    >>> os.path.exists("out.txt")
    False
    >>> check_writable("no-such-dir/out.txt")
    Traceback (most recent call last):
    ...
    FileNotFoundError: no-such-dir/out.txt: directory no-such-dir does not exist
    """
    p = Path(path)
    _check_target(p)
    fd, tmp = _open_for(p)
    os.close(fd)
    tmp.unlink(missing_ok=True)


@contextmanager
def _sigterm_raises():
    """While the block runs (main thread only), SIGTERM raises :class:`Terminated`, so that
    the ``finally`` clauses on the way out (the removal of a temporary file) run."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        old = signal.getsignal(signal.SIGTERM)
    except (ValueError, OSError):  # pragma: no cover - no signals here
        yield
        return
    if old not in (signal.SIG_DFL, None):
        yield  # the program handles SIGTERM itself: leave it alone
        return

    def handler(signum, frame):
        raise Terminated()

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextmanager
def _signals_held():
    """SIGINT and SIGTERM wait (are delivered after the block) while the block runs."""
    mask = getattr(signal, "pthread_sigmask", None)
    if mask is None:  # pragma: no cover - not POSIX
        yield
        return
    old = mask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        mask(signal.SIG_SETMASK, old)


def _test_delay() -> None:
    value = os.environ.get(_DELAY_ENV)
    if value:
        try:
            time.sleep(float(value))
        except ValueError:
            pass


@contextmanager
def atomic_write(path):
    """Open a binary file object whose content replaces ``path`` only when the block succeeds.

    The data goes to a new, uniquely named file in the same directory (so the final
    :func:`os.replace` is an atomic rename on one file system); on any error, and on
    SIGINT or SIGTERM, the temporary file is removed and ``path`` is left as it was.  A
    replaced ``path`` keeps its permission bits.  Refusing an existing ``path`` is the
    caller's decision (with its own wording) and must happen before this.

    Parameters
    ----------
    path : str or path-like
        The file to (re)place.

    Yields
    ------
    file object
        Open for binary writing.

    Raises
    ------
    FileNotFoundError
        The directory of ``path`` does not exist or is not a directory (the message names
        ``path``).
    IsADirectoryError
        ``path`` is an existing directory.
    OSError
        The directory cannot receive a new file (read-only, immutable): the message names
        ``path``, not the temporary file.
    Terminated
        SIGTERM arrived during the write (main thread): a ``SystemExit`` with status 143.

    Examples
    --------
    >>> with atomic_write("greeting.txt") as fh:
    ...     _ = fh.write(b"hello")
    >>> open("greeting.txt", "rb").read()
    b'hello'
    """
    p = Path(path)
    _check_target(p)
    with _sigterm_raises():
        tmp = None
        try:
            with _signals_held():  # a signal now would leave the new file unnamed
                fd, tmp = _open_for(p)
            with os.fdopen(fd, "wb") as fh:
                _keep_mode(p, tmp)  # before any data is in it
                yield fh
            _test_delay()
            os.replace(tmp, p)
        except BaseException:
            if tmp is not None:
                tmp.unlink(missing_ok=True)
            raise


def atomic_write_bytes(path, data: bytes) -> None:
    """Replace ``path`` by ``data`` atomically (see :func:`atomic_write`).

    Examples
    --------
    >>> atomic_write_bytes("data.bin", b"\\x00\\x01")
    >>> open("data.bin", "rb").read()
    b'\\x00\\x01'
    """
    with atomic_write(path) as fh:
        fh.write(data)
