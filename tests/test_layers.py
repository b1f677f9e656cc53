"""The package's layers (docs/design.md): no module reaches around one.

Read from the source with ``ast`` (every import, those inside functions included), so a
lazy import cannot hide a dependency.  Two rules:

* a module uses another subpackage only through its public ``__init__`` (never
  ``sparsecca.<other>._private``);
* a subpackage imports only the subpackages below it (``LOWER``), and so does a top-level
  module with a layer of its own (``TOP``: the model registry).

The top-level private helpers (``_params``, ``_persist``, ...) and ``exceptions`` are shared
by every layer; the other top-level modules (``cli``, ``_experiment``, ``evaluate``) sit above
all.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sparsecca"

#: what each subpackage may import (besides the shared top-level modules)
LOWER = {
    "data": set(),
    "kernels": set(),
    "linalg": set(),
    "features": {"data", "kernels"},
    # the discriminative taggers read the token context features of the features layer
    "tagging": {"data", "features", "kernels"},
    "rerank": {"data", "features", "kernels", "linalg", "tagging"},
    # the Dask pipeline distributes every stage below it
    "distributed": {"data", "features", "kernels", "linalg", "tagging", "rerank"},
}
#: the top-level modules with a layer of their own, and what they may import: the model
#: registry names the taggers and rerankers (above tagging and rerank), and the command line
#: and the experiment runner read it (above it); no subpackage may import it
TOP = {"registry": {"data", "features", "kernels", "linalg", "tagging", "rerank"}}
LAYERS = {**LOWER, **TOP}
SHARED = {"_atomic", "_config", "_machine", "_params", "_persist", "_sparse", "_tagset",
          "exceptions"}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        yield path, parts


def imports_of(path, parts):
    """The absolute ``sparsecca...`` modules that the file at ``path`` imports from, with
    their line numbers."""
    base = list(parts[:-1])  # the package holding this module (itself for __init__)
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[:len(base) - (node.level - 1)]
                target = ".".join(anchor + ([node.module] if node.module else []))
                # 'from . import x' names submodules or attributes of the anchor
                names = [] if node.module else [f"{target}.{a.name}" for a in node.names]
            else:
                target, names = node.module or "", []
            for t in [target, *names]:
                if t.startswith("sparsecca"):
                    found.append((t, node.lineno))
        elif isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names
                      if a.name.startswith("sparsecca")]
    return found


def violations(modules=None):
    """(file:line, rule) of every import that breaks a layer rule."""
    out = []
    for path, parts in modules if modules is not None else _modules():
        own = parts[1] if len(parts) > 2 else None  # subpackage, None for top-level modules
        if own is None and parts[-1] in TOP:
            own = parts[-1]
        for target, line in imports_of(path, parts):
            tparts = target.split(".")
            if len(tparts) < 2:
                continue
            other = tparts[1]
            if other == own or other in SHARED or other == "__init__":
                continue
            where = f"{'/'.join(parts)}.py:{line}"
            if len(tparts) > 2 and tparts[2].startswith("_"):
                out.append((where, f"imports {target}, a private module of sparsecca.{other}"))
            if own is not None and other not in LAYERS[own]:
                out.append((where, f"sparsecca.{own} imports sparsecca.{other}, which is "
                                   f"not below it"))
    return out


def test_every_subpackage_has_a_layer():
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert subpackages == set(LOWER)


def test_no_module_reaches_around_a_layer():
    assert violations() == []


@pytest.mark.parametrize("source, rule", [
    ("from ..kernels._boosting import check_n_rounds\n", "a private module of sparsecca.kernels"),
    ("def f():\n    from ..rerank import GenerativeReranker\n", "not below it"),
    ("import sparsecca.linalg._cca\n", "a private module of sparsecca.linalg"),
    ("def f():\n    from .. import registry\n", "imports sparsecca.registry, which is not below"),
])
def test_the_check_finds_a_broken_rule(tmp_path, source, rule):
    # the checker on a stand-in module of sparsecca.tagging (it must be able to fail)
    path = tmp_path / "_mod.py"
    path.write_text(source, encoding="utf-8")
    found = [message for _, message in violations([(path, ("sparsecca", "tagging", "_mod"))])]
    assert any(rule in m for m in found), found


@pytest.mark.parametrize("source, ok", [
    ("from . import rerank, tagging\nfrom .data import TAG_COLUMNS\n", True),
    ("from ._persist import PersistMixin\n", True),
    ("def f():\n    from .cli import main\n", False),
    ("from ._experiment import experiment\n", False),
    ("from .rerank._cca import GenerativeReranker\n", False),
])
def test_the_registry_sits_above_tagging_and_rerank(tmp_path, source, ok):
    # the checker on a stand-in sparsecca/registry.py
    path = tmp_path / "registry.py"
    path.write_text(source, encoding="utf-8")
    assert (violations([(path, ("sparsecca", "registry"))]) == []) == ok


def test_the_check_allows_public_and_shared_imports(tmp_path):
    path = tmp_path / "_mod.py"
    path.write_text("from ..kernels import kbest_viterbi\nfrom .._params import check_int\n"
                    "from ._nbest import NBestList\nfrom ..data import TaggedCorpus\n",
                    encoding="utf-8")
    assert violations([(path, ("sparsecca", "tagging", "_mod"))]) == []


ROOT = PACKAGE.parent
#: the scripts that show or measure the package as a user runs it
SCRIPT_DIRS = ("benchmarks", "examples")


def script_violations(paths):
    """(file:line, rule) of every import of a script that reaches past a subpackage's public
    names: a private module of it, or a name outside its ``__all__``."""
    import importlib

    out = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ImportFrom) and not node.level:
                modules = [(node.module or "", [a.name for a in node.names])]
            elif isinstance(node, ast.Import):
                modules = [(a.name, []) for a in node.names]
            else:
                continue
            for module, names in modules:
                parts = module.split(".")
                if parts[0] != "sparsecca" or len(parts) < 2 or parts[1] not in LOWER:
                    continue  # not a subpackage (the top-level modules have no __all__ rule)
                where = f"{path.relative_to(path.parents[1])}:{node.lineno}"
                if len(parts) > 2 and parts[2].startswith("_"):
                    out.append((where, f"imports {module}, a private module"))
                    continue
                public = set(importlib.import_module(module).__all__)
                out += [(where, f"{name} is not in {module}.__all__")
                        for name in names if name not in public]
    return out


def test_benchmarks_and_examples_use_public_names_only():
    paths = sorted(p for d in SCRIPT_DIRS for p in (ROOT / d).rglob("*.py"))
    assert len(paths) > 10
    assert script_violations(paths) == []


@pytest.mark.parametrize("source, rule", [
    ("from sparsecca.linalg import RegularizedInverse\n",
     "RegularizedInverse is not in sparsecca.linalg.__all__"),
    ("def f():\n    from sparsecca.linalg._reduced import reduced_cca\n",
     "imports sparsecca.linalg._reduced, a private module"),
    ("import sparsecca.linalg._thresholds as t\n", "a private module"),
])
def test_the_script_check_finds_a_private_name(tmp_path, source, rule):
    path = tmp_path / "scripts" / "bench.py"
    path.parent.mkdir()
    path.write_text(source, encoding="utf-8")
    found = [message for _, message in script_violations([path])]
    assert any(rule in m for m in found), found
    public = tmp_path / "scripts" / "ok.py"
    public.write_text("from sparsecca.linalg import CCAEngine, SparseCCA\n"
                      "from sparsecca import registry\n", encoding="utf-8")
    assert script_violations([public]) == []
