"""The sidebar of every page: dataset in use, n, the session's privacy ledger, reset."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from . import state
from .text import fmt_delta, fmt_eps


def ledger_table() -> pd.DataFrame:
    """Per dataset: runs, ε and δ under basic composition, ε under zCDP (CKS conversion)."""
    led = state.ledger()
    names = state.get(state.DATASET_NAMES, {})
    rows = []
    for ds in led.datasets():
        tot = led.total(ds)
        rows.append({"dataset": names.get(ds, ds), "runs": tot["runs"], "ε (basic)": fmt_eps(tot["epsilon_basic"]),
                     "δ (basic)": fmt_delta(tot["delta_basic"]),
                     "ε (zCDP)": fmt_eps(tot["epsilon_zcdp"])})
    return pd.DataFrame(rows, columns=["dataset", "runs", "ε (basic)", "δ (basic)", "ε (zCDP)"])


def render(summary: dict | None) -> None:
    """``summary``: name, n and attribute count of the table in use (see datasource.summary)."""
    with st.sidebar:
        st.subheader("Dataset in use")
        if summary is None:
            st.caption("No dataset yet: choose one on the Data page.")
        else:
            st.text(summary["name"])
            st.caption(f"n = {summary['n']:,} rows · {summary['attributes']} attributes")
        st.subheader("Privacy ledger", help=(
            "Every completed release of this session, totalled per dataset. Basic composition adds the ε's and "
            "δ's (always valid). zCDP adds the runs' ρ (pure-ε runs count ε²/2) and converts back to ε at the "
            "summed δ with the Canonne–Kamath–Steinke bound; it is tighter when there are several runs, and "
            "'—' when a run was not accounted in zCDP or no δ was spent. Cancelled or failed runs cost nothing: "
            "they released nothing."))
        table = ledger_table() if state.has_spent() else None
        if table is None or table.empty:
            st.caption("Nothing spent yet.")
        else:
            st.dataframe(table, hide_index=True, width="stretch")
        for key in (state.JOB, state.TEACH_JOB):
            job = st.session_state.get(key)
            if job is not None and job.done:
                job = None
            if job is not None:
                snap = job.snapshot()
                st.caption(f"Running: round {snap['t']} of {snap['T'] or '?'}, {snap['elapsed']:.0f} s")
        if st.button("Reset session", icon=":material/restart_alt:",
                     help="Forget the data, schema, runs and the ledger of this session (cancels a running run)."):
            state.reset()
            st.rerun()
