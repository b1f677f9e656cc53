"""Running the real ``sparsecca`` entry point in a subprocess."""

import os
import subprocess
import sys


def run_cli(*args, cwd=None, timeout=600):
    """``python -m sparsecca *args``; returns the CompletedProcess (text mode)."""
    env = {k: v for k, v in os.environ.items() if k != "SPARSECCA_DEBUG"}
    return subprocess.run([sys.executable, "-m", "sparsecca", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, env=env)
