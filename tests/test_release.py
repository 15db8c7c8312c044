"""dpcore.release / dpcore.report: the public card stays public, the evaluation stays internal."""

import json
import threading

import numpy as np
import pandas as pd
import pytest

from dpcore.cli.release import cli_report
from dpcore.data import Dataset, load_dataset
from dpcore.domain import infer_domain
from dpcore.errors import BudgetError, Cancelled, DPCoreError
from dpcore.mechanisms.base import Budget, MechanismResult
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


# ---------------------------------------------------------------------------- a schema discovered once, reused
def _discovered_once(ledger, *, eps_d=0.5, delta_d=1e-9, seed=None, n=3000):
    """What the app's Data page does: one charged run (kind "schema") that discovers the schema privately."""
    from dpcore.privacy.samplers import Randomness
    from dpcore.tabular import discovery_budget, prepare_table

    rng = np.random.default_rng(1)
    df = pd.DataFrame(
        {
            "person_id": np.arange(n),
            "age": rng.integers(18, 90, n),
            "city": rng.choice(["Oslo", "Lima", "Pune"], n),
            "": rng.choice(["x", "y"], n),  # an empty header: renamed, reported on the card
        }
    )
    df.columns = ["person_id", "age", "city", "column_4"]
    df.attrs.update(renamed=[{"original": "", "name": "column_4"}], source_digest="digest-of-the-file", name="people")
    # The whole-run share 1/2 makes (ε_d, δ_d) exact in floating point: ε = 2·ε_d.
    e, d, cols = discovery_budget(df.columns, epsilon=2 * eps_d, delta=2 * delta_d, schema_share=0.5)
    assert (e, d) == (eps_d, delta_d) and cols == ["age", "city", "column_4"]
    ledger.reserve(
        dataset="digest-of-the-file", name="people", n=n, run="schema-run", mechanism="schema", epsilon=e, delta=d
    )
    noise = Randomness(seed)
    prep = prepare_table(df, epsilon=2 * eps_d, delta=2 * delta_d, noise=noise, schema_share=0.5, ledger=None)
    ledger.settle("schema-run", prep.spends)
    found = {"card_data": prep.card_data, "epsilon": e, "delta": d, "run": "schema-run", "guarantee": noise.guarantee}
    return prep, found


def test_a_schema_discovered_once_is_on_every_card_and_charged_once(tmp_path):
    ledger = Ledger(str(tmp_path))
    prep, found = _discovered_once(ledger)
    ds = prep.dataset
    assert ds.ledger_key == "digest-of-the-file" and set(ds.domain.discovered) == {"age", "city", "column_4"}
    wl = Workload.all_kway(ds.domain, 1)
    cards = []
    for _ in range(2):
        rel, _ = run_release(ds, wl, "gaussian", 1.0, 1e-8, schema_release=found, ledger=ledger)
        cards.append(rel.card)
        p = rel.card["privacy"]
        schema, mech = p["parts"]
        assert (schema["step"], schema["epsilon"], schema["delta"]) == ("schema discovery", 0.5, 1e-9)
        assert (
            schema["run"] == "schema-run"
            and "once, when the schema was discovered (run schema-run)" in (schema["charged"])
        )
        assert mech["run"] == rel.run_id and mech["charged"] == f"by this release (run {rel.run_id})"
        # The release's whole guarantee: the sum of the parts (the schema is published with it).
        assert p["epsilon_spent"] == pytest.approx(0.5 + mech["epsilon"], rel=1e-3) and mech["epsilon"] <= 1.0
        assert p["delta_spent"] == pytest.approx(1e-9 + mech["delta"])
        assert p["epsilon"] == pytest.approx(1.5) and p["delta"] == pytest.approx(1e-8 + 1e-9)
        assert f"e^{p['epsilon_spent']:g}" in rel.card["promise"]
        data = rel.card["data"]
        assert data["excluded"] == [e for e in found["card_data"]["excluded"]] and data["excluded"][0]["name"] == (
            "person_id"
        )
        assert data["renamed"] == [{"original": "", "name": "column_4"}]
        assert data["schema_discovery"]["epsilon"] == 0.5
        assert "inferred" not in json.dumps(data["schema"]) and {e["name"] for e in data["schema"]} == set(
            ds.domain.names
        )
        assert not any("cost is not on this card" in w for w in rel.warnings)
    # The ledger: the discovery once, then each release's mechanism only.
    entries = ledger.entries("digest-of-the-file")
    by_run = {}
    for e in entries:
        by_run.setdefault(e["run"], []).append(e)
    assert len(by_run) == 3 and [e["epsilon"] for e in by_run["schema-run"]] == [0.5]
    for card in cards:
        mech_part = card["privacy"]["parts"][1]
        charged = by_run[card["privacy"]["parts"][1]["run"]]
        assert sum(e["epsilon"] for e in charged) == pytest.approx(mech_part["epsilon"])
    total = ledger.total("digest-of-the-file")
    assert total["runs"] == 3 and total["epsilon"] == pytest.approx(
        0.5 + sum(c["privacy"]["parts"][1]["epsilon"] for c in cards)
    )


