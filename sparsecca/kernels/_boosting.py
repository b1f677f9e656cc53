"""Kernels of the boosting baseline rerankers: exp-loss boosting paths and the accuracy
along them (the averaged perceptron's are in :mod:`sparsecca.kernels._perceptron`).

Everything here works on raw CSR / CSC arrays; the public wrappers validate their arguments
once and convert scipy matrices to the int64 / float64 arrays the kernels are compiled for.

Boosting (Collins & Koo 2005, section 4).  Rows of ``D`` are training pairs p = (i, j) (the
oracle candidate of sentence i against a worse candidate j), columns are features, and
``D[p, k] = h_k(oracle) - h_k(j)`` lies in {-1, 0, +1} (binary features).  With margins
``M_p = m0_p + sum_k alpha_k D[p, k]`` the loss is ``ExpLoss = sum_p exp(-M_p)``.  The kernel
keeps ``w_p = exp(-M_p)`` (up to one global scale), the sums ``W+_k = sum_{D[p,k]=+1} w_p``
and ``W-_k = sum_{D[p,k]=-1} w_p``, and after a step on feature k touches only the pairs where
k fires and the features of those pairs (the sparse update of Collins & Koo, Fig. 4).
"""

from __future__ import annotations

import os

import numba
import numpy as np
import scipy.sparse as sp

from .._config import JIT_SERIAL
from .._params import check_float, check_int
from .._sparse import check_sparse_structure
from ._checks import check_offsets, int_array, real_array

__all__ = ["boosting_path", "path_losses"]

_TINY = 1e-300


# -- boosting --------------------------------------------------------------------------------

#: bytes the kernel allocates per round, for the whole path up front: the feature (int64),
#: the step (float64) and the objective (float64) of each round
_BYTES_PER_ROUND = 24
#: the most rounds anywhere, and where the memory is unknown: 48 GiB of path, and as every
#: round scans all features, 2e12 steps with only a thousand of them
_MAX_ROUNDS = 2**31 - 1


