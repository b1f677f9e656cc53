"""The three low-dimensional rerankers against slow references and the paper's identities."""

import re
from fractions import Fraction
from functools import cache

import numpy as np
import pytest
import scipy.linalg as sla

from sparsecca.data import TaggedCorpus, synthetic_corpus, train_test_split
from sparsecca.features import HStackView, JointView, SuffixView, TagNgramView, WordView
from sparsecca.kernels import aggregate_residuals
from sparsecca.registry import default_rerankers
from sparsecca.rerank import (
    DiscriminativeReranker,
    GenerativeReranker,
    SoftenedReranker,
    losses_of_choice,
    plateau_score,
    tune_weight,
)
from sparsecca.tagging import (
    NBestList,
    NotFittedError,
    TrigramHMM,
    concatenate,
    jackknife_nbest,
)


@cache
def lists(n=700, k=5, seed=0):
    corpus = synthetic_corpus(n, random_state=seed)
    train, rest = train_test_split(corpus, test_size=0.4, random_state=seed)
    dev, test = rest[: rest.n_sentences // 2], rest[rest.n_sentences // 2:]
    hmm = TrigramHMM().fit(train)
    return (jackknife_nbest(TrigramHMM(), train, k=k, folds=5, random_state=seed),
            hmm.nbest(dev, k=k), hmm.nbest(test, k=k))


FIXED = dict(n_components=8, tau=0.5, k_grid=[8], w=3.0, solver="dense")


def _reference_projections(train, tau, M_of, k, center=False):
    """Eq. 11 as one dense symmetric-definite generalized eigenproblem (scipy.linalg.eigh);
    with ``center`` on explicitly centred views."""
    X = SuffixView().fit_transform(train.corpus).toarray()
    view = TagNgramView().fit(train.corpus)
    Y = view.transform(train.corpus).toarray()
    Yh = view.transform_sequences(train.tag_ids, train.cand_offsets, train.tags).toarray()
    M = M_of(Y, Yh)
    if center:
        X = X - X.mean(axis=0)
        Y = Y - Y.mean(axis=0)
    d1, d2 = X.shape[1], Y.shape[1]
    Cxy = X.T @ M
    lhs = np.zeros((d1 + d2, d1 + d2))
    lhs[:d1, d1:] = Cxy
    lhs[d1:, :d1] = Cxy.T
    rhs = sla.block_diag((1 - tau) * X.T @ X + tau * np.eye(d1),
                         (1 - tau) * Y.T @ Y + tau * np.eye(d2))
    w, V = sla.eigh(lhs, rhs)
    order = np.argsort(w)[::-1][:k]
    # eigh normalises v^T rhs v = 1 over the stacked vector; the blocks carry 1/2 each
    return w[order], V[:d1, order] * np.sqrt(2), V[d1:, order] * np.sqrt(2)


def _match_signs(A, B):
    s = np.sign(np.sum(A * B, axis=0))
    return B * s


def test_generative_equals_block_eigenproblem():
    train, dev, _ = lists()
    model = GenerativeReranker(**FIXED).fit(train, dev)
    w, A, B = _reference_projections(train, 0.5, lambda Y, Yh: Y, 8)
    np.testing.assert_allclose(np.sqrt(model.eigenvalues_), w, rtol=1e-8)
    np.testing.assert_allclose(_match_signs(A, model.x_weights_), A, atol=1e-6)
    np.testing.assert_allclose(_match_signs(B, model.y_weights_), B, atol=1e-6)


@pytest.mark.parametrize("model_cls", [GenerativeReranker, SoftenedReranker])
def test_centred_models_equal_centred_eigenproblem(model_cls):
    """center=True: CCA on the centred views, and projections of centred vectors."""
    train, dev, _ = lists()
    params = dict(FIXED, center=True)
    if model_cls is GenerativeReranker:
        params.pop("lam", None)
        M_of = lambda Y, Yh: Y  # noqa: E731
    else:
        params["lam"] = 0.4

        def M_of(Y, Yh):
            R = aggregate_residuals(Y, Yh, train.losses, train.sent_offsets).toarray()
            return 0.6 * Y + 0.4 * R
    model = model_cls(**params).fit(train, dev)
    w, A, B = _reference_projections(train, 0.5, M_of, 8, center=True)
    np.testing.assert_allclose(np.sqrt(model.eigenvalues_), w, rtol=1e-8)
    np.testing.assert_allclose(_match_signs(A, model.x_weights_), A, atol=1e-6)
    np.testing.assert_allclose(_match_signs(B, model.y_weights_), B, atol=1e-6)
    X = model.input_view_.transform(dev.corpus).toarray()
    Yh = model.output_view_.transform_sequences(dev.tag_ids, dev.cand_offsets,
                                                dev.tags).toarray()
    u = (X - model.x_mean_)[dev.cand_sentence] @ model.x_weights_
    v = (Yh - model.y_mean_) @ model.y_weights_
    ref = np.einsum("ij,ij->i", u, v) / (np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1))
    np.testing.assert_allclose(model.projection_scores(dev), ref, atol=1e-12)


def test_softened_equals_block_eigenproblem():
    train, dev, _ = lists()
    lam = 0.4
    model = SoftenedReranker(lam=lam, **FIXED).fit(train, dev)

    def M_of(Y, Yh):
        R = aggregate_residuals(Y, Yh, train.losses, train.sent_offsets).toarray()
        return (1 - lam) * Y + lam * R

    w, A, B = _reference_projections(train, 0.5, M_of, 8)
    np.testing.assert_allclose(np.sqrt(model.eigenvalues_), w, rtol=1e-8)
    np.testing.assert_allclose(_match_signs(A, model.x_weights_), A, atol=1e-6)


