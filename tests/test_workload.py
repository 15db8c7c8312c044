import itertools
import math

import numpy as np
import pytest

from dpcore.domain import Attribute, Domain
from dpcore.errors import WorkloadError
from dpcore.workload import (
    DEFAULT_MARGINALS,
    MIN_ROWS_PER_CELL,
    Workload,
    check_memory,
    default_workload,
    marginal_max,
    marginal_tv,
    max_error,
    mean_error,
    noise_check,
    noise_warning,
    uniform_baseline,
    workload_noise_warning,
    zeros_baseline,
)

from .conftest import tiny_domain


def naive_answers(workload, rows, weights=None):
    """The definition, one query and one row at a time."""
    weights = np.ones(len(rows)) if weights is None else weights
    out = []
    for m in workload.marginals:
        for cell in itertools.product(*[range(workload.domain.shape[a]) for a in m]):
            hit = sum(w for r, w in zip(rows, weights) if all(r[a] == c for a, c in zip(m, cell)))
            out.append(hit / weights.sum())
    return np.array(out)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_answers_match_a_naive_loop(k):
    rng = np.random.default_rng(k)
    dom = tiny_domain((3, 2, 4, 3))
    rows = np.column_stack([rng.integers(0, s, 60) for s in dom.shape])
    w = Workload.all_kway(dom, k)
    assert np.allclose(w.answers(rows), naive_answers(w, rows))
    weights = rng.random(60)
    assert np.allclose(w.answers(rows, weights), naive_answers(w, rows, weights))


def test_each_marginal_sums_to_one():
    rng = np.random.default_rng(0)
    dom = tiny_domain()
    rows = np.column_stack([rng.integers(0, s, 50) for s in dom.shape])
    w = Workload.all_kway(dom, 2)
    sums = np.add.reduceat(w.answers(rows), w.offsets[:-1])
    assert np.allclose(sums, 1.0)


def test_query_id_and_locate_are_inverse():
    w = Workload.all_kway(tiny_domain(), 2)
    for qid in range(w.n_queries):
        j, cell = w.locate(qid)
        assert w.query_id(j, cell) == qid
    with pytest.raises(WorkloadError):
        w.locate(w.n_queries)
    with pytest.raises(WorkloadError):
        w.query_id(0, (9, 9))


def test_decompose_groups_by_marginal():
    w = Workload.all_kway(tiny_domain(), 2)
    qids = np.array([0, 5, w.n_queries - 1])
    parts = w.decompose(qids)
    rebuilt = sorted(w.query_id(j, tuple(c)) for j, cells in parts for c in cells)
    assert rebuilt == sorted(qids.tolist())


def test_literals_and_labels():
    dom = tiny_domain()
    w = Workload.from_names(dom, [["a0", "a2"]])
    qid = w.query_id(0, (1, 3))
    assert w.literals(qid) == [(0, 1), (2, 3)]
    assert w.query_label(qid) == "a0=v1 ∧ a2=v3"


def test_random_kway_is_seeded_and_respects_the_cap():
    dom = tiny_domain((3, 2, 4, 3, 5))
    a = Workload.random_kway(dom, 3, 4, seed=7)
    b = Workload.random_kway(dom, 3, 4, seed=7)
    assert a.marginals == b.marginals and len(set(a.marginals)) == 4
    capped = Workload.random_kway(dom, 2, 3, seed=0, max_cells=10)
    assert all(math.prod(dom.shape[x] for x in m) <= 10 for m in capped.marginals)
    with pytest.raises(WorkloadError, match="Only"):
        Workload.random_kway(dom, 3, 11)


def test_literature_workload_size(adult_pgm_workload):
    # 64 random 3-way marginals with at most n cells, selection seed 0 (FEM / private-pgm).
    assert adult_pgm_workload.n_queries == 458_996


@pytest.fixture(scope="module")
def adult_pgm_workload():
    from dpcore.data import load_pgm

    from .conftest import SHARED_DATA

    ds = load_pgm(SHARED_DATA / "adult_pgm.csv")
    return Workload.random_kway(ds.domain, 3, 64, seed=0, max_cells=ds.n)


@pytest.mark.parametrize("k", [0, 5, -1])
def test_bad_k(k):
    with pytest.raises(WorkloadError, match="k"):
        Workload.all_kway(tiny_domain(), k)


def test_workload_too_large_for_memory_is_refused_with_the_number():
    dom = Domain(tuple(Attribute(f"a{i}", "categorical", tuple(str(v) for v in range(1000))) for i in range(4)))
    with pytest.raises(WorkloadError, match=r"4,000,000,000 queries"):
        Workload.all_kway(dom, 3)
    with pytest.raises(WorkloadError, match="GB"):
        check_memory(10**6, limit=1000)


