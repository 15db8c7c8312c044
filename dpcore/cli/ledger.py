"""``dpcore ledger``: per-dataset privacy totals of a workspace (and setting a dataset's cap)."""

from __future__ import annotations

import json

from .common import add_workspace_arg


def add_parser(sub) -> None:
    p = sub.add_parser("ledger", help="the privacy ledger: per-dataset totals, caps, entries")
    add_workspace_arg(p)
    p.add_argument("--json", action="store_true", help="print one JSON object (stdout holds only that object)")
    p.add_argument("--entries", action="store_true", help="also list every spend")


def run(args) -> int:
    from ..privacy.ledger import Ledger
    from ..workspace import Workspace

    ws = Workspace(args.workspace)
    ledger = Ledger(ws)
    totals = ledger.summary()
    if args.json:
        out = {"workspace": str(ws.path), "composition": _COMPOSITION, "datasets": [_public(t) for t in totals]}
        if args.entries:
            out["entries"] = ledger.entries()
        print(json.dumps(out, default=float))
        return 0
    print(f"workspace: {ws.path}")
    if not totals:
        print("nothing spent yet")
        return 0
    print(_COMPOSITION)
    for t in totals:
        cap = "no cap" if t["cap_epsilon"] is None else f"cap ε = {t['cap_epsilon']:g}"
        z = "" if t["epsilon_zcdp"] is None else f"; zCDP: ε = {t['epsilon_zcdp']:.4g} at δ = {t['delta_zcdp']:.3g}"
        print(
            f"  {t['name']} [{t['dataset'][:12]}] n = {t['n']:,}: {t['runs']} run(s), ε = {t['epsilon']:.4g}, "
            f"δ = {t['delta']:.3g}{z}; {cap}"
        )
    if args.entries:
        for e in ledger.entries():
            print(
                f"    {e['dataset'][:12]} run {e['run']} {e['mechanism']}: ε = {e['epsilon']:.4g}, "
                f"δ = {e['delta']:.3g}{_rho(e)} "
                f"[{e['status']}] {e['note']}"
            )
    return 0


_COMPOSITION = (
    "totals: basic composition (ε's and δ's add, valid for every mix of mechanisms); when every entry is "
    "zCDP, also the zCDP total converted at δ = 1/n²; a cap is met when either stays within it"
)


def _public(t: dict) -> dict:
    keys = (
        "dataset",
        "name",
        "n",
        "epsilon",
        "delta",
        "runs",
        "entries",
        "rho",
        "epsilon_zcdp",
        "delta_zcdp",
        "cap_epsilon",
        "cap_delta",
        "remaining_epsilon",
        "within",
    )
    return {k: t.get(k) for k in keys}


def _rho(e: dict) -> str:
    return "" if e["rho"] is None else f", ρ = {e['rho']:.4g}"
