"""The projection mechanism: Frank–Wolfe onto the records' hull, rounding, accounting, public stopping."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpcore.errors import BudgetError, ParameterError, WorkloadError
from dpcore.mechanisms import projection as proj
from dpcore.mechanisms.base import Budget, RunContext
from dpcore.mechanisms.decouple import decouple_rows
from dpcore.mechanisms.direct import DirectGaussian
from dpcore.mechanisms.projection import (
    Projection,
    ProjectionSettings,
    RecordProjector,
    largest_remainder_rows,
    rounding_bound,
)
from dpcore.mechanisms.repair import REPAIR_Z_WHOLE, repair_rows
from dpcore.privacy import eps_to_zcdp, gaussian_rho, zcdp_to_eps_cks
from dpcore.privacy.samplers import Randomness
from dpcore.release import run_release
from dpcore.workload import Workload

from .conftest import all_keys, planted_dataset

SHAPE = (3, 2, 4, 3)


def _setup(n=400, k=2):
    ds = planted_dataset(n=n, shape=SHAPE)
    return ds, Workload.all_kway(ds.domain, k)


def test_projecting_exact_answers_reproduces_the_marginals():
    ds, wl = _setup()
    true = wl.answers(ds.codes)
    settings = ProjectionSettings(
        max_iterations=400, stopping="none", scip="off", starts=32, corrective_every=5, gap_tolerance=1e-14
    )
    out = RecordProjector(wl, true, 1e-3, settings).run(np.random.default_rng(0))
    # Before rounding: the weighted records answer every query as the data does.
    assert np.max(np.abs(out.fitted - true)) <= 1e-6
    assert np.allclose(wl.answers(out.records, out.weights), out.fitted, atol=1e-12)
    assert out.weights.min() > 0 and out.weights.sum() == pytest.approx(1.0)


def test_frank_wolfe_objective_decreases():
    ds, wl = _setup()
    true = wl.answers(ds.codes)
    sigma = 0.02
    noisy = true + np.random.default_rng(5).normal(0, sigma, true.shape)
    settings = ProjectionSettings(max_iterations=60, stopping="none", scip="off", corrective_every=7)
    out = RecordProjector(wl, noisy, sigma, settings).run(np.random.default_rng(1))
    res = np.array([r["residual_norm"] for r in out.trace])
    assert len(res) >= 10
    # Exact line search and monotone corrective steps: never up (up to rounding).
    assert np.all(np.diff(res) <= 1e-9 * res[:-1])
    assert res[-1] < res[0]
    # And the final residual is what the weights give.
    resid = wl.answers(out.records, out.weights) - noisy
    assert out.chi2 == pytest.approx(np.sum(resid**2) / sigma**2, rel=1e-9)


@pytest.mark.parametrize("n_rows", [1, 7, 100, 4321])
def test_rounding_keeps_the_row_count_and_moves_answers_at_most_the_bound(n_rows):
    ds, wl = _setup()
    rng = np.random.default_rng(n_rows)
    K = 40
    records = np.column_stack([rng.integers(0, s, K) for s in SHAPE])
    records = np.unique(records, axis=0)
    K = len(records)
    weights = rng.dirichlet(np.ones(K) * 0.5)
    rows = largest_remainder_rows(records, weights, n_rows, rng)
    assert rows.shape == (n_rows, len(SHAPE))
    before = wl.answers(records, weights)
    after = wl.answers(rows)
    # Stated bound: min(r, K - r) / N <= K / (2N), r = number of records rounded up.
    target = weights * n_rows
    r = int(n_rows - np.floor(target).sum())
    assert np.max(np.abs(after - before)) <= min(r, K - r) / n_rows + 1e-12
    assert min(r, K - r) / n_rows <= rounding_bound(K, n_rows) + 1e-15
    # Each record's count is its share rounded down or up.
    counts = np.array([np.sum(np.all(rows == rec, axis=1)) for rec in records])
    assert np.all((counts == np.floor(target)) | (counts == np.floor(target) + 1))


def test_rounding_is_exact_when_shares_are_whole():
    records = np.array([[0, 0, 0, 0], [1, 1, 1, 1], [2, 0, 3, 2]])
    rows = largest_remainder_rows(records, np.array([0.5, 0.25, 0.25]), 8, np.random.default_rng(0))
    counts = sorted(int(np.sum(np.all(rows == r, axis=1))) for r in records)
    assert counts == [2, 2, 4]


def test_privacy_accounting_is_the_gaussian_measurements_alone():
    ds, wl = _setup()
    eps, delta = 0.7, 1e-6
    mech = Projection()
    params = Projection.validate_params({"max_iterations": 20, "scip": "off"})
    plan = mech.plan(ds.n, wl, Budget(eps, delta), params)
    rho = eps_to_zcdp(eps, delta)
    assert plan["rho"] == pytest.approx(rho, rel=1e-12)
    # σ on counts = sqrt(|W|/ρ): ρ = |W| · (sqrt 2)² / (2σ²)  (replace-one, one marginal has L2 sensitivity sqrt 2).
    assert plan["sigma_counts"] == pytest.approx(math.sqrt(wl.n_marginals / rho), rel=1e-12)
    assert wl.n_marginals * gaussian_rho(plan["sigma_counts"], math.sqrt(2.0)) == pytest.approx(rho, rel=1e-12)
    assert zcdp_to_eps_cks(rho, delta) <= eps + 1e-9
    # The same noise as the direct Gaussian yardstick on the same workload and budget.
    direct = DirectGaussian().plan(ds.n, wl, Budget(eps, delta), {"postprocess": True})
    assert plan["sigma_counts"] == pytest.approx(direct["sigma_counts"], rel=1e-12)
    res = mech.run(ds, wl, Budget(eps, delta), params, RunContext.seeded(0))
    assert len(res.spends) == 1
    assert res.spends[0].rho == pytest.approx(rho, rel=1e-12)
    assert (res.epsilon_spent, res.delta_spent) == (eps, delta)
    assert res.accountant.startswith("zCDP")


def _settings_for(params):
    return proj.settings_from_params(Projection.validate_params(params))


def test_stopping_rule_reads_no_private_quantity():
    """The mechanism's output (rows, stop rule, trace) is a function of the noisy answers alone."""
    ds, wl = _setup(n=600)
    eps, delta, seed = 1.0, 1e-6, 11
    params = Projection.validate_params({"max_iterations": 300, "scip": "off", "stopping": "risk"})
    res = Projection().run(ds, wl, Budget(eps, delta), params, RunContext.seeded(seed))
    # Replay with the true answers hidden: draw the same exact integer noise on the counts through the
    # samplers (ctx.noise), then forget the data; the projection and rounding use ctx.rng only.
    replay = RunContext.seeded(seed)
    plan = Projection().plan(ds.n, wl, Budget(eps, delta), params)
    counts = np.rint(wl.answers(ds.codes) * ds.n).astype(np.int64)
    noisy = (counts + replay.noise.discrete_gaussian(plan["sigma_counts"], counts.size)) / ds.n
    del counts
    out = RecordProjector(wl, noisy, plan["sigma_answers"], _settings_for(params)).run(replay.rng)  # no data
    rows = largest_remainder_rows(out.records, out.weights, ds.n, replay.rng)
    sigmas = np.full(wl.n_marginals, plan["sigma_answers"])
    # nothing is measured in groups here, so the repair's threshold is REPAIR_Z_WHOLE: the noisy answers and σ only
    assert not plan["grouped_attributes"]
    rows, _ = repair_rows(rows, wl, noisy, sigmas, None, replay.rng, z=REPAIR_Z_WHOLE)
    rows, _ = decouple_rows(rows, wl.domain.shape, wl.marginals, replay.rng)  # public: the workload's marginals
    assert np.array_equal(rows, res.rows)
    assert out.stop_rule == res.public["stopping_rule_fired"]
    public_keys = ("iteration", "oracle_calls", "residual_norm", "fw_gap", "support", "risk_estimate")
    assert [{k: r[k] for k in public_keys} for r in out.trace] == [{k: r[k] for k in public_keys} for r in res.trace]
    # And the owner's monitor really did see something the replay could not.
    assert "true_max_error" in res.trace[0] and "true_max_error" not in out.trace[0]


