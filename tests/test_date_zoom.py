"""A date column's range found by years, then zoomed into by months (dpcore.discovery.locate_date_bounds): timestamps
of a few weeks or months -- orders, visits, sensor readings -- were drawn over whole years."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpcore.discovery import (
    BOUNDS_WEIGHT,
    DATE_ZOOM_YEARS,
    REFINE_WEIGHT,
    ValueTask,
    bounds_sigma,
    discover_values,
    locate_date_bounds,
    month_counts,
    month_edges,
    months_resolvable,
    zoom_months,
)
from dpcore.privacy.samplers import Randomness
from dpcore.tabular import discovery_warnings

EPOCH = pd.Timestamp("1970-01-01")


def _days(stamps: pd.Series) -> np.ndarray:
    return np.sort(((stamps - EPOCH) / pd.Timedelta(days=1)).to_numpy(dtype=float).round())


def _day(d: float) -> pd.Timestamp:
    return EPOCH + pd.Timedelta(days=d)


def _two_weeks(n: int, seed: int = 0) -> pd.DatetimeIndex:
    rng = np.random.default_rng(seed)
    return pd.Timestamp("2025-01-01") + pd.to_timedelta(rng.integers(0, 14 * 24 * 60, n), unit="min")


def test_month_edges_are_the_first_days_of_the_months_over_the_range():
    def at(d: str) -> float:
        return float((pd.Timestamp(d) - EPOCH).days)

    edges = month_edges(at("2024-01-01"), at("2025-12-31"))
    assert len(edges) == 25 and [_day(e).strftime("%Y-%m-%d") for e in edges[[0, 1, 12, 24]]] == [
        "2024-01-01", "2024-02-01", "2025-01-01", "2026-01-01"
    ]  # fmt: skip
    assert list(month_edges(at("2025-01-17"), at("2025-01-17"))) == [at("2025-01-01"), at("2025-02-01")]


def test_two_weeks_of_readings_on_2000_rows_are_zoomed_to_their_month():
    """Readings every few minutes over 1-14 January 2025, 2,000 rows, the bounds ρ of a 7-column table at ε = 1
    (σ ≈ 47 for the whole column; each look gets half). The years' look holds 2025 (2,000 rows against a threshold of
    ~300) and joins a neighbouring year in about 5% of draws per side (ADJACENT_Z); the months' look always holds
    January and drops the months after it whose noisy run stays under ~1.645σ·sqrt(m) -- the whole run in 95% of
    draws, else the longest shorter one that passes -- keeping a thin edge month at 1.645σ (5%). Over 300 draws the
    range ended with January in 87%, February in 7%, later in 6%, and began on 2025-01-01 in all but one. So over
    20 draws: every real date always inside, the range ends with January in at least 15 (17.5 expected; fewer has
    probability ~3%). Before, it was the whole year 2025 or, with a year joined, two."""
    stamps = _two_weeks(2000)
    days = _days(pd.Series(stamps))
    rho = 1 / 47.0**2
    ends = []
    for seed in range(20):
        lo, hi, how = locate_date_bounds(days, rho, len(days), Randomness(seed))
        assert how["look"] == "months", seed
        assert lo <= days[0] and hi >= days[-1], (seed, _day(lo), _day(hi))
        ends.append(_day(hi) == pd.Timestamp("2025-01-31"))
    assert sum(ends) >= 15, ends


def test_dates_spread_thin_over_two_years_keep_both_years():
    """Events spread evenly over 2023-2024 on 1,500 rows (~62 a month; each look at σ = 80, a month's threshold ~315):
    no month clears the threshold, so no month is trimmed -- every month looks as empty as noise, and trimmed on that
    reading (the first version of the zoom) the runs clipped most of the rows (TVD 0.15 -> 0.85 on 600 rows). The
    years' look (at half the ρ) joins years beside the range chained on at 1σ, so a thin year it would have missed
    is kept (the price: an empty year kept in about one draw in six). In 3% of 300 draws noise lifted one month over
    the threshold and an end month went (3.6% of the rows clipped, never more). Over 20 draws: at most 2 trimmed,
    no more than 5% of the rows outside a range, which starts on the first of a month."""
    rng = np.random.default_rng(3)
    stamps = pd.Series(pd.Timestamp("2023-01-01") + pd.to_timedelta(rng.integers(0, 730 * 24, 1500), unit="h"))
    days = _days(stamps)
    rho = 2 / 80.0**2
    assert months_resolvable(rho, 1500)
    trimmed = 0
    for seed in range(20):
        lo, hi, how = locate_date_bounds(days, rho, 1500, Randomness(seed))
        assert lo is not None and how["look"] in ("months", "combined"), seed
        trimmed += any(how.get("zoom", {}).get("trimmed", ()))
        assert _day(lo).day == 1 and np.mean((days < lo) | (days > hi)) <= 0.05, seed
    assert trimmed <= 2


def test_small_tables_locate_dates_in_one_look_at_the_whole_rho():
    """Where a month holding a quarter of the rows would not clear the months' threshold (600 rows here: ~150 against
    ~310), the years' histogram takes the whole ρ in one look, as before the zoom (public: n and ρ)."""
    days = _days(pd.Series(_two_weeks(600)))
    rho = 2 / 82.0**2
    assert not months_resolvable(rho, 600) and months_resolvable(rho, 2000)
    lo, hi, how = locate_date_bounds(days, rho, 600, Randomness(0))
    assert how["look"] == "years" and how["sigma"] == pytest.approx(bounds_sigma(rho)) and "zoom" not in how


