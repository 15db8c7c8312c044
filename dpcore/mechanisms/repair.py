"""Lumps repaired in the released rows: post-processing against the noisy answers.

Why.  The projection fits a distribution over a few thousand records and rounds it to rows, so each record
stands for a handful of rows.  Where a marginal is fine (coded Adult at ε = 10: age × education-num ×
occupation, 20,400 cells, 2.4 rows a cell) a record cannot serve every marginal it lies in at once, and the
fitted rows pile up in some cells: 86 rows where the noisy answer says 31 ± 8, the largest error of the run and
1.2–1.4x the simplex-projected Gaussian's — while the mean error is 0.6x.  Running the fit longer does not fix it
(docs/benchmarks.md).

What.  Rows are moved one at a time out of every cell of a marginal measured whole (no values grouped: where they
are, the fit spreads rows within a group on purpose) whose rows exceed its noisy answer by more than
:data:`REPAIR_Z` σ (its marginal's noise on counts; :data:`REPAIR_Z_WHOLE` σ when no marginal is measured in
groups): each such row changes the one value, among the cell's
attributes, that lowers the weighted squared residual over every measured marginal most (the fit's own
objective, on the rows instead of the records: Σ_j ω_j Σ_cells (rows - noisy answer)², ω_j = 1/σ_j², times the
fit's public cell weights), and stays where no change lowers it.  No row moves into a cell whose noisy answer is
at most 0 (a cell fitted as empty has its answer set to 0): the least-squares objective alone would put rows there
when that empties a lump beside it.  Rows are taken from a cell in random order
(``rng``), a cell is left once it is under REPAIR_Z σ over, and the sweep over every marginal repeats
:data:`REPAIR_SWEEPS` times or until it moves nothing.

Privacy.  Reads the released rows, the noisy answers, their public σ and the public cell weights only:
post-processing; the guarantee is unchanged.  It runs within what the run's time limit leaves and checks the run's
cancel between cells; above REPAIR_MAX_ENTRIES, or with no time left, the rows stay as rounded and the run's notes
say so.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .base import Param
from .decouple import whole_map

#: A measured cell is repaired when its rows exceed its noisy answer by more than this many σ.  On coded Adult (64
#: random 3-way marginals, seeds 0-2) against the simplex-projected Gaussian's max error: at ε = 10 1.40 / 1.20 /
#: 1.17x → 0.89 / 1.07 / 0.93x, at ε = 3 0.84 / 0.90 / 0.91x → 0.73 / 0.77 / 0.69x, ε = 1 and 0.1 no worse, mean
#: error and 2-way TVD no worse anywhere.  At 1σ (16% of the cells over it on noise alone) ε = 10 went to 0.89 /
#: 0.87 / 0.88x but the rows followed the noise at ε = 1 (mean error 0.36 → 0.38x) and ε = 0.1 took 35 s, not 5.
REPAIR_Z = 2.0
#: The threshold where no marginal is measured in groups (a public fact of the run's plan: the noise is small enough
#: for every marginal at full resolution).  Coded Adult at ε = 10, seeds 0-5: 0.89 / 1.07 / 0.93 / 1.16 / 0.98 /
#: 1.10x at 2σ (median 1.02x) → 0.89 / 0.89 / 0.88 / 1.05 / 0.95 / 0.88x (median 0.89x), mean error 0.61 → 0.60x;
#: the bundled Adult sample with 16 two-way marginals at ε = 1 (nothing grouped), max error 0.0055 / 0.0047 /
#: 0.0048 → 0.0042 / 0.0047 / 0.0044 (0.0061 / 0.0057 / 0.0082 unrepaired).  Where values are grouped 1σ followed
#: the noise (above), so 2σ stays there.
REPAIR_Z_WHOLE = 1.0
#: Sweeps over every measured marginal at most (the last ones move few rows).
REPAIR_SWEEPS = 3
#: Rows tried per row to move out of a cell (plus as many): most rows of a large cell have no better place.
REPAIR_TRIES = 3
#: Rows × measured marginals above which the rows are not repaired (the cell of every row in every marginal is
#: kept in memory as int32: 200 MB here).
REPAIR_MAX_ENTRIES = 50_000_000
#: Seconds the repair may take at most (it stops where it is: every move already made lowers the residual).
REPAIR_SECONDS = 60.0

REPAIR_PARAM = Param(
    "repair",
    "bool",
    True,
    "After rounding the fit to rows, move rows out of the cells of marginals measured whole that hold more than "
    "1σ over their noisy answer (2σ when some marginal is measured in groups), each to the value that fits every "
    "measured marginal best (post-processing; off keeps the rounded rows).",
    advanced=True,
)


def _maps(measured) -> list[list[np.ndarray]]:
    """Per measured marginal, per attribute: value -> index in the marginal (a group, or the value itself)."""
    shape = measured.domain.shape
    maps = getattr(measured, "value_maps", None)
    if maps is None:
        return [[np.arange(int(shape[a]), dtype=np.int64) for a in m] for m in measured.marginals]
    return [[np.asarray(f, dtype=np.int64) for f in fs] for fs in maps]


def repair_rows(
    rows: np.ndarray,
    measured,
    noisy: np.ndarray,
    sigmas: np.ndarray,
    cell_weights: np.ndarray | None,
    rng: np.random.Generator,
    *,
    z: float = REPAIR_Z,
    sweeps: int = REPAIR_SWEEPS,
    seconds: float = REPAIR_SECONDS,
    check=None,
) -> tuple[np.ndarray, dict]:
    """Rows with the lumps over measured cells moved out (module docstring), and a public summary (moves,
    sweeps, whether the clock or the size stopped it).  ``noisy``: normalised answers in the flat numbering of
    ``measured`` (a Workload or MeasuredMarginals); ``sigmas``: their noise per marginal (normalised);
    ``seconds``: the time it may take (what the run's time limit leaves; nothing: the rows stay as rounded);
    ``check``: called between cells (a run's cancel check)."""
    rows = np.array(rows, copy=True)
    n_rows = int(rows.shape[0])
    m = int(measured.n_marginals)
    summary: dict = {"moves": 0, "sweeps": 0, "threshold_sigma": z}
    if n_rows < 2 or m == 0:
        return rows, summary
    if n_rows * m > REPAIR_MAX_ENTRIES:
        summary["skipped"] = "too large"
        return rows, summary
    if seconds <= 0:
        summary["skipped"] = "no time left"
        return rows, summary
    deadline = time.perf_counter() + seconds
    offsets = np.asarray(measured.offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    margs = [tuple(int(a) for a in mg) for mg in measured.marginals]
    maps = _maps(measured)
    shapes = [tuple(int(f.max()) + 1 for f in fs) for fs in maps]
    strides = []
    for shp in shapes:
        st = [1] * len(shp)
        for i in range(len(shp) - 2, -1, -1):
            st[i] = st[i + 1] * shp[i + 1]
        strides.append(st)
    sig = np.broadcast_to(np.asarray(sigmas, dtype=np.float64), (m,)) * n_rows  # counts
    omega = np.repeat(1.0 / sig**2, sizes)
    if cell_weights is not None:
        omega = omega * np.asarray(cell_weights, dtype=np.float64)
    target = np.asarray(noisy, dtype=np.float64) * n_rows
    closed = target <= 0.0
    cells = np.empty((m, n_rows), dtype=np.int32)
    for j in range(m):
        idx = np.zeros(n_rows, dtype=np.int64)
        for f, size, a in zip(maps[j], shapes[j], margs[j]):
            idx = idx * size + f[rows[:, a]]
        cells[j] = idx + offsets[j]
    resid = np.bincount(cells.ravel(), minlength=int(offsets[-1])).astype(np.float64) - target
    # per attribute: the marginals holding it, its position there, and how a value moves the cell id
    holding: dict[int, list[tuple[int, np.ndarray]]] = {}
    for j, mg in enumerate(margs):
        for pos, a in enumerate(mg):
            holding.setdefault(a, []).append((j, maps[j][pos] * strides[j][pos]))
    stopped = False
    # lumps are looked for in the marginals measured whole: where values are grouped, the fit spreads the rows
    # within a group on purpose (small-cell weights, smoothing), and rows moved there follow the noise
    whole = [j for j in range(m) if all(whole_map(f) for f in maps[j])]
    summary["marginals_searched"] = len(whole)
    for _ in range(int(sweeps)):
        moved = 0
        for j in whole:
            lo = offsets[j]
            over = np.flatnonzero(resid[lo : lo + sizes[j]] > z * sig[j]) + lo
            if over.size == 0:
                continue
            order = np.argsort(cells[j], kind="stable")  # the rows of each cell, found once a sweep
            starts = np.searchsorted(cells[j][order], over, side="left")
            ends = np.searchsorted(cells[j][order], over, side="right")
            for c, a0, a1 in zip(over, starts, ends):
                if check is not None:
                    check()
                members = order[a0:a1].copy()  # rows moved in since the sort are left for the next sweep
                rng.shuffle(members)
                # a few tries per row to move out: a cell of thousands whose rows have nowhere better to go is left
                tries = int(REPAIR_TRIES * (resid[c] - z * sig[j])) + REPAIR_TRIES
                for r in members[:tries]:
                    if resid[c] <= z * sig[j]:
                        break
                    if cells[j, r] != c:  # moved out since the sort (by a move for another marginal's lump)
                        continue
                    best, best_a, best_v = 0.0, -1, -1
                    for a in margs[j]:
                        old = int(rows[r, a])
                        gain = None
                        for k, step in holding[a]:
                            oc = int(cells[k, r])
                            nc = oc + step - step[old]  # the row's cell in k for every value of a
                            g = omega[nc] * (2.0 * resid[nc] + 1.0) + omega[oc] * (1.0 - 2.0 * resid[oc])
                            g[nc == oc] = 0.0  # a value in the same group leaves this marginal as it is
                            g[closed[nc] & (nc != oc)] = math.inf  # never into a cell measured (or fitted) empty
                            gain = g if gain is None else gain + g
                        if gain is None:
                            continue
                        gain[old] = math.inf
                        v = int(np.argmin(gain))
                        if gain[v] < best:
                            best, best_a, best_v = float(gain[v]), a, v
                    if best_a < 0:
                        continue
                    old = int(rows[r, best_a])
                    for k, step in holding[best_a]:
                        oc = int(cells[k, r])
                        nc = oc + int(step[best_v] - step[old])
                        resid[oc] -= 1.0
                        resid[nc] += 1.0
                        cells[k, r] = nc
                    rows[r, best_a] = best_v
                    moved += 1
                if time.perf_counter() > deadline:
                    stopped = True
                    break
            if stopped:
                break
        summary["moves"] += moved
        summary["sweeps"] += 1
        if stopped or moved == 0:
            break
    if stopped:
        summary["stopped_by"] = "time"
    return rows, summary


def repair_notes(summary: dict | None) -> list[str]:
    """The run's note on the repair (public: from the released rows and noisy answers)."""
    if summary and summary.get("skipped"):
        why = {"too large": "the release is too large for it", "no time left": "the fit used the run's time limit"}
        return [f"The rounded rows were not repaired: {why.get(summary['skipped'], summary['skipped'])}."]
    if not summary or not summary.get("moves"):
        return []
    return [
        f"{summary['moves']:,} rows moved out of measured cells the rounded fit over-filled by more than "
        f"{summary['threshold_sigma']:g}σ of their noisy answers, each to the value that fits every measured marginal "
        "best (post-processing; turn off with repair=false)"
        + (", stopped by its time limit." if summary.get("stopped_by") else ".")
    ]
