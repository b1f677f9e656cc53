import codecs
import gzip
import io
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparsecca.data import (
    CorpusFormatError,
    TaggedCorpus,
    read_conllu,
    read_tokenized,
    synthetic_corpus,
    write_conllu,
)

# (set, split, tags) -> (sentences, tokens) from ../shared/data/README.md
EXPECTED = {
    ("en-wsj", "train"): (7936, 188059), ("en-wsj", "dev"): (1000, 23668),
    ("en-wsj", "test"): (2012, 47377),
    ("en-brown", "train"): (51606, 1044951), ("en-brown", "dev"): (2867, 57725),
    ("en-brown", "test"): (2867, 58516),
    ("zh-gsd", "train"): (3997, 98608), ("zh-gsd", "dev"): (500, 12663),
    ("zh-gsd", "test"): (500, 12012),
    ("fr-sequoia", "train"): (2231, 50502), ("fr-sequoia", "dev"): (412, 9999),
    ("fr-sequoia", "test"): (456, 10044),
    ("sv-talbanken", "train"): (4287, 65893), ("sv-talbanken", "dev"): (497, 9558),
    ("sv-talbanken", "test"): (1215, 20259),
}


def _file(root, name, split):
    for suffix in (".conllu", ".conllu.gz"):
        p = root / name / (split + suffix)
        if p.exists():
            return p
    raise AssertionError(f"no {split} file for {name} under {root}")


@pytest.mark.parametrize(("name", "split"), sorted(EXPECTED))
def test_shared_counts(shared_data, name, split):
    n_sent, n_tok = EXPECTED[(name, split)]
    corpus = read_conllu(_file(shared_data, name, split), tags="upos")
    assert corpus.n_sentences == n_sent
    assert corpus.n_tokens == n_tok
    assert corpus.lengths.min() >= 1


def test_shared_xpos_brown_tagset(shared_data):
    corpus = read_conllu(_file(shared_data, "en-brown", "train"), tags="xpos")
    assert len(corpus.tags) == 452  # README: Brown XPOS, 452 tags


def test_fr_sequoia_has_no_xpos(shared_data):
    with pytest.raises(CorpusFormatError, match=r"train\.conllu:\d+: tag column 5 \(xpos\)"):
        read_conllu(_file(shared_data, "fr-sequoia", "train"), tags="xpos")


def _slow_reader(text, col):
    """Independent reference: the obvious line-by-line parser."""
    sents, cur = [], []
    for line in text.splitlines():
        if not line.strip():
            if cur:
                sents.append(cur)
            cur = []
            continue
        if line.startswith("#"):
            continue
        c = line.split("\t")
        if "-" in c[0] or "." in c[0]:
            continue
        cur.append((c[1], c[col]))
    if cur:
        sents.append(cur)
    return sents


SAMPLE = (
    "# sent_id = 1\n# text = Don't go.\n"
    "1-2\tDon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "1\tDo\tdo\tAUX\tVBP\t_\t3\taux\t_\t_\n"
    "2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t_\t_\n"
    "3\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\t_\n"
    "3.1\tgone\t_\tVERB\tVBN\t_\t_\t_\t_\t_\n"
    "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_\n"
    "\n"
    "1\tÉté\tété\tNOUN\tNN\t_\t0\troot\t_\t_\n"
    "2\t_\t_\tSYM\tSYM\t_\t1\tdep\t_\t_\n"
    "\n"
)


@pytest.mark.parametrize("tags,col", [("upos", 3), ("xpos", 4)])
@pytest.mark.parametrize("compressed", [False, True])
def test_read_matches_reference(tmp_path, tags, col, compressed):
    p = tmp_path / ("s.conllu.gz" if compressed else "s.conllu")
    data = SAMPLE.encode()
    p.write_bytes(gzip.compress(data) if compressed else data)
    corpus = read_conllu(p, tags=tags)
    assert corpus.to_sentences() == _slow_reader(SAMPLE, col)
    assert corpus.n_sentences == 2 and corpus.n_tokens == 6


def test_crlf_and_missing_final_blank(tmp_path):
    p = tmp_path / "s.conllu"
    p.write_bytes(SAMPLE.rstrip("\n").replace("\n", "\r\n").encode())
    assert read_conllu(p).to_sentences() == _slow_reader(SAMPLE, 3)


