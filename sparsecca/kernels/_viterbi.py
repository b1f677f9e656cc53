"""k-best list Viterbi for a second-order (trigram) HMM over pruned candidate lattices.

The decoder works on pair states ``(t_{i-1}, t_i)``, so a second-order chain becomes a
first-order one and every path through the pair lattice is a distinct tag sequence: the
k-best paths are the k-best sequences, without duplicates.  Each state keeps a sorted list of
its up to ``k`` best partial paths; a state's list is the k-way merge of its predecessors'
lists (each shifted by one transition + emission score), which is exact (Huang & Chiang 2005,
"algorithm 1" style list Viterbi).

Everything is in natural-log space, so even very long sentences do not underflow.

Transition model (``S`` = number of transition states = tags + BOS + EOS):

* ``bigram_logp[t1 * S + t]`` is the log of the back-off mixture used when the trigram
  ``(t2, t1, t)`` was never observed (e.g. ``l1 P(t) + l2 P(t | t1)``);
* ``context_adj[t2 * S + t1]`` is added to it (e.g. a renormalisation when the context
  ``(t2, t1)`` was never observed, 0 otherwise);
* observed trigrams are stored CSR-like: for context ``c = t2 * S + t1`` the sorted tags
  ``tri_tags[tri_indptr[c]:tri_indptr[c + 1]]`` and their full log-probabilities
  ``tri_logp[...]``, found by binary search.

Per-token candidates (the lattice after tag-dictionary pruning) are CSR-like too: token ``j``
may take the tags ``cand_tags[cand_offsets[j]:cand_offsets[j + 1]]`` with emission
log-probabilities ``cand_logp[...]``.  Candidate tags of one token must be distinct.
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import JIT_PARALLEL, JIT_SERIAL
from .._params import check_bool, check_int
from ._checks import check_offsets, first_unsorted_segment, int_array, real_array

__all__ = ["kbest_viterbi", "sequence_logprob"]


@numba.njit(**JIT_SERIAL)
def _log_trans(t2, t1, t, n_states, bigram_logp, context_adj, tri_indptr, tri_tags, tri_logp,
               tri_add):
    c = t2 * n_states + t1
    lo = tri_indptr[c]
    end = tri_indptr[c + 1]
    hi = end
    while lo < hi:
        mid = (lo + hi) >> 1
        if tri_tags[mid] < t:
            lo = mid + 1
        else:
            hi = mid
    if lo < end and tri_tags[lo] == t:
        if tri_add:
            return tri_logp[lo] + bigram_logp[t1 * n_states + t] + context_adj[c]
        return tri_logp[lo]
    return bigram_logp[t1 * n_states + t] + context_adj[c]


@numba.njit(**JIT_SERIAL)
def _decode_sentence(a, b, cand_offsets, cand_tags, cand_logp, n_states, bigram_logp,
                     context_adj, tri_indptr, tri_tags, tri_logp, tri_add, norm_offsets, norm,
                     bos, eos, k, out_tags, out_base, out_scores):
    """k-best decode of the sentence made of tokens ``a:b``.

    Writes candidate ``r`` (r < count) to ``out_tags[out_base + r * n : out_base + (r+1) * n]``
    and its score to ``out_scores[r]``; returns ``count`` (<= k).
    """
    n = b - a
    has_norm = norm_offsets.size > 0
    # lattice layers m = 0..n: layer m holds the states (t_{m-1}, t_m); layer n is the EOS
    # step.  Positions -1 and -2 have the single candidate BOS, position n the single EOS.
    n_c = np.ones(n + 3, dtype=np.int64)  # n_c[m + 2] = number of candidates at position m
    for m in range(n):
        n_c[m + 2] = cand_offsets[a + m + 1] - cand_offsets[a + m]
    layer_off = np.zeros(n + 2, dtype=np.int64)
    max_c = 1
    for m in range(n + 1):
        layer_off[m + 1] = layer_off[m] + n_c[m + 1] * n_c[m + 2]
        if n_c[m + 2] > max_c:
            max_c = n_c[m + 2]
    n_total = layer_off[n + 1]
    score = np.empty(n_total * k, dtype=np.float64)
    back_o = np.empty(n_total * k, dtype=np.int32)
    back_r = np.empty(n_total * k, dtype=np.int32)
    count = np.zeros(n_total, dtype=np.int32)
    ptr = np.empty(max_c, dtype=np.int64)
    add = np.empty(max_c, dtype=np.float64)
    for m in range(n + 1):
        n_o = n_c[m]
        n_p = n_c[m + 1]
        n_q = n_c[m + 2]
        for q in range(n_q):
            if m < n:
                j = cand_offsets[a + m] + q
                t = cand_tags[j]
                e = cand_logp[j]
            else:
                t = eos
                e = 0.0
            for p in range(n_p):
                t1 = bos if m == 0 else cand_tags[cand_offsets[a + m - 1] + p]
                s = layer_off[m] + p * n_q + q
                if m == 0:
                    # the only predecessor is the start state (BOS, BOS) with score 0
                    score[s * k] = (_log_trans(bos, bos, t, n_states, bigram_logp, context_adj,
                                               tri_indptr, tri_tags, tri_logp, tri_add) + e)
                    if has_norm and n > 0:
                        score[s * k] -= norm[norm_offsets[a]]
                    back_o[s * k] = 0
                    back_r[s * k] = 0
                    count[s] = 1
                    continue
                for o in range(n_o):
                    t2 = bos if m == 1 else cand_tags[cand_offsets[a + m - 2] + o]
                    add[o] = _log_trans(t2, t1, t, n_states, bigram_logp, context_adj,
                                        tri_indptr, tri_tags, tri_logp, tri_add) + e
                    if has_norm and m < n:
                        add[o] -= norm[norm_offsets[a + m] + o * n_p + p]
                    ptr[o] = 0
                prev0 = layer_off[m - 1] + p  # predecessor (o, p) is prev0 + o * n_p
                c = 0
                while c < k:
                    best = -np.inf
                    bo = -1
                    for o in range(n_o):
                        ps = prev0 + o * n_p
                        if ptr[o] < count[ps]:
                            v = score[ps * k + ptr[o]] + add[o]
                            if bo < 0 or v > best:
                                best = v
                                bo = o
                    if bo < 0:
                        break
                    score[s * k + c] = best
                    back_o[s * k + c] = bo
                    back_r[s * k + c] = ptr[bo]
                    ptr[bo] += 1
                    c += 1
                count[s] = c
    # final merge over the EOS layer's states (p, EOS)
    n_p = n_c[n + 1]
    for p in range(n_p):
        ptr[p] = 0
    n_out = 0
    while n_out < k:
        best = -np.inf
        bp = -1
        for p in range(n_p):
            s = layer_off[n] + p
            if ptr[p] < count[s]:
                v = score[s * k + ptr[p]]
                if bp < 0 or v > best:
                    best = v
                    bp = p
        if bp < 0:
            break
        out_scores[n_out] = best
        # backtrack: the state at layer m is (cur_p, cur_q), entry cur_r
        cur_p = bp
        cur_q = 0
        cur_r = ptr[bp]
        ptr[bp] += 1
        base = out_base + n_out * n
        for m in range(n, -1, -1):
            s = layer_off[m] + cur_p * n_c[m + 2] + cur_q
            if m < n:
                out_tags[base + m] = cand_tags[cand_offsets[a + m] + cur_q]
            o = back_o[s * k + cur_r]
            cur_r = back_r[s * k + cur_r]
            cur_q = cur_p
            cur_p = o
        n_out += 1
    return n_out


@numba.njit(**JIT_SERIAL)
def _kbest_serial(sent_offsets, cand_offsets, cand_tags, cand_logp, n_states, bigram_logp,
                  context_adj, tri_indptr, tri_tags, tri_logp, tri_add, norm_offsets, norm,
                  bos, eos, k,
                  out_tags, out_scores, out_counts):
    for i in range(sent_offsets.size - 1):
        a = sent_offsets[i]
        b = sent_offsets[i + 1]
        out_counts[i] = _decode_sentence(a, b, cand_offsets, cand_tags, cand_logp, n_states,
                                         bigram_logp, context_adj, tri_indptr, tri_tags,
                                         tri_logp, tri_add, norm_offsets, norm, bos, eos,
                                         k, out_tags, a * k,
                                         out_scores[i])


@numba.njit(**JIT_PARALLEL)
def _kbest_parallel(sent_offsets, cand_offsets, cand_tags, cand_logp, n_states, bigram_logp,
                    context_adj, tri_indptr, tri_tags, tri_logp, tri_add, norm_offsets, norm,
                    bos, eos, k,
                    out_tags, out_scores, out_counts):
    for i in numba.prange(sent_offsets.size - 1):
        a = sent_offsets[i]
        b = sent_offsets[i + 1]
        out_counts[i] = _decode_sentence(a, b, cand_offsets, cand_tags, cand_logp, n_states,
                                         bigram_logp, context_adj, tri_indptr, tri_tags,
                                         tri_logp, tri_add, norm_offsets, norm, bos, eos,
                                         k, out_tags, a * k,
                                         out_scores[i])


@numba.njit(**JIT_SERIAL)
def _sequence_logprob(sent_offsets, seq_offsets, seq_sent, seq_tags, cand_offsets, cand_tags,
                      cand_logp, n_states, bigram_logp, context_adj, tri_indptr, tri_tags,
                      tri_logp, tri_add, norm_offsets, norm, bos, eos, out):
    has_norm = norm_offsets.size > 0
    for r in range(seq_sent.size):
        i = seq_sent[r]
        a = sent_offsets[i]
        n = sent_offsets[i + 1] - a
        s0 = seq_offsets[r]
        total = 0.0
        t2 = bos
        t1 = bos
        q2 = 0  # candidate index of t2 / t1 within their token (0 for BOS)
        q1 = 0
        for m in range(n + 1):
            q = -1
            if m < n:
                t = seq_tags[s0 + m]
                e = -np.inf
                for j in range(cand_offsets[a + m], cand_offsets[a + m + 1]):
                    if cand_tags[j] == t:
                        e = cand_logp[j]
                        q = j - cand_offsets[a + m]
            else:
                t = eos
                e = 0.0
            total += _log_trans(t2, t1, t, n_states, bigram_logp, context_adj, tri_indptr,
                                tri_tags, tri_logp, tri_add) + e
            if has_norm and m < n and q1 >= 0 and q2 >= 0:
                n_p = 1 if m == 0 else cand_offsets[a + m] - cand_offsets[a + m - 1]
                total -= norm[norm_offsets[a + m] + q2 * n_p + q1]
            t2 = t1
            t1 = t
            q2 = q1
            q1 = q
        out[r] = total


# ---------------------------------------------------------------------------------------
# public wrappers: validate once, convert once, never let a bad array reach numba
# ---------------------------------------------------------------------------------------

def _check_logp(name, a, what="log-probabilities"):
    # NaN makes the kernel's ``v > best`` merge pick paths in arbitrary order, and +inf is no
    # log-probability; -inf (log 0) is a valid value
    bad = np.isnan(a) | (a == np.inf)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} must be finite or -inf ({what}), got {a[i]} at index {i}")


def _check_state(name, v, S):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an int in [0, n_states={S}), got {v!r}")
    if not 0 <= v < S:
        raise ValueError(f"{name} must be an int in [0, n_states={S}), got {v!r}")
    return int(v)


def _check_transitions(n_states, bigram_logp, context_adj, tri_indptr, tri_tags, tri_logp,
                       bos, eos):
    if not isinstance(n_states, (int, np.integer)) or n_states < 2:
        raise ValueError(f"n_states must be an int >= 2, got {n_states!r}")
    S = int(n_states)
    # (S, S) tables are accepted as well as their (S * S,) ravel
    bigram_logp = real_array("bigram_logp", bigram_logp, ndim=None).ravel()
    context_adj = real_array("context_adj", context_adj, ndim=None).ravel()
    if bigram_logp.size != S * S:
        raise ValueError(f"bigram_logp must have n_states**2={S * S} entries, got "
                         f"{bigram_logp.size}")
    if context_adj.size != S * S:
        raise ValueError(f"context_adj must have n_states**2={S * S} entries, got "
                         f"{context_adj.size}")
    tri_indptr = int_array("tri_indptr", tri_indptr, np.int64)
    tri_tags = int_array("tri_tags", tri_tags, np.int32)
    tri_logp = real_array("tri_logp", tri_logp)
    if tri_indptr.size != S * S + 1:
        raise ValueError(f"tri_indptr must have n_states**2 + 1={S * S + 1} entries, got "
                         f"{tri_indptr.size}")
    check_offsets("tri_indptr", tri_indptr, tri_tags.size, "len(tri_tags)")
    if tri_logp.size != tri_tags.size:
        raise ValueError(f"tri_logp has {tri_logp.size} entries, tri_tags {tri_tags.size}")
    if tri_tags.size and (tri_tags.min() < 0 or tri_tags.max() >= S):
        raise ValueError(f"tri_tags must lie in [0, n_states={S})")
    # the kernel finds a stored trigram by binary search: out of order, it falls back to the
    # back-off silently
    c = first_unsorted_segment(tri_indptr, tri_tags, strict=True)
    if c >= 0:
        raise ValueError(f"tri_tags must be sorted (ascending, without repeats) within each "
                         f"context; context {c} (t2={c // S}, t1={c % S}) is not")
    _check_logp("bigram_logp", bigram_logp)
    _check_logp("context_adj", context_adj, "a log-probability adjustment")
    _check_logp("tri_logp", tri_logp)
    bos = _check_state("bos", bos, S)
    eos = _check_state("eos", eos, S)
    if bos == eos:
        raise ValueError(f"bos and eos must be different states, got both {bos}")
    return S, bigram_logp, context_adj, tri_indptr, tri_tags, tri_logp, bos, eos


def _check_candidates(sent_offsets, cand_offsets, cand_tags, cand_logp, S, bos, eos):
    sent_offsets = int_array("sent_offsets", sent_offsets, np.int64)
    cand_offsets = int_array("cand_offsets", cand_offsets, np.int64)
    cand_tags = int_array("cand_tags", cand_tags, np.int32)
    cand_logp = real_array("cand_logp", cand_logp)
    n_tokens = cand_offsets.size - 1
    check_offsets("sent_offsets", sent_offsets, n_tokens, "n_tokens (len(cand_offsets) - 1)")
    check_offsets("cand_offsets", cand_offsets, cand_tags.size, "len(cand_tags)")
    if cand_logp.size != cand_tags.size:
        raise ValueError(f"cand_logp has {cand_logp.size} entries, cand_tags {cand_tags.size}")
    if n_tokens and np.any(np.diff(cand_offsets) < 1):
        bad = int(np.flatnonzero(np.diff(cand_offsets) < 1)[0])
        raise ValueError(f"every token needs at least one candidate tag; token {bad} has none")
    if cand_tags.size and (cand_tags.min() < 0 or cand_tags.max() >= S):
        raise ValueError(f"cand_tags must lie in [0, n_states={S}), got range "
                         f"[{cand_tags.min()}, {cand_tags.max()}]")
    boundary = np.flatnonzero((cand_tags == bos) | (cand_tags == eos))
    if boundary.size:
        p = int(boundary[0])
        j = int(np.searchsorted(cand_offsets, p, side="right")) - 1
        raise ValueError(f"cand_tags must not contain bos ({bos}) or eos ({eos}); token {j} "
                         f"has candidate {cand_tags[p]}")
    # a repeated candidate would give the same tag sequence twice in a k-best list; tags
    # sorted within each token (the usual case) are distinct without a sort
    if first_unsorted_segment(cand_offsets, cand_tags, strict=True) >= 0:
        token = np.repeat(np.arange(n_tokens), np.diff(cand_offsets))
        order = np.lexsort((cand_tags, token))
        tk, tg = token[order], cand_tags[order]
        dup = np.flatnonzero((tk[1:] == tk[:-1]) & (tg[1:] == tg[:-1]))
        if dup.size:
            raise ValueError(f"candidate tags must be distinct within each token; token "
                             f"{tk[dup[0]]} has candidate tag {tg[dup[0]]} twice")
    _check_logp("cand_logp", cand_logp, "emission log-probabilities")
    return sent_offsets, cand_offsets, cand_tags, cand_logp


_TRIGRAM_MODES = ("backoff", "additive")


def _check_scoring(trigrams, norm_offsets, norm, sent_offsets, cand_offsets):
    """The trigram mode as the kernel's flag, and the context normalisers (empty: none)."""
    if not isinstance(trigrams, str) or trigrams not in _TRIGRAM_MODES:
        raise ValueError(f"trigrams must be one of {_TRIGRAM_MODES}, got {trigrams!r}")
    if norm_offsets is None and norm is None:
        return trigrams == "additive", np.zeros(0, dtype=np.int64), np.zeros(0, np.float64)
    if norm_offsets is None or norm is None:
        raise ValueError("norm_offsets and norm must be given together")
    norm_offsets = int_array("norm_offsets", norm_offsets, np.int64)
    norm = real_array("norm", norm)
    n_tokens = cand_offsets.size - 1
    if norm_offsets.size != n_tokens + 1:
        raise ValueError(f"norm_offsets must have n_tokens + 1={n_tokens + 1} entries, got "
                         f"{norm_offsets.size}")
    check_offsets("norm_offsets", norm_offsets, norm.size, "len(norm)")
    # token j at position m needs one normaliser per pair of candidates of positions m - 2
    # and m - 1 (a single BOS candidate before the sentence)
    n_c = np.diff(cand_offsets)
    pos = np.arange(n_tokens) - np.repeat(sent_offsets[:-1], np.diff(sent_offsets))
    prev1 = np.where(pos >= 1, np.roll(n_c, 1), 1)
    prev2 = np.where(pos >= 2, np.roll(n_c, 2), 1)
    bad = np.flatnonzero(np.diff(norm_offsets) != prev1 * prev2)
    if bad.size:
        j = int(bad[0])
        raise ValueError(f"norm_offsets must give token j (n_cand[j-2] * n_cand[j-1] within its "
                         f"sentence) normalisers; token {j} needs {int(prev1[j] * prev2[j])}, "
                         f"got {int(np.diff(norm_offsets)[j])}")
    if not np.all(np.isfinite(norm)):
        i = int(np.flatnonzero(~np.isfinite(norm))[0])
        raise ValueError(f"norm must be finite, got {norm[i]} at index {i}")
    return trigrams == "additive", norm_offsets, norm


