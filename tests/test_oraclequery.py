"""OracleQuery ([NRW19] §IV): the query player's oracle against brute force, the accounting of the three
Theorem 10 variants against their closed forms, exactness checks and the robust PRSMA path."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcore.errors import BudgetError, OracleError, ParameterError
from dpcore.learning.rspm import gaussian_sigma
from dpcore.mechanisms.base import Budget, RunContext
from dpcore.mechanisms.oraclequery import (
    OracleQuery,
    OracleQueryPRSMA,
    UncertifiedSolve,
    conjunction_from_literals,
    objective,
    per_round_budget,
    total_privacy,
    worst_conjunction_brute_force,
    worst_conjunction_exhaustive,
    worst_conjunction_ip,
)
from dpcore.privacy import eps_to_zcdp, zcdp_to_eps_cks
from dpcore.query_classes import ConjunctionClass
from dpcore.workload import Workload

from .conftest import planted_dataset
from .spy_noise import spy_context


# ------------------------------------------------------------------ the learner's oracle
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_ip_and_exhaustive_find_the_brute_force_optimum(seed, k):
    """min_S Σ w q_S(x) + Σ_{l∈S} η_l over all conjunctions of width ≤ k: SCIP = enumeration = brute force."""
    ds = planted_dataset(n=120, seed=seed)
    rng = np.random.default_rng(seed)
    shape = ds.domain.shape
    synth = rng.integers(0, shape, size=(4, len(shape)))
    records = np.concatenate([ds.codes, synth])
    sign = 1.0 if seed % 2 == 0 else -1.0
    w = sign * np.concatenate([np.full(ds.n, -1.0), np.full(4, ds.n / 4)])
    eta = rng.laplace(0.0, 5.0, size=sum(shape))
    _, best = worst_conjunction_brute_force(shape, records, w, k, eta)
    lits, res = worst_conjunction_ip(shape, records, w, k, eta, time_limit=60)
    assert res.optimal and res.objective == pytest.approx(best, abs=1e-6)
    # the returned literal set really attains it, and is a member of the class
    q = conjunction_from_literals(shape, lits, k)
    assert ConjunctionClass(ds.domain, k).membership(q).all()
    assert objective(shape, records, w, eta, q)[0] == pytest.approx(best, abs=1e-6)
    _lits2, res2 = worst_conjunction_exhaustive(shape, records, w, k, eta)
    assert res2.objective == pytest.approx(best, abs=1e-9)


def test_without_noise_the_learner_returns_the_worst_conjunction():
    """err(q) = q(D) − q(D̂): the positive call maximises it over C_k, the negated call over ¬C_k."""
    ds = planted_dataset(n=200)
    shape = ds.domain.shape
    synth = np.array([[1, 0, 1, 1], [2, 1, 2, 0]])
    cls = ConjunctionClass(ds.domain, 2)
    members = cls.enumerate()
    err = cls.answers(ds.codes, members) - cls.answers(synth, members)
    records = np.concatenate([ds.codes, synth])
    for sign, negated in ((1.0, False), (-1.0, True)):
        w = sign * np.concatenate([np.full(ds.n, -1.0), np.full(2, ds.n / 2)])
        lits, _res = worst_conjunction_ip(shape, records, w, 2)
        q = conjunction_from_literals(shape, lits, 2)
        q_signed = type(q)(q.attrs, q.values, np.array([negated]))
        got = cls.answers(ds.codes, q_signed) - cls.answers(synth, q_signed)
        assert got[0] == pytest.approx(err[members.negated == negated].max(), abs=1e-12)


# ------------------------------------------------------------------ accounting (closed forms)
def test_rspm_pure_accounting():
    b = per_round_budget("rspm", 2.0, 0.0, 10)
    # basic composition: T (2 ε_L + ε_sel) = ε, with ε_L = ε_sel = ε/(3T)
    assert b["eps_learner"] == pytest.approx(2.0 / 30) and b["eps_select"] == pytest.approx(2.0 / 30)
    assert total_privacy("rspm", b, 10, 0.0) == (pytest.approx(2.0), 0.0)


def test_rspm_zcdp_accounting():
    eps, delta, T = 1.0, 1e-9, 25
    b = per_round_budget("rspm", eps, delta, T)
    rho = eps_to_zcdp(eps, delta)
    # two ε_L-DP calls (ε_L²/2 each) + EM at ε_L (ε_L²/8) per round
    assert T * (b["eps_learner"] ** 2 + b["eps_select"] ** 2 / 8) == pytest.approx(rho, rel=1e-9)
    e, d = total_privacy("rspm", b, T, delta)
    assert e == pytest.approx(zcdp_to_eps_cks(rho, delta), rel=1e-9) and e <= eps + 1e-9 and d == delta


@pytest.mark.parametrize("variant", ["gaussian_rspm", "prsma"])
@pytest.mark.parametrize("T", [2, 50])
def test_approximate_dp_accounting(variant, T):
    eps, delta = 1.0, 1e-6
    b = per_round_budget(variant, eps, delta, T)
    eps0 = 2 * b["eps_learner"] + b["eps_select"]
    adv = math.sqrt(2 * T * math.log(2 / delta)) * eps0 + T * eps0 * math.expm1(eps0)  # [GGHRW14] Lemma 2.4, δ'=δ/2
    assert min(T * eps0, adv) == pytest.approx(eps, rel=1e-6)
    e, d = total_privacy(variant, b, T, delta)
    assert e <= eps * (1 + 1e-9) and d == pytest.approx(delta)
    assert 2 * T * b["delta_learner"] + b["delta_prime"] == pytest.approx(delta)
    with pytest.raises(BudgetError, match="δ > 0"):
        per_round_budget(variant, eps, 0.0, T)


def test_public_noise_scales_match_the_learners(planted):
    wl = Workload(planted.domain, ((0, 1),))
    m = OracleQuery()
    D = sum(planted.domain.shape)
    p = m.plan(planted.n, wl, Budget(3.0, 0.0), m.validate_params({"k": 2, "rounds": 5}))
    assert p["separator_size"] == D and p["rspm_laplace_scale_counts"] == pytest.approx(2 * D / (3.0 / 15))
    p = m.plan(planted.n, wl, Budget(3.0, 1e-6), m.validate_params({"k": 2, "rounds": 5, "variant": "gaussian_rspm"}))
    assert p["rspm_gaussian_sigma_counts"] == pytest.approx(gaussian_sigma(D, p["eps_learner"], p["delta_learner"]))
    assert OracleQuery.privacy == "oracle-dependent" and OracleQueryPRSMA.privacy == "robust"


# ------------------------------------------------------------------ runs
def test_run_at_huge_epsilon_plays_the_worst_query_each_round(planted):
    """With negligible noise each round's query is the class's worst for that round's D̂^t (brute force)."""
    wl = Workload(planted.domain, ((0, 1),))
    m = OracleQuery()
    T, s = 3, 2
    params = m.validate_params({"k": 2, "rounds": T, "samples": s, "oracle": "scip"})
    res = m.run(planted, wl, Budget(1e7, 0.0), params, RunContext.seeded(0))
    assert res.rows.shape == (T * s, 4) and res.epsilon_spent == pytest.approx(1e7) and res.delta_spent == 0
    cls = ConjunctionClass(planted.domain, 2)
    members = cls.enumerate()
    for t, row in enumerate(res.trace):
        synth = res.rows[t * s : (t + 1) * s]
        worst = (cls.answers(planted.codes, members) - cls.answers(synth, members)).max()
        assert row["query_error_on_round"] == pytest.approx(worst, abs=1e-12)
    assert res.oracle_stats["not_optimal"] == 0


