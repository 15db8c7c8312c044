"""The workspace: one folder with an SQLite database and an artifacts folder, shared by the app, the CLI and
the Python API.

It holds what a user made and must never lose: datasets (keyed by the SHA-256 of their source bytes, with
their source name), declared schemas, workloads, runs (mechanism, parameters, status, live progress, the
public card, the internal evaluation, timings, artifact paths, a label) and the privacy ledger
(:mod:`dpcore.privacy.ledger`).  A page reload, a server restart or a second process sees the same state.

Where it is: ``--workspace DIR`` (an explicit path), else ``$DPCORE_WORKSPACE``, else a per-user data folder
(``platformdirs.user_data_dir("dpcore")``).

Concurrency: the database runs in WAL mode with a busy timeout; every write is one short transaction, and the
ledger's check-and-reserve takes the write lock first (``BEGIN IMMEDIATE``) so two processes can never both
pass a budget cap.  Connections are per thread (SQLite connections must not cross threads).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import DPCoreError

ENV_VAR = "DPCORE_WORKSPACE"
DB_NAME = "workspace.sqlite"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS datasets (
    id TEXT PRIMARY KEY,            -- SHA-256 of the source bytes
    name TEXT NOT NULL,             -- the source's file name, for display
    n INTEGER NOT NULL,             -- rows (public under replace-one neighbours)
    created REAL NOT NULL,
    last_used REAL NOT NULL,
    stored_path TEXT                -- a copy of the source kept in the workspace (app uploads), else NULL
);
CREATE TABLE IF NOT EXISTS caps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset TEXT NOT NULL REFERENCES datasets(id),
    time REAL NOT NULL,
    epsilon REAL,                   -- NULL: no cap on ε
    delta REAL,                     -- NULL: the default (1/n)
    note TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS schemas (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset TEXT,
    name TEXT NOT NULL,
    created REAL NOT NULL,
    json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS workloads (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset TEXT,
    created REAL NOT NULL,
    json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    dataset TEXT,
    dataset_name TEXT,
    kind TEXT NOT NULL,             -- release | learn | teaching
    mechanism TEXT NOT NULL,
    label TEXT NOT NULL DEFAULT '',
    params TEXT NOT NULL DEFAULT '{}',
    epsilon REAL,
    delta REAL,
    demo INTEGER NOT NULL DEFAULT 0, -- a fixed seed: output carries no guarantee
    status TEXT NOT NULL,           -- starting | running | done | failed | cancelled | refused | interrupted
    progress TEXT NOT NULL DEFAULT '{}',
    created REAL NOT NULL,
    started REAL,
    finished REAL,
    seconds REAL,
    card TEXT,
    evaluation TEXT,
    artifacts TEXT NOT NULL DEFAULT '{}',
    error TEXT,
    owner TEXT,                     -- the process running it: host:pid:start-time
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    request_key TEXT UNIQUE,        -- one click = one run: a repeated key returns the same run
    deleted INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_by_dataset ON runs(dataset, created);
CREATE TABLE IF NOT EXISTS ledger (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL,
    dataset TEXT NOT NULL REFERENCES datasets(id),
    run TEXT,
    mechanism TEXT NOT NULL,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    rho REAL,                       -- set when the spend is accounted in zCDP
    accountant TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,           -- reserved (charged before the data is touched) | settled (what the run reported)
    note TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS ledger_by_dataset ON ledger(dataset);
CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL, updated REAL NOT NULL);
"""


#: How long opening the database waits out another process that holds it (seconds).
OPEN_WAIT_SECONDS = 30.0


def _when_free(step):
    """``step()``, retried while SQLite answers that the database is locked or busy, for up to OPEN_WAIT_SECONDS.
    The busy timeout covers ordinary waits, but SQLite returns "database is locked" at once, without waiting, where
    waiting could deadlock -- two processes that open a new workspace at the same moment, one creating its tables
    while the other switches the file to WAL (8 of 240 starts of six processes at once failed without it)."""
    deadline = time.monotonic() + OPEN_WAIT_SECONDS
    pause = 0.01
    while True:
        try:
            return step()
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(2 * pause, 0.5)


class WorkspaceError(DPCoreError):
    """The workspace folder or database cannot be used."""


