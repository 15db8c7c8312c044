"""Workload: which marginals (counts over a few attributes) the release should keep accurate."""

import streamlit as st

from dpcore.errors import WorkloadError
from ui import datasource, state
from ui import workload_state as wls
from ui.text import fmt_bytes, fmt_number, glossary, md_escape, plural, show_error
from ui.widgets import InputChecks

st.title("2 · Workload")
st.caption(
    "A marginal counts the rows in every combination of values of a few attributes (for instance age band × "
    "sex). The workload is the list of marginals the release should keep accurate: more marginals, or "
    "marginals over more attributes, cost accuracy and time.",
    help=glossary("marginal", "workload", "query"),
)

dataset = datasource.current_dataset()
if dataset is None:
    # An upload has a schema only once its roles are declared or its schema discovered (privately, on the Data page).
    reason = " ".join(datasource.dataset_error() or ["Load a dataset and check its schema on the Data page first."])
    st.info(md_escape(reason, 600))
    st.page_link("pages/data.py", label="Go to Data", icon=":material/table:")
    st.stop()

dom = dataset.domain
checks = InputChecks()
if state.get(wls.MODE) not in wls.MODES:
    st.session_state[wls.MODE] = "recommended"
c1, c2 = st.columns([1, 2])
with c1:
    mode = st.radio(
        "Which marginals",
        list(wls.MODES),
        key=wls.MODE,
        format_func=wls.MODE_TEXT.get,
        help="Recommended works on any table. The others let you choose the size k of the combinations yourself.",
    )
    st.caption(wls.describe_choice(dataset, wls.choice()))
    if mode != "recommended":
        checks.number(
            "k: attributes per marginal" if mode != "picked" else "k: combine up to this many attributes",
            key=state.WL_K,
            low=1,
            high=min(wls.MAX_K, len(dom)),
            integer=True,
            help="1 = each attribute alone, 2 = pairs, 3 = triples (the papers' benchmark). "
            + glossary("k", "marginal"),
        )
        st.checkbox(
            "Skip marginals with more cells than rows",
            key=state.WL_CAP,
            help="A marginal with more cells than the table has rows is mostly empty cells: many queries, little "
            "information. The papers' benchmarks use this cap.",
        )
with c2:
    if mode == "random":
        checks.number(
            "m: how many marginals",
            key=state.WL_M,
            low=1,
            integer=True,
            help="How many k-way marginals to draw at random.",
        )
        checks.number(
            "Selection seed",
            key=state.WL_SEED,
            low=0,
            high=2**32 - 1,
            integer=True,
            help="Fixes which marginals are drawn. The workload is public, so a fixed seed here is fine (unlike "
            "the seed of a release).",
        )
    elif mode == "picked":
        names = dom.names
        current = [a for a in (state.get(state.WL_PICKED) or []) if a in names]
        started = f"wl_pick_started:{dataset.fingerprint}"
        if not current and not st.session_state.get(started):
            # first visit for this table: start from a working choice, never from an error
            current = names[: min(wls.FIRST_PICK, len(names))]
        st.session_state[started] = True
        if current != list(state.get(state.WL_PICKED) or []):
            st.session_state[state.WL_PICKED] = current
        st.multiselect(
            "Attributes",
            names,
            key=state.WL_PICKED,
            select_all=False,  # one click must never select hundreds of attributes
            placeholder="Choose attributes",
            help="The workload keeps each of these accurate on its own and in combinations of up to k of them.",
        )

# Size before building: counted from the schema alone, so nothing heavy runs.
if not checks.ok:
    st.caption(checks.summary())
    st.stop()
workload, err = wls.current_workload(dataset)
st.subheader("Size")
if err:
    show_error(err)
    try:
        k = int(state.get(state.WL_K))
        if mode in ("all", "random") and k <= len(dom):
            cap = dataset.n if state.get(state.WL_CAP) else None
            est = wls.estimate(dom, wls.candidates(dom, k, cap))
            st.caption(
                f"For reference: all {k}-way marginals{' under the cap' if cap else ''} would be "
                f"{plural(est['n_marginals'], 'marginal')} and {plural(est['n_queries'], 'query', 'queries')} "
                f"(≈ {fmt_bytes(est['memory_bytes'])})."
            )
    except (WorkloadError, TypeError, ValueError):
        pass
    st.stop()

d = workload.describe()
m1, m2, m3, m4 = st.columns(4)
m1.metric("Marginals", fmt_number(d["n_marginals"]), help="How many attribute combinations the release keeps.")
m2.metric(
    "Queries |Q|",
    fmt_number(d["n_queries"]),
    help="Cells of all chosen marginals: each is one count the release answers. Mechanisms also use their "
    f"negations (1 − q), {fmt_number(d['n_queries_with_negations'])} in all. " + glossary("query"),
)
m3.metric(
    "Largest marginal",
    plural(d["largest_marginal_cells"], "cell"),
    help="Cells of the biggest chosen marginal: the product of its attributes' numbers of values.",
)
m4.metric(
    "Memory estimate",
    fmt_bytes(workload.memory_bytes()),
    help="Working memory for answers, errors and weights during a run (about 48 bytes per query).",
)
rows_per_cell = dataset.n / max(1, d["largest_marginal_cells"])
if rows_per_cell < 1:
    st.caption(
        f"The largest marginal has more cells than the table has rows ({rows_per_cell:.2g} rows per cell on "
        "average): most of its cells are empty, and noise will dominate them."
    )
with st.expander("The chosen marginals"):
    st.dataframe(
        {
            "marginal": [workload.marginal_name(j) for j in range(workload.n_marginals)],
            "attributes": [len(m) for m in workload.marginals],
            "cells": [int(s) for s in workload.sizes],
        },
        hide_index=True,
    )

st.subheader("Beyond a list: a whole query class")
class_k = checks.number(
    "Also answer all rules over up to this many attributes (0 = off)",
    key=state.WL_CLASS,
    low=0,
    high=wls.MAX_K,
    integer=True,
    help="A rule (conjunction) fixes up to k attributes to one value each (e.g. sex = Female and income = >50K), "
    "or is the negation of one. The class is described by k alone and never listed. PrivLearn and OracleQuery "
    "answer it directly; every release of rows or of a synopsis is also evaluated on 10,000 sampled rules.",
)
if class_k:
    from dpcore.query_classes import ConjunctionClass

    try:
        size = ConjunctionClass(dom, class_k).size
        st.caption(
            f"All rules over up to {class_k} attributes of this schema: {fmt_number(size)} queries (with "
            "negations), far more than a list could hold. The marginals above remain the workload the mechanisms "
            "enumerate and the answers file lists."
        )
    except Exception as exc:  # typed errors carry the fix; anything else is shown briefly
        show_error(exc)
st.page_link("pages/release.py", label="Next: choose a mechanism and ε", icon=":material/arrow_forward:")
