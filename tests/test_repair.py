"""Lumps repaired in released rows (:mod:`dpcore.mechanisms.repair`): post-processing against the noisy answers.
Every move lowers the fit's own objective, a cell fitted as empty gets no rows, and grouped measurements are read
through their value maps.  The replay test of the projection (tests/test_projection.py) shows the repaired rows
are a function of the noisy answers alone."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.mechanisms import repair
from dpcore.mechanisms.projection import MeasuredMarginals
from dpcore.mechanisms.repair import repair_notes, repair_rows
from dpcore.workload import Workload

from .conftest import tiny_domain


def _objective(rows, measured, noisy, sigmas) -> float:
    """Σ_j (1/σ_j²) Σ_cells (rows - noisy answer)², in counts (what every move must lower)."""
    n = rows.shape[0]
    total = 0.0
    for j in range(measured.n_marginals):
        lo, hi = int(measured.offsets[j]), int(measured.offsets[j + 1])
        if isinstance(measured, MeasuredMarginals):
            idx = measured.cell_index(rows, j)
        else:
            idx = np.zeros(n, dtype=np.int64)
            for a in measured.marginals[j]:
                idx = idx * measured.domain.shape[a] + rows[:, a]
        counts = np.bincount(idx, minlength=hi - lo)
        total += float(np.sum((counts - noisy[lo:hi] * n) ** 2)) / (sigmas[j] * n) ** 2
    return total


def _table(n=600, shape=(4, 3, 5), seed=0):
    rng = np.random.default_rng(seed)
    dom = tiny_domain(shape)
    rows = np.column_stack([rng.integers(0, s, n) for s in shape])
    rows[:, 1] = np.where(rng.random(n) < 0.7, rows[:, 0] % 3, rows[:, 1])  # some association
    wl = Workload(dom, ((0, 1), (1, 2), (0, 2)))
    return rows, wl


def test_a_lump_is_moved_out_and_every_move_lowers_the_objective():
    rows, wl = _table()
    n = rows.shape[0]
    noisy = wl.answers(rows)  # the answers the rows should have (noise-free here)
    sigmas = np.full(wl.n_marginals, 4.0 / n)  # 4 rows
    lumped = rows.copy()
    pick = np.random.default_rng(1).choice(n, 40, replace=False)
    lumped[pick, 0], lumped[pick, 1] = 3, 2  # 40 rows piled into one cell of (a0, a1)
    cell = 3 * 3 + 2
    before = np.sum((lumped[:, 0] == 3) & (lumped[:, 1] == 2)) - noisy[cell] * n
    assert before > 30
    fixed, summary = repair_rows(lumped, wl, noisy, sigmas, None, np.random.default_rng(0))
    after = np.sum((fixed[:, 0] == 3) & (fixed[:, 1] == 2)) - noisy[cell] * n
    assert after <= repair.REPAIR_Z * 4.0 + 1e-9  # the cell is left once it is within REPAIR_Z σ
    assert summary["moves"] >= 30 and summary["moves"] == int(np.sum(np.any(fixed != lumped, axis=1)))
    assert _objective(fixed, wl, noisy, sigmas) < _objective(lumped, wl, noisy, sigmas)
    assert fixed.shape == lumped.shape and fixed.min() >= 0
    assert all(fixed[:, a].max() < s for a, s in enumerate(wl.domain.shape))
    assert repair_notes(summary) and "repair=false" in repair_notes(summary)[0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_on_noisy_answers_the_objective_never_rises(seed):
    rows, wl = _table(seed=seed)
    n = rows.shape[0]
    rng = np.random.default_rng(seed)
    sigmas = np.full(wl.n_marginals, 6.0 / n)
    noisy = wl.answers(rows) + rng.normal(0, 6.0 / n, wl.n_queries)  # what a release measured
    start = rows[rng.permutation(n)]  # rows that fit the pairs badly
    start[:, 1] = rows[:, 1]
    fixed, summary = repair_rows(start, wl, noisy, sigmas, None, np.random.default_rng(seed), z=0.0)
    assert summary["moves"] > 0
    assert _objective(fixed, wl, noisy, sigmas) < _objective(start, wl, noisy, sigmas)


def test_a_cell_fitted_as_empty_gets_no_rows():
    rows, wl = _table()
    n = rows.shape[0]
    rows[(rows[:, 0] == 2) & (rows[:, 1] == 0), 1] = 1  # nothing in (a0 = 2, a1 = 0)
    noisy = wl.answers(rows)
    lumped = rows.copy()
    lumped[:60, 0], lumped[:60, 1] = 2, 1  # a lump beside the empty cell
    noisy[2 * 3 + 0] = 0.0  # fitted as empty
    fixed, _ = repair_rows(lumped, wl, noisy, np.full(wl.n_marginals, 3.0 / n), None, np.random.default_rng(0))
    assert not np.any((fixed[:, 0] == 2) & (fixed[:, 1] == 0))


def test_grouped_measurements_are_read_through_their_value_maps_and_not_searched():
    rows, wl = _table(n=800)
    n = rows.shape[0]
    # a2's five values measured in two groups in (1, 2); (0, 1) whole; a2 also alone at full resolution
    maps = [
        (np.arange(4), np.arange(3)),
        (np.arange(3), np.array([0, 0, 0, 1, 1])),
        (np.arange(5),),
    ]
    measured = MeasuredMarginals(wl.domain, [(0, 1), (1, 2), (2,)], maps)
    noisy = measured.counts(rows) / n
    sigmas = np.full(measured.n_marginals, 4.0 / n)
    lumped = rows.copy()
    lumped[:80, 0], lumped[:80, 1] = 3, 0  # a lump in a cell of the whole marginal (a0, a1)
    fixed, summary = repair_rows(lumped, measured, noisy, sigmas, None, np.random.default_rng(0))
    assert summary["marginals_searched"] == 2  # (a0, a1) and a2 alone; not the grouped (a1, a2)
    assert summary["moves"] > 0
    assert _objective(fixed, measured, noisy, sigmas) < _objective(lumped, measured, noisy, sigmas)
    cell = 3 * 3 + 0
    assert measured.counts(fixed)[cell] - noisy[cell] * n <= repair.REPAIR_Z * 4.0 + 1e-9
    # rows over their answers only in the grouped marginal (the whole ones answered exactly): not searched
    grouped = rows.copy()
    grouped[:80, 1], grouped[:80, 2] = 2, 4
    noisy_g = measured.counts(grouped) / n
    lo, hi = measured.offsets[1], measured.offsets[2]
    noisy_g[lo:hi] = measured.counts(rows)[lo:hi] / n
    still, moved = repair_rows(grouped, measured, noisy_g, sigmas, None, np.random.default_rng(0))
    assert moved["moves"] == 0 and np.array_equal(still, grouped)


def test_too_large_a_release_is_left_as_rounded(monkeypatch):
    rows, wl = _table()
    monkeypatch.setattr(repair, "REPAIR_MAX_ENTRIES", 100)
    noisy = np.zeros(wl.n_queries)
    fixed, summary = repair_rows(rows, wl, noisy, np.full(wl.n_marginals, 0.01), None, np.random.default_rng(0))
    assert summary.get("skipped") and np.array_equal(fixed, rows) and "too large" in repair_notes(summary)[0]


def test_the_time_limit_and_a_cancel_are_honoured():
    rows, wl = _table()
    n = rows.shape[0]
    noisy = wl.answers(rows)
    lumped = rows.copy()
    lumped[:80, 0], lumped[:80, 1] = 3, 2
    sigmas = np.full(wl.n_marginals, 4.0 / n)
    kept, summary = repair_rows(lumped, wl, noisy, sigmas, None, np.random.default_rng(0), seconds=0.0)
    assert np.array_equal(kept, lumped) and "time limit" in repair_notes(summary)[0]

    class Stop(Exception):
        pass

    def cancel():
        raise Stop

    with pytest.raises(Stop):
        repair_rows(lumped, wl, noisy, sigmas, None, np.random.default_rng(0), check=cancel)
