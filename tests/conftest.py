"""Shared fixtures.

Tests that need the real corpora in ``../shared/data`` take the ``shared_data`` fixture: it
skips with a reason when the directory is absent, and fails when ``CI=true`` (CI always has it,
so a skip there would hide a broken path).
"""

import os
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ../shared/data (skip when absent; fail when CI=true)."""
    if not SHARED_DATA.is_dir():
        msg = f"real corpora not found at {SHARED_DATA} (expected ../shared/data beside the repo)"
        if _in_ci():
            pytest.fail(msg + "; CI=true requires them")
        pytest.skip(msg)
    return SHARED_DATA
