"""Data: choose the table, see how it was read, declare or confirm its column roles, get its schema (private)."""

import streamlit as st

from dpcore.errors import DPCoreError
from dpcore.privacy import check_budget
from dpcore.privacy.ledger import over_cap_message
from ui import datasource, jobs, progress, roles, state
from ui.text import fmt_big, fmt_delta, fmt_eps, md_escape, show_error, show_warning
from ui.widgets import InputChecks

st.title("1 · Data")
st.caption(
    "Choose the private table to release, check how it was read and the role of each column, and get its public "
    "schema: declared by you (free) or discovered under differential privacy (charged once)."
)

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

source_key, name, df, declared = datasource.current_source()
table = datasource.ensure_schema_table(source_key, df, declared)
digest = datasource._digest_of(source_key)

# ---------------------------------------------------------------- preview
st.subheader("Preview")
c1, c2, c3 = st.columns(3)
c1.metric("Rows (n)", f"{len(df):,}", help="Number of records. n is treated as public (replace-one neighbours).")
c2.metric("Columns in the file", f"{df.shape[1]}", help="Columns read from the file; their roles are set below.")
c3.metric(
    "Missing cells",
    f"{int(df.isna().sum().sum()):,}",
    help="Empty cells, 'NA', 'NULL', 'N/A' or '?' in the file. 'None' is read as text: a value of a column of "
    "categories, a missing cell in numbers and dates.",
)
renamed = df.attrs.get("renamed") or []
if renamed:
    st.info(
        "Repeated or empty header names were renamed (the header is public; every release card lists this): "
        + "; ".join(f"“{md_escape(r['original'] or '(empty)', 60)}” → {md_escape(r['name'], 60)}" for r in renamed)
        + ".",
        icon=":material/edit_note:",
    )
tab_rows, tab_types = st.tabs(["First rows", "Column types"])
with tab_rows:
    st.dataframe(df.head(20), hide_index=True)
with tab_types:
    st.dataframe(datasource.dtype_table(df), hide_index=True)

