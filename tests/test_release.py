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
from dpcore.cli.release import cli_report
from dpcore.privacy.ledger import Ledger
from dpcore.release import _check_spent, answers_table, plan_release, run_release
from dpcore.report import INTERNAL_LABEL, card_summary
from dpcore.workload import Workload

from .conftest import all_keys, planted_dataset

SEED = 918_273_645


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    ds = planted_dataset(n=1500)
    wl = Workload.all_kway(ds.domain, 2)
    ledger = Ledger(str(tmp_path_factory.mktemp("ws")))
    rel, internal = run_release(
        ds, wl, "dualquery", 1.0, None, {"samples": 40, "max_rounds": 8, "eta": 0.4}, seed=SEED, ledger=ledger
    )
    return rel, internal, ledger


@pytest.fixture(scope="module")
def release(outcome):
    return outcome[0]


@pytest.fixture(scope="module")
def internal(outcome):
    return outcome[1]


def test_card_has_no_seed_no_errors_no_timings(release, internal):
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
    for v in (internal.report["max_error"], internal.report["mean_error"]):
        assert repr(v) not in text


def test_card_states_the_guarantee(release):
    p = release.card["privacy"]
    assert p["epsilon_spent"] <= 1.0 and p["delta"] == pytest.approx(1 / 1500**2)
    assert p["delta_choice"] == "default 1/n²" and "replace-one" in p["neighbouring_relation"]
    assert p["robust_to_solver_failure"] is True and "4.3" in p["accountant"]
    assert release.card["derived_public_parameters"]["rounds"] == 8
    assert "Privacy holds even if the solver fails." in card_summary(release.card)


def test_evaluation_is_labelled_internal(release, internal):
    ev = internal.report
    assert ev["label"] == INTERNAL_LABEL and "NOT differentially private" in ev["label"]
    assert internal.label == INTERNAL_LABEL
    assert ev["max_error"] == pytest.approx(internal.errors().max())
    assert np.array_equal(internal.released_answers, release.answers)
    assert {"zeros", "uniform"} <= set(ev["baselines"]) and ev["oracle"]["calls"] == 8
    assert len(ev["trace"]) == 8 and len(ev["per_marginal"]) == release.workload.n_marginals


def test_rows_decode_back_to_labels(release):
    df = release.decoded_rows()
    assert list(df.columns) == release.workload.domain.names and len(df) == 8
    assert set(df["a0"]) <= {"v0", "v1", "v2"}
    back, _ = release.workload.domain.encode(df)
    assert np.array_equal(back, release.rows)
    assert release.synthetic_csv().decode().splitlines()[0] == "a0,a1,a2,a3"


def test_the_release_object_carries_nothing_private(release):
    """Private values live in the InternalEvaluation only."""
    assert not {"true_answers", "evaluation", "result"} & set(vars(release))


def test_ledger_gets_the_spend(outcome):
    release, _, ledger = outcome
    entries = ledger.entries(release.dataset_id)
    assert len(entries) == 1 and entries[0]["status"] == "settled" and entries[0]["run"] == release.run_id
    assert entries[0]["epsilon"] == pytest.approx(release.card["privacy"]["epsilon_spent"], rel=1e-3)


def test_seeded_release_is_a_demo_and_a_real_one_is_private(tmp_path):
    ds = planted_dataset(n=400)
    wl = Workload.all_kway(ds.domain, 2)
    led = Ledger(str(tmp_path))
    demo, _ = run_release(ds, wl, "gaussian", 1.0, seed=3, ledger=led)
    real, _ = run_release(ds, wl, "gaussian", 1.0, ledger=led)
    assert demo.card["privacy"]["guarantee"] == "none" and "seed" in demo.card["privacy"]["guarantee_reason"]
    assert demo.card["promise"].startswith("This is a DEMO") and demo.demo
    assert (
        real.card["privacy"]["guarantee"] == "differential privacy" and "guarantee_reason" not in real.card["privacy"]
    )
    assert not real.demo and "DEMO" not in card_summary(real.card)
    assert led.total(ds.ledger_key)["runs"] == 2  # a demo read the data too: it is charged


def test_cli_report_fields_and_delta_note(release, internal):
    rep = cli_report(release, internal)
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


def test_a_cancelled_run_gives_no_release_but_stays_charged(tmp_path):
    """It was charged before it touched the data, and it did touch it."""
    ds = planted_dataset(n=800)
    wl = Workload.all_kway(ds.domain, 2)
    ev = threading.Event()
    ev.set()
    ledger = Ledger(str(tmp_path))
    with pytest.raises(Cancelled):
        run_release(ds, wl, "dqrs", 1.0, None, {"samples": 20}, seed=0, cancel=ev, ledger=ledger)
    [entry] = ledger.entries(ds.ledger_key)
    assert entry["status"] == "reserved" and entry["epsilon"] == 1.0 and entry["delta"] == pytest.approx(1 / 800**2)


def test_a_schema_read_off_the_data_needs_an_explicit_choice_and_the_card_says_so():
    """Finding 11: nothing read off the data without privacy reaches an output labelled public by default."""
    df = pd.DataFrame({"city": ["Oslo", "Lima", "Pune", "Oslo"] * 50, "kind": ["a", "b"] * 100})
    ds = load_dataset(df, infer_domain(df), "t")
    wl = Workload.all_kway(ds.domain, 2)
    with pytest.raises(DPCoreError, match="without privacy"):
        run_release(ds, wl, "gaussian", 1.0, None, seed=0, ledger=None)
    rel, _ = run_release(ds, wl, "gaussian", 1.0, None, ledger=None, schema_from_data=True)
    assert "does not cover" in rel.card["data"]["schema_guarantee"] and "does not cover them" in rel.card["promise"]
    assert {e["source"] for e in rel.card["data"]["schema"]} == {"inferred"}
    assert rel.card["output"]["rows"] is None
    table = answers_table(wl, rel.answers)
    assert len(table) == wl.n_queries and "city=Lima ∧ kind=a" in set(table["cell"])


def test_a_raw_table_is_released_with_a_private_schema_and_comes_back_in_its_shape():
    from dpcore.release import release_table

    rng = np.random.default_rng(0)
    n = 20_000
    df = pd.DataFrame(
        {
            "id": np.arange(n),
            "age": rng.integers(18, 90, n),
            "city": rng.choice(["Oslo", "Lima"], n),
            "joined": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 700, n), unit="D"),
        }
    )
    df["joined"] = df["joined"].dt.strftime("%d/%m/%Y")
    df.loc[5, "city"] = "Singletown"  # a value one row holds never reaches the output
    rel, internal = release_table(df, "gaussian", 1.0, workload={"k": 1, "marginals": "all"}, ledger=None, seed=4)
    data = rel.card["data"]
    assert {e["name"] for e in data["excluded"]} == {"id"}
    sources = {e["name"]: e["source"] for e in data["schema"]}
    assert "inferred" not in json.dumps(sources) and set(sources) == {"age", "city", "joined"}
    assert rel.card["privacy"]["parts"][0]["step"] == "schema discovery"
    assert rel.card["privacy"]["epsilon_spent"] <= 1.0
    assert "Singletown" not in json.dumps(rel.card) and "Singletown" not in rel.synthetic_csv().decode()


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
    with pytest.raises(BudgetError, match="1/n"):
        run_release(ds, wl, "gaussian", 1.0, 0.5)
