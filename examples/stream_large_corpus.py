"""CCA between sentences and their tag sequences on a corpus read in partitions.

A corpus larger than one process's memory is never loaded whole: the CoNLL-U files are read
as partitions (``read_conllu_partitions``: byte ranges of a plain file, one partition per
gzip file, each parsed and validated by the library's own reader) as Dask tasks.  The
feature vocabularies come from counts summed over every partition (``fit_views``: the
``min_count`` / ``max_features`` cut over the whole corpus, not a prefix), each partition is
featurised where it was read (``transform_partitions``: a row-chunked Dask array), and
``SparseCCA`` fits the two row-chunked views: their statistics are tree sums over the row
blocks, and every product the solver needs is one map-reduce over them, so only
d x k blocks leave the workers.

On its default input, small enough to also fit in memory, the example checks that the
correlations equal those of the in-memory fit on the whole corpus.

Run:
    python examples/stream_large_corpus.py                      # synthetic corpus, 30,000 sentences
    python examples/stream_large_corpus.py ../shared/data/en-brown/train.conllu.gz
    python examples/stream_large_corpus.py --scheduler local:2  # on two worker processes
"""

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from sparsecca.data import read_conllu, synthetic_corpus, write_conllu
from sparsecca.distributed import (
    fit_views,
    partition_summaries,
    read_conllu_partitions,
    scheduler,
    transform_partitions,
)
from sparsecca.features import SuffixView, TagNgramView
from sparsecca.linalg import SparseCCA


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("conllu", nargs="*", help="CoNLL-U files or glob patterns (default: a "
                                              "synthetic corpus, written in --files files)")
    ap.add_argument("--tags", choices=("upos", "xpos"), default="upos")
    ap.add_argument("--sentences", type=int, default=30000, help="synthetic corpus size")
    ap.add_argument("--files", type=int, default=4, help="files of the synthetic corpus")
    ap.add_argument("--partition-size", default="32MiB",
                    help="bytes of a plain file per partition (e.g. 200KiB, 32MiB)")
    ap.add_argument("--components", type=int, default=10)
    ap.add_argument("--tau", type=float, default=0.5)
    ap.add_argument("--scheduler", default=None, metavar="ADDRESS|local[:N]",
                    help="a dask.distributed scheduler (default: Dask's threads, in process)")
    ap.add_argument("--no-check", action="store_true",
                    help="skip the in-memory comparison (for corpora that do not fit)")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp, scheduler(args.scheduler):
        paths = args.conllu
        if not paths:
            corpus = synthetic_corpus(args.sentences, random_state=0)
            bounds = np.linspace(0, corpus.n_sentences, args.files + 1).astype(int)
            for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
                write_conllu(corpus[a:b], Path(tmp) / f"part-{i}.conllu")
            paths = [str(Path(tmp) / "part-*.conllu")]
            print(f"wrote a synthetic corpus of {args.sentences} sentences in {args.files} "
                  f"files")
        run(paths, args)


def run(paths, args):
    # 1. the corpus as partitions, read where they are used (persist: read once)
    t0 = time.perf_counter()
    parts = read_conllu_partitions(paths, args.tags,
                                   partition_size=args.partition_size).persist()
    rows = [n for n, _, _ in partition_summaries(parts)]
    print(f"read {sum(rows)} sentences in {parts.n_partitions} partitions: "
          f"{time.perf_counter() - t0:.1f} s")

    # 2. vocabularies from counts summed over all partitions, then one view block each
    t0 = time.perf_counter()
    xview, yview = fit_views(parts, [SuffixView(), TagNgramView()])
    X = transform_partitions(parts, xview, rows)
    Y = transform_partitions(parts, yview, rows)
    print(f"vocabularies from all {sum(rows)} sentences: {xview.n_features_} suffix "
          f"features, {yview.n_features_} tag n-grams ({time.perf_counter() - t0:.1f} s)")

    # 3. the CCA fit on the row-chunked views
    t0 = time.perf_counter()
    cca = SparseCCA(args.components, tau=args.tau, solver="iterative", center=True,
                    random_state=0).fit(X, Y)
    print(f"fitted on {X.shape[0]} x {X.shape[1]} and {Y.shape[1]} columns in "
          f"{len(X.chunks[0])} row blocks: {time.perf_counter() - t0:.1f} s "
          f"(solver {cca.solver_})")
    print(f"correlations (at most 1 / (1 - tau) = {1 / (1 - args.tau):g}):",
          np.round(cca.correlations_, 4))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory of this process: {peak:.0f} MiB")

    if args.no_check:
        return
    # 4. the same problem in memory: the files read whole, the views fitted on them
    files = parts.gather()
    corpus = read_conllu(paths[0], args.tags) if len(paths) == 1 and "*" not in paths[0] \
        else files
    Xm, Ym = SuffixView().fit_transform(corpus), TagNgramView().fit_transform(corpus)
    ref = SparseCCA(args.components, tau=args.tau, solver="iterative", center=True,
                    random_state=0).fit(Xm, Ym)
    err = np.max(np.abs(ref.correlations_ - cca.correlations_) / ref.correlations_)
    print(f"in-memory fit on the whole {Xm.shape[0]} x {Xm.shape[1]} matrix: max relative "
          f"difference of the correlations {err:.1e}")
    assert err < 1e-6, "partitioned and in-memory solutions disagree"


if __name__ == "__main__":
    main()
