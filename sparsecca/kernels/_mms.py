"""Perceptron-based structured learning (PSL) over many small clustered classifiers.

Every training sample belongs to one cluster ``c`` whose candidates are the labels
``cl_tags[cl_indptr[c]:cl_indptr[c + 1]]`` (``C_c`` of them).  A cluster's weights are a
dense block of ``n_features_c x C_c`` values in one flat array: local feature ``r`` and
candidate ``k`` of cluster ``c`` weigh ``w[woff[c] + r * C_c + k]``.  The features of a
sample are a sparse row (CSR) of local feature indices and values.

One PSL step on a sample of cluster ``c`` with gold candidate ``g`` (Ni et al. 2010, Table
1): with ``s_k = w_c[:, k] . x`` for every candidate,
``V = max_{k != g} distance[tag_k, tag_g] + s_k`` and ``k*`` the first candidate reaching it;
if ``s_g < V`` the weights move by ``eta * x`` on column ``g`` and by ``-eta * x`` on column
``k*``.  The average of the weights over a cluster's own steps is kept by the usual trick
(Daume 2006): ``u += n_c * delta`` next to every change, with ``n_c`` the number of the
cluster's samples visited before this one, so that the mean of the weights after each of
the cluster's ``N_c`` samples is ``w - u / N_c``.
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT_SERIAL
from .._params import check_float
from ._checks import check_offsets, int_array, real_array

__all__ = ["cluster_scores", "psl_average", "psl_epoch", "segment_first_max"]


@numba.njit(**JIT_SERIAL)
def _group_by_cluster(order, s_cluster, n_clusters):
    """``order`` regrouped cluster by cluster, each cluster's samples in their order."""
    start = np.zeros(n_clusters + 1, dtype=np.int64)
    for i in range(order.size):
        start[s_cluster[order[i]] + 1] += 1
    for c in range(n_clusters):
        start[c + 1] += start[c]
    out = np.empty(order.size, dtype=np.int64)
    for i in range(order.size):
        c = s_cluster[order[i]]
        out[start[c]] = order[i]
        start[c] += 1
    return out


@numba.njit(**JIT_SERIAL)
def _psl_epoch(order, s_cluster, s_gold, x_indptr, x_local, x_data, cl_indptr, cl_tags, woff,
               distance, eta, w, u, counts, updates, scratch):
    # clusters share no weights: visiting the samples cluster by cluster, each cluster's in
    # the order given, makes the very same steps with one weight block in cache at a time
    grouped = _group_by_cluster(order, s_cluster, cl_indptr.size - 1)
    n_updates = 0
    for i in range(grouped.size):
        s = grouped[i]
        c = s_cluster[s]
        c0 = cl_indptr[c]
        C = cl_indptr[c + 1] - c0
        if C < 2:
            continue
        g = s_gold[s]
        base = woff[c]
        for k in range(C):
            scratch[k] = 0.0
        for q in range(x_indptr[s], x_indptr[s + 1]):
            row = base + x_local[q] * C
            x = x_data[q]
            for k in range(C):
                scratch[k] += x * w[row + k]
        tg = cl_tags[c0 + g]
        best = -np.inf
        star = -1
        for k in range(C):
            if k != g:
                v = distance[cl_tags[c0 + k], tg] + scratch[k]
                if v > best:
                    best = v
                    star = k
        n = counts[c]
        if scratch[g] < best:
            n_updates += 1
            if updates.size:
                updates[c] += 1
            for q in range(x_indptr[s], x_indptr[s + 1]):
                row = base + x_local[q] * C
                d = eta * x_data[q]
                w[row + g] += d
                w[row + star] -= d
                u[row + g] += n * d
                u[row + star] -= n * d
        counts[c] = n + 1
    return n_updates


@numba.njit(**JIT_SERIAL)
def _cluster_scores(tok_cluster, x_indptr, x_ids, x_data, cl_indptr, feat_indptr, feat_ids,
                    woff, w, out):
    o = 0
    for j in range(tok_cluster.size):
        c = tok_cluster[j]
        C = cl_indptr[c + 1] - cl_indptr[c]
        for k in range(C):
            out[o + k] = 0.0
        f0 = feat_indptr[c]
        f1 = feat_indptr[c + 1]
        if f1 > f0:
            for q in range(x_indptr[j], x_indptr[j + 1]):
                f = x_ids[q]
                lo = f0
                hi = f1
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if feat_ids[mid] < f:
                        lo = mid + 1
                    else:
                        hi = mid
                if lo < f1 and feat_ids[lo] == f:
                    row = woff[c] + (lo - f0) * C
                    x = x_data[q]
                    for k in range(C):
                        out[o + k] += x * w[row + k]
        o += C


