"""Runs recorded in the workspace, and the one function that executes a release for the app, the CLI and the API.

A run is a row of the workspace's ``runs`` table: mechanism, parameters, ε, δ, status, live progress, the public
card, the internal evaluation, timings, artifact paths and a label.  It belongs to the process that runs it
(``owner``), not to a browser session: any session can watch it or ask it to stop (``cancel_requested`` is read
by the running process between rounds), and when that process dies the run is shown as *interrupted* — its
ledger charge stays.

:func:`execute_release` wraps :func:`dpcore.release.run_release` with that bookkeeping.  Submitting is idempotent
per ``request_key`` (one click = one run): a second call with the same key returns the first run and spends
nothing.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import Cancelled, DPCoreError
from .workspace import Workspace, dumps

#: Statuses of a run that is not over yet.
ACTIVE = ("starting", "running")
#: Seconds between progress writes to the database (the app polls about twice a second).
PROGRESS_EVERY = 0.2
#: Seconds between reads of the cancel flag (a cancel asked from another session or process).
CANCEL_POLL = 0.5

_JSON_FIELDS = ("params", "progress", "card", "evaluation", "artifacts")
_OWNER: str | None = None


def this_process() -> str:
    """``host:pid:start-time`` of this process (a pid alone is reused after a restart)."""
    global _OWNER
    if _OWNER is None:
        import psutil

        _OWNER = f"{socket.gethostname()}:{os.getpid()}:{psutil.Process().create_time():.3f}"
    return _OWNER


def _alive(owner: str | None) -> bool:
    """Whether the process named by ``owner`` still runs (owners on other hosts count as alive)."""
    if not owner:
        return False
    try:
        host, pid, started = owner.rsplit(":", 2)
    except ValueError:
        return False
    if host != socket.gethostname():
        return True
    import psutil

    try:
        proc = psutil.Process(int(pid))
        return abs(proc.create_time() - float(started)) < 0.01
    except (psutil.Error, ValueError):
        return False


class DuplicateRequest(DPCoreError):
    """The same request was already submitted; its run is ``run_id``."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"This request already started run {run_id}; nothing new was run or charged.")
        self.run_id = run_id