@pytest.mark.parametrize("lam", [0.25, 0.7])
def test_discriminative_without_updates_is_softened(lam):
    """alpha = L: C_xy^alpha = C_xy(softened) / lam, so the directions agree (paper, 3.3)."""
    train, dev, _ = lists()
    soft = SoftenedReranker(lam=lam, **FIXED).fit(train, dev)
    disc = DiscriminativeReranker(lam=lam, n_iter=0, **FIXED).fit(train, dev)
    np.testing.assert_allclose(_match_signs(soft.x_weights_, disc.x_weights_),
                               soft.x_weights_, atol=1e-8)
    np.testing.assert_allclose(_match_signs(soft.y_weights_, disc.y_weights_),
                               soft.y_weights_, atol=1e-8)
    np.testing.assert_allclose(disc.eigenvalues_, soft.eigenvalues_ / lam**2, rtol=1e-8)
    np.testing.assert_array_equal(disc.rerank(dev), soft.rerank(dev))
    assert disc.n_iter_ == 0


def test_discriminative_updates_change_the_model():
    train, dev, _ = lists()
    disc = DiscriminativeReranker(lam=0.5, n_iter=3, gamma=0.5, **FIXED).fit(train, dev)
    soft = SoftenedReranker(lam=0.5, **FIXED).fit(train, dev)
    assert 1 <= disc.n_iter_ <= 3
    assert disc.slacks_.shape == (disc.n_iter_, train.n_sentences)
    assert np.all(disc.slacks_ >= 0)
    assert not np.allclose(np.abs(disc.x_weights_), np.abs(soft.x_weights_), atol=1e-6)


def test_projection_scores_are_cosines():
    train, dev, _ = lists()
    model = SoftenedReranker(lam=0.5, **FIXED).fit(train, dev)
    p = model.projection_scores(dev)
    X = model.input_view_.transform(dev.corpus).toarray()
    Yh = model.output_view_.transform_sequences(dev.tag_ids, dev.cand_offsets,
                                                dev.tags).toarray()
    for r in range(0, dev.n_total, 7):
        u = X[dev.cand_sentence[r]] @ model.x_weights_
        v = Yh[r] @ model.y_weights_
        den = np.linalg.norm(u) * np.linalg.norm(v)
        ref = 0.0 if den == 0 else u @ v / den
        assert p[r] == pytest.approx(ref, abs=1e-12)
    assert np.all(np.abs(p) <= 1 + 1e-12)
    np.testing.assert_allclose(model.decision_function(dev), dev.scores + 3.0 * p)


def test_tuning_picks_best_dev_point():
    train, dev, _ = lists()
    model = GenerativeReranker(n_components=6, tau=(0.3, 0.9), k_grid=[2, 6],
                               solver="dense", w_window=0).fit(train, dev)
    assert model.tau_ in (0.3, 0.9) and model.n_components_ in (2, 6)
    # brute force over the same grid: refit with each point fixed and score on dev
    best = -1.0
    for tau in (0.3, 0.9):
        for k in (2, 6):
            m = GenerativeReranker(n_components=6, tau=tau, k_grid=[k], solver="dense",
                                   w_window=0)
            m.fit(train, dev)
            best = max(best, m.score(dev))
    assert model.dev_accuracy_ == pytest.approx(best)
    assert model.score(dev) == pytest.approx(model.dev_accuracy_)
    assert model.score(dev) >= dev.top1_accuracy()   # w = 0 is on the grid
    grid = np.array(model.grid_scores_["accuracy"])
    assert grid.shape == (2, 1) and grid.max() == pytest.approx(model.dev_accuracy_)


@pytest.mark.parametrize("cls", [GenerativeReranker, SoftenedReranker,
                                 DiscriminativeReranker])
def test_progress_bar_over_the_grid_changes_nothing(cls, capsys):
    train, dev, _ = lists()
    kw = dict(n_components=6, tau=(0.3, 0.9), k_grid=[2, 6], solver="dense")
    if cls is not GenerativeReranker:
        kw["lam"] = (0.5, 0.75)
    quiet = cls(**kw).fit(train, dev)
    assert capsys.readouterr().err == ""
    loud = cls(progress=True, **kw).fit(train, dev)
    err = capsys.readouterr().err
    n_points = 2 if cls is GenerativeReranker else 4
    assert cls.__name__ in err and f"{n_points}/{n_points}" in err and "best_dev=" in err
    np.testing.assert_array_equal(loud.x_weights_, quiet.x_weights_)
    assert (loud.tau_, loud.w_, loud.dev_accuracy_) == (quiet.tau_, quiet.w_,
                                                       quiet.dev_accuracy_)
    assert loud.get_params()["progress"] is True


@pytest.mark.parametrize("cls", [GenerativeReranker, SoftenedReranker, DiscriminativeReranker])
def test_parameter_protocol(cls):
    """The parameters are exactly the constructor's (the generative model has no lam, the
    discriminative one adds gamma and n_iter); rebuilding from them gives an equal estimator,
    and an unknown name is refused with the valid ones listed."""
    import inspect

    est = cls(n_components=7, tau=(0.5,), w=3.0, center=True)
    params = est.get_params()
    assert list(params) == [p for p in inspect.signature(cls.__init__).parameters
                            if p != "self"]
    assert ("lam" in params) == (cls is not GenerativeReranker)
    assert ("gamma" in params) == ("n_iter" in params) == (cls is DiscriminativeReranker)
    twin = cls(**params)
    assert twin.get_params() == params and repr(twin) == repr(est)
    assert repr(est).startswith(f"{cls.__name__}(n_components=7, tau=(0.5,), ")
    assert est.set_params(n_components=3) is est and est.n_components == 3
    with pytest.raises(ValueError, match=f"invalid parameter 'beam' for {cls.__name__}; "
                                         f"valid parameters are"):
        est.set_params(beam=2)


