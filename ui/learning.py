"""The Learn page's logic: its choices, the charge of a comparison, the run on the server, the model files.

A comparison of private learners is a grid: every chosen method, at every ε, several times.  Each private
training reads the training rows and is charged separately (basic composition: the grid costs the sum), so the
page states the whole charge before anything runs and asks for an explicit confirmation when it is more than one
training's worth (issue 12, "cost before spend").

The run is one workspace run of kind ``"learn"`` (``ui.jobs``): it belongs to the server process, survives a
reload, and any session can watch or cancel it.  Each training is charged to the ledger under that run's id
*right before it reads the data* -- the first one before the balanced set's DP count, which every training pays
inside its ε -- so a grid cancelled half-way is charged for what ran, never for what did not.  Before the first
charge the whole grid is checked against the dataset's cap, so a grid that cannot finish never starts.

What the run keeps: the INTERNAL evaluation (test accuracies on private rows: not private, not for publication)
and one model file per private training, each carrying its guarantee ("differential privacy", "none" for a
fixed-seed demo, "not established" when the solver did not certify) and marked as picked after seeing test
accuracy -- anything downloaded from this page was, since the page shows accuracies beside the models.  The
non-private reference is an internal figure only: it is never kept or offered as a model.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass

import numpy as np

from dpcore.errors import DPCoreError

from . import state

K = state.KEEP + "learn:"  # this page's choices: kept across page switches and reloads
LAST_RUN = K + "last_run"
FIX_SEED = K + "fix_seed"
SEED = K + "seed"
SESSION_MARK = "learn:session"  # not kept: a new session never starts with a fixed seed
DEFAULTS = {
    K + "methods": ["opdisc", "rspm", "dplr"],
    K + "epsilons": "0.5, 1, 2, 4",
    K + "runs": 3,
    K + "bound": 2,
    K + "D": 4.0,
    K + "tau": 1.0,
    K + "time_limit": 60.0,
    K + "lam": 1e-3,
    K + "balance": False,  # the whole training split: its size is public (a balanced set costs a DP count)
    K + "test_fraction": 0.3,
    K + "max_rows": 0,
    FIX_SEED: False,  # a fixed seed makes the noise reproducible: never the default
    SEED: 0,
    K + "delta_custom": False,
    K + "delta": 1e-10,
}
MODEL_PREFIX = "model_"
EVALUATION_FILE = "INTERNAL_learning_evaluation_not_for_publication.json"


def init() -> None:
    for key, value in DEFAULTS.items():
        state.default(key, value)
    if SESSION_MARK not in st_state():
        # choices come back after a reload, but never a fixed seed: a demo is picked on purpose each time
        st_state()[SESSION_MARK] = True
        st_state()[FIX_SEED] = False


def st_state():
    import streamlit as st

    return st.session_state


# ------------------------------------------------------------------ the charge of a grid
@dataclass(frozen=True)
class Training:
    """One training of the grid, in the order :func:`dpcore.learning.evaluate.evaluate` runs them."""

    index: int
    method: str
    epsilon: float
    run: int
    charge_epsilon: float
    charge_delta: float

    @property
    def private(self) -> bool:
        return self.method != "nonprivate"


def trainings(methods: list[str], epsilons: list[float], runs: int, settings, n_table: int) -> list[Training]:
    """Every training of the grid with its (ε, δ) charge on the table, in evaluate()'s order."""
    from dpcore.learning.evaluate import spent

    out = []
    for m in methods:
        for eps in [epsilons[0]] if m == "nonprivate" else epsilons:
            for r in range(1 if m == "nonprivate" else runs):
                e, d = spent(m, eps, settings, n_table)
                out.append(Training(len(out), m, float(eps), r, e, d))
    return out


def grid_charge(grid: list[Training]) -> dict:
    private = [t for t in grid if t.private]
    return {
        "runs": len(private),
        "epsilon": math.fsum(t.charge_epsilon for t in private),
        "delta": math.fsum(t.charge_delta for t in private),
        "max_epsilon": max((t.charge_epsilon for t in private), default=0.0),
    }