@numba.njit(**JIT_SERIAL)
def _psl_average(w, u, woff, counts, out):
    for c in range(counts.size):
        n = float(max(counts[c], 1))
        for i in range(woff[c], woff[c + 1]):
            out[i] = w[i] - u[i] / n


@numba.njit(**JIT_SERIAL)
def _segment_first_max(offsets, s, out):
    for j in range(offsets.size - 1):
        best = -np.inf
        at = offsets[j]
        for q in range(offsets[j], offsets[j + 1]):
            if s[q] > best:
                best = s[q]
                at = q
        out[j] = at


def segment_first_max(offsets, s):
    """Position of the first largest value of every segment ``s[offsets[j]:offsets[j + 1]]``.

    Parameters
    ----------
    offsets : int array, shape (n_segments + 1,)
        Non-decreasing segment boundaries, from 0 to ``s.size``.
    s : float array, shape (n,)
        The values.

    Returns
    -------
    int64 array, shape (n_segments,)
        Positions into ``s`` (``offsets[j]`` for an empty segment or one of NaNs only).

    Examples
    --------
    >>> from sparsecca.kernels import segment_first_max
    >>> segment_first_max([0, 3, 3, 5], [0.1, 0.7, 0.7, 2.0, -1.0]).tolist()
    [1, 3, 3]
    """
    offsets = int_array("offsets", offsets)
    s = real_array("s", s)
    check_offsets("offsets", offsets, s.size, "s.size")
    out = np.empty(offsets.size - 1, dtype=np.int64)
    _segment_first_max(offsets, s, out)
    return out


def _check_clusters(cl_indptr, cl_tags, woff, w, n_labels=None):
    cl_indptr = int_array("cl_indptr", cl_indptr)
    cl_tags = int_array("cl_tags", cl_tags)
    check_offsets("cl_indptr", cl_indptr, cl_tags.size, "cl_tags.size")
    n_clusters = cl_indptr.size - 1
    woff = int_array("woff", woff)
    if woff.shape != (n_clusters + 1,):
        raise ValueError(f"woff must have shape ({n_clusters + 1},), got {woff.shape}")
    w = np.asarray(w)
    if w.dtype != np.float64 or w.ndim != 1 or not w.flags.c_contiguous:
        raise TypeError("w must be a contiguous 1-d float64 array")
    check_offsets("woff", woff, w.size, "w.size")
    if n_labels is not None and cl_tags.size and (cl_tags.min() < 0
                                                  or cl_tags.max() >= n_labels):
        raise ValueError(f"cl_tags must lie in [0, {n_labels}), got values in "
                         f"[{cl_tags.min()}, {cl_tags.max()}]")
    return cl_indptr, cl_tags, woff, w


def _check_state(eta, w, u, counts, updates, n_clusters):
    """The learning rate and the in-place arrays of :func:`psl_epoch`, validated."""
    eta = check_float("eta", eta, 0.0, strict=True)
    u = np.asarray(u)
    if u.dtype != np.float64 or u.shape != w.shape or not u.flags.c_contiguous:
        raise TypeError(f"u must be a contiguous float64 array of shape {w.shape}")
    counts = np.asarray(counts)
    if counts.dtype != np.int64 or counts.shape != (n_clusters,):
        raise TypeError(f"counts must be an int64 array of shape ({n_clusters},)")
    if updates is not None and (not isinstance(updates, np.ndarray)
                                or updates.dtype != np.int64
                                or updates.shape != (n_clusters,)):
        raise TypeError(f"updates must be an int64 array of shape ({n_clusters},)")
    return eta, u, counts


