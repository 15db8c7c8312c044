"""``dpcore workload``: size of a marginal workload (marginals, queries, memory)."""

from __future__ import annotations

from .common import add_data_args, add_workload_args, build_workload, load


def add_parser(sub) -> None:
    p = sub.add_parser("workload", help="size of a marginal workload (marginals, queries, memory)")
    add_data_args(p, positional=True)
    add_workload_args(p)


def run(args) -> int:
    ds = load(args)
    d = build_workload(args, ds).describe()
    print(
        f"{d['n_marginals']} marginals of width {args.k}, {d['n_queries']:,} queries "
        f"({d['n_queries_with_negations']:,} with negations), largest marginal {d['largest_marginal_cells']:,} "
        f"cells, about {d['memory_mb']} MB working memory"
    )
    return 0
