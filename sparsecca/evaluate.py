"""Accuracy, oracle accuracy and paired significance tests for taggers and rerankers.

All functions work on flat per-token arrays plus sentence offsets (the columnar layout of
:class:`sparsecca.data.TaggedCorpus`), so they cost O(tokens) in NumPy.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ._params import as_int_array, check_random_state

__all__ = ["token_accuracy", "accuracy_report", "per_tag_scores", "paired_bootstrap",
           "mcnemar"]


def _flat(name, a, dtype=None):
    a = np.asarray(a) if dtype is None else np.asarray(a, dtype=dtype)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got shape {a.shape}")
    return a


def _bool(name, a):
    """``a`` as a 1-d bool array; other values than True/False or 0/1 are refused.

    Casting would take any nonzero value for True: counts, tag ids or an index array passed
    by mistake would give a wrong answer without a word.
    """
    a = _flat(name, a)
    if a.dtype == bool:
        return a
    if a.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a boolean array (True/False or 0/1), got dtype "
                        f"{a.dtype}")
    bad = (a != 0) & (a != 1)
    if bad.any():
        raise ValueError(f"{name} must be boolean (True/False or 0/1), got {a[bad][0].item()!r} at "
                         f"position {int(np.argmax(bad))}")
    return a.astype(bool)


def token_accuracy(pred, gold, mask=None) -> float:
    """Fraction of tokens with ``pred == gold`` (restricted to ``mask`` when given).

    Parameters
    ----------
    pred, gold : int arrays, shape (n_tokens,)
        Tag ids in the same vocabulary.
    mask : bool array, shape (n_tokens,), optional

    Returns
    -------
    float
        NaN when ``mask`` selects no token (e.g. no unknown words).

    Raises
    ------
    TypeError
        ``pred`` or ``gold`` is not an array of integers (tag strings, floats, None, bools).
    ValueError
        No tokens at all, arrays of different lengths, or a mask that is not boolean.

    Examples
    --------
    >>> from sparsecca.evaluate import token_accuracy
    >>> pred, gold = [0, 1, 2, 2], [0, 1, 1, 2]
    >>> token_accuracy(pred, gold)
    0.75
    >>> token_accuracy(pred, gold, mask=[False, False, True, True])
    0.5
    >>> token_accuracy(pred, gold, mask=[False] * 4)  # no token selected
    nan
    """
    pred = _flat("pred", pred)
    gold = _flat("gold", gold)
    if pred.shape != gold.shape:
        raise ValueError(f"pred has {pred.size} tokens, gold has {gold.size}")
    if not pred.size:
        # an accuracy of nothing is undefined: NaN would pass silently into a table
        raise ValueError("pred and gold are empty: no tokens to evaluate")
    # tag strings never equal tag ids (accuracy 0.0), and float or object ids compare
    # after whatever rounding made them
    pred = as_int_array("pred", pred, np.int64)
    gold = as_int_array("gold", gold, np.int64)
    ok = pred == gold
    if mask is not None:
        mask = _bool("mask", mask)
        if mask.shape != ok.shape:
            raise ValueError(f"mask has {mask.size} entries, expected {ok.size}")
        ok = ok[mask]
    return float(ok.mean()) if ok.size else float("nan")


def accuracy_report(pred, gold, unknown=None) -> dict:
    """Token accuracy overall and, when ``unknown`` is given, on known and unknown words.

    Parameters
    ----------
    pred, gold : int arrays, shape (n_tokens,)
        Tag ids in the same vocabulary.
    unknown : bool array, shape (n_tokens,), optional
        True for tokens whose word the tagger never saw in training.

    Returns
    -------
    dict
        Keys ``accuracy``, ``n_tokens`` and, with ``unknown``, ``known_accuracy``,
        ``unknown_accuracy``, ``n_unknown``.  An accuracy over an empty subset is NaN.

    Raises
    ------
    TypeError, ValueError
        As :func:`token_accuracy`.

    Examples
    --------
    >>> from sparsecca.evaluate import accuracy_report
    >>> report = accuracy_report([0, 1, 2, 2], [0, 1, 1, 2],
    ...                          unknown=[False, False, True, False])
    >>> report  # doctest: +NORMALIZE_WHITESPACE
    {'accuracy': 0.75, 'n_tokens': 4, 'known_accuracy': 1.0, 'unknown_accuracy': 0.0,
     'n_unknown': 1}
    """
    out = {"accuracy": token_accuracy(pred, gold), "n_tokens": int(np.size(gold))}
    if unknown is not None:
        unknown = _bool("unknown", unknown)
        out["known_accuracy"] = token_accuracy(pred, gold, ~unknown)
        out["unknown_accuracy"] = token_accuracy(pred, gold, unknown)
        out["n_unknown"] = int(unknown.sum())
    return out


def per_tag_scores(pred, gold, labels=None) -> dict:
    """Precision, recall and F1 of every tag.

    Parameters
    ----------
    pred, gold : int arrays, shape (n_tokens,)
        Tag ids in the same vocabulary.
    labels : sequence of str, optional
        The name of each tag id (e.g. ``Vocabulary.items``); default the ids themselves.

    Returns
    -------
    dict
        Tag (name, or id) -> dict with ``precision`` (correct / predicted), ``recall``
        (correct / gold), ``f1``, ``support`` (gold count) and ``predicted`` (predicted
        count), for every tag that occurs in ``gold`` or ``pred``.  A ratio over a zero
        count is NaN (precision of a tag never predicted, recall of one never in gold).

    Raises
    ------
    TypeError, ValueError
        As :func:`token_accuracy`; also a tag id with no entry in ``labels``.

    Examples
    --------
    >>> from sparsecca.evaluate import per_tag_scores
    >>> scores = per_tag_scores([0, 1, 1, 2], [0, 1, 2, 2], labels=["DET", "NOUN", "VERB"])
    >>> scores["NOUN"]["precision"], scores["NOUN"]["recall"]
    (0.5, 1.0)
    >>> round(scores["VERB"]["f1"], 4), scores["VERB"]["support"]
    (0.6667, 2)
    """
    token_accuracy(pred, gold)  # the checks of the arrays
    pred = as_int_array("pred", _flat("pred", pred), np.int64)
    gold = as_int_array("gold", _flat("gold", gold), np.int64)
    if min(pred.min(), gold.min()) < 0:
        raise ValueError("tag ids must be >= 0")
    n = int(max(pred.max(), gold.max())) + 1
    if labels is not None and n > len(labels):
        raise ValueError(f"tag id {n - 1} has no entry in labels ({len(labels)} names)")
    n_gold = np.bincount(gold, minlength=n)
    n_pred = np.bincount(pred, minlength=n)
    n_ok = np.bincount(gold[pred == gold], minlength=n)
    out = {}
    for t in np.flatnonzero((n_gold > 0) | (n_pred > 0)).tolist():
        p = n_ok[t] / n_pred[t] if n_pred[t] else float("nan")
        r = n_ok[t] / n_gold[t] if n_gold[t] else float("nan")
        f = 2 * p * r / (p + r) if (p == p and r == r and p + r > 0) else (
            0.0 if p == p and r == r else float("nan"))
        out[labels[t] if labels is not None else t] = {
            "precision": float(p), "recall": float(r), "f1": float(f),
            "support": int(n_gold[t]), "predicted": int(n_pred[t])}
    return out


def _pair(correct_a, correct_b):
    ca = _bool("correct_a", correct_a)
    cb = _bool("correct_b", correct_b)
    if ca.shape != cb.shape:
        raise ValueError(f"correct_a has {ca.size} tokens, correct_b has {cb.size}")
    return ca, cb


def _offsets(offsets, n_tokens):
    # refused, not cast: a cast would truncate 3.9 to 3 and move a sentence boundary
    offsets = as_int_array("offsets", _flat("offsets", offsets), np.int64)
    if offsets.size < 1 or offsets[0] != 0 or offsets[-1] != n_tokens \
            or np.any(np.diff(offsets) < 0):
        raise ValueError(
            f"offsets must start at 0, be non-decreasing and end at n_tokens={n_tokens}"
        )
    return offsets


def _per_sentence(correct, offsets):
    csum = np.concatenate([[0], np.cumsum(correct, dtype=np.int64)])
    return csum[offsets[1:]] - csum[offsets[:-1]]


def paired_bootstrap(correct_a, correct_b, offsets, n_resamples: int = 10_000,
                     random_state=0) -> dict:
    """Paired bootstrap over sentences: is system B more accurate than system A?

    Sentences are resampled with replacement ``n_resamples`` times; the one-sided p-value is the
    fraction of resamples in which B's accuracy gain over A is <= 0 (Koehn 2004; Berg-Kirkpatrick
    et al. 2012 use the equivalent shifted form), among those with a token (a resample of
    empty sentences only has no accuracy).

    Parameters
    ----------
    correct_a, correct_b : bool arrays, shape (n_tokens,)
        Per-token correctness of the two systems on the same tokens.
    offsets : int array, shape (n_sentences + 1,)
        Sentence boundaries (float or bool arrays are refused, not truncated).
    n_resamples : int >= 100
    random_state : None, int >= 0, numpy Generator or RandomState

    Returns
    -------
    dict with ``gain`` (B minus A accuracy, in points of 1), ``p_value``, ``n_resamples``.

    Raises
    ------
    TypeError
        ``offsets`` is not an array of integers, or ``random_state`` is not one of the above.
    ValueError
        Correctness arrays that are not boolean (True/False or 0/1) or differ in length, bad
        offsets, fewer than 2 non-empty sentences, ``n_resamples`` < 100, or a negative
        ``random_state``.

    Notes
    -----
    Resampling whole sentences keeps the dependence between the tokens of a sentence
    (a reranker changes a sentence's tags together).  The p-value is ``(worse + 1) /
    (resamples + 1)``, so it is never 0.

    References
    ----------
    P. Koehn (2004).  Statistical significance tests for machine translation evaluation.
    Proceedings of EMNLP 2004, pp. 388-395.

    T. Berg-Kirkpatrick, D. Burkett and D. Klein (2012).  An empirical investigation of
    statistical significance in NLP.  Proceedings of EMNLP-CoNLL 2012, pp. 995-1005.

    Examples
    --------
    100 sentences of 20 tokens; B fixes one error of A in every other sentence and makes
    none of its own:

    >>> import numpy as np
    >>> from sparsecca.evaluate import paired_bootstrap
    >>> correct_a = np.tile([True] * 19 + [False], 100)
    >>> correct_b = correct_a.copy()
    >>> correct_b[19::40] = True
    >>> offsets = np.arange(0, 2001, 20)
    >>> result = paired_bootstrap(correct_a, correct_b, offsets, n_resamples=1000)
    >>> result["gain"], round(result["p_value"], 4), result["n_resamples"]
    (0.025, 0.001, 1000)
    """
    ca, cb = _pair(correct_a, correct_b)
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 100:
        raise ValueError(f"n_resamples must be an int >= 100, got {n_resamples!r}")
    offsets = _offsets(offsets, ca.size)
    diff = (_per_sentence(cb, offsets) - _per_sentence(ca, offsets)).astype(np.float64)
    lengths = np.diff(offsets).astype(np.float64)
    n = diff.size
    n_filled = int(np.count_nonzero(lengths))
    if n_filled < 2:
        # every resample of one sentence is that sentence again: the p-value would only
        # say whether B beat A on it
        raise ValueError(f"paired_bootstrap needs at least 2 non-empty sentences to "
                         f"resample, got {n_filled}")
    rng = check_random_state(random_state)
    worse = defined = 0
    # resample in chunks to bound memory at ~ chunk * n indices
    chunk = max(1, min(n_resamples, 2_000_000 // max(n, 1)))
    done = 0
    while done < n_resamples:
        b = min(chunk, n_resamples - done)
        idx = rng.integers(0, n, size=(b, n))
        tokens = lengths[idx].sum(axis=1)
        # a resample of empty sentences only has no accuracy: left out, not counted as a
        # loss for B (its 0 / 0 gain compared as 'not worse')
        has = tokens > 0
        worse += int(np.count_nonzero(diff[idx[has]].sum(axis=1) <= 0))
        defined += int(np.count_nonzero(has))
        done += b
    return {"gain": float(diff.sum() / lengths.sum()),
            "p_value": (worse + 1) / (defined + 1), "n_resamples": int(n_resamples)}


def mcnemar(correct_a, correct_b) -> dict:
    """McNemar's exact test on tokens (two-sided): do A and B differ in error rate?

    Only discordant tokens count: ``n01`` (A wrong, B right) and ``n10`` (A right, B wrong).
    Under H0 n01 ~ Binomial(n01 + n10, 1/2).

    Parameters
    ----------
    correct_a, correct_b : bool arrays, shape (n_tokens,)
        Per-token correctness of the two systems on the same tokens.

    Returns
    -------
    dict with ``n01``, ``n10``, ``p_value``.

    Raises
    ------
    ValueError
        Correctness arrays that are not boolean (True/False or 0/1), differ in length or
        are empty.

    Notes
    -----
    The test treats tokens as independent, which they are not within a sentence; prefer
    :func:`paired_bootstrap` (over sentences) when the two differ.

    References
    ----------
    Q. McNemar (1947).  Note on the sampling error of the difference between correlated
    proportions or percentages.  Psychometrika 12(2), pp. 153-157.

    Examples
    --------
    >>> from sparsecca.evaluate import mcnemar
    >>> correct_a = [False] * 8 + [True] * 12
    >>> correct_b = [True] * 8 + [False] * 2 + [True] * 10
    >>> mcnemar(correct_a, correct_b)
    {'n01': 8, 'n10': 2, 'p_value': 0.109375}
    """
    ca, cb = _pair(correct_a, correct_b)
    if not ca.size:
        # no tokens is no evidence, not "no difference" (p = 1)
        raise ValueError("correct_a and correct_b are empty: no tokens to compare")
    n01 = int(np.count_nonzero(~ca & cb))
    n10 = int(np.count_nonzero(ca & ~cb))
    p = 1.0 if n01 + n10 == 0 else float(stats.binomtest(n01, n01 + n10, 0.5).pvalue)
    return {"n01": n01, "n10": n10, "p_value": p}
