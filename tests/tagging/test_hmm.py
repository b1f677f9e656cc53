"""TrigramHMM against a slow pure-Python TnT reference, brute force, and NLTK's TnT."""

import itertools
import math
import re
import warnings
from collections import Counter, defaultdict

import numpy as np
import pytest

from sparsecca.data import TaggedCorpus, synthetic_corpus
from sparsecca.tagging import NBestList, NotFittedError, TrigramHMM, clone

BOS, EOS = object(), object()
GRID = (0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0)


class ReferenceTnT:
    """The model spelled out with dicts and loops (slow, obviously-correct reference)."""

    def __init__(self, sents, rare=10, L=10, Lp=4, alpha=0.0, ratio=1e-3, lowercase=True):
        self.rare, self.L, self.Lp, self.alpha, self.ratio = rare, L, Lp, alpha, ratio
        self.lowercase = lowercase
        uni, big, tri = Counter(), Counter(), Counter()
        wt, wc, tc = defaultdict(Counter), Counter(), Counter()
        for sent in sents:
            hist = [BOS, BOS] + [t for _, t in sent] + [EOS]
            for m in range(2, len(hist)):
                uni[hist[m]] += 1
                big[hist[m - 1], hist[m]] += 1
                tri[hist[m - 2], hist[m - 1], hist[m]] += 1
            for w, t in sent:
                wt[w][t] += 1
                wc[w] += 1
                tc[t] += 1
        ctx, bctx = Counter(), Counter()
        for (a, b, _), c in tri.items():
            ctx[a, b] += c
        for (a, _), c in big.items():
            bctx[a] += c
        N = sum(uni.values())
        mass = [0.0, 0.0, 0.0]
        for (a, b, t), c in tri.items():
            cs = [(uni[t] - 1) / (N - 1) if N > 1 else 0.0,
                  (big[b, t] - 1) / (bctx[b] - 1) if bctx[b] > 1 else 0.0,
                  (c - 1) / (ctx[a, b] - 1) if ctx[a, b] > 1 else 0.0]
            winners = [i for i in range(3) if cs[i] == max(cs)]
            for i in winners:
                mass[i] += c / len(winners)
        lam = [max(x / sum(mass), 1e-6) for x in mass]
        self.lam = [x / sum(lam) for x in lam]
        self.uni, self.big, self.tri, self.ctx, self.bctx, self.N = uni, big, tri, ctx, bctx, N
        self.wt, self.wc, self.tc = wt, wc, tc
        total = sum(tc.values())
        self.prior = {t: c / total for t, c in tc.items()}
        p = list(self.prior.values())
        mean = sum(p) / len(p)
        self.theta = math.sqrt(sum((x - mean) ** 2 for x in p) / (len(p) - 1))
        self.suffix = self._table(prefix=False)
        self.prefix = self._table(prefix=True)

    @staticmethod
    def keys(word, L, prefix):
        form = re.sub("[0-9]", "0", word)
        if prefix:
            form = form[::-1]
        cap = "U" if word[:1].isupper() else "L"
        return [cap + form[len(form) - m:] for m in range(1, min(len(form), L) + 1)]

    def _table(self, prefix):
        table = defaultdict(Counter)
        for w, c in self.wc.items():
            if c <= self.rare:
                for key in self.keys(w, self.Lp if prefix else self.L, prefix):
                    table[key].update(self.wt[w])
        return table

    def trans(self, t2, t1, t):
        l1, l2, l3 = self.lam
        p = l1 * self.uni[t] / self.N
        if self.bctx[t1]:
            p += l2 * self.big[t1, t] / self.bctx[t1]
        if self.ctx[t2, t1]:
            return math.log(p + l3 * self.tri[t2, t1, t] / self.ctx[t2, t1])
        return math.log(p / (l1 + l2))

    def posterior(self, word, table, L, prefix):
        P = dict(self.prior)
        for key in self.keys(word, L, prefix):
            if key not in table:
                break
            tot = sum(table[key].values())
            P = {t: (table[key][t] / tot + self.theta * P[t]) / (1 + self.theta) for t in P}
        return P

    def unknown_posterior(self, word):
        P = self.posterior(word, self.suffix, self.L, False)
        if self.alpha:
            Q = self.posterior(word, self.prefix, self.Lp, True)
            PQ = {t: P[t] * (Q[t] / self.prior[t]) ** self.alpha for t in P}
            z = sum(PQ.values())
            if z > 0:  # experts sharing no tag: the suffix expert alone
                P = {t: v / z for t, v in PQ.items()}
        return P

    def candidates(self, word, position):
        if word not in self.wc and self.lowercase and position == 0 and word[:1].isupper() \
                and word.lower() in self.wc:
            word = word.lower()
        if word in self.wc:
            return {t: math.log(c / self.tc[t]) for t, c in self.wt[word].items()}
        P = self.unknown_posterior(word)
        top = max(P.values())
        return {t: math.log(p / self.prior[t]) for t, p in P.items()
                if p >= self.ratio * top and p > 0}

    def all_sequences(self, words):
        cands = [list(self.candidates(w, i).items()) for i, w in enumerate(words)]
        out = []
        for combo in itertools.product(*cands):
            seq = [t for t, _ in combo]
            hist = [BOS, BOS] + seq + [EOS]
            s = sum(e for _, e in combo)
            s += sum(self.trans(hist[m - 2], hist[m - 1], hist[m]) for m in range(2, len(hist)))
            out.append((s, tuple(seq)))
        out.sort(key=lambda x: -x[0])
        return out