# ---------------------------------------------------------------- roles
st.subheader("Column roles")
st.caption(
    "Each column's role as **proposed** from the data's exact counts — shown only to you; showing it spends "
    "nothing and it is never published as is. What you change or confirm is **declared** (public, free), field "
    "by field: a role, a value list (values separated by ' | '), a bound. Anything typed in a row is typed for the "
    "role the row shows, so it declares that role too. Whatever is not declared is discovered under differential "
    "privacy below. Excluded columns (identifiers, names, free text, constant or empty columns) never reach a "
    "release; choose a role to bring one back."
)
b1, b3, b2, _ = st.columns([1, 1, 1, 1])
b1.button(
    "Confirm all roles as public",
    on_click=datasource.confirm_all_roles,
    icon=":material/done_all:",
    help="You state that every role as shown is a public fact about this table (as a codebook would say it): it "
    "costs nothing, and anyone who sees a release's card sees it with no privacy protection. Roles marked ⚠ rest "
    "on counts one changed row could flip: confirm them only if you know them to be true. Values and bounds you "
    "did not type are still discovered privately.",
)
st.caption(
    "Confirming a role publishes it: the role, its integer/real type or date format. Proposals marked ⚠ could "
    "change if one row changed — check them before confirming."
)
b3.button(
    "Declare the proposed values and bounds as public",
    on_click=datasource.declare_proposal,
    icon=":material/fact_check:",
    help="Fills every kept column's value list and bounds from the exact data -- values held by few rows left out "
    "(named in the row's note), bounds rounded outward to round numbers -- and declares them with the roles: you "
    "state they are public, as a codebook would. Anyone who sees a release's card sees them, unprotected; nothing "
    "is then discovered or charged for the schema. Review the table after, and undo with 'Back to the proposals'.",
)
b2.button(
    "Back to the proposals",
    on_click=datasource.reset_roles,
    args=(source_key, df, declared),
    icon=":material/undo:",
    help="Forget what you declared in this table (a declared schema, if loaded, stays).",
)
editor_key = datasource.editor_key(source_key)
st.data_editor(
    table,
    key=editor_key,
    hide_index=True,
    num_rows="fixed",
    on_change=datasource.apply_editor_changes,
    args=(editor_key,),
    disabled=list(roles.READ_ONLY),
    column_order=[c for c in roles.COLUMNS if c not in roles.HIDDEN],
    column_config={
        "column": st.column_config.TextColumn("column", help="Column name in the file (renamed if repeated or empty)."),
        "role": st.column_config.SelectboxColumn(
            "role",
            options=list(roles.ROLE_CHOICES),
            required=True,
            help="categorical: a list of values; integer / real: numbers cut in bins between bounds; date: dates in "
            "the format given; excluded: left out of every release.",
        ),
        "format": st.column_config.TextColumn(
            "format",
            help="Dates: how they are written, e.g. %d/%m/%Y. Integer / real: how the release writes the numbers, "
            "e.g. $,.2 for $1,234.50, %.1 for 63.5%, dc.1 for 73,4, .dc.2 for 1.234,56, # kg for 54.6 kg, .1 for "
            "4.9 (empty: plain, as drawn); +texts at the end (.1+texts, %Y-%m-%d+texts) where some cells are texts "
            "beside the numbers or dates, such as <0.5 under a lab's limit or unknown beside visit dates: their "
            "frequent texts are then discovered privately and come back as written.",
        ),
        "values": st.column_config.TextColumn(
            "values", help="Categorical, optional: the public value list, separated by ' | '.", width="medium"
        ),
        "lower": st.column_config.TextColumn("lower", help="Integer, real or date, optional: the public lower bound."),
        "upper": st.column_config.TextColumn("upper", help="Integer, real or date, optional: the public upper bound."),
        "bins": st.column_config.NumberColumn(
            "bins", min_value=1, max_value=10000, step=1, help="Integer, real or date: how many bins (default 10)."
        ),
        "source": st.column_config.TextColumn("source", help="Which of the row's fields you declared."),
        "proposed": st.column_config.TextColumn(
            "proposed (exact, only for you)", help="The role the data's exact counts suggest.", width="medium"
        ),
        "seen": st.column_config.TextColumn("in the file (only for you)", help="Exact counts: never published."),
        "missing_text": st.column_config.TextColumn(
            "missing written",
            help="How the file writes a missing cell in this column (NA, ?, NULL; empty: an empty cell): a declared "
            "schema's, else read exactly for you (never published unless you confirm the role, which declares it). "
            "The release writes its missing cells so.",
        ),
        "note": st.column_config.TextColumn("why", width="medium"),
    },
)

