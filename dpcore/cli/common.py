"""Arguments and loaders shared by the subcommands that read a table."""

from __future__ import annotations

import argparse

from ..errors import DPCoreError


def add_data_args(p: argparse.ArgumentParser, positional: bool = False) -> None:
    if positional:
        p.add_argument("data", nargs="?", default=None)
    p.add_argument(
        "--data",
        dest="data_opt",
        default=None,
        help="table (CSV/Parquet), an integer-coded CSV with its -domain.json, or 'adult' (bundled)",
    )
    p.add_argument(
        "--domain",
        "--schema",
        dest="domain",
        default=None,
        help="schema JSON (dpcore schema, or {column: size} for coded data)",
    )


def add_workload_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--k", type=int, default=3, help="marginal width (default 3)")
    p.add_argument("--marginals", default="64", help="number of random k-way marginals, or 'all' (default 64)")
    p.add_argument("--workload-seed", type=int, default=0, help="seed choosing the marginals (public; default 0)")
    p.add_argument(
        "--max-cells",
        default="n",
        help="keep marginals with at most this many cells; 'n' = number of rows (default), 'none' = no cap",
    )


def add_workspace_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--workspace",
        default=None,
        metavar="DIR",
        help="workspace folder (runs, schemas, the privacy ledger); default $DPCORE_WORKSPACE, "
        "else a per-user data folder",
    )


def data_source(args) -> str:
    return getattr(args, "data_opt", None) or getattr(args, "data", None) or "adult"


def load(args):
    from ..data import load_any

    return load_any(data_source(args), args.domain)


def build_workload(args, dataset):
    from ..workload import Workload

    if str(args.max_cells).lower() == "none":
        cap = None
    elif args.max_cells == "n":
        cap = dataset.n
    else:
        try:
            cap = int(args.max_cells)
        except ValueError:
            raise DPCoreError(f"--max-cells must be a number, 'n' or 'none', not {args.max_cells!r}.") from None
    if str(args.marginals).lower() == "all":
        return Workload.all_kway(dataset.domain, args.k, max_cells=cap)
    try:
        m = int(args.marginals)
    except ValueError:
        raise DPCoreError(f"--marginals must be a number or 'all', not {args.marginals!r}.") from None
    return Workload.random_kway(dataset.domain, args.k, m, seed=args.workload_seed, max_cells=cap)
