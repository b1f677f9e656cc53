"""Model files of every saveable class: exact round trips, and refusal of damaged files.

Round trips compare the loaded model's outputs with the original's (bit for bit).  Damaged
files are made four ways: flipped bytes, truncation, a foreign class in the metadata and a
pickle renamed to .npz; hand-edited *consistent* archives (valid zip, valid JSON) with
inconsistent arrays check that validation catches what would otherwise reach a kernel.  The
file format itself (``save_model_file`` / ``load_model_file``) is checked on the arrays of a
stand-in class "Thing".
"""

import functools
import gc
import json
import os
import pickle
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from sparsecca._persist import (
    _REGISTRY,
    ModelFormatError,
    _import_model_modules,
    check_csr_rows,
    from_json,
    load_model,
    load_model_file,
    pack_strings,
    read_model_meta,
    save_model_file,
    to_json,
    unpack_strings,
)
from sparsecca.data import synthetic_corpus, train_test_split
from sparsecca.features import (
    CharNgramView,
    ContextFeatures,
    HStackView,
    JointView,
    SuffixView,
    TagNgramView,
    WordView,
)
from sparsecca.features import NotFittedError as ViewNotFittedError
from sparsecca.linalg import SparseCCA
from sparsecca.registry import baseline_rerankers
from sparsecca.rerank import (
    BoostingReranker,
    DiscriminativeReranker,
    GenerativeReranker,
    HiddenVariableReranker,
    JointFeatures,
    PerceptronReranker,
    RegularizedBoostingReranker,
    SoftenedReranker,
)
from sparsecca.tagging import (
    MEMMTagger,
    MMSTagger,
    NBestList,
    NotFittedError,
    PerceptronTagger,
    TrigramHMM,
    jackknife_nbest,
)

# -- fixtures ---------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def corpora():
    """A training corpus and a held-out one (with words the training part never saw)."""
    c = synthetic_corpus(700, random_state=11)
    train, test = train_test_split(c, test_size=150, random_state=0)
    return train, test


@functools.lru_cache(maxsize=None)
def fitted_hmm(**params):
    return TrigramHMM(**params).fit(corpora()[0])


@functools.lru_cache(maxsize=None)
def nbest_lists():
    train, test = corpora()
    tr, dev = train_test_split(train, test_size=100, random_state=1)
    hmm = TrigramHMM().fit(tr)
    return (jackknife_nbest(TrigramHMM(), tr, k=5, folds=3, random_state=0),
            hmm.nbest(dev, k=5), hmm.nbest(test, k=5))


def assert_same_csr(A, B):
    assert A.shape == B.shape and A.dtype == B.dtype
    np.testing.assert_array_equal(A.indptr, B.indptr)
    np.testing.assert_array_equal(A.indices, B.indices)
    np.testing.assert_array_equal(A.data, B.data)


# -- round trips ------------------------------------------------------------------------------

HMM_PARAMS = [
    {},
    {"prefix_weight": 0.5, "max_suffix_length": 4},
    {"max_prefix_length": 0, "lowercase_fallback": False, "unknown_ratio": 0.0},
]


@pytest.mark.parametrize("params", HMM_PARAMS, ids=["default", "prefix", "no-prefix"])
def test_hmm_round_trip(tmp_path, params):
    hmm = fitted_hmm(**params)
    test = corpora()[1]
    path = hmm.save(tmp_path / "hmm")
    assert path.name == "hmm.npz"
    back = TrigramHMM.load(path)
    assert back.get_params() == hmm.get_params()
    # identical k-best lists: same sequences, bit-identical scores, same unknown mask
    assert back.nbest(test, k=7) == hmm.nbest(test, k=7)
    np.testing.assert_array_equal(back.nbest(test, k=7).scores, hmm.nbest(test, k=7).scores)
    np.testing.assert_array_equal(back.tag(test).tag_ids, hmm.tag(test).tag_ids)
    assert back.tags_ == hmm.tags_ and back.words_ == hmm.words_
    assert back.suffixes_ == hmm.suffixes_ and back.prefixes_ == hmm.prefixes_
    assert back.prefix_weight_ == hmm.prefix_weight_ and back.theta_ == hmm.theta_
    for name in ("lambdas_", "bigram_logp_", "tri_indptr_", "tri_tags_", "lex_logp_",
                 "suffix_probs_", "word_counts_"):
        np.testing.assert_array_equal(getattr(back, name), getattr(hmm, name))


