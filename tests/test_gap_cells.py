"""A number's bins between its released frequent values, fitted as empty where measured under 2σ
(:func:`dpcore.mechanisms.decouple.gap_codes`, part of ``empty_special``).  A discount of 0, 5, 10, 15 or 20% on a
3,000-row table released 0, 5, 10 and 20 as points, and noise left 5% of the rows at 1-4, 6-9 and 11-19: the bins
between the points hold the values not released, each under the release's threshold.  Real SCIP where a mechanism
runs (off in the small fits, as in tests/test_empty_cells.py); fixed seeds; tolerances from the distributions."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom, norm

from dpcore.data import Dataset
from dpcore.domain import Attribute, Domain
from dpcore.errors import DomainError
from dpcore.mechanisms.base import Budget, RunContext
from dpcore.mechanisms.decouple import STRUCTURAL_Z, Gap, empty_chains, empty_notes, gap_codes
from dpcore.mechanisms.projection_adaptive import AdaptiveProjection, structural_zeros
from dpcore.workload import Workload

from .tables import shop_orders

FAST = {"scip": "off", "max_iterations": 60, "round_iterations": 10}

#: A discovered discount's bins (the orders table's at ε = 1): 0, 5, 10 and 20 released as points, 15 not.
EDGES = (0.0, 0.5, 3.0, 4.5, 5.5, 9.0, 9.5, 10.5, 12.0, 16.0, 19.0, 19.5, 20.5, 22.0, 25.0, 28.0, 31.0)
POINTS = (0.0, 5.0, 10.0, 20.0)
GAPS = (1, 2, 4, 5, 7, 8, 9, 10)  # between 0 and 20, holding no point; 12-15 lie past 20 (the end chain's)


def _discount(points=POINTS) -> Attribute:
    return Attribute("discount", "numeric", edges=EDGES, integer=True, points=points, source="dp")


def test_a_whole_numbers_point_is_the_only_whole_number_of_its_bin():
    assert _discount().points == POINTS
    with pytest.raises(DomainError, match="only whole number of its bin"):
        _discount((0.0, 15.0))  # [12, 16) holds 12-15
    with pytest.raises(DomainError, match="only whole number of its bin"):
        Attribute("x", "numeric", edges=(0.0, 1.0, 2.0), integer=True, points=(0.5,))
    round_trip = Domain.from_dict(Domain([_discount()]).to_dict()).attributes[0]
    assert round_trip.points == POINTS


def test_the_gaps_are_the_bins_between_two_points_that_hold_none():
    assert gap_codes(_discount()) == GAPS
    assert all(isinstance(g, Gap) for g in gap_codes(_discount()))
    assert gap_codes(_discount((10.0,))) == ()  # one point: nothing lies between two
    assert gap_codes(Attribute("x", "numeric", edges=EDGES, integer=True)) == ()  # no points: no gaps
    real = Attribute("price", "numeric", edges=(0.0, 4.995, 5.005, 9.0, 9.985, 9.995, 20.0), points=(5.0, 9.99))
    assert gap_codes(real) == (2, 3)
    chains = empty_chains(Domain([_discount()]))[0]
    assert set(GAPS) <= {c for c in chains if not isinstance(c, tuple)}


def test_a_gap_is_emptied_under_two_sigma_and_kept_over_it():
    sigma = 0.01
    ident = (np.arange(len(EDGES) - 1),)
    y = np.zeros(len(EDGES) - 1)
    y[[0, 3, 6, 11]] = [0.4, 0.15, 0.13, 0.12]  # the points
    y[8] = 0.15  # 15: not released, a real share between 10 and 20
    y[1], y[2], y[4] = STRUCTURAL_Z * sigma * 0.9, STRUCTURAL_Z * sigma * 1.1, -0.01
    zeros = structural_zeros({(0,): (y, sigma, ident)}, {0: gap_codes(_discount())})
    assert zeros == {0: {1, 4, 5, 7, 9, 10}}  # [3, 4.5) over 2σ stays, and so does 15's bin
    note = empty_notes(zeros, Domain([_discount()]))[0]
    assert "between the values released as frequent" in note and "power-of-two" not in note
    assert "discount: [1, 2], [6, 8], 9, 11, [16, 19), 19." in note


def _orders(n: int, seed: int) -> Dataset:
    """A discount on the grid 0/5/10/20 (all released as points), a category it follows a little, a flag."""
    rng = np.random.default_rng(seed)
    cat = rng.integers(0, 3, n)
    disc = np.where(rng.random(n) < 0.3 + 0.1 * cat, rng.choice([1, 2, 3], n), 0)  # codes 0, 3, 6, 11: the points
    disc = np.array([0, 3, 6, 11])[disc]
    flag = (rng.random(n) < 0.2).astype(int)
    attrs = [
        _discount(),
        Attribute("category", "categorical", ("a", "b", "c")),
        Attribute("flag", "categorical", ("n", "y")),
    ]
    return Dataset(np.column_stack([disc, cat, flag]), Domain(attrs), name="orders")


def test_a_discounts_gaps_come_back_empty_where_noise_put_rows_before():
    """3,000 rows at ε = 1: each of the 8 gap bins (empty in the data) is emptied unless its noisy one-way share
    reaches 2σ -- probability Φ(2) ≈ 0.977 -- so over 3 seeds at least binom.ppf(1e-4, 24, Φ(2)) are; the rows hold
    nothing in an emptied bin, and fewer rows in the gaps than the same runs without the rule."""
    budget = Budget(1.0, 1.0 / 3000**2)
    emptied, trials, on_rows, off_rows = 0, 0, 0, 0
    for seed in range(3):
        ds = _orders(3000, seed)
        wl = Workload(ds.domain, ((0,), (1,), (2,), (0, 1), (1, 2), (0, 2)))
        runs = []
        for on in (True, False):
            params = AdaptiveProjection.validate_params({"rounds": 2, "empty_special": on, **FAST})
            runs.append(AdaptiveProjection().run(ds, wl, budget, params, RunContext.seeded(seed)))
        on_run, off_run = runs
        in_gaps_on = np.isin(on_run.rows[:, 0], GAPS)
        note = next(n for n in on_run.notes if "fitted as empty" in n)
        listed = note.split("discount: ")[1].split(";")[0]
        labels = ds.domain.attributes[0].labels()
        named = re.findall(r"\[[^\])]*[\])]|[^,\s\[]+", listed.rstrip("."))  # "[1, 2]", "9", "[16, 19)"
        gone = [g for g in GAPS if labels[g] in named]
        trials += len(GAPS)
        emptied += len(gone)
        assert not np.isin(on_run.rows[:, 0], gone).any()
        on_rows += int(in_gaps_on.sum())
        off_rows += int(np.isin(off_run.rows[:, 0], GAPS).sum())
    assert emptied >= binom.ppf(1e-4, trials, norm.cdf(STRUCTURAL_Z)), (emptied, trials)
    assert on_rows < off_rows, (on_rows, off_rows)


def test_a_released_discount_keeps_its_points_on_the_card_and_its_rows_on_them(tmp_path):
    """The path a user runs (`dpcore release`, a seeded demo, roles decided privately): a 3,000-row orders table's
    discount (0/5/10/15/20) releases its frequent values as points, listed on the card's schema, and a gap bin the
    data leaves empty keeps rows only where its noisy share reached 2σ: over seeds 0-2 at most
    binom.ppf(1 - 1e-4, gaps, Φ(-2)) of them hold any (before the rule most did: 5% of the rows in the gaps)."""
    from dpcore.cli import main

    df = shop_orders(3000, 7, (0, 5, 10, 15, 20), (0.4, 0.15, 0.15, 0.15, 0.15))
    df.to_csv(tmp_path / "orders.csv", index=False)
    empty_gaps, holding = 0, 0
    for seed in range(3):
        args = ["release", "--data", str(tmp_path / "orders.csv"), "--epsilon", "1", "--seed", str(seed)]
        out, card = tmp_path / f"s{seed}.csv", tmp_path / f"c{seed}.json"
        assert (
            main([*args, "--out", str(out), "--card", str(card), "--workspace", str(tmp_path / "ws"), "--quiet"]) == 0
        )
        schema = {a["name"]: a for a in json.loads(card.read_text())["data"]["schema"]}
        points = schema["discount"].get("points") or []
        assert len(points) >= 2 and set(points) <= {0, 5, 10, 15, 20}, points
        synth = pd.read_csv(out)["discount"].dropna()
        edges = np.asarray(schema["discount"]["edges"])
        gap_bins = gap_codes(Attribute("d", "numeric", edges=tuple(edges), integer=True, points=tuple(points)))
        bins = np.clip(np.searchsorted(edges, synth.to_numpy(), side="right") - 1, 0, len(edges) - 2)
        for b in gap_bins:
            if not df["discount"].between(edges[b], edges[b + 1], inclusive="left").any():  # empty in the data
                empty_gaps += 1
                holding += int((bins == b).any())
    assert empty_gaps >= 3
    assert holding <= binom.ppf(1 - 1e-4, empty_gaps, norm.sf(STRUCTURAL_Z)), (holding, empty_gaps)
