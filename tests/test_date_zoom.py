"""A date column's range found by years, then zoomed into by months (dpcore.discovery.locate_date_bounds): timestamps
of a few weeks or months -- orders, visits, sensor readings -- were drawn over whole years."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpcore.discovery import (
    BOUNDS_WEIGHT,
    DATE_BLOCK_YEARS,
    DATE_ZOOM_YEARS,
    REFINE_WEIGHT,
    TIME_SHARE,
    ValueTask,
    block_counts,
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
    ~310), the years' histogram is redrawn and averaged with the first look, whatever it located: the noise of one
    look at the whole ρ, as before the zoom (public: n and ρ)."""
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
        # with the first look's years to walk over: 2024 accounts for the rows after 2023, so one year still
        _, walked_hi, rep = zoom_months(
            days, lo, hi, 1 / 50.0**2, len(days), Randomness(seed), beyond=_first_look_years(days, 50.0, seed, lo, hi)
        )
        assert walked_hi == new_hi and rep["moved"] == [0, 1], seed
        _, _, rep = zoom_months(alone, lo, hi, 1 / 50.0**2, len(alone), Randomness(seed))
        false_alarms += sum(rep["widened"])
    assert false_alarms <= 2


def _first_look_years(days: np.ndarray, sigma: float, seed: int, lo: float, hi: float):
    """A first look at the years as :func:`locate_date_bounds` draws it (every year's count with noise σ), as the
    zoom reads it: the years before ``lo`` and after ``hi``, nearest first, and σ."""
    from dpcore.discovery import bin_counts, bound_bins

    years = bin_counts(days, "datetime", False)
    first = years + Randomness(1000 + seed).discrete_gaussian(sigma, len(years))
    lower_edges, upper_edges = bound_bins("datetime")
    a, b = int(np.searchsorted(lower_edges, lo)), int(np.searchsorted(upper_edges, hi))
    return first[:a][::-1], first[b + 1 :], sigma


def test_rows_far_beyond_the_years_walk_the_bound_back_over_the_first_looks_years():
    """Dates a customer joined, decaying back from 2024 (2,500 rows, mean four years): the first look holds the last
    four years and the months' look finds 38% of the rows before 2021 in its one count. A bound moved out a year left
    29% of the rows clipped onto 2020; it now walks back over the first look's years while the rows they leave
    unaccounted still reach BEYOND_Z times that estimate's sd (σ = 50 a count): over 20 draws 4-10 years, 3-14% of the
    rows clipped. Here every draw at least three years and at most 15% clipped, every draw under the one year's."""
    rng = np.random.default_rng(12)
    since = pd.Timestamp("2024-12-31") - pd.to_timedelta(
        np.minimum(rng.exponential(4 * 365, 2500), 30 * 365).astype(int), unit="D"
    )
    days = _days(pd.Series(since))
    lo, hi = float((pd.Timestamp("2021-01-01") - EPOCH).days), float((pd.Timestamp("2024-12-31") - EPOCH).days)
    for seed in range(20):
        new_lo, new_hi, rep = zoom_months(
            days, lo, hi, 1 / 50.0**2, len(days), Randomness(seed), beyond=_first_look_years(days, 50.0, seed, lo, hi)
        )
        one_lo, _, _ = zoom_months(days, lo, hi, 1 / 50.0**2, len(days), Randomness(seed))
        assert rep["widened"][0] and rep["moved"][0] >= 3 and new_hi == hi, seed
        assert (days < new_lo).mean() <= 0.15 and (days < new_lo).mean() < (days < one_lo).mean(), seed


def test_a_zoomed_date_column_spends_exactly_its_rho():
    """discover_values on a two-week column: the years' look (σ_a), the months' look (σ_b), the refinement over
    days and the time-of-day slots add up to the column's ρ -- Δ₂²/(2σ²) = 1/σ² each -- with ρ_a = ρ_b = half the
    bounds' share less the slots' TIME_SHARE of it (the column is written with a time)."""
    df = pd.DataFrame({"t": _two_weeks(20_000).strftime("%Y-%m-%d %H:%M")})
    task = ValueTask("t", "datetime", granularity="day", format="%Y-%m-%d %H:%M", need_lower=True, need_upper=True)
    found = discover_values(df, [task], 0.01, 1e-9, Randomness(3))
    b = found.report["bounds"]["t"]
    assert b["look"] == "months" and "refined" in b
    rho_bounds = 0.01 * BOUNDS_WEIGHT / (BOUNDS_WEIGHT + REFINE_WEIGHT)
    looks = rho_bounds * (1 - TIME_SHARE)
    assert 1 / b["sigma"] ** 2 == pytest.approx(looks / 2) and 1 / b["zoom"]["sigma"] ** 2 == pytest.approx(looks / 2)
    assert 1 / b["time"]["sigma"] ** 2 == pytest.approx(rho_bounds * TIME_SHARE)
    spent = sum(1 / part["sigma"] ** 2 for part in (b, b["zoom"], b["refined"], b["time"]))
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


