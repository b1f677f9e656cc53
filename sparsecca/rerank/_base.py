"""What every reranker shares: validation, decision -> choice, and dev-set weight tuning."""

from __future__ import annotations

import functools

import numpy as np

from .._params import check_bool, check_int, check_partitioned_fit, check_weight_scale
from .._tagset import check_tagset
from ..exceptions import NotFittedError
from ..kernels import weight_path_losses
from ..tagging import NBestList

__all__ = ["BaseReranker", "check_nbest", "check_dev_tagset", "check_tuning_dev",
           "check_finite_scores", "decoder_term", "tune_weight", "plateau_score",
           "losses_of_choice", "search_grid", "grid_edge", "note_edge", "path_edge",
           "check_fit_lists", "check_dev_list"]


def check_nbest(nbest, name: str = "nbest", *, need_gold: bool = False) -> NBestList:
    """Validate an NBestList argument once, up front.

    Parameters
    ----------
    nbest : NBestList
    name : str
        The argument's name, for the messages ("train", "dev").
    need_gold : bool
        Also require gold tags (Hamming losses), as training and tuning do.

    Returns
    -------
    NBestList
        ``nbest`` itself.

    Raises
    ------
    TypeError
        ``nbest`` is not an NBestList.
    ValueError
        No sentences or no candidates, or no gold tags when ``need_gold``.

    Examples
    --------
    >>> from sparsecca.data import TaggedCorpus
    >>> from sparsecca.rerank import check_nbest
    >>> from sparsecca.tagging import TrigramHMM
    >>> corpus = TaggedCorpus.from_sentences([[("the", "DET"), ("dog", "NOUN")]] * 3)
    >>> nbest = TrigramHMM().fit(corpus).nbest(corpus, k=2)
    >>> check_nbest(nbest, "dev", need_gold=True) is nbest
    True
    >>> check_nbest(corpus, "dev")
    Traceback (most recent call last):
    ...
    TypeError: dev must be an NBestList, got TaggedCorpus
    """
    if not isinstance(nbest, NBestList):
        raise TypeError(f"{name} must be an NBestList, got {type(nbest).__name__}")
    if need_gold and nbest.losses is None:
        raise ValueError(
            f"{name} has no gold tags (losses is None); training and tuning need an n-best "
            f"list decoded from a tagged corpus"
        )
    if nbest.n_sentences == 0 or nbest.n_total == 0:
        raise ValueError(f"{name} is empty ({nbest.n_sentences} sentences, "
                         f"{nbest.n_total} candidates)")
    return nbest


def check_dev_tagset(train, dev: NBestList) -> None:
    """Refuse dev gold tags mostly outside train's tagset (another tag column): tuning on
    them would choose w, k and the rest against meaningless losses.  ``train``: the
    training NBestList, or its gold tag Vocabulary."""
    tags = train.corpus.tags if isinstance(train, NBestList) else train
    check_tagset(dev.corpus.tag_ids, dev.corpus.tags, tags,
                 what="dev gold tags", fitted_what="the gold tagset of train")


def check_tuning_dev(dev, fixed: str) -> None:
    """Refuse tuning on a dev list with one candidate per sentence.

    Every setting then chooses the same sequences and the grid would be decided by ties
    (single sentences with one candidate are fine).  ``fixed`` says how to do without tuning.
    ``dev``: the NBestList, or the most candidates of one of its sentences (an int).
    """
    most = dev if isinstance(dev, (int, np.integer)) else dev.n_candidates.max()
    if most < 2:
        raise ValueError(f"dev has one candidate per sentence; tuning needs k >= 2 (decode dev "
                         f"with k >= 2 candidates, or {fixed})")


def check_finite_scores(nbest: NBestList, name: str, model: str) -> None:
    """Refuse -inf (log 0) decoder scores where ``model`` learns from the decoder score.

    An NBestList may hold them, and a weighted sum ``s + w p`` never picks such a candidate;
    but a model with the decoder score as a feature cannot learn from an infinite one.
    """
    bad = np.flatnonzero(nbest.scores == -np.inf)
    if bad.size:
        i = int(nbest.cand_sentence[bad[0]])
        j = int(bad[0] - nbest.sent_offsets[i])
        raise ValueError(
            f"{name} has {bad.size} candidate(s) with decoder score -inf (log 0), the first "
            f"is candidate {j} of sentence {i}; {model} learns a weight for the decoder score "
            f"and needs finite scores: drop them with "
            f"{name}.reorder(np.flatnonzero(np.isfinite({name}.scores))) or give them a "
            f"finite floor")


