"""One set of one-way shares for every measured marginal (:func:`dpcore.mechanisms.projection_adaptive.
consensus_shares`, the adaptive projection's ``consistent_margins``).  Each measurement of an attribute -- its
one-way marginal, the margin of each pair it is measured in -- carries its own noise; fitted as measured, the
least-squares fit of records reconciled them with interactions of the noise's size.  Real fits (SCIP off: the
fit's settings are what is tested, not the certificate); fixed seeds; tolerances from the distributions."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpcore.data import Dataset
from dpcore.domain import Attribute, Domain
from dpcore.evaluate import cramers_v
from dpcore.mechanisms.base import Budget, RunContext
from dpcore.mechanisms.projection import zcdp_rho
from dpcore.mechanisms.projection_adaptive import AdaptiveProjection, consensus_shares, fit_targets
from dpcore.mechanisms.shrinkage import independence, shrink_pair
from dpcore.workload import Workload

FAST = {"scip": "off", "max_iterations": 60, "round_iterations": 10}


def test_each_measurement_of_an_attribute_is_averaged_by_its_precision():
    """A one-way marginal at σ₁ and a 2 × 3 pair at σ₂: the pair's margin over the first attribute sums 3 cells
    (variance 3σ₂²), over the second 2 (2σ₂²); the shares are the precision-weighted means, scaled to 1."""
    s1, s2 = 0.01, 0.02
    one0, one1 = np.array([0.62, 0.38]), np.array([0.2, 0.5, 0.3])
    pair = np.array([[0.10, 0.33, 0.20], [0.08, 0.16, 0.13]])
    ident = lambda k: np.arange(k)  # noqa: E731
    measured = {
        (0,): (one0, s1, (ident(2),)),
        (1,): (one1, s1, (ident(3),)),
        (0, 1): (pair.ravel(), s2, (ident(2), ident(3))),
    }
    shares = consensus_shares(measured)

    def mean(a, b, va, vb):
        m = (a / va + b / vb) / (1 / va + 1 / vb)
        return m / m.sum()

    assert np.allclose(shares[0], mean(one0, pair.sum(axis=1), s1**2, 3 * s2**2))
    assert np.allclose(shares[1], mean(one1, pair.sum(axis=0), s1**2, 2 * s2**2))


def test_a_margin_over_groups_counts_as_the_sums_it_is_and_the_shares_are_on_the_simplex():
    """Attribute 0 measured whole (σ² = 1e-4 a value) and, in a pair, over two groups of two values (σ² = 2e-4 a
    group: two cells summed).  Least squares moves each group's values by the same amount toward the group's
    measured sum: (sum - g)·v₁ / (2v₁ + v₂) = ±0.125.  Then code 2 is empty and the rest is projected on the
    simplex (+1/8 each)."""
    grouped = (np.array([0, 0, 1, 1]), np.arange(2))  # attribute 0's values in two groups, attribute 2's whole
    measured = {
        (0,): (np.array([0.5, 0.3, 0.25, -0.05]), 0.01, (np.arange(4),)),
        (0, 2): (np.array([0.1, 0.2, 0.5, 0.2]), 0.01, grouped),  # groups 0.3 and 0.7
    }
    ls = np.array([0.5, 0.3, 0.25, -0.05]) + np.array([-0.125, -0.125, 0.125, 0.125])
    assert np.allclose(consensus_shares(measured)[0], ls)  # already shares: nothing to project
    shares = consensus_shares(measured, zeros={0: {2}})
    assert np.allclose(shares[0], [ls[0] + 1 / 8, ls[1] + 1 / 8, 0.0, ls[3] + 1 / 8])
    assert np.allclose(shares[2], [0.6, 0.4])  # its only measurement, the pair's margin
    targets, _ = fit_targets(measured, shrink=False, zeros={0: {2}}, consistent=True)
    pair = targets[(0, 2)].reshape(2, 2)
    assert np.allclose(pair.sum(axis=1), [0.8, 0.2]) and np.allclose(pair.sum(axis=0), [0.6, 0.4])
    # Far below 0, a share is 0: the nearest point of the simplex, not the value clipped and the rest rescaled.
    alone = {(0,): (np.array([0.6, 0.5, 0.02, -0.3]), 0.01, (np.arange(4),))}
    assert np.allclose(consensus_shares(alone)[0], [0.55, 0.45, 0.0, 0.0])
    # Measured only over groups, an attribute gets no shares: the sums cannot say how the groups split.
    assert 0 not in consensus_shares({(0, 2): measured[(0, 2)]})


def test_every_target_has_the_shared_shares_as_margins_and_keeps_the_pairs_departure():
    """Three attributes, their one-way marginals and three pairs (one with a side grouped), each with its own
    noise: every target sums to 1, every pair's margins are the shared shares (summed over its groups), and the
    departure fitted is the shrunk pair's own."""
    rng = np.random.default_rng(3)
    sizes = (3, 4, 2)
    truth = rng.dirichlet(np.ones(math.prod(sizes)) * 5).reshape(sizes)
    sigma = 0.01
    maps = {0: np.arange(3), 1: np.arange(4), 2: np.arange(2)}
    group1 = np.array([0, 0, 1, 1])
    measured = {}
    for a in range(3):
        axes = tuple(b for b in range(3) if b != a)
        measured[(a,)] = (truth.sum(axis=axes) + rng.normal(0, sigma, sizes[a]), sigma, (maps[a],))
    for c, m in (((0, 1), (maps[0], maps[1])), ((0, 2), (maps[0], maps[2])), ((1, 2), (group1, maps[2]))):
        marg = truth.sum(axis=tuple(b for b in range(3) if b not in c))
        if c == (1, 2):
            marg = np.array([marg[:2].sum(axis=0), marg[2:].sum(axis=0)])
        measured[c] = ((marg + rng.normal(0, sigma, marg.shape)).ravel(), sigma, m)
    shares = consensus_shares(measured)
    assert set(shares) == {0, 1, 2}
    targets, kept = fit_targets(measured, shrink=True, consistent=True)
    for c, (y, s, m) in measured.items():
        t = targets[c].reshape(tuple(int(f.max()) + 1 for f in m))
        assert t.sum() == pytest.approx(1.0)
        for axis, a in enumerate(c):
            side = t.sum(axis=1 - axis) if len(c) == 2 else t
            assert np.allclose(side, np.bincount(m[axis], weights=shares[a]), atol=1e-12)
        if len(c) == 2:
            shrunk = shrink_pair(y.reshape(t.shape), s)[0]
            assert np.allclose(t - independence(t), shrunk - independence(shrunk), atol=1e-12)
            assert kept[c] == shrink_pair(y.reshape(t.shape), s)[1]
    plain, _ = fit_targets(measured, shrink=False, consistent=False)
    assert all(np.array_equal(plain[c], measured[c][0]) for c in measured)


