"""Workload: which k-way marginals the release should preserve."""

import math

import streamlit as st

from dpcore.errors import WorkloadError
from ui import datasource, state
from ui import workload_state as wls
from ui.text import fmt_bytes, show_error

st.title("2 · Workload")
st.caption(
    "A k-way marginal counts the rows in every combination of values of k attributes; its cells are the "
    "queries the release should answer well. More marginals and larger k cost accuracy and time."
)

dataset = datasource.current_dataset()
if dataset is None:
    st.info("Load a dataset and check its schema on the Data page first.")
    st.page_link("pages/data.py", label="Go to Data", icon=":material/table:")
    st.stop()

dom = dataset.domain
c1, c2 = st.columns([1, 2])
with c1:
    st.number_input(
        "k (attributes per marginal)",
        min_value=1,
        max_value=5,
        step=1,
        key=state.WL_K,
        help="1 = one attribute at a time, 3 = triples (the papers' benchmark).",
    )
    st.radio(
        "Marginals",
        ["all", "random", "picked"],
        key=state.WL_MODE,
        format_func={"all": "all k-way marginals", "random": "m random ones (seeded)", "picked": "pick by hand"}.get,
    )
    st.checkbox(
        "Skip marginals with more cells than rows (n)",
        key=state.WL_CAP,
        help="A marginal with more cells than records is mostly empty cells: it adds many queries and "
        "little information. The papers' benchmarks use this cap.",
    )
k = int(state.get(state.WL_K))
mode = state.get(state.WL_MODE)
cap = dataset.n if state.get(state.WL_CAP) else None
with c2:
    if mode == "random":
        st.number_input(
            "m (number of marginals)",
            min_value=1,
            step=1,
            key=state.WL_M,
            help="How many k-way marginals to draw at random.",
        )
        st.number_input(
            "Selection seed",
            min_value=0,
            step=1,
            key=state.WL_SEED,
            help="Fixes which marginals are drawn. The workload is public, so a fixed seed is fine.",
        )
    elif mode == "picked":
        n_combos = math.comb(len(dom), k) if k <= len(dom) else 0
        if n_combos > wls.MAX_PICKABLE:
            st.warning(f"There are {n_combos:,} {k}-way marginals: too many to list. Use 'm random ones'.")
        elif n_combos:
            try:
                options = [wls.marginal_label(dom.names, c) for c in wls.candidates(dom, k, cap)]
            except WorkloadError as exc:
                options = []
                show_error(exc)
            picked = [p for p in state.get(state.WL_PICKED) or [] if p in options]
            if picked != list(state.get(state.WL_PICKED) or []):
                st.session_state[state.WL_PICKED] = picked
            st.multiselect(
                f"{k}-way marginals", options, key=state.WL_PICKED, help="Names are the attributes joined by ×."
            )

# Size before building: counted from the schema alone, so nothing heavy runs.
workload, err = wls.current_workload(dataset)
st.subheader("Size")
if err:
    show_error(err)
    try:
        if k <= len(dom) and mode != "picked":
            est = wls.estimate(dom, wls.candidates(dom, k, cap))
            st.caption(
                f"For reference: all {k}-way marginals{' under the cap' if cap else ''} would be "
                f"{est['n_marginals']:,} marginals and {est['n_queries']:,} queries "
                f"(≈ {fmt_bytes(est['memory_bytes'])})."
            )
    except WorkloadError:
        pass
    st.stop()

d = workload.describe()
m1, m2, m3, m4 = st.columns(4)
m1.metric("Marginals", f"{d['n_marginals']:,}", help="How many attribute sets the release should preserve.")
m2.metric(
    "Queries |Q|",
    f"{d['n_queries']:,}",
    help="Cells of all chosen marginals. Mechanisms also use their "
    f"negations (1 − q), {d['n_queries_with_negations']:,} in all.",
)
m3.metric(
    "Largest marginal",
    f"{d['largest_marginal_cells']:,} cells",
    help="Cells of the biggest chosen marginal: the product of its attributes' sizes.",
)
m4.metric(
    "Memory estimate",
    fmt_bytes(workload.memory_bytes()),
    help="Working memory for answers, errors and weights during a run (about 48 bytes per query).",
)
with st.expander("The chosen marginals"):
    st.dataframe(
        {
            "marginal": [workload.marginal_name(j) for j in range(workload.n_marginals)],
            "cells": [int(s) for s in workload.sizes],
        },
        hide_index=True,
    )

st.subheader("Beyond a list: a whole query class")
st.number_input(
    "Also answer all conjunctions of width ≤ k (0 = off)",
    min_value=0,
    max_value=5,
    step=1,
    key=state.WL_CLASS,
    help="A conjunction fixes up to k attributes to one value each (e.g. sex=Female ∧ income=>50K), "
    "or is the negation of one. The class is described by k alone and never listed. PrivLearn "
    "and OracleQuery answer it directly; every release of rows or of a synopsis is also "
    "evaluated on 10,000 sampled members.",
)
class_k = int(state.get(state.WL_CLASS) or 0)
if class_k:
    from dpcore.query_classes import ConjunctionClass

    try:
        size = ConjunctionClass(dom, class_k).size
        st.caption(
            f"The class of all conjunctions of width ≤ {class_k} over this schema holds {size:,} queries "
            f"(with negations): far more than a list could hold. The marginals above remain the workload "
            "the mechanisms enumerate and the answers file lists."
        )
    except Exception as exc:  # typed errors carry the fix; anything else is shown briefly
        show_error(exc)
st.page_link("pages/release.py", label="Next: choose a mechanism and ε", icon=":material/arrow_forward:")