@pytest.mark.parametrize("rule", ["discrepancy", "risk"])
def test_each_public_rule_fires_and_is_reported(rule):
    ds, wl = _setup(n=2000)
    rel, internal = run_release(
        ds, wl, "projection", 2.0, 1e-6, {"stopping": rule, "scip": "off", "max_iterations": 3000}, seed=3
    )
    fired = rel.card["derived_public_parameters"]["stopping_rule_fired"]
    assert fired == {"risk": "risk minimum", "discrepancy": "discrepancy"}[rule]
    oracle = internal.report["oracle"]
    assert oracle["converged"] is True
    if rule == "discrepancy":
        assert oracle["final_residual_norm"] <= oracle["discrepancy_level"]


def test_end_to_end_release_beats_the_uniform_baseline_and_keeps_errors_off_the_card():
    ds, wl = _setup(n=2000, k=3)
    rel, internal = run_release(ds, wl, "projection", 1.0, None, {"scip": "certify"}, seed=4)
    assert rel.rows.shape == (ds.n, len(SHAPE))
    ev = internal.report
    assert ev["max_error"] < 0.5 * ev["baselines"]["uniform"]["max_error"]
    assert ev["oracle"]["certified_gap"] is not None
    assert ev["oracle"]["certified_gap"] >= -1e-9
    keys = set(all_keys(rel.card))
    for private in (
        "true_max_error",
        "max_error",
        "mean_error",
        "seconds",
        "certified_gap",
        "fw_gap",
        "residual_norm",
        "trace",
        "seed",
    ):
        assert private not in keys
    assert "true_max_error" not in json.dumps(rel.card, default=float)
    # The trace is numeric, for the Results page's convergence chart.
    for row in ev["trace"]:
        for k in ("iteration", "oracle_calls", "residual_norm", "fw_gap"):
            assert isinstance(row[k], (int, float))


