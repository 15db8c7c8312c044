"""Results: every run of the workspace — its card, its files, and how close it is to the private data."""

import streamlit as st

from dpcore.report import INTERNAL_LABEL
from ui import charts, progress, results, state
from ui.text import fmt_bytes, fmt_delta, fmt_eps, md_escape, show_error

st.title("4 · Results")

runs = results.list_runs()
if not runs:
    st.info("No run yet in this workspace: run a mechanism on the Release page (or with the command line).")
    st.page_link("pages/release.py", label="Go to Release", icon=":material/play_circle:")
    st.stop()

# ---------------------------------------------------------------- the runs, as plain text
st.subheader("Runs in this workspace")
st.caption(
    "From this app, another browser tab or the command line (`dpcore release --workspace … --label …`), "
    "newest first, by dataset."
)
SHOWN = 30
by_dataset: dict[str, list[dict]] = {}
for r in runs[:SHOWN]:
    by_dataset.setdefault(r.get("dataset_name") or "?", []).append(r)
with st.container(height=min(420, 60 + 34 * (len(runs[:SHOWN]) + len(by_dataset))), border=True):
    for name, group in by_dataset.items():
        st.markdown(f"**{md_escape(name, 80)}**")
        st.markdown(
            "\n".join(
                f"- {md_escape(r.get('label') or r['mechanism'], 120)}"
                + (
                    ""  # a default label already says what and when
                    if results.default_labelled(r)
                    else f" — {md_escape(r['mechanism'], 40)}"
                    + ("" if r.get("epsilon") is None else f", ε = {r['epsilon']:g}")
                    + f" · {results.when(r.get('created'))}"
                )
                + (" · **DEMO**" if r.get("demo") else "")
                + ("" if r["status"] == "done" else f" · *{r['status']}*")
                for r in group
            )
        )
if len(runs) > SHOWN:
    st.caption(f"… and {len(runs) - SHOWN} older runs (in the list below).")

ids = [r["id"] for r in runs]
titles = {r["id"]: results.run_title(r) for r in runs}
opened = st.session_state.pop(state.OPEN_RUN, None)  # "See the results" on the Release page
if opened in ids:
    state.keep(state.RESULT_RUN, opened)
elif state.get(state.RESULT_RUN) not in ids:
    state.keep(state.RESULT_RUN, ids[0])
st.selectbox("Run", ids, key=state.RESULT_RUN, format_func=titles.get)
run = results.get_run(state.get(state.RESULT_RUN))
if run is None:
    st.info("That run is no longer in the workspace.")
    st.stop()

if run["demo"]:
    st.error(
        "**DEMO RUN — not a private release.** It was made with a fixed random seed, so its noise can be reproduced "
        "and removed: it promises **no privacy**. Do not publish its output. Its files are named DEMO_…",
        icon=":material/science:",
    )


def delete_control() -> None:
    with st.popover("Delete this run", icon=":material/delete:"):
        st.write(
            "Deletes the run and its files from the workspace. Its privacy charge stays in the ledger: the "
            "data was read, whatever happens to the output."
        )
        if st.button("Delete the run", key=f"delete:{run['id']}", type="primary"):
            state.runs_store().delete(run["id"])
            state.forget(state.RESULT_RUN)
            st.toast("Run deleted; its ledger charge stays.", icon=":material/delete:")
            st.rerun()


if run["status"] != "done":
    if run["status"] in ("starting", "running"):
        st.info("This run is still in progress.")
        progress.live_panels(run["kind"], key_prefix="results")
    else:
        message = run.get("error") or f"The run ended as {run['status']}."
        show_error(f"{run['status'].capitalize()}: {message}")
        st.caption("Nothing was released. The run read the data, so its privacy charge stays in the ledger.")
    delete_control()
    st.stop()

card = run["card"] or {}
ev = run["evaluation"] or {}
kept = results.kept(run)

# ---------------------------------------------------------------- what the release kept (public), before any error
st.subheader("What this release kept")
if not kept["total"]:
    st.caption("This run's card does not list its columns (it was recorded by an older version).")