def _hired(n: int = 800, seed: int = 4) -> np.ndarray:
    """Hire dates spread evenly over 2004-2023 (~40 a year on 800 rows)."""
    rng = np.random.default_rng(seed)
    return _days(pd.Series(pd.Timestamp("2004-01-01") + pd.to_timedelta(rng.integers(0, 20 * 365, n), unit="D")))


def _clipped(days: np.ndarray, lo: float, hi: float) -> float:
    return float(((days < lo) | (days > hi)).mean())


def test_dates_spread_thin_over_many_years_are_located_over_blocks_of_years():
    """800 hire dates over twenty years at σ ≈ 38 for the column (each look gets half: σ ≈ 54): no year holds more
    than ~50 against the years' threshold of ~240, and a run of w years reads its sum with noise σ·sqrt(w) -- the
    years' look located the column in 18 of 40 draws and clipped 12% of the rows on average when it did (up to 22%,
    the last years onto 2019). The second look counts blocks of DATE_BLOCK_YEARS years instead, each with one
    count's noise: 2004-2011 and 2012-2019 hold ~320 each against a threshold of ~210, and 2020-2027 (~160 rows)
    joins as a thin edge at 1.645σ in ~90% of draws. Over 20 draws: always located, the bounds on block edges, no
    row clipped in most draws and at most the last block's 20% otherwise (a binomial count of misses at p ≈ 0.15:
    8 or more has probability under 1%)."""
    days = _hired()
    rho = 1 / 38.0**2
    misses = 0
    for seed in range(20):
        lo, hi, how = locate_date_bounds(days, rho, len(days), Randomness(seed))
        assert lo is not None and how["look"] == "blocks" and how["block_years"] == DATE_BLOCK_YEARS, seed
        assert (_day(lo).year - 1900) % DATE_BLOCK_YEARS == 0 and (_day(hi).year - 1899) % DATE_BLOCK_YEARS == 0
        assert _day(lo) <= pd.Timestamp("2004-01-01") and _day(hi) >= pd.Timestamp("2019-12-31"), seed
        misses += _clipped(days, lo, hi) > 0
    assert misses <= 7


def test_birth_dates_over_decades_read_over_blocks_clip_fewer_rows_in_the_worst_draws():
    """Birth dates over seventy years (3,000 rows, σ ≈ 40 for the column): the peak year holds ~80 rows against the
    first look's ~250, so the second look counts blocks of eight years. Over 40 draws the years' averaged look (before)
    clipped a median 3.9%, a mean 8.3% and up to 42% of the rows (a run of sixteen years read as the range); over
    blocks a median 4.4%, a mean 5.0%, at most 13%. Here: every one of 10 draws located, none clipping over 15%."""
    rng = np.random.default_rng(2)
    born = pd.Timestamp("1970-01-01") + pd.to_timedelta((rng.normal(0, 15, 3000) * 365.25).round(), unit="D")
    days = _days(pd.Series(born))
    for seed in range(10):
        lo, hi, how = locate_date_bounds(days, 1 / 40.0**2, 3000, Randomness(seed))
        assert lo is not None and how["look"] == "blocks", seed
        assert _clipped(days, lo, hi) <= 0.15, seed


def test_dense_decades_keep_the_averaged_years():
    """The same birth dates on 40,000 rows: the peak year (~1,060 rows) stands out in the first look, so the second
    redraws the years and the two are averaged (the noise of one look at the whole ρ), not zoomed (more than
    DATE_ZOOM_YEARS years) and not read over blocks."""
    rng = np.random.default_rng(2)
    born = pd.Timestamp("1970-01-01") + pd.to_timedelta((rng.normal(0, 15, 40_000) * 365.25).round(), unit="D")
    days = _days(pd.Series(born))
    rho = 1 / 40.0**2
    for seed in range(5):
        lo, hi, how = locate_date_bounds(days, rho, len(days), Randomness(seed))
        assert lo is not None and how["look"] == "combined" and "zoom" not in how
        assert how["sigma"] == pytest.approx(bounds_sigma(rho))
        assert _day(hi).year - _day(lo).year + 1 > DATE_ZOOM_YEARS


