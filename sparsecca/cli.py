"""The ``sparsecca`` command.

Every verb validates its arguments up front; a user error (missing file, malformed corpus,
existing output without ``--force``) exits with status 2 and a one-line message, never a
traceback.
"""

from __future__ import annotations

import argparse
import sys
import time

from . import __version__

__all__ = ["main"]


class UsageError(Exception):
    """A user error: reported as one line, exit status 2."""


def _cmd_demo(args) -> int:
    from .data import synthetic_corpus

    t0 = time.perf_counter()
    corpus = synthetic_corpus(args.sentences, random_state=args.seed)
    t1 = time.perf_counter()
    lengths = corpus.lengths
    print(f"synthetic corpus: {corpus.n_sentences} sentences, {corpus.n_tokens} tokens, "
          f"{len(corpus.words)} word types, {len(corpus.tags)} tags ({t1 - t0:.2f} s)")
    print(f"sentence length: mean {lengths.mean():.1f}, max {lengths.max()}")
    try:
        from .features import SuffixView, TagNgramView
    except ImportError:  # the views land in their own commit
        return 0
    X = SuffixView(lengths=(2, 3, 4)).fit_transform(corpus)
    Y = TagNgramView(orders=(1, 2)).fit_transform(corpus)
    print(f"input view X (suffixes 2-4): {X.shape[0]} x {X.shape[1]}, nnz {X.nnz}")
    print(f"output view Y (tag 1-2-grams): {Y.shape[0]} x {Y.shape[1]}, nnz {Y.nnz}")
    return 0


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="sparsecca",
        description="Low-dimensional discriminative reranking (sparse CCA) for POS tagging.",
    )
    p.add_argument("--version", action="version", version=f"sparsecca {__version__}")
    sub = p.add_subparsers(dest="verb", metavar="VERB")
    sub.required = True
    d = sub.add_parser("demo", help="run the main job on the built-in synthetic corpus",
                       description="Run the main job on the built-in synthetic corpus.")
    d.add_argument("--sentences", type=int, default=5000,
                   help="number of synthetic sentences (default 5000)")
    d.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    d.set_defaults(func=_cmd_demo)
    return p


def main(argv=None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"sparsecca {args.verb}: error: {exc}", file=sys.stderr)
        return 2
