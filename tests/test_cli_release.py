"""`python -m dpcore release` end to end on a small sample of adult_pgm (real SCIP, real files)."""

import json
import math
import os
import subprocess
import sys

import pandas as pd
import pytest

from dpcore.cli import main

from .conftest import ROOT, SHARED_DATA
from .tables import coded_adult

COLUMNS = ["workclass", "education-num", "marital-status", "race", "sex", "income>50K"]


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    d = tmp_path_factory.mktemp("pgm")
    coded_adult(d, COLUMNS, 3000, "small")
    return d


def run_cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "dpcore", "release", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "DPCORE_WORKSPACE": os.environ["DPCORE_WORKSPACE"]},
    )


def test_release_dualquery_end_to_end(sample):
    out = run_cli(
        "--data",
        "small.csv",
        "--domain",
        "small-domain.json",
        "--k",
        "3",
        "--marginals",
        "4",
        "--workload-seed",
        "0",
        "--mechanism",
        "dualquery",
        "--epsilon",
        "1",
        "--param",
        "samples=100",
        "--seed",
        "5",
        "--out",
        "synth.csv",
        "--report",
        "report.json",
        "--card",
        "card.json",
        cwd=sample,
    )
    assert out.returncode == 0, out.stderr
    assert "6/6" in out.stderr  # the progress bar (tqdm) reached the last round
    assert "(default 1/n²)" in out.stdout
    rep = json.loads((sample / "report.json").read_text())
    n = 3000
    assert rep["mechanism"] == "dualquery" and rep["epsilon"] == 1.0
    assert rep["delta"] == pytest.approx(1 / n**2) and "default 1/n²" in rep["delta_note"]
    assert 0 < rep["epsilon_spent"] <= 1.0
    assert rep["n_queries"] > 0 and 0 <= rep["mean_error"] <= rep["max_error"] <= 1
    assert rep["seconds"] > 0
    T = rep["release_card"]["derived_public_parameters"]["rounds"]
    assert rep["oracle"]["calls"] == T and sum(rep["oracle"]["statuses"].values()) == T
    assert rep["oracle"]["median_solve_seconds"] > 0
    synth = pd.read_csv(sample / "synth.csv")
    assert list(synth.columns) == COLUMNS and len(synth) == T
    card_text = (sample / "card.json").read_text()
    card = json.loads(card_text)
    assert card == json.loads(json.dumps(rep["release_card"]))
    assert "max_error" not in card_text and '"seed"' not in card_text


def test_release_gaussian_answers_table(sample, monkeypatch):
    monkeypatch.chdir(sample)
    assert (
        main(
            [
                "release",
                "--data",
                "small.csv",
                "--domain",
                "small-domain.json",
                "--marginals",
                "3",
                "--mechanism",
                "gaussian",
                "--epsilon",
                "0.5",
                "--delta",
                "1e-7",
                "--out",
                "answers.csv",
                "--report",
                "r.json",
                "--quiet",
            ]
        )
        == 0
    )
    rep = json.loads((sample / "r.json").read_text())
    assert rep["delta"] == 1e-7 and rep["delta_note"] == "given by the user"
    assert rep["oracle"] == {"calls": 0, "median_solve_seconds": None, "statuses": {}}
    table = pd.read_csv(sample / "answers.csv")
    assert list(table.columns) == ["marginal", "cell", "answer"] and len(table) == rep["n_queries"]


