"""CoNLL-U / CoNLL-X reading and writing: corpora, and documents written back with new tags."""

from __future__ import annotations

import codecs
import gzip
import io
import os
import re
import zlib
from pathlib import Path
from types import MappingProxyType

import numpy as np

from .._atomic import atomic_write_bytes
from .._params import check_bool
from ._corpus import SURROGATE, TaggedCorpus, Vocabulary

__all__ = ["TAG_COLUMNS", "ConlluDocument", "CorpusFormatError", "read_conllu", "write_conllu",
           "read_tokenized", "read_text", "read_document"]

#: the column (0-based) holding each tag kind; CoNLL-X names them CPOSTAG / POSTAG
TAG_COLUMNS = MappingProxyType({"upos": 3, "xpos": 4})
# the ids of lines read_conllu skips: multi-word token ranges (2-3) and empty nodes (2.1)
_SKIPPED_ID = re.compile(r"[0-9]+-[0-9]+|[0-9]+\.[0-9]+")


class CorpusFormatError(ValueError):
    r"""A corpus file is malformed.  ``path`` and ``line`` (1-based, 0 = whole file) say where.

    Parameters
    ----------
    path : str or path-like
        The file.
    line : int
        The 1-based line of the problem, or 0 when it concerns the whole file (e.g. bytes
        that are not gzip data).
    message : str
        What is wrong, kept as :attr:`reason`; the exception's text is
        ``"<path>:<line>: <message>"`` (``"<path>: <message>"`` for line 0).

    Examples
    --------
    >>> err = CorpusFormatError("train.conllu", 12, "empty word form in column 2")
    >>> str(err)
    'train.conllu:12: empty word form in column 2'
    >>> err.path, err.line, err.reason
    ('train.conllu', 12, 'empty word form in column 2')
    >>> from pathlib import Path
    >>> _ = Path("bad.conllu").write_text("1\tdog\tNOUN\n", encoding="utf-8")
    >>> try:
    ...     read_conllu("bad.conllu")
    ... except CorpusFormatError as exc:
    ...     print(exc)
    bad.conllu:1: expected 10 tab-separated columns, found 3
    """

    def __init__(self, path, line: int, message: str):
        self.path = str(path)
        self.line = int(line)
        self.reason = message
        where = f"{self.path}:{self.line}" if self.line > 0 else self.path
        super().__init__(f"{where}: {message}")


#: the name of standard input (the path '-') in messages
STDIN_NAME = "<stdin>"


def _read_bytes(path) -> tuple[str, bytes]:
    name = os.fspath(path)
    try:
        if name == "-":  # standard input, named so in messages
            import sys

            name = STDIN_NAME
            raw = sys.stdin.buffer.read()
        else:
            with open(name, "rb") as fh:
                raw = fh.read()
    except IsADirectoryError:
        raise CorpusFormatError(name, 0, "is a directory, expected a CoNLL-U file") from None
    if raw[:2] == b"\x1f\x8b":  # gzip magic, whatever the suffix says
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise CorpusFormatError(name, 0, f"corrupt or truncated gzip data ({exc})") from None
    elif name.endswith(".gz"):
        raise CorpusFormatError(name, 0, "has a .gz suffix but is not gzip data")
    return name, raw