VIEWS = {
    "suffix": lambda: SuffixView(),
    "suffix-f32-min2": lambda: SuffixView(lengths=(1, 3), min_count=2, lowercase=True,
                                          dtype=np.float32),
    "charngram": lambda: CharNgramView(n=(1, 2, 3)),
    "word": lambda: WordView(min_count=2),
    "tagngram": lambda: TagNgramView(),
    "tagngram-123-noboundary": lambda: TagNgramView(orders=(1, 2, 3), boundaries=False,
                                                    dtype=np.float32),
    "joint-suffix": lambda: JointView(),
    "joint-ngram": lambda: JointView(kind="ngram", min_count=2, lowercase=True),
    "suffix-max": lambda: SuffixView(lengths=(1, 3), min_count=2, max_features=60),
    "charngram-max": lambda: CharNgramView(n=(1, 2), max_features=25),
    "word-max": lambda: WordView(max_features=40, dtype=np.float32),
    "tagngram-max": lambda: TagNgramView(orders=(1, 2, 3), max_features=30),
    "joint-suffix-max": lambda: JointView(max_features=200),
    "joint-ngram-max": lambda: JointView(kind="ngram", min_count=2, max_features=150),
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_view_round_trip(tmp_path, name):
    train, test = corpora()
    view = VIEWS[name]().fit(train)
    back = type(view).load(view.save(tmp_path / name))
    assert back.get_params() == view.get_params()
    assert back.n_features_ == view.n_features_
    if view.max_features is not None:
        assert view.n_features_ == view.max_features  # the cap was reached
    assert back.vocabulary_ == view.vocabulary_
    assert_same_csr(back.transform(test), view.transform(test))
    assert back.n_dropped_ == view.n_dropped_
    if isinstance(view, TagNgramView):
        # candidate sequences in a foreign vocabulary are re-coded the same way
        tags = list(reversed(test.tags.items))
        ids = len(tags) - 1 - test.tag_ids
        assert_same_csr(back.transform_sequences(ids, test.offsets, tags),
                        view.transform_sequences(ids, test.offsets, tags))
    elif isinstance(view, JointView):
        assert_same_csr(back.transform_sequences(test.word_ids, test.tag_ids, test.offsets,
                                                 test.words, test.tags),
                        view.transform_sequences(test.word_ids, test.tag_ids, test.offsets,
                                                 test.words, test.tags))
    else:
        assert_same_csr(back.transform_sequences(test.word_ids, test.offsets, test.words),
                        view.transform_sequences(test.word_ids, test.offsets, test.words))


def test_view_state_api_nests(tmp_path):
    """get_state / from_state are what models holding views embed (no file involved)."""
    view = SuffixView(lengths=(2, 3)).fit(corpora()[0])
    params, arrays, extra = view.get_state()
    json.dumps(params), json.dumps(extra)  # JSON-able as promised
    back = SuffixView.from_state(params, arrays, extra)
    assert_same_csr(back.transform(corpora()[1]), view.transform(corpora()[1]))


def _few_rounds(est):
    """A Table 2 baseline with few rounds / epochs, so that it fits in a second."""
    if isinstance(est, PerceptronReranker):
        return est.set_params(n_epochs=2)
    if isinstance(est, RegularizedBoostingReranker):
        return est.set_params(n_rounds=60, C=(1e-3, 1e-4))
    return est.set_params(n_rounds=60)


#: every baseline row of Table 2 (sparsecca.rerank.baseline_rerankers), by a slug of its name
BASELINES = {row.lower().replace(" (", "-").replace(")", ""): (lambda row=row: _few_rounds(
    baseline_rerankers(random_state=3)[row])) for row in baseline_rerankers()}


@functools.lru_cache(maxsize=None)
def fitted_baseline(name):
    train, dev, _ = nbest_lists()
    return BASELINES[name]().fit(train, dev)


@pytest.mark.parametrize("name", list(BASELINES))
def test_baseline_reranker_round_trip(tmp_path, name):
    est = fitted_baseline(name)
    test = nbest_lists()[2]
    back = load_model(est.save(tmp_path / name))  # dispatch on the stored class name
    assert type(back) is type(est) and back.get_params() == est.get_params()
    np.testing.assert_array_equal(back.decision_function(test), est.decision_function(test))
    np.testing.assert_array_equal(back.rerank(test), est.rerank(test))
    assert back.features_.feature_names_ == est.features_.feature_names_


CCA_RERANKERS = (GenerativeReranker, SoftenedReranker, DiscriminativeReranker)


@functools.lru_cache(maxsize=None)
def fitted_cca(cls):
    train, dev, _ = nbest_lists()
    kw = {"lam": 0.5} if cls is not GenerativeReranker else {}
    return cls(n_components=5, tau=0.5, **kw).fit(train, dev)


@pytest.mark.parametrize("cls", CCA_RERANKERS, ids=lambda c: c.__name__)
def test_cca_reranker_round_trip(tmp_path, cls):
    est = fitted_cca(cls)
    test = nbest_lists()[2]
    back = cls.load(est.save(tmp_path / "cca"))
    np.testing.assert_array_equal(back.decision_function(test), est.decision_function(test))
    np.testing.assert_array_equal(back.projection_scores(test), est.projection_scores(test))
    assert back.tuned_params() == est.tuned_params()


def two_views(n=200, seed=0):
    """A generic two-view sparse problem (no NLP); X has 5 duplicated columns (merged)."""
    X = sp.random(n, 40, density=0.1, format="csr", random_state=seed + 1)
    X = sp.hstack([X, X[:, :5]], format="csr")
    Y = sp.random(n, 30, density=0.1, format="csr", random_state=seed + 2) + X[:, :30] * 0.5
    return X, sp.csr_matrix(Y)


SPARSE_CCA = {
    "dense": {"solver": "dense"},
    "dense-centred": {"solver": "dense", "center": True},
    "randomized": {"solver": "randomized"},
    "iterative-centred": {"solver": "iterative", "center": True},
    "iterative-lowrank": {"solver": "iterative", "preconditioner": "low-rank"},
    "auto-generator": {"random_state": np.random.default_rng(0)},  # stored as None
}


@pytest.mark.parametrize("case", list(SPARSE_CCA))
def test_sparse_cca_round_trip(tmp_path, case):
    est = SparseCCA(**{"n_components": 3, "tau": 0.3, "random_state": 0, **SPARSE_CCA[case]})
    est.fit(*two_views())
    assert est.n_merged_features_ < est.n_features_in_  # the duplicate columns were merged
    back = SparseCCA.load(est.save(tmp_path / "scca"))
    Xt, Yt = two_views(20, seed=7)
    for a, b in zip(back.transform(Xt, Yt), est.transform(Xt, Yt)):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(back.transform(Xt.toarray()), est.transform(Xt.toarray()))
    for name in SparseCCA._state_arrays:
        a, b = getattr(back, name), getattr(est, name)
        assert (a is None and b is None) or np.array_equal(a, b), name
    for name in SparseCCA._state_values:
        assert getattr(back, name) == getattr(est, name), name
    params = est.get_params()
    if case == "auto-generator":
        params["random_state"] = None
    assert back.get_params() == params
    with pytest.raises(NotFittedError, match="not fitted"):
        SparseCCA().save(tmp_path / "unfitted")
    with pytest.raises(AttributeError, match="not fitted"):  # NotFittedError is one, too
        SparseCCA().transform(Xt)


def test_sparse_cca_path_models_round_trip(tmp_path):
    X, Y = two_views()
    Xt, Yt = two_views(20, seed=7)
    for i, est in enumerate(SparseCCA(2, solver="dense").fit_path(X, Y, [0.1, 0.9])):
        back = load_model(est.save(tmp_path / f"m{i}"))
        assert back.tau == back.tau_ == est.tau_
        np.testing.assert_array_equal(back.transform(Xt), est.transform(Xt))


def test_nbest_list_round_trip(tmp_path):
    nb = nbest_lists()[2]
    back = NBestList.load(nb.save(tmp_path / "nb"))
    assert back == nb and back.tags == nb.tags and back.corpus == nb.corpus
    for name in ("tag_ids", "cand_offsets", "sent_offsets", "scores", "losses", "gold_ids",
                 "unknown"):
        a, b = getattr(back, name), getattr(nb, name)
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    # what a reranker makes of it is identical too
    est = fitted_cca(GenerativeReranker)
    np.testing.assert_array_equal(est.decision_function(back), est.decision_function(nb))
    assert back.oracle_accuracy("unknown") == nb.oracle_accuracy("unknown")


def test_info_and_metadata(tmp_path):
    path = SuffixView().fit(corpora()[0]).save(tmp_path / "v", info={"tags": "upos", "n": 3})
    meta = read_model_meta(path)
    assert meta["class"] == "SuffixView" and meta["info"] == {"tags": "upos", "n": 3}
    assert meta["format_version"] == 1
    with pytest.raises(FileExistsError, match="exists"):
        SuffixView().fit(corpora()[0]).save(path)
    with pytest.raises(ModelFormatError, match="holds a 'SuffixView'; expected one of"):
        load_model(path, allowed=(TrigramHMM,))


@pytest.mark.parametrize("est,err", [(TrigramHMM(), NotFittedError),
                                     (SuffixView(), ViewNotFittedError),
                                     (JointView(), ViewNotFittedError),
                                     (JointFeatures(), NotFittedError),
                                     (BoostingReranker(), NotFittedError)])
def test_unfitted_save_refused(tmp_path, est, err):
    with pytest.raises(err, match="not fitted"):
        est.save(tmp_path / "x")
    assert not (tmp_path / "x.npz").exists()


#: a fitted model, parameters set after fit, and why load() would refuse the state saved
SET_AFTER_FIT = {
    "SparseCCA-center": (lambda: SparseCCA(3, random_state=0).fit(*two_views()),
                         {"center": True}, r"array 'x_mean_' must be present for center=True"),
    "SparseCCA-solver": (lambda: SparseCCA(3, random_state=0).fit(*two_views()),
                         {"solver": "bogus"}, r"solver must be one of .* got 'bogus'"),
    "GenerativeReranker-center": (
        lambda: GenerativeReranker(n_components=5, tau=0.5, center=True).fit(
            *nbest_lists()[:2]),
        {"center": False}, r"x_mean_ and y_mean_ must be zero for center=False"),
    "TrigramHMM-unknown_ratio": (lambda: TrigramHMM().fit(corpora()[0]),
                                 {"unknown_ratio": 2.0}, r"unknown_ratio must be in \[0, 1\)"),
}


@pytest.mark.parametrize("case", list(SET_AFTER_FIT))
def test_save_refuses_what_load_would_refuse(tmp_path, case):
    # save wrote such a state, and load refused the file: set_params after fit made the
    # parameters disagree with the fitted attributes
    make, params, why = SET_AFTER_FIT[case]
    model = make()
    fitted_params = model.get_params()
    model.set_params(**params)
    name = type(model).__name__
    with pytest.raises(ValueError, match=rf"^cannot save this {name}: load\(\) would refuse its "
                                         rf"state \(.*{why}.*\); were parameters changed "
                                         rf"\(set_params\) since fit\? Refit, or restore the "
                                         rf"parameters it was fitted with$"):
        model.save(tmp_path / "m")
    assert os.listdir(tmp_path) == []  # nothing written
    model.set_params(**fitted_params)  # restored: saved, and loaded back
    assert type(type(model).load(model.save(tmp_path / "m"))) is type(model)


def test_load_finds_the_file_save_wrote(tmp_path):
    # save('m') wrote m.npz, and load('m') said 'no such model file'
    model = fitted("SuffixView")
    path = model.save(tmp_path / "m")
    assert path == tmp_path / "m.npz"
    for back in (SuffixView.load(tmp_path / "m"), load_model(str(tmp_path / "m"))):
        assert_same(back.transform(corpora()[1]), model.transform(corpora()[1]))
    assert read_model_meta(tmp_path / "m")["class"] == "SuffixView"
    assert load_model_file(tmp_path / "m", "SuffixView")[0]["class"] == "SuffixView"
    # errors name the file read
    with pytest.raises(ModelFormatError, match=r"m\.npz: holds a 'SuffixView', not a "
                                               r"'TrigramHMM'$"):
        TrigramHMM.load(tmp_path / "m")
    # a file of the name given is the one read
    (tmp_path / "m").write_bytes(b"not a model")
    with pytest.raises(ModelFormatError, match=r"/m: not a sparsecca model file"):
        SuffixView.load(tmp_path / "m")
    # neither exists: both names are in the message
    missing = re.escape(str(tmp_path / "nope"))
    for load in (SuffixView.load, load_model, read_model_meta):
        with pytest.raises(FileNotFoundError, match=rf"^{missing}: no such model file "
                                                    rf"\(nor {missing}\.npz\)$"):
            load(tmp_path / "nope")


# -- every saveable class: round trip and damaged files -----------------------------------------

def _transform_test(model):
    return [model.transform(corpora()[1])]


def _rerank_test(model):
    test = nbest_lists()[2]
    out = [model.decision_function(test), model.rerank(test)]
    if hasattr(model, "projection_scores"):
        out.append(model.projection_scores(test))
    return out


#: class name -> (fitted instance, its outputs on held-out data); covers every class that
#: can be saved (test_every_saveable_class_is_covered)
MODELS = {
    "TrigramHMM": (fitted_hmm, lambda m: [m.nbest(corpora()[1], k=5), m.tag(corpora()[1])]),
    "PerceptronTagger": (lambda: PerceptronTagger(n_iter=2).fit(corpora()[0]),
                         lambda m: [m.nbest(corpora()[1], k=5), m.tag(corpora()[1])]),
    "MEMMTagger": (lambda: MEMMTagger(maxiter=10).fit(corpora()[0]),
                   lambda m: [m.nbest(corpora()[1], k=5), m.tag(corpora()[1])]),
    "MMSTagger": (lambda: MMSTagger(n_iter=2).fit(corpora()[0]),
                  lambda m: [m.nbest(corpora()[1], k=5), m.tag(corpora()[1])]),
    "ContextFeatures": (lambda: ContextFeatures().fit(corpora()[0]), _transform_test),
    "SuffixView": (lambda: SuffixView().fit(corpora()[0]), _transform_test),
    "CharNgramView": (lambda: CharNgramView(n=(1, 2)).fit(corpora()[0]), _transform_test),
    "WordView": (lambda: WordView().fit(corpora()[0]), _transform_test),
    "TagNgramView": (lambda: TagNgramView().fit(corpora()[0]), _transform_test),
    "JointView": (lambda: JointView(kind="ngram").fit(corpora()[0]), _transform_test),
    "HStackView": (lambda: HStackView([SuffixView(lengths=(1, 2)), WordView()]).fit(
        corpora()[0]), _transform_test),
    "JointFeatures": (lambda: JointFeatures().fit(nbest_lists()[0]),
                      lambda m: [m.transform(nbest_lists()[2])]),
    "BoostingReranker": (lambda: fitted_baseline("collins-sufx"), _rerank_test),
    "RegularizedBoostingReranker": (lambda: fitted_baseline("regularized-n-gm"), _rerank_test),
    "PerceptronReranker": (lambda: fitted_baseline("perceptron-sufx"), _rerank_test),
    "GenerativeReranker": (lambda: fitted_cca(GenerativeReranker), _rerank_test),
    "SoftenedReranker": (lambda: fitted_cca(SoftenedReranker), _rerank_test),
    "DiscriminativeReranker": (lambda: fitted_cca(DiscriminativeReranker), _rerank_test),
    "HiddenVariableReranker": (lambda: HiddenVariableReranker(
        hidden_domain="word-cluster", lr=0.1, n_epochs=2, random_state=0).fit(
        *nbest_lists()[:2]), _rerank_test),
    "SparseCCA": (lambda: SparseCCA(3, tau=0.3, center=True, random_state=0).fit(*two_views()),
                  lambda m: list(m.transform(*two_views(20, seed=7)))),
    "NBestList": (lambda: nbest_lists()[2],
                  lambda m: [m, m.scores, m.losses, m.unknown, m.corpus]),
}


@functools.lru_cache(maxsize=None)
def fitted(name):
    return MODELS[name][0]()


def assert_same(a, b):
    """Bit-identical outputs: arrays, CSR matrices, n-best lists, corpora, anything with ==."""
    if sp.issparse(a):
        assert_same_csr(a, b)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, NBestList):
        assert a == b
        np.testing.assert_array_equal(a.scores, b.scores)
    else:
        assert a == b


