"""The workspace and its runs: where it lives, what survives, idempotent submits, cancel from anywhere,
interrupted runs, deletion that keeps the ledger, concurrent writers."""

from __future__ import annotations

import multiprocessing as mp
import subprocess
import sys
import threading
import time

import pytest

from dpcore.errors import Cancelled
from dpcore.privacy.ledger import BudgetExceeded, Ledger
from dpcore.runs import DuplicateRequest, RunStore, execute_release, this_process
from dpcore.workload import Workload
from dpcore.workspace import ENV_VAR, Workspace, WorkspaceError, resolve

from .conftest import planted_dataset


def test_where_the_workspace_lives(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "from-env"))
    assert resolve(None) == tmp_path / "from-env"
    assert resolve(tmp_path / "explicit") == tmp_path / "explicit"
    monkeypatch.delenv(ENV_VAR)
    import platformdirs

    assert resolve(None) == __import__("pathlib").Path(platformdirs.user_data_dir("dpcore", appauthor=False))


def test_an_unusable_folder_says_what_to_do(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(WorkspaceError, match="--workspace"):
        Workspace(blocker / "ws")


def test_state_schemas_and_workloads_survive_a_new_connection(tmp_path):
    ws = Workspace(tmp_path)
    ws.set_state("last", {"dataset": "abc", "k": 2})
    ws.save_schema('{"attributes": []}', "s", "abc")
    ws.save_workload({"marginals": [[0, 1]]}, "abc")
    ws.close()
    again = Workspace(tmp_path)
    assert again.get_state("last") == {"dataset": "abc", "k": 2}
    assert again.latest_schema("abc") == '{"attributes": []}'
    assert again.latest_workload("abc") == {"marginals": [[0, 1]]}
    digest = again.store_source(b"a,b\n1,2\n", "t.csv", 1)
    assert again.dataset(digest)["stored_path"].endswith(".csv")


@pytest.fixture
def small():
    ds = planted_dataset(n=500)
    return ds, Workload.all_kway(ds.domain, 2)


def test_execute_release_records_the_run_and_its_files(tmp_path, small):
    ws = Workspace(tmp_path)
    ds, wl = small
    rel, internal, run_id = execute_release(ws, ds, wl, "gaussian", 1.0, label="first try")
    run = RunStore(ws).get(run_id)
    assert run["status"] == "done" and run["label"] == "first try" and run["demo"] == 0
    assert run["card"]["privacy"]["guarantee"] == "differential privacy"
    assert run["evaluation"]["max_error"] == pytest.approx(internal.report["max_error"])
    names = set(run["artifacts"])
    assert {
        "card.json",
        "card.txt",
        "answers.csv",
        "INTERNAL_evaluation_not_for_publication.json",
        "INTERNAL_answers_not_for_publication.npz",
    } == names
    assert Ledger(ws).total(ds.ledger_key)["runs"] == 1


def test_one_request_key_is_one_run(tmp_path, small):
    ws = Workspace(tmp_path)
    ds, wl = small
    execute_release(ws, ds, wl, "gaussian", 0.5, request_key="click-1")
    with pytest.raises(DuplicateRequest) as exc:
        execute_release(ws, ds, wl, "gaussian", 0.5, request_key="click-1")
    assert exc.value.run_id == RunStore(ws).list()[0]["id"]
    assert Ledger(ws).total(ds.ledger_key)["runs"] == 1


def test_a_refused_run_leaves_no_trace_and_charges_nothing(tmp_path, small):
    ws = Workspace(tmp_path)
    ds, wl = small
    with pytest.raises(BudgetExceeded):
        execute_release(ws, ds, wl, "gaussian", 2.0, budget_cap=1.0)
    assert RunStore(ws).list() == [] and Ledger(ws).entries() == []


def test_cancel_asked_from_another_session_stops_the_run_and_keeps_the_charge(tmp_path):
    ws = Workspace(tmp_path)
    ds = planted_dataset(n=3000)
    wl = Workload.all_kway(ds.domain, 2)
    started = threading.Event()
    ids = []
    outcome = {}

    def target():
        try:
            execute_release(
                ws,
                ds,
                wl,
                "dualquery",
                1.0,
                params={"samples": 50, "eta": 0.01, "max_rounds": 100000},
                on_created=lambda rid: (ids.append(rid), started.set()),
            )
        except Cancelled as exc:
            outcome["cancelled"] = exc

    t = threading.Thread(target=target)
    t.start()
    assert started.wait(30)
    deadline = time.monotonic() + 30
    while (RunStore(ws).get(ids[0])["progress"] or {}).get("t", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # running, with progress written to the workspace
    RunStore(Workspace(tmp_path)).request_cancel(ids[0])  # another connection, as another session would
    t0 = time.monotonic()
    t.join(60)
    assert "cancelled" in outcome and time.monotonic() - t0 < 5
    run = RunStore(ws).get(ids[0])
    assert run["status"] == "cancelled" and "ledger" in run["error"]
    assert Ledger(ws).entries(ds.ledger_key)[0]["status"] == "reserved"


def test_a_run_whose_process_died_is_shown_interrupted(tmp_path):
    ws = Workspace(tmp_path)
    store = RunStore(ws)
    store.create(
        run_id="r-dead",
        kind="release",
        mechanism="gaussian",
        dataset=None,
        dataset_name="t",
        params={},
        epsilon=1.0,
        delta=None,
        demo=False,
    )
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    host = this_process().rsplit(":", 2)[0]
    store.update("r-dead", status="running", owner=f"{host}:{dead.stdout.strip()}:1.0")
    store.create(
        run_id="r-mine",
        kind="release",
        mechanism="gaussian",
        dataset=None,
        dataset_name="t",
        params={},
        epsilon=1.0,
        delta=None,
        demo=False,
    )
    store.update("r-mine", status="running")
    assert store.mark_interrupted() == 1
    assert store.get("r-dead")["status"] == "interrupted" and store.get("r-mine")["status"] == "running"


def test_deleting_a_run_removes_its_files_and_keeps_its_ledger_entry(tmp_path, small):
    ws = Workspace(tmp_path)
    ds, wl = small
    _, _, run_id = execute_release(ws, ds, wl, "gaussian", 1.0)
    assert ws.run_dir(run_id).exists()
    RunStore(ws).delete(run_id)
    assert not ws.run_dir(run_id).exists()
    assert RunStore(ws).list() == [] and len(RunStore(ws).list(include_deleted=True)) == 1
    assert Ledger(ws).total(ds.ledger_key)["runs"] == 1


def _write_runs(path: str, prefix: str, barrier) -> None:
    store = RunStore(Workspace(path))
    barrier.wait()
    for i in range(40):
        store.create(
            run_id=f"{prefix}{i}",
            kind="release",
            mechanism="m",
            dataset=None,
            dataset_name="t",
            params={},
            epsilon=1.0,
            delta=None,
            demo=False,
        )
        store.update(f"{prefix}{i}", progress={"t": i, "T": 40})


def test_two_processes_write_one_workspace_at_once(tmp_path):
    Workspace(tmp_path)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_write_runs, args=(str(tmp_path), p, barrier)) for p in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    assert len(RunStore(Workspace(tmp_path)).list()) == 80


def _open_new_workspace(path: str, barrier, results) -> None:
    barrier.wait()
    try:
        Workspace(path).register_dataset("d" * 8, "x", 3)
        results.put("ok")
    except Exception as exc:  # the test reports what failed
        results.put(repr(exc))


def test_processes_that_open_a_new_workspace_at_the_same_moment_all_get_it(tmp_path):
    """SQLite answers "database is locked" at once, without its busy timeout, where waiting could deadlock: six
    processes opening a new workspace together, one creating the tables while another switches the file to WAL:
    before the open retried, 8 of these 240 process starts failed."""
    ctx = mp.get_context("fork")
    failed = []
    for trial in range(40):
        barrier, results = ctx.Barrier(6), ctx.Queue()
        path = str(tmp_path / f"w{trial}")
        procs = [ctx.Process(target=_open_new_workspace, args=(path, barrier, results)) for _ in range(6)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        failed += [r for r in (results.get(timeout=5) for _ in procs) if r != "ok"]
    assert failed == []


def test_opening_waits_out_a_locked_database_but_not_other_errors(monkeypatch):
    import sqlite3

    from dpcore import workspace as ws

    calls = []

    def locked_twice():
        calls.append(1)
        if len(calls) < 3:
            raise sqlite3.OperationalError("database is locked")
        return "open"

    assert ws._when_free(locked_twice) == "open" and len(calls) == 3
    monkeypatch.setattr(ws, "OPEN_WAIT_SECONDS", 0.05)
    with pytest.raises(sqlite3.OperationalError, match="locked"):  # gives up after its wait
        ws._when_free(lambda: (_ for _ in ()).throw(sqlite3.OperationalError("database is locked")))
    with pytest.raises(sqlite3.OperationalError, match="no such table"):  # not a lock: at once
        ws._when_free(lambda: (_ for _ in ()).throw(sqlite3.OperationalError("no such table: runs")))
