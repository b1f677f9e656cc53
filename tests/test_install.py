"""Installing sparsecca as README says, and where the compiled kernels go (issue #33).

README's two commands run one after the other in one virtual environment: the demo's
``pip install ".[plot]" && sparsecca demo``, then the tests' ``pip install -e ".[test]"``.
numba used to cache the demo's kernels in ``site-packages/sparsecca/kernels/__pycache__``;
the editable install removed the regular one but not that folder, which then shadowed the
package as a namespace package (``python -m sparsecca`` from another directory:
``ImportError: cannot import name '__version__' from 'sparsecca' (unknown location)``).  The
kernels are now cached in a user cache directory (:mod:`sparsecca._config`), and a read-only
install without any writable cache directory works after one warning.
"""

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: compiles one small kernel (grouped_lookup) and prints its result
KERNEL_CALL = """
import numpy as np
from sparsecca.kernels import grouped_lookup
pos = grouped_lookup(np.array([0, 0, 1, 1]), np.array([7, 4, 4, 8]), np.array([0, 2, 5]),
                     np.array([3, 7, 1, 4, 9]))
print(pos.tolist())
"""
KERNEL_OUTPUT = "[1, -1, 3, -1]"


def readme_command(marker):
    """The one command line between README's ``<!-- marker -->`` comments."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(rf"<!-- {marker} -->\n(.*?)<!-- /{marker} -->", text, flags=re.S)
    assert found, f"README.md has no <!-- {marker} --> markers"
    lines = [line for line in found.group(1).splitlines()
             if line.strip() and not line.startswith("```")]
    assert len(lines) == 1, lines
    return lines[0]


def from_checkout(command):
    """``command`` with its ``pip install ".[extra]"`` pointing at this checkout, so that it
    runs from any directory (pip builds from the path; nothing is copied first)."""
    out = command.replace('".[', f'"{ROOT}[')
    assert out != command, f"no pip install \".[extra]\" in README's command {command!r}"
    return out


def clean_env(**extra):
    """This process's environment without anything that would pick the package, the
    interpreter or numba's cache for the child; then ``extra`` (a None value removes)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "NUMBA_CACHE_DIR",
                        "NUMBA_DISABLE_JIT", "NUMBA_CACHE_LOCATOR_CLASSES", "XDG_CACHE_HOME")}
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    return env


