"""Size limits of the package's code: no module of ``sparsecca`` over 700 lines and no
function or method over 120 lines (``end_lineno - lineno + 1``, decorators excluded), read
with :mod:`ast` so that the check needs no import of the package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sparsecca"
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 120


def _modules():
    return sorted(PACKAGE.rglob("*.py"))


def _long_functions(path: Path):
    """(qualified name, first line, length) of each function of ``path`` over the limit."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}."
                if not isinstance(child, ast.ClassDef):
                    n = child.end_lineno - child.lineno + 1
                    if n > MAX_FUNCTION_LINES:
                        out.append((f"{prefix}{child.name}", child.lineno, n))
            visit(child, name)

    visit(tree, "")
    return out


def test_the_package_is_found():
    assert (PACKAGE / "__init__.py").is_file()
    assert len(_modules()) > 10


def test_no_module_over_the_line_limit():
    offenders = []
    for path in _modules():
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_MODULE_LINES:
            offenders.append(f"{path.relative_to(PACKAGE.parent)}: {n} lines")
    assert not offenders, (f"modules over {MAX_MODULE_LINES} lines:\n  "
                           + "\n  ".join(offenders))


def test_no_function_over_the_line_limit():
    offenders = [f"{path.relative_to(PACKAGE.parent)}:{line} {name}: {n} lines"
                 for path in _modules() for name, line, n in _long_functions(path)]
    assert not offenders, (f"functions over {MAX_FUNCTION_LINES} lines:\n  "
                           + "\n  ".join(offenders))


@pytest.mark.parametrize("lines, flagged", [(MAX_FUNCTION_LINES, False),
                                            (MAX_FUNCTION_LINES + 1, True)])
def test_the_function_check_counts_every_line(tmp_path, lines, flagged):
    # a method of ``lines`` lines (its def line and lines - 1 body lines) inside a class
    body = "".join("        x = 1\n" for _ in range(lines - 1))
    src = tmp_path / "m.py"
    src.write_text(f"class A:\n    def f(self):\n{body}\n")
    found = _long_functions(src)
    assert (found == [("A.f", 2, lines)]) if flagged else found == []
