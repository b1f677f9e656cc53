"""Shared machinery of the feature views: validation, CSR assembly, the estimator base class."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._params import ParamsMixin
from .._persist import ModelFormatError, PersistMixin
from ..data import TaggedCorpus, Vocabulary
from ..exceptions import NotFittedError  # one class for the whole library, re-exported here
from ._counts import check_counts

__all__ = ["NotFittedError"]

#: chunk size (tokens) for the views that expand several features per token, bounding the
#: temporaries when candidate sets with tens of millions of tokens are transformed
CHUNK_TOKENS = 1 << 21


# -- parameter validation -------------------------------------------------------------------

def check_int_tuple(name: str, value) -> tuple[int, ...]:
    """An int or a non-empty sequence of distinct ints >= 1, returned sorted."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an int or a sequence of ints >= 1, got {value!r}")
    if isinstance(value, (int, np.integer)):
        vals = (int(value),)
    else:
        if isinstance(value, (str, bytes)):
            raise TypeError(f"{name} must be an int or a sequence of ints >= 1, got {value!r}")
        try:
            vals = tuple(value)
        except TypeError:
            raise TypeError(
                f"{name} must be an int or a sequence of ints >= 1, got {type(value).__name__}"
            ) from None
        for v in vals:
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{name} must contain only ints, got {v!r} in {value!r}")
        vals = tuple(int(v) for v in vals)
    if not vals:
        raise ValueError(f"{name} must be a non-empty sequence of ints >= 1, got {value!r}")
    if min(vals) < 1:
        raise ValueError(f"{name} must contain ints >= 1, got {value!r}")
    if len(set(vals)) != len(vals):
        raise ValueError(f"{name} must not repeat a value, got {value!r}")
    return tuple(sorted(vals))


def check_min_count(value) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"min_count must be an int >= 1, got {value!r}")
    if value < 1:
        raise ValueError(f"min_count must be an int >= 1, got {value}")
    return int(value)


