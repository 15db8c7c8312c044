"""Release: pick a mechanism, ε and δ, its parameters; run with live progress."""

import streamlit as st

from dpcore.errors import DPCoreError
from dpcore.privacy import check_budget, default_delta
from dpcore.release import plan_release
from ui import datasource, runner, state, widgets
from ui import mechanisms as ui_mechanisms
from ui import workload_state as wls
from ui.text import fmt_delta, fmt_eps, show_error, show_warning

st.title("3 · Release")
st.caption("Choose how to privatise the data, how much privacy to spend, and run.")

dataset = datasource.current_dataset()
workload, wl_err = wls.current_workload(dataset)
if dataset is None or workload is None:
    st.info("Choose a dataset (Data page) and a workload (Workload page) first.")
    st.page_link("pages/workload.py", label="Go to Workload", icon=":material/grid_view:")
    st.stop()

mechs, broken = ui_mechanisms.for_workloads()
if broken:
    st.caption("Not available right now (could not be loaded): " + ", ".join(broken))
if not mechs:
    st.error("No mechanism could be loaded; check the server log.")
    st.stop()
names = [m.name for m in mechs]
if state.get(state.MECH) not in names:
    recommended = [m.name for m in mechs if m.recommended and m.output == "rows"]
    rows = [m.name for m in mechs if m.output == "rows"]
    st.session_state[state.MECH] = (recommended or rows or names)[0]
by_name = {m.name: m for m in mechs}
job_running = runner.running(state.JOB) is not None

st.selectbox(
    "Mechanism",
    names,
    key=state.MECH,
    format_func=lambda n: widgets.mechanism_label(by_name[n]),
    disabled=job_running,
    help="Every mechanism registered in dpcore; the paper each comes from is shown below.",
)
mech = by_name[state.get(state.MECH)]
with st.container(border=True):
    b1, b2 = st.columns([3, 2])
    with b1:
        st.markdown(f"**{mech.title}**")
        st.caption(f"Source: {mech.seed}")
        st.write(mech.summary)
    with b2:
        widgets.privacy_badge(mech)
        st.badge(f"output: {widgets.OUTPUT_TEXT.get(mech.output, mech.output)}", color="blue", icon=":material/output:")
        if mech.recommended:
            st.badge("recommended", color="violet", icon=":material/star:")
        with st.popover("Privacy accounting"):
            st.write(mech.accounting or "—")

st.subheader("Privacy budget")
e1, e2 = st.columns(2)
with e1:
    st.number_input(
        "ε (epsilon)",
        key=state.EPSILON,
        step=0.1,
        format="%g",
        disabled=job_running,
        help="The privacy loss bound: smaller is more private and noisier. Typical values 0.1–10; "
        "the papers' benchmarks use 0.1–1.",
    )
with e2:
    d_default = default_delta(dataset.n)
    st.radio(
        "δ (delta)",
        ["default", "custom"],
        key=state.DELTA_MODE,
        horizontal=True,
        disabled=job_running,
        format_func={"default": f"1/n² = {d_default:.2e} (default)", "custom": "custom"}.get,
        help="The probability the ε guarantee may fail. 1/n² is far below 1/n, the level at which a "
        "mechanism could publish a whole record; pure-ε mechanisms spend δ = 0 whatever you choose.",
    )
    if state.get(state.DELTA_MODE) == "custom":
        st.number_input(
            "custom δ", key=state.DELTA, format="%.2e", step=1e-10, min_value=0.0, max_value=0.999, disabled=job_running
        )
epsilon = float(state.get(state.EPSILON))
delta = None if state.get(state.DELTA_MODE) == "default" else float(state.get(state.DELTA))

st.subheader("Parameters")
class_k = int(state.get(state.WL_CLASS) or 0) or None
if class_k and any(p.name == "k" for p in mech.parameters):
    st.caption(
        f"Your workload includes the class of all conjunctions of width ≤ {class_k}: this mechanism answers "
        "it directly (its parameter k starts at that width)."
    )
