"""What the CCA rerankers' view arguments may be, and the cosine scores of their projections."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["check_view", "clone_view", "cosine_prefix_scores", "view_problem"]

# what each view argument may featurise, and how to say it: the input view is applied to
# nbest.corpus, which holds the gold tags of dev and test, so a view reading tags would see
# them; the output view is fitted on the gold tags but applied to the candidates' tag ids
_VIEW_ROLES = {
    "input_view": (frozenset({"words"}), "a view of the words (SuffixView, CharNgramView, "
                                         "WordView, or an HStackView of them)"),
    "output_view": (frozenset({"tags"}), "a view of tag sequences (TagNgramView, or an "
                                         "HStackView of them)"),
}


def view_problem(name, view):
    """Why ``view`` cannot serve as ``name`` ('input_view' / 'output_view'), or None."""
    reads, allowed = _VIEW_ROLES[name]
    if isinstance(view, type):
        return f"{name} must be {allowed}, got the class {view.__name__}; pass an instance"
    if not all(callable(getattr(view, a, None)) for a in ("fit", "transform", "get_params")):
        return f"{name} must be {allowed}, got {type(view).__name__} {view!r}"
    kinds = getattr(view, "reads", None)
    if kinds == reads:
        return None
    parts = getattr(view, "views", None)   # a stack of views (HStackView)
    if kinds is None and parts is not None and (not isinstance(parts, Sequence)
                                                or isinstance(parts, (str, bytes))):
        what = f"whose views is a {type(parts).__name__}, not a list or tuple of views"
    elif not isinstance(kinds, frozenset):
        what = "which does not declare what it reads (a 'reads' attribute)"
    else:
        what = "which reads " + " and ".join(sorted(kinds)) if kinds else "which reads nothing"
    leak = ("; applied to the dev and test corpora it would see their gold tags"
            if name == "input_view" and kinds and "tags" in kinds else "")
    return f"{name} must be {allowed}, got {type(view).__name__}, {what}{leak}"


def check_view(name, view):
    """A TypeError when ``view`` (None: the default) cannot serve as ``name``."""
    problem = None if view is None else view_problem(name, view)
    if problem is not None:
        raise TypeError(problem)


def clone_view(view):
    """An unfitted copy of ``view`` with its parameters."""
    return type(view)(**view.get_params())


def cosine_prefix_scores(PX, PY, cand_sent):
    """cos(A_k^T x_i, B_k^T yhat_ij) for every prefix k = 1..K at once.

    Parameters
    ----------
    PX : (n, K) projections of the sentences; PY : (n_candidates, K) of the candidates.

    Returns
    -------
    (n_candidates, K) array; column k-1 uses the first k components.  A zero vector has
    cosine 0 (it carries no evidence either way).
    """
    px = PX[cand_sent]
    dots = np.cumsum(px * PY, axis=1)
    nx = np.sqrt(np.cumsum(px * px, axis=1))
    ny = np.sqrt(np.cumsum(PY * PY, axis=1))
    den = nx * ny
    out = np.zeros_like(dots)
    np.divide(dots, den, out=out, where=den > 0)
    return out
