"""Scale-out on Dask: the pipeline's stages as maps and tree reductions over sentence
partitions of a corpus, on whatever Dask scheduler is active (the ``distributed`` extra)."""

from ._partitioned import Partitioned, PartitionedCorpus, PartitionedNBest, tree_reduce
from ._read import read_conllu_partitions

__all__ = ["Partitioned", "PartitionedCorpus", "PartitionedNBest", "read_conllu_partitions",
           "tree_reduce"]
