"""The baseline tagger (TnT-style trigram HMM with k-best output), n-best lists, jackknifing."""

from ._hmm import NotFittedError, TrigramHMM
from ._jackknife import clone, jackknife_nbest
from ._nbest import NBestList, concatenate

__all__ = ["NBestList", "NotFittedError", "TrigramHMM", "clone", "concatenate",
           "jackknife_nbest"]
