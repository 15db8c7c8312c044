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


def test_shuffle_within_draws_every_order_inside_a_group_alike():
    """A group of three distinct values among other groups: over 6,000 draws each of its 3! orders comes out with
    probability 1/6 (chi-square with 5 degrees of freedom, at the 1e-4 level)."""
    from scipy.stats import chi2

    key = np.array([4, 9, 4, 1, 4, 9, 1])
    values = np.array([1, 7, 2, 8, 3, 6, 5])
    rng = np.random.default_rng(3)
    seen: dict[tuple, int] = {}
    for _ in range(6000):
        out = tuple(shuffle_within(values, key, rng)[key == 4])
        seen[out] = seen.get(out, 0) + 1
    assert len(seen) == 6
    stat = sum((c - 1000) ** 2 / 1000 for c in seen.values())
    assert stat < chi2.isf(1e-4, 5), seen


def test_keys_renumbered_before_they_overflow_name_the_same_combinations():
    """Twelve attributes of 2^20 values: the radix key is renumbered whenever the next one would pass 2^62, and
    rows share a key exactly when they share every value."""
    rng = np.random.default_rng(5)
    base = rng.integers(0, 3, size=(400, 12)) * (2**18)  # few distinct rows, values far apart (under 2^20)
    codes = base[rng.integers(0, 400, 2000)]
    key = group_keys(codes, np.arange(12), [2**20] * 12)
    rows = np.unique(codes, axis=0, return_inverse=True)[1].ravel()
    assert len(np.unique(key)) == len(np.unique(rows))
    pairs = np.unique(np.stack([key, rows]), axis=1)
    assert pairs.shape[1] == len(np.unique(rows))  # one key per combination, one combination per key


def test_keys_survive_domains_beyond_int64():
    sizes = [2**40, 2**40, 3]
    codes = np.array([[1, 2, 0], [1, 2, 1], [3, 2, 2]], dtype=np.int64)
    key = group_keys(codes, np.array([0, 1]), sizes)
    assert key[0] == key[1] != key[2]
    assert math.prod(sizes[:2]) > 2**62


def _grouped_counts(codes: np.ndarray, m, maps) -> np.ndarray:
    """Counts of a marginal measured with value maps (an attribute's values, or the groups holding them)."""
    shape = [int(f.max()) + 1 for f in maps]
    idx = np.zeros(len(codes), dtype=np.int64)
    for a, f, s in zip(m, maps, shape):
        idx = idx * s + f[codes[:, a]]
    return np.bincount(idx, minlength=int(np.prod(shape)))


def _measured_in_groups():
    """a (6 values) measured in two groups {0,1,2}, {3,4,5} with b (3 values), whole alone and whole with c (2
    values); b and c whole alone.  The rows put a's value inside its group exactly where b says (a = 3·group + b),
    a dependence no measured cell can see."""
    sizes = [6, 3, 2]
    halves = np.array([0, 0, 0, 1, 1, 1])
    whole = [np.arange(s) for s in sizes]
    measured = [(0,), (1,), (2,), (0, 1), (0, 2)]
    maps = [(whole[0],), (whole[1],), (whole[2],), (halves, whole[1]), (whole[0], whole[2])]
    rng = np.random.default_rng(7)
    n = 3000
    group, b, c = rng.integers(0, 2, n), rng.integers(0, 3, n), rng.integers(0, 2, n)
    codes = np.column_stack([3 * group + b, b, c])
    return sizes, measured, maps, codes


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_within_groups_every_measured_cell_is_kept(seed):
    sizes, measured, maps, codes = _measured_in_groups()
    out, summary = decouple_rows(codes, sizes, measured, np.random.default_rng(seed), value_maps=maps)
    assert summary["within_groups"] == [0]
    for m, f in zip(measured, maps):
        assert np.array_equal(_grouped_counts(out, m, f), _grouped_counts(codes, m, f)), m


def test_within_groups_a_value_carries_no_dependence_its_groups_do_not_measure():
    """a's value inside its group matched b in every row; measured with b only in groups, that match is invented
    structure.  The blanket move alone cannot touch it (a's blanket holds b and c, which name the value); the
    within-group move shuffles a inside its group among rows agreeing on c (measured with a value by value), so a
    row's a matches its b with probability 1/3: over 3,000 rows the share is 1/3 ± 4.5 standard errors."""
    sizes, measured, maps, codes = _measured_in_groups()
    share = lambda rows: float(np.mean(rows[:, 0] % 3 == rows[:, 1]))  # noqa: E731
    before, _ = decouple_rows(codes, sizes, measured, np.random.default_rng(1))
    assert share(before) == 1.0  # without the value maps nothing moves a inside its group
    after, _ = decouple_rows(codes, sizes, measured, np.random.default_rng(1), value_maps=maps)
    se = math.sqrt((1 / 3) * (2 / 3) / len(codes))
    assert abs(share(after) - 1 / 3) < 4.5 * se


def test_within_groups_keeps_what_is_measured_value_by_value():
    """a measured value by value with c: a row's (a, c) pair never changes in count, even where the rows' a and c
    are dependent (c = 1 exactly on a's odd values)."""
    sizes, measured, maps, codes = _measured_in_groups()
    codes[:, 2] = codes[:, 0] % 2
    out, _ = decouple_rows(codes, sizes, measured, np.random.default_rng(3), value_maps=maps)
    assert np.all(out[:, 2] == out[:, 0] % 2)


def test_a_passed_deadline_leaves_one_sweep_and_the_note_says_so():
    """The run's time limit: with the deadline already past, one sweep runs (not zero: it does most of the work) and
    the note says how many of the planned sweeps ran; every measured marginal is kept either way."""
    from dpcore.mechanisms.decouple import SWEEPS, decouple_notes

    sizes = [3, 4, 2, 5, 3]
    measured = [(a,) for a in range(5)] + [(0, 1), (1, 2, 3)]
    codes = _copies_of_few_records(600, 5, sizes, 40, 1)
    late, summary = decouple_rows(codes, sizes, measured, np.random.default_rng(1), deadline=0.0)
    assert summary["sweeps"] == 1 and summary["sweeps_planned"] == SWEEPS
    assert f"(1 sweep of {SWEEPS}: the run's time limit was reached)" in decouple_notes(summary)[0]
    _, full = decouple_rows(codes, sizes, measured, np.random.default_rng(1))
    assert full["sweeps"] == SWEEPS and "time limit" not in decouple_notes(full)[0]
    for m in measured:
        assert np.array_equal(_counts(late, m, sizes), _counts(codes, m, sizes)), m
