"""The paper's experimental protocol (section 4) on a directory of CoNLL-U files.

For one data set: train the TrigramHMM on train; jackknife 10-best lists on train (10 folds);
decode 10-best lists for dev and test; fit every reranker on the jackknifed train lists with
its hyper-parameters tuned on dev; report dev/test accuracy (Table 2), the projection score
alone (Table 3), paired significance against the HMM baseline, and the (tau, lambda) grid of
the softened model (Figure 1).
"""

from __future__ import annotations

import io
import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ._atomic import atomic_write_bytes
from ._experiment_stages import fit_reranker, nbest_lists, reranker_row, table3_row
from ._params import check_bool, check_int, check_random_state
from .data import read_conllu

__all__ = ["DatasetError", "load_splits", "experiment", "experiment_on_corpora", "write_report",
           "format_table"]

_SPLITS = ("train", "dev", "test")
#: the registry's name of the tagger used when none is given
DEFAULT_TAGGER = "hmm"


class DatasetError(ValueError):
    """A data-set directory is missing, lacks one of train/dev/test, holds two files for one
    (e.g. dev.conllu and dev.conllu.gz), or holds an empty one."""


def _find_split(data_dir: Path, split: str) -> Path:
    found = [data_dir / (split + suffix)
             for suffix in (".conllu", ".conllu.gz", ".conll", ".conll.gz")
             if (data_dir / (split + suffix)).is_file()]
    if len(found) > 1:
        # taking the first would silently ignore the others, which may differ
        raise DatasetError(f"{data_dir}: {split} is ambiguous, found "
                           f"{' and '.join(p.name for p in found)}; keep one of them")
    if found:
        return found[0]
    raise DatasetError(
        f"{data_dir}: no {split}.conllu or {split}.conllu.gz (a data set directory holds "
        f"train, dev and test CoNLL-U files)"
    )


def load_splits(data_dir, tags: str = "upos") -> dict:
    """Read train/dev/test (.conllu or .conllu.gz) from ``data_dir``.

    Raises
    ------
    DatasetError
        No such directory, a split missing, two files for one split (e.g. ``dev.conllu``
        and ``dev.conllu.gz``), or a split with no sentences (naming the file).

    Returns
    -------
    dict with keys 'train', 'dev', 'test' (TaggedCorpus each) and 'paths'.
    """
    d = Path(data_dir)
    if not d.is_dir():
        raise DatasetError(f"{d}: not a directory")
    if tags not in ("upos", "xpos"):
        raise ValueError(f"tags must be 'upos' or 'xpos', got {tags!r}")
    paths = {s: _find_split(d, s) for s in _SPLITS}
    out = {s: read_conllu(paths[s], tags=tags) for s in _SPLITS}
    for s in _SPLITS:
        if out[s].n_tokens == 0:
            # named here: downstream the empty corpus would be refused without its file
            raise DatasetError(f"{paths[s]}: no sentences (the {s} split is empty or holds "
                               f"only comments)")
    for s in ("dev", "test"):
        check_eval_split(out[s], paths[s])
    out["paths"] = {s: str(p) for s, p in paths.items()}
    return out


def check_eval_split(corpus, where) -> None:
    """Refuse, naming ``where``, a dev or test corpus of fewer than 2 non-empty sentences.

    The paired bootstrap resamples sentences: on one sentence it would only say which
    system won on it, and it refused that only after the tagger and a reranker had run.
    """
    n = int(np.count_nonzero(np.diff(corpus.offsets)))
    if n < 2:
        raise DatasetError(f"{where}: {n} non-empty sentence{'s' * (n != 1)}; the "
                           f"significance tests (paired bootstrap over sentences) need at "
                           f"least 2")


def check_folds(data, folds):
    """Refuse, naming the training file, a train split of fewer sentences than the jackknife
    has folds (``data`` as returned by :func:`load_splits`)."""
    n_train = data["train"].n_sentences
    if isinstance(folds, (int, np.integer)) and 2 <= folds and n_train < folds:
        raise DatasetError(f"{data['paths']['train']}: {n_train} sentences, fewer than the "
                           f"{folds} jackknife folds (folds, --folds)")


