"""The table in use: the bundled Adult sample or an upload, its schema table, its Dataset.

The bundled sample is public, so its load is cached across sessions
(``st.cache_resource``).  An upload is private: it lives in this session's state and
in the workspace (a copy of the file, so a reload or a restart finds it again), never
in a cache shared between sessions.  The schema table is saved to the workspace after
every edit.

The schema editor edits a plain table (one row per column of the file); this module
turns that table into a :class:`~dpcore.domain.Domain` and back.  An attribute is
"declared" when its definition came from a schema (the bundled codebook or a loaded
schema JSON) or the user typed it; otherwise it is "inferred from data (not
private)", and the release card says so.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pandas as pd
import streamlit as st

from dpcore.data import Dataset, bundled_adult_domain, bundled_adult_table, load_dataset, read_table
from dpcore.domain import MAX_INFERRED_CATEGORIES, Attribute, Domain, infer_attribute
from dpcore.errors import DataError, DomainError

from . import state

BUNDLED_NAME = "adult_census"
BUNDLED_LABEL = "Adult census sample (UCI, 32,561 rows; bundled, public)"
VALUE_SEP = " | "
DECLARED = "declared"
INFERRED = "inferred from data (not private)"
#: A column whose share of distinct values reaches this looks like an identifier.
IDENTIFIER_SHARE = 0.95
SCHEMA_COLUMNS = [
    "include",
    "column",
    "kind",
    "values",
    "lower",
    "upper",
    "bins",
    "edges",
    "missing",
    "out_of_bounds",
    "size",
    "source",
    "distinct",
    "note",
]
#: Columns of the schema table the user cannot edit.
READ_ONLY = ("column", "size", "source", "distinct", "note")
#: Editing any of these makes the attribute "declared" (the user stated it).
DEFINITION_FIELDS = ("values", "lower", "upper", "bins", "edges", "out_of_bounds")


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


def upload_limit_mb() -> int:
    return int(st.get_option("server.maxUploadSize"))


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
        df = read_table(path)
    except DataError:  # the copy is gone or unreadable: the user uploads again
        return
    name = saved.get("name") or info["name"]
    st.session_state[state.UPLOAD] = {
        "name": name,
        "file_id": f"stored:{saved['digest']}",
        "df": df,
        "digest": saved["digest"],
    }


UPLOADER_KEY = "uploader"
UPLOAD_STATE_KEY = "app.upload"  # workspace state: the last upload's digest and name
SCHEMA_TABLE_NAME = "app-schema-table"  # schemas saved by the Data page: the editor's whole table
SCHEMA_VERSION = "schema_version"
SCHEMA_TABLES = "schema_tables"  # source key -> its schema table, kept while another source is in use
UPLOAD_SEEN = "upload_seen"  # file id of the last upload taken in (read or refused)
RESTORE_TRIED = "upload_restore_tried"


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


# ------------------------------------------------------------------ schema table
def _row_for(attr: Attribute | None, column: pd.Series, name: str, source: str, n: int) -> dict:
    present = column.dropna()
    distinct = int(present.nunique())
    row = {
        "include": True,
        "column": name,
        "kind": "categorical",
        "values": "",
        "lower": None,
        "upper": None,
        "bins": None,
        "edges": "",
        "missing": bool(column.isna().any()),
        "out_of_bounds": "clip",
        "size": 0,
        "source": source,
        "distinct": distinct,
        "note": "",
    }
    if attr is not None:
        row["kind"] = attr.kind
        row["missing"] = attr.missing
        if attr.kind == "categorical":
            row["values"] = VALUE_SEP.join(attr.values)
        else:
            row.update(
                lower=float(attr.lower), upper=float(attr.upper), bins=int(attr.bins), out_of_bounds=attr.out_of_bounds
            )
            equal_width = np.allclose(attr.edges, np.linspace(attr.lower, attr.upper, attr.bins + 1))
            row["edges"] = "" if equal_width else format_edges(attr.edges)
    if len(present) >= 20 and distinct >= IDENTIFIER_SHARE * len(present):
        row["include"] = False
        row["note"] = (
            f"looks like an identifier: {distinct:,} distinct values in {len(present):,} rows; "
            "excluded (an identifier carries no statistics worth releasing)"
        )
    return row


def schema_table_for(df: pd.DataFrame, declared: Domain | None) -> pd.DataFrame:
    """One editable row per column: declared where a schema says so, inferred elsewhere."""
    n = len(df)
    rows = []
    for name in df.columns:
        col = df[name]
        if declared is not None and name in declared.names:
            row = _row_for(declared[name], col, name, DECLARED, n)
            row["include"] = True
            row["note"] = ""
        else:
            try:
                attr = infer_attribute(col, name)
                row = _row_for(attr, col, name, INFERRED, n)
            except DomainError:
                row = _row_for(None, col, name, INFERRED, n)
                row["include"] = False
                row["note"] = (
                    f"looks like an identifier or free text: {row['distinct']:,} distinct values "
                    f"(limit {MAX_INFERRED_CATEGORIES:,}); excluded — declare it numeric with bounds "
                    "to use it"
                )
            if declared is not None and row["include"]:
                row["include"] = False
                row["note"] = "not in the declared schema; include it to use a schema inferred from the data"
        rows.append(row)
    table = pd.DataFrame(rows, columns=SCHEMA_COLUMNS)
    table["size"] = [row_size(r) for r in table.to_dict("records")]
    return table.astype({"lower": "float64", "upper": "float64", "bins": "Int64"})


def parse_values(text) -> tuple[str, ...]:
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return ()
    return tuple(v.strip() for v in str(text).split("|") if v.strip())


def format_edges(edges) -> str:
    out = []
    for e in edges:
        short = f"{e:.15g}"
        out.append(short if float(short) == e else repr(float(e)))
    return VALUE_SEP.join(out)


def parse_edges(text, name: str = "") -> tuple[float, ...]:
    """Explicit bin edges typed as 'a | b | c'; empty means equal-width bins."""
    parts = parse_values(text)
    try:
        return tuple(float(p) for p in parts)
    except ValueError:
        raise DomainError(
            f"Attribute {name!r}: bin edges must be numbers separated by ' | ' (got {str(text)[:60]!r})."
        ) from None


def _num(x):
    if x is None or (isinstance(x, float) and math.isnan(x)) or x is pd.NA:
        return None
    return x


def row_size(row: dict) -> int:
    extra = 1 if row.get("missing") else 0
    if row.get("kind") == "numeric":
        try:
            edges = parse_edges(row.get("edges"))
        except DomainError:
            edges = ()
        if len(edges) >= 2:
            return len(edges) - 1 + extra
        bins = _num(row.get("bins"))
        return int(bins or 10) + extra
    return len(parse_values(row.get("values"))) + extra


def attribute_from_row(row: dict) -> Attribute:
    source = "declared" if str(row.get("source", "")).startswith("declared") else "data"
    if row.get("kind") == "numeric":
        name = str(row["column"])
        oob = row.get("out_of_bounds") or "clip"
        edges = parse_edges(row.get("edges"), name)
        if edges:
            return Attribute(
                name, "numeric", edges=edges, missing=bool(row.get("missing")), source=source, out_of_bounds=oob
            )
        bins = _num(row.get("bins"))
        return Attribute(
            name,
            "numeric",
            lower=_num(row.get("lower")),
            upper=_num(row.get("upper")),
            bins=int(bins) if bins is not None else 10,
            missing=bool(row.get("missing")),
            source=source,
            out_of_bounds=oob,
        )
    return Attribute(
        str(row["column"]),
        "categorical",
        parse_values(row.get("values")),
        missing=bool(row.get("missing")),
        source=source,
    )


def domain_from_table(table: pd.DataFrame) -> tuple[Domain | None, list[str]]:
    """The Domain the schema table describes, or None and every problem found."""
    errors, attrs = [], []
    for row in table.to_dict("records"):
        if not row.get("include"):
            continue
        try:
            attrs.append(attribute_from_row(row))
        except DomainError as exc:
            errors.append(str(exc))
    if errors:
        return None, errors
    try:
        return Domain(tuple(attrs)), []
    except DomainError as exc:
        return None, [str(exc)]


def apply_editor_changes(editor_key: str) -> None:
    """on_change of the schema editor: fold the edits into the stored schema table.

    The table in session state (not the widget) is the truth, so edits survive page
    switches.  Re-applying the same edits is idempotent (cells are only set).
    """
    edits = st.session_state.get(editor_key) or {}
    st.session_state[state.SCHEMA_TABLE] = fold_edits(st.session_state[state.SCHEMA_TABLE], edits)
    save_schema_table()


def fold_edits(table: pd.DataFrame, edits: dict) -> pd.DataFrame:
    """``table`` with the data editor's ``edited_rows`` applied (a new frame)."""
    table = table.copy()
    for idx, changes in (edits.get("edited_rows") or {}).items():
        i = table.index[int(idx)]
        for col, value in changes.items():
            if col not in table.columns or col in READ_ONLY:
                continue
            old = table.at[i, col]
            changed = not _same(old, value)
            if col in DEFINITION_FIELDS and changed:
                table.at[i, "source"] = DECLARED
            table.at[i, col] = value
            if changed and col in ("lower", "upper", "bins"):
                table.at[i, "edges"] = ""  # new bounds or bin count: equal-width bins again
            if changed and col == "edges":
                try:
                    edges = parse_edges(value)
                except DomainError:
                    edges = ()  # reported by domain_from_table
                if len(edges) >= 2:
                    table.at[i, "lower"], table.at[i, "upper"] = edges[0], edges[-1]
                    table.at[i, "bins"] = len(edges) - 1
        table.at[i, "size"] = row_size(table.loc[i].to_dict())
    return table