elif kept["left_out"]:
    st.warning(
        f"**Kept {kept['kept']} of {kept['total']} columns.** {kept['left_out']} column(s) of the table are not in "
        "this release (listed below with the reason). The synthetic table holds the kept columns only, and every "
        "error figure on this page is measured on them alone.",
        icon=":material/table_rows:",
    )
else:
    st.success(f"**Kept all {kept['total']} columns** of the table.", icon=":material/table_rows:")
if kept["columns"]:
    st.dataframe(
        results.kept_table(kept),
        hide_index=True,
        column_config={
            "% (other)": st.column_config.TextColumn(
                help="Share of released cells that are '(other)': a value the released schema does not list.",
            ),
            "% empty": st.column_config.TextColumn(help="Share of released cells that are empty."),
        },
    )
mostly = results.mostly_other(kept)
if mostly:
    st.warning(
        "Kept in name only: at least half the released cells of "
        + ", ".join(f"**{md_escape(c, 80)}**" for c in mostly[:8])
        + (" …" if len(mostly) > 8 else "")
        + " are '(other)'. Declare their values (free) or raise ε to release more of them.",
        icon=":material/warning:",
    )
chosen_by = (card.get("workload") or {}).get("chosen_by")
if chosen_by:  # public: why the default measured these marginals
    st.caption(f"Measured: {md_escape(str(chosen_by)[0].upper() + str(chosen_by)[1:], 600)}.")
released_rows = card.get("output", {}).get("rows")
if kept["rows"] and released_rows and kept["rows"] < released_rows:
    st.caption(f"Shares measured on a uniform sample of {kept['rows']:,} of the {released_rows:,} released rows.")
if kept["rows"] is None and released_rows:
    st.caption("The released rows are not in the workspace: no shares of '(other)' or empty cells.")
elif kept["rows"] is None and kept["columns"]:
    st.caption("This release has no rows (it releases answers): no shares of '(other)' or empty cells.")
if kept["excluded"]:
    st.markdown(f"**Left out ({kept['left_out']})**")
    many = len(kept["excluded"]) > 10
    with st.container(height=320 if many else "content", border=many):  # a long list scrolls, never collapses
        st.markdown(
            "\n".join(f"- **{md_escape(e['name'], 80)}**: {md_escape(e['reason'], 400)}" for e in kept["excluded"])
        )

# ---------------------------------------------------------------- the card (public)
st.subheader("What this release promises")
promise = card.get("promise") or ""
(st.warning if run["demo"] else st.info)(md_escape(promise, 3000), icon=":material/verified_user:")
privacy = card.get("privacy", {})
wl = card.get("workload", {})
st.caption(
    f"{md_escape(card.get('mechanism', {}).get('title', run['mechanism']), 120)} · ε spent "
    f"{fmt_eps(privacy.get('epsilon_spent'))} · δ {fmt_delta(privacy.get('delta_spent'))} · "
    f"{len(wl.get('marginals', []))} marginals, {wl.get('n_queries', 0):,} queries · "
    f"{run.get('seconds') or 0:.1f} s · label: {md_escape(run.get('label') or '—', 120)}"
)

# ---------------------------------------------------------------- downloads (public first), streamed from the files
st.subheader("Downloads")
files = results.downloads(run)
cols = st.columns(min(4, max(1, len(files))))
for i, f in enumerate(files):
    with cols[i % len(cols)]:
        if f.get("url"):  # streamed from the file by the app's server: memory stays flat whatever its size
            st.link_button(
                f["label"],
                f["url"],
                icon=f["icon"],
                type="primary" if f["primary"] else "secondary",
                help=(f["help"] or "") + f" ({fmt_bytes(results.file_size(f['path']))})",
            )
            continue
        st.download_button(
            f["label"],
            f.get("read") or results.opener(f["path"]),
            file_name=f["file_name"],
            mime=f["mime"],
            on_click="ignore",
            icon=f["icon"],
            type="primary" if f["primary"] else "secondary",
            help=(f["help"] or "") + f" ({fmt_bytes(results.file_size(f['path']))})",
            key=f"download:{run['id']}:{f['label']}",
        )
with st.expander("Where the files are"):
    st.caption("In the workspace folder, beside the run's record (the command line reads them from there too):")
    st.code(str(state.workspace().run_dir(run["id"])), language=None, wrap_lines=True)