@pytest.fixture(scope="module")
def corpus():
    return synthetic_corpus(500, random_state=0)


@pytest.fixture(scope="module")
def train(corpus):
    return corpus[:300]


@pytest.fixture(scope="module")
def heldout(corpus):
    return corpus[300:]


def _test_sentences(train, heldout):
    """Short sentences mixing known words, unknown words, digits and capitals."""
    sents = [list(heldout[i][0][:n]) for i, n in zip(range(16), [1, 2, 3, 4] * 4)]
    known_lower = next(w for w in train.words.items if w.islower() and len(w) > 3)
    sents += [
        [],
        ["zzqx"],
        [known_lower.capitalize(), "qwerty", "."],  # sentence-initial lower-case fallback
        ["Xylophonic", "4471", known_lower],
        ["漢字", "Ωμέγα"],  # characters never seen
    ]
    return sents


@pytest.mark.parametrize("alpha, lowercase", [(0.0, True), (0.5, True), (0.0, False)])
@pytest.mark.parametrize("k", [1, 4, 100000])
def test_nbest_equals_reference_brute_force(train, heldout, alpha, lowercase, k):
    model = TrigramHMM(prefix_weight=alpha, lowercase_fallback=lowercase).fit(train)
    ref = ReferenceTnT(train.to_sentences(), alpha=alpha, lowercase=lowercase)
    assert model.lambdas_ == pytest.approx(ref.lam, rel=1e-12)
    assert model.theta_ == pytest.approx(ref.theta, rel=1e-12)
    sents = _test_sentences(train, heldout)
    nb = model.nbest(TaggedCorpus.from_words(sents), k=k)
    assert isinstance(nb, NBestList) and nb.losses is None
    for i, words in enumerate(sents):
        expected = ref.all_sequences(words)
        n = int(nb.n_candidates[i])
        assert n == min(k, len(expected))
        got = [tuple(nb.candidate(i, j)) for j in range(n)]
        scores = nb.scores[nb.sent_offsets[i]:nb.sent_offsets[i + 1]]
        assert len(set(got)) == n
        # the scores are the k best of all sequences (ties may reorder equal-score sequences)
        np.testing.assert_allclose(scores, [s for s, _ in expected[:n]], rtol=1e-10, atol=1e-10)
        ref_score = dict((q, s) for s, q in expected)
        np.testing.assert_allclose(scores, [ref_score[q] for q in got], rtol=1e-10, atol=1e-10)
        unknown = nb.unknown[nb.corpus.offsets[i]:nb.corpus.offsets[i + 1]]
        assert unknown.tolist() == [w not in ref.wc for w in words]