def _independent(n: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    probs = [[0.5, 0.25, 0.12, 0.07, 0.04, 0.02], [0.9, 0.1], [0.05, 0.1, 0.2, 0.35, 0.3], [0.4, 0.3, 0.2, 0.1]]
    codes = np.column_stack([rng.choice(len(p), n, p=p) for p in probs])
    dom = Domain([Attribute(f"a{i}", "categorical", values=tuple(map(str, range(len(p))))) for i, p in
                  enumerate(probs)])  # fmt: skip
    return Dataset(codes, dom, name="independent")


def _v(codes: np.ndarray, i: int, j: int, shape) -> float:
    t = np.zeros((shape[i], shape[j]))
    np.add.at(t, (codes[:, i], codes[:, j]), 1)
    return cramers_v(t)


def test_pairs_of_independent_columns_come_back_about_as_associated_as_sampling_makes_them():
    """3,000 rows of four independent columns with skewed margins, all six pairs measured at ε = 1 (every
    attribute measured three times over, besides its one-way marginal).  Fitted with each measurement's own
    margins, the released pairs' Cramér's V averaged 1.5 times what sampling gives independent columns; with one
    set of shares, about what sampling gives.  Sampling: E V ≈ sqrt(df / (n·(min(I, J) - 1))) for an I × J table
    of independent columns; the bound is 1.3 times the pairs' mean of it (six seeds' mean: its standard error is
    about a tenth of that).  Same seeds, same spend either way (post-processing)."""
    n = 3000
    ds = _independent(n, 0)
    shape = ds.domain.shape
    pairs = list(itertools.combinations(range(4), 2))
    wl = Workload(ds.domain, tuple(pairs))
    budget = Budget(1.0, 1.0 / n**2)
    sampling = np.mean([math.sqrt((shape[i] - 1) * (shape[j] - 1) / (n * (min(shape[i], shape[j]) - 1)))
                        for i, j in pairs])  # fmt: skip
    v = {}
    for consistent in (True, False):
        params = AdaptiveProjection.validate_params({"rounds": 6, "consistent_margins": consistent, **FAST})
        means = []
        for seed in range(6):
            res = AdaptiveProjection().run(ds, wl, budget, params, RunContext.seeded(seed))
            assert res.spends[0].rho == pytest.approx(zcdp_rho(budget), rel=1e-12)
            said = [note for note in res.notes if note.startswith("Every measured marginal was fitted with one")]
            assert len(said) == (1 if consistent else 0)  # the Results page and --report say what the fit did
            means.append(np.mean([_v(res.rows, i, j, shape) for i, j in pairs]))
        v[consistent] = float(np.mean(means))
    assert v[True] <= 1.3 * sampling < v[False]
