"""Direct Gaussian / Laplace measurement baselines: calibration, noise scale, projection."""

import math

import numpy as np
import pytest
from scipy import stats

from dpcore.errors import BudgetError
from dpcore.mechanisms.base import Budget, RunContext
from dpcore.mechanisms.direct import DirectGaussian, DirectLaplace, integer_counts, project_marginals, project_simplex
from dpcore.privacy import zcdp_to_eps_cks
from dpcore.privacy.samplers import Randomness
from dpcore.release import run_release
from dpcore.workload import Workload

from .conftest import planted_dataset


def _setup(n=1000):
    ds = planted_dataset(n=n)
    return ds, Workload.all_kway(ds.domain, 2)


def test_gaussian_calibration_meets_the_budget_exactly():
    ds, wl = _setup()
    plan = DirectGaussian().plan(ds.n, wl, Budget(1.0, 1e-6), {"postprocess": True})
    # ρ converts back to ε = 1 (CKS), and σ = sqrt(2|W|)/sqrt(2ρ) on counts
    assert zcdp_to_eps_cks(plan["rho"], 1e-6) == pytest.approx(1.0, rel=1e-8)
    assert plan["sigma_counts"] == pytest.approx(math.sqrt(2 * wl.n_marginals) / math.sqrt(2 * plan["rho"]))
    assert plan["sigma_answers"] == pytest.approx(plan["sigma_counts"] / ds.n)


def test_gaussian_noise_has_the_planned_std():
    ds, wl = _setup()
    budget = Budget(1.0, 1e-6)
    mech = DirectGaussian()
    res = mech.run(ds, wl, budget, {"postprocess": False}, RunContext.seeded(0))
    noise = res.answers - wl.answers(ds.codes)
    # the discrete Gaussian's variance equals σ² to within 1e-10 relative for σ ≥ 1 [CKS20]
    sigma = mech.plan(ds.n, wl, budget, {})["sigma_answers"]
    k = noise.size
    # (k-1) s²/σ² ~ χ²(k-1): two-sided 99.9% interval
    stat = np.sum((noise - noise.mean()) ** 2) / sigma**2
    lo, hi = stats.chi2.ppf([0.0005, 0.9995], k - 1)
    assert lo < stat < hi
    assert (
        res.epsilon_spent == 1.0
        and res.delta_spent == 1e-6
        and res.spends[0].rho == pytest.approx(mech.plan(ds.n, wl, budget, {})["rho"])
    )


def _count_noise(res, wl, ds):
    return (res.answers - wl.answers(ds.codes)) * ds.n


@pytest.mark.parametrize("mech", [DirectGaussian, DirectLaplace])
@pytest.mark.parametrize("ctx", [lambda: RunContext.seeded(4), lambda: RunContext(noise=Randomness())])
def test_released_noise_is_integer_in_count_units(mech, ctx):
    """[CKS20]: exact discrete noise on integer counts, seeded (demo) and cryptographic alike."""
    ds, wl = _setup(n=700)
    res = mech().run(ds, wl, Budget(1.0, 1e-6), {"postprocess": False}, ctx())
    noise = _count_noise(res, wl, ds)
    assert np.allclose(noise, np.rint(noise), atol=1e-6)
    assert np.count_nonzero(np.rint(noise)) > noise.size // 2  # noise was added, not rounded away


def test_integer_counts_refuses_answers_that_are_not_counts():
    assert integer_counts(np.array([0.25, 0.75]), 4).tolist() == [1, 3]
    with pytest.raises(ValueError):
        integer_counts(np.array([0.3, 0.7]), 4)


def test_gaussian_needs_delta():
    ds, wl = _setup()
    with pytest.raises(BudgetError, match="δ > 0"):
        DirectGaussian().plan(ds.n, wl, Budget(1.0, 0.0), {})


def test_laplace_noise_has_the_planned_scale():
    ds, wl = _setup()
    budget = Budget(0.5, 0.0)
    res = DirectLaplace().run(ds, wl, budget, {"postprocess": False}, RunContext.seeded(1))
    noise = res.answers - wl.answers(ds.codes)
    b = 2 * wl.n_marginals / 0.5 / ds.n  # L1 sensitivity 2|W| on counts
    # mean |noise| estimates b; its standard error is b/sqrt(k)
    k = noise.size
    assert abs(np.mean(np.abs(noise)) - b) < 4 * b / math.sqrt(k)
    assert res.delta_spent == 0.0 and res.epsilon_spent == 0.5


def test_project_simplex_kkt():
    rng = np.random.default_rng(2)
    for _ in range(20):
        v = rng.normal(0, 1, size=int(rng.integers(1, 40)))
        p = project_simplex(v)
        assert p.min() >= 0 and p.sum() == pytest.approx(1.0)
        # KKT: v - p is the same constant θ on the support and ≤ θ off it
        support = p > 0
        theta = (v - p)[support]
        assert np.allclose(theta, theta[0])
        assert np.all(v[~support] <= theta[0] + 1e-12)
    q = np.array([0.2, 0.3, 0.5])
    assert np.allclose(project_simplex(q), q)


def test_projection_never_increases_l2_error_per_marginal():
    ds, wl = _setup(400)
    true = wl.answers(ds.codes)
    noisy = true + np.random.default_rng(3).normal(0, 0.05, size=true.shape)
    proj = project_marginals(wl, noisy)
    for t, a, b in zip(wl.split(true), wl.split(noisy), wl.split(proj)):
        assert np.linalg.norm(b - t) <= np.linalg.norm(a - t) + 1e-12
        assert b.sum() == pytest.approx(1.0)


def test_release_of_answers_only():
    ds, wl = _setup()
    for mech in ("gaussian", "laplace"):
        rel, internal = run_release(ds, wl, mech, 1.0, None, seed=0, ledger=None)
        assert rel.rows is None and rel.answers.shape == (wl.n_queries,)
        assert internal.report["max_error"] < internal.report["baselines"]["uniform"]["max_error"]
        assert b"answer" in rel.synthetic_csv()
