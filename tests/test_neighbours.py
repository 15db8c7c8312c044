"""Neighbouring tables (one cell, or one row, changed) through the real entry points: every statistic, label and
code the private path derives from a file moves by at most its stated sensitivity.

Issue 24, finding 1: pandas typed a column from *all* its cells, so one "x" in a column of codes 007, 012, ...
switched the whole column between a numeric and a text branch: the role statistics moved by up to n, every
released label changed ("7" vs "007"), and declared labels stopped matching.  Cells are now read as text and each
is canonicalised on its own.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.data import load_dataset, read_table
from dpcore.discovery import value_counts
from dpcore.domain import Attribute, Domain
from dpcore.ingest import DATE_FORMATS, SENSITIVITY, STATISTICS, column_counts


def _csv(codes: list[str], other: list[str]) -> bytes:
    return ("code,other\n" + "".join(f"{c},{o}\n" for c, o in zip(codes, other))).encode()


def _pair(seed: int, n: int = 400):
    """A column of zero-padded codes and its neighbour with one cell replaced by text, both as CSV bytes."""
    rng = np.random.default_rng(seed)
    codes = [f"{int(v):03d}" for v in rng.choice([7, 12, 3, 45, 120], n)]
    other = [str(v) for v in rng.integers(0, 9, n)]
    swapped = list(codes)
    swapped[int(rng.integers(n))] = "x"
    return _csv(codes, other), _csv(swapped, other)


@pytest.mark.parametrize("seed", [0, 1])
def test_one_text_cell_moves_each_role_statistic_by_at_most_its_sensitivity(seed):
    a, b = (read_table(raw, filename="t.csv") for raw in _pair(seed))
    s0, f0 = column_counts(a["code"])
    s1, f1 = column_counts(b["code"])
    for key in STATISTICS:
        assert abs(s0[key] - s1[key]) <= SENSITIVITY[key], (key, s0[key], s1[key])
    for fmt in DATE_FORMATS:
        assert abs(f0[fmt] - f1[fmt]) <= SENSITIVITY["date"]
    # the leading-zero rule reads each cell, not the column's type: padded codes are text on both sides
    for df, stats in ((a, s0), (b, s1)):
        assert stats["numeric"] == int(df["code"].str.fullmatch(r"[1-9]\d*").sum())


@pytest.mark.parametrize("seed", [0, 1])
def test_one_text_cell_changes_at_most_two_labels_and_one_count_each(seed):
    """Partition selection sees (label, count) pairs: neighbours may differ in one label's count by one on each
    side, never in the names of the other labels."""
    a, b = (read_table(raw, filename="t.csv") for raw in _pair(seed))
    la, ca = value_counts(a["code"])
    lb, cb = value_counts(b["code"])
    da, db = dict(zip(la, ca)), dict(zip(lb, cb))
    assert set(da) ^ set(db) <= {"x"} and "007" in da and "007" in db
    diff = sum(abs(da.get(k, 0) - db.get(k, 0)) for k in set(da) | set(db))
    assert diff <= 2, (da, db)


def test_one_text_cell_leaves_every_other_rows_codes_under_a_declared_schema():
    """Encoding with declared labels must not depend on the other cells: the unchanged rows keep their codes."""
    raw_a, raw_b = _pair(3)
    a, b = (read_table(raw, filename="t.csv") for raw in (raw_a, raw_b))
    domain = Domain(
        (
            Attribute("code", "categorical", values=("003", "007", "012", "045", "120"), other=True),
            Attribute("other", "categorical", values=tuple(str(v) for v in range(9))),
        )
    )
    ca = load_dataset(a, domain).codes
    cb = load_dataset(b, domain).codes
    changed = np.flatnonzero((ca != cb).any(axis=1))
    assert len(changed) <= 1, changed
    assert (ca[:, 0] >= 0).all()


@pytest.mark.parametrize("replacement", ["x", "1850", "2023.5", "", "1999"])
def test_one_cell_of_a_year_column_moves_its_year_count_by_at_most_one(replacement):
    """Under a header that names a year, whole numbers in 1900-2099 count as dates in %Y: one cell replaced (by text,
    a year outside the grid, a fraction, a blank or another year) moves that count, and every statistic, by at most
    its sensitivity."""
    rng = np.random.default_rng(3)
    years = [str(v) for v in rng.integers(1950, 2021, 300)]
    other = [str(v) for v in rng.integers(0, 9, 300)]
    swapped = list(years)
    swapped[17] = replacement
    raw = ("visit_year,other\n" + "".join(f"{y},{o}\n" for y, o in zip(years, other))).encode()
    raw_b = ("visit_year,other\n" + "".join(f"{y},{o}\n" for y, o in zip(swapped, other))).encode()
    a, b = (read_table(x, filename="t.csv") for x in (raw, raw_b))
    s0, f0 = column_counts(a["visit_year"])
    s1, f1 = column_counts(b["visit_year"])
    assert f0["%Y"] == 300
    for key in STATISTICS:
        assert abs(s0[key] - s1[key]) <= SENSITIVITY[key], key
    for fmt in DATE_FORMATS:
        assert abs(f0[fmt] - f1[fmt]) <= SENSITIVITY["date"], fmt
