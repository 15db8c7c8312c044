"""Run one mechanism end to end: Dataset + Workload + budget -> (:class:`Release`, :class:`InternalEvaluation`).

Two objects, kept apart (see :mod:`dpcore.report`):

* :class:`Release` -- what may be published: the **public release card** (mechanism, parameters, ε, δ, the
  neighbour relation, the accountant, the schema and its provenance, and the guarantee) and the released rows,
  answers or synopsis.  Only public inputs and quantities derived from them.  Never the RNG seed, an error
  figure, a timing or a solver statistic;
* :class:`InternalEvaluation` -- errors measured on the private data, the true answers, the per-round trace and
  oracle statistics.  Not differentially private: for the data owner only.

The privacy ledger is charged BEFORE the mechanism touches the data (:meth:`dpcore.privacy.ledger.Ledger.reserve`,
which also enforces the dataset's cap); a run that then fails or is cancelled stays charged.  A run with a fixed
seed is a demo: it is charged too (it read the data) and its card says its guarantee is "none".
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .errors import BudgetError, DataError, DPCoreError, ParameterError
from .mechanisms import registry
from .mechanisms.base import Budget, MechanismResult, RunContext, SpendRecord
from .privacy import check_budget, default_delta
from .privacy.ledger import DEFAULT_LEDGER, new_run_id, resolve_ledger
from .privacy.samplers import Randomness
from .report import INTERNAL_LABEL, data_section, evaluation_report, release_card
from .workload import Workload, uniform_baseline


@dataclass
class Release:
    """The public output of one run: what may be published, with its card."""

    run_id: str
    mechanism: str
    params: dict
    budget: Budget
    delta_defaulted: bool
    dataset_name: str
    dataset_id: str
    n: int
    workload: Workload
    card: dict
    guarantee: str
    seconds: float
    rows: np.ndarray | None = None
    weights: np.ndarray | None = None
    #: Answers to the workload: released directly, or computed from the released rows (post-processing).
    answers: np.ndarray | None = None
    synopsis: Any = None
    model: Any = None
    public: dict = field(default_factory=dict)
    #: What the run's accountant charged, step by step (public: functions of public parameters).
    spends: list = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: How numeric and date columns come out: "values" (numbers and dates drawn within their bins, the input's
    #: shape) or "bins" (bin labels).
    numeric: str = "values"
    #: Seeds the within-bin draws (post-processing: protects nothing), so every export of a release is the same.
    decode_seed: int = 0

    @property
    def demo(self) -> bool:
        return self.guarantee == "none"

    def decoded_rows(self, numeric: str | None = None) -> pd.DataFrame | None:
        """The synthetic rows as a table in the input's shape (``numeric="bins"`` for bin labels)."""
        if self.rows is None:
            return None
        from .output import to_table

        return to_table(
            self.workload.domain,
            self.rows,
            np.random.default_rng(self.decode_seed),
            numeric or self.numeric,
            self.count_noise,
        )

    @property
    def count_noise(self) -> float | list[float] | None:
        """The one-way counts' σ as a share of the rows (one, or one per attribute), where the mechanism measured
        every one-way marginal and says with what σ (public: from ρ and the attribute sizes); n is public.  It lets
        a value lean within its bin by the released rows around it (:meth:`~dpcore.domain.Attribute.decode`); None
        elsewhere: values drawn uniformly within their bins, as before."""
        sigma = self.public.get("sigma_one_way_counts")
        if sigma is None or not self.n:
            return None
        if isinstance(sigma, (list, tuple)):
            return [float(x) / self.n for x in sigma] if len(sigma) == len(self.workload.domain) else None
        return float(sigma) / self.n

    def _answers_table(self) -> pd.DataFrame:
        if self.answers is None:  # every mechanism returns rows, answers or both; a release with neither is a bug
            raise RuntimeError("This release holds neither synthetic rows nor released answers.")
        return answers_table(self.workload, self.answers)

    def synthetic_csv(self, numeric: str | None = None) -> bytes:
        df = self.decoded_rows(numeric)
        if df is None:
            return self._answers_table().to_csv(index=False).encode()
        from .output import csv_separator, with_missing_text

        domain = self.workload.domain
        return with_missing_text(domain, df).to_csv(index=False, sep=csv_separator(domain)).encode()

    def write_synthetic_csv(self, path, numeric: str | None = None) -> None:
        """Write the synthetic rows (or the released answers) as CSV to ``path``, a chunk at a time, so a
        release of millions of rows never sits in memory as text."""
        if self.rows is None:
            self._answers_table().to_csv(path, index=False)
            return
        from .output import write_csv

        write_csv(
            self.workload.domain,
            self.rows,
            path,
            np.random.default_rng(self.decode_seed),
            numeric or self.numeric,
            count_noise=self.count_noise,
        )

    def synopsis_json(self) -> dict | None:
        """The released synopsis (public: DP-derived numbers and public parameters only)."""
        return None if self.synopsis is None else self.synopsis.to_json()


