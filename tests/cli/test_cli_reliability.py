"""The bad inputs and faults of issue 37 (a new user's session), each reproduced: text
that is CoNLL-U with space-separated columns, an unwritable output directory, an unbounded
k, wrong names in NBestList's messages, the CLI's reading and writing habits (stdin, the
tag column, hyperparameters)."""

import os
import resource
import shutil
import subprocess
import sys

import pytest
from cli_helpers import run_cli

from sparsecca.data import TaggedCorpus, read_conllu


def _spaced(src, dst):
    """``src`` with its columns separated by spaces and without comments (a file converted
    by a tool that knows no tabs)."""
    lines = [x.replace("\t", " ") for x in src.read_text(encoding="utf-8").split("\n")
             if not x.startswith("#")]
    dst.write_text("\n".join(lines), encoding="utf-8")
    return dst


# -- finding 1: CoNLL-U with spaces read as text -------------------------------------------

def test_space_separated_conllu_is_refused_as_text(dataset, tagger, tmp_path):
    spaced = _spaced(dataset["test"], tmp_path / "spaced.conllu")
    r = run_cli("tag", tagger, spaced, "--format", "text", "-o", tmp_path / "out.conllu")
    assert r.returncode == 2, r.stderr
    assert "looks like CoNLL-U rows" in r.stderr and f"{spaced}:" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out.conllu").exists()
    # read as CoNLL-U (the default) the message names the cause, not --format text
    r = run_cli("tag", tagger, spaced)
    assert r.returncode == 2 and "separated by spaces, not tabs" in r.stderr
    assert "needs --format text" not in r.stderr


def test_numbered_text_sentences_are_still_text(tagger, tmp_path):
    text = tmp_path / "numbered.txt"
    text.write_text("1 the cat sat on the mat for a while .\n"
                    "2 a dog barked at the cat .\n"
                    "3 it rained all day and all of the night after it .\n",
                    encoding="utf-8")
    r = run_cli("tag", tagger, text, "--format", "text", "-q")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("# sent_id =") == 3


# -- finding 2: an unwritable output directory, found after the work ------------------------

@pytest.fixture
def immutable_dir(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(d)],
                                                        capture_output=True).returncode:
        # not root: a read-only mode is enough
        os.chmod(d, 0o555)
        if os.access(d, os.W_OK):
            pytest.skip("cannot make an unwritable directory here")
    yield d
    subprocess.run(["chattr", "-i", str(d)], capture_output=True)
    os.chmod(d, 0o755)


def test_unwritable_output_is_refused_before_any_work(dataset, tagger, immutable_dir):
    out = immutable_dir / "r.npz"
    r = run_cli("train-reranker", "--tagger", tagger, dataset["train"], dataset["dev"],
                "--model", "perceptron-sufx", "-k", 3, "--folds", 2, "-o", out)
    assert r.returncode == 2, r.stderr
    assert "n-best lists" not in r.stderr  # refused before the jackknife, not after the fit
    assert str(out) in r.stderr and ".tmp" not in r.stderr
    assert "Traceback" not in r.stderr
    r = run_cli("tag", tagger, dataset["test"], "-o", immutable_dir / "t.conllu")
    assert r.returncode == 2 and "t.conllu" in r.stderr and ".tmp" not in r.stderr
    assert "tagged" not in r.stderr
    assert os.listdir(immutable_dir) == []


# -- finding 3: unbounded memory for a large k ----------------------------------------------

