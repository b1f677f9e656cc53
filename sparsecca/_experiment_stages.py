"""The stages of the Table 2 protocol (:func:`sparsecca._experiment.experiment_on_corpora`):
the k-best lists of the three splits, in process or as Dask tasks over sentence partitions,
a reranker's fit and its row of the table with its significance."""

from __future__ import annotations

import operator
import time

from .evaluate import mcnemar, paired_bootstrap
from .exceptions import TagsetMismatchError, in_context

__all__ = ["fit_reranker", "nbest_lists", "reranker_row", "significance", "table3_row"]


def significance(base_choice_nb, nbest, choice):
    gold = nbest.gold_ids
    base = base_choice_nb
    ca = nbest.best(base).tag_ids == gold
    cb = nbest.best(choice).tag_ids == gold
    boot = paired_bootstrap(ca, cb, nbest.corpus.offsets, n_resamples=10_000, random_state=0)
    mc = mcnemar(ca, cb)
    return {"p_bootstrap": boot["p_value"], "p_mcnemar": mc["p_value"],
            "gain": boot["gain"], "n01": mc["n01"], "n10": mc["n10"]}


def fit_reranker(model, model_name, train_nb, dev_nb, where) -> float:
    """Fit ``model`` on the training lists, tuned on dev; returns the seconds taken."""
    t0 = time.perf_counter()
    try:
        model.fit(train_nb, dev_nb)
    except ValueError as exc:
        # e.g. a train split too small for the model's n_components, which an
        # experiment user never chose: say which row and which data
        raise in_context(exc, f"{model_name} (reranker), fitted on {where['train']} "
                               f"({_n_sentences(train_nb)} sentences) and tuned on "
                               f"{where['dev']}") from exc
    return time.perf_counter() - t0


def nbest_lists(tagger, train, dev, test, *, k, folds, random_state, progress, where,
                 timings, say, partitions=None):
    """The jackknifed k-best lists of ``train`` and those of ``dev`` and ``test`` by the
    tagger fitted on ``train``; each stage's time into ``timings`` and ``say``.  With
    ``partitions``, ``train`` is split into that many sentence partitions and every stage
    runs as Dask tasks on the active scheduler (the training lists stay partitioned, a
    :class:`~sparsecca.distributed.PartitionedNBest`; dev and test come back gathered, for
    the evaluation)."""
    from .tagging import clone, jackknife_nbest

    n_train = train.n_sentences  # known here, before the split (no pass over partitions)
    if partitions is not None:
        from .distributed import PartitionedCorpus

        train = PartitionedCorpus.from_corpus(train, min(partitions, train.n_sentences))
        train = train.persist()
    t0 = time.perf_counter()
    hmm = clone(tagger).fit(train)
    timings["tagger_fit"] = time.perf_counter() - t0
    say(f"tagger fitted on {n_train} sentences: {timings['tagger_fit']:.1f} s")
    t0 = time.perf_counter()
    train_nb = jackknife_nbest(tagger, train, k=k, folds=folds, random_state=random_state,
                               progress=progress)
    if partitions is not None:
        train_nb = train_nb.persist()
    timings["jackknife"] = time.perf_counter() - t0
    say(f"jackknifed {k}-best lists of train ({folds} folds): {timings['jackknife']:.1f} s")
    t0 = time.perf_counter()
    decoded = {}
    for s, corpus in (("dev", dev), ("test", test)):
        try:
            if partitions is None:
                decoded[s] = hmm.nbest(corpus, k=k)
            else:
                parts = PartitionedCorpus.from_corpus(corpus, min(partitions, len(corpus)))
                decoded[s] = hmm.nbest(parts, k=k).gather()
        except TagsetMismatchError as exc:  # the message named neither file
            raise TagsetMismatchError(f"{where[s]}: {exc} (the tagger was trained on "
                                      f"{where['train']})") from None
    timings["decode_dev_test"] = time.perf_counter() - t0
    say(f"{k}-best lists of dev and test: {timings['decode_dev_test']:.1f} s")
    return train_nb, decoded["dev"], decoded["test"]


def _n_sentences(corpus) -> int:
    """Sentences of a corpus, partitioned (a tree sum) or not."""
    if hasattr(corpus, "partitions"):
        return int(corpus.reduce(len, operator.add).compute())
    return corpus.n_sentences


def reranker_row(model, dev_nb, test_nb, fit_s: float) -> dict:
    """The Table 2 row of a fitted reranker: dev and test accuracy of its choices, their
    significance against the decoder's, its tuned values and fit time."""
    choice_dev = model.rerank(dev_nb)
    choice_test = model.rerank(test_nb)
    row = {
        "dev": 1.0 - float(dev_nb.losses[dev_nb.sent_offsets[:-1] + choice_dev].sum())
        / dev_nb.corpus.n_tokens,
        "test": 1.0 - float(test_nb.losses[test_nb.sent_offsets[:-1] + choice_test].sum())
        / test_nb.corpus.n_tokens,
        "fit_seconds": fit_s,
        "tuned": model.tuned_params() if hasattr(model, "tuned_params") else {},
        # tuned values on an edge of the dev grid (sparsecca.rerank._base.search_grid)
        "grid_edges": list(getattr(model, "grid_edges_", None) or []),
    }
    row["test_unknown"] = test_nb.accuracy(choice_test, tokens="unknown")
    row["significance_test"] = significance(test_nb.argmax(), test_nb, choice_test)
    row["significance_dev"] = significance(dev_nb.argmax(), dev_nb, choice_dev)
    return row


def table3_row(model, dev_nb, test_nb) -> dict:
    """Table 3: dev and test accuracy of the projection score alone (w -> infinity); ties
    keep the decoder's order."""
    return {"dev": dev_nb.accuracy(dev_nb.argmax(model.projection_scores(dev_nb))),
            "test": test_nb.accuracy(test_nb.argmax(model.projection_scores(test_nb)))}
