"""MMSTagger: clusters, distances, decoding, n-best lists, dev selection, persistence, bad input."""

import numpy as np
import pytest

from sparsecca.data import TaggedCorpus, synthetic_corpus
from sparsecca.evaluate import accuracy_report
from sparsecca.tagging import MMSTagger, TrigramHMM, jackknife_nbest
from sparsecca.tagging._mms import ptb_distance


@pytest.fixture(scope="module")
def data():
    corpus = synthetic_corpus(400, random_state=0)
    return corpus[:300], corpus[300:]


@pytest.fixture(scope="module")
def model(data):
    return MMSTagger(n_iter=4).fit(data[0])


def test_accuracy_known_unknown_and_nbest(data, model):
    train, test = data
    hmm = TrigramHMM().fit(train)
    assert model.score(test) > hmm.score(test) - 0.03
    pred = model.tag(test)
    gold = test.tags.mapping_to(model.tags_)[test.tag_ids]
    nb = model.nbest(test, k=5)
    rep = accuracy_report(pred.tag_ids, gold, nb.unknown)
    assert model.score(test, "known") == pytest.approx(rep["known_accuracy"])
    assert model.score(test, "unknown") == pytest.approx(rep["unknown_accuracy"])
    assert nb.unknown.any() and np.all(nb.n_candidates <= 5)
    # the 1-best of the list is the viterbi tag() output
    assert np.array_equal(nb.best().tag_ids, pred.tag_ids)
    assert nb.oracle_accuracy() >= nb.top1_accuracy()
    for i in range(nb.n_sentences):
        s = nb.scores[nb.sent_offsets[i]:nb.sent_offsets[i + 1]]
        assert np.all(np.diff(s) <= 0)


def test_token_decoder_takes_each_tokens_best_candidate(data, model):
    _, test = data
    offsets, tags, scores, _ = model.candidate_scores(test)
    best = [tags[a:b][np.argmax(scores[a:b])] for a, b in zip(offsets[:-1], offsets[1:])]
    token = MMSTagger(**{**model.get_params(), "decoder": "token"})
    vars(token).update({k: v for k, v in vars(model).items() if k.endswith("_")})
    assert np.array_equal(token.tag(test).tag_ids, best)


def test_clusters_hold_the_training_tags(data, model):
    train, _ = data
    wid = model.words_.ids([train.words[i] for i in train.word_ids])
    tid = train.tags.mapping_to(model.tags_)[train.tag_ids]
    ind, tags = model.cl_indptr_, model.cl_tags_
    for w, t in zip(wid[:500], tid[:500]):
        assert t in tags[ind[w]:ind[w + 1]]
    # one weight block per cluster in one flat array, none for single-tag words
    C = np.diff(ind)
    assert np.all(np.diff(model.woff_) == np.diff(model.feat_indptr_) * C)
    assert np.all(np.diff(model.feat_indptr_)[C < 2] == 0)


def test_unknown_words_back_off(data):
    train, test = data
    m = MMSTagger(n_iter=2, min_environment=1).fit(train)
    cluster, unknown = m._route(test)
    V = len(m.words_)
    assert unknown.any()
    assert np.all(cluster[~unknown] < V)
    assert np.all(cluster[unknown] >= 0)
    assert np.any(cluster[unknown] == m.n_clusters_ - 1)  # the rare-word cluster
    assert m.env_keys_.size > 0


def test_dev_chooses_eta_and_epoch(data):
    train, test = data
    m = MMSTagger(n_iter=3, eta=(0.1, 1.0)).fit(train, dev=test)
    assert m.eta_ in (0.1, 1.0) and 1 <= m.best_epoch_ <= 3
    assert len(m.dev_scores_) == 3


def test_two_stage(data):
    train, test = data
    m = MMSTagger(n_iter=3, two_stage=True).fit(train)
    assert isinstance(m.first_, MMSTagger) and not m.first_.two_stage
    assert m.score(test) > 0.8