def test_without_the_discovery_the_card_warns_that_its_cost_is_missing(tmp_path):
    prep, _ = _discovered_once(Ledger(str(tmp_path)))
    rel, _ = run_release(prep.dataset, Workload.all_kway(prep.domain, 1), "gaussian", 1.0, 1e-8, ledger=None)
    assert "parts" not in rel.card["privacy"]
    assert any("its cost is not on this card" in w for w in rel.warnings)


def test_a_schema_release_is_checked(tmp_path):
    ledger = Ledger(str(tmp_path))
    prep, found = _discovered_once(ledger, seed=5)
    ds, wl = prep.dataset, Workload.all_kway(prep.domain, 1)
    with pytest.raises(DPCoreError, match="discovered on a table of 10 rows"):
        run_release(ds, wl, "gaussian", 1.0, 1e-8, schema_release={**found, "card_data": {"n": 10}}, ledger=None)
    with pytest.raises(BudgetError, match="not a valid spend"):
        run_release(ds, wl, "gaussian", 1.0, 1e-8, schema_release={**found, "epsilon": -1}, ledger=None)
    n = ds.n  # the whole δ (schema + mechanism) must stay below 1/n
    with pytest.raises(BudgetError, match="1/n"):
        run_release(ds, wl, "gaussian", 1.0, 0.6 / n, schema_release={**found, "delta": 0.5 / n}, ledger=None)
    before = ledger.total("digest-of-the-file")["runs"]
    assert before == 1  # refused before the data was touched: nothing charged
    # A seeded (demo) discovery makes every release of its schema a demo.
    rel, _ = run_release(ds, wl, "gaussian", 1.0, 1e-8, schema_release=found, ledger=None)
    assert found["guarantee"] == "none" and rel.card["privacy"]["guarantee"] == "none" and rel.demo


def test_execute_release_passes_the_schema_release_through(tmp_path):
    """dpcore.runs.execute_release (the app's and the CLI's path): the recorded card has the schema part; the
    workspace ledger holds the discovery once."""
    from dpcore.runs import RunStore, execute_release
    from dpcore.workspace import Workspace

    ws = Workspace(tmp_path / "ws")
    prep, found = _discovered_once(Ledger(ws))
    wl = Workload.all_kway(prep.domain, 1)
    for _ in range(2):
        _, _, run_id = execute_release(ws, prep.dataset, wl, "gaussian", 0.5, 1e-8, schema_release=found)
        card = RunStore(ws).get(run_id)["card"]
        assert [p["step"] for p in card["privacy"]["parts"]][0] == "schema discovery"
        assert card["data"]["schema_discovery"]["epsilon"] == 0.5 and card["privacy"]["epsilon"] == 1.0
    total = Ledger(ws).total("digest-of-the-file")
    assert total["runs"] == 3 and total["epsilon"] <= 0.5 + 2 * 0.5 + 1e-9


def test_a_free_schema_release_carries_exclusions_and_renames_only():
    """A declared schema (nothing discovered, ε_d = 0): the card lists what was left out and renamed; its privacy
    section is the mechanism's alone."""
    ds = planted_dataset(n=500)
    free = {
        "card_data": {"n": 500, "excluded": [{"name": "id", "reason": "excluded by the user"}], "renamed": []},
        "epsilon": 0.0,
        "delta": 0.0,
        "run": None,
    }
    rel, _ = run_release(ds, Workload.all_kway(ds.domain, 1), "gaussian", 1.0, None, schema_release=free, ledger=None)
    assert rel.card["data"]["excluded"] == free["card_data"]["excluded"] and "schema_discovery" not in rel.card["data"]
    assert "parts" not in rel.card["privacy"] and rel.card["privacy"]["epsilon"] == 1.0