def check_fit_lists(train, dev, model: str, grid_name: str, n_values: int, fixed: str):
    """Validate ``fit(train, dev)`` of a reranker that learns a weight for the decoder score.

    Both lists need gold tags and finite decoder scores (:func:`check_finite_scores`); dev
    must share train's tagset and offer k >= 2 candidates (``fixed`` says how to do without
    tuning, :func:`check_tuning_dev`); without dev, the grid ``grid_name`` must hold a single
    value (``n_values``).  Returns ``(train, dev)``.
    """
    train = check_nbest(train, "train", need_gold=True)
    check_finite_scores(train, "train", model)
    return train, check_dev_list(dev, train, model, grid_name, n_values, fixed)


def check_dev_list(dev, train, model: str, grid_name: str, n_values: int, fixed: str):
    """The dev half of :func:`check_fit_lists` (``train``: the training NBestList, or its
    gold tag Vocabulary when the training lists are partitioned); returns ``dev``."""
    if dev is not None:
        dev = check_nbest(dev, "dev", need_gold=True)
        check_dev_tagset(train, dev)
        check_finite_scores(dev, "dev", model)
        check_tuning_dev(dev, fixed)
    elif n_values > 1:
        raise ValueError(f"{grid_name} has {n_values} values to choose from but no dev n-best "
                         f"list was given; pass dev or a single {grid_name}")
    return dev


def decoder_term(weight: float, scores: np.ndarray) -> np.ndarray:
    """``weight * scores`` with -inf (log 0) kept at -inf whatever the weight's sign, so an
    impossible candidate is never chosen (0 * -inf would be NaN).  A finite score whose
    product overflows is a ValueError, not a candidate turned impossible."""
    check_weight_scale("decoder_weight_", weight, scores, "nbest's decoder scores",
                       signed=True)
    impossible = scores == -np.inf
    out = weight * np.where(impossible, 0.0, scores)
    out[impossible] = -np.inf
    return out


def tokens_without_candidates(nbest: NBestList) -> int:
    """Tokens of the sentences without candidates: wrong whatever a reranker chooses."""
    return int(nbest.corpus.lengths[nbest.n_candidates == 0].sum())


def losses_of_choice(nbest: NBestList, choice: np.ndarray) -> int:
    """Total Hamming loss of one chosen candidate per sentence.

    A sentence without candidates (choice -1) has every token wrong.

    Parameters
    ----------
    nbest : NBestList with gold tags
    choice : int array, shape (n_sentences,)
        Within-sentence index of the chosen candidate (-1 for a sentence without
        candidates), e.g. from ``nbest.argmax(scores)``.

    Returns
    -------
    int
        The number of wrong tags; the token accuracy is ``1 - loss / n_tokens``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsecca.data import TaggedCorpus
    >>> from sparsecca.tagging import NBestList
    >>> corpus = TaggedCorpus.from_sentences([[("the", "DET"), ("dog", "NOUN")],
    ...                                       [("runs", "VERB"), ("fast", "ADV")]])
    >>> nbest = NBestList(  # two candidates per sentence; the decoder prefers the first
    ...     tag_ids=[0, 2, 0, 1, 2, 3, 1, 1], cand_offsets=[0, 2, 4, 6, 8],
    ...     sent_offsets=[0, 2, 4], scores=[-1.0, -2.0, -1.0, -6.0], corpus=corpus,
    ...     tags=corpus.tags)
    >>> nbest.losses.tolist()
    [1, 0, 0, 2]
    >>> from sparsecca.rerank import losses_of_choice
    >>> losses_of_choice(nbest, nbest.argmax()), losses_of_choice(nbest, np.array([1, 0]))
    (1, 0)
    """
    has = choice >= 0
    missing = int(nbest.corpus.lengths[~has].sum())
    return int(nbest.losses[nbest.sent_offsets[:-1][has] + choice[has]].sum()) + missing