def test_tune_weight_against_brute_force():
    _, dev, _ = lists()
    rng = np.random.default_rng(0)
    p = rng.normal(size=dev.n_total)
    w, acc, (grid, accs) = tune_weight(dev, p, refine=False, window=0)
    brute = [dev.accuracy(dev.argmax(dev.scores + g * p)) for g in range(101)]
    assert accs.tolist() == pytest.approx(brute)
    assert w == float(np.argmax(brute)) and acc == pytest.approx(max(brute))


@pytest.mark.parametrize("window", [1, 2, 5])
def test_tune_weight_plateau_against_brute_force(window):
    """The smoothed choice: argmax of the clipped moving average, ties to the smallest w."""
    _, dev, _ = lists()
    p = np.random.default_rng(1).normal(size=dev.n_total)
    w, acc, (grid, accs) = tune_weight(dev, p, refine=False, window=window)
    brute = np.array([dev.accuracy(dev.argmax(dev.scores + g * p)) for g in range(101)])
    # exact plateau averages (rationals of the integer losses): the first maximum
    lost = [losses_of_choice(dev, dev.argmax(dev.scores + g * p)) for g in range(101)]
    avg = [Fraction(sum(lost[max(0, i - window):i + window + 1]),
                    len(lost[max(0, i - window):i + window + 1])) for i in range(101)]
    assert w == float(avg.index(min(avg)))
    assert acc == pytest.approx(brute[int(w)])
    assert plateau_score((grid, accs), w, window) == pytest.approx(
        1 - float(min(avg)) / dev.corpus.n_tokens)


@pytest.mark.parametrize("window", [0, 2])
def test_tune_weight_ties_go_to_the_smallest_w(window):
    # a model score constant within each sentence changes no choice: every w ties, and the
    # running sum's rounding (~1e-15) once picked w = 9.6
    _, dev, _ = lists()
    p = np.repeat(np.linspace(-1.0, 1.0, dev.n_sentences), dev.n_candidates)
    w, acc, (grid, accs) = tune_weight(dev, p, window=window)
    assert np.unique(accs).size == 1
    assert w == 0.0 and acc == accs[0]


def _with_neg_inf(nb, where):
    s = nb.scores.copy()
    s[where] = -np.inf
    return NBestList(nb.tag_ids, nb.cand_offsets, nb.sent_offsets, s, nb.corpus, nb.tags,
                     nb.unknown)


def test_tune_weight_with_log_zero_scores():
    """-inf (log 0) candidates are never chosen: tuning equals tuning without them, and a
    sentence whose every candidate is -inf keeps its first one, as NBestList.argmax."""
    _, dev, _ = lists()
    p = np.random.default_rng(2).normal(size=dev.n_total)
    several = dev.n_candidates[dev.cand_sentence] > 1
    poisoned = np.flatnonzero((rank_of(dev) == 0) & (dev.cand_sentence % 3 == 0) & several)
    nb = _with_neg_inf(dev, poisoned)
    kept = np.flatnonzero(np.isfinite(nb.scores))
    got = tune_weight(nb, p, window=2)
    ref = tune_weight(dev.reorder(kept), p[kept], window=2)
    assert got[:2] == ref[:2]
    np.testing.assert_array_equal(got[2][1], ref[2][1])
    # one sentence all -inf: brute force through NBestList.argmax
    first = np.arange(dev.sent_offsets[1], dev.sent_offsets[2])
    nb = _with_neg_inf(dev, np.concatenate([poisoned, first]))
    _, _, (grid, accs) = tune_weight(nb, p, refine=False, window=0)
    brute = [nb.accuracy(nb.argmax(np.where(nb.scores == -np.inf, -np.inf, nb.scores + g * p)))
             for g in grid]
    assert accs.tolist() == pytest.approx(brute)
    # and a fitted reranker never picks them on test
    train, dev, test = lists()
    model = GenerativeReranker(**{k: v for k, v in FIXED.items() if k != "w"}).fit(train, nb)
    t = _with_neg_inf(test, np.flatnonzero(rank_of(test) == 0))
    choice = model.rerank(t)
    assert np.all(choice[test.n_candidates > 1] > 0)


def rank_of(nb):
    return np.arange(nb.n_total) - nb.sent_offsets[nb.cand_sentence]


@pytest.mark.parametrize(("grid", "exc", "pattern"), [
    ([[0.0, 1.0], [2.0, 3.0]], ValueError, r"^grid must be a non-empty 1-d array of weights, "
                                           r"got shape \(2, 2\)$"),
    ([], ValueError, r"got shape \(0,\)$"),
    (3.0, ValueError, r"got shape \(\)$"),
    (["a", "b"], TypeError, r"^grid must be a 1-d array of weights, got \['a', 'b'\]$"),
    ([0.0, np.nan], ValueError, r"^grid weights must be finite and >= 0, got nan at position 1$"),
    ([-1.0, 2.0], ValueError, r"got -1 at position 0$"),
    ([0.0, 2.0, 1.0], ValueError, r"^grid must be strictly increasing, got 2 then 1 at "
                                  r"positions 1, 2$"),
    ([0.0, 1.0, 1.0], ValueError, r"strictly increasing, got 1 then 1"),
])
def test_tune_weight_grid_validation(grid, exc, pattern):
    _, dev, _ = lists()
    with pytest.raises(exc, match=pattern):
        tune_weight(dev, np.zeros(dev.n_total), grid=grid)