def _check_rerankers(rerankers) -> None:
    """None or a dict name -> unfitted reranker (anything with ``fit`` and ``rerank``)."""
    if rerankers is None:
        return
    if not isinstance(rerankers, Mapping):
        raise TypeError(f"rerankers must be a dict mapping row names to unfitted rerankers, "
                        f"e.g. {{'Generative': GenerativeReranker()}}, got "
                        f"{type(rerankers).__name__}")
    for name, model in rerankers.items():
        if not isinstance(name, str):
            raise TypeError(f"rerankers must have str keys (the row names), got {name!r}")
        if isinstance(model, type) or not all(callable(getattr(model, m, None))
                                               for m in ("fit", "rerank")):
            raise TypeError(f"rerankers[{name!r}] must be a reranker instance (with fit and "
                            f"rerank), got {model!r}")


def _check_path(name: str, value) -> None:
    # pathlib's own message ("expected str, bytes or os.PathLike object") names no argument
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or path-like), got {value!r}")


def _check_run_options(random_state, progress) -> None:
    """Refuse a bad ``random_state`` or ``progress`` before any work, naming the argument."""
    check_bool("progress", progress)  # 'no' showed the bars
    if not isinstance(random_state, np.random.RandomState):
        # validation only: the seed itself is passed on (a RandomState would be advanced)
        check_random_state(random_state)


def experiment(data_dir, tags: str = "upos", *, k: int = 10, folds: int = 10, rerankers=None,
               random_state=0, progress: bool = False, name: str | None = None,
               tagger=None, partitions=None) -> dict:
    """Run the Table 2 protocol on one data set directory.

    Parameters
    ----------
    data_dir : path
        Directory with train/dev/test CoNLL-U files (.conllu or .conllu.gz).
    tags : {'upos', 'xpos'}
    k, folds, rerankers, random_state, progress, tagger, partitions
        As in :func:`experiment_on_corpora`.
    name : str, optional
        Data-set name in the report (default: the directory name); a plain file name (see
        :func:`check_set_name`).

    Returns
    -------
    dict
        See :func:`experiment_on_corpora`; also ``paths`` and a ``read`` timing.

    Examples
    --------
    A data set directory of three small CoNLL-U files, and one quick reranker:

    >>> import os
    >>> from sparsecca.data import synthetic_corpus, train_test_split, write_conllu
    >>> from sparsecca.rerank import PerceptronReranker
    >>> rest, test = train_test_split(synthetic_corpus(300, random_state=0), test_size=0.2,
    ...                               random_state=0)
    >>> train, dev = train_test_split(rest, test_size=0.25, random_state=1)
    >>> os.mkdir("synth")
    >>> for split, corpus in (("train", train), ("dev", dev), ("test", test)):
    ...     write_conllu(corpus, f"synth/{split}.conllu")
    >>> result = experiment("synth", k=3, folds=2, rerankers={
    ...     "Perceptron (Sufx)": PerceptronReranker(n_epochs=2, random_state=0)})
    >>> result["name"], sorted(result["rows"])
    ('synth', ['Baseline', 'Oracle', 'Perceptron (Sufx)'])
    >>> result["paths"]["dev"]
    'synth/dev.conllu'
    >>> result["rows"]["Oracle"]["test"] >= result["rows"]["Baseline"]["test"]
    True
    """
    _check_path("data_dir", data_dir)
    _check_rerankers(rerankers)  # before the data is read
    _check_run_options(random_state, progress)
    if name is not None:
        check_set_name(name)
    t0 = time.perf_counter()
    data = load_splits(data_dir, tags)
    t_read = time.perf_counter() - t0
    check_folds(data, folds)
    if name is None:
        # absolute: '.' has no name of its own (a symlink keeps its name)
        name = check_set_name(Path(os.path.abspath(data_dir)).name or "data",
                              f"the name of {data_dir} (give name=)")
    out = experiment_on_corpora(data["train"], data["dev"], data["test"],
                                name=name, tags=tags, k=k, folds=folds,
                                rerankers=rerankers, random_state=random_state,
                                progress=progress, tagger=tagger, sources=data["paths"],
                                partitions=partitions)
    out["paths"] = data["paths"]
    out["timings"] = {"read": t_read, **out["timings"]}
    return out


def _check_experiment(dev, test, *, name, k, rerankers, random_state, progress, sources,
                      log):
    """The arguments of :func:`experiment_on_corpora` checked; returns the stage logger and
    the name of each split in messages."""
    check_set_name(name)
    if not isinstance(k, (int, np.integer)) or k < 2:
        raise ValueError(f"k must be an int >= 2 (reranking needs candidates), got {k!r}")
    _check_rerankers(rerankers)
    _check_run_options(random_state, progress)
    if log is not None and not callable(log):
        raise TypeError(f"log must be callable or None, got {type(log).__name__}")
    say = log if log is not None else (lambda msg: None)
    where = {s: str(sources[s]) if sources and s in sources else f"the {s} split"
             for s in _SPLITS}
    for s, corpus in (("dev", dev), ("test", test)):
        check_eval_split(corpus, where[s])
    return say, where


