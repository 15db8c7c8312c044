"""Smoothing the projection's rows along ordered attributes (post-processing, dpcore.mechanisms.smoothing)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpcore.data import Dataset
from dpcore.domain import Attribute, Domain
from dpcore.mechanisms.base import Budget, RunContext
from dpcore.mechanisms.projection import Projection
from dpcore.mechanisms.smoothing import (
    ORDER_ROUGHNESS,
    coded_in_order,
    integer_codes,
    metropolis_kernel,
    ordered_attributes,
    roughness_ratio,
    smooth_records,
)
from dpcore.workload import Workload


@pytest.mark.parametrize("reach,sweeps", [(1, 1), (2, 3), (3, 2)])
def test_the_kernel_keeps_the_distribution_it_is_built_from(reach, sweeps):
    p = np.array([0.0, 5.0, 1.0, 0.5, 30.0, 0.0, 2.0, 2.0, 7.0, 0.25])
    T = metropolis_kernel(p, reach, sweeps)
    assert np.all(T >= -1e-15)
    assert np.allclose(T.sum(axis=1), 1.0)
    assert np.allclose(p @ T, p)  # stationary: the attribute's distribution is kept
    assert np.all(T[:, p == 0][p > 0] == 0)  # nothing moves onto a value of mass 0
    one = metropolis_kernel(p, reach, 1)
    flux = p[:, None] * one
    assert np.allclose(flux, flux.T)  # detailed balance of one step
    far = np.abs(np.subtract.outer(np.arange(len(p)), np.arange(len(p)))) > reach * sweeps
    assert np.all(T[far] == 0)


def test_a_spike_stays_a_spike():
    """A common value (e.g. 40 hours a week) is rarely left: its neighbours feed it as much as it feeds them."""
    p = np.full(21, 10.0)
    p[10] = 1000.0
    T = metropolis_kernel(p, 2, 3)
    assert T[10, 10] > 0.97


def _records(rng, n_rec=300, shape=(30, 4, 12)):
    recs = np.column_stack([rng.integers(0, s, n_rec) for s in shape])
    counts = rng.integers(1, 40, n_rec)
    return recs, counts


def test_smoothing_moves_only_the_listed_attribute_and_keeps_every_other_joint_exactly():
    rng = np.random.default_rng(3)
    recs, counts = _records(rng)
    out, c = smooth_records(recs, counts, [(0, 30)], np.random.default_rng(0))
    assert c.sum() == counts.sum() and np.all(c > 0)

    def joint(r, w, cols):
        keys = [tuple(x) for x in r[:, cols]]
        tally: dict = {}
        for k, v in zip(keys, w):
            tally[k] = tally.get(k, 0) + int(v)
        return tally

    assert joint(out, c, [1, 2]) == joint(recs, counts, [1, 2])
    assert joint(out, c, [0, 1]) != joint(recs, counts, [0, 1])  # ...while age's pairs did move


def test_smoothing_keeps_the_one_way_distribution_up_to_the_rounding_of_each_record():
    """Every record's rows go to its destinations by largest remainder: each (record, value) count is within
    1 of its expectation, and the expectations add up to the stationary distribution p T = p."""
    rng = np.random.default_rng(5)
    recs, counts = _records(rng, n_rec=400)
    before = np.bincount(recs[:, 0], weights=counts, minlength=30)
    out, c = smooth_records(recs, counts, [(0, 30)], np.random.default_rng(1))
    after = np.bincount(out[:, 0], weights=c, minlength=30)
    T = metropolis_kernel(before, 2, 3)
    sources = (T[recs[:, 0]] > 0).sum(axis=0)  # records that can send rows to each value
    assert np.all(np.abs(after - before) < sources)
    assert np.abs(after - before).sum() < 0.05 * counts.sum()


def test_missing_codes_never_move_and_nothing_moves_into_them():
    rng = np.random.default_rng(7)
    recs, counts = _records(rng)
    recs[:40, 0] = 30  # the missing code of a 30-value attribute
    out, c = smooth_records(recs, counts, [(0, 30)], np.random.default_rng(0))
    assert c[out[:, 0] == 30].sum() == counts[:40].sum()
    kept = out[out[:, 0] == 30]
    assert {tuple(r) for r in kept} == {tuple(r) for r in recs[:40]}


def test_smoothing_spreads_a_spiky_pair_towards_a_smooth_truth():
    """The point of it: a release whose two groups sit on alternate ages (a spiky pair; each group's
    rows on half the values) comes out closer to the smooth truth, and age's own distribution stays."""
    ages = np.arange(40)
    p = np.exp(-0.5 * ((ages - 20) / 6.0) ** 2)
    truth = np.outer(p / p.sum(), [0.5, 0.5])  # the truth: age and group independent
    recs = np.column_stack([ages, ages % 2])
    counts = np.rint(p / p.sum() * 20_000).astype(np.int64)
    out, c = smooth_records(recs, counts, [(0, 40)], np.random.default_rng(0))

    def pair(r, w):
        return np.bincount(r[:, 0] * 2 + r[:, 1], weights=w, minlength=80).reshape(40, 2) / w.sum()

    tvd_before = 0.5 * np.abs(pair(recs, counts) - truth).sum()
    tvd_after = 0.5 * np.abs(pair(out, c) - truth).sum()
    assert tvd_before == pytest.approx(0.5, abs=0.01)
    assert tvd_after < 0.5 * tvd_before
    assert np.abs(pair(out, c).sum(axis=1) - pair(recs, counts).sum(axis=1)).sum() < 0.01


