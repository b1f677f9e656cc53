"""End-to-end fuzz harness: random mutations of real CoNLL-U sentences (column drops,
swapped separators, truncations, random bytes, huge and empty sentences, a BOM, CRLF line
ends, gzip) through ``read_conllu`` / ``read_document`` (in-process, many inputs) and through
every command-line verb that reads a file (a subprocess each, fewer inputs).

The property: exit 0 with a correct result (checked with the library), or exit 2 with one
line on stderr naming the file (and the line, when one is at fault); never a traceback,
never a partial output file, never a changed input file.  Bounded: a fixed number of
examples per test (``derandomize``: the same inputs on every run), no deadline; the whole
file runs in about a minute.  ``test_outcomes`` prints the tally (run with ``-s``).
"""

import gzip
import hashlib
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sparsecca.data import CorpusFormatError, read_conllu, read_document  # noqa: E402

pytestmark = pytest.mark.shared_data

IN_PROCESS_EXAMPLES = 400
CLI_EXAMPLES = 6  # per verb
OUTCOMES: Counter = Counter()

_SETTINGS = dict(deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture,
                                        HealthCheck.too_slow, HealthCheck.data_too_large])


def _sentences(path: Path, n: int) -> list[bytes]:
    out, cur = [], []
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line:
            cur.append(line)
        elif cur:
            out.append(("\n".join(cur) + "\n\n").encode("utf-8"))
            cur = []
            if len(out) == n:
                break
    return out


@pytest.fixture(scope="module")
def real(shared_data):
    """A few sentences of two real corpora (English with XPOS, French UPOS only)."""
    return (_sentences(shared_data / "en-wsj" / "test.conllu", 12)
            + _sentences(shared_data / "fr-sequoia" / "dev.conllu", 12))


# -- mutations ----------------------------------------------------------------------------

def _lines_op(data: bytes, fn) -> bytes:
    return b"\n".join(fn(i, x) for i, x in enumerate(data.split(b"\n")))


@st.composite
def mutated(draw, sentences):
    """(bytes, gzip?) of 1-4 real sentences after 0-3 mutations."""
    picked = draw(st.lists(st.sampled_from(sentences), min_size=1, max_size=4))
    data = b"".join(picked)
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["drop_column", "spaces", "truncate", "random_bytes",
                                     "huge", "empty", "bom", "crlf", "blank_tag",
                                     "swap_lines", "none"]))
        lines = data.split(b"\n")
        at = draw(st.integers(0, max(len(lines) - 1, 0)))
        if kind == "drop_column":
            cols = lines[at].split(b"\t")
            if len(cols) > 1:
                del cols[draw(st.integers(0, len(cols) - 1))]
            lines[at] = b"\t".join(cols)
            data = b"\n".join(lines)
        elif kind == "spaces":
            if draw(st.booleans()):
                data = data.replace(b"\t", b" ")
            else:
                lines[at] = lines[at].replace(b"\t", b" ")
                data = b"\n".join(lines)
        elif kind == "truncate":
            data = data[:draw(st.integers(0, len(data)))]
        elif kind == "random_bytes":
            pos = draw(st.integers(0, len(data)))
            data = data[:pos] + draw(st.binary(min_size=1, max_size=8)) + data[pos:]
        elif kind == "huge":
            row = b"\t".join([b"%d", b"word", b"_", b"NOUN", b"NN"] + [b"_"] * 5)
            n = draw(st.integers(300, 3000))
            data += b"\n".join(row.replace(b"%d", str(i).encode()) for i in range(1, n + 1))
            data += b"\n\n"
        elif kind == "empty":
            data = data[:0] if draw(st.booleans()) else data + b"# sent_id = empty\n\n"
        elif kind == "bom":
            data = b"\xef\xbb\xbf" + data
        elif kind == "crlf":
            data = data.replace(b"\n", b"\r\n")
        elif kind == "blank_tag":
            cols = lines[at].split(b"\t")
            if len(cols) == 10:
                cols[3] = draw(st.sampled_from([b"_", b"", b" NOUN", b"NOUN\r"]))
            lines[at] = b"\t".join(cols)
            data = b"\n".join(lines)
        elif kind == "swap_lines" and len(lines) > 2:
            b = draw(st.integers(0, len(lines) - 1))
            lines[at], lines[b] = lines[b], lines[at]
            data = b"\n".join(lines)
    return data, draw(st.booleans()) and draw(st.booleans())  # gzip a quarter of them


