"""``dpcore runs``: the runs recorded in a workspace (by the app, the CLI or the API); delete one."""

from __future__ import annotations

import datetime as dt
import json

from .common import add_workspace_arg


def add_parser(sub) -> None:
    p = sub.add_parser("runs", help="list the runs of a workspace, or delete one (its ledger entry stays)")
    add_workspace_arg(p)
    p.add_argument("--json", action="store_true", help="print one JSON object (stdout holds only that object)")
    p.add_argument(
        "--delete",
        metavar="RUN_ID",
        default=None,
        help="delete a run and its files; its privacy charge stays in the ledger",
    )
    p.add_argument("--all", action="store_true", help="include deleted runs")


def run(args) -> int:
    from ..runs import RunStore
    from ..workspace import Workspace

    ws = Workspace(args.workspace)
    store = RunStore(ws)
    store.mark_interrupted()
    if args.delete:
        store.delete(args.delete)
        print(f"deleted run {args.delete} and its files; its ledger entry stays")
        return 0
    runs = store.list(include_deleted=args.all, light=True)
    # What each release kept, from its public card (k of the source table's columns): errors are measured on it.
    kept = {
        r["id"]: (r["kept"], r["left_out"])
        for r in ws.query(
            "SELECT id, json_array_length(card, '$.data.schema') AS kept, "
            "json_array_length(card, '$.data.excluded') AS left_out FROM runs WHERE card IS NOT NULL"
        )
    }
    for r in runs:
        k, out = kept.get(r["id"], (None, None))
        r["kept_columns"] = k
        r["total_columns"] = None if k is None else k + (out or 0)
    if args.json:
        print(json.dumps({"workspace": str(ws.path), "runs": runs}, default=float))
        return 0
    print(f"workspace: {ws.path}")
    if not runs:
        print("no runs yet")
    for r in runs:
        when = dt.datetime.fromtimestamp(r["created"]).strftime("%Y-%m-%d %H:%M")
        eps = "" if r["epsilon"] is None else f"ε = {r['epsilon']:g}"
        flags = " DEMO" if r["demo"] else ""
        flags += " (deleted)" if r["deleted"] else ""
        label = f" “{r['label']}”" if r["label"] else ""
        columns = "" if r["kept_columns"] is None else f" (kept {r['kept_columns']} of {r['total_columns']} columns)"
        print(
            f"  {r['id']}  {when}  {r['status']:<11} {r['mechanism']:<20} {eps:<10} {r['dataset_name']}{columns}"
            f"{label}{flags}"
        )
    return 0
