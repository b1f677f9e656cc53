"""MEMMTagger: objective and gradient against slow references, exact decoding against
brute-force enumeration, n-best scores, persistence, bad parameters (what every tagger
shares: test_taggers_common.py)."""

import itertools
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from sparsecca._persist import ModelFormatError
from sparsecca.data import TaggedCorpus, synthetic_corpus
from sparsecca.kernels import sequence_logprob
from sparsecca.tagging import (
    MEMMTagger,
    TrigramHMM,
)


@pytest.fixture(scope="module")
def data():
    corpus = synthetic_corpus(400, random_state=0)
    return corpus[:300], corpus[300:]


@pytest.fixture(scope="module")
def model(data):
    return MEMMTagger(maxiter=40).fit(data[0])


def tiny_corpus(seed, n_sent=12, n_tags=3, vocab=7, max_len=6):
    """Random sentences over a few tags; each word mostly keeps one tag."""
    rng = np.random.default_rng(seed)
    home = rng.integers(n_tags, size=vocab)
    sents = []
    for _ in range(n_sent):
        words = rng.integers(vocab, size=int(rng.integers(1, max_len + 1)))
        tags = np.where(rng.random(words.size) < 0.7, home[words], rng.integers(n_tags,
                                                                                size=words.size))
        sents.append([(f"w{w}", f"T{t}") for w, t in zip(words, tags)])
    return TaggedCorpus.from_sentences(sents)


def random_weights(model, seed, scale=0.7):
    """Replace the fitted weights by random ones (every weight matters)."""
    rng = np.random.default_rng(seed)
    T = len(model.tags_)
    model.emit_weights_ = rng.normal(scale=scale, size=model.emit_weights_.size)
    model.bigram_weights_[:T + 1, :T] = rng.normal(scale=scale, size=(T + 1, T))
    model.tri_weights_ = rng.normal(scale=scale, size=model.tri_weights_.size)
    return model


# -- slow references: one token at a time, straight from the definition -----------------------

def ref_logq(model, X, j, t2, t1):
    """log q(. | t2, t1, x, j) over all tags, by explicit loops over features and trigrams."""
    T = len(model.tags_)
    S = T + 2
    s = np.zeros(T)
    row = X[j]
    for f, v in zip(row.indices.tolist(), row.data.tolist()):
        for e in range(model.emit_indptr_[f], model.emit_indptr_[f + 1]):
            s[model.emit_tags_[e]] += v * model.emit_weights_[e]
    c = t2 * S + t1
    for t in range(T):
        s[t] += model.bigram_weights_[t1, t]
        for e in range(model.tri_indptr_[c], model.tri_indptr_[c + 1]):
            if model.tri_tags_[e] == t:
                s[t] += model.tri_weights_[e]
    top = s.max()
    return s - (top + np.log(np.sum(np.exp(s - top))))


def ref_sequence_logprob(model, X, a, seq, cache=None):
    """sum_m log q(seq[m] | history) for the sentence starting at token ``a``; ``cache``
    (a dict) keeps the distributions of histories met before."""
    cache = {} if cache is None else cache
    bos = len(model.tags_)
    hist = [bos, bos] + list(seq)
    total = 0.0
    for m in range(len(seq)):
        key = (a + m, hist[m], hist[m + 1])
        if key not in cache:
            cache[key] = ref_logq(model, X, *key)
        total += cache[key][seq[m]]
    return total


def ref_objective(model, X, corpus, lam, theta):
    gold = corpus.tags.mapping_to(model.tags_)[corpus.tag_ids]
    nll = 0.0
    for i in range(corpus.n_sentences):
        a, b = corpus.offsets[i], corpus.offsets[i + 1]
        nll -= ref_sequence_logprob(model, X, a, gold[a:b].tolist())
    return nll + 0.5 * lam * float(theta @ theta)


def brute_force(model, corpus, i):
    """Every sequence of sentence ``i``'s candidate lattice with its log-probability."""
    X = model.features_.transform(corpus)
    co, ct, _ = model._lattice(corpus)
    a, b = corpus.offsets[i], corpus.offsets[i + 1]
    options = [ct[co[j]:co[j + 1]].tolist() for j in range(a, b)]
    cache = {}
    out = [(ref_sequence_logprob(model, X, a, seq, cache), seq)
           for seq in itertools.product(*options)]
    return sorted(out, key=lambda x: -x[0])


