"""The roles table of the Data page, and the schema it stands for (no Streamlit here: pure functions, tested alone).

One row per column of the file: its role (categorical, integer, real, date with its format, excluded), optional
declared values or bounds, and which of them the user declared.  Three kinds of content, kept apart:

* **proposed** -- what :func:`dpcore.ingest.propose_roles` reads off the data with *exact* counts: shown to the
  data owner only (the ``proposed`` and ``seen`` columns, and the initial ``role``), never published as is;
* **declared** -- what the user typed or confirmed, a public choice that costs nothing.  Provenance is per field
  and sticky (issue 12, finding 4): editing ``values`` declares the values, ``lower`` the lower bound, and never
  any other field of that column or of another.  Whatever is typed for a column is typed for the role the row
  shows, so it declares that role too (a value list or a bound only means something for a role);
* **everything else** is discovered: released under DP in one charged run (or, by an explicit choice, read off
  the data without privacy).

A declared schema (the bundled sample's codebook, a loaded schema JSON) fills the rows it describes as declared;
columns it does not list are excluded by the schema (``rule`` = "unlisted"), and columns whose header names an
identifier, a person or free text are excluded by the public header rule (``rule`` = "header"), both at no cost
and both reversible by choosing a role.

:func:`declarations` turns the table into what :func:`dpcore.tabular.prepare_table` takes (``roles``, a partial
``schema`` and the ``unlisted`` policy); :func:`overlay` lays those declarations over a schema discovered earlier,
so that edits which need nothing new from the data are applied without a new charge.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import pandas as pd

from dpcore.domain import Attribute, Domain
from dpcore.errors import DomainError
from dpcore.ingest import FRAGILE_NOTE, TEXTS_SUFFIX, Role, header_role, split_texts_suffix

DECLARED = "declared"
ROLE_CHOICES = ("categorical", "integer", "real", "date", "excluded")
COLUMNS = [
    "column",
    "role",
    "format",
    "values",
    "lower",
    "upper",
    "bins",
    "source",
    "proposed",
    "seen",
    "missing_text",
    "note",
    "declared",
    "rule",
    "base",
]
#: Columns the user cannot edit (``declared``, ``rule`` and ``base`` are kept in the table but not shown).
READ_ONLY = ("column", "missing_text", "source", "proposed", "seen", "note", "declared", "rule", "base")
HIDDEN = ("declared", "rule", "base")
#: The provenance fields of a row by its role (as in dpcore.domain.PROVENANCE_FIELDS, "kind" called "role").
FIELDS = {
    "categorical": ("role", "values"),
    "integer": ("role", "lower", "upper"),
    "real": ("role", "lower", "upper"),
    "date": ("role", "lower", "upper"),
    "excluded": ("role",),
}
VALUE_SEP = " | "
UNLISTED_NOTE = "not in the declared schema (choose a role to use it)"


# ---------------------------------------------------------------------------- cells
def _blank(x) -> bool:
    return x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x)) or (isinstance(x, str) and not x.strip())


def _same(a, b) -> bool:
    if _blank(a) or _blank(b):
        return _blank(a) and _blank(b)
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a).strip() == str(b).strip()


def parse_values(text) -> tuple[str, ...]:
    if _blank(text):
        return ()
    return tuple(v.strip() for v in str(text).split("|") if v.strip())


def declared_fields(row: dict) -> set[str]:
    return {f for f in str(row.get("declared") or "").split(",") if f}


#: A declared field with no cell of its own: the owner states the column has no missing cells (its release then
#: has no missing code, so it comes back with no empty cell).
NO_MISSING = "nomissing"
#: Likewise: the declared value list is complete (every value of the column), so no "(other)" code is kept.
COMPLETE = "complete"


def _set_declared(row: dict, fields: set[str]) -> None:
    row["declared"] = ",".join(f for f in ("role", "values", "lower", "upper", NO_MISSING, COMPLETE) if f in fields)


def role_of(role: Role) -> tuple[str, str]:
    """(role text of the table, its format: a date's format, or how numbers are written -- with ``+texts`` where
    some cells are texts beside the numbers, as ``--roles`` writes it) of an engine Role."""
    if role.role == "numeric":
        return ("integer" if role.integer else "real"), role.style + (TEXTS_SUFFIX if role.texts else "")
    if role.role == "datetime":
        return "date", (role.format or "") + (TEXTS_SUFFIX if role.texts else "")
    return role.role, ""


def _role_of_attribute(attr: Attribute) -> tuple[str, str]:
    if attr.kind == "numeric":
        return ("integer" if attr.integer else "real"), attr.style
    if attr.kind == "datetime":
        return "date", attr.format or ""
    return "categorical", ""


def source_text(row: dict) -> str:
    """Where the row's role, values and bounds come from, in a few words."""
    role = row.get("role") if row.get("role") in FIELDS else "categorical"
    need = FIELDS[role]
    have = declared_fields(row)
    if all(f in have for f in need):
        return DECLARED
    if row.get("rule") == "header" and "role" not in have and role == "excluded":
        return "excluded by its header (public rule)"
    if row.get("rule") == "unlisted" and "role" not in have and role == "excluded":
        return "excluded by the declared schema"
    done = [f for f in need if f in have]
    if done:
        return f"declared: {', '.join(done)}; the rest discovered"
    return "not declared: discovered"


