"""The projection's linear-minimisation oracle, cross-checked by brute force on tiny domains."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpcore.errors import OracleError
from dpcore.oracles.linear_min import CoordinateDescent, brute_force_min, scip_certify, sparse_relaxation
from dpcore.workload import Workload

from .conftest import tiny_domain

SHAPE = (3, 2, 4, 3, 2)


def _workload(k=2, shape=SHAPE):
    return Workload.all_kway(tiny_domain(shape), k)


def _all_records(shape=SHAPE):
    return np.array(list(itertools.product(*[range(s) for s in shape])), dtype=np.int64)


def test_values_equal_inner_product_with_record_answers():
    wl = _workload()
    rng = np.random.default_rng(0)
    g = rng.normal(size=wl.n_queries)
    recs = _all_records()[::7]
    cd = CoordinateDescent(wl)
    direct = np.array([g @ wl.answers(r[None, :]) for r in recs])
    assert np.allclose(cd.values(g, recs), direct, atol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_coordinate_descent_returns_a_local_minimum_never_below_the_optimum(seed):
    wl = _workload(k=3)
    rng = np.random.default_rng(seed)
    g = rng.normal(size=wl.n_queries)  # weights of both signs
    cd = CoordinateDescent(wl)
    res = cd.minimise(g, cd.random_records(rng, 4), rng)
    _, opt = brute_force_min(wl, g)
    assert res.value >= opt - 1e-12
    assert res.value == pytest.approx(cd.values(g, res.record)[0], abs=1e-12)
    # 1-opt: no single-attribute change improves the record.
    for a, size in enumerate(SHAPE):
        for v in range(size):
            alt = res.record.copy()
            alt[a] = v
            assert cd.values(g, alt)[0] >= res.value - 1e-12
    # Candidates are distinct, sorted, with exact values.
    assert len(np.unique(res.candidates, axis=0)) == len(res.candidates)
    assert np.all(np.diff(res.candidate_values) >= -1e-12)
    assert np.allclose(cd.values(g, res.candidates), res.candidate_values)


def test_many_starts_find_the_brute_force_optimum_on_a_tiny_domain():
    wl = _workload(k=2)
    cd = CoordinateDescent(wl)
    hits = 0
    for seed in range(20):
        rng = np.random.default_rng(100 + seed)
        g = rng.normal(size=wl.n_queries)
        res = cd.minimise(g, cd.random_records(rng, 32), rng)
        _, opt = brute_force_min(wl, g)
        hits += res.value <= opt + 1e-12
    # 32 starts on a 144-record domain: a local search that worked would find the optimum
    # nearly always; a broken sweep (e.g. stale cell ids) would not.
    assert hits >= 18


def test_sparse_relaxation_is_below_the_objective_everywhere_and_exact_when_complete():
    wl = _workload(k=2)
    rng = np.random.default_rng(3)
    g = rng.normal(size=wl.n_queries)
    cd = CoordinateDescent(wl)
    recs = _all_records()
    true = cd.values(g, recs)
    for cells in (1, 3, 1000):
        relaxed = sparse_relaxation(wl, g, cells).evaluate(wl, recs)
        assert np.all(relaxed <= true + 1e-12)
        if cells >= int(wl.sizes.max()):
            assert np.allclose(relaxed, true)


@pytest.mark.parametrize("cells", [2, 100])
def test_scip_certificate_brackets_the_true_minimum(cells):
    wl = _workload(k=3)
    rng = np.random.default_rng(7)
    g = rng.normal(size=wl.n_queries)
    cd = CoordinateDescent(wl)
    heuristic = cd.minimise(g, cd.random_records(rng, 2), rng)
    cert = scip_certify(cd, g, heuristic.record, cells_per_marginal=cells, time_limit=60, clock="cpu")
    rec, opt = brute_force_min(wl, g)
    assert cert.lower_bound <= opt + 1e-9
    assert cert.value >= opt - 1e-9
    assert cert.value == pytest.approx(cd.values(g, cert.record)[0])
    if cells >= int(wl.sizes.max()):  # the relaxation is exact: SCIP solves the real problem
        assert cert.status == "optimal"
        assert cert.value == pytest.approx(opt, abs=1e-6)
        assert cert.lower_bound == pytest.approx(opt, abs=1e-6)


def test_bad_start_shape_is_refused():
    wl = _workload()
    cd = CoordinateDescent(wl)
    with pytest.raises(OracleError, match="attributes"):
        cd.minimise(np.zeros(wl.n_queries), np.zeros((2, 3), dtype=int), np.random.default_rng(0))


def test_decomposable_bound_is_below_every_record_and_the_certificate_never_worse():
    from dpcore.oracles.linear_min import decomposable_bound

    wl = _workload(k=3)
    rng = np.random.default_rng(11)
    g = rng.normal(size=wl.n_queries)
    cd = CoordinateDescent(wl)
    lb = decomposable_bound(wl, g)
    assert np.all(cd.values(g, _all_records()) >= lb - 1e-12)
    cert = scip_certify(cd, g, None, cells_per_marginal=1, time_limit=30, clock="cpu")
    assert cert.lower_bound >= lb - 1e-12
