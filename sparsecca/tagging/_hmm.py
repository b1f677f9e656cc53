"""A TnT-style second-order HMM tagger (Brants 2000; Thede & Harper 1999) with k-best output.

Model
-----
``P(w_1..n, t_1..n) = prod_i P(t_i | t_{i-2}, t_{i-1}) P(w_i | t_i) * P(EOS | t_{n-1}, t_n)``
with ``t_{-1} = t_0 = BOS``.

* Transitions: deleted interpolation of unigram, bigram and trigram relative frequencies
  (Brants 2000, section 2.2).  EOS is predicted like a tag.  When the context
  ``(t_{i-2}, t_{i-1})`` was never seen the trigram term is dropped and the two lower
  orders renormalised, so every context gives a proper distribution.
* Known words: ``P(w | t) = c(w, t) / c(t)``, restricted to the tags seen with ``w`` (the
  tag dictionary).
* Unknown words: TnT's suffix model.  Tag distributions of suffixes (up to
  ``max_suffix_length`` characters) of rare training words (seen 1..``rare_threshold``
  times), kept separately for capitalised and other words, smoothed by successive
  abstraction ``P(t | s_i) = (P^(t | s_i) + theta P(t | s_{i-1})) / (1 + theta)`` from the
  empty suffix (``P(t)``) up to the longest suffix seen, with theta the standard deviation
  of the tag probabilities.  The emission is the Bayes inversion ``P(t | w) / P(t)`` (the
  tag-independent factor ``P(w)`` is dropped: it scales every sequence of a sentence alike).
  Digits are folded to ``0`` first, so all numerals share statistics.
* Beyond TnT, a prefix model built the same way (up to ``max_prefix_length`` characters)
  joins as a product of experts, ``P(t | w) ∝ P(t | suffix) (P(t | prefix) / P(t))^a``.
  With ``prefix_weight='auto'`` the weight ``a`` is chosen from a grid in [0, 1] by the
  log-likelihood of held-out "unknown" words (affix tables rebuilt on 90% of the training
  sentences, scored on the other 10%'s unseen words), so it is 0 where prefixes do not help
  (English XPOS) and large where they do (Chinese word-initial characters).  A word whose
  two experts share no tag (possible only with exactly balanced tag counts, theta = 0) keeps
  the suffix expert alone.
* Fallback for capitalisation: an unknown capitalised sentence-initial word whose
  lower-case form is known is tagged through the lower-case word's tag dictionary entry.

Decoding is exact in the lattice pruned by the tag dictionary and, for unknown words, by
dropping tags whose suffix posterior is below ``unknown_ratio`` times the best one.
"""

from __future__ import annotations

import copy
import re

import numpy as np
import scipy.sparse as sp

from .._params import ParamsMixin, check_bool, check_int
from .._persist import (
    ModelFormatError,
    PersistMixin,
    check_csr_rows,
    check_index,
    check_offsets,
    pack_strings,
    state_array,
    state_value,
    unpack_strings,
)
from ..data import TaggedCorpus, Vocabulary, first_seen
from ..exceptions import NotFittedError  # one class for the whole library, re-exported here
from ..kernels import kbest_viterbi
from ._hmm_counts import HOLDOUT, CompactCounts, HMMCounts, count_corpus, merge_counts
from ._kbest_mixin import KBestTaggerMixin, _check_corpus, is_partitioned, saved_vocabularies

__all__ = ["TrigramHMM", "NotFittedError"]

_DIGITS = re.compile(r"[0-9]")


