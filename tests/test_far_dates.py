"""A date written for "no date" on many rows (1900-01-01, as legacy systems export an empty date), far from the other
dates: the bounds held both, and ten equal bins over 1900-2022 put every real admission (2016-2022) in one
twelve-year bin, decoded anywhere in it (1-way TVD 0.37).  The years' noisy histogram now reports the far group
apart from the bulk, and the column's bins go over the bulk with one bin for the far group and one for the gap.
The attribute's own date edges; the grouping of held years; a release end to end (fixed seeds; tolerances from
the release's noise)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.cli import main
from dpcore.discovery import FAR_YEARS, _far_years, _held_kept, bin_threshold, bound_bins
from dpcore.domain import Attribute
from dpcore.errors import DomainError
from dpcore.tabular import _far_date_edges


def _admissions(n: int, seed: int = 0, share: float = 0.12, sentinel: str = "1900-01-01") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    admit = pd.Timestamp("2016-01-01") + pd.to_timedelta(rng.integers(0, 2500, n), unit="D")
    cells = admit.strftime("%Y-%m-%d").to_numpy().astype(object)
    cells[rng.random(n) < share] = sentinel
    return pd.DataFrame({"admit": cells, "age": rng.integers(20, 90, n), "ward": rng.choice(["a", "b", "c"], n)})


def test_a_date_attribute_takes_its_own_edges_and_writes_them_back():
    edges = ("1900-01-01", "1901-01-01", "2016-01-01", "2019-01-01", "2023-01-01")
    a = Attribute("admit", "datetime", lower="1900-01-01", upper="2022-12-31", edges=edges, missing=True)
    assert a.bins == 4 and a.labels()[:2] == ["[1900-01-01, 1900-12-31]", "[1901-01-01, 2015-12-31]"]
    d = a.to_dict()
    assert d["edges"] == list(edges) and Attribute.from_dict(d) == a
    codes, _ = a.encode(pd.Series(["1900-01-01", "2017-05-05", "2020-01-01"]))
    assert codes.tolist() == [0, 2, 3]
    even = Attribute("admit", "datetime", lower="2016-01-01", upper="2022-12-31", bins=7)
    assert "edges" not in even.to_dict()  # equal bins are written as lower, upper and bins, as before
    with pytest.raises(DomainError, match="increasing first days"):
        Attribute(
            "admit",
            "datetime",
            lower="1900-01-01",
            upper="2022-12-31",
            edges=("1900-01-01", "1950-06-15T12:00", "2023-01-01"),
        )
    with pytest.raises(DomainError, match="from its first date"):
        Attribute("admit", "datetime", lower="1900-01-01", upper="2022-12-31", edges=("1900-01-01", "2023-06-01"))


def test_held_years_far_apart_are_reported_as_a_bulk_and_a_far_group():
    """Noisy years: 1900 holds 480 rows, 2016-2022 hold ~500 each, σ = 20.  The bulk is 2016-2022 and 1900 a far
    group (both clear the strict threshold); years within FAR_YEARS of the bulk are part of it; a single far year
    that only clears the usual threshold is not reported (nor kept by the bounds)."""
    lower, upper = bound_bins("datetime")
    years = np.arange(1900, 2100)
    sigma = 20.0
    noisy = np.zeros(len(years))
    noisy[years == 1900] = 480
    noisy[(years >= 2016) & (years <= 2022)] = 500

    def far_years(noisy: np.ndarray) -> dict:  # as bounds_from_noisy reads them: the held years the bounds keep
        held = np.flatnonzero(noisy >= bin_threshold(sigma, len(noisy)))
        report: dict = {}
        _far_years(noisy, sigma, _held_kept(noisy, sigma, held, lower, upper, "datetime"), lower, upper, report)
        return report

    report = far_years(noisy)
    day = lambda y, m, d: (pd.Timestamp(y, m, d) - pd.Timestamp(1970, 1, 1)).days  # noqa: E731
    assert report["bulk"] == (day(2016, 1, 1), day(2022, 12, 31))
    assert report["far"] == [(day(1900, 1, 1), day(1900, 12, 31))]
    near = noisy.copy()
    near[years == 1900] = 0
    near[years == 2016 - FAR_YEARS] = 480  # within FAR_YEARS of the bulk: one range, nothing far
    report = far_years(near)
    assert "far" not in report
    heavy = noisy.copy()
    heavy[years == 1900] = 2_000  # "no date" on more rows than any real year: still the far group, not the bulk
    report = far_years(heavy)
    assert report["bulk"] == (day(2016, 1, 1), day(2022, 12, 31)) and len(report["far"]) == 1
    weak = noisy.copy()
    weak[years == 1900] = bin_threshold(sigma, len(weak)) + 1  # clears T, not the strict far threshold
    assert "far" not in far_years(weak)


def test_the_bins_go_over_the_bulk_with_one_for_the_far_group_and_one_for_the_gap():
    day = lambda s: float((pd.Timestamp(s) - pd.Timestamp(1970, 1, 1)).days)  # noqa: E731
    edges = _far_date_edges(
        day("1900-01-01"), day("2022-12-31"), (day("2016-01-01"), day("2022-12-31")),
        [(day("1900-01-01"), day("1900-12-31"))], 10, "day",
    )  # fmt: skip
    a = Attribute("admit", "datetime", lower="1900-01-01", upper="2022-12-31", edges=edges)
    outside = (day("2030-01-01"), day("2031-12-31"))
    assert _far_date_edges(day("1900-01-01"), day("2022-12-31"), outside, [outside], 10, "day") == ()
    labels = a.labels()
    # the far year's first and last day alone (where "no date" is written), the rest of it, then the gap
    assert labels[:4] == ["1900-01-01", "[1900-01-02, 1900-12-30]", "1900-12-31", "[1901-01-01, 2015-12-31]"]
    # eight bins over the 2016-2022 bulk: it gives the far year's ends the two bins they take, so a pair of this
    # column has as many cells as with one bin for the far year
    assert a.bins == 12 and all(label >= "[2016" for label in labels[4:])


@pytest.mark.parametrize("seed", [1, 2])
def test_a_release_keeps_the_far_date_in_its_year_and_the_others_in_their_years(tmp_path, seed):
    """4,000 rows at ε = 1, nothing declared, 1900-01-01 on 12%: the release puts about 12% of its rows in 1900 and
    nearly all the others in 2016-2022 (before: dates drawn over 2011-2022 for all of them).  Tolerances: a one-way
    cell's noise at this budget is a few tens of rows (σ ≈ 30): 4 points of the 12%, and the rows in the gap bin
    (1901-2015, fitted from a count near 0) under 3%."""
    df = _admissions(4_000, seed=seed)
    path = tmp_path / "admissions.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "out.csv"
    argv = ["release", "--data", str(path), "--epsilon", "1", "--seed", str(seed), "--out", str(out)]
    assert main([*argv, "--workspace", str(tmp_path / "ws")]) == 0
    dates = pd.to_datetime(pd.read_csv(out)["admit"], format="%Y-%m-%d")
    assert abs((dates.dt.year == 1900).mean() - 0.12) < 0.04
    assert (dates == "1900-01-01").mean() > 0.8 * (dates.dt.year == 1900).mean()  # as written, not 1900-08-21
    assert ((dates.dt.year > 1900) & (dates.dt.year < 2016)).mean() < 0.03
    real = pd.to_datetime(df["admit"]).dt.year
    inside = dates[dates.dt.year >= 2016].dt.year.value_counts(normalize=True).sort_index()
    expected = real[real >= 2016].value_counts(normalize=True).sort_index()
    assert 0.5 * (inside - expected).abs().sum() < 0.1  # the years of the real dates, not one twelve-year bin
