"""The tag distance tables of :class:`~sparsecca.tagging.MMSTagger`: the Penn Treebank
table (confusable pairs near, or far as in the paper) and the check of a user's table."""

from __future__ import annotations

import numpy as np

_PTB = ("CC CD DT EX FW IN JJ JJR JJS LS MD NN NNS NNP NNPS PDT POS PRP PRP$ RB RBR RBS RP "
        "SYM TO UH VB VBD VBG VBN VBP VBZ WDT WP WP$ WRB # $ '' `` , . : ( ) -LRB- -RRB- "
        "-NONE-").split()
_NEAR = ("NN/NNP NNS/NNPS NN/JJ JJ/NNP NN/NNS NNP/NNPS NNS/VBZ NN/VB NN/VBP NN/VBG JJ/VBG "
         "JJ/VBN VBD/VBN VB/VBP VBP/VBZ RB/RP RP/IN RB/IN JJ/RB JJR/RBR JJS/RBS JJR/JJ IN/WDT "
         "DT/WDT DT/IN DT/PDT CD/JJ CD/NN CD/NNP").split()
_CLASSES = ("NN NNS NNP NNPS", "MD VB VBD VBG VBN VBP VBZ", "JJ JJR JJS", "RB RBR RBS WRB",
            "PRP PRP$ WP WP$ EX", "DT PDT WDT", "# $ '' `` , . : ( ) -LRB- -RRB- SYM")
_NEAR_D, _CLASS_D = 0.3, 0.6
#: the named distance tables
_DISTANCES = ("auto", "ptb", "ptb-paper", "uniform")


def ptb_distance(tags, variant: str = "ptb") -> np.ndarray:
    """A Penn Treebank tag distance matrix (see the documentation of :mod:`sparsecca.tagging._mms`).

    Parameters
    ----------
    tags : sequence of str
        Tag names; tags outside the Penn Treebank set count as unrelated to every other.
    variant : {'ptb', 'ptb-paper'}, default 'ptb'
        'ptb': the confusable pairs are near (0.3), pairs inside a word class 0.6, other
        pairs 1.  'ptb-paper': the scale reversed, as the paper describes its matrix (the
        harder the confusion, the larger the distance): confusable pairs 1, pairs inside a
        word class 0.6, other pairs 0.3.

    Returns
    -------
    float64 array, shape (len(tags), len(tags))
        Symmetric, 0 on the diagonal, entries in (0, 1] elsewhere.

    References
    ----------
    B. Santorini (1990).  Part-of-speech tagging guidelines for the Penn Treebank project.

    Y. Ni, C. Saunders, S. Szedmak and M. Niranjan (2010).  The application of structured
    learning in natural language processing.  Machine Translation 24(2), pp. 71-85.

    Examples
    --------
    >>> from sparsecca.tagging._mms import ptb_distance
    >>> ptb_distance(["NN", "NNP", "NNS", "IN"]).tolist()
    [[0.0, 0.3, 0.3, 1.0], [0.3, 0.0, 0.6, 1.0], [0.3, 0.6, 0.0, 1.0], [1.0, 1.0, 1.0, 0.0]]
    >>> ptb_distance(["NN", "NNP", "NNPS", "IN"], variant="ptb-paper").tolist()
    [[0.0, 1.0, 0.6, 0.3], [1.0, 0.0, 1.0, 0.3], [0.6, 1.0, 0.0, 0.3], [0.3, 0.3, 0.3, 0.0]]
    """
    if variant not in ("ptb", "ptb-paper"):
        raise ValueError(f"variant must be 'ptb' or 'ptb-paper', got {variant!r}")
    tags = list(tags)
    index = {t: i for i, t in enumerate(tags)}
    D = np.ones((len(tags), len(tags)))
    for group in _CLASSES:
        ids = [index[t] for t in group.split() if t in index]
        D[np.ix_(ids, ids)] = _CLASS_D
    for pair in _NEAR:
        a, b = pair.split("/")
        if a in index and b in index:
            D[index[a], index[b]] = D[index[b], index[a]] = _NEAR_D
    if variant == "ptb-paper":  # the same groups, the scale reversed
        D = np.select([D == _NEAR_D, D == _CLASS_D], [1.0, _CLASS_D], _NEAR_D)
    np.fill_diagonal(D, 0.0)
    return D


def _is_ptb(tags) -> bool:
    tags = list(tags)
    inside = sum(t in _PTB for t in tags)
    return bool(tags) and inside >= 0.9 * len(tags) and "NN" in tags and "VB" in tags


def _check_distance_param(d):
    if isinstance(d, str):
        if d not in _DISTANCES:
            raise ValueError(f"distance must be one of {', '.join(map(repr, _DISTANCES))} or "
                             f"a square array, got {d!r}")
        return d
    try:
        D = np.asarray(d, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"distance must be one of {', '.join(map(repr, _DISTANCES))} or a "
                        f"square array of numbers, got {type(d).__name__}") from None
    if D.ndim != 2 or D.shape[0] != D.shape[1]:
        raise ValueError(f"distance must be a square (n_tags, n_tags) array, got shape "
                         f"{D.shape}")
    bad = ~np.isfinite(D) | (D < 0) | (D > 1)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(f"distance entries must lie in [0, 1] (off the diagonal in (0, 1]), "
                         f"got {float(D[i, j])!r} at [{i}, {j}]")
    off = ~np.eye(D.shape[0], dtype=bool)
    if np.any(D[off] == 0):
        i, j = np.argwhere((D == 0) & off)[0]
        raise ValueError(f"distance entries off the diagonal must lie in (0, 1], got 0.0 at "
                         f"[{i}, {j}]")
    return D