def test_tag_is_the_best_candidate(train, heldout):
    model = TrigramHMM().fit(train)
    test = heldout
    tagged = model.tag(test)
    nb = model.nbest(test, k=3)
    assert tagged.tags is model.tags_
    best = nb.best()
    assert [t for _, t in tagged] == [t for _, t in best]
    assert nb.top1_accuracy() == pytest.approx(model.score(test))
    # the model must actually learn something on this easy corpus
    assert nb.top1_accuracy() > 0.85


def prefix_marked_corpus(n_sentences=300, seed=0):
    """Words whose tag is marked by a prefix (suffixes are random): prefixes should win."""
    rng = np.random.default_rng(seed)
    letters = list("abdefghijlmnoprstuvwxyz")
    marks = {"A": ("ka", "ko"), "B": ("pu", "pi"), "C": ("mo", "me"), "D": ("", "")}
    sents = []
    for _ in range(n_sentences):
        sent = []
        for _ in range(int(rng.integers(3, 12))):
            t = "ABCD"[int(rng.integers(4))]
            stem = "".join(rng.choice(letters, size=int(rng.integers(3, 6))))
            # rare types: a fresh stem most of the time
            sent.append((marks[t][int(rng.integers(2))] + stem, t))
        sents.append(sent)
    return TaggedCorpus.from_sentences(sents)


@pytest.mark.parametrize("which", ["synthetic", "prefix-marked"])
def test_prefix_weight_selection_matches_reference(corpus, which):
    """'auto' picks the grid weight maximising held-out unknown-word log-likelihood."""
    data = corpus if which == "synthetic" else prefix_marked_corpus()
    model = TrigramHMM().fit(data)
    sents = data.to_sentences()
    fit_part = [s for i, s in enumerate(sents) if i % 10 != 9]
    held = [s for i, s in enumerate(sents) if i % 10 == 9]
    ref_fit = ReferenceTnT(fit_part)
    # (a gold tag absent from the fitting part is unpredictable under any weight: left out)
    unseen = [(w, t) for s in held for w, t in s if w not in ref_fit.wc and t in ref_fit.prior]
    assert len(unseen) >= 50
    lls = []
    for alpha in GRID:
        ref_fit.alpha = alpha
        lls.append(np.mean([math.log(ref_fit.unknown_posterior(w)[t]) for w, t in unseen]))
    assert model.prefix_weight_ == GRID[int(np.argmax(lls))]
    if which == "prefix-marked":
        assert model.prefix_weight_ >= 0.5


def test_suffix_model_matches_nltk_tnt(train):
    """Brants' suffix model (capitalisation split, successive abstraction) equals NLTK's."""
    tnt_mod = pytest.importorskip("nltk.tag.tnt")
    tnt = tnt_mod.TnT()
    tnt.train(train.to_sentences())
    model = TrigramHMM(prefix_weight=0.0).fit(train)
    assert model.lambdas_ == pytest.approx([tnt._lambda1, tnt._lambda2, tnt._lambda3],
                                           rel=1e-9)
    words = ["zzqx", "Blorfing", "shaimiously", "Kalomeness", "q", "pruboucher"]
    words = [w for w in words if w not in model.words_]
    P = model._unknown_posteriors(words) / model.tag_prior_
    for r, w in enumerate(words):
        ref = tnt._unknown_tag_scores(w)
        ours = {model.tags_[t]: P[r, t] for t in range(len(model.tags_))}
        assert set(ref) == set(ours)
        for t in ref:
            assert ours[t] == pytest.approx(ref[t], rel=1e-9)


