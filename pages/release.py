"""Release: pick a mechanism, ε and δ, its parameters; see what it costs; run with live progress."""

import streamlit as st

from dpcore.errors import DPCoreError
from dpcore.privacy import check_budget, default_delta
from dpcore.privacy.ledger import over_cap_message
from dpcore.release import plan_release, plan_warnings
from ui import datasource, jobs, progress, state, widgets
from ui import mechanisms as ui_mechanisms
from ui import workload_state as wls
from ui.text import fmt_delta, fmt_eps, fmt_number, glossary, label, md_escape, show_error, show_warning

#: The default's entry in the mechanism list: it resolves, from public quantities, to a registered mechanism.
AUTO = "auto"
DEFAULT_LABEL = "Default: chosen for this table — synthetic rows"
DEFAULT_SUMMARY = (
    "dpcore measures every column's counts first, then the pairs of columns the noise leaves room for at this "
    "table's size and your ε: few pairs, each measured well, on a small table or at a small ε; pairs whose "
    "counts would come back mostly noise are not measured, so the released rows invent no association there. "
    "When there are more candidate pairs than room, it chooses them from the data, privately (the adaptive "
    "projection: each pair is the one its fit so far gets most wrong). With no room for any pair it releases the "
    "columns' counts alone. What it chose, and why, is said under “Before running” and on the release card."
)
DEFAULT_ACCOUNTING = (
    "Whatever it chooses is ρ-zCDP and spends ρ = eps_to_zcdp(ε, δ) of your budget (the projection, or the "
    "adaptive projection whose choices of pairs are themselves charged), converted to (ε, δ) once. The choice of "
    "how many pairs uses only n, the columns' sizes, ε and δ."
)

st.title("3 · Release")
st.caption("Choose how to privatise the data, how much privacy to spend, and run.")

dataset = datasource.current_dataset()
workload, wl_err = wls.current_workload(dataset)
if dataset is None or workload is None:
    st.info("Choose a dataset (Data page) and a workload (Workload page) first.")
    st.page_link("pages/workload.py", label="Go to Workload", icon=":material/grid_view:")
    progress.live_panels("release")  # a run started before a reload is still watched here
    st.stop()

mechs, broken = ui_mechanisms.for_workloads()
if broken:
    st.caption("Not available right now (could not be loaded): " + ", ".join(broken))
if not mechs:
    st.error("No mechanism could be loaded; check the server log.")
    st.stop()
names = [m.name for m in mechs]
by_name = {m.name: m for m in mechs}
# The default ("auto", as on the command line and in the library): with the recommended workload, dpcore chooses
# the mechanism and the marginals it measures from n, the attribute sizes, ε and δ (said below, before the run).
offer_default = wls.offers_default(dataset, workload) and "projection" in by_name
if offer_default:
    names = [AUTO] + names
if state.get(state.MECH) not in names:
    recommended = [m.name for m in mechs if m.recommended and m.output == "rows"]
    rows = [m.name for m in mechs if m.output == "rows"]
    st.session_state[state.MECH] = (names if offer_default else (recommended or rows or names))[0]
# A release run of this server is in progress (started here, in another tab or before a reload): one at a time.
busy = any(jobs.snapshot(r)["here"] for r in jobs.active("release"))

st.selectbox(
    "Mechanism",
    names,
    key=state.MECH,
    format_func=lambda n: DEFAULT_LABEL if n == AUTO else widgets.mechanism_label(by_name[n]),
    disabled=busy,
    help="The default chooses for this table (recommended workload only); or any mechanism registered in "
    "dpcore, the paper each comes from shown below.",
)
auto = state.get(state.MECH) == AUTO
# Until ε is known the default plans as the projection (whatever it resolves to is robust, outputs rows, uses
# the oracle and spends ρ of the same budget); "Before running" names what it chose.
mech = by_name["projection"] if auto else by_name[state.get(state.MECH)]
with st.container(border=True):
    b1, b2 = st.columns([3, 2])
    with b1:
        if auto:
            st.markdown(f"**{DEFAULT_LABEL}**")
            st.write(DEFAULT_SUMMARY)
        else:
            st.markdown(f"**{mech.title}**")
            st.caption(f"Source: {widgets.source_line(mech)}")
            st.write(mech.summary)
    with b2:
        widgets.privacy_badge(mech)
        st.badge(f"output: {widgets.OUTPUT_TEXT.get(mech.output, mech.output)}", color="blue", icon=":material/output:")
        if mech.recommended or auto:
            st.badge("recommended", color="violet", icon=":material/star:")
        with st.popover("Privacy accounting"):
            st.write(DEFAULT_ACCOUNTING if auto else (mech.accounting or "—"))

