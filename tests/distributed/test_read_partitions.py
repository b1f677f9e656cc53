"""read_conllu_partitions: the partitions gathered equal read_conllu of the same files, plain
and gzip, for several partition sizes; bad input is refused with the argument named, and a
malformed line in a late partition is reported with the file and its line in the file."""

from __future__ import annotations

import gzip
import shutil

import pytest

from sparsecca.data import CorpusFormatError, concat_corpora, read_conllu
from sparsecca.distributed import PartitionedCorpus, read_conllu_partitions

pytest.importorskip("dask")

ROW = "{}\t{}\t_\t{}\t_\t_\t_\t_\t_\t_\n"


def _sentences(n, start=0):
    return "".join(f"# sent_id = s{i}\n" + ROW.format(1, f"w{i}", "NOUN")
                   + ROW.format(2, "runs", "VERB") + "\n" for i in range(start, start + n))


@pytest.mark.parametrize("name, tags, sizes", [("fr-sequoia", "upos", (7, 1, "1MiB")),
                                               ("en-wsj", "xpos", (3,))])
def test_gathered_equals_read_conllu(shared_data, tmp_path, name, tags, sizes):
    path = shared_data / name / "train.conllu"
    whole = read_conllu(path, tags=tags)
    size = path.stat().st_size
    for partition_size in (s if isinstance(s, str) else size // s + 1 for s in sizes):
        parts = read_conllu_partitions(path, tags=tags, partition_size=partition_size)
        assert isinstance(parts, PartitionedCorpus)
        assert parts.gather() == whole, partition_size
    assert read_conllu_partitions(path, tags, partition_size=100_003).n_partitions == -(
        -size // 100_003)
    gz = tmp_path / "train.conllu.gz"
    with open(path, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    parts = read_conllu_partitions([gz, path], tags=tags, partition_size=size // 3 + 1)
    assert parts.n_partitions == 1 + 3  # a gzip file is one partition
    assert parts.gather() == concat_corpora([whole, whole])


def test_several_files_a_glob_and_crlf(tmp_path):
    texts = [_sentences(5), _sentences(7, 5).replace("\n", "\r\n"), _sentences(1, 12)]
    for i, text in enumerate(texts):
        (tmp_path / f"part{i}.conllu").write_bytes(text.encode("utf-8"))
    ref = concat_corpora([read_conllu(tmp_path / f"part{i}.conllu") for i in range(3)])
    for size in (13, 77, 10_000):
        parts = read_conllu_partitions(str(tmp_path / "part*.conllu"), partition_size=size)
        assert parts.gather() == ref
        corpora = parts.compute()
        assert sum(c.n_sentences for c in corpora) == 13
    assert read_conllu_partitions(tmp_path / "part2.conllu", tags=None).gather() == read_conllu(
        tmp_path / "part2.conllu", tags=None)


def test_the_partitions_run_on_the_cluster(client, tmp_path):
    path = tmp_path / "c.conllu"
    path.write_text(_sentences(40), encoding="utf-8")
    parts = read_conllu_partitions(path, partition_size=300).persist()
    assert parts.n_partitions > 4
    assert parts.gather() == read_conllu(path)


def test_a_malformed_line_in_a_late_partition_names_file_and_line(client, tmp_path):
    lines = _sentences(30).split("\n")
    bad_line = 3 * 25 + 2  # in the 26th sentence (4 lines each)
    lines[bad_line - 1] = "2 runs _ VERB _ _ _ _ _ _"
    path = tmp_path / "bad.conllu"
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(CorpusFormatError) as whole:
        read_conllu(path)
    parts = read_conllu_partitions(path, partition_size=200)
    assert parts.n_partitions > 6
    # partitions 0-2 read, partition 3 ... holds the bad line, and its error names it
    with pytest.raises(CorpusFormatError, match=rf"bad\.conllu:{whole.value.line}: expected "
                                                r"10 tab-separated columns, found 1 \(the "
                                                r"columns are separated by spaces\?\)"):
        parts.gather()
    assert whole.value.line == bad_line


@pytest.mark.parametrize("make, kwargs, error, match", [
    (None, {"paths": "{tmp}/none*.conllu"}, FileNotFoundError,
     r"paths: the pattern '.*none\*\.conllu' matches no file"),
    (None, {"paths": "{tmp}/missing.conllu"}, FileNotFoundError,
     r"paths: no such file: '.*missing\.conllu'"),
    (None, {"paths": []}, ValueError, "paths must name at least one file, got an empty list"),
    (None, {"paths": 3}, TypeError, "paths must be a path, a glob pattern or a list"),
    (None, {"paths": "-"}, ValueError, r"standard input \('-'\) cannot be read in partitions"),
    ("ok", {"partition_size": 0}, ValueError, "partition_size must be an int >= 1, got 0"),
    ("ok", {"partition_size": 2.5}, TypeError, "partition_size must be an int >= 1, got 2.5"),
    ("ok", {"partition_size": "lots"}, ValueError,
     "partition_size must be an int >= 1 or a size such as '64MiB', got 'lots'"),
    ("ok", {"tags": "lemma"}, ValueError, "tags must be 'upos', 'xpos' or None, got 'lemma'"),
    ("dir", {}, CorpusFormatError, "is a directory, expected a CoNLL-U file"),
])
def test_bad_input(tmp_path, make, kwargs, error, match):
    kwargs = dict(kwargs)
    target = tmp_path / "ok.conllu"
    target.write_text(_sentences(2), encoding="utf-8")
    if make == "dir":
        target = tmp_path / "adir"
        target.mkdir()
    kwargs.setdefault("paths", target)
    if isinstance(kwargs["paths"], str):
        kwargs["paths"] = kwargs["paths"].replace("{tmp}", str(tmp_path))
    with pytest.raises(error, match=match):
        read_conllu_partitions(**kwargs)


@pytest.mark.parametrize("byte_range, match", [
    ((5, 2), r"byte_range must be None or a pair \(start, stop\) of ints with 0 <= start "
             r"<= stop, got \(5, 2\)"),
    ((-1, 2), r"got \(-1, 2\)"),
    ((0, 2.0), r"got \(0, 2\.0\)"),
    ("0-2", r"got '0-2'"),
])
def test_read_conllu_refuses_a_bad_byte_range(tmp_path, byte_range, match):
    path = tmp_path / "ok.conllu"
    path.write_text(_sentences(2), encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        read_conllu(path, byte_range=byte_range)


def test_read_conllu_byte_range_refuses_gzip(tmp_path):
    path = tmp_path / "ok.conllu.gz"
    path.write_bytes(gzip.compress(_sentences(2).encode("utf-8")))
    with pytest.raises(ValueError, match=r"byte_range needs a plain file; .*ok\.conllu\.gz "
                                         r"is gzip data"):
        read_conllu(path, byte_range=(0, 10))
