"""Numbers in a narrow range far from zero: the bounds' two looks (:func:`dpcore.discovery.locate_bounds`) and the
bins placed where the rows are (:func:`dpcore.tabular._core_edges`).  Body temperatures on a few thousand rows were
located as [32, 64) and came back spread over ten bins of 3.2 degrees (a quarter of the rows outside 35-39); air
pressure as [512, 2048].  Fixed seeds; tolerances from the distributions."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from dpcore.discovery import (
    FIRST_LOOK_SHARE,
    ValueTask,
    discover_values,
    histogram_bounds,
    locate_bounds,
    narrow_range,
)
from dpcore.privacy.samplers import Randomness
from dpcore.tabular import _core_edges


def _temperatures(n: int, seed: int = 0) -> np.ndarray:
    return np.clip(np.random.default_rng(seed).normal(36.8, 0.35, n), 35.5, 39.5).round(1)


def test_narrow_ranges_are_away_from_zero_within_three_octaves_and_not_short_scales():
    assert narrow_range(32.0, 64.0, False) and narrow_range(512.0, 2048.0, False)
    assert narrow_range(32.0, 127.0, True) and narrow_range(1024.0, 2047.0, True)
    # adults' ages located as [16, 127] span three octaves from 16 (127 + 1 = 8 · 16): the reach's ranges, which
    # stay coarse-binned by the averaged look whether the three octaves below hold rows (reached) or not
    assert not narrow_range(16.0, 127.0, True) and not narrow_range(-127.0, -16.0, True)
    assert narrow_range(-64.0, -16.0, False)  # mirrored
    assert not narrow_range(8.0, 64.0, False)  # three octaves: its low bins are not far from zero
    assert not narrow_range(0.0, 127.0, True) and not narrow_range(-4.0, 4.0, False)
    assert not narrow_range(1.0, 7.0, True) and not narrow_range(16.0, 31.0, True)  # short scales: fine already


def test_core_edges_put_the_bins_over_the_core_and_one_bin_at_each_end():
    edges = _core_edges(32.0, 64.0, (36.0, 40.0), 10, False)
    assert edges[0] == 32.0 and edges[-1] == 64.0 and len(edges) == 13
    assert np.allclose(np.diff(edges[1:-1]), 0.4)
    assert _core_edges(32.0, 64.0, (32.0, 40.0), 10, False)[0] == 32.0  # no bin below a core that starts at lower
    assert len(_core_edges(32.0, 64.0, (32.0, 40.0), 10, False)) == 12
    # whole numbers: every number of [lower, upper] in exactly one bin (the last bin closed), ten bins over the core
    for core in ((40.0, 79.0), (40.0, 45.0), (17.0, 126.0), (16.0, 100.0), (30.0, 127.0)):
        e = np.asarray(_core_edges(16.0, 127.0, core, 10, True))
        values = np.arange(16, 128)
        idx = np.searchsorted(e, values, side="right") - 1
        idx[values == e[-1]] = len(e) - 2
        assert (idx >= 0).all() and (idx <= len(e) - 2).all()
        held = [set(values[idx == i]) for i in range(len(e) - 1)]
        assert all(held), (core, e)  # no empty bin
        top = 127 if core[1] + 1 >= 127 else core[1]  # one number past the core is no bin of its own
        inside = [h for h in held if min(h) >= core[0] and max(h) <= top]
        assert sum(len(h) for h in inside) == int(top - core[0] + 1), (core, e)
        assert len(inside) == min(10, int(top - core[0] + 1)), (core, e)


def test_two_looks_read_like_one_where_no_zoom_is_asked():
    """A column that is not narrow gets the two looks averaged, whose noise is one look's at the whole ρ: on an empty
    column noise lifts some bin over its threshold in ~0.25% of draws (the first look's ~0.1%, whose range may be
    zoomed into, then the averaged look's; 10 of 4,000 measured, one look alone 3) -- at most 5 of 600 (Poisson of
    mean 1.5: 0.5%), where averaged noise left at σ·√2 against one look's threshold would alarm in ~14%; and on
    uniform incomes from 0 the empty bin past them joins at the adjacency rate of one look (~5%), the same for both
    within four standard deviations of the difference of two binomial rates."""
    draws = 600
    alarms = sum(locate_bounds(np.zeros(0), True, 1.0, 1000, Randomness(s))[0] is not None for s in range(draws))
    assert alarms <= 5, alarms
    x = np.random.default_rng(0).integers(0, 200_000, 7000).astype(float)
    rho, n = 4e-5, 300
    one = np.mean([histogram_bounds(x, "numeric", True, rho, Randomness(s))[1] > 262_143 for s in range(n)])
    two = np.mean([locate_bounds(x, True, rho, 7000, Randomness(10_000 + s))[1] > 262_143 for s in range(n)])
    p = (one + two) / 2
    assert abs(one - two) <= 4 * math.sqrt(2 * p * (1 - p) / n) + 1e-9, (one, two)
    assert 0.01 <= p <= 0.12, p


def test_a_narrow_column_spends_its_bounds_rho_in_two_looks():
    """Δ₂²/(2σ²) = 1/σ² each: the first look and the zoom add up to the bounds' ρ, FIRST_LOOK_SHARE of it first."""
    x = _temperatures(3000)
    rho = 0.004
    lo, hi, core, how = locate_bounds(x, False, rho, 3000, Randomness(1))
    assert how["look"] == "narrow"
    assert 1 / how["sigma"] ** 2 == pytest.approx(FIRST_LOOK_SHARE * rho)
    assert 1 / how["sigma"] ** 2 + 1 / how["zoom"]["sigma"] ** 2 == pytest.approx(rho)
    lo, hi, core, how = locate_bounds(x, False, rho, 300, Randomness(1))  # too few rows for the zoom: averaged
    assert how["look"] == "combined" and core is None and 1 / how["sigma"] ** 2 == pytest.approx(rho)
    assert narrow_range(lo, hi, False) and how.get("coarse") is True  # named coarse: the release warns


