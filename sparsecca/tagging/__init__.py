"""Taggers with k-best output (a TnT-style trigram HMM, Collins' structured averaged
perceptron), n-best lists, jackknifing."""

from ._hmm import NotFittedError, TrigramHMM
from ._jackknife import clone, jackknife_nbest
from ._nbest import NBestList, concatenate
from ._perceptron import PerceptronTagger

__all__ = ["NBestList", "NotFittedError", "PerceptronTagger", "TrigramHMM", "clone",
           "concatenate", "jackknife_nbest"]