def test_tune_weight_refine_must_be_bool():
    _, dev, _ = lists()
    with pytest.raises(TypeError, match="^refine must be True or False, got 'no'$"):
        tune_weight(dev, np.zeros(dev.n_total), refine="no")


def test_tune_weight_explicit_grid_equals_default():
    """The paper's grid passed explicitly gives what the default gives."""
    _, dev, _ = lists()
    p = np.random.default_rng(0).normal(size=dev.n_total)
    got = tune_weight(dev, p, grid=list(range(101)))
    ref = tune_weight(dev, p)
    assert got[:2] == ref[:2]
    np.testing.assert_array_equal(got[2][1], ref[2][1])


def test_tune_weight_window_validation():
    _, dev, _ = lists()
    with pytest.raises(ValueError, match="window must be an int >= 0, got -1"):
        tune_weight(dev, np.zeros(dev.n_total), window=-1)
    with pytest.raises(TypeError, match="^window must be an int >= 0, got 1.5$"):
        tune_weight(dev, np.zeros(dev.n_total), window=1.5)
    with pytest.raises(ValueError, match="^w_window must be an int >= 0, got -1$"):
        GenerativeReranker(w_window=-1, **{k: v for k, v in FIXED.items()
                                          if k != "lam"}).fit(*lists()[:2])
    with pytest.raises(TypeError, match="^w_window must be an int >= 0, got 1.5$"):
        GenerativeReranker(w_window=1.5, **{k: v for k, v in FIXED.items()
                                           if k != "lam"}).fit(*lists()[:2])


def test_default_rerankers_rows():
    rows = default_rerankers()
    assert list(rows)[:3] == ["Generative", "Softened-Disc", "Discriminative"]
    assert "Collins (Sufx)" in rows and "Perceptron (Sufx)" in rows


# -- bad input --------------------------------------------------------------------------------

def _single_candidate_lists():
    train, dev, _ = lists()
    return train.truncate(1), dev.truncate(1)


@pytest.mark.parametrize("cls", [GenerativeReranker, SoftenedReranker, DiscriminativeReranker])
def test_one_training_sentence_refused(cls):
    train, dev, _ = lists()
    with pytest.raises(ValueError, match="^train has 1 sentence; CCA needs at least 2$"):
        cls(**FIXED).fit(train[:1], dev)
    cls(**dict(FIXED, n_components=2, k_grid=[2])).fit(train[:2], dev)   # two are enough


def test_single_candidate_sentences_fit():
    train, dev = _single_candidate_lists()
    model = SoftenedReranker(lam=0.5, **FIXED).fit(train, dev)   # nothing tuned
    assert model.score(dev) == pytest.approx(dev.top1_accuracy())


@pytest.mark.parametrize("cls", [GenerativeReranker, SoftenedReranker, DiscriminativeReranker])
@pytest.mark.parametrize("tuned", [dict(w=None), dict(tau=(0.3, 0.5)), dict(k_grid=[2, 8])])
def test_tuning_on_a_one_best_dev_refused(cls, tuned):
    # every grid point chose the same candidates: w, k, tau were decided by ties
    train, _, _ = lists()
    _, dev = _single_candidate_lists()
    with pytest.raises(ValueError, match=r"^dev has one candidate per sentence; tuning needs "
                                         r"k >= 2 \(decode dev with k >= 2"):
        cls(**dict(FIXED, **tuned)).fit(train, dev)


def test_some_single_candidate_sentences_tune():
    """Short sentences with one possible tag sequence are legitimate in a normal list."""
    train, dev, _ = lists()
    mixed = concatenate([dev.truncate(1)[:10], dev[10:]])
    assert mixed.n_candidates.min() == 1 and mixed.n_candidates.max() > 1
    model = GenerativeReranker(**dict(FIXED, w=None)).fit(train, mixed)
    assert model.dev_accuracy_ >= mixed.top1_accuracy()


def test_all_zero_losses():
    """Every candidate correct: R = 0, the softened model reduces to scaled CCA."""
    train, dev, _ = lists()
    oracle = train.reorder(train.sent_offsets[:-1] + 0)
    zero = NBestList(oracle.corpus.tag_ids, oracle.cand_offsets, oracle.sent_offsets,
                     oracle.scores, oracle.corpus, oracle.corpus.tags)
    assert zero.losses.sum() == 0
    soft = SoftenedReranker(lam=0.5, **FIXED).fit(zero, dev)
    gen = GenerativeReranker(**FIXED).fit(zero, dev)
    np.testing.assert_allclose(np.abs(soft.x_weights_), np.abs(gen.x_weights_), atol=1e-8)
    disc = DiscriminativeReranker(lam=0.5, n_iter=2, **FIXED).fit(zero, dev)
    assert disc.n_iter_ >= 1 and np.all(disc.slacks_ == 0)


def test_no_gold_refused():
    train, dev, _ = lists()
    untagged = TaggedCorpus(train.corpus.word_ids, None, train.corpus.offsets,
                            train.corpus.words, None)
    nb = NBestList(train.tag_ids, train.cand_offsets, train.sent_offsets, train.scores,
                   untagged, train.tags)
    with pytest.raises(ValueError, match="train has no gold tags"):
        GenerativeReranker(**FIXED).fit(nb, dev)


