"""Atomic file output: write to a unique temporary file beside the target, then rename."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_write", "atomic_write_bytes"]


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


def _keep_mode(target: Path, tmp: Path) -> None:
    """Give ``tmp`` the permission bits of an existing ``target``, as ``open(target, 'wb')``
    would keep them: replacing a private (0600) file must not leave a 0644 one."""
    try:
        mode = os.stat(target).st_mode & 0o777
    except OSError:  # no such file: tmp keeps 0666 less the umask
        return
    if os.stat(tmp).st_mode & 0o777 != mode:
        os.chmod(tmp, mode)


@contextmanager
def atomic_write(path):
    """Open a binary file object whose content replaces ``path`` only when the block succeeds.

    The data goes to a new, uniquely named file in the same directory (so the final
    :func:`os.replace` is an atomic rename on one file system); on any error the temporary
    file is removed and ``path`` is left as it was.  A replaced ``path`` keeps its permission
    bits.  Refusing an existing ``path`` is the caller's decision (with its own wording) and
    must happen before this.

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
    """
    p = Path(path)
    parent = p.parent
    if p.is_dir():
        raise IsADirectoryError(f"{p}: is a directory, expected a file name")
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise FileNotFoundError(f"{p}: directory {parent} {what}")
    fd, tmp = _open_unique(parent, p.name)
    try:
        with os.fdopen(fd, "wb") as fh:
            _keep_mode(p, tmp)  # before any data is in it
            yield fh
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path, data: bytes) -> None:
    """Replace ``path`` by ``data`` atomically (see :func:`atomic_write`)."""
    with atomic_write(path) as fh:
        fh.write(data)
