"""DQRS ([VTBSW20], Algorithm 4): the privacy derivation, rejection sampling, a real run."""

import math

import numpy as np
import pytest
from scipy import stats

from dpcore.errors import BudgetError
from dpcore.mechanisms.base import Budget
from dpcore.mechanisms.dqrs import (
    DQRS,
    acceptance_probability,
    dqrs_epsilon,
    dqrs_rho,
    fresh_draws,
    gamma,
    lemma9_epsilon,
    rejection_test_epsilon,
)
from dpcore.mechanisms.dualquery import QueryWeights
from dpcore.privacy import zcdp_to_eps_cks
from dpcore.privacy.samplers import Randomness
from dpcore.release import run_release
from dpcore.workload import Workload

from .conftest import planted_dataset
from .spy_noise import spy_context


def params(**kw):
    return DQRS.validate_params(kw)


def explicit_mechanisms(T, eta, s, n):
    """Every (ε, kind) the run composes, listed one by one from the algorithm."""
    out = []
    for t in range(1, T):
        g = 1 / (2 * t ** (2 / 3))
        m = min(s, math.ceil((2 * g + 4 * eta) * s - 1e-9))
        out += [(2 * eta * t / n, "em")] * m
        if m < s:
            a = eta / n
            out += [(max(a, math.log(1 + (1 - math.exp(-a)) / (math.exp(g) - 1))), "test")] * s
    return out


@pytest.mark.parametrize("t", [1, 2, 5, 30, 400])
@pytest.mark.parametrize("eta", [0.05, 0.4])
def test_rejection_test_epsilon_bounds_the_likelihood_ratio(t, eta):
    """Brute force over payoffs A and neighbouring A ± 1/n: the accept and reject
    probabilities never move by more than exp(ε_rs(t)); and ε_rs ≤ Lemma 9's bound."""
    n = 1000
    A = np.linspace(-1.0, 1.0, 2001)
    p = acceptance_probability(A, eta, t)
    assert np.all(p <= math.exp(-float(gamma(t))) + 1e-15)
    eps = float(rejection_test_epsilon(t, eta, n))
    for shift in (1.0 / n, -1.0 / n):
        A2 = np.clip(A + shift, -1.0, 1.0)
        q = acceptance_probability(A2, eta, t)
        worst = max(np.max(np.abs(np.log(p / q))), np.max(np.abs(np.log((1 - p) / (1 - q)))))
        assert worst <= eps * (1 + 1e-9)
    assert eps <= float(lemma9_epsilon(t, eta, n)) * (1 + 1e-12)
    assert eps >= eta / n


def test_fresh_draws_follow_algorithm_4():
    s, eta = 1000, 0.1
    for t in (1, 2, 3, 10, 100):
        g = 1 / (2 * t ** (2 / 3))
        assert fresh_draws(t, eta, s) == min(s, math.ceil((2 * g + 4 * eta) * s))
    assert fresh_draws(1, 0.3, s) == s  # 4η ≥ 1: plain DualQuery step


@pytest.mark.parametrize("T, eta, s, n", [(40, 0.1, 1000, 48842), (200, 0.05, 500, 20000), (7, 0.4, 100, 3000)])
def test_accountants_against_explicit_composition(T, eta, s, n):
    mechs = explicit_mechanisms(T, eta, s, n)
    eps = np.array([e for e, _ in mechs])
    delta = 1 / n**2
    assert dqrs_epsilon(T, eta, s, n, 0.0, "zcdp") == pytest.approx(eps.sum(), rel=1e-10)
    adv = math.sqrt(2 * math.log(1 / delta) * np.sum(eps**2)) + np.sum(eps * np.expm1(eps))
    assert dqrs_epsilon(T, eta, s, n, delta, "advanced") == pytest.approx(min(adv, eps.sum()), rel=1e-10)
    rho = sum(e**2 / 8 if k == "em" else e**2 / 2 for e, k in mechs)
    assert dqrs_rho(T, eta, s, n) == pytest.approx(rho, rel=1e-10)
    assert dqrs_epsilon(T, eta, s, n, delta, "zcdp") == pytest.approx(zcdp_to_eps_cks(rho, delta), rel=1e-10)


def test_plan_is_the_largest_T_within_budget():
    n, delta = 48842, 1 / 48842**2
    plan = DQRS().plan(n, None, Budget(1.0, delta), params())
    T = plan["rounds"]
    assert dqrs_epsilon(T, 0.1, 1000, n, delta, "zcdp") <= 1.0 < dqrs_epsilon(T + 1, 0.1, 1000, n, delta, "zcdp")
    assert plan["fresh_draws_total"] < plan["fresh_draws_dualquery_would_make"]


