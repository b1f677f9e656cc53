import math
import re

import numpy as np
import pytest

from sparsecca.evaluate import accuracy_report, mcnemar, paired_bootstrap, token_accuracy


def test_token_accuracy_and_split():
    gold = np.array([0, 1, 2, 3, 4])
    pred = np.array([0, 1, 0, 3, 0])
    unk = np.array([False, False, True, False, True])
    assert token_accuracy(pred, gold) == pytest.approx(0.6)
    r = accuracy_report(pred, gold, unk)
    assert r["known_accuracy"] == 1.0 and r["unknown_accuracy"] == 0.0 and r["n_unknown"] == 2
    assert math.isnan(token_accuracy(pred, gold, np.zeros(5, bool)))


def _binom_two_sided(k, n):
    """Exact two-sided binomial p-value at p=1/2, from the pmf (independent of scipy)."""
    pmf = [math.comb(n, i) / 2**n for i in range(n + 1)]
    return min(1.0, sum(p for p in pmf if p <= pmf[k] * (1 + 1e-7)))


@pytest.mark.parametrize("seed", range(4))
def test_mcnemar_matches_binomial(seed):
    rng = np.random.default_rng(seed)
    a = rng.random(300) < 0.9
    b = rng.random(300) < 0.93
    r = mcnemar(a, b)
    assert r["n01"] == np.sum(~a & b) and r["n10"] == np.sum(a & ~b)
    assert r["p_value"] == pytest.approx(_binom_two_sided(r["n01"], r["n01"] + r["n10"]),
                                         rel=1e-9)


def test_bootstrap_matches_slow_loop():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 30, size=80)
    off = np.concatenate([[0], np.cumsum(lengths)])
    a = rng.random(off[-1]) < 0.9
    b = a.copy()
    flip = rng.random(off[-1]) < 0.05
    b[flip] = True
    r = paired_bootstrap(a, b, off, n_resamples=500, random_state=3)
    # slow reference with the same resampling indices
    gen = np.random.default_rng(3)
    idx = gen.integers(0, 80, size=(500, 80))
    worse = 0
    for row in idx:
        ga = sum(a[off[i]:off[i + 1]].sum() for i in row)
        gb = sum(b[off[i]:off[i + 1]].sum() for i in row)
        worse += (gb - ga) <= 0
    assert r["p_value"] == pytest.approx((worse + 1) / 501)
    assert r["gain"] == pytest.approx(b.mean() - a.mean())
    assert r["p_value"] < 0.05  # B is strictly better on a real share of tokens


def test_bootstrap_leaves_out_resamples_of_empty_sentences():
    # 2 sentences with tokens (B better on one, worse on the other) and 3 empty ones: a
    # resample of empty sentences only has no accuracy (7.8% of them), once counted as a
    # gain for B; the p-value is over the others, against all 5^5 resamples enumerated
    import itertools

    a = np.array([1, 0, 1, 1], bool)
    b = np.array([1, 1, 1, 0], bool)
    off = [0, 2, 4, 4, 4, 4]
    d, n_tok = np.array([1, -1, 0, 0, 0]), np.array([2, 2, 0, 0, 0])
    rows = [list(r) for r in itertools.product(range(5), repeat=5) if n_tok[list(r)].sum()]
    exact = np.mean([d[r].sum() <= 0 for r in rows])
    r = paired_bootstrap(a, b, off, n_resamples=100_000, random_state=0)
    assert r["p_value"] == pytest.approx(exact, abs=0.005)  # ~3.5 standard errors


def test_bootstrap_identical_systems_not_significant():
    a = np.ones(100, bool)
    r = paired_bootstrap(a, a, [0, 50, 100], n_resamples=200)
    assert r["p_value"] == 1.0 and r["gain"] == 0.0


