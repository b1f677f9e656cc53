"""Fault injection: SIGINT and SIGTERM at random points of the writes of ``tag``,
``rerank`` and ``train-reranker`` (a subprocess and a signal).  Whatever the moment, the
previous target stays intact (or is wholly replaced, when the signal came after the rename)
and no temporary file is left.

To hit the write itself, the tests set ``SPARSECCA_TEST_WRITE_DELAY`` (see
``sparsecca._atomic``): the atomic writer then sleeps between writing its temporary file and
renaming it, so that a signal sent at a random time falls before, during or after the write.
"""

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "cli"))
from cli_helpers import run_cli  # noqa: E402

from sparsecca.data import synthetic_corpus, train_test_split, write_conllu  # noqa: E402

pytestmark = pytest.mark.slow

DELAY = 1.5  # seconds the writer holds its temporary file
OUTCOMES: Counter = Counter()
OLD = b"the previous content\n"  # the target before each run


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("faults")
    corpus = synthetic_corpus(200, random_state=5)
    train, dev = train_test_split(corpus, test_size=50, random_state=0)
    write_conllu(train, root / "train.conllu")
    write_conllu(dev, root / "dev.conllu")
    r = run_cli("train-tagger", root / "train.conllu", "-o", root / "hmm", "-q")
    assert r.returncode == 0, r.stderr
    r = run_cli("train-reranker", "--tagger", root / "hmm.npz", root / "train.conllu",
                root / "dev.conllu", "--model", "perceptron-sufx", "-k", 3, "--folds", 2,
                "-o", root / "rr", "-q")
    assert r.returncode == 0, r.stderr
    return root


def _commands(root, out):
    return {
        "tag": ["tag", root / "hmm.npz", root / "dev.conllu", "-k", 3, "-o", out],
        "rerank": ["rerank", "--tagger", root / "hmm.npz", "--reranker", root / "rr.npz",
                   root / "dev.conllu", "--top", 2, "-o", out],
        "train-reranker": ["train-reranker", "--tagger", root / "hmm.npz",
                           root / "train.conllu", root / "dev.conllu", "--model",
                           "perceptron-sufx", "-k", 3, "--folds", 2, "-o", out],
    }


def _interrupt(args, sig, after, delay=DELAY):
    env = {k: v for k, v in os.environ.items() if k != "SPARSECCA_DEBUG"}
    env["SPARSECCA_TEST_WRITE_DELAY"] = str(delay)
    proc = subprocess.Popen([sys.executable, "-m", "sparsecca", *map(str, args), "--force",
                             "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    if after is not None:  # None: no signal, run to the end
        try:
            proc.wait(timeout=after)
        except subprocess.TimeoutExpired:
            proc.send_signal(sig)
    _, err = proc.communicate(timeout=300)
    return proc.returncode, err.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def unsignalled(setup, tmp_path_factory):
    """verb -> (seconds of a run without a signal whose write holds DELAY, its output):
    measured once per verb for both signals (no signal is sent, so the run is the same)."""
    cache = {}

    def measure(verb):
        if verb not in cache:
            root = tmp_path_factory.mktemp(f"unsignalled-{verb}")
            out = root / ("model.npz" if verb == "train-reranker" else "out.conllu")
            # a first run compiles (and caches) the command's numba kernels, so that the timed
            # run and the signalled ones do the same work: a signal is meant for the write,
            # not for LLVM (a KeyboardInterrupt inside numba's compiler prints 'Exception
            # ignored' tracebacks)
            out.write_bytes(OLD)
            rc, err = _interrupt(_commands(setup, out)[verb], None, after=None, delay=0)
            assert rc == 0, err
            # one run without a signal measures when the write starts and ends ...
            out.write_bytes(OLD)
            t0 = time.perf_counter()
            rc, err = _interrupt(_commands(setup, out)[verb], None, after=None, delay=DELAY)
            total = time.perf_counter() - t0
            assert rc == 0, err
            new = out.read_bytes()
            assert new != OLD
            cache[verb] = total, new
        return cache[verb]

    return measure


@pytest.mark.parametrize("verb", ["tag", "rerank", "train-reranker"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_at_a_random_point_keeps_the_target_and_leaves_no_temp_file(setup, unsignalled,
                                                                          verb, sig, tmp_path):
    out = tmp_path / ("model.npz" if verb == "train-reranker" else "out.conllu")
    old = OLD
    rng = random.Random(f"{verb}-{int(sig)}")
    total, new = unsignalled(verb)
    # ... then signals at random points, most of them inside the delayed write
    for after in [rng.uniform(max(total - DELAY - 0.3, 0.2), total - 0.2) for _ in range(3)]:
        out.write_bytes(old)
        rc, err = _interrupt(_commands(setup, out)[verb], sig, after=after)
        assert "Traceback" not in err, err
        assert sorted(os.listdir(tmp_path)) == [out.name], (after, os.listdir(tmp_path))
        assert rc in (0, 130, 143, -int(sig)), (rc, err)
        # the old target, or (the signal came after the rename) the whole new one
        got = out.read_bytes()
        assert got == old or got == new, (after, rc, err)
        if rc == 0:
            assert got == new
        OUTCOMES[(verb, sig.name, rc, "old" if got == old else "new")] += 1


def test_fault_outcomes():
    """The tally (``pytest -s`` shows it): (verb, signal, exit status, target kept/new)."""
    print("\nfault outcomes:", dict(OUTCOMES))
