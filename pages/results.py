"""Results: how close the release is to the private data (internal evaluation) and downloads."""

import streamlit as st

from dpcore.report import INTERNAL_LABEL
from ui import charts, results, runner, state
from ui.text import fmt_delta, fmt_eps

st.title("4 · Results")

records = state.runs()
if not records:
    st.info("No finished run yet: run a mechanism on the Release page.")
    st.page_link("pages/release.py", label="Go to Release", icon=":material/play_circle:")
    st.stop()

ids = [r.id for r in records]
if state.get(state.RESULT_RUN) not in ids:
    st.session_state[state.RESULT_RUN] = ids[-1]
run_labels = {r.id: f"{r.title} — ε = {fmt_eps(r.release.budget.epsilon)}" for r in records}
st.selectbox("Run", ids, key=state.RESULT_RUN, format_func=run_labels.get)
record = runner.find_run(state.get(state.RESULT_RUN))
rel = record.release
ev = record.internal.report
card = rel.card

st.caption(
    f"{card['mechanism']['title']} · ε spent {fmt_eps(card['privacy']['epsilon_spent'])} · "
    f"δ {fmt_delta(card['privacy']['delta_spent'])} · {rel.workload.n_marginals} marginals, "
    f"{rel.workload.n_queries:,} queries · {rel.seconds:.1f} s"
)

# ---------------------------------------------------------------- downloads (public first)
files = results.downloads(record)
st.subheader("Downloads")
dl1, dl2, dl3, dl4 = st.columns(4)
with dl1:
    st.download_button(
        "Synthetic data (CSV)" if rel.rows is not None else "Released answers (CSV)",
        files["synthetic"],
        file_name=f"synthetic_run{record.id}.csv",
        mime="text/csv",
        on_click="ignore",
        icon=":material/download:",
        type="primary",
        help="Rows decoded to the original labels (numeric attributes as their bins)."
        if rel.rows is not None
        else "This mechanism releases noisy answers, not rows.",
    )
with dl2:
    st.download_button(
        "Release card (JSON)",
        files["card_json"],
        file_name=f"release_card_run{record.id}.json",
        mime="application/json",
        on_click="ignore",
        icon=":material/verified:",
        help="Public: mechanism, parameters, ε, δ, neighbour relation, schema and its provenance. "
        "No seed, no error figure, no timing.",
    )
with dl3:
    st.download_button(
        "Release card (text)",
        files["card_txt"],
        file_name=f"release_card_run{record.id}.txt",
        mime="text/plain",
        on_click="ignore",
        icon=":material/description:",
    )
with dl4:
    st.download_button(
        "Internal evaluation (NOT for publication)",
        files["evaluation"],
        file_name=f"INTERNAL_evaluation_run{record.id}_not_for_publication.json",
        mime="application/json",
        on_click="ignore",
        icon=":material/lock:",
        help=INTERNAL_LABEL,
    )
if "synopsis" in files:
    st.download_button(
        "Synopsis model (JSON)",
        files["synopsis"],
        file_name=f"synopsis_run{record.id}.json",
        mime="application/json",
        on_click="ignore",
        icon=":material/function:",
        help="Public: the released function that answers every query of its class "
        "(the CSV above holds its answers for your workload).",
    )
with st.expander("Release card summary (public)"):
    st.text(files["card_txt"].decode())

# ---------------------------------------------------------------- internal evaluation
st.subheader("Accuracy (internal evaluation)")
st.warning(INTERNAL_LABEL, icon=":material/lock:")
if rel.answers is None:
    st.info("This mechanism's output cannot be evaluated on the workload.")
    st.stop()

