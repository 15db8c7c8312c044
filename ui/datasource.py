"""The table in use: the bundled Adult sample or an upload, its roles table, its schema and its Dataset.

The bundled sample is public, so its load is cached across sessions (``st.cache_resource``).  An upload is
private: it lives in this session's state and in the workspace (a copy of the file, so a reload or a restart finds
it again), never in a cache shared between sessions.

**The schema is private by default, and discovered once per dataset.**  The roles table (:mod:`ui.roles`) shows
every column with the role proposed from exact counts (for the data owner's eyes only: showing it spends nothing);
what the user changes or confirms there is declared, field by field.  Then one of:

* everything the kept columns need is declared (the bundled sample's codebook, or typed): the schema costs nothing;
* **discover privately**: one explicit, charged run (kind ``"schema"``) releases the missing roles, category sets
  and bounds under DP (:func:`dpcore.tabular.prepare_table`), the cost stated before the click and reserved in the
  workspace ledger before the data is read.  The result is saved in the workspace and reused by every later
  release of this file: each release's card carries the schema part ("charged once, when the schema was
  discovered") without charging it again (:func:`dpcore.release.run_release`'s ``schema_release``).  Later edits
  that need nothing new from the data (excluding a column, declaring values or bounds, confirming a discovered
  role) are laid over the discovered schema at no cost (:func:`ui.roles.overlay`);
* **read the schema from the data without privacy**: an explicit checkbox; no charge, fields marked "inferred", and
  every card then says the schema is not covered.

The roles table and the choices are saved to the workspace after every edit.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field

import pandas as pd
import streamlit as st

from dpcore.data import Dataset, bundled_adult_domain, bundled_adult_table, load_dataset, read_table
from dpcore.domain import Domain
from dpcore.errors import BudgetError, DataError, DomainError, DPCoreError
from dpcore.tabular import STANDALONE_DELTA_SHARE, STANDALONE_EPSILON, standalone_budget

from . import roles, state

BUNDLED_NAME = "adult_census"
BUNDLED_LABEL = "Adult census sample (UCI, 32,561 rows; bundled, public)"
DECLARED = roles.DECLARED
SCHEMA_COLUMNS = roles.COLUMNS
READ_ONLY = roles.READ_ONLY
fold_edits = roles.fold_edits

UPLOADER_KEY = "uploader"
UPLOAD_STATE_KEY = "app.upload"  # workspace state: the last upload's digest and name
SCHEMA_TABLE_NAME = "app-roles-table"  # schemas saved by the Data page: the roles table, after every edit
DISCOVERED_NAME = "app-discovered-schema"  # schemas saved by a discovery run: the released schema and its cost
DISCOVERED_STATE = "app.schema."  # workspace state + digest: {"id": schema row, "run": run id} in use
FROM_DATA_STATE = "app.schema_from_data."  # workspace state + digest: the explicit non-private choice
SCHEMA_VERSION = "schema_version"
SCHEMA_TABLES = "schema_tables"  # source key -> its roles table, kept while another source is in use
PROPOSALS = "role_proposals"  # source key -> propose_roles(df) (exact: this session only)
UPLOAD_SEEN = "upload_seen"  # file id of the last upload taken in (read or refused)
RESTORE_TRIED = "upload_restore_tried"
SCHEMA_RUN = "schema_run"  # id of the discovery run this session last started
STATUS = "schema_status"  # (key, SchemaStatus) of the source in use, cached in this session
SCHEMA_EPS = state.KEEP + "schema_epsilon"  # ε offered for a discovery (a persisted choice)
#: The ε a discovery offers first, and its δ as a multiple of 1/n² (dpcore.tabular's standalone discovery).
DEFAULT_SCHEMA_EPSILON = STANDALONE_EPSILON
SCHEMA_DELTA_SHARE = STANDALONE_DELTA_SHARE


@st.cache_resource(show_spinner="Loading the bundled Adult sample…")
def bundled_table() -> pd.DataFrame:
    """The bundled public sample (shared read-only across sessions: it is public)."""
    return bundled_adult_table()


@st.cache_resource(show_spinner=False)
def bundled_domain() -> Domain:
    return bundled_adult_domain()


@st.cache_resource(show_spinner=False)
def bundled_dataset() -> Dataset:
    """The bundled sample encoded with its declared codebook schema (public data)."""
    dom = bundled_domain()
    return load_dataset(bundled_table()[dom.names], dom, BUNDLED_NAME)


@st.cache_resource(show_spinner=False)
def bundled_proposals() -> list:
    from dpcore.ingest import propose_roles

    return propose_roles(bundled_table())  # the sample is public: its exact counts may be shared


def upload_limit_mb() -> int:
    return int(st.get_option("server.maxUploadSize"))


# ------------------------------------------------------------------ sources
def accept_upload(uploaded) -> None:
    """Read an uploaded file into this session (once per distinct upload).

    A file that cannot be read replaces the previous table by nothing, so the page
    never silently keeps using an older file after showing an error.
    """
    file_id = getattr(uploaded, "file_id", None) or f"{uploaded.name}:{uploaded.size}"
    if st.session_state.get(UPLOAD_SEEN) == file_id:
        return
    st.session_state[UPLOAD_SEEN] = file_id
    st.session_state[state.UPLOAD_ERROR] = None
    st.session_state[state.UPLOAD] = None
    limit = upload_limit_mb()
    if uploaded.size > limit * 1024 * 1024:
        st.session_state[state.UPLOAD_ERROR] = (
            f"The file is {uploaded.size / 1e6:.1f} MB; the limit is {limit} MB. "
            "Upload a sample of the table or a Parquet file (smaller than CSV)."
        )
        return
    try:
        with st.spinner("Reading the uploaded file…"):
            df = read_table(uploaded.getvalue(), filename=uploaded.name)
    except DataError as exc:
        st.session_state[state.UPLOAD_ERROR] = str(exc)
        return
    raw = uploaded.getvalue()
    digest = hashlib.sha256(raw).hexdigest()
    st.session_state[state.UPLOAD] = {"name": uploaded.name, "file_id": file_id, "df": df, "digest": digest}
    # A copy in the workspace: a reload or a restart finds the table again (and the ledger knows its name).
    ws = state.workspace()
    ws.store_source(raw, uploaded.name, len(df))
    ws.set_state(UPLOAD_STATE_KEY, {"digest": digest, "name": uploaded.name})


def restore_upload() -> None:
    """The last uploaded table, read back from the workspace's copy (a new session after a reload or restart)."""
    saved = state.workspace().get_state(UPLOAD_STATE_KEY)
    if not isinstance(saved, dict) or not saved.get("digest"):
        return
    info = state.workspace().dataset(saved["digest"])
    path = (info or {}).get("stored_path")
    if not path:
        return
    try:
        df = read_table(path, filename=saved.get("name"))
    except DataError:  # the copy is gone or unreadable: the user uploads again
        return
    name = saved.get("name") or info["name"]
    st.session_state[state.UPLOAD] = {
        "name": name,
        "file_id": f"stored:{saved['digest']}",
        "df": df,
        "digest": saved["digest"],
    }


