"""The baseline rerankers of the paper's Table 2, by row name."""

from __future__ import annotations

from ._boosting import BoostingReranker, RegularizedBoostingReranker
from ._perceptron import PerceptronReranker

__all__ = ["BASELINE_ROWS", "baseline_rerankers"]

#: Table 2 row names, in the order the report prints them
BASELINE_ROWS = ("Collins (Sufx)", "Regularized (Sufx)", "Collins (n-gm)", "Regularized (n-gm)",
                 "Perceptron (Sufx)")


def baseline_rerankers(random_state=0, *, lengths=(2, 3, 4)) -> dict:
    """Unfitted baseline rerankers keyed by their Table 2 row name.

    ``"Collins (Sufx)"`` / ``"Collins (n-gm)"``: :class:`BoostingReranker` (Collins & Koo 2005)
    with suffix-tag pair or n-gram joint features; ``"Regularized (...)"``:
    :class:`RegularizedBoostingReranker` (L1-regularised ExpLoss); ``"Perceptron (Sufx)"``:
    :class:`PerceptronReranker` (averaged, Collins 2002).  Each is fitted with
    ``fit(train_nbest, dev_nbest)`` (dev tunes rounds / C / epochs) and scored like the CCA
    rerankers.

    Parameters
    ----------
    random_state : int, numpy Generator, RandomState or None, default 0
        Seeds the perceptron's visiting order (the boosting rerankers are deterministic).
    lengths : int or sequence of int, default (2, 3, 4)
        Suffix lengths of the "Sufx" features (e.g. (1, 2) for Chinese words).

    Returns
    -------
    dict of str -> reranker, in :data:`BASELINE_ROWS` order
    """
    return {
        "Collins (Sufx)": BoostingReranker(features="suffix", lengths=lengths),
        "Regularized (Sufx)": RegularizedBoostingReranker(features="suffix", lengths=lengths),
        "Collins (n-gm)": BoostingReranker(features="ngram"),
        "Regularized (n-gm)": RegularizedBoostingReranker(features="ngram"),
        "Perceptron (Sufx)": PerceptronReranker(features="suffix", lengths=lengths,
                                                random_state=random_state),
    }