@pytest.mark.parametrize(("cls", "kw", "exc", "pattern"), [
    (SoftenedReranker, dict(lam=1.5), ValueError,
     r"^lam must be a finite number in \[0, 1\], got 1.5$"),
    (SoftenedReranker, dict(lam=-0.1), ValueError, r"lam must be a finite number in \[0, 1\]"),
    (SoftenedReranker, dict(lam=(0.5, 2)), ValueError,
     r"^lam values must be a finite number in \[0, 1\], got 2$"),
    (GenerativeReranker, dict(tau=1.2), ValueError, r"tau must be a finite number in \[0, 1\], "
                                                    r"got 1.2"),
    (GenerativeReranker, dict(tau=float("nan")), ValueError, r"tau must be .* got nan"),
    (DiscriminativeReranker, dict(lam=0.0), ValueError,
     r"^lam must be a finite number in \(0, 1\], got 0.0$"),
    (DiscriminativeReranker, dict(gamma=0), ValueError, "gamma must be a finite number > 0, got 0"),
    (DiscriminativeReranker, dict(n_iter=-1), ValueError, "n_iter must be an int >= 0, got -1"),
    (GenerativeReranker, dict(n_components=0), ValueError, "n_components must be an int >= 1, "
                                                           "got 0"),
    # the kind of value is a TypeError, the range a ValueError, as for every int parameter
    (GenerativeReranker, dict(n_components=2.0), TypeError, "^n_components must be an int "
                                                            ">= 1, got 2.0$"),
    (GenerativeReranker, dict(n_components=True), TypeError, "^n_components must be an int "
                                                             ">= 1, got True$"),
    (GenerativeReranker, dict(max_rank=0), ValueError, "^max_rank must be an int >= 1, got 0$"),
    (GenerativeReranker, dict(max_rank="9"), TypeError, "^max_rank must be an int >= 1, "
                                                        "got '9'$"),
    (DiscriminativeReranker, dict(n_iter=1.0), TypeError, "^n_iter must be an int >= 0, "
                                                          "got 1.0$"),
    (DiscriminativeReranker, dict(gamma="1"), TypeError, "^gamma must be a real number, "
                                                         "got '1'$"),
    (DiscriminativeReranker, dict(gamma=float("inf")), ValueError,
     "^gamma must be a finite number > 0, got inf$"),
    (GenerativeReranker, dict(k_grid=[50]), ValueError,
     r"k_grid values must lie in \[1, n_components=8\], got \[50\]"),
    (GenerativeReranker, dict(k_grid=[0, 2]), ValueError, "^k_grid values must be an int >= 1, "
                                                          "got 0$"),
    (GenerativeReranker, dict(k_grid=[]), ValueError, r"^k_grid must be a non-empty sequence of "
                                                      r"ints >= 1, got \[\]$"),
    (GenerativeReranker, dict(solver="magic"), ValueError, "solver must be 'auto', 'dense'"),
    (GenerativeReranker, dict(w=-1.0), ValueError, "^w must be a finite number >= 0, got -1.0$"),
    (SoftenedReranker, dict(progress="yes"), TypeError, "progress must be True or False, "
                                                        "got 'yes'"),
    (GenerativeReranker, dict(center=1), TypeError, "^center must be True or False, got 1$"),
    # the kind of value: raw float()/int() conversion errors used to escape unnamed, and
    # bools and fractional k were taken as numbers
    (GenerativeReranker, dict(tau="abc"), TypeError,
     "^tau must be a number or a sequence of numbers, got 'abc'$"),
    (GenerativeReranker, dict(tau=True), TypeError,
     "^tau must be a number or a sequence of numbers, got bool$"),
    (GenerativeReranker, dict(tau=[0.5, "x"]), TypeError, "^tau values must be a real number, "
                                                           "got 'x'$"),
    (SoftenedReranker, dict(lam="a"), TypeError, "^lam must be a number or a sequence of "
                                                 "numbers, got 'a'$"),
    (GenerativeReranker, dict(w="abc"), TypeError, "^w must be a real number, got 'abc'$"),
    (GenerativeReranker, dict(w=[1, 2]), TypeError, r"^w must be a real number, got \[1, 2\]$"),
    (GenerativeReranker, dict(w=True), TypeError, "^w must be a real number, got True$"),
    (GenerativeReranker, dict(k_grid="abc"), TypeError,
     "^k_grid must be an int or a sequence of ints >= 1, got 'abc'$"),
    (GenerativeReranker, dict(k_grid=[2.7]), TypeError, "^k_grid values must be an int >= 1, "
                                                        "got 2.7$"),
    (GenerativeReranker, dict(k_grid=True), TypeError, "^k_grid must be an int or a sequence of "
                                                       "ints >= 1, got True$"),
])
def test_bad_parameters(cls, kw, exc, pattern):
    train, dev, _ = lists()
    params = dict(FIXED)
    params.update(kw)
    with pytest.raises(exc, match=pattern):
        cls(**params).fit(train, dev)


def test_grids_of_every_accepted_form():
    """Scalars, tuples, lists and NumPy arrays (of NumPy scalars) give the same fit."""
    train, dev, _ = lists()
    base = SoftenedReranker(**dict(FIXED, lam=0.5)).fit(train, dev)
    for kw in (dict(tau=(0.5,), lam=[0.5], k_grid=8), dict(tau=np.array([0.5]),
                                                            lam=np.float32(0.5),
                                                            k_grid=np.array([8, 8]), w=3)):
        model = SoftenedReranker(**dict(FIXED, **kw)).fit(train, dev)
        np.testing.assert_array_equal(model.x_weights_, base.x_weights_)
        assert (model.tau_, model.lam_, model.n_components_, model.w_) == (0.5, 0.5, 8, 3.0)


