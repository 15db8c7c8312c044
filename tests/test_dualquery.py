"""DualQuery ([GGHRW14]): accounting against Thm 4.2/4.3, the MW sampler, a real run."""

import math
import threading

import numpy as np
import pytest
from scipy import stats

from dpcore.errors import BudgetError, Cancelled
from dpcore.mechanisms.base import Budget, RunContext
from dpcore.mechanisms.dualquery import DualQuery, QueryWeights, dualquery_rho, record_cells
from dpcore.privacy import zcdp_to_eps_cks
from dpcore.privacy.samplers import Randomness
from dpcore.release import run_release
from dpcore.workload import Workload

from .conftest import planted_dataset
from .spy_noise import spy_context


def thm43(T, eta, s, n, delta):
    """[GGHRW14] Theorem 4.3, typed in from the paper."""
    e = 2 * eta * (T - 1) / n
    return e * (math.sqrt(2 * s * (T - 1) * math.log(1 / delta)) + s * (T - 1) * (math.exp(e) - 1))


def params(**kw):
    return DualQuery.validate_params(kw)


@pytest.mark.parametrize(
    "eps, eta, s, n", [(1.0, 0.4, 1000, 48842), (0.1, 2.0, 1000, 48842), (0.5, 1.2, 1750, 30162), (3.0, 0.4, 35, 30162)]
)
def test_rounds_are_the_largest_meeting_thm_4_3(eps, eta, s, n):
    delta = 1.0 / n**2
    plan = DualQuery().plan(n, None, Budget(eps, delta), params(eta=eta, samples=s))
    T = plan["rounds"]
    assert thm43(T, eta, s, n, delta) <= eps < thm43(T + 1, eta, s, n, delta)
    assert plan["epsilon_planned"] == pytest.approx(thm43(T, eta, s, n, delta), rel=1e-12)


@pytest.mark.parametrize("eps, eta, s, n", [(1.0, 0.4, 1000, 48842), (0.2, 2.0, 100, 5000)])
def test_pure_rounds_meet_thm_4_2(eps, eta, s, n):
    T = DualQuery().plan(n, None, Budget(eps, 0.0), params(eta=eta, samples=s))["rounds"]
    assert eta * T * (T - 1) * s / n <= eps < eta * (T + 1) * T * s / n


def test_zcdp_accounting_sums_the_draws():
    n, eta, s, T = 48842, 0.4, 1000, 37
    rho = sum(s * (2 * eta * (t - 1) / n) ** 2 / 8 for t in range(1, T + 1))
    assert dualquery_rho(T, eta, s, n) == pytest.approx(rho, rel=1e-12)
    delta = 1 / n**2
    plan = DualQuery().plan(n, None, Budget(1.0, delta), params(accountant="zcdp", eta=eta))
    Tz = plan["rounds"]
    assert (
        zcdp_to_eps_cks(dualquery_rho(Tz, eta, s, n), delta)
        <= 1.0
        < zcdp_to_eps_cks(dualquery_rho(Tz + 1, eta, s, n), delta)
    )
    # tighter than Thm 4.3 at the same (ε, δ, η, s)
    assert Tz > DualQuery().plan(n, None, Budget(1.0, delta), params(eta=eta))["rounds"]


def test_epsilon_too_small_names_the_smallest_that_works():
    n, delta = 2000, 1 / 2000**2
    with pytest.raises(BudgetError) as err:
        DualQuery().plan(n, None, Budget(1e-4, delta), params(eta=0.4, samples=1000))
    need = thm43(2, 0.4, 1000, n, delta)
    msg = str(err.value)
    assert "too small" in msg and f"{need:.4g}" in msg and "η = 0.4" in msg and "s = 1000" in msg
    # and that ε really works (one data-dependent round: T = 2)
    assert DualQuery().plan(n, None, Budget(need * (1 + 1e-9), delta), params(eta=0.4, samples=1000))["rounds"] == 2


def test_max_rounds_only_lowers_T():
    p = params(max_rounds=5, eta=0.4)
    plan = DualQuery().plan(48842, None, Budget(1.0, 1 / 48842**2), p)
    assert plan["rounds"] == 5 < plan["rounds_budget_allows"]
    assert plan["epsilon_planned"] == pytest.approx(thm43(5, 0.4, 1000, 48842, 1 / 48842**2))
    big = DualQuery().plan(48842, None, Budget(1.0, 1 / 48842**2), params(max_rounds=10**6))
    assert big["rounds"] == big["rounds_budget_allows"]


def test_mw_sampler_frequencies_match_weights():
    true = np.array([0.5, 0.1, 0.3, 0.05, 0.05])
    w = QueryWeights(true, eta=0.9)
    w.update(np.array([0, 3]))
    w.update(np.array([2]))
    logits = w.log_weights()
    p = np.exp(logits - logits.max())
    p /= p.sum()
    # ¬q has the opposite score: A_D(x, ¬q) = -(q(D) - q(x))
    expected_score = 2 * true - np.array([1, 0, 1, 1, 0])
    assert np.allclose(w.score, expected_score)
    assert np.allclose(logits, 0.9 * np.concatenate([expected_score, -expected_score]))
    N = 200_000
    draws = w.sample(Randomness(0), N)
    counts = np.bincount(draws, minlength=len(p))
    chi2 = stats.chisquare(counts, N * p)
    assert chi2.pvalue > 1e-3


def test_cryptographic_mw_sampler_matches_weights():
    """The same draws from the cryptographic source (unseedable: p-value threshold 1e-6)."""
    w = QueryWeights(np.array([0.5, 0.1, 0.3]), eta=1.5)
    w.update(np.array([1]))
    lw = w.log_weights()
    p = np.exp(lw - lw.max())
    p /= p.sum()
    N = 60_000
    counts = np.bincount(w.sample(Randomness(), N), minlength=len(p))
    assert stats.chisquare(counts, N * p).pvalue > 1e-6