def test_the_blocks_counts_move_by_at_most_sqrt2_between_neighbouring_columns():
    """Replace one date (inside a block, at a block's edge, a century away) or drop it: the blocks' counts differ in
    L2 by at most sqrt(2) -- each date falls in exactly one block (dates outside DATE_SEARCH in the outermost)."""
    rng = np.random.default_rng(6)
    days = _hired(300, 1)
    counts = block_counts(days)
    assert counts.sum() == len(days)
    edge = float((pd.Timestamp("2012-01-01") - EPOCH).days)
    others = [days[0], edge - 1.0, edge, float((pd.Timestamp("1850-06-01") - EPOCH).days), 60_000.0]
    for _ in range(300):
        y = days.copy()
        j = rng.integers(len(days))
        y[j] = others[rng.integers(len(others))]
        d = counts - block_counts(y)
        assert math.sqrt(float((d.astype(float) ** 2).sum())) <= math.sqrt(2) + 1e-12
        assert np.abs(block_counts(np.delete(days, j)) - counts).sum() == 1


def test_a_date_column_read_over_blocks_spends_exactly_its_rho():
    """discover_values on the hire dates (800 rows): the years' first look (σ_a) and the blocks' look (σ_b) add up to
    the column's ρ (1/σ² each), and the release warns that the range was found over blocks of years."""
    stamps = _day(0) + pd.to_timedelta(_hired(), unit="D")
    df = pd.DataFrame({"hired": pd.Series(stamps).dt.strftime("%Y-%m-%d")})
    task = ValueTask("hired", "datetime", granularity="day", format="%Y-%m-%d", need_lower=True, need_upper=True)
    found = discover_values(df, [task], 1 / 38.0**2, 1e-9, Randomness(1))
    b = found.report["bounds"]["hired"]
    assert b["look"] == "blocks" and b["located"] and "refined" not in b
    assert 1 / b["sigma"] ** 2 + 1 / b["first"]["sigma"] ** 2 == pytest.approx(1 / 38.0**2)
    texts = discovery_warnings(found.report, len(df))
    assert any("hired" in t and "blocks of 8 years" in t for t in texts), texts


def test_a_column_of_years_is_read_over_blocks_when_thin_and_never_zoomed_into_months():
    """Years (format %Y, granularity year) go through the same two looks, without the months: birth years over
    seventy years on 1,000 rows (σ ≈ 38) are located over blocks in 40 of 40 draws, 58-100% of the rows inside
    (median 80%), where one look of the years at the whole ρ located them in 8 of 40 (once with 20% inside); here
    every one of 5 draws, at least half the rows inside. Visit years 2019-2023 on 20,000 rows redraw and average the
    years (no months: a year column holds none) and keep exactly 2019-2023."""
    rng = np.random.default_rng(9)
    born = pd.DataFrame({"yob": np.clip(rng.normal(1970, 15, 1000).round(), 1925, 2006).astype(int).astype(str)})
    visits = pd.DataFrame({"visit_year": rng.integers(2019, 2024, 20_000).astype(str)})

    def task(name: str) -> ValueTask:
        return ValueTask(name, "datetime", granularity="year", format="%Y", need_lower=True, need_upper=True)

    for seed in range(5):
        found = discover_values(born, [task("yob")], 1 / 38.0**2, 1e-9, Randomness(seed))
        b = found.report["bounds"]["yob"]
        assert b["look"] == "blocks" and b["located"], seed
        lo, hi = _day(found.fields["yob"]["lower"]).year, _day(found.fields["yob"]["upper"]).year
        years = born["yob"].astype(int)
        assert ((years >= lo) & (years <= hi)).mean() >= 0.5, (seed, lo, hi)
        found = discover_values(visits, [task("visit_year")], 1 / 38.0**2, 1e-9, Randomness(seed))
        b = found.report["bounds"]["visit_year"]
        assert b["look"] == "years" and "zoom" not in b, seed
        assert (_day(found.fields["visit_year"]["lower"]).year, _day(found.fields["visit_year"]["upper"]).year) == (
            2019, 2023
        )  # fmt: skip
