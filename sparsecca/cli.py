"""The ``sparsecca`` command (also ``python -m sparsecca``).

Verbs
-----
``demo``            the whole Table-2 protocol on the built-in synthetic corpus
``experiment``      the Table-2 protocol on directories of train/dev/test CoNLL-U files
``train-tagger``    fit a tagger (the TrigramHMM by default) on a CoNLL-U file and save it
``tag``             tag CoNLL-U or tokenised text with a saved tagger (1-best or k-best)
``train-reranker``  fit a reranker on jackknifed n-best lists of a saved tagger and save it
``rerank``          decode k-best lists with a saved tagger and rerank them with a saved reranker
``evaluate``        score predicted CoNLL-U against gold: accuracy (known / unknown words),
                    per-tag precision / recall / F1, paired significance between two predictions

Every verb has ``--help``.  Long steps show tqdm progress bars on stderr (off with ``--quiet``);
when stderr is not a terminal (a log file) they log one line per stage and per model fit
instead.  Results go to stdout (also ``-o -``) or to the files named; ``-`` as the INPUT of
``tag`` and ``rerank`` reads standard input.  No verb overwrites an existing output file
unless ``--force`` is given, and every output is checked (its directory writable) before any
work.  A user error (a missing
file, a directory without train/dev/test, a malformed CoNLL-U line, an unknown tag column,
models trained on another tag column than ``--tags`` or than each other, a model file of the
wrong kind, an existing output) exits with status 2 and one line on
stderr, ``sparsecca VERB: error: ...``, never a traceback.  Set ``SPARSECCA_DEBUG=1`` to get
the traceback instead.

Output of ``tag`` and ``rerank``
--------------------------------
CoNLL-U.  From CoNLL-U input every line is copied unchanged except the tag column (``--tags``
upos = column 4, xpos = column 5) of the token lines, which receives the predicted tag;
comments, multi-word token ranges and empty nodes are kept.  From text input (one sentence per
line, tokens separated by white space) each sentence gets ``# sent_id = N`` (1-based) and
``# text = ...`` comments and 10-column token lines with ``_`` in the other columns.

k-best lists (``tag -k K`` with K > 1, ``rerank --top N`` with N > 1): each sentence becomes
up to K consecutive CoNLL-U blocks, best first, each starting with the comments ::

    # sent_id = <the input's sent_id, or the 1-based sentence number>
    # candidate = <rank j, 1-based; 1 is the best>
    # score = <ranking score: HMM log-probability (tag) or reranker score (rerank)>

``rerank`` adds ``# decoder_rank = <rank in the HMM's list>`` and ``# decoder_score = <HMM
log-probability>``.  The input's other comments follow, then the token lines carrying that
candidate's tags.  A sentence with fewer possible tag sequences gets fewer blocks.  The file
reads back with any CoNLL-U reader (comments are ignored), e.g. ``sparsecca.data.read_conllu``.
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import re
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from . import __version__, registry
from ._atomic import Terminated, atomic_write, check_writable

__all__ = ["main", "UsageError"]

DEFAULT_DEMO_SENTENCES = 4000
#: sentences decoded per call (fewer for a large k: at most _CHUNK_CANDIDATES candidates),
#: written out before the next chunk is decoded, so that memory stays bounded and long
#: inputs show progress
_DECODE_CHUNK = 5000
_CHUNK_CANDIDATES = 20_000
#: bytes per output token line held while a chunk is rendered (the str and its list slot)
_LINE_BYTES = 160


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


# -- helpers ------------------------------------------------------------------------------

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


# -- reading input and writing tagged output ----------------------------------------------

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


def _chunk_sentences(k: int) -> int:
    return max(1, min(_DECODE_CHUNK, _CHUNK_CANDIDATES // k))


def _available_memory() -> int | None:
    """Bytes of memory available to a new allocation (MemAvailable), None when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _lattice_sizes(tagger, corpus):
    """Lattice states of each sentence of ``corpus`` in the k-best Viterbi of ``tagger``
    (pairs of candidate tags of neighbouring positions), or an upper bound: T^2 per
    position for a tagger that does not say which tags each word may take."""
    import numpy as np

    lengths = corpus.lengths.astype(np.int64)
    lattice = getattr(tagger, "_lattice", None)
    if lattice is None:
        T = len(tagger.tags_)
        return (lengths + 1) * T * T
    c = np.diff(np.asarray(lattice(corpus)[0], dtype=np.int64))  # candidate tags per token
    off = corpus.offsets.astype(np.int64)
    if not c.size:
        return lengths + 1
    # layer 0: (BOS, t_0); layers 1..n-1: (t_{m-1}, t_m); layer n: (t_{n-1}, EOS)
    pairs = np.concatenate([[0], np.cumsum(c[:-1] * c[1:])])
    top = c.size - 1
    a = np.minimum(off[:-1], top)
    b = np.clip(off[1:] - 1, 0, top)
    has = lengths > 0
    inner = np.where(has, pairs[np.maximum(b, a)] - pairs[a], 0)
    return inner + np.where(has, c[a] + c[b], 0) + 1


