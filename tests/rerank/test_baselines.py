"""Baseline rerankers (boosting, regularised boosting, perceptron) against slow references."""

from collections import Counter
from functools import cache

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize_scalar

from sparsecca.data import TaggedCorpus, read_conllu, synthetic_corpus, train_test_split
from sparsecca.registry import BASELINE_ROWS, baseline_rerankers
from sparsecca.rerank._boosting import (
    BoostingReranker,
    RegularizedBoostingReranker,
    decoder_line_search,
    ranking_pairs,
)
from sparsecca.rerank._joint_features import JointFeatures
from sparsecca.rerank._perceptron import PerceptronReranker
from sparsecca.tagging import NBestList, NotFittedError, TrigramHMM, clone, jackknife_nbest

# -- fixtures ----------------------------------------------------------------------------------


def make_nbest(sentences, tagged=True):
    """NBestList from [(words, gold tags, [(candidate tags, score), ...]), ...]."""
    corpus = (TaggedCorpus.from_sentences([list(zip(w, g)) for w, g, _ in sentences]) if tagged
              else TaggedCorpus.from_words([w for w, _, _ in sentences]))
    tags = list(corpus.tags.items) if tagged else []
    for _, _, cands in sentences:
        for t, _ in cands:
            for x in t:
                if x not in tags:
                    tags.append(x)
    ids = {t: i for i, t in enumerate(tags)}
    tag_ids, cand_off, sent_off, scores = [], [0], [0], []
    for _, _, cands in sentences:
        for t, s in cands:
            tag_ids.extend(ids[x] for x in t)
            cand_off.append(len(tag_ids))
            scores.append(s)
        sent_off.append(len(scores))
    return NBestList(tag_ids, cand_off, sent_off, scores, corpus, tags)


HAND = [
    (["the", "selling", "pressure"], ["DT", "NN", "NN"],
     [(["DT", "VBG", "NN"], -1.0), (["DT", "NN", "NN"], -1.5), (["DT", "NN", "VB"], -4.0)]),
    (["I", "sell", "it"], ["PRP", "VBP", "PRP"],
     [(["PRP", "VBP", "PRP"], -0.5), (["PRP", "NN", "PRP"], -0.7)]),
    (["selling", "it"], ["VBG", "PRP"],
     [(["NN", "PRP"], -0.2), (["VBG", "PRP"], -0.9), (["NN", "PRP"], -3.0)]),
    (["pressure"], ["NN"], [(["NN"], -0.1)]),
]


@cache
def synthetic_lists(n=900, k=5, seed=0):
    """Jackknifed train, dev and test n-best lists of a small synthetic corpus (built once)."""
    c = synthetic_corpus(n, random_state=seed)
    tr, rest = train_test_split(c, test_size=0.4, random_state=seed)
    dv, te = train_test_split(rest, test_size=0.5, random_state=seed)
    train = jackknife_nbest(TrigramHMM(), tr, k=k, folds=3, random_state=seed)
    hmm = TrigramHMM().fit(tr)
    return train, hmm.nbest(dv, k=k), hmm.nbest(te, k=k)


def accuracy_of(nbest, values):
    return nbest.accuracy(nbest.argmax(values))


# -- joint features ----------------------------------------------------------------------------


def ref_joint_names(words, tags, kind, lengths=(2, 3, 4)):
    """Slow reference: the joint feature names of one candidate, counted."""
    out = Counter()
    for i, (w, t) in enumerate(zip(words, tags)):
        prev = tags[i - 1] if i >= 1 else "<s>"
        if kind == "suffix":
            units = [w[-k:] for k in lengths if k <= len(w)]
            # the documented escape of suffixes that read like a marked word
            units = ["\\" + u if u.lstrip("\\").startswith("^") else u for u in units]
            if max(lengths) > len(w):
                units.append("^" + w)
            for u in units:
                out[f"{u}\t{t}"] += 1
                out[f"{u}\t{prev} {t}"] += 1
        else:
            pp = tags[i - 2] if i >= 2 else "<s>"
            out[f"{w}\t{t}"] += 1
            out[f"{w}\t{prev} {t}"] += 1
            out[f"{prev} {t}"] += 1
            out[f"{pp} {prev} {t}"] += 1
    return out


def ref_discriminating(rows, nbest):
    """Per feature name, the number of sentences whose candidates disagree on its value."""
    count = Counter()
    for i in range(nbest.n_sentences):
        cands = rows[nbest.sent_offsets[i]:nbest.sent_offsets[i + 1]]
        for name in set().union(*cands) if cands else ():
            if len({c.get(name, 0) for c in cands}) > 1:
                count[name] += 1
    return count


