"""Scale-out on Dask: the pipeline's stages as maps and tree reductions over sentence
partitions of a corpus, on whatever Dask scheduler is active (the ``distributed`` extra)."""

from ._partitioned import Partitioned, PartitionedCorpus, PartitionedNBest, tree_reduce
from ._read import read_conllu_partitions
from ._rerank import apply_reranker
from ._scheduler import own_numba_cache, parse_scheduler, scheduler
from ._views import cca_arrays, fit_views, partition_summaries, transform_partitions

__all__ = ["Partitioned", "PartitionedCorpus", "PartitionedNBest", "apply_reranker",
           "cca_arrays", "fit_views", "own_numba_cache", "parse_scheduler", "partition_summaries",
           "read_conllu_partitions", "scheduler", "transform_partitions", "tree_reduce"]
