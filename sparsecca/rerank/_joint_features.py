"""Joint (word-side x tag-side) features of every n-best candidate, for the baseline rerankers.

The features are those of the paper's section 4.1, built by
:class:`sparsecca.features.JointView` on the candidate tag sequences (each sentence's words
repeated once per candidate): ``kind="suffix"`` pairs every suffix of length 2-4 of a word
with its tag and with the tag bigram ending there ("Sufx"); ``kind="ngram"`` gives the
word/tag, word/tag-bigram, tag-bigram and tag-trigram features ("n-gm").  Column 0 of
:meth:`JointFeatures.transform` is the decoder log-score.

Helpers shared by the baseline rerankers (parameter validation, ``save`` /
``load`` through :mod:`sparsecca._persist`) live here too.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._params import ParamsMixin, check_bool, check_float, check_int
from .._persist import PersistMixin as BasePersistMixin
from .._persist import check_index, state_array
from ..data import TaggedCorpus
from ..exceptions import NotFittedError
from ..features import JointView
from ..tagging import NBestList
from ._base import check_nbest

__all__ = ["JointFeatures"]

_KINDS = ("suffix", "ngram")
DECODER_FEATURE = "<decoder score>"


# -- shared helpers --------------------------------------------------------------------------

def check_grid(name: str, value, low: float, *, strict: bool,
               high: float | None = None) -> tuple[float, ...]:
    """A number or a non-empty sequence of numbers, each checked like :func:`check_float`."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
            value, (bool, np.bool_)):
        return (check_float(name, value, low, strict=strict, high=high),)
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be a number or a sequence of numbers, got {value!r}")
    try:
        vals = list(value)
    except TypeError:
        raise TypeError(f"{name} must be a number or a sequence of numbers, got "
                        f"{type(value).__name__}") from None
    if not vals:
        raise ValueError(f"{name} must be a non-empty sequence of numbers, got {value!r}")
    return tuple(check_float(f"{name} values", v, low, strict=strict, high=high) for v in vals)


def check_kind(value) -> str:
    if not isinstance(value, str) or value not in _KINDS:
        raise ValueError(f"features must be one of {_KINDS}, got {value!r}")
    return value


def check_ints(name: str, value, low: int = 1) -> tuple[int, ...]:
    """An int or a non-empty sequence of ints, each >= ``low`` (repeats allowed)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an int or a sequence of ints >= {low}, got {value!r}")
    vals = (value,) if isinstance(value, (int, np.integer)) else value
    if isinstance(vals, (str, bytes)):
        raise TypeError(f"{name} must be an int or a sequence of ints >= {low}, got {value!r}")
    try:
        vals = tuple(vals)
    except TypeError:
        raise TypeError(f"{name} must be an int or a sequence of ints >= {low}, got "
                        f"{type(value).__name__}") from None
    if not vals:
        raise ValueError(f"{name} must be a non-empty sequence of ints >= {low}, got {value!r}")
    return tuple(check_int(f"{name} values", v, low) for v in vals)


def check_lengths(value) -> tuple[int, ...]:
    return check_ints("lengths", value, 1)


def oracle_global(nbest: NBestList) -> np.ndarray:
    """Global index of each sentence's oracle candidate (lowest loss; ties: the earlier one)."""
    return nbest.sent_offsets[:-1] + nbest.oracle_indices()


def candidate_word_ids(nbest: NBestList) -> np.ndarray:
    """Word id of every candidate token (each sentence's words repeated per candidate)."""
    c = nbest.corpus
    lens = np.diff(nbest.cand_offsets)
    start = c.offsets[nbest.cand_sentence]
    tok = (np.repeat(start - nbest.cand_offsets[:-1], lens)
           + np.arange(nbest.cand_offsets[-1], dtype=np.int64))
    return c.word_ids[tok]


# -- the feature extractor -------------------------------------------------------------------

