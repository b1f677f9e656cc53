"""Every verb of the ``sparsecca`` command, end to end, against in-process references."""

import gzip
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run_cli

from sparsecca._persist import read_model_meta
from sparsecca.data import read_conllu, read_tokenized
from sparsecca.rerank import PerceptronReranker, SoftenedReranker
from sparsecca.tagging import TrigramHMM

VERBS = ["demo", "experiment", "train-tagger", "tag", "train-reranker", "rerank"]


def parse_blocks(text):
    """CoNLL-U text -> list of (comments dict, token rows) per block."""
    out = []
    for block in text.strip("\n").split("\n\n"):
        comments, rows = {}, []
        for line in block.split("\n"):
            if line.startswith("#"):
                k, _, v = line[1:].partition("=")
                comments.setdefault(k.strip(), v.strip())
            else:
                rows.append(line.split("\t"))
        out.append((comments, rows))
    return out


def test_help_of_every_verb():
    r = run_cli("--help")
    assert r.returncode == 0
    for verb in VERBS:
        assert verb in r.stdout
    for verb in VERBS:
        r = run_cli(verb, "--help")
        assert r.returncode == 0, (verb, r.stderr)
        assert f"usage: sparsecca {verb}" in r.stdout
    assert "# candidate = " in run_cli("tag", "--help").stdout  # the k-best format
    assert run_cli("--version").stdout.startswith("sparsecca ")


