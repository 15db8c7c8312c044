"""RSPM, Gaussian RSPM, OPDisc, PRSMA and DP logistic regression: noise scales, separators, failure paths."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpcore.errors import BudgetError
from dpcore.learning import dplr as dplr_mod
from dpcore.learning import opdisc as opdisc_mod
from dpcore.learning import prsma as prsma_mod
from dpcore.learning import rspm as rspm_mod
from dpcore.oracles import learners as L
from dpcore.privacy.samplers import Randomness


def _h_universe(k, pts):
    """The halfspace class on the real universe: 1[<k, x> >= 1/2] (= 1[<k,x> >= 1] on binary x)."""
    return (pts @ np.asarray(k, float) >= 0.5).astype(int)


# ------------------------------------------------------------------ separators
@pytest.mark.parametrize("d,bound", [(2, 1), (2, 2), (3, 1)])
def test_halfspace_separator_separates_every_pair_and_has_size_2Bd(d, bound):
    pts = rspm_mod.separator_points("halfspace", d, bound)
    assert len(pts) == rspm_mod.separator_size("halfspace", d, bound) == 2 * bound * d
    patterns = {tuple(_h_universe(k, pts)) for k in itertools.product(range(-bound, bound + 1), repeat=d)}
    assert len(patterns) == (2 * bound + 1) ** d  # injective: distinct hypotheses disagree on some point


@pytest.mark.parametrize("kind,fn", [("conjunction", L.conjunction_values), ("disjunction", L.disjunction_values)])
def test_subset_separators_separate(kind, fn):
    d = 4
    pts = rspm_mod.separator_points(kind, d).astype(int)
    patterns = {tuple(fn(np.array(S), pts)) for S in itertools.product((0, 1), repeat=d)}
    assert len(patterns) == 2**d


@pytest.mark.parametrize("kind", ["halfspace", "conjunction", "disjunction"])
def test_separator_terms_equal_weighted_loss_on_separator_points(kind):
    rng = np.random.default_rng(1)
    d, bound = 3, 2
    m = rspm_mod.separator_size(kind, d, bound)
    eta = rng.laplace(0, 3.0, size=m)
    pts = rspm_mod.separator_points(kind, d, bound)
    terms = rspm_mod.separator_terms(kind, eta, d, bound)
    params = (
        itertools.product(range(-bound, bound + 1), repeat=d)
        if kind == "halfspace"
        else itertools.product((0, 1), repeat=d)
    )
    for p in params:
        p = np.array(p)
        if kind == "halfspace":
            h = _h_universe(p, pts)
            via_terms = terms["constant"] + terms["value_costs"][np.arange(d), p + bound].sum()
        else:
            h = (L.conjunction_values if kind == "conjunction" else L.disjunction_values)(p, pts.astype(int))
            via_terms = terms["constant"] + terms["linear"] @ p
        assert via_terms == pytest.approx(float(eta @ (1 - h)))  # label 1 on every separator point


# ------------------------------------------------------------------ noise scales
def test_rspm_laplace_scale_and_draws():
    assert rspm_mod.laplace_scale(16, 0.5) == 64.0
    source = Randomness(0)
    draws = np.concatenate([rspm_mod.draw_noise(source, 16, 0.5) for _ in range(2000)])  # 32,000 draws
    # Lap(b): E|X| = b; the sample mean of |X| has std b/sqrt(N): allow 5 standard errors.
    assert abs(np.abs(draws).mean() - 64.0) < 5 * 64.0 / math.sqrt(draws.size)


@pytest.mark.parametrize("noise, dist", [("laplace", "laplace"), ("gaussian", "norm")])
def test_rspm_noise_from_the_cryptographic_source_has_the_stated_law(noise, dist):
    """OpenDP's vetted samplers (unseedable: p-value threshold 1e-6)."""
    from scipy import stats

    m, eps, delta = 40, 0.5, 1e-6
    draws = np.concatenate([rspm_mod.draw_noise(Randomness(), m, eps, noise, delta) for _ in range(50)])
    scale = rspm_mod.laplace_scale(m, eps) if noise == "laplace" else rspm_mod.gaussian_sigma(m, eps, delta)
    assert stats.kstest(draws, getattr(stats, dist)(scale=scale).cdf).pvalue > 1e-6
    assert stats.kstest(draws, getattr(stats, dist)(scale=1.5 * scale).cdf).pvalue < 1e-6


