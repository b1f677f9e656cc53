"""Block sums over the row chunks of Dask arrays (the ``dask`` extra).

The covariance statistics are sums over rows, so a corpus held as a Dask array -- on disk,
or spread over a cluster -- reduces to them with one task per row block and a pairwise tree
sum: no task holds more than two partial results, and only the d x d (or d1 x d2) sums
travel.  :meth:`GramStats.from_dask` and :meth:`CrossCovariance.from_dask` are the entry
points; this module only schedules what :meth:`GramStats.from_blocks` and
:meth:`CrossCovariance.from_blocks` compute for one block.
"""

from __future__ import annotations

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


def reduce_row_blocks(arrays, names, of_block, add, compute_kwargs):
    """``add``-reduce ``of_block(*blocks, label)`` over the aligned row blocks of ``arrays``.

    Parameters
    ----------
    arrays : list of (n, d_i) dask arrays with the same row chunks
    names : their names, for error messages
    of_block : callable(*blocks, label) -> partial result of one row block
    add : callable(a, b) -> the partial result of both row sets
    compute_kwargs : dict for ``dask.compute``
    """
    dask, da = _import_dask()
    blocks = [_row_blocks(A, name, da) for A, name in zip(arrays, names)]
    for A, name in zip(arrays[1:], names[1:]):
        if A.chunks[0] != arrays[0].chunks[0]:
            raise ValueError(f"{name} must have the same row chunks as {names[0]}, got "
                             f"{A.chunks[0]} and {arrays[0].chunks[0]}")
    if arrays[0].shape[0] == 0:
        raise ValueError(f"{names[0]} must have at least 1 row, got shape {arrays[0].shape}")
    parts, start = [], 0
    for i, (row, c) in enumerate(zip(zip(*blocks), arrays[0].chunks[0])):
        if c:  # an empty chunk (a filtered array) adds nothing
            parts.append(dask.delayed(of_block)(*row, f"row block {i} (rows {start}-"
                                                      f"{start + c - 1})"))
        start += c
    while len(parts) > 1:
        parts = [dask.delayed(add)(parts[j], parts[j + 1]) if j + 1 < len(parts) else parts[j]
                 for j in range(0, len(parts), 2)]
    (total,) = dask.compute(parts[0], **compute_kwargs)
    return total
