"""Projection: measure the marginals with Gaussian noise, then project onto what real records can produce.

Beyond the papers, in the direction [GGHRW14] §8 and [NRW19] §I-B point to (the
projection mechanism of Nikolov, Talwar and Zhang 2013, made oracle-efficient):

    measure   ã_S = m_S(D) + N_Z(0, σ_S² I) / n     every marginal S, at the planned resolution,
                                                     and the one-way marginals of grouped attributes
    project   min over distributions p on records of  Σ_S Σ_c w_c (A_S p - ã_S)_c² / σ_S²
              (w_c = 1, or 0.5 for a cell whose noisy count is below 3σ when some marginal is grouped)
    round     the weights of p -> the requested number of rows (largest remainder)
    smooth    rows moved a few values along ordered attributes measured in groups (:mod:`.smoothing`)

**Privacy.**  ρ-zCDP for the measurements alone, ρ = Σ_S Δ²/(2σ_S²) with replace-one L2
sensitivity Δ = sqrt(2) per marginal of counts (ALGORITHMS.md, "Projection"); the noise is
the exact discrete Gaussian on integer counts [CKS20], drawn through ``ctx.noise`` (the same
ρ as the continuous Gaussian).  A marginal measured with some attribute's values grouped is
still a histogram of counts in which one changed row moves one unit out of a cell and into
another (or none, when both values share a group): Δ ≤ sqrt(2).  Which marginals are grouped
and how coarsely is decided from public quantities (the schema's sizes, n, σ); which values
share a group is decided from the released one-way marginals (adaptive composition: the
one-way measurements are charged first, ρ_1, and the groups are post-processing of them).
Everything after the measurement reads only the noisy answers and public quantities: it is
post-processing and costs nothing, whatever the solver does ("robust").  The stopping rules
are public: the Frank–Wolfe gap and Stein's unbiased risk estimate read the noisy answers
and the known noise level, never the true answers.

**Resolution.**  A marginal with more cells than n / (κσ) holds mostly cells whose counts
are far below the noise; fitting them spreads mass over cells that are empty in the data
(the fit follows positive noise and takes that mass from the large cells).  Such a marginal
is measured with its widest attributes' values grouped (consecutive values of similar
released mass; a common value keeps its own group), and the grouped attributes' one-way
marginals are measured at full resolution with a small share of ρ.  The records stay at full
resolution: the projection fits every measurement at once.  The same bias is why, in this regime,
cells the noisy answers call small count half in the fit (:data:`SMALL_CELL_WEIGHT`), and why
rows are smoothed along the ordered attributes whose values the grouping left unresolved.

**Projection.**  Fully corrective Frank–Wolfe over the convex hull of records (column
generation): the linear-minimisation step is the weighted best response of
:mod:`dpcore.oracles.linear_min` (coordinate descent from many starts, optionally polished
and certified by SCIP), its best local minima join the support, and the weights of every
record found are re-fitted by accelerated projected gradient through the records' cell ids.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from ..errors import BudgetError, ParameterError, WorkloadError
from ..oracles.linear_min import CoordinateDescent, decomposable_bound, scip_certify
from ..privacy import check_budget, eps_to_zcdp, gaussian_sigma_for_rho
from ..privacy.samplers import Randomness
from .base import Budget, Mechanism, MechanismResult, Param, RunContext, SpendRecord
from .decouple import (
    DECOUPLE_PARAM,
    EMPTY_SPECIAL_PARAM,
    chain_zeros,
    decouple_notes,
    decouple_rows,
    empty_chains,
    empty_notes,
    fill_empty_cells,
    own_group,
)
from .direct import project_simplex
from .repair import (
    REPAIR_MAX_ENTRIES,
    REPAIR_PARAM,
    REPAIR_SECONDS,
    REPAIR_Z,
    REPAIR_Z_WHOLE,
    repair_notes,
    repair_rows,
)
from .smoothing import ORDER_ROUGHNESS, coded_in_order, integer_codes, ordered_attributes, smooth_records

#: Bytes per query the projection keeps at once: noisy answers, fitted answers, the
#: residual and its weighted copy inside the solver, plus the true and released answers
#: the release computes for the internal evaluation (8 float64).
PROJECTION_BYTES_PER_QUERY = 64
#: Refuse (with the size) when the projection's working set would pass this, or half
#: the memory available now, whichever is smaller.
PROJECTION_MEMORY_LIMIT = 2 * 1024**3
#: Largest number of rows a release may ask for (the loader's own cap on a table).
MAX_ROWS = 20_000_000
#: The number of rows released, shared by the mechanisms that fit records.
ROWS_PARAM = Param(
    "rows", "int", None, "Synthetic rows to release (default: n, the table's size).", 1, MAX_ROWS, optional=True
)

STOP_RULES = {
    "risk minimum": "the estimated error (Stein's unbiased risk estimate, from public quantities) stopped improving",
    "discrepancy": "the residual reached the known noise level (discrepancy principle)",
    "converged": "the fit converged: the Frank–Wolfe gap (how much any distribution of records could still lower "
    "the residual, per query, in units of the noise level) fell below its tolerance",
    "iteration limit": "the iteration limit was reached before the noise level",
    "time limit": "the time limit was reached before the noise level",
    "support limit": "the number of distinct records reached its limit",
}


# --------------------------------------------------------------------- settings
@dataclass
class ProjectionSettings:
    """How the Frank–Wolfe projection runs (all public)."""

    max_iterations: int = 1000
    max_seconds: float = 120.0
    stopping: str = "auto"  # "auto" (gap or risk, whichever first), "gap", "risk", "discrepancy", "none"
    gap_level: float = 0.05  # the gap rule: stop when the Frank–Wolfe gap per query falls below this
    discrepancy_z: float = 0.0
    risk_patience: int = 5  # corrective steps without a better risk estimate before stopping
    starts: int = 64
    columns_per_iteration: int = 32
    corrective_every: int = 1
    corrective_iterations: int = 30
    max_support: int = 20_000
    scip: str = "certify"  # "off", "certify" (final certificate), "polish" (every corrective step)
    scip_cells: int = 48
    scip_time_limit: float = 3.0
    gap_tolerance: float = 1e-9

    def threshold(self, n_queries: int) -> float:
        """The discrepancy level: E||noise||²/σ² = |Q|, plus z standard deviations of χ²_|Q|."""
        return n_queries + self.discrepancy_z * math.sqrt(2.0 * n_queries)


@dataclass
class ProjectionOutcome:
    records: np.ndarray  # distinct records found (K, p)
    weights: np.ndarray  # their weights, a distribution (K,)
    fitted: np.ndarray  # answers of the weighted records on the measured marginals
    stop_rule: str
    converged: bool
    iterations: int
    oracle_calls: int
    chi2: float  # Σ_S ||A_S p - ã_S||² / σ_S² at the end
    threshold: float
    fw_gap: float  # heuristic gap (normalised like residual_norm); a lower bound on the true gap
    certified_gap: float | None  # SCIP-certified upper bound on the true gap (same units)
    trace: list[dict] = field(default_factory=list)
    scip: dict = field(default_factory=dict)


# --------------------------------------------------------------------- the solver
#: Most cells SCIP's sparse relaxation keeps in total (scip_cells per marginal, fewer on huge workloads).
SCIP_CELL_BUDGET = 8192
#: Entries (records × marginals) gathered at once by the support operators: bounds their
#: temporary memory (8 bytes each) whatever the support and the workload.
_CHUNK_ENTRIES = 1 << 20


class RecordProjector:
    """Frank–Wolfe projection of noisy marginals onto the convex hull of records.

    ``noisy`` are normalised answers in the flat numbering of ``workload``;
    ``sigmas`` the noise standard deviation of each marginal (same scale).  The solver
    never sees the private data.

    Column generation (fully corrective Frank–Wolfe, "simplicial decomposition"): every
    step asks the linear-minimisation oracle for improving records from many starts,
    adds the best few as columns, and re-fits the weights of every record found by
    accelerated projected gradient over the simplex.  The re-fit works through the
    records' cell ids (``Aᵀ`` as a sparse matrix of K rows with a 1 in each record's
    cells: ``A w`` and ``Aᵀ r`` are one sparse product each), never a K×K Gram matrix:
    its cost and memory grow as K·|W|, so supports of tens of thousands of records stay
    affordable.
    """

    def __init__(
        self,
        workload,
        noisy: np.ndarray,
        sigmas: np.ndarray,
        settings: ProjectionSettings,
        cell_weights: np.ndarray | None = None,
    ) -> None:
        self.workload = workload
        self.settings = settings
        self.noisy = np.asarray(noisy, dtype=np.float64)
        if self.noisy.shape != (workload.n_queries,):
            raise WorkloadError(f"Expected {workload.n_queries:,} noisy answers, got {self.noisy.shape}.")
        sig = np.broadcast_to(np.asarray(sigmas, dtype=np.float64), (workload.n_marginals,))
        if np.any(~np.isfinite(sig)) or np.any(sig <= 0):
            raise ParameterError("Every measured marginal needs a positive, finite noise level.")
        self.omega = 1.0 / sig**2  # per-marginal precision: the ML weighting of Gaussian noise
        self.omega_cells = np.repeat(self.omega, workload.sizes)
        if cell_weights is not None:  # a public reweighting of cells (:func:`small_cell_weights`)
            self.omega_cells = self.omega_cells * np.asarray(cell_weights, dtype=np.float64)
        self.cd = CoordinateDescent(workload)
        self.p = len(workload.domain)
        self.m = workload.n_marginals
        self._id_type = np.int32 if workload.n_queries < 2**31 else np.int64
        self._rec_buf = np.zeros((0, self.p), dtype=np.int64)
        self._ids_buf = np.zeros((0, self.m), dtype=self._id_type)
        self.weights = np.zeros(0)
        self.index: dict[bytes, int] = {}
        self.fitted = np.zeros(workload.n_queries)
        self.wnoisy = self.omega_cells * self.noisy
        self.noisy_norm = float(np.dot(self.wnoisy, self.noisy))
        self._power = np.zeros(0)  # warm start of the power iteration for the re-fit's step size
        self.deadline = math.inf
        self.cancel_check: Callable[[], None] | None = None

    # ------------------------------------------------------------- support
    @property
    def records(self) -> np.ndarray:
        return self._rec_buf[: len(self.weights)]

    @property
    def ids(self) -> np.ndarray:
        """Flat cell id of every support record in every marginal, shape (K, |W|)."""
        return self._ids_buf[: len(self.weights)]

    def add_records(self, recs: np.ndarray) -> np.ndarray:
        """Add records (weight 0) unless present; returns their indices."""
        recs = np.atleast_2d(np.asarray(recs, dtype=np.int64))
        out: list[int] = []
        added: list[np.ndarray] = []
        K = len(self.weights)
        for r in recs:
            key = r.tobytes()
            if key not in self.index:
                self.index[key] = K + len(added)
                added.append(r)
            out.append(self.index[key])
        if added:
            new = np.asarray(added)
            b = len(new)
            if K + b > len(self._rec_buf):  # grow by doubling: no copy of the support per step
                cap = max(2 * len(self._rec_buf), K + b, 64)
                rec_buf = np.zeros((cap, self.p), dtype=np.int64)
                ids_buf = np.zeros((cap, self.m), dtype=self._id_type)
                rec_buf[:K], ids_buf[:K] = self.records, self.ids
                self._rec_buf, self._ids_buf = rec_buf, ids_buf
            self._rec_buf[K : K + b] = new
            self._ids_buf[K : K + b] = self.cd.cell_ids(new)
            self.weights = np.concatenate([self.weights, np.zeros(b)])
            self._power = np.concatenate([self._power, np.full(b, 1.0 / math.sqrt(K + b))])
        return np.asarray(out, dtype=np.int64)

    def prune(self) -> None:
        keep = self.weights > 0
        if keep.all():
            return
        K = int(keep.sum())
        self._rec_buf[:K] = self.records[keep]
        self._ids_buf[:K] = self.ids[keep]
        self._power = self._power[keep] if len(self._power) == len(keep) else np.ones(K) / math.sqrt(K)
        self.weights = self.weights[keep]
        self.index = {r.tobytes(): i for i, r in enumerate(self.records)}

    # ------------------------------------------------------------- the linear maps of the support
    def _chunks(self):
        step = max(1, _CHUNK_ENTRIES // max(1, self.m))
        K = len(self.weights)
        return [(i, min(K, i + step)) for i in range(0, K, step)]

    def answers_of(self, w: np.ndarray) -> np.ndarray:
        """A w: the answers of the support records weighted by ``w``."""
        ids, cells = self.ids, self.workload.n_queries
        out = np.zeros(cells)
        for lo, hi in self._chunks():
            out += np.bincount(ids[lo:hi].ravel(), weights=np.repeat(w[lo:hi], self.m), minlength=cells)
        return out

    def _support_cells(self) -> tuple[np.ndarray, np.ndarray]:
        """The cells some support record falls in, and the records' cell ids renumbered over them: the
        re-fit's vectors then have one entry per such cell, not one per query."""
        mark = np.zeros(self.workload.n_queries, dtype=bool)
        ids = self.ids
        for lo, hi in self._chunks():
            mark[ids[lo:hi]] = True
        cells = np.flatnonzero(mark)
        position = np.cumsum(mark, dtype=np.int64) - 1
        local = np.empty_like(ids)
        for lo, hi in self._chunks():
            local[lo:hi] = position[ids[lo:hi]]
        return cells, local

    def refit_answers(self) -> None:
        """Fitted answers recomputed exactly from the weights (no drift from many updates)."""
        self.fitted = self.answers_of(self.weights)

    def objective(self, fitted: np.ndarray | None = None) -> float:
        """½‖A w − ã‖²_ω, the projection's objective (½ χ²)."""
        r = (self.fitted if fitted is None else fitted) - self.noisy
        return 0.5 * float(np.dot(self.omega_cells * r, r))

    # ------------------------------------------------------------- steps
    def fully_corrective(self, iterations: int | None = None) -> None:
        """Least squares over the simplex of the records found: min ½‖A w − ã‖²_ω, w ∈ Δ.

        Accelerated projected gradient (FISTA) with gradient-based restarts
        (O'Donoghue & Candès 2015), warm-started at the current weights; the step is
        1/L with L the largest eigenvalue of AᵀΩA from a warm-started power iteration.
        The result is kept only if it lowers the objective, so the projection's objective
        never increases.
        """
        iterations = self.settings.corrective_iterations if iterations is None else iterations
        K = len(self.weights)
        if K <= 1:
            self.refit_answers()
            return
        # Cells no support record reaches keep A w = 0 whatever w is: only the others enter the re-fit.
        cells, local = self._support_cells()
        omega, target, nc = self.omega_cells[cells], self.noisy[cells], len(cells)
        # Aᵀ over those cells as a sparse matrix, a row per record with a 1 in each of its cells: A w and
        # Aᵀ r are one compiled product each, 5-8x faster than a bincount and a gather at the sizes the
        # re-fit runs at (a few thousand records × tens of marginals), which it repeats every iteration.
        # Its memory is the ids' plus 8 bytes an entry.
        index = local.dtype if local.size < 2**31 else np.int64
        at = sparse.csr_array(
            (np.ones(local.size), local.ravel(), np.arange(0, local.size + 1, self.m, dtype=index)), shape=(K, nc)
        )
        a = at.T

        def objective(w: np.ndarray) -> float:  # ½‖A w − ã‖²_ω up to a constant
            r = a @ w - target
            return 0.5 * float(np.dot(omega * r, r))

        w0 = self.weights
        f0 = objective(w0)
        v = self._power if len(self._power) == K and np.any(self._power) else np.ones(K) / math.sqrt(K)
        lam = 0.0
        for _ in range(6 if len(self._power) == K else 20):
            gv = at @ (omega * (a @ v))
            lam = float(np.linalg.norm(gv))
            if lam == 0:
                return
            v = gv / lam
        self._power = v
        lip = 1.2 * lam + 1e-300
        w, y, t = w0.copy(), w0.copy(), 1.0
        for _ in range(iterations):
            if time.perf_counter() > self.deadline:
                break
            if self.cancel_check is not None:
                self.cancel_check()
            grad = at @ (omega * (a @ y - target))
            w_new = project_simplex(y - grad / lip)
            if np.abs(w_new - w).sum() < 1e-9:
                w = w_new
                break
            if np.dot(grad, w_new - w) > 0:  # restart: momentum points uphill
                t, y = 1.0, w_new
            else:
                t_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
                y = w_new + ((t - 1.0) / t_new) * (w_new - w)
                t = t_new
            w = w_new
        w[w < 1e-12] = 0.0
        w /= w.sum()
        if objective(w) <= f0:
            self.weights = w
        self.refit_answers()  # exact answers (plain Frank–Wolfe steps update them incrementally)
        self.prune()

    def frank_wolfe_step(self, record: np.ndarray, inner: float, value: float) -> None:
        """p <- (1-γ) p + γ e_x with the exact line search of the quadratic."""
        rid = self.cd.cell_ids(record)[0]
        # ‖e(x) − a‖²_ω = ‖a‖²_ω − 2 Σ_S ω_x a[S, x_S] + Σ_S ω_x (ω_x: the weight of x's cell in S), with
        # ‖a‖²_ω = <ω(a − ã), a> + <ωã, a>.
        w_x = self.omega_cells[rid]
        dnorm = float(inner + np.dot(self.wnoisy, self.fitted) - 2.0 * np.dot(w_x, self.fitted[rid]) + w_x.sum())
        gamma = min(1.0, max(0.0, (inner - value) / max(dnorm, 1e-300)))
        self.fitted *= 1.0 - gamma
        self.fitted[rid] += gamma
        self.weights *= 1.0 - gamma
        k = self.add_records(record)[0]
        self.weights[k] += gamma

    def _starts(self, rng: np.random.Generator, last_best: np.ndarray) -> np.ndarray:
        """Fresh random records for diversity, the last winner, and records already in the
        support (the gradient changes slowly between steps)."""
        s = self.settings
        n_support = min(len(self.weights), s.starts // 2)
        support = (
            self.records[rng.choice(len(self.weights), n_support, replace=False)]
            if n_support
            else np.zeros((0, self.p), np.int64)
        )
        return np.vstack([last_best[None, :], support, self.cd.random_records(rng, max(1, s.starts - n_support - 1))])

    # ------------------------------------------------------------- the loop
    def run(
        self,
        rng: np.random.Generator,
        ctx: RunContext | None = None,
        monitor: Callable[[np.ndarray], dict] | None = None,
        deadline: float | None = None,
    ) -> ProjectionOutcome:
        """Project until a stopping rule fires; ``deadline`` (a ``time.perf_counter`` value) bounds the
        whole call, the final re-fit and SCIP's certificate included."""
        s = self.settings
        nq = self.workload.n_queries
        threshold = s.threshold(nq)
        trace: list[dict] = []
        t0 = time.perf_counter()
        self.deadline = t0 + s.max_seconds if deadline is None else min(deadline, t0 + s.max_seconds)
        # The search stops early enough to leave the final re-fit and certificate their share of the clock.
        finish = (s.scip_time_limit if s.scip != "off" else 0.0) + 1.0
        search_end = self.deadline - min(0.1 * (self.deadline - t0), finish)
        self.cancel_check = None if ctx is None else ctx.check_cancel
        calls = 0
        scip_info = {"calls": 0, "seconds": 0.0, "improved_records": 0}
        if len(self.weights) == 0:
            # Start: the best records for an empty fit (g = -ω ã).
            first = self.cd.minimise(-self.wnoisy, self.cd.random_records(rng, s.starts), rng)
            calls += 1
            idx = self.add_records(first.candidates[: s.columns_per_iteration])
            self.weights[idx[0]] = 1.0
            self.refit_answers()
        last_best = self.records[int(np.argmax(self.weights))]
        stop, converged, fw_gap, cert_gap = "iteration limit", False, math.inf, None
        best_risk, best_snapshot, since_best = math.inf, None, 0
        it = 0
        while True:
            resid = self.fitted - self.noisy
            gw = self.omega_cells * resid
            chi2 = float(np.dot(gw, resid))
            if s.stopping == "discrepancy" and chi2 <= threshold:
                stop, converged = "discrepancy", True
                break
            if it >= s.max_iterations:
                stop = "iteration limit"
                break
            if time.perf_counter() > search_end:
                stop = "time limit"
                break
            if ctx is not None:
                ctx.check_cancel()
            it += 1
            res = self.cd.minimise(gw, self._starts(rng, last_best), rng, deadline=search_end, check=self.cancel_check)
            calls += 1
            inner = float(np.dot(gw, self.fitted))  # <∇f(p), p>
            best_rec, best_val = res.record, res.value
            certified_now = None
            corrective_due = it % s.corrective_every == 0
            if s.scip == "polish" and corrective_due and search_end - time.perf_counter() > 0.5:
                cert = self._scip(gw, best_rec, scip_info, min(s.scip_time_limit, search_end - time.perf_counter()))
                calls += 1
                certified_now = 2.0 * (inner - cert.lower_bound) / nq
                if cert.value < best_val - 1e-12 * abs(best_val):
                    scip_info["improved_records"] += 1
                    best_rec, best_val = cert.record, cert.value
            fw_gap = 2.0 * (inner - best_val) / nq
            last_best = best_rec
            tol = s.gap_tolerance * max(chi2, 1.0)
            if s.stopping in ("auto", "gap") and fw_gap <= s.gap_level:
                # Public: the gap reads only the noisy answers and the records found.
                stop, converged = "converged", True
                self._log(trace, it, calls, chi2, nq, fw_gap, certified_now, t0, False, monitor)
                break
            if inner - best_val <= tol:
                # The heuristic found no improving record; with SCIP on, let it look once.
                if s.scip != "off" and certified_now is None:
                    cert = self._scip(
                        gw, best_rec, scip_info, max(0.5, min(s.scip_time_limit, search_end - time.perf_counter()))
                    )
                    calls += 1
                    certified_now = 2.0 * (inner - cert.lower_bound) / nq
                    if cert.value < best_val - tol:
                        best_rec, best_val = cert.record, cert.value
                        fw_gap = 2.0 * (inner - best_val) / nq
                if inner - best_val <= tol:
                    stop, converged, cert_gap = "converged", True, certified_now
                    self._log(trace, it, calls, chi2, nq, fw_gap, certified_now, t0, False, monitor)
                    break
            # Improving local minima (negative reduced cost), best first, become columns.
            improving = res.candidates[res.candidate_values < inner - tol]
            columns = np.vstack([best_rec[None, :], improving])[: max(1, s.columns_per_iteration)]
            corrected, risk = False, None
            if corrective_due:
                self.add_records(columns)
                self.fully_corrective()
                corrected = True
                risk = self.risk_estimate()
                if risk < best_risk:
                    best_risk, since_best = risk, 0
                    best_snapshot = (self.records.copy(), self.weights.copy(), it)
                else:
                    since_best += 1
            else:
                self.frank_wolfe_step(best_rec, inner, best_val)
                if len(columns) > 1:
                    self.add_records(columns[1:])
            if len(self.weights) >= s.max_support:
                if not corrected:
                    self.fully_corrective()
                    corrected = True
                if len(self.weights) >= s.max_support:
                    stop = "support limit"
                    self._log(trace, it, calls, chi2, nq, fw_gap, certified_now, t0, corrected, monitor, risk)
                    break
            self._log(trace, it, calls, chi2, nq, fw_gap, certified_now, t0, corrected, monitor, risk)
            if s.stopping in ("auto", "risk") and since_best >= s.risk_patience:
                stop, converged = "risk minimum", True
                break
            if ctx is not None and (it % 5 == 0 or it == 1):
                ctx.report(
                    it,
                    s.max_iterations,
                    f"projection step {it}: residual {chi2 / nq:.3f} × noise level",
                    residual_norm=chi2 / nq,
                )
        return self._finish(stop, converged, it, calls, best_risk, best_snapshot, last_best, cert_gap, fw_gap, trace,
                            scip_info)  # fmt: skip

    def _finish(
        self, stop, converged, it, calls, best_risk, best_snapshot, last_best, cert_gap, fw_gap, trace, scip_info
    ) -> ProjectionOutcome:
        """After the search: the final re-fit the stopping rule calls for, SCIP's certificate of the gap (or the
        free decomposable bound), and the outcome."""
        s = self.settings
        nq = self.workload.n_queries
        threshold = s.threshold(nq)
        # A final corrective step on the records found (it can only lower the residual);
        # the discrepancy rule keeps the iterate that met the level, the risk rule the
        # iterate with the smallest risk estimate.
        if s.stopping in ("auto", "risk") and best_snapshot is not None and stop != "converged":
            if stop != "risk minimum":
                self.fully_corrective()
            if self.risk_estimate() > best_risk:
                self.restore(*best_snapshot[:2])
        elif stop != "discrepancy":
            self.fully_corrective()
        resid = self.fitted - self.noisy
        gw = self.omega_cells * resid
        chi2 = float(np.dot(gw, resid))
        remaining = self.deadline - time.perf_counter()
        if s.scip != "off" and cert_gap is None and remaining > 0.5:
            cert = self._scip(gw, last_best, scip_info, min(s.scip_time_limit, remaining))
            calls += 1
            cert_gap = 2.0 * (float(np.dot(gw, self.fitted)) - cert.lower_bound) / nq
        elif cert_gap is None:
            # Without SCIP the free bound sum_S min_y g[S, y] still certifies the gap (more loosely).
            cert_gap = 2.0 * (float(np.dot(gw, self.fitted)) - decomposable_bound(self.workload, gw)) / nq
        self.prune()
        return ProjectionOutcome(
            self.records.copy(),
            self.weights.copy(),
            self.fitted.copy(),
            stop,
            converged,
            it,
            calls,
            chi2,
            threshold,
            fw_gap,
            cert_gap,
            trace,
            scip_info,
        )

    def warm_start(self, records: np.ndarray, weights: np.ndarray) -> None:
        """Begin from a known distribution over records (the adaptive variant's previous round)."""
        records = np.atleast_2d(np.asarray(records, dtype=np.int64))
        weights = np.asarray(weights, dtype=np.float64)
        keep = weights > 0
        idx = self.add_records(records[keep])
        w = np.zeros(len(self.weights))
        np.add.at(w, idx, weights[keep])
        self.weights = w / w.sum()
        self.refit_answers()

    def risk_estimate(self) -> float:
        """Stein's unbiased risk estimate of ‖A p − m‖²_ω, from public quantities only.

        After a fully corrective step p is the projection of ã onto the convex hull of its
        K support records; locally that map is an affine projection of dimension at most
        K − 1, so its divergence (degrees of freedom) is at most K − 1 and
        SURE = χ² − |Q| + 2 (K − 1) estimates the weighted squared error against the true
        answers (Stein 1981; Meyer & Woodroofe 2000 for projections onto polyhedra).  The
        support is itself chosen from the noisy answers, which this ignores; using the
        upper bound K − 1 errs towards stopping early.
        """
        resid = self.fitted - self.noisy
        chi2 = float(np.dot(self.omega_cells * resid, resid))
        return float(chi2 - self.workload.n_queries + 2.0 * (np.count_nonzero(self.weights) - 1))

    def restore(self, records: np.ndarray, weights: np.ndarray) -> None:
        """Go back to a snapshot of the support (used by the risk rule)."""
        self.weights = np.zeros(0)
        self.index = {}
        self._power = np.zeros(0)
        self.add_records(records)
        self.weights = weights.copy()
        self.refit_answers()

    def _scip(self, gw: np.ndarray, warm: np.ndarray, info: dict, time_limit: float | None = None):
        s = self.settings
        limit = s.scip_time_limit if time_limit is None else time_limit
        # SCIP's time limit covers the solve, not building the model: the cells kept are capped in total so
        # that building stays a fraction of a second on workloads of thousands of marginals.
        cells = max(1, min(s.scip_cells, SCIP_CELL_BUDGET // max(1, self.m)))
        cert = scip_certify(self.cd, gw, warm, cells_per_marginal=cells, time_limit=limit)
        info["calls"] += 1
        info["seconds"] += cert.seconds
        info["last_status"] = cert.status
        return cert

    def _log(self, trace, it, calls, chi2, nq, fw_gap, cert, t0, corrected, monitor, risk=None) -> None:
        # Column order matters to the app: its convergence chart plots the later columns against the first.
        row = {"oracle_calls": calls, "residual_norm": chi2 / nq}
        if monitor is not None:
            row.update(monitor(self.fitted))
        row.update(
            {
                "fw_gap": fw_gap,
                "certified_gap": cert,
                "risk_estimate": None if risk is None else risk / nq,
                "iteration": it,
                "support": int(np.count_nonzero(self.weights)),
                "corrective": int(corrected),
                "seconds": time.perf_counter() - t0,
            }
        )
        trace.append(row)


# --------------------------------------------------------------------- measuring
def gaussian_measurement(answers: np.ndarray, n: int, sigma_counts: float, noise: Randomness) -> np.ndarray:
    """Noisy normalised answers: exact discrete Gaussian noise on the integer counts, divided by n.

    Privacy [CKS20]: adding N_Z(0, σ²) to each integer count of a histogram whose L2 sensitivity
    is Δ is Δ²/(2σ²)-zCDP (the univariate bound holds for integer shifts and Rényi divergences add
    over independent coordinates) -- the same ρ as the continuous Gaussian, so the accounting
    formula is unchanged.  Integer noise on integer counts leaves nothing for a floating-point
    attack to read (Mironov 2012); ``noise`` is cryptographic except in a seeded demo.
    Dividing by the public n afterwards is post-processing.
    """
    counts = np.rint(np.asarray(answers, dtype=np.float64) * n).astype(np.int64)
    return (counts + noise.discrete_gaussian(sigma_counts, counts.size)) / n


# --------------------------------------------------------------------- measuring coarsened marginals
class MeasuredMarginals:
    """Marginals measured at a chosen resolution: in marginal j, attribute a takes index
    ``value_maps[j][i][x_a]`` (its value, or the group of values holding it).

    The same interface as :class:`~dpcore.workload.Workload` where the projection and its oracle
    read one (flat cell numbering, offsets, shapes); the records stay at full resolution.
    """

    def __init__(self, domain, marginals, value_maps) -> None:
        self.domain = domain
        self.marginals = tuple(tuple(int(a) for a in m) for m in marginals)
        self.value_maps = [tuple(np.asarray(f, dtype=np.int64) for f in maps) for maps in value_maps]
        self._shapes = [tuple(int(f.max()) + 1 for f in maps) for maps in self.value_maps]
        sizes = np.array([math.prod(s) for s in self._shapes], dtype=np.int64)
        self.offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.offsets[1:])

    @property
    def n_marginals(self) -> int:
        return len(self.marginals)

    @property
    def n_queries(self) -> int:
        return int(self.offsets[-1])

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def marginal_shape(self, j: int) -> tuple[int, ...]:
        return self._shapes[j]

    def marginal_name(self, j: int) -> str:
        names = self.domain.names
        return " × ".join(
            names[a] + ("" if int(f.max()) + 1 == self.domain.shape[a] and np.all(f == np.arange(len(f))) else "*")
            for a, f in zip(self.marginals[j], self.value_maps[j])
        )

    def cell_index(self, codes: np.ndarray, j: int) -> np.ndarray:
        idx = np.zeros(len(codes), dtype=np.int64)
        for a, f, size in zip(self.marginals[j], self.value_maps[j], self._shapes[j]):
            idx = idx * size + f[codes[:, a]]
        return idx

    def counts(self, codes: np.ndarray) -> np.ndarray:
        """Integer counts of every measured cell."""
        out = np.empty(self.n_queries, dtype=np.int64)
        for j in range(self.n_marginals):
            lo, hi = self.offsets[j], self.offsets[j + 1]
            out[lo:hi] = np.bincount(self.cell_index(codes, j), minlength=hi - lo)
        return out


#: κ of the public resolution rule: a measured marginal keeps at most n / (κ σ) cells (σ the
#: noise on counts), i.e. its cells hold on average at least κσ rows; wider marginals are measured
#: with their widest attributes' values grouped.  Measured on the 64-marginal Adult workload
#: (docs/benchmarks.md): at ε = 1 this keeps marginals up to ~10,000 cells.
RESOLUTION_KAPPA = 0.07
#: Share of ρ for the full-resolution one-way marginals of the attributes some marginal groups.
ONE_WAY_SHARE = 0.05

#: The fit's weight of a measured cell whose noisy count is below SMALL_CELL_SIGMAS noise levels (when some
#: marginal is measured in groups).  Why: least squares over the simplex follows the positive noise of nearly
#: empty cells (≈ 0.4σ each) and takes those rows from the large cells: on adult64 at ε = 1 a cell of 8,842 rows
#: was fitted 263 rows low (77 of them its own noise), the worst error of the run.  Halving the pull of the
#: small cells cut the max error from 0.77x to 0.57x the projected Gaussian's (median of 3 seeds; mean and TVD
#: also improved).  At ε = 10, where nothing is grouped, the largest errors are in small real cells and the same
#: weights doubled the max error, hence the switch.  Design study: docs/benchmarks.md (Projection).
SMALL_CELL_WEIGHT = 0.5
SMALL_CELL_SIGMAS = 3.0


def small_cell_weights(noisy: np.ndarray, sigma_cells: np.ndarray, weight: float) -> np.ndarray:
    """Per-cell weights of the fit: ``weight`` where the noisy answer is below SMALL_CELL_SIGMAS σ, else 1.

    Reads only the noisy answers and the public noise levels: post-processing.  Within a marginal whose cells
    are all small every weight is the same, so the fit of that marginal is unchanged in shape (unlike setting
    small cells to 0, which would pile the marginal's mass onto its few large cells)."""
    return np.where(np.asarray(noisy) < SMALL_CELL_SIGMAS * np.asarray(sigma_cells), float(weight), 1.0)


def resolution_plan(workload, n: int, sigma_counts: float, cap: int | None = None) -> dict:
    """Public: how many groups each attribute of each marginal is measured with.

    Reads only public quantities (the schema's sizes, n, σ): while a marginal has more cells
    than ``cap``, its attribute with the most groups is halved.  Returns the per-marginal
    levels, the attributes grouped somewhere, and the cap.
    """
    cap = max(8, int(n / (RESOLUTION_KAPPA * sigma_counts))) if cap is None else int(cap)
    shape = workload.domain.shape
    levels = [marginal_levels(shape, m, cap) for m in workload.marginals]
    grouped = sorted({a for m, G in zip(workload.marginals, levels) for a, g in zip(m, G) if g < shape[a]})
    return {"levels": levels, "grouped_attributes": grouped, "cell_cap": cap}


def marginal_levels(shape, marginal, cap: int, groupable=None) -> tuple[int, ...]:
    """Groups per attribute of ``marginal`` so that it has at most ``cap`` cells where it can: while it has more,
    its attribute with the most groups among ``groupable`` (default: all) is halved, down to 2.  Public."""
    G = [int(shape[a]) for a in marginal]
    can_group = [groupable is None or a in groupable for a in marginal]
    while math.prod(G) > cap:
        can = [i for i, g in enumerate(G) if can_group[i] and g > 2]
        if not can:
            break
        i = max(can, key=lambda k: G[k])
        G[i] = max(2, G[i] // 2)
    return tuple(G)


def grouped_value_maps(workload, levels, noisy_one: dict[int, np.ndarray]) -> list[tuple[np.ndarray, ...]]:
    """Per marginal, each attribute's map from values to groups at the planned ``levels``: consecutive values of
    similar mass in the released one-way marginal (:func:`value_groups`), or the identity at full resolution.
    Post-processing of the noisy one-way marginals ``noisy_one``."""
    shape = workload.domain.shape
    cache: dict[tuple[int, int], np.ndarray] = {}

    def grouping(a: int, G: int) -> np.ndarray:
        if G >= shape[a]:
            return np.arange(int(shape[a]))
        if (a, G) not in cache:
            cache[(a, G)] = value_groups(project_simplex(noisy_one[a]), G)
        return cache[(a, G)]

    return [tuple(grouping(a, G) for a, G in zip(m, lv)) for m, lv in zip(workload.marginals, levels)]


def value_groups(mass: np.ndarray, groups: int) -> np.ndarray:
    """Consecutive values merged into about ``groups`` groups of similar mass; a value holding at
    least 1/groups of the mass stays on its own (a common value is never blurred with rare ones).
    ``mass`` is a released (noisy, projected) one-way marginal: the grouping is post-processing."""
    mass = np.asarray(mass, dtype=np.float64)
    if groups >= len(mass):
        return np.arange(len(mass))
    out = np.empty(len(mass), dtype=np.int64)
    cur, acc, level = 0, 0.0, 1.0 / groups
    for v, m in enumerate(mass):
        if m >= level and acc > 0:
            cur, acc = cur + 1, 0.0
        out[v] = cur
        acc += m
        if acc >= level and v < len(mass) - 1:
            cur, acc = cur + 1, 0.0
    return np.unique(out, return_inverse=True)[1]


# --------------------------------------------------------------------- rounding
def largest_remainder_rows(
    records: np.ndarray,
    weights: np.ndarray,
    n_rows: int,
    rng: np.random.Generator,
    smooth: list[tuple[int, int]] | None = None,
) -> np.ndarray:
    """``n_rows`` rows whose counts round ``weights * n_rows`` by largest remainder.

    Bound: with K records and r of them rounded up, any counting query's answer moves
    by at most min(r, K - r) / n_rows <= K / (2 n_rows): each record's share moves by
    less than 1/n_rows, and the moves up and down cancel in total.  ``smooth`` (columns and
    their regular value counts) then moves the rows along those ordered attributes
    (:mod:`dpcore.mechanisms.smoothing`; the bound is then of the rounding alone).
    """
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    target = w * n_rows
    counts = np.floor(target).astype(np.int64)
    short = int(n_rows - counts.sum())
    if short > 0:
        rem = target - counts
        # Ties broken at random (public randomness): no record is favoured by position.
        order = np.lexsort((rng.random(len(rem)), -rem))
        counts[order[:short]] += 1
    if smooth:
        records, counts = smooth_records(np.asarray(records), counts, smooth, rng)
    rows = np.repeat(np.asarray(records), counts, axis=0)
    rng.shuffle(rows)  # in place: a wide table's rows are not copied a second time
    return rows


def rounding_bound(n_records: int, n_rows: int) -> float:
    """The largest change rounding can make to any answer (see :func:`largest_remainder_rows`)."""
    return (n_records // 2) / n_rows


# --------------------------------------------------------------------- shared checks
def check_projection_memory(n_queries: int, limit: int | None = None) -> None:
    need = n_queries * PROJECTION_BYTES_PER_QUERY
    if limit is None:
        limit = PROJECTION_MEMORY_LIMIT
        try:
            import psutil

            limit = min(limit, int(psutil.virtual_memory().available * 0.5))
        except Exception:
            pass
    if need > limit:
        raise WorkloadError(
            f"Measuring this workload whole means {n_queries:,} noisy answers and about {need / 1e9:.1f} GB of "
            f"working memory for the projection (limit {limit / 1e9:.1f} GB). Use the adaptive projection "
            "(mechanism 'projection_adaptive'), which measures only the marginals it selects, or choose fewer "
            "marginals / coarser bins."
        )


#: Steps the memory estimate plans for.  The convergence rules end most runs before (~25 steps at
#: ε = 0.1, ~90 at ε = 1 on adult64; 20–60 on generated wide tables); where a run goes on (high ε, the
#: all-3-way table) its records cost little beside the per-cell vectors or the clock ends it near here.
PLANNED_STEPS = 150


def expected_support(settings: ProjectionSettings) -> int:
    """A public guess of the records the projection keeps: about 70% of the columns it adds survive
    the re-fits (measured on the Adult workloads), over at most PLANNED_STEPS steps, capped by
    ``max_support``."""
    steps = min(settings.max_iterations, PLANNED_STEPS)
    return int(min(settings.max_support, 64 + 0.7 * steps * settings.columns_per_iteration))


def projection_memory_bytes(
    n: int,
    p: int,
    n_rows: int,
    n_queries: int,
    n_marginals: int,
    largest_gather: int,
    settings: ProjectionSettings,
    column_copies: bool = True,
    smoothed: bool = False,
    repaired: bool = False,
) -> int:
    """The projection's working set, from public sizes only (the estimate shown before a run).

    n_queries / n_marginals are the *measured* cells and marginals; largest_gather is the largest
    (marginals touching an attribute) × (its values) of the oracle's gathers.  Counted: the
    measurement (true counts, noise, noisy answers), the solver's per-cell vectors and their
    temporaries, the support buffers (grown by doubling), the oracle's gathers, the column copies
    of the data the answers are computed from, and the released rows (twice more while they are
    smoothed: the moved entries and their merge; while they are repaired, every row's cell in every
    measured marginal as int32, :mod:`.repair`, and four more per-cell vectors).
    """
    K = expected_support(settings)
    cap = 1 << max(6, math.ceil(math.log2(max(K, 1))))
    per_cell = 8 * 8 * n_queries
    support = int(1.25 * cap * (8 * p + 4 * n_marginals)) + K * (8 * p + 200)
    chunk = 3 * 8 * min(_CHUNK_ENTRIES, K * n_marginals)
    oracle = settings.starts * (16 * n_marginals + 8 * p) + 3 * 8 * settings.starts * largest_gather
    data = 8 * n_rows * p + (8 * n * p if column_copies else 0) + (2 * 8 * n_rows * (p + 1) if smoothed else 0)
    if repaired:
        data += 4 * min(n_rows * n_marginals, REPAIR_MAX_ENTRIES) + 4 * 8 * n_queries
    return int(per_cell + support + chunk + oracle + data + 256 * 1024)


def oracle_gather(workload, value_counts=None) -> int:
    """max over attributes of (marginals touching it) × (its values): the oracle's largest gather."""
    shape = workload.domain.shape if value_counts is None else value_counts
    touching = np.zeros(len(shape), dtype=np.int64)
    for m in workload.marginals:
        touching[list(m)] += 1
    return int(np.max(touching * np.asarray(shape))) if len(shape) else 0


def check_rows(n_rows: int | None, n: int, p: int) -> int:
    rows = n if n_rows is None else int(n_rows)
    if rows < 1:
        raise ParameterError(f"The number of rows must be at least 1 (got {rows}); the default is n = {n:,}.")
    if rows > MAX_ROWS:
        raise ParameterError(
            f"{rows:,} rows is more than this tool releases (at most {MAX_ROWS:,}); the rows "
            f"only resample the same distribution, so ask for n = {n:,} or fewer."
        )
    return rows


def settings_from_params(params: dict, ctx: RunContext | None = None) -> ProjectionSettings:
    s = ProjectionSettings()
    for k in (
        "max_iterations",
        "max_seconds",
        "stopping",
        "gap_level",
        "discrepancy_z",
        "starts",
        "corrective_every",
        "corrective_iterations",
        "risk_patience",
        "max_support",
        "scip",
        "scip_cells",
        "columns_per_iteration",
    ):
        if k in params and params[k] is not None:
            setattr(s, k, params[k])
    if ctx is not None and ctx.oracle_options.get("time_limit"):
        s.scip_time_limit = float(ctx.oracle_options["time_limit"])
    return s


SOLVER_PARAMS = (
    # The public convergence rules end the default run (on the 64-marginal Adult workload: ~24 steps at
    # ε = 0.1, ~90 at ε = 1, ~230 at ε = 3; docs/benchmarks.md); at high ε the fit keeps
    # improving for many more steps, so the step budget is large and the clock ends those runs.
    Param(
        "max_iterations",
        "int",
        1000,
        "Most Frank–Wolfe steps; the projection stops earlier when the stopping rule fires.",
        1,
        100_000,
        log=True,
    ),
    Param(
        "max_seconds",
        "float",
        120.0,
        "Safety time limit of the projection's search, seconds (the best fit so "
        "far is released; the final re-fit and SCIP's certificate add a few seconds).",
        1.0,
        86_400.0,
        log=True,
    ),
    Param(
        "stopping",
        "choice",
        "auto",
        "'auto': whichever of 'gap' and 'risk' fires first; 'gap': fit until converged -- until no "
        "distribution of records could lower the residual by more than gap_level per query (in units of the "
        "noise level); 'risk': stop when Stein's unbiased estimate of the error (from the noisy answers, the "
        "public noise level and the number of records used) stops improving, and release the best estimate; "
        "'discrepancy': stop when the fit to the noisy answers is as close as the true data's would be; "
        "'none': fit until a limit.",
        choices=("auto", "gap", "risk", "discrepancy", "none"),
    ),
    Param(
        "gap_level",
        "float",
        0.05,
        "The 'gap' rule's tolerance: the Frank–Wolfe gap per query, in units of the noise level.",
        1e-6,
        10.0,
        log=True,
        advanced=True,
    ),
    Param(
        "discrepancy_z",
        "float",
        0.0,
        "Stop when the normalised residual reaches 1 + z·sqrt(2/|Q|) "
        "(z standard deviations of the noise's χ² above its mean).",
        -3.0,
        10.0,
        advanced=True,
    ),
    Param(
        "risk_patience",
        "int",
        5,
        "The risk rule stops after this many re-fits without a lower risk estimate.",
        1,
        1000,
        advanced=True,
    ),
    Param("starts", "int", 64, "Starts of the coordinate-descent oracle per step.", 1, 4096, advanced=True),
    Param(
        "columns_per_iteration",
        "int",
        32,
        "Improving records added per step (column generation).",
        1,
        1024,
        advanced=True,
    ),
    Param(
        "corrective_every",
        "int",
        1,
        "A fully corrective re-fit of all weights every this many steps (plain Frank–Wolfe steps between).",
        1,
        1000,
        advanced=True,
    ),
    Param(
        "corrective_iterations",
        "int",
        30,
        "Accelerated-gradient iterations of each fully corrective re-fit.",
        1,
        10_000,
        advanced=True,
    ),
    Param(
        "max_support",
        "int",
        20_000,
        "Most distinct records kept (memory grows as records × marginals).",
        10,
        1_000_000,
        advanced=True,
    ),
    Param(
        "scip",
        "choice",
        "certify",
        "SCIP's part: 'certify' = certified Frank–Wolfe gap at the end, 'polish' = "
        "also improve and certify every corrective step, 'off' = heuristic only.",
        choices=("certify", "polish", "off"),
        advanced=True,
    ),
    Param(
        "scip_cells", "int", 48, "Cells per marginal kept explicitly in SCIP's relaxation.", 1, 10_000, advanced=True
    ),
)


# --------------------------------------------------------------------- the mechanism
def zcdp_rho(budget: Budget) -> float:
    check_budget(budget.epsilon, budget.delta)
    if budget.delta <= 0:
        raise BudgetError("The projection measures with Gaussian noise and needs δ > 0 (the default is 1/n²).")
    return eps_to_zcdp(budget.epsilon, budget.delta)


class Projection(Mechanism):
    """Gaussian measurement of every marginal, then projection onto the records' convex hull.

    Privacy: (ε, δ)-DP via ρ-zCDP (CKS conversion) for the Gaussian measurements alone,
    σ = sqrt(|W|/ρ) on counts (L2 sensitivity sqrt(2|W|), replace-one).  The projection,
    its stopping rule and the rounding are post-processing: robust to any solver outcome.
    """

    name = "projection"
    zcdp_native = True  # ρ = eps_to_zcdp(ε, δ) of its budget is all it spends (plan)
    title = "Projection onto records (Frank–Wolfe + SCIP)"
    paper = "beyond the papers: [GGHRW14] §8, [NRW19] §I-B (Nikolov–Talwar–Zhang projection)"
    privacy = "robust"
    output = "rows"
    recommended = True
    summary = (
        "Adds Gaussian noise to every chosen marginal, then finds the mix of real-looking records whose "
        "marginals are closest to the noisy ones. Real records cannot produce impossible answers, so the "
        "search removes much of the noise: the rows are often more accurate than the noisy answers "
        "themselves. The search stops when a public estimate of its error (computed from the noisy answers "
        "and the known noise level, never from your data) stops improving."
    )
    accounting = (
        "ρ-zCDP of the Gaussian measurements only (σ = sqrt(|W|/ρ) on counts, L2 sensitivity sqrt(2) "
        "per marginal, replace-one); ρ from (ε, δ) by the Canonne–Kamath–Steinke conversion. The "
        "projection is post-processing."
    )
    parameters = (
        ROWS_PARAM,
        Param(
            "max_cells_measured",
            "int",
            None,
            "Most cells of a measured marginal; wider marginals are measured with their widest attributes' "
            "values grouped (default: n / (0.07 σ), from public quantities: cells hold about 0.07 σ rows "
            "on average).",
            4,
            100_000_000,
            optional=True,
            log=True,
            advanced=True,
        ),
        Param(
            "one_way_fraction",
            "float",
            ONE_WAY_SHARE,
            "Share of the budget for the full-resolution one-way marginals of the attributes measured in "
            "groups (none when no marginal needs grouping).",
            0.01,
            0.5,
            advanced=True,
        ),
        Param(
            "small_cell_weight",
            "float",
            SMALL_CELL_WEIGHT,
            "Weight in the fit of a measured cell whose noisy count is below 3 noise levels, when some marginal "
            "is measured in groups (1 = plain least squares). Following the positive noise of nearly empty cells "
            "takes rows from the large ones; a lower weight keeps them (post-processing of the noisy answers).",
            0.0,
            1.0,
            advanced=True,
        ),
        DECOUPLE_PARAM,
        REPAIR_PARAM,
        EMPTY_SPECIAL_PARAM,
        Param(
            "smooth_ordered",
            "bool",
            True,
            "After the fit, move each row a few values along every ordered (numeric or date) attribute that "
            "was measured in groups -- and every integer-coded one whose released counts vary smoothly along its "
            "codes, as binned numbers do -- keeping that attribute's released distribution: pairs of fine "
            "attributes come out less spiky (post-processing; off reproduces the fitted records exactly).",
            advanced=True,
        ),
    ) + SOLVER_PARAMS
    teaching_preset = {"max_iterations": 150, "max_seconds": 20.0, "starts": 8, "scip": "off"}

    def plan(self, n: int, workload, budget: Budget, params: dict) -> dict:
        rho = zcdp_rho(budget)
        check_projection_memory(workload.n_queries)
        rows = check_rows(params.get("rows"), n, len(workload.domain))
        s = settings_from_params(params)
        resolution = _resolution(n, workload, rho, params)
        grouped = resolution["grouped_attributes"]
        share = float(params.get("one_way_fraction") or ONE_WAY_SHARE) if grouped else 0.0
        # ρ = ρ_1 + ρ_W: k one-way marginals and |W| marginals, each of L2 sensitivity sqrt(2) on counts
        # (replace-one; grouping values can only merge the two cells a changed row touches).
        rho_one, rho_w = share * rho, (1.0 - share) * rho
        smoothed = _smoothed(workload, grouped, params)
        sigma = gaussian_sigma_for_rho(rho_w, math.sqrt(2.0 * workload.n_marginals))
        sigma_one = gaussian_sigma_for_rho(rho_one, math.sqrt(2.0 * len(grouped))) if grouped else None
        shape = workload.domain.shape
        measured_queries = sum(math.prod(G) for G in resolution["levels"]) + sum(int(shape[a]) for a in grouped)
        return {
            "rho": rho,
            "rho_one_way": rho_one,
            "sigma_counts": sigma,
            "sigma_answers": sigma / n,
            "sigma_one_way_counts": sigma_one,
            "grouped_attributes": [workload.domain.names[a] for a in grouped],
            "smoothed_attributes": [workload.domain.names[a] for a in smoothed],
            "small_cell_weight": _small_cell_weight(params) if grouped else 1.0,
            "cell_cap": resolution["cell_cap"],
            "measured_marginals": workload.n_marginals + len(grouped),
            "measured_queries": measured_queries,
            "rows": rows,
            "discrepancy_level": s.threshold(measured_queries) / measured_queries,
            "oracle_calls_at_most": s.max_iterations + 2,
            "memory_bytes": projection_memory_bytes(
                n,
                len(shape),
                rows,
                measured_queries,
                workload.n_marginals + len(grouped),
                oracle_gather(workload),
                s,
                column_copies=not grouped,
                smoothed=bool(smoothed) or any(integer_codes(workload.domain.attributes[a]) for a in grouped),
                repaired=bool(params.get("repair", True)),
            ),
        }

    def run(self, dataset, workload, budget: Budget, params: dict, ctx: RunContext) -> MechanismResult:
        t0 = time.perf_counter()
        plan = self.plan(dataset.n, workload, budget, params)
        n, shape = dataset.n, workload.domain.shape
        resolution = _resolution(n, workload, plan["rho"], params)
        grouped = resolution["grouped_attributes"]
        # The only reads of the private data: discrete Gaussian measurements (ρ-zCDP, [CKS20]).
        noisy_one: dict[int, np.ndarray] = {}
        if grouped:
            ctx.report(0, 1, "measuring the one-way marginals of the attributes measured in groups")
            for a in grouped:
                counts = np.bincount(dataset.codes[:, a], minlength=int(shape[a]))
                noisy_one[a] = noisy_counts(counts, n, plan["sigma_one_way_counts"], ctx.noise)
        measured = measured_marginals(workload, resolution, noisy_one)
        ctx.report(0, 1, "measuring every marginal")
        true = measured.counts(dataset.codes) / n if grouped else workload.answers(dataset.codes)
        nw = int(measured.offsets[workload.n_marginals])
        noisy = np.concatenate(
            [noisy_counts(np.rint(true[:nw] * n).astype(np.int64), n, plan["sigma_counts"], ctx.noise)]
            + [noisy_one[a] for a in grouped]
        )
        sigmas = np.array([plan["sigma_answers"]] * workload.n_marginals)
        if grouped:
            sigmas = np.concatenate([sigmas, np.full(len(grouped), plan["sigma_one_way_counts"] / n)])
        settings = settings_from_params(params, ctx)

        def monitor(fitted: np.ndarray) -> dict:
            # Internal evaluation only (owner's chart), on the measured cells; the solver never reads it.
            return {"true_max_error": float(np.max(np.abs(fitted - true)))}

        # The clock started before the measurement: the time limit covers the whole run, and only the
        # projection (post-processing) is cut by it.
        # Each column's missing and '(other)' cells (public, from the schema) measured under 2σ are fitted as empty.
        special = empty_chains(workload.domain) if params.get("empty_special", True) else {}
        noisy, zeros = empty_special_cells(measured, noisy, sigmas, special)
        weights = None
        if plan["small_cell_weight"] < 1.0:  # only when something is grouped (the plan's rule)
            weights = small_cell_weights(noisy, np.repeat(sigmas, measured.sizes), plan["small_cell_weight"])
        out = RecordProjector(measured, noisy, sigmas, settings, cell_weights=weights).run(
            ctx.rng, ctx, monitor, deadline=t0 + settings.max_seconds
        )
        domain = workload.domain
        if params.get("smooth_ordered", True):  # integer codes whose released counts say they are in order
            in_order = coded_in_order(domain, grouped, noisy_one)
            plan["smoothed_attributes"] += [domain.names[a] for a in in_order]
            plan["smoothed_codes"] = [domain.names[a] for a in in_order]
        smooth = [(domain.names.index(name), _in_order(domain[name])) for name in plan["smoothed_attributes"]]
        rows = largest_remainder_rows(out.records, out.weights, plan["rows"], ctx.rng, smooth=smooth)
        repaired = None
        if params.get("repair", True):  # lumps the rounded fit left over measured cells (post-processing)
            left = min(REPAIR_SECONDS, t0 + settings.max_seconds - time.perf_counter())  # within the time limit
            rows, repaired = repair_rows(
                rows, measured, noisy, sigmas, weights, ctx.rng, seconds=left, check=ctx.check_cancel,
                z=REPAIR_Z if grouped else REPAIR_Z_WHOLE,
            )  # fmt: skip
        rows, filled = fill_empty_cells(rows, shape, list(measured.marginals), zeros, ctx.rng)
        decoupled = None
        if params.get("decouple", True):
            # the measured marginals (the workload itself when nothing is grouped); at least one sweep, then within
            # the run's time limit
            maps = getattr(measured, "value_maps", None)
            limit = t0 + settings.max_seconds
            rows, decoupled = decouple_rows(rows, shape, measured.marginals, ctx.rng, value_maps=maps, deadline=limit)
        ctx.report(1, 1, f"done: {STOP_RULES[out.stop_rule]}")
        return MechanismResult(
            spends=[
                SpendRecord(
                    budget.epsilon,
                    budget.delta,
                    plan["rho"],
                    f"Gaussian measurement of {workload.n_marginals} marginals"
                    + (f" and {len(grouped)} one-way marginals" if grouped else "")
                    + " (projection)",
                )
            ],
            epsilon_spent=budget.epsilon,
            delta_spent=budget.delta,
            accountant="zCDP (CKS conversion)",
            rows=rows,
            public=_public(plan, out),
            trace=out.trace,
            oracle_stats=_oracle_stats(out),
            notes=_notes(out, plan["rows"])
            + _smoothing_notes(plan)
            + empty_notes(zeros, domain, filled)
            + repair_notes(repaired)
            + decouple_notes(decoupled),
        )


def empty_special_cells(measured, noisy: np.ndarray, sigmas: np.ndarray, special: dict) -> tuple[np.ndarray, dict]:
    """The noisy answers with each column's missing or '(other)' cell set to 0 in every marginal holding it, where
    its share -- each measured marginal holding the code in a cell of its own, summed over the other attributes
    (σ² times the cells summed), combined by precision -- is under STRUCTURAL_Z of its σ; and those codes
    (attribute -> codes, for :func:`~.decouple.fill_empty_cells`).  The adaptive projection reads the same test
    off its one-way measurements; a chosen workload has no one-way marginal to read, so every marginal holding
    the column is.  Reads the noisy answers and public σ: post-processing."""
    if not special:
        return noisy, {}
    offsets = measured.offsets
    maps = getattr(measured, "value_maps", None)
    cells: dict[tuple[int, int], list[tuple[int, int, int]]] = {}

    def measure(a: int, code: int) -> tuple[float, float] | None:
        total = precision = 0.0
        where = []
        for j, clique in enumerate(measured.marginals):
            if a not in clique:
                continue
            axis = clique.index(a)
            value_map = maps[j][axis] if maps is not None else np.arange(int(measured.domain.shape[a]))
            group = own_group(value_map, code)
            if group is None:
                continue
            shape = measured.marginal_shape(j)
            share = float(np.take(noisy[offsets[j] : offsets[j + 1]].reshape(shape), group, axis=axis).sum())
            var = float(sigmas[j]) ** 2 * (math.prod(shape) // shape[axis])
            total, precision = total + share / var, precision + 1.0 / var
            where.append((j, axis, group))
        if precision <= 0:
            return None
        cells[(a, code)] = where
        return total / precision, 1.0 / math.sqrt(precision)

    zeros = chain_zeros(special, measure)
    emptied = [w for a, codes in zeros.items() for code in codes for w in cells[(a, code)]]
    if not emptied:
        return noisy, zeros
    out = np.array(noisy, dtype=float, copy=True)
    for j, axis, group in emptied:
        view = out[offsets[j] : offsets[j + 1]].reshape(measured.marginal_shape(j))
        index: list = [slice(None)] * view.ndim
        index[axis] = group
        view[tuple(index)] = 0.0
    return out, zeros


def _small_cell_weight(params: dict) -> float:
    w = params.get("small_cell_weight")
    return SMALL_CELL_WEIGHT if w is None else float(w)


def _in_order(attr) -> int:
    """How many of an attribute's first codes are in order (rows are smoothed along them): a number's or a date's
    bins (not its texts or missing code), an integer-coded category's values."""
    return attr.n_bins if attr.kind != "categorical" else attr.n_regular


def _smoothed(workload, grouped: list[int], params: dict) -> list[int]:
    """The ordered attributes whose rows are smoothed: public (kinds, and the grouping plan)."""
    if not params.get("smooth_ordered", True):
        return []
    return ordered_attributes(workload.domain, grouped)


def _smoothing_notes(plan: dict) -> list[str]:
    names = plan["smoothed_attributes"]
    if not names:
        return []
    coded = plan.get("smoothed_codes") or []
    return [
        f"Rows smoothed along {', '.join(names)}: each row moved a few values, keeping each attribute's "
        "released distribution (post-processing; turn off with smooth_ordered=false)."
        + (
            f" {', '.join(coded)}: integer codes read as ordered, their released counts varying along the codes by "
            f"at most {ORDER_ROUGHNESS:.0%} of what a random order gives (binned numbers do; declare them numeric to "
            "say so)."
            if coded
            else ""
        )
    ]


def _resolution(n: int, workload, rho: float, params: dict) -> dict:
    sigma_full = gaussian_sigma_for_rho(rho, math.sqrt(2.0 * workload.n_marginals))
    return resolution_plan(workload, n, sigma_full, params.get("max_cells_measured"))


def noisy_counts(counts: np.ndarray, n: int, sigma_counts: float, noise: Randomness) -> np.ndarray:
    """(counts + exact discrete Gaussian noise) / n; see :func:`gaussian_measurement`."""
    counts = np.asarray(counts, dtype=np.int64)
    return (counts + noise.discrete_gaussian(sigma_counts, counts.size)) / n


def measured_marginals(workload, resolution: dict, noisy_one: dict[int, np.ndarray]):
    """The marginals the projection fits: the workload itself, or (when some attribute is grouped)
    the workload at the planned resolution plus the full-resolution one-way marginals.  The groups
    come from the released one-way marginals: post-processing."""
    grouped = resolution["grouped_attributes"]
    if not grouped:
        return workload
    shape = workload.domain.shape
    maps = grouped_value_maps(workload, resolution["levels"], noisy_one)
    maps += [(np.arange(int(shape[a])),) for a in grouped]
    return MeasuredMarginals(workload.domain, list(workload.marginals) + [(a,) for a in grouped], maps)


def _public(plan: dict, out: ProjectionOutcome) -> dict:
    """Card figures: functions of public inputs and of the (already private) noisy answers only."""
    keys = ("rho", "sigma_counts", "measured_marginals", "rows", "discrepancy_level")
    pub = {k: plan[k] for k in keys}
    if plan["grouped_attributes"]:
        pub.update(
            {
                k: plan[k]
                for k in (
                    "rho_one_way",
                    "sigma_one_way_counts",
                    "grouped_attributes",
                    "cell_cap",
                    "smoothed_attributes",
                    "small_cell_weight",
                )
            }
        )
    pub["stopping_rule_fired"] = out.stop_rule
    return pub


def _oracle_stats(out: ProjectionOutcome) -> dict:
    return {
        "calls": out.oracle_calls,
        "iterations": out.iterations,
        "stop_rule": out.stop_rule,
        "converged": out.converged,
        "final_residual_norm": out.chi2 / max(1, len(out.fitted)),
        "discrepancy_level": out.threshold / max(1, len(out.fitted)),
        "fw_gap": out.fw_gap,
        "certified_gap": out.certified_gap,
        "support": len(out.weights),
        "scip": out.scip,
    }


def _notes(out: ProjectionOutcome, n_rows: int) -> list[str]:
    notes = [
        f"Stopping rule: {out.stop_rule} — {STOP_RULES[out.stop_rule]}.",
        f"Rounding {len(out.weights):,} weighted records to {n_rows:,} rows moves any answer by at most "
        f"{rounding_bound(len(out.weights), n_rows):.2g}.",
    ]
    if not out.converged:
        gap = (
            f"certified gap {out.certified_gap:.3g}"
            if out.certified_gap is not None
            else f"heuristic gap {out.fw_gap:.3g}"
        )
        notes.append(
            f"The projection did not converge before its {out.stop_rule}: the best fit found is released "
            f"(normalised residual {out.chi2 / len(out.fitted):.4f} vs noise level "
            f"{out.threshold / len(out.fitted):.4f}; {gap}). Raise max_iterations or max_seconds."
        )
    return notes