def _ordered_table(n=500, seed=0):
    rng = np.random.default_rng(seed)
    age = np.clip(rng.normal(20, 6, n).round(), 0, 39).astype(int)
    score = np.clip((age + rng.normal(0, 4, n)).round(), 0, 29).astype(int)
    group = (age > 20).astype(int)
    dom = Domain(
        (
            Attribute("age", kind="numeric", lower=0, upper=40, bins=40, integer=True),
            Attribute("city", values=tuple(f"c{i}" for i in range(30))),
            Attribute("score", kind="numeric", lower=0, upper=30, bins=30, integer=True),
            Attribute("group", values=("a", "b")),
        )
    )
    city = rng.integers(0, 30, n)
    return Dataset(np.column_stack([age, city, score, group]), dom, "ordered")


def test_the_projection_smooths_exactly_the_ordered_attributes_it_measured_in_groups():
    ds = _ordered_table()
    wl = Workload.all_kway(ds.domain, 2)
    params = Projection.validate_params({"max_iterations": 10, "scip": "off"})
    plan = Projection().plan(ds.n, wl, Budget(1.0, 1e-6), params)
    grouped = plan["grouped_attributes"]
    assert {"age", "city"} <= set(grouped)  # 40 × 30 cells: wider than n / (κσ)
    assert plan["smoothed_attributes"] == [a for a in grouped if a in ("age", "score")]
    assert "city" not in plan["smoothed_attributes"]  # categories have no neighbours
    res = Projection().run(ds, wl, Budget(1.0, 1e-6), params, RunContext.seeded(0))
    assert res.public["smoothed_attributes"] == plan["smoothed_attributes"]
    assert any("smoothed along" in n for n in res.notes)
    assert res.rows.shape == (ds.n, 4)
    off = Projection.validate_params({"max_iterations": 10, "scip": "off", "smooth_ordered": False})
    assert Projection().plan(ds.n, wl, Budget(1.0, 1e-6), off)["smoothed_attributes"] == []
    assert ordered_attributes(ds.domain, range(4)) == [0, 2]


def test_smoothing_reads_nothing_but_the_fitted_rows():
    """Same fitted records, same public settings, same rng: the same rows, whatever table they came from."""
    rng = np.random.default_rng(11)
    recs, counts = _records(rng)
    a = smooth_records(recs, counts, [(0, 30), (2, 12)], np.random.default_rng(4))
    b = smooth_records(recs.copy(), counts.copy(), [(0, 30), (2, 12)], np.random.default_rng(4))
    assert all(np.array_equal(x, y) for x, y in itertools.zip_longest(a, b))


