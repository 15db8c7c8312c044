"""PrivLearn ([HRS12]): the threshold oracle's accounting and ⊥ behaviour, the PTF learner, recovery of
planted structure, bad input."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy import stats

from dpcore.data import Dataset
from dpcore.errors import BudgetError, ParameterError, WorkloadError
from dpcore.mechanisms.base import Budget, RunContext
from dpcore.mechanisms.privlearn import BOTTOM, PrivLearn, ThresholdOracle, fit_ptf, monomial_keys
from dpcore.privacy.samplers import Randomness
from dpcore.query_classes import ConjunctionClass, Conjunctions
from dpcore.workload import Workload

from .conftest import planted_dataset, tiny_domain


def _oracle(ds, epsilon, alpha, bound, seed=0, k=2):
    return ThresholdOracle(ds.codes, ConjunctionClass(ds.domain, k), epsilon, alpha, bound, Randomness(seed))


# ------------------------------------------------------------------ threshold oracle
def test_laplace_scale_is_b_over_eps_n():
    """Noise of distinct queries follows Lap(b/(εn)) ([HRS12] Fig. 1) -- and not twice that scale."""
    ds = planted_dataset(n=500)
    cls = ConjunctionClass(ds.domain, 2)
    q = cls.enumerate()  # 2 × 72 distinct queries
    b, eps = 3 * len(q), 0.7
    oracle = _oracle(ds, eps, 0.1, b, seed=7)
    assert oracle.scale == pytest.approx(b / (eps * ds.n))
    noise = oracle._values(q) - cls.answers(ds.codes, q)
    # repeat with fresh seeds to get enough draws for a KS test
    draws = [noise]
    for s in (8, 9):
        o = _oracle(ds, eps, 0.1, b, seed=s)
        draws.append(o._values(q) - cls.answers(ds.codes, q))
    noise = np.concatenate(draws)
    assert stats.kstest(noise, stats.laplace(scale=oracle.scale).cdf).pvalue > 1e-3
    assert stats.kstest(noise, stats.laplace(scale=2 * oracle.scale).cdf).pvalue < 1e-3


@pytest.mark.parametrize("seed", [5, None])
def test_oracle_noise_is_integer_in_count_units(seed):
    """The geometric mechanism on integer counts: n·(A_q − f(q)) is a whole number (demo and
    cryptographic source alike)."""
    ds = planted_dataset(n=500)
    cls = ConjunctionClass(ds.domain, 2)
    q = cls.enumerate()
    oracle = _oracle(ds, 0.7, 0.1, 3 * len(q), seed=seed)
    noise = (oracle._values(q) - cls.answers(ds.codes, q)) * ds.n
    assert np.allclose(noise, np.rint(noise), atol=1e-6)
    assert oracle.scale_counts == pytest.approx(3 * len(q) / 0.7)
    assert np.count_nonzero(np.rint(noise)) > 0.95 * len(q)


def test_one_draw_per_query_reused_across_thresholds():
    ds = planted_dataset(n=300)
    cls = ConjunctionClass(ds.domain, 2)
    q = cls.sample(50, np.random.default_rng(1))
    oracle = _oracle(ds, 1.0, 0.05, 1000)
    a1 = oracle._values(q)
    twice = Conjunctions(
        np.concatenate([q.attrs, q.attrs]), np.concatenate([q.values, q.values]), np.concatenate([q.negated, q.negated])
    )
    np.testing.assert_array_equal(oracle._values(twice), np.concatenate([a1, a1]))
    assert oracle.distinct_queries == len(np.unique(q.keys(), axis=0))
    # labels at many thresholds are all explained by the single stored value A_q
    for t in np.linspace(0, 1, 11):
        lab = oracle.ask(q, t)
        np.testing.assert_array_equal(lab == 1, a1 >= t + oracle.band)
        np.testing.assert_array_equal(lab == 0, a1 <= t - oracle.band)


def test_bottom_band_is_two_thirds_alpha():
    """With negligible noise, ⊥ exactly when |f(q) − t| < 2α/3."""
    ds = planted_dataset(n=400)
    cls = ConjunctionClass(ds.domain, 1)
    q = Conjunctions.from_literals([[(0, 0)]])
    f = cls.answers(ds.codes, q)[0]
    alpha = 0.09
    oracle = _oracle(ds, 1e9, alpha, 1, k=1)  # noise scale 1/(1e9·400): far below the margins tested
    band = 2 * alpha / 3
    assert oracle.band == pytest.approx(band)
    assert oracle.ask(q, f - band + 1e-4)[0] == BOTTOM
    assert oracle.ask(q, f + band - 1e-4)[0] == BOTTOM
    assert oracle.ask(q, f - band - 1e-4)[0] == 1
    assert oracle.ask(q, f + band + 1e-4)[0] == 0


def test_query_bound_terminates_the_oracle():
    ds = planted_dataset(n=300)
    q = Conjunctions.from_literals([[(0, 0)], [(1, 1)], [(2, 3)], [(0, 1)]])
    oracle = _oracle(ds, 1e9, 0.01, 2)
    first = oracle.ask(q.take([0, 1, 0, 1]), 0.5)  # two distinct queries, each asked twice: within the bound
    assert np.all(first != BOTTOM) and not oracle.terminated
    out = oracle.ask(q.take([0, 2, 1]), 0.5)  # q2 is the third distinct query
    assert out[0] != BOTTOM and out[1] == BOTTOM and out[2] == BOTTOM and oracle.terminated
    assert np.all(oracle.ask(q.take([0, 1]), 0.5) == BOTTOM)  # terminated: nothing more is answered
    assert oracle.distinct_queries == 2


# ------------------------------------------------------------------ accounting of the mechanism
def test_mechanism_accounting_closed_form(planted):
    wl = Workload(planted.domain, ((0, 1), (2,)))
    mech = PrivLearn()
    params = mech.validate_params({"k": 2, "alpha": 0.25, "queries": 40, "degree": 1})
    eps = 2.0
    res = mech.run(planted, wl, Budget(eps, 1e-6), params, RunContext.seeded(0))
    assert res.epsilon_spent == eps and res.delta_spent == 0.0
    assert [s.epsilon for s in res.spends] == [eps] and res.spends[0].delta == 0.0
    assert res.public["laplace_scale"] == pytest.approx(40 / (eps * planted.n))
    assert res.public["thresholds"] == 12  # ceil(3 / 0.25)
    assert res.public["bottom_band_halfwidth"] == pytest.approx(2 * (0.25 / 7) / 3)
    assert res.oracle_stats["distinct_oracle_queries"] <= 40
    np.testing.assert_allclose(res.answers, res.synopsis.answers_for_workload(wl))
    json.dumps(res.synopsis.to_json())  # public synopsis is plain JSON


# ------------------------------------------------------------------ learner
def test_lp_learner_separates_and_solvers_agree():
    """A degree-1 separable labelling is fitted with zero training error by both LP solvers."""
    dom = tiny_domain((3, 2, 4))
    cls = ConjunctionClass(dom, 2, negations=False)
    q = cls.enumerate()
    keys = monomial_keys(cls, q, 1)
    w_true = np.random.default_rng(4).normal(size=9)
    lit = cls.literal_indices(q)
    score = np.where(lit >= 0, w_true[np.maximum(lit, 0)], 0).sum(axis=1) - 0.1
    labels = (score >= 0).astype(int)
    out = {}
    for solver in ("highs", "scip"):
        _feats, _w, _b, info = fit_ptf(keys, labels, 1e-6, solver)
        assert info["train_error"] == 0.0
        out[solver] = info["objective"]
    assert out["highs"] == pytest.approx(out["scip"], rel=1e-5, abs=1e-9)


def test_monomial_keys_count_subsets():
    dom = tiny_domain((3, 2, 4))
    cls = ConjunctionClass(dom, 3, negations=False)
    q = cls.enumerate()
    for d in (1, 2, 3):
        keys = monomial_keys(cls, q, d)
        n_active = (keys >= 0).sum(axis=1)
        expect = [sum(len(list(itertools.combinations(range(w), j))) for j in range(1, d + 1)) for w in q.widths]
        np.testing.assert_array_equal(n_active, expect)
        # distinct monomials across the class = conjunctions of width ≤ d
        assert np.unique(keys[keys >= 0]).size == ConjunctionClass(dom, d, negations=False).n_positive


def _product_dataset():
    """Exactly independent attributes: every record with multiplicity prod_a c_a[x_a].

    Then f(q) = prod_{(a,v) in q} p_a[v], so 1[f(q) ≥ t] = 1[sum log p - log t ≥ 0] is a degree-1 PTF."""
    c = [np.array([6, 3, 1]), np.array([7, 3]), np.array([5, 3, 1, 1])]
    rows = []
    for x in itertools.product(*[range(len(ci)) for ci in c]):
        rows += [x] * int(np.prod([ci[v] for ci, v in zip(c, x)]))
    return Dataset(np.array(rows), tiny_domain((3, 2, 4)), "product")


def test_recovers_planted_product_structure_at_large_epsilon():
    ds = _product_dataset()
    wl = Workload(ds.domain, ((0, 2),))
    mech = PrivLearn()
    alpha = 0.2
    params = mech.validate_params({"k": 2, "alpha": alpha, "queries": 500, "degree": 1, "regularization": 1e-6})
    res = mech.run(ds, wl, Budget(1e4, 0.0), params, RunContext.seeded(0))
    cls = ConjunctionClass(ds.domain, 2)
    q = cls.enumerate()
    err = np.abs(res.synopsis.answer(q) - cls.answers(ds.codes, q))
    spacing = 1 / (res.public["thresholds"] + 1)
    # every threshold right except possibly the one whose ⊥ band holds f(q): error ≤ spacing/2 + band
    assert err.max() <= spacing / 2 + res.public["bottom_band_halfwidth"] + 1e-9, err.max()
    # and learning happened: the all-zero synopsis is much worse
    assert err.mean() < 0.5 * np.abs(cls.answers(ds.codes, q) - np.where(q.negated, 1, 0)).mean()


# ------------------------------------------------------------------ bad input
def test_bad_input_messages(planted):
    mech = PrivLearn()
    wl = Workload(planted.domain, ((0, 1),))
    budget = Budget(1.0, 0.0)
    with pytest.raises(ParameterError, match="degree ≤ 2"):
        mech.plan(planted.n, wl, budget, mech.validate_params({"k": 2, "degree": 3}))
    with pytest.raises(ParameterError, match="raise k to 2"):
        mech.plan(planted.n, wl, budget, mech.validate_params({"k": 1, "degree": 1}))
    # α too small for n = 400 at ε = 1: names the bound and a workable α and ε
    with pytest.raises(BudgetError, match=r"at most \d+ queries.*α ≥ .*ε ≥"):
        mech.plan(planted.n, wl, budget, mech.validate_params({"k": 2, "alpha": 0.05}))
    with pytest.raises(ParameterError, match="queries ≤ 36"):  # floor(1 · 400 / (10 + 1)) = 36
        mech.plan(planted.n, wl, budget, mech.validate_params({"k": 2, "alpha": 0.3, "queries": 100}))
    with pytest.raises(ParameterError, match="α ≥ 0.01"):
        mech.plan(planted.n, wl, budget, {**mech.validate_params({"k": 2}), "alpha": 0.001})


def test_feature_space_too_large_names_a_smaller_degree(adult):
    mech = PrivLearn()
    wl = Workload(adult.domain, ((0, 1, 2),))
    # 100,000 queries × (5 + 10 + 10) monomials (+2) fit under 3,000,000 at degree 3, not at 4
    params = mech.validate_params({"k": 5, "degree": 5, "queries": 100_000, "alpha": 0.3})
    with pytest.raises(ParameterError, match=r"nonzeros .* Use degree ≤ 3"):
        mech.plan(10**7, wl, Budget(10.0, 0.0), params)


def test_synopsis_refuses_queries_outside_its_class(planted):
    mech = PrivLearn()
    wl = Workload(planted.domain, ((0, 1),))
    params = mech.validate_params({"k": 2, "alpha": 0.3, "queries": 30, "degree": 1})
    res = mech.run(planted, wl, Budget(1.0, 0.0), params, RunContext.seeded(0))
    with pytest.raises(WorkloadError, match="outside the class"):
        res.synopsis.answer([[(0, 0), (1, 0), (2, 0)]])  # width 3 > k = 2
    with pytest.raises(WorkloadError, match="outside the class"):
        res.synopsis.answer([[(0, 0), (0, 1)]])  # two values of one attribute
    with pytest.raises(WorkloadError, match="outside the class"):
        res.synopsis.answers_for_workload(Workload(planted.domain, ((0, 1, 2),)))


def test_lower_answer_rule_is_post_processing_of_the_same_hypotheses(planted):
    wl = Workload(planted.domain, ((0, 1),))
    mech = PrivLearn()
    runs = {}
    for rule in ("midpoint", "lower"):
        params = mech.validate_params({"k": 2, "alpha": 0.3, "queries": 30, "degree": 1, "answer": rule})
        runs[rule] = mech.run(planted, wl, Budget(1.0, 0.0), params, RunContext.seeded(5))
    q = ConjunctionClass(planted.domain, 2, negations=False).enumerate()
    mid, low = runs["midpoint"].synopsis.answer(q), runs["lower"].synopsis.answer(q)
    half = 0.5 / (runs["lower"].public["thresholds"] + 1)  # inner buckets: half a spacing; the top one is wider
    diff = mid - low
    assert np.all(diff > 0) and np.all(diff <= 0.5 * (1 - runs["lower"].synopsis.thresholds[-1]) + 1e-12)
    assert np.any(np.isclose(diff, half))
