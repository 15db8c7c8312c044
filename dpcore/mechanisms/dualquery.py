"""DualQuery ([GGHRW14], Gaboardi, Gallego Arias, Hsu, Roth, Wu 2014, Algorithm 2).

The query player runs multiplicative weights (MW) over Q ∪ ¬Q; the data player
best-responds with one record per round, found by the SCIP oracle
(:mod:`dpcore.oracles.best_response`).  The output is the multiset of the T records.

Privacy guarantee.  Replace-one neighbours (n public).  The only accesses to the data
are the draws from the MW distribution: in round t (1-based) the distribution is
``Q^t_q ∝ exp(η r_t(D, q))`` with ``r_t(D, q) = sum_{i<t} (q(D) - q(x^i))``, whose
sensitivity is (t-1)/n, so each of the s draws of round t is the exponential
mechanism with ``ε_t = 2η(t-1)/n`` ([GGHRW14], proof of Thm 4.2).  Everything else
(the oracle, the random free attributes) is post-processing, so privacy does not
depend on SCIP solving exactly ("robust").  The draws come from ``ctx.noise``
(``sample_log_weights``: inverse CDF of cryptographic 53-bit uniforms; no vetted sampler
exists for many draws from a Gibbs distribution, see docs/privacy.md).  Composition over the s(T-1) non-trivial
draws (round 1 is uniform and free):

* δ = 0, basic composition:   ``ε = η T (T-1) s / n``                  ([GGHRW14], Thm 4.2)
* δ > 0, advanced composition with the largest ε' = 2η(T-1)/n and k = s(T-1):
  ``ε = (2η(T-1)/n) [sqrt(2 s (T-1) ln 1/δ) + s (T-1) (exp(2η(T-1)/n) - 1)]``  (Thm 4.3)
* optional zCDP: each draw is ε_t²/8-zCDP (exponential mechanism, bounded range),
  ``ρ = s Σ_t ε_t²/8 = s η² (T-1) T (2T-1) / (12 n²)``, converted to (ε, δ) with
  Canonne–Kamath–Steinke.

Given (ε, δ, η, s) the mechanism runs the largest T whose bound is ≤ ε (never more
than ``max_rounds``), and the spent ε is the bound *at the T actually run*.

The MW update uses the sign that makes the analysis consistent (the printed
``exp(-η A_D)`` in Algorithm 2 has a sign slip, see ALGORITHMS.md): weight moves to
queries the synthetic records under-answer, ``Q^{t+1}_q ∝ Q^t_q exp(η (q(D) - q(x^t)))``.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from ..errors import BudgetError, OracleError
from ..oracles.best_response import OracleResult, OracleStats, best_response, clauses_from_queries, local_search_record
from ..privacy import check_budget, zcdp_to_eps_cks
from ..privacy.samplers import Randomness
from .base import Budget, Mechanism, MechanismResult, Param, RunContext, SpendRecord

#: Search ceiling for T: far beyond any budget a user would give (ε = 10 buys < 500
#: rounds on Adult), it only bounds the bisection.
T_CEILING = 10_000_000
#: Per-call SCIP time limit by default.  [GGHRW14] §7 used 20 s with CPLEX and "rarely
#: reached" it; our tuned model needs ~1 s at s = 1000 on Adult (bench oracle).
DEFAULT_TIME_LIMIT = 10.0


# ------------------------------------------------------------------ accounting
def dualquery_epsilon_pure(T: int, eta: float, s: int, n: int) -> float:
    """[GGHRW14], Thm 4.2: ε = η T (T-1) s / n."""
    return eta * T * (T - 1) * s / n


def dualquery_epsilon_approx(T: int, eta: float, s: int, n: int, delta: float) -> float:
    """[GGHRW14], Thm 4.3 (advanced composition of k = s(T-1) draws at ε' = 2η(T-1)/n)."""
    if T <= 1:
        return 0.0
    e1 = 2.0 * eta * (T - 1) / n
    k = s * (T - 1)
    if e1 > 700:  # exp would overflow; the bound is astronomically large anyway
        return math.inf
    return e1 * (math.sqrt(2.0 * k * math.log(1.0 / delta)) + k * math.expm1(e1))


def dualquery_rho(T: int, eta: float, s: int, n: int) -> float:
    """zCDP of T rounds: s draws per round at ε_t = 2η(t-1)/n, each ε_t²/8-zCDP."""
    return s * eta**2 * (T - 1) * T * (2 * T - 1) / (12.0 * n**2)


def dualquery_epsilon(T: int, eta: float, s: int, n: int, delta: float, accountant: str) -> float:
    """(ε at δ) of T rounds under the chosen accountant (δ = 0 always means Thm 4.2)."""
    if delta <= 0:
        return dualquery_epsilon_pure(T, eta, s, n)
    if accountant == "zcdp":
        return zcdp_to_eps_cks(dualquery_rho(T, eta, s, n), delta) if T > 1 else 0.0
    return dualquery_epsilon_approx(T, eta, s, n, delta)


def largest_rounds(epsilon_of_T, epsilon: float, ceiling: int = T_CEILING) -> int:
    """Largest T ≥ 1 with epsilon_of_T(T) ≤ ε (epsilon_of_T is non-decreasing, 0 at T = 1)."""
    lo, hi = 1, 2  # grow hi until it fails: the costs explode long before the ceiling
    while epsilon_of_T(hi) <= epsilon:
        lo = hi
        if hi >= ceiling:
            return ceiling
        hi = min(2 * hi, ceiling)
    # invariant: ok(lo), not ok(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if epsilon_of_T(mid) <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo


def accountant_label(delta: float, accountant: str, theorem: str) -> str:
    if delta <= 0:
        return f"pure ε, basic composition ({theorem})"
    if accountant == "zcdp":
        return f"zCDP, ρ's add ({theorem}), Canonne–Kamath–Steinke conversion"
    return f"(ε, δ) advanced composition ({theorem})"


# ------------------------------------------------------------------ shared machinery
class QueryWeights:
    """The MW distribution over Q ∪ ¬Q, kept as a cumulative score in log space.

    ``score[q] = sum_i (q(D) - q(x^i))`` over the rounds so far; the log-weight of q is
    ``η score[q]`` and of ¬q is ``-η score[q]`` (since ¬q(D) - ¬q(x) = -(q(D) - q(x))).
    No exponentials are ever formed, so large T cannot overflow.
    """

    def __init__(self, true_answers: np.ndarray, eta: float) -> None:
        self.true = np.asarray(true_answers, dtype=np.float64)
        self.eta = float(eta)
        self.score = np.zeros_like(self.true)

    @property
    def n_queries(self) -> int:
        return len(self.true)

    def log_weights(self) -> np.ndarray:
        return self.eta * np.concatenate([self.score, -self.score])

    def sample(self, noise: Randomness, size: int) -> np.ndarray:
        """``size`` i.i.d. draws from the distribution: each an exponential-mechanism draw ([GGHRW14] Thm 4.2)."""
        return noise.sample_log_weights(self.log_weights(), size)

    def payoff(self, qids: np.ndarray, record_cells: np.ndarray) -> np.ndarray:
        """A_D(x, q) = q(D) - q(x) for flat ids of Q ∪ ¬Q, x given by the cells it satisfies."""
        qids = np.asarray(qids, dtype=np.int64)
        nq = self.n_queries
        base = np.where(qids >= nq, qids - nq, qids)
        hit = np.isin(base, record_cells)
        a = self.true[base] - hit
        return np.where(qids >= nq, -a, a)

    def update(self, record_cells: np.ndarray) -> None:
        self.score += self.true
        self.score[record_cells] -= 1.0

    def heaviest(self) -> int:
        """Flat id (in Q ∪ ¬Q) of the query the distribution weights most."""
        i = int(np.argmax(np.abs(self.score)))
        return i if self.score[i] >= 0 else i + self.n_queries


def record_cells(workload, record: np.ndarray) -> np.ndarray:
    """Flat ids of the cells (one per marginal) a record satisfies."""
    row = np.asarray(record, dtype=np.int64).reshape(1, -1)
    return np.array(
        [workload.offsets[j] + workload.cell_index(row, j)[0] for j in range(workload.n_marginals)], dtype=np.int64
    )


def oracle_record(
    workload,
    qids: np.ndarray,
    rng: np.random.Generator,
    time_limit: float | None,
    stats: OracleStats,
    warm_start: np.ndarray | None = None,
) -> tuple[np.ndarray, OracleResult, int]:
    """Best response to the sampled queries; free attributes uniform at random.

    Never raises on a solver failure: SCIP's incumbent is used at a time-out, and if
    SCIP returns nothing the local-search record is used (status ``"heuristic"``).
    Privacy does not depend on this step (it only post-processes the samples).
    """
    shape = workload.domain.shape
    clauses = clauses_from_queries(workload, qids)
    try:
        res = best_response(shape, clauses, time_limit=time_limit, warm_start=warm_start)
    except OracleError:
        rec, val = local_search_record(shape, clauses, starts=[] if warm_start is None else [warm_start])
        res = OracleResult(rec, "heuristic", val, math.inf, math.inf, 0.0, False)
    stats.add(res)
    record = np.asarray(res.record, dtype=np.int64).copy()
    # [GGHRW14] §7: attributes no sampled clause mentions are set at random (dense data).
    touched = clauses.touched_attributes()
    for a in range(len(shape)):
        if a not in touched:
            record[a] = rng.integers(0, shape[a])
    return record, res, len(clauses)


def time_limit_from(params: dict, ctx: RunContext) -> float | None:
    tl = ctx.oracle_options.get("time_limit", params.get("time_limit", DEFAULT_TIME_LIMIT))
    return None if tl is None else float(tl)


# ------------------------------------------------------------------ mechanism
class DualQuery(Mechanism):
    name = "dualquery"
    title = "DualQuery (multiplicative weights over queries + SCIP best response)"
    paper = "[GGHRW14] (Gaboardi et al. 2014), Algorithm 2, Theorems 4.2/4.3"
    privacy = "robust"
    output = "rows"
    summary = (
        "A game between a query player and a data player. The query player keeps weights on every "
        "query (and its negation) and shifts weight to the queries the synthetic data gets most wrong; "
        "each round it privately samples s queries from those weights, and the SCIP solver finds the one "
        "record that satisfies as many of them as possible. The synthetic table is the T records found. "
        "Privacy comes only from the sampling, so it holds even if the solver stops early."
    )
    accounting = (
        "Each of the s draws in round t is an exponential-mechanism draw with ε_t = 2η(t-1)/n "
        "([GGHRW14] Thm 4.2). δ = 0: basic composition, ε = ηT(T-1)s/n (Thm 4.2). δ > 0: advanced "
        "composition of s(T-1) draws (Thm 4.3), or zCDP (ρ = sΣε_t²/8, CKS conversion) on request. "
        "T is the largest number of rounds the budget allows."
    )
    parameters = (
        # [GGHRW14] §7 runs Adult (and KDD99) with η = 2.0, s = 1000; measured on the 64-marginal Adult
        # workload at ε = 1 (docs/benchmarks.md, DualQuery and DQRS) η = 2.0 halves the max error of η = 0.4
        # (0.22 vs 0.42): with T in the tens, only a large η moves the weights far enough from uniform over ~10^6
        # queries.
        Param(
            "eta",
            "float",
            2.0,
            "MW learning rate η: how fast weight moves to badly answered queries. [GGHRW14] "
            "uses 2.0 on Adult and KDD99 (with s = 1000); 0.4 suits long runs (many rounds) on dense data.",
            low=0.001,
            high=10.0,
            log=True,
        ),
        Param(
            "samples",
            "int",
            1000,
            "Queries sampled per round (s). More samples: better best responses, "
            "fewer rounds for the same ε. [GGHRW14] uses 1000 on Adult.",
            low=1,
            high=100_000,
            log=True,
        ),
        Param(
            "accountant",
            "choice",
            "advanced",
            "How the s(T-1) draws are composed when δ > 0: 'advanced' "
            "is [GGHRW14] Thm 4.3; 'zcdp' is tighter (more rounds for the same ε, δ).",
            choices=("advanced", "zcdp"),
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
            "SCIP time limit per round, seconds. At the limit the "
            "best record found so far is used (privacy is unaffected).",
            low=0.05,
            high=3600.0,
            log=True,
            advanced=True,
        ),
    )
    recommended = False  # the projection is the recommended default for rows (issue 8)
    # Bundled Adult, 8 two-way marginals, ε = 1: ~3 s, max error ~0.12 vs 0.85 for uniform.  A large η
    # ([GGHRW14]'s sparse-data value) moves the weights visibly within 20 rounds.
    teaching_preset: ClassVar[dict] = {"eta": 2.0, "samples": 100, "max_rounds": 20, "time_limit": 2.0}

    theorem = "[GGHRW14] Thm 4.2/4.3"
    t_ceiling = T_CEILING

    # ----------------------------------------------------------- accounting
    def epsilon_of(self, T: int, n: int, budget: Budget, params: dict) -> float:
        return dualquery_epsilon(T, params["eta"], params["samples"], n, budget.delta, params["accountant"])

    def rounds(self, n: int, budget: Budget, params: dict) -> tuple[int, int]:
        """(T to run, largest T the budget allows); BudgetError with the smallest ε when
        the budget cannot buy one data-dependent round (T = 2; round 1 is uniform and free)."""
        check_budget(budget.epsilon, budget.delta)
        T_budget = largest_rounds(
            lambda T: self.epsilon_of(T, n, budget, params), budget.epsilon, ceiling=self.t_ceiling
        )
        if T_budget < 2:
            need = self.epsilon_of(2, n, budget, params)
            raise BudgetError(
                f"ε = {budget.epsilon:g} is too small for even one data-dependent round of {self.title} with "
                f"η = {params['eta']:g} and s = {params['samples']} on n = {n:,} rows: the smallest ε that works "
                f"is {need:.4g}. Raise ε, or lower η or the samples per round."
            )
        T = T_budget if params.get("max_rounds") is None else min(T_budget, int(params["max_rounds"]))
        return T, T_budget

    def plan(self, n: int, workload, budget: Budget, params: dict) -> dict:
        T, T_budget = self.rounds(n, budget, params)
        return {
            "rounds": T,
            "rounds_budget_allows": T_budget,
            "samples_per_round": params["samples"],
            "epsilon_per_draw_last_round": 2.0 * params["eta"] * (T - 1) / n,
            "epsilon_planned": self.epsilon_of(T, n, budget, params),
            "oracle_calls": T,
            "synthetic_rows": T,
        }

    # ----------------------------------------------------------- run
    def run(self, dataset, workload, budget: Budget, params: dict, ctx: RunContext) -> MechanismResult:
        plan = self.plan(dataset.n, workload, budget, params)
        T, s, eta = plan["rounds"], int(params["samples"]), float(params["eta"])
        time_limit = time_limit_from(params, ctx)
        true = workload.answers(dataset.codes)
        weights = QueryWeights(true, eta)
        synth_counts = np.zeros(workload.n_queries)
        stats = OracleStats()
        rows, trace = [], []
        prev = None
        for t in range(1, T + 1):
            ctx.check_cancel()
            heavy = weights.heaviest()
            qids = weights.sample(ctx.noise, s)  # [GGHRW14] Thm 4.2: s EM draws at ε_t = 2η(t-1)/n
            ctx.check_cancel()
            record, res, n_clauses = oracle_record(workload, qids, ctx.rng, time_limit, stats, warm_start=prev)
            cells = record_cells(workload, record)
            weights.update(cells)
            rows.append(record)
            prev = record
            synth_counts[cells] += 1.0
            err = np.abs(true - synth_counts / t)
            trace.append(
                {
                    "round": t,
                    "heaviest_query": _label(workload, heavy),
                    "distinct_clauses": n_clauses,
                    "oracle_status": res.status,
                    "oracle_seconds": res.seconds,
                    "oracle_gap": res.gap,
                    "max_error": float(err.max()),
                    "mean_error": float(err.mean()),
                }
            )
            ctx.report(t, T, f"round {t} of {T}", max_error=trace[-1]["max_error"], oracle_status=res.status)
        eps = self.epsilon_of(T, dataset.n, budget, params)
        delta = budget.delta if budget.delta > 0 else 0.0
        rho = dualquery_rho(T, eta, s, dataset.n) if (params["accountant"] == "zcdp" and delta > 0) else None
        public = {
            "rounds": T,
            "rounds_budget_allows": plan["rounds_budget_allows"],
            "samples_per_round": s,
            "eta": eta,
            "epsilon_per_draw_last_round": plan["epsilon_per_draw_last_round"],
        }
        if rho is not None:
            public["rho"] = rho
        return MechanismResult(
            spends=[SpendRecord(eps, delta, rho, f"{self.name}: {T} rounds × {s} MW samples")],
            epsilon_spent=eps,
            delta_spent=delta,
            accountant=accountant_label(delta, params["accountant"], self.theorem),
            rows=np.array(rows, dtype=np.int64),
            public=public,
            trace=trace,
            oracle_stats=stats.to_dict(),
        )


def _label(workload, qid: int) -> str:
    nq = workload.n_queries
    return ("NOT " + workload.query_label(qid - nq)) if qid >= nq else workload.query_label(qid)
