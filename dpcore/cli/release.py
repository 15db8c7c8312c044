"""``dpcore release``: run one mechanism and write the synthetic data, the card and reports."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import DPCoreError
from .common import add_data_args, add_workload_args, add_workspace_arg, build_workload, load
from .progress import ProgressBar


def add_parser(sub) -> None:
    p = sub.add_parser("release", help="run one mechanism and write synthetic data + reports")
    add_data_args(p)
    add_workload_args(p)
    p.add_argument("--mechanism", default="dualquery", help="registry name (see `dpcore mechanisms`)")
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
    p.add_argument("--out", default=None, help="synthetic CSV (decoded labels)")
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
    out = {}
    for it in items:
        if "=" not in it:
            raise DPCoreError(f"--param takes NAME=VALUE, got {it!r}.")
        k, v = it.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def run(args) -> int:
    from ..executors import executor_from_spec
    from ..mechanisms import registry
    from ..privacy.ledger import Ledger
    from ..release import resolve_budget
    from ..runs import execute_release
    from ..workspace import Workspace

    ws = Workspace(args.workspace)
    ds = load(args)
    budget, _, _ = resolve_budget(args.epsilon, args.delta, ds.n)  # refuses δ ≥ 1/n before anything else
    wl = build_workload(args, ds)
    mech_cls = registry.get(args.mechanism)
    params = parse_params(args.param)
    if args.rows is not None:
        params["rows"] = args.rows
    if not args.quiet:
        say_cost(Ledger(ws), ds, budget.epsilon, budget.delta, args.budget, args.seed)
    oracle_options = {"time_limit": args.time_limit} if args.time_limit else {}
    executor = executor_from_spec(args.executor) if mech_cls.uses_oracle else None
    try:
        with ProgressBar(args.quiet) as bar:
            rel, internal, run_id = execute_release(
                ws,
                ds,
                wl,
                args.mechanism,
                args.epsilon,
                args.delta,
                params,
                seed=args.seed,
                label=args.label,
                budget_cap=args.budget,
                progress=bar,
                oracle_options=oracle_options,
                executor=executor,
                class_width=getattr(args, "class_width", None),
            )
    finally:
        if executor is not None:
            executor.close()
    for w in rel.warnings:
        print(f"warning: {w}", file=sys.stderr)
    ev = internal.report
    if not args.quiet:
        print(
            f"{mech_cls.title}: ε = {rel.card['privacy']['epsilon_spent']:.4g} spent of {rel.budget.epsilon:g}, "
            f"δ = {rel.budget.delta:.3g}{' (default 1/n²)' if rel.delta_defaulted else ''}; "
            f"{wl.n_queries:,} queries; max error {ev['max_error']:.4f}, mean error {ev['mean_error']:.5f} "
            f"(internal, not private); {rel.seconds:.1f} s; run {run_id} in {ws.path}"
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


def say_cost(ledger, dataset, epsilon: float, delta: float, budget: float | None, seed: int | None) -> None:
    """Cost before spend: what this run charges and the dataset's total after it (stderr)."""
    after = ledger.preview(dataset.ledger_key, dataset.n, epsilon, delta)
    cap = budget if budget is not None else after["cap_epsilon"]
    cap_text = f" of a cap of ε = {cap:g}" if cap is not None else " (no cap set; --budget EPS sets one)"
    demo = " (a DEMO run: fixed seed)" if seed is not None else ""
    print(
        f"This run charges ε = {epsilon:g}, δ = {delta:.3g} to {dataset.name}{demo}; the dataset's total after it: "
        f"ε = {after['epsilon']:.4g}{cap_text} (basic composition).",
        file=sys.stderr,
    )


#: What the report says about oracle use when a mechanism calls no solver.
NO_ORACLE = {"calls": 0, "median_solve_seconds": None, "statuses": {}}


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