def test_console_script_is_the_same_command(tmp_path):
    """The installed ``sparsecca`` script and ``python -m sparsecca`` are one command."""
    exe = Path(sys.executable).with_name("sparsecca")
    if not exe.is_file():
        pytest.skip(f"no console script beside {sys.executable} (package not installed)")
    for args in (["--help"], ["tag", "--help"], ["demo", "--help"]):
        r = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and r.stdout == run_cli(*args).stdout
    r = subprocess.run([str(exe), "tag", str(tmp_path / "no.npz"), str(tmp_path / "x")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f"sparsecca tag: error: {tmp_path / 'no.npz'}: no such file (tagger model)"]


def test_train_tagger_matches_library(dataset, tagger):
    hmm = TrigramHMM.load(tagger)
    ref = TrigramHMM().fit(read_conllu(dataset["train"], tags="upos"))
    test = read_conllu(dataset["test"], tags="upos")
    assert hmm.nbest(test, k=4) == ref.nbest(test, k=4)
    info = read_model_meta(tagger)["info"]
    assert info["tags"] == "upos" and info["train"] == str(dataset["train"])


def test_tag_one_best_keeps_other_columns(dataset, tagger, tmp_path):
    out = tmp_path / "out.conllu"
    r = run_cli("tag", tagger, dataset["test"], "-o", out)
    assert r.returncode == 0, r.stderr
    assert "accuracy against the input's upos column" in r.stderr
    ref = TrigramHMM.load(tagger).tag(read_conllu(dataset["test"], tags=None))
    got = read_conllu(out, tags="upos")
    assert got == ref
    src = dataset["test"].read_text(encoding="utf-8").split("\n")
    dst = out.read_text(encoding="utf-8").split("\n")
    assert len(src) == len(dst)
    for a, b in zip(src, dst):  # only column 4 of token lines may differ
        ca, cb = a.split("\t"), b.split("\t")
        if len(ca) == 10 and ca[0].isdigit():
            assert ca[:3] + ca[4:] == cb[:3] + cb[4:]
        else:
            assert a == b  # comments, ranges, empty nodes, blank lines
    assert "1-2\tmwt" in dst[2] and any(x.startswith("2.1\tghost") for x in dst[:8])


def test_tag_kbest_format(dataset, tagger, tmp_path):
    k = 3
    out = tmp_path / "kbest.conllu.gz"
    r = run_cli("tag", tagger, dataset["test"], "-k", k, "-o", out, "--quiet")
    assert r.returncode == 0 and r.stderr == ""
    text = gzip.decompress(out.read_bytes()).decode("utf-8")
    blocks = parse_blocks(text)
    nb = TrigramHMM.load(tagger).nbest(read_conllu(dataset["test"], tags=None), k=k)
    assert len(blocks) == nb.n_total
    b = 0
    for i in range(nb.n_sentences):
        for j in range(nb.n_candidates[i]):
            comments, rows = blocks[b]
            b += 1
            assert comments["sent_id"] == f"te-{i}"
            assert comments["candidate"] == str(j + 1)
            assert float(comments["score"]) == pytest.approx(nb.scores[nb.sent_offsets[i] + j],
                                                             abs=1e-6)
            tokens = [row for row in rows if row[0].isdigit()]
            assert [row[3] for row in tokens] == nb.candidate(i, j)
            assert "text" in comments  # the input's other comments follow
    # the k-best file reads back as CoNLL-U, and its first candidates are the 1-best output
    assert read_conllu(out, tags="upos").n_sentences == nb.n_total


def test_tag_windows_saved_input(dataset, tagger, tmp_path):
    # UTF-8 with a byte-order mark and CRLF line ends: the mark used to be copied into the
    # middle of the k-best output (with the first sentence's comments, once per candidate)
    src = tmp_path / "win.conllu"
    src.write_bytes(b"\xef\xbb\xbf" + dataset["test"].read_bytes().replace(b"\n", b"\r\n"))
    for k in (1, 3):
        out = tmp_path / f"win{k}.conllu"
        r = run_cli("tag", tagger, src, "-k", k, "-o", out, "--quiet")
        assert r.returncode == 0, r.stderr
        ref = tmp_path / f"ref{k}.conllu"
        assert run_cli("tag", tagger, dataset["test"], "-k", k, "-o", ref,
                       "--quiet").returncode == 0
        assert out.read_bytes() == ref.read_bytes()
        assert b"\xef\xbb\xbf" not in out.read_bytes()


def test_tag_text_input(dataset, xpos_tagger, tmp_path):
    # an XPOS tagger: --tags names the column it was trained on
    r = run_cli("tag", xpos_tagger, dataset["text"], "--format", "text", "--tags", "xpos")
    assert r.returncode == 0, r.stderr
    blocks = parse_blocks(r.stdout)
    ref = TrigramHMM.load(xpos_tagger).tag(read_tokenized(dataset["text"]))
    assert len(blocks) == ref.n_sentences
    for i, (comments, rows) in enumerate(blocks):
        words, tags = ref.sentence(i)
        assert comments["sent_id"] == str(i + 1)
        assert comments["text"] == " ".join(words)
        assert [r_[1] for r_ in rows] == words
        assert [r_[4] for r_ in rows] == tags and {r_[3] for r_ in rows} == {"_"}


@pytest.fixture(scope="module")
def reranker(dataset, tagger):
    out = dataset["root"] / "perc.npz"
    r = run_cli("train-reranker", "--tagger", tagger, dataset["train"], dataset["dev"],
                "--model", "perceptron-sufx", "-k", 5, "--folds", 3, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "Perceptron (Sufx): dev accuracy" in r.stderr
    return out


def test_train_reranker_matches_library(dataset, tagger, reranker):
    from sparsecca.registry import baseline_rerankers
    from sparsecca.tagging import jackknife_nbest

    hmm = TrigramHMM.load(tagger)
    train = read_conllu(dataset["train"], tags="upos")
    dev = read_conllu(dataset["dev"], tags="upos")
    ref = baseline_rerankers(random_state=0)["Perceptron (Sufx)"]
    ref.fit(jackknife_nbest(TrigramHMM(), train, k=5, folds=3, random_state=0),
            hmm.nbest(dev, k=5))
    got = PerceptronReranker.load(reranker)
    np.testing.assert_array_equal(got.coef_, ref.coef_)
    assert read_model_meta(reranker)["info"]["k"] == 5


def test_rerank_output(dataset, tagger, reranker, tmp_path):
    out = tmp_path / "rr.conllu"
    r = run_cli("rerank", "--tagger", tagger, "--reranker", reranker, dataset["test"], "-o", out)
    assert r.returncode == 0, r.stderr
    assert re.search(r"HMM \d+\.\d+%, reranked \d+\.\d+%", r.stderr)
    hmm = TrigramHMM.load(tagger)
    nb = hmm.nbest(read_conllu(dataset["test"], tags=None), k=5)  # k recorded in the model
    est = PerceptronReranker.load(reranker)
    assert read_conllu(out, tags="upos") == nb.best(est.rerank(nb))
    # --top 2: blocks ordered by reranker score, with the decoder's rank and score
    r = run_cli("rerank", "--tagger", tagger, "--reranker", reranker, dataset["test"],
                "--top", 2, "-k", 4)
    assert r.returncode == 0, r.stderr
    nb4 = hmm.nbest(read_conllu(dataset["test"], tags=None), k=4)
    scores = est.decision_function(nb4)
    blocks = parse_blocks(r.stdout)
    b = 0
    for i in range(nb4.n_sentences):
        lo, hi = nb4.sent_offsets[i], nb4.sent_offsets[i + 1]
        order = lo + np.argsort(-scores[lo:hi], kind="stable")
        for j, g in enumerate(order[:2]):
            comments, rows = blocks[b]
            b += 1
            assert comments["candidate"] == str(j + 1)
            assert int(comments["decoder_rank"]) == g - lo + 1
            assert float(comments["score"]) == pytest.approx(scores[g], abs=1e-6)
            assert float(comments["decoder_score"]) == pytest.approx(nb4.scores[g], abs=1e-6)
            assert [row[3] for row in rows if row[0].isdigit()] == nb4.candidate(i, g - lo)
    assert b == len(blocks)


def test_models_named_as_given_to_output(dataset, reranker, tmp_path):
    # -o out/tagger wrote out/tagger.npz, and 'tag out/tagger' said 'no such file'
    r = run_cli("train-tagger", dataset["train"], "-o", tmp_path / "tagger", "-q")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tagger.npz"]
    r = run_cli("tag", tmp_path / "tagger", dataset["test"], "-o", tmp_path / "t.conllu", "-q")
    assert r.returncode == 0, r.stderr
    hmm = TrigramHMM.load(tmp_path / "tagger.npz")
    assert read_conllu(tmp_path / "t.conllu", tags="upos") == hmm.tag(
        read_conllu(dataset["test"], tags=None))
    rr = reranker.with_suffix("")
    r = run_cli("rerank", "--tagger", tmp_path / "tagger", "--reranker", rr, dataset["test"],
                "-o", tmp_path / "r.conllu", "-q")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r.conllu").is_file()


def test_cca_reranker_through_the_cli(dataset, tagger, tmp_path):
    """train-reranker / rerank with one of the three CCA models (saved and loaded)."""
    from sparsecca.registry import default_rerankers
    from sparsecca.tagging import jackknife_nbest

    model = tmp_path / "soft.npz"
    r = run_cli("train-reranker", "--tagger", tagger, dataset["train"], dataset["dev"],
                "--model", "softened", "-k", 4, "--folds", 3, "-o", model, "-q")
    assert r.returncode == 0 and r.stderr == ""
    est = SoftenedReranker.load(model)
    hmm = TrigramHMM.load(tagger)
    train = read_conllu(dataset["train"], tags="upos")
    dev = read_conllu(dataset["dev"], tags="upos")
    ref = default_rerankers(random_state=0, baselines=False)["Softened-Disc"]
    ref.fit(jackknife_nbest(TrigramHMM(), train, k=4, folds=3, random_state=0),
            hmm.nbest(dev, k=4))
    assert est.tuned_params() == ref.tuned_params()
    nb = hmm.nbest(read_conllu(dataset["test"], tags=None), k=4)
    np.testing.assert_allclose(est.decision_function(nb), ref.decision_function(nb),
                               rtol=1e-9, atol=1e-12)
    out = tmp_path / "rr.conllu"
    r = run_cli("rerank", "--tagger", tagger, "--reranker", model, dataset["test"], "-o", out)
    assert r.returncode == 0, r.stderr
    assert read_conllu(out, tags="upos") == nb.best(est.rerank(nb))


def test_experiment_combined_table(dataset, tmp_path):
    other = tmp_path / "again"
    shutil.copytree(dataset["dir"], other)
    out = tmp_path / "rep"
    args = ["experiment", dataset["dir"], f"{other}:upos", "--tags", "xpos", "-k", 3,
            "--folds", 3, "--models", "perceptron-sufx", "--out", out]
    r = run_cli(*args)
    # the first directory has no XPOS in dev: refused with file:line before anything runs
    assert r.returncode == 2 and "dev.conllu.gz:" in r.stderr and "xpos" in r.stderr
    assert not out.exists() or not (out / "report.md").exists()
    args[4] = "upos"
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    assert "Table 2" in r.stdout and "synth dev" in r.stdout and "again dev" in r.stdout
    rep = json.loads((out / "report.json").read_text())
    hmm = TrigramHMM().fit(read_conllu(dataset["train"], tags="upos"))
    base = hmm.nbest(read_conllu(dataset["dev"], tags="upos"), k=3).top1_accuracy()
    assert rep["table2"]["Baseline"]["synth"]["dev"] == pytest.approx(base, abs=1e-12)
    assert rep["table2"]["Baseline"]["again"]["dev"] == pytest.approx(base, abs=1e-12)
    assert set(rep["table2"]) == {"Baseline", "Oracle", "Perceptron (Sufx)"}
    assert (out / "report.md").read_text().startswith("# sparsecca experiment report")
    r = run_cli(*args)  # the report exists now
    assert r.returncode == 2 and "--force" in r.stderr and "Traceback" not in r.stderr
    r = run_cli(*args, "--force")
    assert r.returncode == 0, r.stderr


def test_demo(tmp_path):
    out = tmp_path / "demo"
    r = run_cli("demo", "--sentences", 600, "--out", out, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "## Table 2" in r.stdout and "| Baseline |" in r.stdout
    rep = json.loads((out / "report.json").read_text())
    (res,) = rep["sets"]
    assert res["name"] == "synthetic" and res["sizes"]["train"]["sentences"] == 420
    assert res["rows"]["Oracle"]["test"] >= res["rows"]["Baseline"]["test"]
    for row, acc in rep["table2"].items():
        assert 0.5 < acc["synthetic"]["test"] <= 1.0, row
    r = run_cli("demo", "--sentences", 600, "--out", out)
    assert r.returncode == 2 and "report.md exists; pass --force" in r.stderr
    # the default output directory is ./sparsecca-demo
    r = run_cli("demo", "--sentences", 300, "--models", "perceptron-sufx", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "sparsecca-demo" / "report.md").is_file() and r.stderr == ""


def test_demo_on_the_smallest_allowed_corpus(tmp_path):
    """--sentences 100 (the documented minimum): 70 training sentences bound the rank of
    the cross-covariance, so the CCA rerankers' n_components (100 by default) is capped at
    70 rather than refused."""
    out = tmp_path / "demo"
    r = run_cli("demo", "--sentences", 100, "--models", "generative,softened-disc",
                "--folds", 2, "-k", 3, "--out", out, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rep = json.loads((out / "report.json").read_text())
    (res,) = rep["sets"]
    assert res["sizes"]["train"]["sentences"] == 70
    for row in ("Generative", "Softened-Disc"):
        assert 1 <= res["rows"][row]["tuned"]["k"] <= 70, row
        assert 0.5 < res["rows"][row]["test"] <= res["rows"]["Oracle"]["test"], row


@pytest.mark.parametrize("tagger", ["perceptron", "memm", "mms"])
def test_experiment_on_a_registered_tagger(tmp_path, tagger):
    """--tagger NAME runs the protocol on the k-best lists of that registered tagger: its
    1-best accuracy is the Baseline row, which the k-best oracle bounds."""
    out = tmp_path / "demo"
    r = run_cli("demo", "--sentences", 300, "--tagger", tagger, "--models", "collins-sufx",
                "--folds", 2, "-k", 3, "--out", out, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"tagger {tagger};" in r.stderr  # the stage log names it
    res = json.loads((out / "report.json").read_text())["sets"][0]["rows"]
    assert res["Oracle"]["test"] >= res["Baseline"]["test"] > 0.5


def test_experiment_refuses_an_unknown_tagger(tmp_path):
    r = run_cli("demo", "--tagger", "crf", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "argument --tagger: invalid choice: 'crf' (choose from 'hmm', 'perceptron'" in r.stderr