def test_gaussian_rspm_sigma_closed_form_and_tail_bound():
    m, eps, delta = 10, 1.0, 0.01
    A = m * math.sqrt(2 / math.pi) + math.sqrt(2 * m * math.log(1 / delta))
    sigma = rspm_mod.gaussian_sigma(m, eps, delta)
    assert sigma == pytest.approx((A + math.sqrt(A * A + 2 * m * eps)) / eps)
    # the calibration makes the worst-case coupling loss exactly eps at ||eta||_1 = sigma A
    assert (4 * sigma * A + 4 * m) / (2 * sigma**2) == pytest.approx(eps)
    # and ||Z||_1 > A has probability at most delta (checked by simulation: binomial tolerance)
    rng = np.random.default_rng(5)
    Z = np.abs(rng.normal(size=(40_000, m))).sum(axis=1)
    p_hat = float(np.mean(Z > A))
    assert p_hat <= delta + 4 * math.sqrt(delta * (1 - delta) / 40_000)
    with pytest.raises(BudgetError):
        rspm_mod.gaussian_sigma(m, eps, 0.0)


def test_opdisc_sigma_closed_form():
    # sigma = 7 G D^2 sqrt(ln(1/delta)) / (tau eps), G = 1/tau
    assert opdisc_mod.opdisc_sigma(1.0, math.exp(-4), 0.5, 2.0) == pytest.approx(7 * 2 * 4 * 2 / 0.5)
    assert opdisc_mod.opdisc_sigma(2.0, 1e-6, 1.0, 3.0) == pytest.approx(7 * 9 * math.sqrt(math.log(1e6)) / 2)
    with pytest.raises(BudgetError):
        opdisc_mod.opdisc_sigma(1.0, 0.0, 1.0, 1.0)


def test_opdisc_coupling_sigma_and_the_max_rule():
    eps, delta, tau, D, dim = 1.0, 1e-6, 0.5, 2.0, 9
    c = 4 * (1 / tau) * D**2 / tau
    A = 3.0 + math.sqrt(2 * math.log(1e6))
    sigma = opdisc_mod.opdisc_sigma_coupling(eps, delta, tau, D, dim)
    assert sigma == pytest.approx(c * (A + math.sqrt(A * A + 2 * eps)) / (2 * eps))
    # at ||eta|| = sigma A the coupling's privacy loss (2 c ||eta|| + c^2) / (2 sigma^2) is exactly eps
    assert (2 * c * sigma * A + c * c) / (2 * sigma**2) == pytest.approx(eps)
    assert opdisc_mod.noise_sigma(eps, delta, tau, D, dim) == max(sigma, opdisc_mod.opdisc_sigma(eps, delta, tau, D))
    # ||Z||_2 > sqrt(dim) + sqrt(2 ln(1/delta')) has probability <= delta' (simulated at delta' = 0.01)
    rng = np.random.default_rng(9)
    norms = np.linalg.norm(rng.normal(size=(40_000, dim)), axis=1)
    p_hat = float(np.mean(norms > 3.0 + math.sqrt(2 * math.log(100))))
    assert p_hat <= 0.01 + 4 * math.sqrt(0.01 * 0.99 / 40_000)


def test_opdisc_draws_noise_at_the_stated_sigma():
    X, y = _tiny(6, n=40)
    model = opdisc_mod.opdisc(X, y, 1.0, 1e-4, Randomness(0), bound=1, tau=1.0, D=1.5)
    pub = model.public
    assert pub["sigma"] == pytest.approx(max(pub["sigma_paper"], pub["sigma_coupling"]))
    assert pub["sigma_paper"] == pytest.approx(7 * 1.5**2 * math.sqrt(math.log(1e4)))
    # the same seed reproduces the noise: eta = N(0, sigma^2) of dimension d + 1 = 4
    eta = Randomness(0).gaussian(pub["sigma"], 4)
    assert opdisc_mod.solve(X, y, eta, 1, 1.0, 1.5).params.tolist() == model.params.tolist()


