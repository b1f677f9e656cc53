"""The experiment runner's refusals of data-set directories it cannot run, naming the file."""

import json
import os

import numpy as np
import pytest

import sparsecca
import sparsecca.exceptions
import sparsecca.rerank
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


def _result(name="set"):
    """The smallest dict write_report accepts as an experiment result."""
    size = {"sentences": 2, "tokens": 6}
    return {"name": name, "tags": "upos", "k": 3, "folds": 2,
            "sizes": {"train": size, "dev": size, "test": size},
            "rows": {"Baseline": {"dev": 0.5, "test": 0.5}}, "table3": {}, "grids": {}}


class _NotAReranker:
    def fit(self, train, dev):
        return self


BAD_RERANKERS = [
    ([sparsecca.rerank.GenerativeReranker()], TypeError,
     r"^rerankers must be a dict mapping row names to unfitted rerankers, e\.g\. "
     r"\{'Generative': GenerativeReranker\(\)\}, got list$"),
    ("generative", TypeError, r"rerankers must be a dict .* got str$"),
    ({1: sparsecca.rerank.GenerativeReranker()}, TypeError,
     r"^rerankers must have str keys \(the row names\), got 1$"),
    ({"G": sparsecca.rerank.GenerativeReranker}, TypeError,
     r"^rerankers\['G'\] must be a reranker instance \(with fit and rerank\), got <class"),
    ({"G": _NotAReranker()}, TypeError, r"^rerankers\['G'\] must be a reranker instance"),
    ({"G": None}, TypeError, r"^rerankers\['G'\] must be a reranker instance .* got None$"),
]


@pytest.mark.parametrize("rerankers,exc,match", BAD_RERANKERS)
def test_experiment_refuses_bad_rerankers(tmp_path, rerankers, exc, match):
    d = _write(tmp_path / "set", {"train": 12, "dev": 4, "test": 4})
    with pytest.raises(exc, match=match):
        sparsecca.experiment(d, rerankers=rerankers)
    with pytest.raises(exc, match=match):
        sparsecca._experiment.experiment_on_corpora(None, None, None, name="x", k=3,
                                                    rerankers=rerankers)


BAD_RESULTS = [
    ([], ValueError, r"^results must hold at least one experiment result, got an empty list$"),
    (_result(), TypeError, r"^results must be a list of experiment results \(the dicts "
                           r"returned by experiment\), got dict; wrap one result in a list$"),
    ("report", TypeError, r"^results must be a list of experiment results .* got str$"),
    (None, TypeError, r"^results must be a list .* got NoneType$"),
    ([_result(), 3], TypeError, r"^results\[1\] must be an experiment result \(a dict "
                                r"returned by experiment\), got int$"),
    ([{"a": 1}], ValueError, r"^results\[0\] is not an experiment result: no key 'name', "
                            r"'tags', 'k', 'folds', 'sizes', 'rows', 'table3', 'grids'$"),
    ([_result("a"), {k: v for k, v in _result().items() if k != "grids"}], ValueError,
     r"^results\[1\] is not an experiment result: no key 'grids'$"),
    ([_result("en"), _result("fr"), _result("en")], ValueError,
     r"^results\[2\] has the name 'en' of results\[0\]; the names must differ"),
    # '1' != 1, but both wrote 1_grid.png and the JSON key "1": the first set was lost
    ([_result("1"), _result(1)], TypeError,
     r"^results\[1\] name must be a str \(it names the report's columns and the file "
     r"<name>_grid.png\), got 1$"),
    ([_result(None)], TypeError, r"^results\[0\] name must be a str .* got None$"),
    ([_result("")], ValueError, r"^results\[0\] name must be a non-empty name, got ''$"),
    ([_result(" ")], ValueError, r"^results\[0\] name must be a non-empty name, got ' '$"),
    # written outside out_dir, or into a directory that does not exist
    ([_result("../escape")], ValueError,
     r"^results\[0\] name '\.\./escape' holds '/': a data-set name must be a plain file "
     r"name \(it names <name>_grid.png and the report's columns\), without a path "
     r"separator, '\|' or a control character$"),
    ([_result("a/b")], ValueError, r"^results\[0\] name 'a/b' holds '/'"),
    ([_result("ok"), _result("a\\b")], ValueError, r"^results\[1\] name 'a\\\\b' holds '\\\\'"),
    # '|' split the markdown table's column, a newline its row
    ([_result("a|b")], ValueError, r"^results\[0\] name 'a\|b' holds '\|'"),
    ([_result("a\nb")], ValueError, r"^results\[0\] name 'a\\nb' holds '\\n'"),
    # one file on a case-insensitive file system
    ([_result("en"), _result("EN")], ValueError,
     r"^results\[1\] has the name 'EN', which names the same file as results\[0\] \('en'\) "
     r"on a case-insensitive file system \('EN_grid.png'\); the names must differ in more "
     r"than case$"),
]


