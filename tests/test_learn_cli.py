"""`python -m dpcore learn` and the evaluation loop: main path, bad input, solver failures."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from dpcore.cli.learn import add_parser as add_learn_parser
from dpcore.cli.learn import run as run_learn
from dpcore.errors import BudgetError, OracleError, ParameterError
from dpcore.executors import SerialExecutor
from dpcore.learning.evaluate import LearnSettings, evaluate, parse_epsilons, parse_methods
from dpcore.learning.features import ADULT_LABEL, ADULT_POSITIVE, ADULT_SEVEN, FeatureEncoding, prepare
from dpcore.learning.model import LearnedModel, schema_statement
from dpcore.privacy.samplers import Randomness


def _parse(argv):
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command")
    add_learn_parser(sub)
    return p.parse_args(["learn", *argv])


def test_learn_cli_main_path_writes_results_and_models(tmp_path, capsys):
    out, models = tmp_path / "res.json", tmp_path / "models"
    rc = run_learn(
        _parse(
            [
                "--methods",
                "rspm,dplr,opdisc",
                "--epsilons",
                "1,4",
                "--runs",
                "2",
                "--seed",
                "3",
                "--max-rows",
                "1200",
                "--out",
                str(out),
                "--models",
                str(models),
                "--json",
                "--quiet",
            ]
        )
    )
    assert rc == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    rows = {(r["method"], r["epsilon"]): r for r in last["summary"]}
    assert set(rows) == {(m, e) for m in ("rspm", "dplr", "opdisc") for e in (1.0, 4.0)}
    assert all(r["runs"] == 2 and 0.5 < r["accuracy_mean"] <= 1 for r in rows.values())
    saved = json.loads(out.read_text())
    assert len(saved["records"]) == 12 and saved["encoding"]["label"] == ADULT_LABEL
    model = json.loads((models / "opdisc_eps1.json").read_text())
    assert model["kind"] == "halfspace" and set(model["weights"]) == set(saved["encoding"]["columns"])
    assert model["public_parameters"]["sigma"] > 0 and "replace-one" in model["neighbours"]
    # a seeded evaluation is a demo: every file says so, with its ε, δ, method and how it was picked
    assert model["guarantee"] == "none" and "seed" in model["guarantee_reason"]
    assert (model["method"], model["epsilon"], model["delta"]) == ("opdisc", 1.0, 1.0 / 32561**2)
    assert model["selection"]["selected_after_test_accuracy"] is False
    assert last["guarantee"] == "none" and saved["guarantee"] == "none"
    assert sorted(p.name for p in models.iterdir()) == sorted(
        f"{m}_eps{e}.json" for m in ("rspm", "dplr", "opdisc") for e in ("1", "4")
    )


def test_models_carry_their_guarantee_and_the_reference_is_never_written(tmp_path, capsys):
    """Issue 12, finding 6: without --seed the noise is cryptographic and the models say "differential
    privacy"; the non-private reference runs but no file is written for it."""
    models = tmp_path / "models"
    argv = ["--methods", "dplr,nonprivate", "--epsilons", "2", "--runs", "1", "--max-rows", "800"]
    assert run_learn(_parse([*argv, "--models", str(models), "--json", "--quiet"])) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["guarantee"] == "differential privacy"
    assert [p.name for p in models.iterdir()] == ["dplr_eps2.json"]
    model = json.loads((models / "dplr_eps2.json").read_text())
    assert model["guarantee"] == "differential privacy" and "guarantee_reason" not in model
    assert model["epsilon"] == 2.0 and model["delta"] == 0.0 and model["method"] == "dplr"
    assert model["selection"]["selected_after_test_accuracy"] is False


def test_a_model_never_serialises_the_reference_and_defaults_to_picked_after_accuracy(adult):
    enc = FeatureEncoding.build(adult.domain, ADULT_LABEL, ADULT_SEVEN[:3], ADULT_POSITIVE)
    data = prepare(adult, enc, np.random.default_rng(0), max_rows=500)
    ev = evaluate(data, ["dplr", "nonprivate"], [1.0], 1, LearnSettings())
    ref = next(r for r in ev.records if r["method"] == "nonprivate")
    assert "model" not in ref and ref["accuracy"] is not None  # an internal figure only
    dplr = next(r for r in ev.records if r["method"] == "dplr")["model"]
    assert dplr.to_dict()["selection"]["selected_after_test_accuracy"] is True  # the safe default
    reference = LearnedModel("nonprivate", "halfspace", np.zeros(4), list("abcd"), None, 0.0, "NOT private")
    with pytest.raises(ParameterError, match="never written"):
        reference.to_json()


