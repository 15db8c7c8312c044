"""The best-response oracle: the record maximising a weighted sum of clauses.

[GGHRW14] §5 casts DualQuery's data-player step as MaxCSP and solves it as an integer
program; [VTBSW20] §6 uses the same program (plus a linear perturbation) for FEM's
Follow-the-Perturbed-Leader step.  Here, over one-hot records:

    binary x[a, v]                       one per attribute value,  sum_v x[a, v] = 1
    c_j in [0, 1]                        one per *distinct* clause (equal sampled queries merged, weight w_j)
    positive cell, literals L:   c_j <= x_l            for every l in L       (c_j <= AND)
    negated cell,  literals L:   c_j <= sum_l (1 - x_l)                       (c_j <= NOT AND)
    maximise  sum_j w_j c_j + <x, sigma>

With w_j > 0 the optimum sets c_j to the clause's truth value.  Weights may also be
negative (the projection mechanism's linear-minimisation step): then c_j is bounded
*below* by the clause (positive: c_j >= sum_l x_l - (|L| - 1); negated:
c_j >= 1 - x_l for each l), which is again exact at the optimum.

This per-literal ("disaggregated") form has a much tighter LP relaxation than the
paper's aggregate constraint ``sum_l x_l >= |L| c_j``; ``formulation="aggregate"``
builds the latter for the benchmark that compares them.

Privacy never depends on this module for DualQuery, DQRS, FEM, sepFEM and the
projection (the oracle sees only privately sampled queries or public noise); a
time-out returns the incumbent, and the status and gap are recorded for accuracy.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import OracleError

#: SCIP statuses that certify optimality (within the requested gap).
OPTIMAL = ("optimal", "gaplimit")


@dataclass
class ClauseSet:
    """Distinct weighted clauses.  Clause j fixes ``attrs[j][i] = values[j][i]`` for
    all i (a marginal cell); ``negated[j]`` turns it into NOT(cell)."""

    attrs: list[tuple[int, ...]]
    values: list[tuple[int, ...]]
    negated: np.ndarray
    weights: np.ndarray

    def __len__(self) -> int:
        return len(self.attrs)

    @classmethod
    def empty(cls) -> ClauseSet:
        return cls([], [], np.zeros(0, bool), np.zeros(0))

    def touched_attributes(self) -> set[int]:
        return {a for attrs in self.attrs for a in attrs}

    def evaluate(self, records: np.ndarray) -> np.ndarray:
        """Weighted clause score of each record (rows of codes)."""
        records = np.atleast_2d(records)
        score = np.zeros(records.shape[0])
        for attrs, vals, neg, w in zip(self.attrs, self.values, self.negated, self.weights):
            sat = np.all(records[:, list(attrs)] == np.asarray(vals), axis=1)
            score += w * (~sat if neg else sat)
        return score


def clauses_from_queries(workload, qids: np.ndarray, weights: np.ndarray | None = None) -> ClauseSet:
    """Merge sampled queries of Q ∪ ¬Q into distinct weighted clauses.

    Ids ``0..|Q|-1`` are the cells of the workload, ``|Q|..2|Q|-1`` their negations.
    """
    qids = np.asarray(qids, dtype=np.int64)
    if weights is None:
        uniq, w = np.unique(qids, return_counts=True)
        w = w.astype(float)
    else:
        uniq, inv = np.unique(qids, return_inverse=True)
        w = np.bincount(inv, weights=np.asarray(weights, float))
    nq = workload.n_queries
    base = np.where(uniq >= nq, uniq - nq, uniq)
    neg = uniq >= nq
    attrs, values = [], []
    order = np.argsort(base, kind="stable")
    uniq, base, neg, w = uniq[order], base[order], neg[order], w[order]
    for j, cells in workload.decompose(base):
        m = workload.marginals[j]
        for cell in cells:
            attrs.append(m)
            values.append(tuple(int(c) for c in cell))
    keep = w != 0
    return ClauseSet([a for a, k in zip(attrs, keep) if k], [v for v, k in zip(values, keep) if k], neg[keep], w[keep])


@dataclass
class OracleResult:
    record: np.ndarray
    status: str
    objective: float
    bound: float
    gap: float
    seconds: float
    optimal: bool

    def to_dict(self) -> dict:
        return {
            "status": self.status,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "seconds": self.seconds,
            "optimal": self.optimal,
        }


@dataclass
class OracleStats:
    """Aggregate statistics of many oracle calls (for the internal evaluation)."""

    calls: int = 0
    seconds: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    max_gap: float = 0.0

    def add(self, r: OracleResult) -> None:
        self.calls += 1
        self.seconds.append(r.seconds)
        self.statuses[r.status] = self.statuses.get(r.status, 0) + 1
        if math.isfinite(r.gap):
            self.max_gap = max(self.max_gap, r.gap)

    def merge(self, other: OracleStats) -> None:
        self.calls += other.calls
        self.seconds.extend(other.seconds)
        for k, v in other.statuses.items():
            self.statuses[k] = self.statuses.get(k, 0) + v
        self.max_gap = max(self.max_gap, other.max_gap)

    def to_dict(self) -> dict:
        s = np.asarray(self.seconds) if self.seconds else np.zeros(1)
        return {
            "calls": self.calls,
            "total_solve_seconds": float(s.sum()),
            "median_solve_seconds": float(np.median(s)),
            "max_solve_seconds": float(s.max()),
            "statuses": dict(self.statuses),
            "max_gap": self.max_gap,
            "not_optimal": sum(v for k, v in self.statuses.items() if k not in OPTIMAL),
        }


def best_response(
    shape: Sequence[int],
    clauses: ClauseSet,
    linear: np.ndarray | None = None,
    *,
    time_limit: float | None = 30.0,
    gap: float = 0.0,
    threads: int = 1,
    warm_start: np.ndarray | None = None,
    formulation: str = "disaggregated",
    minimize: bool = False,
    heuristic_start: bool = True,
    solver_settings: str = "tuned",
) -> OracleResult:
    """Solve ``max_x sum_j w_j clause_j(x) + <onehot(x), linear>`` with SCIP.

    ``shape`` is the domain shape (values per attribute); ``linear`` (length
    D = sum(shape)) is the optional perturbation term in one-hot order.  With
    ``minimize=True`` the objective is minimised instead (the projection's step).

    ``heuristic_start`` first runs :func:`local_search_record` (from ``warm_start``
    if given, plus a few fixed starts) and hands SCIP the best record found: SCIP then
    only has to prove (or improve) it, and a time-out always returns at least that
    record.  ``solver_settings="scip-default"`` keeps SCIP's own primal heuristics and
    branching rule (the benchmark's reference point).
    """
    from pyscipopt import SCIP_PARAMSETTING, quicksum

    from .scip import new_model, set_one_hot

    shape = [int(s) for s in shape]
    D = sum(shape)
    if linear is not None:
        linear = np.asarray(linear, dtype=float)
        if linear.shape != (D,):
            raise OracleError(f"The linear term must have length D = {D}, got {linear.shape}.")
    if solver_settings not in ("tuned", "scip-default"):
        raise OracleError(f"solver_settings must be 'tuned' or 'scip-default', not {solver_settings!r}.")
    if warm_start is not None:
        warm_start = np.asarray(warm_start, dtype=np.int64)
        if warm_start.shape != (len(shape),) or np.any(warm_start < 0) or np.any(warm_start >= np.asarray(shape)):
            raise OracleError(f"The warm start must be one code per attribute within {tuple(shape)}.")
    sign = -1.0 if minimize else 1.0
    t0 = time.perf_counter()
    if heuristic_start:
        starts = [] if warm_start is None else [np.asarray(warm_start, dtype=np.int64)]
        warm_start, _ = local_search_record(shape, clauses, linear, starts=starts, minimize=minimize)
    model = new_model("best_response", time_limit=time_limit, gap=gap, threads=threads)
    # Measured on adult_pgm, s = 1000 (python -m dpcore bench oracle): the root LP bound of the
    # per-literal model is already within ~1% of the optimum, and cutting planes cost more time
    # than they save (median 4.7 s with, 2.1 s without).
    model.setSeparating(SCIP_PARAMSETTING.OFF)
    if solver_settings == "tuned":
        # SCIP's statistics on the same instances: the root LP takes ~0.05 s, strong branching
        # (the default reliability branching) ~75% of the rest, primal heuristics most of the
        # remainder.  The local-search incumbent makes the heuristics redundant, and cheap
        # inference branching closes the small root gap in a few hundred nodes: median CPU time
        # 2.9 s -> 0.54 s on 8 random s = 1000 instances; measured when it was written, not in docs/benchmarks.md.
        model.setHeuristics(SCIP_PARAMSETTING.OFF)
        model.setParam("branching/inference/priority", 1_000_000)
    offsets = np.concatenate([[0], np.cumsum(shape)])
    x = [[model.addVar(vtype="B", name=f"x{a}_{v}") for v in range(shape[a])] for a in range(len(shape))]
    for a in range(len(shape)):
        model.addCons(quicksum(x[a]) == 1)
    obj = []
    cvars = []
    for j, (attrs, vals, neg, w) in enumerate(zip(clauses.attrs, clauses.values, clauses.negated, clauses.weights)):
        w = sign * float(w)
        if w == 0:
            continue
        # The aggregate form needs a binary c (a continuous c could be fractional).
        ctype = "B" if formulation == "aggregate" and w > 0 and not neg else "C"
        c = model.addVar(vtype=ctype, lb=0.0, ub=1.0, name=f"c{j}")
        lits = [x[a][v] for a, v in zip(attrs, vals)]
        if w > 0:  # c <= clause
            if neg:
                model.addCons(c <= quicksum(1 - lit for lit in lits))
            elif formulation == "aggregate":
                model.addCons(quicksum(lits) >= len(lits) * c)
            else:
                for lit in lits:
                    model.addCons(c <= lit)
        else:  # c >= clause
            if neg:
                for lit in lits:
                    model.addCons(c >= 1 - lit)
            else:
                model.addCons(c >= quicksum(lits) - (len(lits) - 1))
        obj.append(w * c)
        cvars.append((c, attrs, vals, bool(neg)))
    if linear is not None:
        for a in range(len(shape)):
            for v in range(shape[a]):
                coef = sign * linear[offsets[a] + v]
                if coef != 0:
                    obj.append(coef * x[a][v])
    model.setObjective(quicksum(obj) if obj else 0, "maximize")
    if warm_start is not None:
        # A complete solution (records and clause values), stored before solving; SCIP
        # checks it when the solve starts.  (trySol is not allowed before presolving.)
        sol = model.createSol()
        warm = set_one_hot(model, sol, x, warm_start)
        for c, attrs, vals, neg in cvars:
            sat = all(warm[a] == v for a, v in zip(attrs, vals))
            model.setSolVal(sol, c, 1.0 if sat != neg else 0.0)
        model.addSol(sol, free=True)
    model.optimize()
    status = model.getStatus()
    seconds = time.perf_counter() - t0
    if model.getNSols() == 0:
        model.freeProb()
        raise OracleError(f"SCIP found no record (status {status}); raise the time limit.")
    best = model.getBestSol()
    record = np.array([int(np.argmax([model.getSolVal(best, xv) for xv in x[a]])) for a in range(len(shape))])
    objective = sign * model.getObjVal()
    bound = sign * model.getDualbound()
    gap = model.getGap()
    model.freeProb()
    return OracleResult(record, status, objective, bound, float(gap), seconds, status in OPTIMAL)


def _literal_arrays(clauses: ClauseSet) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Clause lengths and, per literal, its clause, attribute and value (flat arrays)."""
    lens = np.array([len(a) for a in clauses.attrs], dtype=np.int64)
    total = int(lens.sum())
    lit_clause = np.repeat(np.arange(len(lens), dtype=np.int64), lens)
    lit_attr = np.fromiter((a for attrs in clauses.attrs for a in attrs), dtype=np.int64, count=total)
    lit_val = np.fromiter((v for vals in clauses.values for v in vals), dtype=np.int64, count=total)
    return lens, lit_clause, lit_attr, lit_val


def local_search_record(
    shape: Sequence[int],
    clauses: ClauseSet,
    linear: np.ndarray | None = None,
    *,
    starts: Sequence[np.ndarray] = (),
    n_random: int = 4,
    max_passes: int = 50,
    minimize: bool = False,
    rng: np.random.Generator | None = None,
) -> tuple[np.ndarray, float]:
    """A good record by coordinate ascent: move one attribute at a time to its best value.

    For attribute a with the others fixed, clause j containing literal (a, v_j) is
    decided by x_a alone once its other literals hold; so the best value of x_a is an
    argmax over a bincount of weights.  Runs from each of ``starts`` and ``n_random``
    random records (``rng``: a fixed default seed, the heuristic only sees public
    inputs) and returns the best local optimum and its objective.  No optimality
    claim: it is SCIP's warm start and the fallback when SCIP fails.
    """
    shape_arr = np.asarray([int(s) for s in shape], dtype=np.int64)
    p = len(shape_arr)
    offsets = np.concatenate([[0], np.cumsum(shape_arr)])
    sign = -1.0 if minimize else 1.0
    lin = None if linear is None else sign * np.asarray(linear, dtype=float)
    lens, lit_clause, lit_attr, lit_val = _literal_arrays(clauses)
    w = sign * np.asarray(clauses.weights, dtype=float)
    neg = np.asarray(clauses.negated, dtype=bool)
    by_attr = [np.nonzero(lit_attr == a)[0] for a in range(p)]
    rng = np.random.default_rng(0) if rng is None else rng
    candidates = [np.asarray(s, dtype=np.int64).copy() for s in starts]
    candidates += [rng.integers(0, shape_arr) for _ in range(max(0, n_random))]
    if not candidates:
        candidates = [np.zeros(p, dtype=np.int64)]
    best, best_val = candidates[0], -math.inf
    for x in candidates:
        ok = x[lit_attr] == lit_val  # literal currently true
        n_ok = np.bincount(lit_clause, weights=ok, minlength=len(lens)).astype(np.int64)
        for _ in range(max_passes):
            changed = False
            for a in range(p):
                idx = by_attr[a]
                gain = np.zeros(shape_arr[a]) if lin is None else lin[offsets[a] : offsets[a + 1]].copy()
                if len(idx):
                    others_true = (n_ok[lit_clause[idx]] - ok[idx]) == lens[lit_clause[idx]] - 1
                    lits = idx[others_true]
                    cl = lit_clause[lits]
                    pos = ~neg[cl]
                    # positive clause: true iff x_a = its value; negated: true iff x_a != its value
                    np.add.at(gain, lit_val[lits[pos]], w[cl[pos]])
                    gain += w[cl[~pos]].sum()
                    np.subtract.at(gain, lit_val[lits[~pos]], w[cl[~pos]])
                v = int(np.argmax(gain))
                if gain[v] > gain[x[a]] + 1e-12:
                    x[a] = v
                    changed = True
                    now = lit_val[idx] == v
                    np.add.at(n_ok, lit_clause[idx], now.astype(np.int64) - ok[idx])
                    ok[idx] = now
            if not changed:
                break
        sat = np.where(neg, n_ok < lens, n_ok == lens)
        val = float(np.dot(w, sat))
        if lin is not None:
            val += float(lin[x + offsets[:-1]].sum())
        if val > best_val:
            best, best_val = x, val
    return best, sign * best_val


def objective_value(
    shape: Sequence[int], clauses: ClauseSet, linear: np.ndarray | None, records: np.ndarray
) -> np.ndarray:
    """Exact objective of each record (rows of codes)."""
    records = np.atleast_2d(np.asarray(records, dtype=np.int64))
    val = clauses.evaluate(records)
    if linear is not None:
        offsets = np.concatenate([[0], np.cumsum(shape)])[:-1]
        val = val + np.asarray(linear)[records + offsets].sum(axis=1)
    return val


def brute_force(
    shape: Sequence[int],
    clauses: ClauseSet,
    linear: np.ndarray | None = None,
    minimize: bool = False,
    limit: int = 200_000,
) -> tuple[np.ndarray, float]:
    """Exhaustive best response on a tiny domain (tests only)."""
    size = math.prod(shape)
    if size > limit:
        raise OracleError(f"Brute force is for tiny domains (≤ {limit:,} records); this one has {size:,}.")
    records = np.array(list(itertools.product(*[range(s) for s in shape])), dtype=np.int64)
    vals = objective_value(shape, clauses, linear, records)
    i = int(np.argmin(vals) if minimize else np.argmax(vals))
    return records[i], float(vals[i])