class RunStore:
    """The runs of one workspace."""

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace

    # ------------------------------------------------------------------ writing
    def create(
        self,
        *,
        run_id: str,
        kind: str,
        mechanism: str,
        dataset: str | None,
        dataset_name: str,
        params: dict,
        epsilon: float | None,
        delta: float | None,
        demo: bool,
        label: str = "",
        request_key: str | None = None,
    ) -> None:
        """A new run row; raises :class:`DuplicateRequest` when ``request_key`` was seen before."""
        import sqlite3

        try:
            with self.ws.transaction(immediate=True) as con:
                con.execute(
                    "INSERT INTO runs(id, dataset, dataset_name, kind, mechanism, label, params, epsilon, delta, demo, "
                    "status, created, owner, request_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'starting', ?, ?, ?)",
                    (
                        run_id,
                        dataset,
                        dataset_name,
                        kind,
                        mechanism,
                        label or "",
                        dumps(params),
                        epsilon,
                        delta,
                        int(bool(demo)),
                        time.time(),
                        this_process(),
                        request_key,
                    ),
                )
        except sqlite3.IntegrityError:
            rows = self.ws.query("SELECT id FROM runs WHERE request_key = ?", (request_key,))
            if rows:
                raise DuplicateRequest(rows[0]["id"]) from None
            raise

    def update(self, run_id: str, **fields: Any) -> None:
        if not fields:
            return
        cols = ", ".join(f"{k} = ?" for k in fields)
        vals = [dumps(v) if k in _JSON_FIELDS else v for k, v in fields.items()]
        with self.ws.transaction() as con:
            con.execute(f"UPDATE runs SET {cols} WHERE id = ?", (*vals, run_id))

    def forget(self, run_id: str) -> None:
        """Remove a run that never touched the data (refused before the ledger was charged)."""
        with self.ws.transaction() as con:
            con.execute(
                "DELETE FROM runs WHERE id = ? AND id NOT IN (SELECT run FROM ledger WHERE run IS NOT NULL)", (run_id,)
            )
        self.ws.remove_run_artifacts(run_id)

    def request_cancel(self, run_id: str) -> None:
        self.update(run_id, cancel_requested=1)

    def delete(self, run_id: str) -> None:
        """Delete a run and its artifacts; its ledger entries stay (the privacy was spent)."""
        if self.get(run_id) is None:
            raise DPCoreError(f"No run {run_id!r} in this workspace.")
        self.ws.remove_run_artifacts(run_id)
        self.update(run_id, deleted=1, artifacts={})

    def mark_interrupted(self) -> int:
        """Runs whose process is gone (a server restart) become *interrupted*; returns how many."""
        n = 0
        for r in self.ws.query("SELECT id, owner FROM runs WHERE status IN ('starting', 'running')"):
            if r["owner"] != this_process() and not _alive(r["owner"]):
                self.update(
                    r["id"],
                    status="interrupted",
                    finished=time.time(),
                    error="The process running this run stopped (server restart or crash). Its privacy "
                    "charge stays in the ledger; nothing was released.",
                )
                n += 1
        return n

    def write_artifacts(self, run_id: str, files: dict[str, bytes | Callable[[Path], None]]) -> dict[str, str]:
        """Write files into the run's artifact folder (bytes, or a function writing the path); returns paths."""
        folder = self.ws.run_dir(run_id)
        folder.mkdir(parents=True, exist_ok=True)
        out = {}
        for name, content in files.items():
            path = folder / name
            tmp = path.with_name(path.name + ".part")
            if callable(content):
                content(tmp)
            else:
                tmp.write_bytes(content)
            os.replace(tmp, path)
            out[name] = str(path)
        return out

    # ------------------------------------------------------------------ reading
    def get(self, run_id: str) -> dict | None:
        rows = self.ws.query("SELECT * FROM runs WHERE id = ?", (run_id,))
        return _parse(rows[0]) if rows else None

    def cancel_requested(self, run_id: str) -> bool:
        rows = self.ws.query("SELECT cancel_requested FROM runs WHERE id = ?", (run_id,))
        return bool(rows and rows[0]["cancel_requested"])

    def list(
        self,
        *,
        dataset: str | None = None,
        kind: str | None = None,
        include_deleted: bool = False,
        include_demo: bool = True,
        light: bool = False,
    ) -> list[dict]:
        """Runs, newest first.  ``light`` leaves out the (large) card and evaluation."""
        cols = (
            "*"
            if not light
            else ", ".join(
                c
                for c in (
                    "id",
                    "dataset",
                    "dataset_name",
                    "kind",
                    "mechanism",
                    "label",
                    "params",
                    "epsilon",
                    "delta",
                    "demo",
                    "status",
                    "progress",
                    "created",
                    "started",
                    "finished",
                    "seconds",
                    "artifacts",
                    "error",
                    "owner",
                    "cancel_requested",
                    "deleted",
                )
            )
        )
        where, args = [], []
        if dataset is not None:
            where.append("dataset = ?")
            args.append(dataset)
        if kind is not None:
            where.append("kind = ?")
            args.append(kind)
        if not include_deleted:
            where.append("deleted = 0")
        if not include_demo:
            where.append("demo = 0")
        sql = f"SELECT {cols} FROM runs" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY created DESC"
        return [_parse(r) for r in self.ws.query(sql, tuple(args))]


def _parse(row) -> dict:
    d = dict(row)
    for k in _JSON_FIELDS:
        if k in d and isinstance(d[k], str):
            d[k] = json.loads(d[k])
    return d


@dataclass
class Progress:
    """The progress callback handed to a mechanism: forwards to the caller's, writes the run's progress to the
    workspace (throttled) and turns a cancel asked from anywhere into :class:`Cancelled`."""

    store: RunStore
    run_id: str
    forward: Callable | None = None
    cancel: threading.Event | None = None
    _last_write: float = 0.0
    _last_poll: float = 0.0

    def __call__(self, t: int, T: int, message: str, info: dict) -> None:
        if self.forward is not None:
            self.forward(t, T, message, info)
        now = time.monotonic()
        if now - self._last_write >= PROGRESS_EVERY or (T and t >= T):
            self._last_write = now
            self.store.update(
                self.run_id,
                progress={
                    "t": int(t),
                    "T": int(T),
                    "message": str(message)[:200],
                    "info": {k: v for k, v in (info or {}).items() if isinstance(v, (int, float, str))},
                    "updated": time.time(),
                },
            )
        self.check()

    def check(self) -> None:
        now = time.monotonic()
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled("The run was cancelled; nothing was released. Its privacy charge stays in the ledger.")
        if now - self._last_poll >= CANCEL_POLL:
            self._last_poll = now
            if self.store.cancel_requested(self.run_id):
                if self.cancel is not None:
                    self.cancel.set()
                raise Cancelled("The run was cancelled; nothing was released. Its privacy charge stays in the ledger.")


