"""Fixtures of the distributed tests (the cluster's ``client`` is in tests/conftest.py)."""

from __future__ import annotations

import numpy as np
import pytest

from sparsecca.data import read_conllu
from sparsecca.distributed import read_conllu_partitions


@pytest.fixture(scope="module")
def sequoia(shared_data, tmp_path_factory):
    """The first 1500 training sentences of fr-sequoia as 5 partitions read from the file,
    and the test set."""
    text = (shared_data / "fr-sequoia" / "train.conllu").read_text(encoding="utf-8")
    cut = 0
    for _ in range(1500):
        cut = text.index("\n\n", cut) + 2
    path = tmp_path_factory.mktemp("sequoia") / "train.conllu"
    path.write_text(text[:cut], encoding="utf-8")
    parts = read_conllu_partitions(path, tags="upos",
                                   partition_size=path.stat().st_size // 5 + 1)
    return (parts, read_conllu(path, tags="upos"),
            read_conllu(shared_data / "fr-sequoia" / "test.conllu", tags="upos"))


@pytest.fixture
def assert_same_state():
    """A check that two saved states (``_get_state()``'s ``extra`` and ``arrays``) are equal,
    array by array (dtype and values)."""

    def check(extra_a, arrays_a, extra_b, arrays_b):
        assert extra_a == extra_b
        assert arrays_a.keys() == arrays_b.keys()
        for name, value in arrays_a.items():
            assert value.dtype == arrays_b[name].dtype, name
            np.testing.assert_array_equal(value, arrays_b[name], name)

    return check
