"""The teaching page's demos: the bundled (public) sample, a small public workload, a fixed seed, a promised time.

A demo is what its label says: a real run of the mechanism, on the bundled Adult sample, that finishes within
:data:`PROMISED_SECONDS`.  It draws its noise from a fixed seed, so it is a DEMO (its card says the guarantee is
"none") and it is charged to the sample's ledger like any run that reads data.  A mechanism is offered only when
its teaching preset can keep that promise: its public plan must work at ε = 1 on this workload and need at most
:data:`MAX_DEMO_CALLS` solver calls; the others are listed with the reason (OracleQuery-PRSMA, for one, needs
about 1.4e17 solver calls there).  ``tests/test_app_teaching.py`` runs every offered demo against the promise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
import streamlit as st

from dpcore.errors import DPCoreError
from dpcore.workload import Workload

from . import datasource
from .mechanisms import for_workloads
from .text import fmt_number

K = 2
N_MARGINALS = 8
WORKLOAD_SEED = 0
DEMO_SEED = 0
EPSILON = 1.0
TIME_LIMIT = 5.0  # seconds per solver call
#: What the page promises for every demo it offers (measured well below on a loaded 2-core machine).
PROMISED_SECONDS = 30.0
#: A preset that plans more solver calls than this cannot keep the promise: it is not offered.
MAX_DEMO_CALLS = 5_000
PLANNED_CALL_KEYS = ("oracle_calls", "oracle_calls_estimate", "oracle_calls_at_most", "lp_calls_at_most")

#: The game-playing mechanisms come first: they show the data/query player game best.
PREFERRED = ("dualquery", "fem")


#: What the page says of the mechanisms in general: words a teacher can say aloud.
INTRODUCTION = (
    "Every mechanism here makes fake records from a table of real people. It is given a privacy budget ε and a "
    "set of questions — counts over two or three columns, such as how many women under thirty have a degree — "
    "and it tries to make the fake records answer those questions the way the real ones do, while adding just "
    "enough randomness that nobody can tell from the output whether any one person was in the table. The "
    "solver (SCIP) does the hard search: finding the record that helps most."
)
#: Per mechanism: what it does, in plain spoken words, and what one row of its round-by-round table is.
SPOKEN = {
    "projection": (
        "It looks at the real data once: it counts every chosen question with a little random noise added. "
        "After that it never touches the real data again. It starts from a few records and, step by step, asks "
        "the solver for the one record that most reduces the gap between the fake counts and the noisy counts, "
        "and mixes it in. There is no game here, just a search that gets closer each step.",
        "each row is one step of the search: how far the fake records' counts still are from the noisy counts",
    ),
    "projection_adaptive": (
        "Instead of counting every question at once, it picks, a few at a time, the questions the fake data gets "
        "most wrong — a noisy choice — counts only those with noise, and moves the fake records to match. Each "
        "pick and each count spends a little of the budget.",
        "each row is one round: the questions picked and how far the fake data still is",
    ),
    "dualquery": (
        "Think of a game between two players. The question player looks at the real data, through noise, and "
        "puts weight on the questions the fake data answers worst. The data player answers with one fake record "
        "that does best on those questions, found by the solver. Round after round, the fake records pile up; "
        "together they are the release.",
        "each row is one round: the questions the question player weighted and how far the fake data still is",
    ),
    "dqrs": (
        "The same game as DualQuery, played more thriftily: the question player reuses the questions it already "
        "drew when they are still good ones, so each round costs less of the budget.",
        "each row is one round: the questions in play and how far the fake data still is",
    ),
    "fem": (
        "A game between two players. Each round the question player picks, with a noisy choice, the question the "
        "fake data answers worst. The data player then asks the solver for a record that follows all the "
        "questions picked so far, with random penalties added so that no single person tips the answer.",
        "each row is one round: the question picked and how far the fake data still is",
    ),
    "sepfem": (
        "Like FEM, but the data player's randomness is a set of made-up extra rows rather than penalties; the "
        "question player still picks the worst-answered question each round with a noisy choice.",
        "each row is one round: the question picked and how far the fake data still is",
    ),
    "mwem": (
        "It keeps a weight on every possible record. Each round it picks, with a noisy choice, the question the "
        "weights answer worst, counts it on the real data with noise, and shifts weight towards records that fit "
        "that count.",
        "each row is one round: the question picked and how far the weighted records still are",
    ),
}


def spoken(mechanism) -> tuple[str, str]:
    """(what the mechanism does, what a row of its trace is), in words a teacher can say aloud."""
    default = (mechanism.summary or mechanism.title, "each row is one round of the mechanism")
    return SPOKEN.get(mechanism.name, default)


@dataclass
class Demo:
    mechanism: type
    params: dict
    plan: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.mechanism.name

    @property
    def label(self) -> str:
        return f"DEMO · {self.mechanism.title} (teaching preset)"

    @property
    def planned_calls(self) -> int | None:
        for key in PLANNED_CALL_KEYS:
            value = self.plan.get(key)
            if isinstance(value, (int, float)):
                return int(value)
        return None


def teaching_dataset():
    return datasource.bundled_dataset()


@st.cache_resource(show_spinner=False)
def teaching_workload() -> Workload:
    """Public: 8 random 2-way marginals of the bundled sample (selection seed 0, at most n cells)."""
    ds = datasource.bundled_dataset()
    return Workload.random_kway(ds.domain, K, N_MARGINALS, seed=WORKLOAD_SEED, max_cells=ds.n)


def _check(mech_cls, n: int, workload: Workload) -> Demo | str:
    """The mechanism's demo, or the reason its preset cannot keep the promise."""
    from dpcore.release import plan_release

    try:
        params = mech_cls.validate_params(dict(mech_cls.teaching_preset))
        plan = plan_release(n, workload, mech_cls.name, EPSILON, None, params)
    except DPCoreError as exc:
        first = str(exc).split(". ")[0].rstrip(".")
        return f"its preset cannot run here at ε = {EPSILON:g}: {first}."
    demo = Demo(mech_cls, params, plan)
    calls = demo.planned_calls
    if calls is not None and calls > MAX_DEMO_CALLS:
        return f"its preset plans {fmt_number(calls)} solver calls, too many for a live demo."
    return demo