def test_a_workload_left_mostly_noise_is_warned_on_both_paths():
    """The public pre-run warning (σ from the plan, n, the largest marginal) lands in the release's warnings, for a
    coded dataset and for a raw table (after its discovery share: the mechanism's own σ); none when the noise is
    small against the cells."""
    from dpcore.release import plan_warnings, release_table
    from dpcore.workload import workload_noise_warning

    ds = planted_dataset(n=400)
    wl = Workload.all_kway(ds.domain, 2)
    rel, _ = run_release(ds, wl, "gaussian", 0.05, None, seed=1, ledger=None)
    sigma = plan_release(ds.n, wl, "gaussian", 0.05, None)["sigma_counts"]
    expected = workload_noise_warning(wl, sigma, ds.n)
    assert expected and expected in rel.warnings
    assert plan_warnings({"sigma_counts": sigma}, wl, ds.n) == [expected] and plan_warnings({}, wl, ds.n) == []
    loud, _ = run_release(ds, wl, "gaussian", 20.0, None, seed=1, ledger=None)
    assert not any("mostly noise" in w for w in loud.warnings)
    df = pd.DataFrame({"a": ["x", "y"] * 100, "b": ["u", "v", "w", "z"] * 50})
    declared = {"attributes": [{"name": "a", "values": ["x", "y"]}, {"name": "b", "values": ["u", "v", "w", "z"]}]}
    quiet, _ = release_table(
        df, "gaussian", 0.05, workload={"k": 2, "marginals": "all"}, ledger=None, seed=2, schema=declared
    )  # a tiny budget on purpose (the schema declared: at ε = 0.05 nothing could be discovered)
    assert any("mostly noise" in w for w in quiet.warnings)


def test_the_default_workload_leaves_out_pairs_this_runs_noise_would_drown():
    """On the bundled Adult at ε = 1 the plain default includes a 714-cell pair whose cells hold ~46 rows against
    noise of ~52: the default is fitted to the run's public noise, so the newcomer's first release warns of
    nothing; a workload the user chose is left as chosen (and warned about)."""
    from dpcore.data import bundled_adult, bundled_adult_domain, bundled_adult_table
    from dpcore.mechanisms import registry
    from dpcore.release import fitted_default_workload, plan_warnings, release_table
    from dpcore.workload import default_workload

    ds = bundled_adult()
    mech = registry.get("gaussian")
    budget, vparams = Budget(1.0, 1.0 / ds.n**2), mech.validate_params({})
    plain = default_workload(ds.domain, ds.n)
    assert plan_warnings(mech().plan(ds.n, plain, budget, vparams), plain, ds.n)  # what the old default did
    fitted = fitted_default_workload(ds.domain, ds.n, mech, budget, vparams)
    assert plan_warnings(mech().plan(ds.n, fitted, budget, vparams), fitted, ds.n) == []
    one_way = [(a,) for a in range(len(ds.domain))]
    assert list(fitted.marginals[: len(one_way)]) == one_way and fitted.n_marginals > len(one_way)
    rel, _ = release_table(bundled_adult_table(), "gaussian", 1.0, schema=bundled_adult_domain(), ledger=None, seed=1)
    assert not any("mostly noise" in w for w in rel.warnings)
    chosen, _ = release_table(
        bundled_adult_table(), "gaussian", 1.0, schema=bundled_adult_domain(), workload={"k": 3, "marginals": 8},
        ledger=None, seed=1,
    )  # fmt: skip
    assert any("mostly noise" in w for w in chosen.warnings)