def test_read_untagged(tmp_path):
    p = tmp_path / "s.conllu"
    p.write_text(SAMPLE, encoding="utf-8")
    c = read_conllu(p, tags=None)
    assert not c.has_tags and c.n_tokens == 6


@pytest.mark.parametrize("tags", ["upos", "xpos"])
@pytest.mark.parametrize("suffix", [".conllu", ".conllu.gz"])
def test_roundtrip_synthetic(tmp_path, tags, suffix):
    corpus = synthetic_corpus(300, random_state=3)
    p = tmp_path / ("out" + suffix)
    write_conllu(corpus, p, tags=tags)
    back = read_conllu(p, tags=tags)
    assert back == corpus
    # and a second trip gives identical bytes
    p2 = tmp_path / ("out2" + suffix)
    write_conllu(back, p2, tags=tags)
    assert gzip.decompress(p.read_bytes()) == gzip.decompress(p2.read_bytes()) \
        if suffix.endswith(".gz") else p.read_bytes() == p2.read_bytes()


@pytest.mark.parametrize("overwrite", ["no", "False", 1, None, [0]])
def test_write_overwrite_must_be_a_bool(tmp_path, overwrite):
    # any truthy value replaced the file: 'no' meant yes
    p = tmp_path / "x.conllu"
    p.write_text("precious")
    with pytest.raises(TypeError, match=r"^overwrite must be True or False, got "):
        write_conllu(synthetic_corpus(3, random_state=0), p, overwrite=overwrite)
    with pytest.raises(TypeError, match=r"^overwrite must be True or False, got 'no'$"):
        write_conllu(synthetic_corpus(3, random_state=0), tmp_path / "new.conllu",
                     overwrite="no")
    assert os.listdir(tmp_path) == ["x.conllu"] and p.read_text() == "precious"


def test_write_refuses_overwrite(tmp_path):
    corpus = synthetic_corpus(5, random_state=0)
    p = tmp_path / "x.conllu"
    p.write_text("precious")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        write_conllu(corpus, p)
    assert p.read_text() == "precious"
    write_conllu(corpus, p, overwrite=True)
    assert read_conllu(p) == corpus


def test_write_to_text_stream():
    corpus = TaggedCorpus.from_sentences([[("a", "X"), ("b", "Y")]])
    buf = io.StringIO()
    write_conllu(corpus, buf, tags="xpos")
    assert buf.getvalue() == "1\ta\t_\t_\tX\t_\t_\t_\t_\t_\n2\tb\t_\t_\tY\t_\t_\t_\t_\t_\n\n"


