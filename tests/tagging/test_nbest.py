"""NBestList against plain-Python computations over explicit candidate lists."""

import numpy as np
import pytest

from sparsecca._persist import ModelFormatError
from sparsecca.data import TaggedCorpus, Vocabulary, synthetic_corpus
from sparsecca.tagging import NBestList, TrigramHMM, concatenate


@pytest.fixture(scope="module")
def nbest():
    corpus = synthetic_corpus(260, random_state=0)
    model = TrigramHMM().fit(corpus[:200])
    return model.nbest(corpus[200:], k=6)


def as_python(nb):
    """The list as nested Python lists: per sentence, [(tags, score), ...]."""
    out = []
    for i in range(nb.n_sentences):
        out.append([(nb.candidate(i, j), nb.scores[nb.sent_offsets[i] + j])
                    for j in range(nb.n_candidates[i])])
    return out


def gold_and_unknown(nb):
    gold, unk = [], []
    for i in range(nb.n_sentences):
        a, b = nb.corpus.offsets[i], nb.corpus.offsets[i + 1]
        gold.append(nb.corpus.sentence(i)[1])
        unk.append(nb.unknown[a:b].tolist())
    return gold, unk


def python_accuracy(py, gold, unk, choice, subset):
    correct = total = 0
    for cands, g, u, j in zip(py, gold, unk, choice):
        for c, gt, uu in zip(cands[j][0], g, u):
            if subset == "all" or (subset == "unknown") == uu:
                correct += c == gt
                total += 1
    return correct / total


def test_losses_and_accuracies_match_python(nbest):
    py = as_python(nbest)
    gold, unk = gold_and_unknown(nbest)
    losses = [sum(c != g for c, g in zip(tags, gs)) for cands, gs in zip(py, gold)
              for tags, _ in cands]
    assert nbest.losses.tolist() == losses
    top = [int(np.argmax([s for _, s in cands])) for cands in py]
    oracle = [int(np.argmin([sum(c != g for c, g in zip(t, gs)) for t, _ in cands]))
              for cands, gs in zip(py, gold)]
    assert nbest.argmax().tolist() == top
    assert nbest.oracle_indices().tolist() == oracle
    for subset in ("all", "known", "unknown"):
        assert nbest.top1_accuracy(subset) == pytest.approx(
            python_accuracy(py, gold, unk, top, subset))
        assert nbest.oracle_accuracy(subset) == pytest.approx(
            python_accuracy(py, gold, unk, oracle, subset))
    assert nbest.oracle_accuracy() >= nbest.top1_accuracy()
    assert nbest.oracle_accuracy() > nbest.top1_accuracy()  # k=6 must find better candidates
    assert nbest.n_candidates.tolist() == [len(c) for c in py]


@pytest.mark.parametrize("index", [
    np.array([5, 0, 0, 17]), slice(3, 30, 4), slice(None), -1, 7, np.array([], dtype=int),
    "mask",
])
def test_select(nbest, index):
    if isinstance(index, str):
        index = np.arange(nbest.n_sentences) % 3 == 1
    sub = nbest[index]
    ids = np.arange(nbest.n_sentences)[index]
    ids = np.atleast_1d(ids)
    py = as_python(nbest)
    assert as_python(sub) == [py[i] for i in ids]
    assert sub.corpus == nbest.corpus.select(ids)
    gold, unk = gold_and_unknown(sub)
    full_gold, full_unk = gold_and_unknown(nbest)
    assert gold == [full_gold[i] for i in ids] and unk == [full_unk[i] for i in ids]
    assert sub.tags is nbest.tags