def kbest_viterbi(sent_offsets, cand_offsets, cand_tags, cand_logp, n_states, bigram_logp,
                  context_adj, tri_indptr, tri_tags, tri_logp, bos, eos, k=1, parallel=False,
                  *, trigrams="backoff", norm_offsets=None, norm=None):
    """The k best tag sequences of many sentences under a second-order HMM.

    Parameters
    ----------
    sent_offsets : int array, shape (n_sentences + 1,)
        Sentence ``i`` is tokens ``sent_offsets[i]:sent_offsets[i + 1]``.
    cand_offsets : int array, shape (n_tokens + 1,)
        Token ``j`` may take the tags ``cand_tags[cand_offsets[j]:cand_offsets[j + 1]]``
        (at least one, all distinct).
    cand_tags : int array, shape (n_cand,)
        Candidate tag ids in ``[0, n_states)``, neither ``bos`` nor ``eos``.
    cand_logp : float array, shape (n_cand,)
        Emission log-probability of each candidate (finite or -inf, as every table below).
    n_states : int
        Size ``S`` of the transition state space (tags plus BOS and EOS).
    bigram_logp : float array, shape (S, S) or (S * S,)
        Log-probability of ``t`` after ``t1`` used for trigrams not stored explicitly.
    context_adj : float array, shape (S, S) or (S * S,)
        Added to ``bigram_logp`` for such trigrams, per context ``(t2, t1)``.
    tri_indptr : int array, shape (S * S + 1,)
    tri_tags : int array, shape (n_trigrams,)
        Sorted within each context ``t2 * S + t1``.
    tri_logp : float array, shape (n_trigrams,)
        Log-probability of the stored trigrams.
    bos, eos : int
        State ids of the sentence boundaries (different).
    k : int >= 1
        Number of sequences per sentence; fewer are returned when a sentence has fewer.
    parallel : bool
        Decode sentences on all numba threads (``prange``).
    trigrams : {'backoff', 'additive'}, default 'backoff'
        How a stored trigram scores: 'backoff' (probabilistic models) uses ``tri_logp`` in
        place of ``bigram_logp + context_adj``; 'additive' (linear models such as the
        structured perceptron) adds it to them.
    norm_offsets : int array, shape (n_tokens + 1,), optional
    norm : float array, optional
        Per-context normalisers subtracted from every transition into a token (for locally
        normalised models, ``log Z`` of a maximum-entropy Markov model): token ``j`` at
        position ``m`` of its sentence has ``n_cand[j - 2] * n_cand[j - 1]`` entries (1 for
        a BOS position), entry ``o * n_cand[j - 1] + p`` for the context (candidate ``o`` of
        token ``j - 2``, candidate ``p`` of token ``j - 1``).  Given together or not at all.

    Raises
    ------
    TypeError
        For float or bool id / offset arrays (they would be truncated) and non-bool
        ``parallel``.
    ValueError
        For arrays that break the layout above: offsets, ranges, NaN or +inf in a table,
        ``tri_tags`` unsorted within a context, repeated candidates of a token.

    Returns
    -------
    seq_tags : int32 array, shape (sum of candidate lengths,)
        The sequences, flat.
    seq_offsets : int64 array, shape (n_sequences + 1,)
        Sequence ``r`` is ``seq_tags[seq_offsets[r]:seq_offsets[r + 1]]``.
    sent_seq_offsets : int64 array, shape (n_sentences + 1,)
        The sequences of sentence ``i`` are ``sent_seq_offsets[i]:sent_seq_offsets[i + 1]``,
        sorted by descending score.
    scores : float64 array, shape (n_sequences,)
        Log-probability of each sequence (transitions, including BOS and EOS, plus
        emissions).

    Notes
    -----
    The lattice states are tag pairs ``(t_{i-1}, t_i)``, so the second-order chain is
    first-order over them and distinct paths are distinct tag sequences.  Each state keeps
    its up to ``k`` best partial paths, the k-way merge of its predecessors' lists; the cost
    is O(n k C^3) for a sentence of n tokens with at most C candidate tags each (times a
    log factor for the trigram look-up).

    References
    ----------
    L. Huang and D. Chiang (2005).  Better k-best parsing.  Proceedings of IWPT 2005,
    pp. 53-64.

    T. Brants (2000).  TnT - a statistical part-of-speech tagger.  Proceedings of ANLP 2000,
    pp. 224-231.

    Examples
    --------
    Two tags (0, 1) plus BOS = 2 and EOS = 3, uniform transitions and no stored trigram, so
    the emissions decide; one sentence of two tokens, each of which may take either tag:

    >>> import numpy as np
    >>> from sparsecca.kernels import kbest_viterbi
    >>> S = 4
    >>> transitions = dict(n_states=S, bigram_logp=np.full((S, S), np.log(0.25)),
    ...                    context_adj=np.zeros((S, S)), tri_indptr=np.zeros(S * S + 1, int),
    ...                    tri_tags=[], tri_logp=[], bos=2, eos=3)
    >>> emissions = np.log([0.9, 0.1, 0.2, 0.8])  # token 0: tags 0, 1; token 1: tags 0, 1
    >>> seq_tags, seq_offsets, sent_seq_offsets, scores = kbest_viterbi(
    ...     [0, 2], [0, 2, 4], [0, 1, 0, 1], emissions, k=3, **transitions)
    >>> seq_tags.reshape(-1, 2).tolist(), sent_seq_offsets.tolist()
    ([[0, 1], [0, 0], [1, 1]], [0, 3])
    >>> np.exp(scores - 3 * np.log(0.25)).round(3).tolist()  # the emission products
    [0.72, 0.18, 0.08]
    """
    k = check_int("k", k, 1)
    parallel = check_bool("parallel", parallel)
    S, bigram_logp, context_adj, tri_indptr, tri_tags, tri_logp, bos, eos = _check_transitions(
        n_states, bigram_logp, context_adj, tri_indptr, tri_tags, tri_logp, bos, eos)
    sent_offsets, cand_offsets, cand_tags, cand_logp = _check_candidates(
        sent_offsets, cand_offsets, cand_tags, cand_logp, S, bos, eos)
    tri_add, norm_offsets, norm = _check_scoring(trigrams, norm_offsets, norm, sent_offsets,
                                                 cand_offsets)
    n_sent = sent_offsets.size - 1
    out_tags = np.zeros((cand_offsets.size - 1) * k, dtype=np.int32)
    out_scores = np.full((n_sent, k), -np.inf, dtype=np.float64)
    out_counts = np.zeros(n_sent, dtype=np.int64)
    if n_sent:
        (_kbest_parallel if parallel else _kbest_serial)(
            sent_offsets, cand_offsets, cand_tags, cand_logp, S, bigram_logp, context_adj,
            tri_indptr, tri_tags, tri_logp, tri_add, norm_offsets, norm, bos, eos, k,
            out_tags, out_scores, out_counts)
    return _compact(sent_offsets, k, out_tags, out_scores, out_counts)


