"""jackknife_nbest against fold-by-fold training done by hand."""

import numpy as np
import pytest

from sparsecca.data import kfold_indices, synthetic_corpus
from sparsecca.tagging import NBestList, TrigramHMM, clone, concatenate, jackknife_nbest


@pytest.fixture(scope="module")
def corpus():
    return synthetic_corpus(240, random_state=2)


def test_equals_manual_folds_in_original_order(corpus):
    est = TrigramHMM(rare_threshold=5)
    jk = jackknife_nbest(est, corpus, k=4, folds=4, random_state=3)
    assert not hasattr(est, "tags_")  # the estimator itself stays unfitted
    assert jk.corpus is corpus and jk.n_sentences == corpus.n_sentences
    parts, held_all = [], []
    for train_idx, held_idx in kfold_indices(corpus.n_sentences, 4, shuffle=True,
                                             random_state=3):
        model = TrigramHMM(rare_threshold=5).fit(corpus.select(train_idx))
        assert model.rare_threshold == 5
        parts.append(model.nbest(corpus.select(held_idx), k=4))
        held_all.append(held_idx)
    held = np.concatenate(held_all)
    stacked = concatenate(parts)
    assert NBestList.concatenate(parts) == stacked
    # sentence held[j] of the corpus is row j of the stacked folds
    assert jk.select(held) == stacked
    # every sentence was decoded by a model that did not see it: its words are more often
    # unknown than when decoding training data with the full model
    full = TrigramHMM(rare_threshold=5).fit(corpus).nbest(corpus, k=4)
    assert full.unknown.sum() == 0 and jk.unknown.sum() > 0
    assert jk.top1_accuracy() < full.top1_accuracy()


def test_progress_bar(corpus, capsys):
    jk = jackknife_nbest(TrigramHMM(), corpus[:60], k=2, folds=3, progress=True)
    assert jk.n_sentences == 60
    assert "jackknife" in capsys.readouterr().err


def test_bad_input(corpus):
    with pytest.raises(ValueError, match=r"folds must be in \[2, n_sentences=240\], got 1"):
        jackknife_nbest(TrigramHMM(), corpus, folds=1)
    with pytest.raises(ValueError, match=r"^corpus must have at least 2 sentences to "
                                         r"jackknife, got 1$"):
        jackknife_nbest(TrigramHMM(), corpus[:1])
    with pytest.raises(ValueError, match=r"^folds must be in \[2, n_sentences=3\], got 10$"):
        jackknife_nbest(TrigramHMM(), corpus[:3])
    with pytest.raises(ValueError, match="k must be an int >= 1, got 0"):
        jackknife_nbest(TrigramHMM(), corpus, k=0)
    with pytest.raises(ValueError, match="corpus must be tagged"):
        jackknife_nbest(TrigramHMM(), corpus.with_tags(None, None))
    with pytest.raises(TypeError, match="estimator must have get_params"):
        jackknife_nbest(object(), corpus)
    # the class itself failed with "get_params() missing 1 required positional argument"
    with pytest.raises(TypeError, match=r"^estimator must be an instance, e\.g\. TrigramHMM\(\), "
                                        r"got the class TrigramHMM$"):
        jackknife_nbest(TrigramHMM, corpus, folds=2)
    with pytest.raises(TypeError, match=r"^estimator must be an instance"):
        clone(TrigramHMM)
    with pytest.raises(TypeError, match="corpus must be a TaggedCorpus"):
        jackknife_nbest(TrigramHMM(), [[("a", "B")]])


def test_a_failing_fold_is_named():
    from sparsecca.data import TaggedCorpus
    from sparsecca.exceptions import TagsetMismatchError

    # fold 1 of 2 trains on sentence 0 only (tag X) and decodes two sentences tagged mostly
    # Y: the tagset check's "another tag column?" is wrong within one corpus
    c = TaggedCorpus.from_sentences([[("a", "X"), ("b", "Y")], [("c", "X")], [("a", "Y")]])
    with pytest.raises(TagsetMismatchError, match=r"^jackknife fold 1 of 2 \(a tagger fitted "
                       r"on 1 of the 3 sentences, decoding the other 2\): corpus gold tags: "
                       r"66\.7% .* \(1 tags\); the training part lacks most of the held-out "
                       r"part's tags: the corpus is too small for 2 folds \(use more "
                       r"sentences\)$"):
        jackknife_nbest(TrigramHMM(), c, k=3, folds=2)
    four = TaggedCorpus.from_sentences([[("a", "X")], [("b", "X")], [("c", "Y")], [("d", "X")]])
    with pytest.raises(TagsetMismatchError, match=r"^jackknife fold \d of 4 .* too small for 4 "
                                                  r"folds \(use fewer folds or more sentences\)$"):
        jackknife_nbest(TrigramHMM(), four, k=3, folds=4)
    # a fold whose training part has no tokens said "got an empty corpus", naming no fold
    empty = TaggedCorpus.from_sentences([[], [("a", "X")]])
    with pytest.raises(ValueError, match=r"^jackknife fold 2 of 2 \(a tagger fitted on 1 of the "
                                         r"2 sentences, decoding the other 1\): corpus must "
                                         r"contain at least one token"):
        jackknife_nbest(TrigramHMM(), empty, k=3, folds=2)
