"""HiddenVariableReranker: the n_hidden = 1 reduction, tuning, grid edges, bad input, files."""

from functools import cache

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp

from sparsecca._persist import load_model
from sparsecca.data import TaggedCorpus, synthetic_corpus, train_test_split
from sparsecca.kernels import hidden_loss_grad
from sparsecca.rerank import (
    BoostingReranker,
    HiddenVariableReranker,
    NotFittedError,
    PerceptronReranker,
    RegularizedBoostingReranker,
    SoftenedReranker,
)
from sparsecca.rerank._base import path_edge, search_grid
from sparsecca.tagging import NBestList, TrigramHMM, jackknife_nbest


@cache
def lists(n=500, k=5, seed=0):
    c = synthetic_corpus(n, random_state=seed)
    tr, rest = train_test_split(c, test_size=0.4, random_state=seed)
    dv, te = train_test_split(rest, test_size=0.5, random_state=seed)
    train = jackknife_nbest(TrigramHMM(), tr, k=k, folds=3, random_state=seed)
    hmm = TrigramHMM().fit(tr)
    return train, hmm.nbest(dv, k=k), hmm.nbest(te, k=k)


@cache
def fitted(**kw):
    train, dev, _ = lists()
    params = dict(lr=0.1, n_epochs=2, random_state=0)
    params.update(kw)
    return HiddenVariableReranker(**params).fit(train, dev)


def hand(tagged=True, scores=None):
    """Three sentences, 2-3 candidates each (one with a single candidate)."""
    sents = [(["the", "dog", "runs"], ["DT", "NN", "VB"],
              [["DT", "NN", "VB"], ["DT", "VB", "VB"], ["DT", "NN", "NN"]]),
             (["dogs", "run"], ["NN", "VB"], [["VB", "VB"], ["NN", "VB"]]),
             (["run"], ["VB"], [["VB"]])]
    corpus = (TaggedCorpus.from_sentences([list(zip(w, g)) for w, g, _ in sents]) if tagged
              else TaggedCorpus.from_words([w for w, _, _ in sents]))
    tags = ["DT", "NN", "VB"]
    ids, co, so = [], [0], [0]
    for _, _, cands in sents:
        for c in cands:
            ids += [tags.index(t) for t in c]
            co.append(len(ids))
        so.append(len(co) - 1)
    s = [-1.0, -1.2, -3.0, -0.5, -0.9, -0.1] if scores is None else scores
    return NBestList(ids, co, so, s, corpus, tags)


def feature_matrix(est, nbest):
    """Per candidate: decoder score, then the counts of every node and edge feature row."""
    nf, ef = est._features(nbest)
    n_tok = nf.shape[0]
    cand = np.repeat(np.arange(nbest.n_total), np.diff(nbest.cand_offsets))
    first = np.zeros(n_tok, dtype=bool)
    first[nbest.cand_offsets[:-1][np.diff(nbest.cand_offsets) > 0]] = True
    rows, cols = [], []
    for k in range(nf.shape[1]):
        ok = nf[:, k] >= 0
        rows.append(cand[ok])
        cols.append(1 + nf[ok, k])
    ok = (ef >= 0) & ~first
    rows.append(cand[ok])
    cols.append(1 + est.n_node_ + ef[ok])
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    Phi = sp.csr_matrix((np.ones(rows.size), (rows, cols)),
                        shape=(nbest.n_total, 1 + est.n_node_ + est.n_edge_))
    return sp.hstack([sp.csr_matrix(nbest.scores[:, None]), Phi[:, 1:]], format="csr")


def softmax_loss_grad(Phi, theta, sent_offsets, target):
    """A plain log-linear reranker's loss and gradient, written directly."""
    a = Phi @ theta
    loss, g = 0.0, np.zeros(Phi.shape[0])
    for i in range(sent_offsets.size - 1):
        lo, hi = sent_offsets[i], sent_offsets[i + 1]
        x, y = a[lo:hi], target[lo:hi]
        if not 0 < y.sum() < y.size:
            continue
        p = np.exp(x - logsumexp(x))
        q = np.where(y, np.exp(x - logsumexp(x[y])), 0.0)
        loss += logsumexp(x) - logsumexp(x[y])
        g[lo:hi] = p - q
    return loss, Phi.T @ g


# -- n_hidden = 1: a plain log-linear reranker ---------------------------------------------------