@dataclass
class InternalEvaluation:
    """INTERNAL: how close the release is to the private data.  Not differentially private — never publish."""

    report: dict
    true_answers: np.ndarray
    released_answers: np.ndarray | None
    label: str = INTERNAL_LABEL

    def errors(self) -> np.ndarray:
        if self.released_answers is None:
            raise DPCoreError("This release has no answers to compare.")
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
    """INTERNAL: error on sampled members of "all conjunctions of width ≤ k" ([NRW19] §IV,
    [HRS12]): the class is never enumerated.  The sampling randomness is the evaluation's
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
    if n < 2:  # 1/n² would be 1: no guarantee, and nothing about one row can be released privately
        raise DataError(f"The table has {n} row(s): a private release needs a table of many rows.")
    used = default_delta(n) if delta is None else delta
    warnings = check_budget(epsilon, used, n)
    return Budget(float(epsilon), float(used)), defaulted, warnings


def plan_warnings(plan: dict, workload: Workload, n: int) -> list[str]:
    """Pre-run warnings from a mechanism's public plan: a workload whose largest marginal would come back mostly
    noise (expected noise per cell above n / cells; :func:`dpcore.workload.noise_warning`).  Mechanisms whose plan
    has no per-count Gaussian scale (``sigma_counts``) give none."""
    from .workload import workload_noise_warning

    sigma = plan.get("sigma_counts")
    if sigma is None or not math.isfinite(float(sigma)) or n < 1:
        return []
    w = workload_noise_warning(workload, float(sigma), n)
    return [w] if w else []


def plan_release(
    dataset_n: int, workload: Workload, mechanism: str, epsilon: float, delta: float | None, params: dict | None = None
) -> dict:
    """Public pre-run figures for the UI/CLI (raises if the budget cannot work)."""
    mech_cls = registry.get(base_mechanism(mechanism))
    budget, _, _ = resolve_budget(epsilon, delta, dataset_n)
    return mech_cls().plan(dataset_n, workload, budget, mech_cls.validate_params(params))


def _prepare_mechanism(mechanism: str, params: dict | None, n_rows: int | None, class_width: int | None):
    """The mechanism class and its validated parameters (public inputs only); "auto" with a workload is the
    projection (:func:`base_mechanism`)."""
    mech_cls = registry.get(base_mechanism(mechanism))
    params = dict(params or {})
    if class_width is not None and any(p.name == "k" for p in mech_cls.parameters):
        params.setdefault("k", class_width)
    vparams = mech_cls.validate_params(params)
    if n_rows is not None:
        if "rows" not in vparams:
            raise DPCoreError(f"{mech_cls.title} does not let you choose the number of rows.")
        vparams["rows"] = mech_cls.param("rows").validate(n_rows)
    return mech_cls, vparams


def _reserve(
    ledger,
    dataset_key: str,
    name: str,
    n: int,
    run_id: str,
    mech_cls,
    budget: Budget,
    budget_cap: float | None,
    seed: int | None,
):
    """Charge the whole (ε, δ) before the data is touched; returns the ledger actually used (or None)."""
    ledger = resolve_ledger(ledger)
    if ledger is not None:
        ledger.reserve(
            dataset=dataset_key,
            name=name,
            n=n,
            run=run_id,
            mechanism=mech_cls.name,
            epsilon=budget.epsilon,
            delta=budget.delta,
            budget=budget_cap,
            note="demo (fixed seed)" if seed is not None else "",
        )
    return ledger


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
    ledger=DEFAULT_LEDGER,
    run_id: str | None = None,
    budget_cap: float | None = None,
    n_rows: int | None = None,
    class_width: int | None = None,
    schema_from_data: bool = False,
    numeric: str = "values",
    schema_release: dict | None = None,
) -> tuple[Release, InternalEvaluation]:
    """Run ``mechanism`` on an encoded :class:`~dpcore.data.Dataset` and build the release and its internal
    evaluation.  (For a raw table, :func:`release_table` discovers the schema privately first.)

    ``seed=None`` (every real release) draws privacy noise from the cryptographic source; a seed makes the run
    a reproducible demo whose card says its guarantee is "none".  ``ledger`` is the workspace ledger charged
    before the data is touched (default: the default workspace's); ``None`` charges nothing and is for
    benchmarks and tests only.  ``budget_cap`` sets the dataset's ε cap (the CLI's ``--budget``).
    A schema with fields read off the data without privacy is refused unless ``schema_from_data`` says the
    caller chose that explicitly (the card then says the schema is not covered).
    ``class_width`` = k also evaluates the release on the implicit class of all conjunctions of width ≤ k
    (internal, sampled); mechanisms that answer that class directly (a parameter ``k``) get k unless ``params``
    sets it.

    ``schema_release`` reuses a schema discovered privately once, in its own charged run (the app's Data page):
    ``{"card_data": PreparedTable.card_data, "epsilon": ε_d, "delta": δ_d, "run": its run id}`` (optionally
    ``"guarantee": "none"`` for a seeded discovery).  The card's data section then carries the excluded columns,
    the renamed headers and ``schema_discovery``; its privacy section lists the schema part (charged once, in that
    run) beside the mechanism's, and ``epsilon_spent`` / ``delta_spent`` are their sums -- the release's whole
    guarantee, since it publishes the schema too.  The ledger is charged for the mechanism's (ε, δ) only: the
    schema part was charged when it was discovered, and every later release of the same schema reuses it.
    """
    if workload.domain != dataset.domain:
        raise DPCoreError("The workload was built for a different schema than the dataset; rebuild the workload.")
    budget, defaulted, warnings = resolve_budget(epsilon, delta, dataset.n)
    mech_cls, vparams = _prepare_mechanism(mechanism, params, n_rows, class_width)
    data = data_section(dataset, schema_from_data=schema_from_data)  # refuses an unchosen inferred schema
    card_budget, schema_spends, schema_run, schema_guarantee = budget, [], None, None
    if schema_release is not None:
        data, card_budget, schema_spends, schema_run, schema_guarantee = _schema_part(
            schema_release, dataset, budget, schema_from_data
        )
    elif dataset.domain.discovered and ledger is not None:
        # A release publishes its schema: its card must state the discovery's cost too (issue 24, finding 5).
        raise BudgetError(
            f"The schema of {', '.join(dataset.domain.discovered[:5])} was released under differential privacy, so "
            "its cost belongs on this release's card: pass schema_release=prep.schema_release() (from "
            "dpcore.tabular.prepare_table), or release the raw table with dpcore.release.release_table."
        )
    elif dataset.domain.discovered:
        warnings.append(
            f"The schema of {', '.join(dataset.domain.discovered[:5])} was released under differential privacy, but "
            "its cost is not on this card: pass the discovery as schema_release so the card states the whole "
            "guarantee."
        )
    plan = mech_cls().plan(dataset.n, workload, budget, vparams)  # fail fast on impossible budgets (public only)
    warnings += plan_warnings(plan, workload, dataset.n)
    run_id = run_id or new_run_id()
    ledger = _reserve(ledger, dataset.ledger_key, dataset.name, dataset.n, run_id, mech_cls, budget, budget_cap, seed)
    noise = Randomness(seed)  # None -> cryptographic; a seed makes the run a demo
    rel, internal = _run(
        dataset,
        workload,
        mech_cls,
        vparams,
        card_budget,
        budget,
        defaulted,
        warnings,
        noise,
        ledger,
        run_id,
        data,
        schema_spends,
        progress,
        cancel,
        oracle_options,
        executor,
        class_width,
        numeric,
        schema_charged=schema_release is None,
        guarantee=schema_guarantee,
    )
    if schema_run is not None:
        parts = rel.card["privacy"].get("parts", [])
        if len(parts) == 2:
            parts[0].update(run=schema_run, charged=f"once, when the schema was discovered (run {schema_run})")
            parts[1].update(run=run_id, charged=f"by this release (run {run_id})")
    return rel, internal


def _schema_part(schema_release: dict, dataset, budget: Budget, schema_from_data: bool):
    """The card's data section, the whole (ε, δ) for the card, the schema part's spends, the discovery's run id
    and its guarantee, from a schema discovered in an earlier, separately charged run."""
    from .privacy.samplers import GUARANTEE_DP, GUARANTEE_NONE

    if not isinstance(schema_release, dict) or not isinstance(schema_release.get("card_data"), dict):
        raise DPCoreError("schema_release must be a dict with the discovery's 'card_data', 'epsilon', 'delta', 'run'.")
    try:
        eps_d, delta_d = float(schema_release.get("epsilon", 0.0)), float(schema_release.get("delta", 0.0))
    except (TypeError, ValueError):
        raise BudgetError("schema_release: the discovery's ε and δ must be numbers.") from None
    if not (math.isfinite(eps_d) and eps_d >= 0 and 0 <= delta_d < 1):
        raise BudgetError(f"schema_release: the discovery's (ε, δ) = ({eps_d}, {delta_d}) is not a valid spend.")
    found = schema_release["card_data"]
    if found.get("n", dataset.n) != dataset.n:
        raise DPCoreError(
            f"The schema was discovered on a table of {found['n']:,} rows, not this one ({dataset.n:,}); discover "
            "the schema of this table."
        )
    guarantee = schema_release.get("guarantee", GUARANTEE_DP)
    if guarantee not in (GUARANTEE_DP, GUARANTEE_NONE):
        raise DPCoreError(f"schema_release: unknown guarantee {guarantee!r}.")
    # The schema on the card is always the dataset's own (with its per-field sources); the discovery adds what
    # it excluded, what it renamed and how it was released.
    data = data_section(dataset, found.get("excluded", ()), found.get("renamed", ()), schema_from_data=schema_from_data)
    for key in ("schema_discovery", "schema_guarantee"):
        if key in found and key not in data:
            data[key] = found[key]
    run = str(schema_release.get("run") or "unknown")
    whole = Budget(budget.epsilon + eps_d, budget.delta + delta_d)
    check_budget(whole.epsilon, whole.delta, dataset.n)  # the release's whole δ must stay below 1/n too
    spends = []
    if eps_d > 0 or delta_d > 0:
        spends.append(SpendRecord(eps_d, delta_d, None, f"schema discovery, charged once in run {run}"))
    return data, whole, spends, (run if spends else None), (GUARANTEE_NONE if guarantee == GUARANTEE_NONE else None)


def release_table(
    table,
    mechanism: str,
    epsilon: float,
    delta: float | None = None,
    params: dict | None = None,
    *,
    schema=None,
    roles=None,
    schema_from_data: bool = False,
    schema_share: float | None = None,
    workload=None,
    seed: int | None = None,
    progress=None,
    cancel: threading.Event | None = None,
    oracle_options: dict | None = None,
    executor=None,
    ledger=DEFAULT_LEDGER,
    run_id: str | None = None,
    budget_cap: float | None = None,
    n_rows: int | None = None,
    class_width: int | None = None,
    numeric: str = "values",
    name: str | None = None,
    columns=None,
    force: bool = False,
) -> tuple[Release, InternalEvaluation]:
    """Release a raw table (a path, bytes, or a DataFrame from :func:`dpcore.data.read_table`) end to end.

    ``columns`` chooses the attributes first (a public choice, by name): discovery and its budget cover only them,
    and the release holds only them.  Before anything is charged the public :func:`dpcore.tabular.schema_plan` is
    checked: a run whose private schema is expected to keep (nearly) nothing is refused with the plan and the ways
    out (:class:`~dpcore.errors.BudgetError`), unless ``force``.

    1. The whole (ε, δ) is charged to the ledger before anything but the header and the row count is read.
    2. Column roles and whatever the ``schema`` does not declare are released under DP from a share of it
       (:mod:`dpcore.tabular`; ``schema_from_data=True`` reads them off the data instead, explicitly, and the card
       says the schema is not covered); declared fields cost nothing.
    3. The workload: ``workload`` (a :class:`Workload`, or a dict ``{"k", "marginals", "seed", "max_cells"}``),
       else the default that fits the table (:func:`dpcore.workload.default_workload`).
    4. The mechanism runs on the rest of the budget; rows come back in the input's shape.
    """
    from .data import read_table, table_digest
    from .discovery import DEFAULT_SCHEMA_SHARE
    from .tabular import (
        discovery_budget,
        discovery_stop_spend,
        prepare_table,
        schema_plan,
        share_note,
        values_share_note,
    )

    df = table if isinstance(table, pd.DataFrame) else read_table(table)
    if "source_digest" not in df.attrs:
        df.attrs["source_digest"] = table_digest(df)
    df = choose_columns(df, columns)
    n = len(df)
    budget, defaulted, warnings = resolve_budget(epsilon, delta, n)
    auto = is_auto(mechanism)
    if (params or {}).get(OUTCOME) not in (None, "") and not auto:
        raise ParameterError(
            f"An outcome steers the default's choice of pairs; {mechanism} measures the marginals you choose: "
            "include the outcome's pairs in the workload, or use the default mechanism."
        )
    check_outcome(params, df.columns)
    if auto and workload is not None:  # the default runs the projection on a given workload: nothing else applies
        params = projection_only(params)
    mech_cls, vparams = _prepare_mechanism(
        base_mechanism(mechanism), auto_params(params) if auto else params, n_rows, class_width
    )
    joint = joint_conversion(mech_cls, budget, schema_from_data)
    # Public: what the private schema is expected to keep, at the share given or the one fitted to the table.
    plan = None if schema_from_data else schema_plan(
        df.columns, n, epsilon=budget.epsilon, delta=budget.delta, schema=schema, roles=roles,
        schema_share=schema_share, joint=joint,
    )  # fmt: skip
    share = DEFAULT_SCHEMA_SHARE if plan is None else plan.share
    if (raised := share_note(share)) is not None:
        warnings.append(raised)
    eps_d, delta_d, _ = (
        (0.0, 0.0, [])
        if schema_from_data
        else discovery_budget(
            df.columns,
            epsilon=budget.epsilon,
            delta=budget.delta,
            schema=schema,
            roles=roles,
            schema_share=share,
            joint=joint,
        )  # fmt: skip
    )
    wanted = len(df.columns)  # the columns the release is to keep: a one-column table keeping its column is whole
    if plan is not None and not force:
        if plan.refuse:
            raise BudgetError(plan.refusal())
        wanted = plan.kept
    run_id = run_id or new_run_id()
    label = name or str(df.attrs.get("name") or "table")
    ledger = _reserve(ledger, df.attrs["source_digest"], label, n, run_id, mech_cls, budget, budget_cap, seed)
    noise = Randomness(seed)
    try:
        prep = prepare_table(
            df,
            schema=schema,
            roles=roles,
            schema_from_data=schema_from_data,
            epsilon=budget.epsilon,
            delta=budget.delta,
            noise=noise,
            schema_share=share,
            name=label,
            joint=joint,
            ledger=None,  # reserved above, with the mechanism's part
            fitted_share=schema_share is None and plan is not None,
        )
    except DPCoreError:
        if ledger is not None and eps_d > 0:  # the discovery read the data; the mechanism never ran
            stop = discovery_stop_spend(
                df.columns, epsilon=budget.epsilon, delta=budget.delta, schema=schema, roles=roles,
                schema_share=share, joint=joint,
            )  # fmt: skip
            ledger.settle(run_id, [stop] if stop is not None else [])
        raise
    warnings += prep.warnings
    # The rest of the budget, after what the discovery spent (less than planned when the released roles needed less)
    mech_budget = Budget(budget.epsilon - prep.epsilon_spent, budget.delta - prep.delta_spent)
    if len(prep.dataset.domain) < min(2, wanted) and not force and prep.spends:
        # The plan expected more; the released schema keeps one column: stop before the mechanism reads anything.
        stopped = prep.stop_spends()
        if ledger is not None:
            ledger.settle(run_id, stopped)
        left = "; ".join(f"{e['name']}: {e['reason']}" for e in prep.excluded[:4])
        raise BudgetError(
            f"The private schema kept only {', '.join(prep.dataset.domain.names)} of {len(df.columns)} column(s) "
            f"({left}{'; …' if len(prep.excluded) > 4 else ''}), so the release did not run: only the schema "
            f"discovery's ε = {math.fsum(s.epsilon for s in stopped):.3g} was charged. Declare roles and value sets "
            "(free), choose "
            "columns whose values are frequent, or raise ε; --force (force=True) releases one column anyway."
        )
    try:
        chosen_by = None
        if workload is None and auto:
            given = {**(params or {}), **({} if n_rows is None else {"rows": n_rows})}
            mech_cls, chosen, wl, chosen_by = default_release_plan(prep.dataset.domain, n, mech_budget, given)
            vparams = mech_cls.validate_params(chosen)
        elif workload is None:
            wl = fitted_default_workload(prep.dataset.domain, n, mech_cls, mech_budget, vparams)
            chosen_by = default_workload_note(wl, n)
        else:
            wl = _table_workload(workload, prep.dataset)
        warnings += plan_warnings(mech_cls().plan(n, wl, mech_budget, vparams), wl, n)
    except DPCoreError as exc:
        stopped = prep.stop_spends()
        if ledger is not None:  # the mechanism never read the data: only the discovery stays charged, alone
            ledger.settle(run_id, stopped)
        if prep.excluded and prep.spends:
            # The workload failed on a schema the private discovery shrank: say so, and what was charged.
            kept = ", ".join(prep.dataset.domain.names)
            raise type(exc)(
                f"{exc} The private schema kept {len(prep.dataset.domain)} column(s) ({kept}); "
                f"{len(prep.excluded)} were left out (see the warnings). Only the schema discovery's "
                f"ε = {math.fsum(s.epsilon for s in stopped):.3g} was charged. Declare roles and bounds (free; "
                "`dpcore info FILE` proposes them) to keep more columns."
            ) from None
        raise
    data = dict(prep.card_data)
    if "schema_discovery" in data:  # the share of the budget the schema took, and why when it was raised
        data["schema_discovery"] = {**data["schema_discovery"], "share": share}
        if raised is not None:
            data["schema_discovery"]["share_note"] = raised
        if (moved := values_share_note(prep.discovery_report)) is not None:
            data["schema_discovery"]["share_note"] = " ".join(filter(None, (raised, moved)))
    rel, internal = _run(
        prep.dataset,
        wl,
        mech_cls,
        vparams,
        budget,
        mech_budget,
        defaulted,
        warnings,
        noise,
        ledger,
        run_id,
        data,
        prep.spends,
        progress,
        cancel,
        oracle_options,
        executor,
        class_width,
        numeric,
    )
    if chosen_by:  # public: n, the attributes' sizes, ε, δ and the mechanism's plan
        rel.card["workload"]["chosen_by"] = chosen_by
    return rel, internal


def default_workload_note(wl: Workload, n: int) -> str:
    """Which marginals the default chose for this table, and why (public: from n and the attributes' sizes)."""
    p = len(wl.domain)
    pairs = [m for m in wl.marginals if len(m) == 2]
    total = p * (p - 1) // 2
    if not pairs:
        why = (
            "no pair of attributes has cells that would hold more rows than the noise each cell carries at this ε"
            if total
            else "the table has one attribute"
        )
        return (
            f"the default workload: the {p} one-way marginals only ({why}); choosing the marginals yourself "
            "replaces this"
        )
    smallest = min(n / float(np.prod([wl.domain.shape[a] for a in m])) for m in pairs)
    return (
        f"the default workload: all {p} one-way marginals, then {len(pairs)} of the {total} two-way marginals, "
        "picked at random (public seed) among the pairs whose cells hold enough rows to stand above the noise at "
        f"this n and ε (the chosen ones: {smallest:,.0f} rows a cell or more on average); unmeasured pairs come "
        "out as independent as the measured marginals allow. Choosing the marginals yourself (--k/--marginals) "
        "replaces this"
    )


def joint_conversion(mech_cls, budget: Budget, schema_from_data: bool = False) -> bool:
    """Whether a raw-table release converts its schema discovery and its mechanism once (the schema's share split
    in ρ, :func:`dpcore.discovery.joint_split`): the mechanism is ρ-zCDP and δ > 0."""
    return bool(mech_cls.zcdp_native) and budget.delta > 0 and not schema_from_data


def choose_columns(df: pd.DataFrame, columns) -> pd.DataFrame:
    """The table restricted to the chosen columns, in the order given (a public choice by name; the file's digest,
    n and the renamed headers stay, so the ledger still keys the same private table).  None keeps every column."""
    if columns is None:
        return df
    if isinstance(columns, str):
        columns = [c.strip() for c in columns.split(",")]
    chosen = [str(c).strip() for c in columns if str(c).strip()]
    unknown = [c for c in chosen if c not in df.columns]
    if unknown:
        raise DataError(f"No column(s) {unknown[:5]} in the table; its columns are {list(df.columns)[:30]}.")
    if len(set(chosen)) != len(chosen):
        raise DataError("A column is chosen twice; name each once.")
    if len(chosen) < 2:
        raise DataError("Choose at least two columns: synthetic data needs at least two attributes.")
    out = df[chosen]
    out.attrs.update(df.attrs)
    return out


#: The default mechanism: the projection of the workload the user gave; with none given, the choice of
#: :func:`default_release_plan` (which pairs to measure, chosen from the data when the noise leaves a choice).
AUTO = "auto"


def base_mechanism(mechanism: str | None) -> str:
    """The registry name that plans, checks and reserves for ``mechanism``: "auto" (or None) plans as the
    projection (whatever it resolves to spends the same ρ = eps_to_zcdp(ε, δ) of its budget)."""
    return "projection" if is_auto(mechanism) else str(mechanism)


def is_auto(mechanism: str | None) -> bool:
    return mechanism in (None, AUTO)


#: Share of each round of the default's adaptive selection spent on choosing (the rest measures the choice).
DEFAULT_SELECT_FRACTION = 0.1
#: With grouped pairs (the last resort, often on weakly related columns), the rounds left go back to the one-way
#: marginals once the pairs measured depart from independence by less than this many times their noise's energy
#: (``return_below``; 1 is pure noise).
DEFAULT_RETURN_BELOW = 1.5
#: With grouped pairs under a cap of 256 cells or more, each pair of two numbers or dates is also offered grouped
#: under a quarter of the cap (``coarser_candidates``; not under 64 cells): at the cap a pair's noise is about as
#: large as the rows it holds, so a strong but spread association was chosen almost never (California housing at
#: ε = 1: median income × house value, Spearman 0.72, came back 0.00).
DEFAULT_COARSER = 1
#: The default's one-way marginals get p / (p + R) of the budget (R pairs), at least this share ...
DEFAULT_MIN_ONE_WAY = 0.3
#: ... and at most this one (the adaptive projection's largest ``one_way_fraction``): an even split that would
#: give the one-way marginals more (ten or more columns and one pair, p / (p + 1) > 0.9) is not taken -- the
#: pairs would share less than a tenth of ρ -- and one pair is measured alone instead (:func:`default_rounds`).
DEFAULT_MAX_ONE_WAY = 0.9


def _param_names(name: str) -> set[str]:
    return {q.name for q in registry.get(name).parameters}


#: The default's own parameter: the column the analyst will predict (a public choice, by name).  The default's
#: first rounds choose among that column's pairs (:func:`default_release_plan`); the mechanisms never see the name.
OUTCOME = "outcome"


def check_outcome(params: dict | None, columns) -> None:
    """Refuse, before anything is charged, an outcome that names no column of the table (public: the header)."""
    outcome = (params or {}).get(OUTCOME)
    if outcome in (None, ""):
        return
    names = [str(c) for c in columns]
    if str(outcome) not in names:
        shown = ", ".join(names[:12]) + (", …" if len(names) > 12 else "")
        raise ParameterError(f"The outcome {str(outcome)[:80]!r} is not a column of this table ({shown}).")


def auto_params(params: dict | None) -> dict:
    """The parameters given to "auto" that the projection plans with: those it has.  Each must belong to the
    projection or to the adaptive projection (either may run) or be the default's ``outcome``; the one that runs
    validates its own."""
    params = dict(params or {})
    params.pop(OUTCOME, None)
    proj = _param_names("projection")
    known = proj | _param_names("projection_adaptive")
    unknown = sorted(set(params) - known)
    if unknown:
        raise DPCoreError(
            f"The default mechanism (auto: the projection or the adaptive projection) has no parameter(s) {unknown}; "
            f"they have {sorted(known)}. Name a mechanism (--mechanism) to use its own parameters."
        )
    return {k: v for k, v in params.items() if k in proj}


def default_max_pairs(p: int) -> int:
    """At most 2 pairs per attribute and 64 in all (:data:`dpcore.workload.DEFAULT_MARGINALS`): the room the
    default gives the pairs when the noise is small.  Measured on the real tables (docs/benchmarks.md): on 36,169
    rows × 17 columns, 17 pairs at ε = 3 were all spent on wide pairs (day × month, job × day) and the outcome
    came out independent of everything (AUC 0.48); 34 pairs measured the outcome's pairs too (AUC 0.86), 47 no
    better and slower; on 713 rows × 8 columns 16 pairs were as good as 8 where the noise allows them."""
    from .workload import DEFAULT_MARGINALS

    return max(0, min(2 * int(p), DEFAULT_MARGINALS))


def projection_only(params: dict | None) -> dict:
    """The parameters of "auto" with a workload given, which runs the projection: ``params`` when the projection
    takes them all; otherwise a refusal that names the others (the default runs the adaptive projection only when
    it chooses the marginals itself)."""
    params = dict(params or {})
    if params.get(OUTCOME) not in (None, ""):
        raise DPCoreError(
            "An outcome steers the default's own choice of pairs: with marginals chosen (--k/--marginals, or a mode "
            "other than the recommended one on the Workload page) the projection measures those, so include the "
            "outcome's pairs there, or leave the workload out to let the default choose."
        )
    params.pop(OUTCOME, None)
    other = sorted(set(params) - set(auto_params(params)))
    if other:
        raise DPCoreError(
            f"With a workload given, the default mechanism is the projection, which has no parameter(s) {other}: "
            "leave the workload out to let the default choose (and use them), or name --mechanism "
            "projection_adaptive."
        )
    return params


def pair_cells(shape, ordered=(), grouped: bool = False) -> list[tuple[int, int, int]]:
    """``(cells, a, b)`` of every attribute pair worth a round, fewest cells first: whole, or (``grouped``) with
    its ``ordered`` attributes down to two groups.  A pair with a one-value attribute says no more than the
    other's one-way marginal and is left out.  Public: the attribute sizes and kinds."""
    p = len(shape)

    def cells(a: int) -> int:
        return min(2, int(shape[a])) if grouped and a in ordered else int(shape[a])

    return sorted((cells(a) * cells(b), a, b) for a in range(p) for b in range(a + 1, p) if min(shape[a], shape[b]) > 1)


def default_rounds(shape, n: int, rho: float, max_pairs: int, ordered=()) -> tuple[int, float, float, int | None]:
    """How many pairs the default measures, from public quantities only (n, the attribute sizes and kinds, ρ):
    ``(R, one-way share, rows a candidate pair's average cell holds at least, cell cap or None)``.

    With R pairs, the one-way marginals get f = max(0.3, p / (p + R)) of ρ and each pair (1 - f)ρ / R, a tenth of
    which chooses it; the measurement's noise per cell is σ·sqrt(2/π) counts, σ = sqrt(1 / ρ_meas). A pair is a
    candidate when its average cell holds at least that noise (and 5 rows).  R is the largest number of rounds, at
    most ``max_pairs``, that still leaves R candidates and f at most 0.9: fewer, larger measurements when ε or n is
    small, more when the noise allows.  When no such even split exists (not even one pair stands above its noise, or
    the pairs that do would share less than a tenth of ρ: ten or more columns, one or two pairs), one pair may still
    take what the one-way marginals can spare, up to 1 - 0.3 of ρ, as AIM's last round does: R = 1 (on 614 rows × 9
    columns at ε = 0.3 the outcome's pairs: the release keeps one association instead of none, docs/benchmarks.md).
    The pair takes only what the smallest pair's cells need to hold twice its noise, the one-way marginals the rest
    (:func:`lone_pair_share`: f from 0.3 to 0.9); the candidates are the pairs standing above the noise of that
    share.

    When not even that pair fits, pairs of ``ordered`` (numeric or date) attributes may still be measured with
    their values grouped (the cap is returned: the adaptive projection's ``max_cells_ordered``): the same rule,
    each pair's cells counted with its ordered attributes down to two groups.  On 248 rows of eight bike
    counters (eleven bins each) at ε = 1 no pair fits whole, sixteen fit as 3 × 3 groups.  0 pairs when not even
    that fits."""
    from .workload import MIN_ROWS_PER_CELL

    p = len(shape)
    ordered = set(int(a) for a in ordered)

    def pair_sizes(grouped: bool) -> list[int]:
        return [c for c, _, _ in pair_cells(shape, ordered, grouped)]

    def noise_floor(f: float, r: int) -> float:
        rho_meas = (1.0 - f) * rho / r * (1.0 - DEFAULT_SELECT_FRACTION)
        return max(float(MIN_ROWS_PER_CELL), math.sqrt(2.0 / math.pi) * math.sqrt(1.0 / rho_meas))

    def even_split(sizes: list[int]) -> tuple[int, float, float]:
        rounds, share, floor = 0, 1.0, math.inf
        for r in range(1, min(int(max_pairs), len(sizes)) + 1):
            f = max(DEFAULT_MIN_ONE_WAY, p / float(p + r))
            least = noise_floor(f, r)
            if sizes[r - 1] > n / least:
                break  # fewer than r pairs stand above this noise; more rounds only add noise to each
            if f > DEFAULT_MAX_ONE_WAY:
                continue  # the pairs would share less than a tenth of ρ: not a split the default takes
            rounds, share, floor = r, f, least
        return rounds, share, floor

    sizes = pair_sizes(False)
    rounds, share, floor = even_split(sizes)
    if rounds == 0 and sizes and max_pairs >= 1:
        # No pair stands above the noise of an even split.  One pair may still stand above the noise of what the
        # one-way marginals can spare (AIM's last round spends its remainder on one marginal the same way): the
        # release then carries the table's strongest supported association instead of independent columns only.
        least = noise_floor(DEFAULT_MIN_ONE_WAY, 1)
        if sizes[0] <= n / least:
            f = lone_pair_share(sizes[0], n, rho)
            return 1, f, noise_floor(f, 1), None
        if ordered:
            rounds, share, floor = even_split(pair_sizes(True))
            if rounds:
                return rounds, share, floor, cell_cap(n, floor)
    return rounds, share, floor, None


def uncovered_rounds(rounds: int, share: float, pairs: int) -> int:
    """Rounds added for the grouped pairs of numbers that are in no pair fitting whole (:func:`default_release_plan`):
    a quarter of the whole pairs' rounds (at least one), no more than there are such pairs, and only as many as
    leave the one-way marginals DEFAULT_MIN_ONE_WAY of ρ when each takes a whole pair's share, (1 - share) / rounds.
    Public: the plan's figures."""
    k = min(int(pairs), max(1, int(rounds) // 4))
    while k > 0 and 1.0 - (1.0 - share) * (rounds + k) / rounds < DEFAULT_MIN_ONE_WAY:
        k -= 1
    return k


def cell_cap(n: int, floor: float) -> int:
    """Most cells a grouped pair may have (the adaptive projection's ``max_cells_ordered``): as many as hold the
    noise floor's rows each on average, at least 2 × 2.  Public: n and the floor."""
    return max(4, int(n / floor))


def lone_pair_share(cells: int, n: int, rho: float) -> float:
    """The one-way share when one pair is measured alone: the pair takes what its cells need to hold twice its
    noise on average (σ·sqrt(2/π) counts, σ = sqrt(1 / ρ_meas)), between 10% and 70% of ρ; the one-way marginals
    keep the rest, 30% to 90%, rounded down to a hundredth.  Public: the pair's cells, n and ρ.

    Twice, not once: a pair measured at its noise level is mostly shrunk away (:mod:`.mechanisms.shrinkage`), and
    every share of ρ it does not need sharpens the p one-way marginals.  Measured (docs/benchmarks.md): anes96 at
    ε = 0.3 (755 rows × 10, its smallest pair 14 cells) 0.3 → 0.63, 2-way TVD 0.411 → 0.322 and ML efficacy
    0.85 / 0.83 → 0.93 / 0.90 (AIM 0.361, 0.91 / 0.83); Pima at ε = 0.3 (18 cells on 614 rows) cannot hold twice
    its noise and keeps 0.3."""
    from .workload import MIN_ROWS_PER_CELL

    if 2 * MIN_ROWS_PER_CELL * cells > n:
        return DEFAULT_MIN_ONE_WAY
    # 2 σ sqrt(2/π) ≤ n / cells with ρ_meas = (1 - f) ρ (1 - select share), solved for f:
    need = (2.0 / math.pi) * (2.0 * cells / n) ** 2 / ((1.0 - DEFAULT_SELECT_FRACTION) * rho)
    f = math.floor((1.0 - need) * 100.0) / 100.0
    return min(DEFAULT_MAX_ONE_WAY, max(DEFAULT_MIN_ONE_WAY, f))


def default_release_plan(domain, n: int, budget: Budget, params: dict | None = None):
    """The default release for a table with no workload given, from public quantities only (n, the attribute
    sizes, ε, δ and the parameters given): ``(mechanism class, its parameters, workload, note)``; the parameters
    are those given plus the plan's choices, not yet validated (the run validates them).

    Every one-way marginal is measured first; then R two-way marginals, each chosen from the data by the
    adaptive projection (:mod:`dpcore.mechanisms.projection_adaptive`; AIM's rule: the exponential mechanism
    picks the candidate the fit so far gets most wrong, less the noise measuring it brings) and measured.  R and
    the candidates come from :func:`default_rounds`: fewer, better measured pairs when the noise is large.  A pair
    chosen at random is as likely to be noise as signal; one chosen on the data carries the association the table
    has (the real-table benchmark, docs/benchmarks.md).  When no pair would stand above the noise, the
    projection measures the one-way marginals alone (the rows come out as independent columns)."""
    from .mechanisms.projection import zcdp_rho
    from .mechanisms.projection_adaptive import COARSEST_CELLS, AdaptiveProjection

    proj = registry.get("projection")
    params = dict(params or {})
    outcome = params.pop(OUTCOME, None) or None
    given = auto_params(params)  # refuses a parameter neither may take; the projection's own
    p = len(domain)
    one_way = Workload(domain, tuple((a,) for a in range(p)))
    ordered = [a for a, attr in enumerate(domain.attributes) if attr.kind in ("numeric", "datetime")]
    r, f, floor, cap = default_rounds(domain.shape, n, zcdp_rho(budget), default_max_pairs(p), ordered)
    if r == 0 or set(params) - _param_names(AdaptiveProjection.name):
        # The projection runs: parameters only the adaptive one takes do not apply.
        wl = one_way if r == 0 else fitted_default_workload(domain, n, proj, budget, proj.validate_params(given))
        note = default_workload_note(wl, n)
        if outcome is not None:
            note += f". The outcome {outcome} steers nothing here: " + (
                "no pair stands above the noise at this n and ε" if r == 0 else "the projection measures them all"
            )
        return proj, given, wl, note
    # The pairs that fit: whole under the noise floor, or (grouped) with two groups a side under the cap.
    most = n / floor if cap is None else cap
    candidates = sorted((a, b) for c, a, b in pair_cells(domain.shape, set(ordered), cap is not None) if c <= most)
    last_resort, grouped_too = cap is not None, 0
    if cap is None and ordered and 2 <= r < len(candidates):
        # Where the rounds already choose among the pairs that fit whole, pairs of numbers or dates too fine to fit
        # whole join the choice, their values grouped under the same floor: 20,000 diamonds' carat, price and sizes
        # (20 bins each, 400+ cells against a cap of 434) were never measured, and came back unrelated (Spearman
        # 0.96-1.0 → 0.0).  Where every pair that fits whole gets a round (Pima's outcome pairs at ε = 1 and 3), or
        # one pair takes what the one-way marginals spare (Pima at ε = 0.3), the whole pairs keep their rounds.
        wide = cell_cap(n, floor)
        more = sorted((a, b) for c, a, b in pair_cells(domain.shape, set(ordered), True) if c <= wide)
        grouped_too = len(set(more) - set(candidates))
        if grouped_too:
            candidates, cap = more, wide
    extra = 0
    if cap is None and r >= 2 and not {a for pair in candidates for a in pair} & set(ordered) and len(ordered) >= 2:
        # Every pair that fits whole gets a round and no number or date is in any of them (1,000 students: nine
        # pairs of five categories, three scores in none): the numbers would come back unrelated to each other
        # (reading × writing Spearman 0.96 → 0.0).  Their grouped pairs get rounds of their own after the whole
        # pairs' (``whole_rounds``), each with a whole pair's ρ, taken from the one-way share: the whole pairs keep
        # their rounds (letting the grouped pairs compete for them took the bench's Titanic outcome rounds at
        # ε = 0.3, ML efficacy 0.746 → 0.709) and the one-way marginals keep at least DEFAULT_MIN_ONE_WAY.
        wide = cell_cap(n, floor)
        numbers = [(a, b) for c, a, b in pair_cells(domain.shape, set(ordered), True)
                   if c <= wide and a in ordered and b in ordered]  # fmt: skip
        extra = uncovered_rounds(r, f, len(numbers))
        if extra:
            candidates, cap, grouped_too = sorted(set(candidates) | set(numbers)), wide, len(numbers)
            f = 1.0 - (1.0 - f) * (r + extra) / r
            r = r + extra
    adaptive = dict(params)
    adaptive.setdefault("rounds", r)
    if extra:
        adaptive.setdefault("whole_rounds", r - extra)
    adaptive.setdefault("one_way_fraction", round(f, 4))
    adaptive.setdefault("select_fraction", DEFAULT_SELECT_FRACTION)
    coarser = cap is not None and cap // 4 >= COARSEST_CELLS  # a quarter of the cap still holds a pair's shape
    if cap is not None:
        adaptive.setdefault("max_cells_ordered", cap)
    if coarser:
        adaptive.setdefault("coarser_candidates", DEFAULT_COARSER)
    if last_resort:
        adaptive.setdefault("return_below", DEFAULT_RETURN_BELOW)
    focus_note = ""
    if outcome is not None:
        adaptive, focus_note = outcome_focus(domain, str(outcome), candidates, adaptive)
    valid = AdaptiveProjection.validate_params(adaptive)
    wl = Workload(domain, one_way.marginals + tuple(candidates))
    note = (
        f"the default: all {p} one-way marginals ({valid['one_way_fraction']:.0%} of the budget), then "
        f"{valid['rounds']} two-way marginal{'s' if valid['rounds'] != 1 else ''}, each chosen from the data "
        f"(under DP, with a tenth of its share) as the pair the fit so far gets most wrong, among the "
        f"{len(candidates)} pairs whose cells hold enough rows to stand above the noise at this n and ε "
        f"({floor:,.0f} rows a cell or more on average"
        + (
            f"; no pair fits whole, so each is measured in at most {cap:,} cells, its numeric and date values grouped"
            if last_resort
            else f"; {grouped_too} of them measured in at most {cap:,} cells, their numeric and date values grouped"
            if grouped_too
            else ""
        )
        + (
            f"; a pair of two numbers or dates may also be measured in at most {(cap or 0) // 4:,} cells, where "
            "that holds its association above the noise"
            if coarser
            else ""
        )
        + (
            f"; the first {r - extra} rounds choose among the pairs that fit whole and the last {extra} among the "
            "grouped pairs of numbers or dates, which no whole pair holds"
            if extra
            else ""
        )
        + "); fewer pairs, each measured better, when ε or n is small. "
        + focus_note
        + "Unmeasured pairs come out as independent as the measured marginals allow. Choosing the marginals "
        "yourself (--k/--marginals; another mode on the Workload page) measures them all with the projection instead"
    )
    return AdaptiveProjection, adaptive, wl, note


def focus_rounds(rounds: int, outcome_pairs: int) -> int:
    """How many of the default's ``rounds`` choose among the outcome's ``outcome_pairs`` candidate pairs first:
    half of them (at least one), never more than there are.  Measured on ten real tables (docs/benchmarks.md):
    every round on the outcome's pairs raised ML efficacy most but lost the other pairs (randhie at ε = 1: 2-way
    TVD 0.018 → 0.047); half kept them."""
    return min(int(outcome_pairs), max(1, (int(rounds) + 1) // 2)) if rounds > 0 else 0


def outcome_focus(domain, outcome: str, candidates, adaptive: dict) -> tuple[dict, str]:
    """The adaptive projection's ``focus`` and ``focus_rounds`` for the column the analyst will predict, and
    what the note says about it.  Public: the name, the candidates (from n, the sizes, ε and δ) and the rounds."""
    if outcome not in domain.names:
        return adaptive, (
            f"The outcome {outcome} was left out by the schema (see the warnings), so the pairs are chosen among all. "
        )
    o = domain.names.index(outcome)
    theirs = [c for c in candidates if o in c]
    rounds = int(adaptive.get("rounds") or 0)
    if theirs and rounds >= len(candidates) and adaptive.get("return_below") is None:
        # Every candidate is measured whatever the order: the outcome's pairs are among them.
        return adaptive, f"Every candidate pair is measured, the outcome {outcome}'s {len(theirs)} among them. "
    k = focus_rounds(rounds, len(theirs))
    if k == 0:
        return adaptive, (
            f"None of the outcome {outcome}'s pairs holds enough rows a cell to stand above the noise, so the "
            "pairs are chosen among the others. "
        )
    first = "The first of them is" if k == 1 else f"The first {k} of them are"
    return {**adaptive, "focus": o, "focus_rounds": k}, (
        f"{first} chosen among the outcome {outcome}'s {len(theirs)} candidate pair{'s' if len(theirs) != 1 else ''} "
        "(the column you will predict: a model trained on the rows sees the associations with it the data "
        "supports). "
    )


def fitted_default_workload(domain, n: int, mech_cls, budget: Budget, vparams: dict) -> Workload:
    """The default workload that fits the table (:func:`dpcore.workload.default_workload`) and this run's noise:
    when the mechanism's public plan says its pairs would come back mostly noise (expected noise per cell above
    what a cell holds), the pairs are chosen again among those whose cells hold at least that much.  Public:
    n, the attribute sizes, ε, δ and the parameters."""
    from .workload import MIN_ROWS_PER_CELL, default_workload

    wl = default_workload(domain, n)
    try:
        sigma = mech_cls().plan(n, wl, budget, vparams).get("sigma_counts")
    except DPCoreError:
        return wl  # the caller's own plan says why
    if sigma is None or not plan_warnings({"sigma_counts": sigma}, wl, n):
        return wl
    noise = float(sigma) * math.sqrt(2.0 / math.pi)
    return default_workload(domain, n, min_rows_per_cell=max(MIN_ROWS_PER_CELL, noise))


def _table_workload(spec, dataset) -> Workload:
    from .workload import default_workload

    if spec is None:
        return default_workload(dataset.domain, dataset.n)
    if isinstance(spec, Workload):
        if spec.domain != dataset.domain:
            raise DPCoreError("The workload was built for another schema than the one this table now has.")
        return spec
    k = int(spec.get("k", 2))
    cap = spec.get("max_cells", dataset.n)
    marginals = spec.get("marginals", "all")
    if str(marginals).lower() == "all":
        return Workload.all_kway(dataset.domain, k, max_cells=cap)
    return Workload.random_kway(dataset.domain, k, int(marginals), seed=int(spec.get("seed", 0)), max_cells=cap)


def _run(
    dataset,
    workload,
    mech_cls,
    vparams,
    budget,
    mech_budget,
    defaulted,
    warnings,
    noise,
    ledger,
    run_id,
    data,
    schema_spends,
    progress,
    cancel,
    oracle_options,
    executor,
    class_width,
    numeric,
    *,
    schema_charged: bool = True,
    guarantee: str | None = None,
):
    """The mechanism's run, the settled ledger, the card and the internal evaluation (shared by both paths).

    ``schema_charged=False``: the schema spends were charged by an earlier run; they go on the card only.
    ``guarantee`` overrides the run's own (a seeded discovery makes the release a demo too)."""
    ctx = RunContext(
        noise=noise, progress=progress, cancel=cancel, oracle_options=dict(oracle_options or {}), executor=executor
    )
    t0 = time.perf_counter()
    result = mech_cls().run(dataset, workload, mech_budget, vparams, ctx)
    seconds = time.perf_counter() - t0
    _check_spent(result, mech_budget)
    if ledger is not None:
        ledger.settle(run_id, [*(schema_spends if schema_charged else ()), *result.spends], result.accountant)
    guarantee = guarantee or noise.guarantee
    if result.rows is not None:
        released = workload.answers(result.rows, result.weights)
    elif result.answers is not None:
        released = np.asarray(result.answers, dtype=float)
    else:
        released = None
    n_rows = None if result.rows is None else int(result.rows.shape[0])
    card = release_card(
        mech_cls,
        vparams,
        budget,
        defaulted,
        result,
        data,
        workload,
        n_rows_released=n_rows,
        guarantee=guarantee,
        schema_spends=schema_spends,
        rows_rule=rows_rule(mech_cls, vparams, result.public, dataset.n, n_rows),
    )
    if vparams.get("focus") is not None:  # the card names the column, not only its position (public: the schema)
        card["parameters"]["focus_column"] = dataset.domain.attributes[int(vparams["focus"])].name
    rel = Release(
        run_id=run_id,
        mechanism=mech_cls.name,
        params=vparams,
        budget=budget,
        delta_defaulted=defaulted,
        dataset_name=dataset.name,
        dataset_id=dataset.ledger_key,
        n=dataset.n,
        workload=workload,
        card=card,
        guarantee=guarantee,
        seconds=seconds,
        rows=result.rows,
        weights=result.weights,
        answers=released,
        synopsis=result.synopsis,
        model=result.model,
        public=dict(result.public),
        spends=[*schema_spends, *result.spends],
        warnings=warnings,
        numeric=numeric,
        decode_seed=int(ctx.rng.integers(0, 2**63 - 1)),
    )
    return rel, evaluate_release(dataset, workload, mech_cls, result, released, seconds, vparams, class_width)


def rows_rule(mech_cls, vparams: dict, public: dict, n: int, n_rows: int | None) -> str | None:
    """Why the release has the number of rows it has (public: parameters and n only)."""
    if n_rows is None:
        return None
    if vparams.get("rows") is not None:
        return f"{n_rows:,} rows, as asked for (parameter rows)."
    rule = getattr(mech_cls, "rows_rule", "")
    if rule:
        try:
            return rule.format(n=n, rows=n_rows, **vparams, **public)
        except (KeyError, IndexError, ValueError):
            return rule
    if n_rows == n:
        return f"{n_rows:,} rows: as many as the table has (n is public)."
    return f"{n_rows:,} rows: the number {mech_cls.title} produces with these public parameters."


def evaluate_release(dataset, workload, mech_cls, result, released, seconds, vparams, class_width=None):
    """INTERNAL: the errors of a release on the private data (not differentially private)."""
    true = workload.answers(dataset.codes)
    report = evaluation_report(
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
        report["class_error"] = class_error(dataset, result, int(class_width))
    return InternalEvaluation(report=report, true_answers=true, released_answers=released)


def _check_spent(result: MechanismResult, budget: Budget) -> None:
    """A mechanism may never report spending more than it was given."""
    tol = 1e-9 * max(1.0, budget.epsilon)
    if result.epsilon_spent > budget.epsilon + tol or result.delta_spent > budget.delta + 1e-15:
        raise BudgetError(
            f"Internal accounting error: spent (ε={result.epsilon_spent}, δ={result.delta_spent}) "
            f"exceeds the budget (ε={budget.epsilon}, δ={budget.delta}); nothing was released."
        )