def test_uncertified_oracle_stops_the_oracle_dependent_variant(planted):
    """[NRW19] Thm 6 needs exact answers: an uncertified solve (real SCIP, stopped at its time limit) ends
    the run with a typed error after the noise was drawn and the data read -- nothing is released, and the
    message says the run stays charged."""
    wl = Workload(planted.domain, ((0, 1),))
    m = OracleQuery()
    params = m.validate_params({"k": 3, "rounds": 1, "samples": 1, "oracle": "scip"})
    ctx, spy = spy_context(0, oracle_options={"time_limit": 0.001})
    with pytest.raises(UncertifiedSolve, match="nothing was released") as exc:
        m.run(planted, wl, Budget(1.0, 0.0), params, ctx)
    assert isinstance(exc.value, OracleError) and "charged" in str(exc.value)
    assert spy.calls["laplace"] == 1  # the RSPM noise had been drawn: the run touched the data


def test_an_uncertified_release_writes_nothing_and_stays_charged(planted, tmp_path):
    """End to end through run_release with a workspace ledger: the typed error reaches the caller, no release
    exists, and the ledger keeps the run charged at the ε that was asked for."""
    from dpcore.privacy.ledger import Ledger
    from dpcore.release import run_release

    wl = Workload(planted.domain, ((0, 1),))
    ledger = Ledger(str(tmp_path))
    with pytest.raises(UncertifiedSolve):
        run_release(
            planted,
            wl,
            "oraclequery",
            1.0,
            0.0,
            {"k": 3, "rounds": 1, "samples": 1, "oracle": "scip"},
            oracle_options={"time_limit": 0.001},
            ledger=ledger,
        )
    entries = ledger.entries(planted.ledger_key)
    assert len(entries) == 1 and entries[0]["epsilon"] == 1.0 and entries[0]["mechanism"] == "oraclequery"