@pytest.mark.parametrize("kind", ["suffix", "ngram"])
@pytest.mark.parametrize("min_count", [1, 2])
@pytest.mark.parametrize("binary", [False, True])
def test_joint_features_match_reference(kind, min_count, binary):
    nb = make_nbest(HAND)
    jf = JointFeatures(kind=kind, min_count=min_count, binary=binary).fit(nb)
    X = jf.transform(nb)
    words = [nb.corpus.sentence(i)[0] for i in range(nb.n_sentences)]
    rows = [ref_joint_names(words[nb.cand_sentence[r]],
                            nb.candidate(nb.cand_sentence[r],
                                         r - nb.sent_offsets[nb.cand_sentence[r]]), kind)
            for r in range(nb.n_total)]
    if binary:
        rows = [Counter(dict.fromkeys(c, 1)) for c in rows]
    disc = ref_discriminating(rows, nb)
    kept = sorted(n for n, c in disc.items() if c >= min_count)
    names = jf.feature_names_
    assert names[0] == "<decoder score>" and sorted(names[1:]) == kept
    assert X.shape == (nb.n_total, len(kept) + 1) == (nb.n_total, jf.n_features_)
    ref = np.array([[nb.scores[r]] + [rows[r].get(n, 0) for n in names[1:]]
                    for r in range(nb.n_total)])
    np.testing.assert_array_equal(X.toarray(), ref)
    assert X.has_sorted_indices
    np.testing.assert_array_equal(jf.joint(nb).toarray(), ref[:, 1:])


def test_joint_features_unseen_words_and_tags_contribute_nothing():
    nb = make_nbest(HAND)
    jf = JointFeatures().fit(nb)
    other = make_nbest([(["zzzz", "selling"], ["XX", "NN"],
                         [(["XX", "NN"], -1.0), (["DT", "VBG"], -2.0)])])
    X = jf.transform(other).toarray()
    names = jf.feature_names_
    for r, tags in enumerate([["XX", "NN"], ["DT", "VBG"]]):
        ref = ref_joint_names(["zzzz", "selling"], tags, "suffix")
        np.testing.assert_array_equal(X[r, 1:], [ref.get(n, 0) for n in names[1:]])
    # the XX tag and the word zzzz were never seen: only (suffix of selling, NN) fires
    assert [names[j] for j in np.flatnonzero(X[0])] == ["<decoder score>", "ing\tNN",
                                                        "ling\tNN", "ng\tNN"]


def test_joint_features_failed_refit_keeps_the_previous_fit(monkeypatch):
    # a refit that failed after fitting its view left the new view_ with the old columns_
    nb = make_nbest(HAND)
    jf = JointFeatures().fit(nb)
    before = dict(vars(jf))
    X = jf.transform(nb)

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr("sparsecca.rerank._joint_features.discriminating_sentences",
                        interrupted)
    with pytest.raises(KeyboardInterrupt):
        jf.fit(synthetic_lists()[0])
    for name, value in before.items():
        assert getattr(jf, name) is value, name
    np.testing.assert_array_equal(jf.transform(nb).toarray(), X.toarray())


def test_joint_features_unfitted_and_bad_params():
    with pytest.raises(NotFittedError, match="not fitted"):
        JointFeatures().transform(make_nbest(HAND))
    with pytest.raises(ValueError, match="features must be one of"):
        JointFeatures(kind="words").fit(make_nbest(HAND))
    with pytest.raises(ValueError, match="min_count must be an int >= 1, got 0"):
        JointFeatures(min_count=0).fit(make_nbest(HAND))


# -- pairs and the decoder weight --------------------------------------------------------------


def test_ranking_pairs_match_brute_force():
    nb = make_nbest(HAND)
    H = JointFeatures(binary=True).fit(nb).joint(nb)
    D, diff, sent = ranking_pairs(nb, H)
    Hd = H.toarray()
    ref_rows, ref_diff, ref_sent = [], [], []
    for i in range(nb.n_sentences):
        a, b = nb.sent_offsets[i], nb.sent_offsets[i + 1]
        o = a + int(np.argmin(nb.losses[a:b]))  # earliest lowest-loss candidate
        for j in range(a, b):
            if nb.losses[j] > nb.losses[o]:
                ref_rows.append(Hd[o] - Hd[j])
                ref_diff.append(nb.scores[o] - nb.scores[j])
                ref_sent.append(i)
    # sentence 2 has two candidates of loss 1 (no pair between them); sentence 3 has one
    assert sent.tolist() == ref_sent == [0, 0, 1, 2, 2]
    np.testing.assert_array_equal(D.toarray(), np.array(ref_rows))
    np.testing.assert_allclose(diff, ref_diff)
    assert not np.any(D.data == 0)


@pytest.mark.parametrize("seed", range(4))
def test_decoder_line_search_minimises_exploss(seed):
    d = np.random.default_rng(seed).normal(0.5, 2.0, size=50)
    a = decoder_line_search(d)

    def loss(x):
        return np.exp(-x * d).sum()

    ref = minimize_scalar(loss, bounds=(0, 50), method="bounded", options=dict(xatol=1e-10)).x
    assert a == pytest.approx(ref, rel=1e-6)


def test_decoder_line_search_edge_cases():
    assert decoder_line_search(np.zeros(0)) == 1.0
    assert decoder_line_search(np.zeros(5)) == 1.0  # flat loss: keep the decoder
    assert decoder_line_search(np.array([-1.0, -2.0, 0.5])) == 0.0  # decoder anti-correlated
    assert decoder_line_search(np.array([1.0, 2.0]), upper=7.0) == 7.0  # separable: the bound


