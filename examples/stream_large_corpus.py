"""CCA between sentences and their tag sequences on a corpus streamed in blocks.

A corpus larger than memory is never loaded whole: a CoNLL-U file is read block by block
(a few thousand sentences at a time), each block is featurised (suffix view X, tag n-gram
view Y) and only the sufficient statistics are kept -- the sparse Gram matrices X^T X and
Y^T Y, the cross-covariance X^T Y and the column sums -- whose size depends on the number of
features, not on the number of sentences.  The regularised CCA is then solved from the
statistics alone (block conjugate gradients for C_xx, which needs only products with X^T X).

Because the block sums are exact, the result equals the fit on the stacked matrices; the
example checks that on its default input, which is small enough to also fit in memory.

Run:
    python examples/stream_large_corpus.py                      # synthetic corpus, 30,000 sentences
    python examples/stream_large_corpus.py ../shared/data/en-brown/train.conllu.gz
"""

import argparse
import gzip
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from sparsecca.data import TaggedCorpus, synthetic_corpus, write_conllu
from sparsecca.features import SuffixView, TagNgramView
from sparsecca.linalg import CrossCovariance, GramStats, SparseCCA, cca_from_stats

TAG_COLUMN = {"upos": 3, "xpos": 4}


def iter_blocks(path, tags="upos", block=2000):
    """Yield TaggedCorpus blocks of ``block`` sentences from a (gzipped) CoNLL-U file.

    Reads line by line: memory holds one block.  Multi-word ranges and empty nodes are skipped.
    """
    col = TAG_COLUMN[tags]
    opener = gzip.open if str(path).endswith(".gz") else open
    sents, cur = [], []
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if not line:
                if cur:
                    sents.append(cur)
                    cur = []
                    if len(sents) == block:
                        yield TaggedCorpus.from_sentences(sents)
                        sents = []
                continue
            if line.startswith("#"):
                continue
            cols = line.split("\t")
            if cols[0].isdigit():
                cur.append((cols[1], cols[col]))
    if cur:
        sents.append(cur)
    if sents:
        yield TaggedCorpus.from_sentences(sents)


def add_stats(a, b):
    """Sum of two GramStats (statistics of the union of their rows)."""
    if a is None:
        return b
    return GramStats(a.gram + b.gram, a.colsum + b.colsum, a.n_samples + b.n_samples)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("conllu", nargs="?", help="CoNLL-U file (default: a synthetic corpus)")
    ap.add_argument("--tags", choices=("upos", "xpos"), default="upos")
    ap.add_argument("--sentences", type=int, default=30000, help="synthetic corpus size")
    ap.add_argument("--block", type=int, default=2000, help="sentences per block")
    ap.add_argument("--sample", type=int, default=5000,
                    help="sentences (from the start) that define the feature vocabularies")
    ap.add_argument("--components", type=int, default=10)
    ap.add_argument("--tau", type=float, default=0.5)
    ap.add_argument("--no-check", action="store_true",
                    help="skip the in-memory comparison (for corpora that do not fit)")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        path = args.conllu
        if path is None:
            path = Path(tmp) / "synthetic.conllu.gz"
            write_conllu(synthetic_corpus(args.sentences, random_state=0), path)
            print(f"wrote a synthetic corpus of {args.sentences} sentences to {path.name}")
        run(path, args)


def run(path, args):
    # 1. feature vocabularies from the first sentences (features unseen there are dropped,
    #    counted in the views' n_dropped_)
    sample = next(iter_blocks(path, args.tags, args.sample))
    xview = SuffixView().fit(sample)
    yview = TagNgramView().fit(sample)
    print(f"vocabularies from {sample.n_sentences} sentences: {xview.n_features_} suffix "
          f"features, {yview.n_features_} tag n-grams")

    # 2. one streaming pass: per-block statistics, summed
    t0 = time.perf_counter()
    xstats = ystats = None
    n_blocks = dropped = 0

    def pairs():
        nonlocal xstats, ystats, n_blocks, dropped
        for block in iter_blocks(path, args.tags, args.block):
            Xb, Yb = xview.transform(block), yview.transform(block)
            dropped += xview.n_dropped_
            xstats = add_stats(xstats, GramStats.from_blocks([Xb]))
            ystats = add_stats(ystats, GramStats.from_blocks([Yb]))
            n_blocks += 1
            yield Xb, Yb

    cross = CrossCovariance.from_blocks(pairs(), center=True)
    t_stream = time.perf_counter() - t0
    print(f"streamed {xstats.n_samples} sentences in {n_blocks} blocks of <= {args.block}: "
          f"{t_stream:.1f} s; X^T X has {xstats.gram.nnz} nonzeros "
          f"({dropped} suffix occurrences outside the vocabulary)")

    # 3. solve from the statistics alone
    t0 = time.perf_counter()
    # centring is implicit (the cross-covariance's): the column sums give the rank-one
    # corrections
    res = cca_from_stats(xstats, ystats, cross, args.components, tau=args.tau, random_state=0)
    print(f"solved from the statistics in {time.perf_counter() - t0:.1f} s "
          f"({res.n_iter} CG iterations)")
    print(f"sqrt(omega) (at most 1 / (1 - tau) = {1 / (1 - args.tau):g}):",
          np.round(res.correlations, 4))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory so far: {peak:.0f} MiB")

    if args.no_check:
        return
    # 4. the same problem in memory: stack every block, fit SparseCCA on the matrices
    X = sp.vstack([xview.transform(b) for b in iter_blocks(path, args.tags, args.block)])
    Y = sp.vstack([yview.transform(b) for b in iter_blocks(path, args.tags, args.block)])
    ref = SparseCCA(args.components, tau=args.tau, solver="iterative", center=True,
                    random_state=0)
    ref.fit(X.tocsr(), Y.tocsr())
    err = np.max(np.abs(ref.correlations_ - res.correlations) / ref.correlations_)
    print(f"in-memory fit on the stacked {X.shape[0]} x {X.shape[1]} matrix: max relative "
          f"difference of the correlations {err:.1e}")
    assert err < 1e-6, "streamed and in-memory solutions disagree"


if __name__ == "__main__":
    main()
