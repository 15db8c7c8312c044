"""Runs that belong to the server process, not to a browser session.

A run started from any page executes in a daemon thread of the Streamlit server process; its row in the
workspace (:class:`dpcore.runs.RunStore`) holds its status, live progress, error and results, so a reload, a
second browser tab or a restart sees it.  Pages never hold a run: they hold a run id and poll
:func:`snapshot` (e.g. from ``st.fragment(run_every=0.5)``).  Worker threads never call Streamlit.

Interface (every function takes an optional ``workspace``; the default is the app's, :func:`ui.state.workspace`)::

    start(kind, label, dataset, target, *, request_key, mechanism="", params=None,
          epsilon=None, delta=None, demo=False) -> run_id
        Run ``target(progress, cancel)`` in a server thread, recorded as a run of ``kind``
        ("learn", "teaching", ...).  ``dataset`` is a dpcore Dataset (its ledger key and name tie the run
        to it), a ``(ledger_key, name)`` pair, or None.  ``progress(t, T, message="", info=None)`` records
        live progress and raises Cancelled once a cancel was asked (from any session); ``cancel`` is a
        threading.Event to check in long loops.  A target that accepts a ``run_id`` keyword gets it (to
        charge the ledger under that run: ``Ledger.reserve(run=run_id, ...)`` before touching the data --
        the target charges, this module does not).  Its return value is kept in this process
        (:func:`result`); if it is a dict, its keys ``card``, ``evaluation`` (INTERNAL), ``artifacts``
        ({file name: bytes}) are also stored with the run.
    start_release(*, dataset, workload, mechanism, epsilon, delta, params, seed, label, request_key,
                  kind="release", time_limit=None, executor_spec="serial", class_width=None,
                  n_rows=None, schema_release=None, schema_from_data=False) -> run_id
        The same for :func:`dpcore.runs.execute_release`: charged to the ledger before the data is
        touched, artifacts written, the Release itself not kept in memory (a 20M-row release must
        not stay in the server's memory; the Results page reads the artifact files).
    snapshot(run_id) -> dict
        run_id, kind, label, mechanism, dataset, dataset_name, status, done, t, T, message, info,
        elapsed, error, demo, epsilon, delta, cancelling, here (runs in this process).  Statuses:
        starting, running, done, failed, cancelled, interrupted, refused (nothing was run or charged),
        deleted, missing.
    cancel(run_id)        ask the run to stop (works from any session; it stops at its next check)
    active(kind=None)     ids of unfinished runs (of ``kind``), oldest first -- from the workspace,
                          so runs started by another session, a CLI process or before a reload count
    result(run_id)        the target's return value (this process only; None after a restart)

One click = one run: a repeated ``request_key`` returns the first run's id and starts nothing.
On server start :func:`recover` (called by ``ui.state.workspace``) marks runs of a dead process
*interrupted*; their ledger charge stays.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dpcore.errors import Cancelled, DPCoreError

log = logging.getLogger("dpcore.app")

ACTIVE = ("starting", "running")
FINISHED = ("done", "failed", "cancelled", "interrupted", "refused", "deleted")
#: Finished jobs whose in-memory record (outcome, return value) is kept, newest first.
KEEP_FINISHED = 100

_LIGHT_COLUMNS = (
    "id, kind, label, mechanism, dataset, dataset_name, status, progress, created, started, finished, seconds, "
    "error, demo, epsilon, delta, cancel_requested, owner, deleted"
)


@dataclass
class _Job:
    """What this process knows of a run it started (the workspace row is the shared truth)."""

    run_id: str
    kind: str
    label: str
    request_key: str | None
    workspace: Any
    cancel_event: threading.Event = field(default_factory=threading.Event)
    created: float = field(default_factory=time.time)
    status: str = "starting"
    t: int = 0
    T: int = 0
    message: str = "starting"
    info: dict = field(default_factory=dict)
    error: str | None = None
    result: Any = None
    ended: float | None = None
    thread: threading.Thread | None = None

    def on_progress(self, t, T, message="", info=None) -> None:
        self.t, self.T, self.message = int(t), int(T), str(message)
        self.info = {k: v for k, v in (info or {}).items() if isinstance(v, (int, float, str))}
        if self.status == "starting":
            self.status = "running"


_lock = threading.Lock()
_jobs: dict[str, _Job] = {}
_by_key: dict[str, str] = {}
_recovered: set[str] = set()


def _ws(workspace):
    if workspace is not None:
        return workspace
    from . import state

    return state.workspace()


def recover(workspace) -> int:
    """Once per process and workspace: runs left unfinished by a dead process become *interrupted*."""
    from dpcore.runs import RunStore

    key = str(workspace.path)
    with _lock:
        if key in _recovered:
            return 0
        _recovered.add(key)
    return RunStore(workspace).mark_interrupted()


def _existing(ws, request_key: str | None) -> str | None:
    if request_key is None:
        return None
    with _lock:
        if request_key in _by_key:
            return _by_key[request_key]
    rows = ws.query("SELECT id FROM runs WHERE request_key = ?", (request_key,))
    return rows[0]["id"] if rows else None


def _register(job: _Job) -> bool:
    """Record a job unless its request key was taken meanwhile (two reruns of one click)."""
    with _lock:
        if job.request_key is not None:
            if job.request_key in _by_key:
                return False
            _by_key[job.request_key] = job.run_id
        _jobs[job.run_id] = job
        done = [j for j in _jobs.values() if j.ended is not None]
        for old in sorted(done, key=lambda j: j.ended)[:-KEEP_FINISHED]:
            _jobs.pop(old.run_id, None)
    return True


def _dataset_key(dataset) -> tuple[str | None, str]:
    if dataset is None:
        return None, ""
    if isinstance(dataset, tuple):
        return dataset[0], str(dataset[1])
    return dataset.ledger_key, dataset.name


def _unexpected(exc: BaseException) -> str:
    if isinstance(exc, MemoryError):
        return "The run ran out of memory and stopped; nothing was released. Choose fewer marginals or a smaller k."
    first = (str(exc).splitlines() or [""])[0][:200]
    return (
        f"The run failed unexpectedly ({type(exc).__name__}: {first}); nothing was released. "
        "Try other parameters; the server log has the details."
    )


def _charged(ws, run_id: str) -> bool:
    return bool(ws.query("SELECT 1 FROM ledger WHERE run = ? LIMIT 1", (run_id,)))


def _end(job: _Job, status: str, error: str | None = None) -> None:
    job.status, job.error, job.ended = status, error, time.time()


# ---------------------------------------------------------------------------------------------- starting
def start(
    kind: str,
    label: str,
    dataset,
    target: Callable,
    *,
    request_key: str | None,
    mechanism: str = "",
    params: dict | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    demo: bool = False,
    workspace=None,
) -> str:
    """Run ``target(progress, cancel)`` in a server thread as a recorded run; returns its id (see the module
    docstring).  A repeated ``request_key`` returns the first run's id."""
    from dpcore.release import new_run_id
    from dpcore.runs import DuplicateRequest, Progress, RunStore

    ws = _ws(workspace)
    found = _existing(ws, request_key)
    if found is not None:
        return found
    run_id = new_run_id()
    job = _Job(run_id, kind, label, request_key, ws)
    if not _register(job):
        return _by_key[request_key]
    key, name = _dataset_key(dataset)
    store = RunStore(ws)
    if key is not None and getattr(dataset, "n", None) is not None:
        ws.register_dataset(key, name, dataset.n)
    try:
        store.create(
            run_id=run_id,
            kind=kind,
            mechanism=mechanism or kind,
            dataset=key,
            dataset_name=name,
            params=dict(params or {}),
            epsilon=epsilon,
            delta=delta,
            demo=demo,
            label=label,
            request_key=request_key,
        )
    except DuplicateRequest as dup:  # another process took the key
        with _lock:
            _jobs.pop(run_id, None)
            _by_key[request_key] = dup.run_id
        return dup.run_id
    wants_id = "run_id" in inspect.signature(target).parameters

    def body() -> None:
        tracker = Progress(store, run_id, job.on_progress, job.cancel_event)

        def progress(t, T, message="", info=None):
            tracker(t, T, message, info or {})

        started = time.time()
        store.update(run_id, status="running", started=started)
        job.status = "running"
        try:
            out = target(progress, job.cancel_event, run_id=run_id) if wants_id else target(progress, job.cancel_event)
        except BaseException as exc:
            _record_failure(ws, store, job, exc)
            return
        fields: dict[str, Any] = {
            "status": "done",
            "finished": time.time(),
            "seconds": time.time() - started,
            "progress": {"t": job.T or 1, "T": job.T or 1, "message": "done", "info": {}, "updated": time.time()},
        }
        if isinstance(out, dict):
            if out.get("card") is not None:
                fields["card"] = out["card"]
            if out.get("evaluation") is not None:
                fields["evaluation"] = out["evaluation"]
            if out.get("artifacts"):
                fields["artifacts"] = store.write_artifacts(run_id, dict(out["artifacts"]))
        store.update(run_id, **fields)
        job.result = out
        _end(job, "done")

    _launch(job, body)
    return run_id


