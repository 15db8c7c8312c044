"""The best-response oracle: the record maximising a weighted sum of clauses.

Seed 004 §5 casts DualQuery's data-player step as MaxCSP and solves it as an integer
program; seed 001 §6 uses the same program (plus a linear perturbation) for FEM's
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
from dataclasses import dataclass, field
from typing import Sequence

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
    def empty(cls) -> "ClauseSet":
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
        return {"status": self.status, "objective": self.objective, "bound": self.bound, "gap": self.gap,
                "seconds": self.seconds, "optimal": self.optimal}


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

    def merge(self, other: "OracleStats") -> None:
        self.calls += other.calls
        self.seconds.extend(other.seconds)
        for k, v in other.statuses.items():
            self.statuses[k] = self.statuses.get(k, 0) + v
        self.max_gap = max(self.max_gap, other.max_gap)

    def to_dict(self) -> dict:
        s = np.asarray(self.seconds) if self.seconds else np.zeros(1)
        return {"calls": self.calls, "total_solve_seconds": float(s.sum()),
                "median_solve_seconds": float(np.median(s)), "max_solve_seconds": float(s.max()),
                "statuses": dict(self.statuses), "max_gap": self.max_gap,
                "not_optimal": sum(v for k, v in self.statuses.items() if k not in OPTIMAL)}


def best_response(shape: Sequence[int], clauses: ClauseSet, linear: np.ndarray | None = None, *,
                  time_limit: float | None = 30.0, gap: float = 0.0, threads: int = 1,
                  warm_start: np.ndarray | None = None, formulation: str = "disaggregated",
                  minimize: bool = False) -> OracleResult:
    """Solve ``max_x sum_j w_j clause_j(x) + <onehot(x), linear>`` with SCIP.

    ``shape`` is the domain shape (values per attribute); ``linear`` (length
    D = sum(shape)) is the optional perturbation term in one-hot order.  With
    ``minimize=True`` the objective is minimised instead (the projection's step).
    """
    from pyscipopt import SCIP_PARAMSETTING, Model, quicksum

    shape = [int(s) for s in shape]
    D = sum(shape)
    if linear is not None:
        linear = np.asarray(linear, dtype=float)
        if linear.shape != (D,):
            raise OracleError(f"The linear term must have length D = {D}, got {linear.shape}.")
    sign = -1.0 if minimize else 1.0
    t0 = time.perf_counter()
    model = Model("best_response")
    model.hideOutput()
    model.setParam("parallel/maxnthreads", max(1, int(threads)))
    if time_limit is not None:
        model.setParam("limits/time", float(time_limit))
    model.setParam("limits/gap", float(gap))
    model.setParam("randomization/randomseedshift", 0)
    # Measured on adult_pgm, s = 1000 (python -m dpcore bench oracle): the root LP bound of the
    # per-literal model is already within ~1% of the optimum, and cutting planes cost more time
    # than they save (median 4.7 s with, 2.1 s without).
    model.setSeparating(SCIP_PARAMSETTING.OFF)
    offsets = np.concatenate([[0], np.cumsum(shape)])
    x = [[model.addVar(vtype="B", name=f"x{a}_{v}") for v in range(shape[a])] for a in range(len(shape))]
    for a in range(len(shape)):
        model.addCons(quicksum(x[a]) == 1)
    obj = []
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
                model.addCons(c <= quicksum(1 - l for l in lits))
            elif formulation == "aggregate":
                model.addCons(quicksum(lits) >= len(lits) * c)
            else:
                for l in lits:
                    model.addCons(c <= l)
        else:  # c >= clause
            if neg:
                for l in lits:
                    model.addCons(c >= 1 - l)
            else:
                model.addCons(c >= quicksum(lits) - (len(lits) - 1))
        obj.append(w * c)
    if linear is not None:
        for a in range(len(shape)):
            for v in range(shape[a]):
                coef = sign * linear[offsets[a] + v]
                if coef != 0:
                    obj.append(coef * x[a][v])
    model.setObjective(quicksum(obj) if obj else 0, "maximize")
    if warm_start is not None:
        sol = model.createSol()
        for a, v in enumerate(np.asarray(warm_start, dtype=int)):
            for u in range(shape[a]):
                model.setSolVal(sol, x[a][u], 1.0 if u == v else 0.0)
        model.trySol(sol, printreason=False, completely=False, checkbounds=False, checkintegrality=False,
                     checklprows=False)
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


def objective_value(shape: Sequence[int], clauses: ClauseSet, linear: np.ndarray | None, records: np.ndarray) -> np.ndarray:
    """Exact objective of each record (rows of codes)."""
    records = np.atleast_2d(np.asarray(records, dtype=np.int64))
    val = clauses.evaluate(records)
    if linear is not None:
        offsets = np.concatenate([[0], np.cumsum(shape)])[:-1]
        val = val + np.asarray(linear)[records + offsets].sum(axis=1)
    return val


def brute_force(shape: Sequence[int], clauses: ClauseSet, linear: np.ndarray | None = None,
                minimize: bool = False, limit: int = 200_000) -> tuple[np.ndarray, float]:
    """Exhaustive best response on a tiny domain (tests only)."""
    size = math.prod(shape)
    if size > limit:
        raise OracleError(f"Brute force is for tiny domains (≤ {limit:,} records); this one has {size:,}.")
    records = np.array(list(itertools.product(*[range(s) for s in shape])), dtype=np.int64)
    vals = objective_value(shape, clauses, linear, records)
    i = int(np.argmin(vals) if minimize else np.argmax(vals))
    return records[i], float(vals[i])