def test_read_tokenized(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("The cat sat .\n\n  A dog  \n")
    c = read_tokenized(p)
    assert [w for w, _ in c] == [["The", "cat", "sat", "."], ["A", "dog"]]
    # a line ends at \n (or \r\n) only: a form feed, U+0085 or U+2028 inside one is white
    # space between tokens, not the end of a sentence
    p.write_bytes("Le chat\x0cdort .\r\nIl\u2028mange\x85des pommes\n".encode())
    assert [w for w, _ in read_tokenized(p)] == [["Le", "chat", "dort", "."],
                                                 ["Il", "mange", "des", "pommes"]]
    # documented: no-break and ideographic spaces separate tokens too
    p.write_text("10\u00a0000 euros\u202f!\n\u6211\u3000\u7231\n", encoding="utf-8")
    assert [w for w, _ in read_tokenized(p)] == [["10", "000", "euros", "!"],
                                                 ["\u6211", "\u7231"]]


TOK = "1\tw\t_\tNOUN\tNN\t_\t_\t_\t_\t_\n"
BAD = [
    # (file content, line, message pattern)
    (TOK + "2\tw\t_\tNOUN\tNN\t_\t_\t_\t_\n\n", 2, "expected 10 tab-separated columns, found 9"),
    ("1\tw w\t_\tNOUN\n", 1, "found 4"),
    (TOK + "2\t\t_\tNOUN\tNN\t_\t_\t_\t_\t_\n\n", 2, "empty word form"),
    ("# only a comment\n\n" + TOK + "\n", 1, "sentence has no tokens"),
    (TOK + "\n# c\n1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_\n\n", 3, "sentence has no tokens"),
    (TOK + "2\tw\t_\t_\tNN\t_\t_\t_\t_\t_\n\n", 2, r"tag column 4 \(upos\) is '_'"),
    (TOK + "x\tw\t_\tNOUN\tNN\t_\t_\t_\t_\t_\n\n", 2, "token id 'x' is not an integer"),
    (TOK + "3\tw\t_\tNOUN\tNN\t_\t_\t_\t_\t_\n\n", 2, "out of sequence"),
    (TOK + TOK + "\n", 2, "out of sequence"),
    # str.isdigit accepts '²', which int() refuses: a bare ValueError without file:line
    ("\u00b2\tw\t_\tNOUN\tNN\t_\t_\t_\t_\t_\n\n", 1,
     r"token id '\u00b2' is not an integer, a range \(2-3\) or an empty node \(2\.1\)$"),
    ("\u0661\tw\t_\tNOUN\tNN\t_\t_\t_\t_\t_\n\n", 1, "token id '\u0661' is not an integer"),
    # an id with '-' or '.' that is not a range or an empty node was skipped, and the error
    # fell on the next token line ("3 out of sequence")
    (TOK + "a-b\tw\t_\tNOUN\tNN\t_\t_\t_\t_\t_\n" + TOK.replace("1", "2", 1) + "\n", 2,
     "token id 'a-b' is not an integer, a range"),
    (TOK + "2.\tw\t_\tNOUN\tNN\t_\t_\t_\t_\t_\n\n", 2, "token id '2.' is not an integer"),
    (TOK + "1-2-3\tw\t_\t_\t_\t_\t_\t_\t_\t_\n\n", 2, "token id '1-2-3' is not an integer"),
    # whitespace or a stray CR in the tag column made a second tag beside 'NOUN'
    (TOK + "2\tw\t_\tNOUN \tNN\t_\t_\t_\t_\t_\n\n", 2,
     r"tag 'NOUN ' in column 4 \(upos\) has leading or trailing whitespace$"),
    (TOK + "2\tw\t_\tNOUN\r\tNN\t_\t_\t_\t_\t_\n\n", 2,
     r"tag 'NOUN\\r' in column 4 \(upos\) has leading or trailing whitespace$"),
    ("1\tw\t_\t\u00a0NOUN\tNN\t_\t_\t_\t_\t_\n\n", 1, "has leading or trailing whitespace"),
    ("1\tw\t_\t \tNN\t_\t_\t_\t_\t_\n\n", 1, "tag ' ' in column 4"),
]


@pytest.mark.parametrize(("content", "line", "pattern"), BAD)
def test_bad_input_names_file_and_line(tmp_path, content, line, pattern):
    p = tmp_path / "bad.conllu"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(CorpusFormatError, match=pattern) as info:
        read_conllu(p, tags="upos")
    assert info.value.line == line
    assert str(info.value).startswith(f"{p}:{line}: ")
    assert isinstance(info.value, ValueError)


def test_non_utf8_reports_line(tmp_path):
    p = tmp_path / "latin1.conllu"
    p.write_bytes(TOK.encode() + "2\tcaf\xe9\t_\tNOUN\tNN\t_\t_\t_\t_\t_\n\n".encode("latin-1"))
    with pytest.raises(CorpusFormatError, match=r"latin1\.conllu:2: is not valid UTF-8"):
        read_conllu(p)


def test_utf8_byte_order_mark_is_not_part_of_the_first_line(tmp_path):
    # Windows editors save UTF-8 with a BOM: it used to make line 1 "not an integer" token id
    # (or a comment line "expected 10 columns")
    for head in ("", "# sent_id = 1\n"):
        p = tmp_path / "bom.conllu"
        p.write_bytes(codecs.BOM_UTF8 + (head + SAMPLE).replace("\n", "\r\n").encode())
        assert read_conllu(p).to_sentences() == _slow_reader(SAMPLE, 3)
    t = tmp_path / "bom.txt"
    t.write_bytes(codecs.BOM_UTF8 + "The cat .\n".encode())
    assert [w for w, _ in read_tokenized(t)] == [["The", "cat", "."]]
    # a bad byte after the mark is still reported at its offset in the file
    p.write_bytes(codecs.BOM_UTF8 + TOK.encode() + b"2\tcaf\xe9\t_\tNOUN\tNN\t_\t_\t_\t_\t_\n")
    with pytest.raises(CorpusFormatError, match=rf"bom\.conllu:2: is not valid UTF-8 \(byte "
                                                rf"0xe9 at offset {3 + len(TOK) + 5}\)"):
        read_conllu(p)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_utf16_is_named(tmp_path, encoding):
    p = tmp_path / "u16.conllu"
    data = SAMPLE.encode(encoding)
    if encoding == "utf-16-be":
        data = codecs.BOM_UTF16_BE + data
    p.write_bytes(data)
    with pytest.raises(CorpusFormatError, match=r"u16\.conllu: is UTF-16 .*save it as UTF-8"):
        read_conllu(p)


def test_xpos_underscore_reported(tmp_path):
    p = tmp_path / "u.conllu"
    p.write_text("1\tw\t_\tNOUN\t_\t_\t_\t_\t_\t_\n\n")
    with pytest.raises(CorpusFormatError, match=r"u\.conllu:1: tag column 5 \(xpos\)"):
        read_conllu(p, tags="xpos")


def test_bad_gzip(tmp_path):
    p = tmp_path / "t.conllu.gz"
    p.write_bytes(gzip.compress(SAMPLE.encode())[:40])
    with pytest.raises(CorpusFormatError, match="corrupt or truncated gzip"):
        read_conllu(p)
    q = tmp_path / "plain.conllu.gz"
    q.write_text(SAMPLE)
    with pytest.raises(CorpusFormatError, match="not gzip data"):
        read_conllu(q)


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="tags must be 'upos', 'xpos' or None, got 'pos'"):
        read_conllu(tmp_path / "x", tags="pos")
    with pytest.raises(FileNotFoundError):
        read_conllu(tmp_path / "missing.conllu")
    with pytest.raises(CorpusFormatError, match="is a directory"):
        read_conllu(tmp_path)


