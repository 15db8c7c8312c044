"""A discovered range reached down to 0 keeps one bin for the reach (:func:`dpcore.tabular._reach_edges`), and
reaches only where the three octaves below it hold rows (:func:`dpcore.discovery._reach_held`).  Adults' ages 18-89
are located as [16, 127]; the bounds reached down to 0 in every draw (the rule for incomes from 0, whose low bins
are thin), and equal bins over [0, 127] put 0-10 and 11-21 in two bins no histogram bin vouched for: on
1,000-2,500-row tables at ε = 1 their noise came back as 2-8% of the people aged under 16.  Fixed seeds;
tolerances from the distributions."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpcore.tabular import _reach_edges

from .tables import whole_numbers_per_bin


@pytest.mark.parametrize("upper,start,bins,rounded", [(127, 16, 10, True), (127, 16, 10, False), (255, 32, 10, True),
                                                      (1023, 128, 20, True), (127, 16, 3, False)])  # fmt: skip
def test_the_reach_is_one_bin_and_the_located_range_keeps_the_others(upper, start, bins, rounded):
    edges = _reach_edges(0.0, float(upper), float(start), bins, True, rounded)
    assert edges is not None
    held = whole_numbers_per_bin(edges, 0, upper)
    assert all(held) and sum(len(h) for h in held) == upper + 1, edges  # every number in exactly one bin
    assert len(held) == bins  # as many bins as before: a pair's cells are capped
    assert held[0] == set(range(start)), edges  # 0 .. start - 1: the reach, one bin
    if rounded and upper == 127:
        assert 100 in {max(h) for h in held}, edges  # the round ceiling inside the located range stays


def test_a_real_numbered_reach_and_where_there_is_none():
    edges = _reach_edges(0.0, 128.0, 16.0, 10, False, False)
    assert edges is not None and edges[:2] == (0.0, 16.0) and len(edges) == 11
    assert np.allclose(np.diff(edges[1:]), (128.0 - 16.0) / 9)
    assert _reach_edges(0.0, 127.0, 0.0, 10, True, True) is None  # not reached: nothing below the located range
    assert _reach_edges(0.0, 127.0, 127.0, 10, True, True) is None
    assert _reach_edges(0.0, 127.0, 16.0, 2, True, True) is None  # too few bins for one of its own


def _adults(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    return pd.DataFrame(
        {
            "age": age,
            "sex": rng.choice(["F", "M"], n),
            "smoker": np.where(rng.random(n) < 0.1 + 0.004 * (age - 18), "yes", "no"),
            "income": rng.integers(0, 65_536, n),  # uniform from 0: 11% of the rows in [1024, 8192)
        }
    )


def test_adults_come_back_adults_and_incomes_from_0_keep_one_bin_for_the_reach(tmp_path, monkeypatch):
    """1,500 adults aged 18-89 with incomes uniform from 0, nothing declared, ε = 1 (seeded demos).  The age is
    located as [16, 127]; the three octaves below 16 hold no one, so the bounds reach down to 0 only where their
    noise alone reads over REACH_SHARE of [16, 31]'s rows (19% of the rows: p = Φ(-0.44 · 292 / (σ·sqrt 3)), about
    3% at this size; it reached in every draw before 2026-11-29, and 2-13% of such tables' rows came back aged
    under 16 where the fit could not tell the reach bin's noise from rows).  The incomes, uniform from 0, are
    located from a few thousand, and their three octaves below hold 7/8 of their lowest bin's rows: they reach
    down to 0 in most draws (in 4 of seeds 0-5 here), and the reach is one bin, [0, where the rows were located).
    Where the age did reach, the rows released under 16 are at most that one cell's noise, 3σ of its one-way
    measurement (σ from the run's report)."""
    from scipy.stats import binom, norm

    from dpcore.cli import main
    from dpcore.discovery import REACH_SHARE

    n = 1500
    _adults(n, 1).to_csv(tmp_path / "clinic.csv", index=False)
    monkeypatch.chdir(tmp_path)
    age_reached, income_reached, seeds, p = 0, 0, (0, 1, 2), 0.0
    for seed in seeds:
        args = ["release", "--data", "clinic.csv", "--epsilon", "1", "--seed", str(seed), "--out", "synth.csv"]
        args += ["--card", "card.json", "--report", "report.json", "--workspace", str(tmp_path / "ws"), "--quiet"]
        assert main(args) == 0
        card = json.loads((tmp_path / "card.json").read_text())["data"]
        schema = {a["name"]: a for a in card["schema"]}
        bounds = card["schema_discovery"]["details"]["bounds"]
        spread = bounds["age"]["sigma"] * np.sqrt(3)  # the three octaves' noise
        p = max(p, float(norm.sf(REACH_SHARE * 292 / spread)))
        income = schema["income"]
        if income["edges"][0] == 0 and bounds["income"].get("reached"):
            income_reached += 1
            assert income["edges"][1] == bounds["income"]["reached"][0], (income["edges"], bounds["income"])
        ages = pd.to_numeric(pd.read_csv(tmp_path / "synth.csv")["age"], errors="coerce").dropna()
        assert len(ages) >= 0.9 * n
        age = schema["age"]
        if age["edges"][0] != 0:  # not reached: no bin below the located range, and no one under it
            assert (ages >= age["edges"][0]).all()
            continue
        age_reached += 1
        start = bounds["age"]["reached"][0]
        assert age["edges"][1] == start == 16, (age["edges"], bounds["age"])  # one bin for the reach
        report = json.loads((tmp_path / "report.json").read_text())
        sigma = float(report["release_card"]["derived_public_parameters"]["sigma_one_way_counts"])
        assert (ages < start).sum() <= 3 * sigma, (seed, sigma, (ages < start).mean())
    assert age_reached <= binom.ppf(1 - 1e-4, len(seeds), p), (age_reached, p)
    assert income_reached >= 1, income_reached


def test_without_a_reach_or_with_a_declared_lower_bound_the_bins_are_as_before():
    from dpcore.ingest import Role
    from dpcore.tabular import _build_attribute, parse_schema

    role = Role("age", "numeric", integer=True)
    found = {"lower": 0.0, "upper": 127.0, "reached_from": 16.0}
    assert _build_attribute(role, None, found, "dp", 10).edges[:2] == (0.0, 16.0)
    # the refinement moved the bound back up, or no reach: discovery gives no reached_from
    assert _build_attribute(role, None, {"lower": 0.0, "upper": 127.0}, "dp", 10).edges[1] < 16
    # a declared lower bound of 0 is the user's: the range is binned as declared, no bin from the reach
    specs, _ = parse_schema({"attributes": [{"name": "age", "kind": "numeric", "lower": 0}]})
    assert _build_attribute(role, specs["age"], found, "dp", 10).edges[1] < 16
