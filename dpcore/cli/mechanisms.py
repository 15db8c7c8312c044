"""``dpcore mechanisms``: the registered mechanisms and their parameters."""

from __future__ import annotations


def add_parser(sub) -> None:
    sub.add_parser("mechanisms", help="list the registered mechanisms and their parameters")


def run(args) -> int:
    from ..mechanisms import registry

    for m in registry.all_mechanisms():
        print(f"{m.name:<12} {m.title}  [{m.seed}; privacy {m.privacy}; output {m.output}]")
        for p in m.parameters:
            print(f"    --param {p.name}=<{p.kind}> default {p.default!r}: {p.help}")
    return 0
