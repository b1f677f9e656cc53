"""Output view over tag sequences: bags of tag n-grams."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._params import check_bool, check_float_dtype
from .._persist import (
    check_index,
    pack_strings,
    state_array,
    state_value,
    unpack_strings,
)
from .._sparse import expand_ranges
from .._tagset import check_tagset
from ..data import TaggedCorpus, Vocabulary
from ._base import (
    BaseView,
    check_corpus,
    check_id_array,
    check_int_tuple,
    check_max_features,
    check_min_count,
    check_offsets,
    check_state_size,
    check_vocabulary,
    count_block,
    searchsorted_lookup,
    select_features,
    sequence_chunks,
    stack_rows,
)
from ._counts import TagCodeCounts, tag_layout

__all__ = ["TagNgramView", "BOS", "EOS", "recode_tags"]

#: sentence-boundary symbols in feature names
BOS = "<s>"
EOS = "</s>"



def recode_tags(tag_ids: np.ndarray, tags: Vocabulary, fitted: Vocabulary,
                unknown: int, view: str = "view") -> np.ndarray:
    """Tag ids re-coded from ``tags`` into the ``fitted`` vocabulary, ``unknown`` when absent.

    Raises a :class:`~sparsecca.exceptions.TagsetMismatchError` (a ValueError) when most tag
    tokens are outside ``fitted`` (:func:`sparsecca._tagset.check_tagset`): the view was
    fitted on a different tagset (say UPOS against XPOS), and nearly every feature would be
    dropped silently.  ``view`` names the view in the message.
    """
    if tags is fitted or tags == fitted:
        return tag_ids.astype(np.int64, copy=False)
    mapping = check_tagset(tag_ids, tags, fitted, what="tag sequences",
                           fitted_what=f"the tagset the {view} was fitted on")
    mapping = np.where(mapping >= 0, mapping, unknown).astype(np.int64)
    return mapping[tag_ids] if tag_ids.size else tag_ids.astype(np.int64)


def check_tag_symbols(corpus: TaggedCorpus, view: str, boundary: tuple[str, ...],
                      separators: str = " ") -> None:
    """Refuse a tag of ``corpus`` that would make two tag n-grams share a feature name.

    Feature names join an n-gram's symbols with a space, so a tag holding a space ("A B"
    names both the unigram A B and the bigram A, B), or spelled like a ``boundary`` symbol
    ("<s> X" would name two bigrams), is ambiguous.  Only tags that occur are checked: the
    names are built from them.
    """
    items = corpus.tags.items
    for i in np.unique(corpus.tag_ids).tolist():
        tag = items[i]
        sep = next((c for c in separators if c in tag), None)
        if sep is not None:
            what = {" ": "a space", "\t": "a tab"}.get(sep, repr(sep))
            raise ValueError(
                f"{view} cannot featurise tag {tag!r}: it contains {what}, which separates "
                f"the parts of feature names, so two different features would share a name")
        if tag in boundary:
            raise ValueError(
                f"{view} cannot featurise tag {tag!r}: it is spelled like the sentence-boundary "
                f"symbol of feature names, so two different features would share a name")


def ngram_occurrences(t: np.ndarray, offsets: np.ndarray, n: int, boundaries: bool,
                      base: int, bos: int, eos: int) -> tuple[np.ndarray, np.ndarray]:
    """All tag n-grams of order ``n``: (sequence index, integer code), rows non-decreasing.

    The code of (s_1, ..., s_n) is sum_j s_j * base**(n - j) over symbol ids (tags, then the
    boundary symbols).  With ``boundaries`` each non-empty sequence is padded with n-1 BOS at
    the start and one EOS at the end (so it has len + 1 n-grams for n >= 2); otherwise only
    the len - n + 1 n-grams inside the sequence are taken.  Empty sequences have no n-grams.
    """
    lengths = np.diff(offsets)
    n_seq = lengths.size
    if n == 1:
        return np.repeat(np.arange(n_seq, dtype=np.int64), lengths), t.astype(np.int64)
    if boundaries:
        padded = np.where(lengths > 0, lengths + n, 0)
        new_off = np.zeros(n_seq + 1, dtype=np.int64)
        np.cumsum(padded, out=new_off[1:])
        P = np.full(int(new_off[-1]), bos, dtype=np.int64)
        shift = np.repeat(new_off[:-1] + (n - 1) - offsets[:-1], lengths)
        P[np.arange(t.size, dtype=np.int64) + shift] = t
        nz = np.flatnonzero(lengths)
        P[new_off[nz] + (n - 1) + lengths[nz]] = eos
        counts = np.where(lengths > 0, lengths + 1, 0)
        starts = expand_ranges(new_off[:-1], counts)
        src = P
    else:
        counts = np.maximum(lengths - n + 1, 0)
        starts = expand_ranges(offsets[:-1], counts)
        src = t.astype(np.int64)
    code = src[starts]
    for j in range(1, n):
        code = code * base + src[starts + j]
    return np.repeat(np.arange(n_seq, dtype=np.int64), counts), code


class TagNgramView(BaseView):
    """Tag sequence -> bag of tag n-grams (the paper's output view: unigrams and bigrams).

    Parameters
    ----------
    orders : int or sequence of int >= 1, default (1, 2)
        N-gram orders.
    boundaries : bool, default True
        Pad each non-empty sequence with n-1 ``<s>`` symbols before and one ``</s>`` after for
        orders n >= 2, so "DT NN" yields the bigrams ``<s> DT``, ``DT NN``, ``NN </s>``.
        Unigrams never include boundary symbols.
    min_count : int >= 1, default 1
    dtype : numpy.float32 or numpy.float64, default numpy.float64
    max_features : int >= 1 or None, default None
        Keep the ``max_features`` n-grams occurring most often in the fitting corpus (after
        ``min_count``); ties go to the earlier column.  None keeps them all.

    Notes
    -----
    With an order >= 2, ``fit`` refuses (ValueError) a tag that contains a space, and with
    ``boundaries`` also a tag spelled ``<s>`` or ``</s>``: two different n-grams would share
    a feature name.

    Attributes
    ----------
    tags_ : Vocabulary
        The tagset of the fitting corpus; ``transform_sequences`` re-codes other tagsets into it.
    vocabulary_ : Vocabulary
        Feature names: the n-gram's symbols joined by a space ("DT", "DT NN", "<s> DT").
        Columns are ordered by n-gram order, then by the fitted tag ids of the symbols
        (``<s>`` and ``</s>`` after every tag).
    n_features_ : int
    n_dropped_ : int
        N-gram occurrences absent from the vocabulary at the last transform (unseen n-grams,
        including those with a tag outside ``tags_``); after ``fit``, the occurrences removed
        by ``min_count`` and ``max_features``.

    Notes
    -----
    An n-gram of symbol ids (s_1, ..., s_n) (tags, then ``<s>``, ``</s>`` and one symbol for
    tags unseen at fit) is the integer code ``sum_j s_j B**(n - j)`` with ``B = n_tags + 3``,
    offset per order; ``fit`` counts the codes with ``np.unique`` and ``transform`` looks
    them up in the sorted fitted codes, so no string is built per token.

    References
    ----------
    J. Jagarlamudi and H. Daumé III (2012).  Low-dimensional discriminative reranking.
    Proceedings of NAACL-HLT 2012, pp. 699-709.

    Examples
    --------
    >>> from sparsecca.data import TaggedCorpus
    >>> from sparsecca.features import TagNgramView
    >>> corpus = TaggedCorpus.from_sentences([[("the", "DT"), ("dog", "NN")],
    ...                                       [("dogs", "NNS"), ("bark", "VBP")]])
    >>> view = TagNgramView(orders=(1, 2)).fit(corpus)
    >>> view.feature_names_out().tolist()
    ['DT', 'NN', 'NNS', 'VBP', 'DT NN', 'NN </s>', 'NNS VBP', 'VBP </s>', '<s> DT', '<s> NNS']
    >>> view.transform(corpus).toarray().astype(int).tolist()
    [[1, 1, 0, 0, 1, 1, 0, 0, 1, 0], [0, 0, 1, 1, 0, 0, 1, 1, 0, 1]]

    Candidate tag sequences as flat arrays, here "DT DT" and "DT NN" for the first sentence
    (the unseen bigrams ``DT DT`` and ``DT </s>`` are dropped):

    >>> Y = view.transform_sequences([0, 0, 0, 1], [0, 2, 4], ["DT", "NN"])
    >>> Y.toarray().astype(int).tolist()
    [[2, 0, 0, 0, 0, 0, 0, 0, 1, 0], [1, 1, 0, 0, 1, 1, 0, 0, 1, 0]]
    >>> view.n_dropped_
    2
    """

    reads = frozenset({"tags"})

    def __init__(self, orders=(1, 2), boundaries=True, min_count=1, dtype=np.float64,
                 max_features=None):
        self.orders = orders
        self.boundaries = boundaries
        self.min_count = min_count
        self.max_features = max_features
        self.dtype = dtype

    # symbol ids: tags 0..T-1, BOS = T, EOS = T + 1, UNK = T + 2 (a tag unseen at fit)
    def _codes(self, t: np.ndarray, offsets: np.ndarray, layout=None):
        """(order, rows, codes) of each order; ``layout`` = (params, n_tags, order bases),
        the fitted one by default."""
        p, T, order_base = layout or (self._params, self._n_tags, self._order_base)
        base = T + 3
        for n in p["orders"]:
            rows, code = ngram_occurrences(t, offsets, n, p["boundaries"], base, T, T + 1)
            yield n, rows, code + order_base[n]

    def _validated(self) -> dict:
        return dict(orders=check_int_tuple("orders", self.orders),
                    boundaries=check_bool("boundaries", self.boundaries),
                    dtype=check_float_dtype(self.dtype))

    @staticmethod
    def _signature(params: dict) -> tuple:
        return ("TagNgramView", params["orders"], params["boundaries"])

    def count(self, corpus: TaggedCorpus) -> TagCodeCounts:
        """The n-gram occurrences of a tagged ``corpus``, mergeable with those of other pieces
        of a corpus (:func:`~sparsecca.features.merge_counts`); :meth:`fit_counts` fits on
        them.

        Returns
        -------
        TagCodeCounts
        """
        params = self._validated()
        orders = params["orders"]
        check_min_count(self.min_count)
        check_max_features(self.max_features)
        corpus = check_corpus(corpus, tagged=True)
        if max(orders) >= 2:
            check_tag_symbols(corpus, type(self).__name__,
                              (BOS, EOS) if params["boundaries"] else ())
        T = len(corpus.tags)
        order_base, _ = self._layout(orders, T)
        layout = (params, T, order_base)
        t_all, offsets = corpus.tag_ids.astype(np.int64), corpus.offsets
        uniq_parts, occ_parts = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for s0, s1 in sequence_chunks(offsets):
            a, b = offsets[s0], offsets[s1]
            codes = [c for _, _, c in self._codes(t_all[a:b], offsets[s0:s1 + 1] - a, layout)]
            u, c = np.unique(np.concatenate(codes), return_counts=True)
            uniq_parts.append(u)
            occ_parts.append(c)
        uniq, inv = np.unique(np.concatenate(uniq_parts), return_inverse=True)
        occ = np.bincount(inv, weights=np.concatenate(occ_parts),
                          minlength=uniq.size).astype(np.int64)
        return TagCodeCounts(self._signature(params), corpus.tags, uniq, occ,
                             corpus.n_sentences)

    def _fit_counts(self, counts) -> np.ndarray:
        """Fit from ``counts``; the kept columns' sums on the fitting corpus."""
        params, min_count, max_features = self._checked_counts(counts, TagCodeCounts)
        T = len(counts.tags)
        order_base, _ = self._layout(params["orders"], T)
        occ = counts.occ  # follows the sorted codes, i.e. column order
        keep = select_features(self, occ, min_count, max_features, counts.n_sentences)
        self._params, self._n_tags, self._order_base = params, T, order_base
        self.tags_ = counts.tags
        self.keys_ = counts.keys[keep]
        self.vocabulary_ = Vocabulary(self._names(self.keys_))
        self.n_features_ = int(self.keys_.size)
        self.n_dropped_ = int(occ[~keep].sum())
        return occ[keep]

    def _layout(self, orders, T):
        """Code offset of each order and the size of the code space."""
        return tag_layout(orders, T, repr(self.orders))

    # -- persistence -------------------------------------------------------------------------
    def _get_state(self):
        self._check_fitted()
        arrays = {**pack_strings("tags", self.tags_.items), "keys": self.keys_}
        return self._persist_params(), arrays, {"n_dropped": self.n_dropped_}

    def _set_state(self, arrays, extra):
        params = self._validated()
        orders = params["orders"]
        check_min_count(self.min_count)
        tags = Vocabulary(unpack_strings(arrays, "tags"))
        T = len(tags)
        order_base, n_codes = self._layout(orders, T)
        keys = check_index("keys", state_array(arrays, "keys", "int"), n_codes,
                           increasing=True)
        check_state_size(keys.size, self.max_features)
        self._params, self._n_tags, self._order_base = params, T, order_base
        self.tags_ = tags
        self.keys_ = keys
        self.vocabulary_ = Vocabulary(self._names(keys))
        self.n_features_ = int(keys.size)
        self.n_dropped_ = state_value(extra, "n_dropped", int, low=0)

    def _names(self, keys: np.ndarray) -> list[str]:
        T = self._n_tags
        base = T + 3
        symbols = self.tags_.items + [BOS, EOS, "<unk>"]
        orders = self._params["orders"]
        starts = np.array([self._order_base[n] for n in orders], dtype=np.int64)
        names = []
        for key in keys.tolist():
            n = orders[int(np.searchsorted(starts, key, side="right")) - 1]
            code = key - self._order_base[n]
            digits = []
            for _ in range(n):
                code, d = divmod(code, base)
                digits.append(symbols[d])
            names.append(" ".join(reversed(digits)))
        return names

    def transform(self, corpus: TaggedCorpus) -> sp.csr_matrix:
        """Tag n-gram count matrix of each sentence of a tagged corpus.

        Returns
        -------
        Y : scipy.sparse.csr_matrix, shape (n_sentences, n_features_), dtype ``self.dtype``
        """
        self._check_fitted()
        corpus = check_corpus(corpus, tagged=True)
        return self._transform(corpus.tag_ids, corpus.offsets, corpus.tags)

    def transform_sequences(self, tag_ids, offsets, tags) -> sp.csr_matrix:
        """Tag n-gram count matrix of raw tag sequences (e.g. n-best candidates).

        Parameters
        ----------
        tag_ids : array of int, shape (n_tokens,)
            Flat tag ids in ``tags``, sequence after sequence.
        offsets : array of int, shape (n_sequences + 1,)
            Sequence ``i`` is ``tag_ids[offsets[i]:offsets[i + 1]]``.
        tags : Vocabulary or sequence of str
            The tagset of ``tag_ids``; re-coded into ``tags_`` (tags absent from it make their
            n-grams unseen).  More than half of the tokens outside ``tags_`` is a
            TagsetMismatchError (a ValueError): another tag column.

        Returns
        -------
        Y : scipy.sparse.csr_matrix, shape (n_sequences, n_features_), dtype ``self.dtype``
        """
        self._check_fitted()
        tags = check_vocabulary("tags", tags)
        tag_ids = check_id_array("tag_ids", tag_ids, len(tags), "tags")
        offsets = check_offsets(offsets, tag_ids.size)
        return self._transform(tag_ids, offsets, tags)

    def _transform(self, tag_ids, offsets, tags) -> sp.csr_matrix:
        t_all = recode_tags(np.asarray(tag_ids), tags, self.tags_, unknown=self._n_tags + 2,
                            view=type(self).__name__)
        dtype = self._params["dtype"]
        n_feat = self.n_features_
        lookup = searchsorted_lookup(self.keys_)
        dropped = 0
        blocks = []
        for s0, s1 in sequence_chunks(offsets):
            a, b = offsets[s0], offsets[s1]
            groups = ((rows, code) for _, rows, code in
                      self._codes(t_all[a:b], offsets[s0:s1 + 1] - a))
            Y, lost = count_block(groups, lookup, (s1 - s0, n_feat), dtype)
            blocks.append(Y)
            dropped += lost
        self.n_dropped_ = dropped
        if not blocks:
            return sp.csr_matrix((offsets.size - 1, n_feat), dtype=dtype)
        return stack_rows(blocks, n_feat, dtype)