def test_epsilon_too_small_names_the_smallest_that_works():
    n, delta = 2000, 1 / 2000**2
    with pytest.raises(BudgetError) as err:
        DQRS().plan(n, None, Budget(1e-5, delta), params())
    need = dqrs_epsilon(2, 0.1, 1000, n, delta, "zcdp")
    assert f"{need:.4g}" in str(err.value) and "too small" in str(err.value)


def test_rejection_sampling_yields_the_next_distribution():
    """Lemma 8 with the sign convention used: kept samples of Q^t are distributed as Q^{t+1}."""
    true = np.array([0.6, 0.3, 0.1, 0.0])
    w = QueryWeights(true, eta=0.8)
    w.update(np.array([1]))
    w.update(np.array([1]))  # the synthetic side over-answers query 1
    rng = np.random.default_rng(0)
    N = 300_000
    old = w.sample(Randomness(10), N)  # from Q^t (a stream independent of the coins below)
    cells = np.array([2])  # x^t satisfies query 2
    payoff = w.payoff(old, cells)
    t = 3
    kept = old[rng.random(N) < acceptance_probability(payoff, 0.8, t)]
    w.update(cells)  # Q^{t+1}
    lw = w.log_weights()
    p_next = np.exp(lw - lw.max())
    p_next /= p_next.sum()
    counts = np.bincount(kept, minlength=len(p_next))
    assert stats.chisquare(counts, len(kept) * p_next).pvalue > 1e-3
    # and it differs from Q^t, so the test has power
    lw_old = w.log_weights() - 0.8 * np.concatenate(
        [true - np.isin(np.arange(4), cells), -(true - np.isin(np.arange(4), cells))]
    )
    p_old = np.exp(lw_old - lw_old.max())
    p_old /= p_old.sum()
    assert stats.chisquare(counts, len(kept) * p_old).pvalue < 1e-6


def test_fresh_draws_and_acceptance_coins_come_from_the_samplers():
    """[VTBSW20] Alg. 4: after round t, m_t fresh draws and (once m_t < s) one coin per old sample, all
    from ctx.noise."""
    from dpcore.mechanisms.base import Budget
    from dpcore.mechanisms.dqrs import DQRS

    ds = planted_dataset(n=800)
    wl = Workload.all_kway(ds.domain, 2)
    ctx, spy = spy_context(4)
    params = DQRS.validate_params({"samples": 40, "max_rounds": 8, "eta": 0.05, "time_limit": 5.0})
    res = DQRS().run(ds, wl, Budget(1.0, 1e-6), params, ctx)
    T = len(res.trace)
    assert T == 8 and spy.calls["sample_log_weights"] == T - 1
    fresh = [len(out) for name, out in spy.log if name == "sample_log_weights"]
    assert fresh == [int(fresh_draws(t, 0.05, 40)) for t in range(1, T)]
    coins = [len(out) for name, out in spy.log if name == "uniform"]
    recycled = sum(1 for t in range(1, T) if fresh_draws(t, 0.05, 40) < 40)
    # sample_log_weights inverts the CDF at uniforms (one call each), and after a recycling round one coin
    # per slot of the previous sample (at most s: kept + fresh can fall short of s)
    assert recycled > 0 and len(coins) == (T - 1) + recycled and max(coins) <= 40


def test_planted_data_well_below_uniform():
    ds = planted_dataset(n=4000)
    wl = Workload.all_kway(ds.domain, 2)
    rel, internal = run_release(ds, wl, "dqrs", 1.0, None, {"samples": 50, "max_rounds": 100}, seed=0, ledger=None)
    ev = internal.report
    assert ev["max_error"] < 0.4 * ev["baselines"]["uniform"]["max_error"]
    spent = rel.card["privacy"]["epsilon_spent"]  # rounded up to 4 digits, never above the budget
    assert rel.rows.shape == (100, 4) and spent <= 1.0
    assert spent == pytest.approx(dqrs_epsilon(100, 0.1, 50, 4000, 1 / 4000**2, "zcdp"), rel=1e-3)
    trace = ev["trace"]
    # recycling happens once (2γ_t + 4η) < 1: after that the kept + fresh pool is cut to s
    assert trace[0]["kept"] == 0 and trace[0]["fresh"] == 50
    assert all(e["kept"] > 0 and e["fresh"] < 50 for e in trace[5:-1])
