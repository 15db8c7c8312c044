"""``dpcore`` (or ``python -m dpcore``): the engine without the app.

One module per subcommand, each with ``add_parser(subparsers)`` and ``run(args)``; this
module only builds the parser and maps typed errors to a one-line message (no
traceback) and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import DPCoreError

#: Subcommand name -> module in this package, in the order ``--help`` lists them.
SUBCOMMANDS = (
    "info", "schema", "workload", "mechanisms", "release", "ledger", "runs", "learn", "evaluate", "bench", "app",
)  # fmt: skip


def _module(name: str):
    return importlib.import_module(f"{__name__}.{name}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpcore", description="Differentially private synthetic data.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMANDS:
        _module(name).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(_module(args.command).run(args) or 0)
    except DPCoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: nothing was released", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `dpcore info t.csv | head`: the reader left; say nothing more
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