def sync_upload() -> None:
    """Take in a file just dropped on the Data page's uploader, before anything renders
    (so the sidebar already shows it in the same run)."""
    if state.get(state.SOURCE) == "upload":
        uploaded = st.session_state.get(UPLOADER_KEY)
        if uploaded is not None:
            accept_upload(uploaded)


def current_source() -> tuple[str, str, pd.DataFrame, Domain | None] | None:
    """(source key, display name, raw table, declared schema or None), or None if nothing is loaded."""
    if state.get(state.SOURCE) == "upload":
        if state.get(state.UPLOAD) is None and state.get(RESTORE_TRIED) is None:
            st.session_state[RESTORE_TRIED] = True
            restore_upload()
        up = state.get(state.UPLOAD)
        if up is None:
            return None
        return f"upload:{up['digest'][:16]}", up["name"], up["df"], None
    return "bundled", BUNDLED_NAME, bundled_table(), bundled_domain()


def proposed_excluded_but_kept(domain: Domain) -> list[str]:
    """Columns the roles table shows as excluded by an (exact, owner-only) proposal the owner did not declare, that
    the schema in use keeps: the private discovery decides those, and may keep them (issue 24)."""
    table = state.get(state.SCHEMA_TABLE)
    if table is None:
        return []
    out = []
    for row in table.to_dict("records"):
        undeclared = "role" not in roles.declared_fields(row) and not row.get("rule")
        if row.get("role") == "excluded" and undeclared and row["column"] in domain.names:
            out.append(str(row["column"]))
    return out