def default_label(
    mechanism: str, epsilon: float, table: str, created: float, kept: int | None = None, total: int | None = None
) -> str:
    """The label of a run its user did not name: mechanism, ε, table, the columns its release kept (once known)
    and when it started -- so two runs of one mechanism at one ε can be told apart."""
    parts = [f"{mechanism} ε={epsilon:g}", table]
    if kept is not None and total is not None:
        parts.append(f"{kept} of {total} columns")
    parts.append(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(created)))
    return " · ".join(parts)


def execute_release(
    workspace: Workspace,
    dataset,
    workload,
    mechanism: str,
    epsilon: float,
    delta: float | None = None,
    params: dict | None = None,
    *,
    seed: int | None = None,
    label: str = "",
    kind: str = "release",
    request_key: str | None = None,
    run_id: str | None = None,
    budget_cap: float | None = None,
    progress: Callable | None = None,
    cancel: threading.Event | None = None,
    oracle_options: dict | None = None,
    executor=None,
    n_rows: int | None = None,
    class_width: int | None = None,
    on_created: Callable | None = None,
    schema_from_data: bool = False,
    numeric: str = "values",
    table=None,
    table_options: dict | None = None,
    schema_release: dict | None = None,
    chosen_by: str | None = None,
):
    """Run a release recorded in ``workspace``: charged to its ledger, artifacts written, status kept.

    Either an encoded ``dataset`` with its ``workload`` (:func:`dpcore.release.run_release`), or a raw ``table``
    (a DataFrame from :func:`dpcore.data.read_table`; ``dataset`` None) whose schema is discovered privately
    (:func:`dpcore.release.release_table`; ``workload`` may then be None or a spec dict, ``table_options`` holds
    ``schema``, ``roles``, ``schema_from_data``, ``schema_share``, ``name``).  ``schema_release`` (with a
    ``dataset``) reuses a schema discovered in an earlier charged run: on the card, not charged again (see
    :func:`dpcore.release.run_release`).  ``chosen_by`` (with a ``dataset``): why the default chose this mechanism
    and workload (:func:`dpcore.release.default_release_plan`'s note, public), kept on the card.

    An empty ``label`` gets :func:`default_label` (the kept columns are added when the run is done).

    Returns ``(release, internal, run_id)``.  Raises what the release raises (the run row says how it ended),
    :class:`DuplicateRequest` for a repeated ``request_key``."""
    from .data import table_digest
    from .mechanisms import registry
    from .privacy.ledger import BudgetExceeded, Ledger
    from .release import AUTO, base_mechanism, is_auto, new_run_id, release_table, run_release

    store = RunStore(workspace)
    run_id = run_id or new_run_id()
    mech_cls = registry.get(base_mechanism(mechanism))  # "auto" is resolved by release_table
    # The run's row says "auto" until the default has chosen (not the projection it plans as): then what ran.
    shown = AUTO if is_auto(mechanism) else mech_cls.name
    if table is not None:
        table.attrs.setdefault("source_digest", table_digest(table))
        options = dict(table_options or {})
        key, name, n = table.attrs["source_digest"], options.get("name") or table.attrs.get("name", "table"), len(table)
    else:
        key, name, n = dataset.ledger_key, dataset.name, dataset.n
    workspace.register_dataset(key, name, n)
    auto_label = not (label or "").strip()
    started = time.time()
    if auto_label:
        label = default_label(shown, float(epsilon), str(name), started)
    store.create(
        run_id=run_id,
        kind=kind,
        mechanism=shown,
        dataset=key,
        dataset_name=name,
        params=dict(params or {}),
        epsilon=float(epsilon),
        delta=None if delta is None else float(delta),
        demo=seed is not None,
        label=label,
        request_key=request_key,
    )
    if on_created is not None:
        on_created(run_id)
    store.update(run_id, status="running", started=time.time())
    tracker = Progress(store, run_id, progress, cancel)
    common = dict(
        seed=seed,
        progress=tracker,
        cancel=cancel,
        oracle_options=oracle_options,
        executor=executor,
        ledger=Ledger(workspace),
        run_id=run_id,
        budget_cap=budget_cap,
        n_rows=n_rows,
        class_width=class_width,
        numeric=numeric,
    )
    try:
        if table is not None:
            release, internal = release_table(
                table, mechanism, epsilon, delta, params, workload=workload, **options, **common
            )
        else:
            release, internal = run_release(
                dataset,
                workload,
                mechanism,
                epsilon,
                delta,
                params,
                schema_from_data=schema_from_data,
                schema_release=schema_release,
                **common,
            )
    except BaseException as exc:
        charged = bool(workspace.query("SELECT 1 FROM ledger WHERE run = ? LIMIT 1", (run_id,)))
        if not charged:  # refused before the data was touched (over the cap, bad parameters): no trace
            store.forget(run_id)
            if isinstance(exc, BudgetExceeded):
                raise
            raise
        status = "cancelled" if isinstance(exc, (Cancelled, KeyboardInterrupt)) else "failed"
        message = str(exc) if isinstance(exc, DPCoreError) else f"{type(exc).__name__}: {exc}"
        store.update(run_id, status=status, finished=time.time(), error=message[:2000])
        raise
    if chosen_by and table is None:  # a raw table's default says so itself (release_table)
        release.card["workload"]["chosen_by"] = chosen_by
    files = release_files(release, internal)
    artifacts = store.write_artifacts(run_id, files)
    done: dict[str, Any] = {}
    ran = str((release.card.get("mechanism") or {}).get("name") or mech_cls.name)
    if ran != shown:  # the default ("auto") has chosen, once the schema was known
        done["mechanism"] = ran
        mech_cls = registry.get(ran)
    if auto_label:
        from .report import kept_summary

        counts = kept_summary(release.card)
        done["label"] = default_label(
            mech_cls.name, float(epsilon), str(name), started, counts["kept"], counts["total"]
        )
    store.update(
        run_id,
        **done,
        status="done",
        finished=time.time(),
        seconds=release.seconds,
        card=release.card,
        evaluation=internal.report,
        artifacts=artifacts,
        progress={"t": 1, "T": 1, "message": "done", "info": {}, "updated": time.time()},
    )
    return release, internal, run_id


