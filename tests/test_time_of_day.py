"""A date column written with a time of day gets a time-of-day profile released under DP
(dpcore.discovery.time_profile): without one, a release drew each time uniformly over the day, and a call log
answered from 8:00 to 18:00 came back with 58% of its calls at night.  Real SCIP where a release runs; fixed seeds;
tolerances from the distributions."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from dpcore.discovery import (
    TIME_SHARE,
    TIME_Z,
    ValueTask,
    bounds_and_time,
    discover_values,
    time_profile,
    time_slots,
)
from dpcore.domain import TIME_SLOTS, Attribute, DomainError, parse_dates
from dpcore.privacy.samplers import Randomness

from .tables import seeded_release

FMT = "%Y-%m-%d %H:%M:%S"


def _calls(n: int, seed: int = 0) -> pd.Series:
    """Calls on 60 days of spring 2025, answered from 8:00 to 18:00 (most around 13:00)."""
    rng = np.random.default_rng(seed)
    hours = np.clip(rng.normal(13, 2.5, n), 8, 17.99)
    stamps = pd.Timestamp("2025-03-01") + pd.to_timedelta(rng.integers(0, 60, n), unit="D")
    return pd.Series((stamps + pd.to_timedelta(hours * 3600, unit="s")).strftime(FMT))


def test_each_date_falls_in_exactly_one_slot_so_neighbours_move_the_slots_by_at_most_sqrt2():
    days = parse_dates(_calls(400), FMT)
    counts = time_slots(days)
    assert len(counts) == TIME_SLOTS and counts.sum() == 400 and counts[0] == 0 and counts[1:9].sum() == 0
    midnight = (pd.Timestamp("2025-01-02") - pd.Timestamp("1970-01-01")) / pd.Timedelta(days=1)
    assert time_slots(np.array([midnight, midnight + 1 / 86_400, midnight + 0.5])).tolist()[:2] == [1, 1]
    rng = np.random.default_rng(1)
    others = [days[0], midnight, midnight + 0.99999, midnight + 3 / 24, np.nan]
    for _ in range(300):
        j = rng.integers(len(days))
        changed = days.copy()
        changed[j] = others[rng.integers(len(others))]
        d = (counts - time_slots(changed)).astype(float)
        assert math.sqrt(float((d**2).sum())) <= math.sqrt(2) + 1e-12
        assert np.abs(time_slots(np.delete(days, j)) - counts).sum() == 1


def _bounds_spent(b: dict) -> float:
    """The ρ a date column's bounds looks spent, from its report (1/σ² a look; an averaged look is one at the whole
    share)."""
    spent = 1 / b["sigma"] ** 2
    for second in (b.get("zoom"), b.get("first"), b.get("refined")):
        if second:
            spent += 1 / second["sigma"] ** 2
    return spent


def test_a_timestamp_column_spends_a_share_of_its_bounds_rho_on_its_profile():
    """discover_values on 3,000 calls: the years' looks and the time-of-day slots add up to the column's ρ (1/σ²
    each), the slots taking TIME_SHARE of the bounds' share; a date written without a time spends none on them."""
    df = pd.DataFrame({"call": _calls(3000)})
    task = ValueTask("call", "datetime", granularity="day", format=FMT, need_lower=True, need_upper=True)
    found = discover_values(df, [task], 0.004, 1e-9, Randomness(2))
    b = found.report["bounds"]["call"]
    refine = 1 / b["refined"]["sigma"] ** 2 if "refined" in b else 0.0  # the refinement over days has its own share
    assert 1 / b["time"]["sigma"] ** 2 == pytest.approx(TIME_SHARE * (0.004 - refine))
    assert _bounds_spent(b) + 1 / b["time"]["sigma"] ** 2 == pytest.approx(0.004)
    day = ValueTask("d", "datetime", granularity="day", format="%Y-%m-%d", need_lower=True, need_upper=True)
    assert bounds_and_time(day, 0.01) == (0.01, 0.0) and bounds_and_time(task, 0.01) == pytest.approx((0.008, 0.002))
    plain = discover_values(pd.DataFrame({"d": _calls(3000).str[:10]}), [day], 0.004, 1e-9, Randomness(2))
    assert "time" not in plain.report["bounds"]["d"] and _bounds_spent(plain.report["bounds"]["d"]) == pytest.approx(
        0.004
    )  # fmt: skip
    hours = found.fields["call"]["hours"]
    assert len(hours) == TIME_SLOTS and sum(hours[1:9]) == 0 and sum(hours[19:]) == 0