def declare_excluded(columns: list[str]) -> None:
    """Declare the shown 'excluded' role of ``columns`` (a public choice: they are left out of every release)."""
    table = roles.declare_roles(st.session_state[state.SCHEMA_TABLE], columns)
    _replace_schema_table(table, state.get(state.SCHEMA_FOR))
    save_schema_table()


def current_key() -> str | None:
    """The workspace's (and ledger's) key of the table in use, or None when nothing is loaded."""
    src = current_source()
    return None if src is None else _digest_of(src[0])


def _digest_of(source_key: str) -> str:
    """The workspace's key of a source: the digest of its bytes (the ledger's key too)."""
    if source_key == "bundled":
        return str(bundled_table().attrs.get("source_digest") or source_key)
    up = state.get(state.UPLOAD)
    return up["digest"] if up is not None and source_key == f"upload:{up['digest'][:16]}" else source_key


def _dataset_name(filename: str) -> str:
    stem = str(filename).rsplit(".", 1)[0]
    return stem[:80] or "upload"


# ------------------------------------------------------------------ the roles table
def proposals(source_key: str, df: pd.DataFrame) -> list:
    """Roles proposed from exact counts (:func:`dpcore.ingest.propose_roles`): for the owner's eyes only, kept in
    this session (an upload's are never shared between sessions)."""
    if source_key == "bundled":
        return bundled_proposals()
    cache = st.session_state.setdefault(PROPOSALS, {})
    if source_key not in cache:
        from dpcore.ingest import propose_roles

        with st.spinner("Reading every column to propose its role (exact counts, shown only to you)…"):
            cache[source_key] = propose_roles(df)
    return cache[source_key]


def schema_table_for(source_key: str, df: pd.DataFrame, declared: Domain | None) -> pd.DataFrame:
    return roles.roles_table(df.columns, proposals(source_key, df), declared)


def save_schema_table() -> None:
    """Keep the roles table (the user's declarations) in the workspace: a reload or a restart finds it again."""
    table, source_key = state.get(state.SCHEMA_TABLE), state.get(state.SCHEMA_FOR)
    if table is None or source_key is None:
        return
    state.workspace().save_schema(table.to_json(orient="records"), SCHEMA_TABLE_NAME, _digest_of(source_key))


def upgraded_records(records: list) -> list:
    """A saved roles table's rows in the current columns: a table saved before the ``missing_text`` column
    (2026-11-29) gets it empty, so the declarations in it are kept.  Other shapes are returned as they are."""
    before = [c for c in SCHEMA_COLUMNS if c != "missing_text"]
    if records and isinstance(records[0], dict) and list(records[0]) == before:
        return [{c: r.get(c, "") for c in SCHEMA_COLUMNS} for r in records]
    return records


def saved_schema_table(source_key: str, df: pd.DataFrame) -> pd.DataFrame | None:
    """The last roles table saved for this source, if it still describes the file's columns."""
    rows = state.workspace().query(
        "SELECT json FROM schemas WHERE dataset IS ? AND name = ? ORDER BY id DESC LIMIT 1",
        (_digest_of(source_key), SCHEMA_TABLE_NAME),
    )
    if not rows:
        return None
    try:
        records = upgraded_records(json.loads(rows[0]["json"]))
        table = roles.frame(records)
        if [list(r) for r in records[:1]] not in ([], [SCHEMA_COLUMNS]):
            return None  # saved by another version of the page
        if [str(c) for c in table["column"]] != [str(c) for c in df.columns]:
            return None  # saved for other columns
        return table
    except (ValueError, TypeError, KeyError):
        return None


def _replace_schema_table(table: pd.DataFrame, source_key: str) -> None:
    st.session_state[state.SCHEMA_TABLE] = table
    st.session_state[state.SCHEMA_FOR] = source_key
    # A new editor key for a new table: the old editor's pending edits belong to the old rows.
    st.session_state[SCHEMA_VERSION] = st.session_state.get(SCHEMA_VERSION, 0) + 1


