"""Documents: a corpus plus the lines it was read from (CoNLL-U, or tokenised text, one
sentence per line), written back with new tags (:class:`ConlluDocument`,
:func:`read_document`)."""

from __future__ import annotations

import os
import re

from ._conllu import (
    _CONLLU_ID,
    STDIN_NAME,
    TAG_COLUMNS,
    CorpusFormatError,
    _spaced_row,
    conllu_corpus,
    read_text,
    tokenized_corpus,
)
from ._corpus import TaggedCorpus

__all__ = ["ConlluDocument", "read_document"]

_FORMATS = ("conllu", "text")
# a first line like these says CoNLL-U (read_document refuses such a file as text)
_CONLLU_COMMENT = re.compile(r"#\s*(sent_id|text)\s*=")
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
#: its first lines (not blank, not comments) are such rows (see ``_spaced_row``), most of
#: them with one field count
_SPACED_SCAN_LINES = 200


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
