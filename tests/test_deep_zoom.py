"""A narrow range whose rows sit in a sliver of it -- coordinates 45.44-45.6 located in [32, 64) and zoomed to
[44, 48) -- is zoomed into twice more (dpcore.discovery.deep_zoom) and its trimmed ends keep bins of their own near
the rows (dpcore.tabular._rim_edges).  Its bins were 0.4-1.2 degrees wide, and 60-75% of a 2,000-row table's
coordinates came back outside the real ones."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.discovery import (
    BOUNDS_WEIGHT,
    DEEP_KEPT,
    REFINE_WEIGHT,
    ValueTask,
    deep_zoom,
    discover_values,
    refine_bounds,
)
from dpcore.privacy.samplers import Randomness
from dpcore.tabular import _core_edges, _rim_edges


def _coordinates(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"lat": rng.normal(45.52, 0.05, n).round(5), "lon": rng.normal(-73.62, 0.06, n).round(5)})


def test_a_sliver_of_a_zoomed_range_is_zoomed_into_twice_more():
    """2,000 latitudes (sd 0.05) in [44, 48) at a refinement ρ of 2.4e-4 (each half: σ ≈ 92 rows, a threshold of
    ~340): the first half's draw finds the rows in [45, 46) -- two sub-bins of 0.5 -- and, where n less their noisy
    count leaves at most max(2% of n, 1σ·sqrt(2)) ≈ 130 rows to the rest (about 84% of draws), the second zooms in:
    the final core is at most 0.625 degrees (at most 0.375 in most draws), and the sliver widened by a sub-bin a
    side, [44.5, 46.5), is the one rim.  Otherwise the two halves are averaged and trimmed as one refinement."""
    values = np.sort(_coordinates(2000)["lat"].to_numpy())
    widths = []
    for seed in range(20):
        core, rims, reports = deep_zoom(values, (44.0, 48.0), False, 2.4e-4, 2000, Randomness(seed), (True, True))
        assert np.mean((values >= core[0]) & (values <= core[1])) >= 0.95  # a thin tail may go to the rim
        if len(reports) == 1:  # averaged: the noise of one draw at the whole ρ (a sliver it reads keeps its rim)
            assert reports[0]["sigma"] == pytest.approx(1 / np.sqrt(2.4e-4))
            assert rims == [] or "sliver" in reports[0]
            continue
        assert all(r["sigma"] == pytest.approx(1 / np.sqrt(1.2e-4)) for r in reports)
        assert rims == [(44.5, 46.5)] and 44.5 <= core[0] < core[1] <= 46.5
        widths.append(core[1] - core[0])
    assert len(widths) >= 14 and max(widths) <= 0.625 and sum(w <= 0.375 + 1e-9 for w in widths) >= 12, widths


def test_a_discovered_coordinate_spends_exactly_its_rho_and_takes_the_deep_zoom_only_from_a_sliver():
    """discover_values: the two looks and the two deep levels add up to the column's ρ (1/σ² each); a column whose
    zoom keeps more than DEEP_KEPT sub-bins takes one refinement at the whole refinement ρ, as before."""
    df = _coordinates(20_000, 1)
    task = ValueTask("lat", "numeric", need_lower=True, need_upper=True)
    found = discover_values(df[["lat"]], [task], 0.004, 1e-9, Randomness(2))
    b = found.report["bounds"]["lat"]
    assert b["look"] == "narrow" and b["zoom"]["kept"] <= DEEP_KEPT and len(b["deep"]) == 2  # a sliver: two draws
    spent = 1 / b["sigma"] ** 2 + 1 / b["zoom"]["sigma"] ** 2 + sum(1 / r["sigma"] ** 2 for r in b["deep"])
    assert 1 / b["sigma"] ** 2 == pytest.approx(0.004 * BOUNDS_WEIGHT / (BOUNDS_WEIGHT + REFINE_WEIGHT) / 2)
    assert spent == pytest.approx(0.004)
    fields = found.fields["lat"]
    assert fields["core"][1] - fields["core"][0] < 0.5 and fields["rims"]
    temps = pd.DataFrame({"t": np.random.default_rng(0).uniform(33.0, 63.0, 20_000).round(1)})
    wide = discover_values(temps, [ValueTask("t", "numeric", need_lower=True, need_upper=True)], 0.004, 1e-9,
                           Randomness(2))  # fmt: skip
    assert "deep" not in wide.report["bounds"]["t"] and "rims" not in wide.fields["t"]


def test_a_deep_zoom_refinement_moves_by_at_most_sqrt2_between_neighbouring_columns():
    """Each level is refine_bounds: replacing one value (inside the sliver, in a rim, far out) moves its sub-bins'
    counts by at most sqrt(2) in L2; the edges depend on the released core alone."""
    from dpcore.discovery import refine_counts, refine_edges

    values = np.sort(_coordinates(500, 3)["lat"].to_numpy())
    edges = refine_edges(44.0, 48.0, False)
    counts = refine_counts(values, edges)
    rng = np.random.default_rng(1)
    for other in (45.5, 44.1, 47.9, 12.0, 90.0):
        y = values.copy()
        y[rng.integers(len(y))] = other
        assert np.sqrt(((counts - refine_counts(y, edges)).astype(float) ** 2).sum()) <= np.sqrt(2) + 1e-12


def test_rims_give_each_trimmed_end_of_each_level_a_bin_of_its_own():
    edges = _rim_edges(32.0, 64.0, (45.375, 45.625), 10, False, [(44.0, 48.0), (45.0, 46.0)])
    assert edges[:3] == (32.0, 44.0, 45.0) and edges[-3:] == (46.0, 48.0, 64.0)
    inner = [e for e in edges if 45.375 <= e <= 45.625]
    assert len(inner) == 10 - 2 * 2 + 1 and len(edges) - 1 == 12  # as many bins as one core with two end bins
    assert _core_edges(32.0, 64.0, (45.375, 45.625), 10, False)[:2] == (32.0, 45.375)
    whole = _rim_edges(512.0, 2047.0, (1010.0, 1019.0), 10, True, [(960.0, 1151.0)])
    assert 960.0 in whole and 1152.0 in whole and all(float(e).is_integer() for e in whole)
    assert list(whole) == sorted(set(whole))


def test_coordinates_come_back_where_they_are_with_nothing_declared(tmp_path, monkeypatch):
    """2,000 rows of latitude, longitude, a borough and a price with nothing declared at ε = 1 (a seeded demo):
    the coordinates come back inside the real ones but for a few percent (60-75% outside before), their medians
    within 0.02 degrees."""
    import json

    from dpcore.cli import main

    df = _coordinates(2000, 7)
    rng = np.random.default_rng(7)
    df["borough"] = rng.choice(["Plateau", "Verdun", "Rosemont"], 2000)
    df["price"] = rng.lognormal(7.3, 0.4, 2000).round(0)
    df.to_csv(tmp_path / "geo.csv", index=False)
    monkeypatch.chdir(tmp_path)
    args = ["release", "--data", "geo.csv", "--epsilon", "1", "--seed", "0", "--out", "s.csv", "--card", "c.json"]
    assert main([*args, "--workspace", str(tmp_path / "ws"), "--quiet"]) == 0
    synth = pd.read_csv(tmp_path / "s.csv")
    for col in ("lat", "lon"):
        real, got = df[col], synth[col].dropna()
        outside = float(((got < real.min()) | (got > real.max())).mean())
        assert outside <= 0.10 and abs(got.median() - real.median()) <= 0.02, (col, outside, got.median())
    schema = {a["name"]: a for a in json.loads((tmp_path / "c.json").read_text())["data"]["schema"]}
    assert len(schema["lat"]["edges"]) <= 13  # no more bins than a zoomed column had


def test_refine_bounds_reports_how_many_sub_bins_it_kept():
    values = np.sort(_coordinates(2000)["lat"].to_numpy())
    lo, hi, report = refine_bounds(values, 32.0, 64.0, False, 1e-3, 2000, Randomness(0), narrow=True)
    assert (lo, hi) == (44.0, 48.0) and report["kept"] == 1  # the rows fill one sub-bin of four degrees


def test_a_sliver_is_read_off_n_less_its_sub_bins_where_the_empty_ones_noisy_sums_pass_the_cap():
    """2,000 longitudes in one sub-bin of [-128, -64) (seed 2's draw: the three empty sub-bins at the low end read
    85, 132 and 95 rows, so their own sums pass 1.645σ·sqrt(m) from the second one on, and a single empty sub-bin
    at the top is under the two a trim asks): the zoom kept all eight sub-bins.  n less the held sub-bin's noisy
    count (noise σ) says the rest hold next to nothing, so both ends go and the deep zoom follows."""
    values = np.sort(_coordinates(2000)["lon"].to_numpy())
    rho_b = 0.00035
    noise = Randomness(2)
    noise.discrete_gaussian(1 / np.sqrt(rho_b), 123)  # the first look's draw, as locate_bounds makes it
    lo, hi, report = refine_bounds(values, -128.0, -64.0, False, rho_b, 2000, noise, narrow=True)
    assert (lo, hi) == (-80.0, -72.0) and report["kept"] == 1
    # a spread column is not a sliver: 2,000 values over four sub-bins keep them all
    spread = np.sort(np.random.default_rng(0).uniform(-96.0, -64.0, 2000))
    lo, hi, report = refine_bounds(spread, -128.0, -64.0, False, rho_b, 2000, Randomness(2), narrow=True)
    assert report["kept"] >= 4 and lo <= -96.0


def test_the_averaged_counts_read_a_sliver_the_first_half_missed():
    """Where the first half's count of the sliver falls over 1σ short (seed 3's draw here: no zoom), the two halves
    averaged -- σ/sqrt(2) -- still find the rows in two sub-bins: the core is that sliver, with its widened rim,
    where the averaged refinement alone trimmed less."""
    values = np.sort(_coordinates(2000)["lat"].to_numpy())
    hits = 0
    for seed in range(40):
        core, rims, reports = deep_zoom(values, (44.0, 48.0), False, 2.4e-4, 2000, Randomness(seed), (True, True))
        if len(reports) == 1 and "sliver" in reports[0]:
            hits += 1
            assert core[1] - core[0] <= 1.0 and rims and rims[0][0] <= core[0] and core[1] <= rims[0][1]
            assert np.mean((values >= core[0]) & (values <= core[1])) >= 0.95
    assert hits >= 1  # about one draw in ten: the first half's sliver test fails in ~16%, the averaged one less


def test_a_narrow_range_the_first_look_missed_is_zoomed_where_its_refinement_finds_a_sliver():
    """Longitudes whose first look joined a neighbouring power of two on noise are not zoomed (the range the look
    read spans three octaves), and their averaged look locates [-128, -64): the refinement, in two halves, finds
    the rows in a sliver and the bins go over it, the bounds staying -- they came back spread over eight degrees.
    The spend is the column's ρ either way."""
    df = _coordinates(2000)[["lon"]]
    task = ValueTask("lon", "numeric", need_lower=True, need_upper=True)
    seen = cored = 0
    for seed in range(60):
        found = discover_values(df, [task], 0.0012, 1e-9, Randomness(seed))
        b = found.report["bounds"]["lon"]
        if b["look"] != "combined" or "deep" not in b:
            continue
        seen += 1
        f = found.fields["lon"]
        spent = 1 / b["sigma"] ** 2 + sum(1 / r["sigma"] ** 2 for r in b["deep"])
        assert spent == pytest.approx(0.0012)
        if "core" in f:
            cored += 1
            assert f["core"][1] - f["core"][0] <= 2.0 and f["lower"] <= -73.9 and f["upper"] >= -73.3
    assert seen >= 2 and cored >= 1  # a few draws in a hundred take this path (seeds 3 and 58 here)
