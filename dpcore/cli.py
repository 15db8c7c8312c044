"""``python -m dpcore``: the engine without the app.

Subcommands: ``info``, ``workload``, ``release``, ``bench``.  Errors the user can fix
are printed as one line (no traceback) with exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .errors import DPCoreError


def _add_data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", dest="data_opt", default=None,
                   help="table (CSV/Parquet), an integer-coded CSV with its -domain.json, or 'adult' (bundled)")
    p.add_argument("--domain", default=None, help="schema JSON (dpcore schema, or {column: size} for coded data)")


def _add_workload_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--k", type=int, default=3, help="marginal width (default 3)")
    p.add_argument("--marginals", default="64",
                   help="number of random k-way marginals, or 'all' (default 64)")
    p.add_argument("--workload-seed", type=int, default=0, help="seed choosing the marginals (public; default 0)")
    p.add_argument("--max-cells", default="n",
                   help="keep marginals with at most this many cells; 'n' = number of rows (default), 'none' = no cap")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m dpcore", description="Differentially private synthetic data.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("info", help="schema, n and domain size of a table")
    p.add_argument("data", nargs="?", default=None)
    _add_data_args(p)

    p = sub.add_parser("workload", help="size of a marginal workload (marginals, queries, memory)")
    p.add_argument("data", nargs="?", default=None)
    _add_data_args(p)
    _add_workload_args(p)

    p = sub.add_parser("release", help="run one mechanism and write synthetic data + reports")
    _add_data_args(p)
    _add_workload_args(p)
    p.add_argument("--mechanism", default="dualquery", help="registry name (see `python -m dpcore mechanisms`)")
    p.add_argument("--epsilon", type=float, required=False, default=1.0)
    p.add_argument("--delta", type=float, default=None, help="default 1/n² (the report says so)")
    p.add_argument("--seed", type=int, default=None, help="RNG seed for a reproducible demo (default: OS entropy)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="mechanism parameter, repeatable (e.g. --param eta=0.4)")
    p.add_argument("--rows", type=int, default=None, help="number of synthetic rows, where the mechanism allows")
    p.add_argument("--class-width", type=int, default=None, metavar="K",
                   help="also target/evaluate the class of ALL conjunctions of width ≤ K (never listed): "
                        "privlearn/oraclequery answer it; the report adds the error on sampled members")
    p.add_argument("--time-limit", type=float, default=None, help="SCIP time limit per oracle call, seconds")
    p.add_argument("--executor", default=None, help="local (default), serial, or ray[:ADDRESS]")
    p.add_argument("--out", default=None, help="synthetic CSV (decoded labels)")
    p.add_argument("--report", default=None,
                   help="report JSON: public release card plus the internal evaluation (not private)")
    p.add_argument("--card", default=None, help="public release card alone (JSON)")
    p.add_argument("--synopsis", default=None, help="the released synopsis model (JSON), for synopsis mechanisms")
    p.add_argument("--quiet", action="store_true")

    sub.add_parser("mechanisms", help="list the registered mechanisms and their parameters")

    from .learning.cli import add_learn_parser

    add_learn_parser(sub)

    p = sub.add_parser("bench", help="benchmarks (results as JSON with --json)")
    bsub = p.add_subparsers(dest="bench", required=True)
    from . import bench

    bench.add_subcommands(bsub)
    return parser


def _load(args):
    from .data import load_any

    data = getattr(args, "data_opt", None) or getattr(args, "data", None) or "adult"
    return load_any(data, args.domain)


def _workload(args, dataset):
    from .workload import Workload

    cap = None if str(args.max_cells).lower() == "none" else (dataset.n if args.max_cells == "n" else int(args.max_cells))
    if str(args.marginals).lower() == "all":
        return Workload.all_kway(dataset.domain, args.k, max_cells=cap)
    try:
        m = int(args.marginals)
    except ValueError:
        raise DPCoreError(f"--marginals must be a number or 'all', not {args.marginals!r}.") from None
    return Workload.random_kway(dataset.domain, args.k, m, seed=args.workload_seed, max_cells=cap)


def cmd_info(args) -> int:
    ds = _load(args)
    print(f"dataset: {ds.name}   n = {ds.n:,}   attributes = {len(ds.domain)}")
    print(f"domain size = {ds.domain.size:,} records   one-hot length D = {ds.domain.one_hot_size}")
    for a in ds.domain.attributes:
        extra = f"[{a.lower:g}, {a.upper:g}] in {a.bins} bins" if a.kind == "numeric" else ""
        src = "declared" if a.source == "declared" else "inferred from data (not private)"
        print(f"  {a.name:<24} {a.kind:<12} {a.size:>6} values  {extra:<28} {src}")
    if ds.clipped:
        print(f"clipped to bounds: {ds.clipped}")
    return 0


def cmd_workload(args) -> int:
    ds = _load(args)
    w = _workload(args, ds)
    d = w.describe()
    print(f"{d['n_marginals']} marginals of width {args.k}, {d['n_queries']:,} queries "
          f"({d['n_queries_with_negations']:,} with negations), largest marginal {d['largest_marginal_cells']:,} cells, "
          f"about {d['memory_mb']} MB working memory")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "info":
            return cmd_info(args)
        if args.command == "workload":
            return cmd_workload(args)
        if args.command == "release":
            from .release import cli_release

            return cli_release(args, _load, _workload)
        if args.command == "mechanisms":
            from .mechanisms import registry

            for m in registry.all_mechanisms():
                print(f"{m.name:<12} {m.title}  [{m.seed}; privacy {m.privacy}; output {m.output}]")
                for p in m.parameters:
                    print(f"    --param {p.name}=<{p.kind}> default {p.default!r}: {p.help}")
            return 0
        if args.command == "learn":
            from .learning.cli import run_learn

            return run_learn(args)
        if args.command == "bench":
            from . import bench

            return bench.run(args)
    except DPCoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: nothing was released", file=sys.stderr)
        return 130
    return 1


def write_json(path: str | Path, obj) -> None:
    Path(path).write_text(json.dumps(obj, indent=2, default=str))
