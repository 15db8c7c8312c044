"""The one-way marginals' share split by cells (:func:`dpcore.mechanisms.projection_adaptive.one_way_sigmas`).

The default measures every one-way marginal first.  Split evenly, a ten-bin number gets the noise per cell of a
yes/no column, and on a small table its one-way TVD is mostly that noise; split in proportion to cells^(2/3), the
summed expected L1 noise Σ c_a·σ_a·sqrt(2/π) is least for the same ρ.  Closed forms, the optimality condition, and
the draws of a run adding up to the planned ρ.  Fixed seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcore.data import Dataset
from dpcore.domain import Attribute, Domain
from dpcore.errors import ParameterError
from dpcore.mechanisms.base import Budget, RunContext
from dpcore.mechanisms.projection import zcdp_rho
from dpcore.mechanisms.projection_adaptive import AdaptiveProjection, one_way_sigmas
from dpcore.privacy.samplers import Randomness
from dpcore.workload import Workload


@pytest.mark.parametrize("split", ["even", "cells"])
def test_the_one_way_sigmas_spend_exactly_their_share(split):
    """Σ 1/σ_a² = ρ_one (each marginal of counts, L2 sensitivity sqrt 2, costs 1/σ² in zCDP); even: every σ is
    sqrt(p / ρ_one), the adaptive projection's σ before the split existed."""
    sizes, rho = [12, 3, 3, 5, 12, 4, 2, 23], 0.0123
    sig = one_way_sigmas(rho, sizes, split)
    assert sum(1.0 / s**2 for s in sig) == pytest.approx(rho, rel=1e-12)
    if split == "even":
        assert sig == pytest.approx([math.sqrt(len(sizes) / rho)] * len(sizes), rel=1e-12)
    else:  # ρ_a ∝ c_a^(2/3): a 12-cell marginal gets (12/3)^(2/3) ≈ 2.52 times the ρ of a 3-cell one
        assert (sig[1] / sig[0]) ** 2 == pytest.approx(4 ** (2 / 3), rel=1e-12)
    with pytest.raises(ParameterError):
        one_way_sigmas(rho, sizes, "by-name")


def test_the_cells_split_minimises_the_summed_l1_noise_for_its_rho():
    """Lagrange: c_a·σ_a is minimal in sum under Σ 1/σ_a² = ρ when ρ_a ∝ c_a^(2/3).  The even split and 2,000
    random splits of the same ρ all give a larger Σ c_a·σ_a."""
    sizes, rho = np.array([12, 3, 3, 5, 12, 4, 2, 23]), 0.02
    best = float(np.dot(sizes, one_way_sigmas(rho, sizes, "cells")))
    assert best < float(np.dot(sizes, one_way_sigmas(rho, sizes, "even")))
    rng = np.random.default_rng(0)
    for _ in range(2000):
        shares = rng.dirichlet(np.ones(len(sizes)))
        assert best <= float(np.dot(sizes, 1.0 / np.sqrt(rho * shares))) * (1 + 1e-12)


class _Counting(Randomness):
    """The samplers, counting what each draw costs (a histogram of counts with discrete Gaussian σ: 1/σ²; an
    exponential mechanism at ε: ε²/8) and the σ of each noise draw."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.rho = 0.0
        self.sigmas: list[float] = []

    def discrete_gaussian(self, sigma, size):
        self.rho += 1.0 / sigma**2
        self.sigmas.append(float(sigma))
        return super().discrete_gaussian(sigma, size)

    def exponential_mechanism(self, scores, epsilon, sensitivity):
        self.rho += epsilon**2 / 8.0
        return super().exponential_mechanism(scores, epsilon, sensitivity)


def _mixed(n: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    dom = Domain(
        [Attribute(f"x{i}", "numeric", lower=0.0, upper=11.0, bins=11) for i in range(3)]
        + [Attribute(f"b{i}", "categorical", values=("no", "yes")) for i in range(3)]
    )
    codes = np.column_stack([rng.integers(0, 11, (n, 3)), rng.integers(0, 2, (n, 3))])
    return Dataset(codes, dom, name="mixed")


@pytest.mark.parametrize("return_below", [None, 100.0])
def test_a_run_with_the_cells_split_draws_its_planned_rho_on_either_path(return_below):
    """Every path (all rounds; or, with ``return_below`` set so high that it fires, the rounds left re-measuring the
    one-way marginals) draws exactly the ρ the plan charged, and the first p draws are the one-way marginals at
    the split's σ (a ten-bin number finer than a yes/no column)."""
    budget = Budget(1.0, 1.0 / 400**2)
    ds = _mixed(400, 1)
    wl = Workload(ds.domain, tuple((a, b) for a in range(6) for b in range(a + 1, 6)))
    params = AdaptiveProjection.validate_params(
        {"rounds": 6, "one_way_fraction": 0.5, "one_way_split": "cells", "return_below": return_below,
         "scip": "off", "max_iterations": 30, "round_iterations": 5}
    )  # fmt: skip
    plan = AdaptiveProjection().plan(ds.n, wl, budget, params)
    noise = _Counting(2)
    res = AdaptiveProjection().run(ds, wl, budget, params, RunContext(noise=noise))
    assert noise.rho == pytest.approx(zcdp_rho(budget), rel=1e-9) == pytest.approx(res.spends[0].rho, rel=1e-9)
    expected = one_way_sigmas(plan["rho_one_way"], ds.domain.shape, "cells")
    assert noise.sigmas[:6] == pytest.approx(expected, rel=1e-12)
    assert res.public["sigma_one_way_counts"] == pytest.approx(expected, rel=1e-12)  # the card says what was drawn
    assert noise.sigmas[0] < noise.sigmas[3]  # the number (12 cells with its missing code) measured finer
    assert ("rounds_returned_to_one_way" in res.public) == (return_below is not None)
