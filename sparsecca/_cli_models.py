"""The ``train-tagger``, ``tag``, ``train-reranker`` and ``rerank`` verbs of
:mod:`sparsecca.cli`: fit and save a model, decode (and rerank) with saved ones."""

from __future__ import annotations

import time

from . import registry
from ._cli_common import (
    UsageError,
    _check_gold_tagset,
    _column_why,
    _distinct_tags,
    _info,
    _input_file,
    _input_view,
    _load_tagger,
    _log,
    _model_file,
    _model_output,
    _progress,
    _read_document,
    _tag_column,
    _tag_info,
    _tag_output,
    _warn,
)
from ._cli_decode import _check_decode_memory, _decode, _stream_nbest


def _check_column_choice(args, src, column: str, given: bool) -> None:
    """Say which tag column is learnt; warn when the other one has many more tags (an
    en-wsj user who forgot --tags xpos would get a 12-tag model without a word)."""
    counts = _distinct_tags(src)
    other = "xpos" if column == "upos" else "upos"
    how = "--tags" if given else "the default; --tags xpos learns the other one"
    _tag_info(args, column, f"{counts[column]} distinct tags; {how}")
    if not given and counts[other] >= max(2 * counts[column], counts[column] + 10):
        _warn(f"{src}: learning the {column} column ({counts[column]} distinct tags, the "
              f"default), but its {other} column has {counts[other]}; give --tags {other} "
              f"to learn those")


def _cmd_train_tagger(args) -> int:
    from .data import read_conllu

    tagger = registry.get(args.model, "tagger").make()  # an unknown name: ValueError
    src = _input_file(args.train, "training file")
    out = _model_output(args.output, args.force)
    column = args.tags or "upos"
    t0 = time.perf_counter()
    corpus = read_conllu(src, tags=column)
    if corpus.n_tokens == 0:
        raise UsageError(f"{src}: no tokens to train on")
    tagger.fit(corpus)
    path = tagger.save(out, overwrite=args.force,
                       info={"tags": column, "train": str(src),
                             "sentences": corpus.n_sentences, "tokens": corpus.n_tokens})
    _info(args, f"{type(tagger).__name__}: {corpus.n_sentences} sentences, {corpus.n_tokens} "
                f"tokens, {len(tagger.tags_)} {column} tags, {len(tagger.words_)} words; "
                f"{time.perf_counter() - t0:.1f} s; saved to {path}")
    _check_column_choice(args, src, column, args.tags is not None)
    return 0


def _decoder_input(args, src, tagger, column: str, k: int, tagger_path):
    """The document ``src`` (INPUT of ``tag`` / ``rerank``; '-': standard input), its gold
    tags (if any) checked against the tagger's tagset and ``k`` against the memory."""
    doc = _read_document(src, args.format)
    name = "<stdin>" if src == "-" else src
    _check_gold_tagset(doc.gold(column), tagger, column, name, tagger_path)
    _check_decode_memory(tagger, doc.corpus, k, name)
    return doc


def _cmd_tag(args) -> int:
    hmm, info = _load_tagger(args.model)
    column = _tag_column(args, (args.model, info))
    src = _input_file(args.input, stdin=True)
    output = _tag_output(args)
    t0 = time.perf_counter()
    doc = _decoder_input(args, src, hmm, column, args.k, args.model)
    n, n_cand, n_unknown, n_gold, base, _ = _stream_nbest(doc, hmm, column, args.k, args.k,
                                                           output, args)
    msg = (f"tagged {n} sentences, {doc.corpus.n_tokens} tokens ({n_unknown} unknown) in "
           f"{time.perf_counter() - t0:.1f} s; tags in the {column} column "
           f"({_column_why(args, [(args.model, info)])})")
    if n_gold:
        msg += f"; accuracy against the input's {column} column {100 * base / n_gold:.2f}%"
    _info(args, msg)
    return 0


#: train-reranker options passed to the reranker's set_params (option, parameter)
_HYPER = (("n_components", "n_components"), ("tau", "tau"), ("lam", "lam"),
          ("solver", "solver"), ("max_rank", "max_rank"))


def _set_hyperparameters(args, est, row: str) -> None:
    """Pass --n-components, --tau, --lam, --solver and --max-rank to the reranker; an
    option the model does not have is refused, naming the options it has."""
    params = est.get_params()
    given = {p: getattr(args, o) for o, p in _HYPER if getattr(args, o) is not None}
    missing = [p for p in given if p not in params]
    if missing:
        has = [f"--{o.replace('_', '-')}" for o, p in _HYPER if p in params]
        raise UsageError(f"--{missing[0].replace('_', '-')}: the {row} reranker has no such "
                         f"hyperparameter (it takes {', '.join(has) or 'none of these'})")
    if given:
        est.set_params(**given)