def test_invalid_marginals():
    dom = tiny_domain()
    with pytest.raises(WorkloadError):
        Workload(dom, ())
    with pytest.raises(WorkloadError):
        Workload(dom, ((0, 0),))
    with pytest.raises(WorkloadError, match="twice"):
        Workload(dom, ((0, 1), (1, 0)))


def test_error_metrics_and_baselines():
    dom = tiny_domain((2, 3))
    w = Workload.all_kway(dom, 2)
    rows = np.array([[0, 0], [0, 0], [1, 2], [1, 1]])
    true = w.answers(rows)
    assert max_error(true, zeros_baseline(w)) == pytest.approx(0.5)
    uni = uniform_baseline(w)
    assert np.allclose(uni, 1 / 6)
    assert mean_error(true, uni) == pytest.approx(np.mean(np.abs(true - 1 / 6)))
    tv = marginal_tv(w, true, uni)
    assert tv.shape == (1,) and tv[0] == pytest.approx(0.5 * np.abs(true - 1 / 6).sum())
    assert marginal_max(w, true, uni)[0] == pytest.approx(max_error(true, uni))


def test_answers_rejects_bad_weights():
    w = Workload.all_kway(tiny_domain(), 1)
    rows = np.zeros((3, 4), int)
    with pytest.raises(WorkloadError):
        w.answers(rows, np.array([1.0, -1.0, 1.0]))
    with pytest.raises(WorkloadError):
        w.answers(rows, np.zeros(3))


# ------------------------------------------------------------------ defaults that fit the table
def _domain(sizes):
    return Domain(
        tuple(Attribute(f"a{i}", "categorical", tuple(str(v) for v in range(s))) for i, s in enumerate(sizes))
    )


def test_default_workload_on_a_100_row_table():
    dom = _domain([3, 2, 6, 11, 4])
    wl = default_workload(dom, 100)
    ones = [m for m in wl.marginals if len(m) == 1]
    pairs = [m for m in wl.marginals if len(m) == 2]
    assert len(ones) == 5  # every attribute alone
    assert pairs and all(dom.shape[i] * dom.shape[j] <= 100 / MIN_ROWS_PER_CELL for i, j in pairs)
    assert len(pairs) == sum(
        1 for i, j in itertools.combinations(range(5), 2) if dom.shape[i] * dom.shape[j] <= 100 / MIN_ROWS_PER_CELL
    )  # few eligible pairs: all of them


def test_default_workload_on_a_400_column_table_and_a_mid_sized_one():
    wide = _domain([2 + i % 12 for i in range(400)])
    wl = default_workload(wide, 2000)
    assert wl.n_marginals == 400 and all(len(m) == 1 for m in wl.marginals) and wl.n_queries < 5000
    mid = _domain([10, 9, 16, 7, 15, 6, 5, 2, 3, 42, 2, 12, 8, 2])
    wl = default_workload(mid, 32561)
    assert wl.n_marginals == DEFAULT_MARGINALS and sum(len(m) == 2 for m in wl.marginals) == DEFAULT_MARGINALS - 14
    assert default_workload(mid, 32561).marginals == wl.marginals  # public seed: the same workload every time
    assert default_workload(mid, 32561, seed=1).marginals != wl.marginals


def test_noise_check_against_the_closed_form():
    c = noise_check(10.0, 1000, 50)
    assert c["expected_noise_per_cell"] == pytest.approx(10.0 * math.sqrt(2 / math.pi))
    assert (
        c["rows_per_cell"] == 20.0 and c["ok"] and c["suggested_max_cells"] == int(1000 / (10 * math.sqrt(2 / math.pi)))
    )
    assert noise_warning(10.0, 1000, 50) is None
    msg = noise_warning(40.0, 100, 20)
    assert msg and "exceeds" in msg and "at most 3 cells" in msg
    # E|N(0, σ²)| = σ·sqrt(2/π), checked by simulation (tolerance: 5 standard errors)
    draws = np.abs(np.random.default_rng(0).normal(0, 7.0, 200_000))
    assert abs(draws.mean() - noise_check(7.0, 10, 1)["expected_noise_per_cell"]) < 5 * draws.std() / math.sqrt(
        draws.size
    )
    wl = Workload.all_kway(tiny_domain(), 2)
    assert workload_noise_warning(wl, 40.0, 100) == noise_warning(40.0, 100, int(wl.sizes.max()))
    with pytest.raises(WorkloadError):
        noise_check(1.0, 0, 10)