params = widgets.parameter_form(mech, disabled=job_running, overrides={"k": class_k} if class_k else None)
with st.expander("Advanced: solver, executor, seed"):
    a1, a2, a3 = st.columns(3)
    with a1:
        st.number_input(
            "SCIP time limit per oracle call (s)",
            min_value=0.1,
            max_value=3600.0,
            step=1.0,
            key=state.TIME_LIMIT,
            disabled=job_running or not mech.uses_oracle,
            format="%g",
            help="A solve that hits the limit returns its best feasible answer. For mechanisms whose "
            "privacy holds even if the solver fails this only affects accuracy.",
        )
    with a2:
        st.selectbox(
            "Executor",
            ["serial", "local", "ray"],
            key=state.EXECUTOR,
            disabled=job_running or not mech.uses_oracle,
            format_func={
                "serial": "serial (this process)",
                "local": "local (all cores)",
                "ray": "ray (cluster from DPCORE_RAY_ADDRESS)",
            }.get,
            help="Where independent oracle calls run. 'local' helps mechanisms that solve several "
            "problems per round (FEM); 'serial' starts fastest.",
        )
    with a3:
        st.checkbox(
            "Fix the random seed (demos only)",
            key=state.FIX_SEED,
            disabled=job_running,
            help="A fixed seed makes the noise reproducible, which is fine for teaching but not for a real "
            "release. The seed never appears on the release card.",
        )
        if state.get(state.FIX_SEED):
            st.number_input("seed", min_value=0, step=1, key=state.DEMO_SEED, disabled=job_running)

# ---------------------------------------------------------------- plan + budget
st.subheader("Before running")
plan, plan_error = None, None
try:
    check_budget(epsilon, delta if delta is not None else d_default, dataset.n)
    plan = plan_release(dataset.n, workload, mech.name, epsilon, delta, params)
except DPCoreError as exc:
    plan_error = str(exc)
if plan_error:
    show_error(plan_error)
else:
    for w in check_budget(epsilon, delta if delta is not None else d_default, dataset.n):
        show_warning(w)
    d_used = d_default if delta is None else delta
    tot = state.ledger().total(dataset.ledger_key)
    p1, p2, p3 = st.columns(3)
    p1.metric(
        "This run spends at most",
        f"ε = {fmt_eps(epsilon)}",
        f"δ = {fmt_delta(d_used)}",
        delta_color="off",
        delta_arrow="off",
        help="The run's accountant keeps its total within this budget; the release card shows what was actually spent.",
    )
    p2.metric(
        "Spent on this dataset so far",
        f"ε = {fmt_eps(tot['epsilon'])}",
        f"δ = {fmt_delta(tot['delta'])} · {tot['runs']} run(s)",
        delta_color="off",
        delta_arrow="off",
        help="Basic composition over this session's completed runs on this exact table and schema.",
    )
    p3.metric(
        "Total after this run",
        f"ε = {fmt_eps(tot['epsilon'] + epsilon)}",
        f"δ = {fmt_delta(tot['delta'] + d_used)} (basic composition)",
        delta_color="off",
        delta_arrow="off",
        help="Basic composition (ε's and δ's add). The sidebar also shows the zCDP total; the smaller holds.",
    )
    if plan:
        st.caption("Public figures of this run (computed from n, the workload and the parameters only):")
        st.dataframe(
            {"figure": list(plan), "value": [f"{v:.6g}" if isinstance(v, float) else str(v) for v in plan.values()]},
            hide_index=True,
        )

run_clicked = st.button(
    "Run",
    type="primary",
    icon=":material/play_arrow:",
    disabled=job_running or bool(plan_error),
    help="Runs in the background; the page stays usable and you can cancel.",
)
if run_clicked:
    seed = int(state.get(state.DEMO_SEED)) if state.get(state.FIX_SEED) else None
    st.session_state[state.JOB] = runner.start_release_job(
        label=mech.name,
        kind="release",
        dataset=dataset,
        workload=workload,
        mechanism=mech.name,
        epsilon=epsilon,
        delta=delta,
        params=params,
        seed=seed,
        time_limit=float(state.get(state.TIME_LIMIT)),
        executor_spec=state.get(state.EXECUTOR),
        ledger=state.ledger(),
        plan=plan,
        class_width=class_k,
    )
    st.rerun()

runner.progress_panel(state.JOB)
runner.outcome(state.JOB)
job = st.session_state.get(state.JOB)
if job is not None and job.done and job.record is not None:
    st.page_link("pages/results.py", label="See the results", icon=":material/bar_chart:")
