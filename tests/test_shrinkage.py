"""Measured pairs shrunk toward independence by the share of their departure the noise explains
(:mod:`dpcore.mechanisms.shrinkage`, the adaptive projection's ``shrink_pairs``).  Real SCIP where a mechanism
runs; fixed seeds; tolerances from the distributions."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import integrate, stats

from dpcore.data import Dataset
from dpcore.domain import Attribute, Domain
from dpcore.evaluate import cramers_v
from dpcore.mechanisms.base import Budget, RunContext
from dpcore.mechanisms.projection import zcdp_rho
from dpcore.mechanisms.projection_adaptive import AdaptiveProjection, combine_measurements, fit_targets
from dpcore.mechanisms.shrinkage import independence, interaction_shrinkage, noise_energy, shrink_pair
from dpcore.workload import Workload

FAST = {"scip": "off", "max_iterations": 60, "round_iterations": 10}


def test_the_noise_energy_is_the_interaction_dimension_with_uniform_margins():
    y = np.full((4, 7), 50.0)
    assert noise_energy(y, 3.0) == pytest.approx(3 * 6 * 9.0)
    # Skewed margins: more (the independence table is fitted through the margins, an oblique projection).
    a, b = np.array([0.7, 0.2, 0.1]), np.array([0.5, 0.5])
    y = 1000 * np.outer(a, b)
    assert noise_energy(y, 2.0) == pytest.approx(4.0 * (3 - 2 + 3 * (a @ a)) * (2 - 2 + 2 * (b @ b)))
    assert noise_energy(y, 2.0) > (3 - 1) * (2 - 1) * 4.0


@pytest.mark.parametrize("shape", [(2, 2), (3, 5), (10, 2)])
def test_the_noise_energy_is_what_the_noise_puts_into_the_departure(shape):
    """Independent table with skewed margins, counts far above σ (where the linearisation holds): the mean of
    ‖departure‖² over 3,000 draws equals the closed form within 4 standard errors."""
    rng = np.random.default_rng(7)
    a, b = rng.dirichlet(np.full(shape[0], 2.0)), rng.dirichlet(np.full(shape[1], 2.0))
    true, sigma, trials = 1e6 * np.outer(a, b), 30.0, 3000
    energies = np.array([np.sum((y - independence(y)) ** 2) for y in true + rng.normal(0.0, sigma, (trials,) + shape)])
    expected = noise_energy(true, sigma)
    assert abs(energies.mean() - expected) <= 4 * energies.std() / math.sqrt(trials)


def test_pure_noise_is_shrunk_as_the_chi_square_says():
    """Uniform margins, counts far above σ: ‖departure‖²/σ² is χ² with d = (I - 1)(J - 1) degrees of freedom, so
    λ = max(0, 1 - (d - 2)/χ²_d).  Its mean over 2,000 draws matches the integral within 4 standard errors -- most
    of a pure-noise departure is removed (mean λ ≈ 0.13 for d = 20)."""
    rng = np.random.default_rng(3)
    shape, sigma, trials = (5, 6), 20.0, 2000
    d = 4 * 5
    lams = np.array(
        [interaction_shrinkage(y, sigma) for y in np.full(shape, 1e5) + rng.normal(0.0, sigma, (trials,) + shape)]
    )
    mean, _ = integrate.quad(lambda x: max(0.0, 1.0 - (d - 2) / x) * stats.chi2.pdf(x, d), 0, np.inf)
    assert abs(lams.mean() - mean) <= 4 * lams.std() / math.sqrt(trials)
    assert mean < 0.15


def test_the_shrunk_departure_is_closer_to_the_truth_than_the_measurement():
    """James–Stein: with isotropic noise (uniform margins, counts far above σ) and d = 20 ≥ 3, the mean squared
    error of the shrunk departure is below that of the measured one (d σ²) for a weak and a strong association
    alike (1,500 draws each, fixed seed; the gap exceeds 4 standard errors of the mean difference)."""
    rng = np.random.default_rng(11)
    sigma, trials = 20.0, 1500
    base = np.full((5, 6), 1e5)
    pattern = np.outer([2.0, 1.0, 0.0, -1.0, -2.0], [1.0, 0.6, 0.2, -0.2, -0.6, -1.0])  # margins kept at 0
    for scale in (5.0, 40.0):
        true = base + scale * pattern
        gaps = []
        for y in true + rng.normal(0.0, sigma, (trials, 5, 6)):
            shrunk, _ = shrink_pair(y, sigma)
            gaps.append(np.sum((y - true) ** 2) - np.sum((shrunk - true) ** 2))
        gaps = np.array(gaps)
        assert gaps.mean() > 4 * gaps.std() / math.sqrt(trials)


def test_a_strong_association_is_kept_and_the_margins_always_are():
    rng = np.random.default_rng(0)
    strong = np.array([[400.0, 20.0, 10.0], [15.0, 300.0, 25.0], [5.0, 30.0, 200.0]])
    y = strong + rng.normal(0.0, 5.0, strong.shape)
    shrunk, lam = shrink_pair(y, 5.0)
    assert lam > 0.99 and np.allclose(shrunk, y, atol=0.02 * 5.0 * 9)
    weak = np.outer([300.0, 200.0], [0.5, 0.3, 0.2]) + rng.normal(0.0, 15.0, (2, 3))
    shrunk, lam = shrink_pair(weak, 15.0)
    assert lam < 1.0
    assert np.allclose(shrunk.sum(axis=0), weak.sum(axis=0)) and np.allclose(shrunk.sum(axis=1), weak.sum(axis=1))
    assert np.allclose(shrunk, independence(weak) + lam * (weak - independence(weak)))


def _v(codes: np.ndarray) -> float:
    table = np.zeros((10, 2))
    np.add.at(table, (codes[:, 0], codes[:, 1]), 1)
    return cramers_v(table)


def _independent(n: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 10, n)
    c = (rng.random(n) < 0.3).astype(np.int64)
    dom = Domain(
        [
            Attribute("x", "numeric", lower=0.0, upper=10.0, bins=10),
            Attribute("c", "categorical", values=("no", "yes")),
        ]
    )
    return Dataset(np.column_stack([x, c]), dom, name="independent")


def test_a_pair_measured_near_its_noise_adds_no_association_the_data_does_not_have():
    """600 rows of two independent columns (10 × 2 cells, 30 rows a cell on average), the pair measured at ε = 0.5
    (noise ≈ 20 counts a cell): fitted as measured, the released rows carry the noise as association; shrunk, they
    come out about as associated as the real table (its Cramér's V is sampling noise, ≈ 0.1).  Same seeds, same
    spend either way (the shrinkage reads only the noisy answers: post-processing)."""
    ds = _independent(600, 1)
    wl = Workload(ds.domain, ((0, 1),))
    budget = Budget(0.5, 1.0 / 600**2)
    real = _v(ds.codes)
    v = {True: [], False: []}
    for shrink in (True, False):
        params = AdaptiveProjection.validate_params({"rounds": 1, "shrink_pairs": shrink, **FAST})
        for seed in range(6):
            res = AdaptiveProjection().run(ds, wl, budget, params, RunContext.seeded(seed))
            assert res.spends[0].rho == pytest.approx(zcdp_rho(budget), rel=1e-12)
            v[shrink].append(_v(res.rows))
            said = [n for n in res.notes if n.startswith("Each measured pair's departure")]
            assert len(said) == (1 if shrink else 0) and all(re.search(r": x × c \d+%\.$", n) for n in said)
    assert np.mean(v[True]) < np.mean(v[False])
    assert abs(np.mean(v[True]) - real) < abs(np.mean(v[False]) - real)


def test_fit_targets_shrink_pairs_only_and_average_repeated_measurements():
    sigma = 0.01
    pair = np.array([0.3, 0.1, 0.1, 0.5]) + np.array([0.01, -0.01, 0.0, 0.0])
    maps = (np.arange(2), np.arange(2))
    one, s_one = combine_measurements(np.array([0.3, 0.7]), sigma, np.array([0.5, 0.5]), sigma)  # measured twice
    assert s_one == pytest.approx(sigma / math.sqrt(2))
    measured = {(0,): (one, s_one, (np.arange(2),)), (0, 1): (pair, sigma, maps)}
    targets, kept = fit_targets(measured, True)
    assert np.allclose(targets[(0,)], [0.4, 0.6]) and set(kept) == {(0, 1)}
    assert np.allclose(targets[(0, 1)], shrink_pair(pair.reshape(2, 2), sigma)[0].ravel())
    plain, none = fit_targets(measured, False)
    assert none == {} and np.allclose(plain[(0, 1)], pair)
