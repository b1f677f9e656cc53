"""The shared parts of the ``sparsecca`` command (:mod:`sparsecca.cli`): the user error,
the argument types, messages and progress, input and output files, the models' tag column
and the saved tagger."""

from __future__ import annotations

import argparse
import gzip
import io
import re
import sys
from contextlib import contextmanager
from pathlib import Path

from . import registry
from ._atomic import atomic_write, check_writable


class UsageError(Exception):
    """A user error: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit status 2), like every other user error."""

    def error(self, message):
        # an _int_option message names its option already: drop argparse's "argument -k: "
        message = re.sub(r"^argument (\S+): (?=\1 )", "", message)
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _int_option(name: str, low: int, why: str = ""):
    """argparse ``type`` of an integer option: an int >= ``low``, else an error naming the
    option, the range and the value (``--seed must be an int >= 0, got -1``)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low:
            got = text if value is not None else repr(text)
            raise argparse.ArgumentTypeError(f"{name} must be an int >= {low}{why}, got {got}")
        return value
    return parse


_K_WHY = " (reranking needs candidates)"


def _float_list(name: str):
    """argparse ``type`` of a grid option: comma-separated numbers."""
    def parse(text: str):
        try:
            values = tuple(float(v) for v in text.split(","))
        except ValueError:
            values = ()
        if not values or any(v != v for v in values):
            raise argparse.ArgumentTypeError(f"{name} must be a comma-separated list of "
                                             f"numbers, e.g. 0.9,0.99, got {text!r}")
        return values
    return parse


def _progress(args) -> bool:
    return not getattr(args, "quiet", False) and sys.stderr.isatty()


def _logging(args) -> bool:
    """One line per stage on stderr instead of progress bars: stderr is not a terminal."""
    return not getattr(args, "quiet", False) and not sys.stderr.isatty()


def _log(args):
    """The ``log`` callable of the library's long steps (None: say nothing)."""
    if not _logging(args):
        return None
    return lambda msg: print(f"sparsecca {args.verb}: {msg}", file=sys.stderr, flush=True)


def _warn(msg: str) -> None:
    """A warning the user must see, even with --quiet."""
    print(f"warning: {msg}", file=sys.stderr, flush=True)


def _info(args, msg: str) -> None:
    if not getattr(args, "quiet", False):
        print(msg, file=sys.stderr, flush=True)


def _input_file(path: str, what: str = "input", stdin: bool = False):
    """An input file that exists; with ``stdin``, '-' is standard input (returned as '-')."""
    if stdin and str(path) == "-":
        return "-"
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{p}: no such file ({what})")
    if p.is_dir():
        raise UsageError(f"{p}: is a directory, expected a file ({what})")
    return p


def _model_file(path: str, what: str) -> Path:
    """An input model file, found under the name given to save: ``-o out/tagger`` wrote
    ``out/tagger.npz``, which ``out/tagger`` names when no file ``out/tagger`` exists."""
    from ._persist import model_path

    p = model_path(path)
    if not p.exists() and p.suffix != ".npz":
        raise UsageError(f"{p}: no such file, nor {p}.npz ({what})")
    return _input_file(p, what)