#: plateau averages closer than this are ties, which go to the earlier grid point.  The
#: running sum of ``_smoothed`` rounds at ~1e-14 (101 accuracies in [0, 1]), which once
#: decided between equal plateaus; two plateaus that really differ, averages of at most 11
#: accuracies k / n_tokens, differ by at least 1 / (27,720 n_tokens): 3.6e-11 at a million
#: dev tokens.
PLATEAU_TIE = 1e-12


def first_best(values) -> int:
    """Index of the first value within PLATEAU_TIE of the largest."""
    v = np.asarray(values, dtype=np.float64)
    return int(np.flatnonzero(v >= v.max() - PLATEAU_TIE)[0])


def _smoothed(values, window):
    """Moving average over +-window neighbours (clipped at the ends), same length."""
    v = np.asarray(values, dtype=np.float64)
    if window <= 0 or v.size < 2:
        return v.copy()
    c = np.concatenate([[0.0], np.cumsum(v)])
    i = np.arange(v.size)
    lo = np.maximum(i - window, 0)
    hi = np.minimum(i + window + 1, v.size)
    return (c[hi] - c[lo]) / (hi - lo)


def tune_weight(nbest: NBestList, model_scores, grid=None, refine: bool = True,
                window: int = 2):
    """Choose w maximising dev accuracy of ``decoder score + w * model score`` (Eq. 13).

    Parameters
    ----------
    nbest : NBestList with gold
    model_scores : float array, shape (n_candidates,)
    grid : 1-d array of finite weights >= 0 in increasing order, optional
        Default: the paper's 0, 1, ..., 100.  (Increasing, because the plateau average runs
        over neighbours and ties go to the earlier point.)
    refine : bool
        Then search 41 points in [best - 1, best + 1] (clipped at 0).
    window : int >= 0
        w is chosen by the dev accuracy averaged over +-``window`` neighbouring grid points
        (+-``window / 8`` on the refined grid), so a broad plateau wins over an isolated
        spike of a few tokens, which rarely carries over to test.  0 picks the raw maximum.
        Ties go to the smallest w (closest to the decoder).

    Returns
    -------
    w : float
    accuracy : float
        Dev token accuracy at w (raw, not averaged).
    curve : (grid, accuracies) arrays for plotting

    Raises
    ------
    ValueError
        ``model_scores`` of the wrong shape or not finite, a grid that is not increasing or
        holds a negative or non-finite weight, ``nbest`` without gold.

    Notes
    -----
    The final score of candidate j of sentence i is ``s_ij + w p_ij`` (Eq. 13 of
    Jagarlamudi & Daumé III 2012), ``s`` the decoder log-probability and ``p`` the model
    score.  The accuracy of every grid weight is computed in one kernel call
    (:func:`sparsecca.kernels.weight_path_losses`).

    References
    ----------
    J. Jagarlamudi and H. Daumé III (2012).  Low-dimensional discriminative reranking.
    Proceedings of NAACL-HLT 2012, pp. 699-709.

    Examples
    --------
    A model score ``p`` that fixes sentence 0 once w > 1 but breaks sentence 1 once w > 5:

    >>> import numpy as np
    >>> from sparsecca.data import TaggedCorpus
    >>> from sparsecca.tagging import NBestList
    >>> corpus = TaggedCorpus.from_sentences([[("the", "DET"), ("dog", "NOUN")],
    ...                                       [("runs", "VERB"), ("fast", "ADV")]])
    >>> nbest = NBestList(  # two candidates per sentence; the decoder prefers the first
    ...     tag_ids=[0, 2, 0, 1, 2, 3, 1, 1], cand_offsets=[0, 2, 4, 6, 8],
    ...     sent_offsets=[0, 2, 4], scores=[-1.0, -2.0, -1.0, -6.0], corpus=corpus,
    ...     tags=corpus.tags)
    >>> nbest.losses.tolist()
    [1, 0, 0, 2]
    >>> from sparsecca.rerank import tune_weight
    >>> p = [0.0, 1.0, 0.0, 1.0]
    >>> w, acc, (grid, accs) = tune_weight(nbest, p, grid=np.arange(11.0), refine=False)
    >>> accs.tolist()
    [0.75, 0.75, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5]
    >>> w, acc  # the middle of the plateau
    (3.0, 1.0)
    >>> tune_weight(nbest, p)[:2]  # the paper's grid 0..100, then refined around the best
    (2.0, 1.0)
    """
    check_nbest(nbest, need_gold=True)
    p = np.asarray(model_scores, dtype=np.float64)
    if p.shape != (nbest.n_total,):
        raise ValueError(f"model_scores must have shape ({nbest.n_total},), got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError("model_scores must be finite")
    window = check_int("window", window, 0)
    grid = np.arange(0.0, 101.0) if grid is None else _check_weight_grid(grid)
    refine = check_bool("refine", refine)
    n_tok = nbest.corpus.n_tokens

    missing = tokens_without_candidates(nbest)

    def accs_of(ws):
        lost = weight_path_losses(nbest.scores, p, nbest.sent_offsets, nbest.losses, ws)
        return 1.0 - (lost + missing) / n_tok

    accs = accs_of(grid)
    best = first_best(_smoothed(accs, window))
    w_best, a_best = float(grid[best]), float(accs[best])
    if refine:
        fine = np.linspace(max(0.0, w_best - 1.0), w_best + 1.0, 41)
        facc = accs_of(fine)
        k = first_best(_smoothed(facc, int(round(2.5 * window))))
        w_best, a_best = float(fine[k]), float(facc[k])
    return w_best, a_best, (grid, accs)


#: how many points a dev grid may grow by past the edge its best value lies on
MAX_WIDEN = 2
#: a path (boosting rounds, epochs) is at its edge when the best prefix lies in its last 10%
PATH_EDGE = 0.1
_SCALES = ("log", "linear", "log1m")


def _next_point(values, side: str, scale: str):
    """The grid point one step past the ``side`` end of ``values`` (None: no spacing)."""
    v = np.unique(np.asarray(values, dtype=np.float64))
    if v.size < 2:
        return None
    a, b = (v[0], v[1]) if side == "lower" else (v[-1], v[-2])
    if scale == "log":
        return None if a <= 0 or b <= 0 else float(a * (a / b))
    if scale == "log1m":  # values below 1, spaced in log(1 - v): 0.9, 0.99 -> 0.999
        return None if a >= 1 or b >= 1 else float(1 - (1 - a) * ((1 - a) / (1 - b)))
    return float(a + (a - b))


def grid_edge(values, best_value, *, low=None, high=None):
    """``'lower'`` / ``'upper'`` when ``best_value`` is the smallest / largest of ``values``
    (a grid of at least two values) and not a bound of the parameter's domain; else None.

    Examples
    --------
    >>> from sparsecca.rerank._base import grid_edge
    >>> grid_edge([0.1, 0.3, 1.0], 1.0), grid_edge([0.1, 0.3, 1.0], 0.3)
    ('upper', None)
    >>> grid_edge([0.5, 1.0], 1.0, high=1.0) is None  # the domain's bound, not the grid's
    True
    """
    v = np.unique(np.asarray(values, dtype=np.float64))
    if v.size < 2:
        return None
    if best_value <= v[0] and (low is None or best_value > low):
        return "lower"
    if best_value >= v[-1] and (high is None or best_value < high):
        return "upper"
    return None


def note_edge(edges: list, name: str, values, value, *, low=None, high=None) -> None:
    """Append to ``edges`` the record of :func:`search_grid` when ``value``, chosen among
    ``values`` (nothing added past them), lies on an edge (:func:`grid_edge`)."""
    side = grid_edge(values, value, low=low, high=high)
    if side is not None:
        edges.append({"param": name, "value": float(value), "side": side,
                      "tried": sorted(float(v) for v in values), "widened": 0})


def search_grid(evaluate, values, *, name: str, scale: str = "log", low=None, high=None,
                widen: int = MAX_WIDEN, edges: list | None = None, better=None):
    """Maximise ``evaluate(value)`` over a dev grid, widening it past an edge best value.

    Every value of ``values`` is evaluated (in order; ties go to the earlier value).  While
    the best lies on an edge of the values tried (:func:`grid_edge`), one more value one
    grid step beyond that edge is tried (geometric steps for ``scale='log'``, steps in
    ``log(1 - v)`` for ``'log1m'``, arithmetic ones for ``'linear'``; clipped to the domain
    ``[low, high]``), at most ``widen`` times.  A best value still on an edge is recorded in
    ``edges``.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(value) -> (score, payload)``; higher scores are better.
    values : sequence of float
        The grid.
    name : str
        The parameter, for ``edges``.
    scale : {'log', 'linear', 'log1m'}
    low, high : float or None
        The parameter's domain (inclusive); a best value on it is not an edge.
    widen : int >= 0
        Most values added.
    edges : list or None
        Where to append ``{"param", "value", "side", "tried", "widened"}`` when the best
        value is still on an edge.
    better : callable or None
        ``better(a, b)`` True when score a beats score b (default: by more than
        :data:`PLATEAU_TIE`).

    Returns
    -------
    values : list of float
        Every value tried, in the order tried.
    results : list
        ``evaluate``'s answers, in the same order.
    best : int
        Index of the best.

    Examples
    --------
    A dev accuracy peaking at 8, outside the grid 1, 2, 4:

    >>> from sparsecca.rerank._base import search_grid
    >>> edges = []
    >>> values, results, best = search_grid(lambda v: (-abs(v - 8.0), None), [1.0, 2.0, 4.0],
    ...                                     name="b", edges=edges, widen=3)
    >>> values, values[best], edges
    ([1.0, 2.0, 4.0, 8.0, 16.0], 8.0, [])
    >>> values, results, best = search_grid(lambda v: (v, None), [1.0, 2.0], name="b",
    ...                                     edges=edges, widen=1)
    >>> values[best], edges[0]["side"], edges[0]["widened"]
    (4.0, 'upper', 1)
    """
    if scale not in _SCALES:
        raise ValueError(f"scale must be one of {_SCALES}, got {scale!r}")
    widen = check_int("widen", widen, 0)
    if better is None:
        def better(a, b):
            return a > b + PLATEAU_TIE
    values = [float(v) for v in values]
    results = [evaluate(v) for v in values]

    def best_index():
        b = 0
        for i in range(1, len(results)):
            if better(results[i][0], results[b][0]):
                b = i
        return b

    best, added = best_index(), 0
    while True:
        side = grid_edge(values, values[best], low=low, high=high)
        if side is None:
            break
        nxt = _next_point(values, side, scale)
        if nxt is not None and low is not None:
            nxt = max(nxt, low)
        if nxt is not None and high is not None:
            nxt = min(nxt, high)
        if added >= widen or nxt is None or nxt in values:
            if edges is not None:
                edges.append({"param": name, "value": values[best], "side": side,
                              "tried": sorted(values), "widened": added})
            break
        values.append(nxt)
        results.append(evaluate(nxt))
        added += 1
        best = best_index()
    return values, results, best


def path_edge(best: int, n_run: int, cap: int, *, name: str, edges: list | None = None,
              widened: int = 0) -> bool:
    """Whether the best prefix of a path (rounds, epochs) lies at the path's cap.

    True when the path ran to its cap (``n_run >= cap``) and the best prefix ``best`` lies
    in its last :data:`PATH_EDGE` fraction (the last point of a short path); then a dict
    ``{"param", "value", "side": "upper", "tried": [cap], "widened"}`` is appended to
    ``edges``.

    Examples
    --------
    >>> from sparsecca.rerank._base import path_edge
    >>> path_edge(19_700, 20_000, 20_000, name="n_rounds"), path_edge(9, 10, 10, name="e")
    (True, False)
    >>> path_edge(10, 10, 10, name="n_epochs"), path_edge(150, 150, 20_000, name="n_rounds")
    (True, False)
    """
    at = n_run >= cap and best > (1.0 - PATH_EDGE) * n_run
    if at and edges is not None:
        edges.append({"param": name, "value": int(best), "side": "upper", "tried": [int(cap)],
                      "widened": int(widened)})
    return bool(at)


def _check_weight_grid(grid) -> np.ndarray:
    try:
        g = np.asarray(grid, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"grid must be a 1-d array of weights, got {grid!r}") from None
    if g.ndim != 1 or g.size == 0:
        raise ValueError(f"grid must be a non-empty 1-d array of weights, got shape {g.shape}")
    bad = ~np.isfinite(g) | (g < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"grid weights must be finite and >= 0, got {g[i]:g} at position {i}")
    if np.any(np.diff(g) <= 0):
        i = int(np.flatnonzero(np.diff(g) <= 0)[0])
        raise ValueError(f"grid must be strictly increasing, got {g[i]:g} then {g[i + 1]:g} "
                         f"at positions {i}, {i + 1}")
    return g


def plateau_score(curve, w, window: int = 2) -> float:
    """The selection criterion of :func:`tune_weight`: mean dev accuracy of the coarse grid
    points within +-``window`` of the one nearest ``w`` (to compare k, tau, lam fairly).

    Parameters
    ----------
    curve : (grid, accuracies)
        As returned by :func:`tune_weight`.
    w : float
        The weight chosen.
    window : int >= 0
        As given to :func:`tune_weight`; 0 gives the raw accuracy of the nearest point.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from sparsecca.rerank import plateau_score
    >>> grid = np.arange(11.0)
    >>> accs = np.array([0.75, 0.75, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5])
    >>> plateau_score((grid, accs), 3.0), plateau_score((grid, accs), 8.2)
    (0.95, 0.5)
    >>> plateau_score((grid, accs), 6.0, window=0)
    0.5
    """
    grid, accs = curve
    i = int(np.argmin(np.abs(np.asarray(grid) - w)))
    return float(_smoothed(accs, window)[i])


def _mapping_partitions(fn, name):
    """``fn`` (a reranker method of one n-best list), which on partitioned n-best lists (a
    ``sparsecca.distributed.PartitionedNBest``, recognised by its ``_apply_reranker``) runs
    partition by partition instead."""
    @functools.wraps(fn)
    def method(self, nbest, *args, **kwargs):
        apply = getattr(nbest, "_apply_reranker", None)
        if apply is not None and not args and not kwargs:
            return apply(self, name)
        return fn(self, nbest, *args, **kwargs)

    method._maps_partitions = True
    return method


def is_partitioned(nbest) -> bool:
    """Whether ``nbest`` is a ``sparsecca.distributed.PartitionedNBest`` (which this layer
    cannot import; recognised by its ``_apply_reranker``)."""
    return hasattr(nbest, "_apply_reranker")


def _gathered(nbest):
    """``nbest``, gathered on the driver when it is partitioned (a PartitionedNBest)."""
    return nbest.gather() if is_partitioned(nbest) else nbest


def _mixing(reranker) -> bool:
    """Whether ``reranker`` trains on partitioned lists by parameter mixing (its
    ``partitioned_fit``, validated, is ``"mixing"``)."""
    return hasattr(reranker, "partitioned_fit") and \
        check_partitioned_fit(reranker)[0] == "mixing"


def _gathering(fit):
    """``fit`` (of a reranker that trains on in-memory lists) taking partitioned lists too:
    they are gathered on the driver first, but partitioned training lists of a reranker
    with ``partitioned_fit="mixing"``, which it trains on where they live."""
    @functools.wraps(fit)
    def method(self, train, dev=None, *args, **kwargs):
        if not (is_partitioned(train) and _mixing(self)):
            train = _gathered(train)
        return fit(self, train, _gathered(dev), *args, **kwargs)

    return method


def _partition_aware(fn):
    return _mapping_partitions(fn, fn.__name__)


class BaseReranker:
    """Base class of every reranker.

    Subclasses implement ``fit(train, dev=None)`` (returning self) and
    ``decision_function(nbest)`` giving one final score per candidate; the chosen candidate of
    each sentence is the one with the largest score (ties: the decoder's order).  The base
    class gives them ``rerank`` (the choices), ``predict`` (the tagged corpus),
    ``reranked`` (the list re-sorted) and ``score`` (token accuracy).  Given partitioned
    n-best lists (a :class:`sparsecca.distributed.PartitionedNBest`), these methods and
    ``decision_function`` run partition by partition: lazily, returning partitioned results
    (``reranked`` a PartitionedNBest), except ``score``, which sums the wrong tokens of the
    partitions and returns the accuracy.  ``fit`` given partitioned lists gathers them on
    the driver (the perceptron and hidden-variable baselines by default), unless the class
    fits on partitions itself (the CCA rerankers, whose views, engine and tuning run per
    partition and by tree sums; the boosting rerankers, whose features and training pairs
    are built per partition), or has ``partitioned_fit="mixing"`` (the perceptron and
    hidden-variable rerankers: parameter mixing on the partitions; dev is gathered).

    Examples
    --------
    A toy reranker adding 2 to the decoder score for every NOUN tag of a candidate:

    >>> import numpy as np
    >>> from sparsecca.rerank import BaseReranker
    >>> class NounBonus(BaseReranker):
    ...     def fit(self, train, dev=None):
    ...         self.noun_ = train.tags.id("NOUN")
    ...         return self
    ...     def decision_function(self, nbest):
    ...         self._check_fitted("noun_")
    ...         is_noun = (nbest.tag_ids == self.noun_).astype(float)
    ...         return nbest.scores + 2 * np.add.reduceat(is_noun, nbest.cand_offsets[:-1])
    >>> from sparsecca.data import TaggedCorpus
    >>> from sparsecca.tagging import NBestList
    >>> corpus = TaggedCorpus.from_sentences([[("the", "DET"), ("dog", "NOUN")],
    ...                                       [("runs", "VERB"), ("fast", "ADV")]])
    >>> nbest = NBestList(  # two candidates per sentence; the decoder prefers the first
    ...     tag_ids=[0, 2, 0, 1, 2, 3, 1, 1], cand_offsets=[0, 2, 4, 6, 8],
    ...     sent_offsets=[0, 2, 4], scores=[-1.0, -2.0, -1.0, -6.0], corpus=corpus,
    ...     tags=corpus.tags)
    >>> nbest.losses.tolist()
    [1, 0, 0, 2]
    >>> reranker = NounBonus().fit(nbest)
    >>> reranker.rerank(nbest).tolist(), nbest.argmax().tolist()
    ([1, 0], [0, 0])
    >>> reranker.score(nbest), nbest.top1_accuracy()
    (1.0, 0.75)
    >>> reranker.predict(nbest)[0]
    (['the', 'dog'], ['DET', 'NOUN'])
    """

    #: whether ``fit`` takes partitioned lists itself (the CCA and boosting rerankers);
    #: otherwise they are gathered on the driver first
    _fits_partitions = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in ("decision_function", "projection_scores"):
            fn = cls.__dict__.get(name)
            if fn is not None and not getattr(fn, "_maps_partitions", False):
                setattr(cls, name, _mapping_partitions(fn, name))
        fit = cls.__dict__.get("fit")
        if fit is not None and not cls._fits_partitions:
            cls.fit = _gathering(fit)

    def _check_train_partition(self, part, scale=None) -> None:
        """A partition of partitioned training lists checked as :func:`check_fit_lists`
        checks a whole list (but its emptiness: the partitions' totals are checked
        together); ``scale``: the largest decoder weight, whose products with the scores
        must be finite."""
        if not isinstance(part, NBestList) or (part.n_sentences and part.losses is None):
            check_nbest(part, "train", need_gold=True)
        check_finite_scores(part, "train", type(self).__name__)
        if scale is not None and part.n_total:
            check_weight_scale("decoder_weight", scale, part.scores, "train's decoder scores")

    def _check_fitted(self, attr: str):
        if not hasattr(self, attr):
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit(train_nbest) first"
            )

    def decision_function(self, nbest) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    @_partition_aware
    def rerank(self, nbest) -> np.ndarray:
        """Within-sentence index of the chosen candidate, shape (n_sentences,)."""
        nbest = check_nbest(nbest)
        return nbest.argmax(self.decision_function(nbest))

    @_partition_aware
    def predict(self, nbest):
        """The corpus tagged with the chosen candidates (a TaggedCorpus)."""
        nbest = check_nbest(nbest)
        return nbest.best(nbest.argmax(self.decision_function(nbest)))

    @_partition_aware
    def reranked(self, nbest) -> NBestList:
        """The n-best list re-sorted by this reranker's scores (best first)."""
        nbest = check_nbest(nbest)
        return nbest.sort_by(self.decision_function(nbest))

    @_partition_aware
    def score(self, nbest) -> float:
        """Token accuracy of the chosen candidates (needs gold)."""
        nbest = check_nbest(nbest, need_gold=True)
        return 1.0 - losses_of_choice(nbest, self.rerank(nbest)) / nbest.corpus.n_tokens