def test_one_hidden_value_is_a_plain_log_linear_reranker():
    train, dev, test = lists()
    est = fitted(n_hidden=1)
    # scores: b * s + Phi . w exactly, Phi the feature counts
    Phi = feature_matrix(est, test)
    np.testing.assert_allclose(est.decision_function(test), Phi @ est.coef_, rtol=0,
                               atol=1e-10)
    # loss and gradient: the softmax of a linear score, at the fitted and at random weights
    nf, ef = est._features(train)
    Phi = feature_matrix(est, train)
    best = np.full(train.n_sentences, 10**9)
    np.minimum.at(best, train.cand_sentence, train.losses)
    target = train.losses == best[train.cand_sentence]
    rng = np.random.default_rng(0)
    for theta in (est.coef_, rng.normal(0, 0.3, est.coef_.size)):
        loss, grad = hidden_loss_grad(theta, nf, ef, train.cand_offsets, train.sent_offsets,
                                      train.scores, target, 1, est.n_node_)
        ref_loss, ref_grad = softmax_loss_grad(Phi, theta, train.sent_offsets, target)
        assert loss == pytest.approx(ref_loss, rel=1e-12)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-9)


def test_one_hidden_value_starts_from_zero_weights():
    # no symmetry to break: the random initialisation is skipped, so only the visiting
    # order depends on random_state, and with one epoch on one sentence nothing does
    nb = hand()
    a = HiddenVariableReranker(n_hidden=1, lr=0.1, n_epochs=1, random_state=0,
                               widen=0).fit(nb)
    b = HiddenVariableReranker(n_hidden=1, lr=0.1, n_epochs=1, random_state=5,
                               widen=0).fit(nb)
    np.testing.assert_array_equal(a.coef_[1:] != 0, b.coef_[1:] != 0)


# -- fitting and tuning ----------------------------------------------------------------------------

@pytest.mark.parametrize("domain", ["tag-split", "word-cluster"])
def test_fit_rerank_score(domain):
    train, dev, test = lists()
    est = fitted(hidden_domain=domain)
    H = 2
    assert est.coef_.size == 1 + est.n_node_ * H + est.n_edge_ * H * H
    assert est.decoder_weight_ == est.coef_[0] > 0
    assert est.tuned_params() == {"lr": 0.1, "n_epochs": est.n_epochs_,
                                  "decoder_weight": est.decoder_weight_}
    accs = est.dev_accuracy_["0.1"]
    assert est.score(dev) == pytest.approx(max(accs), abs=1e-12)
    assert est.n_epochs_ == int(np.argmax(accs)) + 1
    assert est.rerank(test).shape == (test.n_sentences,)
    assert 0.5 < est.score(test) <= 1.0
    # the training loss goes down from epoch to epoch
    losses = est.train_loss_["0.1"]
    assert losses[-1] < losses[0]


def test_word_clusters_are_majority_training_tags():
    train, _, _ = lists()
    est = fitted(hidden_domain="word-cluster")
    c = train.corpus
    w = c.words.id(c.words[c.word_ids[0]])
    gold = [c.tags[t] for t, x in zip(c.tag_ids, c.word_ids) if x == w]
    top = max(set(gold), key=lambda t: (gold.count(t), -train.tags.id(t)))
    assert est.tags_[est.word_clusters_[w]] == top
    assert fitted().word_clusters_.max() == 0  # tag-split: no anchor


def test_random_state_reproducible():
    a, b = fitted(), HiddenVariableReranker(lr=0.1, n_epochs=2, random_state=0).fit(*lists()[:2])
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_scores_untagged_lists_and_minus_inf():
    est = HiddenVariableReranker(lr=0.1, n_epochs=1, random_state=0).fit(hand(), hand())
    d = est.decision_function(hand(tagged=False))
    assert d.shape == (6,) and np.all(np.isfinite(d))
    test = hand(scores=[-np.inf, -1.2, -3.0, -np.inf, -np.inf, -0.1])
    d = est.decision_function(test)
    assert not np.any(np.isnan(d)) and np.all(d[[0, 3, 4]] == -np.inf)
    assert est.rerank(test).tolist()[0] in (1, 2) and est.rerank(test)[1] == 0


# -- grid edges ---------------------------------------------------------------------------------

