"""Rerank a POS tagger's 10-best lists with the softened discriminative CCA model.

The whole pipeline of the paper on one data set, step by step with the library API:

1. read train/dev/test (a CoNLL-U directory given as argument, or the built-in synthetic
   corpus by default),
2. train the trigram HMM and build 10-best lists: jackknifed on train (every sentence decoded
   by a model that never saw it), plain on dev and test,
3. fit the softened reranker on the training lists, tuning tau, lambda, k and the score
   weight w on dev,
4. report test accuracy against the HMM and the oracle, with a paired significance test,
5. save both models, load them back and check that they make the same decisions.

Run:
    python examples/rerank_pos.py                                  # synthetic corpus
    python examples/rerank_pos.py ../shared/data/fr-sequoia        # a CoNLL-U directory
    python examples/rerank_pos.py ../shared/data/en-wsj --tags xpos
    python examples/rerank_pos.py ../shared/data/zh-gsd --input-view charngram
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from sparsecca.data import synthetic_corpus, train_test_split
from sparsecca.evaluate import paired_bootstrap
from sparsecca.features import CharNgramView, SuffixView
from sparsecca.rerank import SoftenedReranker
from sparsecca.tagging import TrigramHMM, jackknife_nbest


def load_data(data_dir, tags, sentences, seed):
    if data_dir is None:
        corpus = synthetic_corpus(sentences, random_state=seed)
        rest, test = train_test_split(corpus, test_size=0.15, random_state=seed)
        train, dev = train_test_split(rest, test_size=0.15 / 0.85, random_state=seed + 1)
        return "synthetic", train, dev, test
    from sparsecca._experiment import load_splits

    data = load_splits(data_dir, tags)
    return Path(data_dir).name, data["train"], data["dev"], data["test"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data_dir", nargs="?", help="directory with train/dev/test CoNLL-U files "
                                                "(default: the synthetic corpus)")
    ap.add_argument("--tags", choices=("upos", "xpos"), default="upos")
    ap.add_argument("--sentences", type=int, default=4000, help="synthetic corpus size")
    ap.add_argument("--input-view", choices=("suffix", "charngram"), default="suffix",
                    help="sentence features: suffixes 2-4 (default) or character 1-2-grams "
                         "(the paper's choice for Chinese)")
    ap.add_argument("-k", type=int, default=10, help="candidates per sentence")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    name, train, dev, test = load_data(args.data_dir, args.tags, args.sentences, args.seed)
    print(f"{name}: train {train.n_sentences} sentences / {train.n_tokens} tokens, "
          f"dev {dev.n_sentences}, test {test.n_sentences}")

    t0 = time.perf_counter()
    hmm = TrigramHMM().fit(train)
    train_nb = jackknife_nbest(TrigramHMM(), train, k=args.k, folds=10, random_state=args.seed)
    dev_nb, test_nb = hmm.nbest(dev, k=args.k), hmm.nbest(test, k=args.k)
    print(f"HMM and {args.k}-best lists: {time.perf_counter() - t0:.1f} s")

    view = SuffixView() if args.input_view == "suffix" else CharNgramView(n=(1, 2))
    t0 = time.perf_counter()
    model = SoftenedReranker(n_components=50, tau=(0.1, 0.5, 0.9), lam=(0.25, 0.5, 0.75),
                             input_view=view, random_state=args.seed)
    model.fit(train_nb, dev_nb)
    print(f"softened reranker fitted in {time.perf_counter() - t0:.1f} s; tuned on dev: "
          f"{model.tuned_params()}")

    choice = model.rerank(test_nb)
    base_acc = test_nb.top1_accuracy()
    acc = test_nb.accuracy(choice)
    gold = test_nb.gold_ids
    boot = paired_bootstrap(test_nb.best().tag_ids == gold, test_nb.best(choice).tag_ids == gold,
                            test.offsets, n_resamples=10_000, random_state=0)
    print(f"test accuracy: HMM {100 * base_acc:.2f}%, reranked {100 * acc:.2f}% "
          f"(gain {100 * boot['gain']:+.2f} points, paired bootstrap p = "
          f"{boot['p_value']:.4f}), oracle {100 * test_nb.oracle_accuracy():.2f}%")

    changed = np.flatnonzero(choice != 0)
    if changed.size:
        i = int(changed[0])
        words, gold_tags = test.sentence(i)
        print(f"sentence {i}: the reranker picked candidate {choice[i] + 1} of "
              f"{test_nb.n_candidates[i]}")
        for w, h, r, g in zip(words, test_nb.candidate(i, 0), test_nb.candidate(i, choice[i]),
                              gold_tags):
            if h != r:
                print(f"    {w:>15}  HMM {h:<6} reranked {r:<6} gold {g}")

    # models are .npz files of arrays + JSON metadata (no pickle); loading validates them
    with tempfile.TemporaryDirectory() as tmp:
        hmm_path = hmm.save(Path(tmp) / "tagger")
        model_path = model.save(Path(tmp) / "reranker")
        hmm2, model2 = TrigramHMM.load(hmm_path), SoftenedReranker.load(model_path)
        nb2 = hmm2.nbest(test, k=args.k)
        assert np.array_equal(model2.rerank(nb2), choice)
        print(f"saved and reloaded ({hmm_path.stat().st_size // 1024} KiB tagger, "
              f"{model_path.stat().st_size // 1024} KiB reranker): same decisions")


if __name__ == "__main__":
    main()
