"""``dpcore workload``: size of a marginal workload (marginals, queries, memory)."""

from __future__ import annotations

from ..errors import DPCoreError
from .common import add_data_args, add_workload_args, build_workload, load, open_source


def add_parser(sub) -> None:
    p = sub.add_parser("workload", help="size of a marginal workload (marginals, queries, memory)")
    add_data_args(p, positional=True)
    add_workload_args(p)


def run(args) -> int:
    source = open_source(args)
    if source["table"] is not None and source["name"] != "adult_census":
        if source["schema"] is None:
            raise DPCoreError(
                "A raw table's workload depends on its schema, which `dpcore release` discovers privately when it "
                "runs; declare the schema (--domain schema.json) to size a workload before, or read the workload "
                "on the release's card (`dpcore info` shows the roles proposed for the columns)."
            )
        from ..tabular import columns_to_discover, prepare_table

        table, schema = source["table"], source["schema"]
        left = columns_to_discover(table.columns, schema=schema, unlisted="exclude")
        if left:
            raise DPCoreError(
                f"The declared schema leaves {', '.join(left[:5])}{' and more' if len(left) > 5 else ''} to be "
                "discovered privately at release time; declare their value sets or bounds to size the workload now."
            )
        # Every kept column fully declared: nothing is read off the data but the rows to encode.
        ds = prepare_table(table, schema=schema, epsilon=1.0, delta=1e-9, noise=None, unlisted="exclude").dataset
    else:
        ds = load(args)
    d = build_workload(args, ds).describe()
    print(
        f"{d['n_marginals']} marginal{'' if d['n_marginals'] == 1 else 's'} of width {args.k}, "
        f"{d['n_queries']:,} queries "
        f"({d['n_queries_with_negations']:,} with negations), largest marginal {d['largest_marginal_cells']:,} "
        f"cells, about {d['memory_mb']} MB working memory"
    )
    return 0
