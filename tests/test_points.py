"""A whole-number column's frequent values get bins of their own on a large table (``need_points`` in
:mod:`dpcore.discovery`): 40 hours a week, held by 47% of Adult's rows, came back as draws over 38-44.  Accounting
against the closed forms, the singleton guarantee the category sets have, and the released bins.  Fixed seeds;
tolerances from the distributions."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from dpcore.discovery import (
    BOUNDS_WEIGHT,
    LARGE_TABLE_ROWS,
    POINTS_WEIGHT,
    DiscoveryPlan,
    ValueTask,
    discover_values,
    discovered_bins,
    discovery_cost,
    partition_threshold,
)
from dpcore.domain import Attribute
from dpcore.errors import BudgetError
from dpcore.privacy.samplers import Randomness
from dpcore.tabular import _ceiling_edges, _integer_edges, _isolate_points, prepare_table

from .tables import shop_orders


def _hours(n: int, seed: int = 0) -> pd.DataFrame:
    """Hours a week (47% at 40, the rest spread 1-99), a count with a one-row outlier value, and a category."""
    rng = np.random.default_rng(seed)
    hours = np.where(rng.random(n) < 0.47, 40, np.clip(np.round(rng.normal(40, 14, n)), 1, 99)).astype(int)
    visits = rng.poisson(2, n)
    visits[rng.integers(0, n)] = 77  # held by one row
    return pd.DataFrame({"hours": hours, "visits": visits, "sex": rng.choice(["F", "M"], n)})


def test_frequent_values_share_rho_and_delta_as_documented():
    """A whole-number column weighs BOUNDS_WEIGHT + POINTS_WEIGHT; its partition selection has σ = 1/sqrt(ρ_v·P/W)
    and shares δ_t with the category sets; every part adds up to ρ_v (zCDP composition)."""
    df = _hours(6000)
    tasks = [
        ValueTask("sex", "categorical", need_values=True),
        ValueTask("hours", "numeric", integer=True, need_lower=True, need_upper=True, need_points=True),
        ValueTask("visits", "numeric", integer=True, need_lower=True, need_upper=True, need_points=True),
    ]
    rho, delta_t = 0.05, 1e-9
    rep = discover_values(df, tasks, rho, delta_t, Randomness(0)).report
    # 6,000 rows at this ρ: the bounds are refined too, REFINE_WEIGHT more (dpcore.discovery.refine_decision)
    from dpcore.discovery import REFINE_WEIGHT

    total = 1 + 2 * (BOUNDS_WEIGHT + POINTS_WEIGHT + REFINE_WEIGHT)
    w = BOUNDS_WEIGHT + POINTS_WEIGHT + REFINE_WEIGHT
    assert rep["rho_per_column"]["hours"] == pytest.approx(rho * w / total)
    assert rep["categories"]["sigma"] == pytest.approx(1 / math.sqrt(rho / total))
    assert rep["points"]["sigma"] == pytest.approx(1 / math.sqrt(rho * POINTS_WEIGHT / total))
    assert rep["bounds"]["hours"]["sigma"] == pytest.approx(1 / math.sqrt(rho * BOUNDS_WEIGHT / total))
    assert rep["bounds"]["hours"]["refined"]["sigma"] == pytest.approx(1 / math.sqrt(rho * REFINE_WEIGHT / total))
    selected = 3  # sex and both whole-number columns go through partition selection: δ_t / 3 each
    assert rep["points"]["threshold"] == partition_threshold(rep["points"]["sigma"], delta_t / selected)
    assert rep["categories"]["threshold"] == partition_threshold(rep["categories"]["sigma"], delta_t / selected)
    spent = 1 / rep["categories"]["sigma"] ** 2 + 2 / rep["points"]["sigma"] ** 2
    spent += sum(2 / (2 * rep["bounds"][c]["sigma"] ** 2) for c in ("hours", "visits"))
    spent += sum(2 / (2 * rep["bounds"][c]["refined"]["sigma"] ** 2) for c in ("hours", "visits"))
    assert spent == pytest.approx(rho)
    with pytest.raises(BudgetError, match="numeric columns whose bounds are discovered"):
        ValueTask("x", "numeric", need_points=True)


def test_a_value_held_by_one_row_never_becomes_a_point():
    """Default share, ε = 1, δ = 1/n²: the value 77, held by one row, enters with probability at most δ_t / 3 per
    run (the partition selection of the category sets); over 100 runs P[any] ≤ 100·δ_t < 1e-5: zero entries.  40,
    held by ~47% of the rows, is always released."""
    df = _hours(6000)
    n = len(df)
    eps_d, delta_d = discovery_cost(1.0, 1.0 / n**2, 3)
    plan = DiscoveryPlan.make(eps_d, delta_d, 0)
    tasks = [
        ValueTask("hours", "numeric", integer=True, need_lower=True, need_upper=True, need_points=True),
        ValueTask("visits", "numeric", integer=True, need_lower=True, need_upper=True, need_points=True),
    ]
    runs = 100
    assert runs * plan.delta_threshold < 1e-5
    for seed in range(runs):
        found = discover_values(df, tasks, plan.rho_values, plan.delta_threshold, Randomness(seed)).fields
        assert 77.0 not in found["visits"]["points"]
        assert 40.0 in found["hours"]["points"]


def test_isolated_points_get_bins_of_their_own():
    edges = _integer_edges(0, 127, 20)
    out = _isolate_points(edges, (40.0, 38.0, 0.0, 127.0, 500.0))
    assert out[0] == 0 and out[-1] == 127 and list(out) == sorted(set(out))
    for p in (0.0, 38.0, 40.0):  # [p - 0.5, p + 0.5) or, at the lower bound, [p, p + 0.5)
        i = int(np.searchsorted(out, p, side="right")) - 1
        assert out[i] <= p < out[i + 1] and math.ceil(out[i]) == p and math.ceil(out[i + 1]) - 1 == p
    assert 126.5 in out  # the last bin [126.5, 127] holds 127 alone
    assert _isolate_points(edges, ()) == edges and _isolate_points(edges, (500.0,)) == edges


def test_neighbouring_one_decimal_points_share_an_edge_and_values_keep_a_few_decimals():
    """A diamond's depth (one decimal; frequent values 61.4 and 61.5): 61.4 + 0.05 and 61.5 - 0.05 were two edges
    (61.449999999999996 and 61.45), a bin of width 7e-15 that took a code and made decoding write twelve decimals
    (58.549987983831).  They are one edge now, and values drawn in the other bins keep three significant digits of
    the narrowest real bin."""
    points = (61.1, 61.4, 61.5, 61.6, 61.9, 62.0, 62.1, 62.3)
    out = _isolate_points((32.0, 57.6, 60.8, 64.0, 96.0), points, 0.05)
    assert min(np.diff(out)) >= 0.1 - 1e-9 and 61.45 in out and 61.55 in out
    attr = Attribute("depth", "numeric", edges=out, missing=True)
    # a sliver left by float error elsewhere does not set the decimals either
    sliver = Attribute("depth", "numeric", edges=(32.0, 57.6, 61.449999999999996, 61.45, 64.0), missing=True)
    for a in (attr, sliver):
        vals = a.decode(np.zeros(200, dtype=np.int64), numeric="values", rng=np.random.default_rng(0))
        assert all(len(f"{v}".partition(".")[2]) <= 3 for v in vals), vals[:3].tolist()


def test_on_a_large_table_the_frequent_value_comes_back_as_itself_and_a_small_table_is_unchanged():
    """6,000 rows at ε = 1 (roles confirmed, bounds and values discovered): hours keeps 40 in a bin of its own, so
    the released rows hold 40 in about the real share (47%; the one-way noise is under 1% of the rows, 5 points
    leave room for the fit) instead of draws over 38-44; below LARGE_TABLE_ROWS nothing is released for points and
    the bins are the plain whole-number ones."""
    from dpcore.release import release_table

    df = _hours(6000)
    roles = {"hours": "integer", "visits": "integer", "sex": "categorical"}
    prep = prepare_table(df, epsilon=1.0, delta=1 / 6000**2, noise=Randomness(1), ledger=None, roles=roles)
    assert prep.discovery_report["points"]["attributes"] == 2
    edges = prep.domain["hours"].edges
    i = int(np.searchsorted(edges, 40, side="right")) - 1
    assert (edges[i], edges[i + 1]) == (39.5, 40.5)
    rel, _ = release_table(df, "auto", 1.0, seed=3, ledger=None, roles=roles)
    share = float((rel.decoded_rows()["hours"] == 40).mean())
    assert share == pytest.approx(float((df["hours"] == 40).mean()), abs=0.05)
    small = df.iloc[: LARGE_TABLE_ROWS - 1]
    prep = prepare_table(small, epsilon=1.0, delta=1 / 6000**2, noise=Randomness(1), ledger=None, roles=roles)
    assert "points" not in prep.discovery_report
    attr = prep.domain["hours"]
    lo, hi, bins = attr.edges[0], attr.edges[-1], discovered_bins(len(small))
    assert attr.edges == (_ceiling_edges(lo, hi, bins) or _integer_edges(lo, hi, bins))


def _coded(n: int, seed: int = 0) -> pd.DataFrame:
    """fair's coded ages (17.5, 22, 27, 32, 37, 42) and a cost that is 60% exactly 0, the rest log-normal in cents
    (one cent value held by one row: 1234.56), and a category."""
    rng = np.random.default_rng(seed)
    age = rng.choice([17.5, 22.0, 27.0, 32.0, 37.0, 42.0], size=n, p=[0.12, 0.2, 0.25, 0.17, 0.12, 0.14])
    cost = np.where(rng.random(n) < 0.6, 0.0, np.round(rng.lognormal(5.0, 0.8, n), 2))
    cost[rng.integers(0, n)] = 1234.56
    return pd.DataFrame({"age": age, "cost": cost, "sex": rng.choice(["F", "M"], n)})


def test_a_real_columns_frequent_values_come_back_as_themselves():
    """6,000 rows at ε = 1, roles confirmed: the coded ages and the cost's 0 are released (each held by 12-60% of the
    rows, above τ ≈ 622), get bins [p - h, p + h) with h half a unit of their finest decimal (0.05 for 17.5), and the
    released rows hold exactly those values -- in about the real shares (the one-way noise is under 1% of the rows) --
    where before they were draws between them; 1234.56, held by one row, never becomes a point (probability at most
    δ_t per run).  The schema keeps the points across a JSON round trip."""
    from dpcore.domain import Attribute
    from dpcore.release import release_table

    df = _coded(6000)
    roles = {"age": "real", "cost": "real", "sex": "categorical"}
    prep = prepare_table(df, epsilon=1.0, delta=1 / 6000**2, noise=Randomness(2), ledger=None, roles=roles)
    age, cost = prep.domain["age"], prep.domain["cost"]
    assert set(age.points) == {17.5, 22.0, 27.0, 32.0, 37.0, 42.0}, age.points
    assert 0.0 in cost.points and 1234.56 not in cost.points
    i = int(np.searchsorted(age.edges, 17.5, side="right")) - 1
    assert age.edges[i + 1] == pytest.approx(17.55) and age.labels()[i] == "17.5"
    assert Attribute.from_dict(age.to_dict()) == age
    rel, _ = release_table(df, "auto", 1.0, seed=3, ledger=None, roles=roles)
    rows = rel.decoded_rows()
    on_points = rows["age"].isin(age.points).mean()
    assert on_points >= 0.95, on_points
    for v in (22.0, 27.0):
        assert float((rows["age"] == v).mean()) == pytest.approx(float((df["age"] == v).mean()), abs=0.05)
    assert float((rows["cost"] == 0.0).mean()) == pytest.approx(0.6, abs=0.05)
    for seed in range(20):
        found = discover_values(
            df, [ValueTask("cost", "numeric", need_lower=True, need_upper=True, need_points=True)], 0.02, 1e-9,
            Randomness(seed),
        ).fields  # fmt: skip
        assert 1234.56 not in found["cost"]["points"]


def test_under_5000_rows_a_real_column_with_few_values_releases_them():
    """3,000 rows, roles decided privately (nothing confirmed), ε = 2 (the roles' σ ≈ 4% of the rows; at ε = 1 on
    this three-column table it is 8%, and the rule stays off): a price column holding five values (~20% of the
    rows each) releases its frequent values when the noisy count of its distinct values -- released with its role,
    so the choice is free -- and that count's σ are at most FEW_VALUES_SHARE of the rows; the continuous column
    (3,000 distinct values, ~25σ above that share) never does.  Whenever the rule fires only true prices are
    released (a value held by one row enters with probability at most δ_t); each price enters with probability at
    least p = Φ((min count - τ) / σ) (the report's τ and σ), so the prices released over the fired runs are at
    least the binomial's 0.1% quantile; the rule fires in some of 6 seeds (the noisy count of 5 values falls under
    150 with probability ≈ Φ(145 / 118) ≈ 0.9)."""
    from scipy.stats import binom, norm

    from dpcore.tabular import FEW_VALUES_MODE, FEW_VALUES_SHARE, _few_values

    rng = np.random.default_rng(7)
    n = 3000
    prices = (9.99, 19.99, 49.5, 99.0, 149.0)
    df = pd.DataFrame({
        "price": rng.choice(prices, n),
        "score": np.round(rng.normal(50, 10, n), 4),
        "region": rng.choice(["N", "S", "E", "W"], n),
    })  # fmt: skip
    least = int(df["price"].value_counts().min())
    fired, released, p = 0, 0, 1.0
    for seed in range(6):
        prep = prepare_table(df, epsilon=2.0, delta=1 / n**2, noise=Randomness(seed), ledger=None)
        roles = {r.name: r for r in prep.roles}
        assert not _few_values(roles["score"], n) and not prep.domain["score"].points
        stats, share = roles["price"].stats, FEW_VALUES_SHARE * n
        sd, big_mode = stats["noise_sigma"], stats["mode"] >= FEW_VALUES_MODE * n
        expected = sd <= share and (stats["distinct"] <= share or (stats["distinct"] <= share + sd and big_mode))
        assert expected == _few_values(roles["price"], n)
        if _few_values(roles["price"], n):
            fired += 1
            points = prep.domain["price"].points
            assert set(points) <= set(prices), points
            released += len(points)
            rep = prep.discovery_report["points"]
            p = min(p, float(norm.sf((rep["threshold"] - least) / rep["sigma"])))
    assert fired >= 1
    assert released >= binom.ppf(0.001, 5 * fired, p), (released, fired, p)


def test_under_5000_rows_a_whole_number_column_with_few_values_comes_back_as_those_values(tmp_path):
    """A discount of 0, 10, 20 or 30% and a 1-5 star rating on a 4,000-row shop table, roles decided privately at
    ε = 1 (`dpcore release`, a seeded demo): the roles' noisy distinct counts and their σ (~3% of the rows) are under
    FEW_VALUES_SHARE, so the whole-number columns' frequent values are released (partition selection: a value held by
    one row enters with probability at most δ_t) and each gets a bin of its own. The discounts held by more rows than
    the selection's threshold (0, 10, 20; ~340 rows) come back as themselves, and 30 (5% of the rows) is drawn in its
    bin, 28-31: 6-10% of the rows off the table's values in seeds 0-4, against 29-35% before, when every discount was
    drawn over whole numbers from 0 to 31."""
    from dpcore.cli import main

    df = shop_orders(4000, 41, (0, 10, 20, 30), (0.6, 0.2, 0.15, 0.05), stars_and_price=True)
    df.to_csv(tmp_path / "shop.csv", index=False)
    args = [
        "release",
        "--data",
        str(tmp_path / "shop.csv"),
        "--epsilon",
        "1",
        "--seed",
        "0",
        "--card",
        str(tmp_path / "c.json"),
    ]
    assert main([*args, "--out", str(tmp_path / "synth.csv"), "--workspace", str(tmp_path / "ws"), "--quiet"]) == 0
    details = json.loads((tmp_path / "c.json").read_text())["data"]["schema_discovery"]["details"]
    assert details["points"]["attributes"] >= 2  # the whole-number columns with few values
    synth = pd.read_csv(tmp_path / "synth.csv")
    assert float((~synth["discount"].dropna().isin([0, 10, 20, 30])).mean()) <= 0.12
    assert synth["stars"].dropna().isin([1, 2, 3, 4, 5]).all()


def test_few_values_needs_a_private_role_whose_count_can_tell():
    """The rule reads only a privately decided role's released counts: a confirmed role or a count whose σ exceeds
    the share it is compared with never releases points on a small table; a whole-number column with few values
    does (since 2026-11-28), a whole-number column with many does not."""
    from dpcore.ingest import Role
    from dpcore.tabular import FEW_VALUES_MODE, FEW_VALUES_SHARE, _few_values

    n = 3000
    share = FEW_VALUES_SHARE * n
    stats = {"distinct": 5.0, "noise_sigma": share / 2}
    assert _few_values(Role("p", "numeric", source="dp", stats=stats), n)
    assert not _few_values(Role("p", "numeric", source="dp", stats={**stats, "noise_sigma": share * 2}), n)
    assert not _few_values(Role("p", "numeric", source="dp", stats={**stats, "distinct": share + 1}), n)
    # within σ over the share, a large mode says few values (a discount of five round values: 40% of the rows at 0);
    # a small one (a many-valued vital sign) does not, and nothing past σ over the share does
    big, small = FEW_VALUES_MODE * n, FEW_VALUES_MODE * n / 4
    assert _few_values(Role("p", "numeric", source="dp", stats={**stats, "distinct": share + 1, "mode": big}), n)
    assert not _few_values(Role("p", "numeric", source="dp", stats={**stats, "distinct": share + 1, "mode": small}), n)
    past = {**stats, "distinct": share + stats["noise_sigma"] + 1, "mode": big}
    assert not _few_values(Role("p", "numeric", source="dp", stats=past), n)
    assert _few_values(Role("p", "numeric", integer=True, source="dp", stats=stats), n)
    assert not _few_values(Role("p", "numeric", integer=True, source="dp", stats={**stats, "distinct": 400.0}), n)
    assert not _few_values(Role("p", "numeric", source="declared"), n)