def test_a_projection_stopped_at_its_limit_returns_the_best_found_and_says_so():
    ds, wl = _setup(n=1000, k=3)
    rel, internal = run_release(
        ds, wl, "projection", 1.0, 1e-6, {"max_iterations": 2, "stopping": "none", "scip": "certify"}, seed=2
    )
    st = internal.report["oracle"]
    assert st["stop_rule"] == "iteration limit" and st["converged"] is False
    assert rel.rows.shape[0] == ds.n
    assert any("did not converge" in n and "gap" in n for n in internal.report["notes"])
    assert st["certified_gap"] is not None and st["certified_gap"] > 0


def test_memory_refusal_names_the_size_and_suggests_the_adaptive_variant(monkeypatch):
    ds, wl = _setup()
    monkeypatch.setattr(proj, "PROJECTION_MEMORY_LIMIT", 1000)
    with pytest.raises(WorkloadError, match=r"(?s)noisy answers.*projection_adaptive") as exc:
        Projection().plan(ds.n, wl, Budget(1.0, 1e-6), Projection.validate_params({}))
    assert f"{wl.n_queries:,}" in str(exc.value)


@pytest.mark.parametrize("rows", [0, -5, 10**12])
def test_absurd_row_counts_are_refused(rows):
    ds, wl = _setup()
    with pytest.raises(ParameterError, match="rows"):
        run_release(ds, wl, "projection", 1.0, 1e-6, {"scip": "off"}, seed=0, n_rows=rows)


def test_gaussian_measurement_needs_delta():
    ds, wl = _setup()
    with pytest.raises(BudgetError, match="δ > 0"):
        Projection().plan(ds.n, wl, Budget(1.0, 0.0), Projection.validate_params({}))


# ------------------------------------------------------------------ adaptive variant
from dpcore.mechanisms.projection_adaptive import AdaptiveProjection  # noqa: E402


