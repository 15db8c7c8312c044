"""``dpcore info``: schema, n and domain size of a table."""

from __future__ import annotations

from .common import add_data_args, load


def add_parser(sub) -> None:
    p = sub.add_parser("info", help="schema, n and domain size of a table")
    add_data_args(p, positional=True)


def run(args) -> int:
    ds = load(args)
    print(f"dataset: {ds.name}   n = {ds.n:,}   attributes = {len(ds.domain)}")
    print(f"domain size = {ds.domain.size:,} records   one-hot length D = {ds.domain.one_hot_size}")
    for a in ds.domain.attributes:
        extra = f"[{a.lower:g}, {a.upper:g}] in {a.bins} bins" if a.kind == "numeric" else ""
        src = "declared" if a.source == "declared" else "inferred from data (not private)"
        print(f"  {a.name:<24} {a.kind:<12} {a.size:>6} values  {extra:<28} {src}")
    if ds.clipped:
        print(f"clipped to bounds: {ds.clipped}")
    return 0
