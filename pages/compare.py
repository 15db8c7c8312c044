"""Compare: every run of this session side by side."""

import streamlit as st

from dpcore.report import INTERNAL_LABEL
from ui import charts, results, runner, state

st.title("5 · Compare")
records = state.runs()
if not records:
    st.info("No finished run yet: run mechanisms on the Release page (or a teaching preset) to compare them.")
    st.stop()

st.caption("Errors are measured on the private data: " + INTERNAL_LABEL)
table = results.compare_table(records)
st.dataframe(
    table,
    hide_index=True,
    column_config={
        "max_error": st.column_config.NumberColumn(
            "max error", format="%.4f", help="Largest absolute error over the run's queries."
        ),
        "mean_error": st.column_config.NumberColumn("mean error", format="%.5f"),
        "seconds": st.column_config.NumberColumn(format="%.1f"),
        "delta": st.column_config.NumberColumn(format="%.2e"),
    },
)
if table["queries"].nunique() > 1:
    st.caption("Runs used different workloads: compare errors only between runs on the same workload.")

c1, c2 = st.columns(2)
with c1:
    st.markdown("**Max error vs ε**")
    st.altair_chart(charts.scatter(table, "epsilon", "max_error", "ε", "max error", log_x=True), width="stretch")
with c2:
    st.markdown("**Max error vs time**")
    st.altair_chart(charts.scatter(table, "seconds", "max_error", "seconds", "max error"), width="stretch")

st.markdown("**Error histograms, overlaid**")
ids = [r.id for r in records]
current = [i for i in (state.get(state.COMPARE_RUNS) or []) if i in ids]
if not current:
    current = ids[-2:]
st.session_state[state.COMPARE_RUNS] = current
titles = {r.id: r.title for r in records}
chosen = st.multiselect("Runs", ids, key=state.COMPARE_RUNS, format_func=titles.get)
errs = {
    runner.find_run(i).title: runner.find_run(i).internal.errors()
    for i in chosen
    if runner.find_run(i).release.answers is not None
}
if errs:
    st.altair_chart(charts.histogram_overlay(errs), width="stretch")
    st.caption("Each run's bars are shares of its own queries, so runs with different workloads stay comparable.")
