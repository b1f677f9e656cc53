"""Smoke tests of benchmarks/mms_table4.py: a small run, missing data (exit 3), usage (exit 2)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _run(script_dir, *args, timeout=300):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, str(script_dir / "mms_table4.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.shared_data
@pytest.mark.slow
def test_small_run_prints_the_table(shared_data, tmp_path):
    out = tmp_path / "t4.json"
    proc = _run(BENCH, "--max-sentences", 120, "--out", out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "system" in proc.stdout and "paper K" in proc.stdout
    data = json.loads(out.read_text())
    systems = [r["system"] for r in data["table4"]]
    assert systems[0].startswith("HMM") and any(s.startswith("SVM") for s in systems)
    assert any(s.startswith("MMS + POS") for s in systems)
    assert set(data["targets"]) == {"known_wer<=5.70", "unknown_wer<=27.65",
                                    "train>=10x faster than LinearSVC"}


def test_without_data_exits_3_with_one_line(tmp_path):
    root = tmp_path / "repo" / "benchmarks"
    shutil.copytree(BENCH, root, ignore=shutil.ignore_patterns("benchmarks", "__pycache__",
                                                               ".asv"))
    proc = _run(root)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("missing data: ")
    assert str(tmp_path / "shared" / "data") in lines[0]


def test_usage_error_exits_2():
    proc = _run(BENCH, "--max-sentences", -1)
    assert proc.returncode == 2
    assert "--max-sentences must be >= 0" in proc.stderr