@pytest.mark.parametrize("cls", [GenerativeReranker, SoftenedReranker, DiscriminativeReranker])
def test_more_components_than_correlations_refused_in_the_users_terms(cls):
    # the message used to give min(d1, d2), a number the user never passed, as n_components
    train, dev, _ = lists()
    params = dict(FIXED, n_components=10**6, k_grid=None)
    with pytest.raises(ValueError, match=r"^n_components=1000000 \(capped at min\(d1, d2\) = "
                                         r"\d+, d1 counting identical input columns once\) "
                                         r"exceeds the number of nonzero canonical "
                                         r"correlations at tau=0\.5.*: the cross-covariance has "
                                         r"rank (\d+); give n_components <= \1$") as info:
        cls(**params).fit(train, dev)
    rank = int(str(info.value).rsplit(" ", 1)[1])
    if cls is GenerativeReranker:  # C_xy = X^T Y: its rank, independently
        X = SuffixView().fit_transform(train.corpus)
        Y = TagNgramView().fit_transform(train.corpus)
        assert rank == np.linalg.matrix_rank((X.T @ Y).toarray())
    model = cls(**dict(params, n_components=rank)).fit(train, dev)  # the advice works
    assert model.n_components_ <= rank


@pytest.mark.parametrize("n_components", [32, 100])
def test_randomized_solver_counts_the_achieved_rank(n_components):
    """30 training sentences: C_xy has rank 30.  The randomized model's rounding once
    counted up to 50 nonzero values (an n_components it advised, then refused) and accepted
    32 components, 2 of them noise; the count is now of the achieved correlations."""
    train, dev, _ = lists()
    few = train.select(np.arange(30))
    params = dict(n_components=n_components, tau=0.5, k_grid=[n_components], w=5.0,
                  solver="randomized", random_state=0)
    with pytest.raises(ValueError, match=r"the cross-covariance has rank 30 \(at most one per "
                                         r"training sentence: 30 sentences;.* give "
                                         r"n_components <= 30$"):
        GenerativeReranker(**params).fit(few, dev)
    model = GenerativeReranker(**dict(params, n_components=30, k_grid=[30])).fit(few, dev)
    assert model.eigenvalues_[-1] > 1e-6 * model.eigenvalues_[0]


@pytest.mark.parametrize("center", [False, True])
def test_too_few_training_sentences_named_as_the_cause(center):
    """With fewer training sentences than components the rank bound is the sentence count
    (less one when centred), and the message says a larger training set lifts it."""
    train, dev, _ = lists()
    tiny = train.select(np.arange(4))
    bound = 4 - int(center)
    with pytest.raises(ValueError, match=rf"the cross-covariance has rank {bound} \(at most one "
                                         rf"per training sentence"
                                         rf"{', less one when centred' if center else ''}: 4 "
                                         rf"sentences; a larger training set lifts it\); give "
                                         rf"n_components <= {bound}$"):
        GenerativeReranker(**dict(FIXED, center=center)).fit(tiny, dev)
    model = GenerativeReranker(**dict(FIXED, center=center, n_components=bound,
                                      k_grid=[bound])).fit(tiny, dev)
    assert model.n_components_ == bound


@pytest.mark.parametrize("cls", [GenerativeReranker, SoftenedReranker, DiscriminativeReranker])
def test_failed_refit_keeps_the_previous_fit(cls, tmp_path):
    # a refit that failed in the solve left the new views and means beside the old weights:
    # decision_function failed on a shape mismatch and save wrote a file load refused
    train, dev, test = lists()
    model = cls(**dict(FIXED, center=True)).fit(train, dev)
    before = dict(vars(model))
    scores = model.decision_function(test)
    with pytest.raises(ValueError, match="exceeds the number of nonzero canonical"):
        model.fit(train.select(np.arange(4)), dev)
    assert vars(model).keys() == before.keys()
    for name, value in before.items():
        assert getattr(model, name) is value, name
    np.testing.assert_array_equal(model.decision_function(test), scores)
    back = cls.load(model.save(tmp_path / "m"))
    np.testing.assert_array_equal(back.decision_function(test), scores)


def test_components_capped_by_distinct_input_columns():
    """The cap min(d1, d2) counts identical input columns once, as the engine does (it merges
    them): the user's n_components is reported in the reranker's terms, not refused inside
    the engine with a d1 the user never saw."""
    from sparsecca.linalg import CCAEngine

    train, dev, _ = lists()
    tiny = train.select(np.arange(5))
    X = SuffixView().fit_transform(tiny.corpus)
    Y = TagNgramView().fit_transform(tiny.corpus)
    merged = CCAEngine(X, Y, solver="dense").n_merged_features_
    assert merged < min(X.shape[1], Y.shape[1])  # the case this test is about
    with pytest.raises(ValueError, match=rf"^n_components=1000000 \(capped at min\(d1, d2\) = "
                                         rf"{merged}, d1 counting identical input columns "
                                         rf"once\) exceeds"):
        GenerativeReranker(**dict(FIXED, n_components=10**6, k_grid=None)).fit(tiny, dev)


def test_tuning_needs_dev():
    train, _, _ = lists()
    with pytest.raises(ValueError, match="dev n-best list is required"):
        GenerativeReranker(n_components=4, tau=(0.1, 0.5)).fit(train)
    fixed = GenerativeReranker(**FIXED).fit(train)   # everything fixed: no dev needed
    assert fixed.dev_accuracy_ is None


def test_unfitted_and_other_tagset():
    train, dev, _ = lists()
    with pytest.raises(NotFittedError, match="not fitted"):
        GenerativeReranker().projection_scores(dev)
    model = GenerativeReranker(**FIXED).fit(train, dev)
    foreign = NBestList(dev.tag_ids, dev.cand_offsets, dev.sent_offsets, dev.scores,
                        dev.corpus.with_tags(None, None),
                        [f"X{i}" for i in range(len(dev.tags))])
    with pytest.raises(ValueError, match=r"^the candidates of nbest do not fit the tagset this "
                                         r"GenerativeReranker was fitted on: tag sequences: "
                                         r"100.0% of the tag tokens"):
        model.rerank(foreign)