def _record_failure(ws, store, job: _Job, exc: BaseException) -> None:
    """How a run that raised ended: refused (nothing charged: no trace kept), cancelled or failed (charged)."""
    cancelled = isinstance(exc, (Cancelled, KeyboardInterrupt)) or job.cancel_event.is_set()
    if isinstance(exc, DPCoreError) and not isinstance(exc, Cancelled):
        message = str(exc)
    elif cancelled:
        message = "The run was cancelled; nothing was released."
    else:
        log.error("run %s failed", job.run_id, exc_info=exc)
        message = _unexpected(exc)
    if not _charged(ws, job.run_id):
        store.forget(job.run_id)  # it never touched the data: nothing to list, nothing charged
        if cancelled:
            message = "The run was cancelled before it touched the data; nothing was run or charged."
        refused = isinstance(exc, DPCoreError) and not cancelled  # e.g. over the cap, impossible parameters
        _end(job, "cancelled" if cancelled else ("refused" if refused else "failed"), message)
        return
    status = "cancelled" if cancelled else "failed"
    if cancelled:
        message = "The run was cancelled; nothing was released. Its privacy charge stays in the ledger."
    store.update(job.run_id, status=status, finished=time.time(), error=message[:2000])
    _end(job, status, message)


def _launch(job: _Job, body: Callable[[], None]) -> None:
    def run() -> None:
        try:
            body()
        except BaseException:  # bookkeeping itself failed (e.g. the disk is full): say so, never hang "running"
            log.exception("run %s: recording its outcome failed", job.run_id)
            if job.ended is None:
                _end(job, "failed", "The run's outcome could not be recorded in the workspace; see the server log.")
        finally:
            if job.ended is None:
                _end(job, job.status if job.status in FINISHED else "done")
            try:
                job.workspace.close()  # this thread's SQLite connection
            except Exception:
                pass

    job.thread = threading.Thread(target=run, name=f"dpcore-run-{job.run_id}", daemon=True)
    job.thread.start()