def _seen(stats: dict | None) -> str:
    if not stats:
        return ""
    return f"{int(stats['present']):,} filled · {int(stats['distinct']):,} distinct"


# ---------------------------------------------------------------------------- the table
def roles_table(columns, proposals: list[Role], declared: Domain | None = None) -> pd.DataFrame:
    """One row per column: the declared schema's definition where it has one, else the header rule, else the
    (exact, owner-only) proposal.  ``proposals`` are :func:`dpcore.ingest.propose_roles` of the table."""
    by_name = {p.name: p for p in proposals}
    rows = []
    for name in columns:
        name = str(name)
        prop = by_name.get(name)
        row = dict.fromkeys(COLUMNS, "")
        row.update(column=name, bins=None, declared="", rule="", base="")
        row["proposed"] = prop.label if prop is not None else ""
        if prop is not None and prop.reason.startswith(FRAGILE_NOTE):  # one changed row could flip it: say so
            row["proposed"] = "⚠ " + row["proposed"]
        row["seen"] = _seen(prop.stats if prop is not None else None)
        if declared is not None and name in declared.names:
            attr = declared[name]
            row["role"], row["format"] = _role_of_attribute(attr)
            row["missing_text"] = attr.missing_text
            src = attr.field_sources
            fields = {"role" if f == "kind" else f for f, s in src.items() if s == "declared"}
            entry = attr.to_dict()
            if attr.kind == "categorical":
                row["values"] = VALUE_SEP.join(attr.values) if "values" in fields else ""
            else:
                row["lower"] = _bound_text(entry["lower"]) if "lower" in fields else ""
                row["upper"] = _bound_text(entry["upper"]) if "upper" in fields else ""
                row["bins"] = int(attr.bins)
            _set_declared(row, fields)
            row["base"] = json.dumps(entry)
        elif declared is not None:
            row.update(role="excluded", rule="unlisted", note=UNLISTED_NOTE)
        elif header_role(name) is not None:
            row.update(role="excluded", rule="header", note=header_role(name).reason)
        elif prop is not None:
            row["role"], row["format"] = role_of(prop)
            row["missing_text"] = prop.missing_text  # read exactly, for the owner: confirmed with the role
            row["note"] = prop.reason
            if prop.role == "excluded":  # a proposal from exact counts: the private discovery decides unless declared
                row["note"] = f"proposed: {prop.reason}; not a decision until you declare it (set the role)"
        else:
            row["role"] = "categorical"
        row["source"] = source_text(row)
        rows.append(row)
    return frame(rows)


def frame(rows: list[dict]) -> pd.DataFrame:
    table = pd.DataFrame(rows, columns=COLUMNS)
    table["bins"] = pd.array([None if _blank(b) else int(b) for b in table["bins"]], dtype="Int64")
    for col in COLUMNS:
        if col != "bins":
            table[col] = table[col].map(lambda v: "" if _blank(v) else str(v)).astype(object)
    return table


def _bound_text(v) -> str:
    if isinstance(v, (int, float)):
        return f"{float(v):.15g}"
    return str(v)


def fold_edits(table: pd.DataFrame, edits: dict) -> pd.DataFrame:
    """``table`` with the data editor's ``edited_rows`` applied (a new frame), each edited field declared.

    Re-applying the same edits is idempotent (Streamlit resends them on every change): a cell set to the value it
    already holds declares nothing."""
    rows = table.to_dict("records")
    for idx, changes in (edits.get("edited_rows") or {}).items():
        row = rows[int(idx)]
        fields = declared_fields(row)
        for col, value in changes.items():
            if col not in COLUMNS or col in READ_ONLY:
                continue
            if _same(row[col], value):
                continue
            row[col] = None if _blank(value) else value
            if col in ("role", "format", "bins"):
                fields.add("role")
            elif col == "values":
                fields.discard(COMPLETE)  # an edited list is the owner's own: "(other)" keeps what it leaves out
                if _blank(value):
                    fields.discard("values")
                else:
                    fields.update(("role", "values"))
                    row["role"] = "categorical"  # a value list is a categorical column's
            elif col in ("lower", "upper"):
                if _blank(value):
                    fields.discard(col)
                else:
                    fields.update(("role", col))
        _set_declared(row, fields)
        row["source"] = source_text(row)
    return frame(rows)