@pytest.mark.parametrize("cls", [GenerativeReranker, SoftenedReranker, DiscriminativeReranker])
@pytest.mark.parametrize("method", ["score", "rerank", "decision_function", "predict",
                                    "reranked", "projection_scores"])
def test_unfitted_raises_not_fitted(cls, method):
    # decision_function read w_ first: AttributeError instead of the baselines' NotFittedError
    _, dev, _ = lists()
    with pytest.raises(NotFittedError, match=f"this {cls.__name__} is not fitted yet"):
        getattr(cls(), method)(dev)


_WORDS = r"must be a view of the words \(SuffixView, CharNgramView, WordView, or an HStackView"
_TAGS = r"must be a view of tag sequences \(TagNgramView, or an HStackView of them\)"
_LEAK = "; applied to the dev and test corpora it would see their gold tags$"


class _Undeclared:
    """A duck-typed view that does not say what it reads."""

    def fit(self, corpus):
        return self

    def transform(self, corpus):  # pragma: no cover - never reached
        raise AssertionError

    def get_params(self, deep=True):
        return {}


@pytest.mark.parametrize("cls", [GenerativeReranker, SoftenedReranker, DiscriminativeReranker])
@pytest.mark.parametrize(("kw", "pattern"), [
    # a view reading tags as input view sees the gold tags of dev and test (a leak)
    (dict(input_view=TagNgramView()), f"^input_view {_WORDS}.*, got TagNgramView, which reads "
                                      f"tags{_LEAK}"),
    (dict(input_view=JointView()), f"got JointView, which reads tags and words{_LEAK}"),
    (dict(input_view=HStackView([SuffixView(), TagNgramView()])),
     f"got HStackView, which reads tags and words{_LEAK}"),
    (dict(input_view=HStackView([SuffixView(), HStackView([WordView(), TagNgramView()])])),
     f"got HStackView, which reads tags and words{_LEAK}"),
    (dict(input_view=_Undeclared()), "got _Undeclared, which does not declare what it reads"),
    (dict(input_view="suffix"), f"^input_view {_WORDS} of them\\), got str 'suffix'$"),
    (dict(input_view=SuffixView), "got the class SuffixView; pass an instance$"),
    (dict(output_view=3), f"^output_view {_TAGS}, got int 3$"),
    (dict(output_view=SuffixView()), f"^output_view {_TAGS}, got SuffixView, which reads words$"),
    (dict(output_view=JointView()), "got JointView, which reads tags and words$"),
    (dict(output_view=HStackView([TagNgramView(), WordView()])),
     "got HStackView, which reads tags and words$"),
    (dict(output_view=HStackView(iter([TagNgramView()]))),
     "got HStackView, whose views is a list_iterator, not a list or tuple of views$"),
])
def test_views_of_the_wrong_kind_refused_at_fit(cls, kw, pattern):
    train, dev, _ = lists()
    params = dict(FIXED, **kw)
    with pytest.raises(TypeError, match=pattern):
        cls(**params).fit(train, dev)


def test_views_of_the_right_kind_fit():
    train, dev, _ = lists()
    model = GenerativeReranker(
        **FIXED, input_view=HStackView([SuffixView(lengths=2), HStackView([WordView()])]),
        output_view=HStackView([TagNgramView(orders=1), TagNgramView(orders=2)])).fit(train,
                                                                                       dev)
    assert model.input_view_.reads == frozenset({"words"})
    assert model.output_view_.reads == frozenset({"tags"})


def test_saved_model_with_a_tag_reading_input_view_refused(tmp_path):
    from sparsecca._persist import ModelFormatError, save_model_file

    train, dev, _ = lists()
    model = GenerativeReranker(**FIXED).fit(train, dev)
    model.input_view_ = TagNgramView().fit(train.corpus)  # as a tampered file would hold
    with pytest.raises(ValueError, match=r"^cannot save this GenerativeReranker: load\(\) would "
                                         r"refuse its state \(input_view_ must be a view of the "
                                         r"words"):
        model.save(tmp_path / "leak")  # save refuses what load would refuse
    params, arrays, extra = model.get_state()
    path = save_model_file(tmp_path / "leak", "GenerativeReranker", params, arrays, extra=extra)
    with pytest.raises(ModelFormatError, match="input_view_ must be a view of the words .*, "
                                               f"got TagNgramView, which reads tags{_LEAK}"):
        GenerativeReranker.load(path)


def foreign_gold(nb):
    """``nb`` with its gold tags renamed (another tag column); candidates unchanged."""
    renamed = [f"U-{t}" for t in nb.corpus.tags]
    corpus = nb.corpus.with_tags(nb.corpus.tag_ids, renamed)
    return NBestList(nb.tag_ids, nb.cand_offsets, nb.sent_offsets, nb.scores, corpus,
                     nb.tags.items + renamed, nb.unknown)


@pytest.mark.parametrize("cls", [GenerativeReranker, SoftenedReranker, DiscriminativeReranker])
def test_dev_gold_of_another_tagset_refused(cls):
    train, dev, _ = lists()
    with pytest.raises(ValueError, match=r"^dev gold tags: 100.0% of the tag tokens \(\d+ of "
                                         r"\d+\) are not in the gold tagset of train .*given "
                                         r"tags \['U-"):
        cls(**FIXED).fit(train, foreign_gold(dev))


