"""Session-state keys, their defaults, keeping choices across page switches, and the workspace.

What the user made lives in the workspace (``dpcore.workspace``: datasets, schemas, runs, the ledger), shared
by every session of this server and by the CLI, so a reload or a restart loses nothing.  ``st.session_state``
holds the widgets' values and per-session caches only.

Widget values live under keys starting with :data:`KEEP`.  Streamlit forgets a widget's value when a page that
does not show the widget runs; :func:`keep_choices` (called by ``app.py`` before every page) re-assigns those
keys so that switching pages never loses a choice.  The same keys are saved to the workspace after every script
run (:func:`save_choices`) and a new session starts from them (:func:`init`): a reload or a restart comes back
with the last choices.  Widgets using such keys take their initial value from session state only (never a
``value=`` argument), set by :func:`default`.
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

KEEP = "keep:"


def _leave_legacy_multipage_mode() -> None:
    """Streamlit runs a ``pages/`` script on its own, without ``app.py``, when the first request a fresh server
    process gets names a page (``/results`` reloaded after a restart): a ``pages/`` folder beside the entry
    script switches on its legacy multipage mode until ``app.py``'s ``st.navigation`` runs once.  Every page
    imports this module first, so clear the flag here, and rerun when it was set: the rerun runs ``app.py``."""
    try:
        from streamlit.runtime.pages_manager import PagesManager
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
    except ImportError:  # another Streamlit layout: nothing to do
        return
    was = PagesManager.uses_pages_directory
    PagesManager.uses_pages_directory = False
    if was and get_script_run_ctx() is not None:
        st.rerun()


_leave_legacy_multipage_mode()

# Widget keys (persisted across pages, reloads and restarts).
SOURCE = KEEP + "source"  # "bundled" | "upload"
WL_K = KEEP + "wl_k"
WL_MODE = KEEP + "wl_mode"  # "all" | "random" | "picked"
WL_M = KEEP + "wl_m"
WL_SEED = KEEP + "wl_seed"
WL_CAP = KEEP + "wl_cap"
WL_PICKED = KEEP + "wl_picked"
WL_CLASS = KEEP + "wl_class"  # width k of "all conjunctions of width ≤ k" (0 = no class)
MECH = KEEP + "mech"
OUTCOME = KEEP + "outcome"  # the column the analyst will predict ("" = none): steers the default's pairs
EPSILON = KEEP + "epsilon"
DELTA_MODE = KEEP + "delta_mode"  # "default" | "custom"
DELTA = KEEP + "delta"
TIME_LIMIT = KEEP + "time_limit"
EXECUTOR = KEEP + "executor"
FIX_SEED = KEEP + "fix_seed"
DEMO_SEED = KEEP + "demo_seed"
RUN_LABEL = KEEP + "run_label"
RESULT_RUN = KEEP + "result_run"  # run id shown on the Results page
OPEN_RUN = "open_run"  # a run "See the results" asked the Results page to open (applied there, once)
COMPARE_RUNS = KEEP + "compare_runs"  # run ids overlaid on the Compare page
COMPARE_DATASET = KEEP + "compare_dataset"
SHOW_DEMO = KEEP + "show_demo"
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
    OUTCOME: "",
    EPSILON: 1.0,
    DELTA_MODE: "default",
    DELTA: 1e-10,
    TIME_LIMIT: 10.0,
    EXECUTOR: "serial",
    FIX_SEED: False,
    DEMO_SEED: 0,
    RUN_LABEL: "",
    SHOW_DEMO: False,
}
#: Choices that are never restored in a new session: a fixed seed makes a run a demo, so it must be picked
#: again on purpose (issue 12, finding 1), and the seed goes with it.
NOT_RESTORED = (FIX_SEED, DEMO_SEED)

# Plain (non-widget) keys.
UPLOAD = "upload"  # dict(name, file_id, df, digest) of the uploaded table
UPLOAD_ERROR = "upload_error"
SCHEMA_TABLE = "schema_table"  # DataFrame edited by the schema editor
SCHEMA_FOR = "schema_for"  # the source the schema table was built for
SCHEMA_NOTES = "schema_notes"
DATASET = "dataset"  # (key, Dataset) or None
DATASET_ERROR = "dataset_error"
WORKLOAD = "workload"  # (key, Workload | None, error message | None)
LEDGER = "ledger"
DATASET_NAMES = "dataset_names"  # fingerprint -> display name
LAST_RUN = "last_run"  # id of the run this session last started on the Release page
RUN_CLICKS = "run_clicks"  # how many runs this session started: part of the Run button's key
SESSION_ID = "session_id"
ANNOUNCED = "announced"  # run ids whose end this session already announced (toast)
SAVED_CHOICES = "saved_choices"  # the choices last written to the workspace (skip identical writes)
CHOICES_STATE_KEY = "app.choices"


#: A copy of every kept choice, in a plain (non-widget) key Streamlit never cleans up.
KEPT = "kept_choices"


def keep_choices() -> None:
    """Re-assign persisted widget keys so a page that hides a widget keeps its value, and bring back from a plain
    copy any that Streamlit dropped anyway: under load a run on another page can end with a hidden widget's value
    removed (the Data page's table choice fell back to the bundled sample between the Data and Release pages)."""
    kept = st.session_state.setdefault(KEPT, {})
    for key, value in list(kept.items()):
        if key not in st.session_state:
            st.session_state[key] = value
    for key in list(st.session_state.keys()):
        if isinstance(key, str) and key.startswith(KEEP):
            st.session_state[key] = st.session_state[key]
            kept[key] = st.session_state[key]


def keep(key: str, value) -> None:
    """Set a kept choice from code (not a widget) -- and its copy, or :func:`keep_choices` would bring the old value
    back when the widget's page runs next ("See the results" opened the run chosen before)."""
    st.session_state[key] = value
    st.session_state.setdefault(KEPT, {})[key] = value


def forget(key: str) -> None:
    """Drop a kept choice on purpose (it does not come back from the copy :func:`keep_choices` keeps)."""
    st.session_state.pop(key, None)
    st.session_state.get(KEPT, {}).pop(key, None)


def init() -> None:
    """Defaults for every key; existing values are left alone.  A new session starts from the choices saved
    in the workspace (the last session's)."""
    if SESSION_ID not in st.session_state:
        import uuid

        st.session_state[SESSION_ID] = uuid.uuid4().hex[:12]
        saved = _saved_choices()
        for key, value in saved.items():
            if isinstance(key, str) and key.startswith(KEEP) and key not in NOT_RESTORED:
                st.session_state.setdefault(key, value)
        st.session_state[SAVED_CHOICES] = json.dumps(saved, sort_keys=True, default=str)
    for key, value in WIDGET_DEFAULTS.items():
        default(key, value)
    for key, factory in ((DATASET_NAMES, dict), (ANNOUNCED, set)):
        if key not in st.session_state:
            st.session_state[key] = factory()


def _saved_choices() -> dict:
    try:
        saved = workspace().get_state(CHOICES_STATE_KEY, {})
    except Exception:  # an unreadable saved state must not keep the app from starting
        return {}
    return saved if isinstance(saved, dict) else {}


def current_choices() -> dict:
    out = {}
    for key in list(st.session_state.keys()):
        if not (isinstance(key, str) and key.startswith(KEEP)) or key in NOT_RESTORED:
            continue
        value = st.session_state[key]
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            continue
        out[key] = value
    return out


def save_choices() -> None:
    """Write this session's choices to the workspace when they changed (after every script run)."""
    choices = current_choices()
    text = json.dumps(choices, sort_keys=True, default=str)
    if st.session_state.get(SAVED_CHOICES) == text:
        return
    workspace().set_state(CHOICES_STATE_KEY, choices)
    st.session_state[SAVED_CHOICES] = text


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

    from . import jobs

    ws = Workspace(path)
    jobs.recover(ws)  # first use in this server process: runs of a dead process become "interrupted"
    return ws


def ledger():
    """The persistent privacy ledger of the workspace (the accounting module pulls in scipy: loaded on use)."""
    from dpcore.privacy.ledger import Ledger

    return Ledger(workspace())


def runs_store():
    from dpcore.runs import RunStore

    return RunStore(workspace())


def has_spent() -> bool:
    """Whether anything was charged or capped (a plain query: the ledger module loads scipy)."""
    return bool(workspace().query("SELECT 1 FROM ledger UNION ALL SELECT 1 FROM caps LIMIT 1"))


def next_request_key() -> tuple[str, str]:
    """(button key, request key) of the next Run click: both change once a click started a run, so a second
    click on the same rendering of the button (a double click) carries the same request and starts nothing."""
    clicks = int(st.session_state.get(RUN_CLICKS, 0))
    return f"run_button:{clicks}", f"{st.session_state[SESSION_ID]}:{clicks}"


def clicked_run() -> None:
    st.session_state[RUN_CLICKS] = int(st.session_state.get(RUN_CLICKS, 0)) + 1


def reset() -> None:
    """Back to the default choices: this session's and the saved ones.  Runs, datasets and the ledger stay in
    the workspace (a reset never undoes a privacy charge)."""
    for key in list(st.session_state.keys()):
        del st.session_state[key]
    workspace().set_state(CHOICES_STATE_KEY, {})
    workspace().set_state("app.upload", None)
