"""dpcore.release / dpcore.report: the public card stays public, the evaluation stays internal."""

import json
import threading

import numpy as np
import pandas as pd
import pytest

from dpcore.data import Dataset, load_dataset
from dpcore.domain import infer_domain
from dpcore.errors import BudgetError, Cancelled, DPCoreError
from dpcore.mechanisms.base import Budget, MechanismResult
from dpcore.privacy import PrivacyLedger
from dpcore.cli.release import cli_report
from dpcore.release import _check_spent, answers_table, plan_release, run_release
from dpcore.report import INTERNAL_LABEL, card_summary
from dpcore.workload import Workload

from .conftest import all_keys, planted_dataset

SEED = 918_273_645


@pytest.fixture(scope="module")
def release():
    ds = planted_dataset(n=1500)
    wl = Workload.all_kway(ds.domain, 2)
    return run_release(
        ds, wl, "dualquery", 1.0, None, {"samples": 40, "max_rounds": 8, "eta": 0.4}, seed=SEED, ledger=PrivacyLedger()
    )


def test_card_has_no_seed_no_errors_no_timings(release):
    text = json.dumps(release.card, default=float)
    assert str(SEED) not in text
    keys = set(all_keys(release.card))
    forbidden = {
        "seed",
        "random_state",
        "max_error",
        "mean_error",
        "seconds",
        "oracle",
        "trace",
        "per_marginal",
        "baselines",
        "total_variation",
        "statuses",
        "median_solve_seconds",
    }
    assert not keys & forbidden
    # and none of the error figures appears as a value either
    for v in (release.evaluation["max_error"], release.evaluation["mean_error"]):
        assert repr(v) not in text


def test_card_states_the_guarantee(release):
    p = release.card["privacy"]
    assert p["epsilon_spent"] <= 1.0 and p["delta"] == pytest.approx(1 / 1500**2)
    assert p["delta_choice"] == "default 1/n²" and "replace-one" in p["neighbouring_relation"]
    assert p["robust_to_solver_failure"] is True and "4.3" in p["accountant"]
    assert release.card["derived_public_parameters"]["rounds"] == 8
    assert "Privacy holds even if the solver fails." in card_summary(release.card)


def test_evaluation_is_labelled_internal(release):
    ev = release.evaluation
    assert ev["label"] == INTERNAL_LABEL and "NOT differentially private" in ev["label"]
    assert ev["max_error"] == pytest.approx(np.abs(release.true_answers - release.released_answers).max())
    assert {"zeros", "uniform"} <= set(ev["baselines"]) and ev["oracle"]["calls"] == 8
    assert len(ev["trace"]) == 8 and len(ev["per_marginal"]) == release.workload.n_marginals


def test_rows_decode_back_to_labels(release):
    df = release.decoded_rows()
    assert list(df.columns) == release.workload.domain.names and len(df) == 8
    assert set(df["a0"]) <= {"v0", "v1", "v2"}
    back, _ = release.workload.domain.encode(df)
    assert np.array_equal(back, release.rows)
    assert release.synthetic_csv().decode().splitlines()[0] == "a0,a1,a2,a3"


def test_ledger_gets_the_spend(release):
    assert len(release.ledger_entries) == 1
    e = release.ledger_entries[0]
    assert e.epsilon == release.result.epsilon_spent and e.dataset == release.dataset_id


def test_cli_report_fields_and_delta_note(release):
    rep = cli_report(release)
    for key in (
        "mechanism",
        "epsilon",
        "delta",
        "epsilon_spent",
        "n_queries",
        "max_error",
        "mean_error",
        "seconds",
        "oracle",
    ):
        assert key in rep
    assert {"calls", "median_solve_seconds", "statuses"} <= set(rep["oracle"])
    assert "default 1/n²" in rep["delta_note"] and "1,500" in rep["delta_note"]
    assert INTERNAL_LABEL in rep["label"]


def test_cancel_gives_no_release_and_no_ledger_entry():
    ds = planted_dataset(n=800)
    wl = Workload.all_kway(ds.domain, 2)
    ev = threading.Event()
    ev.set()
    ledger = PrivacyLedger()
    with pytest.raises(Cancelled):
        run_release(ds, wl, "dqrs", 1.0, None, {"samples": 20}, seed=0, cancel=ev, ledger=ledger)
    assert ledger.entries() == []


def test_inferred_schema_values_stay_off_the_card():
    df = pd.DataFrame({"city": ["Oslo", "Lima", "Pune", "Oslo"] * 50, "kind": ["a", "b"] * 100})
    ds = load_dataset(df, infer_domain(df), "t")
    wl = Workload.all_kway(ds.domain, 2)
    rel = run_release(ds, wl, "gaussian", 1.0, None, seed=0)
    text = json.dumps(rel.card)
    assert "Lima" not in text and "Pune" not in text
    assert "inferred from the private data" in rel.card["data"]["schema_provenance"]
    assert rel.card["output"]["rows"] is None
    table = answers_table(wl, rel.released_answers)
    assert len(table) == wl.n_queries and "city=Lima ∧ kind=a" in set(table["cell"])


def test_overspending_is_refused():
    res = MechanismResult(spends=[], epsilon_spent=1.0001, delta_spent=0.0, accountant="x")
    with pytest.raises(BudgetError, match="exceeds the budget"):
        _check_spent(res, Budget(1.0, 0.0))
    _check_spent(MechanismResult(spends=[], epsilon_spent=1.0, delta_spent=0.0, accountant="x"), Budget(1.0, 0.0))


def test_bad_inputs():
    ds = planted_dataset(n=300)
    wl = Workload.all_kway(ds.domain, 2)
    other = Dataset(ds.codes[:, :3], ds.domain.project(["a0", "a1", "a2"]), "other")
    with pytest.raises(DPCoreError, match="different schema"):
        run_release(other, wl, "gaussian", 1.0)
    with pytest.raises(BudgetError, match="ε must be"):
        run_release(ds, wl, "gaussian", -1.0)
    with pytest.raises(DPCoreError, match="does not let you choose the number of rows"):
        run_release(ds, wl, "dualquery", 1.0, n_rows=10)
    with pytest.raises(BudgetError, match="smallest ε"):
        plan_release(ds.n, wl, "dualquery", 1e-6, None, {})