def default_path() -> Path:
    """``$DPCORE_WORKSPACE``, else the per-user data folder."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("dpcore", appauthor=False))


def resolve(path: str | os.PathLike | None = None) -> Path:
    """The rule every entry point uses: an explicit path, else ``$DPCORE_WORKSPACE``, else the user folder."""
    return Path(path).expanduser() if path else default_path()


def _inserted_id(cur: sqlite3.Cursor) -> int:
    # sqlite3 types lastrowid as optional; after a successful INSERT it is the new row's id.
    assert cur.lastrowid is not None
    return int(cur.lastrowid)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, default=_json_default, allow_nan=True)


def _json_default(o):
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    return str(o)


class Workspace:
    """One workspace folder.  Cheap to create; safe to share between threads (a connection per thread)."""

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        self.path = resolve(path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            self.artifacts.mkdir(exist_ok=True)
        except OSError as exc:
            raise WorkspaceError(
                f"Cannot use {self.path} as a workspace ({exc.strerror or exc}). Choose another "
                f"folder with --workspace DIR or the {ENV_VAR} environment variable."
            ) from None
        self.db_path = self.path / DB_NAME
        self._local = threading.local()
        con = self._connection()
        try:
            _when_free(lambda: con.executescript(_SCHEMA))  # its own transaction; idempotent
        except sqlite3.Error as exc:
            raise WorkspaceError(f"The workspace database {self.db_path} cannot be used ({exc}).") from None
        with self.transaction() as tx:
            tx.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    def __repr__(self) -> str:
        return f"Workspace({str(self.path)!r})"

    @property
    def artifacts(self) -> Path:
        return self.path / "artifacts"

    # ------------------------------------------------------------------ connections
    def _connection(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            try:
                con = _when_free(self._open)
            except sqlite3.Error as exc:
                raise WorkspaceError(f"Cannot open the workspace database {self.db_path} ({exc}).") from None
            con.row_factory = sqlite3.Row
            self._local.con = con
        return con

    def _open(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.db_path, timeout=30.0, isolation_level=None, check_same_thread=True)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("PRAGMA foreign_keys=ON")
            con.execute("PRAGMA busy_timeout=30000")
        except BaseException:
            con.close()
            raise
        return con

    @contextmanager
    def transaction(self, immediate: bool = False) -> Iterator[sqlite3.Connection]:
        """One short transaction; ``immediate`` takes the write lock at once (check-then-write)."""
        con = self._connection()
        con.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        else:
            con.execute("COMMIT")

    def query(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        return self._connection().execute(sql, args).fetchall()

    def close(self) -> None:
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None

    # ------------------------------------------------------------------ datasets
    def register_dataset(self, digest: str, name: str, n: int, stored_path: str | None = None) -> None:
        """Record a dataset (idempotent); the first name and n stay, the last use is updated."""
        now = time.time()
        with self.transaction() as con:
            con.execute(
                "INSERT INTO datasets(id, name, n, created, last_used, stored_path) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET last_used = excluded.last_used, "
                "stored_path = COALESCE(excluded.stored_path, datasets.stored_path)",
                (digest, str(name), int(n), now, now, stored_path),
            )

    def dataset(self, digest: str) -> dict | None:
        rows = self.query("SELECT * FROM datasets WHERE id = ?", (digest,))
        return dict(rows[0]) if rows else None

    def datasets(self) -> list[dict]:
        return [dict(r) for r in self.query("SELECT * FROM datasets ORDER BY last_used DESC")]

    def store_source(self, raw: bytes, name: str, n: int) -> str:
        """Keep a copy of an uploaded table in the workspace (so a restart finds it) and register it."""
        import hashlib

        digest = hashlib.sha256(raw).hexdigest()
        folder = self.path / "datasets"
        folder.mkdir(exist_ok=True)
        suffix = Path(str(name)).suffix.lower()
        if suffix not in (".csv", ".tsv", ".txt", ".parquet", ".pq"):
            suffix = ".csv"
        target = folder / f"{digest}{suffix}"
        if not target.exists():
            tmp = target.with_suffix(target.suffix + ".part")
            tmp.write_bytes(raw)
            os.replace(tmp, target)
        self.register_dataset(digest, name, n, stored_path=str(target))
        return digest

    # ------------------------------------------------------------------ schemas and workloads
    def save_schema(self, schema_json: str, name: str = "schema", dataset: str | None = None) -> int:
        with self.transaction() as con:
            cur = con.execute(
                "INSERT INTO schemas(dataset, name, created, json) VALUES (?, ?, ?, ?)",
                (dataset, name, time.time(), schema_json),
            )
            return _inserted_id(cur)

    def latest_schema(self, dataset: str | None) -> str | None:
        rows = self.query("SELECT json FROM schemas WHERE dataset IS ? ORDER BY id DESC LIMIT 1", (dataset,))
        return rows[0]["json"] if rows else None

    def save_workload(self, workload: dict, dataset: str | None = None) -> int:
        with self.transaction() as con:
            cur = con.execute(
                "INSERT INTO workloads(dataset, created, json) VALUES (?, ?, ?)",
                (dataset, time.time(), _dumps(workload)),
            )
            return _inserted_id(cur)

    def latest_workload(self, dataset: str | None) -> dict | None:
        rows = self.query("SELECT json FROM workloads WHERE dataset IS ? ORDER BY id DESC LIMIT 1", (dataset,))
        return json.loads(rows[0]["json"]) if rows else None

    # ------------------------------------------------------------------ key-value state (the app's last choices)
    def set_state(self, key: str, value: Any) -> None:
        with self.transaction() as con:
            con.execute(
                "INSERT INTO state(key, value, updated) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
                "value = excluded.value, updated = excluded.updated",
                (key, _dumps(value), time.time()),
            )

    def get_state(self, key: str, default: Any = None) -> Any:
        rows = self.query("SELECT value FROM state WHERE key = ?", (key,))
        return json.loads(rows[0]["value"]) if rows else default

    # ------------------------------------------------------------------ runs
    def run_dir(self, run_id: str) -> Path:
        return self.artifacts / run_id

    def remove_run_artifacts(self, run_id: str) -> None:
        folder = self.run_dir(run_id)
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)


def dumps(obj: Any) -> str:
    """JSON for the workspace's text columns (NumPy numbers become plain numbers)."""
    return _dumps(obj)