def check_against_brute_force(seed, k=50, **params):
    """k-best of a tiny model with random weights equals brute force; returns the count."""
    corpus = tiny_corpus(seed)
    model = random_weights(MEMMTagger(maxiter=3, **params).fit(corpus), seed)
    nb = model.nbest(corpus, k=k)
    checked = 0
    for i in range(corpus.n_sentences):
        want = brute_force(model, corpus, i)[:k]
        lo, hi = nb.sent_offsets[i], nb.sent_offsets[i + 1]
        np.testing.assert_allclose(nb.scores[lo:hi], [s for s, _ in want], rtol=1e-9,
                                   atol=1e-9)
        got = [tuple(nb.candidate(i, r)) for r in range(hi - lo)]
        names = [tuple(model.tags_[t] for t in seq) for _, seq in want]
        assert got == names
        checked += len(want)
    return checked


# -- training objective ----------------------------------------------------------------------

@pytest.mark.parametrize("support", ["observed", "all"])
@pytest.mark.parametrize("seed", [0, 1])
def test_objective_and_gradient(support, seed):
    corpus = tiny_corpus(seed)
    lam = 0.3
    model = MEMMTagger(lam=lam, support=support)
    model._validate_params()
    problem = model._fit_structure(corpus)
    X = model.features_.transform(corpus)
    T = len(model.tags_)
    F = X.shape[1]
    assert problem.n_params == model.emit_tags_.size + (T + 1) * T + model.tri_tags_.size
    if support == "all":
        assert model.emit_tags_.size == F * T
    else:  # the gold (feature, tag) pairs only
        assert model.emit_tags_.size < F * T
    theta = np.random.default_rng(seed).normal(scale=0.5, size=problem.n_params)
    value, grad = problem(theta)
    model._set_weights(problem, theta)
    assert value == pytest.approx(ref_objective(model, X, corpus, lam, theta), rel=1e-12)
    # the gradient equals central differences in every coordinate
    h = 1e-5
    fd = np.empty(theta.size)
    for c in range(theta.size):
        e = np.zeros(theta.size)
        e[c] = h
        fd[c] = (problem(theta + e)[0] - problem(theta - e)[0]) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=0, atol=1e-6 * max(1.0, np.abs(grad).max()))


@pytest.mark.parametrize("support", ["observed", "all"])
def test_objective_is_a_sum_over_pieces(support):
    # the partitioned fit's steps without Dask: the pieces' counts merged give the in-memory
    # structure, and the pieces' loss terms (each on its own features) sum to its objective
    corpus = tiny_corpus(3, n_sent=30)
    own = TaggedCorpus.from_sentences(corpus[10:11].to_sentences())  # its own vocabularies
    pieces = [corpus[:10], own, corpus[11:11], corpus[11:]]
    mem, dist = MEMMTagger(lam=0.3, support=support), MEMMTagger(lam=0.3, support=support)
    reference = mem._fit_structure(corpus)
    counts = [dist._count_partition(p) for p in pieces]
    dist._fit_counts(dist._merge_counts(dist._merge_counts(counts[0], counts[1]),
                                        dist._merge_counts(counts[2], counts[3])))
    train = [dist._training_piece(p) for p in pieces]
    if support == "observed":
        dist._set_pairs(np.unique(np.concatenate([t.pairs for t in train])))
    else:
        assert all(t.pairs is None for t in train)
    for name in ("tags_", "words_", "word_counts_", "lex_indptr_", "lex_tags_", "suffixes_",
                 "suffix_probs_", "emit_indptr_", "emit_tags_", "tri_indptr_", "tri_tags_"):
        assert np.array_equal(getattr(dist, name), getattr(mem, name)), name
    assert dist.features_.vocabulary_ == mem.features_.vocabulary_
    terms = [dist._loss_terms(t) for t in train]
    assert terms[2].F == 0 and terms[1].F < terms[3].F <= reference.terms.F

    def summed(theta):
        parts = [t(theta) for t in terms]
        return sum(v for v, _ in parts), sum(g for _, g in parts)

    problem = dist._penalised(summed)
    theta = np.random.default_rng(3).normal(scale=0.5, size=reference.n_params)
    value, grad = problem(theta)
    ref_value, ref_grad = reference(theta)
    assert value == pytest.approx(ref_value, rel=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-12, atol=1e-12 * np.abs(ref_grad).max())
    mem._set_weights(reference, theta)
    X = mem.features_.transform(corpus)
    assert value == pytest.approx(ref_objective(mem, X, corpus, 0.3, theta), rel=1e-12)