def experiment_on_corpora(train, dev, test, *, name: str, tags: str = "", k: int = 10,
                          folds: int = 10, rerankers=None, random_state=0,
                          progress: bool = False, tagger=None, sources=None,
                          log=None, partitions=None) -> dict:
    """Run the Table 2 protocol on three tagged corpora.

    Parameters
    ----------
    train, dev, test : TaggedCorpus
    name : str
        Data-set name in the report; a plain file name (see :func:`check_set_name`).
    tags : str
        Which tag column (for the report only).
    k : int >= 2
        Candidates per sentence.
    folds : int >= 2
        Jackknife folds for the training n-best lists.
    rerankers : dict name -> unfitted reranker, optional
        Default: every registered reranker (:func:`sparsecca.registry.default_rerankers`).
        A caller's rerankers are fitted in place (unlike ``tagger``, which is cloned), so
        they can be inspected or saved afterwards; pass clones to keep the originals
        unfitted.
    random_state : None, int >= 0, numpy Generator or RandomState
        Seed of the jackknife folds and the default rerankers.
    progress : bool
        tqdm progress bars on the long steps.
    log : callable, optional
        Called with one line of text per stage and per model fit, once it is done (what
        and how long), e.g. ``print``; for a log file, where progress bars do not show.
    tagger : unfitted tagger, optional
        Default: the registry's ``hmm``, ``TrigramHMM()``.
    sources : dict split -> str, optional
        Where ``train``, ``dev`` and ``test`` came from (e.g. their files), named in error
        messages; default "the train split" etc.
    partitions : int >= 1, optional
        Run as Dask tasks on the active scheduler over this many sentence partitions of
        each split (docs/distributed.md); the same results as in process (the default).

    Returns
    -------
    dict
        JSON-serialisable: ``name``, ``tags``, sizes, ``rows`` keyed by model name with
        ``dev``/``test`` accuracy (and significance, tuned values, fit time), ``table3``,
        ``grids`` (for the Figure-1 plot) and ``timings``.

    Examples
    --------
    >>> from sparsecca import registry
    >>> from sparsecca.data import synthetic_corpus, train_test_split
    >>> rest, test = train_test_split(synthetic_corpus(300, random_state=0), test_size=0.2,
    ...                               random_state=0)
    >>> train, dev = train_test_split(rest, test_size=0.25, random_state=1)
    >>> models = registry.rerankers(0, names=["perceptron-sufx"])
    >>> result = experiment_on_corpora(train, dev, test, name="synthetic", k=3, folds=2,
    ...                                rerankers=models)
    >>> result["sizes"]["train"]["sentences"], sorted(result["rows"])
    (180, ['Baseline', 'Oracle', 'Perceptron (Sufx)'])
    >>> row = result["rows"]["Perceptron (Sufx)"]
    >>> sorted(row["significance_test"])
    ['gain', 'n01', 'n10', 'p_bootstrap', 'p_mcnemar']
    >>> models["Perceptron (Sufx)"].n_epochs_ >= 1  # fitted in place
    True
    """
    from . import registry

    say, where = _check_experiment(dev, test, name=name, k=k, rerankers=rerankers,
                                   random_state=random_state, progress=progress,
                                   sources=sources, log=log)
    if partitions is not None:
        partitions = check_int("partitions", partitions, 1)
    timings: dict[str, float] = {}
    if tagger is None:
        tagger = registry.get(DEFAULT_TAGGER, "tagger").make(random_state)
    train_nb, dev_nb, test_nb = nbest_lists(tagger, train, dev, test, k=k, folds=folds,
                                             random_state=random_state, progress=progress,
                                             where=where, timings=timings,
                                             say=lambda msg: say(f"[{name}] {msg}"),
                                             partitions=partitions)

    rows: dict[str, dict] = {
        "Baseline": {"dev": dev_nb.top1_accuracy(), "test": test_nb.top1_accuracy(),
                     "test_unknown": test_nb.top1_accuracy(tokens="unknown")},
        "Oracle": {"dev": dev_nb.oracle_accuracy(), "test": test_nb.oracle_accuracy()},
    }
    table3: dict[str, dict] = {}
    grids: dict[str, dict] = {}
    models = registry.rerankers(random_state) if rerankers is None else rerankers
    items = list(models.items())
    if progress:
        from tqdm.auto import tqdm

        items = tqdm(items, desc="rerankers", unit="model")
    for model_name, model in items:
        if progress and rerankers is None and "progress" in model.get_params():
            # the default CCA rerankers' own bar over their (tau, lam) grid, under this one
            # (a caller's models keep the parameters they were given)
            model.set_params(progress=True)
        fit_s = fit_reranker(model, model_name, train_nb, dev_nb, where)
        say(f"[{name}] fitted {model_name} ({len(rows) - 1} of {len(models)}): {fit_s:.1f} s")
        rows[model_name] = reranker_row(model, dev_nb, test_nb, fit_s)
        if hasattr(model, "projection_scores"):
            table3[model_name] = table3_row(model, dev_nb, test_nb)
        if getattr(model, "grid_scores_", None):
            grids[model_name] = model.grid_scores_
    splits = {"train": train, "dev": dev, "test": test}
    return {
        "name": name,
        "tags": tags,
        "k": int(k),
        "folds": int(folds),
        "sizes": {s: {"sentences": c.n_sentences, "tokens": c.n_tokens}
                  for s, c in splits.items()},
        "rows": rows,
        "table3": table3,
        "grids": grids,
        "timings": timings,
    }