@st.cache_resource(show_spinner=False)
def demos() -> tuple[list[Demo], dict[str, str]]:
    """(the demos offered, {mechanism title: why it is not offered}), from the registry's teaching presets."""
    ds = teaching_dataset()
    workload = teaching_workload()
    offered, left_out = [], {}
    for mech_cls in for_workloads()[0]:
        if not mech_cls.teaching_preset:
            continue
        found = _check(mech_cls, ds.n, workload)
        if isinstance(found, Demo):
            offered.append(found)
        else:
            left_out[mech_cls.title] = found
    rank = {name: i for i, name in enumerate(PREFERRED)}
    offered.sort(key=lambda d: rank.get(d.name, len(PREFERRED)))
    return offered, left_out


def start(demo: Demo, request_key: str, workspace=None) -> str:
    """Start the demo as a recorded, charged run on the server (see ui.jobs); returns its run id."""
    from . import jobs

    return jobs.start_release(
        dataset=teaching_dataset(),
        workload=teaching_workload(),
        mechanism=demo.name,
        epsilon=EPSILON,
        delta=None,
        params=demo.params,
        seed=DEMO_SEED,
        label=demo.label,
        request_key=request_key,
        kind="teaching",
        time_limit=TIME_LIMIT,
        executor_spec="serial",
        workspace=workspace,
    )


def latest_run(mechanism: str, workspace) -> dict | None:
    """The newest finished teaching run of ``mechanism`` in the workspace (any session's)."""
    from dpcore.runs import RunStore

    store = RunStore(workspace)
    for row in store.list(kind="teaching", light=True):
        if row["mechanism"] == mechanism and row["status"] == "done":
            return store.get(row["id"])
    return None


def trace_frame(evaluation: dict) -> pd.DataFrame:
    rows = [{k: v for k, v in r.items() if not isinstance(v, (list, dict))} for r in evaluation.get("trace") or []]
    return pd.DataFrame(rows)


def ledger_steps(entries: list[dict]) -> pd.DataFrame:
    """The run's privacy charges in order, with the running total (basic composition)."""
    rows, total = [], 0.0
    for i, e in enumerate(entries, 1):
        total += float(e["epsilon"])
        rows.append(
            {
                "step": i,
                "what": e.get("note") or e.get("mechanism"),
                "ε": float(e["epsilon"]),
                "δ": float(e["delta"]),
                "ρ (zCDP)": float("nan") if e.get("rho") is None else float(e["rho"]),
                "ε so far (basic)": total,
            }
        )
    return pd.DataFrame(rows)