def declare_roles(table: pd.DataFrame, columns) -> pd.DataFrame:
    """The roles of ``columns`` as shown become declared (a public choice); other rows are left as they are."""
    wanted = set(map(str, columns))
    rows = table.to_dict("records")
    for row in rows:
        if str(row["column"]) in wanted:
            _set_declared(row, declared_fields(row) | {"role"})
            row["source"] = source_text(row)
    return frame(rows)


def confirm_all(table: pd.DataFrame) -> pd.DataFrame:
    """Every row's role as shown becomes declared (a public choice); values and bounds stay as they are."""
    rows = table.to_dict("records")
    for row in rows:
        _set_declared(row, declared_fields(row) | {"role"})
        row["source"] = source_text(row)
    return frame(rows)


def declare_proposal(table: pd.DataFrame, proposal: dict) -> pd.DataFrame:
    """Every kept row declares the proposal's value list (its rare values left out, and named in the note) or its
    rounded bounds (:func:`dpcore.proposal.propose_schema`), with the row's role: the owner's statement that they
    are public.  Rows the owner already declared something in, and excluded rows, are left as they are."""
    by_name = {a["name"]: a for a in proposal.get("attributes", [])}
    rare = proposal.get("review", {}).get("rare_values", {})
    edits: dict[int, dict] = {}
    notes: dict[int, str] = {}
    no_missing: set[int] = set()
    complete: set[int] = set()
    for i, row in enumerate(table.to_dict("records")):
        entry = by_name.get(row["column"])
        if entry is None or row.get("role") == "excluded" or declared_fields(row) - {"role"}:
            continue
        kind = entry["kind"]
        if entry.get("missing") is False:  # the file has no missing cell here: declared with the rest
            no_missing.add(i)
        if kind == "categorical" and row.get("role") == "categorical":
            left_out = set(rare.get(row["column"], []))
            values = [v for v in entry["values"] if v not in left_out]
            if values:
                edits[i] = {"values": VALUE_SEP.join(values)}
                if not left_out:
                    complete.add(i)
            if left_out:
                notes[i] = "rare values left out (they come back as (other)): " + ", ".join(sorted(left_out))[:200]
        elif kind in ("numeric", "datetime") and row.get("role") in ("integer", "real", "date"):
            edits[i] = {"lower": _bound_text(entry["lower"]), "upper": _bound_text(entry["upper"])}
    out = fold_edits(table, {"edited_rows": edits})
    rows = out.to_dict("records")
    for i in edits:
        extra = ({NO_MISSING} if i in no_missing else set()) | ({COMPLETE} if i in complete else set())
        if extra:
            _set_declared(rows[i], declared_fields(rows[i]) | extra)
            said = [w for f, w in ((COMPLETE, "every value listed"), (NO_MISSING, "no missing cells")) if f in extra]
            notes[i] = "; ".join(x for x in (notes.get(i), " and ".join(said) + " (declared)") if x)
    out = frame(rows)
    for i, note in notes.items():
        out.at[out.index[i], "note"] = note
    return out


# ---------------------------------------------------------------------------- declarations
@dataclass
class Declarations:
    """What the roles table declares, as :func:`dpcore.tabular.prepare_table` takes it."""

    roles: dict[str, dict] = field(default_factory=dict)
    entries: list[dict] = field(default_factory=list)
    unlisted: str | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def schema(self) -> dict | None:
        return {"attributes": self.entries} if self.entries else None

    def key(self) -> str:
        return json.dumps({"roles": self.roles, "entries": self.entries, "unlisted": self.unlisted}, sort_keys=True)


