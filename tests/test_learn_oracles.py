"""The learning oracles (real SCIP) against brute force on tiny instances."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.errors import OracleError
from dpcore.oracles import learners as L


def _instance(seed, n=40, d=4):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n, d))
    w = rng.normal(size=n)
    return X, w, rng


@pytest.mark.parametrize("seed", range(6))
def test_conjunction_oracle_matches_brute_force(seed):
    X, w, rng = _instance(seed)
    linear = rng.laplace(0, 2.0, size=X.shape[1])
    res = L.conjunction_oracle(X, w, linear, constant=1.5)
    _, best = L.brute_force_subsets(X, w, L.conjunction_values, linear, constant=1.5)
    assert res.certified and res.status == "optimal"
    got = 1.5 + w @ L.conjunction_values(res.params, X) + linear @ res.params
    assert got == pytest.approx(best, abs=1e-6)
    assert res.objective == pytest.approx(best, abs=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_disjunction_oracle_matches_brute_force(seed):
    X, w, rng = _instance(seed + 10)
    linear = rng.laplace(0, 2.0, size=X.shape[1])
    res = L.disjunction_oracle(X, w, linear)
    _, best = L.brute_force_subsets(X, w, L.disjunction_values, linear)
    got = w @ L.disjunction_values(res.params, X) + linear @ res.params
    assert res.certified
    assert got == pytest.approx(best, abs=1e-6)


@pytest.mark.parametrize("seed", range(5))
def test_halfspace_oracle_matches_brute_force(seed):
    X, w, rng = _instance(seed + 20, n=50, d=3)
    X[:, 0] = 1  # bias feature
    costs = rng.laplace(0, 1.0, size=(3, 5))
    res = L.halfspace_oracle(X, w, bound=2, norm_bound=3.0, value_costs=costs)
    k, best = L.brute_force_halfspace(X, w, bound=2, norm_bound=3.0, value_costs=costs)
    assert res.certified
    assert float(res.params @ res.params) <= 9 + 1e-9
    got = L.halfspace_objective(res.params, X, w, bound=2, value_costs=costs)
    assert got == pytest.approx(best, abs=1e-6)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_halfspace_oracle_with_projection_term_matches_brute_force(sign):
    X, w, rng = _instance(7, n=40, d=3)
    X[:, 0] = 1
    lin = rng.normal(0, 2.0, size=3)
    terms = dict(linear=lin, sphere_coef=sign * 3.0, sphere_radius=3.0)
    res = L.halfspace_oracle(X, w, bound=2, norm_bound=3.0, **terms)
    _, best = L.brute_force_halfspace(X, w, bound=2, norm_bound=3.0, **terms)
    assert res.certified
    got = L.halfspace_objective(res.params, X, w, bound=2, **terms)
    assert got == pytest.approx(best, abs=1e-5)


def test_labelled_loss_reduction_counts_mistakes():
    X, _, rng = _instance(3, n=30, d=3)
    y = rng.integers(0, 2, size=30)
    v, c = L.loss_weights(y)
    k = np.array([1, -1, 0])
    mistakes = int(np.sum(L.halfspace_values(k, X) != y))
    assert c + v @ L.halfspace_values(k, X) == mistakes


def test_oracles_refuse_non_binary_features_and_huge_models():
    with pytest.raises(OracleError, match="binary"):
        L.conjunction_oracle(np.array([[0, 2]]), np.ones(1))
    with pytest.raises(OracleError, match="point binaries"):
        L.check_mip_size(L.MAX_MIP_POINTS + 1, 10, "halfspace", 2)


def test_time_limit_failure_is_not_certified():
    # A 0/1-loss halfspace MIP on 400 random points cannot be proved optimal in 1 ms.
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(400, 12))
    w = rng.normal(size=400)
    res = L.halfspace_oracle(X, w, bound=3, time_limit=0.001)
    assert not res.certified and res.status != "optimal"
