"""Private schema discovery: accounting against the formulas, partition selection's threshold and its
singleton guarantee, and the exponential-mechanism bounds."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from dpcore.discovery import (
    DEFAULT_SCHEMA_SHARE,
    ROLE_RHO_SHARE,
    THRESHOLD_DELTA_SHARE,
    DiscoveryPlan,
    ValueTask,
    date_grid,
    discover_values,
    discovery_cost,
    discrete_gaussian_tail,
    discrete_gaussian_tail_bound,
    dp_quantile,
    exact_bounds,
    exact_values,
    numeric_grid,
    partition_threshold,
    quantile_level,
    select_values,
    value_counts,
)
from dpcore.errors import BudgetError
from dpcore.privacy import zcdp_to_eps_cks
from dpcore.privacy.samplers import Randomness
from dpcore.tabular import prepare_table

from .tables import SINGLETON, kitchen_sink


# ------------------------------------------------------------------ the budget
def test_discovery_cost_is_the_share_or_nothing():
    assert discovery_cost(1.0, 1e-6, 0) == (0.0, 0.0)
    eps, delta = discovery_cost(2.0, 1e-6, 7)
    assert eps == pytest.approx(DEFAULT_SCHEMA_SHARE * 2.0) and delta == pytest.approx(DEFAULT_SCHEMA_SHARE * 1e-6)
    assert discovery_cost(1.0, 1e-6, 3, schema_share=0.5) == (0.5, 5e-7)
    with pytest.raises(BudgetError, match="δ > 0"):
        discovery_cost(1.0, 0.0, 3)
    with pytest.raises(BudgetError, match="share"):
        discovery_cost(1.0, 1e-6, 3, schema_share=1.0)


@pytest.mark.parametrize("eps, delta, roles", [(0.2, 1e-9, 5), (1.0, 1e-6, 0), (0.05, 1e-12, 400)])
def test_plan_splits_delta_and_rho_as_documented(eps, delta, roles):
    plan = DiscoveryPlan.make(eps, delta, roles)
    assert plan.delta_threshold == pytest.approx(THRESHOLD_DELTA_SHARE * delta)
    assert plan.delta_threshold + plan.delta_conversion == pytest.approx(delta)
    # ρ is the largest ρ whose [CKS20] conversion at δ_c is ε_d
    assert zcdp_to_eps_cks(plan.rho, plan.delta_conversion) == pytest.approx(eps, rel=1e-6)
    assert plan.epsilon_check() == pytest.approx(eps, rel=1e-6)
    assert plan.rho_roles == pytest.approx(ROLE_RHO_SHARE * plan.rho if roles else 0.0)
    assert plan.rho_roles + plan.rho_values == pytest.approx(plan.rho)
    rec = plan.spend()
    assert (rec.epsilon, rec.delta, rec.rho) == (eps, delta, None)


# ------------------------------------------------------------------ partition selection
@pytest.mark.parametrize("sigma", [0.7, 3.0, 25.0])
def test_tail_bound_is_an_upper_bound_and_close(sigma):
    for t in range(0, int(8 * sigma) + 2):
        exact = discrete_gaussian_tail(sigma, t)
        bound = discrete_gaussian_tail_bound(sigma, t)
        assert bound >= exact * (1 - 1e-9)
        if exact > 1e-200 and t > 0:
            # the bound adds at most one summand (the density at t) to the integral it stands on
            assert bound <= exact * (1 + 3.0 / sigma + 1.0) + 1e-300


@pytest.mark.parametrize("sigma, delta", [(1.0, 1e-3), (50.0, 1e-12), (300.0, 4e-11), (5.0, 0.2)])
def test_partition_threshold_is_the_smallest_safe_integer(sigma, delta):
    tau = partition_threshold(sigma, delta)
    assert discrete_gaussian_tail_bound(sigma, tau - 1) <= delta
    assert tau == 1 or discrete_gaussian_tail_bound(sigma, tau - 2) > delta


def _planted_categories(n: int = 3000, p: int = 4, seed: int = 0) -> pd.DataFrame:
    """p categorical columns; in each, one value held by a single row and two frequent ones."""
    rng = np.random.default_rng(seed)
    cols = {}
    for j in range(p):
        col = rng.choice(["common", "frequent"], n).astype(object)
        col[rng.integers(n)] = SINGLETON
        cols[f"c{j}"] = col
    return pd.DataFrame(cols)


def test_a_value_held_by_one_row_never_enters_a_discovered_domain_at_the_defaults():
    """Default share, ε = 1, δ = 1/n²: each singleton enters with probability at most δ_t/p_c.  Over R runs
    and p singletons the number of entries is Binomial(R·p, ≤ δ_t/p_c); P[X ≥ 1] ≤ R·δ_t < 1e-5, so the
    derived tolerance is zero entries."""
    df = _planted_categories()
    n, p = len(df), df.shape[1]
    eps_d, delta_d = discovery_cost(1.0, 1.0 / n**2, p)
    plan = DiscoveryPlan.make(eps_d, delta_d, 0)
    tasks = [ValueTask(c, "categorical", need_values=True) for c in df.columns]
    runs = 300
    assert runs * plan.delta_threshold < 1e-5  # the chance this test fails on a correct implementation
    entries, frequent = 0, 0
    for seed in range(runs):
        found = discover_values(df, tasks, plan.rho_values, plan.delta_threshold, Randomness(seed)).fields
        entries += sum(SINGLETON in found[c]["values"] for c in df.columns)
        frequent += sum(found[c]["values"] == ("common", "frequent") for c in df.columns)
    assert entries == 0
    assert frequent == runs * p  # ~1500 rows each, far above the threshold: always kept


def test_the_full_default_path_keeps_a_singleton_out_too():
    df = kitchen_sink(2000)
    for seed in range(5):
        prep = prepare_table(df, epsilon=1.0, delta=1.0 / len(df) ** 2, noise=Randomness(seed))
        out = prep.to_table(prep.dataset.codes, np.random.default_rng(seed))
        assert not (out.astype(str) == SINGLETON).any().any()
        assert SINGLETON not in str(prep.card_data)


def test_singleton_inclusion_rate_matches_the_discrete_gaussian_tail():
    """At a deliberately loose setting the singleton's inclusion frequency is P[Z ≥ τ - 1] (exact sum) and at
    most δ per value; tolerance: 5 binomial standard deviations."""
    sigma, delta_per = 2.0, 0.2
    tau = partition_threshold(sigma, delta_per)
    p_true = discrete_gaussian_tail(sigma, tau - 1)
    assert p_true <= delta_per
    col = pd.Series(["big"] * 50 + [SINGLETON])
    runs = 2000
    hits = sum(SINGLETON in select_values(col, sigma, tau, Randomness(s)) for s in range(runs))
    assert abs(hits - runs * p_true) <= 5 * math.sqrt(runs * p_true * (1 - p_true))
    # and the binomial bound the default test relies on: P[X ≥ 1] for X ~ Bin(R, δ) is 1 - (1-δ)^R ≤ R·δ
    assert binom.sf(0, 300, 1e-12) <= 300 * 1e-12


def test_value_counts_use_the_schema_labels():
    labels, counts = value_counts(pd.Series([1.0, 1, 2.0, None, 2, 2]))
    assert dict(zip(labels, counts.tolist())) == {"1": 2, "2": 3}
    labels, counts = value_counts(pd.Series([" a", "a ", "b", None]))
    assert dict(zip(labels, counts.tolist())) == {"a": 2, "b": 1}
    assert exact_values(pd.Series(["10", "9", "x", "9"])) == ("9", "10", "x")


# ------------------------------------------------------------------ bounds
def test_grids():
    g = numeric_grid()
    assert g.size == 2 * 14 * 900 + 1 and 0.0 in g and 17.0 in g and -0.001 in g and 99_900_000_000 in g
    assert 199_000 in g and 3.14 in g
    gi = numeric_grid(integer=True)
    assert np.all(gi == np.round(gi)) and 17 in gi and 1 in gi
    assert date_grid("day").size == 73_049 and date_grid("month").size == 2400 and date_grid("year").size == 200


def test_quantile_level_is_public_and_clipped():
    assert quantile_level(10.0, 1_000_000, 25_201) == 0.005
    assert quantile_level(0.001, 100, 25_201) == 0.25
    q = quantile_level(0.05, 20_000, 25_201)
    assert q == pytest.approx(2.5 * (math.log(25_201) + 5) / (0.05 * 20_000))


def test_the_exponential_mechanism_draws_bounds_with_the_stated_probabilities():
    """Empirical frequencies of dp_quantile on a tiny grid against exp(ε·u/(2Δ)) (chi-square, fixed seeds)."""
    values = np.sort(np.array([0.0] * 6 + [1, 2, 3, 5, 8]))
    grid = np.array([-1.0, 0.0, 1.0, 2.0, 5.0, 9.0])
    q, eps = 0.2, 1.5
    m = len(values)
    below = np.searchsorted(values, grid, "left")
    at = np.searchsorted(values, grid, "right")
    u = -np.maximum(0, np.maximum(below - q * m, q * m - at))
    p = np.exp(eps * u / (2 * (1 + q)))
    p /= p.sum()
    runs = 6000
    draws = np.array([dp_quantile(values, grid, q, "lower", eps, Randomness(s)) for s in range(runs)])
    obs = np.array([(draws == g).sum() for g in grid])
    chi2 = float(((obs - runs * p) ** 2 / (runs * p)).sum())
    assert chi2 < 25.0  # chi-square with 5 degrees of freedom: P[> 25] ≈ 1.4e-4
    assert grid[np.argmax(p)] == 0.0  # the point mass at 0 is the single best lower bound


def test_bound_utility_moves_by_at_most_one_plus_q_under_replace_one():
    rng = np.random.default_rng(3)
    grid = np.arange(-60.0, 100.0)
    for _ in range(200):
        x = rng.integers(-5, 40, 30).astype(float)
        if rng.random() < 0.3:  # the changed row's cell no longer parses: m changes too
            y = np.delete(x, rng.integers(30))
        else:
            y = x.copy()
            y[rng.integers(30)] = rng.integers(-50, 90)
        for side in ("lower", "upper"):
            u = [_utility(np.sort(v), grid, 0.1, side) for v in (x, y)]
            assert np.max(np.abs(u[0] - u[1])) <= 1.1 + 1e-9


def _utility(values, grid, q, side):
    m = len(values)
    below, at = np.searchsorted(values, grid, "left"), np.searchsorted(values, grid, "right")
    strict, loose = (below, at) if side == "lower" else (m - at, m - below)
    return -np.maximum(0, np.maximum(strict - q * m, q * m - loose))


def test_discovered_bounds_bracket_the_bulk_of_the_data():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"age": rng.integers(17, 91, 20_000), "score": rng.normal(50, 10, 20_000)})
    tasks = [
        ValueTask("age", "numeric", integer=True, need_lower=True, need_upper=True),
        ValueTask("score", "numeric", need_lower=True, need_upper=True),
    ]
    rho = 1.0
    found = discover_values(df, tasks, rho, 1e-9, Randomness(4))
    q = found.report["bounds"]["age"]["quantile_level"]
    assert q == 0.005
    age, score = found.fields["age"], found.fields["score"]
    assert 15 <= age["lower"] <= 18 and 88 <= age["upper"] <= 92 and age["lower"] == int(age["lower"])
    assert 20 <= score["lower"] <= 28 and 72 <= score["upper"] <= 80
    # accounting: 2 bounds per column at ε_q = sqrt(8ρ_col/2) spend exactly ρ_col each
    eps_q = found.report["bounds"]["age"]["epsilon_per_bound"]
    assert 2 * eps_q**2 / 8 == pytest.approx(rho / 2)


def test_value_sets_and_bounds_share_rho_as_documented():
    df = kitchen_sink(500)
    tasks = [
        ValueTask("sex", "categorical", need_values=True),
        ValueTask("country", "categorical", need_values=True),
        ValueTask("age", "numeric", integer=True, need_lower=True, need_upper=True),
        ValueTask("admitted", "datetime", granularity="day", format="%Y-%m-%d", need_upper=True, declared_lower=0.0),
    ]
    rho, delta_t = 0.4, 1e-8
    rep = discover_values(df, tasks, rho, delta_t, Randomness(0)).report
    rho_col = rho / 4
    assert rep["rho_per_column"] == pytest.approx(rho_col)
    cats = rep["categories"]
    assert cats["sigma"] == pytest.approx(1 / math.sqrt(rho_col))  # ρ_c = p_c/σ² = p_c·ρ_col
    assert cats["threshold"] == partition_threshold(cats["sigma"], delta_t / 2)
    spent = cats["attributes"] / cats["sigma"] ** 2
    spent += 2 * rep["bounds"]["age"]["epsilon_per_bound"] ** 2 / 8
    spent += 1 * rep["bounds"]["admitted"]["epsilon_per_bound"] ** 2 / 8
    assert spent == pytest.approx(rho)


def test_bounds_of_data_that_ends_abruptly_at_a_large_magnitude():
    """Uniform incomes up to 200,000: the top 0.5% spans 0.5% of the value, and a grid point must fall there."""
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"income": rng.integers(0, 200_000, 20_000)})
    task = ValueTask("income", "numeric", integer=True, need_lower=True, need_upper=True)
    for seed in range(5):
        f = discover_values(df, [task], 1.0, 1e-9, Randomness(seed)).fields["income"]
        assert 0 <= f["lower"] <= 2_000 and 197_000 <= f["upper"] <= 201_000, f


def test_date_bounds_are_dates_in_the_search_range():
    df = kitchen_sink(5000)
    task = ValueTask("admitted", "datetime", granularity="day", format="%Y-%m-%d", need_lower=True, need_upper=True)
    fields = discover_values(df, [task], 2.0, 1e-9, Randomness(1)).fields["admitted"]
    lo = pd.Timestamp("1970-01-01") + pd.Timedelta(days=fields["lower"])
    hi = pd.Timestamp("1970-01-01") + pd.Timedelta(days=fields["upper"])
    assert pd.Timestamp("2012-12-01") <= lo <= pd.Timestamp("2013-03-01")
    assert pd.Timestamp("2015-10-01") <= hi <= pd.Timestamp("2016-01-31")


def test_exact_bounds_are_min_and_max():
    df = pd.DataFrame({"x": [3.5, None, -2.0, 7.25]})
    assert exact_bounds(df, ValueTask("x", "numeric", need_lower=True)) == (-2.0, 7.25)
    assert exact_bounds(df, ValueTask("x", "numeric", integer=True, need_lower=True)) == (-2.0, 8.0)