def test_every_saveable_class_is_covered():
    _import_model_modules()
    assert sorted(MODELS) == sorted(_REGISTRY)


@pytest.mark.parametrize("name", list(MODELS))
def test_round_trip_every_class(tmp_path, name):
    model = fitted(name)
    assert type(model).__name__ == name
    path = model.save(tmp_path / "m")
    assert read_model_meta(path)["class"] == name
    # loading is lossless: the loaded object has the same state (before any transform
    # updates statistics such as a view's n_dropped_)
    p0, a0, e0 = model.get_state()
    p1, a1, e1 = load_model(path).get_state()
    assert json.dumps(p0, sort_keys=True) == json.dumps(p1, sort_keys=True)
    assert json.dumps(e0, sort_keys=True) == json.dumps(e1, sort_keys=True)
    assert sorted(a0) == sorted(a1)
    for k in a0:
        np.testing.assert_array_equal(np.asarray(a0[k]), np.asarray(a1[k]), err_msg=k)
    # and predicts / transforms bit for bit the same, loaded by its class or by load_model
    for back in (type(model).load(path), load_model(path)):
        assert type(back) is type(model)
        for a, b in zip(MODELS[name][1](back), MODELS[name][1](model), strict=True):
            assert_same(a, b)


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("overwrite", ["no", 1, None])
def test_save_overwrite_must_be_a_bool(tmp_path, name, overwrite):
    # any truthy value replaced the file: 'no' meant yes
    path = tmp_path / "m.npz"
    path.write_bytes(b"precious")
    with pytest.raises(TypeError, match=rf"^overwrite must be True or False, got "
                                        rf"{re.escape(repr(overwrite))}$"):
        fitted(name).save(path, overwrite=overwrite)
    assert path.read_bytes() == b"precious"
    assert os.listdir(tmp_path) == ["m.npz"]


