"""Scale-out on Dask: the pipeline's stages as maps and tree reductions over sentence
partitions of a corpus, on whatever Dask scheduler is active (the ``distributed`` extra)."""

from ._partitioned import Partitioned, PartitionedCorpus, PartitionedNBest, tree_reduce

__all__ = ["Partitioned", "PartitionedCorpus", "PartitionedNBest", "tree_reduce"]
