"""The tag column a command works on against the columns its models were trained on, and
the candidate count of ``rerank``."""

import pytest
from cli_helpers import run_cli


@pytest.fixture(scope="module")
def upos_reranker(dataset, tagger):
    out = dataset["root"] / "tc-perc-upos.npz"
    r = run_cli("train-reranker", "--tagger", tagger, dataset["train"], dataset["dev"],
                "--model", "perceptron-sufx", "-k", 3, "--folds", 2, "-o", out, "-q")
    assert r.returncode == 0, r.stderr
    return out


def _refused(r, pattern):
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert __import__("re").search(pattern, lines[0]), lines[0]


@pytest.mark.parametrize("k", [1, 0])
def test_rerank_needs_two_candidates(dataset, tagger, upos_reranker, k):
    # -k 1 used to run a no-op and report "reranked"; the rule of train-reranker
    r = run_cli("rerank", "--tagger", tagger, "--reranker", upos_reranker, dataset["test"],
                "-k", k)
    _refused(r, rf"^sparsecca rerank: error: -k must be >= 2 \(reranking needs candidates\), "
                rf"got {k}")
