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
from dpcore.mechanisms.decouple import (
    OUTER_SIGMA_SHARE,
    STRUCTURAL_Z,
    empty_chains,
    fill_empty_cells,
    outer_chains,
    special_codes,
)
from dpcore.mechanisms.projection_adaptive import AdaptiveProjection, fit_targets, structural_zeros
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
    targets, _ = fit_targets(measured, shrink=False, zeros=zeros, consistent=False)  # each as measured
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


def _with_and_without(ds, wl, budget, rounds: int, seed: int):
    """The adaptive projection's run with cells fitted as empty (``empty_special``, the default) and without."""
    runs = []
    for on in (True, False):
        params = AdaptiveProjection.validate_params({"rounds": rounds, "empty_special": on, **FAST})
        runs.append(AdaptiveProjection().run(ds, wl, budget, params, RunContext.seeded(seed)))
    return runs


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
        on, off = _with_and_without(ds, wl, budget, 4, seed)
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


# ------------------------------------------------------------------ a discovered number's end values
def _scale(edges, integer=True, source="dp") -> Attribute:
    return Attribute("q", "numeric", edges=edges, integer=integer, source=source)


HALF = tuple(v + 0.5 for v in range(0, 8))  # whole numbers 1..7, one bin each: a 1-5 scale located as [1, 7]


def test_a_discovered_ranges_end_values_past_its_power_of_two_start_form_chains_from_the_outside_in():
    assert outer_chains(_scale(HALF)) == ((6, 5, 4),)  # 7, 6, 5: past 4, where [4, 7] starts; 1 is exact
    assert outer_chains(_scale(HALF, source="declared")) == ()  # the user's range is the user's
    # 2..15 in ten bins: the top range [8, 15] vouches for 8 only; the lower bound 2 (from [2, 3]) for 3 only.
    assert outer_chains(_scale((2, 3, 5, 6, 7, 8, 10, 11, 12, 14, 15))) == ((9, 8, 7, 6), (0,))
    assert outer_chains(_scale((0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5))) == ()  # 10 + 1: refined
    # A real range [0, 128]: the bins wholly above 64, and -- a range that may have reached down to 0 from a bulk
    # far above it -- those wholly below 128 / 8, where the lowest bin the reach can start from ends.
    assert outer_chains(Attribute("x", "numeric", lower=0, upper=128, bins=10, source="dp")) == ((9, 8, 7, 6), (0,))
    assert outer_chains(_scale((-0.5,) + HALF)) == ((7, 6, 5), (0,))  # a count 0..7: 0 is its own chain
    # An upper bound refined in (to 100 from [64, 128)): the reach started at most from 128 / 8, the least power
    # of two above it over ZERO_REACH -- bin [0, 10) only; ages 18-95 as [0, 79]: 0-3, 4-7, 8-11, 12-15.
    assert outer_chains(Attribute("x", "numeric", lower=0, upper=100, bins=10, source="dp")) == ((0,),)
    ages = (0, 4, 8, 12, 16, 20, 24, 26.5) + tuple(v + 0.5 for v in range(27, 58)) + (59, 63, 67, 71, 75, 79)
    assert outer_chains(_scale(ages)) == ((0, 1, 2, 3),)
    links = outer_chains(_scale((3.5, 4.5, 5.5, 6.5, 7.5)))  # 4..7: one range, both ends in it
    assert links == ((3, 2), (0,)) and len({c for chain in links for c in chain}) < 4
    assert empty_chains(Domain([_scale(HALF), Attribute("c", "categorical", ("a",), other=True)])) == {
        0: ((6, 5, 4),),
        1: (1,),
    }


def test_a_chain_is_emptied_from_the_outside_in_while_its_shares_stay_under_one_sigma():
    sigma = 0.01
    ident = (np.arange(7),)

    def zeros(shares, sd=sigma):
        measured = {(0,): (np.array([0.1, 0.2, 0.3, 0.2, 0.0, 0.0, 0.0]) + np.array(shares), sd, ident)}
        return structural_zeros(measured, {0: ((6, 5, 4),)})

    assert zeros([0, 0, 0, 0, 0.11, 0.004, -0.02]) == {0: {6, 5}}  # 7 and 6 go; 5 holds 11%: stays
    assert zeros([0, 0, 0, 0, 0.11, 0.012, 0.0]) == {0: {6}}  # 6's noise passes σ: 6 and 5 stay
    assert zeros([0, 0, 0, 0, 0.11, 0.006, 0.006]) == {0: {6}}  # together over σ
    assert zeros([0, 0, 0, 0, 0.012, 0.0, -0.5]) == {0: {6, 5}}  # a negative share makes no room for 5
    assert zeros([0, 0, 0, 0, 0.11, 0.0, 0.0], sd=1.5 * OUTER_SIGMA_SHARE) == {}  # too noisy to tell
    # a 2,500-row survey at ε = 1 measures its one-way marginals with σ ≈ 2.3% of the rows: its scales' ends are
    # still read (at 2% they were not, and 1-2% of each 1-5 answer came back as 7)
    assert zeros([0, 0, 0, 0, 0.11, 0.0, 0.0], sd=0.023) == {0: {6, 5}}


