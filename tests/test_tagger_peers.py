"""Smoke tests of benchmarks/tagger_peers.py at its smallest settings (< 60 s for the file).

One run of every system on the first 40 sentences of fr-sequoia's train and test files is
shared by the tests (about 25 s of CPU time).  The peers are optional: their test skips with
a reason when NLTK or python-crfsuite is not installed.  The runs read ../shared/data (the
``shared_data`` fixture: skipped when absent, failing under CI=true); the exit-status checks
at the end need no data.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "tagger_peers.py"
HEADER = ("| set | system | status | acc % | known % | unknown % | 10-best oracle % | train s | "
          "tag tokens/s | peak RSS MB | load |")


def _run(*args, status=0, timeout=120):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=env)
    assert proc.returncode == status, (f"exited {proc.returncode}\n--- stdout\n"
                                       f"{proc.stdout[-3000:]}\n--- stderr\n"
                                       f"{proc.stderr[-3000:]}")
    return proc


@pytest.fixture(scope="module")
def small(shared_data, tmp_path_factory):
    """One small run of every system (children run one after another): (stdout, JSON)."""
    out = tmp_path_factory.mktemp("peers") / "peers.json"
    text = _run("--sets", "fr-sequoia:upos", "--max-sentences", 40, "--out", out).stdout
    return text, json.loads(out.read_text())["results"]["fr-sequoia:upos"]


@pytest.mark.shared_data
def test_ours_small(small):
    text, res = small
    assert HEADER in text and "smoke run" in text and text.count("# Taggers vs peers") == 1
    for name in ("hmm", "perceptron"):
        r = res[name]
        assert r["status"] == "ok"
        assert 0.5 < r["acc"] <= 1 and r["acc"] <= r["oracle"] <= 1
        assert r["train_s"] > 0 and r["tag_s"] > 0 and r["child_maxrss_mb"] > 0
    # the MEMM runs when the package exports it, else it is skipped with a note
    memm = res["memm"]["status"]
    assert memm == "ok" or (memm.startswith("skipped") and "MEMMTagger skipped" in text)


@pytest.mark.shared_data
def test_nltk_small(small):
    pytest.importorskip("nltk", reason="NLTK (an optional peer) is not installed")
    text, res = small
    assert res["nltk-tnt"]["status"] == res["nltk-perceptron"]["status"] == "ok"
    assert "| fr-sequoia:upos | NLTK PerceptronTagger | ok |" in text


@pytest.mark.shared_data
def test_crfsuite_small_and_targets(small):
    pytest.importorskip("pycrfsuite", reason="python-crfsuite (an optional peer) is not "
                                             "installed")
    text, res = small
    assert res["crf-ap"]["status"] == res["crf-lbfgs"]["status"] == "ok"
    assert "| fr-sequoia:upos | crfsuite L-BFGS | ok |" in text
    # the per-set target line: accuracy, train and tagging speed against crfsuite AP
    assert "- fr-sequoia:upos: accuracy " in text and "tagging " in text
    assert "(CPU time: train " in text
    for name in ("perceptron", "crf-ap"):
        assert 0 < res[name]["train_cpu_s"] and 0 < res[name]["tag_cpu_s"]


@pytest.mark.shared_data
def test_repeat_keeps_the_fastest_times(shared_data, tmp_path):
    out = tmp_path / "peers.json"
    text = _run("--sets", "fr-sequoia:upos", "--max-sentences", 5, "--systems", "perceptron",
                "--repeat", 2, "--out", out).stdout
    r = json.loads(out.read_text())["results"]["fr-sequoia:upos"]["perceptron"]
    assert r["status"] == "ok" and r["n_runs"] == 2
    assert "the fastest of 2 run(s) per system" in text


@pytest.mark.shared_data
def test_failed_child_exits_1_after_the_table(shared_data):
    proc = _run("--sets", "fr-sequoia:upos", "--max-sentences", 5, "--systems", "hmm",
                "--timeout", 0.01, status=1)
    assert HEADER in proc.stdout and "| TrigramHMM | timeout |" in proc.stdout
    assert "Failed runs: fr-sequoia:upos: TrigramHMM" in proc.stdout


def test_missing_data_and_usage_errors(tmp_path):
    proc = _run("--sets", "no-such-set:upos", status=3)
    assert proc.stderr.startswith("missing data: ") and "no-such-set" in proc.stderr
    assert "| set |" not in proc.stdout
    for bad in (["--sets", "fr-sequoia"], ["--systems", "nope"], ["--max-sentences", 0],
                ["--repeat", 0]):
        assert "error:" in _run(*bad, status=2).stderr