def test_empty_file_gives_empty_corpus(tmp_path):
    p = tmp_path / "e.conllu"
    p.write_text("\n\n")
    c = read_conllu(p)
    assert c.n_sentences == 0 and c.n_tokens == 0


# -- fuzzing: random and mutated CoNLL-U may only raise CorpusFormatError ------------------

_line = st.one_of(
    st.just(""), st.just("# c"), st.just(TOK.rstrip("\n")),
    st.just("1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_"), st.just("1.1\te\t_\tX\tX\t_\t_\t_\t_\t_"),
    st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6),
             min_size=1, max_size=12).map("\t".join),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_line, max_size=20), tail=st.binary(max_size=8), gz=st.booleans())
def test_fuzz_only_corpus_format_error(tmp_path_factory, lines, tail, gz):
    data = "\n".join(lines).encode("utf-8") + tail
    p = tmp_path_factory.mktemp("fz") / ("f.conllu.gz" if gz else "f.conllu")
    p.write_bytes(gzip.compress(data) if gz else data)
    try:
        c = read_conllu(p, tags="upos")
    except CorpusFormatError:
        return
    assert c.n_tokens == c.word_ids.size and (c.lengths >= 1).all()


@settings(max_examples=200, deadline=None)
@given(pos=st.integers(0, len(SAMPLE) - 1), byte=st.integers(0, 255), cut=st.booleans())
def test_fuzz_mutated_sample(tmp_path_factory, pos, byte, cut):
    raw = bytearray(SAMPLE.encode())
    if cut:
        raw = raw[:pos]
    else:
        raw[pos] = byte
    p = tmp_path_factory.mktemp("mut") / "m.conllu"
    p.write_bytes(bytes(raw))
    try:
        read_conllu(p, tags="xpos")
    except CorpusFormatError:
        pass


def test_from_sentences_roundtrip():
    sents = [[("a", "X"), ("b", "Y")], [("b", "X")]]
    c = TaggedCorpus.from_sentences(sents)
    assert c.to_sentences() == sents
    np.testing.assert_array_equal(c.offsets, [0, 2, 3])