def test_rows_beyond_the_years_move_that_bound_out_a_year_instead_of_being_clipped():
    """The years' look (half the ρ) may miss a thin year beside the range: 300 rows in 2024 beside 1,000 in 2023, and
    only 2023 located. The months' look counts the dates after 2023 in one more count; at σ = 50 it reads ~300,
    past BEYOND_Z·σ ≈ 116 in every draw, so the upper bound moves to the end of 2024 and is not trimmed (before, those
    300 rows were clipped onto December). Where nothing lies beyond, a bound moves out on noise alone in about 1% of
    draws a side: at most 2 of 40 sides here. (At ~83 rows a month and σ = 50, noise lifts some month over the
    threshold in ~20% of draws; the kept months' density keeps January and February from being dropped then -- in
    0.75% of 400 draws they went.)"""
    rng = np.random.default_rng(8)
    stamps = pd.Timestamp("2023-01-01") + pd.to_timedelta(
        np.r_[rng.integers(0, 365, 1000), rng.integers(365, 731, 300)], unit="D"
    )
    days = _days(pd.Series(stamps))
    lo, hi = float((pd.Timestamp("2023-01-01") - EPOCH).days), float((pd.Timestamp("2023-12-31") - EPOCH).days)
    alone = days[days <= hi]
    false_alarms = 0
    for seed in range(20):
        new_lo, new_hi, rep = zoom_months(days, lo, hi, 1 / 50.0**2, len(days), Randomness(seed))
        assert _day(new_hi) == pd.Timestamp("2024-12-31") and rep["widened"][1] and not rep["trimmed"][1], seed
        assert new_lo <= days[0] + 31, seed  # January's first day, or on a rare draw February's
        _, _, rep = zoom_months(alone, lo, hi, 1 / 50.0**2, len(alone), Randomness(seed))
        false_alarms += sum(rep["widened"])
    assert false_alarms <= 2


def test_dates_over_decades_are_not_zoomed_and_keep_one_looks_noise():
    """Birth dates over seventy years (3,000 rows): the years' look finds more than DATE_ZOOM_YEARS years, so the second
    look redraws the years and the two are averaged -- the report's σ is that of one look at the whole ρ."""
    rng = np.random.default_rng(2)
    born = pd.Timestamp("1970-01-01") + pd.to_timedelta((rng.normal(0, 15, 3000) * 365.25).round(), unit="D")
    rho = 1 / 40.0**2
    for seed in range(5):
        lo, hi, how = locate_date_bounds(_days(pd.Series(born)), rho, 3000, Randomness(seed))
        assert lo is not None and how["look"] == "combined" and "zoom" not in how
        assert how["sigma"] == pytest.approx(bounds_sigma(rho))
        assert _day(hi).year - _day(lo).year + 1 > DATE_ZOOM_YEARS