@pytest.mark.parametrize("d,upper,match", [
    # scipy's brentq said "xtol too small (0 <= 0)" or returned NaN; upper = -5 was returned
    # as a weight although the weight is >= 0
    ([np.nan, 1.0], None, r"^score_diff must be finite, got 1 NaN or infinite value\(s\)$"),
    ([np.inf, -1.0], None, r"^score_diff must be finite, got 1 NaN or infinite"),
    ([[1.0]], None, r"^score_diff must be 1-d, got shape \(1, 1\)$"),
    ([1.0, 2.0], -5.0, r"^upper must be a finite number > 0, got -5\.0$"),
    ([0.0], 0.0, r"^upper must be a finite number > 0, got 0\.0$"),
])
def test_decoder_line_search_bad_input(d, upper, match):
    with pytest.raises(ValueError, match=match):
        decoder_line_search(np.array(d), upper=upper)


@pytest.mark.parametrize("cls", [BoostingReranker, RegularizedBoostingReranker])
def test_boosting_refuses_overflowing_score_differences(cls):
    # finite scores whose difference is inf passed check_finite_scores and failed in brentq
    sents = [(w, g, [(t, 1.7e308 if j == 0 else -1.7e308) for j, (t, _) in enumerate(c)])
             for w, g, c in HAND]
    with pytest.raises(ValueError, match=r"^train's decoder scores are too large: a difference "
                                         r"between two candidates' scores overflows"):
        cls(n_rounds=5, min_count=1).set_params(
            **({"C": 1e-3} if cls is RegularizedBoostingReranker else {})).fit(make_nbest(sents))


@pytest.mark.parametrize("cls", [BoostingReranker, RegularizedBoostingReranker])
def test_boosting_n_rounds_beyond_memory_refused_before_any_work(cls, monkeypatch):
    # the estimator built its features and pairs, then failed in numba with a MemoryError
    import sparsecca.rerank._boosting as rb

    def no_work(*args, **kwargs):
        raise AssertionError("fit built features before checking n_rounds")

    monkeypatch.setattr(rb, "JointFeatures", no_work)
    est = cls(n_rounds=10**13).set_params(
        **({"C": 1e-3} if cls is RegularizedBoostingReranker else {}))
    with pytest.raises(ValueError, match=r"^n_rounds must be an int in \[1, \d+\], got "
                                         r"10000000000000 \(the path is allocated up front"):
        est.fit(make_nbest(HAND))


def _scaled(sents, factor):
    """HAND-like sentences with every decoder score times ``factor``."""
    return [(w, g, [(t, s * factor) for t, s in c]) for w, g, c in sents]


_LINE_SEARCH = (r" \(the line search's choice on train\); \w+Reranker needs "
                r"log-probability-like scores$")


@pytest.mark.parametrize("cls", [BoostingReranker, RegularizedBoostingReranker])
def test_boosting_refuses_a_decoder_weight_whose_products_overflow(cls):
    # training score differences ~1e-300 give a line-search weight ~5e299: times dev's scores
    # (up to 4e10) it was -inf and dev tuning ran on that with only a RuntimeWarning
    def est():
        return cls(n_rounds=5, min_count=1).set_params(
            **({"C": 1e-3} if cls is RegularizedBoostingReranker else {}))

    tiny, big = make_nbest(_scaled(HAND, 1e-300)), make_nbest(_scaled(HAND, 1e10))
    with pytest.raises(ValueError, match=r"^decoder_weight_ times dev's decoder scores overflows "
                                         r"float64 \(largest \|value\| 4e\+10\): "
                                         r"decoder_weight_ must be in \[0, 4\.494e\+297\], "
                                         r"got 4\.993e\+299" + _LINE_SEARCH):
        est().fit(tiny, big)
    # a weight fitted to many tiny differences times one large difference (1e7): an infinite
    # margin, refused only as "margins must be finite" by the kernel
    sents = ([(["a"], ["X"], [(["X"], 0.0), (["Y"], -1e-300)])] * 5
             + [(["b"], ["X"], [(["X"], 0.0), (["Y"], -1e7)])])
    with pytest.raises(ValueError, match=r"^decoder_weight_ times train's decoder score "
                                         r"differences overflows float64 \(largest \|value\| "
                                         r"1e\+07\): decoder_weight_ must be in "
                                         r"\[0, 1\.798e\+301\], got 1e\+302" + _LINE_SEARCH):
        with np.errstate(over="ignore"):  # the line search's own exp overflows on the way
            est().fit(make_nbest(sents))
    est().fit(tiny, tiny)  # the same weight on the scores it was fitted to: fine


