"""The ``demo`` and ``experiment`` verbs of :mod:`sparsecca.cli`: the Table-2 protocol on the
synthetic corpus or on data set directories, and its report."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from . import registry
from ._atomic import check_writable
from ._cli_common import (
    _INPUT_VIEWS,
    UsageError,
    _info,
    _log,
    _one_line,
    _pick_rerankers,
    _progress,
)


def _cap_components(models: dict, n_train: int) -> None:
    """Cap the n_components of the CCA rerankers at ``n_train``, the number of training
    sentences, which bounds the rank of the cross-covariance (one per sentence): the demo's
    smallest corpora would otherwise ask for more components than exist."""
    for model in models.values():
        params = model.get_params()
        if "n_components" in params and params["n_components"] > n_train:
            model.set_params(n_components=max(1, n_train))


def _run_protocol(sets, args, rerankers_spec, seed, cap_components: bool = False):
    """Run experiment_on_corpora on each (name, tags, train, dev, test); with
    ``cap_components`` (the demo), the CCA rerankers' n_components at most the training
    sentences."""
    from ._experiment import experiment_on_corpora

    results = []
    tagger_name = getattr(args, "tagger", None) or "hmm"
    for name, tags, view, data in sets:
        models = _pick_rerankers(rerankers_spec, seed, view)
        if cap_components:
            _cap_components(models, data["train"].n_sentences)
        tagger = registry.get(tagger_name, "tagger").make(seed)
        _info(args, f"[{name}] {tags}, {view} input view: train {data['train'].n_sentences} "
                    f"sentences, dev {data['dev'].n_sentences}, test "
                    f"{data['test'].n_sentences}; tagger {tagger_name}; {len(models)} rerankers")
        t0 = time.perf_counter()
        r = experiment_on_corpora(data["train"], data["dev"], data["test"], name=name,
                                  tags=tags, k=args.k, folds=args.folds, rerankers=models,
                                  tagger=tagger, random_state=seed, progress=_progress(args),
                                  sources=data.get("paths"), log=_log(args),
                                  partitions=getattr(args, "partitions", None))
        if "paths" in data:
            r["paths"] = data["paths"]
        r["timings"]["total"] = time.perf_counter() - t0
        _info(args, f"[{name}] done in {r['timings']['total']:.1f} s")
        results.append(r)
    return results


def _report_targets(out: Path, names, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a directory (--out)")
    if not force:
        for f in ["report.md", "report.json"] + [f"{n}_grid.png" for n in names]:
            if (out / f).exists():
                raise UsageError(f"{out / f} exists; pass --force to overwrite the report")
    # the report directory (or the nearest existing one above it, where it will be made)
    # must receive files: probed now, not after the training
    probe = out
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.is_dir():
        try:
            check_writable(probe / "report.md")
        except OSError as exc:
            raise UsageError(f"{out}: cannot write the report there ({_one_line(exc)})") \
                from None


def _finish_report(results, args) -> None:
    from ._experiment import format_table, write_report

    print(format_table(results))
    written = write_report(results, args.out, overwrite=args.force)
    _info(args, "report: " + ", ".join(sorted(written.values())))
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        # said even with --quiet: a missing figure should not go unnoticed
        print("note: no Figure-1 plot: matplotlib is not installed (install the 'plot' "
              "extra: pip install \".[plot]\")", file=sys.stderr)


def _cmd_demo(args) -> int:
    from .data import synthetic_corpus, train_test_split

    out = Path(args.out)
    _report_targets(out, ["synthetic"], args.force)
    _pick_rerankers(args.models, args.seed)  # unknown names fail before any work
    t0 = time.perf_counter()
    corpus = synthetic_corpus(args.sentences, random_state=args.seed)
    rest, test = train_test_split(corpus, test_size=0.15, random_state=args.seed)
    train, dev = train_test_split(rest, test_size=0.15 / 0.85, random_state=args.seed + 1)
    _info(args, f"synthetic corpus: {corpus.n_sentences} sentences, {corpus.n_tokens} tokens, "
                f"{len(corpus.words)} word types, {len(corpus.tags)} tags")
    data = {"train": train, "dev": dev, "test": test}
    results = _run_protocol([("synthetic", "upos", "suffix", data)], args, args.models,
                            args.seed, cap_components=True)
    _finish_report(results, args)
    _info(args, f"demo finished in {time.perf_counter() - t0:.1f} s")
    return 0


def _bad_dataset_field(spec: str, rest: str, opt: str, seen: set) -> str:
    """Why the last field ``opt`` of ``rest:opt`` in ``spec`` cannot be parsed, naming the
    field it stands in (tag column or input view)."""
    from .data import TAG_COLUMNS

    if opt in TAG_COLUMNS or opt in _INPUT_VIEWS:
        kind = "tag columns" if opt in TAG_COLUMNS else "input views"
        return f"{spec!r} gives two {kind}; use DIR[:upos|xpos][:suffix|charngram]"
    before = rest.rpartition(":")[2]
    if not seen and before in TAG_COLUMNS:  # DIR:xpos:OPT: OPT is the input view
        return (f"unknown input view {opt!r} in {spec!r}; use DIR:{before}:suffix or "
                f"DIR:{before}:charngram")
    if not seen and before in _INPUT_VIEWS:
        return (f"unexpected {opt!r} after the input view in {spec!r}; use "
                f"DIR[:upos|xpos][:suffix|charngram]")
    return (f"unknown tag column {opt!r} in {spec!r}; use DIR:upos or DIR:xpos (optionally "
            f"followed by :suffix or :charngram)")


def _parse_dataset(spec: str, default_tags, default_view):
    """``DIR[:upos|xpos][:suffix|charngram]`` -> (Path, tags, input view)."""
    from .data import TAG_COLUMNS

    p, tags, view = Path(spec), default_tags, default_view
    head = spec
    seen = set()
    while ":" in head and not Path(head).is_dir():
        rest, _, opt = head.rpartition(":")
        if opt in TAG_COLUMNS and "tags" not in seen:
            tags, kind = opt, "tags"
        elif opt in _INPUT_VIEWS and "view" not in seen:
            view, kind = opt, "view"
        else:
            raise UsageError(_bad_dataset_field(spec, rest, opt, seen))
        seen.add(kind)
        head = rest
    p = Path(head)
    if not p.is_dir():
        raise UsageError(f"{p}: no such directory (a data set directory holds train, dev and "
                         f"test CoNLL-U files)")
    if tags is None:
        raise UsageError(f"{p}: which tag column? give --tags upos|xpos or {spec}:upos")
    return p, tags, view


def _cmd_experiment(args) -> int:
    from ._experiment import _find_split, check_folds, check_set_names, load_splits

    specs = [_parse_dataset(s, args.tags, args.input_view) for s in args.data_dirs]
    for d, _, _ in specs:  # every directory is checked before anything runs
        for split in ("train", "dev", "test"):
            _find_split(d, split)
    names, seen = [], {}
    for d, _, _ in specs:
        base = d.resolve().name or "data"
        # by case too: EN/ and en/ would share a figure on a case-insensitive file system
        n = seen[base.casefold()] = seen.get(base.casefold(), 0) + 1
        names.append(base if n == 1 else f"{base}-{n}")
    # a directory name that cannot name the report's files fails now, not after training
    check_set_names(names, [f"data set {d}" for d, _, _ in specs])
    out = Path(args.out)
    _report_targets(out, names, args.force)
    _pick_rerankers(args.models, args.seed)  # unknown names fail now, not after hours
    sets = []
    for (d, tags, view), name in zip(specs, names):
        t0 = time.perf_counter()
        data = load_splits(d, tags)  # all files are read (and validated) before any training
        check_folds(data, args.folds)
        _info(args, f"read {d} ({tags}) in {time.perf_counter() - t0:.1f} s")
        sets.append((name, tags, view, data))
    results = _on_scheduler(args, lambda: _run_protocol(sets, args, args.models, args.seed))
    _finish_report(results, args)
    return 0


def _on_scheduler(args, run):
    """``run()`` in process, or with ``--scheduler`` on that Dask scheduler over two sentence
    partitions per worker."""
    if args.scheduler is None:
        return run()
    from .distributed import scheduler

    with scheduler(args.scheduler) as client:
        workers = len(client.scheduler_info(n_workers=-1)["workers"])
        args.partitions = 2 * max(workers, 1)
        _info(args, f"scheduler {args.scheduler}: {workers} workers, "
                    f"{args.partitions} partitions a split")
        return run()