@pytest.mark.parametrize("name", list(MODELS))
def test_corrupted_bytes_refused(tmp_path, name):
    path = fitted(name).save(tmp_path / "m")
    raw = bytearray(path.read_bytes())
    for i in range(len(raw) // 4, 3 * len(raw) // 4, 11):
        raw[i] ^= 0x5A
    path.write_bytes(bytes(raw))
    with pytest.raises(ModelFormatError, match=r"m\.npz: (corrupted|not a sparsecca)"):
        type(fitted(name)).load(path)
    with pytest.raises(ModelFormatError, match=r"m\.npz: (corrupted|not a sparsecca)"):
        load_model(path)


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("frac", [0.0, 0.01, 0.3, 0.7, 0.999])
def test_truncated_file_refused(tmp_path, name, frac):
    path = fitted(name).save(tmp_path / "m")
    raw = path.read_bytes()
    path.write_bytes(raw[:int(len(raw) * frac)])
    with pytest.raises(ModelFormatError, match=r"m\.npz: (corrupted or truncated|not a sparsecca)"):
        type(fitted(name)).load(path)


def _relabel(path, cls_name, out):
    """A copy of the model file at ``path`` whose metadata names class ``cls_name``."""
    meta, arrays = read_model_meta(path), load_model_file(path, read_model_meta(path)["class"])[1]
    return save_model_file(out, cls_name, meta["params"], arrays, extra=meta["extra"])


@pytest.mark.parametrize("name", list(MODELS))
def test_file_naming_another_class_refused(tmp_path, name):
    model = fitted(name)
    # (a class whose state differs from every other's: a WordView's state relabelled as a
    # SuffixView would be a valid SuffixView)
    other = "TrigramHMM" if name != "TrigramHMM" else "SuffixView"
    # a genuine file of another class
    with pytest.raises(ModelFormatError, match=f"holds a '{other}', not a '{name}'"):
        type(model).load(fitted(other).save(tmp_path / "other"))
    # this model's arrays under another class name: refused by that class's validation,
    # and by the class check when loaded as what it really is
    path = _relabel(model.save(tmp_path / "m"), other, tmp_path / "relabelled")
    with pytest.raises(ModelFormatError, match=f"holds a '{other}', not a '{name}'"):
        type(model).load(path)
    with pytest.raises(ModelFormatError, match=r"relabelled\.npz: "):
        load_model(path)


@pytest.mark.parametrize("name", list(MODELS))
def test_pickle_renamed_refused(tmp_path, name):
    model = fitted(name)
    p = tmp_path / "evil.npz"
    p.write_bytes(pickle.dumps(model))
    with pytest.raises(ModelFormatError, match=r"evil\.npz: not a sparsecca model file"):
        type(model).load(p)
    with pytest.raises(ModelFormatError, match=r"evil\.npz: not a sparsecca model file"):
        load_model(p)


def test_random_single_byte_damage_never_crashes(tmp_path):
    """Any one flipped byte: either refused with ModelFormatError, or loads to the same model.

    (Bytes the zip format does not check, such as time stamps, may change harmlessly.)
    """
    hmm = fitted_hmm()
    test = corpora()[1][:40]
    ref = hmm.nbest(test, k=3)
    clean = hmm.save(tmp_path / "clean").read_bytes()
    rng = np.random.default_rng(5)
    refused = 0
    for pos in rng.choice(len(clean), size=40, replace=False):
        raw = bytearray(clean)
        raw[pos] ^= 1 << int(rng.integers(8))
        p = tmp_path / "d.npz"
        p.write_bytes(bytes(raw))
        try:
            back = TrigramHMM.load(p)
        except ModelFormatError:
            refused += 1
            continue
        assert back.nbest(test, k=3) == ref
    assert refused >= 30  # almost every byte is covered by a CRC or a structural check


def test_pickle_and_npy_renamed_refused(tmp_path):
    p = tmp_path / "evil.npz"
    p.write_bytes(pickle.dumps({"lambdas": np.ones(3)}))
    with pytest.raises(ModelFormatError, match="not a sparsecca model file"):
        TrigramHMM.load(p)
    # text, pickle or an empty file: what it is not, never numpy's advice to unpickle it
    for raw in (b"garbage", pickle.dumps([1, 2]), b"", b"PK\x05\x06" + bytes(18)):
        p.write_bytes(raw)
        with pytest.raises(ModelFormatError, match="not a sparsecca model file") as err:
            TrigramHMM.load(p)
        assert "pickle" not in str(err.value).split("evil.npz: ", 1)[1]
    q = tmp_path / "arr.npz"
    with open(q, "wb") as fh:
        np.save(fh, np.arange(4))
    with pytest.raises(ModelFormatError, match="not an .npz archive"):
        TrigramHMM.load(q)
    with pytest.raises(FileNotFoundError, match="no such model file"):
        TrigramHMM.load(tmp_path / "missing.npz")


@pytest.mark.parametrize("name", list(MODELS))
def test_newer_format_refused(tmp_path, name):
    path = fitted(name).save(tmp_path / "v")
    meta, arrays = load_model_file(path, name)
    p2 = tmp_path / "new.npz"
    blob = dict(meta, format_version=2)
    np.savez(p2, __sparsecca_meta__=np.frombuffer(json.dumps(blob).encode(), np.uint8),
             **arrays)
    with pytest.raises(ModelFormatError, match=r"new\.npz: format version 2 is newer"):
        type(fitted(name)).load(p2)


def _edit(tmp_path, model, edit):
    """Save ``model``, apply ``edit(meta, arrays)`` and write a valid archive of the result."""
    path = model.save(tmp_path / "orig", overwrite=True)
    meta, arrays = load_model_file(path, type(model).__name__)
    edit(meta, arrays)
    return save_model_file(tmp_path / "edited", meta["class"], meta["params"], arrays,
                           extra=meta["extra"], overwrite=True)


def _set(name, fn):
    def edit(meta, arrays):
        arrays[name] = fn(arrays[name])
    return edit


def _extra(name, value):
    def edit(meta, arrays):
        meta["extra"][name] = value
    return edit


def _param(name, value):
    def edit(meta, arrays):
        meta["params"][name] = value
    return edit


def _drop(name):
    def edit(meta, arrays):
        del arrays[name]
    return edit


def _swap_rows(a):
    a = a.copy()
    a[[0, 1]] = a[[1, 0]]
    return a


HMM_EDITS = {
    "lex tag out of range": (_set("lex_tags", lambda a: a + 100), "lex_tags.*must lie in"),
    "negative trigram tag": (_set("tri_tags", lambda a: a - 1000), "tri_tags.*must lie in"),
    "trigram tags unsorted": (_set("tri_tags", lambda a: a[::-1].copy()), "tri_tags"),
    "indptr decreasing": (_set("lex_indptr", lambda a: a[::-1].copy()), "lex_indptr"),
    "indptr too short": (_set("tri_indptr", lambda a: a[:-1]), "tri_indptr.*entries"),
    "float indices": (_set("suffix_tags", lambda a: a.astype(float)), "suffix_tags.*int"),
    "NaN emission": (_set("lex_logp", lambda a: np.where(np.arange(a.size) == 3, np.nan, a)),
                     "lex_logp.*NaN"),
    "+inf transition": (_set("bigram_logp", lambda a: np.where(a == a.max(), np.inf, a)),
                        "bigram_logp.*infinite"),
    "bigram wrong shape": (_set("bigram_logp", lambda a: a[:-1]), "bigram_logp.*shape"),
    "probability > 1": (_set("prefix_probs", lambda a: a * 5), "prefix_probs"),
    "lambdas do not sum to 1": (_set("lambdas", lambda a: a * 2), "lambdas"),
    "count array wrong size": (_set("word_counts", lambda a: a[:-2]), "word_counts.*shape"),
    "missing array": (_drop("context_adj"), "context_adj.*missing"),
    "string offsets past the data": (_set("words.offsets", lambda a: a * 2), "words.offsets"),
    "bad UTF-8": (_set("tags.utf8", lambda a: np.full_like(a, 0xFF)), "not valid UTF-8"),
    "string offsets swapped": (_set("words.offsets", _swap_rows), "words.offsets"),
    "prefix weight out of range": (_extra("prefix_weight", 2.0), "prefix_weight"),
    "theta not a number": (_extra("theta", "x"), "theta"),
    "unknown parameter": (_param("beam", 3), "unexpected keyword|parameters"),
    "bad parameter value": (_param("rare_threshold", 0), "rare_threshold must be"),
}


@pytest.mark.parametrize("case", list(HMM_EDITS))
def test_inconsistent_hmm_refused(tmp_path, case):
    edit, match = HMM_EDITS[case]
    path = _edit(tmp_path, fitted_hmm(), edit)
    with pytest.raises(ModelFormatError, match=match):
        TrigramHMM.load(path)


def test_duplicate_strings_refused(tmp_path):
    def dup(meta, arrays):
        words = unpack_strings(arrays, "words")
        arrays.update(pack_strings("words", [words[0]] + words[:-1]))
    with pytest.raises(ModelFormatError, match="distinct"):
        TrigramHMM.load(_edit(tmp_path, fitted_hmm(), dup))


def _hstack30():
    return HStackView([SuffixView(lengths=2), WordView()], max_features=30).fit(corpora()[0])


VIEW_EDITS = {
    "tag keys unsorted": (lambda: TagNgramView().fit(corpora()[0]),
                          _set("keys", lambda a: a[::-1].copy()), "strictly increasing"),
    "tag key out of range": (lambda: TagNgramView().fit(corpora()[0]),
                             _set("keys", lambda a: a + 10**6), "keys.*must lie in"),
    # the joint view's kernel tables are derived from keys; keys past the unit range would
    # make the numba lookup read out of bounds
    "joint key out of range": (lambda: JointView().fit(corpora()[0]),
                               _set("keys", lambda a: a * 1000), "keys.*must lie in"),
    "joint keys float": (lambda: JointView().fit(corpora()[0]),
                         _set("keys", lambda a: a.astype(np.float64)), "keys.*int"),
    "vocabulary offsets broken": (lambda: SuffixView().fit(corpora()[0]),
                                  _set("vocabulary.offsets", lambda a: a - 1), "vocabulary"),
    "bad dtype parameter": (lambda: WordView().fit(corpora()[0]),
                            _param("dtype", {"__dtype__": "<i4"}), "dtype"),
    "negative n_dropped": (lambda: CharNgramView().fit(corpora()[0]),
                           _extra("n_dropped", -1), "n_dropped"),
    # a vocabulary larger than max_features: fit could not have built it
    "suffix vocabulary over max_features": (
        lambda: SuffixView(max_features=50).fit(corpora()[0]), _param("max_features", 49),
        r"stored vocabulary has 50 features, more than max_features=49"),
    "word vocabulary over max_features": (
        lambda: WordView().fit(corpora()[0]), _param("max_features", 3),
        r"more than max_features=3"),
    "tag keys over max_features": (
        lambda: TagNgramView(max_features=20).fit(corpora()[0]), _param("max_features", 19),
        r"stored vocabulary has 20 features, more than max_features=19"),
    "joint keys over max_features": (
        lambda: JointView(kind="ngram", max_features=100).fit(corpora()[0]),
        _param("max_features", 10), r"stored vocabulary has 100 features, more than "
                                    r"max_features=10"),
    "bad max_features parameter": (lambda: CharNgramView(max_features=5).fit(corpora()[0]),
                                   _param("max_features", 0), r"max_features must be None or "
                                                              r"an int >= 1, got 0"),
    "hstack columns unsorted": (_hstack30, _set("columns", lambda a: a[::-1].copy()),
                                r"'columns' must be strictly increasing"),
    "hstack columns repeated": (_hstack30, _set("columns", lambda a: np.sort(np.r_[a[:-1], a[0]])),
                                r"'columns' must be strictly increasing"),
    "hstack column out of range": (_hstack30, _set("columns", lambda a: a + 10**6),
                                   r"columns.*must lie in"),
    "hstack negative column": (_hstack30, _set("columns", lambda a: a - a[1]),
                               r"columns.*must lie in"),
    "hstack columns float": (_hstack30, _set("columns", lambda a: a.astype(np.float64)),
                             r"columns.*int"),
    "hstack columns over max_features": (_hstack30, _param("max_features", 29),
                                         r"'columns' has 30 entries, more than max_features=29"),
    "hstack columns missing": (_hstack30, _drop("columns"), r"'columns' is missing"),
    "hstack columns without max_features": (_hstack30, _param("max_features", None),
                                            r"'columns' is stored but max_features is None"),
}


@pytest.mark.parametrize("case", list(VIEW_EDITS))
def test_inconsistent_view_refused(tmp_path, case):
    make, edit, match = VIEW_EDITS[case]
    view = make()
    with pytest.raises(ModelFormatError, match=match):
        type(view).load(_edit(tmp_path, view, edit))


def test_inconsistent_reranker_refused(tmp_path):
    train, dev, _ = nbest_lists()
    est = PerceptronReranker(n_epochs=1).fit(train, dev)
    cases = {
        "coef_ wrong length": (_set("coef_", lambda a: a[:-1]), "coef_.*shape"),
        "selected column out of range": (_set("features_.columns", lambda a: a + 10**7),
                                         "columns.*must lie in"),
        "nested view of another class": (
            lambda meta, arrays: meta["extra"]["features_"]["extra"]["view_"].update(
                {"class": "SuffixView"}), "'SuffixView'; expected one of \\['JointView'\\]"),
        "nested view key out of range": (_set("features_.view_.keys", lambda a: a * 10**6),
                                         "keys.*must lie in"),
    }
    for edit, match in cases.values():
        with pytest.raises(ModelFormatError, match=match):
            PerceptronReranker.load(_edit(tmp_path, est, edit))


def _none(name):
    """Mark the optional array ``name`` as absent (as save() does for None)."""
    def edit(meta, arrays):
        del arrays[name]
        meta["extra"]["none"].append(name)
    return edit


CCA_RERANKER_EDITS = {
    "x_weights_ wrong shape": (_set("x_weights_", lambda a: a[:-1]), "x_weights_.*shape"),
    "y_weights_ int": (_set("y_weights_", lambda a: a.astype(np.int64)), "y_weights_.*float"),
    "eigenvalues_ NaN": (_set("eigenvalues_", lambda a: a * np.nan), "eigenvalues_.*NaN"),
    "w_ not finite": (_extra("w_", {"__float__": "inf"}), "w_ must be a finite float"),
    "n_components_ zero": (_extra("n_components_", 0), "n_components_"),
    "output view keys out of range": (_set("output_view_.keys", lambda a: a * 10**6),
                                      "keys.*must lie in"),
    "input view of another class": (
        lambda meta, arrays: meta["extra"]["input_view_"].update({"class": "NoSuchView"}),
        "input_view_.*'NoSuchView'"),
}


@pytest.mark.parametrize("case", list(CCA_RERANKER_EDITS))
@pytest.mark.parametrize("cls", CCA_RERANKERS, ids=lambda c: c.__name__)
def test_inconsistent_cca_reranker_refused(tmp_path, cls, case):
    edit, match = CCA_RERANKER_EDITS[case]
    with pytest.raises(ModelFormatError, match=match):
        cls.load(_edit(tmp_path, fitted_cca(cls), edit))


SPARSE_CCA_EDITS = {
    "x_weights_ wrong shape": (_set("x_weights_", lambda a: a[:-1]), "x_weights_.*shape"),
    "y_weights_ 1-d": (_set("y_weights_", lambda a: a.ravel()), "y_weights_.*2-d"),
    "weights not float": (_set("x_weights_", lambda a: a.astype(np.int64)), "x_weights_.*float"),
    "weights complex": (_set("y_weights_", lambda a: a.astype(complex)), "y_weights_.*float"),
    "correlations_ NaN": (_set("correlations_", lambda a: a * np.nan), "correlations_.*NaN"),
    "residual_norms_ inf": (_set("residual_norms_", lambda a: a + np.inf), "residual_norms_.*inf"),
    "mean of the wrong length": (_set("x_mean_", lambda a: a[:-1]), "x_mean_.*shape"),
    "mean missing although centred": (_none("y_mean_"), "y_mean_.*present.*center=True"),
    "centring switched off": (_param("center", False), "x_mean_.*absent.*center=False"),
    "center not a bool": (_param("center", "yes"), "center must be True or False"),
    "too many components": (_extra("n_components_", 99), "n_components_ = 99 exceeds"),
    "n_features_in_ wrong": (_extra("n_features_in_", 7), "n_features_in_ = 7"),
    "n_merged_features_ > d1": (_extra("n_merged_features_", 10**6), "n_merged_features_"),
    "unknown solver_": (_extra("solver_", "magic"), "solver_.*one of"),
    "tau_ out of range": (_extra("tau_", 2.0), "tau_.*finite float"),
    "error_estimate_ a string": (_extra("error_estimate_", "small"), "error_estimate_"),
    "rank_ negative": (_extra("rank_", -1), "rank_.*int >= 0"),
    "metadata value missing": (lambda meta, arrays: meta["extra"].pop("solver_reason_"),
                               "solver_reason_.*missing"),
    "array missing": (_drop("eigenvalues_"), "eigenvalues_.*missing"),
    "bad solver parameter": (_param("solver", "magic"), "solver"),
    "unknown parameter": (_param("beam", 3), "unexpected keyword|parameters"),
}


@pytest.mark.parametrize("case", list(SPARSE_CCA_EDITS))
def test_inconsistent_sparse_cca_refused(tmp_path, case):
    edit, match = SPARSE_CCA_EDITS[case]
    with pytest.raises(ModelFormatError, match=match):
        SparseCCA.load(_edit(tmp_path, fitted("SparseCCA"), edit))


def _dup_tags(meta, arrays):
    tags = unpack_strings(arrays, "tags")
    arrays.update(pack_strings("tags", [tags[0]] + tags[:-1]))


def _stretch_first_candidate(a):
    a = a.copy()
    a[1] += 1  # still non-decreasing, but candidate 0 is one token longer than its sentence
    return a


NBEST_EDITS = {
    "tag id out of range": (_set("tag_ids", lambda a: a + 100), "tag_ids.*must lie in"),
    "tag ids float": (_set("tag_ids", lambda a: a.astype(float)), "tag_ids.*int"),
    "word id negative": (_set("word_ids", lambda a: a - 10**6), "word_ids.*must lie in"),
    "gold tag out of range": (_set("gold_tag_ids", lambda a: a + 1000),
                              "gold_tag_ids.*must lie in"),
    "candidate offsets past the data": (_set("cand_offsets", lambda a: a * 2), "cand_offsets"),
    "candidate longer than its sentence": (_set("cand_offsets", _stretch_first_candidate),
                                           "length of its sentence"),
    "sentence offsets decreasing": (_set("sent_offsets", lambda a: a[::-1].copy()),
                                    "sent_offsets"),
    "sentence offsets too short": (_set("sent_offsets", lambda a: a[:-1]), "sent_offsets"),
    "corpus offsets past the data": (_set("corpus_offsets", lambda a: a + 1), "corpus_offsets"),
    "scores wrong length": (_set("scores", lambda a: a[:-1]), "scores.*shape"),
    "unknown mask not bool": (_set("unknown", lambda a: a.astype(np.float64)), "unknown.*bool"),
    "unknown mask wrong length": (_set("unknown", lambda a: a[:-1]), "unknown.*shape"),
    "duplicate tags": (_dup_tags, "distinct"),
    "bad UTF-8": (_set("corpus_words.utf8", lambda a: np.full_like(a, 0xFF)), "UTF-8"),
    "flag not a bool": (_extra("has_gold", "yes"), "has_gold.*bool"),
    "gold without its vocabulary": (_extra("has_corpus_tags", False), "corpus_tags"),
    "gold array missing": (_drop("gold_tag_ids"), "gold_tag_ids.*missing"),
    "unknown parameter": (_param("k", 5), "no parameters"),
}


@pytest.mark.parametrize("case", list(NBEST_EDITS))
def test_inconsistent_nbest_list_refused(tmp_path, case):
    edit, match = NBEST_EDITS[case]
    with pytest.raises(ModelFormatError, match=match):
        NBestList.load(_edit(tmp_path, nbest_lists()[2], edit))


# -- the file format: save_model_file / load_model_file ----------------------------------------

def _save(tmp_path, **kw):
    arrays = {"w": np.arange(6.0).reshape(2, 3), "names": np.array(["a", "bb", "ccc"])}
    return save_model_file(tmp_path / "m.npz", "Thing", {"k": 3, "tau": 0.5}, arrays, **kw)


def test_model_file_round_trip(tmp_path):
    p = _save(tmp_path, extra={"w_": 1.5})
    meta, arrays = load_model_file(p, "Thing")
    assert meta["params"] == {"k": 3, "tau": 0.5} and meta["extra"] == {"w_": 1.5}
    np.testing.assert_array_equal(arrays["w"], np.arange(6.0).reshape(2, 3))
    assert arrays["names"].tolist() == ["a", "bb", "ccc"]


def test_model_file_refuses_overwrite(tmp_path):
    p = _save(tmp_path)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        _save(tmp_path)
    _save(tmp_path, overwrite=True)
    assert p.exists()


@pytest.mark.parametrize("overwrite", ["no", "False", "0", 0, 1, None, [0], np.int64(1)])
def test_model_file_overwrite_must_be_a_bool(tmp_path, overwrite):
    # any truthy value replaced the file: 'no' meant yes (every model's save: below)
    p = _save(tmp_path)
    before = p.read_bytes()
    with pytest.raises(TypeError, match=r"^overwrite must be True or False, got "):
        _save(tmp_path, overwrite=overwrite)
    assert p.read_bytes() == before
    _save(tmp_path, overwrite=np.True_)  # NumPy's bool is a bool


def test_model_file_of_another_class(tmp_path):
    p = _save(tmp_path)
    with pytest.raises(ModelFormatError, match="holds a 'Thing', not a 'Other'"):
        load_model_file(p, "Other")


def test_model_file_of_a_newer_version(tmp_path):
    meta = {"format": "sparsecca", "format_version": 99, "class": "Thing",
            "library_version": "9.0", "params": {}, "extra": {}}
    p = tmp_path / "new.npz"
    np.savez(p, __sparsecca_meta__=np.frombuffer(json.dumps(meta).encode(), np.uint8))
    with pytest.raises(ModelFormatError, match="format version 99 is newer"):
        load_model_file(p, "Thing")


@pytest.mark.parametrize("write", [
    lambda p: p.write_bytes(pickle.dumps({"a": np.ones(3)})),  # a pickle renamed
    lambda p: np.savez(p, __sparsecca_meta__=np.array([{"x": 1}], dtype=object)),
], ids=["pickle", "object-array-npz"])
def test_model_file_not_ours(tmp_path, write):
    p = tmp_path / "evil.npz"
    write(p)
    with pytest.raises(ModelFormatError, match="not a sparsecca model file"):
        load_model_file(p, "Thing")


@pytest.mark.parametrize("cut, match", [(10, "m.npz: corrupted or truncated"),
                                        (100, "m.npz: corrupted or truncated"),
                                        (0.5, "m.npz"),
                                        (-20, "m.npz: corrupted or truncated")])
def test_truncated_model_file_refused_and_closed(tmp_path, cut, match):
    # refused naming the file; np.load(path) left the file open when the archive turned out
    # truncated
    p = _save(tmp_path)
    raw = p.read_bytes()
    n = int(len(raw) * cut) if isinstance(cut, float) else cut
    p.write_bytes(raw[:n])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ModelFormatError, match=match):
            load_model_file(p, "Thing")
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_corrupted_model_file_refused(tmp_path):
    p = _save(tmp_path)
    raw = bytearray(p.read_bytes())
    for i in range(60, len(raw) - 60, 7):
        raw[i] ^= 0xFF
    p.write_bytes(bytes(raw))
    with pytest.raises(ModelFormatError):
        load_model_file(p, "Thing")


