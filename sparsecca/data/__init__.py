"""Corpus readers and writers, the columnar TaggedCorpus, and the synthetic corpus."""

from ._conllu import (
    TAG_COLUMNS,
    CorpusFormatError,
    conllu_corpus,
    read_conllu,
    read_text,
    read_tokenized,
    tokenized_corpus,
    write_conllu,
)
from ._corpus import (
    TaggedCorpus,
    Vocabulary,
    concat_corpora,
    first_seen,
    kfold_indices,
    train_test_split,
    union_vocabulary,
)
from ._document import ConlluDocument, read_document
from ._synthetic import synthetic_corpus

__all__ = [
    "TAG_COLUMNS",
    "ConlluDocument",
    "CorpusFormatError",
    "TaggedCorpus",
    "Vocabulary",
    "concat_corpora",
    "conllu_corpus",
    "first_seen",
    "kfold_indices",
    "read_conllu",
    "read_document",
    "read_text",
    "read_tokenized",
    "synthetic_corpus",
    "tokenized_corpus",
    "train_test_split",
    "union_vocabulary",
    "write_conllu",
]
