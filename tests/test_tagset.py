"""The tagset-mismatch rule: its threshold against unit cases and the real corpora."""

import numpy as np
import pytest

from sparsecca._tagset import MAX_UNKNOWN_TAG_FRACTION, check_tagset
from sparsecca.data import Vocabulary, read_conllu
from sparsecca.exceptions import TagsetMismatchError

FITTED = Vocabulary(["NN", "DT", "."])
GIVEN = Vocabulary(["NOUN", ".", "DT"])


def _check(ids):
    return check_tagset(np.array(ids, dtype=np.int64), GIVEN, FITTED, what="the tokens",
                        fitted_what="the fitted tagset")


def test_threshold_counts_tokens_not_types():
    assert MAX_UNKNOWN_TAG_FRACTION == 0.5
    np.testing.assert_array_equal(_check([0, 1]), [-1, 2, 1])      # half outside: accepted
    np.testing.assert_array_equal(_check([0, 1, 2, 2, 2]), [-1, 2, 1])
    np.testing.assert_array_equal(_check([]), [-1, 2, 1])
    with pytest.raises(TagsetMismatchError, match=r"^the tokens: 66.7% of the tag tokens "
                                                  r"\(2 of 3\) are not in the fitted tagset "
                                                  r"\(at most 50% may be\); given tags "
                                                  r"\['NOUN', '.'\] \(2 tags\), fitted tagset "
                                                  r"\['NN', 'DT', '.'\] \(3 tags\); is one of "
                                                  r"them another tag column \(UPOS against "
                                                  r"XPOS\)\?$"):
        _check([0, 1, 0])
    assert issubclass(TagsetMismatchError, ValueError)


def _outside(corpus, fitted_corpus):
    known = {fitted_corpus.tags[i] for i in np.unique(fitted_corpus.tag_ids)}
    items = np.array([t not in known for t in corpus.tags.items])
    return float(items[corpus.tag_ids].mean())


@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["sv-talbanken", "en-wsj"])
def test_real_corpora_are_far_from_the_threshold(shared_data, name):
    """dev/test gold tags unseen in train: at most 0.03% of the tokens (sv-talbanken XPOS
    test, the largest of the five sets); a UPOS/XPOS swap: 83-100% (en-wsj shares '.')."""
    d = {(col, s): read_conllu(shared_data / name / f"{s}.conllu", tags=col)
         for col in ("upos", "xpos") for s in ("train", "dev", "test")}
    for col in ("upos", "xpos"):
        for s in ("dev", "test"):
            assert _outside(d[col, s], d[col, "train"]) < 0.001
            check_tagset(d[col, s].tag_ids, d[col, s].tags, d[col, "train"].tags,
                         what=s, fitted_what="train")
    for fit_col, col in (("upos", "xpos"), ("xpos", "upos")):
        assert _outside(d[col, "test"], d[fit_col, "train"]) > 0.8
        with pytest.raises(TagsetMismatchError):
            check_tagset(d[col, "test"].tag_ids, d[col, "test"].tags, d[fit_col, "train"].tags,
                         what="test", fitted_what="train")
