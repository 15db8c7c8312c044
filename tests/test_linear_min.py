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


# ------------------------------------------------------------------ marginals measured with grouped values
def _grouped_workload():
    """All 2-way marginals of SHAPE, the 4-value attribute measured in 2 groups in some of them and a
    3-value one in 2 groups elsewhere, plus full-resolution one-way marginals of both."""
    from dpcore.mechanisms.projection import MeasuredMarginals

    dom = tiny_domain(SHAPE)
    pairs = [m for m in Workload.all_kway(dom, 2).marginals]
    g4, g3 = np.array([0, 0, 1, 1]), np.array([0, 1, 1])
    maps = []
    for m in pairs:
        maps.append(tuple(g4 if a == 2 and 0 in m else g3 if a == 3 and 4 in m else np.arange(SHAPE[a]) for a in m))
    return MeasuredMarginals(dom, pairs + [(2,), (3,)], maps + [(np.arange(4),), (np.arange(3),)])


def test_grouped_marginals_number_cells_as_their_counts_do():
    wl = _grouped_workload()
    recs = _all_records()
    cd = CoordinateDescent(wl)
    ids = cd.cell_ids(recs)
    for i in range(0, len(recs), 11):
        one = wl.counts(recs[i : i + 1])  # the record's own cells, from the counting code path
        assert sorted(np.nonzero(one)[0]) == sorted(ids[i])
    assert ids.max() < wl.n_queries and wl.n_queries == int(wl.sizes.sum())


@pytest.mark.parametrize("seed", range(3))
def test_coordinate_descent_on_grouped_marginals_is_a_local_minimum_above_the_optimum(seed):
    wl = _grouped_workload()
    rng = np.random.default_rng(seed)
    g = rng.normal(size=wl.n_queries)
    cd = CoordinateDescent(wl)
    res = cd.minimise(g, cd.random_records(rng, 8), rng)
    rec, opt = brute_force_min(wl, g)
    assert res.value >= opt - 1e-12
    assert res.value == pytest.approx(float(g[cd.cell_ids(res.record)].sum()), abs=1e-12)
    for a, size in enumerate(SHAPE):
        for v in range(size):
            alt = res.record.copy()
            alt[a] = v
            assert cd.values(g, alt)[0] >= res.value - 1e-12


@pytest.mark.parametrize("cells", [1, 100])
def test_scip_certificate_brackets_the_true_minimum_on_grouped_marginals(cells):
    wl = _grouped_workload()
    rng = np.random.default_rng(5)
    g = rng.normal(size=wl.n_queries)
    cd = CoordinateDescent(wl)
    relaxed = sparse_relaxation(wl, g, cells).evaluate(wl, _all_records())
    assert np.all(relaxed <= cd.values(g, _all_records()) + 1e-12)
    cert = scip_certify(
        cd,
        g,
        cd.minimise(g, cd.random_records(rng, 2), rng).record,
        cells_per_marginal=cells,
        time_limit=60,
        clock="cpu",
    )
    _, opt = brute_force_min(wl, g)
    assert cert.lower_bound <= opt + 1e-9 <= cert.value + 2e-9
    if cells >= int(wl.sizes.max()):
        assert cert.status == "optimal"
        assert cert.value == pytest.approx(opt, abs=1e-6) and cert.lower_bound == pytest.approx(opt, abs=1e-6)
