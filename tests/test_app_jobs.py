"""ui.jobs: runs owned by the server process, recorded in the workspace (no Streamlit session needed)."""

import threading
import time

import pytest

from dpcore.errors import BudgetError
from dpcore.privacy.ledger import Ledger
from dpcore.runs import RunStore
from dpcore.workspace import Workspace
from ui import jobs


@pytest.fixture
def ws(tmp_path):
    return Workspace(tmp_path / "ws")


def test_a_generic_target_reports_progress_its_result_and_artifacts(ws, planted):
    seen = {}

    def target(progress, cancel, run_id):
        seen["run_id"] = run_id
        Ledger(ws).reserve(
            dataset=planted.ledger_key,
            name="planted",
            n=planted.n,
            run=run_id,
            mechanism="learn",
            epsilon=0.5,
            delta=0.0,
        )
        for t in range(1, 4):
            progress(t, 3, f"step {t}", {"accuracy": 0.5 + t / 10})
        return {"evaluation": {"accuracy": 0.8}, "artifacts": {"model.json": b"{}"}, "extra": [1, 2]}

    run_id = jobs.start("learn", "my model", planted, target, request_key="k", epsilon=0.5, workspace=ws)
    snap = jobs.wait(run_id, 30, ws)
    assert snap["status"] == "done" and snap["kind"] == "learn" and snap["label"] == "my model"
    assert seen["run_id"] == run_id and jobs.result(run_id)["extra"] == [1, 2]
    row = RunStore(ws).get(run_id)
    assert row["evaluation"] == {"accuracy": 0.8} and set(row["artifacts"]) == {"model.json"}
    assert row["dataset"] == planted.ledger_key
    assert jobs.start("learn", "again", planted, target, request_key="k", workspace=ws) == run_id  # one click
    assert Ledger(ws).total(planted.ledger_key)["runs"] == 1


def test_cancel_from_another_session_stops_a_run_and_it_stays_charged(ws, planted):
    started = threading.Event()

    def target(progress, cancel, run_id):
        Ledger(ws).reserve(
            dataset=planted.ledger_key,
            name="planted",
            n=planted.n,
            run=run_id,
            mechanism="learn",
            epsilon=1.0,
            delta=0.0,
        )
        started.set()
        for t in range(10_000):
            progress(t, 10_000)
            time.sleep(0.01)

    run_id = jobs.start("learn", "long", planted, target, request_key=None, workspace=ws)
    assert started.wait(10)
    assert jobs.active("learn", ws) == [run_id] and jobs.active("release", ws) == []
    RunStore(ws).request_cancel(run_id)  # what jobs.cancel does from another session or process
    t0 = time.monotonic()
    snap = jobs.wait(run_id, 10, ws)
    assert snap["status"] == "cancelled" and time.monotonic() - t0 < 2
    assert "charge stays" in snap["error"]
    assert Ledger(ws).total(planted.ledger_key)["epsilon"] == pytest.approx(1.0)
    assert jobs.active(workspace=ws) == []


def test_a_run_refused_before_it_touched_the_data_leaves_no_trace(ws, planted):
    def target(progress, cancel):
        raise BudgetError("Privacy budget exceeded for planted: spent ε = 1 of the cap ε = 1.")

    run_id = jobs.start("learn", "refused", planted, target, request_key=None, workspace=ws)
    snap = jobs.wait(run_id, 10, ws)
    assert snap["status"] == "refused" and "budget exceeded" in snap["error"]
    assert RunStore(ws).get(run_id) is None  # nothing was run or charged: nothing to list


def test_runs_of_a_dead_process_become_interrupted_once(tmp_path, planted):
    import socket

    ws = Workspace(tmp_path / "ws2")
    store = RunStore(ws)
    store.create(
        run_id="r1",
        kind="release",
        mechanism="fem",
        dataset=None,
        dataset_name="x",
        params={},
        epsilon=1.0,
        delta=None,
        demo=False,
    )
    store.update("r1", status="running", owner=f"{socket.gethostname()}:999999:1.0")
    assert jobs.recover(ws) == 1 and store.get("r1")["status"] == "interrupted"
    assert jobs.recover(ws) == 0  # once per process