checks = widgets.InputChecks()  # an invalid input shows its message under it, and nothing runs
st.subheader("Privacy budget")
e1, e2 = st.columns(2)
with e1:
    checks.number(
        "ε (epsilon)",
        key=state.EPSILON,
        low=0,
        low_open=True,
        step=0.1,
        disabled=busy,
        help=glossary("epsilon") + " The papers' benchmarks use 0.1–1.",
    )
with e2:
    d_default = default_delta(dataset.n)
    st.radio(
        "δ (delta)",
        ["default", "custom"],
        key=state.DELTA_MODE,
        horizontal=True,
        disabled=busy,
        format_func={"default": f"1/n² = {d_default:.2e} (default)", "custom": "custom"}.get,
        help=glossary("delta") + " 1/n² is far below 1/n, the level at which a mechanism could publish a whole "
        "record; pure-ε mechanisms spend δ = 0 whatever you choose.",
    )
    if state.get(state.DELTA_MODE) == "custom":
        checks.number(
            "custom δ", key=state.DELTA, low=0, high=1, high_open=True, format="%.2e", step=1e-10, disabled=busy
        )
epsilon = float(state.get(state.EPSILON) or 0.0)
delta = None if state.get(state.DELTA_MODE) == "default" else float(state.get(state.DELTA) or 0.0)

st.subheader("Parameters")
class_k = int(state.get(state.WL_CLASS) or 0) or None
if class_k and any(p.name == "k" for p in mech.parameters):
    st.caption(
        f"Your workload includes the class of all conjunctions of width ≤ {class_k}: this mechanism answers "
        "it directly (its parameter k starts at that width)."
    )
if auto:
    params: dict = {}
    outcomes = [""] + list(dataset.domain.names)
    if state.get(state.OUTCOME) not in outcomes:  # a column of another table, kept from before
        st.session_state[state.OUTCOME] = ""
    st.selectbox(
        "Outcome you will predict (optional)",
        outcomes,
        key=state.OUTCOME,
        disabled=busy,
        format_func=lambda c: "none" if c == "" else c,
        help="If you will train a model on the synthetic rows to predict one column, name it: the default then "
        "spends the first half of its pair measurements on that column's pairs with the others, so the model sees "
        "the associations the data supports. A public choice (free); it changes which pairs are measured, not what "
        "the run costs.",
    )
    st.caption(
        "The default runs what it chooses with that mechanism's default parameters (the card lists them). To set "
        "parameters, choose a mechanism above."
    )
else:
    params = widgets.parameter_form(mech, disabled=busy, overrides={"k": class_k} if class_k else None, checks=checks)
with st.expander("Advanced: solver, executor, seed"):
    a1, a2, a3 = st.columns(3)
    with a1:
        checks.number(
            "SCIP time limit per oracle call (s)",
            low=0.1,
            high=3600.0,
            step=1.0,
            key=state.TIME_LIMIT,
            disabled=busy or not mech.uses_oracle,
            help=glossary("oracle") + " A solve that hits the limit returns its best feasible answer. For mechanisms "
            "whose privacy holds even if the solver fails this only affects accuracy.",
        )
    with a2:
        st.selectbox(
            "Executor",
            ["serial", "local", "ray"],
            key=state.EXECUTOR,
            disabled=busy or not mech.uses_oracle,
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
            "Fix the random seed (a DEMO: no privacy)",
            key=state.FIX_SEED,
            disabled=busy,
            help="A fixed seed makes the noise reproducible, so anyone who knows the seed can remove it: the "
            "output promises no privacy. Fine for teaching, never for a real release. The run is still charged "
            "(it reads the data) and is labelled DEMO everywhere.",
        )
        if state.get(state.FIX_SEED):
            checks.number("seed", key=state.DEMO_SEED, low=0, integer=True, disabled=busy)
