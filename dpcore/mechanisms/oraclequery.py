"""OracleQuery: synthetic data for a query class too large to list ([NRW19] §IV, Thm 10).

No-regret dynamics between two players over the class C_k ∪ ¬C_k of all conjunctions
of width ≤ k (:mod:`dpcore.query_classes`), with payoff err_t(q) = q(D) − q(D̂^t):

* **Data player: Separator-FTPL** (as sepFEM, [VTBSW20] Alg. 3).  The dual class of
  conjunctions over one-hot records has the D single-literal queries as separator
  (m₂ = D), so round t plays s records
  ``x_j^t = argmax_x Σ_{i<t} q_i(x) + Σ_l σ_{jl} x_l``, ``σ_{jl} ~ Lap(η)``, solved by the
  SCIP best-response oracle (:func:`dpcore.oracles.best_response.best_response`);
  D̂^t is uniform over them.  It never reads D: no privacy cost.
* **Query player: a private oracle-efficient learner** over C_k ([NRW19] §III) that
  returns a conjunction with large error, by an IP over *which literals the
  conjunction contains* (:func:`worst_conjunction_ip`).  Loss in counts:
  L(S) = Σ_{x∈D} (−1)·q_S(x) + (n/s) Σ_j q_S(x_j^t), so err_t(q_S) = −L(S)/n and one
  record changes L by at most 1 (the setting of [NRW19] Thm 6).  The separator of
  C_k is U = {e_l = 1 − unit_l : l a literal} (m₁ = D): two different literal sets differ
  on some l, and q_S(e_l) = [l ∉ S], so the separator noise is the linear term
  Σ_l η_l [l ∈ S].  Negations ([NRW19] §IV): learn over C_k and over ¬C_k (weights
  negated) separately, then pick between the two candidates privately with the
  exponential mechanism on err_t (sensitivity 1/n).

Variants ([NRW19] Theorem 10), each per round = 2 learner calls + 1 selection:

* ``rspm`` -- Laplace RSPM, η_l ~ Lap(2m₁/ε_L) ([NRW19] Thm 6).  Each learner call
  and the selection get ε_L = ε_sel = ε₀/3.  δ = 0: basic composition, ε₀ = ε/T.
  δ > 0: zCDP, ρ = T (2·ε_L²/2 + ε_sel²/8) (pure ε ⇒ ε²/2-zCDP; EM ⇒ ε²/8-zCDP),
  CKS conversion.  The heuristic of Remark 2 / the exact-learner assumption of case 3.
  **Oracle-dependent**: a call without SCIP's optimality certificate stops the run with
  :class:`UncertifiedSolve` and nothing is released (see "Uncertified solves" below).
* ``gaussian_rspm`` -- Thm 10 case 1: Gaussian RSPM, (ε_L, δ_L) per call with the
  calibration of :func:`dpcore.learning.rspm.gaussian_sigma`; rounds are (3ε_L, 2δ_L)
  (basic), T rounds by the better of basic composition and advanced composition
  ([GGHRW14] Lemma 2.4) at δ' = δ/2, and δ_L = δ/(4T).  **Oracle-dependent**.
* ``prsma`` (class :class:`OracleQueryPRSMA`) -- Thm 10 case 2: PRSMA around Laplace
  RSPM ([NRW19] Thm 8, parameters from :func:`dpcore.learning.prsma.plan`), composed
  like ``gaussian_rspm``.  **Robust**: a failed oracle call makes its part ⊥, never a
  privacy loss; a round whose learner outputs ⊥ plays no new query.  Thm 8 needs
  ln(K/δ*)/δ* repetitions per part, so at realistic δ the plan is refused with the
  number of oracle calls it would take.

Accuracy bounds are Theorem 10's (full analysis: arXiv 1811.07765); parameter
choices not fixed by [NRW19] are ours and documented at their definition:
T and s are small defaults for a 2-core machine (FEM's published s is 50–100, [VTBSW20] §6);
the FTPL scale η = 0.5 is sepFEM's measured default in :mod:`dpcore.mechanisms.fem`.
Output: the union of D̂^1..D̂^T (the average play), as FEM.

**Where the randomness comes from.**  Every draw is made by ``ctx.noise`` (the samplers
module): the RSPM separator noise by OpenDP's vetted Laplace / Gaussian samplers (one vector of
m₁ = D entries per learner call), the selection between the two candidates by OpenDP's
exponential mechanism, PRSMA's random partition, per-run noise, count noise and final pick by
the same source, and the data player's (s, D) FTPL perturbations by ``bulk_laplace`` (they
protect nothing: the data player never reads D).  PRSMA's count noise stays a continuous
(OpenDP) Laplace, not a discrete one: Thm 8's test ``T̃ > (1/ε*)(1 + ln 1/δ*)`` is analysed
with the continuous Laplace's tail, which a discrete Laplace of the same scale can exceed by a
factor up to 2/(1 + e^{-ε*}); the count itself is never released, only the pass/fail outcome.

**Uncertified solves** ([NRW19] Thm 6; issue 12, finding 9).  Whether SCIP certifies an
optimum depends on the data, and RSPM's guarantee holds only for certified optima.  A run of an
RSPM variant therefore releases nothing once a call is uncertified: it raises
:class:`UncertifiedSolve` (an :class:`~dpcore.errors.OracleError`), after the noise was drawn
and the data read, so the run stays charged to the ledger it was reserved on.  That a run failed
is visible, and it depends on the data: the error says so, and the robust variant
(``oraclequery_prsma``) or the exhaustive oracle (always certified) avoids it.
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Any, ClassVar

import numpy as np

from ..errors import BudgetError, OracleError, ParameterError
from ..learning import prsma as prsma_mod
from ..learning.rspm import gaussian_sigma
from ..oracles.best_response import ClauseSet, OracleResult, OracleStats, best_response
from ..privacy import advanced_composition, check_budget, eps_to_zcdp
from ..privacy.samplers import Randomness
from ..query_classes import ConjunctionClass, Conjunctions
from .base import Budget, Mechanism, MechanismResult, Param, RunContext, SpendRecord

VARIANTS = ("rspm", "gaussian_rspm", "prsma")


class UncertifiedSolve(OracleError):
    """An oracle-dependent learner call was not certified optimal: the run releases nothing (it stays charged)."""


# ---------------------------------------------------------------- the learner's oracle
def _one_hot_offsets(shape) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(shape)])[:-1].astype(np.int64)


def conjunction_from_literals(shape, chosen: np.ndarray, k: int) -> Conjunctions:
    """A one-member batch from one-hot literal indices (width padded to k)."""
    off = _one_hot_offsets(shape)
    chosen = np.sort(np.asarray(chosen, dtype=np.int64))
    attrs = np.searchsorted(off, chosen, side="right") - 1
    a = np.full((1, k), -1, dtype=np.int64)
    v = np.full((1, k), -1, dtype=np.int64)
    a[0, : chosen.size] = attrs
    v[0, : chosen.size] = chosen - off[attrs]
    return Conjunctions(a, v, np.zeros(1, bool))


def objective(
    shape, records: np.ndarray, weights: np.ndarray, linear: np.ndarray | None, q: Conjunctions
) -> np.ndarray:
    """Σ_i w_i q(x_i) + Σ_{l∈q} linear_l for each conjunction of the batch (exact, for checks)."""
    from ..query_classes import conjunction_answers

    weights = np.asarray(weights, dtype=float)
    val = np.zeros(len(q))
    for part, sign in ((np.clip(weights, 0, None), 1.0), (np.clip(-weights, 0, None), -1.0)):
        if part.sum() > 0:  # conjunction_answers normalises by the (non-negative) total weight
            val += sign * part.sum() * conjunction_answers(records, shape, q, part)
    if linear is not None:
        off = _one_hot_offsets(shape)
        lit = np.where(q.attrs >= 0, off[np.maximum(q.attrs, 0)] + q.values, -1)
        val = val + np.where(lit >= 0, np.asarray(linear)[np.maximum(lit, 0)], 0.0).sum(axis=1)
    return val


def worst_conjunction_ip(
    shape,
    records: np.ndarray,
    weights: np.ndarray,
    k: int,
    linear: np.ndarray | None = None,
    *,
    time_limit: float | None = 60.0,
    threads: int = 1,
) -> tuple[np.ndarray, OracleResult]:
    """``argmin_S Σ_i w_i q_S(x_i) + Σ_{l∈S} linear_l`` over conjunctions of width 1..k (SCIP IP).

    Binary s_l per one-hot literal, u_a = Σ_v s_{a,v} ≤ 1 (one literal per attribute),
    1 ≤ Σ_a u_a ≤ k.  Record x (aggregated, total weight w) satisfies q_S iff no chosen
    literal of an attribute disagrees with it: the disagreements of attribute a are
    u_a − s_{a,x_a}.  With c_x in [0, 1]:
      w < 0 (the minimiser wants c = 1):  c_x ≤ 1 − u_a + s_{a,x_a}  for every attribute a;
      w > 0 (wants c = 0):                c_x ≥ 1 − Σ_a (u_a − s_{a,x_a}).
    Both are exact at the optimum.  Returns (chosen literal indices, result).
    """
    from pyscipopt import quicksum

    from ..oracles.scip import new_model

    shape = [int(s) for s in shape]
    p = len(shape)
    off = _one_hot_offsets(shape)
    D = int(sum(shape))
    records = np.asarray(records, dtype=np.int64)
    weights = np.asarray(weights, dtype=float)
    uniq, inv = np.unique(records, axis=0, return_inverse=True)
    w = np.bincount(inv.reshape(-1), weights=weights, minlength=len(uniq))
    keep = w != 0
    uniq, w = uniq[keep], w[keep]
    t0 = time.perf_counter()
    model = new_model("worst_conjunction", time_limit=time_limit, threads=threads)
    s = [model.addVar(vtype="B", name=f"s{lit}") for lit in range(D)]
    u = []
    for a in range(p):
        ua = model.addVar(vtype="C", lb=0.0, ub=1.0, name=f"u{a}")
        model.addCons(ua == quicksum(s[off[a] + v] for v in range(shape[a])))
        u.append(ua)
    model.addCons(quicksum(u) >= 1)
    model.addCons(quicksum(u) <= int(k))
    obj = []
    for i, (x, wi) in enumerate(zip(uniq, w)):
        c = model.addVar(vtype="C", lb=0.0, ub=1.0, name=f"c{i}")
        if wi < 0:
            for a in range(p):
                model.addCons(c <= 1 - u[a] + s[off[a] + x[a]])
        else:
            model.addCons(c >= 1 - quicksum(u[a] - s[off[a] + x[a]] for a in range(p)))
        obj.append(float(wi) * c)
    if linear is not None:
        linear = np.asarray(linear, dtype=float)
        if linear.shape != (D,):
            raise OracleError(f"The separator noise must have one entry per literal (D = {D}), got {linear.shape}.")
        obj.extend(float(linear[lit]) * s[lit] for lit in range(D) if linear[lit] != 0)
    model.setObjective(quicksum(obj), "minimize")
    model.optimize()
    status = model.getStatus()
    seconds = time.perf_counter() - t0
    if model.getNSols() == 0:
        model.freeProb()
        return np.zeros(0, dtype=np.int64), OracleResult(
            np.zeros(0), status, math.inf, -math.inf, math.inf, seconds, False
        )
    best = model.getBestSol()
    chosen = np.array([lit for lit in range(D) if model.getSolVal(best, s[lit]) > 0.5], dtype=np.int64)
    res = OracleResult(
        chosen,
        status,
        float(model.getObjVal()),
        float(model.getDualbound()),
        float(model.getGap()),
        seconds,
        status == "optimal",
    )
    model.freeProb()
    return chosen, res


#: The exhaustive oracle is used automatically while (attribute sets of size ≤ k) × records stays below this.
EXHAUSTIVE_WORK_LIMIT = 60_000_000
#: Largest query-player IP we build (rows ≈ records × attributes); measured: 680,000 rows on adult_pgm
#: found no incumbent in 300 s.
MAX_IP_ROWS = 300_000


def attribute_sets(p: int, k: int) -> int:
    return sum(math.comb(p, w) for w in range(1, k + 1))


def worst_conjunction_exhaustive(
    shape, records: np.ndarray, weights: np.ndarray, k: int, linear: np.ndarray | None = None
) -> tuple[np.ndarray, OracleResult]:
    """The same minimiser as :func:`worst_conjunction_ip`, exactly, by enumerating attribute sets.

    For each attribute set A (|A| ≤ k) one weighted bincount gives Σ_x w_x [x_A = y] for every
    cell y, the separator noise adds Σ_{a∈A} linear[a, y_a] by broadcasting, and the
    minimum over cells is the best conjunction on A.  Exact (ties: first in attribute-set
    then row-major cell order), so its answer carries the certificate RSPM needs; cost
    (Σ_{w≤k} C(p, w)) × (n + cells).  Used when the SCIP IP is too large to solve exactly
    at this n (measured: on adult_pgm, n = 48,842, the IP has ~680,000 rows and SCIP found no
    incumbent in 300 s).
    """
    shape = [int(s) for s in shape]
    p = len(shape)
    off = _one_hot_offsets(shape)
    records = np.asarray(records, dtype=np.int64)
    weights = np.asarray(weights, dtype=float)
    lin = np.zeros(int(sum(shape))) if linear is None else np.asarray(linear, dtype=float)
    t0 = time.perf_counter()
    best_val, best_lits = math.inf, None
    for w in range(1, int(k) + 1):
        for A in itertools.combinations(range(p), w):
            dims = [shape[a] for a in A]
            idx = records[:, A[0]].copy()
            for a in A[1:]:
                idx *= shape[a]
                idx += records[:, a]
            table = np.bincount(idx, weights=weights, minlength=math.prod(dims)).reshape(dims)
            for j, a in enumerate(A):
                view = [1] * w
                view[j] = shape[a]
                table = table + lin[off[a] : off[a] + shape[a]].reshape(view)
            i = int(np.argmin(table))
            if table.flat[i] < best_val:
                best_val = float(table.flat[i])
                cell = np.unravel_index(i, dims)
                best_lits = np.array([off[a] + int(c) for a, c in zip(A, cell)], dtype=np.int64)
    seconds = time.perf_counter() - t0
    if best_lits is None:  # no attribute set, or no finite objective value: nothing to certify
        raise OracleError(
            "The exhaustive oracle found no conjunction: the domain has no attributes or the noise is not finite."
        )
    return best_lits, OracleResult(best_lits, "optimal", best_val, best_val, 0.0, seconds, True)


def worst_conjunction_brute_force(shape, records, weights, k: int, linear=None) -> tuple[Conjunctions, float]:
    """Exhaustive minimiser over the whole class (tiny domains: tests only)."""
    from ..domain import Attribute, Domain

    dom = Domain(tuple(Attribute(f"a{i}", "categorical", tuple(str(v) for v in range(s))) for i, s in enumerate(shape)))
    members = ConjunctionClass(dom, k, negations=False).enumerate()
    vals = objective(shape, records, weights, linear, members)
    i = int(np.argmin(vals))
    return members.take([i]), float(vals[i])


# ---------------------------------------------------------------- accounting
def per_round_budget(variant: str, epsilon: float, delta: float, T: int) -> dict:
    """Per-call parameters for T rounds of 2 learner calls + 1 selection (module docstring)."""
    if variant not in VARIANTS:
        raise ParameterError(f"variant must be one of {VARIANTS}, not {variant!r}.")
    if variant == "rspm":
        if delta == 0:
            eps0 = epsilon / T  # basic composition of T pure rounds
            return {
                "accountant": "pure ε (basic composition)",
                "eps_learner": eps0 / 3,
                "eps_select": eps0 / 3,
                "delta_learner": 0.0,
                "eps_round": eps0,
                "rho": None,
            }
        rho = eps_to_zcdp(epsilon, delta)
        # ρ = T (ε_L² + ε_L²/8): two ε_L-DP calls (ε²/2 each) and one EM at ε_L (ε²/8)
        eps_l = math.sqrt(rho / (T * 9.0 / 8.0))
        return {
            "accountant": "zCDP (CKS conversion)",
            "eps_learner": eps_l,
            "eps_select": eps_l,
            "delta_learner": 0.0,
            "eps_round": 3 * eps_l,
            "rho": rho,
        }
    if delta <= 0:
        raise BudgetError(
            f"The {variant} variant is (ε, δ)-DP: give δ > 0 (e.g. 1/n²), or use variant 'rspm' for δ = 0."
        )
    d_prime = delta / 2.0
    d_learner = delta / (4.0 * T)  # 2 calls per round: 2 T δ_L = δ/2
    lo, hi = 0.0, epsilon
    for _ in range(200):  # largest ε₀ with advanced_composition(ε₀, T, δ') ≤ ε
        mid = 0.5 * (lo + hi)
        if advanced_composition(mid, T, d_prime) <= epsilon:
            lo = mid
        else:
            hi = mid
    # Basic composition (T ε₀, 2Tδ_L) also holds and is tighter for few rounds: use the better of the two.
    eps0 = max(lo, epsilon / T)
    return {
        "accountant": "(ε, δ): better of basic and advanced composition ([GGHRW14] Lemma 2.4)",
        "eps_learner": eps0 / 3,
        "eps_select": eps0 / 3,
        "delta_learner": d_learner,
        "eps_round": eps0,
        "delta_prime": d_prime,
        "rho": None,
    }


def total_privacy(variant: str, b: dict, T: int, delta: float) -> tuple[float, float]:
    """(ε, δ) the accountant certifies for T rounds with per-round figures b (the closed forms)."""
    if variant == "rspm":
        if b["rho"] is None:
            return T * (2 * b["eps_learner"] + b["eps_select"]), 0.0
        from ..privacy import zcdp_to_eps_cks

        rho = T * (b["eps_learner"] ** 2 + b["eps_select"] ** 2 / 8.0)
        return zcdp_to_eps_cks(rho, delta), delta
    eps0 = 2 * b["eps_learner"] + b["eps_select"]
    eps = min(T * eps0, advanced_composition(eps0, T, b["delta_prime"]))
    return eps, 2 * T * b["delta_learner"] + b["delta_prime"]


# ---------------------------------------------------------------- the mechanism
def _best_response_task(task: tuple) -> OracleResult:
    """Module-level (picklable) data-player step for executors: task = (shape, clauses, sigma, time_limit)."""
    shape, clauses, sigma, time_limit = task
    return best_response(shape, clauses, sigma, time_limit=time_limit)


class OracleQuery(Mechanism):
    name = "oraclequery"
    title = "OracleQuery (FTPL data player + private RSPM learner over all conjunctions)"
    paper = "[NRW19] (How to Use Heuristics for Differential Privacy), §IV, Theorem 10"
    privacy = "oracle-dependent"
    output = "rows"
    summary = (
        "A game between a data player and a query player. Each round the query player privately finds, "
        "with an integer program over which literals to include, the conjunction (of width ≤ k, among all of "
        "them — no list needed) that the synthetic data gets most wrong; the data player adds records that "
        "fix the queries found so far. The synthetic data is every record played."
    )
    accounting = (
        "Per round 2 private learner calls + 1 exponential-mechanism choice. RSPM: pure ε (basic) or "
        "zCDP; Gaussian RSPM / PRSMA: advanced composition ([GGHRW14] Lemma 2.4). Privacy of the RSPM "
        "variants needs SCIP to certify optimality ([NRW19] Thm 6)."
    )
    fixed_variant: str | None = None
    parameters: ClassVar[tuple[Param, ...]] = (
        Param("k", "int", 3, "Largest conjunction width in the query class.", 1, 10),
        Param(
            "variant",
            "choice",
            "rspm",
            "Private learner of the query player ([NRW19] Thm 10): Laplace RSPM "
            "or Gaussian RSPM (both need exact solver answers for privacy).",
            choices=("rspm", "gaussian_rspm"),
        ),
        Param("rounds", "int", 20, "Rounds T of the game (each: 2 learner IPs + s best responses).", 1, 500),
        Param("samples", "int", 10, "Records s the data player adds per round (FTPL draws).", 1, 200),
        Param(
            "noise",
            "float",
            0.5,
            "FTPL perturbation: Laplace scale η of the separator weight of each literal "
            "(sepFEM's measured default: the largest of |X_a| Laplace draws grows like η ln|X_a|, so a large η "
            "drowns the queries).",
            0.01,
            100.0,
            log=True,
        ),
        Param(
            "oracle",
            "choice",
            "auto",
            "Exact solver of the query player's problem: the SCIP IP over which "
            "literals to include, or exhaustive search over attribute sets (exact; fast for small k). Auto: "
            "exhaustive while (attribute sets) × n ≤ 6·10⁷, else SCIP.",
            choices=("auto", "scip", "exhaustive"),
            advanced=True,
        ),
    )
    teaching_preset: ClassVar[dict] = {"k": 2, "rounds": 4, "samples": 3}

    def _variant(self, params) -> str:
        return self.fixed_variant or str(params.get("variant", "rspm"))

    def plan(self, n, workload, budget: Budget, params) -> dict:
        check_budget(budget.epsilon, budget.delta)
        k, T = int(params["k"]), int(params["rounds"])
        cls = ConjunctionClass(workload.domain, k)
        variant = self._variant(params)
        b = per_round_budget(variant, budget.epsilon, budget.delta, T)
        m1 = int(sum(workload.domain.shape))  # separator of C_k: one point per literal
        out = {
            "variant": variant,
            "rounds": T,
            "samples": int(params["samples"]),
            "separator_size": m1,
            "eps_learner": b["eps_learner"],
            "eps_select": b["eps_select"],
            "delta_learner": b["delta_learner"],
            "ftpl_laplace_scale": float(params["noise"]),
            "class_size": str(cls.size),
            "accountant": b["accountant"],
        }
        if variant == "rspm":
            out["rspm_laplace_scale_counts"] = 2.0 * m1 / b["eps_learner"]
        elif variant == "gaussian_rspm":
            out["rspm_gaussian_sigma_counts"] = gaussian_sigma(m1, b["eps_learner"], b["delta_learner"])
        else:
            try:
                p = prsma_mod.plan(n, b["eps_learner"], b["delta_learner"])
            except BudgetError as exc:
                raise BudgetError(
                    f"OracleQuery-PRSMA gives each of its {2 * T} learner calls ({T} rounds × 2) ε_L = "
                    f"{b['eps_learner']:.3g}, δ_L = {b['delta_learner']:.3g}; at that budget: {exc} Fewer rounds "
                    f"raise ε_L (and δ_L)."
                ) from None
            out.update({f"prsma_{k_}": v for k_, v in p.to_dict().items() if k_ not in ("epsilon", "delta")})
            out["oracle_calls_estimate"] = T * (2 * p.oracle_calls + int(params["samples"]))
        choice = str(params.get("oracle", "auto"))
        sets = attribute_sets(len(workload.domain), k)
        if choice == "auto":
            choice = "exhaustive" if sets * n <= EXHAUSTIVE_WORK_LIMIT else "scip"
        rows = n * len(workload.domain)
        if choice == "scip" and variant != "prsma" and rows > MAX_IP_ROWS:
            raise ParameterError(
                f"The query player's IP would have about {rows:,} rows (n = {n:,} records × {len(workload.domain)} "
                f"attributes), above the {MAX_IP_ROWS:,} SCIP solves exactly in reasonable time"
                + (
                    f"; use oracle = exhaustive ({sets:,} attribute sets of width ≤ {k})."
                    if params.get("oracle") == "scip"
                    else f", and exhaustive search over {sets:,} attribute sets × n is above its limit too: "
                    f"choose a smaller k."
                )
            )
        out["query_oracle"] = choice
        if "oracle_calls_estimate" not in out:
            out["oracle_calls_estimate"] = T * (2 + int(params["samples"]))
        if b["eps_learner"] <= 0:
            raise BudgetError(f"ε = {budget.epsilon:g} over {T} rounds leaves nothing per round; use fewer rounds.")
        return out

    # ------------------------------------------------------------ query player
    @staticmethod
    def _solve(choice, shape, records, weights, k, eta, time_limit):
        if choice == "auto":
            choice = (
                "exhaustive" if attribute_sets(len(shape), k) * records.shape[0] <= EXHAUSTIVE_WORK_LIMIT else "scip"
            )
        if choice == "exhaustive":
            return worst_conjunction_exhaustive(shape, records, weights, k, eta)
        return worst_conjunction_ip(shape, records, weights, k, eta, time_limit=time_limit)

    def _learn(
        self, variant, b, shape, real, synth, k, sign, noise: Randomness, time_limit, stats, params_oracle="auto"
    ) -> np.ndarray | None:
        """One private learner call: the literal set of a conjunction minimising sign·L(S) (+ noise)."""
        n, s = real.shape[0], synth.shape[0]
        m1 = int(sum(shape))
        records = np.concatenate([real, synth])
        base = np.concatenate([np.full(n, -1.0), np.full(s, n / s)]) * sign
        if variant in ("rspm", "gaussian_rspm"):
            if variant == "rspm":
                eta = noise.laplace(2.0 * m1 / b["eps_learner"], m1)  # [NRW19] RSPM: Lap(2m/ε)
            else:
                eta = noise.gaussian(gaussian_sigma(m1, b["eps_learner"], b["delta_learner"]), m1)
            chosen, res = self._solve(params_oracle, shape, records, base, k, eta, time_limit)
            stats.add(res)
            if not res.optimal:
                raise UncertifiedSolve(
                    f"SCIP did not certify the query player's optimum (status {res.status}, gap {res.gap:.3g}); "
                    f"the {variant} variant is private only for exact answers ([NRW19] Thm 6), so the run stopped "
                    "and nothing was released. The run read the data and stays charged to the privacy ledger; "
                    "whether a solve is certified depends on the data, so retrying is a new charged run. Raise the "
                    "time limit, use oracle = exhaustive (always exact), lower k, or use the robust PRSMA variant."
                )
            return chosen
        # PRSMA around Laplace RSPM ([NRW19] §III.B listing; Thm 8 parameters)
        p = prsma_mod.plan(n, b["eps_learner"], b["delta_learner"])
        perm = noise.permutation(n)[: p.parts * p.part_size].reshape(p.parts, p.part_size)
        passed, pool = 0, []
        for idx in perm:
            part_records = np.concatenate([real[idx], synth])
            part_w = np.concatenate([np.full(idx.size, -1.0), np.full(s, idx.size / s)]) * sign
            outs, ok = [], True
            for _ in range(p.repetitions):
                # drawn run by run: a part's runs stop at its first ⊥, and the later draws could not matter
                eta = noise.laplace(2.0 * m1 / p.eps_prime, m1)
                chosen, res = self._solve(params_oracle, shape, part_records, part_w, k, eta, time_limit)
                stats.add(res)
                if not res.optimal:  # ⊥: the part fails, its remaining runs cannot matter
                    ok = False
                    break
                outs.append(chosen)
            if ok:
                passed += 1
                pool.extend(outs)
        z = noise.laplace(1.0 / p.eps_star)  # continuous (OpenDP): Thm 8 uses its tail (module docstring)
        if passed + z <= p.threshold or not pool:
            return None  # PRSMA outputs ⊥ (a private outcome)
        return pool[int(noise.integers(len(pool)))]

    # ------------------------------------------------------------ run
    def run(self, dataset, workload, budget, params, ctx: RunContext) -> MechanismResult:
        plan = self.plan(dataset.n, workload, budget, params)
        variant = plan["variant"]
        k, T, s = int(params["k"]), int(params["rounds"]), int(params["samples"])
        b = per_round_budget(variant, budget.epsilon, budget.delta, T)
        shape = list(dataset.domain.shape)
        D = int(sum(shape))
        n = dataset.n
        cls = ConjunctionClass(dataset.domain, k)
        time_limit = ctx.oracle_options.get("time_limit", 60.0)
        noise = ctx.noise
        eta_ftpl = plan["ftpl_laplace_scale"]
        oracle = str(params.get("oracle", "auto"))
        stats, br_stats = OracleStats(), OracleStats()
        chosen: dict[tuple, float] = {}  # (attrs, values, negated) -> count (the queries played so far)
        rows, trace = [], []
        for t in range(1, T + 1):
            # data player: Separator-FTPL against the queries played so far (never reads D)
            clauses = ClauseSet(
                [key[0] for key in chosen],
                [key[1] for key in chosen],
                np.array([key[2] for key in chosen], bool),
                np.array(list(chosen.values()), float),
            )
            sigmas = noise.bulk_laplace(eta_ftpl, (s, D))
            ctx.check_cancel()
            # the s best responses are independent: through the executor, noise drawn above in the parent
            tasks = [(shape, clauses, sigmas[j], time_limit) for j in range(s)]
            results = (
                ctx.executor.map(_best_response_task, tasks)
                if ctx.executor is not None
                else [_best_response_task(task) for task in tasks]
            )
            for r in results:
                br_stats.add(r)
            synth = np.array([r.record for r in results], dtype=np.int64)
            rows.append(synth)
            # query player: the worst conjunction for D̂^t, privately, on each side of the negation
            ctx.check_cancel()
            pos = self._learn(variant, b, shape, dataset.codes, synth, k, +1.0, noise, time_limit, stats, oracle)
            ctx.check_cancel()
            neg = self._learn(variant, b, shape, dataset.codes, synth, k, -1.0, noise, time_limit, stats, oracle)
            cands = []
            for lits, negated in ((pos, False), (neg, True)):
                if lits is not None and lits.size:
                    q = conjunction_from_literals(shape, lits, k)
                    cands.append(Conjunctions(q.attrs, q.values, np.array([negated])))
            row: dict[str, Any] = {"round": t}
            if cands:
                batch = Conjunctions(
                    np.concatenate([c.attrs for c in cands]),
                    np.concatenate([c.values for c in cands]),
                    np.concatenate([c.negated for c in cands]),
                )
                err = cls.answers(dataset.codes, batch, check=False) - cls.answers(synth, batch, check=False)
                i = noise.exponential_mechanism(err, b["eps_select"], 1.0 / n) if len(cands) > 1 else 0
                q = batch.take([i])
                key = (
                    tuple(int(a) for a in q.attrs[0] if a >= 0),
                    tuple(int(v) for v in q.values[0] if v >= 0),
                    bool(q.negated[0]),
                )
                chosen[key] = chosen.get(key, 0.0) + 1.0
                row.update(query=q.label(0, dataset.domain), query_error_on_round=float(err[i]))
            else:
                row["query"] = "⊥ (PRSMA refused this round)"
            row["round_records"] = s
            trace.append(row)
            ctx.report(t, T, f"round {t}: {row['query'][:40]}")
        out_rows = np.concatenate(rows)
        eps_total, delta_total = total_privacy(variant, b, T, budget.delta)
        if eps_total > budget.epsilon * (1 + 1e-9) or delta_total > budget.delta + 1e-15:
            raise BudgetError(f"Internal accounting error: {eps_total}, {delta_total} exceed the budget.")
        rho = None
        if variant == "rspm" and b["rho"] is not None:
            rho = T * (b["eps_learner"] ** 2 + b["eps_select"] ** 2 / 8.0)
        stats_d = stats.to_dict()
        stats_d["data_player"] = br_stats.to_dict()
        stats_d["calls"] = stats.calls + br_stats.calls
        return MechanismResult(
            spends=[SpendRecord(eps_total, delta_total, rho, f"OracleQuery ({variant}): {T} rounds")],
            epsilon_spent=eps_total,
            delta_spent=delta_total,
            accountant=b["accountant"],
            rows=out_rows,
            public={k_: v for k_, v in plan.items()},
            trace=trace,
            oracle_stats=stats_d,
            notes=[f"Query class: all conjunctions of width ≤ {k} and their negations ({cls.size:,} queries)."],
        )


class OracleQueryPRSMA(OracleQuery):
    name = "oraclequery_prsma"
    title = "OracleQuery with PRSMA (robust to solver failure)"
    privacy = "robust"
    fixed_variant = "prsma"
    accounting = (
        "Per round 2 PRSMA learner calls ([NRW19] Thm 8, (ε_L, δ_L) each) + 1 exponential-mechanism "
        "choice, composed over T rounds by advanced composition ([GGHRW14] Lemma 2.4). Holds whatever "
        "SCIP returns."
    )
    parameters = tuple(p for p in OracleQuery.parameters if p.name != "variant")
