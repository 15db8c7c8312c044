"""The projection's linear-minimisation oracle: the record minimising a sum of marginal residuals.

Frank–Wolfe over the convex hull of records (the projection of [GGHRW14] §8 and [NRW19]
§I-B, after Nikolov–Talwar–Zhang 2013) needs, at every step, the record

    x* = argmin_x  L(x),      L(x) = sum_S g[S, x_S]

where ``g`` holds one real number (of either sign) per cell of every measured marginal.
This is the DualQuery best response ([GGHRW14] §5) with real weights on *every* cell.

Two parts, as the issue asks:

* :class:`CoordinateDescent` -- the fast heuristic.  From many starts at once (random
  records and records already found), change one attribute at a time to its best value
  given the others, until no single change helps.  Every step is exact for that one
  attribute; the result is a local minimum (no better record differs from it in one
  attribute).  Vectorised over starts: one gather per (marginal, attribute) pair.
* :func:`scip_certify` -- SCIP on a *sparse relaxation*.  Per marginal, keep the ``m``
  cells with the most negative ``g`` explicitly and replace every other cell's value by
  ``theta_S``, the smallest value among the cells left out.  The relaxed objective is
  ``<= L(x)`` for *every* record, so SCIP's dual bound is a certified lower bound on
  ``min_x L(x)`` (hence an upper bound on the Frank–Wolfe gap), and its incumbent
  (warm-started from the heuristic's record) is a candidate record whose exact value
  we then evaluate.  The relaxation is a best-response problem with positive weights,
  and :func:`relaxation_model` writes it as a MIP with the marginal-polytope constraints
  ``sum_{y in E_S, y_a = v} c_y <= x[a, v]`` (at most one cell of a marginal holds, and
  only if its literals do) -- valid for every record and much tighter than the per-literal
  ``c_y <= x_l`` of the DualQuery model, at the same size.

Privacy never depends on this module: the projection's oracle only post-processes the
noisy measurements (ALGORITHMS.md, "Oracle failures").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import OracleError
from .best_response import OPTIMAL


@dataclass
class MinimiserResult:
    """The best record of one call and what it cost."""

    record: np.ndarray  # codes, shape (p,)
    value: float  # exact L(record)
    candidates: np.ndarray  # distinct local minima found, best first, shape (c, p)
    candidate_values: np.ndarray
    sweeps: int
    seconds: float


class CoordinateDescent:
    """Coordinate-descent heuristic for ``min_x sum_S g[S, x_S]`` over a fixed set of marginals.

    ``workload`` gives the marginals and the flat cell numbering of ``g`` (marginal j owns
    ``offsets[j] .. offsets[j+1]-1``, row-major in its attributes).
    """

    def __init__(self, workload) -> None:
        self.workload = workload
        self.shape = np.asarray(workload.domain.shape, dtype=np.int64)
        self.p = len(self.shape)
        self.n_marginals = workload.n_marginals
        offsets = workload.offsets
        maps = value_maps(workload)
        self.mapped = maps is not None
        # strides[j, a]: how far cell ids of marginal j move when attribute a's index in that
        # marginal grows by 1 (0 when a is not in marginal j).  Row-major, first attribute most
        # significant.  The index is the value itself, or its group where the marginal measures a
        # coarsened attribute (``value_maps``).
        self.strides = np.zeros((self.n_marginals, self.p), dtype=np.int64)
        for j, m in enumerate(workload.marginals):
            stride = 1
            for a, size in zip(reversed(m), reversed(workload.marginal_shape(j))):
                self.strides[j, a] = stride
                stride *= int(size)
        self.base_offsets = np.asarray(offsets[:-1], dtype=np.int64)
        #: marginals touching each attribute: the only ones whose value changes with it.
        self.touching = [np.nonzero(self.strides[:, a])[0] for a in range(self.p)]
        #: value_steps[a][i, v]: what value v of attribute a adds to the cell id in marginal touching[a][i].
        self.value_steps = []
        for a in range(self.p):
            index = np.tile(np.arange(int(self.shape[a])), (len(self.touching[a]), 1))
            if maps is not None:
                for i, j in enumerate(self.touching[a].tolist()):
                    index[i] = maps[j][workload.marginals[j].index(a)]
            self.value_steps.append(self.strides[self.touching[a], a][:, None] * index)

    # ----------------------------------------------------------------- values
    def cell_ids(self, records: np.ndarray) -> np.ndarray:
        """Flat cell id of every record in every marginal, shape (r, |W|)."""
        records = np.atleast_2d(np.asarray(records, dtype=np.int64))
        if not self.mapped:
            return self.base_offsets[None, :] + records @ self.strides.T
        ids = np.broadcast_to(self.base_offsets[None, :], (records.shape[0], self.n_marginals)).copy()
        for a in range(self.p):
            ids[:, self.touching[a]] += self.value_steps[a][:, records[:, a]].T
        return ids

    def values(self, g: np.ndarray, records: np.ndarray) -> np.ndarray:
        """Exact L(x) for each record."""
        return g[self.cell_ids(records)].sum(axis=1)

    def random_records(self, rng: np.random.Generator, count: int) -> np.ndarray:
        return (rng.random((count, self.p)) * self.shape[None, :]).astype(np.int64)

    # ----------------------------------------------------------------- search
    def minimise(
        self,
        g: np.ndarray,
        starts: np.ndarray,
        rng: np.random.Generator,
        max_sweeps: int = 20,
        deadline: float | None = None,
        check: Callable[[], None] | None = None,
    ) -> MinimiserResult:
        """Run coordinate descent from every start (rows of codes) in parallel.

        ``deadline`` (a ``time.perf_counter`` value) ends the descent after the sweep that
        passes it (every start is still a valid record, just a less polished one);
        ``check`` is called between sweeps (a cancel check that raises).
        """
        t0 = time.perf_counter()
        g = np.asarray(g, dtype=np.float64)
        X = np.array(np.atleast_2d(starts), dtype=np.int64, copy=True)
        if X.shape[1] != self.p:
            raise OracleError(f"Start records must have {self.p} attributes, got {X.shape[1]}.")
        ids = self.cell_ids(X)  # (r, |W|), kept in step with X
        rows = np.arange(X.shape[0])
        sweeps = 0
        while sweeps < max_sweeps:
            sweeps += 1
            changed = False
            # A random attribute order per sweep avoids a systematic bias towards
            # the attributes visited first (each visit is an exact 1-D minimisation).
            for a in rng.permutation(self.p):
                js = self.touching[a]
                if js.size == 0:
                    continue
                # One gather for every marginal touching a: (starts, marginals, values of a).
                st = self.value_steps[a]  # (m_a, |X_a|): cell-id offset of each value in each marginal
                partial = ids[:, js] - st[:, X[:, a]].T
                vals = g[partial[:, :, None] + st[None, :, :]].sum(axis=1)
                best = np.argmin(vals, axis=1)
                # Keep the current value on ties so the descent terminates.
                cur = vals[rows, X[:, a]]
                move = vals[rows, best] < cur - 1e-15 * (1.0 + np.abs(cur))
                if move.any():
                    changed = True
                    new = np.where(move, best, X[:, a])
                    ids[:, js] = partial + st[:, new].T
                    X[:, a] = new
            if not changed or (deadline is not None and time.perf_counter() > deadline):
                break
            if check is not None:
                check()
        vals = g[ids].sum(axis=1)
        order = np.argsort(vals, kind="stable")
        X, vals = X[order], vals[order]
        _, first = np.unique(X, axis=0, return_index=True)
        first = np.sort(first)
        return MinimiserResult(X[0].copy(), float(vals[0]), X[first], vals[first], sweeps, time.perf_counter() - t0)


def value_maps(workload) -> list[tuple[np.ndarray, ...]] | None:
    """Per marginal, per attribute (in the marginal's order): the index each value takes in that
    marginal -- the value itself, or its group when the marginal measures a coarsened attribute.
    ``None`` for an ordinary workload (every index is the value)."""
    return getattr(workload, "value_maps", None)


# --------------------------------------------------------------------- SCIP part
@dataclass
class Certificate:
    """SCIP's answer on the sparse relaxation."""

    record: np.ndarray  # SCIP's incumbent (codes)
    value: float  # its exact L value
    lower_bound: float  # certified: min_x L(x) >= lower_bound
    status: str
    seconds: float
    cells_kept: int


@dataclass
class SparseRelaxation:
    """R(x) = constant - sum_j weights[j] * 1[x_S(j) = cell(j)]  <=  L(x) for every record x."""

    marginal: np.ndarray  # marginal index of each kept cell
    cells: list[tuple[int, ...]]  # the kept cells (codes of the marginal's attributes)
    weights: np.ndarray  # theta_S - g[S, y] > 0
    constant: float  # sum_S theta_S

    def evaluate(self, workload, records: np.ndarray) -> np.ndarray:
        records = np.atleast_2d(records)
        maps = value_maps(workload)
        out = np.full(records.shape[0], self.constant)
        for j, y, w in zip(self.marginal, self.cells, self.weights):
            m = list(workload.marginals[j])
            idx = records[:, m] if maps is None else np.column_stack([f[records[:, a]] for f, a in zip(maps[j], m)])
            out -= w * np.all(idx == np.asarray(y), axis=1)
        return out


def sparse_relaxation(workload, g: np.ndarray, cells_per_marginal: int) -> SparseRelaxation:
    """The relaxation ``R(x) <= L(x)`` described in the module doc.

    R(x) = sum_S theta_S - sum_{S, y in E_S} (theta_S - g[S, y]) 1[x_S = y], with E_S the
    ``cells_per_marginal`` most negative cells of S and theta_S the smallest value outside
    E_S (or the largest value in E_S when E_S is the whole marginal, which makes R exact).
    """
    marg, cells, weights = [], [], []
    constant = 0.0
    for j in range(workload.n_marginals):
        part = g[workload.offsets[j] : workload.offsets[j + 1]]
        k = min(int(cells_per_marginal), part.size)
        if k < part.size:
            kept = np.argpartition(part, k)[: k + 1]
            kept = kept[np.argsort(part[kept], kind="stable")]
            theta = float(part[kept[k]])  # the (k+1)-th smallest: every cell left out is >= it
            kept = kept[:k]
        else:
            kept = np.argsort(part, kind="stable")
            theta = float(part.max())
        constant += theta
        ys = np.stack(np.unravel_index(kept, workload.marginal_shape(j)), axis=1)
        for c, y in zip(kept, ys):
            w = theta - float(part[c])
            if w > 0:
                marg.append(j)
                cells.append(tuple(int(v) for v in y))
                weights.append(w)
    return SparseRelaxation(np.asarray(marg, dtype=np.int64), cells, np.asarray(weights, dtype=float), constant)


def relaxation_model(
    workload, relax: SparseRelaxation, warm_start: np.ndarray | None, time_limit: float | None, clock: str = "wall"
):
    """SCIP model of ``max_x sum_j w_j 1[x_S(j) = y_j]`` (so that min R = constant - max).

    Binary one-hot x[a, v]; continuous c_j in [0, 1]; for every marginal S, attribute a in S
    and value v: ``sum_{j in S, y_j[a] = v} c_j <= x[a, v]``.  At an integer x the best c
    sets c_j = 1[x_S = y_j], so the model is exact on records, and its LP is the local
    marginal polytope's, much tighter than per-literal bounds.
    """
    from pyscipopt import quicksum

    from .scip import new_model, set_one_hot

    shape = [int(s) for s in workload.domain.shape]
    model = new_model("linear_min_relaxation", gap=None)
    # "wall" (the user's notion of a time limit) or "cpu": on a shared machine a starved
    # process can stop before doing the work (measured: 1 s of CPU took 18 s of wall time),
    # so tests that need a proof use CPU time.
    model.setParam("timing/clocktype", 1 if clock == "cpu" else 2)
    if time_limit is not None:
        model.setParam("limits/time", float(time_limit))
    x = [[model.addVar(vtype="B", name=f"x{a}_{v}") for v in range(shape[a])] for a in range(len(shape))]
    for a in range(len(shape)):
        model.addCons(quicksum(x[a]) == 1)
    c = [model.addVar(vtype="C", lb=0.0, ub=1.0, obj=float(w), name=f"c{j}") for j, w in enumerate(relax.weights)]
    maps = value_maps(workload)

    def literal(mj: int, a: int, v: int):
        # The record's index of attribute a in marginal mj is v: one value, or any value of group v.
        if maps is None:
            return x[a][v]
        return quicksum(x[a][u] for u in np.nonzero(maps[mj][workload.marginals[mj].index(a)] == v)[0])

    def index_of(mj: int, a: int, value: int) -> int:
        return value if maps is None else int(maps[mj][workload.marginals[mj].index(a)][value])

    groups: dict[tuple[int, int, int], list] = {}
    for j, (mj, y) in enumerate(zip(relax.marginal, relax.cells)):
        for a, v in zip(workload.marginals[int(mj)], y):
            groups.setdefault((int(mj), a, v), []).append(c[j])
    for (mj, a, v), cs in groups.items():
        model.addCons(quicksum(cs) <= literal(mj, a, v))
    model.setMaximize()
    if warm_start is not None:
        sol = model.createSol()
        warm = set_one_hot(model, sol, x, warm_start)
        for j, (mj, y) in enumerate(zip(relax.marginal, relax.cells)):
            hit = all(index_of(int(mj), a, warm[a]) == v for a, v in zip(workload.marginals[int(mj)], y))
            model.setSolVal(sol, c[j], 1.0 if hit else 0.0)
        model.addSol(sol, free=True)
    return model, x


def scip_certify(
    minimiser: CoordinateDescent,
    g: np.ndarray,
    warm_start: np.ndarray | None,
    *,
    cells_per_marginal: int = 48,
    time_limit: float | None = 10.0,
    clock: str = "wall",
) -> Certificate:
    """Polish and certify with SCIP: a record and a lower bound on ``min_x L(x)``.

    The bound is valid whatever SCIP's status (a dual bound of a relaxation); it is
    tight when every marginal's optimal cell is among the cells kept and SCIP proved
    optimality.
    """
    t0 = time.perf_counter()
    g = np.asarray(g, dtype=np.float64)
    workload = minimiser.workload
    relax = sparse_relaxation(workload, g, cells_per_marginal)
    if len(relax.weights) == 0:
        # Every marginal is flat in g: every record has the same value.
        record = np.zeros(minimiser.p, dtype=np.int64) if warm_start is None else np.asarray(warm_start)
        val = float(minimiser.values(g, record)[0])
        return Certificate(record, val, min(relax.constant, val), "trivial", time.perf_counter() - t0, 0)
    model, x = relaxation_model(workload, relax, warm_start, time_limit, clock)
    model.optimize()
    status = model.getStatus()
    if model.getNSols() == 0:
        model.freeProb()
        raise OracleError(
            f"SCIP found no record for the linear-minimisation step (status {status}); raise the oracle time limit."
        )
    best = model.getBestSol()
    record = np.array([int(np.argmax([model.getSolVal(best, xv) for xv in xa])) for xa in x], dtype=np.int64)
    dual = float(model.getDualbound())
    model.freeProb()
    value = float(minimiser.values(g, record)[0])
    # Before SCIP solves the root LP its dual bound is "infinite" (1e20): then only the
    # free decomposable bound certifies anything.
    lower = decomposable_bound(workload, g)
    if abs(dual) < 1e19:
        lower = max(lower, relax.constant - dual)
    # The relaxation is below L everywhere, so its bound can never exceed a real value.
    lower = min(lower, value)
    if status not in OPTIMAL:
        status = f"{status} (bound still valid)"
    return Certificate(record, value, float(lower), status, time.perf_counter() - t0, len(relax.weights))


def decomposable_bound(workload, g: np.ndarray) -> float:
    """sum_S min_y g[S, y] <= L(x) for every record: free, and valid without any solver."""
    return float(np.minimum.reduceat(np.asarray(g, dtype=np.float64), workload.offsets[:-1]).sum())


def brute_force_min(workload, g: np.ndarray, limit: int = 200_000) -> tuple[np.ndarray, float]:
    """Exhaustive ``argmin_x L(x)`` on a tiny domain (tests only)."""
    import itertools
    import math

    shape = workload.domain.shape
    if math.prod(shape) > limit:
        raise OracleError(f"Brute force is for tiny domains (≤ {limit:,} records); this one has {math.prod(shape):,}.")
    records = np.array(list(itertools.product(*[range(s) for s in shape])), dtype=np.int64)
    vals = CoordinateDescent(workload).values(g, records)
    i = int(np.argmin(vals))
    return records[i], float(vals[i])