def preview(ledger, dataset, grid: list[Training]) -> dict:
    """The dataset's total after the whole grid (both compositions, like ``Ledger.preview`` for one run) and
    whether the cap admits it."""
    from dpcore.privacy.ledger import Entry, compose, default_delta_cap, within_cap

    entries = [Entry(e["epsilon"], e["delta"], e["rho"]) for e in ledger.entries(dataset.ledger_key)]
    planned = [Entry(t.charge_epsilon, t.charge_delta) for t in grid if t.private]
    after = compose([*entries, *planned], dataset.n)
    eps_cap, delta_cap = ledger.cap(dataset.ledger_key)
    delta_cap = delta_cap if delta_cap is not None else default_delta_cap(dataset.n)
    after.update(cap_epsilon=eps_cap, cap_delta=delta_cap, within=within_cap(after, eps_cap, delta_cap))
    return after


def confirmation_key(charge: dict, spec: dict) -> str:
    """A confirmation belongs to one plan: any change to what would be charged asks again."""
    text = json.dumps({"charge": charge, "spec": spec}, sort_keys=True, default=str)
    return "learn:confirm:" + hashlib.sha256(text.encode()).hexdigest()[:16]


# ------------------------------------------------------------------ the run
def start(
    *,
    dataset,
    encoding,
    methods: list[str],
    epsilons: list[float],
    runs: int,
    settings,
    balance: bool,
    test_fraction: float,
    max_rows: int | None,
    seed: int | None,
    request_key: str,
    schema: dict | None = None,
    workspace=None,
) -> str:
    """Start the grid as a recorded ``learn`` run on the server; returns its run id (see the module docstring)."""
    from dpcore.learning.evaluate import METHODS

    from . import jobs

    workspace = workspace if workspace is not None else state.workspace()  # resolved here, on the script thread
    grid = trainings(methods, epsilons, runs, settings, dataset.n)
    charge = grid_charge(grid)
    demo = seed is not None
    names = ", ".join(METHODS[m].title.split(" (")[0] for m in methods)
    label = f"{'DEMO · ' if demo else ''}Learn: {names} at ε = {', '.join(f'{e:g}' for e in epsilons)}"
    params = {
        "methods": list(methods),
        "epsilons": list(epsilons),
        "runs": int(runs),
        "settings": settings.to_dict(),
        "balance": bool(balance),
        "test_fraction": float(test_fraction),
        "max_rows": max_rows,
        "encoding": encoding.to_dict(),
        "trainings": charge["runs"],
        "schema": schema,
    }

    spec = GridSpec(
        dataset=dataset,
        encoding=encoding,
        grid=grid,
        methods=list(methods),
        epsilons=list(epsilons),
        runs=int(runs),
        settings=settings,
        balance=bool(balance),
        test_fraction=float(test_fraction),
        max_rows=max_rows,
        seed=seed,
        schema=schema,
    )

    def target(progress, cancel, run_id):
        return _run(run_id, progress, cancel, spec, workspace)

    return jobs.start(
        "learn",
        label[:200],
        dataset,
        target,
        request_key=request_key,
        mechanism="learn",
        params=params,
        epsilon=charge["epsilon"],
        delta=charge["delta"],
        demo=demo,
        workspace=workspace,
    )


@dataclass(frozen=True)
class GridSpec:
    """What one learn run trains (all public choices; ``dataset`` is the private table)."""

    dataset: object
    encoding: object
    grid: list
    methods: list
    epsilons: list
    runs: int
    settings: object
    balance: bool
    test_fraction: float
    max_rows: int | None
    seed: int | None
    #: Where the features' schema came from (:func:`dpcore.learning.model.schema_statement`); None: not stated.
    schema: dict | None = None