def editor_key(source_key: str) -> str:
    return f"roles_editor:{source_key}:{st.session_state.get(SCHEMA_VERSION, 0)}"


def ensure_schema_table(source_key: str, df: pd.DataFrame, declared: Domain | None) -> pd.DataFrame:
    """The roles table of the current source; each source keeps its own edits when the user switches between
    the bundled sample and an upload."""
    if state.get(state.SCHEMA_FOR) != source_key or state.get(state.SCHEMA_TABLE) is None:
        saved = st.session_state.setdefault(SCHEMA_TABLES, {})
        if state.get(state.SCHEMA_FOR) is not None and state.get(state.SCHEMA_TABLE) is not None:
            saved[state.get(state.SCHEMA_FOR)] = st.session_state[state.SCHEMA_TABLE]
        table = saved.get(source_key)
        if table is None:
            table = saved_schema_table(source_key, df)
        _replace_schema_table(table if table is not None else schema_table_for(source_key, df, declared), source_key)
    return st.session_state[state.SCHEMA_TABLE]


def apply_editor_changes(editor_key: str) -> None:
    """on_change of the roles editor: fold the edits into the stored table (declaring each edited field).

    The table in session state (not the widget) is the truth, so edits survive page switches."""
    edits = st.session_state.get(editor_key) or {}
    st.session_state[state.SCHEMA_TABLE] = fold_edits(st.session_state[state.SCHEMA_TABLE], edits)
    save_schema_table()


def confirm_all_roles() -> None:
    """Every role as shown becomes declared: a public choice, at no cost."""
    _replace_schema_table(roles.confirm_all(st.session_state[state.SCHEMA_TABLE]), state.get(state.SCHEMA_FOR))
    save_schema_table()


def declare_proposal() -> None:
    """The proposed value lists (rare values left out) and rounded bounds of every kept column become declared:
    the owner states they are public (:func:`dpcore.proposal.propose_schema`)."""
    from dpcore.proposal import propose_schema

    src = current_source()
    if src is None:
        return
    _, _, df, _ = src
    table = roles.declare_proposal(st.session_state[state.SCHEMA_TABLE], propose_schema(df))
    _replace_schema_table(table, state.get(state.SCHEMA_FOR))
    save_schema_table()


def reset_roles(source_key: str, df: pd.DataFrame, declared: Domain | None) -> None:
    """Back to the proposals (and the declared schema, if any): nothing declared by hand."""
    _replace_schema_table(schema_table_for(source_key, df, declared), source_key)
    save_schema_table()


def load_schema_json(raw: bytes, source_key: str, df: pd.DataFrame) -> str | None:
    """Fill the roles table from a schema JSON: its declared fields become declarations (fields it marks as
    discovered or inferred are discovered again); columns it does not list are excluded by the schema."""
    try:
        dom = Domain.from_json(raw)
    except DomainError as exc:
        return str(exc)
    known = [n for n in dom.names if n in df.columns]
    if not known:
        return (
            f"None of the schema's {len(dom)} attributes matches a column of the table; check that the "
            "schema belongs to this file."
        )
    _replace_schema_table(schema_table_for(source_key, df, dom.project(known)), source_key)
    save_schema_table()
    return None


# ------------------------------------------------------------------ the schema in use
@dataclass
class SchemaStatus:
    """The schema of the table in use and how it was obtained.

    ``mode``: "declared" (costs nothing), "discovered" (a discovery run's, reused), "from_data" (read off the
    data without privacy, by choice), "needs_discovery" (nothing yet: discover it) or "error"."""

    mode: str
    dataset: Dataset | None = None
    card_data: dict | None = None
    schema_release: dict | None = None
    #: Columns a new discovery would discover (roles, value sets or bounds), from the declarations alone.
    to_discover: list[str] = field(default_factory=list)
    #: Columns whose current declarations the schema in use does not reflect (a new discovery is needed).
    pending: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    saved: dict | None = None

    @property
    def schema_from_data(self) -> bool:
        return self.mode == "from_data"