with st.expander("Release card (public)"):
    card_txt = results.artifact(run, "card.txt")
    st.text(card_txt.read_text() if card_txt is not None else "—")
head = results.preview(run)
if head is not None:
    out_rows = card.get("output", {}).get("rows")
    st.markdown("**First released rows**" if out_rows else "**First released answers**")
    st.dataframe(head, hide_index=True)
    if out_rows:
        st.caption(f"The first {len(head)} of {out_rows:,} rows (the download has them all).")
delete_control()

# ---------------------------------------------------------------- internal evaluation
st.subheader("Accuracy (internal evaluation)")
st.warning(INTERNAL_LABEL, icon=":material/lock:")
if ev.get("max_error") is None:
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

ys_key = f"yardstick:{run['id']}"
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
    f"beat this. (Answering all zeros gives {base['zeros']['max_error']:.4f}.)",
)
ys = st.session_state.get(ys_key)
with h4:
    if ys is not None and "max_error" in ys:
        st.metric(
            "Direct Gaussian (max)",
            f"{ys['max_error']:.4f}",
            help="Internal what-if computed on the private data, for comparison only: the Gaussian mechanism at "
            "the same ε, δ on the same workload (noisy answers, no rows). Not a release, not charged.",
        )
    elif ys is not None:
        st.metric("Direct Gaussian (max)", "—", help=ys.get("note", ""))
    elif st.button(
        "Direct-Gaussian what-if",
        key=f"ys_button:{run['id']}",
        help="Internal: run the Gaussian mechanism at the same ε, δ on the same workload, on the private data, "
        "for comparison only (not a release, not charged).",
    ):
        with st.spinner("Computing the direct-Gaussian yardstick (internal what-if)…"):
            st.session_state[ys_key] = results.yardstick(run)
        st.rerun()
if kept["left_out"]:
    st.caption(
        f"Errors are measured only on the {kept['kept']} kept column(s) of {kept['total']}: the left-out columns "
        "are not in the release and not in these figures. A release that keeps fewer or coarser columns answers "
        "fewer, easier queries, so its error looks smaller: compare it with care."
    )
st.dataframe(
    results.headline(ev, ys),
    hide_index=True,
    column_config={
        "max error": st.column_config.NumberColumn(format="%.5f"),
        "mean error": st.column_config.NumberColumn(format="%.6f"),
    },
)

data = results.internal(run)
errs = results.errors(data)
if errs is None:
    st.caption("This run has no internal answers file (it was recorded by an older version): no charts.")
else:
    st.markdown("**Error of every query**")
    st.altair_chart(charts.error_histogram(errs), width="stretch")
    st.caption("Answers are shares of rows, so an error of 0.01 means one percentage point.")

if ev.get("per_marginal"):
    st.markdown("**Error per marginal**")
    metric = st.radio(
        "Measure",
        ["total_variation", "max_error"],
        horizontal=True,
        key="keep:pm_metric",
        format_func={"total_variation": "total variation", "max_error": "max query error"}.get,
        help="Total variation = half the L1 distance between the real and released tables (0 = identical, "
        "1 = disjoint).",
    )
    st.altair_chart(charts.per_marginal_bars(ev["per_marginal"], metric), width="stretch")

if errs is not None:
    st.markdown("**Real vs released, one marginal**")
    wload = data["workload"]
    names = [wload.marginal_name(j) for j in range(wload.n_marginals)]
    j = st.selectbox("Marginal", range(len(names)), format_func=lambda i: names[i], key=f"marginal_pick:{run['id']}")
    cells, n_cells = results.marginal_cells(data, j)
    st.altair_chart(charts.real_vs_synthetic(cells), width="stretch")
    if n_cells > len(cells):
        st.caption(f"Showing the {len(cells)} largest of {n_cells:,} cells.")

trace = results.trace_frame(ev)
st.markdown("**Per-round trace**")
if trace.empty:
    st.caption("This mechanism has no rounds to trace.")
else:
    x = "round" if "round" in trace.columns else trace.columns[0]
    ys_cols = results.numeric_trace_columns(trace, x)
    if ys_cols:
        chosen = st.multiselect("Quantities", ys_cols, default=ys_cols[:1], key=f"trace_pick:{run['id']}")
        if chosen:
            st.altair_chart(charts.trace_lines(trace, x, chosen), width="stretch")
    with st.expander("Trace table"):
        st.dataframe(trace, hide_index=True)
