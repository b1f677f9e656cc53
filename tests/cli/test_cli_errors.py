"""Bad command-line input: exit status 2, one line on stderr, never a traceback."""

import gzip
import pickle
import shutil

import numpy as np
import pytest
from cli_helpers import run_cli


@pytest.fixture(scope="module")
def bad_files(dataset, tagger, tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    good = dataset["test"].read_text(encoding="utf-8").split("\n")
    # line 4 of the file (1-based) loses its last column
    lines = list(good)
    lines[3] = "\t".join(lines[3].split("\t")[:9])
    (d / "bad.conllu").write_text("\n".join(lines), encoding="utf-8")
    (d / "fake.conllu.gz").write_text("\n".join(good), encoding="utf-8")
    (d / "bin.conllu").write_bytes(gzip.compress(b"\xff\xfe\x00bad") + b"trailing")
    (d / "empty").mkdir()
    (d / "only-train").mkdir()
    (d / "only-train" / "train.conllu").write_text("\n".join(good), encoding="utf-8")
    # a complete directory whose dev file is empty, and one whose train has 3 sentences
    sentences = [b for b in "\n".join(good).split("\n\n") if b.strip()]
    for name, train, dev in (("empty-dev", sentences, []), ("tiny-train", sentences[:3],
                                                             sentences)):
        (d / name).mkdir()
        for split, sents in (("train", train), ("dev", dev), ("test", sentences)):
            text = "\n\n".join(sents) + ("\n\n" if sents else "")
            (d / name / f"{split}.conllu").write_text(text, encoding="utf-8")
    # directories whose names cannot name a report's files, or name the same one
    for name in ("pipe|set", "x/en", "y/EN", "z/EN-2"):
        shutil.copytree(d / "tiny-train", d / name)
    raw = tagger.read_bytes()
    (d / "truncated.npz").write_bytes(raw[: len(raw) // 2])
    (d / "evil.npz").write_bytes(pickle.dumps({"lambdas": np.ones(3)}))
    (d / "exists.conllu").write_text("keep me", encoding="utf-8")
    (d / "exists.npz").write_bytes(b"keep me")
    view = d / "view.npz"
    from sparsecca.data import read_conllu
    from sparsecca.features import SuffixView

    SuffixView().fit(read_conllu(dataset["train"])).save(view)
    return d


# (argv with placeholders, regex the one-line message must match)
CASES = {
    "no verb": ([], r"sparsecca: error: the following arguments are required: VERB"),
    "unknown verb": (["bogus"], r"invalid choice: 'bogus'"),
    "missing input file": (["tag", "{tagger}", "{bad}/nope.conllu"],
                           r"nope.conllu: no such file \(input\)"),
    "input is a directory": (["tag", "{tagger}", "{bad}/empty"], r"empty: is a directory"),
    "missing model file": (["tag", "{bad}/nope.npz", "{test}"], r"nope.npz: no such file"),
    "missing model file without .npz": (["tag", "{bad}/nope", "{test}"],
                                         r"nope: no such file, nor \S*/nope\.npz "
                                         r"\(tagger model\)$"),
    "missing reranker without .npz": (["rerank", "--tagger", "{tagger}", "--reranker",
                                       "{bad}/nope", "{test}"],
                                      r"nope: no such file, nor \S*/nope\.npz "
                                      r"\(reranker model\)$"),
    "malformed CoNLL-U line": (["tag", "{tagger}", "{bad}/bad.conllu"],
                               r"bad.conllu:4: expected 10 tab-separated columns, found 9"),
    "gz suffix on plain text": (["train-tagger", "{bad}/fake.conllu.gz", "-o", "{bad}/m"],
                                r"fake.conllu.gz: has a .gz suffix but is not gzip data"),
    "corrupt gzip": (["tag", "{tagger}", "{bad}/bin.conllu"], r"bin.conllu"),
    "directory without splits": (["experiment", "{bad}/empty", "--tags", "upos"],
                                 r"empty: no train.conllu or train.conllu.gz"),
    "directory without dev": (["experiment", "{bad}/only-train", "--tags", "upos"],
                              r"only-train: no dev.conllu"),
    "empty dev split": (["experiment", "{bad}/empty-dev", "--tags", "upos"],
                        r"empty-dev/dev.conllu: no sentences \(the dev split is empty"),
    "empty dev file (train-reranker)": (
        ["train-reranker", "--tagger", "{tagger}", "{train}", "{bad}/empty-dev/dev.conllu",
         "--model", "generative", "-o", "{bad}/r"], r"empty-dev/dev.conllu: no sentences$"),
    "fewer training sentences than folds": (
        ["experiment", "{bad}/tiny-train", "--tags", "upos"],
        r"tiny-train/train.conllu: 3 sentences, fewer than the 10 jackknife folds"),
    "not a directory": (["experiment", "{bad}/nope", "--tags", "upos"],
                        r"nope: no such directory"),
    "unknown tag column suffix": (["experiment", "{dir}:lemma"],
                                  r"unknown tag column 'lemma' in '.*:lemma'"),
    "unknown input view suffix": (["experiment", "{dir}:xpos:words"],
                                  r"unknown input view 'words' in '.*:xpos:words'; use "
                                  r"DIR:xpos:suffix or DIR:xpos:charngram$"),
    "field after the input view": (["experiment", "{dir}:charngram:words"],
                                   r"unexpected 'words' after the input view in "
                                   r"'.*:charngram:words'"),
    "two tag columns": (["experiment", "{dir}:upos:xpos"],
                        r"'.*:upos:xpos' gives two tag columns; use "
                        r"DIR\[:upos\|xpos\]\[:suffix\|charngram\]$"),
    "two input views": (["experiment", "{dir}:suffix:suffix"], r"gives two input views"),
    "unknown tag column before a view": (["experiment", "{dir}:lemma:charngram"],
                                         r"unknown tag column 'lemma' in '.*:lemma:charngram'"),
    "unknown --tags value": (["train-tagger", "{train}", "--tags", "feats", "-o", "{bad}/m"],
                             r"argument --tags: invalid choice: 'feats'"),
    "tag column absent from the file": (["train-tagger", "{dev}", "--tags", "xpos",
                                         "-o", "{bad}/m"],
                                        r"dev.conllu.gz:\d+: tag column 5 \(xpos\) is '_'"),
    "no tag column given": (["experiment", "{dir}"], r"which tag column\?"),
    "existing output (tag)": (["tag", "{tagger}", "{test}", "-o", "{bad}/exists.conllu"],
                              r"exists.conllu exists; pass --force"),
    "existing output (model)": (["train-tagger", "{train}", "-o", "{bad}/exists"],
                                r"exists.npz exists; pass --force"),
    "output in a missing directory": (["tag", "{tagger}", "{test}", "-o", "{bad}/no/out"],
                                      r"no: no such directory"),
    "truncated model": (["tag", "{bad}/truncated.npz", "{test}"],
                        r"truncated.npz: corrupted or truncated model file"),
    "pickle renamed to npz": (["tag", "{bad}/evil.npz", "{test}"],
                              r"evil.npz: not a sparsecca model file"),
    "model of another class": (["tag", "{bad}/view.npz", "{test}"],
                               r"holds a 'SuffixView', not a 'TrigramHMM'"),
    "tagger given as reranker": (["rerank", "--tagger", "{tagger}", "--reranker", "{tagger}",
                                  "{test}"], r"hmm.npz: holds a TrigramHMM, not a reranker"),
    "unknown reranker name": (["train-reranker", "--tagger", "{tagger}", "{train}", "{dev}",
                               "--model", "svm", "-o", "{bad}/r"], r"unknown model 'svm'"),
    "unknown --models name": (["demo", "--models", "svm", "--out", "{bad}/demo"],
                              r"unknown model 'svm'"),
    "unknown tagger name": (["train-tagger", "{train}", "--model", "crf", "-o", "{bad}/m"],
                            r"train-tagger: error: unknown model 'crf'; choose from "
                            r"hmm(, [a-z-]+)*$"),
    "k too small": (["tag", "{tagger}", "{test}", "-k", "0"],
                    r"error: -k must be an int >= 1, got 0 \(see 'sparsecca tag --help'\)$"),
    "k not an int": (["tag", "{tagger}", "{test}", "-k", "two"],
                     r"error: -k must be an int >= 1, got 'two' \("),
    "k a float": (["tag", "{tagger}", "{test}", "-k", "1.5"], r"-k must be an int >= 1, got '1.5'"),
    "too few demo sentences": (["demo", "--sentences", "5", "--out", "{bad}/demo"],
                               r"--sentences must be an int >= 100, got 5"),
    "negative seed": (["experiment", "{dir}", "--tags", "upos", "--seed", "-1"],
                      r"experiment: error: --seed must be an int >= 0, got -1 \("),
    "negative seed (train-reranker)": (
        ["train-reranker", "--tagger", "{tagger}", "{train}", "{dev}", "--model", "generative",
         "--seed", "-3", "-o", "{bad}/r"], r"--seed must be an int >= 0, got -3"),
    "one fold": (["demo", "--folds", "1", "--out", "{bad}/demo"],
                 r"--folds must be an int >= 2, got 1"),
    "k 1 for a reranker": (["train-reranker", "--tagger", "{tagger}", "{train}", "{dev}",
                            "--model", "generative", "-k", "1", "-o", "{bad}/r"],
                           r"-k must be an int >= 2 \(reranking needs candidates\), got 1"),
    # the name was used for the report's files only at the end, after the training
    "directory name with a pipe": (["experiment", "{bad}/pipe|set", "--tags", "upos"],
                                   r"data set \S*pipe\|set name 'pipe\|set' holds '\|': a "
                                   r"data-set name must be a plain file name"),
    # EN is named EN-2 after en (one file on a case-insensitive file system), then z/EN-2
    "directory names that collide": (
        ["experiment", "{bad}/x/en", "{bad}/y/EN", "{bad}/z/EN-2", "--tags", "upos"],
        r"data set \S*z/EN-2 has the name 'EN-2' of data set \S*y/EN; the names must differ"),
    "k 1 for an experiment": (["experiment", "{dir}", "--tags", "upos", "-k", "1"],
                              r"-k must be an int >= 2 \(reranking needs candidates\), got 1"),
    "top 0": (["rerank", "--tagger", "{tagger}", "--reranker", "{tagger}", "{test}", "--top",
               "0"], r"--top must be an int >= 1, got 0"),
    "rerank k 0": (["rerank", "--tagger", "{tagger}", "--reranker", "{tagger}", "{test}", "-k",
                    "0"], r"-k must be an int >= 2 \(reranking needs candidates\), got 0"),
    "text input in CoNLL-U mode": (["tag", "{tagger}", "{text}"],
                                   r"test.txt:1: expected 10 tab-separated columns, found 1 "
                                   r"\(tokenised text, one sentence per line, needs --format "
                                   r"text\)"),
    "CoNLL-U input in text mode": (["tag", "{tagger}", "{test}", "--format", "text"],
                                   r"test.conllu:1: looks like CoNLL-U; drop --format text$"),
    "CoNLL-U without comments in text mode": (
        ["tag", "{tagger}", "{dev}", "--format", "text"],
        r"dev.conllu.gz:1: looks like CoNLL-U; drop --format text$"),
    "garbage model file": (["tag", "{bad}/exists.npz", "{test}"],
                           r"exists.npz: not a sparsecca model file \(not an .npz archive\)$"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_exits_2_with_one_line(dataset, tagger, bad_files, case):
    argv, pattern = CASES[case]
    fill = {"tagger": tagger, "bad": bad_files, "test": dataset["test"], "dir": dataset["dir"],
            "train": dataset["train"], "dev": dataset["dev"], "text": dataset["text"]}
    r = run_cli(*[a.format(**fill) for a in argv], cwd=bad_files)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("sparsecca"), lines[0]
    assert __import__("re").search(pattern, lines[0]), lines[0]
    # nothing was overwritten
    assert (bad_files / "exists.conllu").read_text(encoding="utf-8") == "keep me"
    assert (bad_files / "exists.npz").read_bytes() == b"keep me"
    assert not (bad_files / "m.npz").exists() and not (bad_files / "r.npz").exists()


def test_force_overwrites(dataset, tagger, tmp_path):
    out = tmp_path / "out.conllu"
    out.write_text("old", encoding="utf-8")
    r = run_cli("tag", tagger, dataset["test"], "-o", out, "--force", "-q")
    assert r.returncode == 0 and r.stderr == ""
    assert out.read_text(encoding="utf-8").startswith("# sent_id = te-0")


def test_debug_env_shows_traceback(dataset, tagger, tmp_path):
    import os
    import subprocess
    import sys

    env = dict(os.environ, SPARSECCA_DEBUG="1")
    r = subprocess.run([sys.executable, "-m", "sparsecca", "tag", str(tagger),
                        str(tmp_path / "nope.conllu")], capture_output=True, text=True, env=env)
    assert r.returncode == 1 and "Traceback" in r.stderr and "UsageError" in r.stderr


# --format text input: (file text, line reported as CoNLL-U, or None when accepted as text)
TEXT_OR_CONLLU = [
    ("# sent_id = 1\n1\tA\t_\t_\t_\t_\t_\t_\t_\t_\n", 1),
    ("\n\n#text = A b\n", 3),
    ("# newdoc id = d1\n\n1-2\tdu\t_\t_\t_\t_\t_\t_\t_\t_\n", 3),
    ("# newpar\r\n2.1\tghost\t_\t_\t_\t_\t_\t_\t_\t_\r\n", 2),
    ("The cat sat .\n1\tA\t_\t_\t_\t_\t_\t_\t_\t_\n", None),  # text first: a sentence of tabs
    ("#hashtag is fun\nThe cat sat\n", None),
    ("x\tA\t_\t_\t_\t_\t_\t_\t_\t_\n", None),  # not a token id
    ("\n" * 150 + "# sent_id = 1\n", None),  # only the first lines are looked at
]


@pytest.mark.parametrize("text,line", TEXT_OR_CONLLU)
def test_conllu_given_as_text(text, line):
    from sparsecca.data import CorpusFormatError
    from sparsecca.data._document import _refuse_conllu_as_text

    if line is None:
        _refuse_conllu_as_text("in.txt", text)
        return
    with pytest.raises(CorpusFormatError,
                       match=rf"^in.txt:{line}: looks like CoNLL-U; drop --format text$"):
        _refuse_conllu_as_text("in.txt", text)


@pytest.mark.parametrize("text", [
    "1\tA\t_\t_\t_\t_\t_\t_\t_\n",  # 9 tab-separated columns: a broken CoNLL-U row
    "1 The _ DET DT _ _ _ _ _\n2 dog _ NOUN NN _ _ _ _ _\n\n",  # space-separated columns
])
def test_conllu_rows_given_as_text(text):
    """Rows of a token id and 8 or more fields are CoNLL-U, not sentences (issue 37)."""
    from sparsecca.data import CorpusFormatError
    from sparsecca.data._document import _refuse_conllu_as_text

    with pytest.raises(CorpusFormatError, match=r"^in.txt:1: looks like CoNLL-U rows, not "
                                                r"text .*drop --format text$"):
        _refuse_conllu_as_text("in.txt", text)
