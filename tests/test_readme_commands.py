"""Every command README and docs/ print exists with the options they give it.

README cites a command beside each figure (``python benchmarks/<script>.py --flag ...``,
``sparsecca <verb> ...``).  A script or verb that was renamed, or an option that was dropped,
would leave a figure nobody can re-run; here each cited script must exist and each option must
appear in its ``--help``.  (Nothing is measured: only ``--help`` runs.)
"""

import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# a command in backticks, possibly wrapped over lines
_SCRIPT = re.compile(r"`(?:time )?python3? (benchmarks/[\w/]+\.py)([^`]*)`")
_VERB = re.compile(r"`(?:time )?sparsecca ([a-z][\w-]*)([^`]*)`")


def _cited(pattern, docs=DOCS):
    found = {}
    for path in docs:
        text = path.read_text(encoding="utf-8")
        for m in pattern.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            options = set(re.findall(r"(?<![\w-])(--[a-z][\w-]*|-[a-zA-Z])\b", m.group(2)))
            found.setdefault(m.group(1), {}).update(
                {opt: f"{path.name}:{line}" for opt in options})
            found[m.group(1)].setdefault("", f"{path.name}:{line}")
    return found


SCRIPTS = _cited(_SCRIPT)
VERBS = _cited(_VERB)


@functools.lru_cache(maxsize=None)
def _help(*argv):
    proc = subprocess.run([sys.executable, *argv, "--help"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, f"{' '.join(argv)} --help failed:\n{proc.stderr[-2000:]}"
    return proc.stdout


def test_the_docs_cite_commands():
    # the patterns still find what README cites (a rewording must not empty this test)
    assert {"benchmarks/bench_linalg.py", "benchmarks/scale_run.py"} <= set(SCRIPTS)
    assert {"demo", "experiment"} <= set(VERBS)


def _missing(options, help_text):
    """The cited options (option -> where) that ``help_text`` does not list."""
    return {opt: at for opt, at in options.items()
            if opt and not re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", help_text)}


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_cited_script_takes_its_options(script):
    where = SCRIPTS[script][""]
    assert (ROOT / script).is_file(), f"{where} cites {script}, which does not exist"
    missing = _missing(SCRIPTS[script], _help(str(ROOT / script)))
    assert not missing, f"{script} --help does not list {missing}"


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_cited_verb_takes_its_options(verb):
    missing = _missing(VERBS[verb], _help("-m", "sparsecca", verb))
    assert not missing, f"sparsecca {verb} --help does not list {missing}"


def test_the_check_finds_a_dropped_option(tmp_path):
    # a stand-in page citing an option bench_data.py lacks, beside one it has, over two lines
    page = tmp_path / "page.md"
    page.write_text("Run `python benchmarks/bench_data.py --repeat 3\n--no-such-option`.\n"
                    "And `sparsecca demo --sentences 10 --bogus`.\n", encoding="utf-8")
    scripts, verbs = _cited(_SCRIPT, [page]), _cited(_VERB, [page])
    missing = _missing(scripts["benchmarks/bench_data.py"],
                       _help(str(ROOT / "benchmarks" / "bench_data.py")))
    assert missing == {"--no-such-option": "page.md:1"}
    assert _missing(verbs["demo"], _help("-m", "sparsecca", "demo")) == {"--bogus": "page.md:3"}
