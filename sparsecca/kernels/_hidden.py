"""The hidden-variable reranker's kernels (Koo & Collins 2005) on the chains of
:mod:`sparsecca.kernels._forward_backward`.

The reranker builds the potentials of each candidate from sparse feature ids and a flat
weight vector ``theta``: ``theta[0]`` is the weight of the decoder score, then
``n_node * H`` node weights (row ``f``, hidden value ``h`` at ``1 + f * H + h``), then the
edge weights (row ``e``, values ``(u, v)`` at ``1 + n_node * H + e * H * H + u * H + v``).
A candidate token's node potential is the sum of the rows of its node features
(``node_feats[t]``, -1 for none), its edge potential the row of its edge feature
(``edge_feats[t]``, -1 for none).
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT_SERIAL
from .._params import check_float, check_int
from ._checks import check_offsets, int_array, real_array
from ._forward_backward import _backward, _forward, _lse

__all__ = ["hidden_scores", "hidden_loss_grad", "hidden_sgd_epoch"]


@numba.njit(**JIT_SERIAL)
def _potentials(theta, node_feats, edge_feats, lo, hi, H, n_node, node, edge):
    """Potentials of candidate tokens lo..hi-1 into node[0:hi-lo], edge[0:hi-lo]."""
    F = node_feats.shape[1]
    e0 = 1 + n_node * H
    for w in range(hi - lo):
        t = lo + w
        for h in range(H):
            node[w, h] = 0.0
        for k in range(F):
            f = node_feats[t, k]
            if f >= 0:
                base = 1 + f * H
                for h in range(H):
                    node[w, h] += theta[base + h]
        e = edge_feats[t]
        if e >= 0 and w > 0:
            base = e0 + e * H * H
            for u in range(H):
                for v in range(H):
                    edge[w, u, v] = theta[base + u * H + v]
        else:
            for u in range(H):
                for v in range(H):
                    edge[w, u, v] = 0.0


@numba.njit(**JIT_SERIAL)
def _edge_table(theta, n_node, H, etab, emax, row):
    """``etab[row] = exp(block - max)`` and ``emax[row] = max`` of edge row ``row``'s block."""
    base = 1 + n_node * H + row * H * H
    m = theta[base]
    for q in range(1, H * H):
        if theta[base + q] > m:
            m = theta[base + q]
    emax[row] = m
    for u in range(H):
        for v in range(H):
            etab[row, u, v] = np.exp(theta[base + u * H + v] - m)


@numba.njit(**JIT_SERIAL)
def _edge_tables(theta, n_node, H, n_edge):
    etab = np.empty((n_edge, H, H))
    emax = np.empty(n_edge)
    for e in range(n_edge):
        _edge_table(theta, n_node, H, etab, emax, e)
    return etab, emax


@numba.njit(**JIT_SERIAL)
def _scaled_forward(node, edge, L, N, E, a, c, edge_ids, lo, etab, emax):
    """The forward pass in probability space with per-node rescaling: ``N = exp(node - max)``
    per node, ``E = etab[edge row]`` (``exp(block - max)`` of the edge's weight block, kept
    up to date by the caller), ``a[w]`` normalised to sum 1 by ``c[w]``.

    Returns log Z, or NaN when a rescaling factor underflowed (potentials so extreme that
    every path through a node has relative mass below 1e-308; the caller then uses the
    log-space recursion).  Two to three times fewer exp / log calls than :func:`_forward`.
    """
    if L == 0:
        return 0.0
    H = node.shape[1]
    lz = 0.0
    for w in range(L):
        # the largest entry is exp(0) = 1: no exp() for it
        k = 0
        for v in range(1, H):
            if node[w, v] > node[w, k]:
                k = v
        m = node[w, k]
        lz += m
        for v in range(H):
            N[w, v] = 1.0 if v == k else np.exp(node[w, v] - m)
        if w > 0:
            e = edge_ids[lo + w]
            if e >= 0:
                lz += emax[e]
                for u in range(H):
                    for v in range(H):
                        E[w, u, v] = etab[e, u, v]
            else:
                for u in range(H):
                    for v in range(H):
                        E[w, u, v] = 1.0
    tot = 0.0
    for v in range(H):
        a[0, v] = N[0, v]
        tot += a[0, v]
    c[0] = tot  # >= 1: the largest N[0] is 1
    for v in range(H):
        a[0, v] /= tot
    # log Z = sum_w log c[w]: one log() per run of factors whose product stays in range
    prod = tot
    for w in range(1, L):
        tot = 0.0
        for v in range(H):
            x = 0.0
            for u in range(H):
                x += a[w - 1, u] * E[w, u, v]
            x *= N[w, v]
            a[w, v] = x
            tot += x
        c[w] = tot
        if not tot > 1e-300:
            return np.nan
        for v in range(H):
            a[w, v] /= tot
        prod *= tot
        if prod < 1e-200 or prod > 1e200:
            lz += np.log(prod)
            prod = 1.0
    return lz + np.log(prod)