def check_max_features(value) -> int | None:
    """None (no limit) or an int >= 1."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"max_features must be None or an int >= 1, got {value!r}")
    if value < 1:
        raise ValueError(f"max_features must be None or an int >= 1, got {value!r}")
    return int(value)


def check_state_size(n_features: int, max_features) -> None:
    """Refuse a loaded vocabulary that ``fit`` with ``max_features`` could not have built."""
    max_features = check_max_features(max_features)
    if max_features is not None and n_features > max_features:
        raise ModelFormatError(f"the stored vocabulary has {n_features} features, more than "
                               f"max_features={max_features}")


def check_corpus(corpus, name: str = "corpus", *, tagged: bool = False) -> TaggedCorpus:
    if not isinstance(corpus, TaggedCorpus):
        raise TypeError(
            f"{name} must be a sparsecca.data.TaggedCorpus, got {type(corpus).__name__}"
        )
    if tagged and not corpus.has_tags:
        raise ValueError(
            f"{name} has no tags: this view featurises tag sequences and needs a tagged corpus"
        )
    return corpus


def check_vocabulary(name: str, vocab) -> Vocabulary:
    if isinstance(vocab, Vocabulary):
        return vocab
    if isinstance(vocab, (str, bytes)) or vocab is None:
        raise TypeError(f"{name} must be a Vocabulary or a sequence of str, got {vocab!r}")
    try:
        items = list(vocab)
    except TypeError:
        raise TypeError(
            f"{name} must be a Vocabulary or a sequence of str, got {type(vocab).__name__}"
        ) from None
    if not all(isinstance(s, str) for s in items):
        raise TypeError(f"{name} must contain only str")
    return Vocabulary(items)


def check_id_array(name: str, ids, vocab_size: int, vocab_name: str) -> np.ndarray:
    """A 1-d integer id array with values in [0, vocab_size), as int64."""
    arr = np.asarray(ids)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must be an integer array, got dtype {arr.dtype}")
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= vocab_size:
        bad = lo if lo < 0 else hi
        raise ValueError(
            f"{name} must lie in [0, {vocab_size}) (the size of {vocab_name}), got {bad}"
        )
    return arr.astype(np.int64, copy=False)


def check_offsets(offsets, n_tokens: int) -> np.ndarray:
    off = np.asarray(offsets)
    if off.ndim != 1 or off.size < 1:
        raise ValueError(f"offsets must be a 1-d array of size >= 1, got shape {off.shape}")
    if not np.issubdtype(off.dtype, np.integer):
        raise TypeError(f"offsets must be an integer array, got dtype {off.dtype}")
    off = off.astype(np.int64, copy=False)
    if off[0] != 0 or off[-1] != n_tokens:
        raise ValueError(
            f"offsets must start at 0 and end at n_tokens={n_tokens}, "
            f"got first {off[0]} and last {off[-1]}"
        )
    if off.size > 1 and np.any(off[1:] < off[:-1]):
        raise ValueError("offsets must be non-decreasing")
    return off


# -- vectorised helpers ---------------------------------------------------------------------

def sequence_chunks(offsets: np.ndarray, budget: int | None = None):
    """Consecutive sequence ranges [s0, s1) of at most ``budget`` tokens (at least one each).

    ``budget`` defaults to the module-level :data:`CHUNK_TOKENS`, read at call time.
    """
    budget = CHUNK_TOKENS if budget is None else budget
    n = offsets.size - 1
    s0 = 0
    while s0 < n:
        s1 = int(np.searchsorted(offsets, offsets[s0] + budget, side="right")) - 1
        s1 = min(max(s1, s0 + 1), n)
        yield s0, s1
        s0 = s1


def csr_from_sorted_rows(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int],
                         dtype: np.dtype, weights: np.ndarray | None = None) -> sp.csr_matrix:
    """Count matrix from (row, col) occurrences whose rows are non-decreasing.

    Built directly in CSR (indptr from a bincount of rows), duplicates summed; no COO detour.
    """
    n_rows = shape[0]
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    if rows.size:
        np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    data = np.ones(cols.size, dtype=dtype) if weights is None else weights.astype(dtype)
    X = sp.csr_matrix((data, cols, indptr), shape=shape)
    X.sum_duplicates()
    return X


def searchsorted_lookup(keys: np.ndarray):
    """``code -> position in the sorted array keys`` (-1 when absent), vectorised."""
    def lookup(code: np.ndarray) -> np.ndarray:
        if not keys.size:
            return np.full(code.size, -1, dtype=np.int64)
        col = np.searchsorted(keys, code)
        np.minimum(col, keys.size - 1, out=col)
        col[keys[col] != code] = -1
        return col
    return lookup


def count_block(groups, lookup, shape: tuple[int, int],
                dtype: np.dtype) -> tuple[sp.csr_matrix, int]:
    """Count matrix of feature codes mapped to columns by ``lookup``.

    ``groups`` yields (rows, codes) pairs, rows non-decreasing within each pair;
    ``lookup(codes)`` gives each code's column, -1 for a code absent from the vocabulary.
    Returns the CSR block and the number of occurrences absent from the vocabulary (dropped).
    """
    rows_l, cols_l, dropped = [], [], 0
    col_dtype = np.int32 if shape[1] < 2**31 else np.int64
    for rows, code in groups:
        col = lookup(code)
        found = col >= 0
        dropped += int(code.size - np.count_nonzero(found))
        rows_l.append(rows[found])
        cols_l.append(col[found].astype(col_dtype))
        del col, found
    n_groups = len(rows_l)
    rows = np.concatenate(rows_l) if rows_l else np.zeros(0, np.int64)
    cols = np.concatenate(cols_l) if cols_l else np.zeros(0, col_dtype)
    del rows_l, cols_l
    if n_groups > 1:
        # a stable sort of a few concatenated sorted runs is a linear merge (timsort)
        order = np.argsort(rows, kind="stable")
        rows, cols = rows[order], cols[order]
    return csr_from_sorted_rows(rows, cols, shape, dtype), dropped


def stack_rows(blocks: list, n_cols: int, dtype: np.dtype) -> sp.csr_matrix:
    """Vertical stack of CSR blocks, releasing each block once copied (``blocks`` is emptied).

    Unlike ``scipy.sparse.vstack`` the peak is the result plus one block, not twice the result.
    """
    if len(blocks) == 1:
        return blocks.pop()
    nnz = sum(b.nnz for b in blocks)
    n_rows = sum(b.shape[0] for b in blocks)
    idx = np.int32 if max(nnz, n_cols) < 2**31 else np.int64
    indptr = np.zeros(n_rows + 1, dtype=idx)
    indices = np.empty(nnz, dtype=idx)
    data = np.empty(nnz, dtype=dtype)
    r = p = 0
    blocks.reverse()
    while blocks:
        b = blocks.pop()
        m, k = b.shape[0], b.nnz
        indptr[r + 1:r + 1 + m] = b.indptr[1:] + p
        indices[p:p + k] = b.indices
        data[p:p + k] = b.data
        r, p = r + m, p + k
        del b
    return sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_cols))


def keep_most_frequent(keep: np.ndarray, occ: np.ndarray,
                       max_features: int | None) -> np.ndarray:
    """``keep`` narrowed to its ``max_features`` entries with the largest ``occ``.

    Parameters
    ----------
    keep : bool array, shape (n,)
        Candidate entries (columns), in column order.
    occ : array, shape (n,)
        Occurrence count of each entry in the fitting corpus.
    max_features : int or None
        None keeps ``keep`` as it is.

    Returns
    -------
    bool array, shape (n,)
        A subset of ``keep``; among equal counts the earlier entry wins (a stable sort), as
        with scikit-learn's ``CountVectorizer(max_features=...)`` on sorted columns.
    """
    idx = np.flatnonzero(keep)
    if max_features is None or idx.size <= max_features:
        return keep
    top = idx[np.argsort(-occ[idx], kind="stable")[:max_features]]
    out = np.zeros(keep.shape, dtype=bool)
    out[top] = True
    return out


def select_features(view, occ: np.ndarray, min_count: int, max_features: int | None,
                    n_sentences: int) -> np.ndarray:
    """The columns a view's ``fit`` keeps: count >= ``min_count``, then the ``max_features``
    most frequent (see :func:`keep_most_frequent`).

    Parameters
    ----------
    view : BaseView
        The view being fitted (named in the error).
    occ : int array, shape (n,)
        Occurrence count of each candidate feature in the fitting corpus, in column order.
    min_count, max_features : validated parameters of ``view``
    n_sentences : int
        Sentences of the fitting corpus.

    Returns
    -------
    bool array, shape (n,)

    Raises
    ------
    ValueError
        When no feature is kept: a 0-column view would otherwise only fail later, as a shape
        error about a matrix the user never built.
    """
    keep = keep_most_frequent(occ >= min_count, occ, max_features)
    if not keep.any():
        name = type(view).__name__
        if n_sentences == 0:
            raise ValueError(f"{name}: fitted on 0 sentences, which give no features")
        if occ.size == 0:
            raise ValueError(f"{name}: the fitting corpus ({n_sentences} sentences) gives no "
                             f"features")
        top = int(occ.max())
        raise ValueError(f"{name}: min_count={min_count} leaves no features (the most "
                         f"frequent occurs {top} time{'s' if top != 1 else ''})")
    return keep


def present_types(word_ids: np.ndarray, n_types: int):
    """Types occurring in ``word_ids``: (type ids, their token counts, type -> row lookup)."""
    counts = np.bincount(word_ids, minlength=n_types)
    present = np.flatnonzero(counts)
    lookup = np.full(n_types, -1, dtype=np.int64)
    lookup[present] = np.arange(present.size, dtype=np.int64)
    return present, counts[present], lookup


def type_features(strings: list[str], featurize) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Features of each type string: a CSR pattern (indptr, local ids) and the local names.

    ``featurize(s)`` returns a list of feature strings, repeats meaning multiplicity.  The loop
    is over word *types*, so its cost is independent of the number of tokens.
    """
    index: dict[str, int] = {}
    setdefault = index.setdefault
    ids: list[int] = []
    indptr = np.zeros(len(strings) + 1, dtype=np.int64)
    for i, s in enumerate(strings):
        for f in featurize(s):
            ids.append(setdefault(f, len(index)))
        indptr[i + 1] = len(ids)
    return indptr, np.asarray(ids, dtype=np.int64), list(index)