def test_a_workload_the_private_schema_cannot_carry_says_why_and_charges_only_the_discovery(tmp_path):
    """A raw table whose private schema keeps one column (an identifier-like ticket and a 25-valued city release
    nothing): the run stops before the mechanism reads the data, the message names what was kept and what was
    charged, and the ledger agrees."""
    from dpcore.release import release_table

    rng = np.random.default_rng(1)
    n = 1_500
    df = pd.DataFrame(
        {
            "ticket": [f"T{i:07d}" for i in rng.permutation(n)],
            "city": rng.choice([f"c{i}" for i in range(25)], n),
            "member": rng.choice(["yes", "no"], n),
        }
    )
    ledger = Ledger(str(tmp_path))
    # The released schema keeps one column: the run stops before the mechanism (issue 22), charged the discovery.
    with pytest.raises(DPCoreError) as err:
        release_table(df, "projection", 1.0, workload={"k": 3, "marginals": "all"}, ledger=ledger, seed=3)
    msg = str(err.value)
    assert "The private schema kept only" in msg and "did not run" in msg
    [entry] = ledger.entries()
    assert entry["status"] == "settled" and f"ε = {entry['epsilon']:.3g} was charged" in msg
    assert entry["epsilon"] < 1.0
    # Forced on, the 3-way workload cannot be built on what was kept: said, and again only the discovery charged.
    with pytest.raises(DPCoreError) as err:
        release_table(df, "projection", 1.0, workload={"k": 3, "marginals": "all"}, ledger=ledger, seed=3, force=True)
    msg = str(err.value)
    assert "larger than the number of attributes" in msg and "The private schema kept" in msg
    second = ledger.entries()[-1]
    assert len(ledger.entries()) == 2 and f"ε = {second['epsilon']:.3g} was charged" in msg


def test_the_documented_library_path_charges_the_discovery_and_states_it_on_the_card(tmp_path):
    """Issue 24, finding 5: prepare_table then run_release spent the discovery's share with no ledger entry and a
    card that stated only the mechanism's ε.  Now prepare_table charges it before reading the data, and a charged
    release of a discovered schema must carry it (the card then states the total)."""
    from dpcore.privacy.ledger import Ledger
    from dpcore.privacy.samplers import Randomness
    from dpcore.tabular import discovery_budget, prepare_table

    rng = np.random.default_rng(2)
    n = 4000
    df = pd.DataFrame({"city": rng.choice(["a", "b", "c"], n), "age": rng.integers(18, 90, n)})
    df.attrs["source_digest"] = "the-file"
    ledger = Ledger(str(tmp_path))
    eps_d, delta_d, _ = discovery_budget(df.columns, epsilon=1.0, delta=1e-9)
    prep = prepare_table(df, epsilon=1.0, delta=1e-9, noise=Randomness(3), ledger=ledger)
    [entry] = ledger.entries("the-file")
    assert entry["run"] == prep.run_id and entry["status"] == "settled"
    assert (entry["epsilon"], entry["delta"]) == pytest.approx((eps_d, delta_d))
    wl = Workload.all_kway(prep.domain, 1)
    with pytest.raises(BudgetError, match="schema_release"):
        run_release(prep.dataset, wl, "gaussian", 1.0 - eps_d, 1e-9 - delta_d, ledger=ledger, seed=1)
    assert len(ledger.entries("the-file")) == 1  # refused before anything was charged
    rel, _ = run_release(
        prep.dataset, wl, "gaussian", 1.0 - eps_d, 1e-9 - delta_d, ledger=ledger, seed=1,
        schema_release=prep.schema_release(),
    )  # fmt: skip
    assert rel.card["privacy"]["epsilon_spent"] == pytest.approx(1.0)  # the whole guarantee, schema included
    assert rel.card["privacy"]["parts"][0]["run"] == prep.run_id
    assert ledger.total("the-file")["epsilon"] == pytest.approx(1.0)


def test_the_card_says_which_marginals_the_default_workload_chose_and_why(tmp_path):
    """Issue 23: the default workload is said on the card (and by the CLI and the Results page); a workload the user
    chose carries no such note."""
    from dpcore.release import release_table

    from .tables import kitchen_sink

    df = kitchen_sink(3000)[["sex", "country", "age", "priors"]]
    schema = {
        "attributes": [
            {"name": "sex", "kind": "categorical", "values": ["Female", "Male"]},
            {"name": "country", "kind": "categorical", "values": ["FR", "DE"], "other": True},
            {"name": "age", "kind": "numeric", "lower": 0, "upper": 100, "integer": True},
            {"name": "priors", "kind": "numeric", "lower": 0, "upper": 40, "integer": True},
        ]
    }
    rel, _ = release_table(df, "projection", 1.0, schema=schema, seed=0, ledger=None)
    note = rel.card["workload"]["chosen_by"]
    pairs = sum(len(m) == 2 for m in rel.workload.marginals)
    assert note.startswith("the default workload: all 4 one-way marginals")
    assert f"{pairs} of the 6 two-way marginals" in note if pairs else "one-way marginals only" in note
    rel2, _ = release_table(df, "projection", 1.0, schema=schema, seed=0, ledger=None, workload={"k": 1})
    assert "chosen_by" not in rel2.card["workload"]