def test_reorder_sort_truncate_best(nbest):
    py = as_python(nbest)
    # reverse every sentence's candidates
    order = np.concatenate([np.arange(b - 1, a - 1, -1) for a, b in
                            zip(nbest.sent_offsets[:-1], nbest.sent_offsets[1:])])
    rev = nbest.reorder(order)
    assert as_python(rev) == [c[::-1] for c in py]
    assert rev.sort_by() == nbest  # scores were already descending
    # sorting by new values and picking per-sentence bests
    values = np.random.default_rng(0).normal(size=nbest.n_total)
    resorted = nbest.sort_by(values)
    # all-equal values: ties go to the first candidate
    assert resorted.argmax(np.zeros(nbest.n_total)).tolist() == [0] * nbest.n_sentences
    expect = []
    for i, cands in enumerate(py):
        v = values[nbest.sent_offsets[i]:nbest.sent_offsets[i + 1]]
        expect.append([cands[j] for j in np.argsort(-v, kind="stable")])
    assert as_python(resorted) == expect
    choice = nbest.argmax(values)
    best = nbest.best(choice)
    assert isinstance(best, TaggedCorpus) and best.tags is nbest.tags
    assert [t for _, t in best] == [py[i][j][0] for i, j in enumerate(choice)]
    assert nbest.accuracy(choice) == pytest.approx(
        python_accuracy(py, *gold_and_unknown(nbest), choice, "all"))
    trunc = nbest.truncate(2)
    assert as_python(trunc) == [c[:2] for c in py]
    with pytest.raises(ValueError, match="order must keep sentences in order"):
        nbest.reorder(order[::-1])
    with pytest.raises(ValueError, match="at least one candidate of every sentence"):
        nbest.reorder(order[nbest.n_candidates[0]:])
    with pytest.raises(ValueError, match=r"indices\[0\]=99 is not a candidate"):
        nbest.best(np.full(nbest.n_sentences, 99))
    with pytest.raises(ValueError, match="values must have shape"):
        nbest.argmax(np.zeros(3))
    with pytest.raises(ValueError, match="k must be an int >= 1, got 0"):
        nbest.truncate(0)


def test_truncation_equals_smaller_k():
    """Exact list Viterbi: the top 3 of a 10-best list are the 3-best list."""
    corpus = synthetic_corpus(220, random_state=1)
    model = TrigramHMM().fit(corpus[:200])
    ten = model.nbest(corpus[200:], k=10)
    three = model.nbest(corpus[200:], k=3)
    np.testing.assert_allclose(ten.truncate(3).scores, three.scores, rtol=1e-12)


def test_candidate_access(nbest):
    i = 3
    for j in range(nbest.n_candidates[i]):
        ids = nbest.candidate_ids(i, j)
        assert [nbest.tags[t] for t in ids] == nbest.candidate(i, j)
    assert nbest.candidate(i, -1) == nbest.candidate(i, nbest.n_candidates[i] - 1)
    with pytest.raises(IndexError, match="candidate 99 out of range"):
        nbest.candidate(i, 99)
    with pytest.raises(IndexError, match="sentence 1000 out of range"):
        nbest.candidate(1000, 0)


def test_concatenate_restores_and_merges_vocabularies(nbest):
    n = nbest.n_sentences
    parts = [nbest[:10], nbest[10:11], nbest[11:]]
    assert concatenate(parts) == nbest
    # a part whose tag ids refer to a permuted vocabulary: strings must still agree
    p = parts[1]
    perm = Vocabulary(p.tags.items[::-1])
    remap = p.tags.mapping_to(perm)
    p2 = NBestList(remap[p.tag_ids], p.cand_offsets, p.sent_offsets, p.scores, p.corpus, perm,
                   p.unknown)
    merged = concatenate([parts[0], p2, parts[2]])
    assert merged == nbest and merged.n_sentences == n
    assert merged.losses.tolist() == nbest.losses.tolist()
    with pytest.raises(ValueError, match="at least one NBestList"):
        concatenate([])
    with pytest.raises(TypeError, match=r"nbests\[1\] must be an NBestList"):
        concatenate([nbest, "x"])


def test_save_load_roundtrip(nbest, tmp_path):
    path = tmp_path / "nb.npz"
    nbest.save(path)
    back = NBestList.load(path)
    assert back == nbest
    assert back.losses.tolist() == nbest.losses.tolist()
    assert back.top1_accuracy("unknown") == nbest.top1_accuracy("unknown")
    with np.load(path, allow_pickle=False) as z:  # nothing pickled inside
        assert all(z[k].dtype != object for k in z.files)
    # untagged corpus, no unknown mask
    plain = NBestList(nbest.tag_ids, nbest.cand_offsets, nbest.sent_offsets, nbest.scores,
                      nbest.corpus.with_tags(None, None), nbest.tags)
    plain.save(tmp_path / "plain.npz")
    back = NBestList.load(tmp_path / "plain.npz")
    assert back == plain and back.losses is None and back.unknown is None
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(ModelFormatError, match="other.npz: not a sparsecca model file"):
        NBestList.load(tmp_path / "other.npz")
    with pytest.raises(FileExistsError, match="overwrite=True"):  # never overwritten silently
        nbest.save(path)
    assert nbest.save(path, overwrite=True) == path