# ------------------------------------------------------------------ integer codes read as ordered
def test_the_roughness_ratios_random_order_mean_is_the_mean_over_every_order():
    counts = np.array([5.0, 40.0, 12.0, 0.0, 7.0])
    along = [np.abs(np.diff(counts[list(p)])).sum() for p in itertools.permutations(range(5))]
    assert roughness_ratio(counts) == pytest.approx(np.abs(np.diff(counts)).sum() / np.mean(along))
    assert roughness_ratio(np.full(7, 3.0)) == 1.0 and roughness_ratio(np.array([1.0, 9.0])) == 1.0


def test_integer_codes_of_a_binned_number_look_ordered_and_categories_do_not():
    """A smooth histogram over 60 codes (a binned age, noise σ = 1% of its largest count) has a roughness ratio far
    under ORDER_ROUGHNESS; the same counts in a random order score near 1 (over 200 orders, none reaches the cut);
    codes other than 0..k-1, an '(other)' code or two codes are never read as ordered."""
    rng = np.random.default_rng(0)
    smooth = 1000.0 * np.exp(-0.5 * ((np.arange(60) - 25) / 9.0) ** 2)
    noisy = smooth + rng.normal(0, 10.0, 60)
    assert roughness_ratio(noisy) < 0.5 * ORDER_ROUGHNESS
    assert min(roughness_ratio(rng.permutation(noisy)) for _ in range(200)) > ORDER_ROUGHNESS
    codes = Attribute("age", values=tuple(str(i) for i in range(60)))
    assert integer_codes(codes)
    assert not integer_codes(Attribute("c", values=("1", "2", "3")))
    assert not integer_codes(Attribute("c", values=("0", "1", "2"), other=True))
    assert not integer_codes(Attribute("c", values=("0", "1")))
    dom = Domain((codes, Attribute("job", values=tuple(str(i) for i in range(60)))))
    assert coded_in_order(dom, [0, 1], {0: noisy, 1: rng.permutation(noisy)}) == [0]


def _coded_table(n=6000, seed=0) -> Dataset:
    """The literature's coded form: every attribute integer codes 0..k-1, a 60-code binned age among them."""
    rng = np.random.default_rng(seed)
    age = np.clip(rng.normal(25, 9, n).round(), 0, 59).astype(int)
    job = rng.integers(0, 60, n)
    hours = np.clip((age / 3 + rng.normal(8, 3, n)).round(), 0, 24).astype(int)
    flag = (age > 30).astype(int)
    dom = Domain(tuple(Attribute(name, values=tuple(str(i) for i in range(k)))
                       for name, k in (("age", 60), ("job", 60), ("hours", 25), ("flag", 2))))  # fmt: skip
    return Dataset(np.column_stack([age, job, hours, flag]), dom, "coded")


def test_the_projection_smooths_integer_codes_whose_released_counts_are_in_order():
    """6,000 rows at ε = 3 (one-way σ ≈ 15 rows, a code holding ~100): measured in groups, the binned age's codes
    are smoothed like a number's (its released counts' roughness ratio stays under 0.25 over 50 draws of that
    noise); the 60 job codes, in no order (ratio over 0.8), are not; the run's note says which codes were read as
    ordered, and smooth_ordered=false turns it off.  The plan (before the data) lists no such attribute: the
    choice reads the released counts."""
    ds = _coded_table()
    wl = Workload.all_kway(ds.domain, 3)
    params = Projection.validate_params({"max_iterations": 10, "scip": "off"})
    plan = Projection().plan(ds.n, wl, Budget(3.0, 1e-6), params)
    assert {"age", "job"} <= set(plan["grouped_attributes"]) and plan["smoothed_attributes"] == []
    res = Projection().run(ds, wl, Budget(3.0, 1e-6), params, RunContext.seeded(0))
    assert "age" in res.public["smoothed_attributes"] and "job" not in res.public["smoothed_attributes"]
    assert any("integer codes read as ordered" in n and "age" in n for n in res.notes)
    off = Projection.validate_params({"max_iterations": 10, "scip": "off", "smooth_ordered": False})
    res = Projection().run(ds, wl, Budget(3.0, 1e-6), off, RunContext.seeded(0))
    assert res.public["smoothed_attributes"] == []