def test_search_grid_finds_an_optimum_outside_the_grid():
    edges = []
    # a dev curve peaking at 0.8, beyond the default-like grid (0.05, 0.1, 0.2)
    values, results, best = search_grid(lambda v: (-abs(np.log(v / 0.8)), v),
                                        [0.05, 0.1, 0.2], name="lr", widen=3, edges=edges)
    assert values[best] == pytest.approx(0.8) and edges == []
    assert values == pytest.approx([0.05, 0.1, 0.2, 0.4, 0.8, 1.6])
    # not allowed to widen far enough: the edge is recorded
    values, _, best = search_grid(lambda v: (-abs(np.log(v / 0.8)), v), [0.05, 0.1, 0.2],
                                  name="lr", widen=1, edges=edges)
    assert values[best] == 0.4
    assert edges == [{"param": "lr", "value": 0.4, "side": "upper",
                      "tried": [0.05, 0.1, 0.2, 0.4], "widened": 1}]
    # downwards, in log(1 - v) for parameters just below 1, and at a domain bound
    values, _, best = search_grid(lambda v: (-abs(np.log(v / 1e-5)), v), [1e-3, 1e-4],
                                  name="C", widen=5)
    assert values[best] == pytest.approx(1e-5)
    values, _, best = search_grid(lambda v: (v, v), [0.9, 0.99], name="tau", scale="log1m",
                                  high=1.0, widen=1)
    assert values[-1] == pytest.approx(0.999)
    edges = []
    search_grid(lambda v: (v, v), [0.5, 1.0], name="lam", scale="linear", high=1.0,
                edges=edges)
    assert edges == []  # 1.0 is the domain's end, not the grid's


def test_path_edge():
    edges = []
    assert path_edge(19_000, 20_000, 20_000, name="n_rounds", edges=edges)
    assert not path_edge(17_000, 20_000, 20_000, name="n_rounds", edges=edges)
    assert not path_edge(300, 300, 20_000, name="n_rounds", edges=edges)  # stopped early
    assert edges == [{"param": "n_rounds", "value": 19_000, "side": "upper",
                      "tried": [20_000], "widened": 0}]


def test_learning_rate_grid_widened_past_its_edge():
    train, dev, _ = lists()
    # a grid of two values always has its best on an edge: it grows past it, one step of
    # the grid's ratio at a time
    est = HiddenVariableReranker(lr=(1e-6, 2e-6), n_epochs=1, random_state=0, widen=2)
    est.fit(train, dev)
    tried = [float(v) for v in est.dev_accuracy_]
    assert len(tried) >= 3 and tried[:2] == [1e-6, 2e-6]
    assert set(tried[2:]) <= {5e-7, 2.5e-7, 4e-6, 8e-6}
    assert est.lr_ in tried
    # one epoch is the path's end: the chosen rate ran more; the others ran one (n_epochs // 4
    # is 0, and every rate runs at least one)
    assert len(est.dev_accuracy_[repr(est.lr_)]) >= 2
    assert all(len(a) == 1 for v, a in est.dev_accuracy_.items() if v != repr(est.lr_))
    for e in est.grid_edges_:
        assert e["param"] in ("lr", "n_epochs") and e["widened"] == 2
    # not allowed to widen: the edges are recorded instead
    fixed = HiddenVariableReranker(lr=(1e-6, 2e-6), n_epochs=1, random_state=0, widen=0)
    fixed.fit(train, dev)
    assert len(fixed.dev_accuracy_) == 2
    assert [len(a) for a in fixed.dev_accuracy_.values()] == [1, 1]
    assert {e["param"] for e in fixed.grid_edges_} == {"lr", "n_epochs"}
    assert all(e["widened"] == 0 for e in fixed.grid_edges_)


# -- grid edges of the other rerankers -----------------------------------------------------------

@cache
def baseline_lists():
    c = synthetic_corpus(900, random_state=0)
    tr, rest = train_test_split(c, test_size=0.4, random_state=0)
    dv, te = train_test_split(rest, test_size=0.5, random_state=0)
    return jackknife_nbest(TrigramHMM(), tr, k=5, folds=3, random_state=0), \
        TrigramHMM().fit(tr).nbest(dv, k=5)