def saved_discovery(digest: str) -> dict | None:
    """The discovered schema in use for this file (saved by its discovery run), or None."""
    ws = state.workspace()
    pointer = ws.get_state(DISCOVERED_STATE + digest)
    if not isinstance(pointer, dict) or pointer.get("id") is None:
        return None
    rows = ws.query("SELECT id, json FROM schemas WHERE id = ? AND dataset IS ?", (int(pointer["id"]), digest))
    if not rows:
        return None
    try:
        record = json.loads(rows[0]["json"])
    except ValueError:
        return None
    record["schema_id"] = rows[0]["id"]
    return record


def schema_from_data_chosen(digest: str) -> bool:
    return bool(state.workspace().get_state(FROM_DATA_STATE + digest, False))


def choose_schema_from_data(digest: str, widget_key: str) -> None:
    state.workspace().set_state(FROM_DATA_STATE + digest, bool(st.session_state.get(widget_key)))


def _encode(df: pd.DataFrame, domain: Domain, name: str) -> Dataset:
    return load_dataset(df[domain.names], domain, _dataset_name(name))


def _free_release(card_data: dict) -> dict:
    return {"card_data": card_data, "epsilon": 0.0, "delta": 0.0, "run": None}


def compute_status(
    source_key: str, name: str, df: pd.DataFrame, table: pd.DataFrame, saved: dict | None, from_data: bool
) -> SchemaStatus:
    """The schema the roles table, a saved discovery and the non-private choice give (no Streamlit state)."""
    from dpcore.tabular import columns_to_discover, prepare_table

    decl = roles.declarations(table)
    if decl.problems:
        return SchemaStatus("error", problems=decl.problems)
    renamed = list(df.attrs.get("renamed", []))
    try:
        _check_declared_lists(df, decl)
        domain = roles.declared_domain(table)
        if domain is not None:  # a codebook schema, edited or not: nothing is read off the data
            if source_key == "bundled" and domain == bundled_domain():
                ds = bundled_dataset()
            else:
                ds = _encode(df, domain, name)
            excluded = [
                {"name": r["column"], "reason": _excluded_reason(r)}
                for r in table.to_dict("records")
                if r["role"] == "excluded"
            ]
            card = {"n": ds.n, "excluded": excluded, "renamed": renamed}
            return SchemaStatus("declared", ds, card, _free_release(card))
        need = columns_to_discover(df.columns, schema=decl.schema, roles=decl.roles, unlisted=decl.unlisted)
        common = dict(schema=decl.schema, roles=decl.roles, unlisted=decl.unlisted, name=_dataset_name(name))
        if not need:  # every kept column fully declared: nothing to discover, nothing spent (ε is not used)
            prep = prepare_table(df, epsilon=1.0, delta=1e-9, noise=None, **common)
            return SchemaStatus("declared", prep.dataset, prep.card_data, _free_release(prep.card_data))
        if from_data:
            prep = prepare_table(df, schema_from_data=True, epsilon=1.0, delta=1e-9, noise=None, **common)
            return SchemaStatus("from_data", prep.dataset, prep.card_data, _free_release(prep.card_data), need)
        if saved is None:
            return SchemaStatus("needs_discovery", to_discover=need)
        over = roles.overlay(saved, decl)
        pending = columns_to_discover(df.columns, schema=over.schema, roles=over.roles, unlisted=over.unlisted)
        release = {k: saved[k] for k in ("epsilon", "delta", "run")}
        if pending:  # the changes need the data again: keep the discovered schema as it is until rediscovered
            domain = Domain.from_dict(saved["domain"])
            card = saved["card_data"]
            ds = _encode(df, domain, name)
            return SchemaStatus("discovered", ds, card, {"card_data": card, **release}, need, pending, saved=saved)
        prep = prepare_table(
            df, schema=over.schema, roles=over.roles, unlisted=over.unlisted, epsilon=1.0, delta=1e-9, noise=None,
            name=_dataset_name(name),
        )  # fmt: skip
        card = dict(prep.card_data)
        card["excluded"] = _reasons(card["excluded"], saved, decl)
        if "schema_discovery" in saved["card_data"]:
            card["schema_discovery"] = saved["card_data"]["schema_discovery"]
        return SchemaStatus("discovered", prep.dataset, card, {"card_data": card, **release}, need, saved=saved)
    except (DomainError, DataError, BudgetError) as exc:
        return SchemaStatus("error", problems=[str(exc)])


