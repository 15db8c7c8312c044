"""The samplers module: distributions against closed forms and OpenDP, and what each mode promises.

Chi-square tests on seeded draws are deterministic (fixed seeds).  Draws from the
cryptographic source cannot be seeded: their tests use a p-value threshold of 1e-6,
so a correct sampler fails one in a million runs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpcore.errors import BudgetError
from dpcore.privacy.accounting import gaussian_rho
from dpcore.privacy.samplers import (
    GUARANTEE_DP,
    GUARANTEE_NONE,
    Randomness,
    discrete_gaussian_pmf,
    discrete_laplace_pmf,
)

CRYPTO_P = 1e-6  # threshold for tests of unseedable draws
SEEDED_P = 1e-3  # fixed seeds: a pass is reproducible


def chi_square_p(draws: np.ndarray, pmf) -> float:
    """p-value of a chi-square goodness-of-fit test; cells with expected count < 5 are pooled into the tails."""
    n = draws.size
    lo, hi = int(draws.min()), int(draws.max())
    support = np.arange(lo, hi + 1)
    expected = pmf(support) * n
    keep = expected >= 5
    observed = np.bincount(draws - lo, minlength=support.size)
    obs_k, exp_k = observed[keep], expected[keep]
    # pool what falls outside the well-populated cells (both tails) into one cell
    obs_tail = n - obs_k.sum()
    exp_tail = n - exp_k.sum()
    if exp_tail >= 5:
        obs_k = np.append(obs_k, obs_tail)
        exp_k = np.append(exp_k, exp_tail)
    else:
        exp_k = exp_k * (obs_k.sum() / exp_k.sum())
    return float(stats.chisquare(obs_k, exp_k).pvalue)


@pytest.mark.parametrize("sigma", [0.7, 3.3, 25.0])
def test_seeded_discrete_gaussian_matches_its_pmf(sigma):
    draws = Randomness(7).discrete_gaussian(sigma, 200_000)
    assert draws.dtype == np.int64
    assert chi_square_p(draws, lambda s: discrete_gaussian_pmf(sigma, s)) > SEEDED_P


@pytest.mark.parametrize("scale", [0.5, 4.0])
def test_seeded_discrete_laplace_matches_its_pmf(scale):
    draws = Randomness(11).discrete_laplace(scale, 200_000)
    assert chi_square_p(draws, lambda s: discrete_laplace_pmf(scale, s)) > SEEDED_P


def test_cryptographic_discrete_gaussian_is_opendps_and_matches_the_pmf():
    draws = Randomness().discrete_gaussian(2.5, 60_000)
    assert chi_square_p(draws, lambda s: discrete_gaussian_pmf(2.5, s)) > CRYPTO_P


def test_cryptographic_discrete_laplace_matches_the_pmf():
    draws = Randomness().discrete_laplace(3.0, 60_000)
    assert chi_square_p(draws, lambda s: discrete_laplace_pmf(3.0, s)) > CRYPTO_P


def test_seeded_and_cryptographic_discrete_gaussians_agree():
    """Our seeded sampler against OpenDP's: two-sample chi-square on the same cells."""
    a = Randomness(3).discrete_gaussian(4.0, 50_000)
    b = Randomness().discrete_gaussian(4.0, 50_000)
    edges = np.arange(-12, 14) - 0.5
    ca, _ = np.histogram(np.clip(a, -12, 12), edges)
    cb, _ = np.histogram(np.clip(b, -12, 12), edges)
    assert stats.chi2_contingency(np.vstack([ca, cb]))[1] > CRYPTO_P