def test_regularized_boosting_widens_its_c_grid():
    train, dev = baseline_lists()
    # on these lists dev accuracy peaks near C = 3e-3, below the grid (3e-2, 1e-2)
    narrow = RegularizedBoostingReranker(C=(3e-2, 1e-2), n_rounds=300).fit(train, dev)
    assert narrow.C_ == 1e-2 and [t["C"] for t in narrow.tuning_] == [3e-2, 1e-2]
    assert narrow.grid_edges_ == [{"param": "C", "value": 1e-2, "side": "lower",
                                   "tried": [1e-2, 3e-2], "widened": 0}]
    wide = RegularizedBoostingReranker(C=(3e-2, 1e-2), n_rounds=300, widen=4).fit(train, dev)
    tried = [t["C"] for t in wide.tuning_]
    assert tried[:2] == [3e-2, 1e-2] and all(c < 1e-2 for c in tried[2:])
    assert wide.C_ < 1e-2 and "C" not in [e["param"] for e in wide.grid_edges_]
    assert wide.score(dev) > narrow.score(dev)


def test_boosting_reruns_a_path_stopped_by_its_cap():
    train, dev = baseline_lists()
    capped = BoostingReranker(n_rounds=5).fit(train, dev)
    assert capped.n_rounds_ == 5 and capped.grid_edges_ == [
        {"param": "n_rounds", "value": 5, "side": "upper", "tried": [5], "widened": 0}]
    longer = BoostingReranker(n_rounds=5, widen=2).fit(train, dev)
    # rerun with 10 rounds: the best prefix is no longer at the path's end
    assert longer.path_features_.size == 10 and longer.grid_edges_ == []
    assert longer.score(dev) >= capped.score(dev)


def test_perceptron_widens_its_decoder_weight_grid():
    train, dev = baseline_lists()
    # the best b on these lists (2) lies above the grid (0.25, 0.5)
    narrow = PerceptronReranker(decoder_weight=(0.25, 0.5), n_epochs=3, random_state=0)
    narrow.fit(train, dev)
    assert narrow.decoder_weight_ == 0.5 and narrow.dev_accuracy_.shape == (2, 3)
    assert {"param": "decoder_weight", "value": 0.5, "side": "upper", "tried": [0.25, 0.5],
            "widened": 0} in narrow.grid_edges_
    wide = PerceptronReranker(decoder_weight=(0.25, 0.5), n_epochs=3, random_state=0,
                              widen=3).fit(train, dev)
    assert wide.decoder_weights_tried_[:3] == [0.25, 0.5, 1.0]
    assert wide.decoder_weight_ > 0.5
    assert "decoder_weight" not in [e["param"] for e in wide.grid_edges_]
    assert wide.score(dev) > narrow.score(dev)


# the randomized model's own residuals may miss its tolerance here: said once per fit
# (tests/rerank/test_cca_rerankers.py), beside the point of this test
@pytest.mark.filterwarnings("ignore::sparsecca.rerank.RerankerToleranceWarning")
def test_cca_rerankers_record_their_grid_edges():
    train, dev = baseline_lists()
    est = SoftenedReranker(n_components=10, tau=(0.5, 0.9), lam=(0.25, 0.5),
                           k_grid=[2, 5], random_state=0).fit(train, dev)
    chosen = {"tau": est.tau_, "lam": est.lam_, "k": est.n_components_}
    grids = {"tau": [0.5, 0.9], "lam": [0.25, 0.5], "k": [2, 5]}
    recorded = {e["param"]: e for e in est.grid_edges_}
    for name, grid in grids.items():  # every value of a 2-point grid lies on an edge
        assert recorded[name]["value"] == chosen[name]
        assert recorded[name]["side"] == ("lower" if chosen[name] == grid[0] else "upper")
        assert recorded[name]["tried"] == grid and recorded[name]["widened"] == 0
    assert ("w" in recorded) == (est.w_ > 99.0)


def test_experiment_report_names_the_edges():
    from sparsecca._experiment import format_table

    row = {"dev": 0.9, "test": 0.9, "grid_edges": [
        {"param": "n_rounds", "value": 19700, "side": "upper", "tried": [20000],
         "widened": 0}]}
    text = format_table([{"name": "set", "rows": {"Collins (Sufx)": row}, "table3": {}}])
    assert ("Tuned on an edge of the dev grid: Collins (Sufx) on set: n_rounds = 19700 "
            "(upper edge of 20000).") in text


