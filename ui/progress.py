"""Watching runs on a page: live progress with Cancel, and how a run ended (layout helpers over ui.jobs).

The figures a mechanism reports while it runs (its message, errors, residuals, solver counts) are measured on
the private data: they are shown under an INTERNAL label (issue 12, finding 12).  The round counter and the
elapsed time are the run's own bookkeeping.
"""

from __future__ import annotations

import streamlit as st

from . import jobs, state
from .text import md_escape

INTERNAL_PROGRESS = (
    "Internal — computed on the private data while the run works; not differentially private, not for publication"
)


def _short(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _cancel(run_id: str) -> None:
    jobs.cancel(run_id)
    st.session_state[state.LAST_RUN] = run_id  # this session then says how it ended


def panel(snap: dict, *, key_prefix: str) -> None:
    """One run's live progress: round t of T, elapsed time, the internal figures, Cancel."""
    name = snap.get("label") or snap.get("mechanism") or snap["run_id"]
    st.markdown(f"**{md_escape(name, 120)}** · run {md_escape(snap['run_id'], 40)}")
    t, T = int(snap.get("t") or 0), int(snap.get("T") or 0)
    frac = min(1.0, t / T) if T else 0.0
    st.progress(frac, text=f"Round {t} of {T or '?'}")
    c1, c2 = st.columns(2)
    c1.metric("Elapsed", f"{snap['elapsed']:.1f} s", help="Wall-clock time since the run started.")
    c2.metric("Round", f"{t} / {T or '?'}", help="Rounds done of the planned total T.")
    extra = {k: v for k, v in (snap.get("info") or {}).items() if isinstance(v, (int, float, str))}
    message = str(snap.get("message") or "")
    if message or extra:
        with st.container(border=True):
            st.caption(f":material/lock: {INTERNAL_PROGRESS}")
            parts = [md_escape(message, 160)] if message else []
            parts += [f"{md_escape(k, 40)}: {md_escape(_short(v), 40)}" for k, v in extra.items()]
            st.caption(" · ".join(parts))
    if snap.get("cancelling"):
        st.info("Cancelling… the run stops at its next check (between oracle calls).")
    else:
        st.button(
            "Cancel run",
            key=f"{key_prefix}:cancel:{snap['run_id']}",
            on_click=_cancel,
            args=(snap["run_id"],),
            icon=":material/stop:",
            help="Stop the run: nothing is released. It was charged before it read the data, so the charge stays.",
        )


def _this_table(snap: dict) -> bool:
    """Whether a run belongs to the table this session works on (its outcome and Results link are shown only
    then: another table's run ending must not put its banner on this table's pages)."""
    from . import datasource

    key = datasource.current_key()
    return snap.get("dataset") is None or key is None or snap.get("dataset") == key


def live_panels(kind: str, poll_seconds: float = 0.5, key_prefix: str = "progress") -> list[str]:
    """Progress of every unfinished run of ``kind`` in the workspace (started here, in another tab, before a
    reload, or by the CLI), refreshed every ``poll_seconds``; the page reruns when one ends."""
    running = jobs.active(kind)
    if not running:
        return []

    @st.fragment(run_every=poll_seconds)
    def live() -> None:
        for run_id in running:
            snap = jobs.snapshot(run_id)
            if snap["done"]:
                # This session watched a release end (maybe after a reload): if it is this table's, the Release
                # page says how it ended; another table's run, or another kind, only leaves the list.
                if kind == "release" and _this_table(snap):
                    st.session_state[state.LAST_RUN] = run_id
                st.rerun()  # the whole page: the outcome, the Results link, the sidebar ledger
            with st.container(border=True):
                panel(snap, key_prefix=key_prefix)

    live()
    return running


def outcome(run_id: str | None, *, release: bool = False) -> dict | None:
    """How the run this session started ended (a toast the first time), or None while it runs.  ``release``: the
    Release page's run -- shown only while the session works on that run's table."""
    if not run_id:
        return None
    snap = jobs.snapshot(run_id)
    if not snap["done"]:
        return None
    if release and not _this_table(snap):  # the session moved to another table: not this table's outcome
        return None
    name = md_escape(snap.get("label") or snap.get("mechanism") or run_id, 120)
    status = snap["status"]
    announced = st.session_state.setdefault(state.ANNOUNCED, set())
    if status == "done":
        text = f"Run “{name}” finished in {snap['elapsed']:.1f} s."
        st.success(text + (" It is a DEMO (fixed seed): it promises no privacy." if snap.get("demo") else ""))
        if run_id not in announced:
            st.toast(text, icon=":material/check_circle:")
    elif status == "refused":
        st.error(f"Refused: {md_escape(snap.get('error') or '', 600)}", icon=":material/block:")
    elif status == "cancelled":
        st.info(md_escape(snap.get("error") or "The run was cancelled; nothing was released.", 600))
    elif status == "interrupted":
        st.warning(md_escape(snap.get("error") or "", 600), icon=":material/power_off:")
    elif status in ("failed", "missing", "deleted"):
        message = snap.get("error") or ("The run was deleted." if status == "deleted" else "The run is not found.")
        st.error(md_escape(message, 2000), icon=":material/error:")
    announced.add(run_id)
    return snap
