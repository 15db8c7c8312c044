"""Data: choose the table, preview it, edit its public schema."""

import streamlit as st

from ui import datasource, state
from ui.text import fmt_big, md_escape, show_error

st.title("1 · Data")
st.caption("Choose the private table to release, check how it was read, and state its public schema.")

st.radio(
    "Table",
    ["bundled", "upload"],
    key=state.SOURCE,
    horizontal=True,
    format_func={"bundled": "Bundled Adult census sample", "upload": "Upload a CSV or Parquet file"}.get,
    help="The bundled sample is the UCI Adult census extract (public) with its codebook schema.",
)

if state.get(state.SOURCE) == "upload":
    limit = datasource.upload_limit_mb()
    uploaded = st.file_uploader(
        f"CSV (comma, semicolon, tab or pipe separated) or Parquet, at most {limit} MB",
        type=["csv", "tsv", "txt", "parquet", "pq"],
        key=datasource.UPLOADER_KEY,
        help="A copy is kept in this app's workspace folder (shown in the sidebar), so a reload or a restart "
        "finds it again; it is never sent anywhere else.",
    )
    if uploaded is not None:
        datasource.accept_upload(uploaded)  # a no-op when app.py already took this file in
    err = state.get(state.UPLOAD_ERROR)
    if err:
        show_error(err)
    up = state.get(state.UPLOAD)
    if up is None:
        st.info("Upload a table to continue, or switch to the bundled sample.")
        st.stop()
    st.caption("Using the uploaded file:")
    st.text(up["name"])

src = datasource.current_source()
source_key, name, df, declared = src
table = datasource.ensure_schema_table(source_key, df, declared)

# ---------------------------------------------------------------- preview
st.subheader("Preview")
c1, c2, c3 = st.columns(3)
c1.metric("Rows (n)", f"{len(df):,}", help="Number of records. n is treated as public (replace-one neighbours).")
c2.metric(
    "Columns in the file",
    f"{df.shape[1]}",
    help="Columns read from the file; the schema below decides which become attributes.",
)
c3.metric("Missing cells", f"{int(df.isna().sum().sum()):,}", help="Empty cells, 'NA' or '?' in the file.")
tab_rows, tab_types = st.tabs(["First rows", "Column types"])
with tab_rows:
    st.dataframe(df.head(20), hide_index=True)
with tab_types:
    st.dataframe(datasource.dtype_table(df), hide_index=True)

# ---------------------------------------------------------------- schema
st.subheader("Public schema")
st.caption(
    "Each attribute's value list (categorical) or bounds and bins (numeric) must be public. "
    "**declared** = taken from a codebook/schema or typed by you; **inferred from data (not private)** = read off "
    "the private table for convenience: the release card will say the release is not private for those value "
    "sets. Values are separated by ' | '. Editing values, bounds or bins marks the attribute declared."
)
editor_key = datasource.editor_key(source_key)
st.data_editor(
    table,
    key=editor_key,
    hide_index=True,
    num_rows="fixed",
    on_change=datasource.apply_editor_changes,
    args=(editor_key,),
    disabled=list(datasource.READ_ONLY),
    column_config={
        "include": st.column_config.CheckboxColumn("include", help="Use this column as an attribute."),
        "column": st.column_config.TextColumn("column", help="Column name in the file."),
        "kind": st.column_config.SelectboxColumn(
            "kind",
            options=["categorical", "numeric"],
            required=True,
            help="Categorical: a list of values. Numeric: bounds cut in bins.",
        ),
        "values": st.column_config.TextColumn("values", help="Categorical values, separated by ' | '.", width="large"),
        "lower": st.column_config.NumberColumn("lower", help="Numeric: public lower bound (values below are clipped)."),
        "upper": st.column_config.NumberColumn("upper", help="Numeric: public upper bound."),
        "bins": st.column_config.NumberColumn(
            "bins", min_value=1, max_value=10000, step=1, help="Numeric: number of equal-width bins between the bounds."
        ),
        "edges": st.column_config.TextColumn(
            "edges",
            help="Numeric, optional: explicit bin edges 'a | b | c' "
            "(overrides bounds and bins; empty = equal-width bins).",
        ),
        "missing": st.column_config.CheckboxColumn("missing", help="Add a '(missing)' category for empty cells."),
        "out_of_bounds": st.column_config.SelectboxColumn(
            "out of bounds",
            options=["clip", "reject"],
            help="Numeric: clip values outside the bounds to the nearest bound, or refuse the table.",
        ),
        "size": st.column_config.NumberColumn("size", help="Number of values this attribute can take."),
        "source": st.column_config.TextColumn("source", help="Where the definition came from."),
        "distinct": st.column_config.NumberColumn("distinct", help="Distinct values in the file (seen only by you)."),
        "note": st.column_config.TextColumn("note", width="medium"),
    },
)

for row in table.to_dict("records"):
    if row["note"].startswith("looks like an identifier"):
        st.warning(f"Column {md_escape(row['column'], 60)} {md_escape(row['note'])}.", icon=":material/badge:")

sc1, sc2 = st.columns(2)
domain, problems = datasource.domain_from_table(table)
with sc1:
    if domain is not None:
        st.download_button(
            "Save schema (JSON)",
            domain.to_json(),
            file_name="schema.json",
            mime="application/json",
            on_click="ignore",
            icon=":material/download:",
            help="The included attributes' definitions, reusable with this table or the CLI.",
        )
with sc2:
    schema_file = st.file_uploader(
        "Load a schema (JSON)",
        type=["json"],
        key=f"schema_upload:{source_key}",
        help="A schema saved here or by the CLI; its attributes count as declared.",
    )
    if schema_file is not None:
        marker = (source_key, schema_file.file_id)
        if st.session_state.get("schema_loaded_marker") != marker:
            err = datasource.load_schema_json(schema_file.getvalue(), source_key, df)
            if err:
                show_error(err)
            else:
                st.session_state["schema_loaded_marker"] = marker
                st.rerun()

# ---------------------------------------------------------------- result
st.subheader("Domain")
if problems:
    for p in problems:
        show_error(p)
    st.stop()
d1, d2, d3 = st.columns(3)
d1.metric("Attributes", len(domain), help="Columns included in the schema.")
d2.metric(
    "Possible records",
    fmt_big(domain.size),
    help="The domain size: the product of the attributes' sizes (how many distinct records exist).",
)
d3.metric(
    "One-hot length D",
    f"{domain.one_hot_size:,}",
    help="Sum of the attribute sizes: the length of a record's one-hot encoding used by the SCIP oracle.",
)
st.dataframe(datasource.domain_sizes(domain), hide_index=True)
if domain.inferred:
    st.warning(
        f"{len(domain.inferred)} attribute(s) have a schema inferred from the data: the release "
        "will not be private with respect to their value sets. Declare them (edit values/bounds, or load "
        "a schema JSON) to fix this.",
        icon=":material/warning:",
    )

# Encoding checks every value against the schema; it runs last so the page above is already visible.
with st.spinner("Checking every row against the schema…"):
    dataset = datasource.current_dataset()
if dataset is None:
    for p in datasource.dataset_error() or []:
        show_error(p)
    st.stop()
if dataset.clipped:
    st.info(
        "Values outside the public bounds were clipped: "
        + ", ".join(f"{md_escape(k, 60)}: {v:,}" for k, v in dataset.clipped.items())
        + "."
    )
st.success(f"All {dataset.n:,} rows fit the schema.", icon=":material/check_circle:")
st.page_link("pages/workload.py", label="Next: choose the workload", icon=":material/arrow_forward:")