def test_body_temperatures_get_their_bins_where_the_rows_are():
    """3,000 temperatures around 36.8 at a column ρ of 0.004 (σ ≈ 22 rows a count in each look): located as
    [32, 64) (or [16, 64) when noise joins the bin below), never clipped -- every row stays inside the bounds --
    and the core, where the ten bins go, holds at least 99% of the rows in every one of 30 draws and is at most 8
    degrees wide in most: the zoom's sub-bins are 4 degrees wide (6 when noise joined [16, 32)), and the empty ones
    above the rows are trimmed unless their noisy sum passes 1.645σ·sqrt(m), which a noise spike in one of them does
    now and then (2 in these 30 draws), and a draw whose first look reaches three octaves down is not zoomed at all
    (~1%).  Were those 10% of draws, more than 9 of 30 would miss with probability 0.1%; before the zoom, every draw
    spread the bins over [32, 64).  Where the zoom kept one or two of its sub-bins ([36, 40)), it zooms in twice more
    (the deep zoom): the core may then leave a thin tail (up to 2% here, 35.5-36 or 37.5-37.9) to the bin of the
    level before it (its last rim), which with the core holds at least 99%."""
    x = _temperatures(3000)
    df = pd.DataFrame({"temp": x})
    task = ValueTask("temp", "numeric", need_lower=True, need_upper=True)
    widths = []
    for seed in range(30):
        found = discover_values(df, [task], 0.004, 1e-9, Randomness(seed))
        f = found.fields["temp"]
        assert f["lower"] <= x.min() and x.max() <= f["upper"], (seed, f)
        if found.report["bounds"]["temp"]["look"] != "narrow":  # noise joined [16, 32) and read [8, 16): ~1%
            continue
        core = f["core"]
        outer = f["rims"][-1] if f.get("rims") else core
        assert np.mean((x >= outer[0]) & (x <= outer[1])) >= 0.99, (seed, core, outer)
        assert np.mean((x >= core[0]) & (x <= core[1])) >= (0.97 if f.get("rims") else 0.99), (seed, core)
        widths.append(core[1] - core[0])
    assert sum(w <= 8.0 for w in widths) >= 30 - binom.ppf(0.999, 30, 0.1), widths


