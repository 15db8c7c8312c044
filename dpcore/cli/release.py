"""``dpcore release``: run one mechanism and write the synthetic data, the card and reports."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import DPCoreError
from ..release import choose_columns, plan_release, plan_warnings, resolve_budget
from .common import (
    add_data_args,
    add_workload_args,
    add_workspace_arg,
    build_workload,
    confirmed_roles,
    name_value_pairs,
    open_source,
    workload_spec,
)
from .progress import ProgressBar


def add_parser(sub) -> None:
    p = sub.add_parser("release", help="run one mechanism and write synthetic data + reports")
    add_data_args(p)
    add_workload_args(p)
    p.add_argument(
        "--mechanism",
        default="auto",
        help="registry name (see `dpcore mechanisms`); default auto: the projection of the marginals you choose "
        "(--k/--marginals), or with none chosen, every one-way marginal and the pairs the noise leaves room for, "
        "chosen from the data by the adaptive projection when there are more candidates than room",
    )
    p.add_argument(
        "--outcome",
        default=None,
        metavar="COLUMN",
        help="the column you will predict from the release (a public choice, free): the default measures its pairs "
        "first -- half of its pair rounds choose among them -- so a model trained on the rows sees the associations "
        "with it the data supports (default mechanism and workload only)",
    )
    p.add_argument("--epsilon", type=float, required=False, default=1.0)
    p.add_argument("--delta", type=float, default=None, help="default 1/n² (the report says so)")
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="fix the randomness: a reproducible DEMO whose card says its guarantee is none "
        "(default: cryptographic randomness, a real release)",
    )
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="mechanism parameter, repeatable (e.g. --param eta=0.4)",
    )
    p.add_argument("--rows", type=int, default=None, help="number of synthetic rows, where the mechanism allows")
    p.add_argument(
        "--class-width",
        type=int,
        default=None,
        metavar="K",
        help="also target/evaluate the class of ALL conjunctions of width ≤ K (never listed): "
        "privlearn/oraclequery answer it; the report adds the error on sampled members",
    )
    p.add_argument("--time-limit", type=float, default=None, help="SCIP time limit per oracle call, seconds")
    p.add_argument("--executor", default=None, help="local (default), serial, or ray[:ADDRESS]")
    p.add_argument("--out", default=None, help="synthetic CSV, in the input's shape (or the released answers)")
    p.add_argument(
        "--roles",
        default=None,
        metavar="COL=ROLE,...",
        help="confirm column roles (public choices, free): categorical, numeric, integer, real, "
        "datetime, excluded; date:FORMAT (date:%%d/%%m/%%Y) and integer:STYLE or real:STYLE (real:$,.2, "
        "real:# kg: how the release writes the numbers; `dpcore info FILE` proposes them); unconfirmed roles are "
        "decided privately",
    )
    p.add_argument(
        "--missing-text",
        default=None,
        metavar="TEXT|COL=TEXT,...",
        help="how the file writes a missing cell (NA, ?, NULL, ...) in the columns --roles confirms, declared with "
        "them: one text for all, or per column; the release's CSV writes it there (`dpcore info FILE` proposes it)",
    )
    p.add_argument(
        "--columns",
        default=None,
        metavar="A,B,C",
        help="the columns to release, chosen first (a public choice by name): the schema's discovery and its budget "
        "cover only these (default: every column)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="run even when the plan expects the private schema to keep (nearly) nothing at this budget",
    )
    p.add_argument(
        "--schema-from-data",
        action="store_true",
        help="read roles, category lists and bounds off the data WITHOUT privacy (convenient, not "
        "private: the card says the schema is not covered)",
    )
    p.add_argument(
        "--schema-share",
        type=float,
        default=None,
        help="share of ε (and δ) that private schema discovery may spend (default: fitted to the table, the "
        "smallest of 20/30/40/50/60%% whose plan keeps something)",
    )
    p.add_argument(
        "--numeric",
        choices=["values", "bins"],
        default="values",
        help="numeric and date columns as values in the input's shape (default) or as bin labels",
    )
    p.add_argument(
        "--report", default=None, help="report JSON: public release card plus the internal evaluation (not private)"
    )
    p.add_argument("--card", default=None, help="public release card alone (JSON)")
    p.add_argument("--synopsis", default=None, help="the released synopsis model (JSON), for synopsis mechanisms")
    p.add_argument("--quiet", action="store_true")
    add_workspace_arg(p)
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        metavar="EPS",
        help="cap on this dataset's total ε in the workspace ledger (set or changed, recorded); a release "
        "that would exceed it exits with status 2 and writes nothing",
    )
    p.add_argument("--label", default="", help="a label for this run in the workspace (shown in the app)")


def parse_params(items: list[str]) -> dict:
    return name_value_pairs(items, "--param takes NAME=VALUE")


def _fitted_default(ds, mech_cls, budget, params: dict, fallback):
    from ..release import fitted_default_workload

    try:
        return fitted_default_workload(
            ds.domain, ds.n, mech_cls, budget, mech_cls.validate_params(without_rows(params))
        )
    except DPCoreError:
        return fallback  # the run refuses with its own message, before spending


def without_rows(params: dict) -> dict:
    return {k: v for k, v in params.items() if k != "rows"}


def run(args) -> int:
    from ..executors import executor_from_spec
    from ..mechanisms import registry
    from ..privacy.ledger import Ledger
    from ..runs import execute_release
    from ..workspace import Workspace

    ws = Workspace(args.workspace)
    from ..release import OUTCOME, base_mechanism, check_outcome, is_auto

    mech_cls = registry.get(base_mechanism(args.mechanism))
    params = parse_params(args.param)
    if args.rows is not None:
        params["rows"] = args.rows
    if args.outcome is not None:
        if not is_auto(args.mechanism):
            raise DPCoreError(
                "--outcome steers the default's choice of pairs; with --mechanism named, choose the marginals "
                "yourself (--k/--marginals) or drop --mechanism."
            )
        params[OUTCOME] = args.outcome
    source = open_source(args)
    n = source["n"]
    budget, _, _ = resolve_budget(args.epsilon, args.delta, n)  # refuses δ ≥ 1/n before anything else
    if args.columns is not None:
        if source["table"] is None:
            raise DPCoreError("--columns chooses columns of a raw table; an integer-coded table has its schema.")
        source["table"] = choose_columns(source["table"], args.columns)
    if source["table"] is not None:
        check_outcome(params, source["table"].columns)  # before the plan and the cost are said
    schema_share = args.schema_share
    if source["table"] is not None and not args.schema_from_data:
        schema_share = check_plan(source, args, budget)  # public: refuses an empty release before any charge
    workload = None
    mechanism = args.mechanism  # a raw table's "auto" is resolved once its schema is known (release_table)
    chosen_by = None
    if source["table"] is None:  # a coded table: the workload is known before the run
        ds_coded = source["dataset"]
        check_outcome(params, ds_coded.domain.names)
        workload = build_workload(args, ds_coded)
        if args.k is None and args.marginals is None and is_auto(args.mechanism):
            from ..release import default_release_plan

            # public; a parameter neither mechanism takes is refused here, before anything is spent
            mech_cls, params, workload, chosen_by = default_release_plan(ds_coded.domain, n, budget, params)
        elif is_auto(args.mechanism):  # a workload given: the projection, and only its parameters
            from ..release import projection_only

            params = projection_only(params)
        elif args.k is None and args.marginals is None:  # the default: fitted to this run's noise too
            from ..release import default_workload_note

            workload = _fitted_default(source["dataset"], mech_cls, budget, params, workload)
            chosen_by = default_workload_note(workload, n)
        mechanism = mech_cls.name
    said: list[str] = []
    if workload is not None:  # a coded table's workload is known before the run: warn before anything is spent
        try:
            plan = plan_release(n, workload, mechanism, args.epsilon, args.delta, without_rows(params))
        except DPCoreError:
            plan = {}  # the run below refuses with its own message, before spending
        said = plan_warnings(plan, workload, n)
        for w in said:
            print(f"warning: {w}", file=sys.stderr)
    if not args.quiet:
        for r in source.get("renamed", []):
            print(f"renamed column {r['original']!r} to {r['name']!r} (repeated or empty header)", file=sys.stderr)
        if source["table"] is not None and not args.schema_from_data:
            said += say_discovery(source, args, budget, schema_share)
        say_cost(Ledger(ws), source["key"], source["name"], n, budget.epsilon, budget.delta, args.budget, args.seed)
    oracle_options = {"time_limit": args.time_limit} if args.time_limit else {}
    executor = executor_from_spec(args.executor) if mech_cls.uses_oracle else None
    common = dict(
        seed=args.seed,
        label=args.label,
        budget_cap=args.budget,
        oracle_options=oracle_options,
        executor=executor,
        class_width=getattr(args, "class_width", None),
        numeric=args.numeric,
    )
    try:
        with ProgressBar(args.quiet) as bar:
            if source["table"] is not None:
                options = {
                    "schema": source["schema"],
                    "roles": confirmed_roles(args),
                    "schema_from_data": args.schema_from_data,
                    "schema_share": args.schema_share,
                    "force": args.force,
                }
                rel, internal, run_id = execute_release(
                    ws,
                    None,
                    workload_spec(args),
                    args.mechanism,
                    args.epsilon,
                    args.delta,
                    params,
                    progress=bar,
                    table=source["table"],
                    table_options=options,
                    **common,
                )
            else:
                ds = source["dataset"]
                rel, internal, run_id = execute_release(
                    ws,
                    ds,
                    workload,
                    mechanism,
                    args.epsilon,
                    args.delta,
                    params,
                    progress=bar,
                    chosen_by=chosen_by,
                    **common,
                )
    finally:
        if executor is not None:
            executor.close()
    for w in rel.warnings:
        if w not in said:
            print(f"warning: {w}", file=sys.stderr)
    ev = internal.report
    if not args.quiet:
        rows = rel.card["output"].get("rows_rule")
        from ..report import kept_lines  # what the release kept: its error figures are measured on these only

        for line in kept_lines(rel.card, rel.rows):
            print(line)
        chosen_by = rel.card["workload"].get("chosen_by")
        if chosen_by:
            print(f"Workload: {chosen_by}.")
        print(
            f"{rel.card['mechanism']['title']}: ε = {rel.card['privacy']['epsilon_spent']:.4g} spent of "
            f"{rel.budget.epsilon:g}, "
            f"δ = {rel.budget.delta:.3g}{' (default 1/n²)' if rel.delta_defaulted else ''}; "
            f"{rel.workload.n_queries:,} queries; max error {ev['max_error']:.4f}, mean error "
            f"{ev['mean_error']:.5f} (internal, not private); {rel.seconds:.1f} s; run {run_id} in {ws.path}"
        )
        if rows:
            print(f"rows: {rows}" + (f" ({ev['distinct_rows']:,} distinct; internal)" if "distinct_rows" in ev else ""))
        if ev.get("worse_than_uniform"):
            print(
                "warning (internal): this release answers its own workload worse than uniform rows would; use a "
                "larger ε, fewer or smaller marginals, or a declared schema",
                file=sys.stderr,
            )
        if rel.demo:
            print(
                "DEMO: a fixed seed makes the noise reproducible; the card says its guarantee is none. "
                "Do not publish this output.",
                file=sys.stderr,
            )
    if getattr(args, "synopsis", None) and rel.synopsis_json() is None:
        raise DPCoreError(f"{rel.mechanism} releases no synopsis; drop --synopsis.")
    if args.out:
        rel.write_synthetic_csv(args.out)
    if args.report:
        Path(args.report).write_text(json.dumps(cli_report(rel, internal), indent=2, default=float))
    if args.card:
        Path(args.card).write_text(json.dumps(rel.card, indent=2, default=float))
    if getattr(args, "synopsis", None):
        Path(args.synopsis).write_text(json.dumps(rel.synopsis_json(), indent=2, default=float))
    return 0


def _joint(args, budget) -> bool:
    """Whether this run converts the discovery and a ρ-zCDP mechanism once (as release_table decides)."""
    from ..mechanisms import registry
    from ..release import base_mechanism, joint_conversion

    return joint_conversion(registry.get(base_mechanism(args.mechanism)), budget, args.schema_from_data)


def check_plan(source: dict, args, budget) -> float:
    """What the private schema is expected to keep (public); the run does not start when it keeps (nearly) nothing,
    unless --force.  Exit status 2 with the plan and the ways out; nothing is charged.  Returns the schema's share
    of the budget (--schema-share, or the one the plan fitted to the table)."""
    from ..errors import BudgetError
    from ..tabular import schema_plan

    plan = schema_plan(
        source["table"].columns,
        source["n"],
        epsilon=budget.epsilon,
        delta=budget.delta,
        schema=source["schema"],
        roles=confirmed_roles(args),
        schema_share=args.schema_share,
        joint=_joint(args, budget),
    )
    if plan.threshold is None:
        return plan.share  # everything is declared: nothing to plan
    if plan.refuse and not args.force:
        raise BudgetError(plan.refusal())
    if not args.quiet:
        print("The private schema at this budget (public plan, before any spend):", file=sys.stderr)
        for line in plan.lines():
            print(f"  {line}", file=sys.stderr)
        if plan.refuse:
            print("  --force: running although the plan expects (nearly) nothing to be kept.", file=sys.stderr)
    return plan.share


def say_discovery(source: dict, args, budget, share: float) -> list[str]:
    """The schema's private discovery: which columns, what share of the budget (``share``, from :func:`check_plan`)
    and what it can resolve on a table of this size (public, before the run).  Returns the warnings said."""
    from ..discovery import DEFAULT_SCHEMA_SHARE
    from ..tabular import discovery_budget, discovery_outlook, share_note, undecided_columns

    declared = dict(schema=source["schema"], roles=confirmed_roles(args), joint=_joint(args, budget))
    declared["schema_share"] = share
    eps_d, delta_d, cols = discovery_budget(
        source["table"].columns, epsilon=budget.epsilon, delta=budget.delta, **declared
    )
    outlook = discovery_outlook(
        source["table"].columns, source["n"], epsilon=budget.epsilon, delta=budget.delta, **declared
    )
    if cols:
        shown = ", ".join(cols[:8]) + (f" and {len(cols) - 8} more" if len(cols) > 8 else "")
        # A raised share fitted before the roles are known is a ceiling: once they are released, the value sets and
        # bounds take only what those roles need, and the rows the rest (dpcore.tabular.values_share).
        ceiling = (
            declared["joint"]
            and getattr(args, "schema_share", None) is None
            and share > DEFAULT_SCHEMA_SHARE
            and bool(undecided_columns(source["table"].columns, schema=source["schema"], roles=declared["roles"]))
        )  # fmt: skip
        print(
            f"The schema of {len(cols)} column(s) ({shown}) is discovered privately from "
            f"{'at most ' if ceiling else ''}ε = {eps_d:.4g}, δ = {delta_d:.3g} of this budget"
            + ("; what the value sets and bounds of the roles it finds do not need goes to the rows" if ceiling else "")
            + "; declare a schema (--schema) or roles (--roles) to spend less.",
            file=sys.stderr,
        )
    if cols and (raised := share_note(share)) is not None:
        outlook = [raised, *outlook]
    for w in outlook:
        print(f"warning: {w}", file=sys.stderr)
    return outlook


def say_cost(
    ledger, key: str, name: str, n: int, epsilon: float, delta: float, budget: float | None, seed: int | None
) -> None:
    """Cost before spend: what this run charges and the dataset's total after it (stderr)."""
    after = ledger.preview(key, n, epsilon, delta)
    cap = budget if budget is not None else after["cap_epsilon"]
    cap_text = f" of a cap of ε = {cap:g}" if cap is not None else " (no cap set; --budget EPS sets one)"
    demo = " (a DEMO run: fixed seed)" if seed is not None else ""
    print(
        f"This run charges ε = {epsilon:g}, δ = {delta:.3g} to {name}{demo}; the dataset's total after it: "
        f"ε = {after['epsilon']:.4g}{cap_text} (basic composition).",
        file=sys.stderr,
    )


#: What the report says about oracle use when a mechanism calls no solver.
NO_ORACLE: dict[str, object] = {"calls": 0, "median_solve_seconds": None, "statuses": {}}


def cli_report(rel, internal) -> dict:
    """The CLI's ``--report``: public card plus internal evaluation, labelled as such."""
    from ..report import INTERNAL_LABEL

    ev = internal.report
    return {
        "label": "Top-level error figures, seconds and oracle statistics are the "
        + INTERNAL_LABEL
        + " Only 'release_card' may be published.",
        "mechanism": rel.mechanism,
        "epsilon": rel.budget.epsilon,
        "delta": rel.budget.delta,
        "delta_note": (
            f"default 1/n² (n = {rel.n:,}); pass --delta to choose" if rel.delta_defaulted else "given by the user"
        ),
        "epsilon_spent": rel.card["privacy"]["epsilon_spent"],
        "n_queries": rel.workload.n_queries,
        "max_error": ev["max_error"],
        "mean_error": ev["mean_error"],
        "seconds": rel.seconds,
        "oracle": ev.get("oracle") or dict(NO_ORACLE),
        "release_card": rel.card,
        "internal_evaluation": ev,
    }