def test_perceptron_refuses_a_decoder_weight_whose_products_overflow():
    # decoder_weight=1e308 was accepted: the kernel scored candidates of |score| > 1.8 as -inf
    # silently, dev's products overflowed with a RuntimeWarning, and so did the test scores
    nb, big = make_nbest(HAND), make_nbest(_scaled(HAND, 1e10))
    msg = (r"^{} times {} decoder scores overflows float64 \(largest \|value\| {}\): {} must "
           r"be in \[{}, {}\], got {}$")
    with pytest.raises(ValueError, match=msg.format("decoder_weight", "train's", "4",
                                                    "decoder_weight", "0", r"4\.494e\+307",
                                                    r"1e\+308")):
        PerceptronReranker(decoder_weight=1e308, n_epochs=1).fit(nb)
    with pytest.raises(ValueError, match=msg.format("decoder_weight", "dev's", r"4e\+10",
                                                    "decoder_weight", "0", r"4\.494e\+297",
                                                    r"1e\+300")):
        PerceptronReranker(decoder_weight=(1.0, 1e300), n_epochs=1).fit(nb, big)
    est = PerceptronReranker(decoder_weight=1e300, n_epochs=1).fit(nb)
    with pytest.raises(ValueError, match=msg.format("decoder_weight_", "nbest's", r"4e\+10",
                                                    "decoder_weight_", r"-4\.494e\+297",
                                                    r"4\.494e\+297", r"1e\+300")):
        est.decision_function(big)


# -- boosting rerankers ------------------------------------------------------------------------


def truncated_scores(est, nbest, t):
    """Slow reference: the model made of the first t rounds of the path."""
    coef = np.zeros(est.coef_.size)
    coef[0] = est.decoder_weight_
    for k, d in zip(est.path_features_[:t], est.path_deltas_[:t]):
        coef[k + 1] += d
    return est.features_.transform(nbest) @ coef


@pytest.mark.parametrize("cls", [BoostingReranker, RegularizedBoostingReranker])
@pytest.mark.parametrize("kind", ["suffix", "ngram"])
def test_boosting_dev_tuning_matches_truncated_models(cls, kind):
    train, dev, _ = synthetic_lists()
    est = cls(features=kind, n_rounds=300, min_count=1).fit(train, dev)
    path = est.dev_accuracy_path_
    assert path.size == est.path_features_.size + 1
    for t in np.unique(np.linspace(0, path.size - 1, 12).astype(int)):
        assert path[t] == pytest.approx(accuracy_of(dev, truncated_scores(est, dev, t)),
                                        abs=1e-12)
    assert est.n_rounds_ == int(np.argmax(path))  # first best prefix
    assert est.score(dev) == pytest.approx(path.max(), abs=1e-12)
    # the path starts with the decoder alone (a positive weight keeps its argmax)
    assert est.decoder_weight_ > 0 and path[0] == pytest.approx(dev.top1_accuracy())
    assert est.score(dev) >= dev.top1_accuracy()
    # decision_function = X @ coef_ with the decoder score in column 0
    np.testing.assert_allclose(est.decision_function(dev),
                               est.features_.transform(dev) @ est.coef_, rtol=1e-12)


def test_boosting_fit_equals_kernel_path():
    from sparsecca.kernels import boosting_path

    train, _, _ = synthetic_lists()
    est = BoostingReranker(n_rounds=200, eps=0.01, min_count=1).fit(train)
    H = est.features_.joint(train)
    D, diff, _ = ranking_pairs(train, H)
    f, d, obj = boosting_path(D, est.decoder_weight_ * diff, 200, eps=0.01)
    np.testing.assert_array_equal(est.path_features_, f)
    np.testing.assert_allclose(est.path_deltas_, d)
    assert est.n_rounds_ == f.size  # no dev: every round kept
    ref = np.zeros(est.coef_.size)
    ref[0] = est.decoder_weight_
    np.add.at(ref, f + 1, d)
    np.testing.assert_allclose(est.coef_, ref)
    assert est.n_pairs_ == D.shape[0] and obj[-1] < 1.0


def test_regularized_boosting_tunes_c_and_sparsifies():
    train, dev, _ = synthetic_lists()
    est = RegularizedBoostingReranker(C=(1e-2, 1e-3, 1e-4), n_rounds=400, min_count=1)
    est.fit(train, dev)
    accs = [t["dev_accuracy"] for t in est.tuning_]
    assert [t["C"] for t in est.tuning_] == [1e-2, 1e-3, 1e-4]
    assert est.C_ == est.tuning_[int(np.argmax(accs))]["C"]
    assert est.score(dev) == pytest.approx(max(accs), abs=1e-12)
    # run to convergence: stronger L1 keeps fewer features
    nnz = []
    for c in (1e-2, 1e-3):
        e = RegularizedBoostingReranker(C=c, n_rounds=20000, min_count=1).fit(train)
        assert e.path_features_.size < 20000  # converged: no coordinate step helps
        nnz.append(np.count_nonzero(e.coef_[1:]))
    assert 0 < nnz[0] < nnz[1]


def test_selected_features_are_named():
    train, _, _ = synthetic_lists()
    est = BoostingReranker(n_rounds=50, min_count=1).fit(train)
    sel = est.selected_features()
    nz = np.flatnonzero(est.coef_)
    assert len(sel) == nz.size > 1
    assert sorted(sel) == sorted((est.features_.feature_names_[j], est.coef_[j]) for j in nz)
    assert all(abs(a[1]) >= abs(b[1]) for a, b in zip(sel, sel[1:]))
    assert all("\t" in name for name, _ in sel if name != "<decoder score>")


