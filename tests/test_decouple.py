"""Decoupling released rows (issue 23): every measured marginal is kept exactly; what was never measured carries
no association the measurements do not support."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import chi2

from dpcore.mechanisms.decouple import blankets, decouple_rows, group_keys, shuffle_within


def _counts(codes: np.ndarray, cols, sizes) -> np.ndarray:
    key = group_keys(codes, np.asarray(cols), sizes)
    return np.bincount(key, minlength=int(np.prod([sizes[c] for c in cols])))


def _chi2(codes: np.ndarray, a: int, b: int, sizes) -> float:
    table = _counts(codes, [a, b], sizes).reshape(sizes[a], sizes[b]).astype(float)
    expected = np.outer(table.sum(1), table.sum(0)) / table.sum()
    keep = expected > 0
    return float(((table - expected) ** 2 / np.where(keep, expected, 1))[keep].sum())


def _copies_of_few_records(n: int, p: int, sizes, distinct: int, seed: int) -> np.ndarray:
    """What the projection's rounding gives on a small table: n rows that are copies of a few distinct records
    (so every pair of attributes carries the records' accidental dependence)."""
    rng = np.random.default_rng(seed)
    records = np.column_stack([rng.integers(0, s, distinct) for s in sizes])
    return records[rng.integers(0, distinct, n)]


def test_blankets_are_the_attributes_measured_together():
    b = blankets(4, [(0,), (1,), (0, 1), (1, 2)])
    assert [list(x) for x in b] == [[1], [0, 2], [1], []]


def test_shuffle_within_keeps_each_groups_values():
    rng = np.random.default_rng(0)
    key = np.array([0, 1, 0, 1, 0, 2])
    values = np.array([5, 6, 7, 8, 9, 4])
    out = shuffle_within(values, key, rng)
    for k in (0, 1, 2):
        assert sorted(out[key == k]) == sorted(values[key == k])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_measured_marginal_is_kept_exactly(seed):
    sizes = [3, 4, 2, 5, 3]
    measured = [(a,) for a in range(5)] + [(0, 1), (1, 2, 3), (3, 4)]
    codes = _copies_of_few_records(600, 5, sizes, 40, seed)
    out, summary = decouple_rows(codes, sizes, measured, np.random.default_rng(seed))
    assert summary["moved_share"] > 0  # something moved ...
    for m in measured:  # ... and no measured cell changed its count
        assert np.array_equal(_counts(out, m, sizes), _counts(codes, m, sizes)), m


def test_one_way_marginals_only_give_independent_columns():
    """With only one-way marginals measured every blanket is empty: one shuffle of each column makes the columns
    independent.  Rows copied from 20 records are strongly dependent (χ² far above its null); after decoupling
    each pair's χ² is a draw from the permutation null, whose 99.9% quantile is the χ²_(r-1)(c-1) one (n large)."""
    sizes = [4, 5, 3, 6]
    codes = _copies_of_few_records(2000, 4, sizes, 20, 3)
    out, _ = decouple_rows(codes, sizes, [(a,) for a in range(4)], np.random.default_rng(3))
    for a in range(4):
        assert np.array_equal(np.sort(out[:, a]), np.sort(codes[:, a]))  # one-way marginals kept
        for b in range(a + 1, 4):
            df = (sizes[a] - 1) * (sizes[b] - 1)
            assert _chi2(codes, a, b, sizes) > chi2.isf(1e-6, df)  # invented dependence before
            # 6 pairs tested: a Bonferroni level of 0.001/6 in all
            assert _chi2(out, a, b, sizes) < chi2.isf(0.001 / 6, df), (a, b)


def test_a_chain_measured_leaves_its_ends_independent_given_the_middle():
    """Measured a-b and b-c: after decoupling, a and c are independent within each value of b (the maximum-entropy
    structure), while the a-b and b-c tables are kept exactly.  Within each b-slice the χ² of (a, c) is tested
    against its null quantile."""
    sizes = [3, 2, 3]
    codes = _copies_of_few_records(3000, 3, sizes, 12, 5)
    measured = [(0,), (1,), (2,), (0, 1), (1, 2)]
    out, _ = decouple_rows(codes, sizes, measured, np.random.default_rng(5))
    for m in measured:
        assert np.array_equal(_counts(out, m, sizes), _counts(codes, m, sizes))
    for v in range(sizes[1]):
        slice_ = out[out[:, 1] == v]
        df = (len(np.unique(slice_[:, 0])) - 1) * (len(np.unique(slice_[:, 2])) - 1)
        if df == 0:
            continue
        assert _chi2(slice_, 0, 2, sizes) < chi2.isf(0.001 / sizes[1], df)


def test_fully_measured_pairs_leave_the_rows_as_they_are():
    """All pairs measured among three attributes whose rows form a Latin square (any two values name the row):
    every blanket group is a single row, so nothing moves (a dense workload keeps its fit)."""
    sizes = [10, 10, 10]
    codes = np.array([[i, j, (i + j) % 10] for i in range(10) for j in range(10)])
    out, summary = decouple_rows(codes, sizes, [(0, 1), (0, 2), (1, 2)], np.random.default_rng(0))
    assert np.array_equal(out, codes) and summary["moved_share"] == 0


def test_keys_survive_domains_beyond_int64():
    sizes = [2**40, 2**40, 3]
    codes = np.array([[1, 2, 0], [1, 2, 1], [3, 2, 2]], dtype=np.int64)
    key = group_keys(codes, np.array([0, 1]), sizes)
    assert key[0] == key[1] != key[2]
    assert math.prod(sizes[:2]) > 2**62