def start_release(
    *,
    dataset,
    workload,
    mechanism: str,
    epsilon: float,
    delta: float | None,
    params: dict | None,
    seed: int | None,
    label: str,
    request_key: str | None,
    kind: str = "release",
    time_limit: float | None = None,
    executor_spec: str = "serial",
    class_width: int | None = None,
    n_rows: int | None = None,
    workspace=None,
    schema_release: dict | None = None,
    schema_from_data: bool = False,
    chosen_by: str | None = None,
) -> str:
    """Run :func:`dpcore.runs.execute_release` in a server thread; returns the run id at once.

    ``schema_release``: the schema the Data page discovered once in its own charged run (on the card, not charged
    again); ``schema_from_data``: the user chose a schema read off the data without privacy (the card says so);
    ``chosen_by``: why the default chose this mechanism and workload (public, on the card)."""
    from dpcore.release import new_run_id

    ws = _ws(workspace)
    found = _existing(ws, request_key)
    if found is not None:
        return found
    run_id = new_run_id()
    job = _Job(run_id, kind, label, request_key, ws)
    if not _register(job):
        return _by_key[request_key]
    oracle_options = {"time_limit": float(time_limit)} if time_limit else {}

    def body() -> None:
        from dpcore.executors import executor_from_spec
        from dpcore.mechanisms import registry
        from dpcore.runs import DuplicateRequest, RunStore, execute_release

        store = RunStore(ws)
        executor = None
        try:
            if registry.get(mechanism).uses_oracle:
                executor = executor_from_spec(executor_spec)
            execute_release(
                ws,
                dataset,
                workload,
                mechanism,
                epsilon,
                delta,
                params,
                seed=seed,
                label=label,
                kind=kind,
                request_key=request_key,
                run_id=run_id,
                progress=job.on_progress,
                cancel=job.cancel_event,
                oracle_options=oracle_options,
                executor=executor,
                class_width=class_width,
                n_rows=n_rows,
                schema_release=schema_release,
                schema_from_data=schema_from_data,
                chosen_by=chosen_by,
            )  # the Release is dropped here on purpose: everything the pages need is in the workspace
            _end(job, "done")
        except DuplicateRequest as dup:
            with _lock:
                _by_key[request_key] = dup.run_id
            _end(job, "refused", str(dup))
        except BaseException as exc:
            if not isinstance(exc, (DPCoreError, KeyboardInterrupt)):
                log.error("run %s failed", run_id, exc_info=exc)
            _record_failure(ws, store, job, exc)
        finally:
            if executor is not None:
                try:
                    executor.close()
                except Exception:  # closing a broken pool must not hide the run's outcome
                    log.exception("closing the executor failed")

    _launch(job, body)
    return run_id