# -- perceptron --------------------------------------------------------------------------------


def ref_perceptron(H, nb, orders, b):
    """Slow reference: every intermediate w kept, averaged explicitly."""
    Hd = H.toarray()
    off, loss = nb.sent_offsets, nb.losses
    w = np.zeros(H.shape[1])
    hist, out = [], []
    for order in orders:
        for i in order:
            a, c = off[i], off[i + 1]
            s = b * nb.scores[a:c] + Hd[a:c] @ w
            ch = a + int(np.argmax(s))
            o = a + int(np.argmin(loss[a:c]))
            if loss[ch] > loss[o]:
                w = w + Hd[o] - Hd[ch]
            hist.append(w.copy())
        out.append(np.mean(hist, axis=0))
    return out


def test_perceptron_reranker_matches_slow_reference():
    train, _, _ = synthetic_lists()
    est = PerceptronReranker(n_epochs=3, decoder_weight=2.0, shuffle=False).fit(train)
    H = est.features_.joint(train)
    orders = [np.arange(train.n_sentences)] * 3
    ref = ref_perceptron(H, train, orders, 2.0)
    np.testing.assert_allclose(est.coef_[1:], ref[-1], rtol=1e-12, atol=1e-12)
    assert est.coef_[0] == 2.0 and est.n_epochs_ == 3 and est.n_updates_.sum() > 0


def test_perceptron_dev_tuning():
    train, dev, _ = synthetic_lists()
    est = PerceptronReranker(n_epochs=4, decoder_weight=(0.5, 4.0), random_state=3)
    est.fit(train, dev)
    assert est.dev_accuracy_.shape == (2, 4)
    g, e = np.unravel_index(np.argmax(est.dev_accuracy_), (2, 4))
    assert est.decoder_weight_ == (0.5, 4.0)[g] and est.n_epochs_ == e + 1
    assert est.score(dev) == pytest.approx(est.dev_accuracy_.max(), abs=1e-12)
    # each entry is the accuracy of a perceptron run for that many epochs with that weight
    single = PerceptronReranker(n_epochs=2, decoder_weight=4.0, random_state=3).fit(train)
    assert single.score(dev) == pytest.approx(est.dev_accuracy_[1, 1], abs=1e-12)


def test_perceptron_random_state():
    train, _, _ = synthetic_lists()
    a = PerceptronReranker(n_epochs=2, decoder_weight=1.0, random_state=5).fit(train)
    b = PerceptronReranker(n_epochs=2, decoder_weight=1.0, random_state=5).fit(train)
    c = PerceptronReranker(n_epochs=2, decoder_weight=1.0, random_state=6).fit(train)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, c.coef_)


def test_averaged_false_uses_last_weights():
    train, _, _ = synthetic_lists()
    est = PerceptronReranker(n_epochs=2, averaged=False, decoder_weight=1.0, shuffle=False)
    est.fit(train)
    Hd = est.features_.joint(train).toarray()
    w = np.zeros(Hd.shape[1])
    off, loss = train.sent_offsets, train.losses
    for _ in range(2):
        for i in range(train.n_sentences):
            a, c = off[i], off[i + 1]
            ch = a + int(np.argmax(train.scores[a:c] + Hd[a:c] @ w))
            o = a + int(np.argmin(loss[a:c]))
            if loss[ch] > loss[o]:
                w += Hd[o] - Hd[ch]
    np.testing.assert_allclose(est.coef_[1:], w)


# -- all baselines: degenerate input, bad input, the row table ---------------------------------

ALL = {
    "boost": lambda: BoostingReranker(n_rounds=50, min_count=1),
    "reg": lambda: RegularizedBoostingReranker(C=(1e-3, 1e-4), n_rounds=50, min_count=1),
    "perc": lambda: PerceptronReranker(n_epochs=2, random_state=0),
}


@pytest.mark.parametrize("name", list(ALL))
def test_candidates_without_features(name):
    # min_count beyond any count: only the decoder score is left, reranking = decoding
    nb = make_nbest(HAND)
    est = ALL[name]().set_params(min_count=10**6).fit(nb, nb)
    assert est.n_features_ == 1 and est.coef_[0] >= 0
    np.testing.assert_array_equal(est.rerank(nb), nb.argmax())
    assert est.score(nb) == nb.top1_accuracy()


@pytest.mark.parametrize("name", list(ALL))
def test_all_candidates_tied(name):
    # every candidate of a sentence is the same sequence with the same score: no pairs, no
    # updates, the first candidate is chosen
    sents = [(w, g, [(c[0][0], 0.0)] * 3) for w, g, c in HAND]
    nb = make_nbest(sents)
    est = ALL[name]().fit(nb, nb)
    d = est.decision_function(nb)
    assert np.all(np.isfinite(d))
    np.testing.assert_array_equal(est.rerank(nb), np.zeros(nb.n_sentences, dtype=int))
    if name != "perc":
        assert est.n_pairs_ == 0 and est.n_rounds_ == 0 and est.decoder_weight_ == 1.0
    else:
        assert est.n_updates_.sum() == 0


