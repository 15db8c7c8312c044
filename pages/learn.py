"""Learn: private classifiers (OPDisc, RSPM, PRSMA, DP logistic regression) compared over ε.

Layout only: the learners live in ``dpcore.learning``, the page's logic in ``ui/learning.py``, the run on the
server in ``ui/jobs.py``.  Every user string shown is escaped (never rendered as HTML).
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dpcore.errors import DPCoreError
from dpcore.learning import NEIGHBOURS
from dpcore.learning.evaluate import METHODS, LearnSettings, parse_epsilons, plan
from dpcore.learning.features import ADULT_LABEL, ADULT_POSITIVE, ADULT_SEVEN, FeatureEncoding, prepare
from ui import datasource, jobs, learning, progress, state
from ui.learning import K
from ui.text import cite, fmt_delta, fmt_eps, fmt_number, glossary, md_escape, plural, show_error, show_warning
from ui.text import label as plain_label
from ui.widgets import InputChecks

state.init()
learning.init()

st.title("Learn a private classifier")
st.caption(
    "Train classifiers with differential privacy, solving the 0/1-loss problem exactly with SCIP (OPDisc, RSPM, "
    "PRSMA) or the logistic surrogate (DP logistic regression), and compare their test accuracy over ε. "
    "[NRW19] §III and [NRVW20] §3–5.",
    help=glossary("epsilon", "oracle", "test_accuracy"),
)

ds = datasource.current_dataset()
if ds is None:
    st.info(
        "No table is ready: load one (and check its schema) on the Data page. The bundled Adult sample is used "
        "until then."
    )
    ds = datasource.bundled_dataset()
is_adult = ds.name == datasource.BUNDLED_NAME and ADULT_LABEL in ds.domain.names
st.markdown(f"Table in use: **{md_escape(ds.name)}** — {plural(ds.n, 'row')}, {plural(len(ds.domain), 'attribute')}.")
schema = datasource.schema_statement(ds)
if schema["source"] == "inferred":
    show_warning(
        "This table's schema was read from the data WITHOUT privacy (your choice on the Data page). The features' "
        "names, values and thresholds come from it, so every model file from this page says its guarantee is none. "
        "Discover the schema privately or declare it on the Data page to learn with a guarantee."
    )
elif schema["source"] == "dp":
    st.caption(
        f"The schema was discovered privately (ε = {fmt_eps(schema['epsilon'])}, δ = {fmt_delta(schema['delta'])}): "
        "every model file adds it to its own ε and δ."
    )
checks = InputChecks()

# ------------------------------------------------------------------ label and features
names = ds.domain.names
label_default = ADULT_LABEL if ADULT_LABEL in names else names[-1]
state.default(K + "label", label_default)
if st.session_state[K + "label"] not in names:
    st.session_state[K + "label"] = label_default
c1, c2 = st.columns(2)
label = c1.selectbox(
    "Column to predict",
    names,
    key=K + "label",
    help="The label. A classifier needs two classes: with more values, say which count as positive.",
)
label_values = ds.domain[label].labels()
pos_key = K + "positive:" + label
state.default(
    pos_key, list(ADULT_POSITIVE) if label == ADULT_LABEL else ([label_values[1]] if len(label_values) == 2 else [])
)
positive = c2.multiselect(
    "Positive value(s)",
    label_values,
    key=pos_key,
    help="Records whose label is one of these are class 1; the rest are class 0.",
)
feat_key = K + "features:" + label
state.default(
    feat_key,
    "\n".join(ADULT_SEVEN) if (is_adult and label == ADULT_LABEL) else "\n".join(n for n in names if n != label)[:2000],
)
feature_text = st.text_area(
    "Features, one per line",
    key=feat_key,
    height=180,
    help="'name' = one column per value but the first; 'name=V1|V2' = 1 if the value is listed; 'name>=X' = 1 if "
    "the value (a numeric bin's lower edge) is at least X. Binary features keep the solver's problem small.",
)
with st.expander("Attributes and their values"):
    st.dataframe(
        pd.DataFrame(
            {
                "attribute": names,
                "kind": [a.kind for a in ds.domain.attributes],
                "values": [", ".join(a.labels()[:12]) + (" …" if a.size > 12 else "") for a in ds.domain.attributes],
            }
        ),
        hide_index=True,
    )

# ------------------------------------------------------------------ methods and privacy
if any(m not in METHODS for m in st.session_state[K + "methods"]):
    st.session_state[K + "methods"] = [m for m in st.session_state[K + "methods"] if m in METHODS]
c1, c2, c3 = st.columns([3, 2, 1])
methods = c1.multiselect(
    "Methods",
    list(METHODS),
    key=K + "methods",
    format_func=lambda m: METHODS[m].title,
    select_all=False,
    help="Each is trained at every ε, several times. The non-private reference is a line on the chart for "
    "comparison only: it is never kept or offered as a model.",
)
if not methods:
    c1.error("Choose at least one method.", icon=":material/error:")
    checks.add("Methods", "Choose at least one method.")
eps_text = c2.text_input(
    "Privacy loss ε (comma-separated)", key=K + "epsilons", help="One value or several. " + glossary("epsilon")
)
epsilons = None
try:
    epsilons = parse_epsilons(eps_text)
except DPCoreError as exc:
    c2.error(md_escape(exc, 300), icon=":material/error:")
    checks.add("Privacy loss ε", str(exc))
runs = checks.number(
    "Runs each",
    key=K + "runs",
    low=1,
    high=30,
    integer=True,
    help="Each method is trained this many times at each ε (the error bars). Every training is charged.",
    container=c3,
)
with st.expander("Advanced: grid, δ, solver, split"):
    a1, a2, a3, a4 = st.columns(4)
    bound = checks.number(
        "Weight bound B",
        key=K + "bound",
        low=1,
        high=10,
        integer=True,
        help="Integer weights in {−B..B} (in units of τ).",
        container=a1,
    )
    norm = checks.number(
        "Norm bound D", key=K + "D", low=0.5, high=100, help="‖w‖ ≤ D. OPDisc's noise grows like D².", container=a2
    )
    tau = checks.number("Grid step τ", key=K + "tau", low=0.05, high=10, container=a3)
    time_limit = checks.number(
        "Solver time limit per call (s)",
        key=K + "time_limit",
        low=0.01,
        high=3600,
        help="At the limit an oracle-dependent method's guarantee is not established. " + glossary("certified"),
        container=a4,
    )
    b1, b2, b3, b4 = st.columns(4)
    b1.checkbox(
        "Balanced training set ([NRVW20] §5)",
        key=K + "balance",
        help="Trains on as many positives as negatives, chosen by a DP count of the positive class (ε = 0.05 of "
        "every training's ε). Off: the whole training split, whose size is public.",
    )
    test_fraction = checks.number("Test share", key=K + "test_fraction", low=0.05, high=0.9, container=b2)
    max_rows = checks.number(
        "Most rows (0 = all)",
        key=K + "max_rows",
        low=0,
        integer=True,
        step=500,
        help="Keep a random subset (public positions) to make the solver's problems smaller.",
        container=b3,
    )
    lam = checks.number(
        "DP logistic regression: regulariser Λ", key=K + "lam", low=1e-6, high=10, format="%.6f", container=b4
    )
    d1, d2, d3, d4 = st.columns(4)
    d1.checkbox("Custom δ (default 1/n² of the table's rows)", key=K + "delta_custom", help=glossary("delta"))
    custom_delta = bool(st.session_state[K + "delta_custom"])
    delta = checks.number(
        "δ",
        key=K + "delta",
        low=0,
        low_open=True,
        high=1.0 / ds.n,
        high_open=True,
        format="%.2e",
        disabled=not custom_delta,
        help=f"Must be below 1/n = {fmt_delta(1.0 / ds.n)} (n = {ds.n:,} rows of the table).",
        container=d2,
    )
    d3.checkbox(
        "Fixed seed (a DEMO: reproducible, promises no privacy)",
        key=learning.FIX_SEED,
        help=glossary("demo", "seed"),
    )
    fixed = bool(st.session_state[learning.FIX_SEED])
    seed = checks.number(
        "Seed", key=learning.SEED, low=0, high=2**32 - 1, integer=True, disabled=not fixed, container=d4
    )

st.caption(
    f"Neighbouring tables: {md_escape(cite(NEIGHBOURS), 400)}. Oracle-dependent methods (OPDisc, RSPM) are private "
    "only if SCIP certifies every solution optimal; PRSMA and DP logistic regression are private whatever the "
    "solver does."
)


def _inputs():
    """The encoding, settings, public pre-run figures and the grid; raises a typed error the page shows."""
    enc = FeatureEncoding.build(
        ds.domain, label, [ln for ln in feature_text.splitlines() if ln.strip()], positive or None
    )
    settings = LearnSettings(
        bound=int(bound),
        tau=float(tau),
        D=float(norm),
        delta=float(delta) if custom_delta else None,
        time_limit=float(time_limit),
        lam=float(lam),
    )
    import numpy as np

    data = prepare(
        ds,
        enc,
        np.random.default_rng(0),  # a public split, for the pre-run figures only
        balance=bool(st.session_state[K + "balance"]),
        test_fraction=float(test_fraction),
        max_rows=int(max_rows) or None,
    )
    figures = plan(data, list(methods), epsilons, settings, ds.domain)
    grid = learning.trainings(list(methods), epsilons, int(runs), settings, ds.n)
    return enc, settings, data, figures, grid


running = jobs.active("learn")
ready = None
if checks.ok:
    try:
        ready = _inputs()
    except DPCoreError as exc:
        show_error(exc)
else:
    st.caption(checks.summary())

# ------------------------------------------------------------------ cost before spend
run_clicked = False
if ready is not None:
    enc, settings, data, figures, grid = ready
    total_calls = sum(f["oracle_calls"] for f in figures) * int(runs)
    st.subheader("Before running: what it costs")
    charge = learning.grid_charge(grid)
    ledger = state.ledger()
    before = ledger.total(ds.ledger_key)
    after = learning.preview(ledger, ds, grid)
    p1, p2, p3, p4 = st.columns(4)
    p1.metric(
        "This comparison charges",
        f"ε = {fmt_eps(charge['epsilon'])}",
        f"δ = {fmt_delta(charge['delta'])} · {plural(charge['runs'], 'training')}",
        delta_color="off",
        delta_arrow="off",
        help="Every private training reads the training rows and is charged separately; they add up (basic "
        "composition). Each is charged right before it runs: a cancelled comparison is charged for what ran. "
        + glossary("composition"),
    )
    p2.metric(
        "Spent on this table so far",
        f"ε = {fmt_eps(before['epsilon'])}",
        f"δ = {fmt_delta(before['delta'])} · {plural(before['runs'], 'run')}",
        delta_color="off",
        delta_arrow="off",
        help="Every run charged to this file in this workspace (app and command line). " + glossary("ledger"),
    )
    p3.metric(
        "Table's total after",
        f"ε = {fmt_eps(after['epsilon'])}",
        f"δ = {fmt_delta(after['delta'])}",
        delta_color="off",
        delta_arrow="off",
        help="Basic composition: the ε's and δ's add.",
    )
    p4.metric(
        "Cap on this table",
        "none" if after["cap_epsilon"] is None else f"ε = {fmt_eps(after['cap_epsilon'])}",
        f"δ < {fmt_delta(after['cap_delta'])}",
        delta_color="off",
        delta_arrow="off",
        help="A run that would take the total beyond the cap is refused before it reads the data. Set it on the "
        "Release page. " + glossary("cap"),
    )
    st.caption(
        f"{plural(data.n_train, 'training row')} (private input), {plural(len(data.y_test), 'test row')} "
        f"(internal evaluation only), {plural(enc.d, 'binary feature')} including the bias; about "
        f"{fmt_number(total_calls)} solver calls in all."
    )
    with st.expander("Public pre-run figures per method and ε"):
        shown = pd.DataFrame(figures).rename(
            columns=lambda c: {"method": "method", "privacy": "privacy"}.get(c, plain_label(c))
        )
        st.dataframe(shown, hide_index=True)
    over_cap = after["within"] is None
    if over_cap:
        st.error(
            f"Refused: this comparison would take the table's total to ε = {fmt_eps(after['epsilon'])}, beyond its "
            "cap. Nothing was run or charged. Choose fewer methods, ε values or runs, or raise the cap on the "
            "Release page (an explicit, recorded act).",
            icon=":material/block:",
        )
    confirmed = True
    if charge["runs"] > 1 and not over_cap:
        spec = {"methods": list(methods), "epsilons": epsilons, "runs": int(runs), "dataset": ds.ledger_key}
        confirmed = st.checkbox(
            f"I understand: this spends ε = {fmt_eps(charge['epsilon'])} of this table's privacy budget in "
            f"{plural(charge['runs'], 'training')} (more than one training's ε = {fmt_eps(charge['max_epsilon'])})",
            key=learning.confirmation_key(charge, spec),
        )
    if fixed:
        st.warning(
            "Fixed seed: this is a DEMO. Its noise can be reproduced and removed, so its models promise no privacy "
            "(their files say guarantee: none). It is still charged: it reads the data.",
            icon=":material/science:",
        )
    clicks = int(st.session_state.get("learn:clicks", 0))
    run_clicked = st.button(
        "Run",
        key=f"learn_run:{clicks}",
        type="primary",
        icon=":material/play_arrow:",
        disabled=bool(running) or over_cap or not confirmed,
        help="Runs on the server: the page stays usable, a reload or another tab still sees it, and you can cancel.",
    )
    if running:
        st.caption("A learning run is in progress (below); start the next one when it has finished.")
    elif not confirmed:
        st.caption("Tick the box above to confirm the charge; nothing runs until then.")
    if run_clicked:
        st.session_state["learn:clicks"] = clicks + 1  # first: a double click finds the next key
        session = st.session_state.get(state.SESSION_ID, "")
        st.session_state[learning.LAST_RUN] = learning.start(
            dataset=ds,
            encoding=enc,
            methods=list(methods),
            epsilons=epsilons,
            runs=int(runs),
            settings=settings,
            balance=bool(st.session_state[K + "balance"]),
            test_fraction=float(test_fraction),
            max_rows=int(max_rows) or None,
            seed=int(seed) if fixed else None,
            request_key=f"{session}:learn:{clicks}",
            schema=schema,
        )
        st.rerun()


progress.live_panels("learn", key_prefix="learn")
last = st.session_state.get(learning.LAST_RUN)
progress.outcome(last)

# ------------------------------------------------------------------ results (from the workspace)
store = state.runs_store()
run = store.get(last) if last else None
if run is None or run.get("status") != "done" or run.get("deleted"):
    run = next(
        (
            store.get(r["id"])
            for r in store.list(kind="learn", light=True, dataset=ds.ledger_key)
            if r["status"] == "done"
        ),
        None,
    )
if run is not None and run.get("evaluation"):
    report = run["evaluation"]
    summary = pd.DataFrame(report.get("summary") or [])
    st.subheader("Test accuracy over ε")
    if run.get("demo"):
        st.warning("This comparison was a DEMO (fixed seed): its models promise no privacy.", icon=":material/science:")
    st.caption(
        f"Run {md_escape(run['id'], 40)} ({md_escape(run.get('label') or '', 200)}). INTERNAL evaluation on held-out "
        "rows of your table: not differentially private, not for publication. The whole comparison was charged "
        f"ε = {fmt_eps(run.get('epsilon'))}, δ = {fmt_delta(run.get('delta'))} (the sum over its trainings); a single "
        "model on its own has the ε it states.",
        help=glossary("internal", "test_accuracy"),
    )
    if not summary.empty:
        fig = go.Figure()
        for m in summary["method"].unique():
            s = summary[summary["method"] == m]
            if m == "nonprivate":
                if s["accuracy_mean"].notna().any():
                    fig.add_hline(
                        y=float(s["accuracy_mean"].iloc[0]),
                        line_dash="dot",
                        annotation_text="non-private reference (internal, never released)",
                    )
                continue
            s = s.dropna(subset=["accuracy_mean"])
            fig.add_trace(
                go.Scatter(
                    x=s["epsilon"],
                    y=s["accuracy_mean"],
                    mode="lines+markers",
                    name=METHODS[m].title if m in METHODS else m,
                    error_y=dict(type="data", array=s["accuracy_std"].fillna(0.0)),
                )
            )
        eps_ticks = sorted(e for e in summary["epsilon"].dropna().unique())
        fig.update_layout(
            xaxis_title="privacy loss ε (log scale)",
            yaxis_title="test accuracy (internal)",
            xaxis_type="log",
            height=420,
            xaxis=dict(tickvals=eps_ticks, ticktext=[f"{e:g}" for e in eps_ticks]),
            legend=dict(orientation="h", yanchor="top", y=-0.2),
            margin=dict(t=20),
        )
        st.plotly_chart(fig, use_container_width=True)
        table = summary.rename(
            columns={
                "method": "method",
                "epsilon": "ε",
                "runs": "trainings",
                "accuracy_mean": "test accuracy (mean)",
                "accuracy_std": "test accuracy (sd)",
                "seconds": "seconds (mean)",
                "seconds_max": "seconds (max)",
                "solver_failures": "uncertified solves",
                "bottom_outputs": "no output (PRSMA ⊥)",
            }
        )
        st.dataframe(table, hide_index=True)
    records = pd.DataFrame(
        [
            {k: r.get(k) for k in ("method", "epsilon", "run", "seconds", "status", "certified", "solve_seconds")}
            for r in report.get("records") or []
        ]
    )
    if not records.empty:
        st.subheader("Run time and solver statistics")
        times = go.Figure()
        for m in records["method"].unique():
            times.add_trace(go.Box(y=records[records["method"] == m]["seconds"], name=METHODS[m].title))
        times.update_layout(yaxis_title="seconds per training", height=320)
        st.plotly_chart(times, use_container_width=True)
    fails = report.get("failures") or []
    if fails:
        show_warning(
            f"{plural(len(fails), 'training')} ended without SCIP certifying optimality "
            f"({', '.join(sorted({str(f['status']) for f in fails}))}). For these OPDisc/RSPM models the privacy "
            "guarantee is not established; their files say so."
        )
    bottoms = int(summary["bottom_outputs"].sum()) if "bottom_outputs" in summary else 0
    if bottoms:
        st.info(
            f"PRSMA returned ⊥ (no output) in {plural(bottoms, 'training')}: its private failure test did not pass."
        )

    st.subheader("Download a model")
    models = learning.models_of(run)
    if not models:
        st.caption("This comparison kept no model (the non-private reference never is one).")
    else:
        st.caption(
            "Each file states its guarantee, ε and δ, and where its schema came from. Choosing a model after "
            "comparing the test accuracies above reads private rows outside any guarantee: when a run trained more "
            "than one model, every file from it says it was picked that way (guarantee: not established). To "
            "publish a private model, run one method at one ε once: there is then nothing to choose."
        )

        def describe(i: int) -> str:
            m = models[i]
            acc = m["record"].get("accuracy")
            title = METHODS[m["model"]["method"]].title if m["model"]["method"] in METHODS else m["model"]["method"]
            return (
                f"{title}, ε = {fmt_eps(m['model'].get('epsilon'))}, run {m['record'].get('run', 0) + 1}"
                f" — test accuracy {'—' if acc is None else f'{acc:.3f}'} — guarantee: {m['model'].get('guarantee')}"
            )

        pick = st.selectbox("Model", list(range(len(models))), format_func=describe, key=K + "pick")
        chosen = models[min(int(pick or 0), len(models) - 1)]
        guarantee = chosen["model"].get("guarantee")
        if guarantee == "differential privacy":
            total = chosen["model"].get("epsilon_total", chosen["model"].get("epsilon"))
            st.success(
                f"Guarantee: differential privacy, ε = {fmt_eps(total)}, "
                f"δ = {fmt_delta(chosen['model'].get('delta_total', chosen['model'].get('delta')))} "
                "(the training's and the schema's together).",
                icon=":material/verified_user:",
            )
        else:
            st.warning(
                f"Guarantee: {md_escape(guarantee, 40)} — "
                f"{md_escape(chosen['model'].get('guarantee_reason', ''), 300)}",
                icon=":material/gpp_bad:",
            )
        st.download_button(
            "Download model JSON",
            chosen["text"],
            file_name=learning.download_name(chosen["model"]),
            mime="application/json",
            icon=":material/download:",
        )
