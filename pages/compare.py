"""Compare: the workspace's runs on one dataset side by side (errors are internal)."""

import streamlit as st

from dpcore.report import INTERNAL_LABEL
from ui import charts, results, state
from ui.text import md_escape

#: The schema whose runs the charts show, when the dataset's runs released several.
COMPARE_SCHEMA = state.KEEP + "compare_schema"

st.title("5 · Compare")
st.checkbox(
    "Show demo (fixed-seed) runs",
    key=state.SHOW_DEMO,
    help="Demo runs promise no privacy; they are hidden so they are not mistaken for releases.",
)
runs = [r for r in results.list_runs(include_demo=bool(state.get(state.SHOW_DEMO))) if r["status"] == "done"]
runs = [r for r in runs if r.get("max_error") is not None]
if not runs:
    st.info(
        "No finished run to compare yet: run mechanisms on the Release page (or with the command line)."
        + ("" if state.get(state.SHOW_DEMO) else " Demo runs are hidden.")
    )
    st.stop()

st.caption("Errors are measured on the private data: " + INTERNAL_LABEL)
datasets: dict[str, str] = {}
counts: dict[str, int] = {}
for r in runs:  # newest first: the most recently used dataset comes first
    key = r.get("dataset") or "?"
    datasets.setdefault(key, r.get("dataset_name") or "?")
    counts[key] = counts.get(key, 0) + 1
if state.get(state.COMPARE_DATASET) not in datasets:
    st.session_state[state.COMPARE_DATASET] = next(iter(datasets))
st.selectbox(
    "Dataset",
    list(datasets),
    key=state.COMPARE_DATASET,
    format_func=lambda k: f"{datasets[k]} ({counts[k]} run{'' if counts[k] == 1 else 's'})",
    help="Runs are compared within one dataset: errors on different tables do not compare.",
)
chosen_ds = state.get(state.COMPARE_DATASET)
group = [r for r in runs if (r.get("dataset") or "?") == chosen_ds]
table = results.compare_table(group)
COLUMNS = {
    "label": st.column_config.TextColumn("run"),
    "kept columns": st.column_config.TextColumn(
        help="Columns the release kept, of the table's: errors are measured on the kept columns only."
    ),
    "max_error": st.column_config.NumberColumn(
        "max error", format="%.4f", help="Largest absolute error over the run's queries (on its kept columns)."
    ),
    "mean_error": st.column_config.NumberColumn("mean error", format="%.5f"),
    "seconds": st.column_config.NumberColumn(format="%.1f"),
    "delta": st.column_config.TextColumn(
        "δ", help="The δ the run was given (its card's); (1/n²) marks the default, one over the squared row count."
    ),
    "epsilon": st.column_config.NumberColumn("ε"),
}
schemas = list(dict.fromkeys(table["schema"]))
if len(schemas) > 1:
    st.warning(
        "**Different schemas: errors not comparable.** These runs released different columns (or different value "
        "sets or bins), so their errors are measured on different queries: a run that kept fewer columns looks "
        "better without being better. Each schema has its own table, and the charts below show one schema at a "
        "time.",
        icon=":material/compare_arrows:",
    )
for name in schemas:
    part = table[table["schema"] == name]
    if len(schemas) > 1:
        st.markdown(
            f"**{md_escape(name, 40)}** — kept {md_escape(part['kept columns'].iloc[0], 40)} columns · "
            f"{len(part)} run{'' if len(part) == 1 else 's'}"
        )
        st.caption(md_escape(part["schema columns"].iloc[0], 600))
    st.dataframe(
        part.drop(columns=["id", "run", "demo", "schema", "schema columns"]), hide_index=True, column_config=COLUMNS
    )

if len(schemas) > 1:
    if state.get(COMPARE_SCHEMA) not in schemas:
        st.session_state[COMPARE_SCHEMA] = schemas[0]
    st.radio(
        "Schema to chart",
        schemas,
        key=COMPARE_SCHEMA,
        horizontal=True,
        format_func=lambda s: f"{s} (kept {table[table['schema'] == s]['kept columns'].iloc[0]} columns)",
        help="Runs with different schemas answered different queries: they are never charted together.",
    )
    table = table[table["schema"] == state.get(COMPARE_SCHEMA)].reset_index(drop=True)
st.markdown("Runs: " + " · ".join(md_escape(label, 80) for label in table["label"]))
if table["queries"].nunique() > 1:
    st.caption(
        "These runs used different workloads (the charts draw them with different shapes): compare errors only "
        "between runs on the same workload."
    )

c1, c2 = st.columns(2)
with c1:
    st.markdown("**Max error vs ε** (internal)")
    st.altair_chart(
        charts.scatter(table, "epsilon", "max_error", "ε (privacy budget, log scale)", "max error", log_x=True),
        width="stretch",
    )
with c2:
    st.markdown("**Max error vs time** (internal)")
    st.altair_chart(
        charts.scatter(table, "seconds", "max_error", "seconds (wall clock, log scale)", "max error", log_x=True),
        width="stretch",
    )

st.markdown("**Error histograms, overlaid** (internal)")
ids = list(table["id"])
labels = dict(zip(table["id"], table["run"]))
current = [i for i in (state.get(state.COMPARE_RUNS) or []) if i in ids] or ids[:2]
st.session_state[state.COMPARE_RUNS] = current
chosen = st.multiselect("Runs", ids, key=state.COMPARE_RUNS, format_func=labels.get)
by_id = {r["id"]: r for r in group}
errs = {}
for i in chosen:
    e = results.errors(results.internal(by_id[i]))
    if e is not None:
        errs[f"{by_id[i].get('label') or by_id[i]['mechanism']} ({i[-8:]})"] = e
if errs:
    st.altair_chart(charts.histogram_overlay(errs), width="stretch")
    st.caption("Each run's bars are shares of its own queries, so runs with different workloads stay comparable.")