def _excluded_reason(row: dict) -> str:
    """Why a row of a purely declared schema is left out, as the card says it (the engine's words)."""
    if "role" in roles.declared_fields(row):
        return "excluded by the user"
    if row.get("rule") == "unlisted":
        return "not in the declared schema"
    return row.get("note") or "excluded"


def _check_declared_lists(df: pd.DataFrame, decl: roles.Declarations) -> None:
    """A declared value list without "(other)" must hold every value of its column: say so before anything is
    charged (an exact check, shown to the owner only, like the proposals), not after a discovery has run."""
    from dpcore.domain import Attribute

    for e in decl.entries:
        if e["kind"] == "categorical" and not e.get("other") and e["name"] in df.columns:
            Attribute(e["name"], "categorical", tuple(e["values"]), missing=True).encode(df[e["name"]])


def _reasons(excluded: list[dict], saved: dict, decl: roles.Declarations) -> list[dict]:
    """The discovery's own reasons for the columns it excluded (the overlay only says "excluded by the schema")."""
    found = {r["name"]: r.get("reason", "") for r in saved["roles"] if r["role"] == "excluded"}
    found.update({e["name"]: e["reason"] for e in saved["card_data"].get("excluded", [])})
    out = []
    for e in excluded:
        if (decl.roles.get(e["name"]) or {}).get("role") == "excluded":
            out.append({"name": e["name"], "reason": "excluded by the user"})
        else:
            out.append({"name": e["name"], "reason": found.get(e["name"]) or e["reason"]})
    return out


def status() -> SchemaStatus | None:
    """The schema status of the current source (cached in this session per declarations and saved discovery)."""
    src = current_source()
    if src is None:
        return None
    source_key, name, df, declared = src
    table = ensure_schema_table(source_key, df, declared)
    digest = _digest_of(source_key)
    saved = saved_discovery(digest)
    from_data = schema_from_data_chosen(digest)
    key = (
        source_key,
        table.to_json(orient="records"),
        None if saved is None else saved["schema_id"],
        from_data,
    )
    cached = state.get(STATUS)
    if isinstance(cached, tuple) and len(cached) == 2 and cached[0] == key:
        return cached[1]
    result = compute_status(source_key, name, df, table, saved, from_data)
    st.session_state[STATUS] = (key, result)
    # (key, Dataset) under the session's dataset key, as the other pages and tests read it
    st.session_state[state.DATASET] = None if result.dataset is None else (key, result.dataset)
    st.session_state[state.DATASET_ERROR] = result.problems or None
    if result.dataset is not None:
        st.session_state[state.DATASET_NAMES][result.dataset.fingerprint] = name
    return result


def current_dataset() -> Dataset | None:
    """The encoded dataset for the current source and its schema, or None (no table, or no schema yet)."""
    s = status()
    if s is None or s.dataset is None:
        if s is not None and s.mode == "needs_discovery":
            st.session_state[state.DATASET_ERROR] = [
                "The schema of this table is not discovered yet: discover it privately (or declare it) on the "
                "Data page."
            ]
        return None
    return s.dataset


def schema_statement(dataset: Dataset) -> dict:
    """Where ``dataset``'s schema came from, for a learned model's file and the Learn page (see
    :func:`dpcore.learning.model.schema_statement`): a discovery's (ε, δ) and run when it was discovered."""
    from dpcore.learning.model import schema_statement as statement

    s = status()
    if s is not None and s.dataset is dataset and s.mode == "discovered" and s.schema_release:
        rel = s.schema_release
        return statement(dataset.domain, epsilon=rel["epsilon"], delta=rel["delta"], run=rel.get("run"))
    return statement(dataset.domain)


def release_options() -> dict:
    """What a release of the current dataset passes on (:func:`ui.jobs.start_release`): the schema's discovery, if
    any (on the card, not charged again), and the explicit non-private choice."""
    s = status()
    if s is None or s.dataset is None:
        return {}
    return {"schema_release": s.schema_release, "schema_from_data": s.schema_from_data}


