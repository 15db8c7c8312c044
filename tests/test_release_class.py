"""Mechanisms over the implicit class of all width-≤k conjunctions: the release's
internal evaluation estimates their class error; the card stays free of it."""

import json

from dpcore.release import run_release
from dpcore.workload import Workload

from .conftest import planted_dataset


def test_synopsis_release_has_class_error_and_public_synopsis():
    ds = planted_dataset(n=3000, shape=(3, 2, 4, 3))
    wl = Workload.all_kway(ds.domain, 2)
    rel, internal = run_release(ds, wl, "privlearn", 50.0, params={"k": 2, "alpha": 0.2}, seed=0)
    ce = internal.report["class_error"]
    assert ce["n_samples"] == 10_000 and 0 <= ce["mean_error"] <= ce["max_error"] <= 1
    syn = rel.synopsis_json()
    text = json.dumps(syn) + json.dumps(rel.card)
    assert "class_error" not in text and "seed" not in json.dumps(rel.card["parameters"])
    # the CSV download holds the synopsis' answers for the workload, one row per cell
    assert rel.synthetic_csv().decode().count("\n") == wl.n_queries + 1


def test_rows_mechanism_with_a_class_width_is_measured_on_the_class():
    ds = planted_dataset(n=500, shape=(3, 2, 3))
    wl = Workload.all_kway(ds.domain, 2)
    rel, internal = run_release(ds, wl, "oraclequery", 50.0, params={"k": 2, "rounds": 3, "samples": 4}, seed=1)
    assert rel.rows is not None and internal.report["class_error"]["max_error"] >= 0
    assert "class_error" not in json.dumps(rel.card)


def test_class_width_evaluates_any_rows_release_and_sets_k_only_where_it_exists():
    ds = planted_dataset(n=400, shape=(3, 2, 3))
    wl = Workload.all_kway(ds.domain, 2)
    _, internal = run_release(
        ds, wl, "fem", 5.0, params={"rounds": 3, "samples": 3}, seed=0, class_width=3, executor=None
    )
    assert internal.report["class_error"]["class"] == "all conjunctions of width ≤ 3"
    own, own_internal = run_release(ds, wl, "privlearn", 50.0, params={"alpha": 0.2}, seed=0, class_width=2)
    assert own.params["k"] == 2 and own_internal.report["class_error"]["class"].endswith("≤ 2")
    _, answers_only = run_release(ds, wl, "gaussian", 1.0, seed=0, class_width=2)
    assert "class_error" not in answers_only.report


def test_cli_release_of_a_synopsis_over_the_implicit_class(tmp_path):
    from dpcore.cli import main

    out, rep, syn = tmp_path / "answers.csv", tmp_path / "report.json", tmp_path / "synopsis.json"
    code = main(
        [
            "release",
            "--data",
            "adult",
            "--k",
            "2",
            "--marginals",
            "3",
            "--mechanism",
            "privlearn",
            "--epsilon",
            "2",
            "--class-width",
            "2",
            "--seed",
            "0",
            "--quiet",
            "--out",
            str(out),
            "--report",
            str(rep),
            "--synopsis",
            str(syn),
        ]
    )
    assert code == 0
    report = json.loads(rep.read_text())
    assert report["internal_evaluation"]["class_error"]["class"] == "all conjunctions of width ≤ 2"
    assert "class_error" not in json.dumps(report["release_card"])
    assert json.loads(syn.read_text())["format"]
    assert out.read_text().splitlines()[0] == "marginal,cell,answer"