def psl_epoch(order, s_cluster, s_gold, x_indptr, x_local, x_data, cl_indptr, cl_tags, woff,
              distance, eta, w, u, counts, *, check=True, updates=None):
    """One pass of perceptron-based structured learning over the samples in ``order``.

    Updates ``w``, ``u`` and ``counts`` in place.

    Parameters
    ----------
    order : int array, shape (n_visits,)
        Sample indices in visiting order (a permutation of the samples, typically).
    s_cluster : int array, shape (n_samples,)
        Cluster of each sample.
    s_gold : int array, shape (n_samples,)
        Gold candidate of each sample, a position ``0 <= g < C_c`` within its cluster.
    x_indptr : int array, shape (n_samples + 1,)
    x_local : int array, shape (nnz,)
        Local feature index of each stored value of a sample (``< n_features_c``).
    x_data : float array, shape (nnz,)
    cl_indptr : int array, shape (n_clusters + 1,)
    cl_tags : int array, shape (n_cand,)
        Candidate labels of every cluster (ids into ``distance``).
    woff : int array, shape (n_clusters + 1,)
        Start of every cluster's weight block in ``w``; the block of cluster ``c`` holds
        ``n_features_c * C_c`` values.
    distance : float array, shape (n_labels, n_labels)
        ``distance[c, g]``: the margin by which candidate label ``c`` must trail gold ``g``.
    eta : float > 0
        Learning rate.
    w, u : float64 arrays, shape (n_weights,)
        Weights and the averaging companion (zeros before the first epoch).
    counts : int64 array, shape (n_clusters,)
        Samples of each cluster visited so far (zeros before the first epoch).
    check : bool, default True
        Validate and convert the arguments.  False trusts them: for the later epochs of a
        training loop whose first call was checked (the same arrays, a new ``order``).
    updates : int64 array, shape (n_clusters,), optional
        Incremented, in place, by the updates made in each cluster.

    Returns
    -------
    int
        Updates made in this pass.

    Notes
    -----
    Clusters share no weights, so the pass visits the samples cluster by cluster, each
    cluster's in their order in ``order``: the steps are those of visiting ``order`` as
    given, with one cluster's weights in cache at a time.

    A cluster with fewer than two candidates is skipped.  The averaged weights after the
    pass are ``w - u / counts[c]`` on the block of cluster ``c``.

    References
    ----------
    Y. Ni, C. Saunders, S. Szedmak and M. Niranjan (2010).  The application of structured
    learning in natural language processing.  Machine Translation 24(2), pp. 71-85.

    Examples
    --------
    One cluster with candidates 0 and 1, two samples with one feature each:

    >>> import numpy as np
    >>> from sparsecca.kernels import psl_epoch
    >>> w, u, counts = np.zeros(4), np.zeros(4), np.zeros(1, dtype=np.int64)
    >>> psl_epoch([0, 1], [0, 0], [0, 1], [0, 1, 2], [0, 1], [1.0, 1.0], [0, 2], [0, 1],
    ...           [0, 4], np.ones((2, 2)), 0.5, w, u, counts)
    2
    >>> w.tolist()
    [0.5, -0.5, -0.5, 0.5]
    """
    if check:
        order = int_array("order", order)
        s_cluster = int_array("s_cluster", s_cluster)
        s_gold = int_array("s_gold", s_gold)
        n = s_cluster.size
        if s_gold.shape != (n,):
            raise ValueError(f"s_gold must have shape ({n},), got {s_gold.shape}")
        if order.size and (order.min() < 0 or order.max() >= n):
            raise ValueError(f"order must lie in [0, {n}), got values in "
                             f"[{order.min()}, {order.max()}]")
        x_indptr = int_array("x_indptr", x_indptr)
        x_local = int_array("x_local", x_local)
        x_data = real_array("x_data", x_data)
        if x_indptr.shape != (n + 1,):
            raise ValueError(f"x_indptr must have shape ({n + 1},), got {x_indptr.shape}")
        check_offsets("x_indptr", x_indptr, x_local.size, "x_local.size")
        if x_data.shape != x_local.shape:
            raise ValueError(f"x_data must have shape {x_local.shape}, got {x_data.shape}")
        distance = real_array("distance", distance, ndim=2)
        L = distance.shape[0]
        if distance.shape != (L, L):
            raise ValueError(f"distance must be square, got shape {distance.shape}")
        cl_indptr, cl_tags, woff, w = _check_clusters(cl_indptr, cl_tags, woff, w, L)
        n_clusters = cl_indptr.size - 1
        if n and (s_cluster.min() < 0 or s_cluster.max() >= n_clusters):
            raise ValueError(f"s_cluster must lie in [0, {n_clusters})")
        C = np.diff(cl_indptr)
        if n and (np.any(s_gold < 0) or np.any(s_gold >= C[s_cluster])):
            raise ValueError("s_gold must be a candidate position within each sample's cluster")
        nf = np.diff(woff) // np.maximum(C, 1)
        if np.any(np.diff(woff) != nf * C):
            raise ValueError("woff must give every cluster a block of n_features * C values")
        if x_local.size:
            rows = np.repeat(np.arange(n), np.diff(x_indptr))
            if np.any(x_local < 0) or np.any(x_local >= nf[s_cluster[rows]]):
                raise ValueError("x_local must index a feature row of the sample's cluster")
        eta, u, counts = _check_state(eta, w, u, counts, updates, n_clusters)
    else:
        eta = float(eta)
        C = np.diff(cl_indptr)
    scratch = np.zeros(max(1, int(C.max()) if C.size else 1))
    return int(_psl_epoch(order, s_cluster, s_gold, x_indptr, x_local, x_data, cl_indptr,
                          cl_tags, woff, distance, eta, w, u, counts,
                          np.zeros(0, np.int64) if updates is None else updates, scratch))


