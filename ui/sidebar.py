"""The sidebar of every page: the dataset in use, the workspace, runs in progress, the privacy ledger."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from . import jobs, state
from .text import fmt_delta, fmt_eps, md_escape

#: Seconds between refreshes of the sidebar while a run is in progress.
POLL_SECONDS = 1.0
#: Datasets whose ledger totals the sidebar shows open (most recently used first); the rest sit in an expander.
LEDGER_SHOWN = 3


def ledger_tables() -> list[tuple[str, int, pd.DataFrame, dict]]:
    """Per dataset: (name, runs, table of ε and δ under basic composition and under zCDP, the total)."""
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
        out.append((tot["name"], tot["runs"], table, tot))
    return out


def running_lines() -> list[str]:
    """One line per unfinished run of the workspace: 'Running: <label> — round t of T, s'."""
    lines = []
    for run_id in jobs.active():
        snap = jobs.snapshot(run_id)
        if snap["done"]:
            continue
        name = snap.get("label") or snap.get("mechanism") or snap.get("kind") or run_id
        lines.append(
            f"Running: {md_escape(name, 60)} — round {snap['t']} of {snap['T'] or '?'}, {snap['elapsed']:.0f} s"
        )
    return lines


def _ledger_and_runs(was_live: bool) -> None:
    lines = running_lines()
    if was_live and not lines:
        st.rerun()  # a run just ended: refresh the page it was started from (its result, the ledger)
    for line in lines:
        st.caption(line)
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
    for name, runs, table, tot in tables[:LEDGER_SHOWN]:  # the most recently used first
        _ledger_entry(name, runs, table, tot)
    if len(tables) > LEDGER_SHOWN:
        rest = tables[LEDGER_SHOWN:]
        with st.expander(f"{len(rest)} more dataset{'' if len(rest) == 1 else 's'} (used less recently)"):
            for name, runs, table, tot in rest:
                _ledger_entry(name, runs, table, tot)


def _ledger_entry(name: str, runs: int, table: pd.DataFrame, tot: dict) -> None:
    st.text(name)
    cap = "" if tot["cap_epsilon"] is None else f" · cap ε = {fmt_eps(tot['cap_epsilon'])}"
    st.caption(f"{runs} charged run{'' if runs == 1 else 's'} · total ε = {fmt_eps(tot['epsilon'])}{cap}")
    st.dataframe(table, width="stretch")


def render(summary: dict | None) -> None:
    """``summary``: name, n and attribute count of the table in use (see datasource.summary)."""
    with st.sidebar:
        st.subheader("Dataset in use")
        if summary is None:
            st.caption("No dataset yet: choose one on the Data page.")
        else:
            st.text(summary["name"])
            st.caption(f"n = {summary['n']:,} rows · {summary['attributes']} attributes")
        live = bool(running_lines())
        st.fragment(run_every=POLL_SECONDS if live else None)(_ledger_and_runs)(live)
        st.subheader(
            "Workspace",
            help="The folder holding your datasets, schemas, runs, their files and the privacy ledger: shared "
            "with the dpcore command line (--workspace DIR or the DPCORE_WORKSPACE environment variable).",
        )
        st.code(str(state.workspace().path), language=None, wrap_lines=True)
        if st.button(
            "Reset choices",
            icon=":material/restart_alt:",
            help="Go back to the default choices (table, workload, mechanism, ε). Runs, their files and the "
            "privacy ledger stay in the workspace: a reset never undoes a charge.",
        ):
            state.reset()
            st.rerun()
