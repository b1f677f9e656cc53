"""Mergeable feature counts: a view's ``fit`` split into per-corpus counts, an associative
merge, and a finalize that applies ``min_count`` / ``max_features`` to the whole.

Every view with a split fit has ``count(corpus)`` (a counts object of the classes below) and
``fit_counts(counts)``; its ``fit(corpus)`` is ``fit_counts(count(corpus))``.  The counts of
consecutive pieces of a corpus, merged in corpus order (in any grouping: the merge is
associative), are the counts of the concatenated corpus, re-coded into the union of the
pieces' vocabularies in order of first appearance, as :func:`sparsecca.data.concat_corpora`
builds it.  So a view fitted on merged counts is the view fitted on the concatenation: the
same vocabulary, in the same column order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data import Vocabulary, union_vocabulary

__all__ = ["FeatureCounts", "TagCodeCounts", "JointCounts", "StackCounts", "merge_counts",
           "check_counts"]

_KEY_LIMIT = 1 << 62


def _summed(keys: np.ndarray, occ: np.ndarray):
    """Sorted distinct ``keys`` and the summed ``occ`` of each (int64)."""
    uniq, inv = np.unique(keys, return_inverse=True)
    total = np.zeros(uniq.size, dtype=np.int64)
    np.add.at(total, inv.ravel(), occ)
    return uniq, total


def _check_same(a, b) -> None:
    if type(a) is not type(b):
        raise TypeError(f"cannot merge {type(a).__name__} with {type(b).__name__}: counts of "
                        f"different views")
    if a.signature != b.signature:
        raise ValueError(f"cannot merge counts of views with different parameters: "
                         f"{a.signature} and {b.signature}")


def _tag_map(old: Vocabulary, new: Vocabulary, n_extra: int) -> np.ndarray:
    """Symbol id map from ``old`` tags (+ ``n_extra`` symbols after them) into ``new``."""
    ids = new.ids(old.items) if len(old) else np.zeros(0, dtype=np.int64)
    extra = len(new) + np.arange(n_extra, dtype=np.int64)
    return np.concatenate([np.asarray(ids, dtype=np.int64), extra])


@dataclass(frozen=True, eq=False)
class FeatureCounts:
    """Occurrences of named features (the lexical views): ``names`` sorted, ``occ`` aligned.

    Attributes
    ----------
    signature : tuple
        The view class and the parameters that decide the features; only counts with equal
        signatures merge.
    names : ndarray of object (str), sorted
    occ : ndarray of int64
    n_sentences : int
    """

    signature: tuple
    names: np.ndarray
    occ: np.ndarray
    n_sentences: int

    def merge(self, other: "FeatureCounts") -> "FeatureCounts":
        _check_same(self, other)
        names, occ = _summed(np.concatenate([self.names, other.names]),
                             np.concatenate([self.occ, other.occ]))
        return FeatureCounts(self.signature, names.astype(object), occ,
                             self.n_sentences + other.n_sentences)


def tag_layout(orders, T: int, what: str):
    """Code offset of each n-gram order and the size of the code space (base T + 3)."""
    base = T + 3
    order_base, acc = {}, 0
    for n in orders:
        order_base[n] = acc
        acc += base ** n
    if acc >= _KEY_LIMIT:
        raise ValueError(f"orders={what} with {T} tags gives more than 2**62 possible n-grams; "
                         f"use lower orders")
    return order_base, acc


@dataclass(frozen=True, eq=False)
class TagCodeCounts:
    """Occurrences of tag n-gram codes (:class:`~sparsecca.features.TagNgramView`).

    ``keys`` are the view's integer codes over the symbol ids of ``tags`` (then ``<s>``,
    ``</s>``, unknown), sorted; ``signature`` holds the class, the orders and boundaries.
    """

    signature: tuple
    tags: Vocabulary
    keys: np.ndarray
    occ: np.ndarray
    n_sentences: int

    def recoded(self, tags: Vocabulary) -> np.ndarray:
        """``keys`` re-coded into the symbol ids of ``tags`` (a superset of ``self.tags``)."""
        if tags == self.tags:
            return self.keys
        orders = self.signature[1]
        T0, T1 = len(self.tags), len(tags)
        b0, b1 = T0 + 3, T1 + 3
        ob0, _ = tag_layout(orders, T0, repr(orders))
        ob1, _ = tag_layout(orders, T1, repr(orders))
        sym = _tag_map(self.tags, tags, 3)
        out = np.empty_like(self.keys)
        for n in orders:
            sel = (self.keys >= ob0[n]) & (self.keys < ob0[n] + b0 ** n)
            code = self.keys[sel] - ob0[n]
            new = np.zeros(code.size, dtype=np.int64)
            scale = 1
            for _ in range(n):
                code, d = np.divmod(code, b0)
                new += sym[d] * scale
                scale *= b1
            out[sel] = new + ob1[n]
        return out

    def merge(self, other: "TagCodeCounts") -> "TagCodeCounts":
        _check_same(self, other)
        tags = union_vocabulary([self.tags, other.tags])
        keys, occ = _summed(np.concatenate([self.recoded(tags), other.recoded(tags)]),
                            np.concatenate([self.occ, other.occ]))
        return TagCodeCounts(self.signature, tags, keys, occ,
                             self.n_sentences + other.n_sentences)


def joint_space(kind: str, T: int) -> int:
    """Size of the tag-feature space of a :class:`~sparsecca.features.JointView`."""
    B = T + 2
    return B + B * B + (B ** 3 if kind == "ngram" else 0)


def check_joint_codes(n_units: int, nt: int, error=ValueError) -> None:
    if n_units * nt >= _KEY_LIMIT:
        raise error(f"{n_units} lexical units x {nt} tag features exceed 2**62 codes")


@dataclass(frozen=True, eq=False)
class JointCounts:
    """Occurrences of joint (lexical unit, tag feature) codes
    (:class:`~sparsecca.features.JointView`): ``units`` sorted, codes over ``tags``."""

    signature: tuple
    tags: Vocabulary
    units: np.ndarray
    keys: np.ndarray
    occ: np.ndarray
    n_sentences: int

    def recoded(self, tags: Vocabulary, units: np.ndarray) -> np.ndarray:
        """``keys`` re-coded into ``tags`` and the sorted ``units`` (supersets of ours)."""
        kind = self.signature[1]
        if tags == self.tags and units.size == self.units.size:
            return self.keys
        shift = 1 if kind == "ngram" else 0
        T0, T1 = len(self.tags), len(tags)
        B0, B1 = T0 + 2, T1 + 2
        nt0, nt1 = joint_space(kind, T0), joint_space(kind, T1)
        check_joint_codes(units.size + shift, nt1)
        umap = np.concatenate([np.zeros(shift, dtype=np.int64),
                               np.searchsorted(units, self.units).astype(np.int64) + shift])
        sym = _tag_map(self.tags, tags, 2)
        unit, tf = np.divmod(self.keys, nt0)
        new = np.empty_like(tf)
        uni = tf < B0
        new[uni] = sym[tf[uni]]
        bi = (tf >= B0) & (tf < B0 + B0 * B0)
        p, t = np.divmod(tf[bi] - B0, B0)
        new[bi] = B1 + sym[p] * B1 + sym[t]
        tri = tf >= B0 + B0 * B0
        qp, t = np.divmod(tf[tri] - B0 - B0 * B0, B0)
        q, p = np.divmod(qp, B0)
        new[tri] = B1 + B1 * B1 + (sym[q] * B1 + sym[p]) * B1 + sym[t]
        return umap[unit] * nt1 + new

    def merge(self, other: "JointCounts") -> "JointCounts":
        _check_same(self, other)
        tags = union_vocabulary([self.tags, other.tags])
        units = np.unique(np.concatenate([self.units, other.units])).astype(object)
        keys, occ = _summed(np.concatenate([self.recoded(tags, units),
                                            other.recoded(tags, units)]),
                            np.concatenate([self.occ, other.occ]))
        return JointCounts(self.signature, tags, units, keys, occ,
                           self.n_sentences + other.n_sentences)


@dataclass(frozen=True, eq=False)
class StackCounts:
    """The counts of each part of an :class:`~sparsecca.features.HStackView`."""

    signature: tuple
    parts: tuple
    n_sentences: int

    def merge(self, other: "StackCounts") -> "StackCounts":
        _check_same(self, other)
        return StackCounts(self.signature, tuple(a.merge(b) for a, b in
                                                 zip(self.parts, other.parts)),
                           self.n_sentences + other.n_sentences)


_CLASSES = (FeatureCounts, TagCodeCounts, JointCounts, StackCounts)


def merge_counts(a, b):
    """The counts of two consecutive pieces of a corpus (``a`` first), merged.

    Parameters
    ----------
    a, b : counts from ``view.count(corpus)`` of views with the same parameters

    Returns
    -------
    counts of the same class: ``view.fit_counts(merge_counts(view.count(c1),
    view.count(c2)))`` is ``view.fit(concat_corpora([c1, c2]))``.

    Examples
    --------
    >>> from sparsecca.data import TaggedCorpus, concat_corpora
    >>> from sparsecca.features import TagNgramView, merge_counts
    >>> c1 = TaggedCorpus.from_sentences([[("the", "DT"), ("dog", "NN")]])
    >>> c2 = TaggedCorpus.from_sentences([[("dogs", "NNS"), ("bark", "VBP")]])
    >>> view = TagNgramView()
    >>> merged = view.fit_counts(merge_counts(view.count(c1), view.count(c2)))
    >>> whole = TagNgramView().fit(concat_corpora([c1, c2]))
    >>> merged.feature_names_out().tolist() == whole.feature_names_out().tolist()
    True
    """
    for name, c in (("a", a), ("b", b)):
        if not isinstance(c, _CLASSES):
            raise TypeError(f"{name} must be feature counts (from a view's count), got "
                            f"{type(c).__name__}")
    return a.merge(b)


def check_counts(view, counts, cls, signature) -> None:
    """Refuse counts that ``view`` (validated ``signature``) cannot be fitted from."""
    if not isinstance(counts, cls):
        raise TypeError(f"counts must be the {cls.__name__} of {type(view).__name__}.count, "
                        f"got {type(counts).__name__}")
    if counts.signature != signature:
        raise ValueError(f"counts were made by a view with other parameters: "
                         f"{counts.signature}, this {type(view).__name__} has {signature}")
