"""The implicit class of all conjunctions of width ≤ k: size, membership, answers, uniform sampling."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dpcore.errors import WorkloadError
from dpcore.query_classes import ConjunctionClass, Conjunctions, conjunction_answers, sampled_class_error
from dpcore.workload import Workload

from .conftest import planted_dataset, tiny_domain


def _brute_members(shape, k):
    out = []
    for w in range(1, k + 1):
        for S in itertools.combinations(range(len(shape)), w):
            for vals in itertools.product(*[range(shape[a]) for a in S]):
                out.append(tuple(zip(S, vals)))
    return out


@pytest.mark.parametrize("shape,k", [((3, 2, 4, 3), 1), ((3, 2, 4, 3), 2), ((3, 2, 4, 3), 4), ((5,), 1)])
def test_size_matches_enumeration(shape, k):
    cls = ConjunctionClass(tiny_domain(shape), k)
    members = _brute_members(shape, k)
    assert cls.n_positive == len(members)
    assert cls.size == 2 * len(members)
    assert ConjunctionClass(tiny_domain(shape), k, negations=False).size == len(members)
    enum = cls.enumerate()
    assert len(enum) == cls.size and cls.membership(enum).all()
    # distinct members
    assert np.unique(enum.keys(), axis=0).shape[0] == cls.size


def test_size_is_exact_for_huge_classes():
    shape = (100,) * 12
    cls = ConjunctionClass(tiny_domain(shape), len(shape))
    # every attribute either absent or one of its values: prod(|X_a| + 1) - 1 positive members
    assert cls.n_positive == math.prod(s + 1 for s in shape) - 1
    assert isinstance(cls.size, int) and cls.size > 2**63
    with pytest.raises(WorkloadError, match="members"):
        cls.enumerate()


def test_answers_match_row_by_row_evaluation(planted):
    cls = ConjunctionClass(planted.domain, 3)
    q = cls.enumerate()
    got = cls.answers(planted.codes, q)
    sat = np.array([[all(row[a] == v for a, v in q.literals(j)) for j in range(len(q))] for row in planted.codes])
    expect = sat.mean(axis=0)
    expect = np.where(q.negated, 1 - expect, expect)
    np.testing.assert_allclose(got, expect, atol=1e-12)
    np.testing.assert_array_equal(cls.satisfies(planted.codes, q), sat ^ q.negated[None, :])


def test_weighted_answers_and_sparse_path(planted):
    cls = ConjunctionClass(planted.domain, 2)
    q = cls.enumerate()
    rng = np.random.default_rng(3)
    w = rng.random(planted.n)
    sat = cls.satisfies(planted.codes, q)
    expect = (w[:, None] * sat).sum(axis=0) / w.sum()
    np.testing.assert_allclose(cls.answers(planted.codes, q, w), expect, atol=1e-12)
    # the sparse (sorted) path gives the same numbers as the dense bincount path
    import dpcore.query_classes as qc

    old = qc.DENSE_CELL_LIMIT
    try:
        qc.DENSE_CELL_LIMIT = 1
        np.testing.assert_allclose(cls.answers(planted.codes, q, w), expect, atol=1e-12)
    finally:
        qc.DENSE_CELL_LIMIT = old


def test_workload_cells_are_members_with_the_same_answers(planted):
    wl = Workload(planted.domain, ((2, 0), (1,), (3, 1, 0)))
    q = Conjunctions.from_workload(wl)
    cls = ConjunctionClass(planted.domain, 3)
    assert cls.membership(q).all()
    np.testing.assert_allclose(cls.answers(planted.codes, q), wl.answers(planted.codes), atol=1e-12)
    # a 3-way workload is not in the width-2 class
    with pytest.raises(WorkloadError, match="outside the class"):
        ConjunctionClass(planted.domain, 2).check(q)


@pytest.mark.parametrize(
    "literals,why",
    [
        ([(0, 1), (0, 2)], "two literals of one attribute"),
        ([(0, 3)], "value out of range"),
        ([(7, 0)], "attribute out of range"),
        ([(0, 0), (1, 0), (2, 0)], "too wide"),
    ],
)
def test_outside_the_class_is_refused(literals, why):
    cls = ConjunctionClass(tiny_domain(), 2)
    q = Conjunctions.from_literals([literals])
    assert not cls.membership(q)[0], why
    with pytest.raises(WorkloadError, match="outside the class"):
        cls.answers(planted_dataset().codes, q)


def test_bad_k():
    with pytest.raises(WorkloadError, match="k ≤ 4"):
        ConjunctionClass(tiny_domain(), 5)
    with pytest.raises(WorkloadError, match="≥ 1"):
        ConjunctionClass(tiny_domain(), 0)


def test_sampler_is_uniform_chi_square():
    """Chi-square against enumeration: every member (both signs) equally likely."""
    shape, k = (3, 2, 4), 2
    cls = ConjunctionClass(tiny_domain(shape), k)
    members = cls.enumerate()
    index = {tuple(r): i for i, r in enumerate(members.keys())}
    n = 200 * cls.size  # 200 expected draws per cell
    draws = cls.sample(n, np.random.default_rng(12345))
    assert cls.membership(draws).all()
    counts = np.bincount([index[tuple(r)] for r in draws.keys()], minlength=cls.size)
    chi2, pval = stats.chisquare(counts)
    # fixed seed; under uniformity P(p < 0.001) = 0.001
    assert pval > 1e-3, (chi2, pval)
    # and a sampler biased toward one width would fail: check the width shares exactly
    shares = np.bincount(draws.widths, minlength=k + 1)[1:] / n
    expect = np.array(cls.count_by_width[1:]) / cls.n_positive
    se = np.sqrt(expect * (1 - expect) / n)
    assert np.all(np.abs(shares - expect) < 4 * se)


def test_sampler_positive_half_only():
    cls = ConjunctionClass(tiny_domain((3, 2)), 2)
    draws = cls.sample(1000, np.random.default_rng(0), negations=False)
    assert not draws.negated.any()


def test_sampled_class_error_on_the_truth_is_zero(planted):
    class Exact:
        def answer(self, q):
            return conjunction_answers(planted.codes, planted.domain.shape, q)

    out = sampled_class_error(planted, Exact(), 2, 500, np.random.default_rng(0))
    assert out["max_error"] == 0.0 and out["n_samples"] == 500


def test_rows_answerer_measures_synthetic_rows(planted):
    from dpcore.query_classes import RowsAnswerer

    same = sampled_class_error(planted, RowsAnswerer(planted.codes, planted.domain), 2, 300, np.random.default_rng(1))
    assert same["max_error"] == 0.0
    other = RowsAnswerer(planted.codes[:10], planted.domain)
    out = sampled_class_error(planted, other, 2, 300, np.random.default_rng(1))
    q = ConjunctionClass(planted.domain, 2).sample(300, np.random.default_rng(1), negations=False)
    cls = ConjunctionClass(planted.domain, 2)
    expect = np.abs(cls.answers(planted.codes, q) - cls.answers(planted.codes[:10], q)).max()
    assert out["max_error"] == pytest.approx(expect)