@numba.njit(**JIT_SERIAL)
def _marginals(node, edge, L, N, E, a, c, lz, beta, tmp, mu, xi):
    """Node and edge marginals of one candidate into mu[:L], xi[:L]: from the scaled
    forward pass when it succeeded (lz finite), else by the log-space recursions."""
    H = node.shape[1]
    if np.isfinite(lz):
        # scaled backward pass: beta[w] relative to the same factors as a
        for u in range(H):
            beta[L - 1, u] = 1.0
        for w in range(L - 2, -1, -1):
            for u in range(H):
                x = 0.0
                for v in range(H):
                    x += E[w + 1, u, v] * N[w + 1, v] * beta[w + 1, v]
                beta[w, u] = x / c[w + 1]
        for w in range(L):
            for h in range(H):
                mu[w, h] = a[w, h] * beta[w, h]
            if w > 0:
                for u in range(H):
                    for v in range(H):
                        xi[w, u, v] = a[w - 1, u] * E[w, u, v] * N[w, v] * beta[w, v] / c[w]
        return
    lz = _forward(node, edge, 0, L, a, tmp)
    _backward(node, edge, 0, L, beta, tmp)
    for w in range(L):
        for h in range(H):
            mu[w, h] = np.exp(a[w, h] + beta[w, h] - lz)
        if w > 0:
            for u in range(H):
                for v in range(H):
                    xi[w, u, v] = np.exp(a[w - 1, u] + edge[w, u, v] + node[w, v] + beta[w, v]
                                         - lz)


@numba.njit(**JIT_SERIAL)
def _candidate_log_z(node, edge, L, N, E, a, c, tmp, edge_ids, lo, etab, emax):
    """log Z of one candidate: scaled, or in log space when the scaling underflows."""
    lz = _scaled_forward(node, edge, L, N, E, a, c, edge_ids, lo, etab, emax)
    if np.isnan(lz):
        lz = _forward(node, edge, 0, L, a, tmp)
    return lz


