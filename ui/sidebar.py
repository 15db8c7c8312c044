"""The sidebar of every page: dataset in use, n, the session's privacy ledger, reset."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from . import state
from .text import fmt_delta, fmt_eps


def ledger_tables() -> list[tuple[str, int, pd.DataFrame]]:
    """Per dataset: (name, runs, table of ε and δ under basic composition and under zCDP)."""
    led = state.ledger()
    names = state.get(state.DATASET_NAMES, {})
    out = []
    for ds in led.datasets():
        tot = led.total(ds)
        table = pd.DataFrame(
            {
                "ε": [fmt_eps(tot["epsilon_basic"]), fmt_eps(tot["epsilon_zcdp"])],
                "δ": [
                    fmt_delta(tot["delta_basic"]),
                    fmt_delta(tot["delta_basic"]) if tot["epsilon_zcdp"] is not None else "—",
                ],
            },
            index=["basic", "zCDP"],
        )
        out.append((names.get(ds, ds), tot["runs"], table))
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
                "Every completed release of this session, totalled per dataset. Basic composition adds the ε's and "
                "δ's (always valid). zCDP adds the runs' ρ (pure-ε runs count ε²/2) and converts back to ε at the "
                "summed δ with the Canonne–Kamath–Steinke bound; it is usually tighter for many Gaussian-noise runs "
                "and looser for a few pure-ε runs, and '—' when a run was not accounted in zCDP or no δ was spent. "
                "Both are valid bounds: the smaller one holds. Cancelled or failed runs cost nothing: they released "
                "nothing."
            ),
        )
        tables = ledger_tables() if state.has_spent() else []
        if not tables:
            st.caption("Nothing spent yet.")
        for name, runs, table in tables:
            st.text(name)
            st.caption(f"{runs} completed run(s)")
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
