"""``python -m dpcore learn``: private classifiers over a grid of ε, with test accuracy per method.

Private by default: every run's noise comes from the cryptographic source; ``--seed`` makes the whole
evaluation a reproducible demo whose models say their guarantee is "none".  δ must be below 1/n (n the
table's rows; default 1/n²).  ``--models`` writes one model file per private method and ε (its first
run, chosen without looking at accuracy), each carrying its guarantee; the non-private reference is
never written.

The schema the features are built from is published with every model (feature names, values, thresholds), so it
takes the release's path: ``adult`` and ``--domain`` are declared (free; a partial schema's missing fields are
discovered); a raw table's roles, category sets and bounds are otherwise discovered under DP with
``--schema-epsilon`` (charged with the evaluation, stated in every model file's ``schema`` and ``epsilon_total``);
``--schema-from-data`` reads them off the data without privacy, explicitly, and every model file then says its
guarantee is "none".

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
    p.add_argument(
        "--domain",
        "--schema",
        dest="domain",
        default=None,
        help="declared schema JSON (free; default: the codebook for 'adult', else discovered privately)",
    )
    p.add_argument(
        "--schema-epsilon",
        type=float,
        default=STANDALONE_EPSILON,
        help=f"ε spent discovering a raw table's undeclared schema privately (default {STANDALONE_EPSILON:g}; "
        "δ 0.2/n²), charged with the evaluation",
    )
    p.add_argument(
        "--schema-from-data",
        action="store_true",
        help="read roles, category lists and bounds off the data WITHOUT privacy (explicit; every model file then "
        "says its guarantee is none)",
    )
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


#: --schema-epsilon's default: dpcore.tabular.STANDALONE_EPSILON, written out so that parsing the command line
#: loads no scipy (tests/test_learn_schema.py keeps the two equal).
STANDALONE_EPSILON = 0.2


def learning_source(args) -> dict:
    """What ``--data`` names, without reading more than the header and the row count: ``{"dataset"}`` when the
    schema is complete and declared (bundled Adult, an integer-coded pair), else ``{"table", "schema"}``."""
    from .common import open_source

    source = open_source(args)
    if source["table"] is None:  # integer-coded, with its schema
        return {k: v for k, v in source.items() if k != "table"}
    if source["name"] == "adult_census" and args.domain is None:  # the bundled sample: its codebook is declared
        from ..data import bundled_adult

        ds = bundled_adult()
        return {"dataset": ds, "n": ds.n, "key": ds.ledger_key, "name": ds.name}
    return source


def schema_cost(source: dict, args) -> tuple[float, float, list[str]]:
    """(ε_d, δ_d, columns) the schema step will spend: public (the header, the declared schema, n)."""
    if "table" not in source or args.schema_from_data:
        return 0.0, 0.0, []
    from ..tabular import STANDALONE_DELTA_SHARE, discovery_budget, standalone_budget

    n = source["n"]
    eps_d, delta_d = float(args.schema_epsilon), STANDALONE_DELTA_SHARE / float(n) ** 2
    if not (eps_d > 0 and eps_d == eps_d and eps_d != float("inf")):
        from ..errors import BudgetError

        raise BudgetError(f"--schema-epsilon must be a positive number (got {args.schema_epsilon}).")
    return discovery_budget(list(source["table"].columns), schema=source["schema"], **standalone_budget(eps_d, delta_d))


def schema_dataset(source: dict, args, noise, run_id: str):
    """The Dataset to learn from and its schema statement (see :func:`dpcore.learning.model.schema_statement`).
    Reads the data: call it only after the ledger holds the reservation."""
    from ..learning.model import schema_statement

    if "dataset" in source:
        return source["dataset"], schema_statement(source["dataset"].domain)
    from ..tabular import prepare_table, standalone_budget

    eps_d, delta_d, _ = schema_cost(source, args)  # (0, 0) when nothing is discovered: the budget is then unused
    prep = prepare_table(
        source["table"],
        schema=source["schema"],
        schema_from_data=args.schema_from_data,
        **standalone_budget(eps_d or 1.0, delta_d or 1e-9),
        noise=noise,
        name=source["name"],
        ledger=None,  # reserved by run(), with the evaluation
    )
    statement = schema_statement(prep.domain, epsilon=prep.epsilon_spent, delta=prep.delta_spent, run=run_id)
    if prep.excluded:
        statement["excluded"] = prep.excluded
    return prep, statement


def run(args) -> int:
    from ..errors import ParameterError
    from ..learning.evaluate import LearnSettings, evaluate, parse_epsilons, parse_methods, plan  # scipy: load on use
    from ..privacy.ledger import Ledger
    from ..privacy.samplers import Randomness
    from ..release import new_run_id
    from ..workspace import Workspace

    source = learning_source(args)  # the header and the row count: nothing else is read before the charge
    names = list(source["dataset"].domain.names if "dataset" in source else source["table"].columns)
    is_adult = str(args.data) in ("adult", "adult_census", "bundled")
    label = args.label or (ADULT_LABEL if is_adult else None)
    if label is None:
        raise ParameterError(f"Say which column is the label with --label (columns: {names}).")
    features = (
        args.features.split(",")
        if args.features
        else (list(ADULT_SEVEN) if is_adult and label == ADULT_LABEL else None)
    )
    if features is None:
        raise ParameterError("Choose features with --features (e.g. --features 'age>=30,sex').")
    positive = (
        args.positive if args.positive is not None else (ADULT_POSITIVE if is_adult and label == ADULT_LABEL else None)
    )
    methods = parse_methods(args.methods)
    epsilons = parse_epsilons(args.epsilons)
    settings = LearnSettings(
        bound=args.bound,
        tau=args.tau,
        D=args.D,
        delta=args.delta,
        time_limit=args.time_limit,
        lam=args.lam,
        prsma_max_calls=args.prsma_max_calls,
    )
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, file=sys.stderr))
    noise = Randomness(args.seed)  # None -> cryptographic; a seed makes every model a demo
    rng = np.random.default_rng(args.seed)  # the split: public positions, never the data
    n = int(source["n"])
    eps_d, delta_d, schema_cols = schema_cost(source, args)
    total_eps, total_delta = _planned_cost(methods, epsilons, args.runs, settings, n)
    if args.schema_from_data and "table" in source:
        print(
            "NOT PRIVATE: --schema-from-data reads the schema off the data without privacy; every model file "
            "says its guarantee is none (a feature name may carry a value held by one row).",
            file=sys.stderr,
        )
    if eps_d > 0:
        say(
            f"schema: {len(schema_cols)} column(s) are not declared; their roles, category sets and bounds are "
            f"discovered privately at ε = {eps_d:g}, δ = {delta_d:.3g} (--schema-epsilon), charged with the "
            "evaluation and stated in every model file. Declare the schema (--schema FILE) to spend nothing."
        )
    ledger, run_id = Ledger(Workspace(args.workspace)), new_run_id()
    charge_eps, charge_delta = total_eps + eps_d, total_delta + delta_d
    if charge_eps > 0:
        after = ledger.preview(source["key"], n, charge_eps, charge_delta)
        cap = args.budget if args.budget is not None else after["cap_epsilon"]
        say(
            f"This evaluation charges ε = {charge_eps:g}, δ = {charge_delta:.3g} to {source['name']} (basic "
            f"composition of all runs{' and the schema discovery' if eps_d > 0 else ''}"
            f"{'; a DEMO: fixed seed' if noise.seeded else ''}); the dataset's total after it: "
            f"ε = {after['epsilon']:.4g}"
            + (f" of a cap of ε = {cap:g}." if cap is not None else " (no cap set; --budget EPS sets one).")
        )
        # charged before any row is read; a cancelled or failed evaluation stays charged
        ledger.reserve(
            dataset=source["key"],
            name=source["name"],
            n=n,
            run=run_id,
            mechanism="learn:" + ",".join(m for m in methods if m != "nonprivate"),
            epsilon=charge_eps,
            delta=charge_delta,
            budget=args.budget,
            accountant="basic composition of the runs" + (" and the schema discovery" if eps_d > 0 else ""),
            note=("demo (fixed seed); " if noise.seeded else "") + f"{args.runs} run(s) × {len(epsilons)} ε",
        )
    prepared = None
    try:
        prepared, schema = schema_dataset(source, args, noise, run_id)
        ds = prepared if "dataset" in source else prepared.dataset
        for column, what in [(label, "label"), *((_feature_column(f), "feature") for f in features)]:
            if column not in ds.domain.names:
                raise ParameterError(_left_out(column, prepared, what))
        enc = FeatureEncoding.build(ds.domain, label, features, positive)
        data = prepare(
            ds,
            enc,
            rng,
            balance=args.balance,
            test_fraction=args.test_fraction,
            max_rows=args.max_rows,
            balance_epsilon=args.balance_epsilon,
        )
        figures = plan(data, methods, epsilons, settings, ds.domain)  # public figures; refuses grids that can't run
    except Exception:
        # a discovered schema was released (it read the data): it stays charged; the learning ran nothing
        if charge_eps > 0:
            done = list(getattr(prepared, "spends", []))
            if prepared is None and eps_d > 0:  # the discovery itself stopped after reading the data
                from ..mechanisms.base import SpendRecord

                done = [SpendRecord(eps_d, delta_d, None, "schema discovery; the evaluation stopped")]
            ledger.settle(run_id, done, "schema discovery only: the learning did not start")
        raise
    schema_spends = list(getattr(prepared, "spends", []))
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
    say(f"schema: {_schema_words(schema)}")
    say(f"neighbours: {NEIGHBOURS}")
    calls = sum(f["oracle_calls"] for f in figures) * args.runs
    say(f"planned: {len(methods)} method(s) × {len(epsilons)} ε × {args.runs} run(s), about {calls:,} oracle calls")

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
    if charge_eps > 0:
        ledger.settle(run_id, schema_spends + _spends(ev), "basic composition of the runs")
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
            json.dumps(
                {**ev.to_dict(), "encoding": enc.to_dict(), "plan": figures, "schema": schema}, indent=2, default=float
            )
        )
    if args.models:
        written = write_models(ev, enc, Path(args.models), schema)
        say(f"wrote {len(written)} model file(s) to {args.models} (the non-private reference is never written)")
    if args.json:
        print(
            json.dumps(
                {
                    "summary": summary,
                    "failures": fails,
                    "guarantee": ev.guarantee,
                    "schema": schema,
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


def _feature_column(spec: str) -> str:
    """The column a feature spec names ('age>=30' -> 'age', 'job=a|b' -> 'job')."""
    import re

    return re.split(r">=|=", str(spec), maxsplit=1)[0].strip()


def _left_out(column: str, prepared, what: str) -> str:
    reasons = {e["name"]: e["reason"] for e in getattr(prepared, "excluded", [])}
    why = reasons.get(column)
    if why:
        return (
            f"The {what} column {column!r} was left out of the schema: {why}. Declare it (--schema FILE) or raise "
            "--schema-epsilon."
        )
    return f"The {what} column {column!r} is not in the table's schema."


def _schema_words(schema: dict) -> str:
    if schema["source"] == "inferred":
        return "read from the data WITHOUT privacy: not covered by any guarantee (every model file says none)"
    if schema["source"] == "dp":
        return (
            f"discovered privately at ε = {schema['epsilon']:g}, δ = {schema['delta']:.3g}; every model file adds it "
            "to its own ε (epsilon_total)"
        )
    return "declared (public, free)"


def write_models(ev, encoding, folder: Path, schema: dict) -> list[Path]:
    """One file per private (method, ε): its first run with a model, written without looking at accuracy."""
    folder.mkdir(parents=True, exist_ok=True)
    seen, written = set(), []
    for r in ev.records:
        key = (r["method"], r["epsilon"])
        if key in seen or r.get("model") is None or r["method"] == "nonprivate" or r["epsilon"] is None:
            continue
        seen.add(key)
        path = folder / f"{r['method']}_eps{r['epsilon']:g}.json"
        path.write_text(r["model"].to_json(encoding, selected_after_test_accuracy=False, schema=schema))
        written.append(path)
    return written


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
