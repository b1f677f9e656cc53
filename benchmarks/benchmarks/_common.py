"""Data shared by the asv benchmarks of rerank.py, kernels.py, svd.py, cca.py, pipeline.py.

Sizes are the first n sentences of en-brown train (XPOS, 452 tags; 51,606 sentences in all),
so n = 50,000 is essentially the whole training set.  Without ../shared/data every class
is skipped with the missing path as the reason (``train_corpus`` / ``dev_corpus`` raise
NotImplementedError, asv's skip, from ``setup``; a ``setup_cache`` checks ``missing_brown``
and returns the marker ``{"missing": reason}`` instead, because asv counts NotImplementedError
there as a failure -- and not None, for which asv passes no cache argument to ``setup``).  There
is no synthetic fallback: its figures would land in the en-brown series under the same names.

This module starts with an underscore, so asv does not look for benchmarks in it.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from sparsecca.data import read_conllu
from sparsecca.features import HStackView, SuffixView, TagNgramView, WordView

# /work/shared/data from /work/main/benchmarks/benchmarks/_common.py
SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
BROWN = SHARED_DATA / "en-brown"

#: corpus sizes (sentences) every size-parametrised benchmark runs at
SIZES = [5_000, 20_000, 50_000]


def missing(*paths) -> str | None:
    """The skip reason when one of ``paths`` is absent, else None.

    A ``setup_cache`` returns ``{"missing": reason}`` then, never None: asv passes no cache
    argument at all for a None cache, so ``setup(self, cache, ...)`` would fail with a
    TypeError.
    """
    for path in paths:
        if not Path(path).exists():
            return f"{path} not found (../shared/data is absent)"
    return None


def require(*paths):
    """Skip (asv's NotImplementedError convention) when one of ``paths`` is absent.

    Only for ``setup``: asv counts NotImplementedError in ``setup_cache`` as a failure, so
    ``setup_cache`` returns a marker via :func:`missing` and ``setup`` raises here.
    """
    reason = missing(*paths)
    if reason:
        raise NotImplementedError(reason)


def missing_brown() -> str | None:
    """The skip reason when en-brown train or dev is absent, else None."""
    return missing(BROWN / "train.conllu.gz", BROWN / "dev.conllu.gz")


def require_brown():
    """Raise NotImplementedError (asv's skip; call it from ``setup``) when en-brown is absent."""
    require(BROWN / "train.conllu.gz", BROWN / "dev.conllu.gz")


@functools.lru_cache(maxsize=None)
def _brown(split: str):
    require_brown()
    return read_conllu(BROWN / f"{split}.conllu.gz", tags="xpos")


def train_corpus(n: int):
    """The first ``n`` sentences of en-brown train (XPOS); NotImplementedError without it."""
    c = _brown("train")
    if n > c.n_sentences:
        raise NotImplementedError(f"en-brown train has {c.n_sentences} sentences < {n}")
    return c[:n]


def dev_corpus():
    """en-brown dev (2,867 sentences); NotImplementedError without it."""
    return _brown("dev")


def input_view():
    """The scale-run input view: suffixes of length 1-4 and the words themselves."""
    return HStackView([SuffixView(lengths=(1, 2, 3, 4)), WordView()])


def paper_input_view():
    """The paper's input view: suffixes of length 2-4."""
    return SuffixView(lengths=(2, 3, 4))


def output_view():
    """Tag unigrams and bigrams."""
    return TagNgramView(orders=(1, 2))


def views(n: int, kind: str = "paper"):
    """(X, Y) of the first n training sentences; kind 'paper' (suffix 2-4) or 'scale'."""
    corpus = train_corpus(n)
    v = paper_input_view() if kind == "paper" else input_view()
    return v.fit_transform(corpus), output_view().fit_transform(corpus)


def candidate_errors(seq_tags, seq_offsets, sent_seq_offsets, sent_offsets, gold):
    """Hamming errors of every decoded sequence against ``gold`` (flat, same id space).

    Independent of NBestList: used by the kernel benchmarks' accuracy tracks.
    """
    n_seq = seq_offsets.size - 1
    n_per_sent = np.diff(sent_seq_offsets)
    seq_sent = np.repeat(np.arange(n_per_sent.size), n_per_sent)
    seq_len = np.diff(seq_offsets)
    # token index in the corpus of every position of every sequence
    tok = (np.repeat(sent_offsets[seq_sent] - seq_offsets[:-1], seq_len)
           + np.arange(seq_offsets[-1], dtype=np.int64))
    wrong = (seq_tags != gold[tok]).astype(np.int64)
    errors = np.zeros(n_seq, dtype=np.int64)
    nonempty = seq_len > 0
    errors[nonempty] = np.add.reduceat(wrong, seq_offsets[:-1][nonempty]) if wrong.size else 0
    return errors, seq_sent