if state.get(state.FIX_SEED):
    st.warning(
        "**Demo run:** the seed is fixed, so this run's output promises **no privacy** (its card says so, its "
        "downloads are named DEMO_…). It is still charged to the ledger.",
        icon=":material/science:",
    )
st.text_input(
    "Label (optional)",
    key=state.RUN_LABEL,
    max_chars=120,
    disabled=busy,
    help="A name for this run on the Results and Compare pages (the command line's --label).",
)

# ---------------------------------------------------------------- cost before spend
st.subheader("Before running: what it costs")
if datasource.schema_cost_note():
    st.caption(md_escape(datasource.schema_cost_note(), 600))
plan, plan_error, over_cap, chosen_by = None, None, None, None
d_used = d_default if delta is None else delta
if not checks.ok:
    plan_error = checks.summary()
    st.caption(plan_error)
else:
    try:
        check_budget(epsilon, d_used, dataset.n)
        if auto:
            mech, params, workload, chosen_by = wls.default_for_run(
                dataset, epsilon, d_used, state.get(state.OUTCOME) or None
            )
            st.info(
                f"**The default chose: {mech.title}.** Measured: {md_escape(chosen_by, 1200)}.",
                icon=":material/auto_awesome:",
            )
        else:
            workload = wls.fitted_to_run(dataset, workload, mech, epsilon, d_used, params)
        plan = plan_release(dataset.n, workload, mech.name, epsilon, delta, params)
    except DPCoreError as exc:
        plan_error = str(exc)
        show_error(plan_error)
