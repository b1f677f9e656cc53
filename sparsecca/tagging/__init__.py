"""Taggers with k-best output (a TnT-style trigram HMM, Collins' structured averaged perceptron,
a maximum-entropy Markov model, the max-margin-structure tagger), n-best lists, jackknifing."""

from ._hmm import NotFittedError, TrigramHMM
from ._jackknife import clone, jackknife_nbest
from ._memm import MEMMTagger
from ._mms import MMSTagger
from ._nbest import NBestList, concatenate
from ._perceptron import PerceptronTagger

__all__ = ["MEMMTagger", "MMSTagger", "NBestList", "NotFittedError", "PerceptronTagger",
           "TrigramHMM", "clone", "concatenate", "jackknife_nbest"]
