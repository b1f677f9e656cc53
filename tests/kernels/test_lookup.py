"""grouped_lookup refuses what its kernel cannot search safely (the results are checked against
a whole-table search in tests/features/test_feature_kernels.py)."""

import numpy as np
import pytest

from sparsecca.kernels import grouped_lookup

CODES = np.array([1, 4, 0, 3, 9, 7])  # groups [1, 4], [0, 3, 9], [7]
START = np.array([0, 2, 5, 6])


@pytest.mark.parametrize("args, exc, match", [
    # entries in the middle out of range: read far past the table (a segfault) ...
    ((np.array([0]), np.array([2**62]), np.array([0, 10**9, 10**9, 6]), CODES), ValueError,
     r"group_start must be non-decreasing with entries in \[0, len\(sorted_codes\)=6\], got "
     r"group_start\[2\] = 1000000000 > group_start\[3\] = 6"),
    # ... or past a group's end (codes of the table came back absent)
    ((np.zeros(5, int), np.array([0, 1, 4, 3, 12345]), np.array([0, 60, 2, 6]), CODES),
     ValueError, r"group_start\[1\] = 60 > group_start\[2\] = 2"),
    ((np.array([1]), np.array([3]), START, np.array([1, 4, 3, 0, 9, 7])), ValueError,
     r"sorted_codes must be ascending within each group; group 1 \(entries 2:5\) is not"),
    # a float id was truncated: code 3.9 was found at code 3's position
    ((np.array([1]), np.array([3.9]), START, CODES), TypeError,
     "code must be an array of integers, got dtype float64"),
    ((np.array([1.7]), np.array([3]), START, CODES), TypeError,
     "group must be an array of integers, got dtype float64"),
    ((np.array([True]), np.array([3]), START, CODES), TypeError,
     "group must be an array of integers, got dtype bool"),
    ((np.array([1]), np.array([3]), START.astype(float), CODES), TypeError,
     "group_start must be an array of integers, got dtype float64"),
    ((np.array([1]), np.array([3]), START, CODES + 0.5), TypeError,
     "sorted_codes must be an array of integers, got dtype float64"),
    ((np.array([1]), np.array([2**64 - 1], dtype=np.uint64), START, CODES), ValueError,
     r"code must lie in the int64 range .*, got values in \[18446744073709551615, "),
])
def test_grouped_lookup_refuses_bad_tables_and_ids(args, exc, match):
    with pytest.raises(exc, match=match):
        grouped_lookup(*args)


def test_grouped_lookup_valid_input_unchanged():
    # empty groups, a repeated code in a group and unsigned ids are all valid
    start = np.array([0, 2, 2, 5, 6])
    codes = np.array([1, 4, 0, 3, 3, 7])
    got = grouped_lookup(np.array([0, 0, 1, 2, 2, 3, 3], dtype=np.uint32),
                         np.array([4, 2, 0, 3, 9, 7, 0]), start, codes)
    assert got.tolist() == [1, -1, -1, 3, -1, 5, -1]
    assert grouped_lookup([], [], start, codes).shape == (0,)