@pytest.mark.parametrize("results,exc,match", BAD_RESULTS)
def test_write_report_checks_results_before_creating_anything(tmp_path, results, exc, match):
    out = tmp_path / "report"
    with pytest.raises(exc, match=match):
        sparsecca.write_report(results, out)
    assert not out.exists()


def test_write_report_to_an_existing_file(tmp_path):
    out = tmp_path / "report"
    out.write_text("keep me", encoding="utf-8")
    with pytest.raises(NotADirectoryError, match=r"report: exists and is not a directory "
                                                 r"\(out_dir\)$"):
        sparsecca.write_report([_result()], out)
    assert out.read_text(encoding="utf-8") == "keep me"
    written = sparsecca.write_report([_result()], tmp_path / "new" / "dir")
    assert set(written) == {"md", "json"}


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
        sparsecca.write_report([_result()], tmp_path)
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == "keep me"


def test_write_report_writes_nothing_when_json_fails(tmp_path):
    # report.md (and the figures) were written before report.json failed to encode: the
    # partial report made a rerun without overwrite fail
    bad = _result() | {"extra": {"path": tmp_path}}
    with pytest.raises(TypeError):
        sparsecca.write_report([bad], tmp_path / "rep")
    assert not (tmp_path / "rep").exists()  # not even an empty directory
    written = sparsecca.write_report([_result()], tmp_path / "rep")
    assert set(written) == {"md", "json"}


def test_write_report_json_is_strict(tmp_path):
    # NaN (e.g. the unknown-word accuracy of a test set without unknown words) was written
    # as a bare NaN, which is not JSON
    result = _result()
    result["rows"]["Model"] = {"dev": float("nan"), "test": np.float64(np.inf)}
    result["table3"] = {"Baseline": {"test": float("nan")}}
    sparsecca.write_report([result], tmp_path)

    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    rep = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"),
                     parse_constant=refuse)
    assert rep["table2"]["Model"]["set"] == {"dev": None, "test": None}
    assert rep["sets"][0]["table3"] == {"Baseline": {"test": None}}
    assert rep["table2"]["Baseline"]["set"] == {"dev": 0.5, "test": 0.5}