def _compact(sent_offsets, k, out_tags, out_scores, out_counts):
    """The flat (seq_tags, seq_offsets, sent_seq_offsets, scores) of :func:`kbest_viterbi`
    from the kernels' output, where sentence ``i`` wrote its candidates at token offset
    ``sent_offsets[i] * k``."""
    n_sent = sent_offsets.size - 1
    lengths = np.diff(sent_offsets)
    sent_seq_offsets = np.zeros(n_sent + 1, dtype=np.int64)
    np.cumsum(out_counts, out=sent_seq_offsets[1:])
    seq_sent = np.repeat(np.arange(n_sent), out_counts)
    seq_rank = np.arange(seq_sent.size) - sent_seq_offsets[seq_sent]
    seq_len = lengths[seq_sent]
    seq_offsets = np.zeros(seq_sent.size + 1, dtype=np.int64)
    np.cumsum(seq_len, out=seq_offsets[1:])
    src_start = sent_offsets[seq_sent] * k + seq_rank * seq_len
    pos = (np.repeat(src_start - seq_offsets[:-1], seq_len)
           + np.arange(seq_offsets[-1], dtype=np.int64))
    seq_tags = out_tags[pos]
    scores = out_scores[seq_sent, seq_rank]
    return seq_tags, seq_offsets, sent_seq_offsets, scores