def _same(a, b) -> bool:
    a, b = _num(a), _num(b)
    if a is None or b is None:
        return a is None and b is None
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def _digest_of(source_key: str) -> str:
    """The workspace's key of a source: the digest of its bytes (the ledger's key too)."""
    if source_key == "bundled":
        return str(bundled_table().attrs.get("source_digest") or source_key)
    up = state.get(state.UPLOAD)
    return up["digest"] if up is not None and source_key == f"upload:{up['digest'][:16]}" else source_key


def save_schema_table() -> None:
    """Keep the schema table (the user's edits) in the workspace: a reload or a restart finds it again."""
    table, source_key = state.get(state.SCHEMA_TABLE), state.get(state.SCHEMA_FOR)
    if table is None or source_key is None:
        return
    state.workspace().save_schema(table.to_json(orient="records"), SCHEMA_TABLE_NAME, _digest_of(source_key))


def saved_schema_table(source_key: str, df: pd.DataFrame) -> pd.DataFrame | None:
    """The last schema table saved for this source, if it still describes the file's columns."""
    import json

    rows = state.workspace().query(
        "SELECT json FROM schemas WHERE dataset IS ? AND name = ? ORDER BY id DESC LIMIT 1",
        (_digest_of(source_key), SCHEMA_TABLE_NAME),
    )
    if not rows:
        return None
    try:
        table = pd.DataFrame.from_records(json.loads(rows[0]["json"]))
        if list(table.columns) != SCHEMA_COLUMNS or [str(c) for c in table["column"]] != [str(c) for c in df.columns]:
            return None  # saved by another version of the page, or for other columns
        return table.astype({"lower": "float64", "upper": "float64", "bins": "Int64"})
    except (ValueError, TypeError, KeyError):
        return None


