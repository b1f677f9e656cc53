"""Feature views: corpora and candidate tag sequences -> sparse count matrices (CSR).

Input views (one row per sentence): :class:`SuffixView` (the paper's bag of suffixes),
:class:`CharNgramView` (character n-grams, for Chinese), :class:`WordView`.  Output view (one
row per tag sequence): :class:`TagNgramView` (bag of tag unigrams and bigrams).  Joint
(word-side x tag-side) features of the baseline rerankers: :class:`JointView`.  Several
views side by side (e.g. suffixes and words): :class:`HStackView`.  Token-level context
features of taggers (one row per token): :class:`ContextFeatures`.

All views follow scikit-learn conventions: ``fit(corpus)`` builds the vocabulary,
``transform`` returns a ``scipy.sparse.csr_matrix`` of counts, learned attributes end in
``_``.  Featurisation is vectorised: per-word features are computed once per word *type* and
spread to sentences with a sparse product (X = S @ W); tag n-grams and joint features are
integer codes computed on the flat arrays, counted with ``np.unique`` at fit and looked up in
the fitted sorted codes at transform (a numba kernel searches each lexical unit's short range
for :class:`JointView`).  Views over tags also take raw candidate arrays
(``transform_sequences``), re-coding foreign tagsets into the fitted one.
"""

from ._base import NotFittedError
from ._context import ContextFeatures
from ._counts import merge_counts
from ._joint import JointView
from ._lexical import SHORT_WORD_MARK, SUFFIX_ESCAPE, CharNgramView, SuffixView, WordView
from ._tags import BOS, EOS, TagNgramView
from ._union import HStackView

__all__ = [
    "BOS",
    "EOS",
    "SHORT_WORD_MARK",
    "SUFFIX_ESCAPE",
    "CharNgramView",
    "ContextFeatures",
    "HStackView",
    "JointView",
    "NotFittedError",
    "SuffixView",
    "TagNgramView",
    "WordView",
    "merge_counts",
]
