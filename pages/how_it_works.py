"""How it works: short live demos of the mechanisms, the game round by round, the privacy ledger of a run."""

import streamlit as st

from ui import charts, jobs, progress, state, teaching, widgets
from ui.mechanisms import loadable
from ui.text import cite, fmt_eps, fmt_number, fmt_seconds, glossary, label, md_escape

CLICKS = "teach:clicks"
LAST = "teach:last_run"

st.title("How it works")
st.markdown(teaching.INTRODUCTION, help=glossary("oracle", "query", "round", "epsilon"))

offered, left_out = teaching.demos()
st.subheader("Live demo")
if not offered:
    st.info("No mechanism with a teaching preset can run as a live demo here.")
else:
    by_name = {d.name: d for d in offered}
    if state.get(state.TEACH_MECH) not in by_name:
        st.session_state[state.TEACH_MECH] = offered[0].name
    busy = bool(jobs.active("teaching"))
    st.radio(
        "Mechanism",
        list(by_name),
        key=state.TEACH_MECH,
        horizontal=True,
        disabled=busy,
        format_func=lambda n: by_name[n].mechanism.title,
    )
    demo = by_name[state.get(state.TEACH_MECH)]
    said, row_is = teaching.spoken(demo.mechanism)
    st.markdown(f"**What it does.** {md_escape(said, 1200)}")
    st.caption(
        f"Setting: the bundled Adult census sample (public), {teaching.N_MARGINALS} random "
        f"{teaching.K}-way marginals, ε = {teaching.EPSILON:g}, δ = 1/n². Settings: "
        + ", ".join(f"{md_escape(label(k), 60)} = {fmt_number(v)}" for k, v in demo.params.items())
        + f". Finishes in under {teaching.PROMISED_SECONDS:.0f} seconds."
    )
    st.warning(
        "**A demo, not a private release.** Its noise comes from a fixed seed so that everyone sees the same run: "
        "anyone who knows the seed can remove the noise, so it promises no privacy and is labelled DEMO. It still "
        f"reads the data, so its ε = {teaching.EPSILON:g} is charged to the sample's privacy ledger.",
        icon=":material/school:",
    )
    clicks = int(st.session_state.get(CLICKS, 0))
    if st.button(
        "Run the demo", key=f"teach_button:{clicks}", type="primary", icon=":material/play_arrow:", disabled=busy
    ):
        st.session_state[CLICKS] = clicks + 1  # first: a double click finds the next key and starts nothing
        session = st.session_state.get(state.SESSION_ID, "")
        st.session_state[LAST] = teaching.start(demo, request_key=f"{session}:teach:{clicks}")
        st.rerun()
    progress.live_panels("teaching", poll_seconds=0.3, key_prefix="teach")
    progress.outcome(st.session_state.get(LAST))

    run = teaching.latest_run(demo.name, state.workspace())
    if run is not None:
        card, evaluation = run.get("card") or {}, run.get("evaluation") or {}
        privacy = card.get("privacy", {})
        st.markdown(
            f"**Demo run {md_escape(run['id'], 40)}: {fmt_seconds(run.get('seconds') or 0.0)}, ε spent "
            f"{fmt_eps(privacy.get('epsilon_spent'))} of {fmt_eps(privacy.get('epsilon'))}** (guarantee: "
            f"{md_escape(privacy.get('guarantee', '—'), 40)})"
        )
        trace = teaching.trace_frame(evaluation)
        st.markdown(f"*Round by round* — {md_escape(row_is, 300)} (internal figures: measured on the sample's rows).")
        if trace.empty:
            st.caption("This mechanism has no rounds.")
        else:
            x = "round" if "round" in trace.columns else trace.columns[0]
            numeric = [c for c in trace.columns if c != x and trace[c].dtype.kind in "if"]
            cols = [c for c in numeric if "error" in c] or numeric[:1]
            t1, t2 = st.columns([3, 2])
            with t1:
                st.dataframe(trace, hide_index=True, height=300)
            with t2:
                if cols:
                    st.altair_chart(charts.trace_lines(trace, x, cols), width="stretch")
        st.markdown("*The privacy ledger of this run*")
        entries = [e for e in state.ledger().entries() if e["run"] == run["id"]]
        st.dataframe(teaching.ledger_steps(entries), hide_index=True)
        st.caption(
            f"Accounting: {md_escape(cite(privacy.get('accountant', '—')), 300)}. "
            f"{md_escape(cite(demo.mechanism.accounting or ''), 600)}"
        )
        if evaluation.get("max_error") is not None:
            uniform = (evaluation.get("baselines") or {}).get("uniform", {}).get("max_error")
            st.metric(
                "Largest error at the end",
                f"{evaluation['max_error']:.4f}",
                None if uniform is None else f"uniform baseline {uniform:.4f}",
                delta_color="off",
                delta_arrow="off",
                help="Internal evaluation on the (public) bundled sample: the largest difference, over the "
                "workload's queries, between the synthetic data's answer and the real one (a share of rows).",
            )
if left_out:
    with st.expander("Mechanisms without a live demo"):
        for title, reason in left_out.items():
            st.markdown(f"- **{md_escape(title, 120)}**: {md_escape(reason, 400)}")

st.subheader("The mechanisms")
for m in loadable()[0]:
    with st.expander(f"{m.title}"):
        widgets.privacy_badge(m)
        st.caption(
            f"Source: {md_escape(widgets.source_line(m), 300)} · output: {widgets.OUTPUT_TEXT.get(m.output, m.output)}"
        )
        st.write(cite(m.summary or "—"))
        st.markdown(f"**Accounting.** {md_escape(cite(m.accounting or '—'), 2000)}")
