"""Fixtures of the command-line tests: a small CoNLL-U data set and a runner for the CLI.

Every test runs the real entry point in a subprocess (``python -m sparsecca ...``), so what is
checked is what a user sees: stdout, stderr and the exit status.
"""

from pathlib import Path

import pytest
from cli_helpers import run_cli

from sparsecca.data import synthetic_corpus, train_test_split, write_conllu


def _add_xpos_and_extras(path: Path) -> None:
    """Fill column 5 with 'x-<UPOS>' and give sentence 1 a multi-word range and an empty node."""
    out, first, seen_tok1 = [], True, False
    for line in path.read_text(encoding="utf-8").split("\n"):
        cols = line.split("\t")
        if len(cols) == 10:
            cols[4] = "x-" + cols[3]
            cols[8] = "dep" if cols[0] != "1" else "root"
            line = "\t".join(cols)
            if first and cols[0] == "1" and not seen_tok1:
                out.append("1-2\tmwt\t_\t_\t_\t_\t_\t_\t_\t_")
                seen_tok1 = True
            out.append(line)
            if first and cols[0] == "2":
                out.append("2.1\tghost\t_\t_\t_\t_\t_\t_\t_\t_")
                first = False
        else:
            out.append(line)
    path.write_text("\n".join(out), encoding="utf-8")


@pytest.fixture(scope="session")
def dataset(tmp_path_factory):
    """A data-set directory (train/dev/test CoNLL-U, dev gzipped) and a tokenised text file.

    test.conllu has sent_id and text comments, XPOS 'x-<UPOS>', a DEPS-like column 9 and,
    in its first sentence, a multi-word token range and an empty node, so that the tests can
    check that tagging keeps everything but the tag column.
    """
    root = tmp_path_factory.mktemp("cli-data")
    d = root / "synth"
    d.mkdir()
    corpus = synthetic_corpus(420, random_state=3)
    rest, test = train_test_split(corpus, test_size=60, random_state=0)
    train, dev = train_test_split(rest, test_size=60, random_state=1)
    write_conllu(train, d / "train.conllu",
                 comments=[f"sent_id = tr-{i}" for i in range(train.n_sentences)])
    write_conllu(dev, d / "dev.conllu.gz")
    comments = [f"sent_id = te-{i}\ntext = {' '.join(w)}" for i, (w, _) in enumerate(test)]
    write_conllu(test, d / "test.conllu", comments=comments)
    for split in ("train", "test"):
        _add_xpos_and_extras(d / f"{split}.conllu")
    text = root / "test.txt"
    text.write_text("".join(" ".join(w) + "\n" for w, _ in test), encoding="utf-8")
    return {"root": root, "dir": d, "train": d / "train.conllu", "dev": d / "dev.conllu.gz",
            "test": d / "test.conllu", "text": text}


def _cli_tagger(dataset, column):
    out = dataset["root"] / ("hmm.npz" if column == "upos" else f"hmm-{column}.npz")
    r = run_cli("train-tagger", dataset["train"], "--tags", column, "-o", out, "-q")
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="session")
def tagger(dataset):
    """A tagger trained through the CLI (train-tagger) on the UPOS column."""
    return _cli_tagger(dataset, "upos")


@pytest.fixture(scope="session")
def xpos_tagger(dataset):
    """A tagger trained through the CLI on the XPOS column ('x-<UPOS>')."""
    return _cli_tagger(dataset, "xpos")