class JointFeatures(BasePersistMixin, ParamsMixin):
    """Candidate -> sparse joint feature vector (paper section 4.1), decoder score in column 0.

    The vocabulary is fitted on a training n-best list: a joint feature is kept when its
    value differs between the candidates of at least ``min_count`` training sentences.
    Features that never differ within a training sentence cannot change any training
    ranking, so all three baseline learners would leave their weights at 0; dropping them
    only saves memory and time.

    Parameters
    ----------
    kind : {"suffix", "ngram"}, default "suffix"
        Suffix-tag pairs ("Sufx") or word/tag n-gram features ("n-gm"), see
        :class:`sparsecca.features.JointView`.
    lengths : int or sequence of int >= 1, default (2, 3, 4)
        Suffix lengths (``kind="suffix"`` only).
    min_count : int >= 1, default 1
        Keep a feature discriminating in at least this many training sentences.
    binary : bool, default False
        Presence indicators instead of counts (boosting needs binary features).
    lowercase : bool, default False

    Attributes
    ----------
    view_ : JointView
        The fitted joint view (vocabulary of every joint feature seen in the candidates).
    columns_ : int64 array, shape (n_features_ - 1,)
        Columns of ``view_`` kept, in order (column j + 1 of the output is ``columns_[j]``).
    n_features_ : int
        Output columns, the decoder score included.

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus
    >>> from sparsecca.tagging import TrigramHMM
    >>> corpus = synthetic_corpus(200, random_state=0)
    >>> nbest = TrigramHMM().fit(corpus).nbest(corpus[:20], k=3)
    >>> feats = JointFeatures(kind="ngram").fit(nbest)
    >>> X = feats.transform(nbest)
    >>> X.shape == (nbest.n_total, feats.n_features_)
    True
    >>> feats.feature_names_[0]
    '<decoder score>'
    >>> bool((X[:, 0].toarray().ravel() == nbest.scores).all())
    True
    """

    def __init__(self, kind="suffix", lengths=(2, 3, 4), min_count=1, binary=False,
                 lowercase=False):
        self.kind = kind
        self.lengths = lengths
        self.min_count = min_count
        self.binary = binary
        self.lowercase = lowercase

    def _validate(self):
        kind = check_kind(self.kind)
        lengths = check_lengths(self.lengths)
        min_count = check_int("min_count", self.min_count, 1)
        binary = check_bool("binary", self.binary)
        lowercase = check_bool("lowercase", self.lowercase)
        return kind, lengths, min_count, binary, lowercase

    def _raw(self, nbest: NBestList, view=None) -> sp.csr_matrix:
        """All joint features of the view (``view_`` by default), before column selection."""
        view = self.view_ if view is None else view
        Z = view.transform_sequences(candidate_word_ids(nbest), nbest.tag_ids,
                                     nbest.cand_offsets, nbest.corpus.words, nbest.tags)
        if self.binary:
            Z.data[:] = 1.0
        return Z

    def fit(self, nbest: NBestList, y=None) -> "JointFeatures":
        """Fit the vocabulary on a training n-best list (gold tags are not needed)."""
        self.fit_joint(nbest)
        return self

    def fit_joint(self, nbest: NBestList) -> sp.csr_matrix:
        """Fit, and return the joint features of ``nbest`` (without the decoder column).

        Returns
        -------
        H : scipy.sparse.csr_matrix, shape (n_candidates, n_features_ - 1), float64
        """
        min_count = self._validate()[2]
        nbest = check_nbest(nbest, "nbest")
        # the fitted attributes are set once everything is computed: a refit that fails
        # leaves the previous fit intact, not a new view_ with the old columns_
        view = self._new_view().fit(candidate_corpus(nbest))
        Z = self._raw(nbest, view)
        self._set_columns(view, discriminating_sentences(Z, nbest), min_count)
        return self._select(Z)

    def _new_view(self) -> JointView:
        """The unfitted joint view of every feature (``min_count`` applies to sentences,
        later)."""
        kind, lengths, _, _, lowercase = self._validate()
        return JointView(kind=kind, lengths=lengths, min_count=1, lowercase=lowercase)

    # for a fit on partitioned lists (sparsecca.distributed), which counts and selects the
    # columns partition by partition
    @staticmethod
    def _candidate_corpus(nbest: NBestList) -> TaggedCorpus:
        return candidate_corpus(nbest)

    @staticmethod
    def _discriminating_sentences(Z: sp.csr_matrix, nbest: NBestList) -> np.ndarray:
        return discriminating_sentences(Z, nbest)

    def _set_columns(self, view: JointView, counts: np.ndarray, min_count: int) -> None:
        """Fitted state from the fitted ``view`` and, per column of it, the number of
        training sentences it discriminates in (:func:`discriminating_sentences`)."""
        columns = np.flatnonzero(counts >= min_count).astype(np.int64)
        remap = np.full(view.n_features_, -1, dtype=np.int64)
        remap[columns] = np.arange(columns.size, dtype=np.int64)
        self.view_, self.columns_, self._remap = view, columns, remap
        self.n_features_ = int(columns.size) + 1
        self._names = None

    def _check_fitted(self):
        if "n_features_" not in self.__dict__:
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit(train_nbest) first")

    def _select(self, Z: sp.csr_matrix) -> sp.csr_matrix:
        """Keep (and renumber) the fitted columns; CSR order is preserved."""
        new = self._remap[Z.indices]
        keep = new >= 0
        rows = np.repeat(np.arange(Z.shape[0], dtype=np.int64), np.diff(Z.indptr))
        indptr = np.zeros(Z.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows[keep], minlength=Z.shape[0]), out=indptr[1:])
        H = sp.csr_matrix((Z.data[keep].astype(np.float64), new[keep], indptr),
                          shape=(Z.shape[0], self.n_features_ - 1))
        H.has_sorted_indices = Z.has_sorted_indices
        return H

    def joint(self, nbest: NBestList) -> sp.csr_matrix:
        """Joint features only (columns 1.. of :meth:`transform`), shape (n_candidates, d - 1)."""
        self._check_fitted()
        nbest = check_nbest(nbest, "nbest")
        return self._select(self._raw(nbest))

    def transform(self, nbest: NBestList) -> sp.csr_matrix:
        """Feature matrix of every candidate: decoder score, then joint features.

        Returns
        -------
        X : scipy.sparse.csr_matrix, shape (n_candidates, n_features_), float64
            Column 0 is ``nbest.scores``; words, suffixes or tags unseen at fit contribute
            nothing.
        """
        H = self.joint(nbest)
        s = sp.csr_matrix(nbest.scores.reshape(-1, 1))
        return sp.hstack([s, H], format="csr")

    # -- persistence (arrays + JSON only): the kept columns (stored as "columns"), and the
    # joint view as a nested object; _check_state validates them and rebuilds the rest
    _state_arrays = ("columns_",)
    _state_children = ("view_",)
    _state_keys = {"columns_": "columns"}
    _state_child_classes = {"view_": (JointView,)}

    def _persist_check_fitted(self):
        self._check_fitted()

    def _check_state(self):
        self._validate()
        view = self.view_
        stored = {} if self.columns_ is None else {"columns": self.columns_}
        cols = check_index("columns", state_array(stored, "columns", "int"), view.n_features_,
                           increasing=True)
        self.columns_ = cols
        self._remap = np.full(view.n_features_, -1, dtype=np.int64)
        self._remap[cols] = np.arange(cols.size, dtype=np.int64)
        self.n_features_ = int(cols.size) + 1
        self._names = None

    @property
    def feature_names_(self) -> list[str]:
        """Name of every output column (``"<decoder score>"``, then ``"ing\\tDT NN"`` etc.)."""
        self._check_fitted()
        if self._names is None:
            names = self.view_.vocabulary_.items
            self._names = [DECODER_FEATURE] + [names[j] for j in self.columns_]
        return self._names