def _mark(row) -> str:
    sig = row.get("significance_test")
    if not sig or sig["gain"] <= 0:
        return ""
    p = sig["p_bootstrap"]
    return "‡" if p < 0.01 else ("†" if p < 0.05 else "")


def format_table(results: list[dict]) -> str:
    """Markdown Table 2 (dev and test per set) and Table 3 for one or more data sets."""
    names = [r["name"] for r in results]
    models: list[str] = []
    for r in results:
        for m in r["rows"]:
            if m not in models:
                models.append(m)
    head = "| model | " + " | ".join(f"{n} dev" for n in names) + " | " \
        + " | ".join(f"{n} test" for n in names) + " |"
    sep = "|---|" + "---:|" * (2 * len(names))
    lines = ["## Table 2: token accuracy (%)", "", head, sep]
    for m in models:
        cells = []
        for split in ("dev", "test"):
            for r in results:
                row = r["rows"].get(m)
                if row is None:
                    cells.append("–")
                else:
                    mark = _mark(row) if split == "test" else ""
                    cells.append(f"{100 * row[split]:.2f}{mark}")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    lines += ["", "† / ‡: test gain over Baseline significant at p < 0.05 / p < 0.01 "
              "(paired bootstrap over sentences, 10,000 resamples; McNemar p in the JSON).", ""]
    edges = [f"{m} on {r['name']}: {e['param']} = {e['value']:g} ({e['side']} edge of "
             f"{', '.join(f'{v:g}' for v in e['tried'])})"
             for r in results for m, row in r["rows"].items() for e in row.get("grid_edges", [])]
    if edges:
        lines += ["Tuned on an edge of the dev grid: " + "; ".join(edges) + ".", ""]
    t3models = [m for m in models if any(m in r["table3"] for r in results)]
    if t3models:
        lines += ["## Table 3: projection score alone (w → ∞), test accuracy (%)", "",
                  "| model | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        for m in t3models:
            cells = [f"{100 * r['table3'][m]['test']:.2f}" if m in r["table3"] else "–"
                     for r in results]
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _plot_grid(result: dict) -> bytes | None:
    """Figure 1 as PNG bytes: dev accuracy over the (tau, lambda) grid of the softened model
    (None without such a grid or without matplotlib)."""
    grid = None
    for key in ("Softened-Disc", "Discriminative"):
        if key in result["grids"]:
            grid = result["grids"][key]
            break
    if grid is None:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    taus = np.asarray(grid["tau"], dtype=float)
    lams = np.asarray(grid["lam"], dtype=float)
    acc = 100 * np.asarray(grid["accuracy"], dtype=float)  # shape (n_tau, n_lam)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for j, lam in enumerate(lams):
        ax.plot(taus, acc[:, j], marker="o", label=f"λ = {lam:g}")
    ax.axhline(100 * result["rows"]["Baseline"]["dev"], color="grey", ls="--", label="HMM")
    ax.set_xlabel("τ (regularisation)")
    ax.set_ylabel("dev accuracy (%)")
    ax.set_title(f"{result['name']}: softened model, dev accuracy")
    ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=120)
    finally:
        plt.close(fig)
    return buf.getvalue()


