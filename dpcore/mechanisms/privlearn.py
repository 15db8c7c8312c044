"""PrivLearn: private data release by learning thresholds ([HRS12], Figures 1–2, §5).

The database is learned as a *function of the query*: f^D(q) = q(D) for q in the
class of conjunctions of width ≤ k (:mod:`dpcore.query_classes`).  The output is a
synopsis that answers any member of the class, not rows.

* **Threshold oracle** ([HRS12] Fig. 1) -- the only access to the data.  Query bound
  b, tolerance α_TO; on a query (q, t): if q is new, draw N_q ~ Lap(b / (ε n)) once and
  keep A_q = f^D(q) + N_q (reused for every threshold); answer 1 if A_q ≥ t + 2α_TO/3,
  0 if A_q ≤ t − 2α_TO/3, ⊥ otherwise; after b distinct queries it answers ⊥ and stops.
* **Reduction** (Fig. 2) -- α_TO = α/7; k_T = ceil(3/α) thresholds t_i = i/(k_T + 1);
  one sample of b query descriptions from the query distribution G; for each t_i the
  non-⊥ examples B_i are labelled by the oracle; if |B_i| / b < γ/2 the release is the
  constant t_i (step 3c); otherwise a learner fits h_i.  The final answer to q is the
  bucket where the h_i switch from 1 to 0 (see :meth:`PTFSynopsis.answer`).
* **Learner** (§5.1–5.2) -- a polynomial threshold function: a linear separator over
  the monomials of degree ≤ d of the query's one-hot literal bits, fitted by an LP
  (hinge loss + a small L1 penalty: the LP-based PAC learner of [KS04] in its
  agnostic, noise-tolerant form).  It uses only labelled samples, so Theorem 4.10
  applies: the oracle sees exactly the b sampled queries and nothing else.

Privacy: ε-DP (pure; δ = 0) through the threshold oracle alone ([HRS12] Lemma 4.1:
b distinct queries, each f^D(q) of sensitivity 1/n under replace-one neighbours, each
with Laplace noise of scale b/(εn), is the Laplace mechanism on a b-vector of L1
sensitivity b/n; Lemma 4.4: nothing else reads D).  The noise is exact: the oracle
measures the integer count n·f^D(q) and adds discrete Laplace noise of scale b/ε drawn by
``ctx.noise`` (the geometric mechanism: a b-vector of counts of L1 sensitivity b with
scale b/ε is ε-DP), then divides by n.  The query distribution, the
learner and the synopsis are post-processing.  Robust: no solver result can change
the privacy guarantee.

Deviation from the paper, documented: the paper sets the oracle's bound to
b_total = 2 b_iter for a sampling-only learner (Thm 4.10) to leave room for
evaluation queries the learner might make; ours never makes any, so we set the
bound to the number b of sampled queries, which is exactly the number of distinct
queries the oracle receives (Lemma 4.1 needs no more).  The paper's sample sizes are
far from practical: even for a learner needing one example (b_base = 1), eqs. (6)–(7) with
α = β = γ = 0.1 give b_iter ≈ 7,500, b_total ≈ 15,000 and eq. (8) n ≳ 4.5·10⁷ / (εα).  We instead refuse a
query bound whose noise scale b/(εn) exceeds the threshold spacing 1/(k_T + 1) (the
oracle could then not tell neighbouring thresholds apart) and say which b, α or ε works.
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Any, ClassVar

import numpy as np

from ..errors import BudgetError, OracleError, ParameterError
from ..privacy import check_budget
from ..privacy.samplers import Randomness
from ..query_classes import ConjunctionClass, Conjunctions, as_conjunctions
from .base import Budget, Mechanism, MechanismResult, Param, RunContext, SpendRecord
from .direct import integer_counts

#: The oracle's answer "too close to the threshold to say" (⊥ in [HRS12] Fig. 1).
BOTTOM = -1
#: Fewest sampled queries worth learning from.
MIN_QUERIES = 20
#: Automatic query bound: noise scale b/(εn) = half the threshold spacing, capped.
MAX_AUTO_QUERIES = 4000
#: Largest LP the learner builds (nonzeros of the constraint matrix).
MAX_LP_NONZEROS = 3_000_000
#: More thresholds than this means α is too small to be useful at any n we can handle.
MAX_THRESHOLDS = 300


# ---------------------------------------------------------------- threshold oracle
class ThresholdOracle:
    """The threshold oracle TO(D, α, b) of [HRS12] Figure 1.

    ε-DP for any sequence of adaptively chosen queries (Lemma 4.1), because at most
    ``bound`` distinct queries q are ever answered, each from one Laplace draw of scale
    ``bound / (ε n)`` that is reused for every threshold.  Distinct means distinct q
    (the threshold does not count), as Lemma 4.1 and Theorem 4.10 count them.
    """

    def __init__(
        self,
        codes: np.ndarray,
        query_class: ConjunctionClass,
        epsilon: float,
        alpha: float,
        bound: int,
        noise: Randomness,
    ) -> None:
        if epsilon <= 0 or alpha <= 0 or bound < 1:
            raise ParameterError("The threshold oracle needs ε > 0, α > 0 and a query bound ≥ 1.")
        self._codes = codes
        self._class = query_class
        self.n = int(codes.shape[0])
        self.epsilon = float(epsilon)
        self.alpha = float(alpha)
        self.bound = int(bound)
        self.scale = self.bound / (self.epsilon * self.n)  # [HRS12] Fig. 1: Lap(b / εn)
        self.scale_counts = self.bound / self.epsilon  # the same scale in count units
        self.band = 2.0 * self.alpha / 3.0  # ⊥ when |A_q − t| < 2α/3
        self._noise = noise
        self._noisy: dict[bytes, float] = {}
        self.terminated = False

    @property
    def distinct_queries(self) -> int:
        return len(self._noisy)

    def _values(self, q: Conjunctions) -> np.ndarray:
        """A_q for each query, NaN where the oracle refuses (bound reached)."""
        keys = [row.tobytes() for row in q.keys()]  # noqa: SIM118 (Conjunctions.keys, not a dict)
        out = np.full(len(keys), np.nan)
        if self.terminated:
            return out
        new_pos: list[int] = []
        new_keys: list[bytes] = []
        seen: set[bytes] = set()
        stop = len(keys)
        for i, key in enumerate(keys):
            if key in self._noisy or key in seen:
                continue
            if self.distinct_queries + len(new_keys) >= self.bound:
                stop = i  # Fig. 1: the (b+1)-th distinct query gets ⊥ and the oracle terminates
                self.terminated = True
                break
            seen.add(key)
            new_pos.append(i)
            new_keys.append(key)
        if new_pos:
            counts = integer_counts(self._class.answers(self._codes, q.take(np.array(new_pos)), check=False), self.n)
            noisy = (counts + self._noise.discrete_laplace(self.scale_counts, len(new_pos))) / self.n
            for key, a in zip(new_keys, noisy):
                self._noisy[key] = float(a)
        for i in range(stop):
            out[i] = self._noisy[keys[i]]
        return out

    def ask(self, q: Conjunctions, t: float) -> np.ndarray:
        """Answers in {1, 0, BOTTOM} to (q_j, t) for every query of the batch, in order."""
        a = self._values(q)
        out = np.full(a.shape, BOTTOM, dtype=np.int8)
        ok = ~np.isnan(a)
        out[ok & (a >= t + self.band)] = 1
        out[ok & (a <= t - self.band)] = 0
        return out


# ---------------------------------------------------------------- monomial features
def monomial_keys(query_class: ConjunctionClass, q: Conjunctions, degree: int) -> np.ndarray:
    """(N, M) int64 keys of every monomial of degree 1..``degree`` of each query's bits (-1 = absent).

    The bits of a conjunction are its one-hot literals ([HRS12] §5: q ∈ {0,1}^D); a
    monomial is a set T of ≤ d of them, and it is 1 on q iff T ⊆ q.  Key of a sorted
    T = (l_1 .. l_j): sum_i (l_i + 1) (D + 1)^(i-1), unique across degrees.
    """
    D = sum(query_class.sizes)
    base = D + 1
    if base**degree >= 2**62:
        raise ParameterError(
            f"Degree {degree} over D = {D} literals overflows the monomial index; "
            f"choose degree ≤ {int(math.log(2**62) / math.log(base))}."
        )
    lit = query_class.literal_indices(q)  # sorted ascending, -1 padded at the end
    width = lit.shape[1]
    cols = []
    for j in range(1, degree + 1):
        for combo in itertools.combinations(range(width), j):
            valid = np.ones(len(q), bool)
            key = np.zeros(len(q), dtype=np.int64)
            mult = 1
            for c in combo:
                valid &= lit[:, c] >= 0
                key += (lit[:, c] + 1) * mult
                mult *= base
            cols.append(np.where(valid, key, -1))
    if not cols:
        return np.full((len(q), 0), -1, dtype=np.int64)
    return np.stack(cols, axis=1)


def monomials_per_query(k: int, degree: int) -> int:
    return sum(math.comb(k, j) for j in range(1, min(degree, k) + 1))


# ---------------------------------------------------------------- LP learner
def fit_ptf(
    keys: np.ndarray, labels: np.ndarray, regularization: float = 1e-3, solver: str = "highs"
) -> tuple[np.ndarray, np.ndarray, float, dict]:
    """Linear separator over monomial features by an LP (hinge loss + λ‖w‖₁).

        min  (1/m) Σ_j ξ_j + λ Σ_f |w_f|
        s.t. y_j (Σ_f w_f φ_f(q_j) + b) ≥ 1 − ξ_j,  ξ ≥ 0,   y_j = ±1

    When the labels have a PTF of this degree (the realisable case of §5.2) the
    optimum with λ → 0 separates them (ξ = 0).  Returns (feature keys, weights,
    bias, info).
    """
    from scipy import sparse

    labels = np.asarray(labels)
    m = labels.shape[0]
    y = np.where(labels == 1, 1.0, -1.0)
    valid = keys >= 0
    feats = np.unique(keys[valid])
    F = feats.size
    rows = np.nonzero(valid)[0]
    cols = np.searchsorted(feats, keys[valid])
    phi = sparse.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(m, F))
    t0 = time.perf_counter()
    if solver == "highs":
        from scipy.optimize import linprog

        yphi = sparse.diags(y) @ phi
        # variables: w+ (F), w- (F), b+, b-, ξ (m); constraint: -y(φw + b) - ξ ≤ -1
        A = sparse.hstack(
            [-yphi, yphi, sparse.csr_matrix(-y[:, None]), sparse.csr_matrix(y[:, None]), -sparse.identity(m)],
            format="csr",
        )
        c = np.concatenate([np.full(2 * F, regularization), [0.0, 0.0], np.full(m, 1.0 / m)])
        res = linprog(c, A_ub=A, b_ub=-np.ones(m), bounds=(0, None), method="highs")
        if res.status != 0:
            raise OracleError(f"The LP learner failed ({res.message}).")
        x = res.x
        w = x[:F] - x[F : 2 * F]
        b = float(x[2 * F] - x[2 * F + 1])
        status, objective = "optimal", float(res.fun)
    elif solver == "scip":
        from pyscipopt import Model, quicksum

        model = Model("ptf_lp")
        model.hideOutput()
        model.setParam("randomization/randomseedshift", 0)
        wp = [model.addVar(lb=0.0) for _ in range(F)]
        wn = [model.addVar(lb=0.0) for _ in range(F)]
        bv = model.addVar(lb=None)
        xi = [model.addVar(lb=0.0) for _ in range(m)]
        indptr, indices = phi.indptr, phi.indices
        for j in range(m):
            fs = indices[indptr[j] : indptr[j + 1]]
            model.addCons(y[j] * (quicksum(wp[f] - wn[f] for f in fs) + bv) >= 1 - xi[j])
        model.setObjective(quicksum(xi) * (1.0 / m) + regularization * quicksum(wp + wn), "minimize")
        model.optimize()
        status = model.getStatus()
        if status != "optimal":
            model.freeProb()
            raise OracleError(f"The LP learner (SCIP) stopped with status {status}.")
        w = np.array([model.getVal(a) - model.getVal(bn) for a, bn in zip(wp, wn)])
        b = float(model.getVal(bv))
        objective = float(model.getObjVal())
        model.freeProb()
    else:
        raise ParameterError(f"Unknown LP solver {solver!r}: use 'highs' or 'scip'.")
    score = phi @ w + b
    train_error = float(np.mean((score >= 0) != (y > 0)))
    return (
        feats,
        w,
        b,
        {
            "status": status,
            "objective": objective,
            "features": int(F),
            "examples": int(m),
            "train_error": train_error,
            "seconds": time.perf_counter() - t0,
        },
    )


# ---------------------------------------------------------------- synopsis
class PTFSynopsis:
    """The released function q ↦ answer (DP: built only from threshold-oracle outputs).

    ``hypotheses[i]`` is h_{i+1} for threshold t_{i+1}: ``("ptf", keys, weights, bias)``
    or ``("constant", 0 or 1)``.  ``constant`` is set when step 3c of Fig. 2 ended the
    run: every query is then answered t_i.
    """

    def __init__(
        self,
        query_class: ConjunctionClass,
        thresholds: np.ndarray,
        degree: int,
        hypotheses: list,
        constant: float | None = None,
        rule: str = "midpoint",
    ) -> None:
        if rule not in ("midpoint", "lower"):
            raise ParameterError(f"The answer rule must be 'midpoint' or 'lower', not {rule!r}.")
        self.rule = rule
        self.query_class = query_class
        self.thresholds = np.asarray(thresholds, dtype=float)
        self.degree = int(degree)
        self.hypotheses = hypotheses
        self.constant = constant

    def _bits(self, q: Conjunctions) -> np.ndarray:
        """(N, len(hypotheses)) matrix of h_i(q) in {0, 1}."""
        keys = monomial_keys(self.query_class, q, self.degree) if any(h[0] == "ptf" for h in self.hypotheses) else None
        out = np.zeros((len(q), len(self.hypotheses)), dtype=np.int8)
        for i, h in enumerate(self.hypotheses):
            if h[0] == "constant":
                out[:, i] = h[1]
                continue
            _, fkeys, w, b = h
            score = np.full(len(q), float(b))
            if fkeys.size:
                assert keys is not None  # computed above whenever a hypothesis is a PTF
                pos = np.minimum(np.searchsorted(fkeys, keys), fkeys.size - 1)
                hit = (keys >= 0) & (fkeys[pos] == keys)
                score += np.where(hit, w[pos], 0.0).sum(axis=1)
            out[:, i] = score >= 0
        return out

    def answer(self, queries) -> np.ndarray:
        """Answers to members of the class; a query outside it raises :class:`WorkloadError`.

        [HRS12] Fig. 2 step 4 combines h_1..h_k through the index where they switch
        (its printed rule has the orientation slipped: with h_i = 1[f ≥ t_i] the h_i fall
        from 1 to 0 as i grows).  We answer the midpoint (t_{j−1} + t_j)/2 of the first
        bucket j with h_j(q) = 0 (t_0 = 0, t_{k+1} = 1, h_{k+1} = 0), so the error is at
        most half a bucket when every h_i is right.  ``rule="lower"`` answers the bucket's lower
        edge t_{j−1} instead (error below one bucket; 0 for the lowest bucket, which suits
        sparse classes where most answers are near 0).  Both are post-processing.
        """
        q = as_conjunctions(queries)
        self.query_class.check(q)
        if self.constant is not None:
            pos = np.full(len(q), float(self.constant))
        else:
            bits = self._bits(q)
            k = len(self.thresholds)
            bits = np.concatenate([bits, np.zeros((len(q), 1), np.int8)], axis=1)
            j = np.argmax(bits == 0, axis=1) + 1  # 1-based first threshold with h = 0
            edges = np.concatenate([[0.0], self.thresholds, [1.0]])
            lower = edges[j - 1]
            pos = lower if self.rule == "lower" else 0.5 * (lower + edges[np.minimum(j, k + 1)])
        return np.where(q.negated, 1.0 - pos, pos)

    def answers_for_workload(self, workload) -> np.ndarray:
        """Answers to every cell of a marginal workload, in its flat query order."""
        return self.answer(Conjunctions.from_workload(workload))

    def to_json(self) -> dict:
        """Public: the class description, public schema sizes and the DP-derived hypotheses."""
        dom = self.query_class.domain
        off = self.query_class.offsets
        D = sum(self.query_class.sizes)
        lit_attr = np.repeat(np.arange(len(dom)), self.query_class.sizes)

        def decode(key: int) -> list:
            lits = []
            while key > 0:
                lit = int(key % (D + 1)) - 1
                key //= D + 1
                a = int(lit_attr[lit])
                lits.append([dom.names[a], int(lit - off[a])])
            return lits

        hyps = []
        for t, h in zip(self.thresholds, self.hypotheses):
            if h[0] == "constant":
                hyps.append({"threshold": float(t), "kind": "constant", "value": int(h[1])})
            else:
                _, fkeys, w, b = h
                nz = np.flatnonzero(np.abs(w) > 1e-12)
                hyps.append(
                    {
                        "threshold": float(t),
                        "kind": "ptf",
                        "bias": float(b),
                        "monomials": [[decode(int(fkeys[i])), float(w[i])] for i in nz],
                    }
                )
        return {
            "format": "dpcore-privlearn-synopsis/1",
            "class": self.query_class.to_dict(),
            # sizes of schemas inferred from the private data are not public (see report.domain_for_card)
            "schema": [
                {"name": a.name, "size": a.size}
                if a.source == "declared"
                else {"name": a.name, "size": None, "warning": "inferred from the private data; not listed"}
                for a in dom.attributes
            ],
            "degree": self.degree,
            "thresholds": self.thresholds.tolist(),
            "answer_rule": f"{self.rule} of the first bucket whose hypothesis is 0; negation = 1 - answer",
            "constant_answer": self.constant,
            "hypotheses": hyps,
        }


# ---------------------------------------------------------------- the mechanism
class PrivLearn(Mechanism):
    name = "privlearn"
    title = "PrivLearn (threshold learning → answers to all conjunctions)"
    paper = "[HRS12] (Private Data Release via Learning Thresholds), Figures 1–2, §5"
    privacy = "robust"
    output = "synopsis"
    uses_oracle = False
    summary = (
        "Learns the data as a function of the query. A noisy 'threshold oracle' says, for sampled "
        "conjunctions, whether their answer is above or below each of a ladder of thresholds (or 'too close "
        "to call'); a small linear program learns each yes/no rule from the query's literals; stacking the "
        "rules answers any conjunction of width ≤ k — far more queries than any list could hold."
    )
    accounting = (
        "pure ε (δ = 0): the threshold oracle answers b distinct queries, each with one Laplace draw of "
        "scale b/(εn) reused across thresholds ([HRS12] Lemma 4.1); nothing else reads the data "
        "(Lemma 4.4)."
    )
    parameters = (
        Param("k", "int", 3, "Largest conjunction width the synopsis answers (the query class).", 1, 10),
        Param(
            "alpha",
            "float",
            0.1,
            "Accuracy target α: ceil(3/α) thresholds, spaced ≈ α/3 apart; the oracle's "
            "'too close' band is ±2α/21 ([HRS12] Fig. 2, TO(D, α/7, b)).",
            0.01,
            1.0,
        ),
        Param(
            "queries",
            "int",
            None,
            "Query bound b = number of sampled queries the oracle labels. More queries "
            "teach the learner more but each gets noisier (Laplace scale b/(εn)). Auto: scale = half the "
            "threshold spacing.",
            MIN_QUERIES,
            200_000,
            optional=True,
        ),
        Param(
            "degree", "int", 2, "Degree of the polynomial threshold functions (monomials of ≤ degree literals).", 1, 5
        ),
        Param(
            "workload_share",
            "float",
            0.5,
            "Share of the sampled queries drawn from your workload's cells "
            "(the rest uniformly from the whole class). The paper's reduction works for any query "
            "distribution; accuracy is guaranteed on the one sampled.",
            0.0,
            1.0,
        ),
        Param(
            "answer",
            "choice",
            "midpoint",
            "How a bucket becomes an answer: its midpoint (smallest worst-case "
            "error) or its lower edge (0 for the lowest bucket: lower mean error when most answers are tiny). "
            "Post-processing: no privacy cost.",
            choices=("midpoint", "lower"),
        ),
        Param(
            "gamma",
            "float",
            0.05,
            "γ: if fewer than a γ/2 share of the samples are clear of a threshold, the "
            "release is that constant threshold (Fig. 2 step 3c).",
            0.0,
            1.0,
            advanced=True,
        ),
        Param(
            "regularization",
            "float",
            1e-3,
            "L1 penalty λ on the PTF weights in the LP.",
            0.0,
            1.0,
            log=True,
            advanced=True,
        ),
        Param(
            "lp_solver",
            "choice",
            "highs",
            "LP solver for the learner: HiGHS (scipy) or SCIP.",
            choices=("highs", "scip"),
            advanced=True,
        ),
    )
    teaching_preset: ClassVar[dict] = {"k": 2, "alpha": 0.2, "degree": 2}

    # ------------------------------------------------------------ planning
    @staticmethod
    def max_queries(epsilon: float, n: int, n_thresholds: int) -> int:
        """Largest b whose Laplace scale b/(εn) is at most the threshold spacing 1/(k_T + 1)."""
        return math.floor(epsilon * n / (n_thresholds + 1))

    def plan(self, n, workload, budget: Budget, params) -> dict:
        check_budget(budget.epsilon, budget.delta)
        k, alpha, degree = int(params["k"]), float(params["alpha"]), int(params["degree"])
        domain = workload.domain
        cls = ConjunctionClass(domain, k)  # raises WorkloadError for k > p
        widest = max(len(m) for m in workload.marginals)
        if widest > k:
            raise ParameterError(
                f"The workload has {widest}-way marginals but the class width is k = {k}: "
                f"raise k to {widest} (the synopsis answers conjunctions of width ≤ k)."
            )
        if degree > k:
            raise ParameterError(
                f"degree = {degree} exceeds the conjunction width k = {k}: a width-{k} query "
                f"has no monomial of higher degree. Choose degree ≤ {k}."
            )
        n_thr = math.ceil(3.0 / alpha - 1e-12)
        if n_thr > MAX_THRESHOLDS:
            raise ParameterError(
                f"α = {alpha:g} needs {n_thr} thresholds (limit {MAX_THRESHOLDS}); choose α ≥ {3.0 / MAX_THRESHOLDS:g}."
            )
        b_max = self.max_queries(budget.epsilon, n, n_thr)
        if b_max < MIN_QUERIES:
            # smallest α (fewest thresholds) and ε that allow MIN_QUERIES
            thr_ok = int(budget.epsilon * n // MIN_QUERIES) - 1
            alpha_hint = f"α ≥ {3.0 / thr_ok:.3g}" if thr_ok >= 1 else "no α works"
            eps_min = MIN_QUERIES * (n_thr + 1) / n
            raise BudgetError(
                f"With ε = {budget.epsilon:g}, n = {n:,} and {n_thr} thresholds (α = {alpha:g}) the threshold "
                f"oracle can label at most {b_max} queries before its noise (scale b/(εn)) exceeds the threshold "
                f"spacing; PrivLearn needs at least {MIN_QUERIES}. Use {alpha_hint}, or ε ≥ {eps_min:.3g}."
            )
        b = params.get("queries")
        if b is None:
            b = max(MIN_QUERIES, min(MAX_AUTO_QUERIES, b_max // 2))
        b = int(b)
        if b > b_max:
            raise ParameterError(
                f"queries = {b:,} is more than the {b_max:,} the budget supports at α = {alpha:g}: each answer "
                f"would carry Laplace noise of scale {b / (budget.epsilon * n):.3g} > the threshold spacing "
                f"{1 / (n_thr + 1):.3g}. Use queries ≤ {b_max:,}, a larger α or a larger ε."
            )
        per_query = monomials_per_query(k, degree)
        nonzeros = b * (per_query + 2)
        feature_space = ConjunctionClass(domain, degree, negations=False).n_positive
        if nonzeros > MAX_LP_NONZEROS:
            fit_b = MAX_LP_NONZEROS // (per_query + 2)
            fit_d = max(
                [d for d in range(1, degree + 1) if b * (monomials_per_query(k, d) + 2) <= MAX_LP_NONZEROS],
                default=None,
            )
            hint = f"degree ≤ {fit_d}" if fit_d else f"queries ≤ {fit_b:,}"
            raise ParameterError(
                f"The learner's LP would have about {nonzeros:,} nonzeros ({b:,} queries × {per_query} monomials "
                f"each, out of a feature space of {feature_space:,} monomials); the limit is "
                f"{MAX_LP_NONZEROS:,}. Use {hint}."
            )
        return {
            "thresholds": n_thr,
            "queries": b,
            "max_queries": b_max,
            "laplace_scale": b / (budget.epsilon * n),
            "oracle_alpha": alpha / 7.0,
            "bottom_band_halfwidth": 2.0 * (alpha / 7.0) / 3.0,
            "threshold_spacing": 1.0 / (n_thr + 1),
            "feature_space": feature_space,
            "monomials_per_query": per_query,
            "class_size": str(cls.size),
            "lp_calls_at_most": n_thr,
        }

    # ------------------------------------------------------------ run
    def run(self, dataset, workload, budget, params, ctx: RunContext) -> MechanismResult:
        plan = self.plan(dataset.n, workload, budget, params)
        k, alpha, degree = int(params["k"]), float(params["alpha"]), int(params["degree"])
        b, n_thr = plan["queries"], plan["thresholds"]
        cls = ConjunctionClass(dataset.domain, k)
        rng = ctx.rng
        # Step 2: b query descriptions from G = mixture of the workload's cells and the uniform class (public).
        n_wl = round(float(params["workload_share"]) * b)
        parts = []
        if n_wl:
            cells = Conjunctions.from_workload(workload)
            cells = Conjunctions(_pad(cells.attrs, k), _pad(cells.values, k), cells.negated)
            parts.append(cells.take(rng.integers(0, len(cells), size=n_wl)))
        parts.append(cls.sample(b - n_wl, rng, negations=False))
        sample = Conjunctions(
            np.concatenate([p.attrs for p in parts]),
            np.concatenate([p.values for p in parts]),
            np.concatenate([p.negated for p in parts]),
        )
        # Step 1: the oracle, TO(D, α/7, b) -- the only object that reads dataset.codes.
        oracle = ThresholdOracle(dataset.codes, cls, budget.epsilon, alpha / 7.0, b, ctx.noise)
        keys = monomial_keys(cls, sample, degree)
        thresholds = np.arange(1, n_thr + 1) / (n_thr + 1.0)
        hypotheses: list[tuple] = []
        trace: list[dict[str, Any]] = []
        constant: float | None = None
        lp_seconds, lp_calls = [], 0
        for i, t in enumerate(thresholds, start=1):
            ctx.check_cancel()
            labels = oracle.ask(sample, float(t))
            clear = labels != BOTTOM
            share = float(clear.mean())
            row: dict[str, Any] = {
                "round": i,
                "threshold": float(t),
                "clear_share": share,
                "label_1_share": float((labels == 1).sum() / max(1, clear.sum())),
            }
            if share < float(params["gamma"]) / 2.0:  # Fig. 2 step 3c
                constant = float(t)
                row["outcome"] = "constant release (step 3c)"
                trace.append(row)
                ctx.report(i, n_thr, f"threshold {t:.3f}: almost all queries too close; releasing constant")
                break
            lab = labels[clear]
            if lab.min() == lab.max():
                hypotheses.append(("constant", int(lab[0])))
                row.update(outcome=f"all clear labels {int(lab[0])}: constant hypothesis", train_error=0.0)
            else:
                feats, w, bias, info = fit_ptf(
                    keys[clear], lab, float(params["regularization"]), str(params["lp_solver"])
                )
                hypotheses.append(("ptf", feats, w, bias))
                lp_calls += 1
                lp_seconds.append(info["seconds"])
                row.update(
                    outcome="PTF fitted by LP",
                    train_error=info["train_error"],
                    features=info["features"],
                    lp_seconds=info["seconds"],
                )
            trace.append(row)
            ctx.report(i, n_thr, f"threshold {t:.3f}", train_error=row.get("train_error"))
        if constant is None and len(hypotheses) != n_thr:
            raise OracleError("Internal error: a threshold has no hypothesis.")
        synopsis = PTFSynopsis(
            cls,
            thresholds[: len(hypotheses)] if constant is None else thresholds,
            degree,
            hypotheses,
            constant,
            str(params.get("answer", "midpoint")),
        )
        answers = synopsis.answers_for_workload(workload)
        public = {k_: v for k_, v in plan.items() if k_ != "max_queries"}
        public["max_queries"] = plan["max_queries"]
        secs = np.asarray(lp_seconds) if lp_seconds else np.zeros(1)
        return MechanismResult(
            spends=[
                SpendRecord(
                    budget.epsilon,
                    0.0,
                    None,
                    f"PrivLearn threshold oracle: {b} queries, Laplace scale b/(εn) = {plan['laplace_scale']:.4g}",
                )
            ],
            epsilon_spent=budget.epsilon,
            delta_spent=0.0,
            accountant="pure ε (Laplace; [HRS12] Lemma 4.1, 4.4)",
            answers=answers,
            synopsis=synopsis,
            public=public,
            trace=trace,
            oracle_stats={
                "calls": lp_calls,
                "total_solve_seconds": float(secs.sum()),
                "median_solve_seconds": float(np.median(secs)),
                "max_solve_seconds": float(secs.max()),
                "statuses": {"optimal": lp_calls},
                "max_gap": 0.0,
                "not_optimal": 0,
                "solver": f"LP ({params['lp_solver']})",
                "distinct_oracle_queries": oracle.distinct_queries,
            },
            notes=[f"Synopsis for all conjunctions of width ≤ {k} ({cls.size:,} queries with negations)."],
        )


def _pad(a: np.ndarray, width: int) -> np.ndarray:
    if a.shape[1] >= width:
        return a
    return np.concatenate([a, np.full((a.shape[0], width - a.shape[1]), -1, dtype=a.dtype)], axis=1)