def _write(path: Path, item) -> Path:
    data, gz = item
    if gz:
        path = path.with_name(path.name + ".gz")
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)
    return path


# -- in-process ---------------------------------------------------------------------------

_WHERE = re.compile(r"^(?P<path>.+?)(:(?P<line>[0-9]+))?: ")


def test_read_conllu_fuzz(real, tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz-read")

    @settings(max_examples=IN_PROCESS_EXAMPLES, **_SETTINGS)
    @given(mutated(real), st.sampled_from(["upos", "xpos", None]))
    def check(item, tags):
        path = _write(d / "in.conllu", item)
        try:
            corpus = read_conllu(path, tags=tags)
        except CorpusFormatError as exc:
            m = _WHERE.match(str(exc))
            assert m and m.group("path") == str(path), str(exc)
            assert "\n" not in str(exc)
            if exc.line:
                n_lines = (gzip.decompress(path.read_bytes()) if path.suffix == ".gz"
                           else path.read_bytes()).count(b"\n") + 1
                assert 1 <= exc.line <= n_lines
            OUTCOMES["read_conllu: CorpusFormatError, file:line"] += 1
        else:
            # a corpus that reads back is consistent with its own text
            assert corpus.offsets[-1] == corpus.n_tokens
            doc = read_document(path)
            assert doc.n_sentences == corpus.n_sentences
            OUTCOMES["read_conllu: read"] += 1
        finally:
            path.unlink()

    check()


def test_read_document_text_fuzz(real, tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz-text")

    @settings(max_examples=IN_PROCESS_EXAMPLES // 2, **_SETTINGS)
    @given(mutated(real))
    def check(item):
        path = _write(d / "in.txt", item)
        try:
            doc = read_document(path, "text")
        except CorpusFormatError as exc:
            m = _WHERE.match(str(exc))
            assert m and m.group("path") == str(path), str(exc)
            OUTCOMES["read_document text: CorpusFormatError"] += 1
        else:
            assert doc.format == "text"
            OUTCOMES["read_document text: read"] += 1
        finally:
            path.unlink()

    check()


# -- through the command line -------------------------------------------------------------

def _cli(*args, cwd):
    env = {k: v for k, v in os.environ.items() if k != "SPARSECCA_DEBUG"}
    return subprocess.run([sys.executable, "-m", "sparsecca", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def models(real, tmp_path_factory):
    """A tagger and a reranker trained once on clean sentences of the same corpora."""
    d = tmp_path_factory.mktemp("fuzz-models")
    (d / "train.conllu").write_bytes(b"".join(real[:8] + real[12:20]))
    (d / "dev.conllu").write_bytes(b"".join(real[8:12] + real[20:]))
    r = _cli("train-tagger", "train.conllu", "-o", "hmm", "-q", cwd=d)
    assert r.returncode == 0, r.stderr
    r = _cli("train-reranker", "--tagger", "hmm.npz", "train.conllu", "dev.conllu", "--model",
             "perceptron-sufx", "-k", 3, "--folds", 2, "-o", "rr", "-q", cwd=d)
    assert r.returncode == 0, r.stderr
    return d


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _check_run(verb, r, inp: Path, out: Path | None, before: str):
    """The property of one run; returns its outcome."""
    assert "Traceback" not in r.stderr, r.stderr
    assert _digest(inp) == before, "the input file changed"
    if r.returncode == 2:
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.stderr
        assert lines[0].startswith(f"sparsecca {verb}: error: "), lines[0]
        assert inp.name in lines[0], lines[0]  # the file (and, where one is at fault, line)
        assert out is None or not out.exists(), "a partial output file"
        left = [p for p in inp.parent.iterdir() if p.name.endswith(".tmp")]
        assert not left, left
        return f"{verb}: exit 2, " + ("file:line" if re.search(r"\.(conllu|txt)(\.gz)?:[0-9]+:",
                                                               lines[0]) else "file")
    assert r.returncode == 0, (r.returncode, r.stderr)
    return f"{verb}: exit 0"


def _cli_fuzz(verb, real, models, tmp_path_factory, build, verify=None, n=CLI_EXAMPLES):
    d = tmp_path_factory.mktemp(f"fuzz-{verb}")

    @settings(max_examples=n, **_SETTINGS)
    @given(mutated(real), st.sampled_from(["conllu", "text"]))
    def check(item, fmt):
        inp = _write(d / ("in.txt" if fmt == "text" else "in.conllu"), item)
        out = d / "out.conllu"
        for p in d.iterdir():
            if p != inp:
                p.unlink()
        before = _digest(inp)
        args, out = build(inp, out, fmt)
        r = _cli(*args, cwd=d)
        outcome = _check_run(verb, r, inp, out, before)
        if r.returncode == 0 and verify is not None:
            verify(inp, out, fmt)
        OUTCOMES[outcome] += 1
        inp.unlink()

    check()


def _verify_tagged(models):
    def verify(inp, out, fmt):
        from sparsecca.tagging import TrigramHMM

        doc = read_document(inp, fmt)
        got = read_conllu(out)
        assert got.n_sentences == doc.n_sentences
        hmm = TrigramHMM.load(models / "hmm.npz")
        want = hmm.tag(doc.corpus)
        assert [got.sentence(i)[0] for i in range(got.n_sentences)] == \
            [want.sentence(i)[0] for i in range(want.n_sentences)]
        assert [got.sentence(i)[1] for i in range(got.n_sentences)] == \
            [want.sentence(i)[1] for i in range(want.n_sentences)]
    return verify


def test_cli_tag_fuzz(real, models, tmp_path_factory):
    _cli_fuzz("tag", real, models, tmp_path_factory,
              lambda inp, out, fmt: (["tag", models / "hmm.npz", inp, "--format", fmt, "-o",
                                      out, "-q"], out),
              verify=_verify_tagged(models))


def test_cli_rerank_fuzz(real, models, tmp_path_factory):
    def verify(inp, out, fmt):
        assert read_conllu(out).n_sentences == read_document(inp, fmt).n_sentences
    _cli_fuzz("rerank", real, models, tmp_path_factory,
              lambda inp, out, fmt: (["rerank", "--tagger", models / "hmm.npz", "--reranker",
                                      models / "rr.npz", inp, "--format", fmt, "-o", out,
                                      "-q"], out), verify=verify)


def test_cli_train_tagger_fuzz(real, models, tmp_path_factory):
    def verify(inp, out, fmt):
        from sparsecca.tagging import TrigramHMM

        TrigramHMM.load(out)
    _cli_fuzz("train-tagger", real, models, tmp_path_factory,
              lambda inp, out, fmt: (["train-tagger", inp, "-o", out.with_suffix(".npz"),
                                      "-q"], out.with_suffix(".npz")), verify=verify)


def test_cli_train_reranker_fuzz(real, models, tmp_path_factory):
    _cli_fuzz("train-reranker", real, models, tmp_path_factory,
              lambda inp, out, fmt: (["train-reranker", "--tagger", models / "hmm.npz", inp,
                                      models / "dev.conllu", "--model", "perceptron-sufx",
                                      "-k", 3, "--folds", 2, "-o", out.with_suffix(".npz"),
                                      "-q"], out.with_suffix(".npz")), n=4)


def test_cli_evaluate_fuzz(real, models, tmp_path_factory):
    """A mutated prediction against the clean gold: a score, or exit 2 naming the file."""
    def verify(inp, out, fmt):
        text = out.read_text(encoding="utf-8")
        assert "accuracy" in text
    _cli_fuzz("evaluate", real, models, tmp_path_factory,
              lambda inp, out, fmt: (["evaluate", models / "dev.conllu", inp, "--no-table",
                                      "-o", out, "-q"], out), verify=verify)


def test_outcomes():
    """The tally of this run (``pytest -s`` shows it); every outcome is exit 0 or exit 2."""
    print("\nfuzz outcomes:", dict(sorted(OUTCOMES.items())),
          "total", sum(OUTCOMES.values()))
    assert all("exit 0" in k or "exit 2" in k or "read_" in k for k in OUTCOMES)
