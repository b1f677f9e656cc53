"""Progress bars (on a terminal only, off with --quiet) and chunked decoding of long inputs."""

import os
import select
import struct
import subprocess
import sys

import pytest

from sparsecca import _cli_decode, cli

# pseudo-terminals are POSIX-only
fcntl = pytest.importorskip("fcntl")
pty = pytest.importorskip("pty")
termios = pytest.importorskip("termios")


def run_with_tty_stderr(*args, timeout=300):
    """Run the CLI with stderr on a pseudo-terminal; returns (returncode, stderr text)."""
    master, slave = pty.openpty()
    # a real terminal has a size; tqdm sizes its bars from it (0 columns would print nothing)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    env = {k: v for k, v in os.environ.items() if k != "SPARSECCA_DEBUG"}
    proc = subprocess.Popen([sys.executable, "-m", "sparsecca", *map(str, args)],
                            stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            proc.kill()
            raise TimeoutError("the CLI did not finish")
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=timeout), b"".join(chunks).decode("utf-8", "replace")


def test_progress_bars_on_a_terminal(tmp_path):
    args = ["demo", "--sentences", 300, "--models", "perceptron-sufx", "-k", 3, "--folds", 3]
    rc, err = run_with_tty_stderr(*args, "--out", tmp_path / "a")
    assert rc == 0, err
    assert "jackknife" in err and "rerankers" in err and "100%" in err
    rc, err = run_with_tty_stderr(*args, "--out", tmp_path / "b", "--quiet")
    assert rc == 0 and err.strip() == ""


def test_no_progress_bars_when_piped(tmp_path):
    r = subprocess.run([sys.executable, "-m", "sparsecca", "demo", "--sentences", "300",
                        "--models", "perceptron-sufx", "-k", "3", "--folds", "3", "--out",
                        str(tmp_path / "c")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "%|" not in r.stderr and "\r" not in r.stderr  # no bars in a log
    assert "demo finished" in r.stderr  # the plain messages stay
    # instead of the bars: one line per stage and per model fit, with its time (issue 37,
    # finding 8: a long run looked hung in a log file)
    for stage in ("tagger fitted on", "jackknifed 3-best lists", "3-best lists of dev and test",
                  "fitted Perceptron (Sufx) (1 of 1)"):
        line = [x for x in r.stderr.splitlines() if stage in x]
        assert line and line[0].rstrip().endswith(" s"), (stage, r.stderr)


@pytest.mark.parametrize("k", [1, 3])
def test_chunked_decoding_matches_one_call(dataset, tagger, tmp_path, monkeypatch, k):
    """Long inputs are decoded in chunks (for the progress bar); the output must not change."""
    whole = tmp_path / "whole.conllu"
    assert cli.main(["tag", str(tagger), str(dataset["test"]), "-k", str(k), "-o", str(whole),
                     "-q"]) == 0
    monkeypatch.setattr(_cli_decode, "_DECODE_CHUNK", 7)
    parts = tmp_path / "parts.conllu"
    assert cli.main(["tag", str(tagger), str(dataset["test"]), "-k", str(k), "-o", str(parts),
                     "-q"]) == 0
    assert parts.read_text(encoding="utf-8") == whole.read_text(encoding="utf-8")
