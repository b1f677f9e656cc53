"""Model files of every saveable class: exact round trips, and refusal of damaged files.

Round trips compare the loaded model's outputs with the original's (bit for bit).  Damaged
files are made four ways: flipped bytes, truncation, a foreign class in the metadata and a
pickle renamed to .npz; hand-edited *consistent* archives (valid zip, valid JSON) with
inconsistent arrays check that validation catches what would otherwise reach a kernel.
"""

import functools
import json
import pickle

import numpy as np
import pytest

from sparsecca._persist import (
    ModelFormatError,
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
    JointView,
    SuffixView,
    TagNgramView,
    WordView,
)
from sparsecca.features import NotFittedError as ViewNotFittedError
from sparsecca.rerank import (
    BoostingReranker,
    JointFeatures,
    PerceptronReranker,
    RegularizedBoostingReranker,
)
from sparsecca.tagging import NotFittedError, TrigramHMM, jackknife_nbest

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
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_view_round_trip(tmp_path, name):
    train, test = corpora()
    view = VIEWS[name]().fit(train)
    back = type(view).load(view.save(tmp_path / name))
    assert back.get_params() == view.get_params()
    assert back.n_features_ == view.n_features_
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


BASELINES = {
    "boosting": lambda: BoostingReranker(n_rounds=60),
    "regularized": lambda: RegularizedBoostingReranker(features="ngram", C=(1e-3, 1e-4),
                                                       n_rounds=60),
    "perceptron": lambda: PerceptronReranker(n_epochs=2, random_state=3),
}


@pytest.mark.parametrize("name", list(BASELINES))
def test_baseline_reranker_round_trip(tmp_path, name):
    train, dev, test = nbest_lists()
    est = BASELINES[name]().fit(train, dev)
    back = load_model(est.save(tmp_path / name))  # dispatch on the stored class name
    assert type(back) is type(est)
    np.testing.assert_array_equal(back.decision_function(test), est.decision_function(test))
    np.testing.assert_array_equal(back.rerank(test), est.rerank(test))
    assert back.features_.feature_names_ == est.features_.feature_names_


def _cca_classes():
    try:
        from sparsecca.rerank import _cca
    except ImportError as exc:
        return [pytest.param(None, marks=pytest.mark.skip(
            reason=f"CCA rerankers not importable yet (sparsecca.rerank._cca: {exc})"))]
    out = []
    for name in ("GenerativeReranker", "SoftenedReranker", "DiscriminativeReranker"):
        cls = getattr(_cca, name)
        marks = () if hasattr(cls, "save") else pytest.mark.skip(
            reason=f"{name} has no save/load yet (sparsecca/rerank/_cca.py)")
        out.append(pytest.param(cls, marks=marks, id=name))
    return out


@pytest.mark.parametrize("cls", _cca_classes())
def test_cca_reranker_round_trip(tmp_path, cls):
    train, dev, test = nbest_lists()
    kw = {"lam": 0.5} if cls.__name__ != "GenerativeReranker" else {}
    est = cls(n_components=5, tau=0.5, **kw).fit(train, dev)
    back = cls.load(est.save(tmp_path / "cca"))
    np.testing.assert_array_equal(back.decision_function(test), est.decision_function(test))
    np.testing.assert_array_equal(back.projection_scores(test), est.projection_scores(test))
    assert back.tuned_params() == est.tuned_params()


def _sparse_cca():
    try:
        from sparsecca.linalg import SparseCCA
    except ImportError as exc:
        return pytest.param(None, marks=pytest.mark.skip(
            reason=f"sparsecca.linalg.SparseCCA not importable yet ({exc})"))
    if not hasattr(SparseCCA, "save"):
        return pytest.param(None, marks=pytest.mark.skip(
            reason="SparseCCA has no save/load yet (sparsecca/linalg)"))
    return SparseCCA


@pytest.mark.parametrize("cls", [_sparse_cca()])
def test_sparse_cca_round_trip(tmp_path, cls):
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = sp.random(200, 40, density=0.1, format="csr", random_state=1)
    Y = sp.random(200, 30, density=0.1, format="csr", random_state=2) + X[:, :30] * 0.5
    est = cls(n_components=3, tau=0.3, random_state=0).fit(X, Y)
    back = cls.load(est.save(tmp_path / "scca"))
    Xt = sp.random(20, 40, density=0.2, format="csr", random_state=rng.integers(100))
    Yt = sp.random(20, 30, density=0.2, format="csr", random_state=rng.integers(100))
    for a, b in zip(back.transform(Xt, Yt), est.transform(Xt, Yt)):
        np.testing.assert_array_equal(a, b)


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


# -- damaged files ----------------------------------------------------------------------------

def _models():
    train = corpora()[0]
    return {"hmm": (fitted_hmm(), TrigramHMM),
            "suffix": (SuffixView().fit(train), SuffixView),
            "joint": (JointView(kind="ngram").fit(train), JointView)}


@pytest.mark.parametrize("which", ["hmm", "suffix", "joint"])
def test_corrupted_bytes_refused(tmp_path, which):
    model, cls = _models()[which]
    path = model.save(tmp_path / "m")
    raw = bytearray(path.read_bytes())
    for i in range(len(raw) // 4, 3 * len(raw) // 4, 11):
        raw[i] ^= 0x5A
    path.write_bytes(bytes(raw))
    with pytest.raises(ModelFormatError, match="m.npz"):
        cls.load(path)


@pytest.mark.parametrize("which", ["hmm", "suffix", "joint"])
@pytest.mark.parametrize("frac", [0.0, 0.01, 0.3, 0.7, 0.999])
def test_truncated_file_refused(tmp_path, which, frac):
    model, cls = _models()[which]
    path = model.save(tmp_path / "m")
    raw = path.read_bytes()
    path.write_bytes(raw[:int(len(raw) * frac)])
    with pytest.raises(ModelFormatError, match="m.npz: (corrupted or truncated|not a sparsecca)"):
        cls.load(path)


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


def test_other_class_refused(tmp_path):
    path = SuffixView().fit(corpora()[0]).save(tmp_path / "v")
    with pytest.raises(ModelFormatError, match="holds a 'SuffixView', not a 'TrigramHMM'"):
        TrigramHMM.load(path)
    with pytest.raises(ModelFormatError, match="not a 'CharNgramView'"):
        CharNgramView.load(path)


def test_pickle_and_npy_renamed_refused(tmp_path):
    p = tmp_path / "evil.npz"
    p.write_bytes(pickle.dumps({"lambdas": np.ones(3)}))
    with pytest.raises(ModelFormatError, match="not a sparsecca model file"):
        TrigramHMM.load(p)
    q = tmp_path / "arr.npz"
    with open(q, "wb") as fh:
        np.save(fh, np.arange(4))
    with pytest.raises(ModelFormatError, match="not an .npz archive"):
        TrigramHMM.load(q)
    with pytest.raises(FileNotFoundError, match="no such model file"):
        TrigramHMM.load(tmp_path / "missing.npz")


def test_newer_format_refused(tmp_path):
    path = SuffixView().fit(corpora()[0]).save(tmp_path / "v")
    meta, arrays = load_model_file(path, "SuffixView")
    p2 = tmp_path / "new.npz"
    blob = dict(meta, format_version=2)
    np.savez(p2, __sparsecca_meta__=np.frombuffer(json.dumps(blob).encode(), np.uint8),
             **arrays)
    with pytest.raises(ModelFormatError, match="format version 2 is newer"):
        SuffixView.load(p2)


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