@pytest.mark.parametrize("name", list(ALL))
def test_sentence_without_candidates(name):
    nb = make_nbest(HAND + [(["it", "sells"], ["PRP", "VBZ"], [])])
    est = ALL[name]().fit(nb, nb)
    choice = est.rerank(nb)
    assert choice[-1] == -1
    # the other sentences are reranked as without the empty one
    ref = ALL[name]().fit(make_nbest(HAND), make_nbest(HAND))
    np.testing.assert_array_equal(choice[:-1], ref.rerank(make_nbest(HAND)))
    # the dev accuracies the model reports count the empty sentence's tokens wrong, as
    # score() and NBestList.accuracy do (the boosting paths counted them right)
    if name == "perc":
        assert est.dev_accuracy_.max() == est.score(nb)
    else:
        assert est.dev_accuracy_path_[est.n_rounds_] == est.score(nb)
        assert est.tuning_[-1]["dev_accuracy"] <= est.score(nb)
        assert max(t["dev_accuracy"] for t in est.tuning_) == est.score(nb)


@pytest.mark.parametrize("name", list(ALL))
def test_no_gold_is_a_clear_error(name):
    untagged = make_nbest(HAND, tagged=False)
    tagged = make_nbest(HAND)
    with pytest.raises(ValueError, match="train has no gold tags"):
        ALL[name]().fit(untagged)
    with pytest.raises(ValueError, match="dev has no gold tags"):
        ALL[name]().fit(tagged, untagged)
    est = ALL[name]().fit(tagged, tagged)
    # scoring untagged lists is fine
    assert est.decision_function(untagged).shape == (untagged.n_total,)


@pytest.mark.parametrize("name", list(ALL))
@pytest.mark.parametrize("method", ["decision_function", "rerank", "predict", "reranked",
                                    "score"])
def test_unfitted(name, method):
    with pytest.raises(NotFittedError, match="not fitted yet"):
        getattr(ALL[name](), method)(make_nbest(HAND))


@pytest.mark.parametrize("cls,params,err,match", [
    (BoostingReranker, dict(n_rounds=0), ValueError, "n_rounds must be an int >= 1, got 0"),
    (BoostingReranker, dict(n_rounds=1.5), TypeError, "n_rounds must be an int >= 1, got 1.5"),
    (BoostingReranker, dict(eps=0.0), ValueError, "eps must be a finite number > 0"),
    (BoostingReranker, dict(eps=-1), ValueError, "eps must be a finite number > 0, got -1"),
    (BoostingReranker, dict(eps=np.nan), ValueError, "eps must be a finite number > 0"),
    (BoostingReranker, dict(features="words"), ValueError,
     r"features must be one of \('suffix', 'ngram'\), got 'words'"),
    (BoostingReranker, dict(min_count=0), ValueError, "min_count must be an int >= 1, got 0"),
    (BoostingReranker, dict(lengths=0), ValueError, "lengths values must be an int >= 1"),
    (BoostingReranker, dict(lengths=()), ValueError, "lengths must be a non-empty sequence"),
    (BoostingReranker, dict(lowercase="no"), TypeError, "lowercase must be True or False"),
    (RegularizedBoostingReranker, dict(C=-1.0), ValueError,
     "C must be a finite number > 0, got -1.0"),
    (RegularizedBoostingReranker, dict(C=0), ValueError, "C must be a finite number > 0"),
    (RegularizedBoostingReranker, dict(C=[1e-3, -1]), ValueError,
     "C values must be a finite number > 0, got -1"),
    (RegularizedBoostingReranker, dict(C=[]), ValueError, "C must be a non-empty sequence"),
    (RegularizedBoostingReranker, dict(C="big"), TypeError, "C must be a number or a sequence"),
    (RegularizedBoostingReranker, dict(n_rounds=-5), ValueError, "n_rounds must be an int >= 1"),
    (PerceptronReranker, dict(n_epochs=0), ValueError, "n_epochs must be an int >= 1, got 0"),
    (PerceptronReranker, dict(decoder_weight=-1.0), ValueError,
     "decoder_weight must be a finite number >= 0"),
    (PerceptronReranker, dict(averaged=1), TypeError, "averaged must be True or False"),
    (PerceptronReranker, dict(shuffle=None), TypeError, "shuffle must be True or False"),
    (PerceptronReranker, dict(random_state="x"), TypeError, "random_state must be None, an int"),
    (PerceptronReranker, dict(random_state=-1), ValueError,
     r"random_state must be None, an int >= 0, a numpy Generator or RandomState, got -1"),
    (PerceptronReranker, dict(random_state=True), TypeError, "got True"),
    (PerceptronReranker, dict(features=None), ValueError, "features must be one of"),
])
def test_bad_params(cls, params, err, match):
    nb = make_nbest(HAND)
    with pytest.raises(err, match=match):
        cls(**params).fit(nb, nb)