# ------------------------------------------------------------------ one run, exact
def _tiny(seed=0, n=60, d=3):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n, d))
    X[:, 0] = 1
    y = ((X[:, 1] + X[:, 2] + (rng.random(n) < 0.2)) >= 2).astype(int)
    return X, y


def test_rspm_solution_is_the_minimiser_of_the_augmented_weighted_dataset():
    X, y = _tiny()
    d, bound = 3, 1
    m = rspm_mod.separator_size("halfspace", d, bound)
    eta = rspm_mod.draw_noise(Randomness(3), m, 2.0)
    res = rspm_mod.solve(X, y, eta, "halfspace", bound)
    pts = rspm_mod.separator_points("halfspace", d, bound)

    def augmented(k):
        return float(np.sum(L.halfspace_values(k, X) != y) + eta @ (1 - _h_universe(k, pts)))

    best = min(augmented(np.array(k)) for k in itertools.product(range(-1, 2), repeat=d))
    assert res.certified and augmented(res.params) == pytest.approx(best)


def test_opdisc_solution_is_the_minimiser_of_the_projected_objective():
    X, y = _tiny(1)
    tau, D, bound = 0.5, 1.0, 2
    for seed in range(4):  # covers both signs of the last noise coordinate
        eta = np.random.default_rng(seed).normal(0, 8.0, size=4)

        def perturbed(k, eta=eta):
            w = tau * np.asarray(k, float)
            if w @ w > D * D + 1e-9:
                return math.inf
            pi = np.append(w, D * math.sqrt(max(0.0, 1 - (w @ w) / D**2))) / D
            return float(np.sum(L.halfspace_values(k, X) != y) - eta @ pi)

        best = min(perturbed(k) for k in itertools.product(range(-bound, bound + 1), repeat=3))
        res = opdisc_mod.solve(X, y, eta, bound, tau, D)
        assert res.certified
        assert perturbed(res.params) == pytest.approx(best, abs=1e-5)


# ------------------------------------------------------------------ PRSMA
def test_prsma_parameters_follow_theorem_8():
    n, eps, delta = 5000, 31.0, 0.5
    p = prsma_mod.plan(n, eps, delta, max_calls=10**6)
    es, ds = eps / 62, delta / 11
    K = math.ceil((1 / es) * (1 + math.log(2 / ds)))
    assert (p.eps_star, p.delta_star, p.parts) == (pytest.approx(es), pytest.approx(ds), K)
    assert p.repetitions == math.ceil(math.log(K / ds) / ds)
    assert p.eps_prime == pytest.approx(1 / math.sqrt(8 * (n / K) * math.log(2 * K / ds)))
    assert p.threshold == pytest.approx((1 / es) * (1 + math.log(1 / ds)))
    assert p.part_size == n // K and p.oracle_calls == K * p.repetitions


def test_prsma_refuses_infeasible_call_counts_and_suggests_delta():
    with pytest.raises(BudgetError) as err:
        prsma_mod.plan(15_000, 4.0, 1e-5, max_calls=20_000)
    msg = str(err.value)
    assert "oracle calls" in msg and "δ ≥" in msg
    suggested = prsma_mod.suggest_delta(15_000, 4.0, 20_000)
    assert suggested is not None and prsma_mod.plan(15_000, 4.0, suggested, 20_000).oracle_calls <= 20_000
    # at eps = 1 even delta -> 1 needs > 20,000 calls: the message says no delta fits
    with pytest.raises(BudgetError, match="no δ < 1 fits"):
        prsma_mod.plan(15_000, 1.0, 1e-5, max_calls=20_000)
    with pytest.raises(BudgetError, match="ε ≤ 31"):
        prsma_mod.plan(15_000, 40.0, 0.5)


class _Fail:
    """A deliberately failing certifiable oracle (failure-path test of the wrapper, not a solver test)."""

    def __init__(self, fail_when):
        self.fail_when = fail_when

    def __call__(self, X, y, eta, kind, bound, norm_bound, time_limit):
        if self.fail_when(X):
            return L.LearnerResult(np.full(X.shape[1], 99), "timelimit", math.inf, -math.inf, 0.0, False)
        return L.LearnerResult(np.zeros(X.shape[1], dtype=int), "optimal", 0.0, 0.0, 0.0, True)