def _output_file(path, force: bool) -> Path:
    """Check an output path before any work is done: not a directory, not an existing file
    (without --force), in a directory that can receive a new file (probed)."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{p}: is a directory, expected an output file name")
    if p.exists() and not force:
        raise UsageError(f"{p} exists; pass --force to overwrite it")
    if not p.parent.is_dir():
        raise UsageError(f"{p.parent}: no such directory for the output file")
    try:
        check_writable(p)
    except OSError as exc:
        raise UsageError(_one_line(exc)) from None
    return p


def _model_output(path, force: bool) -> Path:
    p = Path(path)
    if p.suffix != ".npz":
        p = p.with_name(p.name + ".npz")
    return _output_file(p, force)


@contextmanager
def _text_output(output):
    """A text stream to stdout (output None or '-') or, atomically, to a file (.gz
    compressed): written piece by piece, the file appears under its name only when the
    block succeeds (a temporary file beside it until then)."""
    if output is None or str(output) == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    p = Path(output)
    with atomic_write(p) as fh:
        raw = gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0) \
            if p.name.endswith(".gz") else fh
        text = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
        try:
            yield text
            text.detach()  # flushes; fh stays open for atomic_write to close and rename
            if raw is not fh:
                raw.close()  # the gzip trailer
        except BaseException:
            if raw is not fh:
                raw.fileobj = None  # no trailer into a file that is being removed
            raise


_INPUT_VIEWS = ("suffix", "charngram")


def _input_view(input_view: str):
    """The CCA models' sentence view: 'charngram' gives character 1-2-grams (the paper's
    choice for Chinese), 'suffix' their default, suffixes 2-4 (None)."""
    from .features import CharNgramView

    return CharNgramView(n=(1, 2)) if input_view == "charngram" else None


def _pick_rerankers(spec: str | None, seed: int, input_view: str = "suffix") -> dict:
    """Table 2 row -> unfitted reranker, for ``--models`` (None: every registered one)."""
    view = _input_view(input_view)
    if spec is None:
        return registry.rerankers(seed, view)
    names = [s.strip() for s in spec.split(",") if s.strip()]
    if not names:
        raise UsageError("--models names no model")
    return registry.rerankers(seed, view, names=names)  # an unknown name: ValueError


def _tag_column(args, *models) -> str:
    """--tags if given, else the column the models were trained on, else upos.

    ``models`` are (path, info) pairs; info records the column of models saved by this
    command.  Models trained on different columns, or on another column than --tags, are
    refused: their tags would land in the wrong column or be scored against the wrong gold.
    """
    from .data import TAG_COLUMNS

    recorded = [(str(p), (info or {}).get("tags")) for p, info in models]
    recorded = [(p, c) for p, c in recorded if c in TAG_COLUMNS]
    for (pa, a), (pb, b) in zip(recorded, recorded[1:]):
        if a != b:
            raise UsageError(f"{pa} was trained on {a}, {pb} on {b}; use models trained on "
                             f"the same tag column")
    if args.tags is not None:
        for p, c in recorded:
            if c != args.tags:
                raise UsageError(f"{p} was trained on {c}; --tags {args.tags}")
        return args.tags
    return recorded[0][1] if recorded else "upos"


def _check_gold_tagset(gold, hmm, column: str, src, tagger) -> None:
    """The input's gold tags against the tagger's tagset (the check left for models saved
    without their column): mostly unknown tags mean another tag column."""
    from ._tagset import check_tagset
    from .data import Vocabulary

    if gold is None:
        return
    if isinstance(gold, list):  # tag strings of a document
        vocab = Vocabulary(dict.fromkeys(gold))
        ids = vocab.ids(gold)
    else:  # a tagged corpus
        vocab, ids = gold.tags, gold.tag_ids
    check_tagset(ids, vocab, hmm.tags_, what=f"{src}: the {column} column",
                 fitted_what=f"the tagset of the tagger {tagger}")


def _load_tagger(path):
    """A saved tagger of any registered kind, and the info saved with it."""
    from ._persist import ModelFormatError, read_model_meta

    p = _model_file(path, "tagger model")
    meta = read_model_meta(p)
    classes = {}
    for spec in registry.specs("tagger"):
        cls = type(spec.make())
        classes[cls.__name__] = cls
    if meta["class"] not in classes:
        raise ModelFormatError(f"{p}: holds a {meta['class']!r}, not a "
                               f"{' or '.join(map(repr, classes))}")
    return classes[meta["class"]].load(p), meta.get("info", {})


def _read_document(path, fmt: str):
    """The input to tag (sparsecca.data.ConlluDocument); an empty one is refused.  ``path``
    '-' reads standard input."""
    from .data import read_document

    doc = read_document(path, fmt)  # CorpusFormatError, file:line
    name = "<stdin>" if str(path) == "-" else path
    if doc.n_sentences == 0:
        if fmt == "text":
            raise UsageError(f"{name}: no sentences (text input holds one sentence per line)")
        raise UsageError(f"{name}: no sentences")
    return doc


def _distinct_tags(path) -> dict:
    """The number of distinct tags in each tag column of a CoNLL-U file (token lines only;
    '_' and empty values are not tags)."""
    from .data import TAG_COLUMNS, read_text

    seen = {c: set() for c in TAG_COLUMNS}
    for line in read_text(path).split("\n"):
        if not line or line[0] == "#":
            continue
        cols = line.split("\t")
        if len(cols) != 10 or not cols[0].isdigit():
            continue
        for c, j in TAG_COLUMNS.items():
            seen[c].add(cols[j])
    return {c: len(v - {"_", ""}) for c, v in seen.items()}


def _tag_info(args, column: str, why: str) -> None:
    _info(args, f"tags: the {column} column ({why})")


def _column_why(args, models) -> str:
    if args.tags is not None:
        return "--tags"
    if any((info or {}).get("tags") for _, info in models):
        return "the column the model was trained on"
    return "the default; the model does not record its column"


def _tag_output(args):
    if args.output is not None and args.output != "-":
        _output_file(args.output, args.force)
    return args.output


def _one_line(exc: BaseException) -> str:
    msg = str(exc) or type(exc).__name__
    if isinstance(exc, KeyError):
        msg = f"missing {msg}"
    return " ".join(msg.split())
