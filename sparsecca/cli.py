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
import os
import sys

from . import __version__, registry
from ._atomic import Terminated
from ._cli_common import (
    _INPUT_VIEWS,
    _K_WHY,
    UsageError,
    _float_list,
    _int_option,
    _one_line,
    _Parser,
    _pick_rerankers,  # noqa: F401 - cli._pick_rerankers, as before
)
from ._cli_evaluate import _cmd_evaluate
from ._cli_models import _cmd_rerank, _cmd_tag, _cmd_train_reranker, _cmd_train_tagger
from ._cli_protocol import _cmd_demo, _cmd_experiment

__all__ = ["main", "UsageError"]

DEFAULT_DEMO_SENTENCES = 4000
_RAW = argparse.RawDescriptionHelpFormatter


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


def _add_demo(sub) -> None:
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


def _add_experiment(sub) -> None:
    from .data import TAG_COLUMNS

    e = sub.add_parser(
        "experiment", help="the Table 2 protocol on CoNLL-U data set directories",
        formatter_class=_RAW,
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
    e.add_argument("--scheduler", type=_scheduler_option, metavar="ADDRESS|local[:N]",
                   help="run every stage as Dask tasks: on the dask.distributed scheduler at "
                        "ADDRESS (HOST:PORT), or on a local cluster of N worker processes "
                        "(default: in process, without Dask)")
    _add_run_options(e, "sparsecca-report")
    e.set_defaults(func=_cmd_experiment)


def _scheduler_option(value: str) -> str:
    from .distributed import parse_scheduler

    try:
        parse_scheduler(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _add_train_tagger(sub) -> None:
    from .data import TAG_COLUMNS

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


def _add_tag(sub) -> None:
    g = sub.add_parser("tag", help="tag CoNLL-U or text with a saved tagger",
                       formatter_class=_RAW, epilog=_FORMAT_EPILOG,
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


def _add_train_reranker(sub) -> None:
    from .data import TAG_COLUMNS

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


def _add_rerank(sub) -> None:
    q = sub.add_parser("rerank", help="tag with a saved tagger and a saved reranker",
                       formatter_class=_RAW, epilog=_FORMAT_EPILOG,
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


def _add_evaluate(sub) -> None:
    from .data import TAG_COLUMNS

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


def _build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="sparsecca",
                description="Low-dimensional discriminative reranking (sparse CCA) for POS "
                            "tagging: a trigram HMM proposes k-best tag sequences, CCA "
                            "rerankers choose among them.",
                epilog="Run 'sparsecca VERB --help' for the options of a verb.  Errors exit "
                       "with status 2 and one line on stderr.")
    p.add_argument("--version", action="version", version=f"sparsecca {__version__}")
    sub = p.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    sub.required = True
    _add_demo(sub)
    _add_experiment(sub)
    _add_train_tagger(sub)
    _add_tag(sub)
    _add_train_reranker(sub)
    _add_rerank(sub)
    _add_evaluate(sub)
    return p


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
