"""The Python examples of README.md and docs/ run as printed (in a subprocess, from an empty
directory).

A user copies them first; a renamed argument or a moved function must fail here, not on their
machine.  The ```python blocks are read from each page in order; the count test fails when a
page's blocks change in number (docs/ pages included: a page not listed in ``EXPECTED`` must
have none), so a new example gets a test too.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
DESIGN = "docs/design.md"

#: page -> a string each of its python blocks holds, in order (one test below per block)
EXPECTED = {
    "README.md": ["SoftenedReranker", "sparsecca.experiment(", "SparseCCA(",
                  "read_conllu_partitions("],
    DESIGN: ["SparseCCA(50, tau=0.5, solver=\"iterative\").fit(X, Y)"],
}


def python_blocks(page="README.md"):
    text = (ROOT / page).read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def run_block(code, cwd, timeout=600):
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, (f"example failed:\n{code}\n--- stdout\n"
                                  f"{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}")
    return proc.stdout


def test_readme_has_the_examples_tested_here():
    pages = ["README.md", *sorted(p.relative_to(ROOT).as_posix()
                                  for p in (ROOT / "docs").glob("*.md"))]
    for page in pages:
        blocks, expected = python_blocks(page), EXPECTED.get(page, [])
        assert len(blocks) == len(expected), (
            f"{page}: {len(blocks)} python blocks, {len(expected)} tested here: "
            f"{[b.splitlines()[0] for b in blocks]}")
        for block, marker in zip(blocks, expected):
            assert marker in block, (page, marker, block.splitlines()[0])


@pytest.mark.slow
def test_readme_reranking_example(tmp_path):
    # synthetic corpus: three accuracies in [0, 1], the oracle at least the 1-best
    out = run_block(python_blocks()[0], tmp_path)
    top1, reranked, oracle = map(float, out.split()[-3:])
    assert 0.5 < top1 <= oracle <= 1.0 and 0.5 < reranked <= oracle


@pytest.mark.shared_data
@pytest.mark.slow
def test_readme_experiment_example(shared_data, tmp_path):
    # the relative data path as printed, resolved from a directory beside ../shared
    code = python_blocks()[1].replace("../shared/data", str(SHARED_DATA))
    out = run_block(code, tmp_path)
    assert 0.9 < float(out.split()[-1]) <= 1.0  # fr-sequoia test accuracy of the model
    written = sorted(p.name for p in (tmp_path / "report-dir").iterdir())
    assert {"report.md", "report.json"} <= set(written), written


def test_readme_engine_example(tmp_path):
    # X and Y are the reader's own: two correlated sparse views stand in for them
    setup = ("import numpy as np, scipy.sparse as sp\n"
             "rng = np.random.default_rng(0)\n"
             "Z = rng.standard_normal((400, 70))\n"
             "X = sp.random(400, 300, density=0.05, random_state=1, format='csr')\n"
             "X = sp.hstack([X, sp.csr_matrix(Z[:, :30])]).tocsr()\n"
             "Y = sp.csr_matrix(Z[:, 5:65] + 0.1 * rng.standard_normal((400, 60)))\n")
    check = ("\nassert U.shape == V.shape == (400, 50)\n"
             "assert np.all(np.diff(cca.correlations_) <= 1e-12)\n"
             "print(cca.solver_, cca.correlations_[0])\n")
    out = run_block(setup + python_blocks()[2] + check, tmp_path)
    solver, top = out.split()
    assert solver in ("dense", "randomized", "iterative") and 0 < float(top) <= 2.0


def test_design_dask_example(tmp_path):
    # X and Y as Dask arrays chunked by rows; the result against the dense solver in memory
    pytest.importorskip("dask.array")
    setup = ("import numpy as np, dask.array as da\n"
             "from sparsecca.linalg import SparseCCA\n"
             "rng = np.random.default_rng(0)\n"
             "Z = rng.standard_normal((600, 80))\n"
             "Xn = np.hstack([rng.poisson(0.3, (600, 120)).astype(float), Z[:, :40]])\n"
             "Yn = Z[:, 20:80] + 0.5 * rng.standard_normal((600, 60))\n"
             "X, Y = da.from_array(Xn, chunks=(150, -1)), da.from_array(Yn, chunks=(150, -1))\n")
    check = ("\nref = SparseCCA(50, tau=0.5, solver='dense').fit(Xn, Yn).correlations_\n"
             "err = np.max(np.abs(cca.correlations_ - ref) / ref)\n"
             "A, B = cca.x_weights_, cca.y_weights_\n"
             "assert A.shape == (160, 50) and B.shape == (60, 50)\n"
             "assert isinstance(scores, da.Array) and scores.shape == (600, 50)\n"
             "print(err)\n")
    out = run_block(setup + python_blocks(DESIGN)[0] + check, tmp_path)
    assert float(out.split()[-1]) < 1e-6  # the iterative solver's tolerance is 1e-7


@pytest.mark.slow
def test_readme_cluster_example(tmp_path):
    # the files it names, from the synthetic corpus: two gzip training files and a dev file;
    # the fitted reranker against the same fit in memory
    pytest.importorskip("distributed")
    setup = ("from sparsecca.data import synthetic_corpus, write_conllu\n"
             "corpus = synthetic_corpus(500, random_state=0)\n"
             "write_conllu(corpus[:200], 'train-0.conllu.gz')\n"
             "write_conllu(corpus[200:400], 'train-1.conllu.gz')\n"
             "write_conllu(corpus[400:], 'dev.conllu')\n")
    # inside the scheduler's block: the persisted partitions live on its workers
    check = ("\n    ref = SoftenedReranker().fit(train_nb.gather(), dev_nb.gather())\n"
             "    assert (model.tau_, model.lam_, model.n_components_) == "
             "(ref.tau_, ref.lam_, ref.n_components_)\n"
             "    print(model.dev_accuracy_, ref.dev_accuracy_)\n")
    block = python_blocks()[3]
    # a script that starts worker processes runs under a __main__ guard, as the README says
    code = setup + "if __name__ == '__main__':\n" + "\n".join(
        "    " + line for line in (block.rstrip("\n") + check).splitlines())
    out = run_block(code, tmp_path)
    got, ref = map(float, out.split()[-2:])
    assert got == ref and 0.5 < got <= 1.0
