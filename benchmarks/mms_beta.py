"""MMSTagger's k-best emissions without dev: test accuracy and ``beta_`` per corpus and size.

Every row fits ``MMSTagger()`` (default parameters) on a training corpus, with or without the
corpus' dev split (which chooses eta, the epoch and ``beta_``), and scores the test split
with the default Viterbi decoder; ``--beta-grid`` adds the test accuracy of the same model at
every inverse temperature of the dev grid.  To compare two checkouts, run the script under
each one's PYTHONPATH.

    python benchmarks/mms_beta.py [--rows NAME ...] [--beta-grid]

Rows: ``brown`` / ``brown-dev`` (all of en-brown train), ``brown20k`` / ``brown20k-dev``
(its first 20,000 sentences), ``sequoia``, ``wsj`` (UPOS), ``wsj-xpos``, and ``sequoia-mixing``
(``partitioned_fit="mixing"`` over 5 partitions on the active Dask scheduler); all by default.
Exit status: 3 when the data is missing (see ``_data_check``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from sparsecca.data import read_conllu
from sparsecca.tagging import MMSTagger

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data_check import SHARED_DATA, conllu_split, require  # noqa: E402

#: row -> (corpus, tag column, training sentences (0: all), dev, partitions (0: in memory))
ROWS = {
    "brown": ("en-brown", "upos", 0, False, 0),
    "brown-dev": ("en-brown", "upos", 0, True, 0),
    "brown20k": ("en-brown", "upos", 20000, False, 0),
    "brown20k-dev": ("en-brown", "upos", 20000, True, 0),
    "sequoia": ("fr-sequoia", "upos", 0, False, 0),
    "wsj": ("en-wsj", "upos", 0, False, 0),
    "wsj-xpos": ("en-wsj", "xpos", 0, False, 0),
    "sequoia-mixing": ("fr-sequoia", "upos", 0, False, 5),
}


def run(row, beta_grid):
    name, tags, n, use_dev, parts = ROWS[row]
    train, dev, test = (read_conllu(conllu_split(SHARED_DATA / name, s), tags=tags)
                        for s in ("train", "dev", "test"))
    train = train[:n] if n else train
    model = MMSTagger(partitioned_fit="mixing" if parts else "gather")
    if parts:
        from sparsecca.distributed import PartitionedCorpus
        train = PartitionedCorpus.from_corpus(train, parts)
    t0 = time.perf_counter()
    model.fit(train, dev=dev if use_dev else None)
    line = (f"{row:<15} beta_ {model.beta_:<4g} test {model.score(test):.4f}  "
            f"(fit {time.perf_counter() - t0:.0f} s)")
    if beta_grid:
        gold = test.tags.mapping_to(model.tags_)[test.tag_ids]
        accs = []
        for beta in (0.5, 1.0, 2.0, 4.0, 8.0):
            model.beta_ = beta
            accs.append(f"{beta:g}:{np.mean(model._predict(test) == gold):.4f}")
        line += "  by beta " + " ".join(accs)
    print(line, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", choices=sorted(ROWS), default=list(ROWS))
    parser.add_argument("--beta-grid", action="store_true")
    args = parser.parse_args(argv)
    require(*(conllu_split(SHARED_DATA / ROWS[r][0], s) for r in args.rows
              for s in ("train", "dev", "test")))
    for row in args.rows:
        run(row, args.beta_grid)


if __name__ == "__main__":
    main()