if ev.get("oracle"):
    with st.expander("Oracle statistics (SCIP)"):
        st.json(ev["oracle"])

# ---------------------------------------------------------------- fidelity beyond the workload (internal)
if card.get("output", {}).get("rows"):
    st.subheader("Fidelity beyond the workload (internal)")
    st.caption(
        "Every column, every pair of columns, associations and a classifier trained on the synthetic rows, "
        "compared with the private table. " + INTERNAL_LABEL
    )
    from ui import fidelity as fidelity_charts

    report = results.saved_fidelity(run)
    data_cols = data["domain"].names if data is not None else []
    target = st.selectbox(
        "Column to predict (ML efficacy)",
        ["(none)", *data_cols],
        key=f"fidelity_target:{run['id']}",
        help="Train a classifier on the synthetic rows and test it on real rows, against one trained on real rows.",
    )
    if st.button("Compute the fidelity report", key=f"fidelity:{run['id']}", icon=":material/troubleshoot:"):
        with st.spinner("Comparing the released rows with the private table…"):
            report, _, _ = results.fidelity(run, None if target == "(none)" else target)
        if report is None:
            st.info("The private table of this run is not in the workspace (e.g. a command-line run).")
    if report is not None:
        real = results.source_table(run.get("dataset"))
        synthetic = results.synthetic_sample(run)
        one, two = report["one_way_tvd"], report["two_way_tvd"]
        f1, f2, f3, f4 = st.columns(4)
        f1.metric(
            "Mean 1-way TVD",
            fidelity_charts.figure(one["mean"]),
            help="Per column: total-variation distance, averaged.",
        )
        f2.metric(
            "Mean 2-way TVD",
            fidelity_charts.figure(two["mean"]),
            help="Per pair of columns, averaged (all pairs). — when the release kept one column: no pair to compare.",
        )
        f3.metric("Worst 2-way TVD", fidelity_charts.figure(two["max"]))
        outside = report.get("out_of_range")  # absent from a report computed before it existed: unknown, not 0
        worst = next((c for c in outside["columns"] if c["share"] > 0), None) if outside else None
        f4.metric(
            "Rows outside the real values",
            f"{outside['max']:.1%}" if outside else "—",
            help="The largest share, over the columns, of released rows holding what the real column does not: a "
            "number outside its range or a category it never holds (such as '(other)'). The TVDs bin numbers by "
            "the real data's quantiles, so they do not see values past the real range."
            + (f" Worst column: {md_escape(worst['column'], 80)}." if worst else "")
            + ("" if outside else " This report was computed before the figure existed: compute it again."),
        )
        summary = results.summary_frame(report)
        if summary is not None:
            st.markdown("**Numbers and dates: real → released**")
            st.caption(
                "The TVDs compare shares of bins; a clipped tail, or values pulled to the middle of their bin, move a "
                "mean without moving a bin. *Mean off by*: the difference of the means in standard deviations of the "
                "real column (0.1 is small). *SD ratio*: the released spread over the real one. *Real rows beyond the "
                "release*: the share of real rows below the least or above the greatest released value (a clipped "
                "tail). Columns compared as categories are not listed."
            )
            st.dataframe(summary, hide_index=True)
        if real is not None and synthetic is not None:
            cols_ = [c["name"] for c in report["columns"]]
            st.altair_chart(
                fidelity_charts.column_distributions(report, real[cols_], synthetic[cols_], data["domain"]),
                width="content",
            )
        if two.get("pairs_evaluated", 1):
            st.altair_chart(fidelity_charts.pair_error_heatmap(report), width="content")
            st.altair_chart(fidelity_charts.association_matrices(report), width="content")
        else:
            st.caption("The release kept one column of the table: there is no pair of columns to compare.")
        ml = fidelity_charts.ml_efficacy_bars(report)
        if ml is not None:
            st.altair_chart(ml, width="content")
        if report.get("notes"):
            st.caption(" · ".join(md_escape(n, 300) for n in report["notes"]))
