"""How it works: short live demos of the mechanisms, the game round by round, the ε ledger."""

import streamlit as st

from ui import charts, results, runner, state, teaching, widgets
from ui.mechanisms import loadable
from ui.text import fmt_eps

st.title("How it works")
st.caption(
    "Oracle-efficient mechanisms play a game between a *data player* (who proposes records, using the SCIP "
    "optimisation oracle) and a *query player* (who keeps weights on the queries the data answers worst, "
    "and is the only one who touches the private data, through noisy choices). Each round costs a little "
    "privacy; the accountant adds it up."
)

presets = teaching.preset_mechanisms()
st.subheader("Live demo")
if not presets:
    st.info("No mechanism with a teaching preset is registered yet.")
else:
    by_name = {m.name: m for m in presets}
    if state.get(state.TEACH_MECH) not in by_name:
        st.session_state[state.TEACH_MECH] = presets[0].name
    busy = runner.running(state.TEACH_JOB) is not None
    st.radio(
        "Mechanism",
        list(by_name),
        key=state.TEACH_MECH,
        horizontal=True,
        disabled=busy,
        format_func=lambda n: by_name[n].title,
    )
    mech = by_name[state.get(state.TEACH_MECH)]
    st.caption(
        f"Setting: the bundled Adult sample, {teaching.N_MARGINALS} random {teaching.K}-way marginals "
        f"(selection seed {teaching.WORKLOAD_SEED}), ε = 1, δ = 1/n², random seed fixed at "
        f"{teaching.DEMO_SEED} so the demo is reproducible (never do that for a real release). "
        "Preset parameters: " + ", ".join(f"{k} = {v}" for k, v in mech.teaching_preset.items()) + ". "
        "The demo is a real run on the bundled sample, so its ε is charged to this session's ledger."
    )
    if st.button("Run the demo", type="primary", icon=":material/play_arrow:", disabled=busy):
        ds = teaching.teaching_dataset()
        st.session_state[state.TEACH_JOB] = runner.start_release_job(
            label=f"{mech.name} (teaching preset)",
            kind="teaching",
            dataset=ds,
            workload=teaching.teaching_workload(),
            mechanism=mech.name,
            epsilon=1.0,
            delta=None,
            params=teaching.preset_params(mech),
            seed=teaching.DEMO_SEED,
            time_limit=teaching.TIME_LIMIT,
            executor_spec="serial",
            ledger=state.ledger(),
        )
        st.rerun()
    runner.progress_panel(state.TEACH_JOB, poll_seconds=0.3)
    runner.outcome(state.TEACH_JOB)

    record = teaching.latest_teaching_run(mech.name)
    if record is not None:
        rel = record.release
        st.markdown(
            f"**Demo run {record.id}: {rel.seconds:.1f} s, ε spent "
            f"{fmt_eps(rel.card['privacy']['epsilon_spent'])} of 1**"
        )
        trace = results.trace_frame(record.internal)
        st.markdown(
            "*The game, round by round* — each row is one round: the query the query player picked and "
            "how far the synthetic data still is from the real data."
        )
        if trace.empty:
            st.caption("This mechanism has no rounds.")
        else:
            x = "round" if "round" in trace.columns else trace.columns[0]
            numeric = results.numeric_trace_columns(trace, x)
            cols = [c for c in numeric if "error" in c] or numeric[:1]
            t1, t2 = st.columns([3, 2])
            with t1:
                st.dataframe(trace, hide_index=True, height=300)
            with t2:
                if cols:
                    st.altair_chart(charts.trace_lines(trace, x, cols), width="stretch")
        st.markdown("*The ε ledger of this run*")
        st.dataframe(teaching.ledger_steps(rel), hide_index=True)
        st.caption(f"Accountant: {rel.card['privacy']['accountant']}. {mech.accounting}")
        ev = record.internal.report
        if ev.get("max_error") is not None:
            st.metric(
                "Max error at the end",
                f"{ev['max_error']:.4f}",
                f"uniform baseline {ev['baselines']['uniform']['max_error']:.4f}",
                delta_color="off",
                delta_arrow="off",
                help="Internal evaluation on the (public) bundled sample.",
            )

st.subheader("The mechanisms")
for m in loadable()[0]:
    with st.expander(f"{m.title}"):
        widgets.privacy_badge(m)
        st.caption(f"Source: {m.seed} · output: {widgets.OUTPUT_TEXT.get(m.output, m.output)}")
        st.write(m.summary or "—")
        st.markdown(f"**Accounting.** {m.accounting or '—'}")
