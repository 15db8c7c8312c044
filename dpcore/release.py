"""Run one mechanism end to end: Dataset + Workload + budget -> :class:`Release`.

The release keeps two reports apart (see :mod:`dpcore.report`):

* the **public release card** -- mechanism, parameters, ε, δ, the neighbour
  relation, the accountant, the domain and its provenance.  Only public inputs and
  quantities derived from them.  Never the RNG seed, never an error figure;
* the **internal evaluation** -- errors measured on the private data, the per-round
  trace and oracle statistics.  Not differentially private: for the data owner only.

A run that fails or is cancelled raises; no Release (and no card) exists for it and
nothing is written to the ledger.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .errors import BudgetError, DPCoreError
from .mechanisms import registry
from .mechanisms.base import Budget, MechanismResult, RunContext
from .privacy import PrivacyLedger, Spend, check_budget, default_delta
from .privacy.samplers import Randomness
from .report import evaluation_report, release_card
from .workload import Workload, uniform_baseline


@dataclass
class Release:
    mechanism: str
    params: dict
    budget: Budget
    delta_defaulted: bool
    result: MechanismResult
    dataset_name: str
    dataset_id: str
    n: int
    workload: Workload
    true_answers: np.ndarray
    released_answers: np.ndarray | None
    seconds: float
    card: dict
    evaluation: dict
    ledger_entries: list[Spend] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def rows(self) -> np.ndarray | None:
        return self.result.rows

    def decoded_rows(self, numeric: str = "interval", rng: np.random.Generator | None = None) -> pd.DataFrame | None:
        if self.result.rows is None:
            return None
        return self.workload.domain.decode(self.result.rows, numeric, rng)

    def synthetic_csv(self, numeric: str = "interval") -> bytes:
        df = self.decoded_rows(numeric)
        if df is None:
            return answers_table(self.workload, self.released_answers).to_csv(index=False).encode()
        return df.to_csv(index=False).encode()

    def synopsis_json(self) -> dict | None:
        """The released synopsis (public: DP-derived numbers and public parameters only)."""
        return None if self.result.synopsis is None else self.result.synopsis.to_json()

    def errors(self) -> np.ndarray:
        return np.abs(self.true_answers - self.released_answers)


def answers_table(workload: Workload, answers: np.ndarray) -> pd.DataFrame:
    """Released answers as a long table: marginal, cell labels, answer."""
    recs = []
    for j, m in enumerate(workload.marginals):
        labels = [workload.domain[a].labels() for a in m]
        table = workload.marginal_table(answers, j)
        for cell in np.ndindex(table.shape):
            recs.append(
                {
                    "marginal": workload.marginal_name(j),
                    "cell": " ∧ ".join(
                        f"{workload.domain.names[a]}={labels[i][c]}" for i, (a, c) in enumerate(zip(m, cell))
                    ),
                    "answer": float(table[cell]),
                }
            )
    return pd.DataFrame(recs)


#: Uniform class members the internal evaluation samples for mechanisms over an implicit
#: query class: by the rule of three, with probability 0.95 at most 0.03% of the class
#: errs more than the sampled maximum.
CLASS_ERROR_SAMPLES = 10_000


def class_error(dataset, result: MechanismResult, k: int) -> dict | None:
    """INTERNAL: error on sampled members of "all conjunctions of width ≤ k" (seed 000 §IV,
    seed 002): the class is never enumerated.  The sampling randomness is the evaluation's
    own (fixed seed, so runs compare on the same queries) and touches no released output."""
    from .query_classes import RowsAnswerer, sampled_class_error

    if result.synopsis is not None:
        answerer = result.synopsis
    elif result.rows is not None:
        answerer = RowsAnswerer(result.rows, dataset.domain, result.weights)
    else:
        return None
    return sampled_class_error(dataset, answerer, k, CLASS_ERROR_SAMPLES, np.random.default_rng(2024))


def resolve_budget(epsilon: float, delta: float | None, n: int) -> tuple[Budget, bool, list[str]]:
    defaulted = delta is None
    if defaulted:
        delta = default_delta(n)
    warnings = check_budget(epsilon, delta, n)
    return Budget(float(epsilon), float(delta)), defaulted, warnings


def plan_release(
    dataset_n: int, workload: Workload, mechanism: str, epsilon: float, delta: float | None, params: dict | None = None
) -> dict:
    """Public pre-run figures for the UI/CLI (raises if the budget cannot work)."""
    mech_cls = registry.get(mechanism)
    budget, _, _ = resolve_budget(epsilon, delta, dataset_n)
    return mech_cls().plan(dataset_n, workload, budget, mech_cls.validate_params(params))


def run_release(
    dataset,
    workload: Workload,
    mechanism: str,
    epsilon: float,
    delta: float | None = None,
    params: dict | None = None,
    *,
    seed: int | None = None,
    progress=None,
    cancel: threading.Event | None = None,
    oracle_options: dict | None = None,
    executor=None,
    ledger: PrivacyLedger | None = None,
    n_rows: int | None = None,
    class_width: int | None = None,
) -> Release:
    """Run ``mechanism`` and build the release.  ``seed=None`` draws from OS entropy.

    ``class_width`` = k also evaluates the release on the implicit class of all
    conjunctions of width ≤ k (internal, sampled); mechanisms that answer that class
    directly (a parameter ``k``) get k unless ``params`` sets it.
    """
    mech_cls = registry.get(mechanism)
    if workload.domain != dataset.domain:
        raise DPCoreError("The workload was built for a different schema than the dataset; rebuild the workload.")
    budget, defaulted, warnings = resolve_budget(epsilon, delta, dataset.n)
    params = dict(params or {})
    if class_width is not None and any(p.name == "k" for p in mech_cls.parameters):
        params.setdefault("k", class_width)
    vparams = mech_cls.validate_params(params)
    if n_rows is not None:
        if "rows" not in vparams:
            raise DPCoreError(f"{mech_cls.title} does not let you choose the number of rows.")
        vparams["rows"] = mech_cls.param("rows").validate(n_rows)
    mech = mech_cls()
    mech.plan(dataset.n, workload, budget, vparams)  # fail fast on impossible budgets
    ctx = RunContext(
        noise=Randomness(seed),  # None -> cryptographic; a seed makes the run a demo
        progress=progress,
        cancel=cancel,
        oracle_options=dict(oracle_options or {}),
        executor=executor,
    )
    t0 = time.perf_counter()
    result = mech.run(dataset, workload, budget, vparams, ctx)
    seconds = time.perf_counter() - t0
    _check_spent(result, budget)

    true = workload.answers(dataset.codes)
    if result.rows is not None:
        released = workload.answers(result.rows, result.weights)
    elif result.answers is not None:
        released = np.asarray(result.answers, dtype=float)
    else:
        released = None
    card = release_card(
        mech_cls,
        vparams,
        budget,
        defaulted,
        result,
        dataset,
        workload,
        n_rows_released=(None if result.rows is None else int(result.rows.shape[0])),
    )
    evaluation = evaluation_report(
        mech_cls,
        workload,
        true,
        released,
        result,
        seconds,
        baselines={"zeros": np.zeros_like(true), "uniform": uniform_baseline(workload)},
    )
    # A mechanism with its own class (parameter k) is measured on that class; others on the one asked.
    class_width = vparams.get("k", class_width)
    if class_width is not None and mech_cls.output in ("synopsis", "rows"):
        evaluation["class_error"] = class_error(dataset, result, int(class_width))
    rel = Release(
        mechanism=mech_cls.name,
        params=vparams,
        budget=budget,
        delta_defaulted=defaulted,
        result=result,
        dataset_name=dataset.name,
        dataset_id=dataset.fingerprint,
        n=dataset.n,
        workload=workload,
        true_answers=true,
        released_answers=released,
        seconds=seconds,
        card=card,
        evaluation=evaluation,
        warnings=warnings,
    )
    if ledger is not None:
        for s in result.spends:
            rel.ledger_entries.append(
                ledger.record(Spend(rel.dataset_id, mech_cls.name, s.epsilon, s.delta, s.rho, s.note))
            )
    return rel


def _check_spent(result: MechanismResult, budget: Budget) -> None:
    """A mechanism may never report spending more than it was given."""
    tol = 1e-9 * max(1.0, budget.epsilon)
    if result.epsilon_spent > budget.epsilon + tol or result.delta_spent > budget.delta + 1e-15:
        raise BudgetError(
            f"Internal accounting error: spent (ε={result.epsilon_spent}, δ={result.delta_spent}) "
            f"exceeds the budget (ε={budget.epsilon}, δ={budget.delta}); nothing was released."
        )