def _run(run_id: str, progress, cancel, spec: GridSpec, workspace) -> dict:
    from dpcore.learning.evaluate import METHODS, evaluate
    from dpcore.learning.features import prepare
    from dpcore.privacy.ledger import BudgetExceeded, Ledger, over_cap_message
    from dpcore.privacy.samplers import Randomness

    dataset, encoding, grid, seed = spec.dataset, spec.encoding, spec.grid, spec.seed
    ledger = Ledger(workspace)
    after = preview(ledger, dataset, grid)
    if after["within"] is None:  # the whole grid must fit: never start one that would stop at the cap
        asked = grid_charge(grid)
        before = ledger.total(dataset.ledger_key)
        raise BudgetExceeded(
            over_cap_message(
                dataset.name, before, after["cap_epsilon"], after["cap_delta"], asked["epsilon"], asked["delta"]
            )
        )
    charged: set[int] = set()

    def charge(t: Training) -> None:
        if not t.private or t.index in charged:
            return
        ledger.reserve(
            dataset=dataset.ledger_key,
            name=dataset.name,
            n=dataset.n,
            run=run_id,
            mechanism=f"learn:{t.method}",
            epsilon=t.charge_epsilon,
            delta=t.charge_delta,
            accountant="basic composition over the grid's trainings",
            note=f"{METHODS[t.method].title}, ε = {t.epsilon:g}, training {t.run + 1}",
        )
        charged.add(t.index)

    def on_progress(i, total, message="", info=None):
        if total != len(grid):
            raise DPCoreError(
                f"The learning grid has {total} trainings where {len(grid)} were charged for; nothing more runs."
            )
        progress(i, total, message, info)  # raises Cancelled first when a cancel was asked
        if i < total:
            charge(grid[i])

    # the split protects nothing (public random positions); a demo fixes it too so that it is reproducible
    rng = np.random.default_rng(seed)
    data = prepare(
        dataset, encoding, rng, balance=spec.balance, test_fraction=spec.test_fraction, max_rows=spec.max_rows
    )
    first_private = next((t for t in grid if t.private), None)
    if first_private is not None:
        charge(first_private)  # before the balanced set's DP count and before the first training
    noise = Randomness(seed) if seed is not None else None
    ev = evaluate(
        data, spec.methods, spec.epsilons, spec.runs, spec.settings, noise, progress=on_progress, cancel=cancel
    )
    report = ev.to_dict()
    report["schema"] = spec.schema
    files = {EVALUATION_FILE: json.dumps(report, indent=2, default=float).encode()}
    # With one private training there is nothing to choose between: its file is not picked by test accuracy.
    # With more, the page shows every accuracy beside its file, so each file says it was picked that way.
    chosen_by_accuracy = sum(1 for t in spec.grid if t.private) > 1
    for rec in ev.records:
        model = rec.get("model")
        if model is None or rec["method"] == "nonprivate":
            continue
        files[model_file_name(rec["method"], rec["epsilon"], rec["run"])] = model.to_json(
            encoding, selected_after_test_accuracy=chosen_by_accuracy, schema=spec.schema
        ).encode()
    return {"evaluation": report, "artifacts": files}


def model_file_name(method: str, epsilon: float, run: int) -> str:
    return f"{MODEL_PREFIX}{method}_eps{epsilon:g}_run{run + 1}.json"


def download_name(model: dict) -> str:
    """The file name a user saves: it says when the model promises no privacy."""
    guarantee = model.get("guarantee")
    prefix = {"none": "DEMO_", "not established": "NOT_ESTABLISHED_"}.get(guarantee, "")
    if guarantee == "none" and (model.get("schema") or {}).get("covered") is False:
        prefix = "NOT_PRIVATE_schema_"
    eps = model.get("epsilon")
    return f"{prefix}{model.get('method', 'model')}_eps{'' if eps is None else f'{eps:g}'}_model.json"


def models_of(run: dict) -> list[dict]:
    """The model files a finished learn run kept (read from its artifacts), with their record's figures."""
    from pathlib import Path

    out = []
    records = {(r["method"], r["epsilon"], r["run"]): r for r in ((run.get("evaluation") or {}).get("records") or [])}
    for name, path in sorted((run.get("artifacts") or {}).items()):
        if not name.startswith(MODEL_PREFIX):
            continue
        try:
            text = Path(path).read_text(encoding="utf-8")
            model = json.loads(text)
        except (OSError, ValueError):
            continue
        if model.get("method") == "nonprivate":  # never offered, whatever a file says
            continue
        rec = next(
            (
                r
                for (m, e, _), r in records.items()
                if m == model.get("method") and e == model.get("epsilon") and name == model_file_name(m, e, r["run"])
            ),
            {},
        )
        out.append({"file": name, "text": text, "model": model, "record": rec})
    return out