def test_every_round_samples_through_the_samplers():
    ds = planted_dataset(n=500)
    wl = Workload.all_kway(ds.domain, 2)
    ctx, spy = spy_context(3)
    p = DualQuery.validate_params({"samples": 30, "max_rounds": 5, "time_limit": 5.0})
    res = DualQuery().run(ds, wl, Budget(2.0, 1e-6), p, ctx)
    assert spy.calls["sample_log_weights"] == len(res.trace) == 5
    assert all(len(out) == 30 for name, out in spy.log if name == "sample_log_weights")


def test_sampler_has_no_overflow_at_huge_scores():
    w = QueryWeights(np.array([0.9, 0.1, 0.0]), eta=2.0)
    for _ in range(100_000 // 1000):
        w.score += 1000 * np.array([0.9, 0.1, 0.0])  # as after 100,000 rounds
    draws = w.sample(Randomness(1), 1000)
    assert np.all(draws == 0)  # all mass on the most under-answered query, no NaN/inf


def test_payoff_of_queries_and_negations():
    dom = planted_dataset(n=50).domain
    wl = Workload(dom, ((0, 1), (2,)))
    true = np.linspace(0.0, 1.0, wl.n_queries)
    w = QueryWeights(true, 0.4)
    record = np.array([1, 1, 2, 0])
    cells = record_cells(wl, record)
    assert cells.tolist() == [wl.query_id(0, (1, 1)), wl.query_id(1, (2,))]
    qids = np.array([cells[0], cells[0] + wl.n_queries, 0])
    assert np.allclose(w.payoff(qids, cells), [true[cells[0]] - 1, 1 - true[cells[0]], true[0]])


def test_planted_data_well_below_uniform():
    ds = planted_dataset(n=4000)
    wl = Workload.all_kway(ds.domain, 2)
    rel, internal = run_release(
        ds, wl, "dualquery", 1.0, None, {"samples": 50, "accountant": "zcdp"}, seed=0, ledger=None
    )
    ev = internal.report
    uniform = ev["baselines"]["uniform"]["max_error"]
    assert ev["max_error"] < 0.35 * uniform
    T = rel.card["derived_public_parameters"]["rounds"]
    assert rel.rows.shape == (T, 4) and len(ev["trace"]) == T
    assert rel.card["privacy"]["epsilon_spent"] <= 1.0
    assert ev["oracle"]["calls"] == T and sum(ev["oracle"]["statuses"].values()) == T
    # default accountant (Thm 4.3): fewer rounds, still well below the uniform baseline
    _, internal2 = run_release(ds, wl, "dualquery", 1.0, None, {"samples": 50}, seed=0, ledger=None)
    assert internal2.report["max_error"] < 0.6 * uniform


def test_free_attributes_are_uniform():
    ds = planted_dataset(n=2000, shape=(3, 2, 4, 3))
    wl = Workload(ds.domain, ((0, 1),))  # attributes 2 and 3 never appear in a clause
    rel, _ = run_release(ds, wl, "dualquery", 8.0, None, {"samples": 20, "eta": 0.4}, seed=3, ledger=None)
    rows = rel.rows
    assert len(rows) == rel.card["derived_public_parameters"]["rounds"] >= 50
    for a, size in ((2, 4), (3, 3)):
        counts = np.bincount(rows[:, a], minlength=size)
        assert stats.chisquare(counts).pvalue > 1e-3


def test_time_out_uses_incumbent_and_records_it():
    ds = planted_dataset(n=2000)
    wl = Workload.all_kway(ds.domain, 2)
    rel, internal = run_release(
        ds,
        wl,
        "dualquery",
        1.0,
        None,
        {"samples": 100, "max_rounds": 4},
        seed=0,
        oracle_options={"time_limit": 0.0},
        ledger=None,
    )
    st = internal.report["oracle"]["statuses"]
    assert rel.rows.shape[0] == 4 and sum(st.values()) == 4
    assert set(st) <= {"timelimit", "optimal"} and st.get("timelimit", 0) >= 1
    assert internal.report["oracle"]["not_optimal"] == st.get("timelimit", 0)


def test_cancel_mid_run_releases_nothing():
    ds = planted_dataset(n=2000)
    wl = Workload.all_kway(ds.domain, 2)
    cancel = threading.Event()
    seen = []

    def progress(t, T, msg, info):
        seen.append(t)
        if t == 2:
            cancel.set()

    # (that a cancelled run stays charged is the workspace ledger's business: tests/test_release.py)
    with pytest.raises(Cancelled):
        run_release(
            ds, wl, "dualquery", 1.0, None, {"samples": 30}, seed=0, progress=progress, cancel=cancel, ledger=None
        )
    assert seen == [1, 2]


def test_run_reports_progress_every_round_and_public_params_only_public():
    ds = planted_dataset(n=1000)
    wl = Workload.all_kway(ds.domain, 2)
    calls = []
    ctx = RunContext.seeded(0, progress=lambda t, T, m, i: calls.append((t, T)))
    p = params(samples=20, max_rounds=6, eta=0.4)
    res = DualQuery().run(ds, wl, Budget(2.0, 1e-6), p, ctx)
    assert calls == [(t, 6) for t in range(1, 7)]
    assert set(res.public) == {
        "rounds",
        "rounds_budget_allows",
        "samples_per_round",
        "eta",
        "epsilon_per_draw_last_round",
    }
    assert res.epsilon_spent == pytest.approx(thm43(6, 0.4, 20, 1000, 1e-6))
    assert {"round", "heaviest_query", "max_error", "oracle_status"} <= set(res.trace[0])
