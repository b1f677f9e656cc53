"""Missing data and exit statuses: one convention for every plain script in benchmarks/.

Exit status of the scripts (``python benchmarks/<script>.py ...``):

* 0 -- every measurement ran (a missed *target* is reported in the output, not in the status;
  ``scale_run.py --strict`` is the exception: 1 when a target is missed);
* 1 -- a measurement failed (a child process died or raised); the table is printed first;
* 2 -- a command-line usage error (argparse);
* 3 -- the data the script needs is missing: it prints one line naming the missing path,
  ``missing data: <path> not found (...)``, on stderr, and measures nothing.

Every data file a run will read is checked before the first measurement, so a partial
``../shared/data`` stops the run with that line instead of a traceback half-way through.
(``memory/profile_fit.py`` is the exception: without en-brown it falls back to the synthetic
corpus, says so, and labels its report ``data: synthetic``.)
"""

from __future__ import annotations

import sys
from pathlib import Path

#: a measurement (child process) failed
EXIT_FAILED = 1
#: required data missing
EXIT_NO_DATA = 3

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
HINT = "expected under ../shared/data beside the checkout"


def missing(*paths) -> Path | None:
    """The first of ``paths`` that does not exist, or None."""
    for path in paths:
        if not Path(path).exists():
            return Path(path)
    return None


def require(*paths, hint: str = HINT) -> None:
    """Exit with ``EXIT_NO_DATA`` and one line on stderr unless every path exists."""
    path = missing(*paths)
    if path is not None:
        print(f"missing data: {path} not found ({hint})", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_NO_DATA)


def conllu_split(folder: Path, split: str) -> Path:
    """``<folder>/<split>.conllu.gz`` if present, else ``<split>.conllu`` (checked by require)."""
    gz = Path(folder) / f"{split}.conllu.gz"
    return gz if gz.is_file() else Path(folder) / f"{split}.conllu"
