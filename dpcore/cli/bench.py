"""``dpcore bench ...``: benchmarks (see :mod:`dpcore.bench` and docs/benchmarks.md)."""

from __future__ import annotations


def add_parser(sub) -> None:
    from .. import bench

    p = sub.add_parser("bench", help="benchmarks (results as JSON with --json)")
    bench.add_subcommands(p.add_subparsers(dest="bench", required=True))


def run(args) -> int:
    from .. import bench

    return bench.run(args)
