"""The sidebar of every page: dataset in use, n, the session's privacy ledger, reset."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from . import state
from .text import fmt_delta, fmt_eps


def ledger_tables() -> list[tuple[str, int, pd.DataFrame]]:
    """Per dataset: (name, runs, table of ε and δ under basic composition and under zCDP)."""
    out = []
    for tot in state.ledger().summary():
        table = pd.DataFrame(
            {
                "ε": [fmt_eps(tot["epsilon"]), fmt_eps(tot["epsilon_zcdp"])],
                "δ": [
                    fmt_delta(tot["delta"]),
                    fmt_delta(tot["delta_zcdp"]) if tot["epsilon_zcdp"] is not None else "—",
                ],
            },
            index=["basic", "zCDP"],
        )
        out.append((tot["name"], tot["runs"], table))
    return out


def render(summary: dict | None) -> None:
    """``summary``: name, n and attribute count of the table in use (see datasource.summary)."""
    with st.sidebar:
        st.subheader("Dataset in use")
        if summary is None:
            st.caption("No dataset yet: choose one on the Data page.")
        else:
            st.text(summary["name"])
            st.caption(f"n = {summary['n']:,} rows · {summary['attributes']} attributes")
        st.subheader(
            "Privacy ledger",
            help=(
                "Every run charged to this workspace (from the app, the CLI or Python), totalled per dataset; it "
                "survives reloads and restarts. Basic composition adds the ε's and δ's (always valid). zCDP adds the "
                "runs' ρ (pure-ε runs count ε²/2) and converts back to ε at δ = 1/n² with the Canonne–Kamath–Steinke "
                "bound; it is usually tighter for many Gaussian-noise runs and '—' when a run was not accounted in "
                "zCDP. Both are valid bounds: the smaller one holds. A run is charged before it reads the data, so a "
                "cancelled or failed run stays charged."
            ),
        )
        tables = ledger_tables() if state.has_spent() else []
        if not tables:
            st.caption("Nothing spent yet.")
        for name, runs, table in tables:
            st.text(name)
            st.caption(f"{runs} charged run(s)")
            st.dataframe(table, width="stretch")
        for key in (state.JOB, state.TEACH_JOB):
            job = st.session_state.get(key)
            if job is not None and job.done:
                job = None
            if job is not None:
                snap = job.snapshot()
                st.caption(f"Running: round {snap['t']} of {snap['T'] or '?'}, {snap['elapsed']:.0f} s")
        if st.button(
            "Reset session",
            icon=":material/restart_alt:",
            help="Forget the data, schema, runs and the ledger of this session (cancels a running run).",
        ):
            state.reset()
            st.rerun()
