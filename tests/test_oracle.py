"""The SCIP best-response oracle against brute force on tiny domains (real SCIP solves)."""

import numpy as np
import pytest

from dpcore.errors import OracleError
from dpcore.oracles.best_response import (
    ClauseSet,
    OracleStats,
    best_response,
    brute_force,
    clauses_from_queries,
    local_search_record,
    objective_value,
)
from dpcore.workload import Workload

from .conftest import tiny_domain

SHAPE = (3, 2, 4, 3)


def random_clauses(rng, shape, m, signed=False, integer=True) -> ClauseSet:
    attrs, values = [], []
    for _ in range(m):
        k = int(rng.integers(1, 4))
        a = tuple(sorted(rng.choice(len(shape), size=k, replace=False).tolist()))
        attrs.append(a)
        values.append(tuple(int(rng.integers(0, shape[i])) for i in a))
    w = rng.integers(1, 6, size=m).astype(float) if integer else rng.uniform(0.1, 3.0, size=m)
    if signed:
        w *= rng.choice([-1.0, 1.0], size=m)
    return ClauseSet(attrs, values, rng.random(m) < 0.5, w)


@pytest.mark.parametrize("formulation", ["disaggregated", "aggregate"])
@pytest.mark.parametrize("with_linear", [False, True])
def test_scip_matches_brute_force(formulation, with_linear):
    rng = np.random.default_rng(7 + with_linear)
    for _ in range(6):
        clauses = random_clauses(rng, SHAPE, int(rng.integers(3, 25)), integer=not with_linear)
        linear = rng.normal(0, 1.5, size=sum(SHAPE)) if with_linear else None
        res = best_response(SHAPE, clauses, linear, formulation=formulation)
        _, best = brute_force(SHAPE, clauses, linear)
        assert res.optimal and res.status == "optimal"
        assert res.objective == pytest.approx(best, abs=1e-6)
        # the returned record really attains the optimum (not only the reported value)
        assert objective_value(SHAPE, clauses, linear, res.record)[0] == pytest.approx(best, abs=1e-6)
        assert res.bound >= best - 1e-6


@pytest.mark.parametrize("minimize", [False, True])
def test_signed_weights_both_senses(minimize):
    """Negative weights (the projection's linear-minimisation step) in both directions."""
    rng = np.random.default_rng(11)
    for _ in range(6):
        clauses = random_clauses(rng, SHAPE, 20, signed=True, integer=False)
        linear = rng.normal(0, 1.0, size=sum(SHAPE))
        res = best_response(SHAPE, clauses, linear, minimize=minimize)
        _, best = brute_force(SHAPE, clauses, linear, minimize=minimize)
        assert res.objective == pytest.approx(best, abs=1e-6)
        assert objective_value(SHAPE, clauses, linear, res.record)[0] == pytest.approx(best, abs=1e-6)


def test_solver_settings_give_the_same_optimum():
    rng = np.random.default_rng(3)
    clauses = random_clauses(rng, SHAPE, 30)
    tuned = best_response(SHAPE, clauses)
    plain = best_response(SHAPE, clauses, solver_settings="scip-default", heuristic_start=False)
    assert tuned.objective == pytest.approx(plain.objective)
    with pytest.raises(OracleError, match="solver_settings"):
        best_response(SHAPE, clauses, solver_settings="fast")


def test_local_search_value_is_exact_and_not_above_the_optimum():
    rng = np.random.default_rng(5)
    for _ in range(10):
        clauses = random_clauses(rng, SHAPE, 25, signed=True, integer=False)
        linear = rng.normal(size=sum(SHAPE))
        rec, val = local_search_record(SHAPE, clauses, linear)
        _, best = brute_force(SHAPE, clauses, linear)
        assert objective_value(SHAPE, clauses, linear, rec)[0] == pytest.approx(val)
        assert val <= best + 1e-9
        # a local optimum: no single attribute change improves it
        for a, size in enumerate(SHAPE):
            for v in range(size):
                other = rec.copy()
                other[a] = v
                assert objective_value(SHAPE, clauses, linear, other)[0] <= val + 1e-9


def test_clauses_from_queries_merges_duplicates_and_negations():
    dom = tiny_domain(SHAPE)
    wl = Workload(dom, ((0, 2), (1,)))
    nq = wl.n_queries
    q = wl.query_id(0, (1, 3))
    clauses = clauses_from_queries(wl, np.array([q, q, q + nq, wl.query_id(1, (0,))]))
    got = sorted(zip(clauses.attrs, clauses.values, clauses.negated.tolist(), clauses.weights.tolist()))
    assert got == [((0, 2), (1, 3), False, 2.0), ((0, 2), (1, 3), True, 1.0), ((1,), (0,), False, 1.0)]
    # evaluate agrees with the workload's own answers
    rows = np.array([[1, 0, 3, 0], [1, 1, 2, 2]])
    assert clauses.evaluate(rows).tolist() == [3.0, 1.0]


def _big_instance(seed=0, m=1500):
    rng = np.random.default_rng(seed)
    shape = (30,) * 14
    return shape, random_clauses(rng, shape, m)


def test_time_limit_returns_the_incumbent_and_says_so():
    shape, clauses = _big_instance()
    res = best_response(shape, clauses, time_limit=0.0)
    assert res.status == "timelimit" and not res.optimal
    # the incumbent is a real record with the reported objective
    assert objective_value(shape, clauses, None, res.record)[0] == pytest.approx(res.objective)
    stats = OracleStats()
    stats.add(res)
    d = stats.to_dict()
    assert d["calls"] == 1 and d["not_optimal"] == 1 and d["statuses"] == {"timelimit": 1}


def test_warm_start_is_kept_at_a_time_out():
    shape, clauses = _big_instance(1)
    warm, val = local_search_record(shape, clauses)
    res = best_response(shape, clauses, time_limit=0.0, warm_start=warm, heuristic_start=False)
    assert res.objective >= val - 1e-9


def test_no_record_at_all_is_a_typed_error():
    shape, clauses = _big_instance(2)
    with pytest.raises(OracleError, match="time limit"):
        best_response(shape, clauses, time_limit=0.0, heuristic_start=False, solver_settings="scip-default")


def test_bad_inputs_are_typed_errors():
    clauses = random_clauses(np.random.default_rng(0), SHAPE, 5)
    with pytest.raises(OracleError, match="length D = 12"):
        best_response(SHAPE, clauses, np.zeros(5))
    for heuristic in (False, True):
        with pytest.raises(OracleError, match="warm start"):
            best_response(SHAPE, clauses, warm_start=np.array([9, 0, 0, 0]), heuristic_start=heuristic)
        with pytest.raises(OracleError, match="warm start"):
            best_response(SHAPE, clauses, warm_start=np.array([0, 0]), heuristic_start=heuristic)
    with pytest.raises(OracleError, match="tiny domains"):
        brute_force((100,) * 4, clauses)


def test_stats_merge():
    a, b = OracleStats(), OracleStats()
    clauses = random_clauses(np.random.default_rng(1), SHAPE, 8)
    a.add(best_response(SHAPE, clauses))
    b.add(best_response(SHAPE, clauses))
    a.merge(b)
    d = a.to_dict()
    assert d["calls"] == 2 and d["statuses"] == {"optimal": 2} and d["median_solve_seconds"] > 0
