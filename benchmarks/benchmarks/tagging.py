"""asv benchmarks: the TrigramHMM tagger (fit, 1-best / 10-best decoding, jackknife).

Targets on the 2-core reference machine: 10-best en-wsj test >= 50,000 tok/s (47,377 tokens,
so time_nbest[10] <= 0.95 s); en-brown XPOS 10-best >= 20,000 tok/s (58,516 tokens, <= 2.9 s);
fit on en-brown train <= 20 s; 10-fold jackknife of en-wsj train at k=10 <= 60 s;
1-best >= 2x NLTK TnT (``benchmarks/bench_tagger.py`` measures both in one process and
prints a table).  Numba compilation happens in setup (warm-up), not in the timings.
Skipped (NotImplementedError in setup) when ../shared/data is absent.
"""

from pathlib import Path

from sparsecca.data import read_conllu
from sparsecca.tagging import TrigramHMM, jackknife_nbest

from ._common import require

# /work/shared/data from /work/main/benchmarks/benchmarks/tagging.py
SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
WSJ = SHARED_DATA / "en-wsj"
BROWN = SHARED_DATA / "en-brown"


class TaggerWSJ:
    """en-wsj (Penn Treebank XPOS, 45 tags): train 188,059 tokens, test 47,377 tokens."""

    timeout = 300
    number = 1
    repeat = 5
    params = [[1, 10], [False, True]]
    param_names = ["k", "parallel"]

    def setup(self, k, parallel):
        require(WSJ / "train.conllu")
        self.train = read_conllu(WSJ / "train.conllu", tags="xpos")
        self.test = read_conllu(WSJ / "test.conllu", tags="xpos")
        self.model = TrigramHMM(parallel=parallel).fit(self.train)
        self.model.nbest(self.test[:20], k=k)  # compile / load numba kernels

    def time_nbest(self, k, parallel):
        self.model.nbest(self.test, k=k)

    def peakmem_nbest(self, k, parallel):
        self.model.nbest(self.test, k=k)

    def track_tokens_per_second(self, k, parallel):
        import time

        t = time.perf_counter()
        self.model.nbest(self.test, k=k)
        return self.test.n_tokens / (time.perf_counter() - t)

    track_tokens_per_second.unit = "tokens/s"

    def track_top1_accuracy(self, k, parallel):
        return 100 * self.model.nbest(self.test, k=k).top1_accuracy()

    track_top1_accuracy.unit = "%"

    def track_oracle_accuracy(self, k, parallel):
        return 100 * self.model.nbest(self.test, k=k).oracle_accuracy()

    track_oracle_accuracy.unit = "%"


class TaggerWSJTraining:
    """Fitting on en-wsj train and jackknifing it (10 folds, k=10)."""

    timeout = 600
    number = 1
    repeat = 3

    def setup(self):
        require(WSJ / "train.conllu")
        self.train = read_conllu(WSJ / "train.conllu", tags="xpos")
        TrigramHMM().fit(self.train[:200]).nbest(self.train[:20], k=10)  # warm-up

    def time_fit(self):
        TrigramHMM().fit(self.train)

    def peakmem_fit(self):
        TrigramHMM().fit(self.train)

    def time_jackknife_k10(self):
        jackknife_nbest(TrigramHMM(), self.train, k=10, folds=10, random_state=0)

    def peakmem_jackknife_k10(self):
        jackknife_nbest(TrigramHMM(), self.train, k=10, folds=10, random_state=0)


class TaggerBrown:
    """en-brown: train 1,044,951 tokens; test 58,516 tokens; XPOS 452 tags, UPOS 12 tags."""

    timeout = 600
    number = 1
    repeat = 3
    params = [["xpos", "upos"]]
    param_names = ["tags"]

    def setup(self, tags):
        require(BROWN / "train.conllu.gz")
        self.train = read_conllu(BROWN / "train.conllu.gz", tags=tags)
        self.test = read_conllu(BROWN / "test.conllu.gz", tags=tags)
        self.model = TrigramHMM().fit(self.train)
        self.model.nbest(self.test[:20], k=10)

    def time_fit(self, tags):
        TrigramHMM().fit(self.train)

    def peakmem_fit(self, tags):
        TrigramHMM().fit(self.train)

    def time_nbest_k1(self, tags):
        self.model.nbest(self.test, k=1)

    def time_nbest_k10(self, tags):
        self.model.nbest(self.test, k=10)

    def peakmem_nbest_k10(self, tags):
        self.model.nbest(self.test, k=10)

    def track_top1_accuracy(self, tags):
        return 100 * self.model.nbest(self.test, k=1).top1_accuracy()

    track_top1_accuracy.unit = "%"
