"""Tagging accuracy of TrigramHMM next to NLTK's TnT on every shared corpus; prints a table.

For each set, both taggers are trained on train and tag test.  Reported per tagger: token
accuracy of the 1-best output on all tokens, on known tokens (word seen in train) and on
unknown tokens; for TrigramHMM also the 10-best oracle (best candidate per sentence).
NLTK is optional (a peer to measure against, not a dependency): its columns read "skipped"
when it is not installed or ``--no-nltk`` is given.

Targets: our 1-best >= NLTK TnT on every set; 10-best oracle >= 98.5% on en-wsj.

Usage::

    python benchmarks/tagger_accuracy.py [--sets en-wsj:xpos zh-gsd:upos ...] [--no-nltk] [-k 10]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from sparsecca.data import read_conllu
from sparsecca.tagging import TrigramHMM

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data_check import conllu_split, require  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SETS = ["en-wsj:xpos", "en-brown:upos", "en-brown:xpos", "sv-talbanken:upos", "zh-gsd:upos",
        "fr-sequoia:upos"]


def load(name: str, tags: str):
    folder = SHARED_DATA / name
    return (read_conllu(conllu_split(folder, "train"), tags=tags),
            read_conllu(conllu_split(folder, "test"), tags=tags))


def nltk_tnt(train, test, unknown):
    """Accuracy (all, known, unknown) and tagging throughput of NLTK's TnT, or None."""
    try:
        from nltk.tag.tnt import TnT
    except ImportError:
        return None
    tnt = TnT()
    tnt.train(train.to_sentences())
    sents = [words for words, _ in test]
    t = time.perf_counter()
    out = tnt.tagdata(sents)
    dt = time.perf_counter() - t
    pred = np.array([tag for sent in out for _, tag in sent], dtype=object)
    gold = np.array(test.tags.items, dtype=object)[test.tag_ids]
    ok = pred == gold
    return ok.mean(), ok[~unknown].mean(), ok[unknown].mean(), test.n_tokens / dt


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="+", default=SETS, help="name:tagcolumn pairs")
    ap.add_argument("--no-nltk", action="store_true", help="skip the NLTK TnT columns")
    ap.add_argument("-k", type=int, default=10, help="n-best size for the oracle")
    args = ap.parse_args(argv)
    # every set's files before the first fit: exit 3 with one line (_data_check.py)
    require(*(conllu_split(SHARED_DATA / spec.split(":")[0], split)
              for spec in args.sets for split in ("train", "test")))
    head = (f"{'set':<20} {'tokens':>7} {'unk%':>5} | {'ours':>6} {'known':>6} {'unk':>6} "
            f"{f'or@{args.k}':>6} | {'TnT':>6} {'known':>6} {'unk':>6} | {'diff':>6} "
            f"{'>=TnT':>5} | {'fit s':>5} {'tok/s':>8} {'TnT tok/s':>9}")
    print(head)
    print("-" * len(head))
    all_ok = True
    for spec in args.sets:
        name, tags = spec.split(":")
        train, test = load(name, tags)
        t = time.perf_counter()
        model = TrigramHMM().fit(train)
        fit_s = time.perf_counter() - t
        model.nbest(test[:5], k=args.k)  # warm up numba before timing
        t = time.perf_counter()
        nb = model.nbest(test, k=args.k)
        tok_s = test.n_tokens / (time.perf_counter() - t)
        ours = (nb.top1_accuracy(), nb.top1_accuracy("known"), nb.top1_accuracy("unknown"),
                nb.oracle_accuracy())
        peer = None if args.no_nltk else nltk_tnt(train, test, nb.unknown)
        line = (f"{name + ' ' + tags.upper():<20} {test.n_tokens:>7} "
                f"{100 * nb.unknown.mean():>5.1f} | "
                + " ".join(f"{100 * x:>6.2f}" for x in ours) + " | ")
        if peer is None:
            line += f"{'skipped':>20} | {'':>6} {'':>5} | "
        else:
            diff = ours[0] - peer[0]
            ok = diff >= 0
            all_ok &= ok
            line += (" ".join(f"{100 * x:>6.2f}" for x in peer[:3])
                     + f" | {100 * diff:>+6.2f} {'yes' if ok else 'NO':>5} | ")
        line += f"{fit_s:>5.2f} {tok_s:>8.0f} "
        line += f"{peer[3]:>9.0f}" if peer is not None else f"{'-':>9}"
        print(line, flush=True)
        if name == "en-wsj" and tags == "xpos" and args.k >= 10:
            all_ok &= ours[3] >= 0.985
    print()
    print("accuracies in %; 'or@k' = k-best oracle; tok/s = our end-to-end nbest(k) throughput "
          "(after warm-up), TnT tok/s = NLTK TnT tagdata")
    print("targets met" if all_ok else "SOME TARGET NOT MET")


if __name__ == "__main__":
    main()