@pytest.mark.parametrize(
    "args, match",
    [
        (["--mechanism", "dualquery", "--epsilon", "0.00001"], "smallest ε that works"),
        (["--mechanism", "dqrs", "--epsilon", "0.00001"], "smallest ε that works"),
        (["--mechanism", "dualquery", "--param", "eta=50"], "eta = '50' is outside the allowed range"),
        (["--mechanism", "nosuch"], "Unknown mechanism"),
    ],
)
def test_bad_input_is_one_line_and_nothing_written(sample, args, match, monkeypatch, capsys):
    monkeypatch.chdir(sample)
    code = main(
        [
            "release",
            "--data",
            "small.csv",
            "--domain",
            "small-domain.json",
            "--marginals",
            "2",
            "--out",
            "bad.csv",
            *args,
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and match in err and "Traceback" not in err
    assert not (sample / "bad.csv").exists()


def test_mwem_refuses_a_large_domain_via_cli(sample, monkeypatch, capsys):
    monkeypatch.chdir(sample)
    code = main(
        [
            "release",
            "--data",
            str(SHARED_DATA / "adult_pgm.csv"),
            "--marginals",
            "2",
            "--mechanism",
            "mwem",
            "--out",
            "m.csv",
        ]
    )
    size = math.prod(json.loads((SHARED_DATA / "adult_pgm-domain.json").read_text()).values())
    assert code == 2 and f"{size:,} possible records" in capsys.readouterr().err


def test_a_workload_that_would_be_mostly_noise_is_warned_before_the_spend(sample, monkeypatch, capsys):
    """The warning is public (σ from the plan, n, the largest marginal's cells) and comes before the cost line, so
    the user can stop before anything is charged; it is printed once."""
    from dpcore.data import load_pgm
    from dpcore.release import plan_release
    from dpcore.workload import Workload, workload_noise_warning

    monkeypatch.chdir(sample)
    args = ["--data", "small.csv", "--domain", "small-domain.json", "--k", "3", "--marginals", "4"]
    common = ["--mechanism", "gaussian", "--seed", "1", "--out", "a.csv"]
    assert main(["release", *args, *common, "--epsilon", "0.01"]) == 0
    err = capsys.readouterr().err
    ds = load_pgm("small.csv", "small-domain.json")
    wl = Workload.random_kway(ds.domain, 3, 4, seed=0, max_cells=ds.n)
    expected = workload_noise_warning(wl, plan_release(ds.n, wl, "gaussian", 0.01, None)["sigma_counts"], ds.n)
    assert expected and err.count(expected) == 1
    assert err.index(expected) < err.index("This run charges")
    assert main(["release", *args, *common, "--epsilon", "50"]) == 0
    assert "mostly noise" not in capsys.readouterr().err


def _seeded_release(df: pd.DataFrame, tmp_path, monkeypatch) -> dict:
    """`dpcore release` of ``df`` with nothing declared at ε = 1 (seed 0, a demo) into tmp_path/synth.csv; the card's
    schema by column name."""
    df.to_csv(tmp_path / "table.csv", index=False)
    monkeypatch.chdir(tmp_path)
    args = ["release", "--data", "table.csv", "--epsilon", "1", "--seed", "0", "--out", "synth.csv"]
    assert main([*args, "--card", "card.json", "--workspace", str(tmp_path / "ws"), "--quiet"]) == 0
    return {a["name"]: a for a in json.loads((tmp_path / "card.json").read_text())["data"]["schema"]}


def test_timestamps_of_three_months_come_back_inside_those_months(tmp_path, monkeypatch):
    """Orders placed from March to May 2025 (3,000 rows, seconds in the stamps) with nothing declared, at ε = 1 (a
    seeded demo): the dates' years are located as 2025 and the months' look trims the empty months around March-May,
    so the rows come back in those months, written in the input's shape -- they came back spread over the year (ten
    bins over 2025: the bin holding March drawn from February on)."""
    import numpy as np

    rng = np.random.default_rng(5)
    n = 3000
    stamps = pd.Timestamp("2025-03-01") + pd.to_timedelta(rng.integers(0, 92 * 86400, n), unit="s")
    df = pd.DataFrame({"placed": stamps.strftime("%Y-%m-%dT%H:%M:%S"), "country": rng.choice(["US", "CA", "MX"], n),
                       "quantity": rng.integers(1, 6, n)})  # fmt: skip
    schema = _seeded_release(df, tmp_path, monkeypatch)
    assert schema["placed"]["kind"] == "datetime" and schema["placed"]["format"] == "%Y-%m-%dT%H:%M:%S"
    placed = pd.to_datetime(pd.read_csv(tmp_path / "synth.csv")["placed"], format="%Y-%m-%dT%H:%M:%S")
    # seeds 0-4: no row outside (a thin edge month kept on noise would hold a few); before the months' look 4-15%
    outside = float((~placed.between(pd.Timestamp("2025-03-01"), pd.Timestamp("2025-06-01"))).mean())
    assert outside <= 0.02, outside


def test_year_columns_with_nothing_declared_come_back_as_years(tmp_path, monkeypatch):
    """A clinic extract of 3,000 rows with nothing declared, at ε = 1 (a seeded demo): the visit year (2019-2023)
    and the year of birth are read as years (their headers name a year, their numbers lie in 1900-2099), located on
    the dates' one-bin-per-year grid and written back as whole years inside the years the table holds -- they came
    back as draws over the power-of-two range [1024, 2047] (visit years of 1234)."""
    import numpy as np

    rng = np.random.default_rng(7)
    n = 3000
    birth = np.clip(rng.normal(1970, 15, n).round(), 1925, 2006).astype(int)
    visit = rng.choice([2019, 2020, 2021, 2022, 2023], n, p=[0.1, 0.15, 0.2, 0.25, 0.3])
    df = pd.DataFrame({"visit_year": visit, "birth_year": birth, "sex": rng.choice(["F", "M"], n),
                       "score": rng.integers(1, 6, n)})  # fmt: skip
    schema = _seeded_release(df, tmp_path, monkeypatch)
    for name in ("visit_year", "birth_year"):
        assert (schema[name]["kind"], schema[name]["granularity"], schema[name]["format"]) == ("datetime", "year", "%Y")
    synth = pd.read_csv(tmp_path / "synth.csv")
    visits = synth["visit_year"].dropna()
    # Whole years at the real ones: a neighbouring year joined on noise (the thin-edge rule, ~5% a side) may keep a
    # few rows where its noisy share stays over 1σ (seeds 0-5: 2018 in two, 0.4% and 0.2% of the rows).
    assert visits.between(2018, 2024).all() and (visits == visits.round()).all()
    assert float((~visits.between(2019, 2023)).mean()) <= 0.02
    born = synth["birth_year"].dropna()
    assert born.between(1900, 2023).all() and abs(born.median() - 1970) <= 5


def test_a_table_of_one_row_is_refused_for_its_size_not_for_a_delta_the_user_never_gave(tmp_path, capsys):
    """δ defaults to 1/n², which is 1 on one row: the refusal said "δ must be in [0, 1) (got 1.0)"."""
    path = tmp_path / "one.csv"
    path.write_text("a,b\n1,2\n")
    code = main(["release", "--data", str(path), "--epsilon", "1", "--out", str(tmp_path / "o.csv"), "--quiet",
                 "--workspace", str(tmp_path / "ws")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "1 row(s)" in err and "δ" not in err and "Traceback" not in err
    assert not (tmp_path / "o.csv").exists()
