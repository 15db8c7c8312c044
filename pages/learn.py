"""Learn: private classifiers (OPDisc, RSPM, PRSMA, DP logistic regression) compared over ε.

Layout only: the learners live in ``dpcore.learning``.  A run happens in a background thread
(the page polls it), and every user string shown is escaped (never rendered as HTML).
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dpcore.errors import Cancelled, DPCoreError
from dpcore.learning import NEIGHBOURS
from dpcore.learning.evaluate import METHODS, LearnSettings, evaluate, parse_epsilons, plan
from dpcore.learning.features import ADULT_LABEL, ADULT_POSITIVE, ADULT_SEVEN, FeatureEncoding, prepare
from ui import datasource, state
from ui.text import md_escape, show_error, show_warning

K = "learn:"  # this page's session keys
JOB = K + "job"
DEFAULTS = {
    K + "methods": ["opdisc", "rspm", "dplr"],
    K + "epsilons": "0.5, 1, 2, 4",
    K + "runs": 3,
    K + "bound": 2,
    K + "D": 4.0,
    K + "tau": 1.0,
    K + "time_limit": 60.0,
    K + "lam": 1e-3,
    K + "balance": True,
    K + "test_fraction": 0.3,
    K + "max_rows": 0,
    K + "fix_seed": False,  # a fixed seed makes the noise reproducible: never the default
    K + "seed": 0,
    K + "delta_custom": False,
    K + "delta": 1e-8,
}


class LearnJob:
    """One evaluation in a daemon thread; the thread never calls Streamlit."""

    def __init__(self, spec: dict) -> None:
        self.spec = spec
        self.cancel_event = threading.Event()
        self.done, self.error, self.cancelled = False, None, False
        self.result = None
        self.t, self.T, self.message = 0, 0, "starting"
        self.started = time.monotonic()
        self.finished = None

    def progress(self, t, T, message) -> None:
        self.t, self.T, self.message = t, T, message

    def elapsed(self) -> float:
        return (self.finished or time.monotonic()) - self.started


def _start(data, methods, epsilons, runs, settings, seed, spec) -> LearnJob:
    job = LearnJob(spec)

    def target():
        try:
            rng = np.random.default_rng(seed)
            job.result = evaluate(
                data, methods, epsilons, runs, settings, rng, progress=job.progress, cancel=job.cancel_event
            )
        except Cancelled:
            job.cancelled = True
        except DPCoreError as exc:
            job.error = str(exc)
        except Exception as exc:  # an unexpected failure is shown as a message, never a traceback
            job.error = f"The run failed unexpectedly ({type(exc).__name__}). Nothing was kept."
        finally:
            job.finished = time.monotonic()
            job.done = True

    threading.Thread(target=target, daemon=True, name="dpcore-learn").start()
    return job


state.init()
for key, value in DEFAULTS.items():
    state.default(key, value)

st.title("Learn a private classifier")
st.caption(
    "Train classifiers with differential privacy by solving the 0/1-loss problem exactly with SCIP "
    "(OPDisc, RSPM, PRSMA) or the logistic surrogate (DP logistic regression), and compare their test "
    "accuracy over ε.  Seeds 000 §III and 003 §3–5."
)

ds = datasource.current_dataset()
if ds is None:
    st.info(
        "No table is ready: load one (and fix its schema) on the Data page.  The bundled Adult sample "
        "is used until then."
    )
    ds = datasource.bundled_dataset()
is_adult = ds.name == datasource.BUNDLED_NAME and ADULT_LABEL in ds.domain.names
st.markdown(f"Table in use: **{md_escape(ds.name)}** — {ds.n:,} rows, {len(ds.domain)} attributes.")

# ------------------------------------------------------------------ label and features
names = ds.domain.names
label_default = ADULT_LABEL if ADULT_LABEL in names else names[-1]
state.default(K + "label", label_default)
if st.session_state[K + "label"] not in names:
    st.session_state[K + "label"] = label_default
c1, c2 = st.columns(2)
label = c1.selectbox(
    "Label column",
    names,
    key=K + "label",
    help="The column to predict. A classifier needs two classes: with more values, say which count as positive.",
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
    help="'name' = one-hot (one column per value but the first); 'name=V1|V2' = 1 if the value is listed; "
    "'name>=X' = 1 if the value (numeric bin's lower edge) is at least X. Binary features keep the MIP small.",
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
c1, c2, c3 = st.columns([3, 2, 1])
methods = c1.multiselect("Methods", list(METHODS), key=K + "methods", format_func=lambda m: METHODS[m].title)
eps_text = c2.text_input("ε values (comma-separated)", key=K + "epsilons")
runs = c3.number_input(
    "Runs each", min_value=1, max_value=30, step=1, key=K + "runs", help="Repeated runs give the error bars."
)
with st.expander("Advanced: grid, δ, solver, split"):
    a1, a2, a3, a4 = st.columns(4)
    a1.number_input(
        "Weight bound B",
        min_value=1,
        max_value=10,
        step=1,
        key=K + "bound",
        help="Integer weights in {-B..B} (in units of τ).",
    )
    a2.number_input(
        "Norm bound D", min_value=0.5, max_value=100.0, key=K + "D", help="||w|| ≤ D. OPDisc's noise grows like D²."
    )
    a3.number_input("Grid step τ", min_value=0.05, max_value=10.0, key=K + "tau")
    a4.number_input("SCIP time limit per call (s)", min_value=0.01, max_value=3600.0, key=K + "time_limit")
    b1, b2, b3, b4 = st.columns(4)
    b1.checkbox("Balanced subset (seed 003 §5)", key=K + "balance")
    b2.number_input("Test fraction", min_value=0.05, max_value=0.9, key=K + "test_fraction")
    b3.number_input("Max rows (0 = all)", min_value=0, step=500, key=K + "max_rows")
    b4.number_input("DP-LR regulariser Λ", min_value=1e-6, max_value=10.0, format="%.6f", key=K + "lam")
    d1, d2, d3 = st.columns(3)
    d1.checkbox("Custom δ (default 1/n² of the training rows)", key=K + "delta_custom")
    d2.number_input(
        "δ",
        min_value=1e-15,
        max_value=0.99,
        format="%.2e",
        key=K + "delta",
        disabled=not st.session_state[K + "delta_custom"],
    )
    d3.checkbox("Fixed seed (demo, reproducible)", key=K + "fix_seed")
    st.number_input("Seed", min_value=0, step=1, key=K + "seed", disabled=not st.session_state[K + "fix_seed"])

st.caption(
    f"Neighbours: {NEIGHBOURS}. Oracle-dependent methods (OPDisc, RSPM) are private only if SCIP "
    "certifies every solution optimal; PRSMA is private whatever the solver does."
)


def _inputs():
    enc = FeatureEncoding.build(
        ds.domain, label, [ln for ln in feature_text.splitlines() if ln.strip()], positive or None
    )
    epsilons = parse_epsilons(eps_text)
    if not methods:
        raise DPCoreError("Choose at least one method.")
    settings = LearnSettings(
        bound=int(st.session_state[K + "bound"]),
        tau=float(st.session_state[K + "tau"]),
        D=float(st.session_state[K + "D"]),
        delta=float(st.session_state[K + "delta"]) if st.session_state[K + "delta_custom"] else None,
        time_limit=float(st.session_state[K + "time_limit"]),
        lam=float(st.session_state[K + "lam"]),
    )
    seed = int(st.session_state[K + "seed"]) if st.session_state[K + "fix_seed"] else None
    rng = np.random.default_rng(seed)
    max_rows = int(st.session_state[K + "max_rows"]) or None
    data = prepare(
        ds,
        enc,
        rng,
        balance=bool(st.session_state[K + "balance"]),
        test_fraction=float(st.session_state[K + "test_fraction"]),
        max_rows=max_rows,
    )
    figures = plan(data, list(methods), epsilons, settings, ds.domain)
    return enc, epsilons, settings, rng, data, figures


def _charge_first(figures: list[dict], runs: int) -> bool:
    """Charge every planned run to the workspace ledger before any of them reads the data."""
    import uuid

    from dpcore.errors import BudgetError

    batch = uuid.uuid4().hex[:8]
    try:
        for f in figures:
            if f["privacy"] == "none":
                continue
            for r in range(runs):
                state.ledger().reserve(
                    dataset=ds.ledger_key,
                    name=ds.name,
                    n=ds.n,
                    run=f"learn-{batch}-{f['method']}-{f['epsilon']:g}-{r}",
                    mechanism=f"learn:{f['method']}",
                    epsilon=f["epsilon"],
                    delta=float(f.get("delta") or 0.0),
                    note="private learning",
                )
    except BudgetError as exc:
        show_error(exc)
        return False
    return True


job: LearnJob | None = st.session_state.get(JOB)
running = job is not None and not job.done
try:
    enc, epsilons, settings, rng, data, figures = _inputs()
except DPCoreError as exc:
    show_error(exc)
    enc = None
if enc is not None:
    total_calls = sum(f["oracle_calls"] for f in figures) * int(runs)
    st.markdown(
        f"**Before running:** {data.n_train:,} training rows (private input), {len(data.y_test):,} test rows "
        f"(evaluation only), {enc.d} binary features including the bias; about **{total_calls:,} oracle "
        "calls** in total."
    )
    with st.expander("Public pre-run figures per method and ε"):
        st.dataframe(pd.DataFrame(figures), hide_index=True)
    if st.button("Run", type="primary", disabled=running, icon=":material/play_arrow:") and _charge_first(
        figures, int(runs)
    ):
        seed = int(rng.integers(0, 2**63 - 1))
        st.session_state[JOB] = _start(
            data,
            list(methods),
            epsilons,
            int(runs),
            settings,
            seed,
            {"encoding": enc, "methods": list(methods), "epsilons": epsilons, "data": data},
        )
        job, running = st.session_state[JOB], True

if running:

    @st.fragment(run_every=0.5)
    def live():
        j = st.session_state.get(JOB)
        if j is None or j.done:
            st.rerun()
        frac = min(1.0, j.t / j.T) if j.T else 0.0
        st.progress(frac, text=f"Run {j.t} of {j.T or '?'} — {md_escape(j.message, 80)}")
        st.caption(f"Elapsed {j.elapsed():.1f} s")
        st.button("Cancel", on_click=j.cancel_event.set, icon=":material/stop:")

    live()

# ------------------------------------------------------------------ results
job = st.session_state.get(JOB)
if job is not None and job.done:
    if job.cancelled:
        st.info("The run was cancelled: no model was kept.")
    elif job.error:
        show_error(job.error)
    elif job.result is not None:
        ev = job.result
        summary = pd.DataFrame(ev.summary())
        st.subheader("Test accuracy over ε")
        st.caption(
            "Internal evaluation on held-out rows of your table: not differentially private, not for "
            "publication. Every run touched the training rows: the whole comparison costs the sum of all "
            "runs' ε (basic composition), and each run is charged to the session's privacy ledger in the "
            "sidebar; a single model trained once has the ε it states."
        )
        fig = go.Figure()
        for m in summary["method"].unique():
            s = summary[summary["method"] == m]
            if m == "nonprivate":
                fig.add_hline(
                    y=float(s["accuracy_mean"].iloc[0]),
                    line_dash="dot",
                    annotation_text="non-private optimum (reference)",
                )
                continue
            s = s.dropna(subset=["accuracy_mean"])
            fig.add_trace(
                go.Scatter(
                    x=s["epsilon"],
                    y=s["accuracy_mean"],
                    mode="lines+markers",
                    name=METHODS[m].title,
                    error_y=dict(type="data", array=s["accuracy_std"].fillna(0.0)),
                )
            )
        eps_ticks = sorted(e for e in summary["epsilon"].dropna().unique())
        fig.update_layout(
            xaxis_title="ε (log scale)",
            yaxis_title="test accuracy",
            xaxis_type="log",
            height=420,
            xaxis=dict(tickvals=eps_ticks, ticktext=[f"{e:g}" for e in eps_ticks]),
            legend=dict(orientation="h", yanchor="top", y=-0.2),
            margin=dict(t=20),
        )
        st.plotly_chart(fig, use_container_width=True)
        st.dataframe(summary, hide_index=True)
        recs = pd.DataFrame(
            [
                {k: r.get(k) for k in ("method", "epsilon", "run", "seconds", "status", "certified", "solve_seconds")}
                for r in ev.records
            ]
        )
        st.subheader("Run time and solver statistics")
        times = go.Figure()
        for m in recs["method"].unique():
            times.add_trace(go.Box(y=recs[recs["method"] == m]["seconds"], name=METHODS[m].title))
        times.update_layout(yaxis_title="seconds per run", height=320)
        st.plotly_chart(times, use_container_width=True)
        st.dataframe(
            recs.groupby(["method", "status"], dropna=False)
            .agg(
                runs=("run", "count"),
                median_solve_seconds=("solve_seconds", "median"),
                max_solve_seconds=("solve_seconds", "max"),
            )
            .reset_index(),
            hide_index=True,
        )
        fails = ev.failures()
        if fails:
            show_warning(
                f"{len(fails)} run(s) ended without SCIP certifying optimality "
                f"({', '.join(sorted({str(f['status']) for f in fails}))}). For these runs of OPDisc/RSPM "
                "the privacy guarantee does NOT hold; their models are marked so in the download."
            )
        bottoms = int(summary["bottom_outputs"].sum())
        if bottoms:
            st.info(f"PRSMA returned ⊥ (no output) in {bottoms} run(s): its private failure test did not pass.")
        st.subheader("Download a model")
        options = [(r["method"], r["epsilon"], r["run"]) for r in ev.records if r.get("model") is not None]
        if options:
            pick = st.selectbox(
                "Model",
                options,
                format_func=lambda o: (
                    f"{METHODS[o[0]].title}, ε = {'—' if o[1] is None else f'{o[1]:g}'}, run {o[2] + 1}"
                ),
                key=K + "pick",
            )
            rec = next(r for r in ev.records if (r["method"], r["epsilon"], r["run"]) == tuple(pick))
            st.download_button(
                "Download model JSON",
                rec["model"].to_json(job.spec["encoding"]),
                file_name=f"{pick[0]}_model.json",
                mime="application/json",
                icon=":material/download:",
            )