def test_ptb_distance_table():
    D = ptb_distance(["NN", "NNP", "VBD", "VBN", "DT", "XYZ"])
    assert np.allclose(D, D.T) and np.all(np.diag(D) == 0)
    assert D[0, 1] == D[2, 3] == 0.3
    assert D[0, 2] == D[4, 5] == 1.0
    assert D[0, 4] == 1.0 and ptb_distance(["NN", "NNPS"])[0, 1] == 0.6


_PTB_SAMPLE = ["NN", "NNP", "NNS", "NNPS", "JJ", "VBD", "VBN", "RB", "RP", "IN", "DT", ",",
               "XYZ"]


@pytest.mark.parametrize("variant", ["ptb", "ptb-paper"])
def test_ptb_tables_shape_range_symmetry_diagonal(variant):
    D = ptb_distance(_PTB_SAMPLE, variant=variant)
    n = len(_PTB_SAMPLE)
    off = ~np.eye(n, dtype=bool)
    assert D.shape == (n, n) and D.dtype == np.float64
    assert np.array_equal(D, D.T) and np.all(np.diag(D) == 0)
    assert np.all((D[off] > 0) & (D[off] <= 1))
    assert set(np.unique(D[off])) == {0.3, 0.6, 1.0}


def test_ptb_paper_table_reverses_the_scale():
    near, paper = ptb_distance(_PTB_SAMPLE), ptb_distance(_PTB_SAMPLE, variant="ptb-paper")
    i = {t: k for k, t in enumerate(_PTB_SAMPLE)}
    # confusable pairs: near in 'ptb', the largest margin in 'ptb-paper'
    for a, b in [("NN", "NNP"), ("VBD", "VBN"), ("JJ", "NN"), ("RP", "RB"), ("RP", "IN")]:
        assert near[i[a], i[b]] == 0.3 and paper[i[a], i[b]] == 1.0
    assert near[i["NNP"], i["NNS"]] == paper[i["NNP"], i["NNS"]] == 0.6  # same class
    assert near[i["NN"], i["DT"]] == 1.0 and paper[i["NN"], i["DT"]] == 0.3  # unrelated
    assert paper[i["XYZ"], i["NN"]] == 0.3
    with pytest.raises(ValueError, match="variant must be 'ptb' or 'ptb-paper'"):
        ptb_distance(["NN"], variant="paper")


def test_named_ptb_tables_reach_the_model(data):
    train, test = data
    for name in ("ptb", "ptb-paper"):
        m = MMSTagger(n_iter=2, distance=name).fit(train)
        assert np.array_equal(m.distance_, ptb_distance(m.tags_.items, variant=name))
        assert 0 <= m.score(test) <= 1


@pytest.mark.parametrize("distance, expect", [("uniform", 1.0), ("auto", 1.0)])
def test_distance_for_other_tagsets_is_uniform(data, distance, expect):
    m = MMSTagger(n_iter=1, distance=distance).fit(data[0])
    off = ~np.eye(len(m.tags_), dtype=bool)
    assert np.all(m.distance_[off] == expect)


def test_user_distance_follows_corpus_tags(data):
    train, _ = data
    n = len(train.tags)
    D = np.full((n, n), 0.5)
    np.fill_diagonal(D, 0)
    D[0, 1] = D[1, 0] = 0.2
    m = MMSTagger(n_iter=1, distance=D).fit(train)
    a, b = m.tags_.id(train.tags[0]), m.tags_.id(train.tags[1])
    assert m.distance_[a, b] == 0.2 and m.distance_[a, a] == 0


