"""Block sums over the row chunks of Dask arrays (the ``dask`` extra).

The covariance statistics are sums over rows, so a corpus held as a Dask array -- on disk,
or spread over a cluster -- reduces to them with one task per row block and a pairwise tree
sum: no task holds more than two partial results, and only the d x d (or d1 x d2) sums
travel.  :meth:`GramStats.from_dask` and :meth:`CrossCovariance.from_dask` are the entry
points; this module only schedules what :meth:`GramStats.from_blocks` and
:meth:`CrossCovariance.from_blocks` compute for one block.
"""

from __future__ import annotations

import math
import operator

__all__ = ["reduce_row_blocks"]


def _import_dask():
    try:
        import dask
        import dask.array as da
    except ImportError:  # pragma: no cover - the test extra installs dask
        raise ImportError("the Dask entry points need dask: pip install \".[dask]\" (from the "
                          "sparsecca checkout)") from None
    return dask, da


def _row_blocks(A, name, da):
    if not isinstance(A, da.Array):
        raise TypeError(f"{name} must be a dask.array.Array, got {type(A).__name__}")
    if A.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {A.shape}")
    if A.numblocks[1] != 1:
        raise ValueError(f"{name} must be chunked by rows only (one chunk across its "
                         f"{A.shape[1]} columns), got column chunks {A.chunks[1]}; "
                         f"rechunk with {name}.rechunk({{1: -1}})")
    return list(A.to_delayed().ravel())


def _same_chunks(a, b):
    """Row chunks that can match: the same count, and equal sizes where both are known (an
    unknown size, NaN after boolean indexing, is compared once the blocks are computed)."""
    return len(a) == len(b) and all(x == y or math.isnan(x) or math.isnan(y)
                                    for x, y in zip(a, b))


def _label(i, start, c):
    if math.isnan(start) or math.isnan(c):  # NaN rows, never 'rows nan-nan'
        return f"row block {i} (rows unknown until computed)"
    return f"row block {i} (rows {start}-{start + c - 1})"


def _of_unknown_size(of_block, names, label, *row):
    """``of_block`` for a row block of unknown size: None (it adds nothing) when it computes
    to 0 rows, as a known-size empty chunk is skipped before any task runs."""
    rows = [getattr(b, "shape", (None,))[0] for b in row]
    if all(r == 0 for r in rows):
        return None
    if 0 in rows:  # (other row-count mismatches are of_block's to refuse)
        raise ValueError(f"{' and '.join(f'{n} {label}' for n in names)} must have the same "
                         f"number of rows, got {' and '.join(map(str, rows))}")
    return of_block(*row, label)


def _tree_sum(parts, dask, add=None):
    """The pairwise tree sum of the delayed ``parts`` (at least one) under ``add``
    (default ``+``): log2(n) levels, no task holding more than two partial results."""
    add = operator.add if add is None else add
    while len(parts) > 1:
        parts = [dask.delayed(add, pure=True)(parts[j], parts[j + 1]) if j + 1 < len(parts)
                 else parts[j] for j in range(0, len(parts), 2)]
    return parts[0]


def reduce_row_blocks(arrays, names, of_block, add, compute_kwargs):
    """``add``-reduce ``of_block(*blocks, label)`` over the aligned row blocks of ``arrays``.

    Empty row blocks are skipped: those of known size before any task runs, those of unknown
    size (NaN chunks, as boolean indexing leaves them) once computed.

    Parameters
    ----------
    arrays : list of (n, d_i) dask arrays with the same row chunks
    names : their names, for error messages
    of_block : callable(*blocks, label) -> partial result of one row block
    add : callable(a, b) -> the partial result of both row sets
    compute_kwargs : dict for ``dask.compute``

    Raises
    ------
    ValueError
        If the arrays have no row, or every block of unknown size computes to 0 rows and no
        other block has a row.
    """
    dask, da = _import_dask()
    blocks = [_row_blocks(A, name, da) for A, name in zip(arrays, names)]
    for A, name in zip(arrays[1:], names[1:]):
        if not _same_chunks(A.chunks[0], arrays[0].chunks[0]):
            raise ValueError(f"{name} must have the same row chunks as {names[0]}, got "
                             f"{A.chunks[0]} and {arrays[0].chunks[0]}")
    if arrays[0].shape[0] == 0:
        raise ValueError(f"{names[0]} must have at least 1 row, got shape {arrays[0].shape}")
    # a block's size is unknown if any array's is (the others may know theirs)
    sizes = [math.nan if any(math.isnan(x) for x in cs) else cs[0]
             for cs in zip(*(A.chunks[0] for A in arrays))]
    parts, start = [], 0
    for i, (row, c) in enumerate(zip(zip(*blocks), sizes)):
        if math.isnan(c):
            parts.append(dask.delayed(_of_unknown_size)(of_block, names, _label(i, start, c),
                                                        *row))
        elif c:  # an empty chunk (a filtered array) adds nothing
            parts.append(dask.delayed(of_block)(*row, _label(i, start, c)))
        start += c

    def add_parts(a, b):  # None: a block of unknown size that had no row
        return a if b is None else b if a is None else add(a, b)

    (total,) = dask.compute(_tree_sum(parts, dask, add_parts), **compute_kwargs)
    if total is None:
        raise ValueError(f"{names[0]} must have at least 1 row, got none: every row block "
                         f"computed to 0 rows")
    return total
