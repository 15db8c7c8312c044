"""`python -m dpcore learn` and the evaluation loop: main path, bad input, solver failures."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from dpcore.errors import BudgetError, OracleError, ParameterError
from dpcore.executors import SerialExecutor
from dpcore.cli.learn import add_parser as add_learn_parser, run as run_learn
from dpcore.learning.evaluate import LearnSettings, evaluate, parse_epsilons, parse_methods
from dpcore.learning.features import ADULT_LABEL, ADULT_POSITIVE, ADULT_SEVEN, FeatureEncoding, prepare
from dpcore.learning.model import LearnedModel


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
    assert not model.certified and "does not hold" in model.to_dict()["warning"]


def test_evaluation_does_not_depend_on_the_executor(adult):
    enc = FeatureEncoding.build(adult.domain, ADULT_LABEL, ADULT_SEVEN, ADULT_POSITIVE)
    data = prepare(adult, enc, np.random.default_rng(0), max_rows=1000)
    a = evaluate(data, ["dplr", "rspm"], [1.0], 2, LearnSettings(), np.random.default_rng(7))
    b = evaluate(data, ["dplr", "rspm"], [1.0], 2, LearnSettings(), np.random.default_rng(7), executor=SerialExecutor())
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
        data, ["rspm-gauss", "rspm-conj", "nonprivate"], [8.0], 1, LearnSettings(delta=1e-6), np.random.default_rng(3)
    )  # PRSMA end to end with SCIP: tests/test_learn_private.py
    rows = {r["method"]: r for r in ev.summary()}
    assert set(rows) == {"rspm-gauss", "rspm-conj", "nonprivate"}
    conj = next(r for r in ev.records if r["method"] == "rspm-conj")["model"]
    assert conj.kind == "conjunction" and set(np.unique(conj.params)) <= {0, 1}
    ref = next(r for r in ev.records if r["method"] == "nonprivate")
    assert ref["epsilon"] is None and ref["model"].privacy.startswith("NOT private")
    # the reference is the exact training optimum: no private halfspace on the same grid beats it on training data
    gauss = next(r for r in ev.records if r["method"] == "rspm-gauss")
    assert gauss["train_accuracy"] <= ref["train_accuracy"] + 1e-12
