"""Collins' (2002) structured averaged perceptron: a second-order tagger with k-best output.

Model
-----
A tag sequence ``t_1..t_n`` of a sentence scores

``sum_{i=1}^{n+1} [ X[i] @ W[:, t_i] + B[t_{i-1}, t_i] + C[t_{i-2}, t_{i-1}, t_i] ]``

with ``t_{-1} = t_0 = BOS``, ``t_{n+1} = EOS`` and no emission term at ``n + 1``.  ``X`` holds
the token context features of :class:`~sparsecca.features.ContextFeatures` (word,
lowercase, prefixes and suffixes, shape flags, a window of lowercased words).

* Emission weights ``W`` exist for the (feature, tag) pairs seen in the gold training data,
  stored sparse (CSR by feature): their number does not grow with the tagset, which a dense
  ``n_features x n_tags`` table with its two averaging companions would (three float64 /
  int64 tables of a million-token corpus with a 452-tag tagset take about 3 GB; the supported
  pairs about a tenth of that).
* ``B`` is a dense bigram table over tags and the boundary states; ``C`` has a weight for
  each trigram seen in the gold training data (a dense cube would be cubic in the tagset).
* Training: sentences in a fresh random order each epoch; each is decoded with the current
  weights and, when the prediction differs from the gold sequence, the weights move by the
  gold features minus the predicted ones.  The model keeps the average of the weight vectors
  after every sentence (computed lazily).  With a ``dev`` corpus the epoch with the best dev
  accuracy is kept.
* Training lattice (``beam > 0``): each token of a visited sentence may take its ``beam``
  best tags by the current emission score, plus its gold tag.  A perceptron learns only
  from the mistakes its lattice allows: in the decoding lattice below, a frequent word seen
  with one tag never errs, so the affix and context features, which are all an unseen word
  has, learn from the rare words alone; with the beam every word's mistakes train them, as
  with the full tagset, at the cost of ``beam + 1`` candidates.  The gold sequence is in
  the lattice, so every update is on a violation (Huang, Fayong and Guo 2012).
* On a partitioned corpus, ``partitioned_fit="mixing"`` trains by iterative parameter mixing
  (McDonald, Hall and Mann 2010): each epoch, every partition runs one epoch of the same
  kernel from the mixed weights where it lives (see ``sparsecca.distributed._perceptron``).

Decoding lattice (tag-dictionary pruning): a word seen at least ``dict_min_count`` times in
training may take the tags it was seen with.  A rarer or unseen word may take the tags of
TnT's suffix model (the successive-abstraction posterior used by
:class:`~sparsecca.tagging.TrigramHMM`) whose posterior is at least ``unknown_ratio`` times
the best tag's, plus the tags it was seen with; ``unknown_ratio = 0`` allows every tag.
Decoding is exact in that lattice (and in training with ``beam = 0``).
"""

from __future__ import annotations

import numpy as np

from .._params import check_bool, check_int, check_random_state
from .._persist import state_value
from ..data import TaggedCorpus
from ..features import ContextFeatures
from ..kernels import best_sequences, dense_trigrams, structured_perceptron
from ._hmm import _check_corpus
from ._kbest_mixin import check_partitioned_fit, is_partitioned
from ._lattice import (
    _BLOCK_CELLS,
    BaseLatticeTagger,
    as_dense,
    gold_trigrams,
    observed_pairs,
)

__all__ = ["PerceptronTagger"]