def _replace_schema_table(table: pd.DataFrame, source_key: str) -> None:
    st.session_state[state.SCHEMA_TABLE] = table
    st.session_state[state.SCHEMA_FOR] = source_key
    # A new editor key for a new table: the old editor's pending edits belong to the old rows.
    st.session_state[SCHEMA_VERSION] = st.session_state.get(SCHEMA_VERSION, 0) + 1


def editor_key(source_key: str) -> str:
    return f"schema_editor:{source_key}:{st.session_state.get(SCHEMA_VERSION, 0)}"


def ensure_schema_table(source_key: str, df: pd.DataFrame, declared: Domain | None) -> pd.DataFrame:
    """The schema table of the current source; each source keeps its own edits when the user
    switches between the bundled sample and an upload."""
    if state.get(state.SCHEMA_FOR) != source_key or state.get(state.SCHEMA_TABLE) is None:
        saved = st.session_state.setdefault(SCHEMA_TABLES, {})
        if state.get(state.SCHEMA_FOR) is not None and state.get(state.SCHEMA_TABLE) is not None:
            saved[state.get(state.SCHEMA_FOR)] = st.session_state[state.SCHEMA_TABLE]
        table = saved.get(source_key)
        if table is None:
            table = saved_schema_table(source_key, df)
        _replace_schema_table(table if table is not None else schema_table_for(df, declared), source_key)
    return st.session_state[state.SCHEMA_TABLE]


