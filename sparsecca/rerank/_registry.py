"""The Table 2 line-up: every reranker the experiment reports, by row name."""

from __future__ import annotations

from ._baselines import baseline_rerankers
from ._cca import DiscriminativeReranker, GenerativeReranker, SoftenedReranker

__all__ = ["default_rerankers", "CCA_ROWS"]

CCA_ROWS = ("Generative", "Softened-Disc", "Discriminative")


def default_rerankers(random_state=0, *, input_view=None, lengths=(2, 3, 4),
                      baselines: bool = True) -> dict:
    """Unfitted rerankers keyed by their Table 2 row name.

    Parameters
    ----------
    random_state : int or None
    input_view : unfitted view, optional
        Input view of the three CCA models (default ``SuffixView()``; the paper uses
        character 1-2-grams, ``CharNgramView()``, for Chinese).
    lengths : sequence of int
        Suffix lengths of the baselines' suffix-tag features.
    baselines : bool
        Include the Collins & Koo / regularised boosting / perceptron rows.

    Returns
    -------
    dict of str -> reranker: "Generative", "Softened-Disc", "Discriminative", then the
    baselines in their Table 2 order.
    """
    rows = {
        "Generative": GenerativeReranker(input_view=input_view, random_state=random_state),
        "Softened-Disc": SoftenedReranker(input_view=input_view, random_state=random_state),
        "Discriminative": DiscriminativeReranker(input_view=input_view,
                                                 random_state=random_state),
    }
    if baselines:
        rows.update(baseline_rerankers(random_state, lengths=lengths))
    return rows