class PerceptronTagger(BaseLatticeTagger):
    """Second-order tagger trained by Collins' structured averaged perceptron, with k-best output.

    Parameters
    ----------
    n_iter : int >= 1, default 10
        Training epochs (passes over the training sentences).
    min_count : int >= 1, default 1
        Context features seen fewer times in training are dropped.
    %(lattice_parameters)s
    beam : int >= 0, default 5
        Training lattice: the ``beam`` best tags of each token by the current emission score,
        plus its gold tag (see the module notes); 0 trains in the decoding lattice, which is
        faster but leaves the features of unseen words undertrained.
    patience : int >= 1 or None, default None
        With a ``dev`` corpus: stop after this many epochs without a better dev accuracy
        (None runs all ``n_iter`` epochs; the best dev epoch is kept either way).
    random_state : int, numpy Generator, RandomState or None, default 0
        Seeds the sentence order of every epoch.
    progress : bool, default False
        Show a tqdm progress bar over epochs.
    parallel : bool, default False
        Decode sentences on all numba threads in :meth:`tag` / :meth:`nbest`.
    partitioned_fit : {"gather", "mixing"}, default "gather"
        How :meth:`fit` trains on a :class:`~sparsecca.distributed.PartitionedCorpus`
        (an in-memory corpus ignores it).  ``"gather"``: the corpus is gathered on the driver
        and trained on there.  ``"mixing"``: iterative parameter mixing (McDonald, Hall and
        Mann 2010).  The tag dictionary and the feature index come from per-partition counts
        merged by a tree reduce (they equal those of the corpus gathered); each epoch, every
        partition runs one epoch of the same kernel over its own sentences on its worker
        (its feature arrays stay there), starting from the mixed weights, and the driver
        mixes the partitions' final weights.  The partitions visit their sentences in the
        order of the epoch's permutation of the whole corpus, as drawn in memory.  The
        model's averaged weights are the mean of every weight vector a partition held after
        one of its sentences, over the partitions and the epochs so far (Collins' average
        along the partitions' epochs); with one partition the fit is the in-memory fit,
        weight for weight.
    mixing_weights : {"uniform", "updates"}, default "uniform"
        With ``partitioned_fit="mixing"``, each partition's share of the mixed weights:
        equal for every partition that has a sentence (``"uniform"``), or its number of
        updates in the epoch (``"updates"``, the paper's error-weighted mixing; an epoch
        without updates keeps the weights).

    Attributes
    ----------
    %(lattice_attributes)s
    emit_indptr_, emit_tags_ : arrays
        Supported (feature, tag) pairs, CSR by feature.
    emit_weights_ : float64 array, shape (n_pairs,)
        Averaged emission weights.
    bigram_weights_ : float64 array, shape (n_tags + 2, n_tags + 2)
    tri_indptr_, tri_tags_ : arrays
        Weighted trigrams, CSR by context ``t2 * (n_tags + 2) + t1``.
    tri_weights_ : float64 array, shape (n_trigrams,)
    n_iter_ : int
        Epochs run.
    best_epoch_ : int
        The epoch (1-based) whose averaged weights the model holds.
    train_errors_ : list of int
        Training sentences decoded wrongly in each epoch.
    dev_scores_ : list of float
        Dev token accuracy after each epoch (empty without ``dev``).

    Notes
    -----
    %(tagset_note)s

    References
    ----------
    M. Collins (2002). Discriminative training methods for hidden Markov models: theory and
    experiments with perceptron algorithms. EMNLP.

    L. Huang, S. Fayong and Y. Guo (2012). Structured perceptron with inexact search. NAACL.

    R. McDonald, K. Hall and G. Mann (2010). Distributed training strategies for the
    structured perceptron. NAACL.

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus
    >>> from sparsecca.tagging import PerceptronTagger
    >>> corpus = synthetic_corpus(300, random_state=0)
    >>> train, test = corpus[:250], corpus[250:]
    >>> model = PerceptronTagger(n_iter=3).fit(train)
    >>> model.score(test) > 0.8
    True
    >>> nb = model.nbest(test, k=5)
    >>> nb.oracle_accuracy() >= nb.top1_accuracy()
    True

    Trained by parameter mixing over two partitions (on the active Dask scheduler):

    >>> from sparsecca.distributed import PartitionedCorpus
    >>> parts = PartitionedCorpus.from_corpus(train, 2)
    >>> mixed = PerceptronTagger(n_iter=3, partitioned_fit="mixing").fit(parts)
    >>> mixed.score(test) > 0.8
    True
    """

    _DICT_NOTE = """  A restriction costs the rare tokens whose right tag
        was never seen with their word, and saves the many errors a wider lattice lets the
        model make on known words; the defaults of this and ``unknown_ratio`` gave the best
        mean development-set accuracy over four corpora in three languages."""

    def __init__(self, n_iter: int = 10, min_count: int = 1, dict_min_count: int = 1,
                 unknown_ratio: float = 1e-2, max_suffix_length: int = 2, beam: int = 5,
                 patience=None, random_state=0,
                 progress: bool = False, parallel: bool = False,
                 partitioned_fit: str = "gather", mixing_weights: str = "uniform"):
        super().__init__(dict_min_count=dict_min_count, unknown_ratio=unknown_ratio,
                         max_suffix_length=max_suffix_length, random_state=random_state,
                         progress=progress, parallel=parallel)
        self.n_iter = n_iter
        self.min_count = min_count
        self.beam = beam
        self.patience = patience
        self.partitioned_fit = partitioned_fit
        self.mixing_weights = mixing_weights

    # ------------------------------------------------------------------ validation
    def _validate_params(self):
        check_int("n_iter", self.n_iter, 1)
        check_int("min_count", self.min_count, 1)
        self._validate_lattice_params()
        check_int("beam", self.beam, 0)
        if self.patience is not None:
            check_int("patience", self.patience, 1)
        check_bool("progress", self.progress)
        check_bool("parallel", self.parallel)
        check_partitioned_fit(self)

    # ------------------------------------------------------------------ training
    def fit(self, corpus, y=None, dev: TaggedCorpus | None = None):
        """Train on a tagged corpus.

        Parameters
        ----------
        corpus : TaggedCorpus or sparsecca.distributed.PartitionedCorpus
            Training sentences with tags; at least one token.  A partitioned corpus is
            gathered on the driver and trained on there, or with
            ``partitioned_fit="mixing"`` trained partition by partition where the
            partitions live (see that parameter).
        y : None
            Ignored (scikit-learn convention).
        dev : TaggedCorpus, optional
            Tagged sentences scored after every epoch; the model keeps the averaged weights
            of the best epoch (the earliest among equals).  In memory on the driver, also
            with ``partitioned_fit="mixing"``.

        Returns
        -------
        self
        """
        self._validate_params()
        rng = check_random_state(self.random_state)
        if not (is_partitioned(corpus) and self.partitioned_fit == "mixing"):
            corpus = self._training_corpus(corpus)
        if dev is not None:
            dev = _check_corpus("dev", dev, need_tags=True)
        return self._refit(corpus, dev, rng)

    def _fit(self, corpus, dev, rng):
        if is_partitioned(corpus):  # partitioned_fit="mixing"
            epochs = corpus._fit_perceptron_mixing(self, rng)
        else:
            epochs = self._epochs(corpus, rng)
        self._keep_best(epochs, dev)

    def _epochs(self, corpus, rng):
        """Fit the dictionary, the features and the weighted pairs and trigrams; the
        kernel's epochs (averaged weights and sentences wrong after each)."""
        tag_ids = self._fit_dictionary(corpus)
        T = len(self.tags_)
        S, bos, eos = T + 2, T, T + 1
        self.features_ = self._context_features()
        X = self.features_.fit_transform(corpus)
        beam = int(self.beam)
        cand_offsets, cand_tags = (None, None) if beam else self._lattice(corpus)[:2]
        # supported (feature, tag) pairs, and the gold trigrams (boundaries included)
        self.emit_indptr_, self.emit_tags_ = observed_pairs(X, tag_ids, T)
        self.tri_indptr_, self.tri_tags_ = gold_trigrams(tag_ids, corpus.offsets, S, bos, eos)
        n_sent = corpus.n_sentences
        orders = np.stack([rng.permutation(n_sent) for _ in range(int(self.n_iter))])
        return structured_perceptron(X, tag_ids, corpus.offsets, cand_offsets, cand_tags,
                                     self.emit_indptr_, self.emit_tags_, S, self.tri_indptr_,
                                     self.tri_tags_, bos, eos, orders, beam=beam)

    def _keep_best(self, epochs, dev):
        """Run the epochs, keeping the averaged weights of the last one, or with ``dev``
        those of the epoch of best dev accuracy (within ``patience``)."""
        if self.progress:
            from tqdm.auto import tqdm

            epochs = tqdm(epochs, total=int(self.n_iter), desc="perceptron", unit="epoch")
        dev_data = self._prepare(dev) if dev is not None else None
        self.train_errors_, self.dev_scores_ = [], []
        best = None
        for e, (emit_w, big_w, tri_w, n_wrong) in enumerate(epochs, 1):
            self.train_errors_.append(n_wrong)
            self.emit_weights_, self.bigram_weights_, self.tri_weights_ = emit_w, big_w, tri_w
            self.n_iter_ = e
            if dev_data is None:
                best = e
                continue
            acc = self._dev_accuracy(dev, dev_data)
            self.dev_scores_.append(acc)
            if self.progress:
                epochs.set_postfix(dev=f"{acc:.4f}", wrong=n_wrong)
            if best is None or acc > self.dev_scores_[best - 1]:
                best = e
                kept = (emit_w, big_w, tri_w)
            elif self.patience is not None and e - best >= int(self.patience):
                break
        if dev_data is not None:
            self.emit_weights_, self.bigram_weights_, self.tri_weights_ = kept
        self.best_epoch_ = best

    def _context_features(self) -> ContextFeatures:
        """The unfitted context features of this tagger."""
        return ContextFeatures(min_count=int(self.min_count))

    def _dev_accuracy(self, dev, dev_data):
        (seq_tags, _, _, _), _ = self._decode(dev, 1, dev_data)
        if dev.n_tokens == 0:
            return 0.0
        gold = dev.tags.mapping_to(self.tags_)[dev.tag_ids]
        return float(np.mean(seq_tags == gold))

    def _decode(self, corpus, k, prepared=None):
        """The shared decoder, or for ``k = 1`` (serial, no empty sentence, a tagset whose
        dense trigram table is small) one kernel call that scores and decodes every
        sentence: the same sequences and scores."""
        S = len(self.tags_) + 2
        if k != 1 or self.parallel or np.any(np.diff(corpus.offsets) == 0):
            return super()._decode(corpus, k, prepared)
        tri_dense = dense_trigrams(self.tri_indptr_, self.tri_tags_, self.tri_weights_, S)
        if tri_dense is None:
            return super()._decode(corpus, k, prepared)
        X, cand_offsets, cand_tags, unknown = prepared or self._prepare(corpus)
        tags, scores = best_sequences(X, corpus.offsets, cand_offsets, cand_tags,
                                      self.emit_indptr_, self.emit_tags_, self.emit_weights_,
                                      self.bigram_weights_, tri_dense, S - 2, S - 1)
        n = corpus.n_sentences
        return (tags, np.asarray(corpus.offsets, dtype=np.int64), np.arange(n + 1),
                scores), unknown

    def _emission_scores(self, X, sent_offsets, cand_offsets, cand_tags):
        """``(X @ W)[token, tag]`` of every candidate, one sparse product per token block
        (and no extra arguments of the decoder)."""
        T = len(self.tags_)
        W = self._emission_matrix()
        n = X.shape[0]
        out = np.empty(cand_tags.size, dtype=np.float64)
        tok = np.repeat(np.arange(n, dtype=np.int64), np.diff(cand_offsets))
        step = max(1, _BLOCK_CELLS // T)
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            E = as_dense(X[lo:hi] @ W)
            c0, c1 = cand_offsets[lo], cand_offsets[hi]
            out[c0:c1] = E[tok[c0:c1] - lo, cand_tags[c0:c1]]
        return out, {}

    # ------------------------------------------------------------------ persistence
    def _extra_state(self):
        return {"n_iter": self.n_iter_, "best_epoch": self.best_epoch_,
                "train_errors": list(self.train_errors_),
                "dev_scores": list(self.dev_scores_)}

    def _set_extra_state(self, extra):
        self.n_iter_ = state_value(extra, "n_iter", int, low=1)
        self.best_epoch_ = state_value(extra, "best_epoch", int, low=1, high=self.n_iter_)
        self.train_errors_ = state_value(extra, "train_errors", list)
        self.dev_scores_ = state_value(extra, "dev_scores", list)
