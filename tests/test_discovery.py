"""Private schema discovery: accounting against the formulas, partition selection's threshold and its
singleton guarantee, and the bounds from a noisy histogram over public bins."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom, norm

from dpcore.discovery import (
    ADJACENT_Z,
    BIN_FALSE_POSITIVE,
    BOUNDS_WEIGHT,
    DEFAULT_SCHEMA_SHARE,
    POINTS_WEIGHT,
    REACH_SHARE,
    ROLE_RHO_SHARE,
    THRESHOLD_DELTA_SHARE,
    DiscoveryPlan,
    ValueTask,
    bin_index,
    bin_threshold,
    bound_bins,
    bounds_locatable,
    discover_values,
    discovery_cost,
    discrete_gaussian_tail,
    discrete_gaussian_tail_bound,
    exact_bounds,
    exact_values,
    histogram_bounds,
    partition_threshold,
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
def test_bins_are_public_and_whole_number_bins_hold_whole_numbers():
    lower, upper = bound_bins("numeric")
    assert len(lower) == 1 + 2 * 61 and lower[61] == upper[61] == 0.0  # the bin around zero reads as 0
    assert (lower[62], upper[62]) == (2.0**-10, 2.0**-9) and (lower[0], upper[0]) == (-(2.0**51), -(2.0**50))
    il, iu = bound_bins("numeric", integer=True)
    assert len(il) == 1 + 2 * 51 and list(zip(il[52:56], iu[52:56])) == [(1, 1), (2, 3), (4, 7), (8, 15)]
    assert (il[49], iu[49]) == (-3, -2) and (il[50], iu[50]) == (-1, -1)  # (-4, -2] holds -3, -2
    years_lo, years_hi = bound_bins("datetime")
    assert len(years_lo) == 200 and pd.Timestamp(0) + pd.Timedelta(days=years_hi[0]) == pd.Timestamp("1900-12-31")
    # every value lands in a bin whose edges hold it (integers: inclusive edges)
    for integer, values in (
        (False, np.array([-3.5, -1e-5, 0.0, 1e-5, 0.75, 3.0, 1e20, -1e20])),
        (True, np.arange(-9, 40)),
    ):
        idx = bin_index(values, "numeric", integer)
        lo, hi = bound_bins("numeric", integer)
        inside = (lo[idx] <= values) & (values <= hi[idx] + (0 if integer else 1e-12)) | (idx == len(lo) // 2)
        assert inside[np.abs(values) < 2.0**51].all()


def test_one_changed_row_moves_the_histogram_by_at_most_sqrt_2():
    """Replace-one neighbours, brute force: at most two bins change, by one each (a missing cell: one bin)."""
    rng = np.random.default_rng(3)
    for integer in (False, True):
        pool = np.concatenate([rng.normal(0, 50, 40), rng.integers(-100, 1000, 40), [0.0, 1.0, 1e9, np.nan]])
        if integer:
            pool = np.round(pool)
        for _ in range(200):
            x = rng.choice(pool, 30)
            y = x.copy()
            y[rng.integers(30)] = rng.choice(pool)
            h = [np.bincount(bin_index(v[np.isfinite(v)], "numeric", integer), minlength=200) for v in (x, y)]
            assert np.sqrt(((h[0] - h[1]) ** 2).sum()) <= math.sqrt(2) + 1e-12


def _bounds_spend(b: dict) -> float:
    """ρ a column's bounds spent, from its report: Δ₂²/(2σ²) = 1/σ² for each noisy count it drew -- the located
    histogram (one look, or two averaged: σ is then the pair's), the zoom of a narrow range's second look (its first
    look's σ is the report's), and the refinement."""
    return sum(1 / b[k]["sigma"] ** 2 for k in ("zoom", "refined") if k in b) + 1 / b["sigma"] ** 2


def test_the_histogram_spends_rho_column_and_its_threshold_is_the_stated_quantile():
    df = pd.DataFrame({"age": np.arange(1000) % 70 + 18})
    task = ValueTask("age", "numeric", integer=True, need_lower=True, need_upper=True)
    found = discover_values(df, [task], 0.02, 1e-9, Randomness(1))
    b = found.report["bounds"]["age"]
    # Δ₂² / (2σ²) per histogram: the locating one and the refinement (1,000 rows: refined) add up to the column's ρ
    assert _bounds_spend(b) == pytest.approx(0.02)
    from scipy.stats import norm

    assert b["threshold"] == pytest.approx(b["sigma"] * norm.isf(BIN_FALSE_POSITIVE / b["bins"]))
    assert bin_threshold(1.0, 100) == pytest.approx(norm.isf(0.001 / 100))


def test_discovered_bounds_hold_the_bulk_of_the_data():
    """Ages 18-96, a 1-10 score, counts 0-40 and a continuous score on 7,000 rows at a small ρ: integer bounds that
    hold at least 95% of the rows, over 20 draws."""
    rng = np.random.default_rng(0)
    n = 7000
    df = pd.DataFrame(
        {
            "age": np.clip(np.round(18 + rng.gamma(2.2, 8.0, n)), 18, 96),
            "score": rng.integers(1, 11, n),
            "priors": np.clip(rng.negative_binomial(1, 0.25, n), 0, 40),
            "ratio": rng.normal(50, 10, n),
            "income": rng.integers(0, 200_000, n),  # uniform from 0: the low power-of-two bins are each thin
        }
    )
    tasks = [ValueTask(c, "numeric", integer=c != "ratio", need_lower=True, need_upper=True) for c in df.columns]
    reached = 0
    for seed in range(20):
        found = discover_values(df, tasks, 5 * 4e-5, 1e-9, Randomness(seed)).fields  # ρ_col = 4e-5: σ ≈ 158
        for c in df.columns:
            lo, hi = found[c]["lower"], found[c]["upper"]
            held = df[c].between(lo, hi).mean()
            # ratio ~ N(50, 10): [64, 128) holds 8% (~570 rows) and joins the range when its noisy count reaches
            # 1.645σ ≈ 260 -- it misses with probability ≈ 2.4%, and then 8-12% of the rows are clipped; incomes
            # under 16,384 (8%) are clipped where the three octaves below it do not read as held (below)
            assert held >= (0.85 if c == "ratio" else 0.91 if c == "income" else 0.95), (c, lo, hi, held)
            if c not in ("ratio", "income"):
                assert lo == int(lo) and hi == int(hi) and lo >= 0 and hi <= 127, (c, lo, hi)
        # uniform from 0: reaches down to 0 where the three octaves below the located range read over REACH_SHARE
        # of its lowest bin (half what they would hold were the density to go on down: from 16,384, 502 rows
        # against 0.44 · 573, σ ≈ 283 for the difference -- about 81% of draws; from 8,192, where that bin joined
        # as a thin edge, 251 against 0.44 · 287: about 68%); [2^18, 2^19) is empty and joins the range when its
        # noisy count reaches 1.645σ (5% of draws); the power of two past the range, empty, is read as a thin tail
        # with a bin of its own when its noisy count reaches TAIL_Z·σ (16% of draws; the fit empties it again)
        assert found["income"]["lower"] in (0, 8192, 16_384)
        upper = found["income"]["upper"]
        assert upper in (262_143, 524_287) or (found["income"].get("tail") and upper in (524_287, 1_048_575))
        reached += found["income"]["lower"] == 0
    low = df["income"]
    sd = 158 * math.sqrt(3 + REACH_SHARE**2)  # the three octaves' noise and the lowest bin's, scaled
    p = min(
        float(norm.sf((REACH_SHARE * low.between(lo, 2 * lo - 1).sum() - low.between(lo / 8, lo - 1).sum()) / sd))
        for lo in (8192, 16_384)
    )
    assert reached >= binom.ppf(1e-4, 20, p), (reached, p)


def test_no_bounds_when_nothing_stands_out_and_few_false_alarms():
    """On 50 rows at σ ≈ 158 no bin clears the threshold: no bounds (the column is left out by the caller).  With
    no rows at all, noise alone lifts a bin over the threshold in about BIN_FALSE_POSITIVE of the draws."""
    lo, hi, rep = histogram_bounds(np.arange(50.0), "numeric", False, 4e-5, Randomness(2))
    assert lo is None and hi is None and rep["threshold"] > 50
    runs = 3000
    alarms = sum(histogram_bounds(np.zeros(0), "numeric", True, 1.0, Randomness(s))[0] is not None for s in range(runs))
    p = BIN_FALSE_POSITIVE  # a union bound over the bins: at most this
    assert alarms <= binom.ppf(1 - 1e-6, runs, p), alarms


def _spread_counts(n: int, rng) -> np.ndarray:
    """A population density on n rows: a quarter zeros, the rest spread evenly over the powers of two up to ~7,000
    (every power-of-two bin but zero's holds ~6% of the rows: none stands out on its own at small ρ)."""
    zeros = rng.random(n) < 0.25
    return np.where(zeros, 0.0, np.floor(2.0 ** rng.uniform(0, 12.8, n)))


def test_a_count_spread_over_many_powers_of_two_keeps_its_range():
    """anes96's population density (944 rows, 0 to 7,300) came back as [0, 1]: only the bin around zero cleared the
    threshold.  Runs of adjacent bins read together keep the bulk: over 40 draws at σ = 25 (ρ_col = 1/625, about
    what a ~1,000-row table's column gets at ε = 1), the median draw's bounds hold at least 75% of the rows (the
    single-bin rule: 25%, the zeros), and no draw reaches past the data's top bin."""
    rng = np.random.default_rng(1)
    values = _spread_counts(944, rng)
    held = []
    for seed in range(40):
        lo, hi, _ = histogram_bounds(values, "numeric", True, 1.0 / 25.0**2, Randomness(seed))
        assert lo == 0.0 and hi <= 8191, (seed, lo, hi)  # 7,131 lies in [4096, 8191]
        held.append(float(np.mean((values >= lo) & (values <= hi))))
    assert np.median(held) >= 0.75, held


def test_runs_of_bins_seldom_stretch_bounds_over_empty_bins():
    """Past a bulk in one bin, a run of 2, 4 or 8 empty bins passes WINDOW_Z·σ·sqrt(w) with probability at most
    3·Φ(-WINDOW_Z) a side (a union bound), and the range moves one bin per step, so the bounds go past the bin
    next to the bulk (the adjacent rule's 5% a side) with probability at most 2·3·Φ(-WINDOW_Z)·(1 + 2·5%).  And a
    column whose rows spread thinly, no bin over the threshold, is found by its runs."""
    from scipy.stats import norm

    from dpcore.discovery import WINDOW_Z, WINDOWS

    values = np.full(2000, 100.0)  # one bin, [64, 127]
    runs, wide = 3000, 0
    for s in range(runs):
        lo, hi, _ = histogram_bounds(values, "numeric", True, 1.0 / 50.0**2, Randomness(s))
        wide += lo < 32 or hi > 255  # beyond the adjacent bin on either side
    p = 2 * len(WINDOWS) * norm.sf(WINDOW_Z) * (1 + 2 * norm.sf(1.645))
    assert wide <= binom.ppf(1 - 1e-6, runs, p), wide
    thin = np.repeat(2.0 ** np.arange(4, 12), 60)  # 480 rows, 60 in each of 8 bins; σ = 25: the threshold ≈ 106
    found = [histogram_bounds(thin, "numeric", True, 1.0 / 25.0**2, Randomness(s)) for s in range(20)]
    assert all(f[2]["threshold"] > 60 for f in found)
    assert sum(f[0] is not None for f in found) >= 15
    assert all(np.mean((thin >= f[0]) & (thin <= f[1])) >= 0.5 for f in found if f[0] is not None)


def test_a_lone_bin_far_from_the_rows_needs_stronger_evidence():
    """A held bin more than FAR_OCTAVES powers of two beyond the bulk must clear the stricter FAR_FALSE_POSITIVE
    threshold (≈ 5.2σ): a 4.5σ spike at 2^20 is read as noise, a 6σ cluster there is kept, a 4.5σ bin two octaves
    up is kept, and so are both halves of a column centred on zero.  On 7,000 rows of hours a week (σ ≈ 89, the
    budget a 15-column table gets at ε = 1) 3,000 draws never reach past 255 (before: 2 reached 2^47)."""
    from scipy.stats import norm

    from dpcore.discovery import FAR_FALSE_POSITIVE, _held_kept

    lower, upper = bound_bins("numeric", True)
    sigma, bins = 10.0, len(lower)
    at = {int(v): i for i, v in enumerate(lower)}  # whole-number grid: the bin starting at v
    threshold = bin_threshold(sigma, bins)
    strict = sigma * norm.isf(FAR_FALSE_POSITIVE / bins)
    assert threshold < 4.5 * sigma < strict < 6 * sigma

    def located(noisy):
        return _outermost(_held_kept(noisy, sigma, np.flatnonzero(noisy >= threshold), lower, upper, "numeric"))

    noisy = np.zeros(bins)
    noisy[at[32]] = 500.0  # the bulk: [32, 63]
    noisy[at[2**20]] = 4.5 * sigma  # a lone spike far out
    assert located(noisy) == (at[32], at[32])
    noisy[at[2**20]] = 6 * sigma  # a distant cluster with enough rows
    assert located(noisy) == (at[32], at[2**20])
    noisy[at[2**20]] = 0.0
    noisy[at[128]] = 4.5 * sigma  # two octaves up: not far
    assert located(noisy) == (at[32], at[128])
    real_lower, real_upper = bound_bins("numeric", False)
    centred = np.zeros(len(real_lower))
    for v, c in ((-4.0, 100), (-2.0, 600), (-1.0, 600), (0.5, 600), (1.0, 650), (2.0, 100)):
        centred[int(np.flatnonzero(real_lower == v)[0])] = c
    held = np.flatnonzero(centred >= bin_threshold(sigma, len(real_lower)))
    first, last = _outermost(_held_kept(centred, sigma, held, real_lower, real_upper, "numeric"))
    assert real_lower[first] == -4.0 and real_upper[last] == 4.0  # both halves
    hours = np.clip(np.round(np.random.default_rng(0).normal(40, 12, 7000)), 1, 99)
    his = [histogram_bounds(hours, "numeric", True, 1 / 89.39**2, Randomness(s))[1] for s in range(3000)]
    assert max(his) <= 255, max(his)


def test_bounds_are_expected_locatable_by_the_public_rule():
    assert bounds_locatable("numeric", True, None, 4e-5, 2, 7000)
    assert not bounds_locatable("numeric", True, None, 4e-5, 2, 1000)
    assert bounds_locatable("numeric", True, None, 4e-5, 0, 10)  # nothing to locate


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
    w = BOUNDS_WEIGHT  # a numeric or date column's weight against a category's 1 (and REFINE_WEIGHT to refine)
    from dpcore.discovery import REFINE_WEIGHT as r

    rho_col = rho / (2 + 2 * w + 2 * r)
    assert rep["rho_per_column"] == pytest.approx({"sex": rho_col, "country": rho_col, "age": (w + r) * rho_col,
                                                   "admitted": (w + r) * rho_col})  # fmt: skip
    cats = rep["categories"]
    assert cats["sigma"] == pytest.approx(1 / math.sqrt(rho_col))  # ρ_c = p_c/σ² = p_c·ρ_col
    # age's and the date's bounds are refined on 500 rows at this ρ (their sub-bins' threshold is under n/8): each
    # weighs REFINE_WEIGHT more and spends that part on a second histogram
    from dpcore.discovery import REFINE_WEIGHT

    assert rep["bounds"]["age"]["sigma"] == pytest.approx(1 / math.sqrt(w * rho_col))
    # the admission dates lie within a few years: their bounds' ρ goes half on the years, half on the months over them
    adm = rep["bounds"]["admitted"]
    assert adm["look"] == "months"
    assert 1 / adm["sigma"] ** 2 == pytest.approx(w * rho_col / 2) == 1 / adm["zoom"]["sigma"] ** 2
    for c in ("age", "admitted"):
        assert rep["bounds"][c]["refined"]["sigma"] == pytest.approx(1 / math.sqrt(REFINE_WEIGHT * rho_col))
    assert cats["threshold"] == partition_threshold(cats["sigma"], delta_t / 2)
    spent = cats["attributes"] / cats["sigma"] ** 2
    spent += sum(_bounds_spend(rep["bounds"][c]) for c in ("age", "admitted"))
    assert spent == pytest.approx(rho)


def test_date_bounds_are_whole_years_around_the_data():
    df = kitchen_sink(5000)
    task = ValueTask("admitted", "datetime", granularity="day", format="%Y-%m-%d", need_lower=True, need_upper=True)
    fields = discover_values(df, [task], 2.0, 1e-9, Randomness(1)).fields["admitted"]
    lo = pd.Timestamp("1970-01-01") + pd.Timedelta(days=fields["lower"])
    hi = pd.Timestamp("1970-01-01") + pd.Timedelta(days=fields["upper"])
    assert lo in (pd.Timestamp("2012-01-01"), pd.Timestamp("2013-01-01")), lo
    assert hi in (pd.Timestamp("2015-12-31"), pd.Timestamp("2016-12-31")), hi


def test_a_date_range_inside_one_year_is_zoomed_to_the_month_that_holds_rows():
    """Interviews held in March 2024 (10,000 rows): the years' look locates 2024 (a year beside it may be chained on
    at 1σ), the months' look over those years holds March alone and drops the months around it (their noisy sums,
    or 10,000 less March's, read under 2% of the rows), so the bounds are March -- or a month more on a side where
    a noisy edge month reaches 1.645σ -- and every real date stays inside them; the refinement over days then finds
    nothing empty inside March.  Without the zoom the bins spread the dates over whole years; with the refinement
    alone (8 sub-bins of the year) they ran from January to April."""
    rng = np.random.default_rng(4)
    days = pd.Timestamp("2024-03-01") + pd.to_timedelta(rng.integers(0, 31, 10_000), unit="D")
    df = pd.DataFrame({"interviewed": days.strftime("%Y-%m-%d")})
    task = ValueTask("interviewed", "datetime", granularity="day", format="%Y-%m-%d", need_lower=True, need_upper=True)
    for seed in range(5):
        found = discover_values(df, [task], 1.0, 1e-9, Randomness(seed))
        assert found.report["bounds"]["interviewed"]["look"] == "months"
        lo = pd.Timestamp("1970-01-01") + pd.Timedelta(days=found.fields["interviewed"]["lower"])
        hi = pd.Timestamp("1970-01-01") + pd.Timedelta(days=found.fields["interviewed"]["upper"])
        assert pd.Timestamp("2024-02-01") <= lo <= pd.Timestamp("2024-03-01"), (seed, lo)
        assert pd.Timestamp("2024-03-31") <= hi <= pd.Timestamp("2024-04-30"), (seed, hi)


def test_exact_bounds_are_min_and_max():
    df = pd.DataFrame({"x": [3.5, None, -2.0, 7.25]})
    assert exact_bounds(df, ValueTask("x", "numeric", need_lower=True)) == (-2.0, 7.25)
    assert exact_bounds(df, ValueTask("x", "numeric", integer=True, need_lower=True)) == (-2.0, 8.0)


# ------------------------------------------------------------------ the joint split (issue 22)
@pytest.mark.parametrize("eps, delta, share", [(1.0, 1 / 7214**2, 0.2), (0.3, 1e-6, 0.2), (4.0, 1e-9, 0.5)])
def test_the_joint_split_converts_the_run_once_against_the_closed_forms(eps, delta, share):
    """δ_t = share·δ/2, δ_c = δ - δ_t, ρ = eps_to_zcdp(ε, δ_c); the mechanism keeps ρ_m = eps_to_zcdp((1 - share)·ε,
    δ_c) and the schema gets the rest of ρ; the mechanism, handed (ε_m, δ_c), derives ρ_m' = eps_to_zcdp(ε_m, δ_c)
    ≤ ρ_m; the run is then (CKS(ρ_s + ρ_m', δ_c), δ)-DP with CKS(...) ≤ ε, and the attributed lines add up to
    (ε, δ)."""
    from dpcore.discovery import joint_split
    from dpcore.privacy import eps_to_zcdp

    sp = joint_split(eps, delta, share)
    assert sp.delta_threshold == pytest.approx(share * delta / 2) and sp.delta_conversion + sp.delta_threshold == delta
    assert sp.rho == pytest.approx(eps_to_zcdp(eps, sp.delta_conversion), rel=1e-12)
    assert sp.rho_mechanism == pytest.approx(eps_to_zcdp((1 - share) * eps, sp.delta_conversion), rel=1e-12)
    assert sp.rho_schema == pytest.approx(sp.rho - sp.rho_mechanism, rel=1e-12)
    rho_m = eps_to_zcdp(sp.epsilon_mechanism, sp.delta_conversion)  # what the mechanism derives from its budget
    assert rho_m <= sp.rho_mechanism
    assert zcdp_to_eps_cks(sp.rho_schema + rho_m, sp.delta_conversion) <= eps
    assert sp.epsilon_schema + sp.epsilon_mechanism == pytest.approx(eps, abs=1e-15)
    # the point of it: the mechanism keeps the ε an ε-split gives it, and the schema gets several times the ρ (at
    # share 0.2, more than share·ρ itself: about 35% of the run's ρ)
    old = DiscoveryPlan.make(share * eps, share * delta, 0)
    assert sp.epsilon_mechanism == pytest.approx((1 - share) * eps, rel=1e-6)
    assert sp.rho_schema > (5 if share <= 0.2 else 1.5) * old.rho and sp.rho_schema > share * sp.rho


def test_a_raw_table_release_with_a_zcdp_mechanism_splits_the_schema_share_in_rho(tmp_path):
    """The projection (ρ-zCDP) converts discovery and measurement once: the card's parts and the ledger's lines add
    up to the run's (ε, δ), the discovery spent share·ρ, and the mechanism's plan stays within the rest.  A pure-ε
    mechanism keeps the ε split."""
    from dpcore.discovery import joint_split
    from dpcore.privacy import eps_to_zcdp
    from dpcore.privacy.ledger import Ledger
    from dpcore.release import release_table

    df = kitchen_sink(3000)[["sex", "country", "age", "priors"]]
    n, eps = len(df), 1.0
    ledger = Ledger(str(tmp_path))
    rel, _ = release_table(df, "projection", eps, ledger=ledger, seed=1, workload={"k": 1, "marginals": "all"})
    sp = joint_split(eps, 1 / n**2, DEFAULT_SCHEMA_SHARE)
    parts = rel.card["privacy"]["parts"]
    assert sum(p["epsilon"] for p in parts) == pytest.approx(eps) and sum(p["delta"] for p in parts) == pytest.approx(
        1 / n**2
    )
    assert rel.card["data"]["schema_discovery"]["rho"] == pytest.approx(sp.rho_schema)
    assert rel.card["data"]["schema_discovery"]["converted"].startswith("jointly")
    mech = parts[-1]
    assert eps_to_zcdp(mech["epsilon"], mech["delta"]) + sp.rho_schema <= sp.rho * (1 + 1e-12)
    assert sum(e["epsilon"] for e in ledger.entries()) == pytest.approx(eps)
    rel2, _ = release_table(df, "laplace", eps, ledger=None, seed=1, workload={"k": 1, "marginals": "all"})
    assert rel2.card["privacy"]["parts"][0]["epsilon"] == pytest.approx(DEFAULT_SCHEMA_SHARE * eps)


# ------------------------------------------------------------------ refined bounds (a narrow range far from zero)
def _years(n: int, rng) -> np.ndarray:
    """Years 1700-2008, as sunspot records: far from zero, in the power-of-two range [1024, 2047]."""
    return rng.integers(1700, 2009, n).astype(float)


def test_the_refinement_weighs_refine_weight_only_where_the_public_rule_says():
    """Numeric and date columns whose bounds are discovered weigh REFINE_WEIGHT more exactly when the refinement's
    ρ, ρ_v·REFINE_WEIGHT / (the weights' total with it), has its threshold at most REFINE_ROWS_SHARE·n -- all of
    them or none, never a category; every column's parts add up to its ρ, and the columns' ρ's to ρ_v."""
    from dpcore.discovery import (
        REFINE_ROWS_SHARE,
        REFINE_WEIGHT,
        column_rho,
        refine_threshold,
        refined_columns,
        split_column_rho,
    )

    tasks = [
        ValueTask("c", "categorical", need_values=True),
        ValueTask("x", "numeric", integer=True, need_lower=True, need_upper=True),
        ValueTask("p", "numeric", integer=True, need_lower=True, need_upper=True, need_points=True),
        ValueTask("u", "numeric", need_upper=True, declared_lower=0.0),
        ValueTask("d", "datetime", granularity="day", need_lower=True, need_upper=True),
    ]
    rho_v = 1e-2
    base = 1 + BOUNDS_WEIGHT + (BOUNDS_WEIGHT + POINTS_WEIGHT) + BOUNDS_WEIGHT + BOUNDS_WEIGHT
    with_refine = base + 4 * REFINE_WEIGHT
    n_edge = refine_threshold(rho_v * REFINE_WEIGHT / with_refine) / REFINE_ROWS_SHARE
    for n, refined in ((int(n_edge) - 1, set()), (int(n_edge) + 1, {"x", "p", "u", "d"})):
        assert refined_columns(tasks, rho_v, n) == refined
        rho = column_rho(tasks, rho_v, n)
        assert sum(rho.values()) == pytest.approx(rho_v, rel=1e-12)
        total = with_refine if refined else base
        assert rho["c"] == pytest.approx(rho_v / total)
        for t in tasks[1:]:
            locate, points, refine = split_column_rho(t, rho[t.name], t.name in refined)
            assert locate + points + refine == pytest.approx(rho[t.name], rel=1e-12)
            assert locate == pytest.approx(rho_v * BOUNDS_WEIGHT / total)
            assert refine == pytest.approx(rho_v * REFINE_WEIGHT / total if t.name in refined else 0.0)
    # the histograms spend exactly the column's ρ: Δ₂² / (2σ²) each, with Δ₂ = sqrt(2)
    df = pd.DataFrame({"year": _years(3000, np.random.default_rng(0))})
    rep = discover_values(df, [ValueTask("year", "numeric", integer=True, need_lower=True, need_upper=True)], 0.02,
                          1e-9, Randomness(0)).report["bounds"]["year"]  # fmt: skip
    # years are a narrow range: the bounds' ρ went to a first look (rep["sigma"]) and a zoom, half each
    assert rep["look"] == "narrow" and rep["zoom"]["sigma"] == pytest.approx(rep["sigma"])
    assert 1 / rep["sigma"] ** 2 + 1 / rep["zoom"]["sigma"] ** 2 + 1 / rep["refined"]["sigma"] ** 2 == pytest.approx(
        0.02
    )
    assert 1 / rep["refined"]["sigma"] ** 2 == pytest.approx(0.02 * REFINE_WEIGHT / (BOUNDS_WEIGHT + REFINE_WEIGHT))


def test_refinement_counts_move_by_at_most_sqrt2_between_neighbouring_columns():
    """Replace one value (or turn it missing, which drops it from the counts): the sub-bin counts differ in L2 by
    at most sqrt(2), for whole-number and real edges, values inside and outside the range."""
    from dpcore.discovery import refine_counts, refine_edges

    rng = np.random.default_rng(3)
    for lo, hi, integer in ((1024.0, 2047.0, True), (32.0, 64.0, False), (1.0, 7.0, True), (-8.0, 8.0, False)):
        edges = refine_edges(lo, hi, integer)
        for _ in range(200):
            x = rng.uniform(lo - 50, hi + 50, 40)
            if integer:
                x = np.round(x)
            y = x.copy()
            j = rng.integers(40)
            y[j] = rng.uniform(lo - 50, hi + 50)
            d = refine_counts(x, edges) - refine_counts(y, edges)
            assert np.sqrt((d.astype(float) ** 2).sum()) <= math.sqrt(2) + 1e-12
            gone = refine_counts(np.delete(x, j), edges) - refine_counts(x, edges)
            assert np.abs(gone).sum() == 1


def test_years_far_from_zero_get_bounds_around_them():
    """Years 1700-2008 on 3,000 rows: located in [1024, 2047] (ten bins of ~100 years, most of them empty); the
    second look zooms in on that narrow range, and its core -- where the bins go -- moves up in every one of 20 draws
    and never past the data; within one sub-bin (128 years) of it in most (σ ≈ 16 a sub-bin; the bounds stay, so
    nothing is clipped)."""
    df = pd.DataFrame({"year": _years(3000, np.random.default_rng(1))})
    task = ValueTask("year", "numeric", integer=True, need_lower=True, need_upper=True)
    close = 0
    for seed in range(20):
        found = discover_values(df, [task], 0.01, 1e-9, Randomness(seed))
        assert found.report["bounds"]["year"]["look"] == "narrow"
        lo, hi = found.fields["year"]["lower"], found.fields["year"]["upper"]
        core = found.fields["year"]["core"]
        assert lo in (512, 1024) and hi in (2047, 4095), (seed, lo, hi)  # a neighbour bin joined on noise: wider
        assert 1024 < core[0] <= 1700 and core[1] >= 2008, (seed, core)
        close += core[0] >= 1700 - 128
    assert close >= 15, close


def test_refinement_keeps_thin_edge_values_and_spread_tails():
    """A 1-5 scale whose 1 holds 1.6% of the rows keeps its 1 (one sub-bin of seven is too little to trim: noise
    cannot tell it from empty); a tail of 10% spread thinly over the upper half keeps its range (its noisy sum is
    far above REFINE_CLIP_SHARE·n); over 30 draws each."""
    from dpcore.discovery import refine_bounds

    rng = np.random.default_rng(2)
    n = 6000
    scale = rng.choice([1, 2, 3, 4, 5], size=n, p=[0.016, 0.054, 0.16, 0.35, 0.42]).astype(float)
    bulk = rng.uniform(0, 500, int(0.9 * n))
    tail = rng.uniform(512, 1023, n - bulk.size)  # 10% over the upper half of [0, 1023]
    spread = np.concatenate([bulk, tail])
    for seed in range(30):
        lo, hi, _ = refine_bounds(scale, 1.0, 7.0, True, 1 / 60.0**2, n, Randomness(seed))
        assert lo == 1.0 and hi in (5.0, 6.0, 7.0), (seed, lo, hi)
        lo, hi, _ = refine_bounds(spread, 0.0, 1023.0, False, 1 / 60.0**2, n, Randomness(seed))
        assert lo == 0.0 and hi == 1023.0, (seed, lo, hi)


def test_a_range_reached_down_to_zero_comes_back_up_when_its_reach_holds_nothing():
    """Ages 18-95 (a bank's clients, 45,000 rows) are located as [16, 127] and reached down to 0 (three octaves above
    ZERO_REACH: the rule for amounts whose low bins are thin); the refinement's eight sub-bins over [0, 127] see
    [0, 16) empty, one sub-bin where a trim asks two, so the release kept bins for ages 0-15 and noise put rows
    there.  Told where the located rows began, the refinement drops that one sub-bin, as it lies within the reach:
    [16, ...] in every draw.  Without the reach (a range located from 0), nothing changes: 40 draws each, σ = 60.
    A real low tail is not lost: incomes spread from 0 (12.5% of them under 8,192) keep their 0."""
    from dpcore.discovery import refine_bounds

    rng = np.random.default_rng(6)
    n = 45000
    ages = np.clip(rng.gamma(4.0, 5.75, n) + 18, 18, 95).round()
    assert float(np.mean(ages >= 64)) > 0.01
    sigma_bounds = 1 / 100.0**2
    # since 2026-11-29 the reach needs rows in the three octaves below 16: at least REACH_SHARE of [16, 31]'s
    # (9,474 clients); noise alone (σ·sqrt 3 ≈ 173) never reads that many, and the bounds stay [16, 127] -- or
    # [8, 127] where the empty [8, 15] joined as a thin edge on noise (5% of draws), which may then reach on noise
    draws = [histogram_bounds(ages, "numeric", True, sigma_bounds, Randomness(seed)) for seed in range(40)]
    assert all(lo in (0.0, 8.0, 16.0) and hi in (127.0, 255.0) for lo, hi, _ in draws), draws
    assert all(how["reached"] == [8.0, None] for lo, _, how in draws if lo == 0.0)
    assert sum(lo < 16.0 for lo, _, _ in draws) <= binom.ppf(1 - 1e-4, 40, norm.sf(ADJACENT_Z))
    incomes = rng.uniform(0, 65535, 6000).round()
    kept = 0
    for seed in range(40):
        low, _, report = refine_bounds(ages, 0.0, 127.0, True, 1 / 60.0**2, n, Randomness(seed), reached=(16.0, None))
        assert low in (0.0, 16.0) and report["trimmed"][0] == (low == 16.0), (seed, low)
        kept += low == 0.0
        assert refine_bounds(ages, 0.0, 127.0, True, 1 / 60.0**2, n, Randomness(seed))[0] == 0.0
        # where the reach began lower (a bin of 8-15 located), the sub-bin [0, 16) is not within it
        assert refine_bounds(ages, 0.0, 127.0, True, 1 / 60.0**2, n, Randomness(seed), reached=(8.0, None))[0] == 0
        got = refine_bounds(incomes, 0.0, 65535.0, True, 1 / 60.0**2, 6000, Randomness(seed), reached=(4096.0, None))
        assert got[0] == 0.0, (seed, got)
    # the empty sub-bin stays where its noise reaches ADJACENT_Z·σ (a thin edge of the bulk): 5% of draws
    assert kept <= binom.ppf(1 - 1e-4, 40, norm.sf(ADJACENT_Z)), kept


def test_a_column_centred_on_zero_keeps_both_halves():
    """800 rows of a standard normal (a z-score) at σ = 29.6 (a 3-column table's at ε = 1): each half's signed
    power-of-two bins hold 110-125 rows around a threshold of ~127, and before, in 13 draws of 20 the range kept
    one half (30-45% of the rows) and the release clipped the other onto it.  The other half's run is now found:
    at least 17 draws of 20 cover 90% of the rows.  A count column (1-50) never reaches below zero (300 draws:
    the run test's false alarms are at most BIN_FALSE_POSITIVE a draw)."""
    rng = np.random.default_rng(8)
    z = np.sort(rng.normal(size=800))
    covered = []
    for seed in range(20):
        lo, hi, _ = histogram_bounds(z, "numeric", False, 1 / 29.6**2, Randomness(seed))
        covered.append(float(np.mean((z >= lo) & (z <= hi))))
    assert sum(c >= 0.9 for c in covered) >= 17, covered
    counts = np.sort(rng.integers(1, 51, 800).astype(float))
    below = sum(histogram_bounds(counts, "numeric", True, 1 / 29.6**2, Randomness(s))[0] < 0 for s in range(300))
    assert below <= binom.ppf(1 - 1e-4, 300, BIN_FALSE_POSITIVE), below


def test_a_zero_inflated_amount_keeps_its_range():
    """Capital gains: 92% zeros, the rest at 2^11-2^13.  With the bulk in the bin around zero, bins up to
    FAR_FROM_ZERO·2^FAR_OCTAVES need only the usual threshold, so the amount's range is found (before, every bin
    past 8 needed the stricter one and 61% of Adult's draws came back as [0, 0]); a lone 4.5σ bin at 2^20 is still
    read as noise.  At σ = 40 (T ≈ 172) the fullest of the three bins (220 rows) clears T with probability ~0.8, one
    of them (or a run of them) in ~97% of draws: at least 175 of 200 keep the range (the old rule: 148)."""
    from dpcore.discovery import _held_kept

    rng = np.random.default_rng(4)
    amounts = np.concatenate([np.zeros(6440), rng.integers(2048, 4096, 180), rng.integers(4096, 8192, 220),
                              rng.integers(8192, 16384, 160)]).astype(float)  # fmt: skip
    kept = sum(histogram_bounds(amounts, "numeric", True, 1 / 40.0**2, Randomness(s))[1] >= 8191 for s in range(200))
    assert kept >= 175, kept
    lower, upper = bound_bins("numeric", True)
    at = {int(v): i for i, v in enumerate(lower)}
    sigma = 10.0
    noisy = np.zeros(len(lower))
    noisy[at[0]] = 5000.0
    noisy[at[2**20]] = 4.5 * sigma
    assert _outermost(_held_kept(noisy, sigma, np.flatnonzero(noisy >= bin_threshold(sigma, len(lower))), lower, upper,
                           "numeric")) == (at[0], at[0])  # fmt: skip
    noisy[at[2**20]], noisy[at[2**12]] = 0.0, 4.5 * sigma
    assert _outermost(_held_kept(noisy, sigma, np.flatnonzero(noisy >= bin_threshold(sigma, len(lower))), lower, upper,
                           "numeric")) == (at[0], at[2**12])  # fmt: skip


def test_refinement_never_drops_the_rare_value_of_a_flag_or_a_short_count():
    """A 0/1 flag whose 1 holds 1% of the rows, and a 0-2 count whose 2 holds 1%, keep their ranges: one sub-bin is
    never enough to trim, whatever the noise (here σ = 60 on 6,000 rows, 50 draws)."""
    from dpcore.discovery import refine_bounds

    rng = np.random.default_rng(5)
    flag = (rng.random(6000) < 0.01).astype(float)
    count = rng.choice([0, 1, 2], size=6000, p=[0.6, 0.39, 0.01]).astype(float)
    for seed in range(50):
        assert refine_bounds(flag, 0.0, 1.0, True, 1 / 60.0**2, 6000, Randomness(seed))[:2] == (0.0, 1.0)
        assert refine_bounds(count, 0.0, 2.0, True, 1 / 60.0**2, 6000, Randomness(seed))[:2] == (0.0, 2.0)


def test_years_spread_over_decades_are_located_with_runs_of_decades():
    """Birth years (normal, mean 1970, sd 15) on 3,000 rows, a year column's bounds histogram at σ = 46.5 (a
    7-column table's at ε = 1): no single year holds the threshold (~205 rows; the mode holds ~80), so the range
    comes from runs of years (DATE_WINDOWS up to 64) anchored on the run with the most rows over its threshold --
    the 64 years around the mode hold ~97% of the rows, ~1,100 over T_64 and ~5σ_64 clear of it, so every draw
    finds it, and the range covers at least 85% of the rows (a shift of up to ~10 years).  With runs of 8 at most
    (numbers' WINDOWS) the range stopped at the mode's two decades, clipping a third of the rows."""
    from dpcore.discovery import DATE_WINDOWS, WINDOWS, histogram_bounds, unit_start_days

    rng = np.random.default_rng(4)
    years = np.clip(rng.normal(1970, 15, 3000).round(), 1925, 2006)
    days = unit_start_days((years - 1970).astype(np.int64), "year").astype(float)
    assert DATE_WINDOWS[-1] == 64 and WINDOWS[-1] == 8
    for seed in range(10):
        lo, hi, report = histogram_bounds(days, "datetime", False, 1 / 46.5**2, Randomness(seed))
        assert lo is not None and report.get("window"), seed
        covered = float(np.mean((days >= lo) & (days <= hi)))
        assert covered >= 0.85, (seed, covered)


def _outermost(kept: list[int]) -> tuple[int, int]:
    """The outermost bins the bounds keep (:func:`dpcore.discovery._held_kept`)."""
    return kept[0], kept[-1]
