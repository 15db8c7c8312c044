"""Session-state keys, their defaults, and keeping choices across page switches.

Everything a user chose or produced lives in ``st.session_state`` of their own
session: nothing private is ever put in a cache shared between sessions.

Widget values live under keys starting with :data:`KEEP`.  Streamlit forgets a
widget's value when a page that does not show the widget runs; :func:`keep_choices`
(called by ``app.py`` before every page) re-assigns those keys so that switching
pages never loses a choice.  Widgets using such keys take their initial value from
session state only (never a ``value=`` argument), set by :func:`default`.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

KEEP = "keep:"

# Widget keys (persisted across pages).
SOURCE = KEEP + "source"  # "bundled" | "upload"
WL_K = KEEP + "wl_k"
WL_MODE = KEEP + "wl_mode"  # "all" | "random" | "picked"
WL_M = KEEP + "wl_m"
WL_SEED = KEEP + "wl_seed"
WL_CAP = KEEP + "wl_cap"
WL_PICKED = KEEP + "wl_picked"
WL_CLASS = KEEP + "wl_class"  # width k of "all conjunctions of width ≤ k" (0 = no class)
MECH = KEEP + "mech"
EPSILON = KEEP + "epsilon"
DELTA_MODE = KEEP + "delta_mode"  # "default" | "custom"
DELTA = KEEP + "delta"
TIME_LIMIT = KEEP + "time_limit"
EXECUTOR = KEEP + "executor"
FIX_SEED = KEEP + "fix_seed"
DEMO_SEED = KEEP + "demo_seed"
RESULT_RUN = KEEP + "result_run"
COMPARE_RUNS = KEEP + "compare_runs"
TEACH_MECH = KEEP + "teach_mech"

WIDGET_DEFAULTS: dict[str, Any] = {
    SOURCE: "bundled",
    WL_K: 2,
    WL_MODE: "random",
    WL_M: 8,
    WL_SEED: 0,
    WL_CAP: True,
    WL_PICKED: [],
    WL_CLASS: 0,
    EPSILON: 1.0,
    DELTA_MODE: "default",
    DELTA: 1e-10,
    TIME_LIMIT: 10.0,
    EXECUTOR: "serial",
    FIX_SEED: False,
    DEMO_SEED: 0,
}

# Plain (non-widget) keys.
UPLOAD = "upload"  # dict(name, file_id, df) of the uploaded table, this session only
UPLOAD_ERROR = "upload_error"
SCHEMA_TABLE = "schema_table"  # DataFrame edited by the schema editor
SCHEMA_FOR = "schema_for"  # the source the schema table was built for
SCHEMA_NOTES = "schema_notes"
DATASET = "dataset"  # (key, Dataset) or None
DATASET_ERROR = "dataset_error"
WORKLOAD = "workload"  # (key, Workload | None, error message | None)
LEDGER = "ledger"
RUNS = "runs"  # list[ui.runner.RunRecord]
JOB = "job"  # ui.runner.RunJob of the Release page
TEACH_JOB = "teach_job"  # ui.runner.RunJob of the teaching page
DATASET_NAMES = "dataset_names"  # fingerprint -> display name, for the ledger


def keep_choices() -> None:
    """Re-assign persisted widget keys so a page that hides a widget keeps its value."""
    for key in list(st.session_state.keys()):
        if isinstance(key, str) and key.startswith(KEEP):
            st.session_state[key] = st.session_state[key]


def init() -> None:
    """Defaults for every key; existing values are left alone."""
    for key, value in WIDGET_DEFAULTS.items():
        default(key, value)
    for key, factory in ((RUNS, list), (DATASET_NAMES, dict)):
        if key not in st.session_state:
            st.session_state[key] = factory()


def default(key: str, value: Any) -> None:
    if key not in st.session_state:
        st.session_state[key] = list(value) if isinstance(value, list) else value


def get(key: str, fallback: Any = None) -> Any:
    return st.session_state.get(key, fallback)


def workspace():
    """The workspace this server uses ($DPCORE_WORKSPACE, else the per-user data folder): shared by every
    session of this server and by the CLI, so a reload or restart loses nothing."""
    from dpcore.workspace import resolve

    return _open_workspace(str(resolve(None)))


@st.cache_resource(show_spinner=False)
def _open_workspace(path: str):
    from dpcore.workspace import Workspace

    return Workspace(path)


def ledger():
    """The persistent privacy ledger of the workspace (the accounting module pulls in scipy: loaded on use)."""
    from dpcore.privacy.ledger import Ledger

    return Ledger(workspace())


def has_spent() -> bool:
    return bool(ledger().summary())


def job_exists() -> bool:
    return st.session_state.get(JOB) is not None or st.session_state.get(TEACH_JOB) is not None


def runs() -> list:
    return st.session_state[RUNS]


def reset() -> None:
    """Forget everything of this session (cancelling a run first)."""
    for key in (JOB, TEACH_JOB):
        job = st.session_state.get(key)
        if job is not None:
            job.cancel()
    for key in list(st.session_state.keys()):
        del st.session_state[key]
