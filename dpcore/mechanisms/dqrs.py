"""DQRS: DualQuery with rejection sampling ([VTBSW20], Vietri et al. 2020, Algorithm 4).

As DualQuery (:mod:`dpcore.mechanisms.dualquery`), but the s queries the oracle sees
in round t+1 are mostly *recycled* from round t: each old sample q is kept with
probability ``Q̂^{t+1}_q / Q^t_q = exp(-η - γ_t + η A_D(x^t, q))`` (``A_D(x, q) =
q(D) - q(x)``, the sign convention of ALGORITHMS.md), ``γ_t = 1/(2 t^{2/3})``, and
``m_t = ceil((2γ_t + 4η) s)`` fresh draws from Q^{t+1} are added; the union is cut
to s at random.  By Lemma 8 the kept samples are distributed as Q^{t+1}.  Output:
the T records x^1..x^T (Theorem 7).

Privacy guarantee (derivation; replace-one neighbours, n public).  Round 1's samples
are uniform (free).  After round t (t = 1..T-1) the run touches the data twice:

1. **Fresh draws.**  Q^{t+1}_q ∝ exp(η Σ_{i≤t} A_D(x^i, q)); the score has
   sensitivity t/n, so each draw is the exponential mechanism with
   ``ε_em(t) = 2ηt/n`` ([GGHRW14] Thm 4.2's argument).  m_t draws.
2. **Accept/reject tests.**  One Bernoulli per slot of S_t (at most s; an empty
   slot is a constant mechanism, so counting s tests is an upper bound that does not
   depend on the data).  With p(D) = exp(-η - γ_t + η A_D) and |A_D - A_D'| ≤ 1/n:
   accepting changes by at most a factor e^{η/n}; since A_D ≤ 1, p ≤ e^{-γ_t}, so
   rejecting changes by at most ``(1 - e^{-γ_t - η/n}) / (1 - e^{-γ_t})``.  Each test
   is therefore ε_rs(t)-DP with
   ``ε_rs(t) = max(η/n, ln(1 + (1 - e^{-η/n}) / (e^{γ_t} - 1)))  ≤  max(η/n, η/(γ_t n))``,
   the last form being [VTBSW20] Lemma 9 (we use the exact left-hand side, which is
   never larger).
3. The oracle, the free attributes and the random cut to s are post-processing.

Every draw of steps 1–2 comes from ``ctx.noise``: the fresh draws by ``sample_log_weights``, the
accept/reject coins by comparing cryptographic 53-bit uniforms with the acceptance probability
(exact to 2^-53 per test; no vetted Bernoulli sampler for an arbitrary probability is used).

When ``m_t ≥ s`` (early rounds, or η ≥ 1/4) recycling cannot help: we draw s fresh
samples (exactly DualQuery's step) and run no tests, which is both cheaper and an
exact sample of Q^{t+1}.  All mechanisms compose adaptively; accountants:

* δ = 0: basic composition, ``ε = Σ_t [m_t ε_em(t) + s ε_rs(t)]``;
* δ > 0, 'advanced': heterogeneous advanced composition (Kairouz, Oh, Viswanath
  2015, Thm 3.5; its homogeneous case is [GGHRW14] Lemma 2.4 / Thm 4.3):
  ``ε = sqrt(2 ln(1/δ) Σ_i ε_i²) + Σ_i ε_i (e^{ε_i} - 1)``, capped by the basic sum
  (KOV's third bound has ε_i (e^{ε_i} - 1)/(e^{ε_i} + 1) in the second sum; ours is
  larger, hence also valid, and matches the form of [GGHRW14] Thm 4.3);
* δ > 0, 'zcdp': each EM draw is ε_em²/8-zCDP (bounded range), each test is
  ε_rs²/2-zCDP (pure DP); ρ's add; Canonne–Kamath–Steinke conversion.

Privacy holds whatever SCIP returns ("robust").
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from ..oracles.best_response import OracleStats
from ..privacy import zcdp_to_eps_cks
from .base import Budget, MechanismResult, Param, RunContext, SpendRecord
from .dualquery import (
    DEFAULT_TIME_LIMIT,
    DualQuery,
    QueryWeights,
    _label,
    accountant_label,
    oracle_record,
    record_cells,
    time_limit_from,
)

#: Bisection ceiling for T (the per-T cost is O(T)).
DQRS_T_CEILING = 1_000_000


def gamma(t: np.ndarray | int) -> np.ndarray:
    """γ_t = 1 / (2 t^{2/3}) ([VTBSW20], Algorithm 4)."""
    return 0.5 / np.power(np.asarray(t, dtype=np.float64), 2.0 / 3.0)


def fresh_draws(t: np.ndarray | int, eta: float, s: int) -> np.ndarray:
    """m_t = min(s, ceil((2γ_t + 4η) s)) fresh samples added after round t."""
    m = np.ceil((2.0 * gamma(t) + 4.0 * eta) * s - 1e-9)
    return np.minimum(m, s).astype(np.int64)


def rejection_test_epsilon(t: np.ndarray | int, eta: float, n: int) -> np.ndarray:
    """Exact per-test ε of the accept/reject step after round t (module docstring, item 2)."""
    a = eta / n
    rej = np.log1p(-np.expm1(-a) / np.expm1(gamma(t)))
    return np.maximum(a, rej)


def acceptance_probability(payoff: np.ndarray, eta: float, t: int) -> np.ndarray:
    """Q̂^{t+1}_q / Q^t_q = exp(-η - γ_t + η A_D(x^t, q)) ≤ e^{-γ_t} < 1 (A_D ≤ 1)."""
    return np.exp(-eta - float(gamma(t)) + eta * np.asarray(payoff, dtype=np.float64))


def lemma9_epsilon(t: np.ndarray | int, eta: float, n: int) -> np.ndarray:
    """[VTBSW20] Lemma 9's bound max(η/n, η/(γ_t n)), for comparison."""
    return np.maximum(eta / n, eta / (gamma(t) * n))