def _json_safe(value):
    """``value`` with every NaN or infinite float (e.g. the unknown-word accuracy of a test
    set without unknown words) replaced by None: JSON has no NaN, ``null`` is the JSON."""
    if isinstance(value, Mapping):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (float, np.floating)) and not math.isfinite(value):
        return None
    return value


#: the keys of an experiment result that write_report reads
_RESULT_KEYS = ("name", "tags", "k", "folds", "sizes", "rows", "table3", "grids")

#: a set name names ``<name>_grid.png`` in the report directory (a separator would put it
#: elsewhere) and columns of report.md's tables ('|' would split one)
_NAME_FORBIDDEN = "/\\|"


def check_set_name(name, label: str = "name") -> str:
    """``name`` if it can name a data set in a report, else an error naming ``label``.

    The name becomes the file ``<name>_grid.png`` in the report directory, keys of
    report.json and column heads of report.md, so it must be a non-empty ``str`` without a
    path separator, ``|`` or a control character.
    """
    if not isinstance(name, str):
        raise TypeError(f"{label} must be a str (it names the report's columns and the file "
                        f"<name>_grid.png), got {name!r}")
    if not name.strip():
        raise ValueError(f"{label} must be a non-empty name, got {name!r}")
    bad = next((c for c in name if c in _NAME_FORBIDDEN or not c.isprintable()), None)
    if bad is not None:
        raise ValueError(f"{label} {name!r} holds {bad!r}: a data-set name must be a plain "
                         f"file name (it names <name>_grid.png and the report's columns), "
                         f"without a path separator, '|' or a control character")
    return name


def check_set_names(names, labels) -> None:
    """Refuse (naming the labels) invalid names or two that would name the same file.

    Names equal up to case are refused too: on a case-insensitive file system (macOS,
    Windows) their figures would overwrite each other.
    """
    seen: dict[str, int] = {}
    for i, (name, label) in enumerate(zip(names, labels, strict=True)):
        check_set_name(name, f"{label} name")
        key = name.casefold()
        if key in seen:
            j = seen[key]
            if names[j] == name:
                raise ValueError(f"{label} has the name {name!r} of {labels[j]}; the names "
                                 f"must differ (they name the report's columns and files)")
            raise ValueError(f"{label} has the name {name!r}, which names the same file as "
                             f"{labels[j]} ({names[j]!r}) on a case-insensitive file system "
                             f"('{name}_grid.png'); the names must differ in more than case")
        seen[key] = i


def _check_results(results) -> None:
    """A non-empty list of experiment results with distinct names that can name files."""
    if isinstance(results, (Mapping, str, bytes)) or not isinstance(results, Sequence):
        hint = "; wrap one result in a list" if isinstance(results, Mapping) else ""
        raise TypeError(f"results must be a list of experiment results (the dicts returned "
                        f"by experiment), got {type(results).__name__}{hint}")
    if not results:
        raise ValueError("results must hold at least one experiment result, got an empty list")
    for i, r in enumerate(results):
        if not isinstance(r, Mapping):
            raise TypeError(f"results[{i}] must be an experiment result (a dict returned by "
                            f"experiment), got {type(r).__name__}")
        missing = [key for key in _RESULT_KEYS if key not in r]
        if missing:
            raise ValueError(f"results[{i}] is not an experiment result: no key "
                             f"{', '.join(map(repr, missing))}")
    # '1' and 1 differ but name the same file and JSON key; '../x' names a file elsewhere
    check_set_names([r["name"] for r in results],
                    [f"results[{i}]" for i in range(len(results))])


