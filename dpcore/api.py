"""The library face: :class:`Synthesizer`, in the style of smartnoise-synth and SDV.

::

    import pandas as pd, dpcore
    synth = dpcore.Synthesizer(epsilon=1.0)                    # the default ("auto"), or any registered mechanism
    synth.fit(pd.read_csv("people.csv"))                       # the schema: declared, else discovered privately
    df = synth.sample()                                        # a DataFrame in the input's shape
    synth.card                                                 # the public release card (a dict)
    synth.evaluate(real_df)                                    # INTERNAL fidelity report (not private)

It keeps the engine's separations: the card is public; the evaluation is internal and computed only when asked;
``fit`` charges the workspace's privacy ledger (``workspace=``, else ``$DPCORE_WORKSPACE``, else a per-user data
folder) before it reads the data, and records the run there (the app lists it).
"""

from __future__ import annotations

import warnings as _warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import DPCoreError, DPCoreWarning


def list_mechanisms() -> list[dict]:
    """Every registered mechanism: name, title, paper, what it outputs, whether its privacy survives a solver
    failure, whether it is the recommended one, and its parameters."""
    from .mechanisms import registry

    return [m.describe() for m in registry.all_mechanisms()]


def load_schema(path: str | Path):
    """A declared schema from a file: a schema JSON saved by dpcore (``Domain.to_json``; ``{column: size}`` for
    integer-coded data) as a :class:`dpcore.domain.Domain` -- complete: columns it does not list are left out --
    and anything else ``--schema`` reads as the CLI reads it (:func:`dpcore.proposal.read_schema_file`): a proposal
    of ``dpcore schema --out`` (its excluded columns, its ``complete``), a partial schema, a CSV codebook."""
    from .domain import Domain
    from .errors import DomainError
    from .proposal import read_schema_file

    schema = read_schema_file(path)
    if str(path).lower().endswith(".csv") or not isinstance(schema, dict) or "complete" in schema:
        return schema
    try:
        return Domain.from_dict(schema)
    except DomainError:
        return schema  # a partial schema (entries that are not whole attributes): declared field by field


