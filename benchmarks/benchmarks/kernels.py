"""asv benchmarks of the numba kernels on raw arrays: k-best Viterbi, residual aggregation,
the Algorithm 1 slack update.

Data: the first n sentences of en-brown train (XPOS, 452 tags), n in {5K, 20K, 50K}.  The
lattices come from a TrigramHMM fitted on the whole training set, i.e. decoding *seen*
sentences (every word in the tag dictionary: narrower lattices than on held-out text, where
``tagging.py`` measures the end-to-end decoder).  The candidate lists of the residual
benchmarks are that model's 10-best lists.  ``setup_cache`` builds everything once (8 s in
the review of 29dde3b, 10 s at 8481170 at load average 3; 0.6 GB); compilation happens before
the timings (numba's on-disk cache, then a warm-up call).

``track_*`` return accuracies computed independently of the library's NBestList (a
fast-but-wrong kernel shows there) and the residual matrix's Frobenius norm.
"""

from __future__ import annotations

import numpy as np

from sparsecca.kernels import aggregate_residuals, kbest_viterbi, slack_update
from sparsecca.tagging import TrigramHMM

from ._common import (
    SIZES,
    _brown,
    candidate_errors,
    missing_brown,
    output_view,
    require_brown,
    train_corpus,
)

N_MAX = max(SIZES)


def _build():
    """Model arrays, lattice of the first N_MAX sentences, their 10-best lists, gold ids."""
    corpus = train_corpus(N_MAX)
    model = TrigramHMM().fit(_brown("train"))
    cand_offsets, cand_tags, cand_logp, _ = model._lattice(corpus)
    T = len(model.tags_)
    trans = dict(n_states=T + 2, bigram_logp=model.bigram_logp_,
                 context_adj=model.context_adj_, tri_indptr=model.tri_indptr_,
                 tri_tags=model.tri_tags_, tri_logp=model.tri_logp_, bos=T, eos=T + 1)
    gold = corpus.recode(tags=model.tags_)[1].astype(np.int32)
    nbest = model.nbest(corpus, k=10)
    return dict(sent_offsets=corpus.offsets, cand_offsets=cand_offsets, cand_tags=cand_tags,
                cand_logp=cand_logp, trans=trans, gold=gold, nbest=nbest)


def _setup_cache(self):
    # one module-level function: asv keys setup_cache by source line, so both classes share
    # one cache (built once per run).  A marker without en-brown: setup then skips with the
    # reason (NotImplementedError here would be an asv failure, and None drops the argument)
    reason = missing_brown()
    return {"missing": reason} if reason else _build()


_setup_cache.timeout = 900


def _lattice_prefix(cache, n):
    """The lattice arrays of the first n sentences (a prefix of the N_MAX lattice)."""
    so = cache["sent_offsets"][:n + 1]
    co = cache["cand_offsets"][:so[-1] + 1]
    return dict(sent_offsets=so, cand_offsets=co, cand_tags=cache["cand_tags"][:co[-1]],
                cand_logp=cache["cand_logp"][:co[-1]], **cache["trans"])


class KBestViterbi:
    """kbest_viterbi (serial kernel) over the lattices of n sentences, k in {1, 10}."""

    timeout = 600
    number = 1
    repeat = 3
    params = [SIZES, [1, 10]]
    param_names = ["n", "k"]

    setup_cache = _setup_cache

    def setup(self, cache, n, k):
        require_brown()
        self.lat = _lattice_prefix(cache, n)
        self.gold = cache["gold"][:self.lat["sent_offsets"][-1]]
        self.n_tokens = int(self.lat["sent_offsets"][-1])
        small = _lattice_prefix(cache, 20)
        kbest_viterbi(**small, k=k)  # compile / load from numba's cache

    def time_kbest_viterbi(self, cache, n, k):
        kbest_viterbi(**self.lat, k=k)

    def peakmem_kbest_viterbi(self, cache, n, k):
        kbest_viterbi(**self.lat, k=k)

    def track_top1_accuracy(self, cache, n, k):
        seq_tags, seq_off, sent_seq, _ = kbest_viterbi(**self.lat, k=k)
        err, _ = candidate_errors(seq_tags, seq_off, sent_seq, self.lat["sent_offsets"],
                                  self.gold)
        return 100.0 * (1.0 - err[sent_seq[:-1]].sum() / self.n_tokens)

    track_top1_accuracy.unit = "%"

    def track_oracle_accuracy(self, cache, n, k):
        seq_tags, seq_off, sent_seq, _ = kbest_viterbi(**self.lat, k=k)
        err, seq_sent = candidate_errors(seq_tags, seq_off, sent_seq,
                                         self.lat["sent_offsets"], self.gold)
        best = np.full(n, np.iinfo(np.int64).max)
        np.minimum.at(best, seq_sent, err)
        return 100.0 * (1.0 - best.sum() / self.n_tokens)

    track_oracle_accuracy.unit = "%"


class Residuals:
    """aggregate_residuals (softened: weights = losses) and slack_update on n sentences'
    10-best lists (Y: gold tag 1-2-grams, Yhat: the candidates')."""

    timeout = 600
    number = 1
    repeat = 3
    params = [SIZES]
    param_names = ["n"]

    setup_cache = _setup_cache

    def setup(self, cache, n):
        require_brown()
        nb = cache["nbest"][:n]
        view = output_view()
        self.Y = view.fit_transform(nb.corpus)
        self.Yhat = view.transform_sequences(nb.tag_ids, nb.cand_offsets, nb.tags)
        self.w = nb.losses.astype(np.float64)
        self.off = nb.sent_offsets
        rng = np.random.default_rng(0)
        self.margins = rng.normal(size=nb.n_total)
        aggregate_residuals(self.Y[:5], self.Yhat[:self.off[5]], self.w[:self.off[5]],
                            self.off[:6])
        slack_update(self.margins[:self.off[5]], self.w[:self.off[5]], self.w[:self.off[5]],
                     self.off[:6], 0.1)

    def time_aggregate_residuals(self, cache, n):
        aggregate_residuals(self.Y, self.Yhat, self.w, self.off)

    def peakmem_aggregate_residuals(self, cache, n):
        aggregate_residuals(self.Y, self.Yhat, self.w, self.off)

    def time_slack_update(self, cache, n):
        slack_update(self.margins, self.w, self.w, self.off, 0.1)

    def track_residual_norm_rel_error(self, cache, n):
        """Relative Frobenius error of R against a scipy.sparse reference, x 1e12.

        R = D (Y_rep - Yhat) with Y_rep the gold row repeated per candidate and D the
        (n x n_candidates) matrix of weights / m_i: computed with sparse products only.
        """
        import scipy.sparse as sp

        R = aggregate_residuals(self.Y, self.Yhat, self.w, self.off)
        m = np.diff(self.off)
        sent = np.repeat(np.arange(m.size), m)
        D = sp.csr_matrix((self.w / np.repeat(np.maximum(m, 1), m), (sent, np.arange(sent.size))),
                          shape=(m.size, sent.size))
        ref = D @ (self.Y[sent] - self.Yhat)
        return 1e12 * sp.linalg.norm(R - ref) / max(sp.linalg.norm(ref), 1e-300)

    track_residual_norm_rel_error.unit = "1e-12"