def test_the_profile_keeps_business_hours_and_is_dropped_when_the_times_spread_over_the_day():
    """At σ = 100 a slot is kept from TIME_Z·σ = 250 rows. 5,000 calls put 200-800 in each hour from 8 to 17: the
    profile keeps most of them and none of the night in each of 20 draws (noise alone lifts an empty slot over 2.5σ in
    0.6% of draws: ~0.1 of the fifteen night slots a draw; here at most one night slot in all 20). 3,000 times spread
    evenly over the day (125 an hour) leave rows under the cutoff in most slots: the slots left out hold far more
    than their noise allows, so no profile is released (times drawn uniformly, as before) in at least 18 of 20."""
    calls = parse_dates(_calls(5000), FMT)
    night = 0
    for seed in range(20):
        shares, report = time_profile(calls, 1 / 100.0**2, Randomness(seed))
        assert shares and report["kept"] >= 6, seed
        night += sum(1 for s in (*shares[1:9], *shares[19:]) if s > 0)
    assert night <= 1
    rng = np.random.default_rng(3)
    stamps = pd.Timestamp("2025-01-01") + pd.to_timedelta(rng.integers(0, 180 * 1440, 3000), unit="min")
    even = parse_dates(pd.Series(stamps.strftime(FMT)), FMT)
    empty = sum(not time_profile(even, 1 / 100.0**2, Randomness(seed))[0] for seed in range(20))
    assert empty >= 18
    assert TIME_Z == 2.5


def test_decoding_draws_the_time_of_day_from_the_profile():
    hours = [0.0] * TIME_SLOTS
    hours[0], hours[10], hours[15] = 0.2, 0.5, 0.3  # midnight exactly, 9:00-9:59, 14:00-14:59
    attr = Attribute("t", "datetime", lower="2025-03-01", upper="2025-04-29", format=FMT, hours=tuple(hours))
    codes = np.random.default_rng(0).integers(0, attr.size - 1, 4000)
    out = pd.to_datetime(attr.decode(codes, "values", rng=np.random.default_rng(1)))
    midnight = (out.dt.hour == 0) & (out.dt.minute == 0) & (out.dt.second == 0)
    assert set(out.dt.hour[~midnight]) == {9, 14} and abs(midnight.mean() - 0.2) < 4 * math.sqrt(0.2 * 0.8 / 4000)
    assert out.min() >= pd.Timestamp("2025-03-01") and out.max() < pd.Timestamp("2025-04-30")
    again = Attribute.from_dict(json.loads(json.dumps(attr.to_dict())))
    assert again == attr and again.hours == attr.hours
    plain = Attribute("t", "datetime", lower="2025-03-01", upper="2025-04-29", format=FMT)
    assert "hours" not in plain.to_dict() and plain.with_fields(format="%Y-%m-%d %H:%M").hours == ()
    assert attr.with_fields(format="%Y-%m-%d %H:%M").hours == ()
    for bad in ([1.0] * 24, [-1.0] + [1.0] * 24, [0.0] * 25):
        with pytest.raises(DomainError, match="hours"):
            Attribute("t", "datetime", lower="2025-03-01", upper="2025-04-29", format=FMT, hours=tuple(bad))
    with pytest.raises(DomainError, match="time of day"):
        Attribute("t", "datetime", lower="2025-03-01", upper="2025-04-29", format="%Y-%m-%d", hours=tuple(hours))


def test_a_call_log_comes_back_within_its_business_hours(tmp_path):
    """5,000 calls with nothing declared at ε = 1 (a seeded demo): before, 58% of the released calls fell outside
    8:00-18:00 (times drawn uniformly over the day); the card now carries the released profile and at least 95% of
    the released calls fall within those hours."""
    rng = np.random.default_rng(4)
    n = 5000
    df = pd.DataFrame({"call_start": _calls(n, 4), "agent": rng.choice([f"A{i}" for i in range(6)], n),
                       "resolved": rng.choice(["Yes", "No"], n, p=[0.8, 0.2])})  # fmt: skip
    card, synth = seeded_release(df, tmp_path)
    schema = {a["name"]: a for a in card["data"]["schema"]}
    assert len(schema["call_start"]["hours"]) == TIME_SLOTS
    out = pd.to_datetime(synth["call_start"])
    assert ((out.dt.hour >= 8) & (out.dt.hour < 18)).mean() >= 0.95
