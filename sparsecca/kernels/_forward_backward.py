"""Forward-backward on chains in log space (the hidden-variable reranker's kernels built on
it are in :mod:`sparsecca.kernels._hidden`).

A chain of ``m`` nodes carries a hidden value ``h_w`` in ``{0, ..., H - 1}`` at every node
``w``; an assignment ``h`` has the log-potential
``sum_w node[w, h_w] + sum_{w >= 1} edge[w, h_{w-1}, h_w]`` (``edge[w]`` is the edge between
node ``w - 1`` and node ``w``; the first node's edge entry is ignored).  Forward-backward
(belief propagation on a chain) gives the log partition function ``log Z`` and the node and
edge marginals in O(m H^2), every sum a log-sum-exp, so chains of any length neither
underflow nor overflow.

Many chains are processed in one call, laid out CSR-style: chain ``c`` is nodes
``offsets[c]:offsets[c + 1]`` of the flat potential arrays.
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT_SERIAL
from ._checks import check_offsets, int_array, real_array

__all__ = ["chain_marginals"]


# -- the chain core (shared with the kernels of _hidden.py) -------------------------------------

@numba.njit(**JIT_SERIAL)
def _lse(x, n):
    """log sum exp of x[:n]."""
    m = -np.inf
    for i in range(n):
        if x[i] > m:
            m = x[i]
    if m == -np.inf:
        return m
    s = 0.0
    for i in range(n):
        s += np.exp(x[i] - m)
    return m + np.log(s)


@numba.njit(**JIT_SERIAL)
def _forward(node, edge, lo, hi, alpha, tmp):
    """alpha[w, v] = log of the potential mass of nodes lo..w ending in v; returns log Z."""
    if hi <= lo:
        return 0.0
    H = node.shape[1]
    for v in range(H):
        alpha[lo, v] = node[lo, v]
    for w in range(lo + 1, hi):
        for v in range(H):
            for u in range(H):
                tmp[u] = alpha[w - 1, u] + edge[w, u, v]
            alpha[w, v] = node[w, v] + _lse(tmp, H)
    for v in range(H):
        tmp[v] = alpha[hi - 1, v]
    return _lse(tmp, H)


@numba.njit(**JIT_SERIAL)
def _backward(node, edge, lo, hi, beta, tmp):
    """beta[w, u] = log of the potential mass of nodes w+1..hi-1 given h_w = u."""
    if hi <= lo:
        return
    H = node.shape[1]
    for u in range(H):
        beta[hi - 1, u] = 0.0
    for w in range(hi - 2, lo - 1, -1):
        for u in range(H):
            for v in range(H):
                tmp[v] = edge[w + 1, u, v] + node[w + 1, v] + beta[w + 1, v]
            beta[w, u] = _lse(tmp, H)


@numba.njit(**JIT_SERIAL)
def _chain_kernel(node, edge, offsets, marginals):
    n_chains = offsets.size - 1
    n_tok, H = node.shape
    log_z = np.empty(n_chains, dtype=np.float64)
    alpha = np.empty((n_tok, H), dtype=np.float64)
    beta = np.empty((n_tok, H), dtype=np.float64)
    tmp = np.empty(H, dtype=np.float64)
    mu = np.zeros((n_tok if marginals else 0, H), dtype=np.float64)
    xi = np.zeros((n_tok if marginals else 0, H, H), dtype=np.float64)
    for c in range(n_chains):
        lo, hi = offsets[c], offsets[c + 1]
        lz = _forward(node, edge, lo, hi, alpha, tmp)
        log_z[c] = lz
        if not marginals or hi <= lo:
            continue
        _backward(node, edge, lo, hi, beta, tmp)
        for w in range(lo, hi):
            for h in range(H):
                mu[w, h] = np.exp(alpha[w, h] + beta[w, h] - lz)
            if w > lo:
                for u in range(H):
                    for v in range(H):
                        xi[w, u, v] = np.exp(alpha[w - 1, u] + edge[w, u, v] + node[w, v]
                                             + beta[w, v] - lz)
    return log_z, mu, xi


def chain_marginals(node_potentials, edge_potentials, offsets, *, marginals=True):
    """Log partition function and marginals of many chains (forward-backward in log space).

    Parameters
    ----------
    node_potentials : float array, shape (n_nodes, H)
        Log-potential of each hidden value at each node; finite.
    edge_potentials : float array, shape (n_nodes, H, H)
        ``edge_potentials[w, u, v]``: log-potential of ``(h_{w-1}, h_w) = (u, v)``, the edge
        between node ``w - 1`` and node ``w`` of the same chain; finite (the entry of a
        chain's first node is ignored).
    offsets : int array, shape (n_chains + 1,)
        Chain ``c`` is nodes ``offsets[c]:offsets[c + 1]``: from 0, non-decreasing, ending
        at n_nodes (an empty chain has log Z = 0).
    marginals : bool, default True
        Also return the marginals (False: log Z only, no O(n_nodes H^2) output).

    Returns
    -------
    log_z : float64 array, shape (n_chains,)
    node_marginals : float64 array, shape (n_nodes, H)
        ``p(h_w = h)``; rows sum to 1.  Shape (0, H) when ``marginals`` is False.
    edge_marginals : float64 array, shape (n_nodes, H, H)
        ``p(h_{w-1} = u, h_w = v)`` at ``[w, u, v]``; zero at each chain's first node.
        Shape (0, H, H) when ``marginals`` is False.

    Raises
    ------
    TypeError
        Potentials that are not real arrays; offsets that are not integers.
    ValueError
        Inconsistent shapes, H < 1, non-finite potentials, bad offsets.

    Notes
    -----
    Linear in the number of nodes and quadratic in H: the forward pass
    ``alpha[w, v] = node[w, v] + logsumexp_u(alpha[w-1, u] + edge[w, u, v])``, the backward
    pass symmetrically, ``log Z = logsumexp_v alpha[last, v]``, and every marginal an
    ``exp`` of a sum of log terms minus ``log Z``.  This is belief propagation on a chain, the
    dependency tree of a tag sequence in the hidden-variable reranker of Koo & Collins.

    References
    ----------
    T. Koo and M. Collins (2005).  Hidden-variable models for discriminative reranking.
    Proceedings of HLT/EMNLP 2005, pp. 507-514.

    Examples
    --------
    One chain of two nodes with two hidden values, and uniform potentials: four assignments.

    >>> import numpy as np
    >>> from sparsecca.kernels import chain_marginals
    >>> log_z, mu, xi = chain_marginals(np.zeros((2, 2)), np.zeros((2, 2, 2)), [0, 2])
    >>> round(float(np.exp(log_z[0])), 12), mu.tolist()
    (4.0, [[0.5, 0.5], [0.5, 0.5]])
    >>> xi[1].tolist(), xi[0].tolist()  # the first node has no incoming edge
    ([[0.25, 0.25], [0.25, 0.25]], [[0.0, 0.0], [0.0, 0.0]])
    """
    node = real_array("node_potentials", node_potentials, ndim=2)
    edge = real_array("edge_potentials", edge_potentials, ndim=3)
    off = int_array("offsets", offsets)
    n, H = node.shape
    if H < 1:
        raise ValueError(f"node_potentials must have at least one hidden value (column), got "
                         f"shape {node.shape}")
    if edge.shape != (n, H, H):
        raise ValueError(f"edge_potentials must have shape ({n}, {H}, {H}) to match "
                         f"node_potentials, got {edge.shape}")
    for name, a in (("node_potentials", node), ("edge_potentials", edge)):
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name} must be finite")
    check_offsets("offsets", off, n, "n_nodes")
    if not isinstance(marginals, (bool, np.bool_)):
        raise TypeError(f"marginals must be True or False, got {marginals!r}")
    return _chain_kernel(node, edge, off, bool(marginals))
