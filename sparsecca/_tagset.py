"""The one rule for tags meeting a model fitted on another tagset (say UPOS against XPOS).

A few tags outside the fitted tagset are normal: dev and test gold may hold tags that train
never had.  On real treebanks those are a tiny fraction of the dev/test tag tokens (more,
but still a small minority, when train is cut to a few dozen sentences), and candidates
decoded by the model's own tagger have none.  A swapped tag column leaves most tokens
outside: a UPOS and an XPOS tagset share at most a tag or two (such as '.' or 'VERB'), so
the large majority of the tokens carry a tag the model never saw.  The threshold
(:data:`MAX_UNKNOWN_TAG_FRACTION`, half of the tokens) sits between the two, far from both.
"""

from __future__ import annotations

import numpy as np

from .data import Vocabulary
from .exceptions import TagsetMismatchError

__all__ = ["COLUMN_HINT", "MAX_UNKNOWN_TAG_FRACTION", "check_tagset", "TagsetMismatchError"]

#: more than this fraction of tag tokens outside the fitted tagset is a tagset mismatch
MAX_UNKNOWN_TAG_FRACTION = 0.5

#: the end of check_tagset's message (a caller that knows the cause replaces it)
COLUMN_HINT = "; is one of them another tag column (UPOS against XPOS)?"


def _examples(items, n: int = 5) -> str:
    shown = ", ".join(repr(s) for s in items[:n])
    return shown + (", ..." if len(items) > n else "")


def check_tagset(tag_ids, tags: Vocabulary, fitted: Vocabulary, *, what: str,
                 fitted_what: str) -> np.ndarray:
    """Map ``tags`` into ``fitted``, refusing tags that mostly lie outside it.

    Parameters
    ----------
    tag_ids : int array
        Tag tokens, ids in ``tags``.
    tags, fitted : Vocabulary
        The given tagset and the one the model was fitted on.
    what, fitted_what : str
        How the message names the tokens ("dev gold tags") and the fitted tagset ("the
        tagset of train").

    Returns
    -------
    int64 array, shape (len(tags),)
        ``tags.mapping_to(fitted)``: the id in ``fitted`` of each given tag, -1 if absent.

    Raises
    ------
    TagsetMismatchError
        When more than :data:`MAX_UNKNOWN_TAG_FRACTION` of the tokens carry a tag absent
        from ``fitted``; the message names both tagsets (a few tags of each) and the
        fraction.
    """
    mapping = tags.mapping_to(fitted)
    tag_ids = np.asarray(tag_ids)
    if tag_ids.size == 0 or np.all(mapping >= 0):
        return mapping
    counts = np.bincount(tag_ids, minlength=len(tags))
    n_out = int(counts[mapping < 0].sum())
    frac = n_out / tag_ids.size
    if frac > MAX_UNKNOWN_TAG_FRACTION:
        used = np.flatnonzero(counts)
        by_count = used[np.argsort(-counts[used], kind="stable")]
        given = [tags[i] for i in by_count]
        raise TagsetMismatchError(
            f"{what}: {100 * frac:.1f}% of the tag tokens ({n_out} of {tag_ids.size}) are not "
            f"in {fitted_what} (at most {MAX_UNKNOWN_TAG_FRACTION:.0%} may be); given tags "
            f"[{_examples(given)}] ({len(given)} tags), fitted tagset "
            f"[{_examples(fitted.items)}] ({len(fitted)} tags){COLUMN_HINT}")
    return mapping
