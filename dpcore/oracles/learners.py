"""Weighted optimisation oracles for learning: conjunctions, disjunctions, discrete halfspaces.

[NRW19] Def. 5-6: a *weighted optimisation oracle* for a class Q takes a weighted
dataset {(x_i, w_i)} and returns ``argmin_{q in Q} sum_i w_i q(x_i)``; a
*certifiable heuristic* either returns a true minimiser or ⊥.  Here SCIP is the
heuristic and its status "optimal" (gap 0) is the certificate: any other status is
⊥ (``OracleResult.certified`` is False and callers must treat the call as failed).

Every oracle works on *aggregated* data: equal feature vectors are merged and their
weights added, because the objective only depends on each distinct point's total
weight.  Labelled 0/1 losses reduce to this form: for a hypothesis h,
``1[h(x) != y] = y + (1 - 2y) h(x)``, so a labelled weighted dataset becomes the
unlabelled weights ``w (1 - 2y)`` plus a constant (:func:`loss_weights`).

Classes (features are binary: ``X in {0,1}^{n x d}``):

* conjunctions ``h_S(x) = AND_{j in S} x_j`` (S a set of feature indices; S empty = always 1);
* disjunctions ``h_S(x) = OR_{j in S} x_j`` (S empty = always 0), via
  ``OR_S(x) = 1 - AND_S(1 - x)``;
* discrete halfspaces ``h_k(x) = 1[<k, x> >= 1]`` with integer k in ``{-B..B}^d``
  and ``||k||_2 <= R`` (the grid W_tau of [NRVW20] §5 in units of tau; a bias is a
  constant-1 feature).  For binary x, <k, x> is an integer, so the rule is exactly
  "positive iff the score is at least 1" -- no ties, no epsilon margins.

Extra *linear* terms on the class's parameters carry the separator-set noise of
RSPM ([NRW19] §III.A) and the linear part of OPDisc's perturbation ([NRVW20] §3):
``linear[j]`` on the indicator ``j in S`` for conjunctions/disjunctions, and
``value_costs[j, g]`` on the indicator ``k_j = g`` for halfspaces.  OPDisc's
projection adds a term ``-eta_last * sqrt(1 - ||w||^2 / D^2)``.  [NRVW20] (§2, App. D.2)
linearises it with an auxiliary variable r and the convex constraint ``r^2 + ||w||^2/D^2 <= 1``,
which is exact only when the minimiser wants r large (eta_last >= 0); for eta_last < 0 it would need
the non-convex equality.  On the integer grid ||k||^2 is an integer, so we use an exact *table*
instead: one binary per attainable value of ||k||^2, and r is a fixed linear function of them.  It is
exact for both signs and keeps the model a MILP (measured 3-6x faster than the non-convex equality on
the Adult seven-feature task, 2 cores shared with other jobs).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from ..errors import OracleError

#: Refuse models with more distinct data points than this (each is one binary variable with big-M rows).
MAX_MIP_POINTS = 20_000
#: Refuse halfspace models with more value indicators than this.
MAX_MIP_VALUE_VARS = 5_000
#: Refuse models whose constraint matrix could exceed this many entries (points x (d + 1)): a 0/1-loss
#: big-M model of that size is far beyond what SCIP proves optimal in minutes.
MAX_MIP_NONZEROS = 200_000


@dataclass
class LearnerResult:
    """One oracle call: the hypothesis parameters, SCIP's status and the certificate."""

    params: np.ndarray  # conjunction/disjunction: 0/1 membership of each feature; halfspace: integer k
    status: str
    objective: float  # the minimised weighted objective (as SCIP reports it, constant included)
    bound: float
    seconds: float
    certified: bool  # SCIP proved optimality ([NRW19] Def. 6); False means ⊥

    @property
    def optimal(self) -> bool:
        return self.certified

    @property
    def gap(self) -> float:
        if not math.isfinite(self.bound) or not math.isfinite(self.objective):
            return math.inf
        return abs(self.objective - self.bound) / max(1.0, abs(self.objective))

    def to_dict(self) -> dict:
        return {
            "status": self.status,
            "objective": self.objective,
            "bound": self.bound,
            "seconds": self.seconds,
            "certified": self.certified,
        }


