"""Outputs go through a unique temporary file: no user file is clobbered on the way, a
failed write leaves the target as it was, and path errors name the user's path."""

import os
import re
import stat

import numpy as np
import pytest

import sparsecca
from sparsecca import cli
from sparsecca._atomic import atomic_write
from sparsecca._persist import save_model_file
from sparsecca.data import read_conllu, synthetic_corpus, write_conllu
from sparsecca.tagging import TrigramHMM


def _save(path, **kw):
    return save_model_file(path, "Thing", {}, {"w": np.arange(3.0)}, **kw)


def test_atomic_write_replaces_only_on_success(tmp_path):
    p = tmp_path / "out.txt"
    p.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_write(p) as fh:
            fh.write(b"half")
            raise RuntimeError("boom")
    assert p.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["out.txt"]  # the temporary file is gone
    with atomic_write(p) as fh:
        fh.write(b"new")
    assert p.read_bytes() == b"new" and sorted(os.listdir(tmp_path)) == ["out.txt"]


def test_atomic_write_keeps_the_usual_permissions(tmp_path):
    # mkstemp would give 0600; the file must get what open(path, 'wb') gives
    ref = tmp_path / "ref"
    ref.write_bytes(b"")
    with atomic_write(tmp_path / "new") as fh:
        fh.write(b"x")
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == stat.S_IMODE(ref.stat().st_mode)


def _overwrite_raw(p):
    with atomic_write(p) as fh:
        # the permissions are set before any data is in the file
        assert stat.S_IMODE(os.fstat(fh.fileno()).st_mode) == stat.S_IMODE(p.stat().st_mode)
        fh.write(b"new")


def _overwrite_model(p):
    _save(p, overwrite=True)