def test_multiword_ranges_and_empty_nodes_are_still_skipped(tmp_path):
    p = tmp_path / "mwt.conllu"
    p.write_text("1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_\n" + TOK + TOK.replace("1", "2", 1)
                 + "2.1\te\t_\tX\tX\t_\t_\t_\t_\t_\n10-11\tcd\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    assert read_conllu(p).to_sentences() == [[("w", "NOUN"), ("w", "NOUN")]]


def _corpus_with(word="w", tag="NN"):
    return TaggedCorpus([0, 1], [0, 1], [0, 2], ["a", word], ["X", tag])


@pytest.mark.parametrize(("corpus", "pattern"), [
    (_corpus_with(tag="N\tN"), r"^tag 'N\\tN' cannot be written to CoNLL-U: it contains a tab"),
    (_corpus_with(tag="N\nN"), r"^tag 'N\\nN' cannot be written to CoNLL-U: it contains a tab"),
    (_corpus_with(tag=""), r"^tag '' cannot be written to CoNLL-U: it is empty or only "),
    (_corpus_with(tag=" "), r"^tag ' ' cannot be written to CoNLL-U: it is empty or only "),
    (_corpus_with(tag="_"), r"^tag '_' cannot be written to CoNLL-U: it is '_', which CoNLL-U "
                            r"reads as no tag$"),
    (_corpus_with(tag="NN\r"), r"^tag 'NN\\r' cannot be written to CoNLL-U: it has leading or "
                               r"trailing whitespace$"),
    (_corpus_with(word="a\tb"), r"^word 'a\\tb' cannot be written to CoNLL-U: it contains a tab"),
    (_corpus_with(word=""), r"^word '' cannot be written to CoNLL-U: it is empty"),
    (_corpus_with(word=" "), r"^word ' ' cannot be written to CoNLL-U: it is empty or only "),
    # a raw UnicodeEncodeError before
    (_corpus_with(word="a\ud800"), r"^word 'a\\ud800' cannot be written to CoNLL-U: it holds "
                                   r"a lone surrogate, which UTF-8 cannot encode$"),
    (_corpus_with(tag="N\udfff"), r"^tag 'N\\udfff' cannot be written to CoNLL-U: it holds a "
                                  r"lone surrogate"),
])
def test_write_refuses_what_would_not_read_back(tmp_path, corpus, pattern):
    p = tmp_path / "w.conllu"
    with pytest.raises(ValueError, match=pattern):
        write_conllu(corpus, p)
    with pytest.raises(ValueError, match=pattern):
        write_conllu(corpus, io.StringIO())
    assert not p.exists()


def test_write_checks_only_the_tags_used(tmp_path):
    # a tag vocabulary may hold tags no token carries (e.g. a tagger's whole tagset)
    c = TaggedCorpus([0, 1], [0, 0], [0, 2], ["a", "b"], ["X", ""])
    write_conllu(c, tmp_path / "w.conllu")
    assert read_conllu(tmp_path / "w.conllu").to_sentences() == [[("a", "X"), ("b", "X")]]


def test_lone_surrogates_never_enter_from_text(tmp_path):
    """A lone surrogate passed every check until save() (raw UnicodeEncodeError).  Files
    cannot hold one (strict UTF-8: its 3-byte encoding is invalid); text handed to the
    parser directly is refused with its line."""
    from sparsecca.data._conllu import conllu_corpus, tokenized_corpus

    p = tmp_path / "s.conllu"
    p.write_bytes(TOK.encode() + b"2\tbad\xed\xa0\x80\t_\tNOUN\tNN\t_\t_\t_\t_\t_\n\n")
    with pytest.raises(CorpusFormatError, match=r"s\.conllu:2: is not valid UTF-8"):
        read_conllu(p)
    text = TOK + "\n" + TOK.replace("\tNOUN", "\tNO\ud800UN") + "\n"
    with pytest.raises(CorpusFormatError, match=r"^t\.conllu:3: holds a lone surrogate "
                                                r"\(U\+D800\), which UTF-8 cannot encode$"):
        conllu_corpus(text, "t.conllu")
    with pytest.raises(ValueError, match=r"^sentence 1: word 'b\\udc80' holds a lone "
                                         r"surrogate"):
        tokenized_corpus("a b\n\n c b\udc80\n")