def test_evaluation_needs_gold_and_mask(nbest):
    plain = NBestList(nbest.tag_ids, nbest.cand_offsets, nbest.sent_offsets, nbest.scores,
                      nbest.corpus.with_tags(None, None), nbest.tags)
    with pytest.raises(ValueError, match="needs gold tags"):
        plain.top1_accuracy()
    with pytest.raises(ValueError, match="oracle needs gold tags"):
        plain.oracle_accuracy()
    no_mask = NBestList(nbest.tag_ids, nbest.cand_offsets, nbest.sent_offsets, nbest.scores,
                        nbest.corpus, nbest.tags)
    with pytest.raises(ValueError, match="needs the unknown-word mask"):
        no_mask.top1_accuracy("unknown")
    with pytest.raises(ValueError, match=r"tokens must be one of \('all', 'known', 'unknown'\)"):
        nbest.top1_accuracy("rare")


def test_constructor_validation():
    corpus = TaggedCorpus.from_sentences([[("a", "X"), ("b", "Y")], [("c", "X")]])
    tags = Vocabulary(["X", "Y"])
    good = dict(tag_ids=[0, 1, 1, 1, 0], cand_offsets=[0, 2, 4, 5], sent_offsets=[0, 2, 3],
                scores=[-1.0, -2.0, -0.5], corpus=corpus, tags=tags)
    nb = NBestList(**good)
    assert nb.losses.tolist() == [0, 1, 0]
    assert nb.oracle_accuracy() == 1.0 and nb.top1_accuracy() == 1.0
    for change, match in [
        (dict(sent_offsets=[0, 3]), r"sent_offsets must have n_sentences \+ 1 = 3 entries, got 2"),
        (dict(cand_offsets=[0, 2, 4]), r"sent_offsets ends at 3 candidates but cand_offsets "
                                       r"has 3 entries \(2 candidates\)"),
        (dict(scores=[1.0]), r"scores must have shape \(3,\)"),
        (dict(cand_offsets=[0, 1, 4, 5]), "every candidate must have the length of its sentence"),
        (dict(tag_ids=[0, 1, 1, 1, 7]), r"tag_ids must lie in \[0, 2\)"),
        (dict(tags=Vocabulary(["X", "Z"])), r"gold tags \['Y'\] are not in the tags vocabulary"),
        (dict(unknown=[True]), r"unknown must have shape \(3,\)"),
    ]:
        with pytest.raises(ValueError, match=match):
            NBestList(**{**good, **change})
    with pytest.raises(TypeError, match="corpus must be a TaggedCorpus"):
        NBestList(**{**good, "corpus": [["a"]]})


def test_non_finite_scores_and_values():
    """NaN orders nothing and +inf is no log-probability: refused, naming the candidate.
    -inf (log 0, a sequence the decoder deems impossible) stays a legal score."""
    corpus = TaggedCorpus.from_sentences([[("a", "X"), ("b", "Y")], [("c", "X")]])
    good = dict(tag_ids=[0, 1, 1, 1, 0], cand_offsets=[0, 2, 4, 5], sent_offsets=[0, 2, 3],
                scores=[-1.0, -2.0, -0.5], corpus=corpus, tags=Vocabulary(["X", "Y"]))
    for scores, bad in [([np.nan, -2.0, -0.5], "nan at candidate 0"),
                        ([-1.0, -2.0, np.inf], "inf at candidate 2")]:
        with pytest.raises(ValueError, match=rf"^scores must be finite or -inf \(log 0\), "
                                             rf"got {bad}$"):
            NBestList(**{**good, "scores": scores})
    nb = NBestList(**{**good, "scores": [-1.0, -np.inf, -np.inf]})
    assert nb.argmax().tolist() == [0, 0]
    with pytest.raises(ValueError, match="^values must be not NaN, got nan at candidate 1$"):
        nb.argmax([0.0, np.nan, 1.0])
    with pytest.raises(ValueError, match="^values must be not NaN, got nan at candidate 0$"):
        nb.sort_by([np.nan, 0.0, 1.0])
    assert nb.argmax([0.0, np.inf, -np.inf]).tolist() == [1, 0]