def test_experts_sharing_no_tag_keep_the_suffix_expert():
    """Balanced tag counts give theta = 0, so "qa" has P(t | suffix a) = [1, 0] and
    P(t | prefix q) = [0, 1]: the product is 0 for every tag (it gave 0/0 = NaN and then
    'every token needs at least one candidate tag'); the suffix expert is used alone."""
    train = TaggedCorpus.from_sentences([[("pa", "A"), ("qb", "B")]])
    model = TrigramHMM(prefix_weight=1.0, max_suffix_length=1, max_prefix_length=1).fit(train)
    assert model.theta_ == 0.0
    A, B = model.tags_.ids(["A", "B"])
    words = [["qa"], ["pb"], ["xa"], ["qa", "pb"]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        P = model._unknown_posteriors(["qa", "pb", "xa"])
        nb = model.nbest(TaggedCorpus.from_words(words), k=3)
        tagged = model.tag(TaggedCorpus.from_words(words))
    # "xa": unknown prefix x leaves the prefix expert at the prior, ratio 1: the product [1, 0]
    expected = np.zeros((3, 2))
    expected[[0, 1, 2], [A, B, A]] = 1.0
    np.testing.assert_array_equal(P, expected)
    assert [list(t) for _, t in tagged] == [["A"], ["B"], ["A"], ["A", "B"]]
    ref = ReferenceTnT(train.to_sentences(), L=1, Lp=1, alpha=1.0)
    for i, sent in enumerate(words):
        exp = ref.all_sequences(sent)
        assert nb.n_candidates[i] == len(exp) == 1
        np.testing.assert_allclose(nb.scores[nb.sent_offsets[i]], exp[0][0], rtol=1e-12)
        assert tuple(nb.candidate(i, 0)) == exp[0][1]


def test_combine_falls_back_row_by_row():
    """Hand-computed products of experts, prior [1/2, 1/2]: row 0 has support, row 1 none."""
    from sparsecca.tagging._hmm import _combine

    P_s = np.array([[0.5, 0.5], [1.0, 0.0]])
    P_p = np.array([[0.2, 0.8], [0.0, 1.0]])
    prior = np.array([0.5, 0.5])
    # alpha 1: 0.5 * [0.4, 1.6] = [0.2, 0.8]; alpha 1/2: [sqrt .4, sqrt 1.6] ∝ [1, 2]
    np.testing.assert_allclose(_combine(P_s, P_p, prior, 1.0), [[0.2, 0.8], [1.0, 0.0]],
                               rtol=1e-15)
    np.testing.assert_allclose(_combine(P_s, P_p, prior, 0.5), [[1 / 3, 2 / 3], [1.0, 0.0]],
                               rtol=1e-15)


def test_edge_sentences(train):
    """What the HMM adds to test_taggers_common.test_edge_sentences: the empty sentence is
    scored log P(EOS | BOS, BOS); a long sentence's scores descend and add up."""
    model = TrigramHMM().fit(train)
    nb = model.nbest(TaggedCorpus.from_words([[], ["x"], []]), k=5)
    ref = ReferenceTnT(train.to_sentences())
    assert nb.scores[0] == pytest.approx(ref.trans(BOS, BOS, EOS))
    # a 1,000-token sentence: finite, descending scores
    words = [train.words[w] for w in train.word_ids[:999]] + ["neverseenword"]
    nb = model.nbest(TaggedCorpus.from_words([words]), k=10)
    assert nb.n_candidates[0] == 10
    assert np.all(np.isfinite(nb.scores)) and nb.scores[0] < -1000
    assert np.all(np.diff(nb.scores) <= 0)


def test_gold_of_another_tag_column_refused(train):
    """score/nbest on gold tags mostly outside the model's tagset: losses would be
    meaningless (a UPOS corpus scored 0.039 by an XPOS tagger, a disjoint one 0.0)."""
    model = TrigramHMM().fit(train)
    renamed = [f"U-{t}" for t in train.tags]
    keep_one = train.tags.items[int(np.bincount(train.tag_ids).argmax())]
    renamed[train.tags.id(keep_one)] = keep_one  # one shared tag, as '.' in UPOS and XPOS
    other = train.with_tags(train.tag_ids, renamed)
    for call in (lambda: model.score(other), lambda: model.nbest(other, k=2)):
        with pytest.raises(ValueError, match=r"^corpus gold tags: \d+\.\d% of the tag tokens "
                                             r"\(\d+ of \d+\) are not in the tagset of this "
                                             r"TrigramHMM"):
            call()
    assert 0 < model.score(train) <= 1


def test_not_fitted_and_params(train):
    model = TrigramHMM(rare_threshold=5)
    with pytest.raises(NotFittedError, match="not fitted yet; call fit"):
        model.tag(train)
    with pytest.raises(NotFittedError):
        model.nbest(train)
    assert isinstance(NotFittedError("x"), (ValueError, AttributeError))
    params = model.get_params()
    assert params["rare_threshold"] == 5
    twin = clone(model)
    assert twin is not model and twin.get_params() == params
    assert not hasattr(twin, "tags_")
    model.fit(train)
    assert model.words_ is not None and len(model.tags_) == 12
    assert model.fit(train) is model
    with pytest.raises(ValueError, match="invalid parameter 'bogus'"):
        model.set_params(bogus=1)


def test_failed_refit_keeps_the_previous_fit(train, heldout, monkeypatch):
    # an interrupted refit left the new corpus's tags_ and words_ beside the old tables
    model = TrigramHMM().fit(train)
    tagged = model.tag(heldout)
    before = dict(vars(model))

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(TrigramHMM, "_fit_lexicon", interrupted)
    with pytest.raises(KeyboardInterrupt):
        model.fit(heldout)
    assert vars(model).keys() == before.keys()
    for name, value in before.items():
        assert getattr(model, name) is value, name
    assert model.tag(heldout) == tagged


def test_fit_on_slice_compacts_vocabularies(train):
    part = train[:20]
    model = TrigramHMM().fit(part)
    used_words = {w for s, _ in part for w in s}
    assert set(model.words_) == used_words
    assert set(model.tags_) == {t for _, ts in part for t in ts}


@pytest.mark.parametrize("params, exc, match", [
    (dict(rare_threshold=0), ValueError, r"rare_threshold must be an int >= 1, got 0"),
    (dict(rare_threshold=2.5), TypeError, r"rare_threshold must be an int"),
    (dict(max_prefix_length=-2), ValueError, r"max_prefix_length must be an int >= 0, got -2"),
    (dict(prefix_weight=1.5), ValueError, r"prefix_weight must be 'auto' or in \[0, 1\], got 1.5"),
    (dict(prefix_weight="big"), TypeError, r"prefix_weight must be 'auto' or a float"),
    (dict(unknown_ratio=1.0), ValueError, r"unknown_ratio must be in \[0, 1\), got 1.0"),
    (dict(unknown_ratio=-0.1), ValueError, r"unknown_ratio must be in \[0, 1\), got -0.1"),
    (dict(lowercase_fallback="no"), TypeError,
     r"lowercase_fallback must be True or False, got 'no'"),
    (dict(lowercase_fallback=None), TypeError,
     r"lowercase_fallback must be True or False, got None"),
])
def test_bad_params(train, params, exc, match):
    with pytest.raises(exc, match=match):
        TrigramHMM(**params).fit(train)


def test_bad_input(train):
    model = TrigramHMM().fit(train)
    with pytest.raises(TypeError, match="corpus must be a TaggedCorpus, got list"):
        TrigramHMM().fit([[("a", "B")]])
    with pytest.raises(ValueError, match="at least one token, got an empty corpus"):
        TrigramHMM().fit(TaggedCorpus.from_sentences([[], []]))
    with pytest.raises(TypeError, match="k must be an int >= 1, got 2.0"):
        model.nbest(train, k=2.0)
    with pytest.raises(TypeError, match="corpus must be a TaggedCorpus, got list"):
        model.tag([["a"]])


@pytest.mark.parametrize("parallel", [False, True])
def test_parallel_flag_gives_same_output(train, heldout, parallel):
    test = heldout
    a = TrigramHMM(parallel=parallel).fit(train).nbest(test, k=5)
    b = TrigramHMM(parallel=not parallel).fit(train).nbest(test, k=5)
    assert a == b