if ev.get("class_error"):
    ce = ev["class_error"]
    c1, c2 = st.columns(2)
    c1.metric(
        "Max error on sampled class queries",
        f"{ce['max_error']:.4f}",
        help=f"Estimated on {ce['n_samples']:,} uniformly sampled members of {ce['class']} "
        f"({int(ce['class_size']):,} queries, never listed). Internal: computed on the private data.",
    )
    c2.metric(
        "Mean error on sampled class queries",
        f"{ce['mean_error']:.5f}",
        help="Average absolute error over the same sampled queries.",
    )

with st.spinner("Computing the direct-Gaussian yardstick (internal what-if)…"):
    ys = results.yardstick(record)
h1, h2, h3, h4 = st.columns(4)
base = ev["baselines"]
h1.metric(
    "Max error",
    f"{ev['max_error']:.4f}",
    help="The largest |q(D) − q(D̂)| over all queries (the papers' headline metric); answers are shares of "
    "rows, so 0.01 = one percentage point.",
)
h2.metric("Mean error", f"{ev['mean_error']:.5f}", help="Average absolute error over all queries.")
h3.metric(
    "Uniform baseline (max)",
    f"{base['uniform']['max_error']:.4f}",
    help="Max error of answering every query as if the data were uniform over the domain: a release should "
    "beat this. (Answering all zeros gives "
    f"{base['zeros']['max_error']:.4f}.)",
)
if "max_error" in ys:
    h4.metric(
        "Direct Gaussian (max)",
        f"{ys['max_error']:.4f}",
        help="Internal what-if computed on the private data, for comparison only: the Gaussian mechanism at "
        "the same ε, δ on the same workload (noisy answers, no rows). Not a release, not charged.",
    )
else:
    h4.metric("Direct Gaussian (max)", "—", help=ys.get("note", ""))
st.dataframe(
    results.headline(record),
    hide_index=True,
    column_config={
        "max error": st.column_config.NumberColumn(format="%.5f"),
        "mean error": st.column_config.NumberColumn(format="%.6f"),
    },
)
st.caption(
    "The direct-Gaussian row is an internal what-if computed on the private data for comparison only: it is "
    "not a release and is not charged to the ledger."
)

st.markdown("**Error of every query**")
st.altair_chart(charts.error_histogram(record.internal.errors()), width="stretch")
st.caption("Answers are shares of rows, so an error of 0.01 means one percentage point.")

st.markdown("**Error per marginal**")
metric = st.radio(
    "Measure",
    ["total_variation", "max_error"],
    horizontal=True,
    key="keep:pm_metric",
    format_func={"total_variation": "total variation", "max_error": "max query error"}.get,
    help="Total variation = half the L1 distance between the real and released tables (0 = identical, 1 = disjoint).",
)
st.altair_chart(charts.per_marginal_bars(ev["per_marginal"], metric), width="stretch")

st.markdown("**Real vs released, one marginal**")
names = [rel.workload.marginal_name(j) for j in range(rel.workload.n_marginals)]
j = st.selectbox("Marginal", range(len(names)), format_func=lambda i: names[i], key=f"marginal_pick:{record.id}")
cells, n_cells = results.marginal_cells(rel, record.internal, j)
st.altair_chart(charts.real_vs_synthetic(cells), width="stretch")
if n_cells > len(cells):
    st.caption(f"Showing the {len(cells)} largest of {n_cells:,} cells.")

trace = results.trace_frame(record.internal)
st.markdown("**Per-round trace**")
if trace.empty:
    st.caption("This mechanism has no rounds to trace.")
else:
    x = "round" if "round" in trace.columns else trace.columns[0]
    ys_cols = results.numeric_trace_columns(trace, x)
    if ys_cols:
        chosen = st.multiselect("Quantities", ys_cols, default=ys_cols[:1], key=f"trace_pick:{record.id}")
        if chosen:
            st.altair_chart(charts.trace_lines(trace, x, chosen), width="stretch")
    with st.expander("Trace table"):
        st.dataframe(trace, hide_index=True)
if ev.get("oracle"):
    with st.expander("Oracle statistics (SCIP)"):
        st.json(ev["oracle"])