# -- base class -----------------------------------------------------------------------------

class BaseView(PersistMixin, ParamsMixin):
    """Common estimator protocol: parameters, ``get_params``/``set_params``, fitted checks.

    Every view is saved with ``save(path)`` / ``load(path)`` (a ``.npz`` model file, see
    :mod:`sparsecca._persist`), and exposes its fitted state as ``get_state()`` /
    ``from_state(params, arrays, extra)`` so that models holding views (the rerankers) embed
    them in their own files.  Loading validates every array, so a damaged file is refused
    before a transform can reach a kernel.

    Attributes
    ----------
    reads : frozenset of {"words", "tags"}, or None
        What the view featurises, declared by each view class (an :class:`HStackView`
        joins its parts'); None when undeclared.  The rerankers check it: their input view
        is applied to corpora holding the gold tags of dev and test, so it must read the
        words only.
    """

    #: what the view featurises (see the class docstring); every concrete view declares it
    reads: frozenset | None = None

    def fit(self, corpus: TaggedCorpus) -> "BaseView":
        """Build the vocabulary from ``corpus``: ``fit_counts(count(corpus))``, the features
        with count >= ``min_count``, then the ``max_features`` most frequent of them.

        Parameters
        ----------
        corpus : TaggedCorpus
            Tagged when the view reads tags.

        Returns
        -------
        self
        """
        return self.fit_counts(self.count(corpus))

    def fit_counts(self, counts) -> "BaseView":
        """Fit from the (merged) counts of a corpus: the view ``fit`` on that corpus gives.

        Parameters
        ----------
        counts
            From ``count`` of views with the same parameters, merged over the pieces of a
            corpus in order (:func:`~sparsecca.features.merge_counts`).

        Returns
        -------
        self
        """
        if not callable(getattr(self, "_fit_counts", None)):
            raise TypeError(f"{type(self).__name__} has no split fit (count / fit_counts)")
        self._fit_counts(counts)
        return self

    def _checked_counts(self, counts, cls) -> tuple:
        """(validated params, min_count, max_features) of a fit from ``counts``, which
        must be a ``cls`` made by a view with the same parameters."""
        params = self._validated()
        min_count = check_min_count(self.min_count)
        max_features = check_max_features(self.max_features)
        check_counts(self, counts, cls, self._signature(params))
        return params, min_count, max_features

    def _check_fitted(self) -> None:
        if "n_features_" not in self.__dict__:
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit(corpus) first"
            )

    def fit_transform(self, corpus: TaggedCorpus) -> sp.csr_matrix:
        """``fit(corpus)`` then ``transform(corpus)``."""
        return self.fit(corpus).transform(corpus)

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """:meth:`feature_names_out` under scikit-learn's name.  A view's input is a corpus,
        not columns, so ``input_features`` must be None."""
        if input_features is not None:
            raise ValueError(f"{type(self).__name__} reads a corpus, not input columns: "
                             f"input_features must be None, got {input_features!r}")
        return self.feature_names_out()

    def feature_names_out(self) -> np.ndarray:
        """Feature names in column order, an object array of str, shape (n_features_,)."""
        self._check_fitted()
        return np.array(self.vocabulary_.items, dtype=object)