def _csr_rows(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of CSR rows ``rows`` in order, and their new indptr."""
    lengths = indptr[rows + 1] - indptr[rows]
    new = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=new[1:])
    pos = np.repeat(indptr[rows] - new[:-1], lengths) + np.arange(new[-1], dtype=np.int64)
    return pos, new


# what a saved model holds: vocabularies / affix keys (as UTF-8 strings) and arrays
_STRING_ATTRS = ("tags", "words", "suffixes", "prefixes")
_ARRAY_ATTRS = ("lambdas", "tag_counts", "word_counts", "bigram_logp", "context_adj",
                "tri_indptr", "tri_tags", "tri_logp", "lex_indptr", "lex_tags", "lex_logp",
                "lex_counts", "suffix_indptr", "suffix_tags", "suffix_probs", "prefix_indptr",
                "prefix_tags", "prefix_probs", "tag_prior")

_PREFIX_GRID = (0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0)


def _theta(prior: np.ndarray) -> float:
    """TnT's successive-abstraction weight: the standard deviation of the tag probabilities."""
    return float(np.std(prior, ddof=1)) if prior.size > 1 else 0.0


def _affix_form(word: str, prefix: bool) -> tuple[str, str]:
    """The trie (``U`` for a capitalised word, else ``L``, as in TnT) and the form whose
    suffixes are the affix keys: digits folded to ``0`` (all numerals share statistics),
    reversed for prefixes."""
    form = word if word.isalpha() else _DIGITS.sub("0", word)  # a letter is not a digit
    return ("U" if word[:1].isupper() else "L"), (form[::-1] if prefix else form)


def _affix_keys(word: str, L: int, prefix: bool) -> list[str]:
    """Keys of the affixes of ``word`` of length 1..L, shortest first (see
    :func:`_affix_form`)."""
    cap, form = _affix_form(word, prefix)
    return [cap + form[-m:] for m in range(1, min(len(form), L) + 1)]


def _lexicon_counts(word_ids, tag_ids, T, V):
    """Word-tag counts as CSR by word: (indptr, tags, counts)."""
    keys, counts = np.unique(word_ids * T + tag_ids, return_counts=True)
    indptr = np.zeros(V + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // T, minlength=V), out=indptr[1:])
    return indptr, (keys % T).astype(np.int32), counts.astype(np.int64)


def _affix_table(items, word_counts, lex, T, L, rare_threshold, prefix):
    """``P^(t | affix)`` from the words seen 1..rare_threshold times, CSR by affix key."""
    rare = np.flatnonzero((word_counts >= 1) & (word_counts <= rare_threshold))
    # the _affix_keys of every rare word in one comprehension, word by word
    forms = [_affix_form(items[i], prefix) for i in rare.tolist()]
    index, rows = first_seen([cap + form[-m:] for cap, form in forms
                              for m in range(1, min(len(form), L) + 1)])
    cols = np.repeat(rare, np.minimum(np.array([len(form) for _, form in forms],
                                                dtype=np.int64), L))
    lex_indptr, lex_tags, lex_counts = lex
    lexm = sp.csr_matrix((lex_counts.astype(np.float64), lex_tags, lex_indptr),
                         shape=(len(items), T))
    A = sp.csr_matrix((np.ones(len(rows)), (rows, cols)),
                      shape=(len(index), len(items)))
    counts = (A @ lexm).tocsr()
    counts.sum_duplicates()
    totals = np.asarray(counts.sum(axis=1)).ravel()
    probs = sp.csr_matrix(sp.diags(1.0 / np.maximum(totals, 1.0)) @ counts)
    probs.sort_indices()
    return (list(index), probs.indptr.astype(np.int64), probs.indices.astype(np.int32),
            probs.data.astype(np.float64))


def _affix_posteriors(words, index, M, L, prior, theta, prefix) -> np.ndarray:
    """Successive abstraction from ``P(t)`` through ever longer affixes, shape (n, n_tags).

    A word's chain of stored affixes ends at its longest stored one, which determines the
    whole chain (every shorter affix of a stored affix is stored too), so the posterior is
    computed once per distinct longest affix (and the keys once per distinct word), then
    gathered.
    """
    n = len(words)
    if L == 0 or n == 0:
        return np.tile(prior, (n, 1))
    get = index.get
    chain_row: dict[int, int] = {}  # longest stored affix -> row of ``chains``
    chains: list[list[int]] = []  # each row's stored affixes, shortest first
    word_row: dict[str, int] = {}  # -1: no stored affix
    rows = np.empty(n, dtype=np.int64)
    for r, w in enumerate(words):
        u = word_row.get(w)
        if u is None:
            chain = []
            for key in _affix_keys(w, L, prefix):
                i = get(key)
                if i is None:
                    break
                chain.append(i)
            u = -1
            if chain:
                u = chain_row.setdefault(chain[-1], len(chains))
                if u == len(chains):
                    chains.append(chain)
            word_row[w] = u
        rows[r] = u
    ids = np.full((len(chains), L), -1, dtype=np.int64)
    for u, chain in enumerate(chains):
        ids[u, :len(chain)] = chain
    P = np.tile(prior, (len(chains) + 1, 1))  # the last row (-1): the prior alone
    for m in range(L):
        sel = np.flatnonzero(ids[:, m] >= 0)
        if sel.size == 0:
            break
        P[sel] = (M[ids[sel, m]].toarray() + theta * P[sel]) / (1.0 + theta)
    return P[rows]


def _combine(P_suffix, P_prefix, prior, alpha):
    """``P(t | w) ∝ P(t | suffix) (P(t | prefix) / P(t))^alpha`` (product of experts).

    A word whose two experts have disjoint support has no product to normalise; it keeps the
    suffix expert alone, TnT's unknown-word model (``prefix_weight = 0``).  That needs
    theta = 0 (exactly balanced tag counts): otherwise successive abstraction mixes the prior
    into both experts, so each is positive wherever ``P(t) > 0``.
    """
    if alpha == 0:
        return P_suffix
    # a tag with zero prior has zero posterior under both experts
    ratio = np.divide(P_prefix, prior, out=np.zeros_like(P_prefix), where=prior > 0)
    P = P_suffix * ratio ** alpha
    total = P.sum(axis=1, keepdims=True)
    return np.divide(P, total, out=P_suffix.copy(), where=total > 0)


class TrigramHMM(KBestTaggerMixin, PersistMixin, ParamsMixin):
    """Second-order HMM POS tagger with TnT smoothing and exact k-best decoding.

    Parameters
    ----------
    rare_threshold : int, default 10
        Words seen at most this often feed the unknown-word suffix statistics.
    max_suffix_length : int, default 10
        Longest suffix used by the unknown-word model (TnT: 10).
    max_prefix_length : int, default 4
        Longest prefix used by the unknown-word prefix model (0 disables it).
    prefix_weight : 'auto' or float in [0, 1], default 'auto'
        Exponent of the prefix expert; 'auto' selects it on held-out training data.
    unknown_ratio : float in [0, 1), default 1e-3
        An unknown word keeps the tags whose posterior is at least this fraction of its best
        tag's (0 keeps every tag: with a large tagset, decoding is then much slower for no
        gain in accuracy).
    lowercase_fallback : bool, default True
        Tag an unknown capitalised sentence-initial word like its known lower-case form.
    parallel : bool, default False
        Decode sentences on all numba threads (``prange``).  Off by default: the serial
        kernel is cached on disk while the parallel one is compiled anew in every process,
        and on a machine with few cores that compilation outweighs what the threads gain.

    Attributes
    ----------
    tags_ : Vocabulary
        The tags seen in training (ids ``0..n_tags-1``); BOS is ``n_tags``, EOS ``n_tags + 1``.
    words_ : Vocabulary
        The word types seen in training.
    lambdas_ : float64 array, shape (3,)
        Deleted-interpolation weights of the unigram, bigram and trigram terms.
    tag_counts_ : int64 array, shape (n_tags,)
    word_counts_ : int64 array, shape (n_words,)
    n_sentences_ : int
        Training sentences.
    bigram_logp_ : float64 array, shape (S, S)
        ``log(l1 P(t) + l2 P(t | t1))``, ``S = n_tags + 2``.
    context_adj_ : float64 array, shape (S, S)
        Added to ``bigram_logp_`` for unseen trigrams: ``-log(l1 + l2)`` for never-seen
        contexts, 0 otherwise.
    tri_indptr_, tri_tags_, tri_logp_ : arrays
        Seen trigrams, CSR by context ``t2 * S + t1``, with their interpolated log-probability.
    lex_indptr_, lex_tags_, lex_logp_ : arrays
        Tag dictionary, CSR by word id: allowed tags and ``log P(w | t)``.
    lex_counts_ : int64 array, shape (n_lex,)
        Word-tag counts behind ``lex_logp_``.
    suffixes_ : list of str
        Suffix-model keys: ``'U'`` or ``'L'`` (capitalised or not) followed by the suffix
        (digits folded to 0).
    suffix_indptr_, suffix_tags_, suffix_probs_ : arrays
        ``P^(t | suffix)`` per suffix, CSR.
    prefixes_, prefix_indptr_, prefix_tags_, prefix_probs_ :
        The same for prefixes (keys hold the reversed prefix).
    prefix_weight_ : float
        The prefix expert's exponent in use.
    tag_prior_ : float64 array, shape (n_tags,)
        ``P(t)``, the start of successive abstraction and the Bayes-inversion denominator.
    theta_ : float
        Successive-abstraction weight.

    Notes
    -----
    The model is ``P(w_1..n, t_1..n) = prod_i P(t_i | t_{i-2}, t_{i-1}) P(w_i | t_i)`` times
    ``P(EOS | t_{n-1}, t_n)``.  Transitions interpolate relative frequencies,
    ``P(t3 | t1, t2) = l1 P^(t3) + l2 P^(t3 | t2) + l3 P^(t3 | t1, t2)``, with the lambdas
    set by deleted interpolation (Brants 2000, section 2.2).  Unknown words get TnT's
    suffix model, smoothed by successive abstraction
    ``P(t | s_i) = (P^(t | s_i) + theta P(t | s_{i-1})) / (1 + theta)``, and (beyond TnT) a
    prefix expert joined as a product of experts; see the module docstring.  Decoding is
    exact k-best Viterbi (:func:`sparsecca.kernels.kbest_viterbi`) in the lattice pruned
    by the tag dictionary.

    A fitted model is saved with ``save(path)`` and read back with ``TrigramHMM.load(path)``
    (a ``.npz`` model file, see :mod:`sparsecca._persist`); loading checks every array the
    decoder indexes with, so a damaged file is refused before it reaches the Viterbi kernel.

    References
    ----------
    T. Brants (2000).  TnT - a statistical part-of-speech tagger.  Proceedings of ANLP 2000,
    pp. 224-231.

    S. M. Thede and M. P. Harper (1999).  A second-order hidden Markov model for
    part-of-speech tagging.  Proceedings of ACL 1999, pp. 175-182.

    Examples
    --------
    >>> from sparsecca.data import TaggedCorpus
    >>> from sparsecca.tagging import TrigramHMM
    >>> toy = TaggedCorpus.from_sentences(
    ...     [[("the", "DET"), ("dog", "NOUN"), ("barks", "VERB")]] * 3
    ...     + [[("a", "DET"), ("cat", "NOUN"), ("sleeps", "VERB")]] * 3)
    >>> hmm = TrigramHMM().fit(toy)
    >>> hmm.tag(TaggedCorpus.from_words([["the", "cat", "barks"]]))[0]
    (['the', 'cat', 'barks'], ['DET', 'NOUN', 'VERB'])

    On a larger corpus, the k best tag sequences of held-out sentences:

    >>> from sparsecca.data import synthetic_corpus, train_test_split
    >>> train, test = train_test_split(synthetic_corpus(300, random_state=0), test_size=50,
    ...                                random_state=0)
    >>> hmm = TrigramHMM().fit(train)
    >>> len(hmm.tags_), hmm.n_sentences_
    (12, 250)
    >>> nbest = hmm.nbest(test, k=5)
    >>> nbest.n_sentences, int(nbest.n_candidates.max())
    (50, 5)
    >>> bool(nbest.oracle_accuracy() >= nbest.top1_accuracy() == hmm.score(test) > 0.8)
    True
    """

    def __init__(self, rare_threshold: int = 10, max_suffix_length: int = 10,
                 max_prefix_length: int = 4, prefix_weight="auto", unknown_ratio: float = 1e-3,
                 lowercase_fallback: bool = True, parallel: bool = False):
        self.rare_threshold = rare_threshold
        self.max_suffix_length = max_suffix_length
        self.max_prefix_length = max_prefix_length
        self.prefix_weight = prefix_weight
        self.unknown_ratio = unknown_ratio
        self.lowercase_fallback = lowercase_fallback
        self.parallel = parallel

    # ------------------------------------------------------------------ validation
    def _validate_params(self):
        check_int("rare_threshold", self.rare_threshold, 1)
        check_int("max_suffix_length", self.max_suffix_length, 0)
        check_int("max_prefix_length", self.max_prefix_length, 0)
        pw = self.prefix_weight
        if not (isinstance(pw, str) and pw == "auto"):
            if isinstance(pw, bool) or not isinstance(pw, (int, float, np.integer, np.floating)):
                raise TypeError(f"prefix_weight must be 'auto' or a float, got {pw!r}")
            if not 0.0 <= float(pw) <= 1.0:
                raise ValueError(f"prefix_weight must be 'auto' or in [0, 1], got {pw}")
        r = self.unknown_ratio
        if isinstance(r, bool) or not isinstance(r, (int, float, np.floating, np.integer)):
            raise TypeError(f"unknown_ratio must be a float, got {type(r).__name__}")
        if not 0.0 <= float(r) < 1.0:
            raise ValueError(f"unknown_ratio must be in [0, 1), got {r}")
        # a truthy string such as 'no' would otherwise switch the option on
        check_bool("lowercase_fallback", self.lowercase_fallback)
        check_bool("parallel", self.parallel)

    def _check_fitted(self):
        if not hasattr(self, "tags_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call "
                                 "fit(corpus) before tag or nbest")

    # ------------------------------------------------------------------ training
    def fit(self, corpus, y=None) -> "TrigramHMM":
        """Estimate the model from a tagged corpus.

        Parameters
        ----------
        corpus : TaggedCorpus or sparsecca.distributed.PartitionedCorpus
            Training sentences with tags; must contain at least one token.  A partitioned
            corpus is counted partition by partition on the active Dask scheduler and the
            counts summed by a tree reduce (no partition comes to the driver); the model is
            the one fitted on the corpus gathered, array for array.

        Returns
        -------
        self
        """
        self._validate_params()
        if is_partitioned(corpus):
            counts = corpus.reduce(count_corpus, merge_counts).compute()
        else:
            counts = HMMCounts.of_corpus(_check_corpus("corpus", corpus, need_tags=True))
        return self._fit_from_counts(counts)

    # the count-reduce protocol: the counts of a partition, the sum of the counts of two
    # consecutive parts, and the fit from the total (sparsecca.distributed fits the folds of
    # a jackknife with them, in parallel tasks)
    _count_partition = staticmethod(count_corpus)
    _merge_counts = staticmethod(merge_counts)

    def _fit_from_counts(self, counts: HMMCounts) -> "TrigramHMM":
        self._validate_params()
        if counts.lex_counts.sum() == 0:
            raise ValueError("corpus must contain at least one token, got an empty corpus")
        # fitted on a copy whose attributes become ours only once it is done: a refit that
        # fails (or is interrupted) must not leave the tags_ and words_ of one corpus with
        # the tables of another; the previous fit stays intact and usable
        new = copy.copy(self)
        new._fit(counts.compact())
        vars(self).update(vars(new))
        return self

    def _fit(self, counts: CompactCounts) -> None:
        # the vocabularies are those of the tags and words some token uses
        self.tags_ = Vocabulary(counts.tags)
        self.words_ = Vocabulary(counts.words)
        T = len(self.tags_)
        V = len(self.words_)
        self._fit_transitions(counts)
        self._fit_lexicon(counts)
        self._fit_affixes(T, V)
        if self.prefix_weight == "auto":
            self.prefix_weight_ = self._select_prefix_weight(counts)
        else:
            self.prefix_weight_ = float(self.prefix_weight)
        self._reset_caches()

    def _fit_transitions(self, counts: CompactCounts) -> None:
        T = len(counts.tags)
        S = T + 2
        n_sent = counts.n_sentences
        tri_keys, tri_counts = counts.tri_keys, counts.tri_counts
        tri_ctx = tri_keys // S
        tri_t = tri_keys % S
        tri_t1 = tri_ctx % S
        # the unigram and bigram counts of the predicted positions (t_1 .. EOS)
        uni = np.bincount(tri_t, weights=tri_counts, minlength=S)
        big = np.bincount(tri_t1 * S + tri_t, weights=tri_counts,
                          minlength=S * S).reshape(S, S)
        ctx_total = np.bincount(tri_ctx, weights=tri_counts, minlength=S * S)
        big_total = big.sum(axis=1)
        N = uni.sum()
        # deleted interpolation: each trigram votes (with its count) for the order that
        # predicts it best once it is left out; ties split the vote
        with np.errstate(divide="ignore", invalid="ignore"):
            c1 = np.where(N > 1, (uni[tri_t] - 1) / (N - 1), 0.0)
            d2 = big_total[tri_t1] - 1
            c2 = np.where(d2 > 0, (big[tri_t1, tri_t] - 1) / np.where(d2 > 0, d2, 1), 0.0)
            d3 = ctx_total[tri_ctx] - 1
            c3 = np.where(d3 > 0, (tri_counts - 1) / np.where(d3 > 0, d3, 1), 0.0)
        cs = np.stack([c1, c2, c3])
        win = cs == cs.max(axis=0)
        mass = (win * (tri_counts / win.sum(axis=0))).sum(axis=1)
        if mass.sum() > 0:
            lambdas = mass / mass.sum()
        else:  # pragma: no cover - needs a corpus without trigrams, impossible here
            lambdas = np.array([1.0, 0.0, 0.0])
        # the unigram term keeps every seen tag reachable from every context
        lambdas = np.maximum(lambdas, 1e-6)
        lambdas /= lambdas.sum()
        l1, l2, l3 = lambdas
        p1 = uni / N
        with np.errstate(divide="ignore", invalid="ignore"):
            p2 = np.where(big_total[:, None] > 0, big / np.where(big_total > 0, big_total, 1)[
                :, None], 0.0)
            base = l1 * p1[None, :] + l2 * p2
            bigram_logp = np.log(base)
            tri_p = base[tri_t1, tri_t] + l3 * tri_counts / ctx_total[tri_ctx]
        context_adj = np.where(ctx_total > 0, 0.0, -np.log(l1 + l2)).reshape(S, S)
        indptr = np.zeros(S * S + 1, dtype=np.int64)
        np.cumsum(np.bincount(tri_ctx, minlength=S * S), out=indptr[1:])
        self.lambdas_ = lambdas
        self.tag_counts_ = uni[:T].astype(np.int64)
        self.n_sentences_ = int(n_sent)
        self.bigram_logp_ = bigram_logp
        self.context_adj_ = context_adj
        self.tri_indptr_ = indptr
        self.tri_tags_ = tri_t.astype(np.int32)
        self.tri_logp_ = np.log(tri_p)

    def _fit_lexicon(self, counts: CompactCounts) -> None:
        indptr, tags, lex_counts = counts.lexicon()
        self.word_counts_ = counts.totals(1)
        self.lex_indptr_ = indptr
        self.lex_tags_ = tags
        self.lex_counts_ = lex_counts
        self.lex_logp_ = np.log(lex_counts / self.tag_counts_[tags])

    def _fit_affixes(self, T, V):
        prior = self.tag_counts_ / self.tag_counts_.sum()
        self.tag_prior_ = prior
        self.theta_ = _theta(prior)
        lex = (self.lex_indptr_, self.lex_tags_, self.lex_counts_)
        items = self.words_.items
        (self.suffixes_, self.suffix_indptr_, self.suffix_tags_,
         self.suffix_probs_) = _affix_table(items, self.word_counts_, lex, T,
                                            int(self.max_suffix_length),
                                            int(self.rare_threshold), prefix=False)
        (self.prefixes_, self.prefix_indptr_, self.prefix_tags_,
         self.prefix_probs_) = _affix_table(items, self.word_counts_, lex, T,
                                            int(self.max_prefix_length),
                                            int(self.rare_threshold), prefix=True)

    def _select_prefix_weight(self, counts: CompactCounts) -> float:
        """Prefix weight maximising held-out unknown-word log-likelihood.

        Affix tables are rebuilt from 90% of the training sentences (every sentence
        ``i % 10 != 9``) and scored on the held-out tokens whose word those 90% never saw,
        the closest thing to unknown words that the training data offers.
        """
        if counts.n_sentences < 20 or int(self.max_prefix_length) == 0:
            return 0.0
        T = len(self.tags_)
        w_counts = counts.totals(1, held_out=False)
        tag_counts = counts.totals(2, held_out=False)
        # held-out tokens of unseen words; a tag absent from the 90% has probability 0 under
        # every weight, so such tokens cannot inform the choice and are left out
        residue, cand_w, cand_t = counts.cand.T
        unseen = ((residue == HOLDOUT - 1) & (w_counts[cand_w] == 0)
                  & (tag_counts[cand_t] > 0))
        if unseen.sum() < 50:
            return 0.0
        lex = counts.lexicon(held_out=False)
        prior = tag_counts / tag_counts.sum()
        theta = _theta(prior[tag_counts > 0])
        items = self.words_.items
        uw = cand_w[unseen]
        gold = cand_t[unseen]
        words = [items[i] for i in uw]
        post = []
        for prefix, L in ((False, int(self.max_suffix_length)),
                          (True, int(self.max_prefix_length))):
            keys, indptr, tags, probs = _affix_table(items, w_counts, lex, T, L,
                                                     int(self.rare_threshold), prefix)
            M = sp.csr_matrix((probs, tags, indptr), shape=(len(keys), T))
            index = {k: i for i, k in enumerate(keys)}
            post.append(_affix_posteriors(words, index, M, L, prior, theta, prefix))
        best, best_ll = 0.0, -np.inf
        rows = np.arange(gold.size)
        with np.errstate(divide="ignore", invalid="ignore"):
            for alpha in _PREFIX_GRID:
                P = _combine(post[0], post[1], prior, alpha)
                ll = float(np.mean(np.log(P[rows, gold])))
                if ll > best_ll + 1e-12:
                    best, best_ll = alpha, ll
        return best

    def _reset_caches(self):
        self._affix_cache = None

    # ------------------------------------------------------------------ persistence
    def _get_state(self):
        self._check_fitted()
        arrays = {}
        for name in _STRING_ATTRS:
            value = getattr(self, name + "_")
            arrays.update(pack_strings(name, value.items if isinstance(value, Vocabulary)
                                       else value))
        for name in _ARRAY_ATTRS:
            arrays[name] = getattr(self, name + "_")
        extra = {"n_sentences": self.n_sentences_, "prefix_weight": self.prefix_weight_,
                 "theta": self.theta_}
        return self._persist_params(), arrays, extra

    def _set_state(self, arrays, extra):
        """Restore a saved model, checking every array the decoder indexes with."""
        self._validate_params()
        tags, words = saved_vocabularies(arrays)
        T, V = len(tags), len(words)
        S = T + 2

        def arr(name, kind, **kw):
            return state_array(arrays, name, kind, **kw)

        lambdas = arr("lambdas", "float", shape=(3,))
        if np.any(lambdas < 0) or not np.isclose(lambdas.sum(), 1.0):
            raise ModelFormatError(f"array 'lambdas' must be >= 0 and sum to 1, got {lambdas}")
        tag_counts = check_index("tag_counts", arr("tag_counts", "int", shape=(T,)), 2**62, 1)
        word_counts = check_index("word_counts", arr("word_counts", "int", shape=(V,)), 2**62, 1)
        bigram_logp = arr("bigram_logp", "float", ndim=2, shape=(S, S), allow_inf="-")
        context_adj = arr("context_adj", "float", ndim=2, shape=(S, S))
        tri_tags = check_index("tri_tags", arr("tri_tags", "int", dtype=np.int32), S)
        tri_indptr = check_offsets("tri_indptr", arr("tri_indptr", "int"), tri_tags.size, S * S)
        check_csr_rows("tri_tags", tri_indptr, tri_tags)
        tri_logp = arr("tri_logp", "float", shape=tri_tags.shape, allow_inf="-")
        lex_tags = check_index("lex_tags", arr("lex_tags", "int", dtype=np.int32), T)
        lex_indptr = check_offsets("lex_indptr", arr("lex_indptr", "int"), lex_tags.size, V)
        check_csr_rows("lex_tags", lex_indptr, lex_tags, nonempty=True)
        lex_logp = arr("lex_logp", "float", shape=lex_tags.shape, allow_inf="-")
        lex_counts = check_index("lex_counts", arr("lex_counts", "int", shape=lex_tags.shape),
                                 2**62, 1)
        affix = {}
        for kind in ("suffix", "prefix"):
            keys = unpack_strings(arrays, kind + "es")
            t = check_index(f"{kind}_tags", arr(f"{kind}_tags", "int", dtype=np.int32), T)
            ptr = check_offsets(f"{kind}_indptr", arr(f"{kind}_indptr", "int"), t.size, len(keys))
            check_csr_rows(f"{kind}_tags", ptr, t)
            probs = arr(f"{kind}_probs", "float", shape=t.shape)
            if probs.size and (probs.min() < 0 or probs.max() > 1):
                raise ModelFormatError(f"array '{kind}_probs' must lie in [0, 1]")
            affix[kind] = (keys, ptr, t, probs)
        prior = arr("tag_prior", "float", shape=(T,))
        if np.any(prior < 0):
            raise ModelFormatError("array 'tag_prior' must be >= 0")
        self.tags_, self.words_ = tags, words
        self.lambdas_, self.tag_counts_, self.word_counts_ = lambdas, tag_counts, word_counts
        self.n_sentences_ = state_value(extra, "n_sentences", int, low=0)
        self.bigram_logp_, self.context_adj_ = bigram_logp, context_adj
        self.tri_indptr_, self.tri_tags_, self.tri_logp_ = tri_indptr, tri_tags, tri_logp
        self.lex_indptr_, self.lex_tags_, self.lex_logp_ = lex_indptr, lex_tags, lex_logp
        self.lex_counts_ = lex_counts
        (self.suffixes_, self.suffix_indptr_, self.suffix_tags_,
         self.suffix_probs_) = affix["suffix"]
        (self.prefixes_, self.prefix_indptr_, self.prefix_tags_,
         self.prefix_probs_) = affix["prefix"]
        self.tag_prior_ = prior
        self.theta_ = state_value(extra, "theta", float, low=0.0)
        self.prefix_weight_ = state_value(extra, "prefix_weight", float, low=0.0, high=1.0)
        self._reset_caches()

    # ------------------------------------------------------------------ lexicon at decode time
    def _affix_lookup(self):
        if self._affix_cache is None:
            T = len(self.tags_)
            self._affix_cache = tuple(
                ({k: i for i, k in enumerate(keys)},
                 sp.csr_matrix((probs, tags, indptr), shape=(len(keys), T)))
                for keys, indptr, tags, probs in (
                    (self.suffixes_, self.suffix_indptr_, self.suffix_tags_,
                     self.suffix_probs_),
                    (self.prefixes_, self.prefix_indptr_, self.prefix_tags_,
                     self.prefix_probs_)))
        return self._affix_cache

    def _unknown_posteriors(self, words: list[str]) -> np.ndarray:
        """Affix-model ``P(t | word)`` for unknown words, shape (len(words), n_tags)."""
        (s_index, s_mat), (p_index, p_mat) = self._affix_lookup()
        prior, theta = self.tag_prior_, self.theta_
        P = _affix_posteriors(words, s_index, s_mat, int(self.max_suffix_length), prior, theta,
                              prefix=False)
        if self.prefix_weight_ > 0:
            Pp = _affix_posteriors(words, p_index, p_mat, int(self.max_prefix_length), prior,
                                   theta, prefix=True)
            P = _combine(P, Pp, prior, self.prefix_weight_)
        return P

    def _lattice(self, corpus: TaggedCorpus):
        """Per-token candidate tags and emission log-probabilities (CSR) and unknown mask."""
        used, inv = np.unique(corpus.word_ids, return_inverse=True)
        items = corpus.words.items
        strings = [items[i] for i in used]
        model_id = self.words_.ids(strings)
        unknown_type = model_id < 0
        # entry pool: the tag dictionary rows, then one row per unknown type
        unk_types = np.flatnonzero(unknown_type)
        unk_words = [strings[i] for i in unk_types]
        entry = model_id.copy()
        pool_indptr = [self.lex_indptr_]
        pool_tags = [self.lex_tags_]
        pool_logp = [self.lex_logp_]
        if unk_types.size:
            P = self._unknown_posteriors(unk_words)
            keep = P >= float(self.unknown_ratio) * P.max(axis=1, keepdims=True)
            keep &= P > 0
            r, t = np.nonzero(keep)
            logp = np.log(P[r, t]) - np.log(self.tag_prior_[t])
            ind = np.zeros(unk_types.size + 1, dtype=np.int64)
            np.cumsum(np.bincount(r, minlength=unk_types.size), out=ind[1:])
            base = self.lex_tags_.size
            pool_indptr.append(ind[1:] + base)
            pool_tags.append(t.astype(np.int32))
            pool_logp.append(logp)
            entry[unk_types] = len(self.words_) + np.arange(unk_types.size)
        indptr = np.concatenate(pool_indptr)
        tags = np.concatenate(pool_tags)
        logp = np.concatenate(pool_logp)
        tok_entry = entry[inv]
        unknown = unknown_type[inv]
        if self.lowercase_fallback and unk_types.size and corpus.n_sentences:
            # sentence-initial capitalised unknown words with a known lower-case form
            lower_id = np.full(used.size, -1, dtype=np.int64)
            cand = [i for i in unk_types.tolist() if strings[i][:1].isupper()]
            if cand:
                lower_id[cand] = self.words_.ids([strings[i].lower() for i in cand])
            first = corpus.offsets[:-1][corpus.lengths > 0]
            lid = lower_id[inv[first]]
            ok = lid >= 0
            tok_entry[first[ok]] = lid[ok]
        pos, cand_offsets = _csr_rows(indptr, tok_entry)
        return cand_offsets, tags[pos], logp[pos], unknown

    # ------------------------------------------------------------------ decoding
    def _decode(self, corpus: TaggedCorpus, k: int):
        T = len(self.tags_)
        cand_offsets, cand_tags, cand_logp, unknown = self._lattice(corpus)
        out = kbest_viterbi(corpus.offsets, cand_offsets, cand_tags, cand_logp, T + 2,
                            self.bigram_logp_, self.context_adj_, self.tri_indptr_,
                            self.tri_tags_, self.tri_logp_, T, T + 1, k=k,
                            parallel=bool(self.parallel))
        return out, unknown

    def score(self, corpus: TaggedCorpus) -> float:
        """1-best token accuracy on a tagged corpus (of this model's tagset, see
        :meth:`nbest`)."""
        corpus = _check_corpus("corpus", corpus, need_tags=True)
        return self.nbest(corpus, k=1).top1_accuracy()