def write_report(results: list[dict], out_dir, *, overwrite: bool = False) -> dict:
    """Write ``report.md``, ``report.json`` and one ``<set>_grid.png`` per set to ``out_dir``.

    Parameters
    ----------
    results : list of dict
        One or more results of :func:`experiment` / :func:`experiment_on_corpora`, with
        distinct names.
    out_dir : path
        Directory, created if missing.
    overwrite : bool
        Existing report files are refused (FileExistsError) unless this is True.  Each
        file is written to a unique temporary file in ``out_dir`` and renamed into place,
        so a replaced report is never left half-written.  With True, the
        ``<set>_grid.png`` of a set in ``results`` that gets no figure this time (no grid,
        or no matplotlib) is removed: the directory holds no figure of an earlier run
        that report.md does not show (figures of other sets' names are left alone).

    Returns
    -------
    dict
        What was written: ``md``, ``json`` and ``png:<name>`` -> path.

    Notes
    -----
    Every file is rendered in memory before ``out_dir`` is created and the first file is
    written, so a result that report.json cannot encode (a TypeError) leaves nothing
    behind.  NaN and infinite values (e.g. the unknown-word accuracy of a test set without
    unknown words) are written as ``null``: report.json is strict JSON.

    Raises
    ------
    TypeError, ValueError
        ``results`` is not such a list, or ``overwrite`` is not True or False; checked
        before anything is created.
    NotADirectoryError
        ``out_dir`` is an existing file.

    Examples
    --------
    A result as :func:`experiment` returns it, cut down to what the report reads:

    >>> result = {"name": "synth", "tags": "upos", "k": 3, "folds": 2,
    ...           "sizes": {s: {"sentences": 60, "tokens": 1000}
    ...                     for s in ("train", "dev", "test")},
    ...           "rows": {"Baseline": {"dev": 0.9512, "test": 0.9487},
    ...                    "Oracle": {"dev": 0.9801, "test": 0.9779}},
    ...           "table3": {}, "grids": {}}
    >>> written = write_report([result], "report")
    >>> sorted(written)
    ['json', 'md']
    >>> print(open(written["md"], encoding="utf-8").read())  # doctest: +ELLIPSIS
    # sparsecca experiment report
    <BLANKLINE>
    - **synth** (upos): train 60 sentences, dev 60, test 60; k = 3, 2-fold jackknife
    <BLANKLINE>
    ## Table 2: token accuracy (%)
    <BLANKLINE>
    | model | synth dev | synth test |
    |---|---:|---:|
    | Baseline | 95.12 | 94.87 |
    | Oracle | 98.01 | 97.79 |
    ...
    >>> write_report([result], "report")
    Traceback (most recent call last):
    ...
    FileExistsError: report/report.md exists; pass overwrite=True (--force) to overwrite it
    """
    # a truthy string such as 'no' must not replace an existing report
    overwrite = check_bool("overwrite", overwrite)
    _check_results(results)
    _check_path("out_dir", out_dir)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out}: exists and is not a directory (out_dir)")
    targets = {"md": out / "report.md", "json": out / "report.json"}
    pngs = {r["name"]: out / f"{r['name']}_grid.png" for r in results}
    if not overwrite:
        for p in [*targets.values(), *pngs.values()]:
            if p.exists():
                raise FileExistsError(f"{p} exists; pass overwrite=True (--force) to "
                                      f"overwrite it")
    md = ["# sparsecca experiment report", ""]
    for r in results:
        s = r["sizes"]
        md.append(f"- **{r['name']}** ({r['tags']}): train {s['train']['sentences']} sentences, "
                  f"dev {s['dev']['sentences']}, test {s['test']['sentences']}; k = {r['k']}, "
                  f"{r['folds']}-fold jackknife")
    md += ["", format_table(results)]
    figures = {}
    for r in results:
        png = _plot_grid(r)
        if png is not None:
            figures[r["name"]] = png
            md.append(f"![{r['name']} grid]({pngs[r['name']].name})")
    by_model: dict[str, dict] = {}
    for r in results:
        for m, row in r["rows"].items():
            by_model.setdefault(m, {})[r["name"]] = {"dev": row["dev"], "test": row["test"]}
    payload = {"table2": by_model, "sets": results}
    # rendered before anything is written: a value JSON cannot encode leaves no partial
    # report (which a rerun without overwrite would then refuse)
    md_text = "\n".join(md) + "\n"
    json_text = json.dumps(_json_safe(payload), indent=1, default=float, allow_nan=False)
    out.mkdir(parents=True, exist_ok=True)  # after rendering: a failure leaves no empty dir
    written = {}
    for name, png in figures.items():
        atomic_write_bytes(pngs[name], png)
        written[f"png:{name}"] = str(pngs[name])
    atomic_write_bytes(targets["md"], md_text.encode("utf-8"))
    atomic_write_bytes(targets["json"], json_text.encode("utf-8"))
    for name, p in pngs.items():
        if overwrite and name not in figures and p.is_file():
            p.unlink()  # an earlier run's figure that this report does not show
    written.update({k: str(v) for k, v in targets.items()})
    return written