def test_object_arrays_not_saved(tmp_path):
    with pytest.raises(TypeError, match="dtype object"):
        save_model_file(tmp_path / "x.npz", "T", {}, {"a": np.array([{}], dtype=object)})


# -- helpers against references ---------------------------------------------------------------

@pytest.mark.parametrize("value", [
    (1, 2, 3), [1.5, (2, "a")], np.float32, np.dtype("<f4"), {"a": (1,), "b": None},
    float("inf"), float("-inf"), np.int64(7), True, "x", None,
])
def test_json_round_trip(value):
    enc = to_json(value)
    back = from_json(json.loads(json.dumps(enc)))
    assert back == value and type(back) is type(value if not isinstance(value, np.generic)
                                                 else value.item())


def test_json_nan_and_refusals():
    assert np.isnan(from_json(json.loads(json.dumps(to_json(float("nan"))))))
    assert to_json(np.random.default_rng(0)) is None
    with pytest.raises(TypeError, match="cannot store 'obj'"):
        to_json(object(), "obj")


@pytest.mark.parametrize("items", [[], [""], ["a", "", "ü€😀", "tab\there", "nul\x00", "\n"]])
def test_pack_strings_round_trip(items):
    assert unpack_strings(pack_strings("s", items), "s") == items


@pytest.mark.parametrize("seed", range(6))
def test_check_csr_rows_against_loop(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 4, size=8)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = rng.integers(0, 5, size=int(indptr[-1]))
    ok = all(np.all(np.diff(indices[a:b]) > 0) for a, b in zip(indptr[:-1], indptr[1:]))
    nonempty_ok = ok and bool(np.all(lengths > 0))
    for nonempty, expect in ((False, ok), (True, nonempty_ok)):
        if expect:
            check_csr_rows("x", indptr, indices, nonempty=nonempty)
        else:
            with pytest.raises(ModelFormatError, match="'x'"):
                check_csr_rows("x", indptr, indices, nonempty=nonempty)


def test_public_load_model_dispatches(tmp_path):
    """``sparsecca.load_model`` is the public spelling of the class-dispatching loader."""
    import sparsecca
    from sparsecca.data import synthetic_corpus
    from sparsecca.tagging import TrigramHMM

    corpus = synthetic_corpus(n_sentences=200, random_state=0)
    model = TrigramHMM().fit(corpus)
    back = sparsecca.load_model(model.save(tmp_path / "hmm.npz"))
    assert isinstance(back, TrigramHMM)
    np.testing.assert_array_equal(back.tag(corpus).tag_ids, model.tag(corpus).tag_ids)