def test_discrete_gaussian_accounting_matches_opendps_privacy_map():
    """ρ = Δ²/(2σ²) for the vector discrete Gaussian ([CKS20]; the figure OpenDP proves)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    for sigma, l2 in ((30.0, 2), (5.5, 3), (100.0, 12)):
        meas = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T="i64"), scale=sigma)
        assert meas.map(l2) == pytest.approx(gaussian_rho(sigma, l2), rel=1e-9)


def test_discrete_laplace_accounting_matches_opendps_privacy_map():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T="i64")), dp.l1_distance(T="i64"), scale=8.0)
    assert meas.map(2) == pytest.approx(2 / 8.0, rel=1e-9)


def test_huge_scales_do_not_overflow():
    draws = Randomness().discrete_gaussian(1e12, 1000)
    assert draws.dtype == np.int64 and 0.5e12 < draws.std() < 2e12


@pytest.mark.parametrize("seed", [None, 5])
def test_exponential_mechanism_distribution(seed):
    scores = np.array([0.0, 1.0, 2.0, 0.5])
    eps, sens = 2.0, 1.0
    rnd = Randomness(seed)
    n = 20_000 if seed is not None else 4_000  # each cryptographic draw is an OpenDP call
    picks = np.array([rnd.exponential_mechanism(scores, eps, sens) for _ in range(n)])
    p = np.exp(eps * scores / (2 * sens))
    p /= p.sum()
    observed = np.bincount(picks, minlength=4)
    assert stats.chisquare(observed, p * n).pvalue > (SEEDED_P if seed is not None else CRYPTO_P)


def test_candidates_added_later_keep_a_demos_other_draws_and_the_distribution():
    """Date formats added to the end of a fixed list: a demo's seed draws their Gumbel noise from a derived stream,
    so the run's stream advances as before they were added; the choice keeps the exponential mechanism's law."""
    old, new = np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 2.0, 1.5, 0.5])
    a, b = Randomness(7), Randomness(7)
    a.exponential_mechanism(old, 2.0, 1.0)
    b.exponential_mechanism(new, 2.0, 1.0, added=(3, b.derived(3)))
    assert a.uniform(size=5).tolist() == b.uniform(size=5).tolist()  # the stream after the choice is the same
    rnd, extra = Randomness(11), Randomness(11).derived(3)
    n = 20_000
    picks = np.array([rnd.exponential_mechanism(new, 2.0, 1.0, added=(3, extra)) for _ in range(n)])
    p = np.exp(2.0 * new / 2.0)
    p /= p.sum()
    assert stats.chisquare(np.bincount(picks, minlength=5), p * n).pvalue > SEEDED_P
    assert Randomness().exponential_mechanism(new, 2.0, 1.0, added=(3, Randomness().derived(3))) in range(5)


def test_exponential_mechanism_privacy_map_is_bounded_range():
    """OpenDP's Gumbel noisy max at scale 2Δ/ε is ε²/8-zCDP, the figure our accountants use."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    eps, sens = 0.3, 0.01
    meas = dp.m.make_noisy_max(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)),
        dp.linf_distance(T=float),
        dp.zero_concentrated_divergence(),
        scale=2 * sens / eps,
    )
    assert meas.map(sens) == pytest.approx(eps**2 / 8, rel=1e-9)


def test_exponential_mechanism_handles_large_score_ranges():
    scores = np.array([-1e9, 0.0, 5e8])
    assert Randomness().exponential_mechanism(scores, 1.0, 1.0) == 2


@pytest.mark.parametrize("seed, draws", [(9, 6_000), (None, 1_200)])
def test_exponential_mechanism_large_has_the_same_distribution(seed, draws):
    """Gumbel max-stability: the candidates within ``gap`` noise scales of the best (equal scores grouped) + one
    merged log-sum-exp candidate, repeated within the merged group when it wins, is the exponential mechanism.
    A gap of 0.3 scales on 12 scores spread over 1.5 scales makes the merged group win most draws, so the
    repetition is what is tested; every score appears twice, so is the uniform choice within a group."""
    scores = np.repeat(np.linspace(0.0, 1.5, 6), 2)[np.random.default_rng(1).permutation(12)]
    eps, sens = 2.0, 1.0  # noise scale 2Δ/ε = 1
    rnd = Randomness(seed)
    picks = np.array([rnd.exponential_mechanism_large(scores, eps, sens, gap=0.3) for _ in range(draws)])
    p = np.exp(eps * scores / (2 * sens))
    p /= p.sum()
    observed = np.bincount(picks, minlength=scores.size)
    assert stats.chisquare(observed, p * draws).pvalue > (SEEDED_P if seed is not None else CRYPTO_P)
    # and the test has power: the draws are far from uniform
    assert stats.chisquare(observed, np.full(12, draws / 12)).pvalue < 1e-6


def test_exponential_mechanism_large_is_fast_on_many_far_candidates():
    """FEM's cases: ~10^6 scores nearly all 100+ noise scales below the best, a flat bulk of 10^6 scores a few
    scales below a short head, and FEM's own shape -- a bulk of 10^6 *equal* scores 15 scales below a few
    leaders (OpenDP alone: 9 s a call on it)."""
    import time

    rng = np.random.default_rng(0)
    far = -np.abs(rng.normal(0.0, 0.1, 1_000_000))
    far[123_456] = 0.5
    flat = rng.uniform(0.0, 0.01, 1_000_000)  # noise scale 0.004: the bulk is within 2.5 scales
    flat[:5] = 0.02
    t0 = time.perf_counter()
    picks = [Randomness().exponential_mechanism_large(far, 0.05, 1e-4) for _ in range(3)]
    assert picks == [123_456] * 3  # the leader is 125 noise scales (2Δ/ε = 0.004) ahead
    flat_picks = [Randomness().exponential_mechanism_large(flat, 0.05, 1e-4) for _ in range(3)]
    assert all(0 <= p < flat.size for p in flat_picks)  # the bulk holds most of the mass: any index may win
    bulk = np.zeros(1_000_000)
    bulk[:3] = 15 * 0.004  # three leaders 15 noise scales ahead of 10^6 equal scores: the bulk wins ~13%
    bulk_picks = [Randomness().exponential_mechanism_large(bulk, 0.05, 1e-4) for _ in range(8)]
    assert all(0 <= p < bulk.size for p in bulk_picks)
    assert time.perf_counter() - t0 < 60  # seconds for 14 calls even on a loaded 2-core machine