class Synthesizer:
    """Fit a differentially private synthesizer to a table and sample synthetic rows from it.

    ``mechanism`` is a registry name (:func:`list_mechanisms`) or "auto" (the default: the projection of the
    workload given; with none given, the plan :func:`dpcore.release.default_release_plan` fits to n and ε, said on
    the card's ``workload.chosen_by``); ``epsilon``/``delta`` the privacy budget (δ
    defaults to 1/n²); ``workload`` the marginals to preserve (a :class:`dpcore.workload.Workload`, or a dict
    ``{"k": 2, "marginals": 32, "seed": 0}``; default: one that fits the table); ``params`` the mechanism's
    parameters.  ``schema`` declares what is public (a :class:`dpcore.domain.Domain`, a schema dict — possibly
    partial — or a path to a schema JSON): declared fields cost nothing, everything else is discovered under
    differential privacy from ``schema_share`` of the budget; ``roles`` confirms column roles
    (``{"age": "integer", "id": "excluded"}``).  ``schema_from_data=True`` reads the schema off the data WITHOUT
    privacy (the card then says the schema is not covered).  ``seed`` makes a reproducible demo whose card says
    its guarantee is "none".  ``budget`` sets the dataset's ε cap in the ledger.  ``columns`` chooses the columns
    to release first (by name, a public choice): discovery and its budget cover only those.  A fit whose private
    schema is expected to keep (nearly) nothing is refused before anything is charged
    (:func:`dpcore.tabular.schema_plan`), unless ``force=True``.  ``outcome`` names the column you will predict
    from the release (a public choice): the default measures that column's pairs first.
    """

    def __init__(
        self,
        mechanism: str = "auto",
        epsilon: float = 1.0,
        delta: float | None = None,
        *,
        workload=None,
        params: dict | None = None,
        schema=None,
        roles: dict | None = None,
        schema_from_data: bool = False,
        schema_share: float | None = None,
        workspace: str | Path | None = None,
        budget: float | None = None,
        label: str = "",
        seed: int | None = None,
        numeric: str = "values",
        time_limit: float | None = None,
        executor: str | None = "serial",
        columns=None,
        force: bool = False,
        outcome: str | None = None,
    ) -> None:
        from .mechanisms import registry
        from .release import AUTO, is_auto

        # fail fast on an unknown name; "auto" is resolved by fit (the card names what ran)
        self.mechanism = AUTO if is_auto(mechanism) else registry.get(mechanism).name
        self.epsilon = epsilon
        self.delta = delta
        self.workload = workload
        self.params = dict(params or {})
        self.schema = load_schema(schema) if isinstance(schema, (str, Path)) else schema
        self.roles = roles
        self.schema_from_data = schema_from_data
        self.schema_share = schema_share
        self.workspace = workspace
        self.budget = budget
        self.label = label
        self.seed = seed
        self.numeric = numeric
        self.time_limit = time_limit
        self.executor = executor
        self.columns = columns
        self.force = force
        self.outcome = outcome
        self.release = None
        self.run_id: str | None = None
        self._internal = None

    def __repr__(self) -> str:
        state = "fitted" if self.release is not None else "not fitted"
        return f"Synthesizer({self.mechanism!r}, epsilon={self.epsilon!r}, {state})"

    # ------------------------------------------------------------------ fitting
    def fit(self, data, *, name: str | None = None, progress=None) -> Synthesizer:
        """Charge the ledger, then learn from ``data`` (a DataFrame, or a CSV/Parquet path) under DP."""
        from .data import read_table
        from .executors import executor_from_spec
        from .mechanisms import registry
        from .release import base_mechanism
        from .runs import execute_release
        from .workspace import Workspace

        if isinstance(data, pd.DataFrame):
            df = data.copy()
            df.attrs.update(data.attrs)
        else:
            df = read_table(data)
        if name:
            df.attrs["name"] = name
        df.attrs.setdefault("name", "dataframe")
        ws = Workspace(self.workspace)
        uses_oracle = registry.get(base_mechanism(self.mechanism)).uses_oracle
        executor = executor_from_spec(self.executor) if uses_oracle else None
        options = {
            "schema": self.schema,
            "roles": self.roles,
            "schema_from_data": self.schema_from_data,
            "schema_share": self.schema_share,
            "columns": self.columns,
            "force": self.force,
        }
        try:
            self.release, self._internal, self.run_id = execute_release(
                ws,
                None,
                self.workload,
                self.mechanism,
                self.epsilon,
                self.delta,
                {**self.params, **({"outcome": self.outcome} if self.outcome else {})},
                seed=self.seed,
                label=self.label,
                budget_cap=self.budget,
                progress=progress,
                executor=executor,
                oracle_options={"time_limit": self.time_limit} if self.time_limit else {},
                numeric=self.numeric,
                table=df,
                table_options=options,
            )
        finally:
            if executor is not None:
                executor.close()
        for message in self._fitted().warnings:  # public: what the budget could not resolve, etc.
            _warnings.warn(message, DPCoreWarning, stacklevel=2)
        return self

    def plan(self, data):
        """What the private schema is expected to keep if :meth:`fit` ran on ``data`` now
        (:class:`dpcore.tabular.SchemaPlan`: ``.lines()``, ``.refuse``, ``.threshold``).  Public: it reads the
        header and the row count only, and charges nothing."""
        from .data import read_table
        from .mechanisms import registry
        from .release import base_mechanism, choose_columns, joint_conversion, resolve_budget
        from .tabular import schema_plan

        df = data if isinstance(data, pd.DataFrame) else read_table(data)
        df = choose_columns(df, self.columns)
        budget, _, _ = resolve_budget(self.epsilon, self.delta, len(df))
        joint = joint_conversion(registry.get(base_mechanism(self.mechanism)), budget, self.schema_from_data)
        return schema_plan(
            df.columns, len(df), epsilon=budget.epsilon, delta=budget.delta, schema=self.schema, roles=self.roles,
            schema_share=self.schema_share, joint=joint,
        )  # fmt: skip

    def _fitted(self):
        if self.release is None:
            raise DPCoreError("Call fit(data) first.")
        return self.release

    # ------------------------------------------------------------------ what it released
    @property
    def warnings(self) -> list[str]:
        """What the release's own figures say it could not do well (public; also issued as DPCoreWarning)."""
        return list(self._fitted().warnings)

    @property
    def card(self) -> dict:
        """The public release card (a dict): what may be published beside the synthetic data."""
        return self._fitted().card

    def sample(self, n: int | None = None, seed: int | None = None) -> pd.DataFrame:
        """Synthetic rows in the input's shape: the released rows (``n=None``), or ``n`` rows drawn from them with
        replacement (post-processing: no privacy cost).  Mechanisms that release answers, not rows, raise."""
        rel = self._fitted()
        if rel.rows is None:
            raise DPCoreError(f"{rel.mechanism} releases answers, not rows: use synth.answers() instead.")
        table = rel.decoded_rows()
        if n is None:
            return table
        if int(n) < 1:
            raise DPCoreError("Ask for at least one row.")
        rng = np.random.default_rng(seed)
        return table.iloc[rng.integers(0, len(table), int(n))].reset_index(drop=True)

    def answers(self) -> pd.DataFrame:
        """The released answers to the workload's queries (every mechanism has them)."""
        from .release import answers_table

        rel = self._fitted()
        return answers_table(rel.workload, rel.answers)

    def evaluate(
        self, real: pd.DataFrame, *, holdout: pd.DataFrame | None = None, target: str | None = None, **options: Any
    ) -> dict:
        """INTERNAL fidelity report of the synthetic rows against ``real`` (computed on private data: not
        differentially private, never for publication).  Adds the workload errors of this run."""
        from .evaluate import evaluate

        report = evaluate(
            real, self.sample(), holdout=holdout, schema=self._fitted().workload.domain, target=target, **options
        )
        if self._internal is not None:
            report["workload_error"] = {k: self._internal.report.get(k) for k in ("max_error", "mean_error")}
        return report