def schema_cost_note() -> str | None:
    """One sentence for the Release page about the schema's part of every release's guarantee."""
    s = status()
    if s is None or s.dataset is None:
        return None
    if s.mode == "discovered":
        return (
            f"The schema was discovered privately once (run {s.schema_release['run']}, ε = "
            f"{s.schema_release['epsilon']:g}, δ = {s.schema_release['delta']:.2g}): every release's card adds it to "
            "the release's own ε and δ, but the ledger is not charged for it again."
        )
    if s.mode == "from_data":
        return (
            "The schema was read from the data WITHOUT privacy (your explicit choice): the card will say the "
            "guarantee does not cover it."
        )
    return None


def summary() -> dict | None:
    """Name, n and attribute count of the table in use, without encoding it."""
    src = current_source()
    if src is None:
        return None
    source_key, name, df, declared = src
    cached = state.get(state.DATASET)
    if isinstance(cached, tuple) and len(cached) == 2 and cached[0][0] == source_key:
        ds = cached[1]
        return {"name": name, "n": ds.n, "attributes": len(ds.domain)}
    table = ensure_schema_table(source_key, df, declared)
    return {"name": name, "n": len(df), "attributes": int((table["role"] != "excluded").sum())}


def dataset_error() -> list[str] | None:
    return state.get(state.DATASET_ERROR)


# ------------------------------------------------------------------ the discovery run
def discovery_plan(epsilon: float, delta: float) -> tuple[float, float, list[str]]:
    """(ε_d, δ_d, columns) a discovery at (ε, δ) would charge and discover, from the declarations alone (public)."""
    from dpcore.tabular import discovery_budget

    df, args = _discovery_args(epsilon, delta)
    return discovery_budget(df.columns, **args)


def discovery_outlook(epsilon: float, delta: float) -> list[str]:
    """What a discovery at (ε, δ) cannot resolve on this table (public: the header, the declarations, ε, δ, n)."""
    from dpcore.tabular import discovery_outlook as outlook

    df, args = _discovery_args(epsilon, delta)
    return outlook(df.columns, len(df), **args)


def schema_plan(epsilon: float, delta: float):
    """What a discovery at (ε, δ) is expected to keep (:func:`dpcore.tabular.schema_plan`: public, no data read)."""
    from dpcore.tabular import schema_plan as plan

    df, args = _discovery_args(epsilon, delta)
    return plan(df.columns, len(df), **args)


#: The schema ε the Data page suggests when the one chosen would keep (nearly) nothing (smallest first).
SUGGESTED_SCHEMA_EPSILONS = (0.3, 0.4, 0.5, 0.75, 1.0, 1.5, 2.0)


def smallest_usable_epsilon(epsilon: float, delta: float) -> float | None:
    """The smallest suggested schema ε above ``epsilon`` whose plan keeps something (public: no data read); None
    when none up to the last does."""
    from dpcore.tabular import schema_plan as plan

    df, args = _discovery_args(epsilon, delta)  # the table and its declarations, read once
    for eps in SUGGESTED_SCHEMA_EPSILONS:
        if eps > epsilon and not plan(df.columns, len(df), **{**args, **standalone_budget(eps, delta)}).refuse:
            return eps
    return None


def _discovery_args(epsilon: float, delta: float) -> tuple[pd.DataFrame, dict]:
    """The table in use and the engine's arguments for a discovery run at (ε, δ): the run gets 2(ε, δ) with a
    share of one half, so all of (ε, δ) goes to the schema."""
    source_key, _, df, declared = current_source()
    decl = roles.declarations(ensure_schema_table(source_key, df, declared))
    args = dict(standalone_budget(epsilon, delta), schema=decl.schema, roles=decl.roles)
    return df, {**args, "unlisted": decl.unlisted}


def default_schema_delta(n: int) -> float:
    return SCHEMA_DELTA_SHARE / float(n) ** 2


def start_discovery(epsilon: float, delta: float, request_key: str) -> str:
    """Discover the schema of the table in use privately, as a recorded run of kind "schema": (ε, δ) is reserved in
    the workspace ledger before the data is read and settled after; the result is saved in the workspace."""
    from . import jobs

    source_key, name, df, declared = current_source()
    digest = _digest_of(source_key)
    decl = roles.declarations(ensure_schema_table(source_key, df, declared))
    if decl.problems:
        raise DomainError(decl.problems[0])
    eps_d, delta_d, cols = discovery_plan(epsilon, delta)
    if not cols:
        raise DPCoreError("Everything the kept columns need is declared: there is nothing to discover.")
    ws = state.workspace()
    target = _discovery_target(ws, df, digest, _dataset_name(name), decl, eps_d, delta_d)
    return jobs.start(
        "schema",
        f"Schema discovery: {_dataset_name(name)}",
        (digest, _dataset_name(name)),
        target,
        request_key=request_key,
        mechanism="schema discovery",
        params={"columns": cols},
        epsilon=eps_d,
        delta=delta_d,
    )


