"""ConlluDocument / read_document: a corpus plus its lines, written back with new tags."""

import gzip

import pytest

from sparsecca.data import (
    TAG_COLUMNS,
    ConlluDocument,
    CorpusFormatError,
    TaggedCorpus,
    read_conllu,
    read_document,
    tokenized_corpus,
)

TEXT = (
    "# newdoc id = d1\n"
    "# sent_id = s-1\n"
    "# text = du chat\n"
    "1-2\tdu\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "1\tde\tde\tADP\tP\t_\t3\tcase\t_\t_\n"
    "2\tle\tle\tDET\tD\t_\t3\tdet\t_\t_\n"
    "2.1\tghost\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "3\tchat\tchat\tNOUN\tN\t_\t0\troot\t_\tSpaceAfter=No\n"
    "\n"
    "#sent_id=s-2\n"
    "1\tdort\tdormir\tVERB\tV\t_\t0\troot\t_\t_\n"
    "\n"
)


@pytest.fixture
def doc(tmp_path):
    path = tmp_path / "in.conllu"
    path.write_text(TEXT, encoding="utf-8")
    return read_document(path)


def test_rendering_the_tags_read_gives_the_input_back(doc):
    for column in TAG_COLUMNS:
        gold = doc.gold(column)
        lines, start = [], 0
        for i, n in enumerate(doc.corpus.lengths.tolist()):
            lines += doc.render(i, gold[start:start + n], column)
            start += n
        assert "\n".join(lines) + "\n" == TEXT


def test_render_replaces_only_the_tag_column(doc):
    upos = doc.render(0, ["X", "Y", "Z"], "upos")
    xpos = doc.render(0, ["X", "Y", "Z"], "xpos")
    for lines, column in ((upos, 3), (xpos, 4)):
        tokens = [line.split("\t") for line in lines if line[:1].isdigit()]
        assert [t[column] for t in tokens if t[0].isdigit()] == ["X", "Y", "Z"]
        assert [t[1] for t in tokens] == ["du", "de", "le", "ghost", "chat"]
    assert upos[4].split("\t")[4] == "P" and xpos[4].split("\t")[3] == "ADP"


def test_sent_ids_gold_and_kbest_header(doc):
    assert doc.format == "conllu" and doc.n_sentences == 2
    assert [doc.sent_id(i) for i in range(2)] == ["s-1", "s-2"]
    assert doc.gold("upos") == ["ADP", "DET", "NOUN", "VERB"]
    lines = doc.render(1, ["NOUN"], "upos", header=["# sent_id = s-2", "# candidate = 3"],
                       kbest=True)
    assert lines == ["# sent_id = s-2", "# candidate = 3",
                     "1\tdort\tdormir\tNOUN\tV\t_\t0\troot\t_\t_", ""]


def test_gold_is_none_without_tags(tmp_path):
    path = tmp_path / "in.conllu.gz"
    path.write_bytes(gzip.compress(TEXT.replace("\tADP\t", "\t_\t").encode("utf-8")))
    doc = read_document(path)
    assert doc.gold("upos") is None and doc.gold("xpos") == ["P", "D", "N", "V"]
    with pytest.raises(ValueError, match=r"^column must be 'upos' or 'xpos', got 'feats'$"):
        doc.gold("feats")


def test_text_input(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("le chat\n\n  dort .\n", encoding="utf-8")
    doc = read_document(path, "text")
    assert doc.format == "text" and doc.blocks is None and doc.gold("upos") is None
    assert doc.render(1, ["VERB", "PUNCT"], "xpos") == [
        "# sent_id = 2", "# text = dort .", "1\tdort\t_\t_\tVERB\t_\t_\t_\t_\t_",
        "2\t.\t_\t_\tPUNCT\t_\t_\t_\t_\t_", ""]
    assert doc.render(0, ["DET", "NOUN"], "upos", header=["# sent_id = 1"], kbest=True)[:2] \
        == ["# sent_id = 1", "# text = le chat"]


def test_the_corpus_is_read_conllus(doc, tmp_path):
    path = tmp_path / "in.conllu"
    assert doc.corpus == read_conllu(path, tags=None)


@pytest.mark.parametrize("text, fmt, match", [
    ("The cat sat\n", "conllu", r"in.x:1: expected 10 tab-separated columns, found 1 "
                                r"\(tokenised text, one sentence per line, needs --format "
                                r"text\)$"),
    ("1\tA\t_\t_\n", "conllu", r"in.x:1: expected 10 tab-separated columns, found 4$"),
    (TEXT, "text", r"in.x:2: looks like CoNLL-U; drop --format text$"),
])
def test_format_errors(tmp_path, text, fmt, match):
    path = tmp_path / "in.x"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CorpusFormatError, match=match):
        read_document(path, fmt)


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match=r"^fmt must be 'conllu' or 'text', got 'conll'$"):
        read_document(tmp_path / "x", "conll")
    corpus = tokenized_corpus("a b\nc\n")
    with pytest.raises(TypeError, match=r"^corpus must be a TaggedCorpus, got list$"):
        ConlluDocument([["a"]])
    with pytest.raises(ValueError, match=r"^blocks has 1 entries, corpus has 2 sentences$"):
        ConlluDocument(corpus, [["1\ta\t_\t_\t_\t_\t_\t_\t_\t_"]])
    with pytest.raises(ValueError, match=r"^block 1 has 0 token lines, sentence 1 has 1 "
                                         r"words$"):
        ConlluDocument(corpus, [["1\ta", "2\tb"], ["# c"]])
    assert ConlluDocument(TaggedCorpus.from_words([]), []).n_sentences == 0