def sequence_logprob(sent_offsets, cand_offsets, cand_tags, cand_logp, n_states, bigram_logp,
                     context_adj, tri_indptr, tri_tags, tri_logp, bos, eos, seq_sent, seq_tags,
                     seq_offsets, *, trigrams="backoff", norm_offsets=None, norm=None):
    """Model log-probability of given tag sequences (the score :func:`kbest_viterbi` reports).

    ``seq_sent[r]`` is the sentence of sequence ``r`` whose tags are
    ``seq_tags[seq_offsets[r]:seq_offsets[r + 1]]``; a tag that is not a candidate of its
    token gets emission log-probability ``-inf``.  Other arguments (``trigrams``,
    ``norm_offsets``, ``norm`` too) as in :func:`kbest_viterbi`.

    Returns
    -------
    float64 array, shape (n_sequences,)

    Raises
    ------
    ValueError, TypeError
        As :func:`kbest_viterbi`, and for sequences whose length differs from their
        sentence's or ``seq_sent`` / ``seq_tags`` out of range.

    Examples
    --------
    The model of the :func:`kbest_viterbi` example: the best sequence (0, 1) and the worst
    (1, 0) of its two-token sentence.

    >>> import numpy as np
    >>> from sparsecca.kernels import sequence_logprob
    >>> S = 4
    >>> transitions = dict(n_states=S, bigram_logp=np.full((S, S), np.log(0.25)),
    ...                    context_adj=np.zeros((S, S)), tri_indptr=np.zeros(S * S + 1, int),
    ...                    tri_tags=[], tri_logp=[], bos=2, eos=3)
    >>> emissions = np.log([0.9, 0.1, 0.2, 0.8])
    >>> logp = sequence_logprob([0, 2], [0, 2, 4], [0, 1, 0, 1], emissions,
    ...                         seq_sent=[0, 0], seq_tags=[0, 1, 1, 0], seq_offsets=[0, 2, 4],
    ...                         **transitions)
    >>> np.exp(logp - 3 * np.log(0.25)).round(3).tolist()
    [0.72, 0.02]
    """
    S, bigram_logp, context_adj, tri_indptr, tri_tags, tri_logp, bos, eos = _check_transitions(
        n_states, bigram_logp, context_adj, tri_indptr, tri_tags, tri_logp, bos, eos)
    sent_offsets, cand_offsets, cand_tags, cand_logp = _check_candidates(
        sent_offsets, cand_offsets, cand_tags, cand_logp, S, bos, eos)
    tri_add, norm_offsets, norm = _check_scoring(trigrams, norm_offsets, norm, sent_offsets,
                                                 cand_offsets)
    seq_sent = int_array("seq_sent", seq_sent, np.int64)
    seq_tags = int_array("seq_tags", seq_tags, np.int32)
    seq_offsets = int_array("seq_offsets", seq_offsets, np.int64)
    if seq_offsets.size != seq_sent.size + 1:
        raise ValueError(f"seq_offsets must have len(seq_sent) + 1={seq_sent.size + 1} "
                         f"entries, got {seq_offsets.size}")
    check_offsets("seq_offsets", seq_offsets, seq_tags.size, "len(seq_tags)")
    n_sent = sent_offsets.size - 1
    if seq_sent.size and (seq_sent.min() < 0 or seq_sent.max() >= n_sent):
        raise ValueError(f"seq_sent must lie in [0, n_sentences={n_sent})")
    lens = np.diff(sent_offsets)[seq_sent]
    if not np.array_equal(np.diff(seq_offsets), lens):
        raise ValueError("each sequence must have the length of its sentence")
    if seq_tags.size and (seq_tags.min() < 0 or seq_tags.max() >= S):
        raise ValueError(f"seq_tags must lie in [0, n_states={S})")
    out = np.empty(seq_sent.size, dtype=np.float64)
    _sequence_logprob(sent_offsets, seq_offsets, seq_sent, seq_tags, cand_offsets, cand_tags,
                      cand_logp, S, bigram_logp, context_adj, tri_indptr, tri_tags, tri_logp,
                      tri_add, norm_offsets, norm, bos, eos, out)
    return out