SCALES = 6


def _scales(n: int, seed: int) -> Dataset:
    """Six 1-5 answer scales (the top answer 11% of rows) with the range [1, 7] a power-of-two histogram locates,
    and a three-valued group they follow."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 3, n)
    cols = [np.clip(z + rng.integers(0, 3, n), 0, 4) for _ in range(SCALES)] + [z]
    attrs = [Attribute(f"q{i}", "numeric", edges=HALF, integer=True, source="dp") for i in range(SCALES)]
    attrs.append(Attribute("group", "categorical", ("a", "b", "c"), source="dp"))
    return Dataset(np.column_stack(cols), Domain(attrs), name="scales")


def test_a_scales_empty_values_past_its_end_come_back_empty_and_its_real_top_answer_stays():
    """3,000 rows at ε = 1 (one-way σ ≈ 1% of the rows): a column's two empty values 6 and 7 both go when the
    positive parts of their noisy shares sum under σ -- probability p = P(Z₁⁺ + Z₂⁺ < 1) ≈ 0.66 -- so over 6
    columns × 3 seeds at least binom.ppf(1e-4, 18, p) are emptied, and the rows hold no value the run's note says
    was emptied.  Without the rule fewer columns come back without a 6 or 7.  The top answer 5 (11% of the rows,
    ≥ 10σ) is never emptied and keeps its share."""
    from scipy.integrate import quad

    p = 0.25 + norm.cdf(1) - 0.5 + quad(lambda x: norm.pdf(x) * (norm.cdf(1 - x) - 0.5), 0, 1)[0]
    budget = Budget(1.0, 1.0 / 3000**2)
    both, clean, clean_off, trials = 0, 0, 0, 0
    for seed in range(3):
        ds = _scales(3000, seed)
        pairs = tuple((a, SCALES) for a in range(SCALES))
        wl = Workload(ds.domain, tuple((a,) for a in range(SCALES + 1)) + pairs)
        on, off = _with_and_without(ds, wl, budget, 3, seed)
        sigma = on.public["sigma_one_way_counts"] / 3000
        assert sigma < OUTER_SIGMA_SHARE
        note = next(n for n in on.notes if "fitted as empty" in n)
        for a in range(SCALES):
            trials += 1
            listed = note.split(f"q{a}: ")[1].split(";")[0].split(" (")[0] if f"q{a}: " in note else ""
            emptied = sorted(int(v) for v in listed.split(", ") if v.isdigit())
            assert 5 not in emptied
            assert not np.isin(on.rows[:, a], [v - 1 for v in emptied]).any()
            both += int(emptied == [6, 7])
            clean += int(not np.isin(on.rows[:, a], (5, 6)).any())
            clean_off += int(not np.isin(off.rows[:, a], (5, 6)).any())
            real, synth = float((ds.codes[:, a] == 4).mean()), float((on.rows[:, a] == 4).mean())
            assert synth == pytest.approx(real, abs=4 * sigma + 0.02)
    assert both >= binom.ppf(1e-4, trials, p), (both, clean, clean_off, p)
    assert clean >= both and clean_off < clean, (clean, clean_off)  # the rule is what removes them


def test_a_chosen_workload_empties_a_scales_end_values_read_off_every_marginal_holding_them():
    """The projection on a chosen workload reads a number's end values as it reads a missing cell (each marginal's
    cells holding the value summed, combined by precision): 7 and 6 of a scale located as [1, 7] are zeroed in
    every marginal while their shares together stay under the combined σ, and 5 is not."""
    from dpcore.mechanisms.projection import empty_special_cells

    dom = Domain([_scale(HALF), Attribute("flag", "categorical", ("no", "yes"))])
    wl = Workload(dom, ((0, 1),))
    sigma = 0.002  # one marginal, 2 cells summed per value: σ·sqrt(2) ≈ 0.0028 of the rows, under 2%

    def noisy_with(six: float) -> np.ndarray:
        table = np.zeros((7, 2))
        table[:5] = [[0.05, 0.05], [0.1, 0.1], [0.15, 0.15], [0.1, 0.1], [0.05, 0.05]]
        table[5] = [six / 2, six / 2]
        table[6] = [-0.001, 0.0005]
        return table.ravel()

    out, zeros = empty_special_cells(wl, noisy_with(0.001), np.array([sigma]), empty_chains(dom))
    assert zeros == {0: {5, 6}}
    assert (out.reshape(7, 2)[5:] == 0).all() and out.reshape(7, 2)[4, 0] == 0.05
    out, zeros = empty_special_cells(wl, noisy_with(0.004), np.array([sigma]), empty_chains(dom))
    assert zeros == {0: {6}} and out.reshape(7, 2)[5, 0] == pytest.approx(0.002)  # 6 holds over σ·sqrt(2)