def _overwrite_corpus(p):
    write_conllu(synthetic_corpus(3, random_state=0), p, overwrite=True)


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
@pytest.mark.parametrize("mode", [0o600, 0o660])
@pytest.mark.parametrize("write", [_overwrite_raw, _overwrite_model, _overwrite_corpus])
def test_overwrite_keeps_the_permissions_of_the_file(tmp_path, mode, write):
    # the replacement got 0666 less the umask: a private 0600 file became 0644
    p = tmp_path / "out.npz"
    p.write_bytes(b"old")
    p.chmod(mode)
    write(p)
    assert p.read_bytes() != b"old"
    assert stat.S_IMODE(p.stat().st_mode) == mode
    assert os.listdir(tmp_path) == ["out.npz"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_cli_force_keeps_the_permissions_of_the_output(tmp_path):
    model = TrigramHMM().fit(synthetic_corpus(60, random_state=1)).save(tmp_path / "hmm.npz")
    src = tmp_path / "in.conllu"
    write_conllu(synthetic_corpus(5, random_state=2), src)
    out = tmp_path / "out.conllu"
    out.write_text("private", encoding="utf-8")
    out.chmod(0o600)
    assert cli.main(["tag", str(model), str(src), "-o", str(out), "--force", "-q"]) == 0
    assert read_conllu(out).n_sentences == 5
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


# (name of the user's file the old fixed temporary name clobbered, writer of the output)
def _write_model(d):
    _save(d / "m.npz")


def _write_corpus(d):
    write_conllu(synthetic_corpus(3, random_state=0), d / "w.conllu")


def _write_corpus_gz(d):
    write_conllu(synthetic_corpus(3, random_state=0), d / "w.conllu.gz")


@pytest.mark.parametrize(("user_file", "write"), [
    ("m.npz.tmp.npz", _write_model),
    ("w.conllu.tmp", _write_corpus),
    ("w.conllu.gz.tmp", _write_corpus_gz),
])
def test_a_file_named_like_the_old_temporary_is_kept(tmp_path, user_file, write):
    (tmp_path / user_file).write_text("MY DATA", encoding="utf-8")
    write(tmp_path)
    assert (tmp_path / user_file).read_text(encoding="utf-8") == "MY DATA"
    assert len(os.listdir(tmp_path)) == 2  # the user's file and the output, nothing else


def test_cli_output_keeps_a_file_named_like_the_old_temporary(tmp_path):
    train = synthetic_corpus(60, random_state=1)
    model = TrigramHMM().fit(train).save(tmp_path / "hmm.npz")
    src = tmp_path / "in.conllu"
    write_conllu(synthetic_corpus(5, random_state=2), src)
    (tmp_path / "out.conllu.tmp").write_text("MY NOTES", encoding="utf-8")
    assert cli.main(["tag", str(model), str(src), "-o", str(tmp_path / "out.conllu"),
                     "-q"]) == 0
    assert (tmp_path / "out.conllu.tmp").read_text(encoding="utf-8") == "MY NOTES"
    assert read_conllu(tmp_path / "out.conllu").n_sentences == 5


def _missing_dir_model(d):
    return _save(d / "nope" / "x.npz")


def _missing_dir_corpus(d):
    write_conllu(synthetic_corpus(3, random_state=0), d / "nope" / "w.conllu")


@pytest.mark.parametrize(("write", "target"), [
    (_missing_dir_model, "nope/x.npz"),
    (_missing_dir_corpus, "nope/w.conllu"),
])
def test_a_missing_directory_names_the_users_path(tmp_path, write, target):
    pattern = rf"^{re.escape(str(tmp_path / target))}: directory .*nope does not exist$"
    with pytest.raises(FileNotFoundError, match=pattern):
        write(tmp_path)
    assert os.listdir(tmp_path) == []


def test_save_to_a_directory_is_refused(tmp_path):
    d = tmp_path / "models"
    d.mkdir()
    hmm = TrigramHMM().fit(synthetic_corpus(30, random_state=0))
    with pytest.raises(IsADirectoryError, match=r"models: is a directory, expected a model "
                                                 r"file name"):
        hmm.save(d)
    with pytest.raises(IsADirectoryError, match="models: is a directory"):
        hmm.save(d, overwrite=True)
    assert sorted(os.listdir(tmp_path)) == ["models"]  # no sibling models.npz
    (tmp_path / "m.npz").mkdir()  # the name with .npz appended is a directory
    with pytest.raises(IsADirectoryError, match=r"m\.npz: is a directory, expected a model"):
        hmm.save(tmp_path / "m")


def test_write_conllu_to_a_directory_is_refused(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a directory, expected a file name"):
        write_conllu(synthetic_corpus(3, random_state=0), tmp_path, overwrite=True)


def test_write_report_leaves_no_temporary_files(tmp_path):
    result = {"name": "s", "tags": "upos", "k": 2, "folds": 2,
              "sizes": {p: {"sentences": 1, "tokens": 1} for p in ("train", "dev", "test")},
              "rows": {"Baseline": {"dev": 0.5, "test": 0.5}}, "table3": {}, "grids": {}}
    written = sparsecca.write_report([result], tmp_path / "rep")
    assert sorted(os.listdir(tmp_path / "rep")) == ["report.json", "report.md"]
    assert set(written) == {"md", "json"}
    assert "| Baseline | 50.00 | 50.00 |" in (tmp_path / "rep" / "report.md").read_text()


def test_sigterm_during_a_write_removes_the_temporary_file(tmp_path):
    """Issue 37, finding 4: SIGINT cleaned up, SIGTERM left a .<name>.<hex>.tmp behind."""
    import signal
    import subprocess
    import sys

    target = tmp_path / "target.conllu"
    target.write_bytes(b"old")
    code = ("import os, signal, sys, time\n"
            "from sparsecca._atomic import atomic_write\n"
            "with atomic_write(sys.argv[1]) as fh:\n"
            "    fh.write(b'half of the new content')\n"
            "    fh.flush()\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "    time.sleep(30)\n")
    r = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True,
                       timeout=120)
    assert r.returncode in (143, -signal.SIGTERM)
    assert target.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["target.conllu"]  # no temporary file left
