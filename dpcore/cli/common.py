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
        help="schema JSON (dpcore schema, or {column: size} for coded data: every code a category, read as "
        "ordered -- binned numbers -- where its released counts vary smoothly along the codes; declare ordered codes "
        "as numeric in a dpcore schema to say so, and the projection smooths its rows along them)",
    )


def add_workload_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--k",
        type=int,
        default=None,
        help="marginal width (default: a workload that fits the table — every one-way marginal, then "
        "pairs with enough rows per cell)",
    )
    p.add_argument(
        "--marginals", default=None, help="number of random k-way marginals, or 'all' (default with --k: 64)"
    )
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


def is_coded(path, domain) -> bool:
    """An integer-coded table of the benchmark literature: a sibling ``-domain.json``, or a schema of sizes."""
    import json
    from pathlib import Path

    p = Path(path)
    if domain is None:
        return p.with_name(p.stem + "-domain.json").exists()
    try:
        d = json.loads(Path(domain).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(d, dict) and bool(d) and all(isinstance(v, int) and not isinstance(v, bool) for v in d.values())


def load_schema_arg(domain):
    """A declared schema from a JSON file (complete, or partial: each entry wins field by field), or a CSV codebook
    (``column,value`` rows: the allowed values of each category column)."""
    from ..proposal import read_schema_file

    return None if domain is None else read_schema_file(domain)


def _without_trailing_comma(role: str) -> str:
    """``role`` without a comma that ended the list (``d=date:%Y,``, ``w=real:# kg,``): a piece with no ``=``
    continues the one before it, so a trailing comma joins the last role.  A date format never ends with a comma;
    a number style may (``,``, ``$,``), so there only a comma that leaves a known style is dropped."""
    from ..domain import NUMBER_STYLES
    from ..ingest import DATE_ROLE_WORDS

    head, sep, rest = role.partition(":")
    if not sep or not rest.endswith(","):
        return role
    key = head.strip().lower()
    if key in DATE_ROLE_WORDS:
        return f"{head}:{rest.rstrip(', ')}"
    if rest.strip() not in NUMBER_STYLES and rest.rstrip(", ").strip() in NUMBER_STYLES:
        return f"{head}:{rest.rstrip(', ')}"
    return role


def parse_roles(text: str | None) -> dict | None:
    """``--roles "age=numeric,id=excluded"``: the user's confirmed roles (public choices).  A role's format or
    number style may hold commas (``date:%b %d, %Y``, ``integer:$,.2``): a piece with no ``=`` continues the one
    before it."""
    if not text:
        return None
    items: list[str] = []
    for piece in text.split(","):
        if "=" not in piece and items and ":" in items[-1].rsplit("=", 1)[1]:
            items[-1] += "," + piece
        elif piece.strip():
            items.append(piece)
    out = {}
    for item in items:
        if "=" not in item:
            raise DPCoreError(f"--roles takes COLUMN=ROLE pairs separated by commas, got {item.strip()!r}.")
        col, role = item.rsplit("=", 1)
        out[col.strip()] = _without_trailing_comma(role.strip())
    return out


def name_value_pairs(items, usage: str, at_last: bool = False) -> dict[str, str]:
    """``NAME=VALUE`` items as a dict, split at the first ``=`` (at the last with ``at_last``); ``usage`` starts the
    message for an item without one."""
    out = {}
    for item in items:
        if "=" not in item:
            raise DPCoreError(f"{usage}, got {item!r}.")
        name, value = item.rsplit("=", 1) if at_last else item.split("=", 1)
        out[name.strip()] = value.strip()
    return out


def confirmed_roles(args) -> dict | None:
    """``--roles`` with ``--missing-text`` applied: how the file writes a missing cell -- one text for every column
    the roles confirm (``NA``), or ``COL=TEXT`` pairs -- declared with those roles (a public fact, like the roles)."""
    from dataclasses import replace

    from ..ingest import Role

    roles = parse_roles(getattr(args, "roles", None))
    text = getattr(args, "missing_text", None)
    if text is None:
        return roles
    if not roles:
        raise DPCoreError(
            "--missing-text declares how the columns whose roles --roles confirms write a missing cell: give --roles "
            "too (columns whose roles are decided privately get their text chosen with them)."
        )
    if "=" in text:  # a missing-cell text holds no '=': a column's name may
        usage = "--missing-text takes TEXT or COLUMN=TEXT pairs separated by commas"
        texts = name_value_pairs([p for p in text.split(",") if p.strip()], usage, at_last=True)
        unknown = [c for c in texts if c not in roles]
        if unknown:
            raise DPCoreError(f"--missing-text names {unknown}, whose roles --roles does not confirm.")
    else:
        texts = dict.fromkeys(roles, text.strip())
    # The Role refuses a text the release does not write (its message names the column and the texts it may be).
    return {c: (replace(Role.parse(c, r), missing_text=texts[c]) if c in texts else r) for c, r in roles.items()}


def load(args):
    from ..data import load_any

    return load_any(data_source(args), args.domain)


def workload_spec(args) -> dict | None:
    """The workload asked for on the command line, or None for the default that fits the table."""
    if args.k is None and args.marginals is None:
        return None
    spec: dict = {"k": 3 if args.k is None else args.k, "marginals": args.marginals or "64", "seed": args.workload_seed}
    if str(args.max_cells).lower() == "none":
        spec["max_cells"] = None
    elif args.max_cells != "n":
        try:
            spec["max_cells"] = int(args.max_cells)
        except ValueError:
            raise DPCoreError(f"--max-cells must be a number, 'n' or 'none', not {args.max_cells!r}.") from None
    return spec


def build_workload(args, dataset):
    from ..workload import Workload, default_workload

    if args.k is None and args.marginals is None:
        return default_workload(dataset.domain, dataset.n)
    if args.k is None:
        args.k = 3
    if args.marginals is None:
        args.marginals = "64"

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


def open_source(args) -> dict:
    """What ``--data`` names: a raw table (with its declared schema, if any) or an integer-coded Dataset."""
    from ..data import bundled_adult_domain, bundled_path, load_any, read_table

    data = data_source(args)
    if str(data) in ("adult", "adult_census", "bundled"):
        df = read_table(bundled_path("adult_census.csv"))
        schema = bundled_adult_domain() if args.domain is None else load_schema_arg(args.domain)
        return {
            "table": df,
            "schema": schema,
            "n": len(df),
            "key": df.attrs["source_digest"],
            "name": "adult_census",
            "renamed": df.attrs.get("renamed", []),
        }
    if is_coded(data, args.domain):
        ds = load_any(data, args.domain)
        return {"table": None, "dataset": ds, "n": ds.n, "key": ds.ledger_key, "name": ds.name}
    df = read_table(data)
    return {
        "table": df,
        "schema": load_schema_arg(args.domain),
        "n": len(df),
        "key": df.attrs["source_digest"],
        "name": df.attrs.get("name", "table"),
        "renamed": df.attrs.get("renamed", []),
    }