def load_schema_json(raw: bytes, source_key: str, df: pd.DataFrame) -> str | None:
    """Replace the schema table by a loaded schema JSON (its attributes are declared)."""
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
    _replace_schema_table(schema_table_for(df, dom.project(known)), source_key)
    save_schema_table()
    return None


# ------------------------------------------------------------------ dataset
def current_dataset() -> Dataset | None:
    """The encoded dataset for the current source and schema (cached in this session)."""
    src = current_source()
    if src is None:
        return None
    source_key, name, df, declared = src
    table = ensure_schema_table(source_key, df, declared)
    domain, errors = domain_from_table(table)
    if domain is None:
        st.session_state[state.DATASET] = None
        st.session_state[state.DATASET_ERROR] = errors
        return None
    key = (source_key, domain.to_json(indent=None))
    cached = state.get(state.DATASET)
    if cached is not None and cached[0] == key:
        return cached[1]
    if source_key == "bundled" and domain == bundled_domain():
        ds = bundled_dataset()
    else:
        try:
            ds = load_dataset(df[domain.names], domain, _dataset_name(name))
        except (DomainError, DataError) as exc:
            st.session_state[state.DATASET] = None
            st.session_state[state.DATASET_ERROR] = [str(exc)]
            return None
    st.session_state[state.DATASET] = (key, ds)
    st.session_state[state.DATASET_ERROR] = None
    st.session_state[state.DATASET_NAMES][ds.fingerprint] = name
    return ds


def summary() -> dict | None:
    """Name, n and attribute count of the table in use, without encoding it."""
    src = current_source()
    if src is None:
        return None
    source_key, name, df, declared = src
    cached = state.get(state.DATASET)
    if cached is not None and cached[0][0] == source_key:
        ds = cached[1]
        return {"name": name, "n": ds.n, "attributes": len(ds.domain)}
    table = ensure_schema_table(source_key, df, declared)
    return {"name": name, "n": len(df), "attributes": int(table["include"].sum())}


def dataset_error() -> list[str] | None:
    return state.get(state.DATASET_ERROR)


def _dataset_name(filename: str) -> str:
    stem = str(filename).rsplit(".", 1)[0]
    return stem[:80] or "upload"


def domain_sizes(domain: Domain) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "attribute": domain.names,
            "kind": [a.kind for a in domain.attributes],
            "size": list(domain.shape),
            "source": [DECLARED if a.source == "declared" else INFERRED for a in domain.attributes],
        }
    )


def dtype_table(df: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "column": [str(c) for c in df.columns],
            "type": [str(t) for t in df.dtypes],
            "missing": [int(v) for v in df.isna().sum().to_numpy()],
            "distinct": [int(v) for v in df.nunique().to_numpy()],
        }
    )


def log10_size(domain: Domain) -> float:
    return float(np.sum(np.log10(np.asarray(domain.shape, dtype=float))))