@numba.njit(**JIT_SERIAL)
def _scores_kernel(theta, node_feats, edge_feats, cand_offsets, scores, H, n_node, max_len):
    n_cand = cand_offsets.size - 1
    out = np.empty(n_cand, dtype=np.float64)
    node = np.empty((max_len, H), dtype=np.float64)
    edge = np.empty((max_len, H, H), dtype=np.float64)
    N = np.empty((max_len, H), dtype=np.float64)
    E = np.ones((max_len, H, H), dtype=np.float64)
    alpha = np.empty((max_len, H), dtype=np.float64)
    c = np.empty(max_len, dtype=np.float64)
    tmp = np.empty(H, dtype=np.float64)
    etab, emax = _edge_tables(theta, n_node, H, (theta.size - 1 - n_node * H) // (H * H))
    w0 = theta[0]
    for j in range(n_cand):
        lo, hi = cand_offsets[j], cand_offsets[j + 1]
        _potentials(theta, node_feats, edge_feats, lo, hi, H, n_node, node, edge)
        lz = _candidate_log_z(node, edge, hi - lo, N, E, alpha, c, tmp, edge_feats, lo, etab,
                              emax)
        s = scores[j]
        # -inf (log 0) stays -inf whatever the sign of the weight (0 * -inf is NaN)
        out[j] = -np.inf if s == -np.inf else w0 * s + lz
    return out


@numba.njit(**JIT_SERIAL)
def _sentence_grad(theta, node_feats, edge_feats, cand_offsets, sent_offsets, scores, target,
                   H, n_node, i, grad, stamp, touched, n_touched, step, sc, etab, emax):
    """Loss of sentence i (-log of the target set's probability); its gradient is added to
    grad, and every index it touches listed once in touched (stamp[k] == step).

    ``sc`` is the scratch of :func:`_scratch`: potentials, scaled forward passes and
    factors of every candidate of the sentence (kept for its marginals), then buffers."""
    node, edge, N, E, alpha, c, beta, tmp, acand, mu, xi = sc
    a, b = sent_offsets[i], sent_offsets[i + 1]
    m = b - a
    if m == 0:
        return 0.0, n_touched
    n_t = 0
    for j in range(a, b):
        if target[j]:
            n_t += 1
    if n_t == 0 or n_t == m:  # nothing to prefer: loss 0, gradient 0
        return 0.0, n_touched
    w0 = theta[0]
    lz = np.empty(m)
    for j in range(a, b):
        lo, hi = cand_offsets[j], cand_offsets[j + 1]
        r = j - a
        _potentials(theta, node_feats, edge_feats, lo, hi, H, n_node, node[r], edge[r])
        lz[r] = _scaled_forward(node[r], edge[r], hi - lo, N[r], E[r], alpha[r], c[r],
                                edge_feats, lo, etab, emax)
        x = lz[r] if np.isfinite(lz[r]) else _forward(node[r], edge[r], 0, hi - lo,
                                                      alpha[r], tmp)
        acand[r] = w0 * scores[j] + x
    lse_all = _lse(acand, m)
    mx = -np.inf
    for j in range(m):
        if target[a + j] and acand[j] > mx:
            mx = acand[j]
    s = 0.0
    for j in range(m):
        if target[a + j]:
            s += np.exp(acand[j] - mx)
    lse_t = mx + np.log(s)
    e0 = 1 + n_node * H
    F = node_feats.shape[1]
    if stamp[0] != step:
        stamp[0] = step
        touched[n_touched] = 0
        n_touched += 1
    for j in range(a, b):
        r = j - a
        p = np.exp(acand[r] - lse_all)
        if target[j]:
            p -= np.exp(acand[r] - lse_t)
        if p == 0.0:
            continue
        grad[0] += p * scores[j]
        lo, hi = cand_offsets[j], cand_offsets[j + 1]
        L = hi - lo
        _marginals(node[r], edge[r], L, N[r], E[r], alpha[r], c[r], lz[r], beta, tmp, mu, xi)
        for w in range(L):
            t = lo + w
            for k in range(F):
                f = node_feats[t, k]
                if f < 0:
                    continue
                base = 1 + f * H
                if stamp[base] != step:
                    for h in range(H):
                        stamp[base + h] = step
                        touched[n_touched] = base + h
                        n_touched += 1
                for h in range(H):
                    grad[base + h] += p * mu[w, h]
            e = edge_feats[t]
            if w > 0 and e >= 0:
                base = e0 + e * H * H
                if stamp[base] != step:
                    for q in range(H * H):
                        stamp[base + q] = step
                        touched[n_touched] = base + q
                        n_touched += 1
                for u in range(H):
                    for v in range(H):
                        grad[base + u * H + v] += p * xi[w, u, v]
    return lse_all - lse_t, n_touched


@numba.njit(**JIT_SERIAL)
def _scratch(cand_offsets, sent_offsets, H, n_theta):
    max_len = 1
    for j in range(cand_offsets.size - 1):
        L = cand_offsets[j + 1] - cand_offsets[j]
        if L > max_len:
            max_len = L
    max_m = 1
    for i in range(sent_offsets.size - 1):
        m = sent_offsets[i + 1] - sent_offsets[i]
        if m > max_m:
            max_m = m
    sc = (np.empty((max_m, max_len, H)), np.zeros((max_m, max_len, H, H)),
          np.empty((max_m, max_len, H)), np.ones((max_m, max_len, H, H)),
          np.empty((max_m, max_len, H)), np.empty((max_m, max_len)),
          np.empty((max_len, H)), np.empty(H), np.empty(max_m), np.empty((max_len, H)),
          np.zeros((max_len, H, H)))
    return sc, np.full(n_theta, -1, dtype=np.int64), np.empty(n_theta, dtype=np.int64)


@numba.njit(**JIT_SERIAL)
def _loss_grad_kernel(theta, node_feats, edge_feats, cand_offsets, sent_offsets, scores,
                      target, H, n_node, l2):
    sc, stamp, touched = _scratch(cand_offsets, sent_offsets, H, theta.size)
    etab, emax = _edge_tables(theta, n_node, H, (theta.size - 1 - n_node * H) // (H * H))
    grad = np.zeros(theta.size, dtype=np.float64)
    loss = 0.0
    for i in range(sent_offsets.size - 1):
        li, _ = _sentence_grad(theta, node_feats, edge_feats, cand_offsets, sent_offsets,
                               scores, target, H, n_node, i, grad, stamp, touched, 0, i, sc,
                               etab, emax)
        loss += li
    for k in range(1, theta.size):
        loss += 0.5 * l2 * theta[k] * theta[k]
        grad[k] += l2 * theta[k]
    return loss, grad


@numba.njit(**JIT_SERIAL)
def _sgd_epoch_kernel(theta, accum, node_feats, edge_feats, cand_offsets, sent_offsets,
                      scores, target, H, n_node, order, lr, reg):
    sc, stamp, touched = _scratch(cand_offsets, sent_offsets, H, theta.size)
    e0 = 1 + n_node * H
    etab, emax = _edge_tables(theta, n_node, H, (theta.size - e0) // (H * H))
    grad = np.zeros(theta.size, dtype=np.float64)
    loss = 0.0
    for s in range(order.size):
        i = order[s]
        li, nt = _sentence_grad(theta, node_feats, edge_feats, cand_offsets, sent_offsets,
                                scores, target, H, n_node, i, grad, stamp, touched, 0, s, sc,
                                etab, emax)
        loss += li
        for q in range(nt):
            k = touched[q]
            g = grad[k]
            if k > 0:
                g += reg * theta[k]
            grad[k] = 0.0
            accum[k] += g * g
            if accum[k] > 0.0:
                theta[k] -= lr * g / np.sqrt(accum[k])
        # the exponentiated blocks of the edge rows just moved (touched whole, in order)
        for q in range(nt):
            k = touched[q]
            if k >= e0 and (k - e0) % (H * H) == 0:
                _edge_table(theta, n_node, H, etab, emax, (k - e0) // (H * H))
    return loss


def _check_model(theta, node_feats, edge_feats, cand_offsets, n_hidden, n_node,
                 sent_offsets=None):
    """Validate the arrays every hidden-variable kernel shares; returns them converted."""
    H = check_int("n_hidden", n_hidden, 1)
    n_node = check_int("n_node", n_node, 0)
    theta = real_array("theta", theta)
    if not np.all(np.isfinite(theta)):
        raise ValueError("theta must be finite")
    nf = int_array("node_feats", node_feats, np.int32, ndim=2)
    ef = int_array("edge_feats", edge_feats, np.int32)
    co = int_array("cand_offsets", cand_offsets)
    n_tok = nf.shape[0]
    if ef.shape != (n_tok,):
        raise ValueError(f"edge_feats must have shape ({n_tok},) like node_feats' rows, got "
                         f"{ef.shape}")
    check_offsets("cand_offsets", co, n_tok, "n_tokens")
    if theta.size < 1 or (theta.size - 1) % H:
        raise ValueError(f"theta must hold 1 + n_hidden * (n_node + n_edge * n_hidden) "
                         f"weights, got {theta.size} with n_hidden={H}")
    n_edge_w = theta.size - 1 - n_node * H
    if n_edge_w < 0 or n_edge_w % (H * H):
        raise ValueError(f"theta has {theta.size} weights: too few for {n_node} node rows "
                         f"of n_hidden={H} weights plus whole edge rows of {H * H}")
    n_edge = n_edge_w // (H * H)
    for name, a, high in (("node_feats", nf, n_node), ("edge_feats", ef, n_edge)):
        if a.size and (a.min() < -1 or a.max() >= high):
            raise ValueError(f"{name} must be -1 (none) or ids in [0, {high}), got values in "
                             f"[{a.min()}, {a.max()}]")
    if sent_offsets is not None:
        so = int_array("sent_offsets", sent_offsets)
        check_offsets("sent_offsets", so, co.size - 1, "n_candidates")
        return theta, nf, ef, co, H, n_node, so
    return theta, nf, ef, co, H, n_node


def _check_scores(scores, n_cand, allow_minus_inf):
    s = real_array("scores", scores)
    if s.shape != (n_cand,):
        raise ValueError(f"scores must have shape ({n_cand},), got {s.shape}")
    bad = np.isnan(s) | (s == np.inf) | ((s == -np.inf) & (not allow_minus_inf))
    if bad.any():
        what = "finite or -inf" if allow_minus_inf else "finite"
        raise ValueError(f"scores must be {what}, got {s[bad][0]} at candidate "
                         f"{int(np.flatnonzero(bad)[0])}")
    return s


def _check_target(target, n_cand):
    t = np.asarray(target)
    if t.dtype != np.bool_:
        raise TypeError(f"target must be a bool array, got dtype {t.dtype}")
    if t.shape != (n_cand,):
        raise ValueError(f"target must have shape ({n_cand},), got {t.shape}")
    return np.ascontiguousarray(t)


def hidden_scores(theta, node_feats, edge_feats, cand_offsets, scores, n_hidden, n_node):
    """Score of every candidate under the hidden-variable model: ``theta[0] s + log Z``.

    ``log Z`` sums the exponentiated potential over every hidden assignment of the
    candidate's tokens, so the score is ``log p(t | s)`` up to the sentence's normaliser.

    Parameters
    ----------
    theta : float64 array, shape (1 + n_node * H + n_edge * H * H,)
        Decoder weight, node weights, edge weights (layout in the module docstring).
    node_feats : int array, shape (n_tokens, F)
        Node feature rows of every candidate token, -1 for none.
    edge_feats : int array, shape (n_tokens,)
        Edge feature row between each token and the previous one of its candidate, -1 for
        none (the first token's entry is ignored).
    cand_offsets : int array, shape (n_candidates + 1,)
        Candidate ``j`` is tokens ``cand_offsets[j]:cand_offsets[j + 1]``.
    scores : float array, shape (n_candidates,)
        Decoder scores; -inf (log 0) gives -inf.
    n_hidden : int >= 1
        H.
    n_node : int >= 0
        Node rows of ``theta``; the rest are edge rows.

    Returns
    -------
    float64 array, shape (n_candidates,)

    Raises
    ------
    ValueError
        Inconsistent shapes, ids out of range, non-finite weights, NaN or +inf scores.

    References
    ----------
    T. Koo and M. Collins (2005).  Hidden-variable models for discriminative reranking.
    Proceedings of HLT/EMNLP 2005, pp. 507-514.

    Examples
    --------
    One node row, no edge rows, H = 2: a one-token candidate sums two hidden values.

    >>> import numpy as np
    >>> from sparsecca.kernels import hidden_scores
    >>> theta = np.array([2.0, 0.0, np.log(3.0)])  # decoder weight, node row 0 (h = 0, 1)
    >>> out = hidden_scores(theta, [[0]], [-1], [0, 1], [-1.0], 2, 1)
    >>> bool(np.isclose(out[0], -2.0 + np.log(4.0)))
    True
    """
    theta, nf, ef, co, H, n_node = _check_model(theta, node_feats, edge_feats, cand_offsets,
                                                n_hidden, n_node)
    s = _check_scores(scores, co.size - 1, allow_minus_inf=True)
    max_len = int(np.diff(co).max()) if co.size > 1 else 0
    return _scores_kernel(theta, nf, ef, co, s, H, n_node, max(max_len, 1))


def hidden_loss_grad(theta, node_feats, edge_feats, cand_offsets, sent_offsets, scores,
                     target, n_hidden, n_node, l2=0.0):
    """Negative log-likelihood of the target candidates (Eq. 3 of Koo & Collins) and its
    gradient, summed over every sentence, plus ``l2 / 2 * ||theta[1:]||^2``.

    Sentence i contributes ``-log sum_{j in T_i} p(t_ij | s_i)``, T_i its target candidates
    (``target``), with ``p(t_ij | s_i) = sum_h p(t_ij, h | s_i)``.  Its gradient is the
    expected feature vector under ``p(t, h | s_i)`` minus that under
    ``p(t, h | s_i, t in T_i)`` (with one target, the paper's ``p(h | t_i1)``); the expected
    counts are forward-backward marginals.  A sentence whose candidates are all targets, or
    none, contributes nothing.

    Parameters
    ----------
    theta, node_feats, edge_feats, cand_offsets, n_hidden, n_node
        As in :func:`hidden_scores`.
    sent_offsets : int array, shape (n_sentences + 1,)
        Sentence ``i`` is candidates ``sent_offsets[i]:sent_offsets[i + 1]``.
    scores : float array, shape (n_candidates,)
        Finite decoder scores.
    target : bool array, shape (n_candidates,)
    l2 : float >= 0, default 0

    Returns
    -------
    loss : float
    grad : float64 array, shape theta.shape

    Examples
    --------
    Two one-token candidates of one sentence, the second the target, all weights 0: the
    loss is log 2 and the gradient moves the decoder weight towards the target's score.

    >>> import numpy as np
    >>> from sparsecca.kernels import hidden_loss_grad
    >>> loss, grad = hidden_loss_grad(np.zeros(3), [[0], [-1]], [-1, -1], [0, 1, 2],
    ...                               [0, 2], [-1.0, -3.0], np.array([False, True]), 2, 1)
    >>> bool(np.isclose(loss, np.log(2))), grad.round(6).tolist()
    (True, [1.0, 0.25, 0.25])
    """
    theta, nf, ef, co, H, n_node, so = _check_model(theta, node_feats, edge_feats,
                                                    cand_offsets, n_hidden, n_node,
                                                    sent_offsets)
    s = _check_scores(scores, co.size - 1, allow_minus_inf=False)
    t = _check_target(target, co.size - 1)
    l2 = check_float("l2", l2, 0.0, strict=False)
    return _loss_grad_kernel(theta, nf, ef, co, so, s, t, H, n_node, l2)


def hidden_sgd_epoch(theta, accum, node_feats, edge_feats, cand_offsets, sent_offsets,
                     scores, target, n_hidden, n_node, order, lr, l2=0.0, n_sentences=None):
    """One AdaGrad pass over the sentences in ``order``, updating ``theta`` and ``accum`` in
    place; returns the sum of the sentences' losses before their updates.

    Each sentence's update is ``theta_k -= lr g_k / sqrt(G_k)`` on the weights its
    gradient touches (:func:`hidden_loss_grad` of that sentence alone), ``G_k`` (``accum``)
    the running sum of ``g_k^2``.  The L2 term is applied lazily: ``l2 / n_sentences *
    theta_k`` joins ``g_k`` of the touched weights (the decoder weight excepted).
    ``n_sentences`` is those of ``sent_offsets`` unless given: a part of a list trained on
    its own (parameter mixing) spreads the L2 term over the whole list's sentences.

    Parameters
    ----------
    theta : float64 array, modified in place
    accum : float64 array, shape theta.shape, modified in place
        AdaGrad's sums of squared gradients (zeros to start).
    node_feats, edge_feats, cand_offsets, sent_offsets, scores, target, n_hidden, n_node
        As in :func:`hidden_loss_grad`.
    order : int array
        Sentences to visit, in order.
    lr : float > 0
    l2 : float >= 0, default 0
    n_sentences : int >= 1, optional
        The sentences the L2 term is spread over (default: those of ``sent_offsets``).

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from sparsecca.kernels import hidden_loss_grad, hidden_sgd_epoch
    >>> args = ([[0], [-1]], [-1, -1], [0, 1, 2], [0, 2], [-1.0, -3.0],
    ...         np.array([False, True]), 2, 1)
    >>> theta, accum = np.zeros(3), np.zeros(3)
    >>> before = hidden_sgd_epoch(theta, accum, *args, order=[0], lr=0.5)
    >>> after = hidden_loss_grad(theta, *args)[0]
    >>> bool(np.isclose(before, np.log(2)) and after < before)
    True
    """
    _, nf, ef, co, H, n_node, so = _check_model(theta, node_feats, edge_feats, cand_offsets,
                                                n_hidden, n_node, sent_offsets)
    if not (isinstance(theta, np.ndarray) and theta.dtype == np.float64
            and theta.flags.c_contiguous and theta.ndim == 1):
        raise TypeError("theta must be a 1-d C-contiguous float64 array (updated in place)")
    if not (isinstance(accum, np.ndarray) and accum.dtype == np.float64
            and accum.flags.c_contiguous and accum.shape == theta.shape):
        raise TypeError(f"accum must be a C-contiguous float64 array of shape {theta.shape} "
                        f"(updated in place)")
    if np.any(accum < 0) or not np.all(np.isfinite(accum)):
        raise ValueError("accum must be finite and >= 0")
    s = _check_scores(scores, co.size - 1, allow_minus_inf=False)
    t = _check_target(target, co.size - 1)
    o = int_array("order", order)
    n_sent = so.size - 1
    if o.size and (o.min() < 0 or o.max() >= n_sent):
        raise ValueError(f"order must hold sentence indices in [0, {n_sent}), got values in "
                         f"[{o.min()}, {o.max()}]")
    lr = check_float("lr", lr, 0.0, strict=True)
    l2 = check_float("l2", l2, 0.0, strict=False)
    n_total = max(n_sent, 1) if n_sentences is None else check_int("n_sentences", n_sentences, 1)
    return _sgd_epoch_kernel(theta, accum, nf, ef, co, so, s, t, H, n_node, o, lr,
                             l2 / n_total)