with st.expander("Load a declared schema (JSON)"):
    schema_file = st.file_uploader(
        "Load a schema (JSON)",
        type=["json"],
        key=f"schema_upload:{source_key}",
        help="A schema saved here or by the CLI: its declared fields become declarations; columns it does not list "
        "are excluded.",
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

# ---------------------------------------------------------------- schema
st.subheader("Schema")
status = datasource.status()
for p in status.problems:  # the rest of the page is skipped below (never st.stop: app.py saves choices after)
    show_error(p)
busy = bool(jobs.active("schema"))


def discovery_controls() -> None:
    """The cost of a private discovery, stated before the click, and the button that charges it."""
    n = len(df)
    state.default(datasource.SCHEMA_EPS, datasource.DEFAULT_SCHEMA_EPSILON)
    checks = InputChecks()
    d1, d2 = st.columns(2)
    eps = checks.number(
        "ε for the schema",
        key=datasource.SCHEMA_EPS,
        low=0,
        low_open=True,
        step=0.1,
        container=d1,
        disabled=busy,
        help="Spent once on this file: roles not declared come from noisy counts, category sets from thresholded "
        "partition selection (a value held by one row enters with probability at most δ), bounds from a noisy "
        "histogram over power-of-two ranges. Larger ε: finer categories, tighter bounds, surer roles on small tables.",
    )
    delta = datasource.default_schema_delta(n)
    d2.metric(
        "δ for the schema",
        fmt_delta(delta),
        help="0.2/n²: a value held by a single row enters a category set with probability at most this.",
    )
    if not checks.ok:
        st.caption(checks.summary())
        return
    try:
        eps_d, delta_d, cols = datasource.discovery_plan(eps, delta)
        check_budget(eps_d, delta_d, n)
        outlook = datasource.discovery_outlook(eps, delta)
        plan = datasource.schema_plan(eps, delta)
    except DPCoreError as exc:
        show_error(exc)
        return
    for w in outlook:
        show_warning(w)
    st.caption(
        "What the private schema is expected to keep at this ε (a public plan: nothing is read or charged): "
        + "; ".join(md_escape(line, 400) for line in plan.lines())
        + "."
    )
    refused = False
    if plan.refuse:
        enough = datasource.smallest_usable_epsilon(eps, delta)
        st.error(
            f"This discovery is expected to keep {len(plan.usable)} usable column(s) of {len(plan.columns)}: the "
            "release would spend its budget on (nearly) empty columns. Exclude the columns you do not need in the "
            "roles table (the share then goes further), declare roles and value sets you know to be public (free), "
            "or raise the schema's ε"
            + (f" (at ε = {enough:g} the plan keeps something)." if enough is not None else "."),
            icon=":material/block:",
        )
        refused = not st.checkbox("Discover anyway", key=f"discover_anyway:{digest}")
    led = state.ledger()
    tot = led.total(digest)
    after = led.preview(digest, n, eps_d, delta_d)
    m1, m2 = st.columns(2)
    m1.metric(
        "This discovery charges",
        f"ε = {fmt_eps(eps_d)}",
        f"δ = {fmt_delta(delta_d)}",
        delta_color="off",
        delta_arrow="off",
        help="Reserved in the ledger before the data is read; once. Every release of this schema states it on its "
        "card and does not charge it again.",
    )
    m2.metric(
        "Dataset total after it",
        f"ε = {fmt_eps(after['epsilon'])}",
        f"δ = {fmt_delta(after['delta'])} · {tot['runs']} run{'' if tot['runs'] == 1 else 's'} so far",
        delta_color="off",
        delta_arrow="off",
    )
    st.caption(
        f"Columns discovered ({len(cols)}): "
        + ", ".join(md_escape(c, 40) for c in cols[:40])
        + ("…" if len(cols) > 40 else "")
    )
    over = None
    if after["within"] is None:
        over = over_cap_message(name, tot, tot["cap_epsilon"], tot["cap_delta"], eps_d, delta_d)
        st.error(f"Refused: {md_escape(over, 600)}", icon=":material/block:")
    key = f"discover:{digest}:{st.session_state.get('discover_clicks', 0)}"
    if st.button(
        f"Discover the schema privately (charges ε = {fmt_eps(eps_d)})",
        key=key,
        type="primary",
        icon=":material/policy:",
        disabled=busy or bool(over) or refused,
    ):
        st.session_state["discover_clicks"] = st.session_state.get("discover_clicks", 0) + 1
        try:
            run_id = datasource.start_discovery(eps, delta, request_key=f"{state.get(state.SESSION_ID)}:{key}")
        except DPCoreError as exc:
            show_error(exc)
        else:
            st.session_state[datasource.SCHEMA_RUN] = run_id
            st.rerun()


# ---------------------------------------------------------------- the schema in use
def schema_in_use(status) -> None:
    """The schema in use: its attributes, where each field came from, the excluded columns."""
    st.subheader("Domain")
    dataset = status.dataset
    domain = dataset.domain
    d1, d2, d3 = st.columns(3)
    d1.metric("Attributes", len(domain), help="Columns kept in the schema.")
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
    st.caption(
        "Public: every value list and bound below goes on the release card with where it came from — declared, dp "
        "(released under differential privacy) or inferred (read from the data without privacy)."
    )
    st.dataframe(datasource.domain_table(domain), hide_index=True)
    kept_anyway = datasource.proposed_excluded_but_kept(domain)
    if kept_anyway:
        show_warning(
            "The roles table proposed excluding "
            + ", ".join(kept_anyway[:10])
            + " (from exact counts, for your eyes only), but a proposal is not a decision: the private discovery "
            "decided to keep them. Declaring them excluded is a public choice, free; it applies to the next "
            "discovery or release."
        )
        st.button(
            "Leave them out (declare excluded)",
            on_click=datasource.declare_excluded,
            args=(kept_anyway,),
            icon=":material/block:",
        )
    excluded = (status.card_data or {}).get("excluded") or []
    if excluded:
        with st.expander(f"Excluded columns ({len(excluded)})"):
            st.dataframe(excluded, hide_index=True)
    for w in (status.saved or {}).get("warnings", []) if status.mode == "discovered" else []:
        show_warning(w)
    sv1, _ = st.columns(2)
    sv1.download_button(
        "Save schema (JSON)",
        domain.to_json(),
        file_name="schema.json",
        mime="application/json",
        on_click="ignore",
        icon=":material/download:",
        help="The schema in use, with each field's source: reusable with this table or the CLI (declared fields count "
        "as declared; the others are discovered again).",
    )
    if dataset.clipped:
        st.info(
            "Values outside the public bounds were clipped: "
            + ", ".join(f"{md_escape(k, 60)}: {v:,}" for k, v in dataset.clipped.items())
            + "."
        )
    st.success(f"All {dataset.n:,} rows fit the schema.", icon=":material/check_circle:")
    st.page_link("pages/workload.py", label="Next: choose the workload", icon=":material/arrow_forward:")


if status.mode == "error":
    pass  # the problems are shown above; nothing below applies
elif status.mode == "declared":
    st.success(
        "Every role, value list and bound the kept columns need is declared: the schema costs nothing.",
        icon=":material/verified:",
    )
elif status.mode == "from_data":
    st.warning(
        "**Read from the data without privacy** (your explicit choice): value lists and bounds may show rare values "
        "and exact minima and maxima, and every release card will say its guarantee does not cover the schema. "
        "Nothing was charged for it.",
        icon=":material/warning:",
    )
elif status.mode == "discovered":
    rel = status.schema_release
    st.success(
        f"Discovered privately in run {md_escape(rel['run'], 40)}: ε = {fmt_eps(rel['epsilon'])}, δ = "
        f"{fmt_delta(rel['delta'])}, charged once. Every release of this schema states it on its card and does not "
        "charge it again.",
        icon=":material/policy:",
    )
    if status.pending:
        st.warning(
            "Your changes to "
            + ", ".join(md_escape(c, 40) for c in status.pending[:10])
            + " need the data again (a new role, or a column brought back): discover again to apply them. Until then "
            "the schema discovered earlier is used as it is.",
            icon=":material/pending:",
        )
    with st.expander("Discover again (charges again)", expanded=bool(status.pending)):
        discovery_controls()
else:
    st.info(
        "Part of the schema must come from the data. Discover it under differential privacy: the cost is shown "
        "before you click and charged once; every later release reuses the schema. Or declare what is missing "
        "above (free).",
        icon=":material/policy:",
    )
    discovery_controls()

if status.to_discover or status.schema_from_data:
    from_data_key = f"schema_from_data:{digest}"
    if from_data_key not in st.session_state:
        st.session_state[from_data_key] = datasource.schema_from_data_chosen(digest)
    st.checkbox(
        "Read the schema from the data WITHOUT privacy (not recommended)",
        key=from_data_key,
        on_change=datasource.choose_schema_from_data,
        args=(digest, from_data_key),
        help="Uses the exact roles, value lists and minima/maxima of the private table: nothing is charged, but the "
        "schema may reveal rare values and exact extremes, its fields are marked 'inferred', and every release card "
        "says its guarantee does not cover the schema.",
    )

progress.live_panels("schema", key_prefix="schema")
progress.outcome(st.session_state.get(datasource.SCHEMA_RUN))

if status.dataset is not None:
    schema_in_use(status)