@pytest.mark.parametrize("one_way", [True, False])
def test_adaptive_accounting_adds_selections_and_measurements_to_the_budget(one_way):
    ds, wl = _setup(n=800, k=2)
    eps, delta = 0.8, 1e-6
    params = AdaptiveProjection.validate_params(
        {"rounds": 4, "one_way": one_way, "scip": "off", "max_iterations": 40, "round_iterations": 5}
    )
    plan = AdaptiveProjection().plan(ds.n, wl, Budget(eps, delta), params)
    rho = eps_to_zcdp(eps, delta)
    p = len(SHAPE)
    # ε_sel²/8 per selection (bounded-range EM), (sqrt 2)²/(2σ²) per measured marginal of counts.
    per_round = plan["epsilon_select"] ** 2 / 8 + 1.0 / plan["sigma_counts"] ** 2
    one = p * 2.0 / (2.0 * plan["sigma_one_way_counts"] ** 2) if one_way else 0.0
    assert one + 4 * per_round == pytest.approx(rho, rel=1e-12)
    assert plan["epsilon_select"] ** 2 / 8 == pytest.approx(0.1 * per_round, rel=1e-12)
    res = AdaptiveProjection().run(ds, wl, Budget(eps, delta), params, RunContext.seeded(0))
    assert res.public["rounds_run"] == 4
    assert res.spends[0].rho == pytest.approx(rho, rel=1e-12)
    assert res.epsilon_spent == eps and zcdp_to_eps_cks(res.spends[0].rho, delta) <= eps + 1e-9
    assert res.rows.shape == (ds.n, p)


def test_adaptive_measures_each_marginal_once_while_unmeasured_ones_remain():
    ds, wl = _setup(n=800, k=2)
    T = wl.n_marginals
    rel, internal = run_release(
        ds,
        wl,
        "projection_adaptive",
        1.0,
        1e-6,
        {"rounds": T, "scip": "off", "max_iterations": 30, "round_iterations": 3},
        seed=1,
    )
    chosen = [r["selected_marginal"] for r in internal.report["trace"] if r["round"] >= 1][: T - 1]
    assert len(set(chosen)) == len(chosen) == T - 1
    assert rel.rows.shape[0] == ds.n
    assert internal.report["max_error"] < internal.report["baselines"]["uniform"]["max_error"]
    assert "true_max_error" not in json.dumps(rel.card, default=float)


def test_adaptive_variant_runs_where_measuring_everything_is_refused(monkeypatch):
    ds, wl = _setup(n=500, k=3)
    monkeypatch.setattr(proj, "PROJECTION_MEMORY_LIMIT", 1000)
    with pytest.raises(WorkloadError):
        run_release(ds, wl, "projection", 1.0, 1e-6, {"scip": "off"}, seed=0)
    rel, _ = run_release(
        ds,
        wl,
        "projection_adaptive",
        1.0,
        1e-6,
        {"rounds": 2, "scip": "off", "max_iterations": 20, "round_iterations": 3},
        seed=0,
    )
    assert rel.rows.shape[0] == ds.n


@pytest.mark.parametrize("scip", ["off", "certify"])
def test_certified_gap_bounds_the_true_frank_wolfe_gap(scip):
    from dpcore.oracles.linear_min import brute_force_min

    ds, wl = _setup(n=500, k=3)
    true = wl.answers(ds.codes)
    sigma = 0.01
    noisy = true + np.random.default_rng(8).normal(0, sigma, true.shape)
    settings = ProjectionSettings(max_iterations=6, stopping="none", scip=scip)
    out = RecordProjector(wl, noisy, sigma, settings).run(np.random.default_rng(2))
    gw = (out.fitted - noisy) / sigma**2
    _, lmo = brute_force_min(wl, gw)
    true_gap = 2.0 * (gw @ out.fitted - lmo) / wl.n_queries
    assert true_gap >= -1e-9
    assert out.certified_gap >= true_gap - 1e-9


