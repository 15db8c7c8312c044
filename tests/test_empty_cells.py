"""Cells fitted as empty: a column's missing or '(other)' cell measured under 2σ (``empty_special``: the adaptive
projection's, and the projection's on a chosen workload).  Noise alone used to put a few percent of a small table's
rows there -- 'vote' 5% empty where no vote is missing, '(other)' in 'Sex' -- and the fit stops once its residuals
are at the noise level, so the cells stayed.  Real SCIP where a mechanism runs; fixed seeds; tolerances from the
distributions."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom, norm

from dpcore.data import Dataset
from dpcore.domain import Attribute, Domain
from dpcore.mechanisms.base import Budget, RunContext
from dpcore.mechanisms.decouple import fill_empty_cells
from dpcore.mechanisms.projection_adaptive import (
    STRUCTURAL_Z,
    AdaptiveProjection,
    fit_targets,
    special_codes,
    structural_zeros,
)
from dpcore.workload import Workload

FAST = {"scip": "off", "max_iterations": 60, "round_iterations": 10}


def _domain() -> Domain:
    return Domain(
        [
            Attribute("sex", "categorical", ("F", "M"), other=True, missing=True),
            Attribute("score", "numeric", edges=(0.5, 1.5, 2.5, 3.5), integer=True, missing=True),
            Attribute("flag", "categorical", ("no", "yes")),
        ]
    )


def test_the_special_codes_are_each_columns_other_and_missing_cells():
    assert special_codes(_domain()) == {0: (2, 3), 1: (3,)}


def test_a_special_cell_under_two_sigma_is_fitted_empty_in_every_clique_that_holds_it_alone():
    sigma = 0.01
    ident = (np.arange(4),)
    measured = {
        (0,): (np.array([0.5, 0.47, STRUCTURAL_Z * sigma * 0.9, STRUCTURAL_Z * sigma * 1.1]), sigma, ident),
        (1,): (np.array([0.3, 0.3, 0.4, -0.01]), sigma, ident),
        (0, 1): (np.full(16, 1 / 16), sigma, (np.arange(4), np.arange(4))),
        (1, 2): (np.full(4, 1 / 4), sigma, (np.array([0, 0, 1, 1]), np.arange(2))),  # missing grouped with 2
    }
    zeros = structural_zeros(measured, special_codes(_domain()))
    assert zeros == {0: {2}, 1: {3}}  # (other) of sex under 2σ, missing of sex over it; missing of score under
    targets, _ = fit_targets(measured, shrink=False, zeros=zeros)
    assert targets[(0,)][2] == 0 and targets[(0,)][3] > 0 and targets[(1,)][3] == 0
    pair = targets[(0, 1)].reshape(4, 4)
    assert (pair[2, :] == 0).all() and (pair[:, 3] == 0).all() and pair[0, 0] == pytest.approx(1 / 16)
    grouped = targets[(1, 2)].reshape(2, 2)
    assert (grouped == 1 / 4).all()  # the code shares its group with another: nothing to zero


def test_rows_left_in_an_empty_cell_take_a_donors_value_that_agrees_on_the_blanket():
    rng = np.random.default_rng(0)
    n = 2000
    a = rng.integers(0, 2, n)
    b = np.where(rng.random(n) < 0.9, a, 1 - a)  # b follows a
    b[rng.random(n) < 0.05] = 2  # 5% in b's empty code
    c = rng.integers(0, 3, n)
    codes = np.column_stack([a, b, c])
    out, changed = fill_empty_cells(codes, (2, 3, 3), [(0, 1), (2,)], {1: {2}}, rng)
    assert changed == int((b == 2).sum()) and not (out[:, 1] == 2).any()
    moved = b == 2
    agree = (out[moved, 1] == out[moved, 0]).mean()  # donors share a: b follows a for the filled rows too
    se = np.sqrt(0.9 * 0.1 / moved.sum())
    assert agree == pytest.approx(0.9, abs=4 * se)
    assert (out[:, [0, 2]] == codes[:, [0, 2]]).all() and (out[~moved, 1] == b[~moved]).all()


def _complete_and_gappy(n: int, seed: int) -> Dataset:
    """Six columns, each with a missing code in its schema; five hold every cell, one misses 30% of them."""
    rng = np.random.default_rng(seed)
    attrs, cols = [], []
    for i in range(5):
        attrs.append(Attribute(f"c{i}", "categorical", ("a", "b", "c"), missing=True))
        cols.append(rng.choice(3, n, p=[0.5, 0.3, 0.2]))
    attrs.append(Attribute("gappy", "categorical", ("x", "y"), missing=True))
    cols.append(np.where(rng.random(n) < 0.3, 2, rng.integers(0, 2, n)))
    return Dataset(np.column_stack(cols), Domain(attrs), name="gappy")


def test_a_small_tables_complete_columns_come_back_complete_and_a_gappy_one_keeps_its_gaps():
    """900 rows at ε = 1: a complete column's missing cell is measured at 0 + N(0, σ²) and kept only when the noise
    passes 2σ (probability Φ(-2) ≈ 2.3%); over 5 columns × 3 seeds, at most binom.ppf(1 - 1e-4) of the 15 keep
    anything.  Without the rule most columns came back with rows in the cell.  The gappy column's 30% is far
    above 2σ: kept, within 4σ of the truth."""
    budget = Budget(1.0, 1.0 / 900**2)
    wl = Workload.all_kway(_complete_and_gappy(10, 0).domain, 2)
    kept, kept_off = 0, 0
    for seed in range(3):
        ds = _complete_and_gappy(900, seed)
        on = AdaptiveProjection().run(ds, wl, budget, AdaptiveProjection.validate_params({"rounds": 4, **FAST}),
                                      RunContext.seeded(seed))  # fmt: skip
        off = AdaptiveProjection().run(
            ds, wl, budget, AdaptiveProjection.validate_params({"rounds": 4, "empty_special": False, **FAST}),
            RunContext.seeded(seed),
        )  # fmt: skip
        kept += sum(int((on.rows[:, i] == 3).any()) for i in range(5))
        kept_off += sum(int((off.rows[:, i] == 3).any()) for i in range(5))
        share = float((on.rows[:, 5] == 2).mean())
        sigma = on.public["sigma_one_way_counts"] / 900
        assert share == pytest.approx(0.3, abs=4 * sigma + 0.02), share
        assert any("fitted as empty" in note for note in on.notes)
    assert kept <= binom.ppf(1 - 1e-4, 15, norm.sf(STRUCTURAL_Z)), (kept, kept_off)
    assert kept_off >= 10  # the rule is what removes them


def test_a_chosen_workload_reads_the_cells_share_off_every_marginal_holding_it():
    """The projection on a chosen workload has no one-way marginal to read: a special code's share is each
    marginal's cells holding it summed (σ² times the cells summed), combined by precision, and compared with
    2 of the combined σ; the cells are zeroed in every marginal holding the code."""
    from dpcore.mechanisms.projection import empty_special_cells

    dom = _domain()
    wl = Workload(dom, ((0, 1), (0, 2)))
    sigma = 0.01
    combined = sigma / np.sqrt(1 / 4 + 1 / 2)  # sex × score sums 4 cells, sex × flag 2

    def noisy_with(missing_share: float) -> np.ndarray:
        a = np.zeros((4, 4))
        a[0, 0], a[3, 0] = 0.5, missing_share  # sex = missing (code 3)
        b = np.zeros((4, 2))
        b[0, 0], b[3, 1] = 0.5, missing_share
        return np.concatenate([a.ravel(), b.ravel()])

    below, above = 0.95 * STRUCTURAL_Z * combined, 1.05 * STRUCTURAL_Z * combined
    special = {0: (3,)}
    out, zeros = empty_special_cells(wl, noisy_with(below), np.array([sigma, sigma]), special)
    assert zeros == {0: {3}}
    assert (out[:16].reshape(4, 4)[3] == 0).all() and (out[16:].reshape(4, 2)[3] == 0).all()
    assert out[0] == 0.5 and out[16] == 0.5  # nothing else moves
    out, zeros = empty_special_cells(wl, noisy_with(above), np.array([sigma, sigma]), special)
    assert zeros == {} and out[12] == pytest.approx(above)
    # Either marginal alone would have decided otherwise: 2σ·sqrt(4) = 0.04 and 2σ·sqrt(2) ≈ 0.028 both exceed `above`.
    assert above < STRUCTURAL_Z * sigma * np.sqrt(2)


def test_the_projection_on_a_chosen_workload_keeps_complete_columns_complete():
    """The projection given all pairs (no one-way marginal measured), 900 rows at ε = 1, 3 seeds: as the adaptive
    projection above -- complete columns keep at most binom.ppf(1 - 1e-4) of 15 missing cells (noise alone passes
    2σ with probability Φ(-2)), most did without the rule, the gappy column keeps its 30%."""
    from dpcore.mechanisms.projection import Projection

    budget = Budget(1.0, 1.0 / 900**2)
    wl = Workload.all_kway(_complete_and_gappy(10, 0).domain, 2)
    fast = {"scip": "off", "max_iterations": 60}
    kept, kept_off = 0, 0
    for seed in range(3):
        ds = _complete_and_gappy(900, seed)
        on = Projection().run(ds, wl, budget, Projection.validate_params(fast), RunContext.seeded(seed))
        off = Projection().run(
            ds, wl, budget, Projection.validate_params({**fast, "empty_special": False}), RunContext.seeded(seed)
        )
        kept += sum(int((on.rows[:, i] == 3).any()) for i in range(5))
        kept_off += sum(int((off.rows[:, i] == 3).any()) for i in range(5))
        # The gappy column's share, read off 5 pairs of 3 × 4 cells each: σ_eff = σ·sqrt(4 / 5) counts.
        sigma = on.public["sigma_counts"] * np.sqrt(4 / 5) / 900
        assert float((on.rows[:, 5] == 2).mean()) == pytest.approx(0.3, abs=4 * sigma + 0.02)
        assert any("fitted as empty" in note for note in on.notes)
    assert kept <= binom.ppf(1 - 1e-4, 15, norm.sf(STRUCTURAL_Z)), (kept, kept_off)
    assert kept_off >= 10, kept_off  # the rule is what removes them