def test_tag_view_too_wide_for_a_dense_whitener():
    # the randomized solver whitens such a C_yy by a low-rank factor, part of its model (as
    # before); the exact solvers refuse instead of answering approximately
    from sparsecca.linalg._thresholds import Thresholds, applied

    train, dev, _ = lists()
    with applied(Thresholds(y_dense_max=50)):
        params = dict(FIXED, solver="randomized")
        model = GenerativeReranker(**params).fit(train, dev)  # refused without the low-rank C_yy
        assert model.y_weights_.shape[0] > 50
        assert 0.5 < model.score(dev) <= 1.0
        with pytest.raises(ValueError, match=r"Y has \d+ features and \d+ rows, both more than "
                                             r"50"):
            GenerativeReranker(**dict(FIXED, solver="dense")).fit(train, dev)


# -- solves that miss the solver's tolerance: one warning per fit -------------------------

def _coarse(cls, **kw):
    """A randomized model of C_xx of rank 2: every solve misses tol by its own residuals."""
    params = dict(n_components=4, tau=(0.9, 0.99), k_grid=[2, 4], solver="randomized",
                  max_rank=2, random_state=0)
    if cls is not GenerativeReranker:
        params["lam"] = (0.5, 0.75)
    if cls is DiscriminativeReranker:
        params["n_iter"] = 1
    return cls(**{**params, **kw})


def _warnings_of(fn):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, caught


@pytest.mark.parametrize("cls", [GenerativeReranker, SoftenedReranker, DiscriminativeReranker])
def test_missed_tolerance_warns_once_per_fit(cls):
    from sparsecca.rerank import RerankerToleranceWarning

    train, dev, _ = lists()
    model, caught = _warnings_of(lambda: _coarse(cls).fit(train, dev))
    # one warning for the fit, none of the engine's per grid point
    assert [w.category for w in caught] == [RerankerToleranceWarning], \
        [str(w.message)[:200] for w in caught]
    n_points = 2 if cls is GenerativeReranker else 4
    point = rf"tau={model.tau_:g}" + ("" if cls is GenerativeReranker
                                      else rf", lam={model.lam_:g}")
    assert model.solver_error_ > 1e-3
    assert re.match(rf"^{cls.__name__}: {n_points} of {n_points} grid points missed the "
                    rf"randomized solver's tolerance tol = 0\.001 by their own residuals.*; "
                    rf"the selected point \({point}\) has an estimated relative error of "
                    rf"{model.solver_error_:.3g} \(solver_error_\); the model of C_xx is capped "
                    rf"at rank max_rank=2", str(caught[0].message))
    with pytest.warns(RerankerToleranceWarning, match=r"raise max_rank or use "
                                                      r"solver='iterative'"):
        _coarse(cls).fit(train, dev)
    # the warning tells the truth: the exact solve (dense) finds larger correlations
    exact = cls(**{**_coarse(cls).get_params(), "solver": "dense", "tau": model.tau_,
                   "k_grid": [4], **({} if cls is GenerativeReranker
                                     else {"lam": model.lam_})}).fit(train, dev)
    if cls is not DiscriminativeReranker:   # (its later M differ with the first solve)
        assert exact.eigenvalues_[0] > (1 + 1e-3) * model.eigenvalues_[0]
    assert exact.solver_error_ is None or exact.solver_error_ < 1e-6


@pytest.mark.parametrize("cls", [GenerativeReranker, SoftenedReranker, DiscriminativeReranker])
def test_solves_within_tolerance_do_not_warn(cls):
    train, dev, _ = lists()
    _, caught = _warnings_of(lambda: _coarse(cls, solver="dense").fit(train, dev))
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]


def test_experiment_says_it_once_per_fit():
    from sparsecca._experiment import experiment_on_corpora
    from sparsecca.rerank import RerankerToleranceWarning

    corpus = synthetic_corpus(300, random_state=0)
    rest, test = train_test_split(corpus, test_size=60, random_state=0)
    train, dev = train_test_split(rest, test_size=60, random_state=1)
    models = {c.__name__: _coarse(c) for c in (GenerativeReranker, SoftenedReranker,
                                               DiscriminativeReranker)}
    _, caught = _warnings_of(lambda: experiment_on_corpora(
        train, dev, test, name="synth", k=3, folds=2, rerankers=models))
    runtime = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert [w.category for w in runtime] == [RerankerToleranceWarning] * 3
    assert sorted(str(w.message).split(":")[0] for w in runtime) == sorted(models)


@pytest.mark.slow
def test_cli_train_reranker_says_it_once(tmp_path):
    import os
    import subprocess
    import sys

    from sparsecca.data import write_conllu

    corpus = synthetic_corpus(240, random_state=3)
    train, dev = train_test_split(corpus, test_size=60, random_state=1)
    write_conllu(train, tmp_path / "train.conllu")
    write_conllu(dev, tmp_path / "dev.conllu")
    TrigramHMM().fit(train).save(tmp_path / "hmm.npz")
    env = {k: v for k, v in os.environ.items() if k != "SPARSECCA_DEBUG"}
    proc = subprocess.run(
        [sys.executable, "-m", "sparsecca", "train-reranker", "--tagger",
         str(tmp_path / "hmm.npz"), str(tmp_path / "train.conllu"),
         str(tmp_path / "dev.conllu"), "--model", "softened", "-o", str(tmp_path / "r.npz"),
         "-k", "3", "--folds", "2", "--n-components", "4", "--tau", "0.9,0.99", "--lam",
         "0.5,0.75", "--max-rank", "2"], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr.count("RerankerToleranceWarning") == 1, proc.stderr[-3000:]
    assert "RuntimeWarning:" not in proc.stderr   # none of the engine's, per grid point
    assert "4 of 4 grid points missed" in proc.stderr