# ------------------------------------------------------------------ privacy draws (issue 12, findings 5 and 8)
class _CountingRandomness(Randomness):
    """A seeded Randomness that records every privacy draw a mechanism makes through ``ctx.noise``."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.draws: list[tuple[str, object, object]] = []

    def discrete_gaussian(self, sigma, size):
        out = super().discrete_gaussian(sigma, size)
        self.draws.append(("discrete_gaussian", sigma, out))
        return out

    def exponential_mechanism(self, scores, epsilon, sensitivity):
        out = super().exponential_mechanism(scores, epsilon, sensitivity)
        self.draws.append(("exponential_mechanism", (epsilon, sensitivity), out))
        return out


def test_projection_measures_counts_with_exact_integer_noise_from_ctx_noise():
    ds, wl = _setup(n=500)
    eps, delta = 1.0, 1e-6
    params = Projection.validate_params({"max_iterations": 5, "scip": "off"})
    noise = _CountingRandomness(3)
    Projection().run(ds, wl, Budget(eps, delta), params, RunContext(noise=noise))
    plan = Projection().plan(ds.n, wl, Budget(eps, delta), params)
    # One draw: the whole workload's counts, σ on counts = the plan's (so ρ = |W|·2/(2σ²) as before), integers.
    assert [(k, s) for k, s, _ in noise.draws] == [("discrete_gaussian", plan["sigma_counts"])]
    drawn = noise.draws[0][2]
    assert drawn.shape == (wl.n_queries,) and drawn.dtype.kind == "i"
    # What the projection sees is (counts + integer noise) / n: integer in count units.
    counts = np.rint(wl.answers(ds.codes) * ds.n).astype(np.int64)
    noisy = proj.gaussian_measurement(wl.answers(ds.codes), ds.n, plan["sigma_counts"], Randomness(3))
    assert np.array_equal(
        np.rint(noisy * ds.n).astype(np.int64) - counts,
        Randomness(3).discrete_gaussian(plan["sigma_counts"], wl.n_queries),
    )
    assert np.allclose(noisy * ds.n, np.rint(noisy * ds.n), atol=1e-6)


def test_adaptive_draws_selection_and_noise_from_ctx_noise():
    ds, wl = _setup(n=800, k=2)
    T = 3
    params = AdaptiveProjection.validate_params(
        {"rounds": T, "one_way": True, "scip": "off", "max_iterations": 10, "round_iterations": 3}
    )
    plan = AdaptiveProjection().plan(ds.n, wl, Budget(1.0, 1e-6), params)
    noise = _CountingRandomness(5)
    AdaptiveProjection().run(ds, wl, Budget(1.0, 1e-6), params, RunContext(noise=noise))
    kinds = [k for k, _, _ in noise.draws]
    p = len(SHAPE)
    assert kinds == ["discrete_gaussian"] * p + ["exponential_mechanism", "discrete_gaussian"] * T
    assert all(s == plan["sigma_one_way_counts"] for k, s, _ in noise.draws[:p])
    for k, s, out in noise.draws[p:]:
        if k == "exponential_mechanism":
            assert s == (plan["epsilon_select"], 2.0)
        else:
            assert s == plan["sigma_counts"] and out.dtype.kind == "i"


def test_adaptive_with_a_tiny_time_limit_still_runs_every_round_and_charges_what_was_asked():
    """Finding 5: the clock may cut only the projection; the rounds and the spend are fixed in advance."""
    ds, wl = _setup(n=800, k=2)
    eps, delta, T = 0.9, 1e-6, 5
    params = AdaptiveProjection.validate_params(
        {"rounds": T, "scip": "off", "max_iterations": 50, "round_iterations": 20}
    )
    params["max_seconds"] = 1e-3  # below what the app offers: the clock runs out during the first round
    res = AdaptiveProjection().run(ds, wl, Budget(eps, delta), params, RunContext.seeded(0))
    assert res.public["rounds_run"] == T
    assert res.epsilon_spent == eps
    assert len(res.spends) == 1 and res.spends[0].epsilon == eps
    assert res.spends[0].rho == pytest.approx(eps_to_zcdp(eps, delta), rel=1e-12)
    assert res.rows.shape == (ds.n, len(SHAPE))
    assert any("time limit" in n for n in res.notes)


# ------------------------------------------------------------------ measuring wide marginals in groups
def test_value_groups_are_consecutive_and_keep_a_common_value_alone():
    mass = np.array([0.01, 0.02, 0.5, 0.01, 0.01, 0.2, 0.05, 0.05, 0.1, 0.05])
    g = proj.value_groups(mass, 4)
    assert np.all(np.diff(g) >= 0) and g[0] == 0  # consecutive values, numbered in order
    assert np.sum(g == g[2]) == 1  # the common value is never blurred with rare ones
    assert g.max() + 1 <= len(mass)
    assert np.array_equal(proj.value_groups(mass, 20), np.arange(len(mass)))


def test_grouped_measurement_spends_exactly_rho_through_ctx_noise():
    ds = planted_dataset(n=500, shape=(40, 30, 3, 2))
    wl = Workload.all_kway(ds.domain, 2)
    eps, delta = 1.0, 1e-6
    params = Projection.validate_params({"max_iterations": 10, "scip": "off"})
    plan = Projection().plan(ds.n, wl, Budget(eps, delta), params)
    rho = eps_to_zcdp(eps, delta)
    assert plan["grouped_attributes"]  # a 40 × 30 marginal has more cells than n / (κσ)
    k = len(plan["grouped_attributes"])
    # ρ_1 + ρ_W: k one-way and |W| workload histograms, each of L2 sensitivity sqrt 2.
    assert k / plan["sigma_one_way_counts"] ** 2 + wl.n_marginals / plan["sigma_counts"] ** 2 == pytest.approx(
        rho, rel=1e-12
    )
    assert plan["rho_one_way"] == pytest.approx(proj.ONE_WAY_SHARE * rho, rel=1e-12)
    noise = _CountingRandomness(1)
    res = Projection().run(ds, wl, Budget(eps, delta), params, RunContext(noise=noise))
    sigmas = [s for kind, s, _ in noise.draws]
    assert [kind for kind, _, _ in noise.draws] == ["discrete_gaussian"] * (k + 1)
    assert sigmas == [plan["sigma_one_way_counts"]] * k + [plan["sigma_counts"]]
    assert noise.draws[-1][2].size < wl.n_queries  # the wide marginal really was measured in groups
    assert res.spends[0].rho == pytest.approx(rho, rel=1e-12) and res.epsilon_spent == eps
    assert res.public["grouped_attributes"] == plan["grouped_attributes"]
    assert res.rows.shape == (ds.n, 4) and res.rows[:, 0].max() < 40


def test_grouping_is_public_until_the_one_way_marginals_are_released():
    """The resolution plan reads only sizes, n and σ: the same for any table of the same schema and n."""
    a = planted_dataset(n=500, shape=(40, 30, 3, 2), seed=0)
    b = planted_dataset(n=500, shape=(40, 30, 3, 2), seed=9, concentration=0.1)
    wl = Workload.all_kway(a.domain, 2)
    params = Projection.validate_params({})
    pa = Projection().plan(a.n, wl, Budget(1.0, 1e-6), params)
    pb = Projection().plan(b.n, wl, Budget(1.0, 1e-6), params)
    assert pa == pb


# ------------------------------------------------------------------ limits (issue 13): clock, Cancel, memory
def _wide(p=120, n=3000):
    from dpcore.bench.projection import random_triples, wide_table

    ds = wide_table(n, p)
    return ds, random_triples(ds, 64)


@pytest.mark.parametrize("mech", ["projection", "projection_adaptive"])
def test_the_time_limit_holds_on_a_wide_table(mech):
    import time

    ds, wl = _wide()
    cls = {"projection": Projection, "projection_adaptive": AdaptiveProjection}[mech]
    params = cls.validate_params({"max_iterations": 100_000, "stopping": "none", "max_seconds": 2.0, "scip": "certify"})
    if mech == "projection_adaptive":
        params["round_iterations"] = 100_000
    t0 = time.perf_counter()
    res = cls().run(ds, wl, Budget(1.0, 1e-8), params, RunContext.seeded(0))
    assert time.perf_counter() - t0 <= 1.1 * 2.0 + 5.0
    assert res.oracle_stats["stop_rule"] == "time limit"
    assert res.rows.shape == (ds.n, len(ds.domain))


@pytest.mark.parametrize("mech", ["projection", "projection_adaptive"])
def test_cancel_stops_a_long_projection_within_five_seconds(mech):
    import threading
    import time

    from dpcore.errors import Cancelled

    ds, wl = _wide()
    cls = {"projection": Projection, "projection_adaptive": AdaptiveProjection}[mech]
    params = cls.validate_params({"max_iterations": 100_000, "stopping": "none", "max_seconds": 600.0})
    cancel = threading.Event()
    timer = threading.Timer(1.0, cancel.set)
    timer.start()
    t0 = time.perf_counter()
    with pytest.raises(Cancelled):
        cls().run(ds, wl, Budget(1.0, 1e-8), params, RunContext.seeded(0, cancel=cancel))
    assert time.perf_counter() - t0 <= 1.0 + 5.0


def test_the_memory_estimate_is_within_twice_what_the_run_allocates():
    import tracemalloc

    # The estimate plans for the whole iteration budget (where the run stops depends on the data):
    # measured here on runs that use it.
    for p in (400,):
        ds, wl = _wide(p=p, n=3000)
        params = Projection.validate_params({"scip": "off", "max_iterations": 20, "stopping": "none"})
        est = Projection().plan(ds.n, wl, Budget(1.0, 1e-8), params)["memory_bytes"]
        tracemalloc.start()
        Projection().run(ds, wl, Budget(1.0, 1e-8), params, RunContext.seeded(0))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert 0.5 <= est / peak <= 2.0, (p, est, peak)


# ------------------------------------------------------------------ weighting the small cells of the fit
def test_small_cell_weights_read_only_the_noisy_answers_and_their_noise_level():
    noisy = np.array([0.0, 0.02, 0.031, 0.5, -0.1])
    w = proj.small_cell_weights(noisy, np.full(5, 0.01), 0.5)
    assert w.tolist() == [0.5, 0.5, 1.0, 1.0, 0.5]  # below 3σ = 0.03: half weight
    assert proj.small_cell_weights(noisy, np.full(5, 0.01), 1.0).tolist() == [1.0] * 5


def test_a_frank_wolfe_step_with_cell_weights_is_the_exact_line_search():
    """With per-cell weights the step size must still minimise the weighted objective along the segment."""
    ds, wl = _setup(n=300)
    rng = np.random.default_rng(2)
    noisy = wl.answers(ds.codes) + rng.normal(0, 0.02, wl.n_queries)
    cells = rng.choice([0.25, 1.0], wl.n_queries)
    settings = ProjectionSettings(max_iterations=3, stopping="none", scip="off", starts=4, corrective_every=1000)
    rp = RecordProjector(wl, noisy, 0.02, settings, cell_weights=cells)
    first = ds.codes[:1]
    rp.add_records(first)
    rp.weights = np.ones(1)
    rp.refit_answers()
    rec = ds.codes[7]
    g = rp.omega_cells * (rp.fitted - noisy)
    inner = float(np.dot(g, rp.fitted))
    value = float(g[rp.cd.cell_ids(rec)[0]].sum())
    start = rp.fitted.copy()
    rp.frank_wolfe_step(rec, inner, value)
    e_x = np.zeros(wl.n_queries)
    e_x[rp.cd.cell_ids(rec)[0]] = 1.0

    def f(gamma):
        r = (1 - gamma) * start + gamma * e_x - noisy
        return float(np.dot(rp.omega_cells * r, r))

    gammas = np.linspace(0, 1, 2001)
    best = gammas[np.argmin([f(x) for x in gammas])]
    taken = float(rp.weights[-1])
    assert abs(taken - best) <= 1e-3 and f(taken) <= min(f(x) for x in gammas) + 1e-12


def test_small_cells_are_weighted_only_when_some_marginal_is_measured_in_groups():
    wide = planted_dataset(n=500, shape=(40, 30, 3, 2))
    wl = Workload.all_kway(wide.domain, 2)
    params = Projection.validate_params({"max_iterations": 10, "scip": "off"})
    plan = Projection().plan(wide.n, wl, Budget(1.0, 1e-6), params)
    assert plan["grouped_attributes"] and plan["small_cell_weight"] == proj.SMALL_CELL_WEIGHT
    res = Projection().run(wide, wl, Budget(1.0, 1e-6), params, RunContext.seeded(0))
    assert res.public["small_cell_weight"] == proj.SMALL_CELL_WEIGHT
    ds, narrow = _setup()
    assert Projection().plan(ds.n, narrow, Budget(1.0, 1e-6), params)["small_cell_weight"] == 1.0
    off = Projection.validate_params({"small_cell_weight": 1.0})
    assert Projection().plan(wide.n, wl, Budget(1.0, 1e-6), off)["small_cell_weight"] == 1.0