@pytest.mark.parametrize("name", list(ALL))
def test_bad_arguments(name):
    nb = make_nbest(HAND)
    with pytest.raises(TypeError, match="train must be an NBestList, got list"):
        ALL[name]().fit([1, 2], nb)
    with pytest.raises(TypeError, match="dev must be an NBestList, got str"):
        ALL[name]().fit(nb, "dev")
    est = ALL[name]().fit(nb, nb)
    with pytest.raises(TypeError, match="nbest must be an NBestList"):
        est.decision_function(np.zeros(3))


def _with_log_zero(nb, where):
    s = nb.scores.copy()
    s[where] = -np.inf
    return NBestList(nb.tag_ids, nb.cand_offsets, nb.sent_offsets, s, nb.corpus, nb.tags,
                     nb.unknown)


@pytest.mark.parametrize("name", list(ALL))
def test_log_zero_scores(name):
    """The decoder score is a feature of every baseline: -inf (log 0) in train or dev is
    refused by name; in a list to rerank such a candidate is never chosen (no NaN even with
    a decoder weight of 0), unless its whole sentence has -inf, then the first is."""
    nb = make_nbest(HAND)
    bad = _with_log_zero(nb, [1, 4])
    msg = (r"^{} has 2 candidate\(s\) with decoder score -inf \(log 0\), the first is "
           r"candidate 1 of sentence 0; \w+Reranker learns a weight for the decoder score")
    with pytest.raises(ValueError, match=msg.format("train")):
        ALL[name]().fit(bad, nb)
    with pytest.raises(ValueError, match=msg.format("dev")):
        ALL[name]().fit(nb, bad)
    est = ALL[name]().fit(nb, nb)
    test = _with_log_zero(nb, [0, 5, 6, 8])   # sentence 1 all -inf, the last has one candidate
    d = est.decision_function(test)
    assert not np.any(np.isnan(d)) and np.all(d[[0, 5, 6, 8]] == -np.inf)
    choice = est.rerank(test)
    assert choice.tolist()[:2] == [int(np.argmax(d[1:3])) + 1, 0] and choice[3] == 0


def test_log_zero_scores_with_a_zero_decoder_weight():
    nb = make_nbest(HAND)
    est = PerceptronReranker(decoder_weight=0.0, n_epochs=1).fit(nb)
    assert est.coef_[0] == 0.0
    d = est.decision_function(_with_log_zero(nb, [0]))
    assert d[0] == -np.inf and np.all(np.isfinite(d[1:]))


@pytest.mark.parametrize("name", list(ALL))
def test_tuning_on_a_one_best_dev_refused(name):
    # every round / weight / epoch chooses the same candidates: the choice would be ties
    nb = make_nbest(HAND)
    with pytest.raises(ValueError, match=r"^dev has one candidate per sentence; tuning needs "
                                         r"k >= 2 \(decode dev with k >= 2 candidates, or fit "
                                         r"without dev"):
        ALL[name]().fit(nb, nb.truncate(1))


def test_grid_without_dev_is_an_error():
    nb = make_nbest(HAND)
    with pytest.raises(ValueError, match="C has 2 values to choose from but no dev"):
        RegularizedBoostingReranker(C=(1e-3, 1e-4)).fit(nb)
    with pytest.raises(ValueError, match="decoder_weight has 7 values to choose from"):
        PerceptronReranker().fit(nb)
    RegularizedBoostingReranker(C=1e-3, n_rounds=5).fit(nb)  # one value: fine
    PerceptronReranker(decoder_weight=1.0, n_epochs=1).fit(nb)


@pytest.mark.parametrize("name", list(ALL))
def test_tuned_params_report_the_dev_choices(name):
    # the experiment's report wrote tuned: {} for every baseline row
    nb = make_nbest(HAND)
    est = ALL[name]().fit(nb, nb)
    tuned = est.tuned_params()
    assert tuned["decoder_weight"] == est.decoder_weight_
    if name == "perc":
        assert tuned == {"decoder_weight": est.decoder_weight_, "n_epochs": est.n_epochs_}
    else:
        assert tuned["n_rounds"] == est.n_rounds_
        assert ("C" in tuned) == (name == "reg")
        if name == "reg":
            assert tuned["C"] == est.C_
    with pytest.raises(NotFittedError):
        ALL[name]().tuned_params()


def test_baseline_rerankers_table():
    rows = baseline_rerankers(random_state=7)
    assert tuple(rows) == BASELINE_ROWS
    kinds = {"Collins (Sufx)": (BoostingReranker, "suffix"),
             "Regularized (Sufx)": (RegularizedBoostingReranker, "suffix"),
             "Collins (n-gm)": (BoostingReranker, "ngram"),
             "Regularized (n-gm)": (RegularizedBoostingReranker, "ngram"),
             "Perceptron (Sufx)": (PerceptronReranker, "suffix")}
    for row, est in rows.items():
        cls, kind = kinds[row]
        assert type(est) is cls and est.features == kind
        assert not hasattr(est, "coef_")  # unfitted
        assert clone(est).get_params() == est.get_params()
    assert rows["Perceptron (Sufx)"].random_state == 7
    assert baseline_rerankers(lengths=(1, 2))["Collins (Sufx)"].lengths == (1, 2)