#: A release of more rows than this also keeps a uniform sample of them (previews, the fidelity view).
SAMPLE_ROWS = 100_000


def release_files(release, internal) -> dict:
    """The files of a finished run: the public ones, and the internal evaluation under a name that says so."""
    from .report import card_summary

    files: dict[str, Any] = {
        "card.json": json.dumps(release.card, indent=2, default=float).encode(),
        "card.txt": (card_summary(release.card) + "\n").encode(),
        "INTERNAL_evaluation_not_for_publication.json": dumps(internal.report).encode(),
        "INTERNAL_answers_not_for_publication.npz": internal_arrays(release, internal),
    }
    if release.rows is not None:
        files["synthetic.csv"] = release.write_synthetic_csv
        if release.rows.shape[0] > SAMPLE_ROWS:
            files["synthetic_sample.csv"] = lambda path: _write_sample(release, path)
    elif release.answers is not None:
        files["answers.csv"] = release.write_synthetic_csv
    synopsis = release.synopsis_json()
    if synopsis is not None:
        files["synopsis.json"] = json.dumps(synopsis, indent=2, default=float).encode()
    return files


def internal_arrays(release, internal) -> bytes:
    """INTERNAL: the true and released answers with the workload they answer (its schema may hold values
    read off the private data), so charts can be drawn later without the data or the Release in memory."""
    import io

    import numpy as np

    wl = release.workload
    spec = {"domain": json.loads(wl.domain.to_json()), "marginals": [[int(a) for a in m] for m in wl.marginals]}
    buf = io.BytesIO()
    arrays: dict[str, Any] = {
        "true_answers": np.asarray(internal.true_answers, dtype=float),
        "workload": np.array(json.dumps(spec)),
    }
    if internal.released_answers is not None:
        arrays["released_answers"] = np.asarray(internal.released_answers, dtype=float)
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def _write_sample(release, path) -> None:
    import numpy as np

    # The sample is a subset of the released rows (public); its randomness protects nothing.
    idx = np.sort(np.random.default_rng().choice(release.rows.shape[0], SAMPLE_ROWS, replace=False))
    release.workload.domain.decode(release.rows[idx], "interval").to_csv(path, index=False)