def test_delta_of_at_least_one_over_n_is_refused_on_the_learning_path(capsys):
    """Issue 12, finding 10: n is the table's row count (32,561 for the bundled Adult), never the training
    split's; the message names n and the largest allowed δ."""
    from dpcore.cli import main

    argv = ["learn", "--methods", "opdisc", "--epsilons", "1", "--runs", "1", "--max-rows", "800", "--quiet"]
    assert main([*argv, "--delta", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "32,561" in err and "1/n" in err and f"{1 / 32561:.3g}" in err
    # 1/n of the 800-row subsample would pass a check on the wrong n: still refused
    assert main([*argv, "--delta", str(1 / 1000)]) == 2
    with pytest.raises(BudgetError):
        LearnSettings(delta=1.5)
    assert LearnSettings(delta=1e-9).delta_for(32561) == 1e-9
    assert LearnSettings().delta_for(32561) == 1.0 / 32561**2


def test_learn_cli_bad_input_is_typed():
    with pytest.raises(ParameterError, match="positive"):
        run_learn(_parse(["--label", "race", "--features", "sex", "--quiet"]))
    with pytest.raises(ParameterError, match="Unknown method"):
        run_learn(_parse(["--methods", "magic", "--quiet"]))
    with pytest.raises(ParameterError, match="positive number"):
        parse_epsilons("1,-2")
    with pytest.raises(OracleError, match="point binaries") as err:
        run_learn(_parse(["--features", "age,education,occupation,native-country,workclass", "--quiet"]))
    assert "constraint entries" in str(err.value) and "--max-rows" in str(err.value)
    with pytest.raises(BudgetError, match="oracle calls"):
        run_learn(_parse(["--methods", "prsma", "--epsilons", "4", "--quiet"]))


def test_solver_failures_are_counted_and_flagged(adult):
    enc = FeatureEncoding.build(adult.domain, ADULT_LABEL, ADULT_SEVEN, ADULT_POSITIVE)
    data = prepare(adult, enc, np.random.default_rng(0), max_rows=3000)
    ev = evaluate(data, ["rspm"], [1.0], 2, LearnSettings(time_limit=1e-4), np.random.default_rng(1))
    fails = ev.failures()
    assert len(fails) == 2 and all(f["status"] != "optimal" for f in fails)
    assert ev.summary()[0]["solver_failures"] == 2
    model: LearnedModel = ev.records[0]["model"]
    stated = schema_statement(adult.domain)  # the bundled codebook: declared
    assert not model.certified and "does not hold" in model.to_dict(schema=stated)["warning"]
    assert model.guarantee == "not established" and model.to_dict(schema=stated)["guarantee"] == "not established"
    assert model.to_dict()["guarantee"] == "none"  # a file that does not say where its schema came from
    assert ev.records[0]["guarantee"] == "not established"


def test_evaluation_does_not_depend_on_the_executor(adult):
    enc = FeatureEncoding.build(adult.domain, ADULT_LABEL, ADULT_SEVEN, ADULT_POSITIVE)
    data = prepare(adult, enc, np.random.default_rng(0), max_rows=1000)
    a = evaluate(data, ["dplr", "rspm"], [1.0], 2, LearnSettings(), Randomness(7))
    b = evaluate(data, ["dplr", "rspm"], [1.0], 2, LearnSettings(), Randomness(7), executor=SerialExecutor())
    assert [r["accuracy"] for r in a.records] == [r["accuracy"] for r in b.records]
    assert [list(r["model"].params) for r in a.records] == [list(r["model"].params) for r in b.records]


def test_parse_methods_dedupes_and_validates():
    assert parse_methods("opdisc, rspm,opdisc") == ["opdisc", "rspm"]


def test_learn_is_wired_into_the_dpcore_cli(capsys):
    from dpcore.cli import main

    assert main(["learn", "--label", "race", "--features", "sex"]) == 2
    assert "positive" in capsys.readouterr().err
    assert (
        main(
            [
                "learn",
                "--methods",
                "dplr",
                "--epsilons",
                "2",
                "--runs",
                "1",
                "--max-rows",
                "800",
                "--seed",
                "1",
                "--quiet",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["summary"][0]["method"] == "dplr"


def test_every_method_runs_through_the_evaluation(adult):
    enc = FeatureEncoding.build(adult.domain, ADULT_LABEL, ADULT_SEVEN[:4], ADULT_POSITIVE)
    data = prepare(adult, enc, np.random.default_rng(2), max_rows=600)
    ev = evaluate(
        data, ["rspm-gauss", "rspm-conj", "nonprivate"], [8.0], 1, LearnSettings(delta=1e-6), Randomness(3)
    )  # PRSMA end to end with SCIP: tests/test_learn_private.py
    rows = {r["method"]: r for r in ev.summary()}
    assert set(rows) == {"rspm-gauss", "rspm-conj", "nonprivate"}
    conj = next(r for r in ev.records if r["method"] == "rspm-conj")["model"]
    assert conj.kind == "conjunction" and set(np.unique(conj.params)) <= {0, 1}
    ref = next(r for r in ev.records if r["method"] == "nonprivate")
    assert ref["epsilon"] is None and "model" not in ref and ref["guarantee"] == "none"
    # the reference is the exact training optimum: no private halfspace on the same grid beats it on training data
    gauss = next(r for r in ev.records if r["method"] == "rspm-gauss")
    assert gauss["train_accuracy"] <= ref["train_accuracy"] + 1e-12


def test_balanced_option_runs_privately_end_to_end(capsys, adult):
    """--balance: the training set is 2m rows, m from a DP count; every run's ε includes the count's share and
    its learner runs at (ε − ε_c)/2 (group privacy 2)."""
    from dpcore.cli import main

    argv = ["learn", "--methods", "dplr", "--epsilons", "1", "--runs", "2", "--max-rows", "1500", "--balance"]
    assert main([*argv, "--seed", "4", "--quiet", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["n_train"] < 1500 - round(0.3 * 1500) and out["n_train"] % 2 == 0
    enc = FeatureEncoding.build(adult.domain, ADULT_LABEL, ADULT_SEVEN, ADULT_POSITIVE)
    data = prepare(adult, enc, np.random.default_rng(4), max_rows=1500, balance=True)
    ev = evaluate(data, ["dplr"], [1.0], 2, LearnSettings(), Randomness(4))
    assert ev.data["balance"]["rows_per_class"] * 2 == ev.n_train
    for r in ev.records:
        assert r["epsilon_spent"] == 1.0 and r["model"].epsilon == 1.0
        assert r["model"].public["learner_epsilon"] == pytest.approx((1.0 - 0.05) / 2)


def test_an_evaluation_is_charged_to_the_workspace_ledger_before_it_runs(tmp_path, capsys):
    """Every private run touched the training rows: the evaluation reserves the sum of its runs' (ε, δ) in the
    workspace before starting, against the dataset's cap; over the cap nothing runs and nothing is charged."""
    from dpcore.cli import main
    from dpcore.data import bundled_adult
    from dpcore.privacy.ledger import Ledger

    ws = str(tmp_path / "ws")
    argv = ["learn", "--workspace", ws, "--methods", "dplr,nonprivate", "--runs", "2", "--max-rows", "600"]
    assert main([*argv, "--epsilons", "1,2", "--budget", "10"]) == 0
    err = capsys.readouterr().err
    assert "charges ε = 6" in err and "cap of ε = 10" in err
    key = bundled_adult().ledger_key
    total = Ledger(ws).total(key)
    assert total["epsilon"] == pytest.approx(6.0) and total["runs"] == 1 and total["entries"] == 4
    # a second evaluation of ε = 2 × 3 runs would take the total to 12 > 10: refused before any run
    assert main([*argv[:-2], "--runs", "3", "--max-rows", "600", "--epsilons", "2"]) == 2
    assert "cap" in capsys.readouterr().err
    assert Ledger(ws).total(key)["epsilon"] == pytest.approx(6.0)