def test_a_trimmed_tail_keeps_a_bin_instead_of_being_clipped():
    """Ages 18-96 with a long right tail (7% over 60) on 7,000 rows at a small ρ: whatever the zoom trims, every
    row stays within the released bounds, and the rows past the core fall in the end bins -- over 20 draws."""
    rng = np.random.default_rng(0)
    age = np.clip(np.round(18 + rng.gamma(2.2, 8.0, 7000)), 18, 96)
    df = pd.DataFrame({"age": age})
    task = ValueTask("age", "numeric", integer=True, need_lower=True, need_upper=True)
    zoomed = 0
    for seed in range(20):
        found = discover_values(df, [task], 4e-5, 1e-9, Randomness(seed))
        f = found.fields["age"]
        assert np.mean((age >= f["lower"]) & (age <= f["upper"])) >= 0.95, (seed, f)
        if "core" in f:
            zoomed += 1
            edges = _core_edges(f["lower"], f["upper"], f["core"], 10, True)
            assert edges[0] == f["lower"] and edges[-1] == f["upper"]
    assert zoomed >= 1


def test_a_release_with_nothing_declared_brings_temperatures_back_near_the_real_ones(tmp_path, monkeypatch):
    """A 3,000-row vitals extract, nothing declared, ε = 1 (a seeded demo): the temperature's bins lie over the
    degrees that hold its rows (ten bins inside [32, 40]), and the released temperatures' deciles are within a
    degree of the real ones -- ten equal bins over [32, 64) had put a quarter of them outside 35-39; the air pressure,
    located in [512, 2048), comes back within 980-1050 (before: spread over ten bins of 154 hPa)."""
    from dpcore.cli import main

    rng = np.random.default_rng(3)
    n = 3000
    df = pd.DataFrame(
        {
            "temp_c": _temperatures(n, 3),
            "pressure_hpa": rng.normal(1013, 8, n).round(1),
            "sex": rng.choice(["F", "M"], n),
            "smoker": rng.choice(["no", "yes"], n, p=[0.8, 0.2]),
        }
    )
    df.to_csv(tmp_path / "vitals.csv", index=False)
    monkeypatch.chdir(tmp_path)
    args = ["release", "--data", "vitals.csv", "--epsilon", "1", "--seed", "0", "--out", "synth.csv"]
    assert main([*args, "--card", "card.json", "--workspace", str(tmp_path / "ws"), "--quiet"]) == 0
    schema = {a["name"]: a for a in json.loads((tmp_path / "card.json").read_text())["data"]["schema"]}
    edges = schema["temp_c"]["edges"]
    assert sum(32.0 <= a and b <= 40.0 for a, b in zip(edges, edges[1:])) >= 10, edges
    synth = pd.read_csv(tmp_path / "synth.csv")
    t = synth["temp_c"].dropna()
    q = np.linspace(0.1, 0.9, 9)
    assert np.abs(np.quantile(t, q) - np.quantile(df["temp_c"], q)).max() <= 1.0
    assert t.between(35.0, 39.0).mean() >= 0.95
    p = synth["pressure_hpa"].dropna()
    assert p.between(980, 1050).mean() >= 0.9, p.describe()


def test_the_zoom_counts_move_by_at_most_sqrt2_between_neighbours():
    """The zoom's sub-bin counts of neighbouring columns (one value replaced) differ by at most sqrt(2) in L2, and the
    first look's power-of-two counts too (the test of the bounds histogram): each look is a Gaussian mechanism at its
    own ρ.  Brute force over replaced values inside, beside and far outside a narrow range."""
    from dpcore.discovery import bin_counts, refine_counts, refine_edges

    rng = np.random.default_rng(5)
    edges = refine_edges(32.0, 64.0, False)
    x = _temperatures(200, 5)
    for _ in range(300):
        y = x.copy()
        y[rng.integers(len(x))] = rng.choice([36.6, 20.0, 1e6, 45.0, -3.0, 63.9])
        for a, b in ((refine_counts(x, edges), refine_counts(y, edges)),
                     (bin_counts(x, "numeric", False), bin_counts(y, "numeric", False))):  # fmt: skip
            assert np.sqrt(((a - b).astype(float) ** 2).sum()) <= math.sqrt(2) + 1e-12


