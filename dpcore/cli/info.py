"""``dpcore info``: what a table is -- its schema (declared or coded), or for a raw table the roles proposed for
its columns, for the data owner to confirm."""

from __future__ import annotations

from .common import add_data_args, open_source


def add_parser(sub) -> None:
    p = sub.add_parser(
        "info",
        help="a table's schema, or the roles proposed for a raw table's columns (for the data owner to confirm)",
    )
    add_data_args(p, positional=True)


def run(args) -> int:
    source = open_source(args)
    if source["table"] is None:
        _print_dataset(source["dataset"])
        return 0
    if source.get("schema") is not None and source["name"] == "adult_census":
        from ..data import bundled_adult

        _print_dataset(bundled_adult())
        return 0
    _print_roles(source)
    return 0


def _print_dataset(ds) -> None:
    print(f"dataset: {ds.name}   n = {ds.n:,}   attributes = {len(ds.domain)}")
    print(f"domain size = {ds.domain.size:,} records   one-hot length D = {ds.domain.one_hot_size}")
    for a in ds.domain.attributes:
        extra = f"[{a.lower:g}, {a.upper:g}] in {a.bins} bins" if a.kind == "numeric" else ""
        src = "declared" if a.source == "declared" else "inferred from data (not private)"
        print(f"  {a.name:<24} {a.kind:<12} {a.size:>6} values  {extra:<28} {src}")
    if ds.clipped:
        print(f"clipped to bounds: {ds.clipped}")


def role_option(role) -> str:
    """A role as ``--roles`` takes it back: categorical, integer, real (with ``:STYLE`` when its numbers are written
    in one: ``real:# kg``; with ``+texts`` when some cells are texts beside them: ``real:.1+texts``), date:FORMAT
    (``date:%Y-%m-%d+texts`` likewise) or excluded."""
    from ..ingest import TEXTS_SUFFIX

    if role.role == "numeric":
        kind = ("integer" if role.integer else "real") + (f":{role.style}" if role.style else "")
        return kind + (TEXTS_SUFFIX if role.texts else "")  # texts beside its numbers: sought privately
    if role.role == "datetime":
        return f"date:{role.format}" + (TEXTS_SUFFIX if role.texts else "")  # "unknown" beside its dates
    return role.role


def _print_roles(source: dict) -> None:
    """The owner's view of a raw table (the app's roles table, as text): exact counts, never for publication."""
    from ..ingest import FRAGILE_NOTE, TEXT_GROUPS, header_role, propose_roles

    df = source["table"]
    print(f"table: {source['name']}   n = {source['n']:,} rows   {df.shape[1]} columns")
    for r in source.get("renamed", []):
        print(f"renamed column {r['original']!r} to {r['name']!r} (repeated or empty header)")
    print(
        "Roles proposed from exact counts: read off the data WITHOUT privacy, for you (the data owner) only; never "
        "publish this listing.\nConfirming them (--roles below) makes them your public choices: a release then "
        "spends nothing deciding roles, only discovering value sets and bounds."
    )
    proposed = {r.name: r for r in propose_roles(df)}
    confirm = []
    print(f"  {'column':<24} {'proposed role':<32} {'filled':>9} {'distinct':>9}  why")
    for name in df.columns:
        by_header = header_role(name)
        role = by_header or proposed[name]
        stats = proposed[name].stats or {}
        why = role.reason or ""
        label = role.label if role.role != "excluded" else "excluded"
        print(f"  {str(name):<24} {label:<32} {stats.get('present', 0):>9,} {stats.get('distinct', 0):>9,}  {why}")
        if not by_header:
            confirm.append(f"{name}={role_option(role)}")
    if confirm:
        print(
            "To confirm these roles (edit any you disagree with). Confirming states they are public facts: anyone "
            "who sees a release's card sees them, unprotected."
        )
        print(f'  --roles "{",".join(confirm)}"')
        texts = {TEXT_GROUPS[r.role]: r.missing_text for r in proposed.values() if r.kept and r.missing_text}
        if texts:
            groups = {"numbers": "numbers and dates", "words": "words"}
            confirmed = [n for n in df.columns if not header_role(n) and proposed[n].kept]
            by_column = {n: proposed[n].missing_text for n in confirmed if proposed[n].missing_text}
            one = len(set(by_column.values())) == 1 and len(by_column) == len(confirmed)
            option = next(iter(by_column.values())) if one else ",".join(f"{n}={t}" for n, t in by_column.items())
            print(
                "Missing cells are written "
                + "; ".join(f"{t!r} in its {groups[g]}" for g, t in sorted(texts.items()))
                + " (exact, for you). To declare it with the roles (the release's CSV then writes it there):"
            )
            print(f'  --missing-text "{option}"')
        fragile = [n for n in df.columns if not header_role(n) and proposed[n].reason.startswith(FRAGILE_NOTE)]
        if fragile:
            print(
                "⚠ one changed row could change the proposals for: "
                + ", ".join(map(str, fragile))
                + ". Confirm those only if you know them to be true."
            )
