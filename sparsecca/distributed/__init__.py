"""Scale-out on Dask: the pipeline's stages as maps and tree reductions over sentence
partitions of a corpus, on whatever Dask scheduler is active (the ``distributed`` extra)."""

from ._partitioned import Partitioned, PartitionedCorpus, PartitionedNBest, tree_reduce
from ._scheduler import parse_scheduler, scheduler

__all__ = ["Partitioned", "PartitionedCorpus", "PartitionedNBest", "parse_scheduler",
           "scheduler", "tree_reduce"]