def test_the_release_says_which_columns_got_their_bins_where_the_rows_are_and_clips_nothing_there():
    """The warnings read the discovery report: a zoomed column is named as binned where its rows are (its rare end
    values come back roughly), not as clipped; a column refined the old way still is."""
    from dpcore.tabular import discovery_warnings

    report = {
        "bounds": {
            "temp": {"look": "narrow", "zoom": {"trimmed": [False, True]}, "refined": {"trimmed": [True, False]}},
            "cost": {"look": "combined", "refined": {"trimmed": [False, True]}},
            "age": {"look": "narrow", "zoom": {"trimmed": [False, False]}},
            "pressure": {"look": "combined", "coarse": True},
        }
    }
    text = " ".join(discovery_warnings(report, 3000))
    zoom = next(w for w in discovery_warnings(report, 3000) if "where the rows are" in w)
    clip = next(w for w in discovery_warnings(report, 3000) if "clipped" in w)
    assert "temp" in zoom and "cost" not in zoom and "age" not in zoom
    assert "cost" in clip and "temp" not in clip
    assert "age" not in text
    coarse = next(w for w in discovery_warnings(report, 3000) if "found only as a power of two" in w)
    assert "pressure" in coarse and "temp" not in coarse and "Declare their bounds" in coarse


class _FixedNoise:
    """Noise given in advance (a test of what refine_bounds reads off a noisy count, not of the sampler)."""

    def __init__(self, values) -> None:
        self.values = np.asarray(values, dtype=np.int64)

    def discrete_gaussian(self, sigma, size):
        assert size == len(self.values)
        return self.values


def test_the_zoom_drops_the_longest_run_that_passes_not_the_first_to_fail():
    """Temperatures in [36, 40) and eight sub-bins of [32, 64) at σ = 88: the top sub-bin's noise (160) is over
    1.645σ = 145 on its own, but the six empty sub-bins together (170) are well under 1.645σ·sqrt(6) = 355.  The
    zoom trims all six above; the refinement's rule (stop at the first run over its cap) trims none."""
    from dpcore.discovery import refine_bounds

    x = np.full(3000, 37.0)
    noise = [0, 0, 10, -20, 10, -30, 20, 160]
    rho = 1 / 88.0**2
    lo, hi, rep = refine_bounds(x, 32.0, 64.0, False, rho, 3000, _FixedNoise(noise), narrow=True)
    assert (lo, hi) == (32.0, 40.0) and rep["trimmed"] == [False, True]  # one sub-bin below: too few to trim
    assert refine_bounds(x, 32.0, 64.0, False, rho, 3000, _FixedNoise(noise))[1] == 64.0


def test_frequent_values_keep_their_own_bins_inside_a_core():
    """From 5,000 rows a real column's frequent values are released too: with a core, each point inside it still gets
    its bin [p - h, p + h) (decoding to the value itself), the core's other bins stay between them, and the bounds'
    ends keep their end bins; a point outside the bounds is ignored."""
    from dpcore.tabular import _real_point_edges

    edges, points = _real_point_edges(32.0, 64.0, 10, (36.6, 36.8, 37.0, 70.0), False, core=(36.0, 40.0))
    assert points == (36.6, 36.8, 37.0)
    assert edges[0] == 32.0 and edges[1] == 36.0 and edges[-2] == 40.0 and edges[-1] == 64.0
    for p in points:
        i = int(np.searchsorted(edges, p, side="right")) - 1
        assert edges[i] == pytest.approx(p - 0.05) and edges[i + 1] == pytest.approx(p + 0.05), (p, edges)
    assert all(b > a for a, b in zip(edges, edges[1:]))
