"""CoNLL-U / CoNLL-X reading and writing of corpora (documents written back with new tags:
:mod:`sparsecca.data._document`)."""

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

__all__ = ["TAG_COLUMNS", "CorpusFormatError", "read_conllu", "write_conllu", "read_tokenized",
           "read_text"]

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


def _decode(name: str, raw: bytes, at_start: bool = True) -> str:
    # a UTF-8 byte-order mark (Notepad and Excel write one) is not part of the first line;
    # ``at_start`` False: ``raw`` is a later range of the file, whose bytes are all text
    skip = len(codecs.BOM_UTF8) if at_start and raw.startswith(codecs.BOM_UTF8) else 0
    try:
        return (raw[skip:] if skip else raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        if at_start and raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
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


def read_conllu(path, tags: str | None = "upos", *, byte_range=None) -> TaggedCorpus:
    r"""Read a CoNLL-U or CoNLL-X file (plain or gzip-compressed) into a TaggedCorpus.

    Parameters
    ----------
    path : str or path-like
        The file.  Gzip data is detected by its magic bytes, so ``.conllu.gz`` works.
    tags : {'upos', 'xpos'} or None
        Which tag column to read: 'upos' is column 4 (CoNLL-X CPOSTAG), 'xpos' column 5
        (CoNLL-X POSTAG).  None reads words only (an untagged corpus).
    byte_range : (int, int) or None
        ``(start, stop)``, ``0 <= start <= stop``: read only the sentences that begin in
        bytes ``[start, stop)`` of a plain (not gzip) file.  A sentence begins at the file's
        start or at the line after a blank line, so consecutive ranges that cover the file
        read each of its sentences exactly once, and their corpora concatenated
        (:func:`concat_corpora`) equal the whole file's.  Errors name the line of the
        whole file.  The partitions of :func:`sparsecca.distributed.read_conllu_partitions`.

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

    A file read in two byte ranges (its second sentence begins at byte 50):

    >>> _ = Path("two.conllu").write_text(
    ...     "1\tThe\t_\tDET\t_\t_\t_\t_\t_\t_\n2\tdog\t_\tNOUN\t_\t_\t_\t_\t_\t_\n\n"
    ...     "1\tIt\t_\tPRON\t_\t_\t_\t_\t_\t_\n", encoding="utf-8")
    >>> [read_conllu("two.conllu", byte_range=r).n_sentences for r in [(0, 50), (50, 99)]]
    [1, 1]
    >>> [read_conllu("two.conllu", byte_range=r).n_sentences for r in [(0, 51), (51, 99)]]
    [2, 0]
    """
    _check_tags_arg(tags)
    if byte_range is not None:
        return _read_conllu_range(path, tags, byte_range)
    return conllu_corpus(read_text(path), os.fspath(path), tags)


#: a blank line of a ``\n`` or ``\r\n`` file, matched after the newline ending the line before
_BLANK_LINE = re.compile(rb"(?<=\n)\r?\n")
_CHUNK = 1 << 16


def _next_cut(fh, pos: int) -> int:
    """The first sentence boundary at or after byte ``pos`` of a binary file: 0, or the
    start of a line that follows a blank line (where the parser is in the state of a new
    file); the file's size when there is none."""
    if pos <= 0:
        return 0
    base = max(0, pos - 3)
    fh.seek(base)
    # the file's start counts as the end of a line: a leading blank line is a boundary too
    buf = b"\n" * (base == 0) + fh.read(pos - base + _CHUNK)
    origin = base - (base == 0)  # the file offset of buf[0]
    search = 0
    while True:
        for m in _BLANK_LINE.finditer(buf, search):
            if origin + m.end() >= pos:
                return origin + m.end()
        more = fh.read(_CHUNK)
        if not more:
            return origin + len(buf)
        search = max(0, len(buf) - 2)  # a blank line may straddle the chunks
        buf += more


def _lines_before(fh, pos: int) -> int:
    """The number of newlines in the first ``pos`` bytes of a binary file."""
    fh.seek(0)
    n, left = 0, pos
    while left > 0:
        chunk = fh.read(min(left, 1 << 22))
        if not chunk:
            break
        n += chunk.count(b"\n")
        left -= len(chunk)
    return n


def _check_byte_range(byte_range) -> tuple[int, int]:
    ok = (isinstance(byte_range, (tuple, list)) and len(byte_range) == 2
          and all(isinstance(b, (int, np.integer)) and not isinstance(b, bool)
                  for b in byte_range))
    if not ok or not 0 <= byte_range[0] <= byte_range[1]:
        raise ValueError(f"byte_range must be None or a pair (start, stop) of ints with "
                         f"0 <= start <= stop, got {byte_range!r}")
    return int(byte_range[0]), int(byte_range[1])


def _read_conllu_range(path, tags, byte_range) -> TaggedCorpus:
    start, stop = _check_byte_range(byte_range)
    name = os.fspath(path)
    if name == "-":
        raise ValueError("byte_range needs a file, got the path '-' (standard input)")
    try:
        with open(name, "rb") as fh:
            if fh.read(2) == b"\x1f\x8b":
                raise ValueError(f"byte_range needs a plain file; {name} is gzip data (read "
                                 f"it whole)")
            first = _next_cut(fh, start)
            last = _next_cut(fh, stop) if stop > first else first
            fh.seek(first)
            raw = fh.read(last - first)
            try:
                text = _decode(name, raw, at_start=first == 0)
                if "\r" in text:
                    text = text.replace("\r\n", "\n")
                return conllu_corpus(text, name, tags)
            except CorpusFormatError as exc:
                if exc.line <= 0 or first == 0:
                    raise
                # the range's line numbers start after the lines before it
                raise CorpusFormatError(exc.path, exc.line + _lines_before(fh, first),
                                        exc.reason) from None
    except IsADirectoryError:
        raise CorpusFormatError(name, 0, "is a directory, expected a CoNLL-U file") from None


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


#: a CoNLL-U token id: 1, a multi-word token range 2-3 or an empty node 4.1
_CONLLU_ID = re.compile(r"[0-9]+([-.][0-9]+)?")
#: a CoNLL-U token row with space-separated columns: a token id and this many fields or more
_SPACED_MIN_FIELDS = 8


def _spaced_row(line: str) -> int:
    """The field count of a CoNLL-U token row whose columns are separated by spaces (a
    leading token id and at least 8 whitespace-separated fields), else 0."""
    fields = line.split()
    if len(fields) >= _SPACED_MIN_FIELDS and _CONLLU_ID.fullmatch(fields[0]):
        return len(fields)
    return 0
