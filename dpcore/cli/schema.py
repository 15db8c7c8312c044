"""``dpcore schema FILE --out schema.json``: a proposed schema for the data owner to review, then declare.

The proposal is read off the data without privacy (exact roles, value sets, bounds rounded outward to round
values, rare values flagged): for the owner's eyes only, and the file says so.  Reviewed and passed back as
``dpcore release --schema schema.json`` it is the owner's declaration of what is public, and costs nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .common import add_data_args, open_source


def add_parser(sub) -> None:
    p = sub.add_parser(
        "schema",
        help="write a proposed schema (owner's eyes only) to review and pass back as --schema, which costs nothing",
    )
    add_data_args(p, positional=True)
    p.add_argument("--out", required=True, help="the proposal, as a schema JSON to edit")


def run(args) -> int:
    from ..errors import DPCoreError
    from ..proposal import propose_schema

    source = open_source(args)
    if source["table"] is None:
        raise DPCoreError("This table is integer-coded and already has its schema (see dpcore info).")
    proposal = propose_schema(source["table"])
    Path(args.out).write_text(json.dumps(proposal, indent=2, ensure_ascii=False))
    kept = [a for a in proposal["attributes"] if a["kind"] != "excluded"]
    rare = proposal["review"]["rare_values"]
    print(
        f"wrote {args.out}: {len(kept)} column(s) proposed, {len(proposal['attributes']) - len(kept)} excluded. "
        "It is read from the data WITHOUT privacy: review it before anyone else sees it.",
        file=sys.stderr,
    )
    if rare:
        print(
            f"{sum(len(v) for v in rare.values())} rare value(s) in {len(rare)} column(s) are listed under "
            "review.rare_values: keep a value only if it is a public category.",
            file=sys.stderr,
        )
    data = args.data_opt or args.data
    print(f"then: dpcore release --data {data} --schema {args.out}  (what it declares is free)", file=sys.stderr)
    return 0
