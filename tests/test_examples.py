"""Every script in examples/ runs (in a subprocess, as a user would run it) and succeeds.

The scripts check their own results (assertions against exact dense solvers or against the
in-memory fit); here they run on reduced sizes to keep the suite fast, and their output is
checked for the figures they promise.
"""

import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_example(name, *args, timeout=600):
    r = subprocess.run([sys.executable, str(EXAMPLES / name), *map(str, args)],
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{name} failed:\n{r.stdout}\n{r.stderr}"
    return r.stdout


def test_every_example_is_tested():
    tested = {"sparse_cca_two_views.py", "rerank_pos.py", "stream_large_corpus.py"}
    assert {p.name for p in EXAMPLES.glob("*.py")} == tested


def test_sparse_cca_two_views():
    out = run_example("sparse_cca_two_views.py", "--items", 4000, "--components", 8)
    assert re.search(r"max relative difference \d\.\de[+-]\d+", out)
    m = re.search(r"topic for (\d+\.\d)% of 2000 held-out items \(chance (\d+\.\d)%\)", out)
    assert m and float(m.group(1)) > 3 * float(m.group(2))


def test_rerank_pos_synthetic():
    out = run_example("rerank_pos.py", "--sentences", 1200)
    assert out.startswith("synthetic: train 840 sentences")
    assert re.search(r"test accuracy: HMM \d+\.\d\d%, reranked \d+\.\d\d%", out)
    assert "same decisions" in out


def test_rerank_pos_conllu_directory(tmp_path):
    from sparsecca.data import synthetic_corpus, train_test_split, write_conllu

    c = synthetic_corpus(900, random_state=4)
    rest, test = train_test_split(c, test_size=150, random_state=0)
    train, dev = train_test_split(rest, test_size=150, random_state=1)
    d = tmp_path / "toy-set"
    d.mkdir()
    for name, part in (("train", train), ("dev", dev), ("test", test)):
        write_conllu(part, d / f"{name}.conllu.gz", tags="xpos")
    out = run_example("rerank_pos.py", d, "--tags", "xpos", "--input-view", "charngram")
    assert out.startswith("toy-set: train 600 sentences")
    assert "same decisions" in out


def test_stream_large_corpus():
    out = run_example("stream_large_corpus.py", "--sentences", 6000, "--files", 3,
                      "--partition-size", "200KiB")
    m = re.search(r"read 6000 sentences in (\d+) partitions", out)
    assert m and int(m.group(1)) > 3  # byte ranges of each of the 3 files
    assert "vocabularies from all 6000 sentences" in out
    m = re.search(r"max relative difference of the correlations (\S+)", out)
    assert m and float(m.group(1)) < 1e-6
