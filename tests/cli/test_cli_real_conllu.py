"""Every verb on a small excerpt of a real treebank (UD French-Sequoia from ../shared/data).

The data set of conftest.py is written by sparsecca's own CoNLL-U writer; these files are a
treebank as distributed: ``# global.columns`` / ``sent_id`` / ``text`` comments, multi-word
tokens (``au`` = ``à le``), MISC annotations and ``_`` in the XPOS column.  Everything runs
through the real entry point in a subprocess.
"""

import gzip
import json

import numpy as np
import pytest
from cli_helpers import run_cli

from sparsecca._persist import read_model_meta
from sparsecca.data import read_conllu
from sparsecca.rerank import GenerativeReranker
from sparsecca.tagging import TrigramHMM

pytestmark = pytest.mark.shared_data


def _head(src, n):
    """The first ``n`` sentences of a CoNLL-U file, as text (blocks kept verbatim)."""
    blocks = [b for b in src.read_text(encoding="utf-8").split("\n\n") if b.strip()]
    assert len(blocks) >= n
    return "\n\n".join(blocks[:n]) + "\n\n"


@pytest.fixture(scope="module")
def real(shared_data, tmp_path_factory):
    """fr-sequoia-small/: train (300 sentences), dev (60, gzipped) and test (60) excerpts."""
    src = shared_data / "fr-sequoia"
    d = tmp_path_factory.mktemp("real") / "fr-sequoia-small"
    d.mkdir()
    (d / "train.conllu").write_text(_head(src / "train.conllu", 300), encoding="utf-8")
    (d / "dev.conllu.gz").write_bytes(gzip.compress(_head(src / "dev.conllu", 60).encode()))
    (d / "test.conllu").write_text(_head(src / "test.conllu", 60), encoding="utf-8")
    test_text = (d / "test.conllu").read_text(encoding="utf-8")
    assert any(line.split("\t")[0].count("-") == 1 for line in test_text.split("\n")), \
        "the excerpt should hold a multi-word token"
    return d


@pytest.fixture(scope="module")
def real_tagger(real):
    out = real.parent / "hmm.npz"
    r = run_cli("train-tagger", real / "train.conllu", "-o", out)  # --tags upos by default
    assert r.returncode == 0, r.stderr
    assert "TrigramHMM: 300 sentences" in r.stderr
    return out


def test_train_tagger_and_tag(real, real_tagger, tmp_path):
    hmm = TrigramHMM.load(real_tagger)
    assert hmm.nbest(read_conllu(real / "test.conllu"), k=3) == \
        TrigramHMM().fit(read_conllu(real / "train.conllu")).nbest(
            read_conllu(real / "test.conllu"), k=3)
    out = tmp_path / "tagged.conllu"
    r = run_cli("tag", real_tagger, real / "test.conllu", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "accuracy against the input's upos column" in r.stderr
    assert read_conllu(out, tags="upos") == hmm.tag(read_conllu(real / "test.conllu", tags=None))
    src = (real / "test.conllu").read_text(encoding="utf-8").split("\n")
    dst = out.read_text(encoding="utf-8").split("\n")
    assert len(src) == len(dst)
    for a, b in zip(src, dst):  # comments, multi-word ranges and every other column kept
        ca, cb = a.split("\t"), b.split("\t")
        if len(ca) == 10 and ca[0].isdigit():
            assert ca[:3] + ca[4:] == cb[:3] + cb[4:]
        else:
            assert a == b


def read_sent_ids(path):
    return [line.split("=", 1)[1].strip() for line in path.read_text(encoding="utf-8").split("\n")
            if line.startswith("# sent_id")]


def test_tag_kbest(real, real_tagger):
    r = run_cli("tag", real_tagger, real / "test.conllu", "-k", 3, "-q")
    assert r.returncode == 0 and r.stderr == ""
    nb = TrigramHMM.load(real_tagger).nbest(read_conllu(real / "test.conllu", tags=None), k=3)
    blocks = r.stdout.strip("\n").split("\n\n")
    assert len(blocks) == nb.n_total
    first = blocks[0].split("\n")
    assert first[0] == "# sent_id = " + read_sent_ids(real / "test.conllu")[0]
    assert first[1] == "# candidate = 1" and first[2].startswith("# score = -")
    assert any(line.startswith("# global.columns") for line in first)  # other comments follow


def test_train_reranker_and_rerank_cca(real, real_tagger, tmp_path):
    model = tmp_path / "gen"
    r = run_cli("train-reranker", "--tagger", real_tagger, real / "train.conllu",
                real / "dev.conllu.gz", "--model", "generative", "-k", 4, "--folds", 3,
                "-o", model)
    assert r.returncode == 0, r.stderr
    assert "Generative: dev accuracy" in r.stderr
    path = model.with_name("gen.npz")
    assert read_model_meta(path)["info"]["k"] == 4
    est = GenerativeReranker.load(path)
    out = tmp_path / "rr.conllu"
    r = run_cli("rerank", "--tagger", real_tagger, "--reranker", path, real / "test.conllu",
                "-o", out)
    assert r.returncode == 0, r.stderr
    assert "reranked 60 sentences" in r.stderr
    nb = TrigramHMM.load(real_tagger).nbest(read_conllu(real / "test.conllu", tags=None), k=4)
    assert read_conllu(out, tags="upos") == nb.best(est.rerank(nb))
    r = run_cli("train-reranker", "--tagger", real_tagger, real / "train.conllu",
                real / "dev.conllu.gz", "--model", "generative", "-k", 4, "--folds", 3,
                "-o", model)
    assert r.returncode == 2 and r.stderr.strip().endswith("gen.npz exists; pass --force to "
                                                           "overwrite it")


def test_experiment(real, tmp_path):
    out = tmp_path / "rep"
    args = ["experiment", real, "-k", 3, "--folds", 3, "--models",
            "softened,perceptron-sufx", "--out", out, "-q"]
    # Sequoia has no XPOS: refused with file:line before any training
    r = run_cli(*args, "--tags", "xpos")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "train.conllu:" in r.stderr and "xpos" in r.stderr
    r = run_cli(*args, "--tags", "upos")
    assert r.returncode == 0, r.stderr
    assert "fr-sequoia-small dev" in r.stdout and "| Softened-Disc |" in r.stdout
    rep = json.loads((out / "report.json").read_text())
    assert set(rep["table2"]) == {"Baseline", "Oracle", "Softened-Disc", "Perceptron (Sufx)"}
    acc = {row: v["fr-sequoia-small"]["test"] for row, v in rep["table2"].items()}
    assert 0.5 < acc["Baseline"] <= acc["Oracle"] <= 1.0
    assert np.isfinite(acc["Softened-Disc"])
    # the Figure-1 plot of the softened model's (tau, lambda) grid
    assert (out / "fr-sequoia-small_grid.png").read_bytes()[:4] == b"\x89PNG"