# ---------------------------------------------------------------------------------------------- watching
def _row(ws, run_id: str) -> dict | None:
    import json

    rows = ws.query(f"SELECT {_LIGHT_COLUMNS} FROM runs WHERE id = ?", (run_id,))
    if not rows:
        return None
    row = dict(rows[0])
    row["progress"] = json.loads(row["progress"] or "{}")
    return row


def snapshot(run_id: str, workspace=None) -> dict:
    """The run's state now (see the module docstring for the keys)."""
    ws = _ws(workspace)
    job = _jobs.get(run_id)
    row = _row(ws, run_id)
    now = time.time()
    if row is None:
        if job is None:
            return {"run_id": run_id, "status": "missing", "done": True, "error": None, "here": False}
        status = job.status
        return {
            "run_id": run_id,
            "kind": job.kind,
            "label": job.label,
            "mechanism": "",
            "dataset": None,
            "dataset_name": "",
            "status": status,
            "done": status not in ACTIVE,
            "t": job.t,
            "T": job.T,
            "message": job.message,
            "info": dict(job.info),
            "elapsed": (job.ended or now) - job.created,
            "error": job.error,
            "demo": False,
            "epsilon": None,
            "delta": None,
            "cancelling": job.cancel_event.is_set(),
            "here": True,
        }
    prog = row["progress"] or {}
    status = "deleted" if row["deleted"] else row["status"]
    if job is not None and status in ACTIVE and job.ended is not None and job.status in FINISHED:
        status = job.status  # the thread ended but its last write has not landed yet (or failed)
    live = job is not None and job.ended is None
    start_t = row["started"] or row["created"]
    end_t = row["finished"] if row["finished"] else (job.ended if job is not None and job.ended else None)
    return {
        "run_id": run_id,
        "kind": row["kind"],
        "label": row["label"],
        "mechanism": row["mechanism"],
        "dataset": row["dataset"],
        "dataset_name": row["dataset_name"],
        "status": status,
        "done": status not in ACTIVE,
        "t": job.t if live else int(prog.get("t", 0)),
        "T": job.T if live else int(prog.get("T", 0)),
        "message": job.message if live else str(prog.get("message", "")),
        "info": dict(job.info) if live else dict(prog.get("info") or {}),
        "elapsed": (end_t or now) - start_t,
        "error": row["error"] or (job.error if job is not None else None),
        "demo": bool(row["demo"]),
        "epsilon": row["epsilon"],
        "delta": row["delta"],
        "seconds": row["seconds"],
        "cancelling": bool(row["cancel_requested"]) or (job is not None and job.cancel_event.is_set()),
        "here": job is not None,
    }


def cancel(run_id: str, workspace=None) -> None:
    """Ask the run to stop: the flag in the workspace reaches it from any session or process; a run of this
    process is also told at once."""
    from dpcore.runs import RunStore

    job = _jobs.get(run_id)
    if job is not None:
        job.cancel_event.set()
    ws = _ws(workspace)
    if _row(ws, run_id) is not None:
        RunStore(ws).request_cancel(run_id)


def active(kind: str | None = None, workspace=None) -> list[str]:
    """Unfinished runs (of ``kind``), oldest first: the workspace's, plus this process's not yet recorded."""
    ws = _ws(workspace)
    sql = "SELECT id, created FROM runs WHERE status IN ('starting', 'running') AND deleted = 0"
    args: tuple = ()
    if kind is not None:
        sql += " AND kind = ?"
        args = (kind,)
    found = {r["id"]: r["created"] for r in ws.query(sql, args)}
    with _lock:
        for job in _jobs.values():
            if job.run_id in found:
                if job.ended is not None and job.status in FINISHED:
                    found.pop(job.run_id)  # finished; its final write is on its way
                continue
            if job.ended is None and (kind is None or job.kind == kind) and job.workspace.path == ws.path:
                found[job.run_id] = job.created
    return sorted(found, key=found.get)


def result(run_id: str) -> Any:
    job = _jobs.get(run_id)
    return None if job is None else job.result


def wait(run_id: str, timeout: float = 60.0, workspace=None) -> dict:
    """Block until the run has finished (tests and scripts; pages poll instead)."""
    deadline = time.monotonic() + timeout
    while True:
        snap = snapshot(run_id, workspace)
        if snap["done"]:
            job = _jobs.get(run_id)
            if job is None or job.ended is not None:
                return snapshot(run_id, workspace)
        if time.monotonic() > deadline:
            raise TimeoutError(f"run {run_id} did not finish within {timeout} s")
        time.sleep(0.05)