# -- bad input ----------------------------------------------------------------------------------

BAD_PARAMS = [
    (dict(n_hidden=0), ValueError, "n_hidden must be an int >= 1, got 0"),
    (dict(n_hidden=1.5), TypeError, "n_hidden must be an int >= 1"),
    (dict(lr=0.0), ValueError, "lr must be a finite number > 0, got 0.0"),
    (dict(lr=-0.1), ValueError, "lr must be a finite number > 0"),
    (dict(lr=(0.1, 0.0)), ValueError, "lr values must be a finite number > 0"),
    (dict(hidden_domain="senses"), ValueError, "hidden_domain must be one of"),
    (dict(n_epochs=0), ValueError, "n_epochs must be an int >= 1"),
    (dict(l2=-1.0), ValueError, "l2 must be a finite number >= 0"),
    (dict(widen=-1), ValueError, "widen must be an int >= 0"),
    (dict(lengths=()), ValueError, "lengths must be a non-empty"),
]


@pytest.mark.parametrize("kwargs,err,match", BAD_PARAMS)
def test_bad_parameters(kwargs, err, match):
    with pytest.raises(err, match=match):
        HiddenVariableReranker(**{"lr": 0.1, **kwargs}).fit(hand(), hand())


def _with(nb, **kw):
    args = dict(tag_ids=nb.tag_ids, cand_offsets=nb.cand_offsets,
                sent_offsets=nb.sent_offsets, scores=nb.scores, corpus=nb.corpus, tags=nb.tags)
    args.update(kw)
    return NBestList(**args)


BAD_LISTS = [
    ("no gold train", lambda: (hand(tagged=False), hand()), ValueError,
     "train has no gold tags"),
    ("no gold dev", lambda: (hand(), hand(tagged=False)), ValueError, "dev has no gold tags"),
    ("one-best train", lambda: (hand().truncate(1), hand()), ValueError,
     "train has one candidate per sentence"),
    ("one-best dev", lambda: (hand(), hand().truncate(1)), ValueError,
     r"^dev has one candidate per sentence; tuning needs k >= 2"),
    ("-inf train", lambda: (hand(scores=[-1.0, -np.inf, -3.0, -0.5, -0.9, -0.1]), hand()),
     ValueError, r"^train has 1 candidate\(s\) with decoder score -inf \(log 0\), the first is "
                 r"candidate 1 of sentence 0; HiddenVariableReranker learns a weight"),
    ("-inf dev", lambda: (hand(), hand(scores=[-1.0, -1.2, -3.0, -np.inf, -0.9, -0.1])),
     ValueError, r"^dev has 1 candidate\(s\) with decoder score -inf"),
    ("not a list", lambda: ([1, 2], hand()), TypeError, "train must be an NBestList"),
    ("grid without dev", lambda: (hand(), None), ValueError,
     "lr has 3 values to choose from but no dev"),
]


@pytest.mark.parametrize("case,make,err,match", BAD_LISTS, ids=[c[0] for c in BAD_LISTS])
def test_bad_lists(case, make, err, match):
    train, dev = make()
    lr = 0.1 if case != "grid without dev" else (0.05, 0.1, 0.2)
    with pytest.raises(err, match=match):
        HiddenVariableReranker(lr=lr, n_epochs=1).fit(train, dev)


def test_single_candidate_sentences_are_fine_beside_others():
    est = HiddenVariableReranker(lr=0.1, n_epochs=2, random_state=0).fit(hand(), hand())
    assert est.rerank(hand())[2] == 0


def test_not_fitted():
    with pytest.raises(NotFittedError, match="not fitted"):
        HiddenVariableReranker().decision_function(hand())
    with pytest.raises(NotFittedError, match="not fitted"):
        HiddenVariableReranker().save("x")


# -- files ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("domain", ["tag-split", "word-cluster"])
def test_save_load_round_trip(tmp_path, domain):
    est = fitted(hidden_domain=domain)
    test = lists()[2]
    back = load_model(est.save(tmp_path / "hv"))
    assert type(back) is HiddenVariableReranker and back.get_params() == est.get_params()
    np.testing.assert_array_equal(back.decision_function(test), est.decision_function(test))
    assert back.tuned_params() == est.tuned_params() and back.grid_edges_ == est.grid_edges_
    assert back.tags_ == est.tags_ and back.words_ == est.words_
