"""Every public class and function has a numpydoc ``Examples`` section, and it runs.

"Public" is what a subpackage's ``__all__`` exports.  Each example is run as a doctest of
that object's own docstring (methods' docstrings are not collected), from an empty
temporary directory, with the globals of the module that defines the object, so an
example that writes a file leaves nothing behind.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import re

import pytest

PUBLIC_MODULES = (
    "sparsecca",
    "sparsecca.data",
    "sparsecca.features",
    "sparsecca.kernels",
    "sparsecca.linalg",
    "sparsecca.tagging",
    "sparsecca.rerank",
    "sparsecca.distributed",
    "sparsecca.evaluate",
    "sparsecca.exceptions",
    "sparsecca.registry",
)

_SECTION = re.compile(r"^Examples\n-{8,}\n", re.MULTILINE)
_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _public_objects():
    seen = {}
    for modname in PUBLIC_MODULES:
        mod = importlib.import_module(modname)
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue  # constants such as row-name tuples
            key = f"{obj.__module__}.{obj.__qualname__}"
            seen.setdefault(key, (f"{modname}.{name}", obj))
    return sorted(seen.values(), key=lambda item: item[0])


PUBLIC = _public_objects()


def test_the_public_api_is_found():
    names = {name for name, _ in PUBLIC}
    assert "sparsecca.linalg.SparseCCA" in names
    assert "sparsecca.tagging.TrigramHMM" in names
    assert len(PUBLIC) > 50


@pytest.mark.parametrize("name, obj", PUBLIC, ids=[name for name, _ in PUBLIC])
def test_public_object_has_examples_section(name, obj):
    doc = inspect.getdoc(obj) or ""
    assert _SECTION.search(doc), f"{name}: no numpydoc 'Examples' section in its docstring"
    examples = doctest.DocTestParser().get_examples(doc)
    assert examples, f"{name}: the Examples section holds no '>>>' example"


@pytest.mark.parametrize("name, obj", PUBLIC, ids=[name for name, _ in PUBLIC])
def test_public_object_examples_run(name, obj, tmp_path, monkeypatch):
    doc = inspect.getdoc(obj) or ""
    if not _SECTION.search(doc):
        pytest.fail(f"{name}: no Examples section to run")
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(obj.__module__)
    test = doctest.DocTestParser().get_doctest(doc, dict(vars(module)), name, module.__file__, 0)
    runner = doctest.DocTestRunner(optionflags=_FLAGS)
    out = []
    result = runner.run(test, out=out.append)
    assert result.attempted > 0, f"{name}: no example ran"
    assert result.failed == 0, f"{name}: {result.failed} example(s) failed\n" + "".join(out)