_GOOD = dict(tag_ids=[0, 1, 1, 1, 0], cand_offsets=[0, 2, 4, 5], sent_offsets=[0, 2, 3],
             scores=[-1.0, -2.0, -0.5], tags=Vocabulary(["X", "Y"]))


@pytest.mark.parametrize(("change", "exc", "match"), [
    # a cast made '-1.5' -> -1.5, True -> 1.0, 'no' -> True (any non-empty string), 2 -> True
    (dict(scores=["-1.0", "-2", "0"]), TypeError,
     r"^scores must be an array of real numbers \(int or float\), got dtype <U4$"),
    (dict(scores=[True, False, True]), TypeError, r"^scores must .* got dtype bool$"),
    (dict(scores=np.array([-1.0, -2.0, -0.5]) + 1j), TypeError,
     r"^scores must .* got dtype complex128$"),  # was float()'s unlabelled TypeError
    (dict(scores=[-1.0, None, -0.5]), TypeError, r"^scores must .* got dtype object$"),
    (dict(unknown=["no", "no", "yes"]), TypeError,
     r"^unknown must be an array of bools \(or of 0 / 1 integers\), got dtype <U3$"),
    (dict(unknown=[0.0, 1.0, 0.0]), TypeError, r"^unknown must .* got dtype float64$"),
    (dict(unknown=[0, 2, 1]), ValueError,
     r"^unknown must hold only 0 and 1 when given as integers, got 2$"),
])
def test_scores_and_unknown_dtypes_refused(change, exc, match):
    corpus = TaggedCorpus.from_sentences([[("a", "X"), ("b", "Y")], [("c", "X")]])
    with pytest.raises(exc, match=match):
        NBestList(**{**_GOOD, "corpus": corpus, **change})


def test_scores_and_unknown_dtypes_accepted():
    corpus = TaggedCorpus.from_sentences([[("a", "X"), ("b", "Y")], [("c", "X")]])
    ref = NBestList(**_GOOD, corpus=corpus, unknown=np.array([False, True, False]))
    for scores, unknown in [([-1, -2, 0], [0, 1, 0]), (np.float32([-1, -2, -0.5]),
                                                        np.uint8([0, 1, 0]))]:
        nb = NBestList(**{**_GOOD, "scores": scores}, corpus=corpus, unknown=unknown)
        assert nb.scores.dtype == np.float64 and nb.unknown.dtype == bool
        np.testing.assert_array_equal(nb.scores, np.asarray(scores, dtype=np.float64))
        np.testing.assert_array_equal(nb.unknown, ref.unknown)
    # an empty list is float64 to NumPy: no candidates, nothing to refuse
    empty = NBestList([], [0], [0], [], corpus[0:0], _GOOD["tags"], unknown=[])
    assert empty.n_total == 0 and empty.unknown.dtype == bool


def _with_empty_sentences():
    """Sentences 1 ('c', one token) and 2 (no token) have no candidates."""
    corpus = TaggedCorpus.from_sentences([[("a", "X"), ("b", "Y")], [("c", "Y")], [],
                                          [("d", "X")]])
    # sentence 0: [X X] (score -1), [X Y] (score -2, the gold); sentence 3: [X]
    return NBestList(tag_ids=[0, 0, 0, 1, 0], cand_offsets=[0, 2, 4, 5],
                     sent_offsets=[0, 2, 2, 2, 3], scores=[-1.0, -2.0, -0.5], corpus=corpus,
                     tags=Vocabulary(["X", "Y"]), unknown=[False, True, True, False])