def test_prsma_with_an_always_failing_oracle_outputs_bottom():
    X, y = _tiny(2, n=400)
    model, info = prsma_mod.prsma(
        X, y, 31.0, 0.5, Randomness(0), bound=1, solve_fn=_Fail(lambda X: True), max_calls=10**6
    )
    assert model is None and info["parts_passed"] == 0 and not info["passed_test"]


def test_prsma_never_outputs_a_failed_run():
    """Two planted rows make the (at most two) parts holding them fail every run.  With K = 10 parts and the
    test threshold 8.2 (Thm 8 at ε* = 1/2, δ* = 1/22), at least 8 passing parts clear it when the Laplace(2)
    count noise exceeds 0.2: probability ≈ 0.45 a seed, so 8 seeds all giving ⊥ has probability < 1%."""
    X, y = _tiny(3, n=400)
    planted = 2
    Xm = np.column_stack([X, np.arange(len(X))])  # an id column lets the fake oracle see which rows it got
    outputs = []
    for seed in range(8):
        model, info = prsma_mod.prsma(
            Xm,
            y,
            31.0,
            0.5,
            Randomness(seed),
            bound=1,
            solve_fn=_Fail(lambda Xp: bool(np.isin(Xp[:, -1], np.arange(planted)).any())),
            max_calls=10**6,
        )
        assert 1 <= info["failed_parts"] <= planted
        if model is not None:
            outputs.append(model.params)
            assert not np.any(model.params == 99)
    assert outputs, "with most parts passing, some runs should clear the Laplace test"


def test_prsma_end_to_end_with_scip_on_a_tiny_instance():
    X, y = _tiny(4, n=300)
    model, info = prsma_mod.prsma(X, y, 31.0, 0.9, Randomness(1), bound=1, max_calls=2000)
    assert info["plan"]["oracle_calls"] <= 2000
    assert set(info["statuses"]) == {"optimal"}
    assert model is None or model.kind == "halfspace"


# ------------------------------------------------------------------ DP logistic regression
def test_objective_perturbation_parameters():
    eps_p, Delta = dplr_mod.perturbation_parameters(1.0, 1000, 0.01)
    assert Delta == 0 and eps_p == pytest.approx(1 - math.log(1 + 0.5 / 10 + 0.0625 / 100))
    eps_p, Delta = dplr_mod.perturbation_parameters(0.01, 100, 1e-4)  # small n Lambda: regulariser added
    assert eps_p == pytest.approx(0.005) and Delta == pytest.approx(0.25 / (100 * math.expm1(0.0025)) - 1e-4)


def test_objective_perturbation_noise_norm_is_gamma():
    source = Randomness(2)
    d, eps_p = 5, 0.8
    norms = np.array([np.linalg.norm(dplr_mod.draw_perturbation(source, d, eps_p)) for _ in range(20_000)])
    mean, sd = d * 2 / eps_p, math.sqrt(d) * 2 / eps_p  # Gamma(d, 2/eps')
    assert abs(norms.mean() - mean) < 5 * sd / math.sqrt(len(norms))


def test_objective_perturbation_noise_from_the_cryptographic_source():
    """||b|| ~ Gamma(d, 2/ε') and b/||b|| uniform on the sphere (its mean is 0 with std 1/sqrt(dN) a coordinate)."""
    from scipy import stats

    d, eps_p, N = 4, 1.3, 4000
    b = np.array([dplr_mod.draw_perturbation(Randomness(), d, eps_p) for _ in range(N)])
    norms = np.linalg.norm(b, axis=1)
    assert stats.kstest(norms, stats.gamma(d, scale=2 / eps_p).cdf).pvalue > 1e-6
    assert np.all(np.abs((b / norms[:, None]).mean(axis=0)) < 5 / math.sqrt(d * N))


def test_dplr_learns_the_signal_at_large_epsilon():
    X, y = _tiny(5, n=2000)
    model = dplr_mod.dplr(X, y, 50.0, Randomness(0))
    assert model.accuracy(X, y) > 0.75  # the label is 1[x1 + x2 + noise >= 2]: ~80-90% learnable