if not plan_error:
    for w in check_budget(epsilon, d_used, dataset.n) + plan_warnings(plan or {}, workload, dataset.n):
        show_warning(w)
    led = state.ledger()
    key = dataset.ledger_key
    tot = led.total(key)
    after = led.preview(key, dataset.n, epsilon, d_used)
    p1, p2, p3, p4 = st.columns(4)
    p1.metric(
        "This run charges at most",
        f"ε = {fmt_eps(epsilon)}",
        f"δ = {fmt_delta(d_used)}",
        delta_color="off",
        delta_arrow="off",
        help="Charged to the ledger before the run reads the data (a cancelled or failed run stays charged). "
        "When it ends, the charge becomes what its accountant reports, never more.",
    )
    p2.metric(
        "Spent on this dataset so far",
        f"ε = {fmt_eps(tot['epsilon'])}",
        f"δ = {fmt_delta(tot['delta'])} · {tot['runs']} run{'' if tot['runs'] == 1 else 's'}",
        delta_color="off",
        delta_arrow="off",
        help="Every run charged to this file in this workspace (app, command line, Python), whatever its schema "
        "or workload. Basic composition: the ε's and δ's add.",
    )
    zcdp = "" if after["epsilon_zcdp"] is None else f" · zCDP: ε = {fmt_eps(after['epsilon_zcdp'])}"
    p3.metric(
        "Dataset total after this run",
        f"ε = {fmt_eps(after['epsilon'])}",
        f"δ = {fmt_delta(after['delta'])}{zcdp}",
        delta_color="off",
        delta_arrow="off",
        help="Basic composition (ε's and δ's add). When every run is zCDP the total is also stated in zCDP, "
        "converted at δ = 1/n²; both bounds hold, the smaller is the better one.",
    )
    cap_eps = tot["cap_epsilon"]
    p4.metric(
        "Cap on this dataset",
        "none" if cap_eps is None else f"ε = {fmt_eps(cap_eps)}",
        f"δ < {fmt_delta(tot['cap_delta'])}",
        delta_color="off",
        delta_arrow="off",
        help="A run that would take the total beyond the cap is refused before it reads the data. The δ cap is "
        "1/n unless set.",
    )
    if after["within"] is None:
        over_cap = over_cap_message(dataset.name, tot, cap_eps, tot["cap_delta"], epsilon, d_used)
        st.error(f"Refused: {md_escape(over_cap, 600)}", icon=":material/block:")
    with st.expander("Set or lift this dataset's budget cap"):
        st.caption(
            "The cap is kept per dataset (per file) in the workspace and checked before every run, from the app "
            "or the command line. Setting, changing or lifting it is an explicit act, recorded with its time and "
            "your note."
        )
        c1, c2 = st.columns([1, 2])
        cap_checks = widgets.InputChecks()
        state.default(
            f"cap_value:{key}", float(cap_eps) if cap_eps is not None else max(1.0, round(tot["epsilon"] + epsilon, 3))
        )
        cap_value = cap_checks.number(
            "Cap on the total ε", key=f"cap_value:{key}", low=0, low_open=True, step=0.5, container=c1
        )
        cap_note = c2.text_input("Why (recorded with the cap)", key=f"cap_note:{key}", max_chars=200)
        b1, b2 = st.columns(2)
        if b1.button("Set the cap", key=f"cap_set:{key}", icon=":material/lock:", disabled=not cap_checks.ok):
            led.set_cap(key, float(cap_value), None, note=cap_note or "set in the app", name=dataset.name, n=dataset.n)
            st.rerun()
        if cap_eps is not None and b2.button("Lift the cap", key=f"cap_lift:{key}", icon=":material/lock_open:"):
            led.set_cap(key, None, None, note=cap_note or "lifted in the app", name=dataset.name, n=dataset.n)
            st.rerun()
        history = led.cap_history(key)
        if history:
            import datetime as _dt

            st.dataframe(
                [
                    {
                        "when": _dt.datetime.fromtimestamp(h["time"]).strftime("%Y-%m-%d %H:%M:%S"),
                        "cap ε": "none" if h["epsilon"] is None else fmt_eps(h["epsilon"]),
                        "note": h["note"],
                    }
                    for h in history
                ],
                hide_index=True,
            )
    if plan:
        st.caption("Public figures of this run (computed from n, the workload and the parameters only):")
        st.dataframe(
            {"figure": [label(k) for k in plan], "value": [fmt_number(v) for v in plan.values()]},
            hide_index=True,
        )

button_key, request_key = state.next_request_key()
run_clicked = st.button(
    "Run",
    key=button_key,
    type="primary",
    icon=":material/play_arrow:",
    disabled=busy or bool(plan_error) or bool(over_cap),
    help="Runs on the server: the page stays usable, a reload or another tab still sees it, and you can cancel.",
)
if run_clicked:
    state.clicked_run()  # first: a second click on this same button (a double click) finds a new key
    seed = int(state.get(state.DEMO_SEED)) if state.get(state.FIX_SEED) else None
    label = (state.get(state.RUN_LABEL) or "").strip()  # unnamed: the run gets mechanism, ε, table, columns, time
    run_id = jobs.start_release(
        dataset=dataset,
        workload=workload,
        mechanism=mech.name,
        epsilon=epsilon,
        delta=delta,
        params=params,
        seed=seed,
        label=label,
        request_key=request_key,
        time_limit=float(state.get(state.TIME_LIMIT)) if mech.uses_oracle else None,
        executor_spec=state.get(state.EXECUTOR),
        class_width=class_k,
        chosen_by=chosen_by,
        **datasource.release_options(),  # the schema's discovery (on the card, not charged again)
    )
    st.session_state[state.LAST_RUN] = run_id
    state.keep(state.RESULT_RUN, run_id)
    st.rerun()

progress.live_panels("release")
snap = progress.outcome(st.session_state.get(state.LAST_RUN), release=True)
if snap is not None and snap["status"] == "done":
    if st.button("See the results", icon=":material/bar_chart:", key=f"see_results:{snap['run_id']}"):
        # The Results page applies it in its own run, before its selectbox exists: a value set here could lose to
        # the one the browser still holds for that widget from an earlier visit.
        st.session_state[state.OPEN_RUN] = snap["run_id"]
        st.switch_page("pages/results.py")
