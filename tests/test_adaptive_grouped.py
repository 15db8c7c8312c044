"""Pairs measured with their ordered attributes' values grouped (the adaptive projection's ``max_cells_ordered``),
and the default that uses them when no pair fits whole: many fine numeric columns on few rows."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import spearmanr

from dpcore.data import Dataset
from dpcore.domain import Attribute, Domain
from dpcore.mechanisms.base import Budget, RunContext
from dpcore.mechanisms.projection import zcdp_rho
from dpcore.mechanisms.projection_adaptive import AdaptiveProjection, departure_ratio, grouped_candidates
from dpcore.privacy import eps_to_zcdp
from dpcore.privacy.samplers import Randomness
from dpcore.release import default_max_pairs, default_release_plan, default_rounds
from dpcore.workload import Workload

FAST = {"scip": "off", "max_iterations": 60, "round_iterations": 10}


def _numeric(name: str, bins: int) -> Attribute:
    return Attribute(name, "numeric", lower=0.0, upper=float(bins), bins=bins)


def _domain() -> Domain:
    return Domain([_numeric("x", 11), _numeric("y", 11), Attribute("c", "categorical", values=("a", "b", "c"))])


def test_grouping_halves_the_finest_ordered_attribute_until_the_pair_fits_and_leaves_categories_whole():
    dom = _domain()
    wl = Workload(dom, ((0, 1), (0, 2), (1, 2), (0,)))
    flat = {a: np.full(dom.shape[a], 1.0 / dom.shape[a]) for a in range(3)}
    g = grouped_candidates(wl, 10, flat)
    # 11 × 11 → 5 × 11 → 5 × 5 → 2 × 5; 11 × 3 → 5 × 3 → 2 × 3; the category keeps its 3 values; the one-way
    # marginal stays whole (as the one-way step measured it).  value_groups makes *about* that many groups of
    # similar mass (here at most that many).
    shapes = [g.marginal_shape(j) for j in range(4)]
    assert shapes[0][0] <= 2 and shapes[0][1] <= 5 and shapes[1] == shapes[2] == (2, 3) and shapes[3] == (11,)
    assert all(math.prod(s) <= 10 for s in shapes[:3])  # the one-way marginal stays whole, over the cap
    for maps in g.value_maps:
        for f in maps:
            assert np.all(np.diff(f) >= 0) and np.all(np.diff(f) <= 1)  # consecutive values merged, in order
    assert g.marginal_name(0) == "x* × y*" and g.marginal_name(3) == "x"
    # Two categories cannot be grouped: such a pair stays whole, over the cap.
    cats = Domain([Attribute(k, "categorical", values=tuple("abcdef")) for k in ("u", "v")])
    assert grouped_candidates(Workload(cats, ((0, 1),)), 10, {0: np.ones(6) / 6, 1: np.ones(6) / 6}).sizes[0] == 36


def test_groups_follow_the_released_one_way_mass():
    """value_groups on the released marginal: a value holding a large share stays on its own."""
    dom = _domain()
    wl = Workload(dom, ((0, 2),))
    mass = np.array([0.6] + [0.04] * 10)  # value 0 holds most of the rows
    g = grouped_candidates(wl, 6, {0: mass, 1: mass, 2: np.ones(3) / 3})
    f = g.value_maps[0][0]
    assert g.marginal_shape(0) == (2, 3) and f[0] != f[1]


def test_coarser_versions_of_a_pair_of_numbers_are_offered_under_a_quarter_of_the_cap():
    """``coarser`` = 1: each pair of two numbers (or dates) is also offered grouped under cap / 4 where that groups
    it further; a pair with a category, one-way marginals and caps whose quarter is under 64 cells add no version."""
    dom = Domain([_numeric("x", 21), _numeric("y", 23), Attribute("c", "categorical", values=tuple("abcde")),
                  Attribute("d", "categorical", values=tuple("pqrs"))])  # fmt: skip
    wl = Workload(dom, ((0,), (0, 1), (0, 2), (2, 3)))
    flat = {a: np.full(s, 1.0 / s) for a, s in enumerate(dom.shape)}
    g = grouped_candidates(wl, 400, flat, coarser=1)
    assert g.marginals == ((0,), (0, 1), (0, 1), (0, 2), (2, 3))
    cells = [int(s) for s in g.sizes]
    # x × y: 21 × 23 → 21 × 11 (231 ≤ 400), then → 10 × 11 → 10 × 5 (50 ≤ 100); x × c (105) and c × d whole
    assert cells[0] == 21 and cells[1] <= 400 and cells[2] <= 100 < cells[1] and cells[3] == 105 and cells[4] == 20
    assert [g.marginal_name(j) for j in (1, 2, 3)] == ["x × y*", "x* × y*", "x × c"]
    assert grouped_candidates(wl, 400, flat).marginals == wl.marginals  # none asked for: one version each
    assert grouped_candidates(wl, 250, flat, coarser=1).n_marginals == 4  # 250 / 4 < 64 cells: no coarser version
    assert grouped_candidates(wl, 400, flat, coarser=2).n_marginals == 5  # nor 400 / 16
    three = grouped_candidates(wl, 1600, flat, coarser=2)  # x × y whole (483 ≤ 1600), under 400 and under 100
    small, middle, whole = sorted(int(s) for s in three.sizes[1:4])
    assert three.marginals.count((0, 1)) == 3 and small <= 100 < middle <= 400 < whole == 21 * 23


def test_a_spread_association_of_two_fine_numbers_stands_above_its_noise_only_in_the_coarser_version():
    """Why the versions: 20,000 rows, x and y of 20 bins related with Spearman ≈ 0.7 (income × house value's
    strength), beside a category weakly related to x.  The selection scores a candidate by its L1 distance from
    the fit (here the independent one: the one-way marginals) less the noise its cells bring, sqrt(2/π)·σ·cells.
    At σ = 47 (ε = 0.2) x × y at the cap of 400 cells scores below zero -- the round would take x × c, every
    time -- while its version under 100 cells scores far above every candidate."""
    n = 20_000
    rng = np.random.default_rng(7)
    z = rng.normal(size=n)

    def binned(v: np.ndarray) -> np.ndarray:
        return np.searchsorted(np.quantile(v, np.linspace(0, 1, 21)[1:-1]), v)

    x, y = binned(z + rng.normal(0, 0.6, n)), binned(z + rng.normal(0, 0.6, n))
    c = np.where(rng.random(n) < 0.3, x // 4, rng.integers(0, 5, n))
    dom = Domain([_numeric("x", 20), _numeric("y", 20), Attribute("c", "categorical", values=tuple("abcde"))])
    codes = np.column_stack([x, y, c])
    assert 0.65 < spearmanr(x, y)[0] < 0.8
    wl = Workload(dom, ((0, 1), (0, 2), (1, 2)))
    budget = Budget(0.2, 1.0 / n**2)
    params = AdaptiveProjection.validate_params({"rounds": 1, "one_way_fraction": 0.3, "max_cells_ordered": 400})
    sigma = AdaptiveProjection().plan(n, wl, budget, params)["sigma_counts"]
    g = grouped_candidates(wl, 400, {a: np.bincount(codes[:, a], minlength=s) / n for a, s in enumerate(dom.shape)}, 1)
    scores = {}
    for j in range(g.n_marginals):
        table = np.bincount(g.cell_index(codes, j), minlength=int(g.sizes[j])).reshape(g.marginal_shape(j))
        independent = np.outer(table.sum(axis=1), table.sum(axis=0)) / n
        scores[g.marginal_name(j)] = np.abs(table - independent).sum() - math.sqrt(2 / math.pi) * sigma * g.sizes[j]
    assert g.marginals.count((0, 1)) == 2 and 40 < sigma < 55
    assert scores["x × y"] < 0 < scores["x × c"]
    assert scores["x* × y*"] > scores["x × c"] + 2000  # a likelihood ratio above e^10 at ε_sel = 0.02, Δ = 2


def test_each_pair_is_measured_once_whichever_version_a_round_chose():
    """Three pairs offered at two resolutions each, three rounds: each pair is measured once (a measured pair
    leaves the candidates with every version).  The spend is the planned ρ, as with one version each."""
    ds = _correlated(3000, 3)
    wl = Workload(ds.domain, ((0, 1), (0, 2), (1, 2)))
    budget = Budget(1.0, 1.0 / 3000**2)
    params = AdaptiveProjection.validate_params(
        {"rounds": 3, "max_cells_ordered": 100, "coarser_candidates": 1, **FAST}
    )
    for seed in range(3):
        res = AdaptiveProjection().run(ds, wl, budget, params, RunContext.seeded(seed))
        picks = next(n for n in res.notes if n.startswith("Selected")).split(": ", 1)[1].split(" (*")[0].split(", ")
        assert sorted(p.replace("*", "") for p in picks) == ["x × c", "x × y", "y × c"]
        assert res.spends[0].rho == pytest.approx(zcdp_rho(budget), rel=1e-12)


def test_whole_rounds_choose_among_the_pairs_measured_whole_first():
    """``whole_rounds`` = 2 of 3 rounds with a cap that groups x × y (121 cells > 40): the first two rounds take
    the whole pairs x × c and y × c, though x* × y* scores far higher (test above: without it, seed 0 takes it
    second); the third takes x* × y*.  The spend is the planned ρ."""
    ds = _correlated(1000, 3)
    wl = Workload(ds.domain, ((0, 1), (0, 2), (1, 2)))
    budget = Budget(1.0, 1.0 / 1000**2)
    params = AdaptiveProjection.validate_params({"rounds": 3, "max_cells_ordered": 40, "whole_rounds": 2, **FAST})
    for seed in range(3):
        res = AdaptiveProjection().run(ds, wl, budget, params, RunContext.seeded(seed))
        picks = next(n for n in res.notes if n.startswith("Selected")).split(": ", 1)[1].split(" (*")[0].split(", ")
        assert set(picks[:2]) == {"x × c", "y × c"} and picks[2] == "x* × y*", picks
        assert res.spends[0].rho == pytest.approx(zcdp_rho(budget), rel=1e-12)


def _correlated(n: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    x = np.clip(np.round(5 + 2 * z + rng.normal(0, 0.5, n)), 0, 10).astype(np.int64)
    y = np.clip(np.round(5 + 2 * z + rng.normal(0, 0.5, n)), 0, 10).astype(np.int64)
    c = rng.integers(0, 3, n)
    return Dataset(np.column_stack([x, y, c]), _domain(), name="corr")


def test_a_grouped_pair_carries_the_association_and_costs_what_a_whole_one_does():
    """On 300 rows, x × y has 121 cells (2.5 rows a cell); measured as at most 10 groups it keeps a strong rank
    correlation in the released rows (real: 0.92).  The spend is the planned ρ, as without grouping: a histogram
    of groups has the same sensitivity (one count out, one in)."""
    ds = _correlated(300, 3)
    wl = Workload(ds.domain, ((0, 1),))  # the one candidate: the round measures it
    budget = Budget(3.0, 1.0 / 300**2)
    out = {}
    for cap in (None, 10):
        params = AdaptiveProjection.validate_params(
            {"rounds": 1, "one_way_fraction": 0.3, "max_cells_ordered": cap, **FAST}
        )
        plan = AdaptiveProjection().plan(ds.n, wl, budget, params)
        res = AdaptiveProjection().run(ds, wl, budget, params, RunContext.seeded(0))
        assert res.spends[0].rho == pytest.approx(zcdp_rho(budget), rel=1e-12) == pytest.approx(plan["rho"])
        out[cap] = res
    grouped = out[10]
    assert grouped.public["max_cells_ordered"] == 10 and "max_cells_ordered" not in out[None].public
    assert any(note.startswith("Selected marginals in order: x* × y* (* = ") for note in grouped.notes)
    assert spearmanr(ds.codes[:, 0], ds.codes[:, 1])[0] > 0.9
    # Seeds 0-7 give 0.65-0.84 (σ = 2.6 rows a group cell holding ~30); independent columns would give about 0
    # (± 1/sqrt(300) = 0.06).
    assert spearmanr(grouped.rows[:, 0], grouped.rows[:, 1])[0] > 0.6


def test_the_selection_scores_grouped_candidates():
    """With several candidates, the round's choice is scored on the grouped marginals: here x* × y*, whose real
    association is strong, against pairs with an independent category."""
    ds = _correlated(300, 3)
    wl = Workload(ds.domain, ((0, 1), (0, 2), (1, 2)))
    params = AdaptiveProjection.validate_params({"rounds": 1, "max_cells_ordered": 10, **FAST})
    picks = []
    for seed in range(6):
        res = AdaptiveProjection().run(ds, wl, Budget(3.0, 1.0 / 300**2), params, RunContext.seeded(seed))
        picks.append(next(n for n in res.notes if n.startswith("Selected")))
    # Scored against the independent model, x* × y* stands ~190 counts above the others (232 - 15 against 41 - 11,
    # L1 less the noise penalty), a likelihood ratio of e^19 at ε_sel = 0.40, Δ = 2; against the fit after the
    # one-way marginals (a few hundred records whose x-y pairing is arbitrary) the margin is smaller and varies.
    assert sum("x* × y*" in p for p in picks) >= 4


def test_the_default_groups_pairs_of_fine_numbers_on_few_rows():
    """248 rows × 8 counters of 11 bins (the bike counts' shape): no pair fits whole at ε = 1, and not even one pair
    with what the one-way marginals can spare; sixteen fit as 3 × 3 groups, chosen from the data."""
    dom = Domain([_numeric(f"c{i}", 11) for i in range(8)])
    n = 248
    budget = Budget(1.0, 1.0 / n**2)
    rho = eps_to_zcdp(1.0, 1.0 / n**2)
    assert default_rounds(dom.shape, n, rho, default_max_pairs(8))[0] == 0  # no kinds given: nothing groups
    r, f, floor, cap = default_rounds(dom.shape, n, rho, default_max_pairs(8), range(8))
    assert (r, cap) == (16, int(n / floor)) and f == pytest.approx(1 / 3)
    assert 9 <= cap < 16  # 3 × 3 groups fit, 4 × 4 do not
    cls, params, wl, note = default_release_plan(dom, n, budget)
    assert cls is AdaptiveProjection and params["max_cells_ordered"] == cap and params["rounds"] == 16
    assert "coarser_candidates" not in params  # a quarter of 9-15 cells holds no pair's shape
    assert wl.n_marginals == 8 + 28 and "numeric and date values grouped" in note
    # The same shape with categories instead: nothing can be grouped, the columns come out independent.
    cats = Domain([Attribute(f"c{i}", "categorical", values=tuple("abcdefghijk")) for i in range(8)])
    cls, params, wl, _ = default_release_plan(cats, n, budget)
    assert cls.name == "projection" and wl.n_marginals == 8


def test_a_pair_that_fits_whole_is_not_grouped_by_the_default():
    """Grouping is the default's last resort: where some pair fits whole it measures whole pairs only."""
    dom = Domain([_numeric("x", 4), _numeric("y", 4), _numeric("z", 40)])
    n = 5000
    budget = Budget(1.0, 1.0 / n**2)
    r, _, _, cap = default_rounds(dom.shape, n, zcdp_rho(budget), default_max_pairs(3), range(3))
    assert r >= 1 and cap is None
    _, params, _, _ = default_release_plan(dom, n, budget)
    assert "max_cells_ordered" not in params
    assert math.isfinite(r)


def _diamonds() -> Domain:
    """20,000 diamonds' shape: five fine numbers (carat, depth, price, sizes) beside three grades."""
    cats = [Attribute("cut", "categorical", values=tuple("abcde")),
            Attribute("color", "categorical", values=tuple("DEFGHIJ")),
            Attribute("clarity", "categorical", values=tuple("12345678"))]  # fmt: skip
    return Domain([*cats, _numeric("carat", 21), _numeric("depth", 37), _numeric("price", 23), _numeric("x", 21),
                   _numeric("table", 13)])  # fmt: skip


def test_fine_numbers_join_the_choice_grouped_where_the_rounds_already_choose_among_whole_pairs():
    """On 20,000 diamonds at ε = 1 twenty rounds choose among the pairs that fit whole; no pair of two fine
    numbers is among them (21 × 23 cells and more against a cap of ~430), so carat, price and sizes came back
    unrelated.  They now join the choice with their values grouped under the same cap (halved until they fit);
    categories stay whole, and the budget-return test stays the last resort's."""
    dom, n = _diamonds(), 20_000
    budget = Budget(1.0, 1.0 / n**2)
    ordered = range(3, 8)
    r, _, floor, cap = default_rounds(dom.shape, n, zcdp_rho(budget), default_max_pairs(len(dom)), ordered)
    whole = [(a, b) for a in range(8) for b in range(a + 1, 8) if dom.shape[a] * dom.shape[b] <= n / floor]
    assert cap is None and 1 <= r < len(whole)
    cls, params, wl, note = default_release_plan(dom, n, budget)
    assert cls is AdaptiveProjection and params["rounds"] == r and "return_below" not in params
    assert params["max_cells_ordered"] == int(n / floor) >= 256 and params["coarser_candidates"] == 1
    assert f"may also be measured in at most {int(n / floor) // 4:,} cells" in note
    pairs = {tuple(dom.attributes[a].name for a in m) for m in wl.marginals if len(m) == 2}
    assert {("carat", "price"), ("carat", "x"), ("price", "x"), ("depth", "price")} <= pairs
    assert set(whole) <= {m for m in wl.marginals if len(m) == 2}
    assert f"{len(pairs) - len(whole)} of them measured in at most {int(n / floor):,} cells" in note
    grouped = grouped_candidates(wl, params["max_cells_ordered"], {a: np.ones(s) / s for a, s in enumerate(dom.shape)})
    for j, m in enumerate(grouped.marginals):
        sizes = [len(np.unique(g)) for g in grouped.value_maps[j]]
        assert int(np.prod(sizes)) <= params["max_cells_ordered"] or len(m) == 1
        assert all(s == dom.shape[a] for a, s in zip(m, sizes) if a < 3)  # categories whole


def test_where_every_whole_pair_gets_a_round_fine_numbers_do_not_take_them():
    """Pima's shape (eight numbers, the outcome; 614 rows): the pairs that fit whole are the outcome's; each gets a
    round at ε = 1 and 3, one takes what the one-way marginals spare at ε = 0.3, and no grouped pair competes for
    them (measured: grouped candidates there took the outcome's rounds, ML efficacy at ε = 3 0.77 → 0.52)."""
    dom = Domain([_numeric(f"v{i}", s) for i, s in enumerate((21, 15, 20, 10, 8, 20, 12, 20))]
                 + [Attribute("Outcome", "categorical", values=("0", "1"))])  # fmt: skip
    n = 614
    for eps in (0.3, 1.0, 3.0):
        budget = Budget(eps, 1.0 / n**2)
        _, params, wl, _ = default_release_plan(dom, n, budget)
        assert "max_cells_ordered" not in params and "coarser_candidates" not in params
        assert all(8 in m for m in wl.marginals if len(m) == 2)


def test_numbers_in_no_whole_pair_get_rounds_of_their_own_after_the_whole_pairs():
    """1,000 students (five categories, three scores of ten bins) at ε = 0.5: every pair that fits whole gets a
    round, all of them the categories', and no score is in any -- the scores came back unrelated to each other
    (reading × writing Spearman 0.96 → 0.0).  The scores' grouped pairs now get rounds of their own after the whole
    pairs' (``whole_rounds``), each with a whole pair's ρ, taken from the one-way share (at least 30%)."""
    from dpcore.release import uncovered_rounds

    cats = [Attribute(name, "categorical", values=tuple("abcde"[:k]), missing=True)
            for name, k in (("gender", 2), ("race", 5), ("education", 4), ("lunch", 2), ("prep", 2))]  # fmt: skip
    dom = Domain([*cats, _numeric("math", 10), _numeric("reading", 10), _numeric("writing", 10)])
    n, budget = 1000, Budget(0.5, 1e-6)
    r, f, floor, cap = default_rounds(dom.shape, n, zcdp_rho(budget), default_max_pairs(len(dom)), range(5, 8))
    whole = [(a, b) for a in range(8) for b in range(a + 1, 8) if dom.shape[a] * dom.shape[b] <= n / floor]
    assert cap is None and 2 <= r == len(whole) and all(b < 5 for _, b in whole)
    cls, params, wl, note = default_release_plan(dom, n, budget)
    extra = uncovered_rounds(r, f, 3)
    assert extra >= 1 and params["whole_rounds"] == r and params["rounds"] == r + extra
    assert params["max_cells_ordered"] == int(n / floor)
    assert (1 - params["one_way_fraction"]) / params["rounds"] == pytest.approx((1 - f) / r, abs=1e-4)
    assert params["one_way_fraction"] >= 0.3
    assert {m for m in wl.marginals if len(m) == 2} == set(whole) | {(5, 6), (5, 7), (6, 7)}
    assert f"the last {extra} among the grouped pairs of numbers" in note
    assert uncovered_rounds(9, 0.47, 3) == 2 and uncovered_rounds(5, 0.6154, 6) == 1
    assert uncovered_rounds(4, 0.35, 6) == 0  # no room: the one-way marginals keep 30%


@pytest.mark.parametrize("seed", range(5))
def test_a_grouped_histogram_moves_by_at_most_sqrt2_when_one_row_is_replaced(seed):
    """The sensitivity the accounting charges for (one count out, one in), for any grouping of the values."""
    rng = np.random.default_rng(seed)
    ds = _correlated(200, seed)
    wl = Workload(ds.domain, ((0, 1), (0, 2), (1, 2)))
    noisy = {a: rng.dirichlet(np.ones(ds.domain.shape[a])) for a in range(3)}  # any released one-way marginal
    g = grouped_candidates(wl, int(rng.integers(4, 600)), noisy, coarser=int(rng.integers(0, 3)))
    other = ds.codes.copy()
    i = int(rng.integers(200))
    other[i] = [rng.integers(11), rng.integers(11), rng.integers(3)]
    for j in range(g.n_marginals):
        size = int(g.sizes[j])
        a = np.bincount(g.cell_index(ds.codes, j), minlength=size)
        b = np.bincount(g.cell_index(other, j), minlength=size)
        assert np.abs(a - b).sum() <= 2 and np.linalg.norm(a - b) <= math.sqrt(2) + 1e-12


def _independent_numbers(n: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    dom = Domain([_numeric(f"x{i}", 11) for i in range(5)])
    return Dataset(rng.integers(0, 11, size=(n, 5)), dom, name="independent")


def test_rounds_go_back_to_the_one_way_marginals_when_the_pairs_carry_no_signal():
    """Five independent columns of 11 bins on 300 rows, eight grouped pairs planned at ε = 1: the first three
    measured pairs depart from independence by about what their noise alone gives (ratio ≈ 1 ± 0.4), mostly below
    1.5, so the rounds left re-measure every one-way marginal.  The spend is the planned ρ either way.  On four columns
    all strongly related (rank correlations ≈ 0.9) the ratio stays far above and every round runs.  (The ratio pools
    the pairs measured: one strong pair among noise ones can fall below -- then what is left is noise.)"""
    budget = Budget(1.0, 1.0 / 300**2)
    base = {"rounds": 8, "one_way_fraction": 0.3, "max_cells_ordered": 10, **FAST}
    ds = _independent_numbers(300, 0)
    wl = Workload(ds.domain, tuple((a, b) for a in range(5) for b in range(a + 1, 5)))
    returned = []
    for seed in range(12):
        params = AdaptiveProjection.validate_params({**base, "return_below": 1.5})
        res = AdaptiveProjection().run(ds, wl, budget, params, RunContext.seeded(seed))
        assert res.spends[0].rho == pytest.approx(zcdp_rho(budget), rel=1e-12)
        if "rounds_returned_to_one_way" in res.public:
            back = res.public["rounds_returned_to_one_way"]
            assert 1 <= back <= 5 and any(n.startswith("After ") and "measured every one-way" in n for n in res.notes)
            assert len(next(n for n in res.notes if n.startswith("Selected")).split(", ")) == 8 - back
            returned.append(back)
    # Pure noise: the ratio of three 2 × 5 pairs is about χ²₁₂ / 12, below 1.5 with probability ≈ 0.88 (0.75 seen
    # with the selection's pick of the worst-fitted pairs): 6 or more of 12 fails with probability < 0.02.
    assert len(returned) >= 6
    off = AdaptiveProjection().run(ds, wl, budget, AdaptiveProjection.validate_params(base), RunContext.seeded(0))
    assert "rounds_returned_to_one_way" not in off.public  # off unless asked (the default asks for grouped pairs)
    rng = np.random.default_rng(4)
    z = rng.normal(size=(300, 1))
    codes = np.clip(np.round(5 + 2 * z + rng.normal(0, 0.5, (300, 4))), 0, 10).astype(np.int64)
    corr = Dataset(codes, Domain([_numeric(f"x{i}", 11) for i in range(4)]), name="related")
    wl = Workload(corr.domain, tuple((a, b) for a in range(4) for b in range(a + 1, 4)))
    params = AdaptiveProjection.validate_params({**base, "rounds": 6, "return_below": 1.5})
    for seed in range(3):
        res = AdaptiveProjection().run(corr, wl, budget, params, RunContext.seeded(seed))
        assert "rounds_returned_to_one_way" not in res.public


def test_the_departure_ratio_is_about_one_on_noise_and_far_above_on_signal():
    """The statistic the return reads: Σ‖y - e‖² / Σ N over the measured pairs (fractions of n, σ in the same
    units).  Independent 4 × 5 tables, 200 draws of three pairs: mean within 4 standard errors of 1 (the
    linearised noise energy is exact to first order; counts far above σ here)."""
    rng = np.random.default_rng(5)
    n, sigma = 10**6, 30.0
    maps = (np.arange(4), np.arange(5))
    ratios = []
    for _ in range(200):
        measured = {}
        for k in range(3):
            y = n * np.outer(rng.dirichlet(np.ones(4) * 3), rng.dirichlet(np.ones(5) * 3)) + rng.normal(
                0, sigma, (4, 5)
            )
            measured[(k, k + 1)] = (y.ravel() / n, sigma / n, maps)
        ratios.append(departure_ratio(measured))
    ratios = np.array(ratios)
    assert abs(ratios.mean() - 1.0) <= 4 * ratios.std() / math.sqrt(len(ratios))
    strong = n * np.array([[0.2, 0.0, 0.05, 0.0, 0.0], [0.0, 0.2, 0.0, 0.05, 0.0], [0.0, 0.0, 0.2, 0.0, 0.05],
                           [0.05, 0.0, 0.0, 0.2, 0.0]])  # fmt: skip
    assert departure_ratio({(0, 1): (strong.ravel() / n, sigma / n, maps)}) > 100


class _Counting(Randomness):
    """The samplers, counting what each draw costs: a histogram of counts (L2 sensitivity sqrt 2) with discrete
    Gaussian noise σ is 1/σ²-zCDP; an exponential mechanism at ε (sensitivity as declared) is ε²/8-zCDP."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.rho = 0.0

    def discrete_gaussian(self, sigma, size):
        self.rho += 1.0 / sigma**2
        return super().discrete_gaussian(sigma, size)

    def exponential_mechanism(self, scores, epsilon, sensitivity):
        self.rho += epsilon**2 / 8.0
        return super().exponential_mechanism(scores, epsilon, sensitivity)


def test_the_noise_drawn_costs_the_planned_rho_whether_or_not_the_budget_goes_back():
    """Adaptive composition with a filter: on every path (all rounds, or the rounds left spent on the one-way
    marginals) the draws themselves add up to the ρ the plan charged, to rounding."""
    budget = Budget(1.0, 1.0 / 300**2)
    params = AdaptiveProjection.validate_params(
        {"rounds": 8, "one_way_fraction": 0.3, "max_cells_ordered": 10, "return_below": 1.5, **FAST}
    )
    ds = _independent_numbers(300, 0)
    wl = Workload(ds.domain, tuple((a, b) for a in range(5) for b in range(a + 1, 5)))
    paths = set()
    for seed in range(6):
        noise = _Counting(seed)
        res = AdaptiveProjection().run(ds, wl, budget, params, RunContext(noise=noise))
        assert noise.rho == pytest.approx(zcdp_rho(budget), rel=1e-9) == pytest.approx(res.spends[0].rho, rel=1e-9)
        paths.add("rounds_returned_to_one_way" in res.public)
    assert paths == {True, False}  # both paths were walked