@pytest.mark.parametrize("variant, draw", [("rspm", "laplace"), ("gaussian_rspm", "gaussian")])
def test_every_draw_goes_through_the_samplers(planted, variant, draw):
    """Per round: the data player's (s, D) perturbation, one separator-noise vector of D entries per learner
    call (OpenDP's vetted sampler) and one exponential-mechanism choice, all from ctx.noise."""
    wl = Workload(planted.domain, ((0, 1),))
    m = OracleQuery()
    T, s, D = 2, 3, sum(planted.domain.shape)
    params = m.validate_params({"k": 2, "rounds": T, "samples": s, "variant": variant})
    ctx, spy = spy_context(1)
    m.run(planted, wl, Budget(4.0, 1e-6), params, ctx)
    assert spy.calls["bulk_laplace"] == T and spy.calls[draw] == 2 * T
    assert all(np.shape(out) == (D,) for name, out in spy.log if name == draw)
    assert spy.calls["exponential_mechanism"] == T


def test_prsma_draws_partition_noise_and_pick_from_the_samplers(planted):
    wl = Workload(planted.domain, ((0, 1),))
    m = OracleQueryPRSMA()
    params = m.validate_params({"k": 2, "rounds": 1, "samples": 2})
    ctx, spy = spy_context(2)
    m.run(planted, wl, Budget(90.0, 0.9), params, ctx)
    assert spy.calls["permutation"] == 2  # one random partition per learner call
    # per learner call: one noise vector per run made, plus the scalar count noise
    assert spy.calls["laplace"] >= 2 * 2 and any(np.ndim(out) == 0 for name, out in spy.log if name == "laplace")


def test_prsma_plan_refuses_with_the_number_of_calls(adult):
    wl = Workload(adult.domain, ((0, 1),))
    m = OracleQueryPRSMA()
    with pytest.raises(BudgetError, match="PRSMA"):
        m.plan(adult.n, wl, Budget(1.0, 1.0 / adult.n**2), m.validate_params({"k": 2, "rounds": 10}))


def test_prsma_variant_runs_robustly_on_a_tiny_instance(planted):
    wl = Workload(planted.domain, ((0, 1),))
    m = OracleQueryPRSMA()
    params = m.validate_params({"k": 2, "rounds": 1, "samples": 2})
    res = m.run(planted, wl, Budget(90.0, 0.9), params, RunContext.seeded(0))
    assert res.epsilon_spent <= 90.0 and res.delta_spent == pytest.approx(0.9)
    assert res.rows.shape == (2, 4) and len(res.trace) == 1
    # a solver that always fails gives ⊥ (no query), never an exception or an unaccounted release
    res = m.run(
        planted,
        wl,
        Budget(90.0, 0.9),
        {**params, "oracle": "scip"},
        RunContext.seeded(0, oracle_options={"time_limit": 0.0}),
    )
    assert res.trace[0]["query"].startswith("⊥")


def test_ip_too_large_for_scip_is_refused_with_the_alternative(adult):
    wl = Workload(adult.domain, ((0, 1),))
    m = OracleQuery()
    with pytest.raises(ParameterError, match=r"rows .* use oracle = exhaustive"):
        m.plan(adult.n, wl, Budget(1.0, 0.0), m.validate_params({"k": 2, "oracle": "scip"}))
    assert m.plan(adult.n, wl, Budget(1.0, 0.0), m.validate_params({"k": 2}))["query_oracle"] == "exhaustive"


def test_executor_gives_the_same_release(planted):
    """All noise is drawn in the parent: serial executor and in-process runs agree exactly."""
    from dpcore.executors import SerialExecutor

    wl = Workload(planted.domain, ((0, 1),))
    m = OracleQuery()
    params = m.validate_params({"k": 2, "rounds": 2, "samples": 3})
    a = m.run(planted, wl, Budget(5.0, 0.0), params, RunContext.seeded(3))
    b = m.run(planted, wl, Budget(5.0, 0.0), params, RunContext.seeded(3, executor=SerialExecutor()))
    np.testing.assert_array_equal(a.rows, b.rows)