def test_write_report_overwrite_removes_its_stale_figure(tmp_path):
    # a rerun without a grid left the earlier run's set_grid.png beside a report.md that
    # does not show it
    (tmp_path / "set_grid.png").write_bytes(b"earlier figure")
    (tmp_path / "other_grid.png").write_bytes(b"another set's figure")
    with pytest.raises(FileExistsError, match=r"set_grid.png exists; pass overwrite=True"):
        sparsecca.write_report([_result()], tmp_path)
    written = sparsecca.write_report([_result()], tmp_path, overwrite=True)
    assert set(written) == {"md", "json"}
    assert sorted(os.listdir(tmp_path)) == ["other_grid.png", "report.json", "report.md"]
    assert "grid" not in (tmp_path / "report.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("overwrite", ["no", "False", 1, None])
def test_write_report_overwrite_must_be_a_bool(tmp_path, overwrite):
    # any truthy value replaced report.md and report.json: 'no' meant yes
    (tmp_path / "report.md").write_text("keep me", encoding="utf-8")
    with pytest.raises(TypeError, match=r"^overwrite must be True or False, got "):
        sparsecca.write_report([_result()], tmp_path, overwrite=overwrite)
    with pytest.raises(TypeError, match=r"^overwrite must be True or False, got 'no'$"):
        sparsecca.write_report([_result()], tmp_path / "new", overwrite="no")
    assert os.listdir(tmp_path) == ["report.md"]
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == "keep me"


@pytest.mark.parametrize("name,exc,match", [
    (123, TypeError, r"^name must be a str \(it names the report's columns and the file "
                     r"<name>_grid.png\), got 123$"),
    ("", ValueError, r"^name must be a non-empty name, got ''$"),
    ("../x", ValueError, r"^name '\.\./x' holds '/': a data-set name must be a plain file"),
])
def test_experiment_refuses_a_bad_name_before_running(tmp_path, name, exc, match):
    # a name that cannot name the report's files was refused by write_report, at the end
    d = _write(tmp_path / "set", {"train": 3, "dev": 2, "test": 2})
    with pytest.raises(exc, match=match):
        sparsecca.experiment(d, name=name)  # before check_folds refuses the 3 sentences
    with pytest.raises(exc, match=match):
        sparsecca._experiment.experiment_on_corpora(None, None, None, name=name)


def test_experiment_default_name_must_name_a_file(tmp_path):
    d = _write(tmp_path / "a|b", {"train": 12, "dev": 4, "test": 4})
    with pytest.raises(ValueError, match=r"^the name of \S*a\|b \(give name=\) 'a\|b' "
                                         r"holds '\|'"):
        sparsecca.experiment(d, k=2, folds=2)


@pytest.mark.parametrize("split", ["dev", "test"])
def test_a_one_sentence_dev_or_test_split_is_named(tmp_path, split):
    # paired_bootstrap refused it at the end, after the tagger and a reranker, without the file
    d = _write(tmp_path / "set", {"train": 12, "dev": 4, "test": 4} | {split: 1})
    pattern = (rf"set/{split}.conllu: 1 non-empty sentence; the significance tests \(paired "
               rf"bootstrap over sentences\) need at least 2$")
    with pytest.raises(DatasetError, match=pattern):
        load_splits(d)
    with pytest.raises(DatasetError, match=pattern):
        sparsecca.experiment(d, k=2, folds=2, rerankers={})
    data = load_splits(_write(tmp_path / "ok", {"train": 12, "dev": 4, "test": 4}))
    data[split] = data[split].select([0])
    with pytest.raises(DatasetError, match=rf"^the {split} split: 1 non-empty sentence;"):
        sparsecca._experiment.experiment_on_corpora(data["train"], data["dev"], data["test"],
                                                    name="x", k=2, folds=2, rerankers={})


def test_a_tagset_mismatch_names_the_files(tmp_path):
    d = _write(tmp_path / "set", {"train": 12, "dev": 4, "test": 4})
    text = (d / "test.conllu").read_text(encoding="utf-8")
    (d / "test.conllu").write_text(text.replace("NOUN", "QN").replace("VERB", "QV"),
                                   encoding="utf-8")
    # "corpus gold tags: 100.0% ... are not in the tagset of this TrigramHMM": which corpus?
    with pytest.raises(sparsecca.exceptions.TagsetMismatchError,
                       match=r"^\S*set/test.conllu: corpus gold tags: 100.0% of the tag tokens "
                             r"\(12 of 12\) are not in the tagset of this TrigramHMM .* \(the "
                             r"tagger was trained on \S*set/train.conllu\)$"):
        sparsecca.experiment(d, k=2, folds=2, rerankers={})


def test_a_reranker_failing_on_a_tiny_train_split_is_named(tmp_path):
    # e.g. "n_components=100 ... exceeds ...": an experiment user never chose n_components,
    # and the message named neither the row nor the data
    d = _write(tmp_path / "tiny", {"train": 4, "dev": 4, "test": 4})
    with pytest.raises(ValueError, match=r"^G \(reranker\), fitted on \S*tiny/train.conllu \(4 "
                                         r"sentences\) and tuned on \S*tiny/dev.conllu: \S"):
        sparsecca.experiment(d, k=3, folds=2,
                             rerankers={"G": sparsecca.rerank.GenerativeReranker()})


@pytest.mark.parametrize("kwargs,exc,match", [
    # numpy's "expected non-negative integer", raised from the jackknife after the tagger
    ({"random_state": -1}, ValueError,
     r"^random_state must be None, an int >= 0, a numpy Generator or RandomState, got -1$"),
    ({"random_state": "x"}, TypeError, r"^random_state must be None, an int >= 0, .* got 'x'$"),
    ({"random_state": 1.5}, TypeError, r"^random_state must be None, an int >= 0, .* got 1.5$"),
    # 'no' showed the progress bars
    ({"progress": "no"}, TypeError, r"^progress must be True or False, got 'no'$"),
    ({"progress": None}, TypeError, r"^progress must be True or False, got None$"),
])
def test_experiment_checks_seed_and_progress_first(tmp_path, kwargs, exc, match):
    d = _write(tmp_path / "set", {"train": 12, "dev": 4, "test": 4})
    with pytest.raises(exc, match=match):
        sparsecca.experiment(d, k=2, folds=2, rerankers={}, **kwargs)
    data = load_splits(d)
    with pytest.raises(exc, match=match):
        sparsecca._experiment.experiment_on_corpora(data["train"], data["dev"], data["test"],
                                                    name="x", k=2, folds=2, rerankers={},
                                                    **kwargs)


def test_paths_that_are_not_paths_are_named(tmp_path):
    # pathlib's "expected str, bytes or os.PathLike object, not NoneType"
    with pytest.raises(TypeError, match=r"^data_dir must be a path \(str or path-like\), got "
                                        r"None$"):
        sparsecca.experiment(None)
    with pytest.raises(TypeError, match=r"^out_dir must be a path \(str or path-like\), got "
                                        r"None$"):
        sparsecca.write_report([_result()], None)


def test_seeds_and_generators_are_accepted(tmp_path):
    d = _write(tmp_path / "set", {"train": 12, "dev": 4, "test": 4})
    a = sparsecca.experiment(d, k=2, folds=2, rerankers={}, random_state=None)
    b = sparsecca.experiment(d, k=2, folds=2, rerankers={},
                             random_state=np.random.default_rng(0), progress=np.False_)
    assert a["rows"]["Baseline"]["test"] == b["rows"]["Baseline"]["test"]


def test_a_callers_rerankers_are_fitted_in_place_and_its_tagger_is_cloned(tmp_path):
    # documented: the caller can inspect or save its rerankers afterwards; the tagger is
    # cloned (fitted on train and on each jackknife fold), so the caller's stays unfitted
    import sparsecca.data
    import sparsecca.tagging

    rng = np.random.default_rng(0)
    d = tmp_path / "set"
    d.mkdir()
    for split, n in {"train": 30, "dev": 8, "test": 8}.items():
        # ambiguous words, so that k = 2 gives two candidates
        text = "".join("".join(f"{j}\t{w}\t_\t{t}\t_\t_\t0\t_\t_\t_\n" for j, (w, t) in
                               enumerate(zip(rng.choice(list("abc"), 4),
                                             rng.choice(["NOUN", "VERB"], 4)), 1)) + "\n"
                       for _ in range(n))
        (d / f"{split}.conllu").write_text(text, encoding="utf-8")
    model = sparsecca.rerank.PerceptronReranker()
    tagger = sparsecca.tagging.TrigramHMM()
    out = sparsecca.experiment(d, k=2, folds=2, rerankers={"P": model}, tagger=tagger)
    dev = sparsecca.tagging.TrigramHMM().fit(
        sparsecca.data.read_conllu(d / "train.conllu")).nbest(
        sparsecca.data.read_conllu(d / "dev.conllu"), k=2)
    assert dev.accuracy(model.rerank(dev)) == out["rows"]["P"]["dev"]
    with pytest.raises(sparsecca.exceptions.NotFittedError):
        tagger.nbest(sparsecca.data.read_conllu(d / "dev.conllu"), k=2)