def run(args, *, cwd, env, timeout=900, shell=False):
    proc = subprocess.run(["bash", "-c", args] if shell else args, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (f"{args} exited {proc.returncode}\n--- stdout\n"
                                  f"{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}")
    return proc


def files_below(path):
    return sorted(str(p.relative_to(path)) for p in Path(path).rglob("*"))


def package_copy(tmp_path):
    """A copy of the sparsecca package (without __pycache__) in its own directory."""
    where = tmp_path / "pkg"
    shutil.copytree(ROOT / "sparsecca", where / "sparsecca",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return where


def pip_cache_dir():
    """pip's cache directory as this machine has it (the children get another
    XDG_CACHE_HOME, which would move pip's cache too), or None."""
    if os.environ.get("PIP_CACHE_DIR"):
        return os.environ["PIP_CACHE_DIR"]
    proc = subprocess.run([sys.executable, "-m", "pip", "cache", "dir"], capture_output=True,
                          text=True)
    return (proc.stdout.strip() or None) if proc.returncode == 0 else None


# -- where the cache goes ------------------------------------------------------------------

@pytest.mark.parametrize("case", ["NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "HOME"])
def test_the_cache_directory(tmp_path, case):
    # NUMBA_CACHE_DIR wins (numba's own variable), then XDG_CACHE_HOME, then ~/.cache; each
    # in a fresh process since the choice is made on import
    numba_dir, xdg, home = tmp_path / "numba", tmp_path / "xdg", tmp_path / "home"
    home.mkdir()
    expected = {"NUMBA_CACHE_DIR": numba_dir / "sparsecca",
                "XDG_CACHE_HOME": xdg / "sparsecca" / "numba",
                "HOME": home / ".cache" / "sparsecca" / "numba"}[case]
    env = clean_env(HOME=home, PYTHONPATH=ROOT,
                    NUMBA_CACHE_DIR=numba_dir if case == "NUMBA_CACHE_DIR" else None,
                    XDG_CACHE_HOME=xdg if case != "HOME" else None)
    proc = run([sys.executable, "-c", "from sparsecca import _config\n"
                "print(_config.CACHE_DIR, _config.CACHE_ENABLED, _config.JIT_SERIAL['cache'])"],
               cwd=tmp_path, env=env, timeout=300)
    assert proc.stdout.split() == [str(expected), "True", "True"]
    assert proc.stderr == ""
    from sparsecca import __version__
    assert (expected / __version__).is_dir()


def test_cache_dir_rules():
    from sparsecca._config import cache_dir

    home = os.path.abspath("/h")
    assert cache_dir({"NUMBA_CACHE_DIR": "/n", "XDG_CACHE_HOME": "/x", "HOME": home}) == \
        os.path.join(os.path.abspath("/n"), "sparsecca")
    # an empty NUMBA_CACHE_DIR is unset (numba reads it so); a relative XDG_CACHE_HOME is
    # ignored (the XDG specification)
    for xdg in ("", "relative/cache"):
        assert cache_dir({"NUMBA_CACHE_DIR": "", "XDG_CACHE_HOME": xdg, "HOME": home}) == \
            os.path.join(home, ".cache", "sparsecca", "numba")


def test_kernels_are_cached_outside_the_package_and_other_code_is_left_to_numba(tmp_path):
    # the package's kernels go to the cache directory, keyed by version and source directory;
    # nothing is written beside the sources; a function of another module keeps numba's own
    # rule (its __pycache__)
    pkg = package_copy(tmp_path)
    before = files_below(pkg)
    other = tmp_path / "other"
    other.mkdir()
    (other / "mod.py").write_text("import numba\n\n@numba.njit(cache=True)\n"
                                  "def f(x):\n    return x + 1\n", encoding="utf-8")
    xdg = tmp_path / "xdg"
    env = clean_env(XDG_CACHE_HOME=xdg, PYTHONPATH=f"{pkg}{os.pathsep}{other}",
                    PYTHONDONTWRITEBYTECODE=1)
    code = KERNEL_CALL + ("import mod, sparsecca.kernels._lookup as L\n"
                          "print(L._grouped_lookup._cache.cache_path)\n"
                          "print(mod.f._cache.cache_path)\n")
    proc = run([sys.executable, "-c", code], cwd=tmp_path, env=env, timeout=300)
    result, kernel_path, other_path = proc.stdout.splitlines()
    assert result == KERNEL_OUTPUT
    from sparsecca import __version__
    kernel_path = Path(kernel_path)
    assert kernel_path.parent == xdg / "sparsecca" / "numba" / __version__
    assert kernel_path.name.startswith("kernels_")
    assert any(p.suffix == ".nbi" for p in kernel_path.iterdir())
    assert Path(other_path) == other / "__pycache__"
    assert files_below(pkg) == before


# -- no writable cache directory -----------------------------------------------------------

def test_read_only_install_without_a_writable_cache(tmp_path):
    # a read-only package and no writable cache directory: the kernels compile without a
    # cache after one one-line warning naming the directory tried, never a numba traceback,
    # and nothing is written into the package.  As root chmod does not stop writes: the
    # cache home is then below a regular file (mkdir fails with NotADirectoryError), and the
    # package is checked for added files instead
    pkg = package_copy(tmp_path)
    before = files_below(pkg)
    if os.geteuid() == 0:
        blocker = tmp_path / "a-file"
        blocker.write_text("", encoding="utf-8")
        home = blocker
    else:
        home = tmp_path / "locked"
        home.mkdir()
    cache_home = home / "cache"
    modes = {}
    for path in [home, *pkg.rglob("*"), pkg]:
        modes[path] = path.stat().st_mode
        path.chmod(modes[path] & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    env = clean_env(HOME=home, XDG_CACHE_HOME=cache_home, PYTHONPATH=pkg,
                    PYTHONDONTWRITEBYTECODE=1, MPLCONFIGDIR=tmp_path / "mpl")
    try:
        proc = run([sys.executable, "-c", KERNEL_CALL], cwd=tmp_path, env=env, timeout=300)
        no_jit = run([sys.executable, "-c", KERNEL_CALL], cwd=tmp_path,
                     env={**env, "NUMBA_DISABLE_JIT": "1"}, timeout=300)
    finally:
        for path, mode in modes.items():
            path.chmod(mode)
    assert proc.stdout.strip() == KERNEL_OUTPUT
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "NumbaCacheWarning" in lines[0] and "NUMBA_CACHE_DIR" in lines[0], lines
    assert str(cache_home / "sparsecca" / "numba") in lines[0], lines
    # without JIT there is nothing to cache: no warning either
    assert no_jit.stdout.strip() == KERNEL_OUTPUT and no_jit.stderr == ""
    assert files_below(pkg) == before


# -- packaging, and README's two commands in one environment -------------------------------

def test_packages_found_are_sparsecca_only(tmp_path):
    # pyproject's find rule on a tree that also holds the demo's output folder (which
    # "sparsecca*" mapped as a package), tests, benchmarks and a numba cache
    setuptools = pytest.importorskip("setuptools")
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    find = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "tool"]["setuptools"]["packages"]["find"]
    for name in ("sparsecca/__init__.py", "sparsecca/kernels/__init__.py",
                 "sparsecca/kernels/__pycache__/_x.f-1.py311.nbi", "sparsecca-demo/report.md",
                 "sparsecca_extra/x.py", "tests/test_x.py", "benchmarks/bench_x.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    finder = (setuptools.find_namespace_packages if find.get("namespaces", True)
              else setuptools.find_packages)
    found = finder(where=str(tmp_path), include=find.get("include", ("*",)),
                   exclude=find.get("exclude", ()))
    assert sorted(found) == ["sparsecca", "sparsecca.kernels"]


@pytest.mark.slow
def test_readme_commands_one_after_the_other(tmp_path):
    # README's demo command (a short demo), then its test command's install step, in the same
    # .venv; then the CLI from another directory.  ~100 s, nearly all of it pip installs
    demo = from_checkout(readme_command("demo-command"))
    assert demo.split("&&")[-1].strip() == "sparsecca demo", demo
    demo += f" --sentences 150 --folds 2 -k 2 --models generative -q --out {tmp_path / 'demo'}"
    install = from_checkout(readme_command("test-command").split("&&")[0].strip())
    assert install.startswith("pip install -e "), install

    cache = tmp_path / "cache"  # the kernels' cache, away from the user's ~/.cache
    env = clean_env(XDG_CACHE_HOME=cache, PIP_CACHE_DIR=pip_cache_dir(),
                    PIP_DISABLE_PIP_VERSION_CHECK=1, MPLBACKEND="Agg")
    run(demo, cwd=tmp_path, env=env, shell=True)
    run(f". .venv/bin/activate && {install}", cwd=tmp_path, env=env, shell=True)
    venv = tmp_path / ".venv"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for args in ([str(venv / "bin" / "python"), "-m", "sparsecca", "--help"],
                 [str(venv / "bin" / "sparsecca"), "--help"]):
        # (was: ImportError: cannot import name '__version__' from 'sparsecca' (unknown
        # location), the demo's numba cache shadowing the editable install)
        proc = run(args, cwd=elsewhere, env=env, timeout=300)
        assert proc.stdout.startswith("usage: sparsecca"), proc.stdout[:200]
    (site,) = venv.glob("lib/python*/site-packages")
    left = files_below(site / "sparsecca") if (site / "sparsecca").exists() else []
    assert not left, f"the editable install left site-packages/sparsecca behind: {left[:5]}"
    assert list((cache / "sparsecca" / "numba").rglob("*.nbi")), "the demo cached no kernel"
