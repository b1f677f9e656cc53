"""Reading CoNLL-U files as a :class:`PartitionedCorpus`: one partition per byte range of a
plain file (cut at sentence boundaries by the library's own reader), one per gzip file."""

from __future__ import annotations

import glob
import os

from .._params import check_int
from ..data import CorpusFormatError, read_conllu
from ._partitioned import PartitionedCorpus, import_dask

__all__ = ["read_conllu_partitions"]

#: the default partition size in bytes of a plain file
PARTITION_SIZE = 1 << 25
_GLOB_CHARS = frozenset("*?[")


def _expand(paths) -> list[str]:
    """The files of a path, a glob pattern or a sequence of them, in order (each pattern's
    matches sorted); a missing file or a pattern that matches nothing is refused here."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    elif not isinstance(paths, (list, tuple)):
        raise TypeError(f"paths must be a path, a glob pattern or a list of them, got "
                        f"{type(paths).__name__}")
    if not paths:
        raise ValueError("paths must name at least one file, got an empty list")
    files: list[str] = []
    for p in paths:
        if not isinstance(p, (str, os.PathLike)):
            raise TypeError(f"paths must hold paths or glob patterns, got "
                            f"{type(p).__name__} {p!r}")
        name = os.fspath(p)
        if _GLOB_CHARS & set(name) and not os.path.exists(name):
            found = sorted(glob.glob(name))
            if not found:
                raise FileNotFoundError(f"paths: the pattern {name!r} matches no file")
            files.extend(found)
        elif name == "-":
            raise ValueError("paths: standard input ('-') cannot be read in partitions")
        elif not os.path.exists(name):
            raise FileNotFoundError(f"paths: no such file: {name!r}")
        else:
            files.append(name)
    return files


def _is_gzip(name: str) -> bool:
    try:
        with open(name, "rb") as fh:
            return fh.read(2) == b"\x1f\x8b"
    except IsADirectoryError:
        raise CorpusFormatError(name, 0, "is a directory, expected a CoNLL-U file") from None


def _read_part(name, tags, byte_range, _version):
    """One partition (``_version``, the file's size and modification time, is in the task's
    key only, so that a changed file is read anew)."""
    return read_conllu(name, tags, byte_range=byte_range)


def read_conllu_partitions(paths, tags: str | None = "upos", *,
                           partition_size: int | str = PARTITION_SIZE) -> PartitionedCorpus:
    r"""Read CoNLL-U files into a :class:`PartitionedCorpus`, lazily, one partition per
    ``partition_size`` bytes of a plain file and one per gzip file.

    Each partition is :func:`sparsecca.data.read_conllu` of a byte range of a file (the
    sentences that begin in it, so a sentence is never cut), run as a Dask task; the same
    parser checks every line, and an error names the file and its line in the whole file.
    The partitions gathered equal the files read whole and concatenated
    (:func:`sparsecca.data.concat_corpora`).

    Parameters
    ----------
    paths : str, path-like, or a list of them
        Files or glob patterns (``*``, ``?``, ``[...]``; a pattern's matches are taken in
        sorted order), read in the order given.  Gzip data (detected by its magic bytes)
        is read whole, one partition per file.
    tags : {'upos', 'xpos'} or None
        The tag column, as in :func:`sparsecca.data.read_conllu`.
    partition_size : int >= 1 or str
        Bytes of a plain file per partition (a string such as ``'64MiB'`` is parsed by
        :func:`dask.utils.parse_bytes`).  A partition in which no sentence begins (one
        sentence longer than ``partition_size``) holds no sentences.

    Returns
    -------
    PartitionedCorpus
        Nothing is read yet; ``compute``, ``persist`` or ``gather`` read it.

    Raises
    ------
    FileNotFoundError
        A file that does not exist, or a pattern that matches none (here, before any task).
    ValueError
        ``tags`` or ``partition_size`` out of range, no paths, or ``'-'`` (standard input).
    CorpusFormatError
        A directory (here), and, when the partitions are computed, what
        :func:`~sparsecca.data.read_conllu` refuses, with the file and line.

    Examples
    --------
    >>> from pathlib import Path
    >>> from sparsecca.data import read_conllu
    >>> from sparsecca.distributed import read_conllu_partitions
    >>> row = "{}\t{}\t_\t{}\t_\t_\t_\t_\t_\t_\n"
    >>> _ = Path("small.conllu").write_text(
    ...     (row.format(1, "Dogs", "NOUN") + row.format(2, "bark", "VERB") + "\n") * 6)
    >>> parts = read_conllu_partitions("small.conllu", partition_size=106)
    >>> parts.n_partitions, [c.n_sentences for c in parts.compute()]
    (3, [2, 2, 2])
    >>> parts.gather() == read_conllu("small.conllu")
    True
    """
    from ..data import TAG_COLUMNS

    if tags is not None and tags not in TAG_COLUMNS:
        raise ValueError(f"tags must be 'upos', 'xpos' or None, got {tags!r}")
    dask = import_dask()
    if isinstance(partition_size, str):
        from dask.utils import parse_bytes

        try:
            size = parse_bytes(partition_size)
        except ValueError:
            raise ValueError(f"partition_size must be an int >= 1 or a size such as '64MiB', "
                             f"got {partition_size!r}") from None
        if size < 1:
            raise ValueError(f"partition_size must be at least 1 byte, got {partition_size!r}")
    else:
        size = check_int("partition_size", partition_size, 1)
    read = dask.delayed(_read_part, pure=True)
    parts = []
    for name in _expand(paths):
        gz = _is_gzip(name)
        st = os.stat(name)
        version = (st.st_size, st.st_mtime_ns)
        if gz:
            parts.append(read(name, tags, None, version))
            continue
        starts = range(0, max(st.st_size, 1), size)
        parts.extend(read(name, tags, (a, a + size), version) for a in starts)
    return PartitionedCorpus(parts)