def _physical_memory() -> int | None:
    """Bytes of physical memory, or None where sysconf cannot tell (Windows)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def max_rounds() -> int:
    """The largest ``n_rounds`` whose path arrays fit in physical memory (at most 2**31 - 1).

    Past it numba's allocation fails with a MemoryError that does not name ``n_rounds``
    (10**13 rounds would need 240 TB), or, under Linux's overcommit, succeeds and a path that
    does not stop early is killed once it has filled the memory.

    Returns
    -------
    int
        Physical memory divided by the 24 bytes a round takes, capped at 2**31 - 1 (the cap
        itself where the memory size is unknown).

    Examples
    --------
    >>> from sparsecca.kernels import max_rounds
    >>> 1 <= max_rounds() <= 2**31 - 1
    True
    """
    mem = _physical_memory()
    if mem is None:
        return _MAX_ROUNDS
    return max(1, min(_MAX_ROUNDS, mem // _BYTES_PER_ROUND))


def check_n_rounds(value, low: int) -> int:
    """``value`` as an int in [``low``, :func:`max_rounds`], else an error naming n_rounds
    (one check for :func:`boosting_path` and the boosting rerankers, before any work).

    Parameters
    ----------
    value : int
        The requested number of rounds.
    low : int
        The smallest allowed (0 for a path, 1 for a reranker).

    Returns
    -------
    int

    Raises
    ------
    TypeError
        ``value`` is not an int (a bool included).
    ValueError
        ``value`` is below ``low`` or above :func:`max_rounds`.

    Examples
    --------
    >>> from sparsecca.kernels import check_n_rounds
    >>> check_n_rounds(500, 1)
    500
    >>> check_n_rounds(0, 1)
    Traceback (most recent call last):
    ...
    ValueError: n_rounds must be an int >= 1, got 0
    """
    n = check_int("n_rounds", value, low)
    high = max_rounds()
    if n > high:
        raise ValueError(f"n_rounds must be an int in [{low}, {high}], got {n} (the path is "
                         f"allocated up front, {_BYTES_PER_ROUND} bytes a round, and must fit in "
                         f"memory)")
    return n


@numba.njit(**JIT_SERIAL)
def _l1_step(wp, wm, a, c):
    """Exact minimiser over a' of ``wp e^{-(a'-a)} + wm e^{a'-a} + c |a'|`` (c > 0).

    Returns (a', decrease of that function from a' = a).  Convexity gives one stationary
    point in a' > 0, one in a' < 0, or the kink a' = 0; each is in closed form with
    u = e^{a'-a}: ``wm u^2 + c u - wp = 0`` (a' > 0) and ``wm u^2 - c u - wp = 0`` (a' < 0).
    """
    g0 = wp + wm + c * abs(a)
    # the kink a' = 0 (guard 0 * inf when a weight is zero)
    best_a = 0.0
    best_g = 0.0
    if wp > 0.0:
        best_g += wp * np.exp(a)
    if wm > 0.0:
        best_g += wm * np.exp(-a)
    disc = np.sqrt(c * c + 4.0 * wp * wm)
    if wp > 0.0:
        # rationalised root: no cancellation when c^2 >> 4 wp wm, and wm = 0 gives wp / c
        u = 2.0 * wp / (c + disc)
        a_new = a + np.log(u)
        if a_new > 0.0:
            g = wp / u + wm * u + c * a_new
            if g < best_g:
                best_a, best_g = a_new, g
    if wm > 0.0:
        u = (c + disc) / (2.0 * wm)
        a_new = a + np.log(u)
        if a_new < 0.0:
            g = wp / u + wm * u - c * a_new
            if g < best_g:
                best_a, best_g = a_new, g
    return best_a, g0 - best_g


@numba.njit(**JIT_SERIAL)
def _feature_gain(wp, wm, a, l1c):
    """Selection score of one feature: C&K's (sqrt W+ - sqrt W-)^2, or the exact L1 decrease."""
    if wp < 0.0:
        wp = 0.0
    if wm < 0.0:
        wm = 0.0
    if l1c > 0.0:
        return _l1_step(wp, wm, a, l1c)[1]
    d = np.sqrt(wp) - np.sqrt(wm)
    return d * d


@numba.njit(**JIT_SERIAL)
def _recompute(d_indptr, d_indices, d_data, margins, shift, w, wp, wm):
    """w_p = exp(-(M_p - shift)) and the W+ / W- sums from scratch; returns Z."""
    n_pairs = margins.size
    wp[:] = 0.0
    wm[:] = 0.0
    z = 0.0
    for p in range(n_pairs):
        v = np.exp(-(margins[p] - shift))
        w[p] = v
        z += v
        for e in range(d_indptr[p], d_indptr[p + 1]):
            if d_data[e] > 0.0:
                wp[d_indices[e]] += v
            else:
                wm[d_indices[e]] += v
    return z


@numba.njit(**JIT_SERIAL)
def _boosting_path_kernel(d_indptr, d_indices, d_data, c_indptr, c_indices, c_data, margins0,
                          n_features, n_rounds, eps, l1, refresh):
    """Greedy coordinate descent on ExpLoss (l1 == 0: C&K smoothed steps; l1 > 0: exact L1).

    Returns (features, deltas, objective) for the rounds done; objective[t] is the loss after
    t rounds, normalised by the loss at t = 0 (plus l1 * ||alpha||_1 when l1 > 0).
    """
    n_pairs = margins0.size
    margins = margins0.copy()
    feats = np.empty(n_rounds, dtype=np.int64)
    deltas = np.empty(n_rounds, dtype=np.float64)
    objective = np.empty(n_rounds + 1, dtype=np.float64)
    alpha = np.zeros(n_features, dtype=np.float64)
    w = np.empty(n_pairs, dtype=np.float64)
    wp = np.zeros(n_features, dtype=np.float64)
    wm = np.zeros(n_features, dtype=np.float64)
    gain = np.zeros(n_features, dtype=np.float64)
    stamp = np.full(n_features, -1, dtype=np.int64)
    touched = np.empty(n_features, dtype=np.int64)
    if n_pairs == 0 or n_features == 0:
        objective[0] = 1.0 if n_pairs > 0 else 0.0
        return feats[:0], deltas[:0], objective[:1]
    # shift so that the largest w_p is 1: nothing overflows, the scale cancels everywhere
    shift = margins.min()
    z = _recompute(d_indptr, d_indices, d_data, margins, shift, w, wp, wm)
    log_z0 = np.log(z) - shift  # log of the loss at t = 0 (true units)
    z_ref = z  # the loss at the last exact recomputation, in working units
    l1c = l1 * z  # the penalty in working units (the loss there is z * exp(-shift))
    l1_norm = 0.0
    for k in range(n_features):
        gain[k] = _feature_gain(wp[k], wm[k], 0.0, l1c)
    objective[0] = 1.0
    done = 0
    for t in range(n_rounds):
        best = -1
        best_gain = 0.0
        for k in range(n_features):
            if gain[k] > best_gain:
                best_gain = gain[k]
                best = k
        # stop when no feature lowers the objective by more than rounding noise
        if best < 0 or best_gain <= 1e-13 * z:
            break
        k = best
        pk = wp[k] if wp[k] > 0.0 else 0.0
        mk = wm[k] if wm[k] > 0.0 else 0.0
        if l1 > 0.0:
            a_new = _l1_step(pk, mk, alpha[k], l1c)[0]
            delta = a_new - alpha[k]
        else:
            delta = 0.5 * np.log((pk + eps * z) / (mk + eps * z))
        if delta == 0.0:
            break
        l1_norm += abs(alpha[k] + delta) - abs(alpha[k])
        alpha[k] += delta
        feats[t] = k
        deltas[t] = delta
        n_touched = 0
        for e in range(c_indptr[k], c_indptr[k + 1]):
            p = c_indices[e]
            margins[p] += delta * c_data[e]
            v = np.exp(-(margins[p] - shift))
            diff = v - w[p]
            w[p] = v
            z += diff
            for e2 in range(d_indptr[p], d_indptr[p + 1]):
                k2 = d_indices[e2]
                if d_data[e2] > 0.0:
                    wp[k2] += diff
                else:
                    wm[k2] += diff
                if stamp[k2] != t:
                    stamp[k2] = t
                    touched[n_touched] = k2
                    n_touched += 1
        done = t + 1
        # incremental sums drift, and cancel catastrophically once the loss has fallen far
        # below its value at the last recomputation: re-derive them from the exact margins,
        # re-shifting so that the largest w_p is 1 again
        if done % refresh == 0 or not z > 1e-6 * z_ref:
            new_shift = margins.min()
            l1c *= np.exp(new_shift - shift)
            shift = new_shift
            z = _recompute(d_indptr, d_indices, d_data, margins, shift, w, wp, wm)
            z_ref = z
            for k2 in range(n_features):
                gain[k2] = _feature_gain(wp[k2], wm[k2], alpha[k2], l1c)
        else:
            for q in range(n_touched):
                k2 = touched[q]
                gain[k2] = _feature_gain(wp[k2], wm[k2], alpha[k2], l1c)
            if stamp[k] != t:
                gain[k] = _feature_gain(wp[k], wm[k], alpha[k], l1c)
        objective[t + 1] = np.exp(np.log(z) - shift - log_z0) + l1 * l1_norm
    return feats[:done], deltas[:done], objective[:done + 1]


def _csr_arrays(name, M, n_rows=None):
    """int64 indptr / indices and float64 data of a scipy sparse matrix in CSR form."""
    if not sp.issparse(M):
        raise TypeError(f"{name} must be a scipy.sparse matrix, got {type(M).__name__}")
    if n_rows is not None and M.shape[0] != n_rows:
        raise ValueError(f"{name} must have {n_rows} rows, got shape {M.shape}")
    check_sparse_structure(M, name)
    M = sp.csr_matrix(M)
    data = np.ascontiguousarray(M.data, dtype=np.float64)
    if data.size and not np.all(np.isfinite(data)):
        raise ValueError(f"{name} must have finite values")
    return (np.ascontiguousarray(M.indptr, dtype=np.int64),
            np.ascontiguousarray(M.indices, dtype=np.int64), data, M.shape)


def _float_vector(name, x, n, *, allow_neg_inf=False):
    a = real_array(name, x, ndim=None)
    if a.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {a.shape}")
    ok = np.isfinite(a) | (a == -np.inf) if allow_neg_inf else np.isfinite(a)
    if not np.all(ok):
        raise ValueError(f"{name} must be finite" + (" or -inf" if allow_neg_inf else ""))
    return a


def boosting_path(D, margins, n_rounds, *, eps=0.0025, l1=0.0, refresh=256):
    """Greedy feature-wise minimisation of the exponential ranking loss (a boosting path).

    With margins ``M_p(alpha) = margins[p] + (D @ alpha)[p]`` the loss is
    ``ExpLoss(alpha) = sum_p exp(-M_p(alpha))``, starting from ``alpha = 0``.  Each round
    updates one feature k:

    * ``l1 == 0`` (Collins & Koo 2005): k maximises ``|sqrt(W+_k) - sqrt(W-_k)|`` and
      ``alpha_k += 0.5 log((W+_k + eps Z) / (W-_k + eps Z))`` with ``Z = ExpLoss``;
    * ``l1 > 0``: the objective is ``ExpLoss(alpha) / ExpLoss(0) + l1 * ||alpha||_1``; k is the
      feature whose exact one-dimensional minimisation (closed form, see ``_l1_step``) lowers
      it most, and ``alpha_k`` moves to that minimiser (it may return to exactly 0).

    The path stops early when no feature lowers the objective (e.g. every W+ equals W-).

    Parameters
    ----------
    D : scipy.sparse matrix, shape (n_pairs, n_features)
        Feature differences ``h(oracle) - h(other)`` of each pair, values in {-1, 0, +1}.
    margins : float array, shape (n_pairs,)
        Margins at alpha = 0 (e.g. the decoder score difference times its weight).
    n_rounds : int in [0, max_rounds()]
        Maximum number of rounds.  Their path is allocated up front (24 bytes a round), so
        :func:`max_rounds` bounds it by the physical memory, and by 2**31 - 1.
    eps : float > 0
        Collins & Koo's smoothing of the step (only used when ``l1 == 0``).
    l1 : float >= 0
        Strength of the L1 penalty on the normalised loss.
    refresh : int >= 1
        Re-derive the W sums from the exact margins every ``refresh`` rounds (incremental
        updates accumulate rounding error).

    Returns
    -------
    features : int64 array, shape (n_done,)
        Feature updated at each round (n_done <= n_rounds).
    deltas : float64 array, shape (n_done,)
        Its step.
    objective : float64 array, shape (n_done + 1,)
        Objective after each prefix of rounds (``objective[0] == 1`` when there are pairs).

    Raises
    ------
    ValueError
        ``D`` with a value outside {-1, 0, +1} (after summing duplicates) or non-finite,
        ``margins`` of the wrong shape or non-finite, parameters out of range.
    TypeError
        ``D`` is not a scipy.sparse matrix.

    Notes
    -----
    The kernel keeps ``w_p = exp(-M_p)`` up to one global scale (re-shifted so that the
    largest is 1, hence no overflow) and the sums ``W+_k``, ``W-_k``; a step on feature k
    touches only the pairs where k fires and the features of those pairs (the sparse update
    of Collins & Koo, Fig. 4), so a round costs far less than a pass over ``D``.

    References
    ----------
    M. Collins and T. Koo (2005).  Discriminative reranking for natural language parsing.
    Computational Linguistics 31(1), pp. 25-70.

    Examples
    --------
    Four pairs, two features; feature 0 separates three pairs correctly and one wrongly:

    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sparsecca.kernels import boosting_path
    >>> D = sp.csr_matrix([[1.0, 0.0], [1.0, -1.0], [0.0, 1.0], [-1.0, 0.0]])
    >>> features, deltas, objective = boosting_path(D, np.zeros(4), n_rounds=5)
    >>> features.tolist()
    [0, 1, 0, 1, 0]
    >>> deltas.round(3).tolist()
    [0.344, 0.17, 0.047, 0.025, 0.007]
    >>> objective.round(3).tolist()
    [1.0, 0.957, 0.951, 0.95, 0.95, 0.95]

    With an L1 penalty the steps shrink:

    >>> _, deltas_l1, _ = boosting_path(D, np.zeros(4), n_rounds=5, l1=0.05)
    >>> bool(np.abs(deltas_l1).sum() < np.abs(deltas).sum())
    True
    """
    n_rounds = check_n_rounds(n_rounds, 0)
    refresh = check_int("refresh", refresh, 1)
    l1 = check_float("l1", l1, 0.0, strict=False)
    eps = check_float("eps", eps, 0.0, strict=l1 == 0.0)
    indptr, indices, data, (n_pairs, n_features) = _csr_arrays("D", D)
    # a copy: sum_duplicates and eliminate_zeros work in place, on arrays that may be D's own
    Dc = sp.csr_matrix((data, indices, indptr), shape=(n_pairs, n_features), copy=True)
    # the kernel adds up duplicate entries: two stored +1s at one place act as a 2
    Dc.sum_duplicates()
    data = Dc.data
    if data.size and not np.all((data == 1.0) | (data == -1.0) | (data == 0.0)):
        bad = data[(data != 1.0) & (data != -1.0) & (data != 0.0)][0]
        raise ValueError(f"D must have values in {{-1, 0, +1}} (binary feature differences; "
                         f"duplicate entries summed), got {bad}")
    m0 = _float_vector("margins", margins, n_pairs)
    Dc.eliminate_zeros()
    indptr, indices, data = (Dc.indptr.astype(np.int64), Dc.indices.astype(np.int64),
                             Dc.data.astype(np.float64))
    C = Dc.tocsc()
    return _boosting_path_kernel(indptr, indices, data, C.indptr.astype(np.int64),
                                 C.indices.astype(np.int64), C.data.astype(np.float64), m0,
                                 n_features, n_rounds, eps, l1, refresh)


# -- accuracy along a path -------------------------------------------------------------------

@numba.njit(**JIT_SERIAL)
def _argmax_segment(scores, a, b):
    best = a
    for r in range(a + 1, b):
        if scores[r] > scores[best]:  # strict: ties go to the earlier candidate
            best = r
    return best


@numba.njit(**JIT_SERIAL)
def _path_losses_kernel(c_indptr, c_indices, c_data, base, cand_sent, sent_offsets, losses,
                        feats, deltas):
    """Total loss of the argmax candidates after every prefix of (feature, delta) steps."""
    n_sent = sent_offsets.size - 1
    scores = base.copy()
    chosen = np.empty(n_sent, dtype=np.int64)
    total = 0
    for i in range(n_sent):
        a, b = sent_offsets[i], sent_offsets[i + 1]
        if b > a:
            chosen[i] = _argmax_segment(scores, a, b)
            total += losses[chosen[i]]
        else:
            chosen[i] = -1
    n_steps = feats.size
    out = np.empty(n_steps + 1, dtype=np.int64)
    out[0] = total
    stamp = np.full(n_sent, -1, dtype=np.int64)
    hit = np.empty(n_sent, dtype=np.int64)
    for t in range(n_steps):
        k = feats[t]
        delta = deltas[t]
        n_hit = 0
        for e in range(c_indptr[k], c_indptr[k + 1]):
            r = c_indices[e]
            scores[r] += delta * c_data[e]
            s = cand_sent[r]
            if stamp[s] != t:
                stamp[s] = t
                hit[n_hit] = s
                n_hit += 1
        for q in range(n_hit):
            s = hit[q]
            new = _argmax_segment(scores, sent_offsets[s], sent_offsets[s + 1])
            total += losses[new] - losses[chosen[s]]
            chosen[s] = new
        out[t + 1] = total
    return out


def _int_vector(name, x, n):
    a = int_array(name, x, ndim=None)
    if a.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {a.shape}")
    return a


def _check_segments(sent_offsets, n_candidates):
    return check_offsets("sent_offsets", int_array("sent_offsets", sent_offsets), n_candidates,
                         "n_candidates")


def path_losses(H, base_scores, sent_offsets, losses, features, deltas):
    """Total loss of the reranked choice after each prefix of a boosting path.

    Candidate r scores ``base_scores[r] + sum_{t < T} deltas[t] * H[r, features[t]]`` after T
    steps; each sentence picks its highest-scoring candidate (ties: the earlier one, as
    :meth:`NBestList.argmax`).  Only the sentences whose candidates a step touches are
    re-decided, so the whole path costs O(nnz of the touched columns).

    Parameters
    ----------
    H : scipy.sparse matrix, shape (n_candidates, n_features)
    base_scores : float array, shape (n_candidates,)
    sent_offsets : int array, shape (n_sentences + 1,)
    losses : int array, shape (n_candidates,)
    features : int array, shape (n_steps,)
    deltas : float array, shape (n_steps,)

    Returns
    -------
    int64 array, shape (n_steps + 1,)
        ``out[T]`` is the summed loss of the chosen candidates after T steps.

    Examples
    --------
    Two sentences of two candidates; the decoder prefers candidate 0 of each, one feature
    fires on candidate 1 of sentence 0 (the better one) and on candidate 0 of sentence 1:

    >>> import scipy.sparse as sp
    >>> from sparsecca.kernels import path_losses
    >>> H = sp.csr_matrix([[0.0], [1.0], [1.0], [0.0]])
    >>> out = path_losses(H, base_scores=[0.0, -1.0, 0.0, -1.0], sent_offsets=[0, 2, 4],
    ...                   losses=[3, 0, 0, 2], features=[0, 0], deltas=[0.5, 1.0])
    >>> out.tolist()
    [3, 3, 0]
    """
    _, _, _, (n_cand, n_features) = _csr_arrays("H", H)
    C = sp.csc_matrix(H)
    base = _float_vector("base_scores", base_scores, n_cand)
    off = _check_segments(sent_offsets, n_cand)
    loss = _int_vector("losses", losses, n_cand)
    feats = int_array("features", features, ndim=None)
    if feats.ndim != 1 or (feats.size and (feats.min() < 0 or feats.max() >= n_features)):
        raise ValueError(f"features must be a 1-d array of ints in [0, {n_features})")
    dl = _float_vector("deltas", deltas, feats.size)
    cand_sent = np.repeat(np.arange(off.size - 1, dtype=np.int64), np.diff(off))
    return _path_losses_kernel(C.indptr.astype(np.int64), C.indices.astype(np.int64),
                               C.data.astype(np.float64), base, cand_sent, off, loss, feats, dl)
