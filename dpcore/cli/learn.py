"""``python -m dpcore learn``: private classifiers over a grid of ε, with test accuracy per method.

Private by default: every run's noise comes from the cryptographic source; ``--seed`` makes the whole
evaluation a reproducible demo whose models say their guarantee is "none".  δ must be below 1/n (n the
table's rows; default 1/n²).  ``--models`` writes one model file per private method and ε (its first
run, chosen without looking at accuracy), each carrying its guarantee; the non-private reference is
never written.

Every private run touched the training rows, so the evaluation is charged to the workspace ledger
(``--workspace``, else $DPCORE_WORKSPACE, else the per-user folder) *before* it starts: the sum of all
runs' (ε, δ) (basic composition), checked against the dataset's cap (``--budget``).  A cancelled or failed
evaluation stays charged.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from ..learning import NEIGHBOURS
from ..learning.features import (
    ADULT_LABEL,
    ADULT_POSITIVE,
    ADULT_SEVEN,
    DEFAULT_BALANCE_EPSILON,
    FeatureEncoding,
    prepare,
)
from .common import add_workspace_arg


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "learn", help="train private classifiers (OPDisc, RSPM, PRSMA, DP-LR) and compare their test accuracy over ε"
    )
    p.add_argument("--data", default="adult", help="table, integer-coded CSV, or 'adult' (bundled, default)")
    p.add_argument("--domain", default=None, help="schema JSON (default: declared for 'adult', else inferred)")
    p.add_argument("--label", default=None, help=f"label column (default {ADULT_LABEL} for adult)")
    p.add_argument(
        "--positive",
        default=None,
        help="label value(s) counted positive, '|'-separated (needed when the label has more than two values)",
    )
    p.add_argument(
        "--features",
        default=None,
        help="comma-separated features: 'name' (one-hot), 'name=V1|V2' (in set), 'name>=X' (threshold); "
        "default for adult: the seven-feature setting " + ",".join(ADULT_SEVEN),
    )
    p.add_argument(
        "--methods",
        default="opdisc,rspm,dplr",
        help="comma-separated, from opdisc, rspm, rspm-gauss, rspm-conj, prsma, dplr, nonprivate",
    )
    p.add_argument("--epsilons", default="0.5,1,2,4")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument(
        "--delta",
        type=float,
        default=None,
        help="δ of the (ε, δ) methods: below 1/n, n the table's rows (default 1/n²)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="fixed seed: a reproducible DEMO whose models carry no privacy guarantee (default: cryptographic noise)",
    )
    p.add_argument(
        "--balance",
        action="store_true",
        help="train on a balanced subset ([NRVW20] §5) sized by a DP count of the positive class; each run's ε "
        "includes that count's share and the learner runs at (ε - share)/2 (group privacy)",
    )
    p.add_argument(
        "--balance-epsilon",
        type=float,
        default=DEFAULT_BALANCE_EPSILON,
        help=f"ε share of the DP count behind --balance (default {DEFAULT_BALANCE_EPSILON:g})",
    )
    p.add_argument("--no-balance", action="store_true", help=argparse.SUPPRESS)  # the default since issue 12
    p.add_argument("--test-fraction", type=float, default=0.3)
    p.add_argument("--max-rows", type=int, default=None, help="subsample to at most this many rows first")
    p.add_argument("--bound", type=int, default=2, help="integer weights in {-bound..bound} (units of τ)")
    p.add_argument("--tau", type=float, default=1.0, help="grid step τ")
    p.add_argument("--D", type=float, default=4.0, help="norm bound ||w|| <= D")
    p.add_argument("--time-limit", type=float, default=60.0, help="SCIP seconds per oracle call")
    p.add_argument("--lam", type=float, default=1e-3, help="DP-LR regulariser Λ")
    p.add_argument("--prsma-max-calls", type=int, default=20_000)
    p.add_argument("--executor", default="serial", help="serial (default), local, or ray[:ADDRESS]")
    p.add_argument("--out", default=None, help="write every run and the summary as JSON")
    p.add_argument(
        "--models",
        default=None,
        help="folder: one model JSON per private method and ε (its first run), each with its guarantee",
    )
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object on the last line")
    add_workspace_arg(p)
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        metavar="EPS",
        help="cap on this dataset's total ε in the workspace ledger (set or changed, recorded); an evaluation "
        "that would exceed it is refused before it touches the data",
    )
    p.add_argument("--quiet", action="store_true")


def load_learning_dataset(data: str, domain: str | None):
    from ..data import load_any

    return load_any(data, domain)


def run(args) -> int:
    from ..learning.evaluate import LearnSettings, evaluate, parse_epsilons, parse_methods, plan  # scipy: load on use
    from ..privacy.samplers import Randomness

    ds = load_learning_dataset(args.data, args.domain)
    is_adult = str(args.data) in ("adult", "adult_census", "bundled")
    label = args.label or (ADULT_LABEL if is_adult else None)
    if label is None:
        from ..errors import ParameterError

        raise ParameterError(f"Say which column is the label with --label (columns: {ds.domain.names}).")
    features = (
        args.features.split(",")
        if args.features
        else (list(ADULT_SEVEN) if is_adult and label == ADULT_LABEL else None)
    )
    if features is None:
        from ..errors import ParameterError

        raise ParameterError("Choose features with --features (e.g. --features 'age>=30,sex').")
    positive = (
        args.positive if args.positive is not None else (ADULT_POSITIVE if is_adult and label == ADULT_LABEL else None)
    )
    enc = FeatureEncoding.build(ds.domain, label, features, positive)
    methods = parse_methods(args.methods)
    epsilons = parse_epsilons(args.epsilons)
    noise = Randomness(args.seed)  # None -> cryptographic; a seed makes every model a demo
    rng = np.random.default_rng(args.seed)  # the split: public positions, never the data
    data = prepare(
        ds,
        enc,
        rng,
        balance=args.balance,
        test_fraction=args.test_fraction,
        max_rows=args.max_rows,
        balance_epsilon=args.balance_epsilon,
    )
    settings = LearnSettings(
        bound=args.bound,
        tau=args.tau,
        D=args.D,
        delta=args.delta,
        time_limit=args.time_limit,
        lam=args.lam,
        prsma_max_calls=args.prsma_max_calls,
    )
    figures = plan(data, methods, epsilons, settings, ds.domain)  # refuses δ ≥ 1/n, naming n and the limit
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, file=sys.stderr))
    if noise.seeded:
        print(
            "DEMO: --seed fixes the noise, so these models carry no privacy guarantee (guarantee: none).",
            file=sys.stderr,
        )
    say(
        f"table rows n = {ds.n:,}; training rows {data.n_train:,}"
        + (" before the balanced subset's DP count" if args.balance else "")
        + f", test rows {len(data.y_test):,}, features {enc.d} ({', '.join(enc.names)})"
    )
    say(f"neighbours: {NEIGHBOURS}")
    calls = sum(f["oracle_calls"] for f in figures) * args.runs
    say(f"planned: {len(methods)} method(s) × {len(epsilons)} ε × {args.runs} run(s), about {calls:,} oracle calls")
    total_eps, total_delta = _planned_cost(methods, epsilons, args.runs, settings, data.n_public)
    from ..privacy.ledger import Ledger
    from ..release import new_run_id
    from ..workspace import Workspace

    ledger, run_id = Ledger(Workspace(args.workspace)), new_run_id()
    if total_eps > 0:
        after = ledger.preview(ds.ledger_key, ds.n, total_eps, total_delta)
        cap = args.budget if args.budget is not None else after["cap_epsilon"]
        say(
            f"This evaluation charges ε = {total_eps:g}, δ = {total_delta:.3g} to {ds.name} (basic composition of "
            f"all runs{'; a DEMO: fixed seed' if noise.seeded else ''}); the dataset's total after it: "
            f"ε = {after['epsilon']:.4g}"
            + (f" of a cap of ε = {cap:g}." if cap is not None else " (no cap set; --budget EPS sets one).")
        )
        # charged before any run reads a row; a cancelled or failed evaluation stays charged
        ledger.reserve(
            dataset=ds.ledger_key,
            name=ds.name,
            n=ds.n,
            run=run_id,
            mechanism="learn:" + ",".join(m for m in methods if m != "nonprivate"),
            epsilon=total_eps,
            delta=total_delta,
            budget=args.budget,
            accountant="basic composition of the runs",
            note=("demo (fixed seed); " if noise.seeded else "") + f"{args.runs} run(s) × {len(epsilons)} ε",
        )

    def progress(done, total, message):
        say(f"  [{done}/{total}] {message}")

    from ..executors import executor_from_spec

    with executor_from_spec(args.executor) as ex:
        ev = evaluate(
            data,
            methods,
            epsilons,
            args.runs,
            settings,
            noise,
            executor=None if ex.name == "serial" else ex,
            progress=progress,
        )
    if total_eps > 0:
        ledger.settle(run_id, _spends(ev), "basic composition of the runs")
    summary = ev.summary()
    print("method | epsilon | runs | accuracy_mean | accuracy_std | seconds | solver_failures | bottom_outputs")
    for r in summary:
        print(
            " | ".join(
                _fmt(r[k])
                for k in (
                    "method",
                    "epsilon",
                    "runs",
                    "accuracy_mean",
                    "accuracy_std",
                    "seconds",
                    "solver_failures",
                    "bottom_outputs",
                )
            )
        )
    fails = ev.failures()
    if fails:
        print(
            f"WARNING: {len(fails)} oracle call(s) did not certify optimality; for those runs of an "
            "oracle-dependent method (OPDisc, RSPM) the privacy guarantee does NOT hold:",
            file=sys.stderr,
        )
        for f in fails:
            print(f"  {f}", file=sys.stderr)
    print("Test accuracy is computed on held-out private rows: an internal evaluation, not differentially private.")
    if args.out:
        Path(args.out).write_text(
            json.dumps({**ev.to_dict(), "encoding": enc.to_dict(), "plan": figures}, indent=2, default=float)
        )
    if args.models:
        written = write_models(ev, enc, Path(args.models))
        say(f"wrote {len(written)} model file(s) to {args.models} (the non-private reference is never written)")
    if args.json:
        print(
            json.dumps(
                {
                    "summary": summary,
                    "failures": fails,
                    "guarantee": ev.guarantee,
                    "n_table": ev.n_table,
                    "n_train": ev.n_train,
                },
                default=float,
            )
        )
    return 0


def _planned_cost(methods, epsilons, runs, settings, n_table) -> tuple[float, float]:
    from ..learning.evaluate import spent

    eps = delta = 0.0
    for m in methods:
        if m == "nonprivate":
            continue
        for e in epsilons:
            e_run, d_run = spent(m, e, settings, n_table)
            eps += runs * e_run
            delta += runs * d_run
    return eps, delta


def _spends(ev) -> list:
    """One ledger entry per private run (their sum is what was reserved)."""
    from ..mechanisms.base import SpendRecord

    return [
        SpendRecord(
            r["epsilon_spent"], r["delta_spent"], None, f"learn:{r['method']} ε = {r['epsilon']:g}, run {r['run'] + 1}"
        )
        for r in ev.records
        if r["epsilon_spent"] > 0
    ]


def write_models(ev, encoding, folder: Path) -> list[Path]:
    """One file per private (method, ε): its first run with a model, written without looking at accuracy."""
    folder.mkdir(parents=True, exist_ok=True)
    seen, written = set(), []
    for r in ev.records:
        key = (r["method"], r["epsilon"])
        if key in seen or r.get("model") is None or r["method"] == "nonprivate" or r["epsilon"] is None:
            continue
        seen.add(key)
        path = folder / f"{r['method']}_eps{r['epsilon']:g}.json"
        path.write_text(r["model"].to_json(encoding, selected_after_test_accuracy=False))
        written.append(path)
    return written


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