@pytest.mark.parametrize(("call", "pattern"), [
    (lambda: token_accuracy([1, 2], [1]), "pred has 2 tokens, gold has 1"),
    (lambda: paired_bootstrap([True], [True], [0, 1], n_resamples=5),
     "n_resamples must be an int >= 100, got 5"),
    (lambda: paired_bootstrap([True, False], [True, True], [0, 1]),
     "end at n_tokens=2"),
    (lambda: mcnemar([True], [True, False]), "correct_a has 1 tokens, correct_b has 2"),
    # an accuracy of no tokens was NaN
    (lambda: token_accuracy([], []), "^pred and gold are empty: no tokens to evaluate$"),
    (lambda: accuracy_report([], [], []), "^pred and gold are empty"),
    # non-boolean correctness was cast (2 -> True) and the test ran on it
    (lambda: paired_bootstrap([2, 0, 1], [1, 1, 1], [0, 1, 3]),
     r"^correct_a must be boolean \(True/False or 0/1\), got 2 at position 0$"),
    (lambda: paired_bootstrap([1, 0, 1], [1.0, 0.5, 1.0], [0, 1, 3]),
     r"^correct_b must be boolean \(True/False or 0/1\), got 0.5 at position 1$"),
    (lambda: mcnemar([1, 0, -1], [1, 1, 1]), r"^correct_a must be boolean .* got -1 at position 2"),
    (lambda: mcnemar([1, 0], [1, np.nan]), r"^correct_b must be boolean .* got nan at position 1"),
    (lambda: token_accuracy([1, 2, 3], [1, 2, 0], [0, 2, 1]),
     r"^mask must be boolean \(True/False or 0/1\), got 2 at position 1$"),
    (lambda: accuracy_report([1, 2], [1, 2], [3, 0]), r"^unknown must be boolean .* got 3"),
    # one sentence resampled is always itself: the "p-value" only said who won on it
    (lambda: paired_bootstrap([True, False, True], [True, True, True], [0, 3]),
     "^paired_bootstrap needs at least 2 non-empty sentences to resample, got 1$"),
    (lambda: paired_bootstrap([True, False], [True, True], [0, 0, 2, 2]),
     "needs at least 2 non-empty sentences to resample, got 1$"),
    (lambda: paired_bootstrap([], [], [0]), "needs at least 2 non-empty sentences"),
])
def test_bad_input(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


@pytest.mark.parametrize("call", [
    lambda: mcnemar(["a", "b"], [True, True]),
    lambda: paired_bootstrap([True, True], np.array([None, None]), [0, 1, 2]),
])
def test_non_numeric_correctness_refused(call):
    with pytest.raises(TypeError, match=r"must be a boolean array \(True/False or 0/1\), got "
                                        r"dtype"):
        call()


OK3 = [True, False, True]
BAD_TYPED = [
    # tag strings never equal tag ids: the accuracy was 0.0
    (lambda: token_accuracy(["NOUN", "VERB"], [0, 1]), TypeError,
     r"^pred must be an array of integers, got dtype <U4$"),
    (lambda: token_accuracy([0, 1], ["NOUN", "VERB"]), TypeError,
     r"^gold must be an array of integers, got dtype <U4$"),
    # float and object ids compared after rounding: 0.5, with 0.9 == 0 false and 1.0 == 1 true
    (lambda: token_accuracy([0.9, 1.0], [0, 1]), TypeError,
     r"^pred must be an array of integers, got dtype float64$"),
    (lambda: token_accuracy([None, 1], [0, 1]), TypeError,
     r"^pred must be an array of integers, got dtype object$"),
    (lambda: token_accuracy([True, False], [1, 0]), TypeError,
     r"^pred must be an array of integers, got dtype bool$"),
    (lambda: accuracy_report([0, 1], [0.0, 1.0], [True, False]), TypeError,
     r"^gold must be an array of integers, got dtype float64$"),
    # no tokens is no evidence, but the p-value was 1.0
    (lambda: mcnemar([], []), ValueError,
     r"^correct_a and correct_b are empty: no tokens to compare$"),
    # float offsets were truncated: 3.9 moved a boundary to 3
    (lambda: paired_bootstrap(OK3, OK3, [0, 1.9, 3]), TypeError,
     r"^offsets must be an array of integers, got dtype float64$"),
    (lambda: paired_bootstrap(OK3, OK3, [0.0, 1.0, 3.0]), TypeError,
     r"^offsets must be an array of integers, got dtype float64$"),
    (lambda: paired_bootstrap(OK3, OK3, np.array([0, 1, 3], dtype=object)), TypeError,
     r"^offsets must be an array of integers, got dtype object$"),
    # numpy's own SeedSequence errors, naming no argument
    (lambda: paired_bootstrap(OK3, OK3, [0, 1, 3], random_state="x"), TypeError,
     r"^random_state must be None, an int >= 0, a numpy Generator or RandomState, got 'x'$"),
    (lambda: paired_bootstrap(OK3, OK3, [0, 1, 3], random_state=1.5), TypeError,
     r"^random_state must be None, an int >= 0, a numpy Generator or RandomState, got 1.5$"),
    (lambda: paired_bootstrap(OK3, OK3, [0, 1, 3], random_state=-1), ValueError,
     r"^random_state must be None, an int >= 0, a numpy Generator or RandomState, got -1$"),
]


@pytest.mark.parametrize(("call", "exc", "pattern"), BAD_TYPED)
def test_bad_kinds_refused(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


def test_int_ids_of_any_width_and_seeds_are_accepted():
    assert token_accuracy(np.array([0, 1, 2], np.uint8), np.array([0, 1, 1], np.int64)) \
        == pytest.approx(2 / 3)
    a, b = np.array(OK3 * 4), np.ones(12, bool)
    off = np.arange(0, 13, 3, dtype=np.int32)
    r = paired_bootstrap(a, b, off, n_resamples=200, random_state=np.int64(5))
    assert r == paired_bootstrap(a, b, off.astype(np.uint64), n_resamples=200, random_state=5)
    assert r == paired_bootstrap(a, b, off, n_resamples=200,
                                 random_state=np.random.default_rng(5))


def test_zero_one_correctness_is_accepted_as_boolean():
    a = np.array([1, 0, 1, 1, 0, 1])
    b = np.array([1.0, 1.0, 1.0, 1.0, 0.0, 1.0])
    off = [0, 2, 4, 6]
    assert mcnemar(a, b) == mcnemar(a.astype(bool), b.astype(bool))
    assert paired_bootstrap(a, b, off, n_resamples=200) == \
        paired_bootstrap(a.astype(bool), b.astype(bool), off, n_resamples=200)
    assert token_accuracy([1, 2, 3], [1, 2, 0], [1, 1, 0]) == 1.0


# -- per-tag scores and the `sparsecca evaluate` verb (issue 37) ---------------------------

def test_per_tag_scores_counts():
    from sparsecca.evaluate import per_tag_scores

    s = per_tag_scores([0, 1, 1, 2, 3], [0, 1, 2, 2, 2], labels=["A", "B", "C", "D"])
    assert s["A"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1,
                      "predicted": 1}
    assert s["C"]["recall"] == 1 / 3 and s["C"]["precision"] == 1.0
    assert s["D"]["support"] == 0 and s["D"]["recall"] != s["D"]["recall"]  # NaN
    with pytest.raises(ValueError, match="labels"):
        per_tag_scores([0, 5], [0, 1], labels=["A", "B"])


def test_evaluate_verb(tmp_path):
    import subprocess
    import sys

    from sparsecca.data import synthetic_corpus, train_test_split, write_conllu
    from sparsecca.tagging import TrigramHMM

    train, test = train_test_split(synthetic_corpus(200, random_state=1), test_size=40,
                                   random_state=0)
    write_conllu(train, tmp_path / "train.conllu")
    write_conllu(test, tmp_path / "gold.conllu")
    hmm = TrigramHMM().fit(train)
    write_conllu(hmm.tag(test), tmp_path / "pred.conllu")
    base = TrigramHMM().fit(train[:20])  # a weaker tagger
    write_conllu(base.tag(test), tmp_path / "pred2.conllu")

    def run(*args):
        return subprocess.run([sys.executable, "-m", "sparsecca", "evaluate", *map(str, args)],
                              capture_output=True, text=True, timeout=300, cwd=tmp_path)

    r = run("gold.conllu", "pred.conllu", "--train", "train.conllu", "--against",
            "pred2.conllu", "--resamples", 200)
    assert r.returncode == 0, r.stderr
    acc = hmm.nbest(test, k=1).top1_accuracy()
    assert f"pred.conllu: accuracy {100 * acc:.2f}%" in r.stdout
    assert "known words" in r.stdout and "unknown words" in r.stdout
    assert "precision" in r.stdout and "McNemar p =" in r.stdout and "bootstrap" in r.stdout
    # a prediction that lost a token: exit 2, one line naming the file and the line
    lines = (tmp_path / "pred.conllu").read_text(encoding="utf-8").split("\n")
    del lines[3]
    (tmp_path / "short.conllu").write_text("\n".join(lines), encoding="utf-8")
    r = run("gold.conllu", "short.conllu")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert re.search(r"short\.conllu:[0-9]+: ", r.stderr), r.stderr
