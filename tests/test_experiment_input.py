"""The experiment runner's refusals of data-set directories it cannot run, naming the file."""

import pytest

import sparsecca
from sparsecca._experiment import DatasetError, load_splits


def _sentence(i):
    rows = [f"{j}\tw{i}_{j}\tw\t{'NOUN' if j % 2 else 'VERB'}\t_\t_\t0\t_\t_\t_"
            for j in (1, 2, 3)]
    return "\n".join(rows) + "\n\n"


def _write(d, sizes):
    d.mkdir()
    for split, n in sizes.items():
        (d / f"{split}.conllu").write_text("".join(_sentence(i) for i in range(n)),
                                           encoding="utf-8")
    return d


@pytest.mark.parametrize("empty", ["train", "dev", "test"])
def test_an_empty_split_is_named(tmp_path, empty):
    d = _write(tmp_path / "set", {"train": 12, "dev": 4, "test": 4} | {empty: 0})
    with pytest.raises(DatasetError, match=rf"set/{empty}.conllu: no sentences \(the {empty} "
                                           rf"split is empty"):
        load_splits(d)
    with pytest.raises(ValueError, match=rf"{empty}.conllu: no sentences"):
        sparsecca.experiment(d)


@pytest.mark.parametrize(("split", "names"), [
    ("dev", ["dev.conllu", "dev.conllu.gz"]),
    ("test", ["test.conllu", "test.conll"]),
    ("train", ["train.conllu", "train.conll.gz"]),
    ("dev", ["dev.conllu", "dev.conllu.gz", "dev.conll"]),
])
def test_two_files_for_one_split_are_refused(tmp_path, split, names):
    # the first suffix used to win in silence, whatever the other file held
    d = _write(tmp_path / "set", {"train": 12, "dev": 4, "test": 4})
    for name in names:
        (d / name).write_bytes((d / f"{split}.conllu").read_bytes())
    pattern = rf"set: {split} is ambiguous, found {' and '.join(names)}; keep one of them$"
    with pytest.raises(DatasetError, match=pattern.replace(".", r"\.")):
        load_splits(d)
    with pytest.raises(DatasetError, match=f"{split} is ambiguous"):
        sparsecca.experiment(d)


def test_fewer_training_sentences_than_folds_is_named(tmp_path):
    d = _write(tmp_path / "small", {"train": 3, "dev": 2, "test": 2})
    with pytest.raises(DatasetError, match=r"small/train.conllu: 3 sentences, fewer than the "
                                           r"10 jackknife folds"):
        sparsecca.experiment(d)
    assert load_splits(d)["train"].n_sentences == 3  # reading alone is fine


def test_experiment_is_public_and_imported_lazily():
    import subprocess
    import sys

    from sparsecca import _experiment

    assert sparsecca.experiment is _experiment.experiment
    assert sparsecca.write_report is _experiment.write_report
    assert {"experiment", "write_report", "load_model"} <= set(dir(sparsecca))
    with pytest.raises(AttributeError, match="module 'sparsecca' has no attribute 'nope'"):
        sparsecca.nope  # noqa: B018
    code = ("import sys, sparsecca; assert 'sparsecca._experiment' not in sys.modules; "
            "sparsecca.experiment; assert 'sparsecca._experiment' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_write_report_refuses_to_overwrite(tmp_path):
    (tmp_path / "report.md").write_text("keep me", encoding="utf-8")
    with pytest.raises(FileExistsError, match=r"report.md exists; pass overwrite=True"):
        sparsecca.write_report([], tmp_path)
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == "keep me"