@pytest.mark.parametrize("params, exc, match", [
    (dict(distance=np.ones((3, 4))), ValueError,
     r"distance must be a square \(n_tags, n_tags\) array, got shape \(3, 4\)"),
    (dict(distance=np.array([[0, -0.2], [0.5, 0]])), ValueError,
     r"distance entries must lie in \[0, 1\] \(off the diagonal in \(0, 1\]\), got -0\.2 "
     r"at \[0, 1\]"),
    (dict(distance=np.full((3, 3), 1.2)), ValueError,
     r"distance entries must lie in \[0, 1\].*1\.2"),
    (dict(distance=np.zeros((3, 3))), ValueError,
     r"distance entries off the diagonal must lie in \(0, 1\], got 0\.0 at \[0, 1\]"),
    (dict(distance="levenshtein"), ValueError,
     r"distance must be one of 'auto', 'ptb', 'ptb-paper', 'uniform'"),
    (dict(eta=0), ValueError, r"eta must be a finite number > 0, got 0"),
    (dict(eta=-0.5), ValueError, r"eta must be a finite number > 0, got -0\.5"),
    (dict(eta=(0.5, 0.0)), ValueError, r"eta must be a finite number > 0, got 0\.0"),
    (dict(eta=()), ValueError, r"eta must be a float > 0 or a non-empty sequence"),
    (dict(n_iter=0), ValueError, r"n_iter must be an int >= 1, got 0"),
    (dict(window=0), ValueError, r"window must be an int >= 1, got 0"),
    (dict(two_stage="yes"), TypeError, r"two_stage must be True or False"),
    (dict(decoder="beam"), ValueError, r"decoder must be 'viterbi' or 'token', got 'beam'"),
])
def test_bad_params(data, params, exc, match):
    with pytest.raises(exc, match=match):
        MMSTagger(**params).fit(data[0])


def test_distance_shape_must_follow_the_corpus_tags(data):
    train, _ = data
    n = len(train.tags)
    with pytest.raises(ValueError, match=rf"distance must have shape \({n}, {n}\), following "
                                         rf"the training corpus' tag vocabulary corpus\.tags "
                                         rf"\({n} tags\), got \(3, 3\)"):
        MMSTagger(distance=1 - np.eye(3)).fit(train)


@pytest.mark.parametrize("call, exc, match", [
    (lambda m, c: m.score(c, tokens="rare"), ValueError,
     r"tokens must be 'all', 'known' or 'unknown', got 'rare'"),
])
def test_bad_calls(data, model, call, exc, match):
    with pytest.raises(exc, match=match):
        call(model, data[1])


def test_empty_training_corpus_is_refused():
    with pytest.raises(ValueError, match="at least one token"):
        MMSTagger().fit(TaggedCorpus.from_sentences([]))


@pytest.mark.parametrize("params", [dict(), dict(two_stage=True, decoder="token"),
                                    dict(distance="array")])
def test_save_load_round_trip(tmp_path, data, params):
    train, test = data
    if params.get("distance") == "array":
        n = len(train.tags)
        params = dict(distance=np.full((n, n), 0.7) - 0.7 * np.eye(n))
    m = MMSTagger(n_iter=2, **params).fit(train)
    path = m.save(tmp_path / "mms")
    back = MMSTagger.load(path)
    assert np.array_equal(back.tag(test).tag_ids, m.tag(test).tag_ids)
    a, b = m.nbest(test, k=3), back.nbest(test, k=3)
    assert a == b and np.array_equal(a.scores, b.scores)


def test_jackknife_nbest_accepts_the_tagger(data):
    train, _ = data
    nb = jackknife_nbest(MMSTagger(n_iter=2), train[:120], k=3, folds=3)
    assert nb.n_sentences == 120 and nb.unknown.any()


@pytest.mark.slow
def test_without_dev_the_inverse_temperature_is_the_best_of_the_dev_grid(shared_data):
    from sparsecca.data import read_conllu
    from sparsecca.tagging._mms import _BETA_GRID

    folder = shared_data / "en-brown"
    train = read_conllu(folder / "train.conllu.gz", tags="upos")[:5000]
    test = read_conllu(folder / "test.conllu.gz", tags="upos")
    model = MMSTagger().fit(train)
    acc = model.score(test)
    gold = test.tags.mapping_to(model.tags_)[test.tag_ids]
    by_beta = {}
    for beta in _BETA_GRID:  # the same model decoded at every inverse temperature
        model.beta_ = beta
        by_beta[beta] = float(np.mean(model.tag(test).tag_ids == gold))
    # a flat posterior lets the division by the tag prior hand frequent words the rare tag
    # (X) they were seen with; measured: beta 2 (the old default) trails beta 4 by 0.4 points
    assert acc >= max(by_beta.values()) - 0.001, (acc, by_beta)
