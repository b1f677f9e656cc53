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
    _refused(r, rf"^sparsecca rerank: error: -k must be an int >= 2 \(reranking needs "
                rf"candidates\), got {k}")


@pytest.mark.parametrize("stored", [1, 2.5, "ten", True, None])
def test_rerank_refuses_a_bad_stored_k(dataset, tagger, upos_reranker, stored, tmp_path):
    # what train-reranker records is an int >= 2; a file written elsewhere may hold anything
    from sparsecca._persist import load_model

    info = {"tags": "upos"} if stored is None else {"tags": "upos", "k": stored}
    path = load_model(upos_reranker).save(tmp_path / "r.npz", info=info)
    r = run_cli("rerank", "--tagger", tagger, "--reranker", path, dataset["test"])
    if stored is None:   # no k recorded: the default 10
        assert r.returncode == 0, r.stderr
        return
    _refused(r, rf"^sparsecca rerank: error: {path}: stored k must be an int >= 2 \(reranking "
                rf"needs candidates\), got {stored!r}; pass -k$")
    assert run_cli("rerank", "--tagger", tagger, "--reranker", path, dataset["test"],
                   "-k", 3).returncode == 0


@pytest.fixture(scope="module")
def unrecorded(dataset, xpos_tagger, upos_reranker):
    """The XPOS tagger and the UPOS reranker saved through the API: no tag column recorded,
    as in files written before the command recorded it."""
    from sparsecca._persist import load_model

    out = {}
    for name, path in (("tagger", xpos_tagger), ("reranker", upos_reranker)):
        out[name] = load_model(path).save(dataset["root"] / f"tc-unrecorded-{name}.npz",
                                          overwrite=True)
    return out


def test_models_and_tags_must_agree(dataset, tagger, xpos_tagger, upos_reranker, tmp_path):
    test, train, dev = dataset["test"], dataset["train"], dataset["dev"]
    # the XPOS tags went into the UPOS column, exit 0
    _refused(run_cli("tag", xpos_tagger, test, "--tags", "upos"),
             rf"^sparsecca tag: error: {xpos_tagger} was trained on xpos; --tags upos$")
    _refused(run_cli("train-reranker", "--tagger", xpos_tagger, train, dev, "--model",
                     "perceptron-sufx", "-k", 3, "--folds", 2, "--tags", "upos",
                     "-o", tmp_path / "r"),
             rf"^sparsecca train-reranker: error: {xpos_tagger} was trained on xpos; "
             rf"--tags upos$")
    _refused(run_cli("rerank", "--tagger", xpos_tagger, "--reranker", upos_reranker, test),
             rf"^sparsecca rerank: error: {xpos_tagger} was trained on xpos, {upos_reranker} "
             rf"on upos; use models trained on the same tag column$")
    _refused(run_cli("rerank", "--tagger", tagger, "--reranker", upos_reranker, test,
                     "--tags", "xpos"),
             rf"^sparsecca rerank: error: {tagger} was trained on upos; --tags xpos$")
    assert not (tmp_path / "r.npz").exists()


def test_unrecorded_columns_fall_back_to_the_tagsets(dataset, tagger, xpos_tagger,
                                                     unrecorded, tmp_path):
    test, train, dev = dataset["test"], dataset["train"], dataset["dev"]
    hmm = unrecorded["tagger"]
    _refused(run_cli("tag", hmm, test),  # --tags defaults to upos
             rf"^sparsecca tag: error: {test}: the upos column: 100.0% of the tag tokens "
             rf"\(\d+ of \d+\) are not in the tagset of the tagger {hmm} .*given tags "
             rf"\['[A-Z]+', .*fitted tagset \['x-")
    r = run_cli("tag", hmm, test, "--tags", "xpos", "-q")
    assert r.returncode == 0, r.stderr
    _refused(run_cli("train-reranker", "--tagger", hmm, train, dev, "--model",
                     "perceptron-sufx", "-k", 3, "--folds", 2, "-o", tmp_path / "r"),
             rf"^sparsecca train-reranker: error: {train}: the upos column: 100.0% of the "
             rf"tag tokens")
    # the reranker's own tagset, against candidates of the XPOS tagger
    _refused(run_cli("rerank", "--tagger", xpos_tagger, "--reranker", unrecorded["reranker"],
                     test),
             r"^sparsecca rerank: error: tag sequences: 100.0% of the tag tokens .* not in the "
             r"tagset the JointView was fitted on")
    r = run_cli("rerank", "--tagger", tagger, "--reranker", unrecorded["reranker"], test, "-q")
    assert r.returncode == 0, r.stderr
