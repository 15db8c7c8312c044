"""The persistent, capped privacy ledger: composition against closed forms, caps, concurrency, the CLI."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcore.errors import BudgetError
from dpcore.privacy.accounting import zcdp_to_eps_cks
from dpcore.privacy.ledger import BudgetExceeded, Entry, Ledger, compose, within_cap
from dpcore.workspace import Workspace

ROOT = Path(__file__).resolve().parent.parent


def test_basic_and_zcdp_totals_match_the_closed_forms():
    n = 1000
    entries = [Entry(1.0, 1e-7, rho=0.02), Entry(0.5, 0.0), Entry(0.3, 1e-8, rho=0.001)]
    tot = compose(entries, n)
    assert tot["epsilon"] == pytest.approx(1.8) and tot["delta"] == pytest.approx(1.1e-7)
    rho = 0.02 + 0.5**2 / 2 + 0.001  # a pure-ε entry is ε²/2-zCDP
    assert tot["rho"] == pytest.approx(rho)
    assert tot["delta_zcdp"] == pytest.approx(1 / n**2)  # converted at a FIXED δ, not at Σδ
    assert tot["epsilon_zcdp"] == pytest.approx(zcdp_to_eps_cks(rho, 1 / n**2))


def test_an_approximate_dp_entry_without_rho_makes_the_zcdp_total_unavailable():
    tot = compose([Entry(1.0, 1e-7, rho=0.02), Entry(0.5, 1e-9)], 1000)
    assert tot["rho"] is None and tot["epsilon_zcdp"] is None and tot["epsilon"] == pytest.approx(1.5)


def test_within_cap_uses_either_valid_bound():
    n = 10_000
    many_small = [Entry(0.1, 1e-9, rho=0.1**2 / 2)] * 40  # basic: ε = 4; zCDP: ρ = 0.2 -> ε ≈ 3.69 at 1e-8
    tot = compose(many_small, n)
    assert tot["epsilon"] == pytest.approx(4.0)
    assert within_cap(tot, 3.8, 1 / n) == "zCDP"
    assert within_cap(tot, 2.0, 1 / n) is None
    assert within_cap(compose([Entry(0.9, 1e-9)], n), 1.0, 1 / n) == "basic"
    # the δ cap holds on its own: Σδ must stay below 1/n
    assert within_cap(compose([Entry(0.1, 6e-5), Entry(0.1, 6e-5)], n), None, 1 / n) is None


def test_reserve_refuses_beyond_the_cap_and_charges_nothing(tmp_path):
    led = Ledger(Workspace(tmp_path))
    kw = {"dataset": "abc", "name": "people.csv", "n": 5000, "mechanism": "gaussian", "delta": 1e-9}
    led.reserve(run="r1", epsilon=0.8, budget=1.0, **kw)
    with pytest.raises(BudgetExceeded) as exc:
        led.reserve(run="r2", epsilon=0.8, budget=1.0, **kw)
    msg = str(exc.value)
    assert "0.8" in msg and "cap ε = 1" in msg and "people.csv" in msg
    led.reserve(run="r3", epsilon=0.1, **kw)
    tot = led.total("abc")
    assert tot["runs"] == 2 and tot["epsilon"] == pytest.approx(0.9) and tot["cap_epsilon"] == 1.0
    assert [c["note"] for c in led.cap_history("abc")] == ["set by --budget"]  # the same cap is not re-recorded


def test_settle_replaces_a_reservation_by_what_the_run_spent_never_more(tmp_path):
    from dpcore.mechanisms.base import SpendRecord

    led = Ledger(Workspace(tmp_path))
    led.reserve(dataset="d", name="d", n=100, run="r", mechanism="laplace", epsilon=1.0, delta=1e-4)
    led.settle("r", [SpendRecord(1.0, 0.0, None, "pure")])
    [e] = led.entries("d")
    assert (e["status"], e["epsilon"], e["delta"]) == ("settled", 1.0, 0.0)
    led.reserve(dataset="d", name="d", n=100, run="s", mechanism="x", epsilon=0.5, delta=1e-5)
    led.settle("s", [SpendRecord(0.7, 0.0)])  # more than reserved: the reservation stays
    assert [e["status"] for e in led.entries("d")] == ["settled", "reserved"]


def test_changing_a_cap_is_recorded(tmp_path):
    led = Ledger(Workspace(tmp_path))
    with pytest.raises(BudgetError, match="not in this workspace"):
        led.set_cap("nope", 1.0)
    led.set_cap("d", 2.0, name="d.csv", n=50, note="first")
    led.set_cap("d", 3.0, note="raised after review")
    assert led.cap("d") == (3.0, None)
    assert [(c["epsilon"], c["note"]) for c in led.cap_history("d")] == [(2.0, "first"), (3.0, "raised after review")]
    with pytest.raises(BudgetError):
        led.set_cap("d", -1.0)


def _reserve_in_process(path: str, run: str, barrier, out) -> None:
    led = Ledger(Workspace(path))
    barrier.wait()
    try:
        led.reserve(dataset="shared", name="t", n=10_000, run=run, mechanism="m", epsilon=0.6, delta=0.0, budget=1.0)
        out.put("ok")
    except BudgetExceeded:
        out.put("refused")


def test_two_processes_cannot_both_pass_a_cap(tmp_path):
    Ledger(Workspace(tmp_path))  # create the database first
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_reserve_in_process, args=(str(tmp_path), f"r{i}", barrier, out)) for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    results = sorted(out.get(timeout=5) for _ in procs)
    assert results == ["ok", "refused"]
    assert Ledger(Workspace(tmp_path)).total("shared")["epsilon"] == pytest.approx(0.6)


# ---------------------------------------------------------------------- the CLI, as the issue states it
def _cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "dpcore", *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env
    )


@pytest.fixture
def people(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "colour": rng.choice(["red", "green", "blue"], 600),
            "size": rng.choice(["S", "M", "L"], 600),
            "flag": rng.choice(["y", "n"], 600),
            "kind": rng.choice(["a", "b", "c", "d"], 600),
        }
    )
    df.to_csv(tmp_path / "people.csv", index=False)
    schema = {"attributes": [{"name": c, "kind": "categorical", "values": sorted(df[c].unique())} for c in df.columns]}
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    schema2 = {"attributes": schema["attributes"][:3]}
    (tmp_path / "schema2.json").write_text(json.dumps(schema2))
    return tmp_path


def test_two_releases_over_a_budget_then_a_smaller_one_on_another_schema(people):
    ws = str(people / "ws")
    base = [
        "release",
        "--data",
        "people.csv",
        "--mechanism",
        "gaussian",
        "--workspace",
        ws,
        "--budget",
        "1.0",
        "--k",
        "2",
        "--marginals",
        "3",
    ]
    first = _cli(*base, "--domain", "schema.json", "--epsilon", "0.8", "--out", "a.csv", "--card", "a.json", cwd=people)
    assert first.returncode == 0, first.stderr
    assert (people / "a.csv").exists() and "charges ε = 0.8" in first.stderr
    second = _cli(
        *base, "--domain", "schema.json", "--epsilon", "0.8", "--out", "b.csv", "--card", "b.json", cwd=people
    )
    assert second.returncode == 2
    line = second.stderr.strip().splitlines()[-1]
    assert line.startswith("error:") and "0.8" in line and "cap ε = 1" in line
    assert not (people / "b.csv").exists() and not (people / "b.json").exists()
    third = [
        "release",
        "--data",
        "people.csv",
        "--mechanism",
        "gaussian",
        "--workspace",
        ws,
        "--budget",
        "1.0",
        "--k",
        "1",
        "--marginals",
        "2",
        "--domain",
        "schema2.json",
        "--epsilon",
        "0.1",
        "--out",
        "c.csv",
    ]
    assert _cli(*third, cwd=people).returncode == 0
    led = _cli("ledger", "--workspace", ws, "--json", cwd=people)
    assert led.returncode == 0
    data = json.loads(led.stdout)  # stdout holds only that object
    [d] = data["datasets"]
    assert d["runs"] == 2 and d["epsilon"] == pytest.approx(0.9) and d["delta"] > 0
    assert {"dataset", "epsilon", "delta", "runs"} <= set(d)
    runs = json.loads(_cli("runs", "--workspace", ws, "--json", cwd=people).stdout)["runs"]
    assert len(runs) == 2 and {r["status"] for r in runs} == {"done"}


def test_seed_makes_a_demo_card_and_no_seed_a_private_one(people):
    ws = str(people / "ws")
    base = [
        "release",
        "--data",
        "people.csv",
        "--domain",
        "schema.json",
        "--mechanism",
        "gaussian",
        "--k",
        "2",
        "--marginals",
        "2",
        "--workspace",
        ws,
        "--epsilon",
        "0.5",
    ]
    assert _cli(*base, "--seed", "7", "--card", "demo.json", cwd=people).returncode == 0
    assert _cli(*base, "--card", "real.json", cwd=people).returncode == 0
    demo = json.loads((people / "demo.json").read_text())["privacy"]
    real = json.loads((people / "real.json").read_text())["privacy"]
    assert demo["guarantee"] == "none" and "seed" in demo["guarantee_reason"]
    assert real["guarantee"] == "differential privacy"


def test_delta_of_one_half_is_refused_by_release(people):
    out = _cli(
        "release",
        "--data",
        "people.csv",
        "--domain",
        "schema.json",
        "--mechanism",
        "gaussian",
        "--workspace",
        str(people / "ws"),
        "--delta",
        "0.5",
        "--out",
        "x.csv",
        cwd=people,
    )
    assert out.returncode == 2 and "1/n" in out.stderr and "600" in out.stderr
    assert not (people / "x.csv").exists()