def test_training_decreases_the_objective(data):
    train, _ = data
    a = MEMMTagger(maxiter=5).fit(train)
    b = MEMMTagger(maxiter=30).fit(train)
    assert a.n_iter_ == 5 and not a.converged_
    assert len(b.loss_curve_) == b.n_iter_ and b.loss_ == pytest.approx(b.loss_curve_[-1])
    assert b.loss_ < a.loss_ and np.all(np.diff(b.loss_curve_) <= 1e-9 * abs(b.loss_))
    assert a.n_evals_ >= a.n_iter_
    # the penalty shrinks the weights
    c = MEMMTagger(maxiter=30, lam=100.0).fit(train)
    assert np.abs(c.emit_weights_).sum() < np.abs(b.emit_weights_).sum()


def test_templates():
    corpus = tiny_corpus(3)
    m1 = MEMMTagger(maxiter=2, templates="model1").fit(corpus)
    m2 = MEMMTagger(maxiter=2).fit(corpus)
    assert (m1.features_.affix, m1.features_.min_count) == (3, 2)
    assert (m2.features_.affix, m2.features_.min_count) == (4, 1)
    assert m2.features_.window == m1.features_.window == 2
    assert MEMMTagger(maxiter=2, min_count=3).fit(corpus).features_.min_count == 3


# -- decoding ----------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kbest_equals_brute_force_all_tags(seed):
    """Every tag is a candidate of every token: the k-best lists are the k best of all
    n_tags ** n sequences."""
    n = check_against_brute_force(seed, k=50, dict_min_count=10**6, unknown_ratio=0.0)
    assert n > 100


@pytest.mark.parametrize("seed", [0, 4])
def test_kbest_equals_brute_force_pruned(seed):
    """Within a pruned lattice, still exact (the normalisers sum over all tags)."""
    check_against_brute_force(seed, k=7, dict_min_count=2)


def test_accuracy_and_nbest(data, model):
    train, test = data
    hmm = TrigramHMM().fit(train)
    assert model.score(test) > hmm.score(test) - 0.02
    nb = model.nbest(test, k=5)
    assert np.all(nb.n_candidates >= 1) and np.all(nb.n_candidates <= 5)
    for i in range(nb.n_sentences):
        s = nb.scores[nb.sent_offsets[i]:nb.sent_offsets[i + 1]]
        assert np.all(np.diff(s) <= 0)
    assert np.all(nb.scores <= 0)  # log-probabilities
    tagged = model.tag(test)
    assert np.array_equal(nb.best().tag_ids, tagged.tag_ids)
    # every listed score is the kernel's sequence log-probability of that sequence
    X, co, ct, _ = model._prepare(test)
    emit, extra = model._emission_scores(X, test.offsets, co, ct)
    norm_offsets, norm = extra["norm_offsets"], extra["norm"]
    S = len(model.tags_) + 2
    seq_sent = np.repeat(np.arange(test.n_sentences), nb.n_candidates)
    again = sequence_logprob(
        test.offsets, co, ct, emit, S, model.bigram_weights_, np.zeros(S * S),
        model.tri_indptr_, model.tri_tags_, model.tri_weights_, S - 2, S - 1,
        seq_sent=seq_sent, seq_tags=nb.tag_ids, seq_offsets=nb.cand_offsets,
        trigrams="additive", norm_offsets=norm_offsets, norm=norm)
    np.testing.assert_allclose(nb.scores, again, rtol=1e-10)
    # ... and the slow reference's, for a few sentences
    for i in (0, 7):
        r = nb.sent_offsets[i] + 1
        seq = nb.tag_ids[nb.cand_offsets[r]:nb.cand_offsets[r + 1]].tolist()
        assert nb.scores[r] == pytest.approx(ref_sequence_logprob(model, X, test.offsets[i],
                                                                  seq), rel=1e-10)
    assert nb.oracle_accuracy() >= nb.top1_accuracy()
    assert nb.unknown.any()