def _format_bytes(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"  # pragma: no cover


def _check_decode_memory(tagger, corpus, k: int, src, option: str = "-k") -> None:
    """Refuse a k whose k-best decoding would need more memory than the machine has: the
    lattices of the two largest sentences (decoded in parallel; score and two back
    pointers per entry, k entries per state) plus one output chunk (its tags and lines)."""
    import numpy as np

    if k < 50:  # a few MB at most: not worth a pass over the input
        return
    avail = _available_memory()
    if avail is None:
        return
    states = np.sort(_lattice_sizes(tagger, corpus))[::-1]
    lattice = 16.0 * k * float(states[:2].sum())
    chunk = _chunk_sentences(k)
    longest = np.sort(corpus.lengths)[::-1][:chunk]
    output = float(longest.sum()) * k * (_LINE_BYTES + 12)
    need = lattice + output
    if need > avail:
        raise UsageError(f"{option} {k}: decoding {src} needs an estimated "
                         f"{_format_bytes(need)} of memory (lattice of its largest sentence, "
                         f"{int(states[0])} states x {k} entries, and one output chunk), more "
                         f"than the {_format_bytes(avail)} available; use a smaller {option}")


def _decode(hmm, corpus, k: int, progress: bool, desc: str = "decoding"):
    """k-best lists of a corpus, in chunks so that a progress bar can advance."""
    from .tagging import concatenate

    n = corpus.n_sentences
    step = _chunk_sentences(k) if not progress else max(1, min(_chunk_sentences(k), 500))
    starts = list(range(0, n, step))
    it = starts
    if progress and len(starts) > 1:
        from tqdm.auto import tqdm

        it = tqdm(starts, desc=desc, unit="chunk")
    parts = [hmm.nbest(corpus[s:s + step], k=k) for s in it]
    return concatenate(parts) if len(parts) != 1 else parts[0]


def _format_score(x: float) -> str:
    return f"{x:.6f}"


def _render_nbest(doc, nb, column: str, top: int, first: int = 0, order=None, ranking=None):
    """The text of the 1-best (top == 1) or k-best output of sentences ``first``, ``first +
    1``, ... of ``doc`` (the sentences of ``nb``), one string per sentence (its blocks), so
    that a caller can write each before the next is made; ``order`` re-ranks candidates."""
    items = nb.tags.items
    so = nb.sent_offsets
    for i in range(nb.n_sentences):
        lines: list[str] = []
        a, b = int(so[i]), int(so[i + 1])
        cands = list(range(a, b)) if order is None else order[a:b].tolist()
        if top == 1:
            r = cands[0]
            tags = [items[t] for t in nb.tag_ids[nb.cand_offsets[r]:nb.cand_offsets[r + 1]]]
            yield "\n".join(doc.render(first + i, tags, column)) + "\n"
            continue
        sid = doc.sent_id(first + i)
        for j, r in enumerate(cands[:top], 1):
            tags = [items[t] for t in nb.tag_ids[nb.cand_offsets[r]:nb.cand_offsets[r + 1]]]
            score = nb.scores[r] if ranking is None else ranking[r]
            header = [f"# sent_id = {sid}", f"# candidate = {j}",
                      f"# score = {_format_score(score)}"]
            if ranking is not None:
                header += [f"# decoder_rank = {r - a + 1}",
                           f"# decoder_score = {_format_score(nb.scores[r])}"]
            lines += doc.render(first + i, tags, column, header=header, kbest=True)
        yield "\n".join(lines) + "\n"


def _stream_nbest(doc, tagger, column: str, k: int, top: int, output, args, reranker=None):
    """Decode ``doc`` chunk by chunk, (rerank,) and write each chunk's output before the next
    is decoded: memory holds one chunk, whatever the input's length.  Returns (sentences,
    candidates, unknown tokens, tokens compared with gold, correct of the decoder's choice,
    correct of the reranker's choice); the last three are None without gold tags."""
    import numpy as np

    gold = doc.gold(column)
    gold = None if gold is None else np.array(gold, dtype=object)
    n = doc.n_sentences
    step = _chunk_sentences(k)
    bar = None
    if _progress(args) and n * k > 2 * _CHUNK_CANDIDATES:
        from tqdm.auto import tqdm

        bar = tqdm(total=n, desc="decoding" if reranker is None else "decoding, reranking",
                   unit="sent")
    offsets = doc.corpus.offsets
    n_cand = n_unknown = correct_base = correct = 0
    with _text_output(output) as out:
        for s in range(0, n, step):
            nb = tagger.nbest(doc.corpus[s:s + step], k=k)
            order = ranking = choice = None
            if reranker is not None:
                ranking = np.asarray(reranker.decision_function(nb), dtype=np.float64)
                # best first within each sentence; ties keep the decoder's order
                order = np.lexsort((np.arange(nb.n_total), -ranking, nb.cand_sentence))
                choice = order[nb.sent_offsets[:-1]] - nb.sent_offsets[:-1]
            for text in _render_nbest(doc, nb, column, top, first=s, order=order,
                                      ranking=ranking):
                out.write(text)
            n_cand += nb.n_total
            n_unknown += int(nb.unknown.sum())
            if gold is not None:
                items = np.array(nb.tags.items, dtype=object)
                g = gold[offsets[s]:offsets[min(s + step, n)]]
                correct_base += int(np.sum(items[nb.best().tag_ids] == g))
                if choice is not None:
                    correct += int(np.sum(items[nb.best(choice).tag_ids] == g))
            if bar is not None:
                bar.update(nb.n_sentences)
    if bar is not None:
        bar.close()
    if gold is None:
        return n, n_cand, n_unknown, None, None, None
    return n, n_cand, n_unknown, len(gold), correct_base, correct


def _tag_info(args, column: str, why: str) -> None:
    _info(args, f"tags: the {column} column ({why})")


# -- verbs --------------------------------------------------------------------------------

def _cap_components(models: dict, n_train: int) -> None:
    """Cap the n_components of the CCA rerankers at ``n_train``, the number of training
    sentences, which bounds the rank of the cross-covariance (one per sentence): the demo's
    smallest corpora would otherwise ask for more components than exist."""
    for model in models.values():
        params = model.get_params()
        if "n_components" in params and params["n_components"] > n_train:
            model.set_params(n_components=max(1, n_train))


def _run_protocol(sets, args, rerankers_spec, seed, cap_components: bool = False):
    """Run experiment_on_corpora on each (name, tags, train, dev, test); with
    ``cap_components`` (the demo), the CCA rerankers' n_components at most the training
    sentences."""
    from ._experiment import experiment_on_corpora

    results = []
    tagger_name = getattr(args, "tagger", None) or "hmm"
    for name, tags, view, data in sets:
        models = _pick_rerankers(rerankers_spec, seed, view)
        if cap_components:
            _cap_components(models, data["train"].n_sentences)
        tagger = registry.get(tagger_name, "tagger").make(seed)
        _info(args, f"[{name}] {tags}, {view} input view: train {data['train'].n_sentences} "
                    f"sentences, dev {data['dev'].n_sentences}, test "
                    f"{data['test'].n_sentences}; tagger {tagger_name}; {len(models)} rerankers")
        t0 = time.perf_counter()
        r = experiment_on_corpora(data["train"], data["dev"], data["test"], name=name,
                                  tags=tags, k=args.k, folds=args.folds, rerankers=models,
                                  tagger=tagger, random_state=seed, progress=_progress(args),
                                  sources=data.get("paths"), log=_log(args))
        if "paths" in data:
            r["paths"] = data["paths"]
        r["timings"]["total"] = time.perf_counter() - t0
        _info(args, f"[{name}] done in {r['timings']['total']:.1f} s")
        results.append(r)
    return results


def _report_targets(out: Path, names, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a directory (--out)")
    if not force:
        for f in ["report.md", "report.json"] + [f"{n}_grid.png" for n in names]:
            if (out / f).exists():
                raise UsageError(f"{out / f} exists; pass --force to overwrite the report")
    # the report directory (or the nearest existing one above it, where it will be made)
    # must receive files: probed now, not after the training
    probe = out
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.is_dir():
        try:
            check_writable(probe / "report.md")
        except OSError as exc:
            raise UsageError(f"{out}: cannot write the report there ({_one_line(exc)})") \
                from None


def _finish_report(results, args) -> None:
    from ._experiment import format_table, write_report

    print(format_table(results))
    written = write_report(results, args.out, overwrite=args.force)
    _info(args, "report: " + ", ".join(sorted(written.values())))
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        # said even with --quiet: a missing figure should not go unnoticed
        print("note: no Figure-1 plot: matplotlib is not installed (install the 'plot' "
              "extra: pip install \".[plot]\")", file=sys.stderr)


def _cmd_demo(args) -> int:
    from .data import synthetic_corpus, train_test_split

    out = Path(args.out)
    _report_targets(out, ["synthetic"], args.force)
    _pick_rerankers(args.models, args.seed)  # unknown names fail before any work
    t0 = time.perf_counter()
    corpus = synthetic_corpus(args.sentences, random_state=args.seed)
    rest, test = train_test_split(corpus, test_size=0.15, random_state=args.seed)
    train, dev = train_test_split(rest, test_size=0.15 / 0.85, random_state=args.seed + 1)
    _info(args, f"synthetic corpus: {corpus.n_sentences} sentences, {corpus.n_tokens} tokens, "
                f"{len(corpus.words)} word types, {len(corpus.tags)} tags")
    data = {"train": train, "dev": dev, "test": test}
    results = _run_protocol([("synthetic", "upos", "suffix", data)], args, args.models,
                            args.seed, cap_components=True)
    _finish_report(results, args)
    _info(args, f"demo finished in {time.perf_counter() - t0:.1f} s")
    return 0


def _bad_dataset_field(spec: str, rest: str, opt: str, seen: set) -> str:
    """Why the last field ``opt`` of ``rest:opt`` in ``spec`` cannot be parsed, naming the
    field it stands in (tag column or input view)."""
    from .data import TAG_COLUMNS

    if opt in TAG_COLUMNS or opt in _INPUT_VIEWS:
        kind = "tag columns" if opt in TAG_COLUMNS else "input views"
        return f"{spec!r} gives two {kind}; use DIR[:upos|xpos][:suffix|charngram]"
    before = rest.rpartition(":")[2]
    if not seen and before in TAG_COLUMNS:  # DIR:xpos:OPT: OPT is the input view
        return (f"unknown input view {opt!r} in {spec!r}; use DIR:{before}:suffix or "
                f"DIR:{before}:charngram")
    if not seen and before in _INPUT_VIEWS:
        return (f"unexpected {opt!r} after the input view in {spec!r}; use "
                f"DIR[:upos|xpos][:suffix|charngram]")
    return (f"unknown tag column {opt!r} in {spec!r}; use DIR:upos or DIR:xpos (optionally "
            f"followed by :suffix or :charngram)")


def _parse_dataset(spec: str, default_tags, default_view):
    """``DIR[:upos|xpos][:suffix|charngram]`` -> (Path, tags, input view)."""
    from .data import TAG_COLUMNS

    p, tags, view = Path(spec), default_tags, default_view
    head = spec
    seen = set()
    while ":" in head and not Path(head).is_dir():
        rest, _, opt = head.rpartition(":")
        if opt in TAG_COLUMNS and "tags" not in seen:
            tags, kind = opt, "tags"
        elif opt in _INPUT_VIEWS and "view" not in seen:
            view, kind = opt, "view"
        else:
            raise UsageError(_bad_dataset_field(spec, rest, opt, seen))
        seen.add(kind)
        head = rest
    p = Path(head)
    if not p.is_dir():
        raise UsageError(f"{p}: no such directory (a data set directory holds train, dev and "
                         f"test CoNLL-U files)")
    if tags is None:
        raise UsageError(f"{p}: which tag column? give --tags upos|xpos or {spec}:upos")
    return p, tags, view


def _cmd_experiment(args) -> int:
    from ._experiment import _find_split, check_folds, check_set_names, load_splits

    specs = [_parse_dataset(s, args.tags, args.input_view) for s in args.data_dirs]
    for d, _, _ in specs:  # every directory is checked before anything runs
        for split in ("train", "dev", "test"):
            _find_split(d, split)
    names, seen = [], {}
    for d, _, _ in specs:
        base = d.resolve().name or "data"
        # by case too: EN/ and en/ would share a figure on a case-insensitive file system
        n = seen[base.casefold()] = seen.get(base.casefold(), 0) + 1
        names.append(base if n == 1 else f"{base}-{n}")
    # a directory name that cannot name the report's files fails now, not after training
    check_set_names(names, [f"data set {d}" for d, _, _ in specs])
    out = Path(args.out)
    _report_targets(out, names, args.force)
    _pick_rerankers(args.models, args.seed)  # unknown names fail now, not after hours
    sets = []
    for (d, tags, view), name in zip(specs, names):
        t0 = time.perf_counter()
        data = load_splits(d, tags)  # all files are read (and validated) before any training
        check_folds(data, args.folds)
        _info(args, f"read {d} ({tags}) in {time.perf_counter() - t0:.1f} s")
        sets.append((name, tags, view, data))
    results = _run_protocol(sets, args, args.models, args.seed)
    _finish_report(results, args)
    return 0


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


def _check_column_choice(args, src, column: str, given: bool) -> None:
    """Say which tag column is learnt; warn when the other one has many more tags (an
    en-wsj user who forgot --tags xpos would get a 12-tag model without a word)."""
    counts = _distinct_tags(src)
    other = "xpos" if column == "upos" else "upos"
    how = "--tags" if given else "the default; --tags xpos learns the other one"
    _tag_info(args, column, f"{counts[column]} distinct tags; {how}")
    if not given and counts[other] >= max(2 * counts[column], counts[column] + 10):
        _warn(f"{src}: learning the {column} column ({counts[column]} distinct tags, the "
              f"default), but its {other} column has {counts[other]}; give --tags {other} "
              f"to learn those")


def _cmd_train_tagger(args) -> int:
    from .data import read_conllu

    tagger = registry.get(args.model, "tagger").make()  # an unknown name: ValueError
    src = _input_file(args.train, "training file")
    out = _model_output(args.output, args.force)
    column = args.tags or "upos"
    t0 = time.perf_counter()
    corpus = read_conllu(src, tags=column)
    if corpus.n_tokens == 0:
        raise UsageError(f"{src}: no tokens to train on")
    tagger.fit(corpus)
    path = tagger.save(out, overwrite=args.force,
                       info={"tags": column, "train": str(src),
                             "sentences": corpus.n_sentences, "tokens": corpus.n_tokens})
    _info(args, f"{type(tagger).__name__}: {corpus.n_sentences} sentences, {corpus.n_tokens} "
                f"tokens, {len(tagger.tags_)} {column} tags, {len(tagger.words_)} words; "
                f"{time.perf_counter() - t0:.1f} s; saved to {path}")
    _check_column_choice(args, src, column, args.tags is not None)
    return 0


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


def _cmd_tag(args) -> int:
    hmm, info = _load_tagger(args.model)
    column = _tag_column(args, (args.model, info))
    src = _input_file(args.input, stdin=True)
    output = _tag_output(args)
    t0 = time.perf_counter()
    doc = _read_document(src, args.format)
    name = "<stdin>" if src == "-" else src
    _check_gold_tagset(doc.gold(column), hmm, column, name, args.model)
    _check_decode_memory(hmm, doc.corpus, args.k, name)
    n, n_cand, n_unknown, n_gold, base, _ = _stream_nbest(doc, hmm, column, args.k, args.k,
                                                           output, args)
    msg = (f"tagged {n} sentences, {doc.corpus.n_tokens} tokens ({n_unknown} unknown) in "
           f"{time.perf_counter() - t0:.1f} s; tags in the {column} column "
           f"({_column_why(args, [(args.model, info)])})")
    if n_gold:
        msg += f"; accuracy against the input's {column} column {100 * base / n_gold:.2f}%"
    _info(args, msg)
    return 0


#: train-reranker options passed to the reranker's set_params (option, parameter)
_HYPER = (("n_components", "n_components"), ("tau", "tau"), ("lam", "lam"),
          ("solver", "solver"), ("max_rank", "max_rank"))


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


def _set_hyperparameters(args, est, row: str) -> None:
    """Pass --n-components, --tau, --lam, --solver and --max-rank to the reranker; an
    option the model does not have is refused, naming the options it has."""
    params = est.get_params()
    given = {p: getattr(args, o) for o, p in _HYPER if getattr(args, o) is not None}
    missing = [p for p in given if p not in params]
    if missing:
        has = [f"--{o.replace('_', '-')}" for o, p in _HYPER if p in params]
        raise UsageError(f"--{missing[0].replace('_', '-')}: the {row} reranker has no such "
                         f"hyperparameter (it takes {', '.join(has) or 'none of these'})")
    if given:
        est.set_params(**given)


def _cmd_train_reranker(args) -> int:
    from .data import read_conllu
    from .tagging import jackknife_nbest

    spec = registry.get(args.model, "reranker")  # an unknown name: ValueError
    row, est = spec.row, spec.make(args.seed, input_view=_input_view(args.input_view))
    if not hasattr(est, "save"):
        raise UsageError(f"the {row} reranker ({type(est).__name__}) cannot be saved by this "
                         f"version; choose another --model")
    _set_hyperparameters(args, est, row)
    hmm, info = _load_tagger(args.tagger)
    column = _tag_column(args, (args.tagger, info))
    train_p = _input_file(args.train, "training file")
    dev_p = _input_file(args.dev, "dev file")
    out = _model_output(args.output, args.force)
    t0 = time.perf_counter()
    train = read_conllu(train_p, tags=column)
    dev = read_conllu(dev_p, tags=column)
    for corpus, path in ((train, train_p), (dev, dev_p)):
        if corpus.n_sentences == 0:
            raise UsageError(f"{path}: no sentences")
        _check_gold_tagset(corpus, hmm, column, path, args.tagger)
    if train.n_sentences < args.folds:
        raise UsageError(f"{train_p}: {train.n_sentences} sentences, fewer than --folds "
                         f"{args.folds}")
    _check_decode_memory(hmm, train, args.k, train_p)
    log = _log(args)
    t1 = time.perf_counter()
    train_nb = jackknife_nbest(hmm, train, k=args.k, folds=args.folds, random_state=args.seed,
                               progress=_progress(args))
    if log:
        log(f"jackknifed {args.k}-best lists of {train_p} ({args.folds} folds): "
            f"{time.perf_counter() - t1:.1f} s")
    t1 = time.perf_counter()
    dev_nb = _decode(hmm, dev, args.k, _progress(args), desc="decoding dev")
    if log:
        log(f"{args.k}-best lists of {dev_p}: {time.perf_counter() - t1:.1f} s")
    _info(args, f"n-best lists ({column} column, "
                f"{_column_why(args, [(args.tagger, info)])}): train {train_nb.n_total} "
                f"candidates (jackknifed, {args.folds} folds), dev {dev_nb.n_total}; "
                f"fitting {row}")
    if _progress(args) and "progress" in est.get_params():
        est.set_params(progress=True)  # the model's bar over its tuning grid
    t1 = time.perf_counter()
    est.fit(train_nb, dev_nb)
    if log:
        log(f"fitted {row}: {time.perf_counter() - t1:.1f} s")
    acc = est.score(dev_nb)
    path = est.save(out, overwrite=args.force,
                    info={"tags": column, "k": args.k, "model": args.model, "row": row,
                          "tagger": str(args.tagger), "train": str(train_p), "dev": str(dev_p)})
    _info(args, f"{row}: dev accuracy {100 * acc:.2f}% (HMM {100 * dev_nb.top1_accuracy():.2f}%, "
                f"oracle {100 * dev_nb.oracle_accuracy():.2f}%); "
                f"{time.perf_counter() - t0:.1f} s; saved to {path}")
    return 0


def _stored_k(rpath, rinfo) -> int:
    """The k train-reranker recorded (10 for files without one); -k itself is checked by
    argparse, this is what a file written elsewhere or edited by hand may hold."""
    k = rinfo.get("k", 10)
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise UsageError(f"{rpath}: stored k must be an int >= 2 (reranking needs "
                         f"candidates), got {k!r}; pass -k")
    return k


def _cmd_rerank(args) -> int:
    from ._persist import load_model, read_model_meta
    from .rerank import BaseReranker

    hmm, tinfo = _load_tagger(args.tagger)
    rpath = _model_file(args.reranker, "reranker model")
    rinfo = read_model_meta(rpath).get("info", {})
    reranker = load_model(rpath)
    if not isinstance(reranker, BaseReranker):
        raise UsageError(f"{rpath}: holds a {type(reranker).__name__}, not a reranker")
    column = _tag_column(args, (args.tagger, tinfo), (rpath, rinfo))
    k = args.k if args.k is not None else _stored_k(rpath, rinfo)
    src = _input_file(args.input, stdin=True)
    output = _tag_output(args)
    t0 = time.perf_counter()
    doc = _read_document(src, args.format)
    name = "<stdin>" if src == "-" else src
    _check_gold_tagset(doc.gold(column), hmm, column, name, args.tagger)
    _check_decode_memory(hmm, doc.corpus, k, name)
    n, n_cand, _, n_gold, base, acc = _stream_nbest(doc, hmm, column, k, args.top, output,
                                                    args, reranker=reranker)
    msg = (f"reranked {n} sentences ({n_cand} candidates) in {time.perf_counter() - t0:.1f} s;"
           f" tags in the {column} column "
           f"({_column_why(args, [(args.tagger, tinfo), (rpath, rinfo)])})")
    if n_gold:
        msg += (f"; accuracy against the input's {column} column: HMM "
                f"{100 * base / n_gold:.2f}%, reranked {100 * acc / n_gold:.2f}%")
    _info(args, msg)
    return 0


def _token_lines(path) -> list[int]:
    """The 1-based line number of every token line (integer id) of a CoNLL-U file."""
    from .data import read_text

    out = []
    for lineno, line in enumerate(read_text(path).split("\n"), 1):
        if line and line[0] != "#" and line.split("\t", 1)[0].isdigit():
            out.append(lineno)
    return out


def _aligned(gold_p, gold, pred_p, pred) -> None:
    """The same sentences and words in ``pred`` as in ``gold``, else an error naming the
    file and line of the first difference."""
    import numpy as np

    if pred.n_tokens != gold.n_tokens or pred.n_sentences != gold.n_sentences \
            or not np.array_equal(pred.offsets, gold.offsets):
        i = int(np.argmax(np.append(pred.lengths[:gold.n_sentences][:pred.n_sentences]
                                    != gold.lengths[:pred.n_sentences], True)))
        if i < min(gold.n_sentences, pred.n_sentences):
            g, p = _token_lines(gold_p), _token_lines(pred_p)
            raise UsageError(f"{pred_p}:{p[pred.offsets[i]]}: sentence {i + 1} has "
                             f"{pred.lengths[i]} tokens, {gold_p}:{g[gold.offsets[i]]} has "
                             f"{gold.lengths[i]} (predictions must keep the gold file's "
                             f"tokens; a k-best file holds several blocks per sentence)")
        raise UsageError(f"{pred_p}: {pred.n_sentences} sentences, {gold_p} has "
                         f"{gold.n_sentences} (predictions must keep the gold file's "
                         f"sentences; a k-best file holds several blocks per sentence)")
    gw = np.array(gold.words.items, dtype=object)[gold.word_ids]
    pw = np.array(pred.words.items, dtype=object)[pred.word_ids]
    bad = np.flatnonzero(gw != pw)
    if bad.size:
        j = int(bad[0])
        raise UsageError(f"{pred_p}:{_token_lines(pred_p)[j]}: word {pw[j]!r} differs from "
                         f"{gold_p}:{_token_lines(gold_p)[j]}'s {gw[j]!r} (predictions must "
                         f"keep the gold file's tokens)")


def _read_tagged(path, column: str):
    from .data import read_conllu

    return read_conllu(path, tags=column)


def _cmd_evaluate(args) -> int:
    import numpy as np

    from .data import Vocabulary, read_conllu
    from .evaluate import accuracy_report, mcnemar, paired_bootstrap, per_tag_scores

    gold_p = _input_file(args.gold, "gold file")
    if args.output is not None and args.output != "-":
        _output_file(args.output, args.force)
    pred_ps = [_input_file(args.pred, "predictions")]
    if args.against is not None:
        pred_ps.append(_input_file(args.against, "predictions (--against)"))
    vocab = None
    if args.train is not None:
        vocab = set(read_conllu(_input_file(args.train, "training file"), tags=None)
                    .words.items)
    elif args.tagger is not None:
        tagger, _ = _load_tagger(args.tagger)
        vocab = set(tagger.words_.items)
    column = args.tags
    if column is None:
        counts = _distinct_tags(gold_p)
        column = "upos" if counts["upos"] else "xpos"
        why = ("the default" if column == "upos" else
               "the gold file has no upos tags") + "; --tags chooses"
    else:
        why = "--tags"
    gold = _read_tagged(gold_p, column)
    if gold.n_tokens == 0:
        raise UsageError(f"{gold_p}: no tokens to evaluate")
    preds = [_read_tagged(p, column) for p in pred_ps]
    for p, pred in zip(pred_ps, preds):
        _aligned(gold_p, gold, p, pred)
    tags = Vocabulary(dict.fromkeys(list(gold.tags.items)
                                    + [t for pred in preds for t in pred.tags.items]))
    g = tags.ids(np.array(gold.tags.items, dtype=object)[gold.tag_ids].tolist())
    unknown = None
    if vocab is not None:
        words = np.array(gold.words.items, dtype=object)
        unknown = ~np.isin(words, list(vocab))[gold.word_ids]
    out = [f"gold: {gold_p}, {column} column ({why}): {gold.n_sentences} sentences, "
           f"{gold.n_tokens} tokens"
           + (f", {int(unknown.sum())} unknown to the "
              f"{'training file' if args.train else 'tagger'}" if unknown is not None else "")]
    correct = []
    for p, pred in zip(pred_ps, preds):
        ids = np.asarray(tags.ids(np.array(pred.tags.items, dtype=object)[pred.tag_ids]
                                  .tolist()))
        correct.append(ids == np.asarray(g))
        rep = accuracy_report(ids, g, unknown=unknown)
        line = f"{p}: accuracy {100 * rep['accuracy']:.2f}%"
        if unknown is not None:
            line += (f", known words {100 * rep['known_accuracy']:.2f}%, unknown words "
                     + ("n/a" if rep["n_unknown"] == 0
                        else f"{100 * rep['unknown_accuracy']:.2f}%")
                     + f" ({rep['n_unknown']} tokens)")
        out.append(line)
        if not args.no_table:
            table = per_tag_scores(ids, g, tags.items)
            out.append(f"per-tag scores of {p} (sorted by gold count):")
            out.append(f"  {'tag':<12} {'precision':>9} {'recall':>7} {'F1':>7} {'gold':>7} "
                       f"{'pred':>7}")
            for t, r in sorted(table.items(), key=lambda kv: (-kv[1]["support"], kv[0])):
                def pct(x):
                    return "n/a" if x != x else f"{100 * x:.2f}"
                out.append(f"  {t:<12} {pct(r['precision']):>9} {pct(r['recall']):>7} "
                           f"{pct(r['f1']):>7} {r['support']:>7} {r['predicted']:>7}")
    if len(preds) == 2:
        a, b = correct[1], correct[0]  # gain of PRED over --against
        if gold.n_sentences >= 2 and int(np.count_nonzero(gold.lengths)) >= 2:
            boot = paired_bootstrap(a, b, gold.offsets, n_resamples=args.resamples,
                                    random_state=args.seed)
            boot_s = (f"paired bootstrap over sentences p = {boot['p_value']:.4g} "
                      f"({boot['n_resamples']} resamples, one-sided: {pred_ps[0]} better)")
        else:
            boot_s = "no paired bootstrap (fewer than 2 sentences)"
        mc = mcnemar(a, b)
        gain = float(b.mean() - a.mean())
        out.append(f"{pred_ps[0]} - {pred_ps[1]}: {100 * gain:+.2f} points; {boot_s}; "
                   f"McNemar p = {mc['p_value']:.4g} (tokens only {pred_ps[0]} got right: "
                   f"{mc['n01']}, only {pred_ps[1]}: {mc['n10']})")
    with _text_output(args.output) as fh:
        fh.write("\n".join(out) + "\n")
    return 0


# -- the parser ---------------------------------------------------------------------------

def _add_run_options(p, out_default: str) -> None:
    p.add_argument("--out", default=out_default, metavar="DIR",
                   help=f"report directory (default {out_default}): report.md, report.json "
                        "and one <set>_grid.png per data set")
    p.add_argument("-k", type=_int_option("-k", 2, _K_WHY), default=10, metavar="K",
                   help="candidates per sentence (default 10)")
    p.add_argument("--folds", type=_int_option("--folds", 2), default=10,
                   help="jackknife folds for the training n-best lists (default 10)")
    p.add_argument("--models", metavar="M1,M2,...",
                   help=f"rerankers to run (default all): {registry.help_text('reranker')}")
    p.add_argument("--tagger", default="hmm", metavar="NAME",
                   choices=[spec.name for spec in registry.specs("tagger")],
                   help=f"the tagger whose k-best lists are reranked (default hmm): "
                        f"{registry.help_text('tagger')}")
    p.add_argument("--seed", type=_int_option("--seed", 0), default=0,
                   help="random seed (default 0)")
    _add_common(p)


def _add_common(p) -> None:
    p.add_argument("--force", action="store_true", help="overwrite existing output files")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bars or messages on stderr")


def _add_output(p, what: str) -> None:
    p.add_argument("-o", "--output", metavar="OUTPUT",
                   help=f"{what} (default, or '-': stdout; a .gz name is compressed)")
    p.add_argument("--format", choices=("conllu", "text"), default="conllu",
                   help="INPUT is CoNLL-U (default; .gz allowed) or text: one sentence per "
                        "line, tokens separated by white space")
    from .data import TAG_COLUMNS

    p.add_argument("--tags", choices=tuple(TAG_COLUMNS),
                   help="column receiving the tags (default: the column the model was "
                        "trained on, else upos; another column than the models' is refused)")


_FORMAT_EPILOG = """k-best output: each sentence becomes up to K CoNLL-U blocks, best first, each
starting with
  # sent_id = <input sent_id, or the 1-based sentence number>
  # candidate = <rank, 1 = best>
  # score = <HMM log-probability (tag) or reranker score (rerank)>
rerank adds '# decoder_rank' and '# decoder_score'.  The input's other comments
follow, then the token lines with that candidate's tags."""


def _build_parser() -> argparse.ArgumentParser:
    from .data import TAG_COLUMNS

    p = _Parser(prog="sparsecca",
                description="Low-dimensional discriminative reranking (sparse CCA) for POS "
                            "tagging: a trigram HMM proposes k-best tag sequences, CCA "
                            "rerankers choose among them.",
                epilog="Run 'sparsecca VERB --help' for the options of a verb.  Errors exit "
                       "with status 2 and one line on stderr.")
    p.add_argument("--version", action="version", version=f"sparsecca {__version__}")
    sub = p.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    sub.required = True
    raw = argparse.RawDescriptionHelpFormatter

    d = sub.add_parser(
        "demo", help="the whole protocol on the built-in synthetic corpus",
        description="Generate the synthetic corpus, split it 70/15/15 into train/dev/test, "
                    "train the trigram HMM, build jackknifed 10-best lists, fit every "
                    "reranker (tuned on dev), print Table 2 and write the report and the "
                    "Figure-1 plot.")
    d.add_argument("--sentences", type=_int_option("--sentences", 100),
                   default=DEFAULT_DEMO_SENTENCES,
                   help=f"synthetic sentences (default {DEFAULT_DEMO_SENTENCES}, >= 100)")
    _add_run_options(d, "sparsecca-demo")
    d.set_defaults(func=_cmd_demo)

    e = sub.add_parser(
        "experiment", help="the Table 2 protocol on CoNLL-U data set directories",
        formatter_class=raw,
        description="Run the Table 2 protocol (HMM, jackknifed k-best lists, every reranker "
                    "tuned on dev,\ntest accuracy with paired significance) on each data set "
                    "directory, and write one\ncombined report.  A directory holds "
                    "train/dev/test .conllu or .conllu.gz files.",
        epilog="example, the five shared sets with one command:\n"
               "  sparsecca experiment data/en-wsj:xpos data/zh-gsd:charngram \\\n"
               "      data/fr-sequoia data/sv-talbanken data/en-brown --tags upos --out report")
    e.add_argument("data_dirs", nargs="+", metavar="DATA_DIR[:upos|xpos][:suffix|charngram]",
                   help="data set directory; a ':upos' or ':xpos' suffix overrides --tags "
                        "for it, ':charngram' / ':suffix' overrides --input-view")
    e.add_argument("--tags", choices=tuple(TAG_COLUMNS),
                   help="tag column of the directories without a suffix")
    e.add_argument("--input-view", choices=_INPUT_VIEWS, default="suffix",
                   help="sentence features of the CCA models: suffixes 2-4 (default) or "
                        "character 1-2-grams (the paper's choice for Chinese)")
    _add_run_options(e, "sparsecca-report")
    e.set_defaults(func=_cmd_experiment)

    t = sub.add_parser("train-tagger", help="fit a trigram HMM tagger and save it",
                       description="Fit a TrigramHMM (or the tagger named by --model) on a "
                                   "tagged CoNLL-U file and save it as a .npz model file.")
    t.add_argument("train", metavar="TRAIN", help="tagged CoNLL-U file (.gz allowed)")
    t.add_argument("--model", default="hmm", metavar="NAME",
                   help=f"tagger: {registry.help_text('tagger')} (default hmm)")
    t.add_argument("--tags", choices=tuple(TAG_COLUMNS),
                   help="tag column to learn (default upos; the column used is said on "
                        "stderr, with a warning when the other one has many more tags)")
    t.add_argument("-o", "--output", required=True, metavar="MODEL",
                   help="model file to write (.npz appended when missing)")
    _add_common(t)
    t.set_defaults(func=_cmd_train_tagger)

    g = sub.add_parser("tag", help="tag CoNLL-U or text with a saved tagger",
                       formatter_class=raw, epilog=_FORMAT_EPILOG,
                       description="Tag INPUT with a saved TrigramHMM and write CoNLL-U: the "
                                   "best tag sequence,\nor with -k K > 1 the K best with their "
                                   "scores.")
    g.add_argument("model", metavar="MODEL", help="tagger model file (from train-tagger)")
    g.add_argument("input", metavar="INPUT",
                   help="CoNLL-U file or tokenised text; '-' reads standard input")
    g.add_argument("-k", type=_int_option("-k", 1), default=1, metavar="K",
                   help="write the K best tag sequences (default 1)")
    _add_output(g, "CoNLL-U output file")
    _add_common(g)
    g.set_defaults(func=_cmd_tag)

    r = sub.add_parser(
        "train-reranker", help="fit a reranker on a saved tagger's n-best lists and save it",
        description="Decode TRAIN with jackknifed copies of the tagger (each fold decoded by a "
                    "model that never saw it) and DEV with the tagger itself, fit the reranker "
                    "(tuned on DEV) and save it.")
    r.add_argument("--tagger", required=True, metavar="MODEL", help="tagger model file")
    r.add_argument("train", metavar="TRAIN", help="tagged CoNLL-U training file")
    r.add_argument("dev", metavar="DEV", help="tagged CoNLL-U dev file (tuning)")
    r.add_argument("--model", required=True, metavar="NAME",
                   help=f"reranker: {registry.help_text('reranker')}")
    r.add_argument("-o", "--output", required=True, metavar="MODEL",
                   help="model file to write (.npz appended when missing)")
    r.add_argument("-k", type=_int_option("-k", 2, _K_WHY), default=10, metavar="K",
                   help="candidates per sentence (default 10)")
    r.add_argument("--folds", type=_int_option("--folds", 2), default=10,
                   help="jackknife folds (default 10)")
    r.add_argument("--tags", choices=tuple(TAG_COLUMNS),
                   help="tag column (default: the tagger's, else upos)")
    r.add_argument("--input-view", choices=_INPUT_VIEWS, default="suffix",
                   help="sentence features of the CCA models: suffixes 2-4 (default) or "
                        "character 1-2-grams (the paper's choice for Chinese)")
    r.add_argument("--seed", type=_int_option("--seed", 0), default=0,
                   help="random seed (default 0)")
    h = r.add_argument_group("hyperparameters of the CCA rerankers (default: the model's)")
    h.add_argument("--n-components", dest="n_components",
                   type=_int_option("--n-components", 1), metavar="K",
                   help="largest number of CCA projections (default 100)")
    h.add_argument("--tau", type=_float_list("--tau"), metavar="T1,T2,...",
                   help="grid of the regulariser tau in (0, 1], tuned on DEV")
    h.add_argument("--lam", type=_float_list("--lam"), metavar="L1,L2,...",
                   help="grid of the output-view weight lambda, tuned on DEV")
    h.add_argument("--solver", choices=("auto", "dense", "randomized", "iterative"),
                   help="CCA solver (default randomized)")
    h.add_argument("--max-rank", dest="max_rank", type=_int_option("--max-rank", 1),
                   metavar="R", help="largest rank of the randomized solver's factor")
    _add_common(r)
    r.set_defaults(func=_cmd_train_reranker)

    q = sub.add_parser("rerank", help="tag with a saved tagger and a saved reranker",
                       formatter_class=raw, epilog=_FORMAT_EPILOG,
                       description="Decode the K best tag sequences of each sentence of INPUT "
                                   "with the tagger,\nrerank them with the reranker and write "
                                   "the reranker's choice (or its --top N) as CoNLL-U.")
    q.add_argument("--tagger", required=True, metavar="MODEL", help="tagger model file")
    q.add_argument("--reranker", required=True, metavar="MODEL",
                   help="reranker model file (from train-reranker)")
    q.add_argument("input", metavar="INPUT",
                   help="CoNLL-U file or tokenised text; '-' reads standard input")
    q.add_argument("-k", type=_int_option("-k", 2, _K_WHY), default=None, metavar="K",
                   help="candidates to rerank (default: as in training, else 10)")
    q.add_argument("--top", type=_int_option("--top", 1), default=1, metavar="N",
                   help="write the N best after reranking (default 1)")
    _add_output(q, "CoNLL-U output file")
    _add_common(q)
    q.set_defaults(func=_cmd_rerank)

    v = sub.add_parser(
        "evaluate", help="score predictions against gold CoNLL-U",
        description="Token accuracy of PRED against GOLD (same sentences and tokens), split "
                    "into known and unknown words given the training file or the tagger, a "
                    "per-tag precision / recall / F1 table, and with --against the paired "
                    "significance of PRED's gain over PRED2 (bootstrap over sentences and "
                    "McNemar's test over tokens).")
    v.add_argument("gold", metavar="GOLD", help="gold CoNLL-U file (.gz allowed)")
    v.add_argument("pred", metavar="PRED", help="predicted CoNLL-U (e.g. from tag or rerank)")
    known = v.add_mutually_exclusive_group()
    known.add_argument("--train", metavar="FILE",
                       help="training CoNLL-U file: words outside it are unknown")
    known.add_argument("--tagger", metavar="MODEL",
                       help="tagger model: words outside its vocabulary are unknown")
    v.add_argument("--against", metavar="PRED2",
                   help="second prediction: paired significance of PRED's gain over it")
    v.add_argument("--tags", choices=tuple(TAG_COLUMNS),
                   help="tag column compared (default upos, xpos when GOLD has no upos)")
    v.add_argument("--no-table", action="store_true", help="no per-tag table")
    v.add_argument("--resamples", type=_int_option("--resamples", 100), default=10_000,
                   help="bootstrap resamples (default 10000)")
    v.add_argument("--seed", type=_int_option("--seed", 0), default=0,
                   help="bootstrap seed (default 0)")
    v.add_argument("-o", "--output", metavar="OUTPUT",
                   help="report file (default, or '-': stdout)")
    _add_common(v)
    v.set_defaults(func=_cmd_evaluate)
    return p


def _one_line(exc: BaseException) -> str:
    msg = str(exc) or type(exc).__name__
    if isinstance(exc, KeyError):
        msg = f"missing {msg}"
    return " ".join(msg.split())


def main(argv=None) -> int:
    """Entry point of the ``sparsecca`` console script; returns the exit status."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"sparsecca {args.verb}: interrupted", file=sys.stderr)
        return 130
    except Terminated:  # SIGTERM during a write: its temporary file is gone
        print(f"sparsecca {args.verb}: terminated", file=sys.stderr)
        return 128 + 15
    except BrokenPipeError:  # e.g. '| head': the reader went away
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the final flush
        except OSError:
            pass
        return 1
    except (UsageError, ValueError, OSError) as exc:
        # ValueError covers CorpusFormatError (file:line), DatasetError, ModelFormatError and
        # the library's argument checks; OSError missing / existing / unreadable files
        if os.environ.get("SPARSECCA_DEBUG"):
            raise
        print(f"sparsecca {args.verb}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