def dqrs_costs(T: int, eta: float, s: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ε-DP mechanism a T-round run composes, as (ε values, multiplicities),
    and the split (EM draws first, then tests) is kept for zCDP."""
    if T <= 1:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    t = np.arange(1, T, dtype=np.float64)
    m = fresh_draws(t, eta, s)
    eps_em = 2.0 * eta * t / n
    tests = np.where(m < s, s, 0)
    eps_rs = rejection_test_epsilon(t, eta, n)
    return np.concatenate([eps_em, eps_rs]), np.concatenate([m, tests])


def dqrs_rho(T: int, eta: float, s: int, n: int) -> float:
    eps, mult = dqrs_costs(T, eta, s, n)
    half = len(eps) // 2
    return float(np.dot(mult[:half], eps[:half] ** 2) / 8.0 + np.dot(mult[half:], eps[half:] ** 2) / 2.0)


def dqrs_epsilon(T: int, eta: float, s: int, n: int, delta: float, accountant: str) -> float:
    eps, mult = dqrs_costs(T, eta, s, n)
    if len(eps) == 0:
        return 0.0
    basic = float(np.dot(mult, eps))
    if delta <= 0:
        return basic
    if accountant == "zcdp":
        return zcdp_to_eps_cks(dqrs_rho(T, eta, s, n), delta)
    if eps.max() > 700:
        return basic
    adv = math.sqrt(2.0 * math.log(1.0 / delta) * float(np.dot(mult, eps**2))) + float(
        np.dot(mult, eps * np.expm1(eps))
    )
    return min(basic, adv)


class DQRS(DualQuery):
    name = "dqrs"
    title = "DQRS (DualQuery with rejection sampling)"
    paper = "[VTBSW20] (Vietri et al. 2020), Algorithm 4, Lemmas 8–9"
    privacy = "robust"
    output = "rows"
    summary = (
        "DualQuery that recycles its sampled queries: instead of drawing s new queries from the weights "
        "every round (which costs privacy each time), it keeps each old sample with a probability that "
        "tracks how the weights changed and only draws a few fresh ones. Cheaper rounds mean more rounds "
        "for the same ε — once the run is long enough for recycling to pay off."
    )
    accounting = (
        "Fresh draws after round t: exponential mechanism, ε = 2ηt/n each. Accept/reject tests: "
        "ε = max(η/n, ln(1 + (1-e^{-η/n})/(e^{γ_t}-1))) ≤ [VTBSW20] Lemma 9's max(η/n, η/(γ_t n)). "
        "Composed by heterogeneous advanced composition (Kairouz et al. 2015) or zCDP (CKS); "
        "basic composition for δ = 0. Derivation in dpcore/mechanisms/dqrs.py."
    )
    parameters = (
        Param(
            "eta",
            "float",
            0.1,
            "MW learning rate η. Recycling needs a small η: (4η + 2γ_t)s fresh samples "
            "are drawn per round, so η ≥ 0.25 makes DQRS plain DualQuery. [VTBSW20]'s analysis sets "
            "η = α/4 (α the target error).",
            low=0.001,
            high=10.0,
            log=True,
        ),
        Param("samples", "int", 1000, "Queries the oracle sees per round (s).", low=1, high=100_000, log=True),
        Param(
            "accountant",
            "choice",
            "zcdp",
            "Composition when δ > 0: 'zcdp' (ρ's add, CKS conversion) or "
            "'advanced' (heterogeneous advanced composition).",
            choices=("zcdp", "advanced"),
        ),
        Param(
            "max_rounds",
            "int",
            None,
            "Cap on the number of rounds T (only lowers T; privacy is accounted "
            "for the rounds actually run). Empty = as many as the budget buys.",
            low=2,
            high=1_000_000,
            optional=True,
        ),
        Param(
            "time_limit",
            "float",
            DEFAULT_TIME_LIMIT,
            "SCIP time limit per round, seconds.",
            low=0.05,
            high=3600.0,
            log=True,
            advanced=True,
        ),
    )
    recommended = False
    # Bundled Adult, 8 two-way marginals, ε = 1: ~6 s; the trace shows samples being kept and recycled.
    teaching_preset: ClassVar[dict] = {"eta": 0.2, "samples": 50, "max_rounds": 60, "time_limit": 2.0}
    theorem = "[VTBSW20] Algorithm 4, Lemma 9"
    t_ceiling = DQRS_T_CEILING  # the per-T cost is O(T)

    def epsilon_of(self, T: int, n: int, budget: Budget, params: dict) -> float:
        return dqrs_epsilon(T, params["eta"], params["samples"], n, budget.delta, params["accountant"])

    def plan(self, n: int, workload, budget: Budget, params: dict) -> dict:
        T, T_budget = self.rounds(n, budget, params)
        fresh = fresh_draws(np.arange(1, T), params["eta"], params["samples"]) if T > 1 else np.zeros(0)
        return {
            "rounds": T,
            "rounds_budget_allows": T_budget,
            "samples_per_round": params["samples"],
            "fresh_draws_total": int(fresh.sum()),
            "fresh_draws_dualquery_would_make": int(params["samples"] * (T - 1)),
            "epsilon_planned": self.epsilon_of(T, n, budget, params),
            "oracle_calls": T,
            "synthetic_rows": T,
        }

    def run(self, dataset, workload, budget: Budget, params: dict, ctx: RunContext) -> MechanismResult:
        plan = self.plan(dataset.n, workload, budget, params)
        T, s, eta, n = plan["rounds"], int(params["samples"]), float(params["eta"]), dataset.n
        time_limit = time_limit_from(params, ctx)
        true = workload.answers(dataset.codes)
        weights = QueryWeights(true, eta)
        nq2 = 2 * workload.n_queries
        sample = ctx.rng.integers(0, nq2, size=s)  # S_1 ~ uniform(Q ∪ ¬Q): free
        synth_counts = np.zeros(workload.n_queries)
        stats = OracleStats()
        rows, trace = [], []
        prev = None
        for t in range(1, T + 1):
            ctx.check_cancel()
            record, res, n_clauses = oracle_record(workload, sample, ctx.rng, time_limit, stats, warm_start=prev)
            cells = record_cells(workload, record)
            heavy = weights.heaviest()
            rows.append(record)
            prev = record
            synth_counts[cells] += 1.0
            err = np.abs(true - synth_counts / t)
            entry = {
                "round": t,
                "heaviest_query": _label(workload, heavy),
                "distinct_clauses": n_clauses,
                "oracle_status": res.status,
                "oracle_seconds": res.seconds,
                "oracle_gap": res.gap,
                "max_error": float(err.max()),
                "mean_error": float(err.mean()),
            }
            if t < T:
                payoff = weights.payoff(sample, cells)  # A_D(x^t, q) for the old samples
                weights.update(cells)  # now Q^{t+1}
                m = int(fresh_draws(t, eta, s))
                fresh = weights.sample(ctx.noise, m)  # m EM draws at ε = 2ηt/n
                if m < s:
                    coins = ctx.noise.uniform(len(sample))
                    accept = coins < acceptance_probability(payoff, eta, t)  # ε_rs(t) each
                    kept = sample[accept]
                    pool = np.concatenate([kept, fresh])
                    if len(pool) > s:
                        pool = pool[ctx.rng.permutation(len(pool))[:s]]
                    entry.update(kept=int(accept.sum()), fresh=m)
                else:
                    pool = fresh
                    entry.update(kept=0, fresh=m)
                sample = pool
            trace.append(entry)
            ctx.report(t, T, f"round {t} of {T}", max_error=entry["max_error"], oracle_status=res.status)
        eps = self.epsilon_of(T, n, budget, params)
        delta = budget.delta if budget.delta > 0 else 0.0
        rho = dqrs_rho(T, eta, s, n) if (params["accountant"] == "zcdp" and delta > 0) else None
        public = {
            "rounds": T,
            "rounds_budget_allows": plan["rounds_budget_allows"],
            "samples_per_round": s,
            "eta": eta,
            "fresh_draws_total": plan["fresh_draws_total"],
        }
        if rho is not None:
            public["rho"] = rho
        return MechanismResult(
            spends=[
                SpendRecord(
                    eps, delta, rho, f"dqrs: {T} rounds, {plan['fresh_draws_total']} fresh MW draws + rejection tests"
                )
            ],
            epsilon_spent=eps,
            delta_spent=delta,
            accountant=accountant_label(delta, params["accountant"], self.theorem),
            rows=np.array(rows, dtype=np.int64),
            public=public,
            trace=trace,
            oracle_stats=stats.to_dict(),
        )
