"""The ``evaluate`` verb of :mod:`sparsecca.cli`: accuracy (known / unknown words), per-tag
scores and paired significance of predicted CoNLL-U against gold."""

from __future__ import annotations

from ._cli_common import (
    UsageError,
    _distinct_tags,
    _input_file,
    _load_tagger,
    _output_file,
    _text_output,
)


def _token_lines(path) -> list[int]:
    """The 1-based line number of every token line (integer id) of a CoNLL-U file."""
    from .data import read_text

    out = []
    for lineno, line in enumerate(read_text(path).split("\n"), 1):
        if line and line[0] != "#" and line.split("\t", 1)[0].isdigit():
            out.append(lineno)
    return out


def _aligned(gold_p, gold, pred_p, pred) -> None:
    """The same sentences and words in ``pred`` as in ``gold``, else an error naming the
    file and line of the first difference."""
    import numpy as np

    if pred.n_tokens != gold.n_tokens or pred.n_sentences != gold.n_sentences \
            or not np.array_equal(pred.offsets, gold.offsets):
        i = int(np.argmax(np.append(pred.lengths[:gold.n_sentences][:pred.n_sentences]
                                    != gold.lengths[:pred.n_sentences], True)))
        if i < min(gold.n_sentences, pred.n_sentences):
            g, p = _token_lines(gold_p), _token_lines(pred_p)
            raise UsageError(f"{pred_p}:{p[pred.offsets[i]]}: sentence {i + 1} has "
                             f"{pred.lengths[i]} tokens, {gold_p}:{g[gold.offsets[i]]} has "
                             f"{gold.lengths[i]} (predictions must keep the gold file's "
                             f"tokens; a k-best file holds several blocks per sentence)")
        raise UsageError(f"{pred_p}: {pred.n_sentences} sentences, {gold_p} has "
                         f"{gold.n_sentences} (predictions must keep the gold file's "
                         f"sentences; a k-best file holds several blocks per sentence)")
    gw = np.array(gold.words.items, dtype=object)[gold.word_ids]
    pw = np.array(pred.words.items, dtype=object)[pred.word_ids]
    bad = np.flatnonzero(gw != pw)
    if bad.size:
        j = int(bad[0])
        raise UsageError(f"{pred_p}:{_token_lines(pred_p)[j]}: word {pw[j]!r} differs from "
                         f"{gold_p}:{_token_lines(gold_p)[j]}'s {gw[j]!r} (predictions must "
                         f"keep the gold file's tokens)")


def _read_tagged(path, column: str):
    from .data import read_conllu

    return read_conllu(path, tags=column)


def _cmd_evaluate(args) -> int:
    import numpy as np

    from .data import Vocabulary, read_conllu
    from .evaluate import accuracy_report, mcnemar, paired_bootstrap, per_tag_scores

    gold_p = _input_file(args.gold, "gold file")
    if args.output is not None and args.output != "-":
        _output_file(args.output, args.force)
    pred_ps = [_input_file(args.pred, "predictions")]
    if args.against is not None:
        pred_ps.append(_input_file(args.against, "predictions (--against)"))
    vocab = None
    if args.train is not None:
        vocab = set(read_conllu(_input_file(args.train, "training file"), tags=None)
                    .words.items)
    elif args.tagger is not None:
        tagger, _ = _load_tagger(args.tagger)
        vocab = set(tagger.words_.items)
    column = args.tags
    if column is None:
        counts = _distinct_tags(gold_p)
        column = "upos" if counts["upos"] else "xpos"
        why = ("the default" if column == "upos" else
               "the gold file has no upos tags") + "; --tags chooses"
    else:
        why = "--tags"
    gold = _read_tagged(gold_p, column)
    if gold.n_tokens == 0:
        raise UsageError(f"{gold_p}: no tokens to evaluate")
    preds = [_read_tagged(p, column) for p in pred_ps]
    for p, pred in zip(pred_ps, preds):
        _aligned(gold_p, gold, p, pred)
    tags = Vocabulary(dict.fromkeys(list(gold.tags.items)
                                    + [t for pred in preds for t in pred.tags.items]))
    g = tags.ids(np.array(gold.tags.items, dtype=object)[gold.tag_ids].tolist())
    unknown = None
    if vocab is not None:
        words = np.array(gold.words.items, dtype=object)
        unknown = ~np.isin(words, list(vocab))[gold.word_ids]
    out = [f"gold: {gold_p}, {column} column ({why}): {gold.n_sentences} sentences, "
           f"{gold.n_tokens} tokens"
           + (f", {int(unknown.sum())} unknown to the "
              f"{'training file' if args.train else 'tagger'}" if unknown is not None else "")]
    correct = []
    for p, pred in zip(pred_ps, preds):
        ids = np.asarray(tags.ids(np.array(pred.tags.items, dtype=object)[pred.tag_ids]
                                  .tolist()))
        correct.append(ids == np.asarray(g))
        rep = accuracy_report(ids, g, unknown=unknown)
        line = f"{p}: accuracy {100 * rep['accuracy']:.2f}%"
        if unknown is not None:
            line += (f", known words {100 * rep['known_accuracy']:.2f}%, unknown words "
                     + ("n/a" if rep["n_unknown"] == 0
                        else f"{100 * rep['unknown_accuracy']:.2f}%")
                     + f" ({rep['n_unknown']} tokens)")
        out.append(line)
        if not args.no_table:
            table = per_tag_scores(ids, g, tags.items)
            out.append(f"per-tag scores of {p} (sorted by gold count):")
            out.append(f"  {'tag':<12} {'precision':>9} {'recall':>7} {'F1':>7} {'gold':>7} "
                       f"{'pred':>7}")
            for t, r in sorted(table.items(), key=lambda kv: (-kv[1]["support"], kv[0])):
                def pct(x):
                    return "n/a" if x != x else f"{100 * x:.2f}"
                out.append(f"  {t:<12} {pct(r['precision']):>9} {pct(r['recall']):>7} "
                           f"{pct(r['f1']):>7} {r['support']:>7} {r['predicted']:>7}")
    if len(preds) == 2:
        a, b = correct[1], correct[0]  # gain of PRED over --against
        if gold.n_sentences >= 2 and int(np.count_nonzero(gold.lengths)) >= 2:
            boot = paired_bootstrap(a, b, gold.offsets, n_resamples=args.resamples,
                                    random_state=args.seed)
            boot_s = (f"paired bootstrap over sentences p = {boot['p_value']:.4g} "
                      f"({boot['n_resamples']} resamples, one-sided: {pred_ps[0]} better)")
        else:
            boot_s = "no paired bootstrap (fewer than 2 sentences)"
        mc = mcnemar(a, b)
        gain = float(b.mean() - a.mean())
        out.append(f"{pred_ps[0]} - {pred_ps[1]}: {100 * gain:+.2f} points; {boot_s}; "
                   f"McNemar p = {mc['p_value']:.4g} (tokens only {pred_ps[0]} got right: "
                   f"{mc['n01']}, only {pred_ps[1]}: {mc['n10']})")
    with _text_output(args.output) as fh:
        fh.write("\n".join(out) + "\n")
    return 0