def test_support_all(data, model):
    train, test = data
    full = MEMMTagger(maxiter=40, support="all").fit(train)
    assert full.emit_weights_.size == full.features_.n_features_ * len(full.tags_)
    assert full.score(test) > model.score(test) - 0.02


def test_decoding_without_jit():
    """The decoding path with numba disabled (plain Python kernels) is still exact."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {here!r})
        import numba
        assert numba.config.DISABLE_JIT
        from test_memm import check_against_brute_force
        assert check_against_brute_force(5, k=20, dict_min_count=10**6, unknown_ratio=0.0)
        print("NOJIT-OK")
    """)
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert "NOJIT-OK" in res.stdout


# -- persistence -------------------------------------------------------------------------------

def test_save_load_round_trip(data, model, tmp_path):
    _, test = data
    path = model.save(tmp_path / "memm")
    again = MEMMTagger.load(path)
    a, b = model.nbest(test, k=4), again.nbest(test, k=4)
    assert np.array_equal(a.tag_ids, b.tag_ids) and np.array_equal(a.scores, b.scores)
    assert again.loss_curve_ == model.loss_curve_ and again.n_iter_ == model.n_iter_
    assert again.get_params() == model.get_params()


@pytest.mark.parametrize("change, match", [
    # an EOS-ending trigram would make EOS a tag of the layout
    (lambda a, T: a.__setitem__("tri_tags", np.full_like(a["tri_tags"], T + 1)),
     r"array 'tri_tags' must lie in \[0, "),
    (lambda a, T: a.__setitem__("emit_weights", a["emit_weights"][:-1]),
     "array 'emit_weights' must have shape"),
    (lambda a, T: a.__setitem__("bigram_weights", np.full((T + 2, T + 2), np.nan)),
     "array 'bigram_weights' contains NaN"),
    (lambda a, T: a.pop("lex_tags"), "array 'lex_tags' is missing"),
])
def test_tampered_state(model, change, match):
    params, arrays, extra = model.get_state()
    arrays = dict(arrays)
    change(arrays, len(model.tags_))
    with pytest.raises(ModelFormatError, match=match):
        MEMMTagger.from_state(params, arrays, extra)


# -- bad parameters (the edge cases and checks every tagger shares: test_taggers_common.py) ---

@pytest.mark.parametrize("params, exc, match", [
    (dict(lam=-1.0), ValueError, r"^lam must be a finite number >= 0, got -1.0$"),
    (dict(lam=float("nan")), ValueError, r"^lam must be a finite number >= 0, got nan$"),
    (dict(lam="1"), TypeError, r"^lam must be a real number, got '1'$"),
    (dict(maxiter=0), ValueError, r"^maxiter must be an int >= 1, got 0$"),
    (dict(maxiter=10.0), TypeError, r"^maxiter must be an int >= 1, got 10.0$"),
    (dict(tol=0.0), ValueError, r"^tol must be a finite number > 0, got 0.0$"),
    (dict(templates="model3"), ValueError,
     r"^templates must be one of \('model1', 'model2'\), got 'model3'$"),
    (dict(support="seen"), ValueError,
     r"^support must be one of \('observed', 'all'\), got 'seen'$"),
])
def test_bad_params(params, exc, match):
    with pytest.raises(exc, match=match):
        MEMMTagger(**params).fit(tiny_corpus(0))


@pytest.mark.shared_data
def test_en_wsj_subset_accuracy(shared_data):
    """A smaller real-data check (training on all of en-wsj train takes minutes): the first
    2,000 training sentences, 50 L-BFGS iterations, the first 600 test sentences."""
    from sparsecca.data import read_conllu

    train = read_conllu(shared_data / "en-wsj" / "train.conllu", tags="xpos")[:2000]
    test = read_conllu(shared_data / "en-wsj" / "test.conllu", tags="xpos")[:600]
    model = MEMMTagger(maxiter=50).fit(train)
    nb = model.nbest(test, k=10)
    # measured: 96.16% 1-best, 85.2% on unknown words (14% of these tokens), 98.56% 10-best
    # oracle (trained on all of train, 100 iterations: 97.60%, 86.9%, 99.33%)
    assert nb.top1_accuracy() >= 0.955
    assert nb.top1_accuracy("unknown") >= 0.83
    assert nb.oracle_accuracy() >= 0.98