@pytest.mark.parametrize("seed", [None, 2])
def test_uniform_integers_and_permutations(seed):
    rnd = Randomness(seed)
    ints = rnd.integers(7, 70_000)
    assert ints.min() == 0 and ints.max() == 6
    assert stats.chisquare(np.bincount(ints, minlength=7)).pvalue > CRYPTO_P
    u = rnd.uniform(50_000)
    assert 0 <= u.min() and u.max() < 1
    assert stats.kstest(u, "uniform").pvalue > CRYPTO_P
    perm = rnd.permutation(1000)
    assert sorted(perm.tolist()) == list(range(1000))
    assert len(set(rnd.choice(100, 50, replace=False).tolist())) == 50


@pytest.mark.parametrize("seed", [None, 4])
def test_bulk_perturbations_have_their_distributions(seed):
    rnd = Randomness(seed)
    threshold = CRYPTO_P if seed is None else SEEDED_P
    assert stats.kstest(rnd.bulk_laplace(2.0, 40_000), stats.laplace(scale=2.0).cdf).pvalue > threshold
    assert stats.kstest(rnd.bulk_gaussian(3.0, 40_000), stats.norm(scale=3.0).cdf).pvalue > threshold
    assert stats.kstest(rnd.exponential(1.5, 40_000), stats.expon(scale=1.5).cdf).pvalue > threshold
    gam = np.array([rnd.gamma_integer_shape(3, 2.0) for _ in range(5_000)])
    assert stats.kstest(gam, stats.gamma(3, scale=2.0).cdf).pvalue > threshold
    v = rnd.unit_vector(5)
    assert math.isclose(np.linalg.norm(v), 1.0)


def test_vetted_float_samplers():
    rnd = Randomness()
    lap = rnd.laplace(1.0, 4000)
    gau = rnd.gaussian(2.0, 4000)
    assert stats.kstest(lap, stats.laplace(scale=1.0).cdf).pvalue > CRYPTO_P
    assert stats.kstest(gau, stats.norm(scale=2.0).cdf).pvalue > CRYPTO_P
    assert isinstance(rnd.laplace(1.0), float)


def test_gibbs_sampling_distribution():
    lw = np.log(np.array([1.0, 2.0, 3.0, 4.0]))
    draws = Randomness().sample_log_weights(lw, 40_000)
    assert stats.chisquare(np.bincount(draws, minlength=4), np.array([1, 2, 3, 4]) / 10 * 40_000).pvalue > CRYPTO_P


@pytest.mark.parametrize("seed", [7, None])
def test_gibbs_sampling_is_stable_at_huge_log_weights(seed):
    """exp() of these log-weights overflows; the sampler normalises in log space (DualQuery after many rounds)."""
    logw = np.array([1000.0, 1001.0, 999.0, -1e6])
    p = np.exp(logw - logw.max())
    p /= p.sum()
    N = 30_000
    counts = np.bincount(Randomness(seed).sample_log_weights(logw, N), minlength=4)
    assert counts[3] == 0
    pval = stats.chisquare(counts[:3], N * p[:3] / p[:3].sum()).pvalue
    assert pval > (SEEDED_P if seed is not None else CRYPTO_P)


def test_modes_and_what_they_promise():
    assert Randomness().guarantee == GUARANTEE_DP == "differential privacy"
    assert Randomness(0).guarantee == GUARANTEE_NONE == "none"
    a, b = Randomness(9), Randomness(9)
    assert np.array_equal(a.discrete_gaussian(5.0, 100), b.discrete_gaussian(5.0, 100))
    c, d = Randomness(), Randomness()
    assert not np.array_equal(c.discrete_gaussian(50.0, 100), d.discrete_gaussian(50.0, 100))
    with pytest.raises(BudgetError):
        Randomness(-1)


def test_cancel_check_runs_between_chunks():
    calls = []

    def check():
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("cancelled")

    with pytest.raises(RuntimeError):
        Randomness(cancel_check=check).discrete_gaussian(3.0, 200_000)
    assert len(calls) == 2