def role_spec(row: dict) -> dict:
    """The engine's role object of a row (:meth:`dpcore.ingest.Role.parse` takes it), with how the file writes its
    missing cells (``missing_text``, shown in the row) where the row has one."""
    role = row.get("role") if row.get("role") in FIELDS else "categorical"
    text = str(row.get("missing_text") or "")
    extra = {"missing_text": text} if text and role != "excluded" else {}
    if role in ("integer", "real"):
        # how the numbers are written ("$,.2", "# kg"; empty: plain), and "+texts": texts beside them, sought privately
        style, texts = split_texts_suffix(str(row.get("format") or ""))
        flags = {"style": style} if style else {}
        return {"role": "numeric", "integer": role == "integer", **flags, **({"texts": True} if texts else {}), **extra}
    if role == "date":  # its format, and "+texts": texts beside the dates ("unknown"), sought privately
        fmt, texts = split_texts_suffix(str(row.get("format") or ""))
        return {"role": "datetime", "format": fmt or "%Y-%m-%d", **({"texts": True} if texts else {}), **extra}
    return {"role": role, **extra}


def _parse_bound(row: dict, key: str, kind: str):
    text = row.get(key)
    if kind == "numeric":
        try:
            value = float(str(text).strip())
        except ValueError:
            raise DomainError(f"Column {row['column']!r}: the {key} bound must be a number (got {text!r}).") from None
        if not math.isfinite(value):
            raise DomainError(f"Column {row['column']!r}: the {key} bound must be finite.")
        return value
    return str(text).strip()  # a date: the engine reads ISO text and the attribute's format


def _entry(row: dict, spec: dict) -> dict | None:
    """The partial schema entry of a row: its declared values or bounds (and the declared schema's settings when
    the row still has that schema's role), or None when the row declares nothing but its role."""
    have = declared_fields(row)
    kind = spec["role"]
    if kind == "excluded":
        return None
    base = json.loads(row["base"]) if row.get("base") else None
    if base is not None:
        base_role, base_fmt = _role_of_attribute(Attribute.from_dict(base))
        if base_role != row.get("role") or base_fmt != (spec.get("format") or spec.get("style") or ""):
            base = None  # the user chose another role: the schema's values and bounds are for the old one
    entry: dict = {"name": row["column"], "kind": kind}
    if kind == "categorical":
        if "values" not in have:
            return None
        entry["values"] = list(parse_values(row.get("values")))
        # A typed list keeps every other value as "(other)" (a public setting): a short list never fails the
        # table.  A declared schema's own list keeps its own setting.
        entry["other"] = bool(base.get("other", False)) if base is not None else True
    else:
        bounds = [b for b in ("lower", "upper") if b in have]
        bins = None if _blank(row.get("bins")) else int(row["bins"])
        if not bounds and bins is None:
            return None
        for b in bounds:
            entry[b] = _parse_bound(row, b, kind)
        if bins is not None:
            entry["bins"] = bins
        if kind == "numeric":
            entry["integer"] = spec.get("integer", False)
            if spec.get("style"):
                entry["style"] = spec["style"]
        else:
            entry["format"] = spec.get("format")
        if base is not None:
            for key in ("out_of_bounds", "unparsable", "granularity"):
                if key in base:
                    entry[key] = base[key]
            unchanged = set(bounds) == {"lower", "upper"} and all(_same(entry[b], base[b]) for b in bounds)
            if kind == "numeric" and unchanged and _same(bins, base.get("bins", len(base["edges"]) - 1)):
                entry["edges"] = list(base["edges"])  # the schema's own bins, not equal-width ones
                if base.get("points"):  # and the values its bins decode to
                    entry["points"] = list(base["points"])
    if base is not None and base.get("missing_text"):  # how the schema writes its missing cells ("?", "NA")
        entry["missing_text"] = base["missing_text"]
    if base is not None and kind in ("numeric", "datetime") and base.get("texts"):  # its texts kept beside the
        entry["texts"] = list(base["texts"])  # numbers ("<0.5") or dates ("unknown")
    entry["source"] = {f: DECLARED for f in ("kind", "values", "lower", "upper") if f in entry}
    if NO_MISSING in have:
        entry["missing"] = False
    if COMPLETE in have and kind == "categorical":
        entry["other"] = False
    return entry


def declarations(table: pd.DataFrame) -> Declarations:
    """The roles the table declares, its partial schema (declared values and bounds) and the unlisted policy."""
    out = Declarations()
    for row in table.to_dict("records"):
        spec = role_spec(row)
        have = declared_fields(row)
        if "role" in have:
            out.roles[row["column"]] = spec
        try:
            entry = _entry(row, spec) if "role" in have else None
        except DomainError as exc:
            out.problems.append(str(exc))
            continue
        if entry is not None:
            out.entries.append(entry)
        if row.get("rule") == "unlisted":
            out.unlisted = "exclude"
    return out