def _limited_run(*args, limit=8 * 2**30, timeout=300):
    """The CLI under an address-space limit (a safety net should the k be accepted)."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    env = {k: v for k, v in os.environ.items() if k != "SPARSECCA_DEBUG"}
    return subprocess.run([sys.executable, "-m", "sparsecca", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env,
                          preexec_fn=cap)


def test_a_k_beyond_the_machines_memory_is_refused_with_its_estimate(dataset, tagger,
                                                                     tmp_path):
    out = tmp_path / "huge.conllu"
    r = _limited_run("tag", tagger, dataset["test"], "-k", 10**9, "-o", out)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "-k 1000000000" in r.stderr and "estimated" in r.stderr
    assert "available" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


def _peak_rss_run(args):
    """Peak resident memory (bytes) of ``python -m sparsecca *args`` (exit status 0)."""
    code = ("import resource, runpy, sys\n"
            "sys.argv = ['sparsecca'] + sys.argv[1:]\n"
            "try:\n"
            "    runpy.run_module('sparsecca', run_name='__main__')\n"
            "finally:\n"
            "    print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,"
            " file=sys.stderr)\n")
    r = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                       text=True, timeout=600)
    peak = [int(x.split()[1]) for x in r.stderr.splitlines() if x.startswith("PEAK")]
    return r, peak[0] * 1024


def test_kbest_output_is_streamed_not_built_in_memory(tagger, tmp_path):
    """Four times the sentences, four times the output, about the same peak memory: the
    output is written sentence by sentence (the k-best lattice of one sentence is the part
    that does not depend on the input's length)."""
    peaks, sizes = [], []
    for n in (20, 80):
        # unknown words: every tag is possible, thousands of candidates per sentence
        text = tmp_path / f"unknown{n}.txt"
        text.write_text("".join(" ".join(f"zq{i}x{j}" for j in range(12)) + "\n"
                                for i in range(n)), encoding="utf-8")
        out = tmp_path / f"big{n}.conllu"
        r, peak = _peak_rss_run(["tag", tagger, text, "--format", "text", "-k", 2000, "-q",
                                 "-o", out])
        assert r.returncode == 0, r.stderr
        peaks.append(peak)
        sizes.append(out.stat().st_size)
    assert sizes[1] - sizes[0] > 40e6
    assert peaks[1] - peaks[0] < 0.25 * (sizes[1] - sizes[0]), (peaks, sizes)
    assert read_conllu(out, tags=None).n_sentences == 80 * 2000


# -- finding 6: NBestList messages name the right array -------------------------------------

def _nb(cand_offsets, sent_offsets):
    from sparsecca.tagging import NBestList

    corpus = TaggedCorpus.from_sentences([[("a", "X"), ("b", "Y")], [("c", "X")]])
    n = max(int(cand_offsets[-1]), 0)
    return NBestList([0] * n, cand_offsets, sent_offsets, [0.0] * (len(cand_offsets) - 1),
                     corpus, ["X", "Y"])


def test_nbest_messages_name_the_array_at_fault():
    with pytest.raises(ValueError, match=r"cand_offsets must be non-decreasing.*got 2 then 1"):
        _nb([0, 2, 1, 3], [0, 2, 3])
    with pytest.raises(ValueError, match=r"^sent_offsets ends at 5 candidates"):
        _nb([0, 2, 3], [0, 2, 5])
    with pytest.raises(ValueError, match=r"sent_offsets must be non-decreasing"):
        _nb([0, 2, 3], [0, 2, 1])
    with pytest.raises(ValueError, match=r"candidate 1 \(of sentence 0 by sent_offsets\) has "
                                         r"1 tags.*sentence 0 has 2 words"):
        _nb([0, 2, 3], [0, 2, 2])


# -- finding 7: the CLI's reading and writing habits ----------------------------------------

def test_stdin_input_and_stdout_output(dataset, tagger, tmp_path):
    data = dataset["test"].read_bytes()
    env = {k: v for k, v in os.environ.items() if k != "SPARSECCA_DEBUG"}
    r = subprocess.run([sys.executable, "-m", "sparsecca", "tag", str(tagger), "-", "-o", "-",
                        "-q"], input=data, capture_output=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    ref = run_cli("tag", tagger, dataset["test"], "-q")
    assert r.stdout.decode("utf-8") == ref.stdout
    r = subprocess.run([sys.executable, "-m", "sparsecca", "tag", str(tagger), "-"],
                       input=b"1\tbroken\n", capture_output=True, timeout=300, env=env)
    assert r.returncode == 2 and b"<stdin>:1:" in r.stderr


def test_tag_column_is_said_and_a_richer_other_column_is_warned_about(tmp_path):
    # column 5 with many more tags than column 4 (like en-wsj's XPOS against its UPOS)
    lines = []
    for i in range(40):
        for j in range(1, 6):
            lines.append(f"{j}\tw{(i + j) % 17}\t_\t{'NV'[j % 2]}\tT{(i * 5 + j) % 30}"
                         f"\t_\t_\t_\t_\t_")
        lines.append("")
    train = tmp_path / "train.conllu"
    train.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = run_cli("train-tagger", train, "-o", tmp_path / "m")
    assert r.returncode == 0, r.stderr
    assert "tags: the upos column" in r.stderr
    assert "warning:" in r.stderr and "--tags xpos" in r.stderr and "30" in r.stderr
    r = run_cli("train-tagger", train, "--tags", "xpos", "-o", tmp_path / "x")
    assert r.returncode == 0 and "warning" not in r.stderr


def test_messages_use_command_line_words(dataset, tmp_path):
    # an xpos-less training file read for xpos: no "tags='upos'" (Python) in the message
    train = tmp_path / "noxpos.conllu"
    train.write_text("1\tdog\t_\tNOUN\t_\t_\t_\t_\t_\t_\n\n", encoding="utf-8")
    r = run_cli("train-tagger", train, "--tags", "xpos", "-o", tmp_path / "m")
    assert r.returncode == 2 and "tags=" not in r.stderr and "upos column" in r.stderr


def test_train_reranker_takes_the_models_hyperparameters(dataset, tagger, tmp_path):
    out = tmp_path / "cca"
    r = run_cli("train-reranker", "--tagger", tagger, dataset["train"], dataset["dev"],
                "--model", "generative", "-k", 3, "--folds", 2, "--n-components", 4,
                "--tau", "0.9,0.99", "--solver", "dense", "-o", out)
    assert r.returncode == 0, r.stderr
    from sparsecca._persist import load_model

    model = load_model(str(out) + ".npz")
    assert model.n_components == 4 and tuple(model.tau) == (0.9, 0.99)
    assert model.solver == "dense"
    r = run_cli("train-reranker", "--tagger", tagger, dataset["train"], dataset["dev"],
                "--model", "perceptron-sufx", "--lam", "0.5", "-o", tmp_path / "p")
    assert r.returncode == 2 and "--lam" in r.stderr and "no such hyperparameter" in r.stderr
    r = run_cli("train-reranker", "--tagger", tagger, dataset["train"], dataset["dev"],
                "--model", "generative", "--tau", "0.9,x", "-o", tmp_path / "q")
    assert r.returncode == 2 and "--tau must be a comma-separated list" in r.stderr