# -- save / load of the baseline rerankers --------------------------------------------------

class PersistMixin(BasePersistMixin):
    """``save(path)`` / ``load(path)`` of a fitted baseline reranker (.npz + JSON, no pickle).

    Subclasses list their fitted array attributes in ``_array_attrs`` (None allowed) and their
    JSON-able fitted attributes in ``_extra_attrs``: the declarative state of
    :class:`sparsecca._persist.PersistMixin`, with the fitted :class:`JointFeatures` as the
    nested object ``features_``.  Loading checks that ``coef_`` matches the features, so a
    damaged file is refused before a candidate is scored.
    """

    _array_attrs: tuple[str, ...] = ()
    _extra_attrs: tuple[str, ...] = ()
    _state_children = ("features_",)
    _state_child_classes = {"features_": (JointFeatures,)}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls._state_arrays = tuple(cls._array_attrs)
        cls._state_values = tuple(cls._extra_attrs)

    def _persist_check_fitted(self):
        self._check_fitted("coef_")

    def _check_state(self):
        stored = {} if self.coef_ is None else {"coef_": self.coef_}
        self.coef_ = state_array(stored, "coef_", "float", shape=(self.features_.n_features_,))


def candidate_corpus(nbest: NBestList) -> TaggedCorpus:
    """The candidates of ``nbest`` as a tagged corpus (one sequence each, the sentence's
    words with the candidate's tags): what the joint view is fitted on."""
    return TaggedCorpus(candidate_word_ids(nbest), nbest.tag_ids, nbest.cand_offsets,
                        nbest.corpus.words, nbest.tags)


def discriminating_sentences(Z: sp.csr_matrix, nbest: NBestList) -> np.ndarray:
    """Per column, the number of sentences whose candidates do not all share its value.

    The value varies within sentence i iff its variance over the m_i candidates (absent = 0)
    is positive: ``m_i * sum x^2 - (sum x)^2 > 0``, exact for integer counts.
    """
    n_sent, n_cand = nbest.n_sentences, nbest.n_total
    S = sp.csr_matrix((np.ones(n_cand), nbest.cand_sentence, np.arange(n_cand + 1)),
                      shape=(n_cand, n_sent)).T.tocsr()
    A = S @ Z
    B = S @ Z.multiply(Z).tocsr()
    m = nbest.n_candidates.astype(np.float64)
    V = (sp.diags(m) @ B - A.multiply(A)).tocsr()
    return np.bincount(V.indices[V.data > 0.5], minlength=Z.shape[1])