# ----------------------------------------------------------------- helpers
def aggregate(X: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of X and the summed weight of each (zero-weight rows dropped)."""
    X = np.asarray(X)
    weights = np.asarray(weights, dtype=float)
    if X.ndim != 2 or weights.shape != (X.shape[0],):
        raise OracleError(f"Expected X of shape (n, d) and n weights; got {X.shape} and {weights.shape}.")
    if X.shape[0] == 0:
        return X.reshape(0, X.shape[1]), np.zeros(0)
    uniq, inv = np.unique(X, axis=0, return_inverse=True)
    w = np.bincount(inv.ravel(), weights=weights, minlength=len(uniq))
    keep = w != 0
    return uniq[keep], w[keep]


def loss_weights(y: np.ndarray, weights: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """0/1 loss as a weighted query: sum_i w_i 1[h(x_i) != y_i] = const + sum_i v_i h(x_i)."""
    y = np.asarray(y).astype(int)
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float)
    return w * (1 - 2 * y), float(np.sum(w * y))


def _check_binary(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X)
    if X.size and not np.isin(X, (0, 1)).all():
        raise OracleError("The learning oracles need binary (0/1) features; discretise the features first.")
    return X.astype(np.int8)


def mip_size(n_points: int, d: int, kind: str, bound: int = 1) -> dict:
    """Public size estimate of an oracle's MIP (before building it)."""
    if kind == "halfspace":
        values = d * (2 * bound + 1)
        return {"point_binaries": n_points, "value_binaries": values, "nonzeros": n_points * (d + 1) + values}
    return {"point_binaries": n_points, "value_binaries": d, "nonzeros": n_points * (d + 1)}


def check_mip_size(n_points: int, d: int, kind: str, bound: int = 1) -> dict:
    size = mip_size(n_points, d, kind, bound)
    if (
        size["point_binaries"] > MAX_MIP_POINTS
        or size["value_binaries"] > MAX_MIP_VALUE_VARS
        or size["nonzeros"] > MAX_MIP_NONZEROS
    ):
        raise OracleError(
            f"The {kind} MIP would have up to {size['point_binaries']:,} point binaries, {size['value_binaries']:,} "
            f"weight binaries and {size['nonzeros']:,} constraint entries (limits {MAX_MIP_POINTS:,}, "
            f"{MAX_MIP_VALUE_VARS:,} and {MAX_MIP_NONZEROS:,}). Use fewer features or coarser encodings (binary "
            "'name=V' or 'name>=X' instead of one-hot), or a smaller training sample (--max-rows)."
        )
    return size


def _new_model(time_limit: float | None, threads: int):
    from pyscipopt import SCIP_PARAMSETTING

    from .scip import new_model

    model = new_model("learner", time_limit=time_limit, threads=threads)
    # Measured on the Adult seven-feature task (python -m dpcore bench learn): cutting planes cost more
    # than they save on these small big-M models (three RSPM solves: 4.9 s each with, 0.6-1.7 s without).
    model.setSeparating(SCIP_PARAMSETTING.OFF)
    return model


def _finish(model, t0: float, read_params) -> LearnerResult:
    status = model.getStatus()
    seconds = time.perf_counter() - t0
    if model.getNSols() == 0:
        model.freeProb()
        return LearnerResult(np.zeros(0, dtype=int), status, math.inf, -math.inf, seconds, False)
    best = model.getBestSol()
    params = read_params(model, best)
    objective = model.getObjVal()
    bound = model.getDualbound()
    model.freeProb()
    return LearnerResult(params, status, float(objective), float(bound), seconds, status in ("optimal",))


# ----------------------------------------------------------------- conjunctions / disjunctions
def conjunction_oracle(
    X: np.ndarray,
    weights: np.ndarray,
    linear: np.ndarray | None = None,
    constant: float = 0.0,
    *,
    time_limit: float | None = 30.0,
    threads: int = 1,
) -> LearnerResult:
    """``argmin_S  constant + sum_i weights_i AND_S(X_i) + sum_j linear_j [j in S]``.

    MIP: binary s_j (j in S); one continuous c_i in [0,1] per distinct point.
    AND_S(x) = 1 iff S avoids every zero of x, so for weight > 0 (the minimiser wants
    c = 0) ``c_i >= 1 - sum_{j: x_ij = 0} s_j``; for weight < 0 (wants c = 1)
    ``c_i <= 1 - s_j`` for every zero j of x_i.  Exact at the optimum.
    """
    X = _check_binary(X)
    n, d = X.shape
    pts, w = aggregate(X, weights)
    check_mip_size(len(pts), d, "conjunction")
    from pyscipopt import quicksum

    t0 = time.perf_counter()
    model = _new_model(time_limit, threads)
    s = [model.addVar(vtype="B", name=f"s{j}") for j in range(d)]
    obj = []
    for i, (x, wi) in enumerate(zip(pts, w)):
        zeros = np.flatnonzero(x == 0)
        c = model.addVar(vtype="C", lb=0.0, ub=1.0, name=f"c{i}")
        if wi > 0:
            model.addCons(c >= 1 - quicksum(s[j] for j in zeros))
        else:
            for j in zeros:
                model.addCons(c <= 1 - s[j])
        obj.append(float(wi) * c)
    if linear is not None:
        linear = np.asarray(linear, dtype=float)
        if linear.shape != (d,):
            raise OracleError(f"The linear term must have one entry per feature (d = {d}), got {linear.shape}.")
        obj.extend(float(linear[j]) * s[j] for j in range(d) if linear[j] != 0)
    model.setObjective(quicksum(obj) + float(constant) if obj else float(constant), "minimize")
    model.optimize()
    return _finish(model, t0, lambda m, sol: np.array([int(round(m.getSolVal(sol, v))) for v in s], dtype=np.int64))


def disjunction_oracle(
    X: np.ndarray, weights: np.ndarray, linear: np.ndarray | None = None, constant: float = 0.0, **kw
) -> LearnerResult:
    """``argmin_S  constant + sum_i weights_i OR_S(X_i) + sum_j linear_j [j in S]``.

    OR_S(x) = 1 - AND_S(1 - x): the conjunction oracle on complemented points with
    negated weights and the constant shifted by the total weight.
    """
    X = _check_binary(X)
    weights = np.asarray(weights, dtype=float)
    return conjunction_oracle(1 - X, -weights, linear, constant + float(weights.sum()), **kw)


def conjunction_values(S: np.ndarray, X: np.ndarray) -> np.ndarray:
    S = np.asarray(S).astype(bool)
    return np.all(np.asarray(X)[:, S] == 1, axis=1).astype(np.int64)


def disjunction_values(S: np.ndarray, X: np.ndarray) -> np.ndarray:
    S = np.asarray(S).astype(bool)
    return np.any(np.asarray(X)[:, S] == 1, axis=1).astype(np.int64)


# ----------------------------------------------------------------- discrete halfspaces
def halfspace_values(k: np.ndarray, X: np.ndarray) -> np.ndarray:
    """h_k(x) = 1[<k, x> >= 1] for integer k and binary x."""
    return (np.asarray(X, dtype=np.int64) @ np.asarray(k, dtype=np.int64) >= 1).astype(np.int64)


def halfspace_oracle(
    X: np.ndarray,
    weights: np.ndarray,
    *,
    bound: int,
    norm_bound: float | None = None,
    value_costs: np.ndarray | None = None,
    linear: np.ndarray | None = None,
    sphere_coef: float = 0.0,
    sphere_radius: float | None = None,
    constant: float = 0.0,
    time_limit: float | None = 30.0,
    threads: int = 1,
) -> LearnerResult:
    """Minimise over integer k in {-bound..bound}^d with ||k||_2 <= norm_bound:

        constant + sum_i weights_i h_k(X_i) + sum_{j,g} value_costs[j, g-(-bound)] [k_j = g]
                 + <linear, k> - sphere_coef * sqrt(1 - ||k||^2 / sphere_radius^2)

    k_j = sum_g g u_jg with one-hot binaries u_j, so ||k||^2 = sum g^2 u_jg is linear.
    One binary z_i = h_k(x_i) per distinct point, with the big-M row that binds for its
    weight's sign: weight > 0 needs ``<k, x_i> <= M z_i`` (z forced to 1 when the score
    is >= 1), weight < 0 needs ``<k, x_i> >= 1 - (M + 1)(1 - z_i)``; M = bound * |x_i|_1.
    """
    X = _check_binary(X)
    n, d = X.shape
    bound = int(bound)
    if bound < 1:
        raise OracleError("The weight grid needs bound >= 1.")
    pts, w = aggregate(X, weights)
    check_mip_size(len(pts), d, "halfspace", bound)
    grid = np.arange(-bound, bound + 1)
    if value_costs is not None:
        value_costs = np.asarray(value_costs, dtype=float)
        if value_costs.shape != (d, len(grid)):
            raise OracleError(f"value_costs must have shape {(d, len(grid))}, got {value_costs.shape}.")
    if norm_bound is not None and sphere_radius is not None and norm_bound > sphere_radius + 1e-9:
        raise OracleError("The norm bound must not exceed the projection radius D.")
    from pyscipopt import quicksum

    t0 = time.perf_counter()
    model = _new_model(time_limit, threads)
    u = [[model.addVar(vtype="B", name=f"u{j}_{g}") for g in grid] for j in range(d)]
    for j in range(d):
        model.addCons(quicksum(u[j]) == 1)
    k = [quicksum(int(g) * u[j][a] for a, g in enumerate(grid) if g != 0) for j in range(d)]
    sq = quicksum(int(g * g) * u[j][a] for j in range(d) for a, g in enumerate(grid) if g != 0)
    if norm_bound is not None:
        model.addCons(sq <= float(norm_bound) ** 2 + 1e-9)
    obj = []
    for i, (x, wi) in enumerate(zip(pts, w)):
        support = np.flatnonzero(x)
        M = bound * len(support)
        z = model.addVar(vtype="B", name=f"z{i}")
        score = quicksum(k[j] for j in support) if len(support) else 0
        if wi > 0:
            if M >= 1:
                model.addCons(score <= M * z)
        else:
            model.addCons(score >= 1 - (M + 1) * (1 - z))
        obj.append(float(wi) * z)
    if value_costs is not None:
        obj.extend(
            float(value_costs[j, a]) * u[j][a] for j in range(d) for a in range(len(grid)) if value_costs[j, a] != 0
        )
    if linear is not None:
        linear = np.asarray(linear, dtype=float)
        if linear.shape != (d,):
            raise OracleError(f"linear must have length d = {d}, got {linear.shape}.")
        obj.extend(
            float(linear[j]) * int(g) * u[j][a]
            for j in range(d)
            for a, g in enumerate(grid)
            if g != 0 and linear[j] != 0
        )
    if sphere_coef != 0.0:
        if sphere_radius is None or sphere_radius <= 0:
            raise OracleError("The projection term needs a positive radius D.")
        # ||k||^2 is an integer in 0..top, so sqrt(1 - ||k||^2/R^2) is exactly a table lookup: one binary
        # per attainable value.  Linear and exact for either sign of the coefficient (the convex
        # constraint r^2 + ||k||^2/R^2 <= 1 of [NRVW20] App. D.2 is exact only when maximising r, and the
        # non-convex equality needed otherwise was measured 3-10x slower under SCIP).
        top = int(math.floor(min(float(sphere_radius) ** 2, d * bound * bound) + 1e-9))
        levels = [model.addVar(vtype="B", name=f"n{v}") for v in range(top + 1)]
        model.addCons(quicksum(levels) == 1)
        model.addCons(quicksum(v * b for v, b in enumerate(levels)) == sq)
        root = [math.sqrt(max(0.0, 1.0 - v / float(sphere_radius) ** 2)) for v in range(top + 1)]
        obj.extend(-float(sphere_coef) * root[v] * b for v, b in enumerate(levels) if root[v] != 0.0)
    model.setObjective(quicksum(obj) + float(constant) if obj else float(constant), "minimize")
    model.optimize()

    def read(m, sol):
        return np.array(
            [int(grid[int(np.argmax([m.getSolVal(sol, v) for v in u[j]]))]) for j in range(d)], dtype=np.int64
        )

    return _finish(model, t0, read)


def halfspace_objective(
    k: np.ndarray,
    X: np.ndarray,
    weights: np.ndarray,
    *,
    bound: int,
    value_costs: np.ndarray | None = None,
    linear: np.ndarray | None = None,
    sphere_coef: float = 0.0,
    sphere_radius: float | None = None,
    constant: float = 0.0,
) -> float:
    """Exact objective of one k (for tests and for checking a returned solution)."""
    k = np.asarray(k, dtype=np.int64)
    val = constant + float(np.dot(np.asarray(weights, float), halfspace_values(k, X)))
    if value_costs is not None:
        val += float(np.asarray(value_costs)[np.arange(len(k)), k + bound].sum())
    if linear is not None:
        val += float(np.dot(linear, k))
    if sphere_coef != 0.0:
        if sphere_radius is None:
            raise OracleError("A sphere term (sphere_coef ≠ 0) needs its sphere_radius.")
        val -= sphere_coef * math.sqrt(max(0.0, 1.0 - float(k @ k) / sphere_radius**2))
    return val


def brute_force_halfspace(
    X, weights, *, bound: int, norm_bound: float | None = None, limit: int = 200_000, **terms
) -> tuple[np.ndarray, float]:
    """Exhaustive minimum over the grid (tests only)."""
    d = np.asarray(X).shape[1]
    if (2 * bound + 1) ** d > limit:
        raise OracleError(f"Brute force is for tiny grids (≤ {limit:,} points).")
    best: np.ndarray | None = None
    best_val = math.inf
    for point in itertools.product(range(-bound, bound + 1), repeat=d):
        k = np.array(point)
        if norm_bound is not None and float(k @ k) > norm_bound**2 + 1e-9:
            continue
        v = halfspace_objective(k, X, weights, bound=bound, **terms)
        if v < best_val:
            best, best_val = k, v
    if best is None:
        raise OracleError(f"No grid point within the norm bound {norm_bound} has a finite objective.")
    return best, best_val


def brute_force_subsets(X, weights, values_fn, linear=None, constant: float = 0.0, limit: int = 2**16):
    """Exhaustive minimum over all feature subsets (tests only)."""
    d = np.asarray(X).shape[1]
    if 2**d > limit:
        raise OracleError("Brute force is for a handful of features.")
    best, best_val = None, math.inf
    for bits in itertools.product((0, 1), repeat=d):
        S = np.array(bits)
        v = constant + float(np.dot(weights, values_fn(S, X)))
        if linear is not None:
            v += float(np.dot(linear, S))
        if v < best_val:
            best, best_val = S, v
    return best, best_val
