"""README.md and docs/: within budget, no commit hashes outside the history page, no dead links.

* README is for a user deciding whether and how to use the library: at most
  :data:`README_MAX_LINES` lines and :data:`README_MAX_CHARS` characters, no line longer than
  :data:`README_MAX_LINE` (the measurements and their history live in docs/).
* A commit hash ages badly in prose: README, every page of docs/ except
  ``performance-history.md`` (the one page that records which commit measured what) and the
  package's source carry none.  A hash is a run of 7-40 lower-case hex characters between
  word boundaries that contains at least one digit **and** at least one letter a-f, or that is
  exactly 40 hex characters long.  The letter is required so that plain decimal literals
  (``1000000``, ``8388608``) and numbers in prose are not taken for hashes; a short hash made
  only of digits (about 3% of 7-character hashes) therefore escapes the check, and a run of
  letters a-f only (``defaced``) is a word, not a hash.
* Every Markdown link or image to a local file, in README.md and docs/*.md, resolves
  (relative to the page; ``#anchors`` and URLs with a scheme are not checked).
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
HISTORY = ROOT / "docs" / "performance-history.md"

README_MAX_LINES = 250
README_MAX_CHARS = 25_000
README_MAX_LINE = 160

_HEX_RUN = re.compile(r"\b[0-9a-f]{7,40}\b")
# [text](target) and ![alt](target); the target ends at whitespace or ')'
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def commit_hashes(text):
    """(line, hash) of every run in ``text`` that reads as a commit hash (module docstring)."""
    found = []
    for m in _HEX_RUN.finditer(text):
        run = m.group()
        if len(run) == 40 or (re.search(r"[0-9]", run) and re.search(r"[a-f]", run)):
            found.append((text.count("\n", 0, m.start()) + 1, run))
    return found


def local_links(text):
    """(line, target) of every Markdown link or image in ``text`` to a local path."""
    out = []
    for m in _LINK.finditer(text):
        target = m.group(1)
        if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
            continue  # http:, https:, mailto:, ... or an anchor on the same page
        out.append((text.count("\n", 0, m.start()) + 1, target.split("#", 1)[0]))
    return out


def test_readme_is_within_budget():
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"
    assert len(text) <= README_MAX_CHARS, f"README.md has {len(text)} characters"
    long = [(i, len(line)) for i, line in enumerate(lines, 1) if len(line) > README_MAX_LINE]
    assert not long, f"README.md lines over {README_MAX_LINE} characters (line, length): {long}"


def test_the_docs_pages_exist():
    names = {p.name for p in DOCS}
    assert {"design.md", "benchmarks.md", "results.md", "performance-history.md"} <= names


@pytest.mark.parametrize("page", [README, *[p for p in DOCS if p != HISTORY]],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_commit_hash_in_readme_or_docs(page):
    found = commit_hashes(page.read_text(encoding="utf-8"))
    assert not found, (f"{page.relative_to(ROOT)} names commits (line, hash): {found}; "
                       f"figures with their commit belong in docs/performance-history.md")


def test_no_commit_hash_in_the_package_source():
    found = {}
    for path in sorted((ROOT / "sparsecca").rglob("*.py")):
        hits = commit_hashes(path.read_text(encoding="utf-8"))
        if hits:
            found[path.relative_to(ROOT).as_posix()] = hits
    assert not found, f"commit hashes in the package source (file: [(line, hash)]): {found}"


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_local_links_resolve(page):
    dead = [(line, target) for line, target in local_links(page.read_text(encoding="utf-8"))
            if target and not (page.parent / target).exists()]
    assert not dead, f"{page.relative_to(ROOT)} links to missing files (line, target): {dead}"


def test_the_checks_find_what_they_look_for():
    # stand-in text: the checks must be able to fail, and must not fire on decimals or words
    text = ("measured at 989b171 and at abcdef0123456789abcdef0123456789abcdef01;\n"
            "not 1000000, 2_000_000, 8388608, 'defaced' or 0x1f.\n"
            "See [a](docs/x.md#part), ![b](img.png \"title\"), [c](https://example.org), "
            "[d](#anchor).\n")
    assert [h for _, h in commit_hashes(text)] == [
        "989b171", "abcdef0123456789abcdef0123456789abcdef01"]
    assert local_links(text) == [(3, "docs/x.md"), (3, "img.png")]