def _decode(name: str, raw: bytes) -> str:
    # a UTF-8 byte-order mark (Notepad and Excel write one) is not part of the first line
    skip = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        return (raw[skip:] if skip else raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            raise CorpusFormatError(name, 0, "is UTF-16 (it starts with a UTF-16 byte-order "
                                             "mark); save it as UTF-8") from None
        at = exc.start + skip
        line = raw.count(b"\n", 0, at) + 1
        raise CorpusFormatError(
            name, line, f"is not valid UTF-8 (byte 0x{raw[at]:02x} at offset {at})"
        ) from None


def read_text(path) -> str:
    r"""The text of a corpus file as the readers see it.

    Gzip data is detected by its magic bytes; the bytes must be UTF-8 (a leading byte-order
    mark is dropped) and Windows line ends become ``\n``.  The path ``'-'`` reads standard
    input (named ``<stdin>`` in messages).  Raises CorpusFormatError (with the
    line of the first bad byte) otherwise.

    Examples
    --------
    >>> import codecs, gzip
    >>> data = codecs.BOM_UTF8 + "The dog barks .\r\nIt sleeps .\r\n".encode("utf-8")
    >>> _ = open("in.txt.gz", "wb").write(gzip.compress(data))
    >>> read_text("in.txt.gz")
    'The dog barks .\nIt sleeps .\n'
    """
    name, raw = _read_bytes(path)
    text = _decode(name, raw)
    return text.replace("\r\n", "\n") if "\r" in text else text


def _check_tags_arg(tags):
    if tags is not None and tags not in TAG_COLUMNS:
        raise ValueError(f"tags must be 'upos', 'xpos' or None, got {tags!r}")


def read_conllu(path, tags: str | None = "upos") -> TaggedCorpus:
    r"""Read a CoNLL-U or CoNLL-X file (plain or gzip-compressed) into a TaggedCorpus.

    Parameters
    ----------
    path : str or path-like
        The file.  Gzip data is detected by its magic bytes, so ``.conllu.gz`` works.
    tags : {'upos', 'xpos'} or None
        Which tag column to read: 'upos' is column 4 (CoNLL-X CPOSTAG), 'xpos' column 5
        (CoNLL-X POSTAG).  None reads words only (an untagged corpus).

    Returns
    -------
    TaggedCorpus
        Comment lines (``#``), multi-word ranges (ids ``a-b``) and empty nodes (ids ``a.b``)
        are skipped.  Word and tag ids follow first appearance in the file.

    Raises
    ------
    CorpusFormatError
        With file and line, for: a token line without exactly 10 tab-separated columns, an
        empty form, bytes that are not UTF-8, a sentence with no tokens, a bad or out-of-order
        token id, a ``_`` in the requested tag column, or a tag with leading or trailing
        whitespace (a stray CR included).

    See Also
    --------
    read_document : the corpus plus its lines, to write it back with new tags.

    Examples
    --------
    >>> from pathlib import Path
    >>> _ = Path("tiny.conllu").write_text(
    ...     "# sent_id = 1\n"
    ...     "1\tThe\tthe\tDET\tDT\t_\t_\t_\t_\t_\n"
    ...     "2\tdog\tdog\tNOUN\tNN\t_\t_\t_\t_\t_\n\n", encoding="utf-8")
    >>> corpus = read_conllu("tiny.conllu")
    >>> corpus.n_sentences, corpus.n_tokens
    (1, 2)
    >>> corpus.sentence(0)
    (['The', 'dog'], ['DET', 'NOUN'])
    >>> read_conllu("tiny.conllu", tags="xpos").sentence(0)
    (['The', 'dog'], ['DT', 'NN'])
    >>> read_conllu("tiny.conllu", tags=None).has_tags
    False
    """
    _check_tags_arg(tags)
    return conllu_corpus(read_text(path), os.fspath(path), tags)


def conllu_corpus(text: str, name: str, tags: str | None = "upos") -> TaggedCorpus:
    r""":func:`read_conllu` of a file's text (:func:`read_text`), for a caller that has read
    it already; ``name`` is the file named in a :class:`CorpusFormatError`.

    Examples
    --------
    >>> text = "1\tcats\t_\tNOUN\t_\t_\t_\t_\t_\t_\n2\tpurr\t_\tVERB\t_\t_\t_\t_\t_\t_\n\n"
    >>> conllu_corpus(text, "memory").sentence(0)
    (['cats', 'purr'], ['NOUN', 'VERB'])
    >>> conllu_corpus("1\tcats\n", "memory")
    Traceback (most recent call last):
    ...
    sparsecca.data._conllu.CorpusFormatError: memory:1: expected 10 tab-separated columns, found 2
    """
    _check_tags_arg(tags)
    # read_text's strict UTF-8 decoding never gives a lone surrogate, other text may (a
    # C-speed check: a regex search over the text costs a noticeable part of the parse)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            line = text.count("\n", 0, exc.start) + 1
            raise CorpusFormatError(name, line, f"holds a lone surrogate "
                                                f"(U+{ord(text[exc.start]):04X}), which UTF-8 "
                                                f"cannot encode") from None
    tcol = TAG_COLUMNS[tags] if tags is not None else None
    wdict: dict[str, int] = {}
    tdict: dict[str, int] = {}
    wids: list[int] = []
    tids: list[int] = []
    offsets = [0]
    expect = 1            # next token id expected in the current sentence
    in_sentence = False   # a comment or token line has been seen since the last blank line
    start_line = 0
    wset = wdict.setdefault
    tget = tdict.get
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line:
            if in_sentence:
                if expect == 1:
                    raise CorpusFormatError(name, start_line,
                                            "sentence has no tokens (only comments or ranges)")
                offsets.append(len(wids))
                in_sentence = False
                expect = 1
            continue
        if not in_sentence:
            in_sentence = True
            start_line = lineno
        if line[0] == "#":
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            spaced = " (the columns are separated by spaces?)" if _spaced_row(line) else ""
            raise CorpusFormatError(
                name, lineno, f"expected 10 tab-separated columns, found {len(cols)}{spaced}"
            )
        tid = cols[0]
        # ASCII digits only: str.isdigit also accepts e.g. '²', which int() then refuses
        if not (tid.isdigit() and tid.isascii()):
            if _SKIPPED_ID.fullmatch(tid):
                continue  # multi-word token range or empty node
            raise CorpusFormatError(name, lineno, f"token id {tid!r} is not an integer, a "
                                                  f"range (2-3) or an empty node (2.1)")
        if int(tid) != expect:
            raise CorpusFormatError(
                name, lineno,
                f"token id {tid} out of sequence (expected {expect}; missing blank line "
                f"between sentences?)",
            )
        expect += 1
        form = cols[1]
        if not form or form.isspace():
            raise CorpusFormatError(name, lineno, "empty word form in column 2")
        wids.append(wset(form, len(wdict)))
        if tcol is not None:
            tag = cols[tcol]
            t = tget(tag)
            if t is None:  # a new tag string: checked once
                if tag == "_" or not tag:
                    raise CorpusFormatError(
                        name, lineno,
                        f"tag column {tcol + 1} ({tags}) is {tag!r}; this file has no {tags} "
                        f"tags (read the {'xpos' if tags == 'upos' else 'upos'} column "
                        f"instead)",
                    )
                if tag != tag.strip():
                    # e.g. 'NN ' or a stray CR ('NN\r'): it would become a tag besides 'NN'
                    raise CorpusFormatError(name, lineno, f"tag {tag!r} in column {tcol + 1} "
                                                          f"({tags}) has leading or trailing "
                                                          f"whitespace")
                t = tdict[tag] = len(tdict)
            tids.append(t)
    if in_sentence:  # no trailing blank line
        if expect == 1:
            raise CorpusFormatError(name, start_line,
                                    "sentence has no tokens (only comments or ranges)")
        offsets.append(len(wids))
    if tcol is None:
        return TaggedCorpus(np.array(wids, dtype=np.int32), None,
                            np.array(offsets, dtype=np.int64), Vocabulary(wdict), None)
    return TaggedCorpus(np.array(wids, dtype=np.int32), np.array(tids, dtype=np.int32),
                        np.array(offsets, dtype=np.int64), Vocabulary(wdict), Vocabulary(tdict))


def read_tokenized(path) -> TaggedCorpus:
    r"""Read one-sentence-per-line, whitespace-tokenised text (plain or gzip) as an untagged corpus.

    Blank lines are skipped.  Tokens are separated by any Unicode whitespace (``str.split``):
    besides spaces and tabs, also no-break spaces (U+00A0, U+202F) and the ideographic space
    (U+3000), so a token cannot contain one (a number written "10 000" with a no-break space
    becomes two tokens); use CoNLL-U, whose FORM column may hold spaces, for such tokens.

    Examples
    --------
    >>> from pathlib import Path
    >>> _ = Path("in.txt").write_text("The dog barks .\n\nIt  sleeps\n", encoding="utf-8")
    >>> corpus = read_tokenized("in.txt")
    >>> corpus.n_sentences, corpus.has_tags
    (2, False)
    >>> corpus.sentence(1)
    (['It', 'sleeps'], None)
    """
    return tokenized_corpus(read_text(path))


def tokenized_corpus(text: str) -> TaggedCorpus:
    r""":func:`read_tokenized` of a file's text (:func:`read_text`), for a caller that has
    read it already.

    Examples
    --------
    >>> corpus = tokenized_corpus("The dog barks .\nIt sleeps\n")
    >>> corpus.n_sentences, corpus.n_tokens
    (2, 6)
    >>> corpus.sentence(0)[0]
    ['The', 'dog', 'barks', '.']
    """
    # lines end at \n (\r\n too) only, as in the CoNLL-U reader: str.splitlines would also
    # end one at a form feed, U+0085 or U+2028 inside it, and number the sentences wrong
    return TaggedCorpus.from_words(line.split() for line in text.split("\n") if line.strip())


def _check_writable(what: str, items) -> None:
    """Refuse a word or tag that would make a line read_conllu refuses (or misreads)."""
    for s in items:
        if not s or s.isspace():
            reason = "is empty or only whitespace"
        elif "\t" in s or "\n" in s:
            reason = "contains a tab or a newline"
        elif SURROGATE.search(s):
            reason = "holds a lone surrogate, which UTF-8 cannot encode"
        elif what == "tag" and s == "_":
            reason = "is '_', which CoNLL-U reads as no tag"
        elif what == "tag" and s != s.strip():
            reason = "has leading or trailing whitespace"
        else:
            continue
        raise ValueError(f"{what} {s!r} cannot be written to CoNLL-U: it {reason}")


def write_conllu(corpus: TaggedCorpus, path, tags: str = "upos", *, overwrite: bool = False,
                 comments=None) -> None:
    r"""Write a TaggedCorpus as 10-column CoNLL-U.

    Parameters
    ----------
    corpus : TaggedCorpus
    path : str, path-like or text file object
        A ``.gz`` path is gzip-compressed.
    tags : {'upos', 'xpos'}
        Column that receives the tags; the other tag column gets ``_``.
    overwrite : bool
        An existing file is refused (FileExistsError) unless this is True.
    comments : sequence of str or None
        Optional per-sentence comment text (without the leading ``# ``).

    Raises
    ------
    ValueError
        A word or tag that would not read back: empty or only whitespace, with a tab, a
        newline or a lone surrogate, or (tags) ``_`` or with leading or trailing whitespace.
    TypeError
        ``overwrite`` is not True or False.
    FileExistsError
        ``path`` exists and ``overwrite`` is False.
    FileNotFoundError, IsADirectoryError
        The directory of ``path`` does not exist, or ``path`` is a directory.

    Examples
    --------
    >>> corpus = TaggedCorpus.from_sentences([[("The", "DET"), ("dog", "NOUN")]])
    >>> write_conllu(corpus, "out.conllu", comments=["sent_id = a1"])
    >>> print(open("out.conllu", encoding="utf-8").read().replace("\t", " "))
    # sent_id = a1
    1 The _ DET _ _ _ _ _ _
    2 dog _ NOUN _ _ _ _ _ _
    <BLANKLINE>
    >>> read_conllu("out.conllu") == corpus
    True
    >>> write_conllu(corpus, "out.conllu")
    Traceback (most recent call last):
    ...
    FileExistsError: out.conllu exists; pass overwrite=True to replace it
    """
    _check_tags_arg(tags)
    if tags is None:
        raise ValueError("write_conllu needs tags='upos' or 'xpos'")
    # a truthy string such as 'no' must not replace the user's file
    overwrite = check_bool("overwrite", overwrite)
    if not isinstance(corpus, TaggedCorpus):
        raise TypeError(f"corpus must be a TaggedCorpus, got {type(corpus).__name__}")
    wl = corpus.words.items
    tl = corpus.tags.items if corpus.has_tags else None
    _check_writable("word", wl)
    if tl is not None:  # only the tags used: a tag vocabulary may hold more
        _check_writable("tag", (tl[t] for t in np.unique(corpus.tag_ids).tolist()))
    if comments is not None and len(comments) != corpus.n_sentences:
        raise ValueError(
            f"comments has {len(comments)} entries, corpus has {corpus.n_sentences} sentences"
        )
    out = []
    for i in range(corpus.n_sentences):
        if comments is not None and comments[i]:
            out.extend(f"# {c}" for c in str(comments[i]).split("\n"))
        a, b = corpus.offsets[i], corpus.offsets[i + 1]
        for k in range(a, b):
            tag = "_" if tl is None else tl[corpus.tag_ids[k]]
            upos, xpos = (tag, "_") if tags == "upos" else ("_", tag)
            out.append(f"{k - a + 1}\t{wl[corpus.word_ids[k]]}\t_\t{upos}\t{xpos}\t_\t_\t_\t_\t_")
        out.append("")
    data = ("\n".join(out) + ("\n" if out else "")).encode("utf-8")
    if isinstance(path, io.TextIOBase):
        path.write(data.decode("utf-8"))
        return
    p = Path(path)
    if p.exists() and not overwrite and not p.is_dir():
        raise FileExistsError(f"{p} exists; pass overwrite=True to replace it")
    if p.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    atomic_write_bytes(p, data)


# -- documents: a corpus plus the lines it was read from ------------------------------------

_FORMATS = ("conllu", "text")
# a first line like these says CoNLL-U (read_document refuses such a file as text)
_CONLLU_COMMENT = re.compile(r"#\s*(sent_id|text)\s*=")
_CONLLU_ID = re.compile(r"[0-9]+([-.][0-9]+)?")
_SENT_ID = re.compile(r"#\s*sent_id\s*=\s*(.*)$")


def _tag_column(column) -> int:
    if column not in TAG_COLUMNS:
        raise ValueError(f"column must be 'upos' or 'xpos', got {column!r}")
    return TAG_COLUMNS[column]


class ConlluDocument:
    r"""A corpus and the lines it was read from, to write it back with new tags.

    Tagging a CoNLL-U file changes its tag column only: :meth:`render` gives the lines of a
    sentence as read (comments, multi-word token ranges, empty nodes and every other column
    unchanged) with the tag column of its token lines replaced.  A document of text input
    (one sentence per line) has no lines to keep: :meth:`render` writes 10-column token
    lines, ``_`` in the columns other than the word and the tag, after ``# sent_id = N``
    (1-based) and ``# text = ...`` comments.

    Parameters
    ----------
    corpus : TaggedCorpus
        The sentences (their tags, if any, are not used).
    blocks : list of list of str, optional
        The lines of each sentence of ``corpus`` as read, without line ends; None (the
        default) for text input.

    Attributes
    ----------
    corpus : TaggedCorpus
    blocks : list of list of str or None
    token_lines : list of list of int or None
        The positions in ``blocks[i]`` of the token lines of sentence ``i``, one per word.
    format : {'conllu', 'text'}
        'text' when the document has no blocks.

    Raises
    ------
    ValueError
        ``blocks`` does not hold one block per sentence, or a block does not hold one token
        line (an integer id) per word of its sentence.

    See Also
    --------
    read_document : read a CoNLL-U or text file as a document.

    Examples
    --------
    >>> from pathlib import Path
    >>> _ = Path("in.conllu").write_text(
    ...     "# sent_id = fr-1\n"
    ...     "1-2\tdu\t_\t_\t_\t_\t_\t_\t_\t_\n"
    ...     "1\tde\tde\tADP\t_\t_\t3\tcase\t_\t_\n"
    ...     "2\tle\tle\tDET\t_\t_\t3\tdet\t_\t_\n"
    ...     "3\tchat\tchat\tNOUN\t_\t_\t0\troot\t_\t_\n\n", encoding="utf-8")
    >>> doc = read_document("in.conllu")
    >>> doc.n_sentences, doc.sent_id(0), doc.gold("upos")
    (1, 'fr-1', ['ADP', 'DET', 'NOUN'])
    >>> for line in doc.render(0, ["X", "Y", "Z"], "upos"):
    ...     print(line.replace("\t", " "))
    # sent_id = fr-1
    1-2 du _ _ _ _ _ _ _ _
    1 de de X _ _ 3 case _ _
    2 le le Y _ _ 3 det _ _
    3 chat chat Z _ _ 0 root _ _
    <BLANKLINE>

    A k-best block: the caller's header replaces the sentence's ``sent_id`` comment.

    >>> header = ["# sent_id = fr-1", "# candidate = 2"]
    >>> doc.render(0, ["X", "Y", "Z"], "xpos", header=header, kbest=True)[:4]
    ['# sent_id = fr-1', '# candidate = 2', '1-2\tdu\t_\t_\t_\t_\t_\t_\t_\t_',
     '1\tde\tde\tADP\tX\t_\t3\tcase\t_\t_']

    Text input:

    >>> doc = ConlluDocument(tokenized_corpus("le chat dort\n"))
    >>> doc.format, doc.sent_id(0), doc.gold("upos")
    ('text', '1', None)
    >>> for line in doc.render(0, ["DET", "NOUN", "VERB"], "upos"):
    ...     print(line.replace("\t", " "))
    # sent_id = 1
    # text = le chat dort
    1 le _ DET _ _ _ _ _ _
    2 chat _ NOUN _ _ _ _ _ _
    3 dort _ VERB _ _ _ _ _ _
    <BLANKLINE>
    """

    def __init__(self, corpus: TaggedCorpus, blocks=None):
        if not isinstance(corpus, TaggedCorpus):
            raise TypeError(f"corpus must be a TaggedCorpus, got {type(corpus).__name__}")
        self.corpus = corpus
        self.blocks = None if blocks is None else list(blocks)
        self.token_lines = None
        self.format = "text" if blocks is None else "conllu"
        if self.blocks is None:
            return
        if len(self.blocks) != corpus.n_sentences:
            raise ValueError(f"blocks has {len(self.blocks)} entries, corpus has "
                             f"{corpus.n_sentences} sentences")
        self.token_lines = [[j for j, x in enumerate(block)
                             if x[:1] != "#" and x.split("\t", 1)[0].isdigit()]
                            for block in self.blocks]
        lengths = corpus.lengths.tolist()
        for i, (pos, n) in enumerate(zip(self.token_lines, lengths)):
            if len(pos) != n:
                raise ValueError(f"block {i} has {len(pos)} token lines, sentence {i} has "
                                 f"{n} words")

    @property
    def n_sentences(self) -> int:
        """The number of sentences."""
        return self.corpus.n_sentences

    def sent_id(self, i: int) -> str:
        """The ``# sent_id`` of sentence ``i``, else its 1-based number."""
        if self.blocks is not None:
            for line in self.blocks[i]:
                # the comment render(kbest=True) leaves out, spaced as it may be
                m = _SENT_ID.match(line) if line[:1] == "#" else None
                if m:
                    return m.group(1).strip()
        return str(i + 1)

    def gold(self, column: str):
        """The tag strings of every token in ``column`` ('upos' or 'xpos'), or None when the
        document has no such tags (text input, or a ``_`` or empty tag anywhere)."""
        c = _tag_column(column)
        if self.blocks is None:
            return None
        out = []
        for block, pos in zip(self.blocks, self.token_lines):
            for j in pos:
                tag = block[j].split("\t")[c]
                if tag in ("_", ""):
                    return None
                out.append(tag)
        return out

    def render(self, i: int, tags, column: str, header=(), kbest: bool = False) -> list[str]:
        """The lines of sentence ``i`` with ``tags`` (one per word) in ``column``.

        Parameters
        ----------
        i : int
            The sentence.
        tags : sequence of str
            One tag per word.
        column : {'upos', 'xpos'}
            The column receiving the tags.
        header : sequence of str
            Comment lines written first.
        kbest : bool
            A block of a k-best list: the sentence's own ``sent_id`` comment (or, for text
            input, the ``# sent_id = N`` comment) is left out; ``header`` gives it.

        Returns
        -------
        list of str
            The lines without line ends, the last one empty (the blank line ending the
            sentence).
        """
        c = _tag_column(column)
        out = list(header)
        if self.blocks is None:
            words, _ = self.corpus.sentence(i)
            if not kbest:
                out.append(f"# sent_id = {i + 1}")
            out.append("# text = " + " ".join(words))
            for n, (w, t) in enumerate(zip(words, tags), 1):
                cols = [str(n), w] + ["_"] * 8
                cols[c] = t
                out.append("\t".join(cols))
        else:
            block = list(self.blocks[i])
            for j, t in zip(self.token_lines[i], tags):
                cols = block[j].split("\t")
                cols[c] = t
                block[j] = "\t".join(cols)
            if kbest:  # the header replaces the input's sent_id
                block = [x for x in block if not _SENT_ID.match(x)]
            out.extend(block)
        out.append("")
        return out


#: text input is refused as CoNLL-U with space-separated columns when more than half of
#: its first lines (not blank, not comments) are such rows, most of them with one field count
_SPACED_MIN_FIELDS = 8
_SPACED_SCAN_LINES = 200


def _spaced_row(line: str) -> int:
    """The field count of a CoNLL-U token row whose columns are separated by spaces (a
    leading token id and at least 8 whitespace-separated fields), else 0."""
    fields = line.split()
    if len(fields) >= _SPACED_MIN_FIELDS and _CONLLU_ID.fullmatch(fields[0]):
        return len(fields)
    return 0


def _refuse_conllu_as_text(path, text: str) -> None:
    """CoNLL-U read as text would be tagged line by line, every column a word (and slowly:
    the tokens are all unknown); refuse it when its first lines say CoNLL-U: a ``sent_id``
    or ``text`` comment or a tab-separated token row before the first sentence, or, over
    the first lines, mostly rows of a leading token id and 8 or more space-separated fields
    of one count (a numbered list of sentences varies in length and is kept as text)."""
    lines = text.split("\n", _SPACED_SCAN_LINES)[:_SPACED_SCAN_LINES]
    for lineno, line in enumerate(lines[:100], 1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        cols = line.split("\t")
        if _CONLLU_COMMENT.match(line) or (len(cols) == 10 and _CONLLU_ID.fullmatch(cols[0])):
            raise CorpusFormatError(path, lineno, "looks like CoNLL-U; drop --format text")
        if not line.startswith("#"):  # the first sentence: the rows test below decides
            break
    n, counts, first = 0, {}, 0
    for lineno, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        n += 1
        width = _spaced_row(line)
        if width:
            counts[width] = counts.get(width, 0) + 1
            first = first or lineno
    rows = sum(counts.values())
    if rows and 2 * rows > n and 5 * max(counts.values()) >= 4 * rows:
        raise CorpusFormatError(
            path, first, f"looks like CoNLL-U rows, not text ({rows} of the first {n} lines "
                         f"start with a token id and have {max(counts, key=counts.get)} "
                         f"whitespace-separated fields; text input holds one sentence per "
                         f"line); CoNLL-U needs 10 tab-separated columns (columns separated "
                         f"by spaces must become tabs): drop --format text")


def read_document(path, fmt: str = "conllu") -> ConlluDocument:
    r"""Read a CoNLL-U file, or one sentence per line of text, as a :class:`ConlluDocument`.

    Parameters
    ----------
    path : str or path-like
        The file, plain or gzip-compressed (see :func:`read_text`); ``'-'`` reads standard
        input.
    fmt : {'conllu', 'text'}, default 'conllu'
        CoNLL-U (read as by :func:`read_conllu` without tags, every line kept), or text:
        one sentence per line, tokens separated by white space (:func:`read_tokenized`).

    Returns
    -------
    ConlluDocument

    Raises
    ------
    CorpusFormatError
        What :func:`read_conllu` refuses.  The hints name the command line's ``--format``
        option: a CoNLL-U line without a tab (plain text) says that text needs
        ``--format text``, a row whose columns are separated by spaces says so, and text
        whose first lines look like CoNLL-U is refused: a ``sent_id`` or ``text`` comment
        or a 10-column tab-separated line starting with a token id before the first
        sentence, or, over the first 200 lines, mostly rows of a token id and 8 or more
        space-separated fields, most of one count (CoNLL-U with space-separated columns;
        a numbered list of sentences, whose lengths vary, is read as text).
    ValueError
        ``fmt`` is neither 'conllu' nor 'text'.

    Examples
    --------
    >>> from pathlib import Path
    >>> _ = Path("in.conllu").write_text(
    ...     "# sent_id = a\n1\tHi\t_\tINTJ\t_\t_\t_\t_\t_\t_\n\n"
    ...     "# sent_id = b\n1\tBye\t_\tINTJ\t_\t_\t_\t_\t_\t_\n\n", encoding="utf-8")
    >>> doc = read_document("in.conllu")
    >>> doc.format, doc.n_sentences, [doc.sent_id(i) for i in range(2)]
    ('conllu', 2, ['a', 'b'])
    >>> doc.blocks[1]
    ['# sent_id = b', '1\tBye\t_\tINTJ\t_\t_\t_\t_\t_\t_']
    >>> _ = Path("in.txt").write_text("Hi there\nBye\n", encoding="utf-8")
    >>> text = read_document("in.txt", "text")
    >>> text.format, text.corpus.sentence(0)
    ('text', (['Hi', 'there'], None))
    >>> read_document("in.conllu", "text")
    Traceback (most recent call last):
    ...
    sparsecca.data._conllu.CorpusFormatError: in.conllu:1: looks like CoNLL-U; drop --format text
    """
    if fmt not in _FORMATS:
        raise ValueError(f"fmt must be 'conllu' or 'text', got {fmt!r}")
    text = read_text(path)  # once: checked, then parsed and (CoNLL-U) split into blocks
    name = os.fspath(path)
    name = STDIN_NAME if name == "-" else name
    if fmt == "text":
        _refuse_conllu_as_text(name, text)
        return ConlluDocument(tokenized_corpus(text))
    try:
        corpus = conllu_corpus(text, name, tags=None)
    except CorpusFormatError as exc:
        bad = text.split("\n", exc.line)[exc.line - 1] if exc.line > 0 else ""
        if "tab-separated columns" in exc.reason and _spaced_row(bad):
            reason = exc.reason.split(" (")[0]
            raise CorpusFormatError(exc.path, exc.line, f"{reason}: the columns are "
                                    f"separated by spaces, not tabs; separate them by tabs "
                                    f"(--format text would read each row as a sentence)"
                                    ) from None
        if exc.reason.endswith("tab-separated columns, found 1"):
            # a line without a tab: most likely plain text read as CoNLL-U
            raise CorpusFormatError(exc.path, exc.line, f"{exc.reason} (tokenised text, one "
                                    f"sentence per line, needs --format text)") from None
        raise
    # conllu_corpus accepted the text, so its sentences are exactly the runs of non-blank lines
    blocks, cur = [], []
    for line in text.split("\n"):
        if line:
            cur.append(line)
        elif cur:
            blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    return ConlluDocument(corpus, blocks)
