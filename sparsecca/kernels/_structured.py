"""Training loop of the structured averaged perceptron for second-order taggers (Collins 2002).

A tag sequence ``t_1..t_n`` of a sentence ``x`` scores

``sum_i [ X[i] @ W[:, t_i] + B[t_{i-1}, t_i] + C[t_{i-2}, t_{i-1}, t_i] ]``

(``i = 1..n + 1``, boundary states ``t_{-1} = t_0 = BOS`` and ``t_{n+1} = EOS``, no emission
at ``n + 1``), a linear model over the sparse token features ``X`` (one row per token).  The
weights live in three flat arrays:

* emission weights of the supported (feature, tag) pairs, CSR by feature (``emit_indptr``,
  sorted ``emit_tags``); an unsupported pair weighs 0 and is never updated;
* a dense bigram table ``B`` over the ``S`` transition states (tags, BOS, EOS);
* the trigram weights of a fixed set of trigrams, CSR by context ``t2 * S + t1``
  (``tri_indptr``, sorted ``tri_tags``); a trigram outside the set weighs 0.

Decoding is the pair-state list Viterbi of :mod:`._viterbi` (``k = 1``) in its additive
trigram mode, over the candidate lattice of each sentence.

Averaging (Collins 2002, section 2.5): the returned weights are the mean of the weight
vectors after every training example (every sentence visit, empty sentences included).  A
change ``delta`` made during example ``c`` (0-based) is in the weights of examples
``c + 1..C``, so after ``C`` examples the sum of the weight vectors is ``C w - sum c delta``:
each weight keeps, beside its value, the sum ``wc`` of ``c * delta`` over its changes (one
more add per change, nothing per example; exact in integers for 0/1 features).
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from .._config import JIT_SERIAL
from .._params import check_int
from ._checks import check_best_sequences, check_offsets, first_unsorted_segment, int_array
from ._viterbi import _check_candidates, _decode_sentence

__all__ = ["structured_perceptron"]

#: largest dense trigram table (entries, S**3) of the fast training decoder (32 MB)
_DENSE_TRIGRAMS = 1 << 22


@numba.njit(**JIT_SERIAL)
def _find(indices, lo, hi, t):
    """Position of ``t`` in the sorted ``indices[lo:hi]``, -1 when absent."""
    end = hi
    while lo < hi:
        mid = (lo + hi) >> 1
        if indices[mid] < t:
            lo = mid + 1
        else:
            hi = mid
    if lo < end and indices[lo] == t:
        return lo
    return -1


@numba.njit(**JIT_SERIAL)
def _bump(w, wc, u, delta, c):
    """``w[u] += delta`` at example ``c`` (0-based), with ``wc[u] += c * delta``."""
    w[u] += delta
    wc[u] += c * delta


@numba.njit(**JIT_SERIAL)
def _emission_scores(a, b, phi_indptr, phi_lo, phi_hi, phi_data, emit_tags, emit_w,
                     cand_offsets, cand_tags, out):
    """``out[c] = X[j] @ W[:, cand_tags[c]]`` for the candidates ``c`` of tokens ``a:b``
    (``phi_lo[q]:phi_hi[q]``: the supported pairs of the feature of ``X``'s entry ``q``)."""
    for j in range(a, b):
        c0 = cand_offsets[j]
        c1 = cand_offsets[j + 1]
        for c in range(c0, c1):
            out[c] = 0.0
        for q in range(phi_indptr[j], phi_indptr[j + 1]):
            x = phi_data[q]
            lo = phi_lo[q]
            hi = phi_hi[q]
            for c in range(c0, c1):
                u = _find(emit_tags, lo, hi, cand_tags[c])
                if u >= 0:
                    out[c] += x * emit_w[u]


@numba.njit(**JIT_SERIAL)
def _update_emission(j, t, delta, c, phi_indptr, phi_lo, phi_hi, phi_data, emit_tags, emit_w,
                     emit_wc):
    for q in range(phi_indptr[j], phi_indptr[j + 1]):
        u = _find(emit_tags, phi_lo[q], phi_hi[q], t)
        if u >= 0:
            _bump(emit_w, emit_wc, u, delta * phi_data[q], c)


@numba.njit(**JIT_SERIAL)
def _update_transition(t2, t1, t, delta, c, n_states, big_w, big_wc, tri_indptr, tri_tags,
                       tri_w, tri_wc, tri_dense):
    _bump(big_w, big_wc, t1 * n_states + t, delta, c)
    ctx = t2 * n_states + t1
    u = _find(tri_tags, tri_indptr[ctx], tri_indptr[ctx + 1], t)
    if u >= 0:
        _bump(tri_w, tri_wc, u, delta, c)
        if tri_dense.size:
            tri_dense[ctx * n_states + t] = tri_w[u]


@numba.njit(**JIT_SERIAL)
def _best_path(a, n, cand_offsets, cand_tags, cand_score, n_states, big_w, tri_dense, bos,
               eos, score, back, pred, row, prev):
    """1-best of the sentence made of tokens ``a:a + n`` (n >= 1) with a dense trigram table.

    The same recursion, summation order and tie-breaking (the first best predecessor, the
    first best final state) as ``_decode_sentence`` at ``k = 1`` in its additive mode with a
    zero context adjustment, so both return the same sequence; the transition score is one
    lookup instead of a search.  ``score`` and ``back`` hold at least the lattice's number of
    pair states, the scratch rows ``row`` (int64) and ``prev`` (float64) at least its most
    candidates of a token.
    """
    S = n_states
    SS = S * S
    # layer m holds the pair states (p, q): p a candidate of m - 1 (BOS for m = 0), q of m
    prev_off = 0
    prev_np = 1
    n_q = cand_offsets[a + 1] - cand_offsets[a]
    c0 = cand_offsets[a]
    for q in range(n_q):
        t = cand_tags[c0 + q]
        score[q] = (tri_dense[(bos * S + bos) * S + t] + big_w[bos * S + t]) + cand_score[c0 + q]
        back[q] = 0
    cur_off = 0
    cur_np = 1
    for m in range(1, n + 1):
        prev_off = cur_off
        prev_np = cur_np  # candidates of m - 2 (1 = BOS)
        n_p = cand_offsets[a + m] - cand_offsets[a + m - 1]
        cur_off = prev_off + prev_np * n_p
        p0 = cand_offsets[a + m - 1]
        o0 = cand_offsets[a + m - 2] if m >= 2 else 0
        if m < n:
            q0 = cand_offsets[a + m]
            n_q = cand_offsets[a + m + 1] - q0
        else:
            q0 = 0
            n_q = 1  # the EOS step
        for p in range(n_p):
            t1 = cand_tags[p0 + p]
            for o in range(prev_np):  # the predecessors' scores and trigram rows, once
                t2 = cand_tags[o0 + o] if m >= 2 else bos
                row[o] = t2 * SS + t1 * S
                prev[o] = score[prev_off + o * n_p + p]
            for q in range(n_q):
                if m < n:
                    t = cand_tags[q0 + q]
                    e = cand_score[q0 + q]
                else:
                    t = eos
                    e = 0.0
                bt = big_w[t1 * S + t]
                best = 0.0
                bo = -1
                for o in range(prev_np):
                    v = prev[o] + ((tri_dense[row[o] + t] + bt) + e)
                    if bo < 0 or v > best:
                        best = v
                        bo = o
                s = cur_off + p * n_q + q
                score[s] = best
                back[s] = bo
        cur_np = n_p
    # the EOS layer's states (p, EOS): the first best one
    best = 0.0
    bp = -1
    for p in range(cur_np):
        v = score[cur_off + p]
        if bp < 0 or v > best:
            best = v
            bp = p
    # backtrack through (o, p) pairs
    p = bp
    q = 0
    off = cur_off
    n_q = 1
    for m in range(n, 0, -1):
        o = back[off + p * n_q + q]
        pred[m - 1] = cand_tags[cand_offsets[a + m - 1] + p]
        n_q = cand_offsets[a + m] - cand_offsets[a + m - 1]
        n_o = cand_offsets[a + m - 1] - cand_offsets[a + m - 2] if m >= 2 else 1
        off -= n_o * n_q
        q = p
        p = o
    return best


@numba.njit(**JIT_SERIAL)
def _beam_lattice(a, b, gold, beam, n_states, bos, eos, phi_indptr, phi_lo, phi_hi, phi_data,
                  emit_tags, emit_w, dense, top, loc_offsets, loc_tags, loc_score):
    """Lattice of tokens ``a:b``: the ``beam`` best tags of each token by emission score (ties
    to the lower tag), plus its gold tag, in ascending tag order, with their scores.

    ``top`` (at least ``min(beam, n_states) + 1`` entries) holds the best tags so far in
    descending score, ties in ascending tag order: tags are visited in ascending order and a
    new one moves only past strictly lower scores.
    """
    loc_offsets[0] = 0
    w = 0
    for m in range(b - a):
        j = a + m
        for t in range(n_states):
            dense[t] = 0.0
        for q in range(phi_indptr[j], phi_indptr[j + 1]):
            x = phi_data[q]
            for u in range(phi_lo[q], phi_hi[q]):
                dense[emit_tags[u]] += x * emit_w[u]
        n = 0
        for t in range(n_states):
            if t == bos or t == eos:
                continue
            v = dense[t]
            if n == beam and not v > dense[top[n - 1]]:
                continue
            p = n if n < beam else beam - 1
            while p > 0 and v > dense[top[p - 1]]:
                top[p] = top[p - 1]
                p -= 1
            top[p] = t
            if n < beam:
                n += 1
        g = gold[j]
        seen = False
        for r in range(n):
            if top[r] == g:
                seen = True
        if not seen:
            top[n] = g
            n += 1
        for r in range(1, n):  # ascending tag order
            t = top[r]
            p = r
            while p > 0 and top[p - 1] > t:
                top[p] = top[p - 1]
                p -= 1
            top[p] = t
        for r in range(n):
            loc_tags[w] = top[r]
            loc_score[w] = dense[top[r]]
            w += 1
        loc_offsets[m + 1] = w


@numba.njit(**JIT_SERIAL)
def _epoch(order, sent_offsets, gold, cand_offsets, cand_tags, phi_indptr, phi_lo, phi_hi,
           phi_data, emit_tags, emit_w, emit_wc, n_states, big_w, big_wc, ctx_adj,
           tri_indptr, tri_tags, tri_w, tri_wc, bos, eos, c, cand_score, pred, score_buf, beam,
           dense, top, loc_offsets, loc_tags, loc_score, tri_dense, vit_score, vit_back, row,
           prev):
    """One pass over the sentences in ``order``; returns (examples seen, sentences wrong).

    ``beam == 0`` decodes in the given lattice; ``beam > 0`` in the lattice of
    :func:`_beam_lattice`, rebuilt from the current weights for every sentence visit.  With
    a dense trigram mirror ``tri_dense`` (the current trigram weights at
    ``(t2 * S + t1) * S + t``, 0 elsewhere) the decoder is :func:`_best_path`, else the
    kernel family's ``_decode_sentence``.
    """
    no_offsets = np.zeros(0, dtype=np.int64)
    no_norm = np.zeros(0, dtype=np.float64)
    n_wrong = 0
    for r in range(order.size):
        i = order[r]
        a = sent_offsets[i]
        b = sent_offsets[i + 1]
        n = b - a
        if n > 0:
            if beam > 0:
                _beam_lattice(a, b, gold, beam, n_states, bos, eos, phi_indptr, phi_lo, phi_hi,
                              phi_data, emit_tags, emit_w, dense, top,
                              loc_offsets, loc_tags, loc_score)
                lat_a, lat_offsets, lat_tags, lat_score = 0, loc_offsets, loc_tags, loc_score
            else:
                _emission_scores(a, b, phi_indptr, phi_lo, phi_hi, phi_data, emit_tags, emit_w,
                                 cand_offsets, cand_tags, cand_score)
                lat_a, lat_offsets, lat_tags, lat_score = a, cand_offsets, cand_tags, cand_score
            if tri_dense.size:
                _best_path(lat_a, n, lat_offsets, lat_tags, lat_score, n_states, big_w,
                           tri_dense, bos, eos, vit_score, vit_back, pred, row, prev)
            else:
                _decode_sentence(lat_a, lat_a + n, lat_offsets, lat_tags, lat_score, n_states,
                                 big_w, ctx_adj, tri_indptr, tri_tags, tri_w, True, no_offsets,
                                 no_norm, bos, eos, 1, pred, 0, score_buf)
            wrong = False
            for m in range(n):
                if pred[m] != gold[a + m]:
                    wrong = True
            if wrong:
                n_wrong += 1
                # w += Phi(x, gold) - Phi(x, pred): emissions where the tags differ ...
                for m in range(n):
                    g = gold[a + m]
                    p = pred[m]
                    if g != p:
                        _update_emission(a + m, g, 1.0, c, phi_indptr, phi_lo, phi_hi, phi_data,
                                         emit_tags, emit_w, emit_wc)
                        _update_emission(a + m, p, -1.0, c, phi_indptr, phi_lo, phi_hi, phi_data,
                                         emit_tags, emit_w, emit_wc)
                # ... and tag histories where the trigrams differ (EOS step included)
                g2 = bos
                g1 = bos
                p2 = bos
                p1 = bos
                for m in range(n + 1):
                    g = gold[a + m] if m < n else eos
                    p = pred[m] if m < n else eos
                    if g != p or g1 != p1 or g2 != p2:
                        _update_transition(g2, g1, g, 1.0, c, n_states, big_w, big_wc,
                                           tri_indptr, tri_tags, tri_w, tri_wc, tri_dense)
                        _update_transition(p2, p1, p, -1.0, c, n_states, big_w, big_wc,
                                           tri_indptr, tri_tags, tri_w, tri_wc, tri_dense)
                    g2 = g1
                    g1 = g
                    p2 = p1
                    p1 = p
        c += 1
    return c, n_wrong


@numba.njit(**JIT_SERIAL)
def _best_paths(sent_offsets, phi_indptr, phi_lo, phi_hi, phi_data, emit_tags, emit_w,
                cand_offsets, cand_tags, n_states, big_w, tri_dense, bos, eos, score, back, row,
                prev, dense, out_tags, out_scores):
    """1-best of every sentence (all non-empty) with fixed weights: the candidates' emission
    scores (scattered per token in feature order, as a CSR product sums them; ``phi_lo[q]:
    phi_hi[q]`` are the supported pairs of the feature of ``X``'s entry ``q``), then
    :func:`_best_path` per sentence; writes the tags in token order and each best score."""
    cand_score = np.empty(cand_tags.size, dtype=np.float64)
    for j in range(cand_offsets.size - 1):
        for t in range(n_states):
            dense[t] = 0.0
        for q in range(phi_indptr[j], phi_indptr[j + 1]):
            x = phi_data[q]
            for u in range(phi_lo[q], phi_hi[q]):
                dense[emit_tags[u]] += x * emit_w[u]
        for q in range(cand_offsets[j], cand_offsets[j + 1]):
            cand_score[q] = dense[cand_tags[q]]
    for i in range(sent_offsets.size - 1):
        a = sent_offsets[i]
        out_scores[i] = _best_path(a, sent_offsets[i + 1] - a, cand_offsets, cand_tags,
                                   cand_score, n_states, big_w, tri_dense, bos, eos, score,
                                   back, out_tags[a:], row, prev)


def _entry_pairs(X, emit_indptr):
    """``(indptr, lo, hi, data)`` of a CSR ``X``: each entry with the bounds ``lo:hi`` of its
    feature's supported pairs, so that a kernel reads them in token order instead of looking
    them up per feature; 0/1 float32 values stay float32 (exact in the float64 products)."""
    idx = np.int32 if emit_indptr[-1] < 2**31 else np.int64
    return (X.indptr.astype(np.int64), emit_indptr[X.indices].astype(idx),
            emit_indptr[X.indices + 1].astype(idx),
            np.ascontiguousarray(X.data, dtype=np.float32 if X.dtype == np.float32
                                 else np.float64))


def _max_pair_states(sent_offsets, cand_offsets):
    """Most pair states of one sentence's lattice (EOS step included), at least 1."""
    lengths = np.diff(sent_offsets)
    nc = np.diff(cand_offsets)
    before = np.ones_like(nc)  # candidates of the previous token (1: BOS)
    before[1:] = nc[:-1]
    before[sent_offsets[:-1][lengths > 0]] = 1
    cs = np.concatenate([[0], np.cumsum(nc * before)])
    last = nc[np.maximum(sent_offsets[1:] - 1, 0)] if nc.size else np.zeros_like(lengths)
    per_sent = cs[sent_offsets[1:]] - cs[sent_offsets[:-1]] + np.where(lengths > 0, last, 0)
    return max(int(per_sent.max()) if per_sent.size else 1, 1)


def dense_trigrams(tri_indptr, tri_tags, tri_w, n_states):
    """The trigram weights of a tagger as one dense table, or None when it is too large.

    Parameters
    ----------
    tri_indptr : ndarray of int, shape (n_states ** 2 + 1,)
        CSR row pointers over the tag-pair contexts ``t2 * n_states + t1``.
    tri_tags : ndarray of int, shape (n_entries,)
        The third tag of each stored trigram.
    tri_w : ndarray of float, shape (n_entries,)
        Its weight.
    n_states : int
        Tags plus the two boundary states.

    Returns
    -------
    ndarray of float64, shape (n_states ** 3,) or None
        ``out[(t2 * S + t1) * S + t]`` is the weight of trigram ``(t2, t1, t)`` (0 where none
        is stored); None when ``n_states ** 3`` exceeds the kernels' dense-table limit.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsecca.kernels import dense_trigrams
    >>> indptr = np.array([0, 1, 1, 1, 1])  # S = 2: only context (0, 0) has a trigram
    >>> float(dense_trigrams(indptr, [1], [0.5], 2).reshape(2, 2, 2)[0, 0, 1])
    0.5
    """
    S = check_int("n_states", n_states, 1)
    tri_indptr = np.asarray(tri_indptr, dtype=np.int64)
    if tri_indptr.shape != (S * S + 1,) or np.any(np.diff(tri_indptr) < 0):
        raise ValueError(f"tri_indptr must be a non-decreasing array of n_states ** 2 + 1 = "
                         f"{S * S + 1} offsets, got shape {tri_indptr.shape}")
    tri_tags = np.asarray(tri_tags, dtype=np.int64)
    tri_w = np.asarray(tri_w, dtype=np.float64)
    if tri_tags.shape != (tri_indptr[-1],) or tri_w.shape != tri_tags.shape:
        raise ValueError(f"tri_tags and tri_w must have tri_indptr[-1] = {tri_indptr[-1]} "
                         f"entries, got {tri_tags.shape} and {tri_w.shape}")
    if tri_tags.size and (tri_tags.min() < 0 or tri_tags.max() >= S):
        raise ValueError(f"tri_tags must lie in [0, {S}), got values in "
                         f"[{tri_tags.min()}, {tri_tags.max()}]")
    if S ** 3 > _DENSE_TRIGRAMS:
        return None
    out = np.zeros(S ** 3)
    ctx = np.repeat(np.arange(S * S, dtype=np.int64), np.diff(tri_indptr))
    out[ctx * S + tri_tags] = tri_w
    return out


def best_sequences(X, sent_offsets, cand_offsets, cand_tags, emit_indptr, emit_tags, emit_w,
                   bigram_w, tri_dense, bos, eos):
    """The 1-best tag sequence of every sentence of a trained structured perceptron.

    One kernel call scores every candidate tag of every token (``X @ W`` through the
    emission table) and runs the second-order Viterbi recursion with the bigram and dense
    trigram weights: the same sequences and scores as ``kbest_viterbi(..., k=1,
    trigrams="additive")``.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix, shape (n_tokens, n_features)
        Context features of the tokens.
    sent_offsets : ndarray of int, shape (n_sentences + 1,)
        Token offsets of the sentences (none empty).
    cand_offsets : ndarray of int, shape (n_tokens + 1,)
        Offsets of each token's candidate tags in ``cand_tags``.
    cand_tags : ndarray of int32, shape (n_candidates,)
        Candidate tags, in ``[0, n_states - 2)``.
    emit_indptr : ndarray of int, shape (n_features + 1,)
        CSR row pointers of the emission weights per feature.
    emit_tags, emit_w : ndarray, shape (n_emissions,)
        The tag and weight of each stored (feature, tag) emission.
    bigram_w : ndarray of float, shape (n_states, n_states)
        Bigram weights ``[t1, t]``.
    tri_dense : ndarray of float64, shape (n_states ** 3,)
        From :func:`dense_trigrams`.
    bos, eos : int
        The boundary states (``n_states - 2`` and ``n_states - 1``).

    Returns
    -------
    tags : ndarray of int32, shape (n_tokens,)
        The best tag of each token.
    scores : ndarray of float64, shape (n_sentences,)
        The score of each sentence's best sequence.

    Examples
    --------
    Two tokens, two tags (plus the boundary states), no transition weights: each token takes
    the tag its feature favours.

    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sparsecca.kernels import best_sequences, dense_trigrams
    >>> S = 4
    >>> tri = dense_trigrams(np.zeros(S * S + 1, dtype=np.int64), [], [], S)
    >>> tags, scores = best_sequences(
    ...     sp.csr_matrix(np.eye(2)), np.array([0, 2]), np.array([0, 2, 4]),
    ...     np.array([0, 1, 0, 1], dtype=np.int32), np.array([0, 1, 2]),
    ...     np.array([1, 0], dtype=np.int32), np.array([2.0, 3.0]), np.zeros((S, S)), tri,
    ...     S - 2, S - 1)
    >>> tags.tolist(), scores.tolist()
    ([1, 0], [5.0])
    """
    check_best_sequences(X, sent_offsets, cand_offsets, cand_tags, emit_indptr, emit_tags,
                          emit_w, bigram_w, tri_dense, bos, eos)
    S = bigram_w.shape[0]
    sent_offsets = np.ascontiguousarray(sent_offsets, dtype=np.int64)
    n_pairs = _max_pair_states(sent_offsets, cand_offsets)
    out_tags = np.zeros(cand_offsets.size - 1, dtype=np.int32)
    out_scores = np.zeros(sent_offsets.size - 1)
    _best_paths(sent_offsets, *_entry_pairs(X, emit_indptr), emit_tags, emit_w, cand_offsets,
                cand_tags, S, np.ascontiguousarray(bigram_w).ravel(), tri_dense, bos, eos,
                np.zeros(n_pairs), np.zeros(n_pairs, dtype=np.int32),
                np.zeros(S, dtype=np.int64), np.zeros(S), np.zeros(S), out_tags, out_scores)
    return out_tags, out_scores


def _average(w, wc, c):
    """Mean of the weight vectors after examples 1..c (the weights themselves when c = 0)."""
    if c == 0:
        return w.copy()
    return (w * c - wc) / c


def _sorted_rows(name, indptr, indices, n_rows, n_rows_name, high):
    indptr = int_array(f"{name}_indptr", indptr, np.int64)
    indices = int_array(f"{name}_tags", indices, np.int32)
    if indptr.size != n_rows + 1:
        raise ValueError(f"{name}_indptr must have {n_rows_name} + 1={n_rows + 1} entries, got "
                         f"{indptr.size}")
    check_offsets(f"{name}_indptr", indptr, indices.size, f"len({name}_tags)")
    if indices.size and (indices.min() < 0 or indices.max() >= high):
        raise ValueError(f"{name}_tags must lie in [0, n_states={high})")
    row = first_unsorted_segment(indptr, indices, strict=True)
    if row >= 0:
        raise ValueError(f"{name}_tags must be sorted (ascending, without repeats) within each "
                         f"row; row {row} is not")
    return indptr, indices


def structured_perceptron(X, gold_tags, sent_offsets, cand_offsets, cand_tags, emit_indptr,
                          emit_tags, n_states, tri_indptr, tri_tags, bos, eos, orders, beam=0):
    """Train a second-order tagger with the averaged structured perceptron, epoch by epoch.

    Parameters
    ----------
    X : scipy.sparse matrix, shape (n_tokens, n_features)
        Token features (rows in corpus token order).
    gold_tags : int array, shape (n_tokens,)
        Gold tag of every token, in ``[0, n_states)`` and neither ``bos`` nor ``eos``.
    sent_offsets : int array, shape (n_sentences + 1,)
        Sentence ``i`` is tokens ``sent_offsets[i]:sent_offsets[i + 1]``.
    cand_offsets, cand_tags : int arrays, shapes (n_tokens + 1,) and (n_cand,)
        The candidate lattice searched by the decoder, as in
        :func:`~sparsecca.kernels.kbest_viterbi` (gold tags outside it still get their update).
    emit_indptr : int array, shape (n_features + 1,)
    emit_tags : int array, shape (n_pairs,)
        The supported (feature, tag) pairs, CSR by feature, sorted within each feature.
    n_states : int
        ``S``: tags plus the two boundary states.
    tri_indptr : int array, shape (S * S + 1,)
    tri_tags : int array, shape (n_trigrams,)
        The trigrams that get a weight, CSR by context ``t2 * S + t1``, sorted per context.
    bos, eos : int
        Boundary states.
    orders : int array, shape (n_epochs, n_visits)
        Sentence visiting order of each epoch.
    beam : int >= 0, default 0
        0: decode every sentence in the lattice ``cand_offsets`` / ``cand_tags``.  ``k > 0``:
        ignore that lattice (both may be None) and decode each sentence visit in a lattice
        rebuilt from the current weights: for every token its ``k`` best tags by emission
        score ``X[j] @ W[:, t]`` (ties to the lower tag), plus its gold tag.  The gold
        sequence is then always in the lattice, so every update is on a violation (a
        sequence scoring at least as high as the gold one), and the emission features learn
        to rank every tag, not only those a static lattice lets compete.

    Yields
    ------
    emission : float64 array, shape (n_pairs,)
        Averaged weights after the epoch (all examples so far), aligned with ``emit_tags``.
    bigram : float64 array, shape (S, S)
    trigram : float64 array, shape (n_trigrams,)
    n_wrong : int
        Sentences of the epoch decoded wrongly (each caused an update).

    Notes
    -----
    The arguments are validated when the function is called, before the first epoch runs.
    Ties between equally scored sequences go to the decoder's first one, deterministically.

    References
    ----------
    M. Collins (2002). Discriminative training methods for hidden Markov models: theory and
    experiments with perceptron algorithms. EMNLP.

    Examples
    --------
    One sentence of two tokens, two tags (0, 1; BOS = 2, EOS = 3), one feature per token:

    >>> import numpy as np, scipy.sparse as sp
    >>> from sparsecca.kernels import structured_perceptron
    >>> X = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0]]))
    >>> epochs = structured_perceptron(
    ...     X, gold_tags=[0, 1], sent_offsets=[0, 2], cand_offsets=[0, 2, 4],
    ...     cand_tags=[0, 1, 0, 1], emit_indptr=[0, 2, 4], emit_tags=[0, 1, 0, 1], n_states=4,
    ...     tri_indptr=np.zeros(17, dtype=int), tri_tags=[], bos=2, eos=3,
    ...     orders=[[0], [0]])
    >>> [int(n_wrong) for _, _, _, n_wrong in epochs]  # wrong once (all ties), then right
    [1, 0]
    """
    args = _checked(X, gold_tags, sent_offsets, cand_offsets, cand_tags, emit_indptr,
                    emit_tags, n_states, tri_indptr, tri_tags, bos, eos, beam)
    orders = check_orders(orders, args[2].size - 1)
    return _run(*args[:-1], orders, args[-1])


def _checked(X, gold_tags, sent_offsets, cand_offsets, cand_tags, emit_indptr, emit_tags,
             n_states, tri_indptr, tri_tags, bos, eos, beam):
    """The arguments of :func:`structured_perceptron` but ``orders``, validated: ``(phi,
    gold, sent_offsets, cand_offsets, cand_tags, emit_tags, S, tri_indptr, tri_tags, bos,
    eos, beam)`` with ``phi`` the entries of ``X`` (:func:`_entry_pairs`)."""
    if not sp.issparse(X):
        raise TypeError(f"X must be a scipy.sparse matrix, got {type(X).__name__}")
    X = sp.csr_matrix(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    n_tokens, n_features = X.shape
    if not isinstance(n_states, (int, np.integer)) or isinstance(n_states, bool) \
            or n_states < 3:
        raise ValueError(f"n_states must be an int >= 3, got {n_states!r}")
    S = int(n_states)
    for name, v in (("bos", bos), ("eos", eos)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v < S:
            raise ValueError(f"{name} must be an int in [0, n_states={S}), got {v!r}")
    if bos == eos:
        raise ValueError(f"bos and eos must be different states, got both {bos}")
    bos, eos = int(bos), int(eos)
    beam = check_int("beam", beam, 0)
    if beam > 0:  # the given lattice is not used
        sent_offsets = int_array("sent_offsets", sent_offsets, np.int64)
        check_offsets("sent_offsets", sent_offsets, n_tokens, "n_tokens (X.shape[0])")
        cand_offsets = np.zeros(n_tokens + 1, dtype=np.int64)
        cand_tags = np.zeros(0, dtype=np.int32)
    else:
        sent_offsets, cand_offsets, cand_tags, _ = _check_candidates(
            sent_offsets, cand_offsets, cand_tags, np.zeros(np.size(cand_tags)), S, bos, eos)
    if cand_offsets.size != n_tokens + 1:
        raise ValueError(f"cand_offsets must have n_tokens + 1={n_tokens + 1} entries (X has "
                         f"{n_tokens} rows), got {cand_offsets.size}")
    gold = int_array("gold_tags", gold_tags, np.int32)
    if gold.size != n_tokens:
        raise ValueError(f"gold_tags must have n_tokens={n_tokens} entries, got {gold.size}")
    if gold.size and (gold.min() < 0 or gold.max() >= S or np.any((gold == bos) | (gold == eos))):
        raise ValueError(f"gold_tags must lie in [0, n_states={S}) and be neither bos nor eos")
    emit_indptr, emit_tags = _sorted_rows("emit", emit_indptr, emit_tags, n_features,
                                          "n_features", S)
    tri_indptr, tri_tags = _sorted_rows("tri", tri_indptr, tri_tags, S * S, "n_states**2", S)
    return (_entry_pairs(X, emit_indptr), gold, sent_offsets, cand_offsets, cand_tags,
            emit_tags, S, tri_indptr, tri_tags, bos, eos, beam)


def check_orders(orders, n_sent: int, ndim: int = 2) -> np.ndarray:
    """``orders`` as contiguous int64: sentence visiting orders, ``(n_epochs, n_visits)``
    (``ndim = 2``) or one epoch's (``ndim = 1``), of indices in ``[0, n_sent)``."""
    orders = np.asarray(orders)
    if orders.ndim != ndim or (orders.size and orders.dtype.kind not in "iu"):
        shape = "2-d int array (n_epochs, n_visits)" if ndim == 2 else "1-d int array"
        raise ValueError(f"orders must be a {shape}, got {orders.dtype} {orders.shape}")
    orders = np.ascontiguousarray(orders, dtype=np.int64)
    if orders.size and (orders.min() < 0 or orders.max() >= n_sent):
        raise ValueError(f"orders must hold sentence indices in [0, {n_sent})")
    return orders


def _scratch(sent_offsets, cand_offsets, cand_tags, S, tri_indptr, tri_tags, tri_w, beam):
    """The work arrays of :func:`_epoch` after its weights: ``(ctx_adj, bos, eos, c)`` go
    between them and these; the dense trigram mirror holds ``tri_w``."""
    lengths = np.diff(sent_offsets)
    pred = np.zeros(max(int(lengths.max()) if lengths.size else 0, 1), dtype=np.int32)
    # scratch of the beam lattice (one sentence)
    width = min(beam + 1, S) if beam > 0 else 0
    beam_buf = (np.zeros(S), np.zeros(S + 1, dtype=np.int64), np.zeros(pred.size + 1, np.int64),
                np.zeros(pred.size * width, np.int32), np.zeros(pred.size * width))
    # the dense trigram mirror of the fast decoder, when small enough
    tri_dense = dense_trigrams(tri_indptr, tri_tags, tri_w, S)
    tri_dense = np.zeros(0) if tri_dense is None else tri_dense
    if beam > 0:
        n_pairs_max = pred.size * width * width + width
    else:
        n_pairs_max = _max_pair_states(sent_offsets, cand_offsets)
    vit = (np.zeros(max(n_pairs_max, 1)), np.zeros(max(n_pairs_max, 1), dtype=np.int32),
           np.zeros(S, dtype=np.int64), np.zeros(S))
    return (np.zeros(cand_tags.size), pred, np.zeros(1), beam, *beam_buf, tri_dense, *vit)


def _run(phi, gold, sent_offsets, cand_offsets, cand_tags, emit_tags, S,
         tri_indptr, tri_tags, bos, eos, orders, beam):
    n_pairs, n_tri = emit_tags.size, tri_tags.size
    emit = [np.zeros(n_pairs), np.zeros(n_pairs)]
    big = [np.zeros(S * S), np.zeros(S * S)]
    tri = [np.zeros(n_tri), np.zeros(n_tri)]
    work = _scratch(sent_offsets, cand_offsets, cand_tags, S, tri_indptr, tri_tags,
                    np.zeros(n_tri), beam)
    c = 0
    for e in range(orders.shape[0]):
        c, n_wrong = _epoch(orders[e], sent_offsets, gold, cand_offsets, cand_tags, *phi,
                            emit_tags, *emit, S, *big, np.zeros(S * S), tri_indptr,
                            tri_tags, *tri, bos, eos, c, *work)
        yield (_average(*emit, c), _average(*big, c).reshape(S, S), _average(*tri, c),
               int(n_wrong))
