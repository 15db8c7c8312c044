"""MWEM over the explicit domain: refusal above the limit, answers of a distribution, a real run."""

import itertools

import numpy as np
import pytest

from dpcore.errors import DomainError
from dpcore.mechanisms.base import Budget, RunContext
from dpcore.mechanisms.mwem import MWEM, distribution_answers
from dpcore.release import run_release
from dpcore.workload import Workload

from .conftest import planted_dataset, tiny_domain


def test_refuses_a_domain_too_large_and_says_how_large(adult):
    wl = Workload.random_kway(adult.domain, 2, 3, seed=0)
    size = adult.domain.size
    with pytest.raises(DomainError) as err:
        MWEM().plan(adult.n, wl, Budget(1.0, 1e-9), MWEM.validate_params({}))
    msg = str(err.value)
    assert f"{size:,}" in msg and "10,000,000" in msg and "DualQuery" in msg
    # the limit is a parameter: a small domain passes, a lowered limit refuses it
    dom = tiny_domain()
    small = Workload.all_kway(dom, 2)
    MWEM().plan(100, small, Budget(1.0, 0.0), MWEM.validate_params({}))
    with pytest.raises(DomainError, match="72 possible records"):
        MWEM().plan(100, small, Budget(1.0, 0.0), MWEM.validate_params({"max_domain": 50}))


def test_distribution_answers_match_weighted_records():
    dom = tiny_domain((3, 2, 4))
    wl = Workload(dom, ((2, 0), (1,), (0, 1, 2)))  # unsorted attribute order on purpose
    rng = np.random.default_rng(0)
    A = rng.random(dom.shape)
    A /= A.sum()
    records = np.array(list(itertools.product(*[range(s) for s in dom.shape])))
    expected = wl.answers(records, weights=A[tuple(records.T)])
    assert np.allclose(distribution_answers(wl, A), expected)


def test_planted_data_well_below_uniform_and_pure_epsilon():
    ds = planted_dataset(n=4000)
    wl = Workload.all_kway(ds.domain, 2)
    rel, internal = run_release(ds, wl, "mwem", 1.0, None, {"rounds": 20}, seed=0, ledger=None)
    ev = internal.report
    assert ev["max_error"] < 0.4 * ev["baselines"]["uniform"]["max_error"]
    assert rel.card["privacy"]["epsilon_spent"] == 1.0 and rel.card["privacy"]["delta_spent"] == 0.0
    assert rel.rows.shape == (4000, 4)  # n rows by default
    assert len(ev["trace"]) == 20


def test_rows_parameter_and_card():
    ds = planted_dataset(n=500)
    wl = Workload.all_kway(ds.domain, 2)
    rel, _ = run_release(ds, wl, "mwem", 0.5, 0.0, {"rounds": 5}, seed=1, n_rows=123, ledger=None)
    assert rel.rows.shape == (123, 4)
    assert rel.card["derived_public_parameters"]["laplace_scale"] == pytest.approx(2 * 5 / (0.5 * 500))
    assert rel.card["output"]["rows"] == 123


@pytest.mark.parametrize("seed", [2, None])
def test_measurements_are_counts_plus_integer_noise(seed):
    """The Laplace measurement is the geometric mechanism on the selected cell's count: the noise is
    a whole number of rows (seeded demo and cryptographic source alike)."""
    from dpcore.privacy.samplers import Randomness

    ds = planted_dataset(n=300)
    wl = Workload.all_kway(ds.domain, 2)
    ctx = RunContext(noise=Randomness(seed))
    res = MWEM().run(ds, wl, Budget(2.0, 0.0), MWEM.validate_params({"rounds": 12}), ctx)
    true = wl.answers(ds.codes)
    noise = np.array([(r["measurement"] - true[r["selected_qid"]]) * ds.n for r in res.trace])
    assert np.allclose(noise, np.rint(noise), atol=1e-6)
    assert np.count_nonzero(np.rint(noise)) >= 6  # scale 2T/ε = 12 rows: zero has probability < 0.05 each
    assert res.epsilon_spent == 2.0 and res.delta_spent == 0.0