def test_sentences_without_candidates():
    """argmax gives them -1; accuracies count their tokens wrong (as losses_of_choice and
    tune_weight do); reorder / sort_by / truncate keep them empty.  All but argmax refused
    the list before."""
    from sparsecca.rerank import losses_of_choice

    nb = _with_empty_sentences()
    assert nb.argmax().tolist() == [0, -1, -1, 0]
    assert nb.oracle_indices().tolist() == [1, -1, -1, 0]
    # 4 tokens: top 1 gets a and d right; the oracle a, b and d; c is always wrong
    assert nb.top1_accuracy() == 0.5
    assert nb.oracle_accuracy() == 0.75
    assert nb.top1_accuracy("known") == 1.0 and nb.top1_accuracy("unknown") == 0.0
    assert nb.oracle_accuracy("unknown") == 0.5
    assert nb.accuracy([1, -1, -1, 0]) == 0.75
    assert 1 - losses_of_choice(nb, nb.argmax()) / nb.corpus.n_tokens == nb.top1_accuracy()
    with pytest.raises(ValueError, match=r"^indices\[1\]=0 is not a candidate of sentence 1 "
                                         r"\(it has 0, so its choice is -1\)$"):
        nb.accuracy([0, 0, -1, 0])
    with pytest.raises(ValueError, match=r"^indices\[0\]=-1 is not a candidate of sentence 0 "
                                         r"\(it has 2\)$"):
        nb.accuracy([-1, -1, -1, 0])
    swapped = nb.reorder([1, 0, 2])
    assert swapped.sent_offsets.tolist() == [0, 2, 2, 2, 3]
    assert swapped.candidate(0, 0) == ["X", "Y"] and swapped.top1_accuracy() == 0.5
    assert swapped.sort_by() == nb
    assert nb.sort_by([0.0, 1.0, 0.0]) == swapped
    one = nb.truncate(1)
    assert one.sent_offsets.tolist() == [0, 1, 1, 1, 2] and one.scores.tolist() == [-1.0, -0.5]
    with pytest.raises(ValueError, match=r"^order must keep at least one candidate of every "
                                         r"sentence that has one; it keeps none of the 2 of "
                                         r"sentence 0$"):
        nb.reorder([2])


def test_best_needs_a_candidate_for_every_sentence_with_tokens(tmp_path):
    nb = _with_empty_sentences()
    with pytest.raises(ValueError, match=r"^sentence 1 \(1 tokens\) has no candidates, so "
                                         r"there is no tagging of it to return \(1 such "
                                         r"sentences\)$"):
        nb.best()
    # an empty sentence without candidates has nothing to tag
    kept = nb.select([0, 2, 3])
    assert [t for _, t in kept.best()] == [["X", "X"], [], ["X"]]
    assert NBestList.load(nb.save(tmp_path / "nb")) == nb


def test_nan_scores_in_a_file_refused(nbest, tmp_path):
    path = nbest.save(tmp_path / "nb")
    with np.load(path, allow_pickle=False) as z:
        arrays = dict(z)
    arrays["scores"] = arrays["scores"].copy()
    arrays["scores"][3] = np.nan
    np.savez(path, **arrays)
    with pytest.raises(ModelFormatError, match="scores must be finite or -inf .* at candidate 3"):
        NBestList.load(path)


def test_float_ids_and_empty_lists_refused(nbest):
    # a float id array used to be truncated (tag 0.7 -> 0); an empty list's accuracy was NaN
    for name in ("tag_ids", "cand_offsets", "sent_offsets"):
        args = dict(tag_ids=nbest.tag_ids, cand_offsets=nbest.cand_offsets,
                    sent_offsets=nbest.sent_offsets)
        args[name] = args[name] + 0.7
        with pytest.raises(TypeError, match=rf"^{name} must be an array of integers, got "
                                            rf"dtype float64$"):
            NBestList(scores=nbest.scores, corpus=nbest.corpus, tags=nbest.tags, **args)
    hmm = TrigramHMM().fit(synthetic_corpus(n_sentences=60, random_state=0))
    empty = TaggedCorpus.from_sentences([])
    nb = hmm.nbest(empty, k=3)
    for call in (nb.top1_accuracy, nb.oracle_accuracy, lambda: hmm.score(empty)):
        with pytest.raises(ValueError, match=r"^accuracy of an n-best list without tokens "
                                             r"\(0 sentences\)$"):
            call()