def _cmd_train_reranker(args) -> int:
    from .data import read_conllu
    from .tagging import jackknife_nbest

    spec = registry.get(args.model, "reranker")  # an unknown name: ValueError
    row, est = spec.row, spec.make(args.seed, input_view=_input_view(args.input_view))
    if not hasattr(est, "save"):
        raise UsageError(f"the {row} reranker ({type(est).__name__}) cannot be saved by this "
                         f"version; choose another --model")
    _set_hyperparameters(args, est, row)
    hmm, info = _load_tagger(args.tagger)
    column = _tag_column(args, (args.tagger, info))
    train_p = _input_file(args.train, "training file")
    dev_p = _input_file(args.dev, "dev file")
    out = _model_output(args.output, args.force)
    t0 = time.perf_counter()
    train = read_conllu(train_p, tags=column)
    dev = read_conllu(dev_p, tags=column)
    for corpus, path in ((train, train_p), (dev, dev_p)):
        if corpus.n_sentences == 0:
            raise UsageError(f"{path}: no sentences")
        _check_gold_tagset(corpus, hmm, column, path, args.tagger)
    if train.n_sentences < args.folds:
        raise UsageError(f"{train_p}: {train.n_sentences} sentences, fewer than --folds "
                         f"{args.folds}")
    _check_decode_memory(hmm, train, args.k, train_p)
    log = _log(args)
    t1 = time.perf_counter()
    train_nb = jackknife_nbest(hmm, train, k=args.k, folds=args.folds, random_state=args.seed,
                               progress=_progress(args))
    if log:
        log(f"jackknifed {args.k}-best lists of {train_p} ({args.folds} folds): "
            f"{time.perf_counter() - t1:.1f} s")
    t1 = time.perf_counter()
    dev_nb = _decode(hmm, dev, args.k, _progress(args), desc="decoding dev")
    if log:
        log(f"{args.k}-best lists of {dev_p}: {time.perf_counter() - t1:.1f} s")
    _info(args, f"n-best lists ({column} column, "
                f"{_column_why(args, [(args.tagger, info)])}): train {train_nb.n_total} "
                f"candidates (jackknifed, {args.folds} folds), dev {dev_nb.n_total}; "
                f"fitting {row}")
    if _progress(args) and "progress" in est.get_params():
        est.set_params(progress=True)  # the model's bar over its tuning grid
    t1 = time.perf_counter()
    est.fit(train_nb, dev_nb)
    if log:
        log(f"fitted {row}: {time.perf_counter() - t1:.1f} s")
    acc = est.score(dev_nb)
    path = est.save(out, overwrite=args.force,
                    info={"tags": column, "k": args.k, "model": args.model, "row": row,
                          "tagger": str(args.tagger), "train": str(train_p), "dev": str(dev_p)})
    _info(args, f"{row}: dev accuracy {100 * acc:.2f}% (HMM {100 * dev_nb.top1_accuracy():.2f}%, "
                f"oracle {100 * dev_nb.oracle_accuracy():.2f}%); "
                f"{time.perf_counter() - t0:.1f} s; saved to {path}")
    return 0


def _stored_k(rpath, rinfo) -> int:
    """The k train-reranker recorded (10 for files without one); -k itself is checked by
    argparse, this is what a file written elsewhere or edited by hand may hold."""
    k = rinfo.get("k", 10)
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise UsageError(f"{rpath}: stored k must be an int >= 2 (reranking needs "
                         f"candidates), got {k!r}; pass -k")
    return k


def _cmd_rerank(args) -> int:
    from ._persist import load_model, read_model_meta
    from .rerank import BaseReranker

    hmm, tinfo = _load_tagger(args.tagger)
    rpath = _model_file(args.reranker, "reranker model")
    rinfo = read_model_meta(rpath).get("info", {})
    reranker = load_model(rpath)
    if not isinstance(reranker, BaseReranker):
        raise UsageError(f"{rpath}: holds a {type(reranker).__name__}, not a reranker")
    column = _tag_column(args, (args.tagger, tinfo), (rpath, rinfo))
    k = args.k if args.k is not None else _stored_k(rpath, rinfo)
    src = _input_file(args.input, stdin=True)
    output = _tag_output(args)
    t0 = time.perf_counter()
    doc = _decoder_input(args, src, hmm, column, k, args.tagger)
    n, n_cand, _, n_gold, base, acc = _stream_nbest(doc, hmm, column, k, args.top, output,
                                                    args, reranker=reranker)
    msg = (f"reranked {n} sentences ({n_cand} candidates) in {time.perf_counter() - t0:.1f} s;"
           f" tags in the {column} column "
           f"({_column_why(args, [(args.tagger, tinfo), (rpath, rinfo)])})")
    if n_gold:
        msg += (f"; accuracy against the input's {column} column: HMM "
                f"{100 * base / n_gold:.2f}%, reranked {100 * acc / n_gold:.2f}%")
    _info(args, msg)
    return 0