def test_baselines_rerank_synthetic_test_set():
    """Every baseline, tuned on dev, is a valid reranker on held-out test candidates."""
    train, dev, test = synthetic_lists()
    for row, est in baseline_rerankers().items():
        est.set_params(**({"n_rounds": 500} if "n_rounds" in est.get_params() else {}))
        est.fit(train, dev)
        assert est.score(dev) >= dev.top1_accuracy() - 1e-12, row  # the path starts there
        acc = est.score(test)
        assert test.top1_accuracy() - 0.01 < acc <= test.oracle_accuracy(), row
        pred = est.predict(test)
        assert pred.n_tokens == test.corpus.n_tokens
        # the re-sorted list starts with the chosen candidates
        first = est.reranked(test).best(np.zeros(test.n_sentences, dtype=int))
        np.testing.assert_array_equal(first.tag_ids, pred.tag_ids)


# -- real data ---------------------------------------------------------------------------------


@pytest.mark.shared_data
def test_real_french_smoke(shared_data):
    tr = read_conllu(shared_data / "fr-sequoia" / "train.conllu", tags="upos")[:800]
    dv = read_conllu(shared_data / "fr-sequoia" / "dev.conllu", tags="upos")[:200]
    train = jackknife_nbest(TrigramHMM(), tr, k=5, folds=4, random_state=0)
    dev = TrigramHMM().fit(tr).nbest(dv, k=5)
    for est in (BoostingReranker(n_rounds=2000), PerceptronReranker(n_epochs=3,
                                                                    random_state=0)):
        est.fit(train, dev)
        assert dev.top1_accuracy() <= est.score(dev) <= dev.oracle_accuracy()
    assert sp.issparse(est.features_.transform(dev))


# -- persistence -------------------------------------------------------------------------------

SAVED = {
    "boost_suffix": lambda: BoostingReranker(n_rounds=200, min_count=1),
    "boost_ngram_lower": lambda: BoostingReranker(features="ngram", n_rounds=200,
                                                  lowercase=True),
    "reg_suffix13": lambda: RegularizedBoostingReranker(C=(1e-3, 1e-4), n_rounds=200,
                                                        lengths=(1, 3)),
    "perc_ngram": lambda: PerceptronReranker(features="ngram", n_epochs=3, random_state=1),
    "perc_suffix_nodev": lambda: PerceptronReranker(n_epochs=2, decoder_weight=3.0),
}


@pytest.mark.parametrize("name", list(SAVED))
def test_save_load_round_trip(tmp_path, name):
    train, dev, test = synthetic_lists()
    est = SAVED[name]()
    est.fit(train, None if name.endswith("nodev") else dev)
    path = est.save(tmp_path / "model")
    assert path.suffix == ".npz"
    back = type(est).load(path)
    assert back.get_params() == est.get_params()
    np.testing.assert_array_equal(back.decision_function(test), est.decision_function(test))
    np.testing.assert_array_equal(back.coef_, est.coef_)
    assert back.features_.feature_names_ == est.features_.feature_names_
    for attr in type(est)._array_attrs:
        a, b = getattr(est, attr), getattr(back, attr)
        assert (a is None and b is None) or np.array_equal(a, b), attr
    for attr in type(est)._extra_attrs:
        assert getattr(back, attr) == getattr(est, attr), attr
    with pytest.raises(FileExistsError, match="exists"):
        est.save(path)
    est.save(path, overwrite=True)


def test_load_refuses_other_class_and_unfitted_save(tmp_path):
    from sparsecca._persist import ModelFormatError

    train, _, _ = synthetic_lists()
    path = BoostingReranker(n_rounds=10).fit(train).save(tmp_path / "b.npz")
    with pytest.raises(ModelFormatError, match="not a 'PerceptronReranker'"):
        PerceptronReranker.load(path)
    with pytest.raises(NotFittedError, match="not fitted yet"):
        BoostingReranker().save(tmp_path / "x.npz")


@pytest.mark.parametrize("cls", [BoostingReranker, PerceptronReranker])
def test_dev_gold_of_another_tagset_refused(cls):
    train, dev, _ = synthetic_lists()
    renamed = [f"U-{t}" for t in dev.corpus.tags]
    corpus = dev.corpus.with_tags(dev.corpus.tag_ids, renamed)
    foreign = NBestList(dev.tag_ids, dev.cand_offsets, dev.sent_offsets, dev.scores, corpus,
                        dev.tags.items + renamed)
    with pytest.raises(ValueError, match="^dev gold tags: 100.0% of the tag tokens"):
        cls().fit(train, foreign)
    model = cls().fit(train, dev)
    cands = NBestList(dev.tag_ids, dev.cand_offsets, dev.sent_offsets, dev.scores,
                      dev.corpus.with_tags(None, None), [f"U-{t}" for t in dev.tags])
    with pytest.raises(ValueError, match="the tagset the JointView was fitted on"):
        model.rerank(cands)