def _discovery_target(ws, df, digest: str, name: str, decl: roles.Declarations, eps_d: float, delta_d: float):
    def target(progress, cancel, run_id):
        from dpcore.privacy.ledger import Ledger
        from dpcore.privacy.samplers import Randomness
        from dpcore.tabular import prepare_table
        from dpcore.workspace import dumps

        progress(0, 1, "discovering the schema privately")  # a cancel asked before now: nothing read, nothing charged
        ledger = Ledger(ws)
        ledger.reserve(
            dataset=digest, name=name, n=len(df), run=run_id, mechanism="schema discovery", epsilon=eps_d, delta=delta_d
        )
        noise = Randomness()  # cryptographic: the discovered schema is published with every release
        prep = prepare_table(
            df, schema=decl.schema, roles=decl.roles, unlisted=decl.unlisted, **standalone_budget(eps_d, delta_d),
            noise=noise, name=name, ledger=None,  # reserved above
        )  # fmt: skip
        ledger.settle(run_id, prep.spends)
        record = {
            "format": "dpcore-app-schema/1",
            "domain": prep.domain.to_dict(),
            "roles": [r.to_dict() for r in prep.roles],
            "card_data": prep.card_data,
            "epsilon": prep.epsilon_spent,
            "delta": prep.delta_spent,
            "run": run_id,
            "warnings": prep.warnings,
            "declarations": decl.key(),
            "created": time.time(),
        }
        schema_id = ws.save_schema(dumps(record), DISCOVERED_NAME, digest)
        ws.set_state(DISCOVERED_STATE + digest, {"id": schema_id, "run": run_id})
        privacy = {
            "guarantee": noise.guarantee,
            "epsilon": prep.epsilon_spent,
            "delta": prep.delta_spent,
            "charged": "once; every release of this schema states it on its card without charging it again",
        }
        return {"card": {"kind": "schema discovery", "privacy": privacy, "data": prep.card_data}}

    return target


# ------------------------------------------------------------------ tables for the page
def domain_table(domain: Domain) -> pd.DataFrame:
    """The schema in use: each attribute's kind, size, where each field came from, and its (public) values."""
    rows = []
    for a in domain.attributes:
        d = a.to_dict()
        if a.kind == "categorical":
            kind = "categorical"
            shown = roles.VALUE_SEP.join(a.values) + (" | (other)" if a.other else "")
        elif a.kind == "numeric":
            kind = "integer" if a.integer else "real"
            shown = f"{a.lower:g} to {a.upper:g}, {a.bins} bins"
            if a.texts:  # texts kept beside the numbers ("<0.5"), values of their own
                shown += " + " + roles.VALUE_SEP.join(a.texts)
        else:
            kind = f"date ({a.format})"
            shown = f"{d['lower']} to {d['upper']}, {a.bins} bins"
            if a.texts:  # texts kept beside the dates ("unknown"), values of their own
                shown += " + " + roles.VALUE_SEP.join(a.texts)
        shown = shown[:300]
        if a.missing and a.missing_text:  # how the release's CSV writes a missing cell, as the file did
            shown += f"; a missing cell written {a.missing_text}"
        src = a.field_sources
        if len(set(src.values())) == 1:
            source = next(iter(src.values()))
        else:
            source = ", ".join(f"{'role' if f == 'kind' else f}: {s}" for f, s in src.items())
        rows.append({"attribute": a.name, "kind": kind, "size": a.size, "source": source, "values or bounds": shown})
    return pd.DataFrame(rows)


def dtype_table(df: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "column": [str(c) for c in df.columns],
            "type": [str(t) for t in df.dtypes],
            "missing": [int(v) for v in df.isna().sum().to_numpy()],
            "distinct": [int(v) for v in df.nunique().to_numpy()],
        }
    )