def test_a_zoomed_date_column_spends_exactly_its_rho():
    """discover_values on a two-week column: the years' look (σ_a), the months' look (σ_b) and the refinement over
    days add up to the column's ρ -- Δ₂²/(2σ²) = 1/σ² each -- with ρ_a = ρ_b = half the bounds' share."""
    df = pd.DataFrame({"t": _two_weeks(20_000).strftime("%Y-%m-%d %H:%M")})
    task = ValueTask("t", "datetime", granularity="day", format="%Y-%m-%d %H:%M", need_lower=True, need_upper=True)
    found = discover_values(df, [task], 0.01, 1e-9, Randomness(3))
    b = found.report["bounds"]["t"]
    assert b["look"] == "months" and "refined" in b
    rho_bounds = 0.01 * BOUNDS_WEIGHT / (BOUNDS_WEIGHT + REFINE_WEIGHT)
    assert 1 / b["sigma"] ** 2 == pytest.approx(rho_bounds / 2) and 1 / b["zoom"]["sigma"] ** 2 == pytest.approx(
        rho_bounds / 2
    )
    spent = 1 / b["sigma"] ** 2 + 1 / b["zoom"]["sigma"] ** 2 + 1 / b["refined"]["sigma"] ** 2
    assert spent == pytest.approx(0.01)
    lo, hi = _day(found.fields["t"]["lower"]), _day(found.fields["t"]["upper"])
    assert lo <= pd.Timestamp("2025-01-01") and hi >= pd.Timestamp("2025-01-14") and hi <= pd.Timestamp("2025-01-31")


def test_the_months_counts_move_by_at_most_sqrt2_between_neighbouring_columns():
    """Replace one date (inside the range, in a month beside it, decades away) or drop it (missing): the months'
    counts, with the counts before and after the years, differ in L2 by at most sqrt(2) -- each date falls in
    exactly one of them."""
    rng = np.random.default_rng(5)
    days = _days(pd.Series(_two_weeks(300, 1)))
    lo, hi = float((pd.Timestamp("2024-01-01") - EPOCH).days), float((pd.Timestamp("2025-12-31") - EPOCH).days)
    edges = month_edges(lo, hi)
    counts = month_counts(days, edges)
    assert len(counts) == len(edges) + 1 and counts.sum() == len(days)
    others = [days[0], lo - 400.0, lo - 1.0, lo, hi, hi + 1.0, hi + 9000.0, lo + 45.0]
    for _ in range(300):
        y = days.copy()
        j = rng.integers(len(days))
        y[j] = others[rng.integers(len(others))]
        d = counts - month_counts(y, edges)
        assert math.sqrt(float((d.astype(float) ** 2).sum())) <= math.sqrt(2) + 1e-12
        assert np.abs(month_counts(np.delete(days, j), edges) - counts).sum() == 1


def test_a_date_range_is_refined_by_a_single_empty_sub_bin():
    """Dates over 1-18 June located as May-June (a thin edge month kept on noise): the refinement's eight sub-bins of
    ~7.6 days hold nothing in the last (23-30 June); a number's side moves only when it drops two sub-bins (a thin
    end value of a scale looks empty), a date's with one. Over 10 draws at this ρ (σ ≈ 14, the sub-bins' ~2,000
    rows far over it) the upper bound ends before 23 June in every draw, and never before the last real date."""
    from dpcore.discovery import refine_bounds

    rng = np.random.default_rng(2)
    stamps = pd.Series(pd.Timestamp("2025-06-01") + pd.to_timedelta(rng.integers(0, 18 * 24, 10_000), unit="h"))
    days = _days(stamps)
    lo, hi = float((pd.Timestamp("2025-05-01") - EPOCH).days), float((pd.Timestamp("2025-06-30") - EPOCH).days)
    for seed in range(10):
        _, new_hi, rep = refine_bounds(days, lo, hi, True, 1 / 14.0**2, len(days), Randomness(seed), min_trim=1)
        assert rep["trimmed"][1] and days[-1] <= new_hi < float((pd.Timestamp("2025-06-23") - EPOCH).days), seed
        _, old_hi, _ = refine_bounds(days, lo, hi, True, 1 / 14.0**2, len(days), Randomness(seed))
        assert old_hi == hi  # one empty sub-bin: a number's rule keeps it


def test_a_dates_trimmed_months_are_named_as_clipped_not_as_binned_where_the_rows_are():
    report = {"bounds": {"ordered": {"look": "months", "zoom": {"trimmed": [True, True]}}}}
    (text,) = discovery_warnings(report, 3000)
    assert text.startswith("Bounds narrowed") and "ordered" in text and "clipped" in text