def psl_average(w, u, woff, counts):
    """The averaged weights of :func:`psl_epoch`: ``w - u / counts[c]`` in each cluster block.

    The PSL loop keeps, beside the current weights ``w``, the step-weighted sum ``u`` of its
    updates (the lazy-averaging trick), so the average over a cluster's ``counts[c]`` steps is
    one subtraction per block.

    Parameters
    ----------
    w : float64 array, shape (n_weights,)
        Current weights, cluster blocks laid out by ``woff``.
    u : float64 array, shape (n_weights,)
        Step-weighted sum of the updates, same layout.
    woff : int array, shape (n_clusters + 1,)
        Offsets of the cluster blocks in ``w`` and ``u``.
    counts : int array, shape (n_clusters,)
        Steps taken in each cluster (a cluster never visited keeps ``w``).

    Returns
    -------
    float64 array, shape (n_weights,)
        A new array.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsecca.kernels import psl_average
    >>> w = np.array([1.0, 2.0, 3.0])
    >>> u = np.array([2.0, 2.0, 3.0])
    >>> psl_average(w, u, np.array([0, 2, 3]), np.array([4, 0])).tolist()
    [0.5, 1.5, 0.0]
    """
    w = real_array("w", w)
    u = real_array("u", u)
    woff = int_array("woff", woff)
    counts = int_array("counts", counts)
    if u.shape != w.shape:
        raise ValueError(f"u must have shape {w.shape}, got {u.shape}")
    if woff.shape != (counts.size + 1,):
        raise ValueError(f"woff must have shape ({counts.size + 1},), got {woff.shape}")
    check_offsets("woff", woff, w.size, "w.size")
    out = np.empty_like(w)
    _psl_average(w, u, woff, counts, out)
    return out


def cluster_scores(tok_cluster, x_indptr, x_ids, x_data, cl_indptr, feat_indptr, feat_ids,
                   woff, w):
    """Score of every candidate of every token under its cluster's weights.

    Parameters
    ----------
    tok_cluster : int array, shape (n_tokens,)
        Cluster of each token.
    x_indptr : int array, shape (n_tokens + 1,)
    x_ids : int array, shape (nnz,)
        Global feature ids of each token's features; ids a cluster does not hold weigh 0.
    x_data : float array, shape (nnz,)
    cl_indptr : int array, shape (n_clusters + 1,)
        Candidates per cluster (CSR offsets).
    feat_indptr : int array, shape (n_clusters + 1,)
    feat_ids : int array, shape (n_features_total,)
        The global ids of every cluster's feature rows, increasing within a cluster.
    woff : int array, shape (n_clusters + 1,)
    w : float64 array, shape (n_weights,)
        Blocks as in :func:`psl_epoch`.

    Returns
    -------
    scores : float64 array, shape (sum of C_c over the tokens,)
        Token ``j``'s candidates in its cluster's order, tokens one after another.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsecca.kernels import cluster_scores
    >>> cluster_scores([0], [0, 2], [3, 7], [0.6, 0.8], [0, 2], [0, 1], [7], [0, 2],
    ...                np.array([1.0, -1.0])).tolist()
    [0.8, -0.8]
    """
    tok_cluster = int_array("tok_cluster", tok_cluster)
    x_indptr = int_array("x_indptr", x_indptr)
    x_ids = int_array("x_ids", x_ids)
    x_data = real_array("x_data", x_data)
    if x_indptr.shape != (tok_cluster.size + 1,):
        raise ValueError(f"x_indptr must have shape ({tok_cluster.size + 1},), got "
                         f"{x_indptr.shape}")
    check_offsets("x_indptr", x_indptr, x_ids.size, "x_ids.size")
    if x_data.shape != x_ids.shape:
        raise ValueError(f"x_data must have shape {x_ids.shape}, got {x_data.shape}")
    cl_indptr = int_array("cl_indptr", cl_indptr)
    n_clusters = cl_indptr.size - 1
    cl_indptr, _, woff, w = _check_clusters(cl_indptr, np.zeros(cl_indptr[-1], np.int64),
                                            woff, w)
    feat_indptr = int_array("feat_indptr", feat_indptr)
    feat_ids = int_array("feat_ids", feat_ids)
    if feat_indptr.shape != (n_clusters + 1,):
        raise ValueError(f"feat_indptr must have shape ({n_clusters + 1},)")
    check_offsets("feat_indptr", feat_indptr, feat_ids.size, "feat_ids.size")
    C = np.diff(cl_indptr)
    if np.any(np.diff(woff) != np.diff(feat_indptr) * C):
        raise ValueError("woff must give every cluster a block of n_features * C values")
    if tok_cluster.size and (tok_cluster.min() < 0 or tok_cluster.max() >= n_clusters):
        raise ValueError(f"tok_cluster must lie in [0, {n_clusters})")
    out = np.empty(int(C[tok_cluster].sum()), dtype=np.float64)
    _cluster_scores(tok_cluster, x_indptr, x_ids, x_data, cl_indptr, feat_indptr, feat_ids,
                    woff, w, out)
    return out