def declared_domain(table: pd.DataFrame) -> Domain | None:
    """The schema when every kept column is fully declared by a declared schema's definition (edited or not),
    built from those definitions with their own settings (missing code, explicit edges); else None.

    This keeps a codebook schema -- the bundled sample's -- exactly as declared: nothing is read off the data."""
    attrs = []
    for row in table.to_dict("records"):
        if row.get("role") == "excluded":
            continue
        if not row.get("base"):
            return None
        base = Attribute.from_dict(json.loads(row["base"]))
        role, fmt = _role_of_attribute(base)
        have = declared_fields(row)
        if role != row.get("role") or fmt != (row.get("format") or ("" if role != "date" else fmt)):
            return None
        if not all(f in have for f in FIELDS[role]):
            return None
        if base.kind == "categorical":
            values = parse_values(row.get("values"))
            attr = base if values == base.values else base.with_fields(values=values)
        else:
            entry = base.to_dict()
            lower, upper = _parse_bound(row, "lower", base.kind), _parse_bound(row, "upper", base.kind)
            bins = base.bins if _blank(row.get("bins")) else int(row["bins"])
            same = _same(lower, entry["lower"]) and _same(upper, entry["upper"]) and bins == base.bins
            attr = base if same else base.with_fields(lower=lower, upper=upper, bins=bins)
        attrs.append(attr)
    if not attrs:
        raise DomainError("Every column is excluded: choose a role for the columns to keep.")
    return Domain(tuple(attrs))


# ---------------------------------------------------------------------------- reuse of a discovered schema
def overlay(saved: dict, decl: Declarations) -> Declarations:
    """A schema discovered earlier (``saved``: its ``domain`` dict and every column's ``roles``) with the current
    declarations laid over it, field by field: what the user declares now wins; what the discovery released under
    DP stays; what the discovery took from the user's declarations and the user no longer declares is decided again
    (a public header rule or the declared schema at no cost, else it must be discovered).  A column whose declared
    role differs from the discovered one keeps only what is declared.  The result is passed to ``prepare_table``
    like any partial schema; it reads nothing new from the data when every kept column is complete
    (:func:`dpcore.tabular.columns_to_discover` is empty)."""
    found = {a["name"]: dict(a) for a in saved["domain"]["attributes"]}
    declared = {e["name"]: e for e in decl.entries}
    entries: list[dict] = []
    for role in saved["roles"]:
        name = role["name"]
        mine = decl.roles.get(name)
        base = found.get(name)
        if mine is None and role.get("source") == DECLARED:
            continue  # the discovery had this role from the user or a public rule; now it is decided again
        if base is None:  # excluded by the discovery
            if mine is None or mine["role"] == "excluded":
                entries.append({"name": name, "kind": "excluded", "source": DECLARED if mine else role["source"]})
            elif name in declared:
                entries.append(declared[name])
            continue
        if mine is not None and not _same_role(mine, base):
            if name in declared:
                entries.append(declared[name])
            continue
        entry = dict(base)
        src = dict(entry["source"] if isinstance(entry["source"], dict) else _all_fields(entry, entry["source"]))
        if mine is not None:
            src["kind"] = DECLARED
        d = declared.get(name, {})
        for key in ("values", "lower", "upper"):
            if key in d:
                entry[key], src[key] = d[key], DECLARED
            elif src.get(key) == DECLARED:  # typed before the discovery, no longer declared: discovered again
                entry.pop(key, None)
                src.pop(key)
        if "other" in d:
            entry["other"] = d["other"]
        rebinned = any(k in d for k in ("lower", "upper", "bins")) or not ("lower" in entry and "upper" in entry)
        if rebinned and "edges" in entry:  # new bounds or bin count: the released edges no longer apply
            old_edges = entry.pop("edges")
            entry.pop("points", None)  # they named bins of the old edges
            if "edges" in d:
                entry["edges"] = d["edges"]
            else:
                entry["bins"] = d.get("bins", entry.get("bins") or len(old_edges) - 1)
        entry["source"] = src
        entries.append(entry)
    return Declarations(dict(decl.roles), entries, decl.unlisted, list(decl.problems))


def _all_fields(entry: dict, source: str) -> dict:
    fields = ("kind", "values") if entry["kind"] == "categorical" else ("kind", "lower", "upper")
    return dict.fromkeys(fields, source)


def _same_role(spec: dict, attr: dict) -> bool:
    if spec["role"] != attr["kind"]:
        return False
    if spec["role"] == "numeric":
        same_style = spec.get("style", "") == attr.get("style", "")
        return bool(spec.get("integer", False)) == bool(attr.get("integer", False)) and same_style
    if spec["role"] == "datetime":
        return spec.get("format") == attr.get("format")
    return True
