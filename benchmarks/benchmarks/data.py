"""asv benchmarks: reading the 1M-token Brown training set and building its feature views.

Targets on the 2-core reference machine: read <= 2 s, each view <= 3 s, peak RSS of the whole
step (read + both views) <= 1.5 GB; ``benchmarks/bench_data.py`` measures the whole step in a
fresh process and prints a table.  Skipped (NotImplementedError in setup) when ../shared/data
is absent.
"""

from pathlib import Path

import numpy as np

from sparsecca.data import read_conllu
from sparsecca.features import JointView, SuffixView, TagNgramView

from ._common import require

# /work/shared/data from /work/main/benchmarks/benchmarks/data.py
SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
BROWN_TRAIN = SHARED_DATA / "en-brown" / "train.conllu.gz"


class ReadBrown:
    """read_conllu on en-brown/train.conllu.gz (51,606 sentences, 1,044,951 tokens)."""

    timeout = 300
    number = 1
    repeat = 3

    def setup(self):
        require(BROWN_TRAIN)

    def time_read_conllu(self):
        read_conllu(BROWN_TRAIN, tags="xpos")

    def peakmem_read_conllu(self):
        read_conllu(BROWN_TRAIN, tags="xpos")

    def track_n_tokens(self):
        return read_conllu(BROWN_TRAIN, tags="xpos").n_tokens

    track_n_tokens.unit = "tokens"


class BrownViews:
    """Feature views of the whole Brown training set (XPOS, 452 tags)."""

    timeout = 300
    number = 1
    repeat = 3
    params = [["float64", "float32"]]
    param_names = ["dtype"]

    def setup(self, dtype):
        require(BROWN_TRAIN)
        self.corpus = read_conllu(BROWN_TRAIN, tags="xpos")
        self.dtype = np.dtype(dtype)

    def time_suffix_view(self, dtype):
        SuffixView(lengths=(2, 3, 4), dtype=self.dtype).fit_transform(self.corpus)

    def peakmem_suffix_view(self, dtype):
        SuffixView(lengths=(2, 3, 4), dtype=self.dtype).fit_transform(self.corpus)

    def time_suffix_view_1234(self, dtype):
        SuffixView(lengths=(1, 2, 3, 4), dtype=self.dtype).fit_transform(self.corpus)

    def time_tag_ngram_view(self, dtype):
        TagNgramView(orders=(1, 2), dtype=self.dtype).fit_transform(self.corpus)

    def peakmem_tag_ngram_view(self, dtype):
        TagNgramView(orders=(1, 2), dtype=self.dtype).fit_transform(self.corpus)

    def time_joint_view_suffix(self, dtype):
        JointView(kind="suffix", dtype=self.dtype).fit_transform(self.corpus)

    def peakmem_joint_view_suffix(self, dtype):
        JointView(kind="suffix", dtype=self.dtype).fit_transform(self.corpus)

    def track_suffix_view_nnz(self, dtype):
        return SuffixView(lengths=(2, 3, 4), dtype=self.dtype).fit_transform(self.corpus).nnz

    track_suffix_view_nnz.unit = "nonzeros"

    def track_tag_ngram_view_n_features(self, dtype):
        """d2 of the tag 1-2-gram view: the same for both dtypes (the vocabulary does not
        depend on the value type); recorded per dtype as a check that it stays so."""
        return TagNgramView(orders=(1, 2), dtype=self.dtype).fit(self.corpus).n_features_

    track_tag_ngram_view_n_features.unit = "features"
